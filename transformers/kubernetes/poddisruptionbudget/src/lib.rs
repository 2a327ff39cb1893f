//! PodDisruptionBudgetTransformer: renders the DisruptionBudget trait into a `policy/v1`
//! PodDisruptionBudget over the component's pods: `minAvailable` or `maxUnavailable`, a count
//! or a percentage.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::{object_metadata, selector_labels};

/// Renders the DisruptionBudget trait into PodDisruptionBudgets.
pub struct PodDisruptionBudgetTransformer;

impl Transformer for PodDisruptionBudgetTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let budget: Value = component.require("disruptionBudget")?;
        let mut spec = Map::new();
        match (budget.get("minAvailable"), budget.get("maxUnavailable")) {
            (Some(min), None) => spec.insert("minAvailable".into(), min.clone()),
            (None, Some(max)) => spec.insert("maxUnavailable".into(), max.clone()),
            _ => {
                return Err(TransformError::invalid(
                    "disruptionBudget needs exactly one of minAvailable and maxUnavailable",
                ));
            }
        };
        spec.insert(
            "selector".into(),
            json!({"matchLabels": selector_labels(component, context)}),
        );
        Ok(vec![json!({
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": object_metadata(component, context, &context.object_name(component.name())),
            "spec": spec,
        })])
    }
}

#[cfg(not(feature = "library"))]
opm_guest::export!(PodDisruptionBudgetTransformer);

#[cfg(test)]
mod tests {
    use super::*;

    fn render(budget: Value) -> Result<Vec<Value>, TransformError> {
        let component = Component::from_value(json!({
            "metadata": {"name": "api"},
            "spec": {"container": {"image": "x"}, "disruptionBudget": budget},
        }))?;
        let context = Context {
            name: "shop".into(),
            ..Context::default()
        };
        PodDisruptionBudgetTransformer::transform(&component, &context)
    }

    #[test]
    fn min_available_count() {
        let out = render(json!({"minAvailable": 1})).unwrap();
        assert_eq!(out[0]["kind"], "PodDisruptionBudget");
        assert_eq!(
            out[0]["spec"],
            json!({"minAvailable": 1, "selector": {"matchLabels": {
                "app.kubernetes.io/instance": "shop", "app.kubernetes.io/name": "api"}}})
        );
    }

    #[test]
    fn max_unavailable_percentage() {
        let out = render(json!({"maxUnavailable": "25%"})).unwrap();
        assert_eq!(out[0]["spec"]["maxUnavailable"], "25%");
    }

    #[test]
    fn both_or_neither_is_invalid() {
        assert!(render(json!({})).is_err());
        assert!(render(json!({"minAvailable": 1, "maxUnavailable": 1})).is_err());
    }
}
