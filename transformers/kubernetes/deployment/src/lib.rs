//! DeploymentTransformer: renders a stateless workload (a component with a Container and
//! `core.opm.dev/workload-type: stateless`) into an `apps/v1` Deployment.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::{container, object_metadata, selector_labels};

/// Renders stateless components into Deployments.
pub struct DeploymentTransformer;

impl Transformer for DeploymentTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let main: Value = component.require("container")?;
        let replicas: Option<u64> = component.field_or_default("replicas")?;
        let mut spec = Map::new();
        if let Some(replicas) = replicas {
            spec.insert("replicas".into(), json!(replicas));
        }
        spec.insert("selector".into(), json!({"matchLabels": selector_labels(component)}));
        spec.insert(
            "template".into(),
            json!({
                "metadata": {"labels": selector_labels(component)},
                "spec": {"containers": [container(&main, component.name())?]},
            }),
        );
        opm_guest::log::debug(&format!("deployment {} with {replicas:?} replicas", component.name()));
        Ok(vec![json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": object_metadata(component, context, component.name()),
            "spec": spec,
        })])
    }
}

opm_guest::export!(DeploymentTransformer);

#[cfg(test)]
mod tests {
    use super::*;

    fn render(component: Value) -> Result<Vec<Value>, TransformError> {
        let context = Context { namespace: "shop".into(), ..Context::default() };
        DeploymentTransformer::transform(&Component::from_value(component)?, &context)
    }

    #[test]
    fn minimal_container_becomes_a_deployment() {
        let out = render(json!({
            "metadata": {"name": "api", "labels": {"core.opm.dev/workload-type": "stateless"}},
            "resources": ["opm.dev/resources/workload@v1#Container"],
            "spec": {"container": {"image": "nginx:1.27"}},
        }))
        .unwrap();
        assert_eq!(out.len(), 1);
        let d = &out[0];
        assert_eq!(d["kind"], "Deployment");
        assert_eq!(d["metadata"]["name"], "api");
        assert_eq!(d["metadata"]["namespace"], "shop");
        assert_eq!(d["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"], "api");
        assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.27");
        assert!(d["spec"].get("replicas").is_none());
    }

    #[test]
    fn replicas_come_from_the_trait_or_its_default() {
        let with_trait = render(json!({
            "metadata": {"name": "api"},
            "spec": {"container": {"image": "nginx"}, "replicas": 3},
        }))
        .unwrap();
        assert_eq!(with_trait[0]["spec"]["replicas"], 3);
        let from_default = render(json!({
            "metadata": {"name": "api"},
            "spec": {"container": {"image": "nginx"}},
            "defaults": {"replicas": 1},
        }))
        .unwrap();
        assert_eq!(from_default[0]["spec"]["replicas"], 1);
    }

    #[test]
    fn a_component_without_a_container_is_invalid() {
        let err = render(json!({"metadata": {"name": "api"}})).unwrap_err();
        assert_eq!(err, TransformError::invalid("component \"api\" has no spec.container"));
    }
}
