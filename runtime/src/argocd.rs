//! opm as an Argo CD Config Management Plugin (docs/delivering.md, "Inside Argo CD"): the
//! plugin's `plugin.yaml` ([`PLUGIN_YAML`]), the build environment Argo CD gives a plugin's
//! `generate` read into a render's flags ([`AppEnv`], [`AppEnv::apply`]), and the parameter
//! announcement the UI shows, made from the module's `config` ([`announcements`]) — so that the
//! UI and the render cannot disagree: the announced value of each parameter is its default,
//! which the render uses when Argo CD sends nothing back.
//!
//! What Argo CD gives `generate` (argo-cd's `reposerver/repository/repository.go` and
//! `cmpserver/plugin/plugin.go`): `ARGOCD_APP_NAME` (`NAMESPACE_NAME` for an Application
//! outside Argo CD's own namespace), `ARGOCD_APP_NAMESPACE` (the destination namespace),
//! `ARGOCD_APP_REVISION`, `ARGOCD_APP_SOURCE_REPO_URL`, the Application's `plugin.env` as
//! `ARGOCD_ENV_<NAME>`, and its `plugin.parameters` as the JSON array `ARGOCD_APP_PARAMETERS`
//! of `{"name", "string" | "array" | "map"}`. Its working directory is the application's path
//! in a copy of the repository, without `.git`, every file mode 0644.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::render::Request;

/// The plugin's configuration, mounted in the sidecar at
/// `/home/argocd/cmp-server/config/plugin.yaml`. Without `spec.version`, the Application names
/// the plugin `opm`.
pub const PLUGIN_YAML: &str = "\
# opm as an Argo CD Config Management Plugin: mount this file in the sidecar at
# /home/argocd/cmp-server/config/plugin.yaml (docs/delivering.md, \"Inside Argo CD\").
apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: opm
spec:
  # A directory holding a module renders with opm.
  discover:
    fileName: ./module.yaml
  # The Argo CD build environment as flags: the application's name as the instance (or
  # ARGOCD_ENV_INSTANCE), its destination namespace as -n, ARGOCD_ENV_VALUES as values files,
  # its parameters as --set. Only manifests reach stdout.
  generate:
    command: [opm, mod, build, --argocd, .]
  # The module's parameters, from its `config`, with their defaults.
  parameters:
    dynamic:
      command: [opm, argocd, parameters, .]
";

/// The Argo CD build environment of one application, as a render reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppEnv {
    /// The instance: `ARGOCD_ENV_INSTANCE`, else the application's name.
    pub instance: Option<String>,
    /// `ARGOCD_APP_NAMESPACE`.
    pub namespace: Option<String>,
    /// `ARGOCD_ENV_VALUES`: values files, comma-separated, relative to the application's path.
    pub values: Vec<PathBuf>,
    /// `ARGOCD_APP_PARAMETERS`, as `--set` assignments.
    pub set: Vec<String>,
    /// `ARGOCD_APP_SOURCE_REPO_URL`.
    pub repository: Option<String>,
    /// `ARGOCD_APP_REVISION`.
    pub revision: Option<String>,
}

/// The parameters Argo CD sends, at most this many bytes of JSON.
const MAX_PARAMETERS_BYTES: usize = 1 << 20;

impl AppEnv {
    /// Reads the environment of `env` for the module at `module`, whose `config` (if any) says
    /// the type each parameter is converted to. Each problem names the variable.
    pub fn read(env: &dyn Fn(&str) -> Option<String>, module: &Path) -> anyhow::Result<Self> {
        let nonempty = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let instance = match nonempty("ARGOCD_ENV_INSTANCE") {
            Some(instance) => Some(instance.trim().to_owned()),
            // An Application outside Argo CD's namespace is NAMESPACE_NAME; `_` is in no
            // Kubernetes name.
            None => nonempty("ARGOCD_APP_NAME")
                .map(|name| name.rsplit('_').next().unwrap_or_default().to_owned()),
        };
        if let Some(instance) = &instance {
            opm_core::names::check_instance_name(instance).map_err(|e| {
                anyhow::anyhow!(
                    "the Argo CD application's name (ARGOCD_APP_NAME, or ARGOCD_ENV_INSTANCE) \
                     is not an instance name: {e}"
                )
            })?;
        }
        let mut values = Vec::new();
        for file in nonempty("ARGOCD_ENV_VALUES")
            .iter()
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|f| !f.is_empty())
        {
            let path = Path::new(file);
            anyhow::ensure!(
                path.is_relative()
                    && path
                        .components()
                        .all(|c| matches!(c, std::path::Component::Normal(_))),
                "ARGOCD_ENV_VALUES names {file:?}: a values file is a path inside the \
                 application's directory"
            );
            values.push(path.to_owned());
        }
        let set = match nonempty("ARGOCD_APP_PARAMETERS") {
            Some(json) => {
                let schema = opm_core::module::config_schema(module)?;
                parameters_as_set(&json, schema.as_ref())?
            }
            None => Vec::new(),
        };
        Ok(Self {
            instance,
            namespace: nonempty("ARGOCD_APP_NAMESPACE"),
            values,
            set,
            repository: nonempty("ARGOCD_APP_SOURCE_REPO_URL"),
            revision: nonempty("ARGOCD_APP_REVISION"),
        })
    }

    /// `request` with this environment in it, the command line winning: the instance and
    /// namespace where it gave none, the values files and parameters before its own `-f` and
    /// `--set`.
    pub fn apply(self, request: &mut Request) {
        if request.instance.is_none() {
            request.instance = self.instance;
        }
        if request.namespace.is_none() {
            request.namespace = self.namespace;
        }
        let base = opm_core::module::module_file(&request.module)
            .parent()
            .map(Path::to_owned)
            .unwrap_or_default();
        let mut values: Vec<PathBuf> = self.values.iter().map(|v| base.join(v)).collect();
        values.append(&mut request.values);
        request.values = values;
        let mut set = self.set;
        set.append(&mut request.set);
        request.set = set;
    }

    /// The source of the render: Argo CD's repository and revision (a plugin sees no `.git`).
    pub fn source(&self) -> Option<opm_core::render::provenance::Source> {
        (self.repository.is_some() || self.revision.is_some()).then(|| {
            opm_core::render::provenance::Source {
                url: self.repository.clone(),
                revision: self.revision.as_ref().map(|r| format!("sha1:{r}")),
            }
        })
    }
}

/// The parameters Argo CD sends (`ARGOCD_APP_PARAMETERS`) as `--set PATH=VALUE` assignments:
/// each name is a `--set` path; a `string` becomes the schema's type at that path (a number,
/// a boolean, a string, or for a list or map of objects the YAML or JSON it holds), an `array`
/// a list and a `map` a map of such values. The assignments are then checked against `config`
/// as any `--set` is.
pub fn parameters_as_set(json: &str, schema: Option<&Value>) -> anyhow::Result<Vec<String>> {
    anyhow::ensure!(
        json.len() <= MAX_PARAMETERS_BYTES,
        "ARGOCD_APP_PARAMETERS is {} bytes, over the limit of {MAX_PARAMETERS_BYTES}",
        json.len()
    );
    let parameters: Vec<Value> = serde_json::from_str(json)
        .map_err(|e| anyhow::anyhow!("ARGOCD_APP_PARAMETERS is not a JSON array: {e}"))?;
    let mut set = Vec::new();
    for parameter in parameters {
        let Some(name) = parameter["name"].as_str().filter(|n| !n.is_empty()) else {
            anyhow::bail!("ARGOCD_APP_PARAMETERS holds a parameter without a name");
        };
        let at = schema.and_then(|s| schema_at(s, name));
        let value = if let Some(text) = parameter["string"].as_str() {
            typed(name, text, at)?
        } else if let Some(items) = parameter["array"].as_array() {
            let item = at.map(|s| &s["items"]);
            Value::Array(
                items
                    .iter()
                    .map(|v| typed(name, v.as_str().unwrap_or_default(), item))
                    .collect::<anyhow::Result<_>>()?,
            )
        } else if let Some(entries) = parameter["map"].as_object() {
            let item = at.map(|s| &s["additionalProperties"]);
            Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| {
                        Ok((
                            k.clone(),
                            typed(name, v.as_str().unwrap_or_default(), item)?,
                        ))
                    })
                    .collect::<anyhow::Result<Map<_, _>>>()?,
            )
        } else {
            anyhow::bail!(
                "parameter {name} (ARGOCD_APP_PARAMETERS) has no `string`, `array` or `map`"
            );
        };
        set.push(format!("{name}={value}"));
    }
    Ok(set)
}

/// The text `text` of parameter `name` as the value the schema `at` wants.
fn typed(name: &str, text: &str, at: Option<&Value>) -> anyhow::Result<Value> {
    let kind = at.and_then(|s| s["type"].as_str()).unwrap_or("string");
    let parsed = match kind {
        "integer" | "number" | "boolean" => serde_json::from_str::<Value>(text.trim()).ok(),
        // The parser's message may quote the value, which may be a secret: not shown.
        "object" | "array" => Some(serde_saphyr::from_str::<Value>(text).map_err(|_| {
            anyhow::anyhow!("parameter {name} (ARGOCD_APP_PARAMETERS) is not YAML or JSON")
        })?),
        _ => None,
    };
    // What does not parse stays a string, which the check against `config` names.
    Ok(parsed.unwrap_or_else(|| Value::String(text.to_owned())))
}

/// The schema of the parameter at the `--set` path `path` (keys separated by `.`, a `\.` a dot
/// inside a key), following `properties`.
fn schema_at<'a>(schema: &'a Value, path: &str) -> Option<&'a Value> {
    let mut at = schema;
    for key in split_path(path) {
        at = at["properties"].get(&key)?;
    }
    Some(at)
}

fn split_path(path: &str) -> Vec<String> {
    let mut keys = vec![String::new()];
    let mut chars = path.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => keys.last_mut().unwrap().extend(chars.next()),
            '.' => keys.push(String::new()),
            c => keys.last_mut().unwrap().push(c),
        }
    }
    keys
}

/// The parameter announcement of a module whose `config` is `schema` (none: no parameters): a
/// JSON array of Argo CD's `ParameterAnnouncement`s, one per parameter a user sets as a whole —
/// a scalar, a list of scalars (`array`) or a map of scalars (`map`); a list or map of objects
/// is a `string` holding its JSON. Nested objects with `properties` are walked, their names
/// joined by `.` (a dot in a key written `\.`), as `--set` paths are. Each has the schema's
/// `title` (else its name), its `description` as the tooltip, whether it is required, and its
/// default as the announced value.
pub fn announcements(schema: Option<&Value>) -> Value {
    let mut out = Vec::new();
    if let Some(schema) = schema {
        walk(schema, "", &mut out);
    }
    Value::Array(out)
}

fn walk(schema: &Value, prefix: &str, out: &mut Vec<Value>) {
    let Some(properties) = schema["properties"].as_object() else {
        return;
    };
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (key, property) in properties {
        let name = format!("{prefix}{}", key.replace('.', "\\."));
        let kind = property["type"].as_str().unwrap_or_default();
        if kind == "object" && property["properties"].is_object() {
            walk(property, &format!("{name}."), out);
            continue;
        }
        let mut announcement = Map::new();
        announcement.insert("name".into(), json!(name));
        announcement.insert(
            "title".into(),
            property["title"].as_str().map_or(json!(name), |t| json!(t)),
        );
        if let Some(tooltip) = property["description"].as_str() {
            announcement.insert("tooltip".into(), json!(tooltip));
        }
        if required.contains(&key.as_str()) {
            announcement.insert("required".into(), json!(true));
        }
        let default = property.get("default");
        let scalar = |schema: &Value| {
            matches!(
                schema["type"].as_str(),
                Some("string" | "integer" | "number" | "boolean")
            )
        };
        if kind == "array" && scalar(&property["items"]) {
            announcement.insert("collectionType".into(), json!("array"));
            announcement.insert("itemType".into(), json!(item_type(&property["items"])));
            if let Some(Value::Array(items)) = default {
                announcement.insert(
                    "array".into(),
                    Value::Array(items.iter().map(|v| json!(text(v))).collect()),
                );
            }
        } else if kind == "object" && scalar(&property["additionalProperties"]) {
            announcement.insert("collectionType".into(), json!("map"));
            announcement.insert(
                "itemType".into(),
                json!(item_type(&property["additionalProperties"])),
            );
            if let Some(Value::Object(entries)) = default {
                announcement.insert(
                    "map".into(),
                    Value::Object(
                        entries
                            .iter()
                            .map(|(k, v)| (k.clone(), json!(text(v))))
                            .collect(),
                    ),
                );
            }
        } else {
            announcement.insert("collectionType".into(), json!("string"));
            announcement.insert("itemType".into(), json!(item_type(property)));
            if let Some(default) = default {
                announcement.insert("string".into(), json!(text(default)));
            }
        }
        out.push(Value::Object(announcement));
    }
}

/// Argo CD's `itemType` of a schema: `string`, `number` or `boolean` (its UI's input kinds).
fn item_type(schema: &Value) -> &'static str {
    match schema["type"].as_str() {
        Some("integer" | "number") => "number",
        Some("boolean") => "boolean",
        _ => "string",
    }
}

/// A value as the text Argo CD shows and sends back: a string as it is, anything else as JSON.
fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "required": ["replicas"],
            "properties": {
                "replicas": {"type": "integer", "default": 2, "description": "How many"},
                "host": {"type": "string"},
                "debug": {"type": "boolean", "default": false},
                "image": {"type": "object", "properties": {"tag": {"type": "string", "default": "1.0"}}},
                "args": {"type": "array", "items": {"type": "string"}, "default": ["a", "b"]},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}, "default": {"team": "x"}},
                "datasources": {"type": "array", "items": {"type": "object"}, "default": [{"name": "p"}]},
                "a.b": {"type": "string", "default": "dotted"}
            }
        })
    }

    #[test]
    fn every_parameter_is_announced_with_its_default() {
        let announced = announcements(Some(&schema()));
        let by_name = |name: &str| {
            announced
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["name"] == name)
                .cloned()
                .unwrap_or_else(|| panic!("{name} in {announced:#}"))
        };
        assert_eq!(
            by_name("replicas"),
            json!({"name": "replicas", "title": "replicas", "tooltip": "How many", "required": true,
                   "collectionType": "string", "itemType": "number", "string": "2"})
        );
        assert_eq!(by_name("image.tag")["string"], "1.0");
        assert_eq!(by_name("args")["array"], json!(["a", "b"]));
        assert_eq!(by_name("labels")["map"], json!({"team": "x"}));
        assert_eq!(by_name("datasources")["string"], r#"[{"name":"p"}]"#);
        assert_eq!(by_name(r"a\.b")["string"], "dotted");
        assert!(by_name("host").get("string").is_none());
    }

    #[test]
    fn parameters_become_typed_set_assignments() {
        let sent = r#"[{"name": "replicas", "string": "3"}, {"name": "debug", "string": "true"},
            {"name": "image.tag", "string": "2"}, {"name": "args", "array": ["x"]},
            {"name": "labels", "map": {"team": "y"}}, {"name": "datasources", "string": "[{name: q}]"},
            {"name": "a\\.b", "string": "1"}]"#;
        assert_eq!(
            parameters_as_set(sent, Some(&schema())).unwrap(),
            [
                "replicas=3",
                "debug=true",
                r#"image.tag="2""#,
                r#"args=["x"]"#,
                r#"labels={"team":"y"}"#,
                r#"datasources=[{"name":"q"}]"#,
                r#"a\.b="1""#,
            ]
        );
        assert!(parameters_as_set("{}", None).is_err());
        // Argo CD's environment is the Application author's: over 1 MiB is refused unparsed.
        let huge = format!("[{}]", " ".repeat(MAX_PARAMETERS_BYTES));
        let error = parameters_as_set(&huge, None).unwrap_err().to_string();
        assert!(error.contains("over the limit"), "{error}");
        assert!(parameters_as_set(r#"[{"name": "x"}]"#, None).is_err());
    }
}
