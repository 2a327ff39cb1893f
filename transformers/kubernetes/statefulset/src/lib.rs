//! StatefulSetTransformer: renders a stateful workload (`core.opm.dev/workload-type: stateful`)
//! into an `apps/v1` StatefulSet and the headless Service that governs it.
//!
//! The headless Service is named `<component>-headless`, so it never collides with the Service
//! the Expose trait renders under the component's own name; the StatefulSet's `serviceName`
//! points at it, giving each pod a stable DNS name (`<component>-0.<component>-headless`). It
//! publishes not-ready addresses so that peers find each other while they start. Persistent
//! storage becomes `volumeClaimTemplates` (one claim per replica), never a shared claim.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::pod::{self, WorkloadKind};
use opm_k8s_common::ports::service_ports;
use opm_k8s_common::{object_metadata, selector_labels};

/// Renders stateful components into StatefulSets with a headless Service.
pub struct StatefulSetTransformer;

/// The name of the headless Service that governs the StatefulSet of `component`.
pub fn headless_service_name(component: &Component, context: &Context) -> String {
    context.object_name(&format!("{}-headless", component.name()))
}

impl Transformer for StatefulSetTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let pod = pod::pod_template(component, context, WorkloadKind::StatefulSet)?;
        let service_name = headless_service_name(component, context);
        let mut spec = Map::new();
        if let Some(replicas) = pod::replicas(component)? {
            spec.insert("replicas".into(), json!(replicas));
        }
        spec.insert("serviceName".into(), Value::from(service_name.as_str()));
        spec.insert(
            "selector".into(),
            json!({"matchLabels": selector_labels(component, context)}),
        );
        if let Some(strategy) = pod::update_strategy(component, WorkloadKind::StatefulSet)? {
            spec.insert("updateStrategy".into(), strategy);
        }
        spec.insert("template".into(), pod.template);
        if !pod.claim_templates.is_empty() {
            spec.insert(
                "volumeClaimTemplates".into(),
                Value::Array(pod.claim_templates),
            );
        }
        let statefulset = json!({
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": object_metadata(component, context, &context.object_name(component.name())),
            "spec": spec,
        });
        Ok(vec![
            headless_service(component, context, &service_name)?,
            statefulset,
        ])
    }
}

/// The governing Service: no cluster IP, the component's container ports.
fn headless_service(
    component: &Component,
    context: &Context,
    name: &str,
) -> Result<Value, TransformError> {
    let ports = service_ports(component, None)?;
    let mut spec = Map::new();
    spec.insert("clusterIP".into(), json!("None"));
    spec.insert("publishNotReadyAddresses".into(), json!(true));
    spec.insert("selector".into(), selector_labels(component, context));
    if !ports.is_empty() {
        spec.insert("ports".into(), Value::Array(ports));
    }
    Ok(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": object_metadata(component, context, name),
        "spec": spec,
    }))
}

#[cfg(not(feature = "library"))]
opm_guest::export!(StatefulSetTransformer);

#[cfg(test)]
mod tests {
    use super::*;

    fn render(spec: Value) -> Result<Vec<Value>, TransformError> {
        let component = Component::from_value(json!({
            "metadata": {"name": "db", "labels": {"core.opm.dev/workload-type": "stateful"}},
            "spec": spec,
            "defaults": {"replicas": 1},
        }))?;
        let context = opm_k8s_common::test_context();
        StatefulSetTransformer::transform(&component, &context)
    }

    #[test]
    fn minimal_component_becomes_a_headless_service_and_a_statefulset() {
        let out = render(json!({"container": {"image": "postgres:17"}})).unwrap();
        assert_eq!(out.len(), 2);
        let (svc, sts) = (&out[0], &out[1]);
        assert_eq!(svc["kind"], "Service");
        assert_eq!(svc["metadata"]["name"], "db-headless");
        assert_eq!(svc["spec"]["clusterIP"], "None");
        assert!(svc["spec"].get("ports").is_none());
        assert_eq!(sts["kind"], "StatefulSet");
        assert_eq!(sts["metadata"]["name"], "db");
        assert_eq!(sts["spec"]["serviceName"], "db-headless");
        assert_eq!(sts["spec"]["replicas"], 1);
        assert!(sts["spec"].get("volumeClaimTemplates").is_none());
    }

    #[test]
    fn the_statefulset_and_its_service_select_module_and_component_without_version() {
        let out = render(json!({"container": {"image": "postgres:17"}})).unwrap();
        let (svc, sts) = (&out[0], &out[1]);
        let selector =
            json!({"app.kubernetes.io/instance": "shop", "app.kubernetes.io/name": "db"});
        assert_eq!(svc["spec"]["selector"], selector);
        assert_eq!(sts["spec"]["selector"]["matchLabels"], selector);
        assert_eq!(sts["spec"]["template"]["metadata"]["labels"], selector);
        assert_eq!(
            sts["metadata"]["labels"]["module.opmodel.dev/version"],
            "1.2.0"
        );
    }

    #[test]
    fn maximal_component_uses_claim_templates_and_every_trait() {
        let out = render(json!({
            "container": {"image": "postgres:17", "ports": {"pg": {"containerPort": 5432}}},
            "replicas": 3,
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}},
            "persistentStorage": {"data": {"size": "20Gi", "storageClass": "ssd",
                                           "mountPath": "/var/lib/postgresql/data"}},
            "healthCheck": {"liveness": {"exec": {"command": ["pg_isready"]}}},
            "initContainers": {"init": {"image": "busybox"}},
            "sidecarContainers": {"exporter": {"image": "exporter"}},
            "volumes": {"run": {"emptyDir": {}}},
            "podScheduling": {"priorityClassName": "db"},
            "securityContext": {"fsGroup": 999},
            "serviceAccount": {"name": "db", "create": false},
            "restartPolicy": {"policy": "Always"},
        }))
        .unwrap();
        let (svc, sts) = (&out[0], &out[1]);
        assert_eq!(
            svc["spec"]["ports"],
            json!([{"name": "pg", "port": 5432, "targetPort": "pg"}])
        );
        let spec = &sts["spec"];
        assert_eq!(spec["replicas"], 3);
        assert_eq!(spec["updateStrategy"]["rollingUpdate"]["partition"], 1);
        assert_eq!(
            spec["volumeClaimTemplates"],
            json!([{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                    "storageClassName": "ssd", "resources": {"requests": {"storage": "20Gi"}}}}])
        );
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["volumes"], json!([{"name": "run", "emptyDir": {}}]));
        assert_eq!(
            pod["containers"][0]["volumeMounts"],
            json!([{"name": "data", "mountPath": "/var/lib/postgresql/data"}])
        );
        assert_eq!(pod["serviceAccountName"], "db");
        assert!(pod.get("automountServiceAccountToken").is_none());
        assert_eq!(pod["restartPolicy"], "Always");
        assert_eq!(pod["securityContext"], json!({"fsGroup": 999}));
        assert_eq!(pod["priorityClassName"], "db");
        assert_eq!(
            pod["initContainers"],
            json!([{"name": "init", "image": "busybox"}])
        );
        assert_eq!(
            pod["containers"][1],
            json!({"name": "exporter", "image": "exporter"})
        );
        assert_eq!(
            pod["containers"][0]["livenessProbe"],
            json!({"exec": {"command": ["pg_isready"]}})
        );
    }

    #[test]
    fn autoscaling_leaves_replicas_unset() {
        let out = render(json!({"container": {"image": "x"}, "autoscaling": {"maxReplicas": 4}}))
            .unwrap();
        assert!(out[1]["spec"].get("replicas").is_none());
    }

    #[test]
    fn recreate_is_invalid_for_a_statefulset() {
        let err =
            render(json!({"container": {"image": "x"}, "updateStrategy": {"type": "Recreate"}}))
                .unwrap_err();
        assert!(err.to_string().contains("StatefulSet"), "{err}");
    }

    #[test]
    fn a_second_instance_names_its_statefulset_and_governing_service() {
        let component = Component::from_value(json!({
            "metadata": {"name": "db", "labels": {"core.opm.dev/workload-type": "stateful"}},
            "spec": {"container": {"image": "postgres:17"}},
        }))
        .unwrap();
        let context = opm_k8s_common::test_instance_context();
        let out = StatefulSetTransformer::transform(&component, &context).unwrap();
        assert_eq!(out[0]["metadata"]["name"], "shop-eu-db-headless");
        assert_eq!(out[1]["metadata"]["name"], "shop-eu-db");
        assert_eq!(out[1]["spec"]["serviceName"], "shop-eu-db-headless");
        assert_eq!(
            out[1]["spec"]["selector"]["matchLabels"]["app.kubernetes.io/instance"],
            "shop-eu"
        );
    }
}
