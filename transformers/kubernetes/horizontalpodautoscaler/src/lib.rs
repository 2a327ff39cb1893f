//! HorizontalPodAutoscalerTransformer: renders the Autoscaling trait into an `autoscaling/v2`
//! HorizontalPodAutoscaler for the component's Deployment (`stateless`) or StatefulSet
//! (`stateful`). The workload then leaves `replicas` unset, so the two never fight.
//!
//! - `targetCPUUtilizationPercentage` and `targetMemoryUtilizationPercentage` become Resource
//!   metrics with a Utilization target, first;
//! - `metrics` are the API's MetricSpecs (Resource, ContainerResource, Pods, Object, External),
//!   in the order written, each rendered in the API's field order and refused where the API
//!   server (or the autoscaler) would refuse it: a target's `type` needs its own field and no
//!   other, a Resource or ContainerResource metric targets Utilization or AverageValue, a Pods
//!   metric AverageValue, an Object or External metric Value or AverageValue;
//! - `behavior` (`scaleUp`, `scaleDown`) is copied in the API's field order, with its bounds
//!   checked: `stabilizationWindowSeconds` 0 to 3600, `selectPolicy` Max, Min or Disabled,
//!   `policies` of type Pods or Percent with a `value` above 0 and `periodSeconds` 1 to 1800.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::selector::label_selector;
use opm_k8s_common::{WORKLOAD_TYPE_LABEL, copy_fields, object_metadata};

/// Renders the Autoscaling trait into HorizontalPodAutoscalers.
pub struct HorizontalPodAutoscalerTransformer;

/// The longest stabilization window the API server accepts, in seconds (an hour).
pub const MAX_STABILIZATION_WINDOW_SECONDS: u64 = 3600;

/// The longest period of a scaling policy the API server accepts, in seconds (half an hour).
pub const MAX_PERIOD_SECONDS: u64 = 1800;

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
        if let Some(written) = autoscaling.get("metrics") {
            let written = written.as_array().ok_or_else(|| {
                TransformError::invalid("autoscaling.metrics must be a list of metrics")
            })?;
            for (index, metric) in written.iter().enumerate() {
                metrics.push(metric_spec(
                    metric,
                    &format!("autoscaling.metrics[{index}]"),
                )?);
            }
        }
        if !metrics.is_empty() {
            spec.insert("metrics".into(), Value::Array(metrics));
        }
        if let Some(behavior) = autoscaling.get("behavior") {
            spec.insert("behavior".into(), scaling_behavior(behavior)?);
        }
        Ok(vec![json!({
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": object_metadata(component, context, &context.object_name(component.name())),
            "spec": spec,
        })])
    }
}

/// One MetricSpec: its `type`, and the source of that type (the field named after it, lowered),
/// with the target types that source allows.
fn metric_spec(written: &Value, field: &str) -> Result<Value, TransformError> {
    let kind = written
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let (source_field, targets): (&str, &[&str]) = match kind {
        "Resource" => ("resource", &["Utilization", "AverageValue"]),
        "ContainerResource" => ("containerResource", &["Utilization", "AverageValue"]),
        "Pods" => ("pods", &["AverageValue"]),
        "Object" => ("object", &["Value", "AverageValue"]),
        "External" => ("external", &["Value", "AverageValue"]),
        _ => {
            return Err(TransformError::invalid(format!(
                "{field}.type must be one of Resource, ContainerResource, Pods, Object, External"
            )));
        }
    };
    if let Some(other) = written
        .as_object()
        .into_iter()
        .flat_map(|metric| metric.keys())
        .find(|key| *key != "type" && *key != source_field)
    {
        return Err(TransformError::invalid(format!(
            "{field}.{other} is not allowed for a metric of type {kind}; it takes {source_field}"
        )));
    }
    let source = written.get(source_field).ok_or_else(|| {
        TransformError::invalid(format!(
            "{field}.{source_field} is required for a metric of type {kind}"
        ))
    })?;
    let at = format!("{field}.{source_field}");
    let mut out = Map::new();
    match kind {
        "Resource" | "ContainerResource" => {
            let name = required_string(source, "name", &at)?;
            out.insert("name".into(), Value::from(name));
            if kind == "ContainerResource" {
                let container = required_string(source, "container", &at)?;
                out.insert("container".into(), Value::from(container));
            }
        }
        "Object" => {
            let described = source.get("describedObject").ok_or_else(|| {
                TransformError::invalid(format!("{at}.describedObject is required"))
            })?;
            let at = format!("{at}.describedObject");
            required_string(described, "kind", &at)?;
            required_string(described, "name", &at)?;
            let mut reference = Map::new();
            copy_fields(described, &mut reference, &["apiVersion", "kind", "name"]);
            out.insert("describedObject".into(), Value::Object(reference));
            out.insert("metric".into(), metric_identifier(source, &at)?);
        }
        _ => {
            out.insert("metric".into(), metric_identifier(source, &at)?);
        }
    }
    out.insert("target".into(), metric_target(source, &at, kind, targets)?);
    let mut metric = Map::new();
    metric.insert("type".into(), Value::from(kind));
    metric.insert(source_field.into(), Value::Object(out));
    Ok(Value::Object(metric))
}

/// A MetricIdentifier: the metric's `name` and the label `selector` that narrows it.
fn metric_identifier(source: &Value, at: &str) -> Result<Value, TransformError> {
    let metric = source
        .get("metric")
        .ok_or_else(|| TransformError::invalid(format!("{at}.metric is required")))?;
    let at = format!("{at}.metric");
    let name = required_string(metric, "name", &at)?;
    if name == "." || name == ".." || name.contains(['/', '%']) {
        return Err(TransformError::invalid(format!(
            "{at}.name {name:?} may not be '.' or '..' or contain '/' or '%'"
        )));
    }
    let mut out = Map::new();
    out.insert("name".into(), Value::from(name));
    if let Some(selector) = metric.get("selector") {
        out.insert(
            "selector".into(),
            label_selector(selector, &format!("{at}.selector"))?,
        );
    }
    Ok(Value::Object(out))
}

/// A MetricTarget: its `type` with the one field that type takes, a positive number.
fn metric_target(
    source: &Value,
    at: &str,
    kind: &str,
    allowed: &[&str],
) -> Result<Value, TransformError> {
    let target = source
        .get("target")
        .ok_or_else(|| TransformError::invalid(format!("{at}.target is required")))?;
    let at = format!("{at}.target");
    let kind_of_target = target
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !allowed.contains(&kind_of_target) {
        return Err(TransformError::invalid(format!(
            "{at}.type must be {} for a metric of type {kind}",
            allowed.join(" or ")
        )));
    }
    let value_field = match kind_of_target {
        "Utilization" => "averageUtilization",
        "Value" => "value",
        _ => "averageValue",
    };
    if let Some(other) = target
        .as_object()
        .into_iter()
        .flat_map(|target| target.keys())
        .find(|key| *key != "type" && *key != value_field)
    {
        return Err(TransformError::invalid(format!(
            "{at}.{other} is not allowed with type {kind_of_target}, which takes {value_field}"
        )));
    }
    let value = target.get(value_field).ok_or_else(|| {
        TransformError::invalid(format!(
            "{at}.{value_field} is required with type {kind_of_target}"
        ))
    })?;
    if !is_positive(value) {
        return Err(TransformError::invalid(format!(
            "{at}.{value_field} must be greater than 0"
        )));
    }
    let mut out = Map::new();
    out.insert("type".into(), Value::from(kind_of_target));
    out.insert(value_field.into(), value.clone());
    Ok(Value::Object(out))
}

/// Whether a number or a quantity (`"500m"`, `"1k"`) is greater than 0: a quantity is positive
/// when its digits are not all zeros and it has no sign.
fn is_positive(value: &Value) -> bool {
    match value {
        Value::Number(number) => number.as_f64().is_some_and(|n| n > 0.0),
        Value::String(quantity) => {
            let digits: String = quantity
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            !quantity.starts_with(['-', '+'])
                && !digits.is_empty()
                && digits.chars().any(|c| c.is_ascii_digit() && c != '0')
        }
        _ => false,
    }
}

fn required_string<'a>(value: &'a Value, key: &str, at: &str) -> Result<&'a str, TransformError> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
        .ok_or_else(|| TransformError::invalid(format!("{at}.{key} is required")))
}

/// `behavior`: the scaling rules of `scaleUp` and `scaleDown`, in that order.
fn scaling_behavior(written: &Value) -> Result<Value, TransformError> {
    let mut out = Map::new();
    for (key, rules) in written.as_object().into_iter().flatten() {
        if key != "scaleUp" && key != "scaleDown" {
            return Err(TransformError::invalid(format!(
                "autoscaling.behavior.{key} is not allowed; behavior has scaleUp and scaleDown"
            )));
        }
        scaling_rules(rules, &format!("autoscaling.behavior.{key}"))?;
    }
    for key in ["scaleUp", "scaleDown"] {
        if let Some(rules) = written.get(key) {
            out.insert(
                key.into(),
                scaling_rules(rules, &format!("autoscaling.behavior.{key}"))?,
            );
        }
    }
    Ok(Value::Object(out))
}

/// One HPAScalingRules, checked and in the API's field order.
fn scaling_rules(written: &Value, at: &str) -> Result<Value, TransformError> {
    let mut out = Map::new();
    if let Some(window) = written.get("stabilizationWindowSeconds") {
        if window
            .as_u64()
            .is_none_or(|seconds| seconds > MAX_STABILIZATION_WINDOW_SECONDS)
        {
            return Err(TransformError::invalid(format!(
                "{at}.stabilizationWindowSeconds must be 0 to {MAX_STABILIZATION_WINDOW_SECONDS}"
            )));
        }
        out.insert("stabilizationWindowSeconds".into(), window.clone());
    }
    if let Some(select) = written.get("selectPolicy") {
        if !matches!(select.as_str(), Some("Max" | "Min" | "Disabled")) {
            return Err(TransformError::invalid(format!(
                "{at}.selectPolicy must be Max, Min or Disabled"
            )));
        }
        out.insert("selectPolicy".into(), select.clone());
    }
    if let Some(policies) = written.get("policies") {
        let policies = policies
            .as_array()
            .filter(|p| !p.is_empty())
            .ok_or_else(|| {
                TransformError::invalid(format!("{at}.policies must list at least one policy"))
            })?;
        let policies = policies
            .iter()
            .enumerate()
            .map(|(index, policy)| scaling_policy(policy, &format!("{at}.policies[{index}]")))
            .collect::<Result<Vec<_>, _>>()?;
        out.insert("policies".into(), Value::Array(policies));
    }
    Ok(Value::Object(out))
}

/// One HPAScalingPolicy: `{type, value, periodSeconds}`.
fn scaling_policy(written: &Value, at: &str) -> Result<Value, TransformError> {
    let kind = written.get("type").and_then(Value::as_str);
    if !matches!(kind, Some("Pods" | "Percent")) {
        return Err(TransformError::invalid(format!(
            "{at}.type must be Pods or Percent"
        )));
    }
    let value = written
        .get("value")
        .and_then(Value::as_u64)
        .filter(|v| *v > 0);
    let Some(value) = value else {
        return Err(TransformError::invalid(format!(
            "{at}.value must be greater than 0"
        )));
    };
    let period = written
        .get("periodSeconds")
        .and_then(Value::as_u64)
        .filter(|p| (1..=MAX_PERIOD_SECONDS).contains(p));
    let Some(period) = period else {
        return Err(TransformError::invalid(format!(
            "{at}.periodSeconds must be 1 to {MAX_PERIOD_SECONDS}"
        )));
    };
    Ok(json!({"type": kind, "value": value, "periodSeconds": period}))
}

#[cfg(not(feature = "library"))]
opm_guest::export!(HorizontalPodAutoscalerTransformer);

#[cfg(test)]
mod tests;
