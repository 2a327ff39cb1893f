//! DaemonSetTransformer: renders a daemon workload (`core.opm.dev/workload-type: daemon`) into
//! an `apps/v1` DaemonSet: one pod per node, so no replicas; `updateStrategy` from the
//! UpdateStrategy trait (RollingUpdate or OnDelete).

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::pod::{self, WorkloadKind};
use opm_k8s_common::{object_metadata, selector_labels};

/// Renders daemon components into DaemonSets.
pub struct DaemonSetTransformer;

impl Transformer for DaemonSetTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let pod = pod::pod_template(component, context, WorkloadKind::DaemonSet)?;
        let mut spec = Map::new();
        spec.insert(
            "selector".into(),
            json!({"matchLabels": selector_labels(component, context)}),
        );
        if let Some(strategy) = pod::update_strategy(component, WorkloadKind::DaemonSet)? {
            spec.insert("updateStrategy".into(), strategy);
        }
        spec.insert("template".into(), pod.template);
        Ok(vec![json!({
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": object_metadata(component, context, &context.object_name(component.name())),
            "spec": spec,
        })])
    }
}

#[cfg(not(feature = "library"))]
opm_guest::export!(DaemonSetTransformer);

#[cfg(test)]
mod tests {
    use super::*;

    fn render(spec: Value) -> Result<Vec<Value>, TransformError> {
        let component = Component::from_value(json!({
            "metadata": {"name": "logs", "labels": {"core.opm.dev/workload-type": "daemon"}},
            "spec": spec,
        }))?;
        let context = opm_k8s_common::test_context();
        DaemonSetTransformer::transform(&component, &context)
    }

    #[test]
    fn minimal_component_becomes_a_daemonset_without_replicas() {
        let out = render(json!({"container": {"image": "fluent-bit:3"}, "replicas": 3})).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["kind"], "DaemonSet");
        assert!(out[0]["spec"].get("replicas").is_none());
        let selector =
            json!({"app.kubernetes.io/instance": "shop", "app.kubernetes.io/name": "logs"});
        assert_eq!(out[0]["spec"]["selector"]["matchLabels"], selector);
        assert_eq!(out[0]["spec"]["template"]["metadata"]["labels"], selector);
    }

    #[test]
    fn maximal_component_renders_every_optional_trait() {
        let out = render(json!({
            "container": {"image": "fluent-bit:3",
                          "volumeMounts": {"varlog": {"mountPath": "/var/log", "readOnly": true}}},
            "volumes": {"varlog": {"hostPath": {"path": "/var/log", "type": "Directory"}}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "podScheduling": {"tolerations": [{"operator": "Exists"}]},
            "securityContext": {"runAsUser": 0},
            "serviceAccount": {"automountToken": true},
            "healthCheck": {"liveness": {"httpGet": {"path": "/", "port": 2020}}},
            "sidecarContainers": {"reloader": {"image": "reloader"}},
            "initContainers": {"setup": {"image": "busybox"}},
            "persistentStorage": {"buffer": {"size": "1Gi", "mountPath": "/buffer"}},
            "restartPolicy": {"policy": "Always"},
        }))
        .unwrap();
        let spec = &out[0]["spec"];
        assert_eq!(spec["updateStrategy"]["rollingUpdate"]["maxUnavailable"], 1);
        let pod = &spec["template"]["spec"];
        assert_eq!(
            pod["volumes"],
            json!([
                {"name": "buffer", "persistentVolumeClaim": {"claimName": "logs-buffer"}},
                {"name": "varlog", "hostPath": {"path": "/var/log", "type": "Directory"}},
            ])
        );
        assert_eq!(pod["tolerations"], json!([{"operator": "Exists"}]));
        assert_eq!(pod["serviceAccountName"], "logs");
        assert_eq!(pod["automountServiceAccountToken"], true);
        assert_eq!(pod["securityContext"], json!({"runAsUser": 0}));
        assert_eq!(pod["restartPolicy"], "Always");
        assert_eq!(
            pod["initContainers"],
            json!([{"name": "setup", "image": "busybox"}])
        );
        let main = &pod["containers"][0];
        assert_eq!(
            main["livenessProbe"],
            json!({"httpGet": {"path": "/", "port": 2020}})
        );
        assert_eq!(
            main["volumeMounts"],
            json!([{"name": "buffer", "mountPath": "/buffer"},
                   {"name": "varlog", "mountPath": "/var/log", "readOnly": true}])
        );
        assert_eq!(
            pod["containers"][1],
            json!({"name": "reloader", "image": "reloader"})
        );
        assert!(spec.get("volumeClaimTemplates").is_none());
    }

    #[test]
    fn recreate_is_invalid_for_a_daemonset() {
        let err =
            render(json!({"container": {"image": "x"}, "updateStrategy": {"type": "Recreate"}}))
                .unwrap_err();
        assert!(err.to_string().contains("DaemonSet"), "{err}");
    }
}
