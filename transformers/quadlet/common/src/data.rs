//! The files of a ConfigMap or a Secret, in the Kubernetes object's own shape: one quadlet
//! resource per object, `kind: ConfigMap` with `data` (text) and `binaryData` (base64), or
//! `kind: Secret` with `stringData` (text) and `data` (base64), named after the component (for
//! the instance), at the top level as Kubernetes has them — so that one patch written for both
//! platforms (`target: {platform: [kubernetes, quadlet], kind: ConfigMap}`, `merge: {data:
//! {SMTP_HOST: null}}`) edits either. The renderer writes each key as the file
//! `config/<object>/<key>` or `secrets/<object>/<key>` (mode 0600), which units bind-mount
//! read-only, and reads a key's text for a container's `EnvironmentFile=`.
//!
//! Errors name the field and the key, never the value: a Secret's values are sensitive.
//!
//! ```
//! use opm_guest::json;
//! use opm_quadlet_common::data::files;
//! let secret = json!({"kind": "Secret", "stringData": {"user": "app"}, "data": {"key": "/w=="}});
//! let files = files(&secret, "Secret db").unwrap();
//! assert_eq!(files, [("key".to_owned(), vec![0xff]), ("user".to_owned(), b"app".to_vec())]);
//! ```

use opm_compose_common::data::{decode_base64, entries};
use opm_guest::{Component, Context, Map, TransformError, Value};

use crate::{API_VERSION, SECRET, object_labels};

/// The fields of a `kind`'s text values and of its base64 values: `stringData` and `data` for a
/// Secret, `data` and `binaryData` for a ConfigMap.
pub fn fields(kind: &str) -> (&'static str, &'static str) {
    if kind == SECRET {
        ("stringData", "data")
    } else {
        ("data", "binaryData")
    }
}

/// The one `kind` resource of the object `field` (`configMap`, `secret`) of `component`, its
/// two maps as the module wrote them (checked: strings, base64, no key in both); nothing for an
/// object with no key. The object is named after the component (or its `name`, exactly, to
/// adopt one).
pub fn object(
    component: &Component,
    context: &Context,
    kind: &str,
    field: &str,
) -> Result<Vec<Value>, TransformError> {
    let object: Value = component.require(field)?;
    let (text, base64) = fields(kind);
    if entries(&object, (text, base64), field)?.is_empty() {
        return Ok(Vec::new());
    }
    let name = match object.get("name").and_then(Value::as_str) {
        Some(exact) => exact.to_owned(),
        None => context.object_name(component.name()),
    };
    let mut resource = Map::new();
    resource.insert("apiVersion".into(), API_VERSION.into());
    resource.insert("kind".into(), kind.into());
    let mut metadata = Map::new();
    metadata.insert("name".into(), name.into());
    metadata.insert("labels".into(), Value::Object(object_labels(context)));
    resource.insert("metadata".into(), Value::Object(metadata));
    for map in [text, base64] {
        if let Some(values) = object
            .get(map)
            .filter(|v| v.as_object().is_some_and(|m| !m.is_empty()))
        {
            resource.insert(map.into(), values.clone());
        }
    }
    Ok(vec![Value::Object(resource)])
}

/// The keys of a `ConfigMap` or `Secret` resource with their bytes, in key order; `what` names
/// the resource in errors.
pub fn files(resource: &Value, what: &str) -> Result<Vec<(String, Vec<u8>)>, String> {
    let kind = resource
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let (text, base64) = fields(kind);
    let mut files = Vec::new();
    for (key, value) in crate::sorted_entries(resource.get(text)) {
        let value = value
            .as_str()
            .ok_or_else(|| format!("{what}: {text}.{key} must be a string"))?;
        files.push((key.clone(), value.as_bytes().to_vec()));
    }
    for (key, value) in crate::sorted_entries(resource.get(base64)) {
        let bytes = value
            .as_str()
            .and_then(decode_base64)
            .ok_or_else(|| format!("{what}: {base64}.{key} must be base64"))?;
        files.push((key.clone(), bytes));
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    for pair in files.windows(2) {
        if pair[0].0 == pair[1].0 {
            return Err(format!(
                "{what}: key {:?} is in both {text} and {base64}",
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
    use opm_guest::json;

    use super::*;
    use crate::{CONFIG_MAP, test_context, test_instance_context};

    #[test]
    fn an_object_keeps_the_kubernetes_shape() {
        let component = Component::from_value(json!({"metadata": {"name": "settings"},
            "spec": {"configMap": {"data": {"b": "x"}, "binaryData": {"a": "aGk=", "p": "/w=="}}}}))
        .unwrap();
        let out = object(&component, &test_context(), CONFIG_MAP, "configMap").unwrap();
        assert_eq!(out[0]["kind"], "ConfigMap");
        assert_eq!(out[0]["metadata"]["name"], "settings");
        assert_eq!(out[0]["data"], json!({"b": "x"}));
        assert_eq!(out[0]["binaryData"], json!({"a": "aGk=", "p": "/w=="}));
        assert!(out[0].get("spec").is_none());
        let files = files(&out[0], "ConfigMap settings").unwrap();
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
            CONFIG_MAP,
            "configMap",
        )
        .unwrap();
        assert_eq!(eu[0]["metadata"]["name"], "shop-eu-settings");

        let secret = Component::from_value(json!({"metadata": {"name": "db"},
            "spec": {"secret": {"stringData": {"user": "app"}, "type": "Opaque"}}}))
        .unwrap();
        let out = object(&secret, &test_context(), SECRET, "secret").unwrap();
        assert_eq!(out[0]["stringData"], json!({"user": "app"}));
        assert!(out[0].get("data").is_none() && out[0].get("type").is_none());
        let empty = Component::from_value(json!({"metadata": {"name": "db"},
            "spec": {"secret": {"stringData": {}}}}))
        .unwrap();
        assert!(
            object(&empty, &test_context(), SECRET, "secret")
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_key_in_both_maps_or_a_path_is_refused() {
        let both = json!({"kind": "Secret", "stringData": {"a": "x"}, "data": {"a": "aGk="}});
        let error = files(&both, "Secret db").unwrap_err();
        assert_eq!(error, "Secret db: key \"a\" is in both stringData and data");
        let path = json!({"kind": "ConfigMap", "data": {"../a": "x"}});
        let error = files(&path, "ConfigMap c").unwrap_err();
        assert!(error.contains("is not a file name"), "{error}");
        let bad = json!({"kind": "ConfigMap", "binaryData": {"a": "%"}});
        assert_eq!(
            files(&bad, "ConfigMap c").unwrap_err(),
            "ConfigMap c: binaryData.a must be base64"
        );
    }
}
