//! HorizontalPodAutoscalerTransformer: renders the Autoscaling trait into an `autoscaling/v2`
//! HorizontalPodAutoscaler for the component's Deployment (`stateless`) or StatefulSet
//! (`stateful`). The workload then leaves `replicas` unset, so the two never fight.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::{WORKLOAD_TYPE_LABEL, object_metadata};

/// Renders the Autoscaling trait into HorizontalPodAutoscalers.
pub struct HorizontalPodAutoscalerTransformer;

impl Transformer for HorizontalPodAutoscalerTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let autoscaling: Value = component.require("autoscaling")?;
        let kind = match component.label(WORKLOAD_TYPE_LABEL) {
            Some("stateless") => "Deployment",
            Some("stateful") => "StatefulSet",
            other => {
                return Err(TransformError::invalid(format!(
                    "autoscaling needs a stateless or stateful workload; component {:?} is {}",
                    component.name(),
                    other.map_or("not a workload".to_owned(), |t| format!("{t:?}"))
                )));
            }
        };
        let max = autoscaling
            .get("maxReplicas")
            .and_then(Value::as_u64)
            .ok_or_else(|| TransformError::invalid("autoscaling.maxReplicas is required"))?;
        let min = autoscaling
            .get("minReplicas")
            .and_then(Value::as_u64)
            .unwrap_or(1);
        if min > max {
            return Err(TransformError::invalid(format!(
                "autoscaling.minReplicas ({min}) is greater than autoscaling.maxReplicas ({max})"
            )));
        }
        let mut spec = Map::new();
        spec.insert(
            "scaleTargetRef".into(),
            json!({"apiVersion": "apps/v1", "kind": kind, "name": context.object_name(component.name())}),
        );
        spec.insert("minReplicas".into(), json!(min));
        spec.insert("maxReplicas".into(), json!(max));
        let mut metrics = Vec::new();
        for (field, resource) in [
            ("targetCPUUtilizationPercentage", "cpu"),
            ("targetMemoryUtilizationPercentage", "memory"),
        ] {
            if let Some(target) = autoscaling.get(field) {
                metrics.push(json!({"type": "Resource", "resource": {
                    "name": resource,
                    "target": {"type": "Utilization", "averageUtilization": target},
                }}));
            }
        }
        if !metrics.is_empty() {
            spec.insert("metrics".into(), Value::Array(metrics));
        }
        Ok(vec![json!({
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": object_metadata(component, context, &context.object_name(component.name())),
            "spec": spec,
        })])
    }
}

opm_guest::export!(HorizontalPodAutoscalerTransformer);

#[cfg(test)]
mod tests {
    use super::*;

    fn render(workload: &str, autoscaling: Value) -> Result<Vec<Value>, TransformError> {
        let component = Component::from_value(json!({
            "metadata": {"name": "api", "labels": {"core.opm.dev/workload-type": workload}},
            "spec": {"container": {"image": "x"}, "autoscaling": autoscaling},
        }))?;
        HorizontalPodAutoscalerTransformer::transform(&component, &Context::default())
    }

    #[test]
    fn minimal_autoscaler_targets_the_deployment() {
        let out = render("stateless", json!({"maxReplicas": 5})).unwrap();
        assert_eq!(out[0]["apiVersion"], "autoscaling/v2");
        assert_eq!(
            out[0]["spec"],
            json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
                   "minReplicas": 1, "maxReplicas": 5})
        );
    }

    #[test]
    fn maximal_autoscaler_targets_a_statefulset_with_both_metrics() {
        let out = render(
            "stateful",
            json!({"minReplicas": 2, "maxReplicas": 10, "targetCPUUtilizationPercentage": 70,
                   "targetMemoryUtilizationPercentage": 80}),
        )
        .unwrap();
        let spec = &out[0]["spec"];
        assert_eq!(spec["scaleTargetRef"]["kind"], "StatefulSet");
        assert_eq!(spec["minReplicas"], 2);
        assert_eq!(spec["metrics"][0]["resource"]["name"], "cpu");
        assert_eq!(
            spec["metrics"][0]["resource"]["target"]["averageUtilization"],
            70
        );
        assert_eq!(spec["metrics"][1]["resource"]["name"], "memory");
    }

    #[test]
    fn daemons_and_inverted_bounds_are_invalid() {
        let err = render("daemon", json!({"maxReplicas": 3})).unwrap_err();
        assert!(err.to_string().contains("\"daemon\""), "{err}");
        let err = render("stateless", json!({"minReplicas": 4, "maxReplicas": 3})).unwrap_err();
        assert!(err.to_string().contains("greater than"), "{err}");
    }

    #[test]
    fn a_second_instance_scales_its_own_workload() {
        let component = Component::from_value(json!({
            "metadata": {"name": "api", "labels": {"core.opm.dev/workload-type": "stateless"}},
            "spec": {"container": {"image": "x"}, "autoscaling": {"maxReplicas": 3}},
        }))
        .unwrap();
        let context = opm_k8s_common::test_instance_context();
        let out = HorizontalPodAutoscalerTransformer::transform(&component, &context).unwrap();
        assert_eq!(out[0]["metadata"]["name"], "shop-eu-api");
        assert_eq!(out[0]["spec"]["scaleTargetRef"]["name"], "shop-eu-api");
    }
}
