//! PersistentVolumeClaimTransformer: renders each entry of the PersistentStorage trait into a
//! `v1` PersistentVolumeClaim named `<component>-<entry>`, which the workload's pods mount,
//! with the entry's `labels` and `annotations` merged over the component's.
//!
//! A `stateful` component renders nothing here: its StatefulSet claims storage per replica
//! through volume claim templates, and a shared claim next to them would be unused.

use opm_guest::{Component, Context, TransformError, Transformer, Value};
use opm_k8s_common::storage::{is_stateful, persistent_storage};

/// Renders persistent storage into PersistentVolumeClaims.
pub struct PersistentVolumeClaimTransformer;

impl Transformer for PersistentVolumeClaimTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        if is_stateful(component) {
            return Ok(Vec::new());
        }
        persistent_storage(component)?
            .iter()
            .map(|storage| storage.claim(component, context))
            .collect()
    }
}

#[cfg(not(feature = "library"))]
opm_guest::export!(PersistentVolumeClaimTransformer);

#[cfg(test)]
mod tests {
    use super::*;
    use opm_guest::json;

    fn render(workload: &str, storage: Value) -> Result<Vec<Value>, TransformError> {
        let component = Component::from_value(json!({
            "metadata": {"name": "files", "labels": {"core.opm.dev/workload-type": workload}},
            "spec": {"container": {"image": "x"}, "persistentStorage": storage},
        }))?;
        let context = Context {
            name: "shop".into(),
            ..Context::default()
        };
        PersistentVolumeClaimTransformer::transform(&component, &context)
    }

    #[test]
    fn minimal_entry_is_a_read_write_once_claim() {
        let out = render("stateless", json!({"data": {"size": "1Gi"}})).unwrap();
        assert_eq!(
            out,
            [json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": "files-data", "labels": {
                        "app.kubernetes.io/instance": "shop", "app.kubernetes.io/name": "files"}},
                    "spec": {"accessModes": ["ReadWriteOnce"],
                             "resources": {"requests": {"storage": "1Gi"}}}})]
        );
    }

    #[test]
    fn maximal_entries_in_name_order() {
        let out = render(
            "job",
            json!({
                "scratch": {"size": "5Gi", "storageClass": "local", "accessModes": ["ReadWriteOncePod"], "mountPath": "/s"},
                "archive": {"size": "100Gi", "storageClass": "nfs", "accessModes": ["ReadWriteMany"]},
            }),
        )
        .unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0]["metadata"]["name"], "files-archive");
        assert_eq!(out[0]["spec"]["storageClassName"], "nfs");
        assert_eq!(out[0]["spec"]["accessModes"], json!(["ReadWriteMany"]));
        assert_eq!(out[1]["metadata"]["name"], "files-scratch");
    }

    #[test]
    fn an_entrys_labels_and_annotations_go_on_its_claim() {
        let out = render(
            "stateless",
            json!({"data": {"size": "1Gi", "labels": {"backup": "daily"},
                            "annotations": {"helm.sh/resource-policy": "keep"}}}),
        )
        .unwrap();
        assert_eq!(
            out[0]["metadata"],
            json!({"name": "files-data",
                   "labels": {"app.kubernetes.io/instance": "shop", "app.kubernetes.io/name": "files",
                              "backup": "daily"},
                   "annotations": {"helm.sh/resource-policy": "keep"}})
        );
    }

    #[test]
    fn stateful_components_get_no_claims_here() {
        let out = render("stateful", json!({"data": {"size": "1Gi"}})).unwrap();
        assert!(out.is_empty());
    }
}
