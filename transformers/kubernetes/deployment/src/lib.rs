//! DeploymentTransformer: renders a stateless workload (a component with a Container and
//! `core.opm.dev/workload-type: stateless`) into an `apps/v1` Deployment.
//!
//! The pod template comes from `opm_k8s_common::pod`, as for every workload kind. `replicas`
//! comes from the Replicas trait (default 1) and is left unset when the component autoscales;
//! `strategy` from the UpdateStrategy trait (RollingUpdate or Recreate). Without that trait, a
//! Deployment whose PersistentStorage mounts on one node only (ReadWriteOnce, the default) gets
//! Recreate: a rolling update would start the new pod while the old one holds the claim, and on
//! another node it would never start. (The provider's validations refuse such storage shared by
//! several replicas, and an explicit RollingUpdate that would deadlock the same way.)

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::pod::{self, WorkloadKind};
use opm_k8s_common::{object_metadata, selector_labels, storage};

/// Renders stateless components into Deployments.
pub struct DeploymentTransformer;

impl Transformer for DeploymentTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let pod = pod::pod_template(component, context, WorkloadKind::Deployment)?;
        let mut spec = Map::new();
        let replicas = pod::replicas(component)?;
        if let Some(replicas) = replicas {
            spec.insert("replicas".into(), json!(replicas));
        }
        spec.insert(
            "selector".into(),
            json!({"matchLabels": selector_labels(component, context)}),
        );
        match pod::update_strategy(component, WorkloadKind::Deployment)? {
            Some(strategy) => {
                spec.insert("strategy".into(), strategy);
            }
            None if storage::mounts_on_one_node(&storage::persistent_storage(component)?) => {
                spec.insert("strategy".into(), json!({"type": "Recreate"}));
            }
            None => {}
        }
        spec.insert("template".into(), pod.template);
        opm_guest::log::debug(&format!(
            "deployment {} with {replicas:?} replicas",
            component.name()
        ));
        Ok(vec![json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": object_metadata(component, context, &context.object_name(component.name())),
            "spec": spec,
        })])
    }
}

#[cfg(not(feature = "library"))]
opm_guest::export!(DeploymentTransformer);

#[cfg(test)]
mod tests {
    use super::*;

    fn render(component: Value) -> Result<Vec<Value>, TransformError> {
        let context = Context {
            namespace: "shop".into(),
            ..opm_k8s_common::test_context()
        };
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
        assert_eq!(
            d["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"],
            "api"
        );
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["image"],
            "nginx:1.27"
        );
        assert!(d["spec"].get("replicas").is_none());
        assert!(d["spec"].get("strategy").is_none());
    }

    #[test]
    fn the_selector_names_module_and_component_and_the_template_has_no_version() {
        let out =
            render(json!({"metadata": {"name": "api"}, "spec": {"container": {"image": "x"}}}))
                .unwrap();
        let d = &out[0];
        let selector =
            json!({"app.kubernetes.io/instance": "shop", "app.kubernetes.io/name": "api"});
        assert_eq!(d["spec"]["selector"]["matchLabels"], selector);
        assert_eq!(d["spec"]["template"]["metadata"]["labels"], selector);
        assert_eq!(
            d["metadata"]["labels"]["module.opmodel.dev/version"],
            "1.2.0"
        );
    }

    #[test]
    fn storage_on_one_node_is_replaced_not_rolled_unless_the_strategy_is_given() {
        let with = |storage: Value, strategy: Option<Value>| {
            let mut spec = json!({"container": {"image": "db"}, "persistentStorage": storage});
            if let Some(strategy) = strategy {
                spec["updateStrategy"] = strategy;
            }
            render(json!({"metadata": {"name": "db"}, "spec": spec})).unwrap()[0]["spec"]
                ["strategy"]
                .clone()
        };
        let once = json!({"data": {"size": "1Gi"}});
        assert_eq!(with(once.clone(), None), json!({"type": "Recreate"}));
        let many = json!({"data": {"size": "1Gi", "accessModes": ["ReadWriteMany"]}});
        assert_eq!(with(many, None), Value::Null);
        let given = json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0}});
        assert_eq!(with(once, Some(given.clone())), given);
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
    fn autoscaling_leaves_replicas_to_the_autoscaler() {
        let out = render(json!({
            "metadata": {"name": "api"},
            "spec": {"container": {"image": "nginx"}, "replicas": 3,
                     "autoscaling": {"minReplicas": 2, "maxReplicas": 6}},
            "defaults": {"replicas": 1},
        }))
        .unwrap();
        assert!(out[0]["spec"].get("replicas").is_none());
    }

    #[test]
    fn maximal_component_renders_every_optional_trait() {
        let out = render(json!({
            "metadata": {"name": "api", "labels": {"core.opm.dev/workload-type": "stateless"}},
            "spec": {
                "container": {"image": "api:1", "ports": {"http": {"containerPort": 8080}}},
                "replicas": 2,
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
                "restartPolicy": {"policy": "Always"},
                "healthCheck": {"readiness": {"httpGet": {"path": "/ready", "port": "http"}}},
                "sidecarContainers": {"proxy": {"image": "envoy"}},
                "initContainers": {"migrate": {"image": "api:1", "command": ["migrate"]}},
                "volumes": {"tmp": {"emptyDir": {}}},
                "persistentStorage": {"uploads": {"size": "1Gi", "mountPath": "/uploads"}},
                "podScheduling": {"nodeSelector": {"pool": "web"}},
                "securityContext": {"runAsNonRoot": true},
                "serviceAccount": {"create": true},
            },
        }))
        .unwrap();
        let spec = &out[0]["spec"];
        assert_eq!(spec["replicas"], 2);
        assert_eq!(spec["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Always");
        assert_eq!(pod["serviceAccountName"], "api");
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
        assert_eq!(pod["nodeSelector"]["pool"], "web");
        assert_eq!(pod["initContainers"][0]["name"], "migrate");
        assert_eq!(pod["containers"][1]["name"], "proxy");
        assert_eq!(
            pod["containers"][0]["readinessProbe"]["httpGet"]["path"],
            "/ready"
        );
        assert_eq!(
            pod["volumes"][1],
            json!({"name": "uploads", "persistentVolumeClaim": {"claimName": "api-uploads"}})
        );
    }

    #[test]
    fn an_on_delete_strategy_is_invalid_for_a_deployment() {
        let err = render(json!({
            "metadata": {"name": "api"},
            "spec": {"container": {"image": "nginx"}, "updateStrategy": {"type": "OnDelete"}},
        }))
        .unwrap_err();
        assert!(
            err.to_string().contains("not supported by a Deployment"),
            "{err}"
        );
    }

    #[test]
    fn a_component_without_a_container_is_invalid() {
        let err = render(json!({"metadata": {"name": "api"}})).unwrap_err();
        assert_eq!(
            err,
            TransformError::invalid("component \"api\" has no spec.container")
        );
    }
}
