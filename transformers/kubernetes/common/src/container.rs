//! An OPM container (`docs/vocabulary.md`) as a Kubernetes container.

use opm_guest::{Map, TransformError, Value, json};

use crate::{copy_fields, sorted_entries};

/// The image reference of a container: `repo:tag[@digest]` as written, or assembled from
/// `{repository, tag, digest}`.
pub fn image_reference(image: &Value) -> Result<String, TransformError> {
    match image {
        Value::String(reference) if !reference.is_empty() => Ok(reference.clone()),
        Value::Object(parts) => {
            let repository = parts
                .get("repository")
                .and_then(Value::as_str)
                .filter(|repository| !repository.is_empty())
                .ok_or_else(|| {
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
/// container itself has no `name`. Ports, env and mounts become lists in name order.
pub fn container(spec: &Value, default_name: &str) -> Result<Value, TransformError> {
    let fields = spec
        .as_object()
        .ok_or_else(|| TransformError::invalid("container must be an object"))?;
    let image = fields
        .get("image")
        .ok_or_else(|| TransformError::invalid("container.image is required"))?;
    let mut out = Map::new();
    let name = fields
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or(default_name);
    out.insert("name".into(), Value::from(name));
    out.insert("image".into(), Value::from(image_reference(image)?));
    copy_fields(spec, &mut out, &["imagePullPolicy", "command", "args"]);
    let ports: Vec<Value> = sorted_entries(fields.get("ports"))
        .into_iter()
        .map(|(name, port)| {
            let mut entry = Map::new();
            entry.insert("name".into(), Value::from(name.as_str()));
            copy_fields(port, &mut entry, &["containerPort", "protocol"]);
            Value::Object(entry)
        })
        .collect();
    if !ports.is_empty() {
        out.insert("ports".into(), Value::Array(ports));
    }
    let env: Vec<Value> = sorted_entries(fields.get("env"))
        .into_iter()
        .map(|(name, var)| env_var(name, var))
        .collect();
    if !env.is_empty() {
        out.insert("env".into(), Value::Array(env));
    }
    if let Some(resources) = fields.get("resources").filter(|r| !is_empty(r)) {
        out.insert("resources".into(), resources.clone());
    }
    let mounts: Vec<Value> = sorted_entries(fields.get("volumeMounts"))
        .into_iter()
        .map(|(volume, mount)| {
            let mut entry = Map::new();
            entry.insert("name".into(), Value::from(volume.as_str()));
            copy_fields(mount, &mut entry, &["mountPath", "readOnly", "subPath"]);
            Value::Object(entry)
        })
        .collect();
    if !mounts.is_empty() {
        out.insert("volumeMounts".into(), Value::Array(mounts));
    }
    copy_fields(
        spec,
        &mut out,
        &[
            "livenessProbe",
            "readinessProbe",
            "startupProbe",
            "securityContext",
        ],
    );
    Ok(Value::Object(out))
}

fn is_empty(value: &Value) -> bool {
    value.as_object().is_some_and(Map::is_empty)
}

/// One `env` entry: a literal value (numbers and booleans as their text, as Kubernetes wants
/// strings) or a reference to a secret, config map, pod field or resource field.
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
    for key in [
        "secretKeyRef",
        "configMapKeyRef",
        "fieldRef",
        "resourceFieldRef",
    ] {
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
        let image =
            json!({"repository": "ghcr.io/acme/api", "tag": "1.4.0", "digest": "sha256:ab"});
        assert_eq!(
            image_reference(&image).unwrap(),
            "ghcr.io/acme/api:1.4.0@sha256:ab"
        );
        assert_eq!(
            image_reference(&json!({"repository": "nginx"})).unwrap(),
            "nginx"
        );
        assert!(image_reference(&json!(7)).is_err());
        assert!(image_reference(&json!({"repository": ""})).is_err());
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
        assert_eq!(
            c["ports"][0],
            json!({"name": "http", "containerPort": 8080})
        );
        assert_eq!(c["ports"][1]["name"], "metrics");
        assert_eq!(
            c["env"][0],
            json!({"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}})
        );
        assert_eq!(c["env"][1], json!({"name": "MODE", "value": "fast"}));
        assert_eq!(
            c["volumeMounts"][0],
            json!({"name": "data", "mountPath": "/data", "readOnly": true})
        );
    }

    #[test]
    fn literal_env_values_become_strings_and_field_refs_pass_through() {
        let spec = json!({"image": "x", "env": {
            "N": {"value": 3}, "ON": {"value": true},
            "NODE": {"fieldRef": {"fieldPath": "spec.nodeName"}},
        }});
        let c = container(&spec, "x").unwrap();
        assert_eq!(c["env"][0]["value"], "3");
        assert_eq!(
            c["env"][1]["valueFrom"]["fieldRef"]["fieldPath"],
            "spec.nodeName"
        );
        assert_eq!(c["env"][2]["value"], "true");
    }

    #[test]
    fn everything_else_is_kept_and_empty_collections_are_dropped() {
        let spec = json!({
            "name": "web", "image": "x", "imagePullPolicy": "Always", "command": ["run"],
            "args": ["--fast"], "ports": {}, "env": {}, "resources": {},
            "livenessProbe": {"tcpSocket": {"port": 80}},
            "securityContext": {"runAsNonRoot": true},
        });
        let c = container(&spec, "api").unwrap();
        assert_eq!(
            c,
            json!({"name": "web", "image": "x", "imagePullPolicy": "Always", "command": ["run"],
                   "args": ["--fast"], "livenessProbe": {"tcpSocket": {"port": 80}},
                   "securityContext": {"runAsNonRoot": true}})
        );
    }
}
