//! `opm mod schema`: a JSON Schema of the module format with every definition a provider (and
//! a module's own `definitions`) declares, for editors.
//!
//! An editor with the YAML language server validates and completes `module.yaml` as it is typed
//! once the file's first line names the schema:
//!
//! ```yaml
//! # yaml-language-server: $schema=module.schema.json
//! ```
//!
//! Each definition can be attached by its FQN or, where no other definition shares it, by its
//! short name, in the section of its kind; its value is checked against its own schema. A
//! definition with defaults takes a partial value (or none), since `opm` merges it over them:
//! the properties the defaults fill are not required. The schema is what `opm mod vet` checks
//! before matching, not all of it: vet also matches components to transformers.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::{Map, Value, json};

use crate::cli::Output;
use opm_core::definitions::{DefinitionKind, DefinitionSpec, Fqn};
use opm_core::module::{self, Module};
use opm_core::provider::{self, ProviderSet};

/// Arguments of `opm mod schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// A module whose own `definitions` the schema includes too (none by default).
    ///
    /// Example: opm mod schema shop/module.yaml
    #[arg(value_name = "MODULE")]
    pub module: Option<PathBuf>,

    /// A provider whose definitions the schema holds (repeatable, as for `opm mod build`): a
    /// bundle file (.opmb), a provider source directory, a provider the project names, or the
    /// embedded `kubernetes`. Default: the project's providers, else the embedded one.
    ///
    /// Example: -p kubernetes -p ./acme-0.1.0.opmb
    #[arg(short = 'p', long = "provider", value_name = "PROVIDER")]
    pub provider: Vec<String>,

    /// Write the schema of MODULE's parameters instead: what a values file for it
    /// (`-f values.yaml`) must hold, for an editor to check values files as they are typed.
    ///
    /// Example: opm mod schema examples/gitea --values -o values.schema.json
    #[arg(long = "values", requires = "module")]
    pub values: bool,

    /// Write the schema to FILE instead of stdout.
    ///
    /// Example: -o module.schema.json
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Runs `opm mod schema`.
pub fn run(args: SchemaArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    if args.values {
        let path = args
            .module
            .as_deref()
            .expect("clap requires MODULE with --values");
        let config = module::config_schema(path)?.ok_or_else(|| {
            anyhow::anyhow!(
                "{} declares no parameters (no `config`): its values change the module \
                 document, which `opm mod schema` without --values describes",
                path.display()
            )
        })?;
        let text = format!(
            "{}\n",
            serde_json::to_string_pretty(&values_schema(&path.display().to_string(), config))?
        );
        return write(&args, out, &text);
    }
    let start = args.module.clone().unwrap_or_else(|| PathBuf::from("."));
    let providers = provider::load_set(
        &args.provider,
        &start,
        None,
        out.env,
        &crate::embedded::PROVIDERS,
    )?;
    let module = match &args.module {
        Some(path) => Some(module::load(
            path,
            &[],
            &[],
            &module::Instance::default(),
            out.env,
            &mut Default::default(),
        )?),
        None => None,
    };
    let text = text(&providers, module.as_ref())?;
    write(&args, out, &text)
}

fn write(args: &SchemaArgs, out: &mut Output<'_>, text: &str) -> anyhow::Result<ExitCode> {
    match &args.output {
        Some(path) => opm_core::files::write_atomically_readable(path, text.as_bytes())?,
        None => out.stdout.write_all(text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The schema of a values file of the module at `module` whose `config` is `config`: the
/// config with every object that declares `properties` closed, as opm reads it.
pub fn values_schema(module: &str, mut config: Value) -> Value {
    close_objects(&mut config);
    if let Some(object) = config.as_object_mut() {
        object.insert(
            "$schema".into(),
            json!("http://json-schema.org/draft-07/schema#"),
        );
        object
            .entry("title")
            .or_insert_with(|| json!(format!("values of the opm module {module}")));
        object.entry("type").or_insert_with(|| json!("object"));
    }
    config
}

/// Sets `additionalProperties: false` on every object schema in `schema` that declares
/// `properties` and says nothing of others.
fn close_objects(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if object.contains_key("properties") {
        object
            .entry("additionalProperties")
            .or_insert(Value::Bool(false));
    }
    for (key, child) in object.iter_mut() {
        match key.as_str() {
            "properties" | "patternProperties" | "definitions" | "$defs" => {
                if let Some(children) = child.as_object_mut() {
                    children.values_mut().for_each(close_objects);
                }
            }
            "items" | "additionalProperties" | "not" => close_objects(child),
            "anyOf" | "oneOf" | "allOf" => {
                if let Some(children) = child.as_array_mut() {
                    children.iter_mut().for_each(close_objects);
                }
            }
            _ => {}
        }
    }
}

/// What a condition may be.
fn condition() -> Value {
    json!({"type": ["boolean", "string"], "description": "a condition: false leaves this out (docs/expressions.md#conditions)"})
}

/// `schema`, where every value may also be a `${…}` expression (a string opm resolves before
/// the definition's schema sees it), every map may carry a `$when`, and every value may be
/// `{$when, $value}` (docs/expressions.md#conditions).
fn with_expressions(schema: Value) -> Value {
    let expression = json!({"type": "string", "pattern": "\\$\\{", "description": "a ${…} reference or expression (docs/expressions.md)"});
    let wrapped = json!({"type": "object", "required": ["$when", "$value"], "description": "a value left out when its $when is false"});
    let Value::Object(mut object) = schema else {
        return schema;
    };
    for (key, child) in object.iter_mut() {
        match key.as_str() {
            "properties" | "patternProperties" => {
                if let Some(children) = child.as_object_mut() {
                    for value in children.values_mut() {
                        *value = with_expressions(value.take());
                    }
                }
            }
            "items" => *child = with_expressions(child.take()),
            "additionalProperties" if child.is_object() => {
                *child = with_expressions(child.take());
            }
            "anyOf" | "oneOf" | "allOf" => {
                if let Some(children) = child.as_array_mut() {
                    for value in children.iter_mut() {
                        *value = with_expressions(value.take());
                    }
                }
            }
            _ => {}
        }
    }
    let is_map = object.get("type").is_some_and(|t| t == "object")
        || object.contains_key("properties")
        || object.contains_key("additionalProperties");
    if is_map {
        let properties = object
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(properties) = properties.as_object_mut() {
            properties.insert("$when".into(), condition());
        }
        if let Some(names) = object.get_mut("propertyNames") {
            *names = json!({"anyOf": [names.take(), {"const": "$when"}]});
        }
        if let Some(most) = object.get("maxProperties").and_then(Value::as_u64) {
            object.insert("maxProperties".into(), json!(most + 1));
        }
    }
    json!({"anyOf": [Value::Object(object), expression, wrapped]})
}

/// An attached value's schema, kept as the definition `id`: the value with expressions and
/// conditions allowed inside, or `{$when, $value}` around it.
fn attachment(schema: Value, id: &str) -> Value {
    json!({"anyOf": [
        with_expressions(schema),
        {
            "type": "object",
            "required": ["$value"],
            "additionalProperties": false,
            "properties": {"$when": condition(), "$value": {"$ref": format!("#/definitions/{id}")}},
        },
    ]})
}

/// The name a definition's schema is kept under in `definitions`: its FQN with every character
/// but letters, digits, `.`, `-` and `_` made `_`, so that it is a plain JSON pointer token.
fn schema_id(fqn: &str) -> String {
    fqn.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The fewest bytes a part of the schema must have for a second copy of it to become a
/// reference to one shared copy.
const SHARED_FROM: usize = 512;

/// Moves every part of `definitions` (schemas, and the parts of them) that occurs more than
/// once and is at least [`SHARED_FROM`] bytes into a shared definition of its own, each copy
/// made a `$ref` to it: the catalog's YAML anchors (one probe schema for three probes of five
/// kinds of container) otherwise come out as copies, most of the schema's size.
fn share_repeated(definitions: &mut Map<String, Value>) {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for value in definitions.values() {
        count_schemas(value, &mut counts);
    }
    let mut shared: BTreeMap<String, String> = BTreeMap::new();
    let mut made = Map::new();
    for value in definitions.values_mut() {
        share_in(value, &counts, &mut shared, &mut made, true);
    }
    definitions.extend(made);
}

/// A schema's text with its keys sorted: equal schemas have equal texts.
fn canonical(value: &Value) -> String {
    opm_core::json::compact(&opm_core::json::sorted(value))
}

/// Where a keyword of a schema holds subschemas: a map of them, one, or a list of them.
enum Holds {
    Map,
    One,
    List,
    Nothing,
}

fn holds(keyword: &str) -> Holds {
    match keyword {
        "properties" | "patternProperties" | "definitions" | "dependencies" => Holds::Map,
        "items"
        | "additionalProperties"
        | "not"
        | "propertyNames"
        | "if"
        | "then"
        | "else"
        | "contains" => Holds::One,
        "anyOf" | "oneOf" | "allOf" => Holds::List,
        _ => Holds::Nothing,
    }
}

/// Calls `visit` with every subschema of the schema `value` (not `value` itself).
fn subschemas(value: &Value, visit: &mut dyn FnMut(&Value)) {
    let Some(object) = value.as_object() else {
        return;
    };
    for (key, child) in object {
        match (holds(key), child) {
            (Holds::Map, Value::Object(children)) => children.values().for_each(&mut *visit),
            (Holds::One, child) => visit(child),
            (Holds::List, Value::Array(children)) => children.iter().for_each(&mut *visit),
            _ => {}
        }
    }
}

/// [`subschemas`], each given to `visit` to change.
fn subschemas_mut(value: &mut Value, visit: &mut dyn FnMut(&mut Value)) {
    let Some(object) = value.as_object_mut() else {
        return;
    };
    for (key, child) in object.iter_mut() {
        match (holds(key), child) {
            (Holds::Map, Value::Object(children)) => children.values_mut().for_each(&mut *visit),
            (Holds::One, child) => visit(child),
            (Holds::List, Value::Array(children)) => children.iter_mut().for_each(&mut *visit),
            _ => {}
        }
    }
}

fn count_schemas(value: &Value, counts: &mut BTreeMap<String, usize>) {
    let text = canonical(value);
    if text.len() >= SHARED_FROM {
        *counts.entry(text).or_default() += 1;
    }
    subschemas(value, &mut |child| count_schemas(child, counts));
}

/// Replaces each repeated part of `value` with a `$ref` to its shared copy, made in `made` the
/// first time; `top` is a definition itself, which stays where it is.
fn share_in(
    value: &mut Value,
    counts: &BTreeMap<String, usize>,
    shared: &mut BTreeMap<String, String>,
    made: &mut Map<String, Value>,
    top: bool,
) {
    if !top {
        let text = canonical(value);
        if counts.get(&text).copied().unwrap_or(0) > 1 {
            let id = match shared.get(&text) {
                Some(id) => id.clone(),
                None => {
                    let id = format!("shared-{}", shared.len() + 1);
                    shared.insert(text, id.clone());
                    let mut first = std::mem::take(value);
                    subschemas_mut(&mut first, &mut |child| {
                        share_in(child, counts, shared, made, false);
                    });
                    made.insert(id.clone(), first);
                    id
                }
            };
            *value = json!({"$ref": format!("#/definitions/{id}")});
            return;
        }
    }
    subschemas_mut(value, &mut |child| {
        share_in(child, counts, shared, made, false)
    });
}

/// The schema of modules rendered by `providers`, with `module`'s own definitions if given, as
/// the text `opm mod schema` prints: pretty JSON and a final newline. A definition two
/// providers both hold is described once, as the first has it.
pub fn text(providers: &ProviderSet, module: Option<&Module>) -> anyhow::Result<String> {
    let mut definitions: Vec<(&str, &DefinitionSpec)> = Vec::new();
    for provider in providers.providers() {
        for (fqn, spec) in &provider.manifest.definitions {
            if !definitions.iter().any(|(seen, _)| *seen == fqn.as_str()) {
                definitions.push((fqn.as_str(), spec));
            }
        }
    }
    if let Some(module) = module {
        definitions.extend(
            module
                .definitions()
                .iter()
                .map(|(fqn, definition)| (fqn.as_str(), &definition.spec)),
        );
    }
    let schema = schema(&providers.name(), &definitions);
    Ok(format!("{}\n", serde_json::to_string_pretty(&schema)?))
}

/// The JSON Schema of a module that may attach `definitions` (FQN, spec).
pub fn schema(provider: &str, definitions: &[(&str, &DefinitionSpec)]) -> Value {
    // Short names that only one definition has.
    let mut short: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (fqn, _) in definitions {
        if let Ok(parsed) = Fqn::parse(fqn) {
            short.entry(parsed.name()).or_default().push(fqn);
        }
    }
    let mut sections: BTreeMap<DefinitionKind, Map<String, Value>> = DefinitionKind::ALL
        .into_iter()
        .map(|kind| (kind, Map::new()))
        .collect();
    // Each definition's schema once, referred to by its FQN and by its short name.
    let mut kept = Map::new();
    for (fqn, spec) in definitions {
        let id = schema_id(fqn);
        kept.insert(id.clone(), attachment(value_schema(spec), &id));
        let reference = json!({"$ref": format!("#/definitions/{id}")});
        let section = sections
            .get_mut(&spec.kind)
            .expect("every kind has a section");
        section.insert((*fqn).to_owned(), reference.clone());
        if let Ok(parsed) = Fqn::parse(fqn)
            && short[parsed.name()].len() == 1
        {
            section.insert(
                parsed.name().to_owned(),
                json!({
                    "description": format!("{fqn}: {}", spec.description.clone().unwrap_or_default()),
                    "allOf": [reference],
                }),
            );
        }
    }
    share_repeated(&mut kept);
    let section = |kind: DefinitionKind| {
        json!({"type": "object", "additionalProperties": false,
               "properties": sections[&kind].clone()})
    };
    let dns_label = json!({"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"});
    let strings = json!({"type": "object", "additionalProperties": {"type": "string"}});
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": format!("opm module (definitions of provider {provider})"),
        "definitions": kept,
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "components"],
        "additionalProperties": false,
        "properties": {
            "apiVersion": {"const": "core.opm.dev/v1"},
            "kind": {"const": "Module"},
            "metadata": {
                "type": "object",
                "required": ["name", "version"],
                "additionalProperties": false,
                "properties": {
                    "name": dns_label,
                    "version": {"type": "string", "minLength": 1},
                    "namespace": {"anyOf": [dns_label, {"type": "string", "pattern": "\\$\\{"}]},
                    "labels": strings,
                },
            },
            "config": {"type": "object", "description": "the module's parameters: a JSON Schema (docs/module-format.md#parameters-config)"},
            "locals": {"type": "object", "description": "named values computed once, read as local.NAME (docs/module-format.md#locals)"},
            "patches": patches_schema(),
            "definitions": {"type": "object"},
            "components": {
                "type": "object",
                "propertyNames": dns_label,
                "additionalProperties": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "when": {"type": ["boolean", "string"], "description": "a condition: false leaves the component out (docs/expressions.md#conditions)"},
                        "metadata": {
                            "type": "object",
                            "additionalProperties": false,
                            "properties": {"labels": strings, "annotations": strings},
                        },
                        "resources": section(DefinitionKind::Resource),
                        "traits": section(DefinitionKind::Trait),
                        "policies": section(DefinitionKind::Policy),
                    },
                },
            },
        },
    })
}

/// The schema of the module's `patches` (`docs/module-format.md#patches`): each a target and
/// exactly one of a merge patch and a JSON Patch.
fn patches_schema() -> Value {
    let text = json!({"type": "string", "minLength": 1});
    let pointer = json!({"type": "string", "pattern": "^(/|$)"});
    let operation = |op: &str, fields: &[&str]| {
        let mut properties = Map::new();
        properties.insert("op".into(), json!({"const": op}));
        let mut required = vec!["op"];
        for field in fields {
            let schema = match *field {
                "path" | "from" => pointer.clone(),
                _ => json!({}),
            };
            properties.insert((*field).into(), schema);
            required.push(field);
        }
        json!({"type": "object", "additionalProperties": false, "required": required,
               "properties": properties})
    };
    json!({
        "type": "array",
        "description": "changes to what the transformers render, applied in order (docs/module-format.md#patches)",
        "items": {
            "type": "object",
            "additionalProperties": false,
            "required": ["target"],
            "oneOf": [{"required": ["merge"]}, {"required": ["jsonPatch"]}],
            "properties": {
                "target": {
                    "type": "object",
                    "additionalProperties": false,
                    "minProperties": 1,
                    "description": "the objects patched: every one that has all that is given",
                    "properties": {
                        "platform": {
                            "description": "the platforms whose objects it patches, a provider's core.opm.dev/format (kubernetes unless given): one, or a list",
                            "oneOf": [
                                text,
                                {"type": "array", "minItems": 1, "uniqueItems": true, "items": text},
                            ],
                        },
                        "kind": text,
                        "name": {"type": "string", "minLength": 1, "description": "metadata.name as rendered, instance prefix included"},
                        "component": {"type": "string", "minLength": 1, "description": "the component whose call rendered the object"},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    },
                },
                "when": {"type": ["boolean", "string"], "description": "a condition: false leaves the patch out (docs/expressions.md#conditions)"},
                "merge": {"type": ["object", "string"], "description": "an RFC 7386 merge patch of each object, or a ${…} whose value is one"},
                "jsonPatch": {
                    "type": ["array", "string"],
                    "minItems": 1,
                    "description": "RFC 6902 JSON Patch operations, applied in order to each object",
                    "items": {"oneOf": [
                        operation("add", &["path", "value"]),
                        operation("remove", &["path"]),
                        operation("replace", &["path", "value"]),
                        operation("move", &["from", "path"]),
                        operation("copy", &["from", "path"]),
                        operation("test", &["path", "value"]),
                    ]},
                },
            },
        },
    })
}

/// The schema of one attached value: the definition's own, with what its defaults fill no
/// longer required and, when it has defaults, an empty value allowed.
fn value_schema(spec: &DefinitionSpec) -> Value {
    let mut schema = spec.schema.clone().unwrap_or_else(|| json!({}));
    let Some(defaults) = &spec.defaults else {
        return with_description(schema, spec);
    };
    if let (Some(object), Some(filled)) = (schema.as_object_mut(), defaults.as_object())
        && let Some(Value::Array(required)) = object.get_mut("required")
    {
        required.retain(|name| name.as_str().is_none_or(|name| !filled.contains_key(name)));
    }
    with_description(json!({"anyOf": [{"type": "null"}, schema]}), spec)
}

fn with_description(mut schema: Value, spec: &DefinitionSpec) -> Value {
    if let (Some(object), Some(description)) = (schema.as_object_mut(), &spec.description) {
        object
            .entry("description")
            .or_insert_with(|| json!(description));
    }
    schema
}
