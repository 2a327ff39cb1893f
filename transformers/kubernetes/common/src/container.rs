//! An OPM container (`docs/vocabulary.md`) as a Kubernetes container.

use opm_guest::{Map, TransformError, Value, json};
use opm_module_common::env::ordered;

use crate::{copy_fields, sorted_entries};

/// The image reference of a container: `repo:tag[@digest]` as written, or assembled from
/// `{repository, tag, digest}` ([`opm_module_common::container::image_reference`]).
pub fn image_reference(image: &Value) -> Result<String, TransformError> {
    opm_module_common::container::image_reference(image, "container")
}

/// Translates an OPM container into a Kubernetes container; `default_name` names it when the
/// container itself has no `name`. Ports and mounts become lists in name order; `env` keeps the
/// order of a list, and renders a map in the order [`env_list`] gives.
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
    copy_fields(
        spec,
        &mut out,
        &["imagePullPolicy", "command", "args", "workingDir"],
    );
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
    if let Some(sources) = fields.get("envFrom").filter(|s| !is_empty_list(s)) {
        out.insert("envFrom".into(), sources.clone());
    }
    let env = env_list(fields.get("env"))?;
    if !env.is_empty() {
        out.insert("env".into(), Value::Array(env));
    }
    if let Some(resources) = fields.get("resources").filter(|r| !is_empty(r)) {
        out.insert("resources".into(), resources.clone());
    }
    // A volume's mount, or a list of them, in the order written.
    let mounts: Vec<Value> = sorted_entries(fields.get("volumeMounts"))
        .into_iter()
        .flat_map(|(volume, mounts)| {
            crate::mounts_of(mounts).into_iter().map(move |mount| {
                let mut entry = Map::new();
                entry.insert("name".into(), Value::from(volume.as_str()));
                copy_fields(mount, &mut entry, &["mountPath", "readOnly", "subPath"]);
                Value::Object(entry)
            })
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
            "lifecycle",
            "securityContext",
            "stdin",
            "stdinOnce",
            "tty",
            "restartPolicy",
        ],
    );
    Ok(Value::Object(out))
}

fn is_empty(value: &Value) -> bool {
    value.as_object().is_some_and(Map::is_empty)
}

fn is_empty_list(value: &Value) -> bool {
    value.as_array().is_some_and(Vec::is_empty)
}

/// The container's `env` as Kubernetes' list. A list is kept in the order written. A map
/// (name → source) is rendered in name order, except that a variable whose value refers to
/// others with `$(NAME)` comes after them: Kubernetes expands a reference only to a variable
/// defined earlier in the list, so name order alone could leave `$(DB_HOST)` unexpanded in
/// `DATABASE_URL`. References that form a cycle are an error, as no order expands them all
/// ([`ordered`]).
fn env_list(env: Option<&Value>) -> Result<Vec<Value>, TransformError> {
    let order = ordered(
        env,
        "container",
        "Kubernetes expands a reference only to a variable defined before it",
    )?;
    Ok(order
        .into_iter()
        .map(|(name, var)| env_var(name, var))
        .collect())
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

    /// One volume mounted at several paths, each with its own subPath, in the order
    /// written (Nextcloud mounts one claim seven times).
    #[test]
    fn a_volume_mounted_several_times_gives_a_mount_each() {
        let spec = json!({
            "image": "nextcloud:31",
            "volumeMounts": {
                "data": [
                    {"mountPath": "/var/www/html", "subPath": "html"},
                    {"mountPath": "/var/www/html/config", "subPath": "config", "readOnly": true},
                ],
                "cache": {"mountPath": "/cache"},
            },
        });
        let c = container(&spec, "app").unwrap();
        assert_eq!(
            c["volumeMounts"],
            json!([
                {"name": "cache", "mountPath": "/cache"},
                {"name": "data", "mountPath": "/var/www/html", "subPath": "html"},
                {"name": "data", "mountPath": "/var/www/html/config", "readOnly": true, "subPath": "config"},
            ])
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

    #[test]
    fn env_maps_put_a_variable_after_those_it_refers_to() {
        let spec = json!({"image": "x", "env": {
            "DATABASE_URL": {"value": "postgres://$(DB_USER)@$(DB_HOST)/app"},
            "DB_HOST": {"value": "db"},
            "DB_USER": {"secretKeyRef": {"name": "db", "key": "user"}},
            "ALPHA": {"value": "$$(DB_HOST) is escaped, $(UNKNOWN) is not ours"},
        }});
        let c = container(&spec, "x").unwrap();
        let names: Vec<&str> = c["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["ALPHA", "DB_HOST", "DB_USER", "DATABASE_URL"]);
        let cycle = json!({"image": "x", "env": {"A": {"value": "$(B)"}, "B": {"value": "$(A)"}, "C": {"value": "$(C)"}}});
        let error = container(&cycle, "x").unwrap_err().to_string();
        assert!(error.contains("A, B refer to each other"), "{error}");
    }

    #[test]
    fn env_lists_keep_the_written_order_and_refuse_a_name_twice() {
        let spec = json!({"image": "x", "env": [
            {"name": "Z", "value": 1},
            {"name": "A", "configMapKeyRef": {"name": "cm", "key": "a"}},
        ]});
        let c = container(&spec, "x").unwrap();
        assert_eq!(
            c["env"],
            json!([{"name": "Z", "value": "1"},
                   {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "a"}}}])
        );
        let twice = json!({"image": "x", "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]});
        assert!(
            container(&twice, "x")
                .unwrap_err()
                .to_string()
                .contains("\"A\" twice")
        );
    }

    #[test]
    fn env_from_working_dir_lifecycle_and_terminal_fields_pass_through() {
        let spec = json!({
            "image": "x",
            "envFrom": [{"configMapRef": {"name": "settings"}}, {"secretRef": {"name": "creds", "optional": true}, "prefix": "APP_"}],
            "workingDir": "/srv",
            "lifecycle": {"postStart": {"exec": {"command": ["/bin/warm"]}}},
            "stdin": true, "tty": true,
        });
        let c = container(&spec, "x").unwrap();
        assert_eq!(
            c,
            json!({"name": "x", "image": "x", "workingDir": "/srv",
                   "envFrom": [{"configMapRef": {"name": "settings"}}, {"secretRef": {"name": "creds", "optional": true}, "prefix": "APP_"}],
                   "lifecycle": {"postStart": {"exec": {"command": ["/bin/warm"]}}},
                   "stdin": true, "tty": true})
        );
        let keys: Vec<&String> = c.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "name",
                "image",
                "workingDir",
                "envFrom",
                "lifecycle",
                "stdin",
                "tty"
            ]
        );
    }
}
