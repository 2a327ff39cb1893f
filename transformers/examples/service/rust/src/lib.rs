//! The example ServiceTransformer in Rust, with the SDK: one `v1` Service from a component's
//! Expose trait. The rules, which its JavaScript, Python and C twins follow to the byte, are in
//! `../README.md`.

use std::collections::BTreeMap;

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};

/// Renders a component's Expose trait into a Service.
pub struct ServiceTransformer;

/// The Service types `expose.type` may name.
const TYPES: [&str; 4] = ["ClusterIP", "NodePort", "LoadBalancer", "Headless"];

impl Transformer for ServiceTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let name = component.name();
        let Some(expose) = component.spec().get("expose").filter(|e| e.is_object()) else {
            return Err(TransformError::invalid(format!(
                "component {name:?} has no expose trait"
            )));
        };
        let kind = expose
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP");
        if !TYPES.contains(&kind) {
            return Err(TransformError::invalid(format!(
                "expose.type {kind:?} is not one of {}",
                TYPES.join(", ")
            )));
        }
        let container_ports = component
            .spec()
            .get("container")
            .and_then(|c| c.get("ports"))
            .and_then(Value::as_object);
        let ports = match expose.get("ports").and_then(Value::as_object) {
            Some(declared) if !declared.is_empty() => declared_ports(declared, container_ports)?,
            _ => container_ports.map(default_ports).unwrap_or_default(),
        };
        if ports.is_empty() {
            return Err(TransformError::invalid(format!(
                "component {name:?} is exposed but names no ports: set expose.ports or \
                 container.ports"
            )));
        }
        if kind != "NodePort"
            && kind != "LoadBalancer"
            && let Some(port) = ports.iter().find(|p| p.get("nodePort").is_some())
        {
            return Err(TransformError::invalid(format!(
                "expose.ports.{}.nodePort needs expose.type NodePort or LoadBalancer",
                port["name"].as_str().unwrap_or_default()
            )));
        }
        opm_guest::log::info(&format!(
            "rendering a {kind} Service for {name} with {} port(s)",
            ports.len()
        ));

        let selector = json!({
            "app.kubernetes.io/instance": context.name,
            "app.kubernetes.io/name": name,
        });
        let mut labels: BTreeMap<&str, &str> = context
            .labels
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str()))
            .collect();
        labels.insert("app.kubernetes.io/instance", &context.name);
        labels.insert("app.kubernetes.io/name", name);
        let mut metadata = Map::new();
        metadata.insert("name".into(), json!(name));
        if !context.namespace.is_empty() {
            metadata.insert("namespace".into(), json!(context.namespace));
        }
        metadata.insert("labels".into(), json!(labels));
        if !component.annotations().is_empty() {
            metadata.insert("annotations".into(), json!(component.annotations()));
        }
        let mut spec = Map::new();
        if kind == "Headless" {
            spec.insert("type".into(), json!("ClusterIP"));
            spec.insert("clusterIP".into(), json!("None"));
        } else {
            spec.insert("type".into(), json!(kind));
        }
        spec.insert("selector".into(), selector);
        spec.insert("ports".into(), Value::Array(ports));
        Ok(vec![json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": metadata,
            "spec": spec,
        })])
    }
}

/// The Service ports of `expose.ports`, in name order.
fn declared_ports(
    declared: &Map<String, Value>,
    container_ports: Option<&Map<String, Value>>,
) -> Result<Vec<Value>, TransformError> {
    let mut names: Vec<&String> = container_ports
        .map(|p| p.keys().collect())
        .unwrap_or_default();
    names.sort();
    let mut entries: Vec<(&String, &Value)> = declared.iter().collect();
    entries.sort_by_key(|(name, _)| *name);
    let mut ports = Vec::new();
    for (name, port) in entries {
        let Some(number) = port.get("port").filter(|n| !n.is_null()) else {
            return Err(TransformError::invalid(format!(
                "expose.ports.{name}.port is required"
            )));
        };
        let target = match port.get("targetPort").filter(|t| !t.is_null()) {
            Some(Value::String(target)) if names.contains(&target) => json!(target),
            Some(Value::String(target)) => {
                let known: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
                return Err(TransformError::invalid(format!(
                    "expose.ports.{name}.targetPort {target:?} is not a port of the container; \
                     it has {}",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                )));
            }
            Some(target) => target.clone(),
            None if names.contains(&name) => json!(name),
            None => number.clone(),
        };
        let mut entry = Map::new();
        entry.insert("name".into(), json!(name));
        entry.insert("port".into(), number.clone());
        entry.insert("targetPort".into(), target);
        copy(port, &mut entry, "protocol");
        copy(port, &mut entry, "nodePort");
        ports.push(Value::Object(entry));
    }
    Ok(ports)
}

/// The Service ports of every container port, in name order, each targeting its container port
/// by name.
fn default_ports(container_ports: &Map<String, Value>) -> Vec<Value> {
    let mut entries: Vec<(&String, &Value)> = container_ports.iter().collect();
    entries.sort_by_key(|(name, _)| *name);
    entries
        .into_iter()
        .map(|(name, port)| {
            let mut entry = Map::new();
            entry.insert("name".into(), json!(name));
            entry.insert(
                "port".into(),
                port.get("containerPort").cloned().unwrap_or(Value::Null),
            );
            entry.insert("targetPort".into(), json!(name));
            copy(port, &mut entry, "protocol");
            Value::Object(entry)
        })
        .collect()
}

/// Copies `from[key]` into `to` when it is there and not null.
fn copy(from: &Value, to: &mut Map<String, Value>, key: &str) {
    if let Some(value) = from.get(key).filter(|v| !v.is_null()) {
        to.insert(key.to_owned(), value.clone());
    }
}

opm_guest::export!(ServiceTransformer);

/// The case folders of `../cases`, run natively: the same cases `opm transformer test` runs
/// against each language's component in the sandbox.
#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn context_of(case: &Path) -> Context {
        let value: Value = std::fs::read_to_string(case.join("context.json"))
            .map(|text| serde_json::from_str(&text).unwrap())
            .unwrap_or_else(|_| json!({}));
        let text = |key: &str, default: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or(default)
                .to_owned()
        };
        Context {
            name: text("name", "example"),
            namespace: text("namespace", "default"),
            version: text("version", "0.1.0"),
            provider: text("provider", "example"),
            timestamp: text("timestamp", "1970-01-01T00:00:00Z"),
            strict: value
                .get("strict")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            labels: value
                .get("labels")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect(),
            ..Context::default()
        }
    }

    #[test]
    fn every_case_renders_as_expected() {
        let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cases");
        let mut dirs: Vec<_> = std::fs::read_dir(&cases)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        dirs.sort();
        assert!(dirs.len() >= 8, "cases missing from {}", cases.display());
        for case in dirs {
            let text = std::fs::read_to_string(case.join("component.json")).unwrap();
            let component = Component::from_json(&text).unwrap();
            let got = match ServiceTransformer::transform(&component, &context_of(&case)) {
                Ok(resources) => json!({"resources": resources}),
                Err(TransformError::InvalidComponent(m)) => {
                    json!({"error": {"invalid-component": m}})
                }
                Err(TransformError::Failed(m)) => json!({"error": {"failed": m}}),
            };
            let expected_path = case.join("expected.json");
            if std::env::var_os("OPM_BLESS").is_some() {
                let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
                std::fs::write(&expected_path, text).unwrap();
                continue;
            }
            let expected: Value =
                serde_json::from_str(&std::fs::read_to_string(&expected_path).unwrap()).unwrap();
            assert_eq!(got, expected, "case {}", case.display());
        }
    }
}
