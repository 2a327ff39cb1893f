//! A module's parameters (`docs/module-format.md#parameters-config`): the `config` section, a JSON Schema
//! of the values a consumer may set, as a chart's `values.schema.json` is.
//!
//! When a module has `config`, values files and `--set` set *parameters*, not the module
//! document: they are merged in order into one tree, every key checked against the schema (a
//! key the schema does not declare is an error with the name it is likely a typo of), the
//! schema's `default`s fill what is not set — a map the values set is deep-merged over a map
//! default, `null` removing a default's key — and the result is validated against the schema.
//! Each problem names the values file, line and column, or the `--set` argument, that supplied
//! the bad part. The parameters are then what `${config.…}` references and expressions read.
//!
//! An object schema that declares `properties` is closed unless it says otherwise
//! (`additionalProperties: true` or a schema): a consumer's typo must not pass as a new
//! parameter nobody reads.

use std::collections::BTreeSet;

use serde_json::{Map, Value as Json};

use super::tree::{Node, Value};
use super::values::did_you_mean_among;
use super::{Diagnostic, ModuleError, Origin};

/// The `config` section, checked to be a usable schema.
pub(crate) struct Config {
    /// The schema as written.
    pub(crate) schema: Json,
    validator: jsonschema::Validator,
    /// Where `config` is written.
    pub(crate) origin: Origin,
}

impl Config {
    /// Reads the `config` section at `node`.
    pub(crate) fn read(node: &Node) -> Result<Self, ModuleError> {
        if !matches!(node.value, Value::Map(_)) {
            return Err(ModuleError::invalid(
                node.origin.clone(),
                format!(
                    "config must be a JSON Schema (a map, usually with `properties`), not {}",
                    node.describe()
                ),
            ));
        }
        let mut schema = node.to_json();
        // A config is an object of parameters; saying so is optional.
        if let Json::Object(map) = &mut schema {
            map.entry("type").or_insert_with(|| Json::from("object"));
        }
        let validator = jsonschema::Validator::new(&schema).map_err(|error| {
            ModuleError::invalid(
                node.origin.clone(),
                format!("config is not a valid JSON Schema: {}", error.masked()),
            )
        })?;
        Ok(Self {
            schema,
            validator,
            origin: node.origin.clone(),
        })
    }

    /// The parameters `values` (values files and `--set`s merged in order) set: unknown keys
    /// refused, defaults filled, the whole validated.
    pub(crate) fn parameters(&self, values: &Node) -> Result<Json, ModuleError> {
        let mut problems = Vec::new();
        unknown_keys(&self.schema, values, "", &mut problems);
        if !problems.is_empty() {
            return Err(ModuleError::Invalid { problems });
        }
        let mut parameters = match values.to_json() {
            Json::Null => Json::Object(Map::new()),
            other => other,
        };
        fill_defaults(&self.schema, &mut parameters);
        let mut seen = BTreeSet::new();
        for error in self.validator.iter_errors(&parameters) {
            let pointer = error.instance_path().to_string();
            let origin = if pointer.is_empty() || values.is_empty_map() {
                self.origin.clone()
            } else {
                values.origin_at(&pointer).clone()
            };
            let message = crate::definitions::catalog::describe_violation(&error);
            let at = if pointer.is_empty() {
                String::new()
            } else {
                format!("parameter {}: ", dotted(&pointer))
            };
            if seen.insert((pointer.clone(), message.clone())) {
                problems.push(Diagnostic {
                    origin,
                    message: format!("{at}{message}"),
                });
            }
        }
        if problems.is_empty() {
            Ok(parameters)
        } else {
            Err(ModuleError::Invalid { problems })
        }
    }
}

/// `/a/b/0` as `a.b[0]`, how `--set` writes it.
fn dotted(pointer: &str) -> String {
    let mut text = String::new();
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        if token.parse::<usize>().is_ok() {
            text.push_str(&format!("[{token}]"));
        } else {
            if !text.is_empty() {
                text.push('.');
            }
            text.push_str(&token);
        }
    }
    text
}

impl Config {
    /// Whether the schema declares the parameter at `path` (keys, and `None` for a list index):
    /// an error that names it, with the key it is likely a typo of, when a closed object has no
    /// such key. What lies under a free-form object is not checked.
    pub(crate) fn check_reference(&self, path: &[Option<&str>]) -> Result<(), String> {
        let mut schema = &self.schema;
        let mut walked = String::from("config");
        for step in path {
            match step {
                None => match schema.get("items") {
                    Some(items) => schema = items,
                    None => return Ok(()),
                },
                Some(key) => {
                    if let Some(child) = schema
                        .get("properties")
                        .and_then(Json::as_object)
                        .and_then(|p| p.get(*key))
                    {
                        schema = child;
                    } else if let Some(declared) = closed(schema) {
                        return Err(format!(
                            "{walked} has no parameter {key:?}{}",
                            did_you_mean_among(key, declared.keys().map(String::as_str))
                        ));
                    } else if let Some(extra @ Json::Object(_)) = schema.get("additionalProperties")
                    {
                        schema = extra;
                    } else {
                        return Ok(());
                    }
                    walked = format!("{walked}.{key}");
                }
            }
        }
        Ok(())
    }
}

/// Whether the object schema `schema` refuses keys it does not declare: it declares
/// `properties` and does not allow others.
fn closed(schema: &Json) -> Option<&Map<String, Json>> {
    let properties = schema.get("properties")?.as_object()?;
    match schema.get("additionalProperties") {
        None | Some(Json::Bool(false)) => Some(properties),
        Some(_) => None,
    }
}

/// A problem for every key of `node` that the schema does not declare, with a suggestion.
fn unknown_keys(schema: &Json, node: &Node, path: &str, problems: &mut Vec<Diagnostic>) {
    match &node.value {
        Value::Map(entries) => {
            let properties = schema.get("properties").and_then(Json::as_object);
            let allowed = closed(schema);
            for entry in entries {
                let here = if path.is_empty() {
                    entry.key.clone()
                } else {
                    format!("{path}.{}", entry.key)
                };
                match properties.and_then(|p| p.get(&entry.key)) {
                    Some(child) => unknown_keys(child, &entry.value, &here, problems),
                    None => match allowed {
                        Some(declared) => problems.push(Diagnostic {
                            origin: entry.key_origin.clone(),
                            message: format!(
                                "config has no parameter {here}{}",
                                did_you_mean_among(&entry.key, declared.keys().map(String::as_str))
                            ),
                        }),
                        None => {
                            if let Some(extra @ Json::Object(_)) =
                                schema.get("additionalProperties")
                            {
                                unknown_keys(extra, &entry.value, &here, problems);
                            }
                        }
                    },
                }
            }
        }
        Value::List(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (index, item) in items.iter().enumerate() {
                    unknown_keys(item_schema, item, &format!("{path}[{index}]"), problems);
                }
            }
        }
        _ => {}
    }
}

/// Fills what `value` lacks from the `default`s of `schema`, recursively: a property that is
/// missing gets its default, and an object property without a default is made (empty) when
/// something under it has one, so that `config.ingress.enabled` is `false` by default even
/// when nothing sets `ingress`.
pub(crate) fn fill_defaults(schema: &Json, value: &mut Json) {
    let Some(properties) = schema.get("properties").and_then(Json::as_object) else {
        return;
    };
    let Json::Object(object) = value else {
        return;
    };
    for (key, property) in properties {
        match (object.get_mut(key), property.get("default")) {
            (None, Some(default)) => {
                object.insert(key.clone(), default.clone());
            }
            (None, None) if has_defaults(property) => {
                object.insert(key.clone(), Json::Object(Map::new()));
            }
            // A map the values set is merged over the map its default holds, as Helm merges
            // values over a chart's.
            (Some(value), Some(default)) => merge_over(value, default),
            _ => {}
        }
        if let Some(child) = object.get_mut(key) {
            fill_defaults(property, child);
        }
    }
}

/// `value` deep-merged over `default` where both are maps: a key `value` lacks is the
/// default's, a key both have merges again, and a key `value` sets to `null` removes the
/// default's entry. Anything else — a scalar, a list, a map over a non-map — replaces.
fn merge_over(value: &mut Json, default: &Json) {
    let (Json::Object(value), Json::Object(default)) = (value, default) else {
        return;
    };
    for (key, default) in default {
        match value.get_mut(key) {
            None => {
                value.insert(key.clone(), default.clone());
            }
            Some(Json::Null) => {
                value.remove(key);
            }
            Some(set) => merge_over(set, default),
        }
    }
}

/// Whether anything under the object schema `schema` has a default.
fn has_defaults(schema: &Json) -> bool {
    schema
        .get("properties")
        .and_then(Json::as_object)
        .is_some_and(|properties| {
            properties
                .values()
                .any(|p| p.get("default").is_some() || has_defaults(p))
        })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::module::tree;

    fn node(text: &str, file: &str) -> Node {
        tree::parse(text, &Arc::from(file)).unwrap()
    }

    const SCHEMA: &str = "properties:\n  replicas: {type: integer, default: 1, minimum: 1}\n  domain: {type: string}\n  ingress:\n    type: object\n    properties:\n      enabled: {type: boolean, default: false}\n      className: {type: string}\nrequired: [domain]\n";

    fn parameters(values: &str) -> Result<Json, String> {
        let config = Config::read(&node(SCHEMA, "module.yaml")).unwrap();
        config
            .parameters(&node(values, "values.yaml"))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_fill_what_values_leave_out_nested_ones_too() {
        assert_eq!(
            parameters("domain: git.example.com").unwrap(),
            json!({"domain": "git.example.com", "replicas": 1, "ingress": {"enabled": false}})
        );
    }

    /// Real charts (2026-12): a values file that set one key of a map parameter lost the rest of
    /// its default (`grafanaIni.server.root_url` dropped the default `paths` section), and
    /// `key: null` could not remove one default entry. Maps merge over their defaults, deeply;
    /// `null` removes a default's key; scalars and lists replace.
    #[test]
    fn a_map_parameter_merges_over_its_default_and_null_removes_a_key() {
        let schema = "properties:\n  ini:\n    type: object\n    additionalProperties: {type: object}\n    default: {server: {root_url: 'http://localhost', port: '3000'}, paths: {data: /var/lib/grafana}, smtp: {enabled: 'false'}}\n  hosts: {type: array, default: [a, b]}\n";
        let config = Config::read(&node(schema, "module.yaml")).unwrap();
        let values = node(
            "ini: {server: {root_url: 'https://grafana.example.com'}, smtp: null}\nhosts: [c]\n",
            "values.yaml",
        );
        assert_eq!(
            config.parameters(&values).unwrap(),
            json!({
                "ini": {
                    "server": {"root_url": "https://grafana.example.com", "port": "3000"},
                    "paths": {"data": "/var/lib/grafana"},
                },
                "hosts": ["c"],
            })
        );
    }

    #[test]
    fn a_wrong_type_names_the_values_file_line_and_parameter() {
        assert_eq!(
            parameters("domain: a\nreplicas: many\n").unwrap_err(),
            "values.yaml:2:11: parameter replicas: the value is not of type \"integer\""
        );
    }

    #[test]
    fn an_unknown_key_is_an_error_with_a_suggestion() {
        assert_eq!(
            parameters("domain: a\ningress: {enabld: true}\n").unwrap_err(),
            "values.yaml:2:11: config has no parameter ingress.enabld; did you mean \"enabled\"?"
        );
    }

    #[test]
    fn a_missing_required_parameter_is_named() {
        let error = parameters("replicas: 2").unwrap_err();
        assert!(
            error.contains("\"domain\" is a required property"),
            "{error}"
        );
    }

    #[test]
    fn an_invalid_schema_is_refused_where_config_is() {
        let error = Config::read(&node("properties: {a: {type: 12}}", "module.yaml"))
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.starts_with("module.yaml:1:1: config is not a valid JSON Schema"),
            "{error}"
        );
    }
}
