//! ObjectTransformer: renders the Object resource, a whole Kubernetes manifest (a custom
//! resource, or a kind the provider does not model), as it is written, so that a module never
//! has to leave opm for one odd object.
//!
//! What it adds: the module's labels and opm's tracking labels (over the object's own), and the
//! target namespace when the object names none and its kind is namespaced. A cluster-scoped
//! kind that this provider does not know (a custom one) says so with `metadata.namespace: ""`,
//! which is then left out. Everything else, `status` aside, is the author's.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value};
use opm_k8s_common::{is_cluster_scoped, resource_labels};

/// Renders Object resources as they are written.
pub struct ObjectTransformer;

impl Transformer for ObjectTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        match component.require::<Value>("object")? {
            // A chart's extraManifests: each as one written alone.
            Value::Array(objects) => objects
                .into_iter()
                .enumerate()
                .map(|(index, object)| {
                    rendered(object, component, context).map_err(|error| {
                        TransformError::invalid(format!("object[{index}]: {error}"))
                    })
                })
                .collect(),
            object => Ok(vec![rendered(object, component, context)?]),
        }
    }
}

/// One manifest as it is written, with the labels and the namespace added.
fn rendered(
    object: Value,
    component: &Component,
    context: &Context,
) -> Result<Value, TransformError> {
    {
        let Value::Object(mut object) = object else {
            return Err(TransformError::invalid(
                "object must be a Kubernetes manifest",
            ));
        };
        object.remove("status");
        let kind = object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let Some(Value::Object(written)) = object.remove("metadata") else {
            return Err(TransformError::invalid("object.metadata must be a map"));
        };
        let mut labels = written
            .get("labels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if let Value::Object(ours) = resource_labels(component, context) {
            labels.extend(ours);
        }
        labels.sort_keys();
        let namespace = match written.get("namespace").and_then(Value::as_str) {
            Some("") => None,
            Some(own) => Some(own.to_owned()),
            None if is_cluster_scoped(&kind) => None,
            None => Some(context.namespace.clone()),
        };
        // name, namespace, labels, then the rest as written.
        let mut metadata = Map::new();
        metadata.insert(
            "name".into(),
            written.get("name").cloned().unwrap_or_default(),
        );
        if let Some(namespace) = namespace {
            metadata.insert("namespace".into(), Value::from(namespace));
        }
        metadata.insert("labels".into(), Value::Object(labels));
        for (key, value) in written {
            if !matches!(key.as_str(), "name" | "namespace" | "labels") {
                metadata.insert(key, value);
            }
        }
        object.insert("metadata".into(), Value::Object(metadata));
        Ok(Value::Object(order_like_kubectl(object)))
    }
}

/// `apiVersion`, `kind`, `metadata` first, then the rest as written: the order `kubectl get -o
/// yaml` readers expect.
fn order_like_kubectl(mut object: Map<String, Value>) -> Map<String, Value> {
    let mut ordered = Map::new();
    for key in ["apiVersion", "kind", "metadata"] {
        if let Some(value) = object.remove(key) {
            ordered.insert(key.into(), value);
        }
    }
    ordered.extend(object);
    ordered
}

#[cfg(not(feature = "library"))]
opm_guest::export!(ObjectTransformer);

#[cfg(test)]
mod tests {
    use opm_guest::json;

    use super::*;

    fn render(object: Value) -> Value {
        let component = Component::from_value(
            json!({"metadata": {"name": "issuer"}, "spec": {"object": object}}),
        )
        .unwrap();
        let context = Context {
            name: "shop".into(),
            namespace: "prod".into(),
            labels: [("team".to_owned(), "web".to_owned())].into(),
            ..Context::default()
        };
        let mut out = ObjectTransformer::transform(&component, &context).unwrap();
        assert_eq!(out.len(), 1);
        out.remove(0)
    }

    /// A chart's extraManifests, a list of raw objects from a parameter, each
    /// rendered as one written alone; a bad one is named by its position.
    #[test]
    fn a_list_of_objects_renders_each_and_names_a_bad_one_by_position() {
        let component = |objects: Value| {
            Component::from_value(
                json!({"metadata": {"name": "extra"}, "spec": {"object": objects}}),
            )
            .unwrap()
        };
        let context = Context {
            name: "shop".into(),
            namespace: "prod".into(),
            ..Context::default()
        };
        let objects = json!([
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}},
            {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"}},
        ]);
        let out = ObjectTransformer::transform(&component(objects), &context).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0]["metadata"]["namespace"], "prod");
        assert_eq!(out[1]["kind"], "PodDisruptionBudget");
        assert!(
            ObjectTransformer::transform(&component(json!([])), &context)
                .unwrap()
                .is_empty()
        );
        let error = ObjectTransformer::transform(
            &component(json!([{"kind": "X", "metadata": 1}])),
            &context,
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("object[0]: "), "{error}");
    }

    #[test]
    fn a_custom_resource_is_rendered_as_written_in_the_target_namespace() {
        let out = render(json!({
            "kind": "Certificate",
            "apiVersion": "cert-manager.io/v1",
            "metadata": {"name": "www", "labels": {"team": "mine", "extra": "x"}},
            "spec": {"secretName": "www-tls", "dnsNames": ["www.example.com"]},
            "status": {"ready": true},
        }));
        assert_eq!(
            out,
            json!({
                "apiVersion": "cert-manager.io/v1",
                "kind": "Certificate",
                "metadata": {"name": "www", "namespace": "prod",
                             "labels": {"app.kubernetes.io/instance": "shop",
                                        "app.kubernetes.io/name": "issuer",
                                        "extra": "x", "team": "web"}},
                "spec": {"secretName": "www-tls", "dnsNames": ["www.example.com"]},
            })
        );
        let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["apiVersion", "kind", "metadata", "spec"]);
    }

    #[test]
    fn a_namespace_written_is_kept_and_cluster_scoped_kinds_get_none() {
        let elsewhere = render(json!({"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": "c", "namespace": "ops"}}));
        assert_eq!(elsewhere["metadata"]["namespace"], "ops");
        let class = render(
            json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                  "metadata": {"name": "high"}, "value": 1000}),
        );
        assert!(class["metadata"].get("namespace").is_none());
        let custom = render(
            json!({"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer",
                                   "metadata": {"name": "le", "namespace": ""}}),
        );
        assert!(custom["metadata"].get("namespace").is_none());
    }
}
