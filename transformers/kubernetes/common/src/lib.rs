//! What the Kubernetes transformers share: object metadata, selector labels and the translation
//! of an OPM container (DESIGN §4.6) into a Kubernetes container.
//!
//! OPM keeps collections that users override one entry at a time (ports, env, mounts) as maps
//! keyed by name; Kubernetes wants lists. Maps are walked in key order, so output is
//! deterministic.

use opm_guest::{Component, Context, Map, TransformError, Value, json};

/// The label that ties a component's pods to its workload and services.
pub const NAME_LABEL: &str = "app.kubernetes.io/name";

/// Labels every pod of `component` carries and every selector matches.
pub fn selector_labels(component: &Component) -> Value {
    json!({ NAME_LABEL: component.name() })
}

/// `metadata` for a resource named `name` rendered from `component`: the context's labels (module
/// labels and tracking labels) plus the selector labels, in the render namespace.
pub fn object_metadata(component: &Component, context: &Context, name: &str) -> Value {
    let mut labels = Map::new();
    for (key, value) in &context.labels {
        labels.insert(key.clone(), Value::from(value.as_str()));
    }
    labels.insert(NAME_LABEL.to_owned(), Value::from(component.name()));
    let mut metadata = Map::new();
    metadata.insert("name".into(), Value::from(name));
    if !context.namespace.is_empty() {
        metadata.insert("namespace".into(), Value::from(context.namespace.as_str()));
    }
    metadata.insert("labels".into(), Value::Object(labels));
    if !component.annotations().is_empty() {
        metadata.insert("annotations".into(), json!(component.annotations()));
    }
    Value::Object(metadata)
}

/// The image reference of a container: `repo:tag[@digest]` as written, or assembled from
/// `{repository, tag, digest}`.
pub fn image_reference(image: &Value) -> Result<String, TransformError> {
    match image {
        Value::String(reference) if !reference.is_empty() => Ok(reference.clone()),
        Value::Object(parts) => {
            let repository = parts.get("repository").and_then(Value::as_str).ok_or_else(|| {
                TransformError::invalid("container.image.repository must be a non-empty string")
            })?;
            let mut reference = repository.to_owned();
            if let Some(tag) = parts.get("tag").and_then(Value::as_str) {
                reference.push(':');
                reference.push_str(tag);
            }
            if let Some(digest) = parts.get("digest").and_then(Value::as_str) {
                reference.push('@');
                reference.push_str(digest);
            }
            Ok(reference)
        }
        _ => Err(TransformError::invalid(
            "container.image must be a string `repo:tag[@digest]` or {repository, tag, digest}",
        )),
    }
}

/// Translates an OPM container into a Kubernetes container; `default_name` names it when the
/// container itself has no `name`.
pub fn container(spec: &Value, default_name: &str) -> Result<Value, TransformError> {
    let spec = spec
        .as_object()
        .ok_or_else(|| TransformError::invalid("container must be an object"))?;
    let image = spec
        .get("image")
        .ok_or_else(|| TransformError::invalid("container.image is required"))?;
    let mut out = Map::new();
    let name = spec.get("name").and_then(Value::as_str).unwrap_or(default_name);
    out.insert("name".into(), Value::from(name));
    out.insert("image".into(), Value::from(image_reference(image)?));
    for key in ["imagePullPolicy", "command", "args"] {
        if let Some(value) = spec.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    if let Some(ports) = spec.get("ports").and_then(Value::as_object) {
        let ports: Vec<Value> = ports
            .sorted_entries().into_iter()
            .map(|(name, port)| {
                let mut entry = Map::new();
                entry.insert("name".into(), Value::from(name.as_str()));
                entry.insert("containerPort".into(), port.get("containerPort").cloned().unwrap_or(Value::Null));
                if let Some(protocol) = port.get("protocol") {
                    entry.insert("protocol".into(), protocol.clone());
                }
                Value::Object(entry)
            })
            .collect();
        out.insert("ports".into(), Value::Array(ports));
    }
    if let Some(env) = spec.get("env").and_then(Value::as_object) {
        out.insert("env".into(), Value::Array(env.sorted_entries().into_iter().map(|(name, var)| env_var(name, var)).collect()));
    }
    if let Some(resources) = spec.get("resources") {
        out.insert("resources".into(), resources.clone());
    }
    if let Some(mounts) = spec.get("volumeMounts").and_then(Value::as_object) {
        let mounts: Vec<Value> = mounts
            .sorted_entries().into_iter()
            .map(|(volume, mount)| {
                let mut entry = Map::new();
                entry.insert("name".into(), Value::from(volume.as_str()));
                if let Some(fields) = mount.as_object() {
                    for key in ["mountPath", "readOnly", "subPath"] {
                        if let Some(value) = fields.get(key) {
                            entry.insert(key.into(), value.clone());
                        }
                    }
                }
                Value::Object(entry)
            })
            .collect();
        out.insert("volumeMounts".into(), Value::Array(mounts));
    }
    for key in ["livenessProbe", "readinessProbe", "startupProbe", "securityContext"] {
        if let Some(value) = spec.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    Ok(Value::Object(out))
}

/// Walks a JSON map in key order, whatever order it was written in.
trait SortedEntries {
    fn sorted_entries(&self) -> Vec<(&String, &Value)>;
}

impl SortedEntries for Map<String, Value> {
    fn sorted_entries(&self) -> Vec<(&String, &Value)> {
        let mut entries: Vec<_> = self.iter().collect();
        entries.sort_by(|a, b| a.0.cmp(b.0));
        entries
    }
}

fn env_var(name: &str, var: &Value) -> Value {
    let mut entry = Map::new();
    entry.insert("name".into(), Value::from(name));
    if let Some(value) = var.get("value") {
        let text = match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        entry.insert("value".into(), Value::from(text));
    }
    for key in ["secretKeyRef", "configMapKeyRef", "fieldRef", "resourceFieldRef"] {
        if let Some(reference) = var.get(key) {
            entry.insert("valueFrom".into(), json!({ key: reference }));
        }
    }
    Value::Object(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_from_parts() {
        let image = json!({"repository": "ghcr.io/acme/api", "tag": "1.4.0", "digest": "sha256:ab"});
        assert_eq!(image_reference(&image).unwrap(), "ghcr.io/acme/api:1.4.0@sha256:ab");
        assert!(image_reference(&json!(7)).is_err());
    }

    #[test]
    fn maps_become_name_ordered_lists() {
        let spec = json!({
            "image": "api:1",
            "ports": {"metrics": {"containerPort": 9090}, "http": {"containerPort": 8080}},
            "env": {"MODE": {"value": "fast"}, "DB_PASSWORD": {"secretKeyRef": {"name": "db", "key": "pw"}}},
            "volumeMounts": {"data": {"mountPath": "/data", "readOnly": true}},
        });
        let c = container(&spec, "api").unwrap();
        assert_eq!(c["name"], "api");
        assert_eq!(c["ports"][0], json!({"name": "http", "containerPort": 8080}));
        assert_eq!(c["ports"][1]["name"], "metrics");
        assert_eq!(c["env"][0], json!({"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}}));
        assert_eq!(c["env"][1], json!({"name": "MODE", "value": "fast"}));
        assert_eq!(c["volumeMounts"][0], json!({"name": "data", "mountPath": "/data", "readOnly": true}));
    }
}
