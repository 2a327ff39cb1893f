//! The files of a ConfigMap or a Secret: one quadlet resource per object (`Config` or
//! `Secret`, named after the component, for the instance), whose spec holds each key's value
//! as the Kubernetes objects do — text in `data`, bytes that are not UTF-8 as base64 in
//! `binaryData` — so that a patch edits one key (`spec.data.settings.yaml`). The renderer
//! writes each key as the file `config/<object>/<key>` or `secrets/<object>/<key>` (mode
//! 0600), which units bind-mount read-only, and reads a key's text for an `EnvironmentFile=`.
//!
//! Errors name the field and the key, never the value: a Secret's values are sensitive.

use opm_compose_common::data::{Content, entries};
use opm_guest::{Component, Context, Map, TransformError, Value, json};

use crate::resource;

/// The one `kind` resource of the object `field` (`configMap`, `secret`) of `component`, its
/// keys read from the text and base64 maps named by `fields`; nothing for an object with no
/// key. The object is named after the component (or its `name`, exactly, to adopt one).
pub fn object(
    component: &Component,
    context: &Context,
    kind: &str,
    field: &str,
    fields: (&str, &str),
) -> Result<Vec<Value>, TransformError> {
    let object: Value = component.require(field)?;
    let keys = entries(&object, fields, field)?;
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let name = match object.get("name").and_then(Value::as_str) {
        Some(exact) => exact.to_owned(),
        None => context.object_name(component.name()),
    };
    let mut data = Map::new();
    let mut binary = Map::new();
    for (key, content) in keys {
        match content {
            Content::Text(text) => data.insert(key, Value::String(text)),
            Content::Base64(encoded) => binary.insert(key, Value::String(encoded)),
        };
    }
    let mut spec = json!({"data": data});
    if !binary.is_empty() {
        spec["binaryData"] = Value::Object(binary);
    }
    Ok(vec![resource(kind, &name, context, spec)])
}

/// The keys of a `Config` or `Secret` resource's spec with their bytes, in key order; `what`
/// names the resource in errors.
pub fn files(spec: &Value, what: &str) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut files = Vec::new();
    for (key, value) in crate::sorted_entries(spec.get("data")) {
        let text = value
            .as_str()
            .ok_or_else(|| format!("{what}: data.{key} must be a string"))?;
        files.push((key.clone(), text.as_bytes().to_vec()));
    }
    for (key, value) in crate::sorted_entries(spec.get("binaryData")) {
        let bytes = value
            .as_str()
            .and_then(opm_compose_common::data::decode_base64)
            .ok_or_else(|| format!("{what}: binaryData.{key} must be base64"))?;
        files.push((key.clone(), bytes));
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    for pair in files.windows(2) {
        if pair[0].0 == pair[1].0 {
            return Err(format!(
                "{what}: key {:?} is in both data and binaryData",
                pair[0].0
            ));
        }
    }
    for (key, _) in &files {
        if key.is_empty() || key.contains('/') || key == "." || key == ".." {
            return Err(format!("{what}: {key:?} is not a file name"));
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CONFIG, test_context, test_instance_context};

    #[test]
    fn an_object_is_one_resource_with_its_keys() {
        let component = Component::from_value(json!({"metadata": {"name": "settings"},
            "spec": {"configMap": {"data": {"b": "x"}, "binaryData": {"a": "aGk=", "p": "/w=="}}}}))
        .unwrap();
        let out = object(
            &component,
            &test_context(),
            CONFIG,
            "configMap",
            ("data", "binaryData"),
        )
        .unwrap();
        assert_eq!(out[0]["metadata"]["name"], "settings");
        assert_eq!(
            out[0]["spec"],
            json!({"data": {"a": "hi", "b": "x"}, "binaryData": {"p": "/w=="}})
        );
        let files = files(&out[0]["spec"], "Config settings").unwrap();
        assert_eq!(
            files,
            [
                ("a".into(), b"hi".to_vec()),
                ("b".into(), b"x".to_vec()),
                ("p".into(), vec![0xff])
            ]
        );
        let eu = object(
            &component,
            &test_instance_context(),
            CONFIG,
            "configMap",
            ("data", "binaryData"),
        )
        .unwrap();
        assert_eq!(eu[0]["metadata"]["name"], "shop-eu-settings");
    }

    #[test]
    fn a_key_in_both_maps_or_a_path_is_refused() {
        let error = files(
            &json!({"data": {"a": "x"}, "binaryData": {"a": "aGk="}}),
            "Secret db",
        )
        .unwrap_err();
        assert_eq!(error, "Secret db: key \"a\" is in both data and binaryData");
        let error = files(&json!({"data": {"../a": "x"}}), "Secret db").unwrap_err();
        assert!(error.contains("is not a file name"), "{error}");
    }
}
