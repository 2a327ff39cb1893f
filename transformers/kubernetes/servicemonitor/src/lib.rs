//! ServiceMonitorTransformer: renders the ServiceMonitor trait into a Prometheus Operator
//! `monitoring.coreos.com/v1` ServiceMonitor that has Prometheus scrape the component's Service
//! (the one Expose renders).
//!
//! - the `selector` is the component's selector labels, which the Service carries; a stateful
//!   component's headless Service (`<component>-headless`) carries them too, so for a stateful
//!   component each endpoint keeps only the targets of the Service named after the component
//!   (a `keep` relabeling on `__meta_kubernetes_service_name`), and no pod is scraped twice;
//! - `endpoints` each name a port of the Service by its name (`port`, which may be left out
//!   when the Service has one port), with `path`, `scheme`, `interval` and `scrapeTimeout` as the
//!   CRD spells them; `scrapeTimeout` may not be longer than `interval`, which the operator
//!   refuses. Without `endpoints`, the Service's only port is scraped with Prometheus' defaults;
//! - `labels` (a Prometheus' `serviceMonitorSelector` usually matches one) and `annotations`
//!   are merged over the component's on the ServiceMonitor.
//!
//! The ServiceMonitor lands in the render namespace, the Service's, where the operator looks for
//! the Service by default.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::meta::merge_metadata;
use opm_k8s_common::ports::{backend_port, required_expose, service_ports};
use opm_k8s_common::{WORKLOAD_TYPE_LABEL, copy_fields, object_metadata, selector_labels};

/// Renders the ServiceMonitor trait into ServiceMonitors.
pub struct ServiceMonitorTransformer;

/// The Prometheus label that holds the name of the Service a target was discovered through.
pub const SERVICE_NAME_LABEL: &str = "__meta_kubernetes_service_name";

impl Transformer for ServiceMonitorTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let monitor: Value = component.require("serviceMonitor")?;
        let expose = required_expose(component, "a ServiceMonitor", "the monitor scrapes")?;
        let ports = service_ports(component, Some(&expose))?;
        let service = context.object_name(component.name());
        let stateful = component.label(WORKLOAD_TYPE_LABEL) == Some("stateful");

        let written: Vec<Value> = match monitor.get("endpoints").and_then(Value::as_array) {
            Some(endpoints) if !endpoints.is_empty() => endpoints.clone(),
            _ => vec![json!({})],
        };
        let endpoints = written
            .iter()
            .enumerate()
            .map(|(index, written)| {
                let field = format!("serviceMonitor.endpoints[{index}]");
                let wanted = written.get("port").and_then(Value::as_str);
                let port = backend_port(&ports, wanted, &format!("{field}.port"))?;
                check_timeout(written, &field)?;
                let mut endpoint = Map::new();
                endpoint.insert("port".into(), port["name"].clone());
                copy_fields(written, &mut endpoint, &["path", "scheme", "interval", "scrapeTimeout"]);
                if stateful {
                    endpoint.insert(
                        "relabelings".into(),
                        json!([{"sourceLabels": [SERVICE_NAME_LABEL], "regex": service, "action": "keep"}]),
                    );
                }
                Ok(Value::Object(endpoint))
            })
            .collect::<Result<Vec<_>, TransformError>>()?;

        let mut metadata = object_metadata(component, context, &service);
        merge_metadata(&mut metadata, &monitor, "serviceMonitor")?;
        Ok(vec![json!({
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": metadata,
            "spec": {
                "selector": {"matchLabels": selector_labels(component, context)},
                "endpoints": endpoints,
            },
        })])
    }
}

/// Refuses a `scrapeTimeout` longer than the endpoint's `interval` (when both are set), or
/// either of them not a Prometheus duration.
fn check_timeout(endpoint: &Value, field: &str) -> Result<(), TransformError> {
    let duration = |key: &str| -> Result<Option<u64>, TransformError> {
        let Some(text) = endpoint.get(key).and_then(Value::as_str) else {
            return Ok(None);
        };
        milliseconds(text).map(Some).ok_or_else(|| {
            TransformError::invalid(format!(
                "{field}.{key} {text:?} is not a Prometheus duration (such as 30s, 1m30s, 500ms)"
            ))
        })
    };
    let interval = duration("interval")?;
    let timeout = duration("scrapeTimeout")?;
    if let (Some(interval), Some(timeout)) = (interval, timeout)
        && timeout > interval
    {
        return Err(TransformError::invalid(format!(
            "{field}.scrapeTimeout is longer than its interval; the Prometheus Operator refuses \
             a scrape that times out after the next one starts"
        )));
    }
    Ok(())
}

/// A Prometheus duration (`1y2w3d4h5m6s7ms`: each unit at most once, in that order) in
/// milliseconds; `None` for anything else.
fn milliseconds(text: &str) -> Option<u64> {
    const UNITS: [(&str, u64); 7] = [
        ("y", 365 * 86_400_000),
        ("w", 7 * 86_400_000),
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("ms", 1),
        ("m", 60_000),
        ("s", 1000),
    ];
    // The order units must come in; "ms" is tried before "m" when reading, but comes last.
    const ORDER: [&str; 7] = ["y", "w", "d", "h", "m", "s", "ms"];
    if text.is_empty() {
        return None;
    }
    let mut rest = text;
    let mut total: u64 = 0;
    let mut last = None;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        if digits == 0 {
            return None;
        }
        let amount: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let (unit, scale) = UNITS.iter().find(|(unit, _)| rest.starts_with(unit))?;
        rest = &rest[unit.len()..];
        let position = ORDER.iter().position(|u| u == unit)?;
        if last.is_some_and(|last| position <= last) {
            return None;
        }
        last = Some(position);
        total = total.checked_add(amount.checked_mul(*scale)?)?;
    }
    Some(total)
}

#[cfg(not(feature = "library"))]
opm_guest::export!(ServiceMonitorTransformer);

#[cfg(test)]
mod tests;
