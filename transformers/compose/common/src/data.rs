//! The entries of a ConfigMap (`data`, `binaryData`) or a Secret (`stringData`, `data`) as
//! compose resources: one `Config` or `Secret` per key ([`crate::data_name`]), whose spec holds
//! the value as `content` when it is text, and as base64 in the extension field
//! [`BASE64_FIELD`] when it is bytes that are not UTF-8 (compose's inline `content` is text).
//! The renderer writes a value into `compose.yaml`, or as a file beside it
//! (`compose-renderer`).
//!
//! Errors name the field and the key, never the value: a Secret's values are sensitive.
//!
//! ```
//! use opm_compose_common::data::{Content, entries};
//! use opm_guest::json;
//! let config = json!({"data": {"b": "x"}, "binaryData": {"a": "aGk=", "png": "iVBORw=="}});
//! let entries = entries(&config, ("data", "binaryData"), "configMap").unwrap();
//! assert_eq!(entries["a"], Content::Text("hi".into()));
//! assert_eq!(entries["png"], Content::Base64("iVBORw==".into()));
//! ```

use std::collections::BTreeMap;

use opm_guest::{Component, Context, Map, TransformError, Value, json};

use crate::{data_name, entry_labels, resource, sorted_entries};

/// The extension field of a `Config` or `Secret` spec that holds bytes, as base64.
pub const BASE64_FIELD: &str = "x-opm-base64";

/// The value of one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Text (UTF-8).
    Text(String),
    /// Bytes that are not UTF-8, as standard base64.
    Base64(String),
}

impl Content {
    /// The value of a `Config` or `Secret` spec, if it holds one.
    pub fn of_spec(spec: &Value) -> Option<Self> {
        if let Some(text) = spec.get("content").and_then(Value::as_str) {
            return Some(Self::Text(text.to_owned()));
        }
        spec.get(BASE64_FIELD)
            .and_then(Value::as_str)
            .map(|encoded| Self::Base64(encoded.to_owned()))
    }

    /// The spec field that holds it.
    pub fn spec_field(&self) -> (&'static str, &str) {
        match self {
            Self::Text(text) => ("content", text),
            Self::Base64(encoded) => (BASE64_FIELD, encoded),
        }
    }

    /// Its bytes.
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Self::Text(text) => text.as_bytes().to_vec(),
            Self::Base64(encoded) => decode_base64(encoded).unwrap_or_default(),
        }
    }

    /// Its text, unless it is bytes.
    pub fn text(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            Self::Base64(_) => None,
        }
    }
}

/// The entries of `object` (a ConfigMap's or a Secret's value) in key order: the text map and
/// the base64 map named by `fields`, a key in one of them only. `what` names the object in
/// errors (`configMap`, `secret`). A base64 value that decodes to UTF-8 is text.
pub fn entries(
    object: &Value,
    fields: (&str, &str),
    what: &str,
) -> Result<BTreeMap<String, Content>, TransformError> {
    let (text_field, base64_field) = fields;
    let mut out = BTreeMap::new();
    for (key, value) in sorted_entries(object.get(text_field)) {
        let Value::String(text) = value else {
            return Err(TransformError::invalid(format!(
                "{what}.{text_field}.{key} must be a string"
            )));
        };
        out.insert(key.clone(), Content::Text(text.clone()));
    }
    for (key, value) in sorted_entries(object.get(base64_field)) {
        let bytes = value.as_str().and_then(decode_base64).ok_or_else(|| {
            TransformError::invalid(format!(
                "{what}.{base64_field}.{key} must be standard base64 with its padding"
            ))
        })?;
        if out.contains_key(key) {
            return Err(TransformError::invalid(format!(
                "key {key:?} is both in {what}.{text_field} and in {what}.{base64_field}; keep it in one"
            )));
        }
        let content = match String::from_utf8(bytes) {
            Ok(text) => Content::Text(text),
            Err(_) => Content::Base64(value.as_str().unwrap_or_default().to_owned()),
        };
        out.insert(key.clone(), content);
    }
    Ok(out)
}

/// The resources of the ConfigMap or Secret of `component`, the value of its spec `field`
/// (`configMap`, `secret`) with the text and base64 maps `fields`: one resource of `kind` per
/// key, named after the object (the component, for the instance) and the key, labelled with the
/// object's `labels` and `annotations`.
pub fn resources(
    component: &Component,
    context: &Context,
    kind: &str,
    field: &str,
    fields: (&str, &str),
) -> Result<Vec<Value>, TransformError> {
    let object: Value = component.require(field)?;
    let name = context.object_name(component.name());
    let labels = entry_labels(&object);
    Ok(entries(&object, fields, field)?
        .iter()
        .map(|(key, content)| {
            resource(
                kind,
                &data_name(&name, key),
                context,
                spec(content, &labels),
            )
        })
        .collect())
}

/// The spec of the `Config` or `Secret` resource of one key: its value and `labels`.
pub fn spec(content: &Content, labels: &Map<String, Value>) -> Value {
    let (field, value) = content.spec_field();
    let mut spec = Map::new();
    spec.insert(field.into(), Value::from(value));
    if !labels.is_empty() {
        spec.insert("labels".into(), Value::Object(labels.clone()));
    }
    json!(spec)
}

/// Standard base64 with its padding, decoded; `None` for anything else.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    fn sextet(byte: u8) -> Option<u32> {
        Some(match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for (index, group) in bytes.chunks(4).enumerate() {
        let last = index == bytes.len() / 4 - 1;
        let padding = group.iter().rev().take_while(|&&b| b == b'=').count();
        if padding > 2 || (padding > 0 && !last) {
            return None;
        }
        let mut word = 0u32;
        for &byte in &group[..4 - padding] {
            word = (word << 6) | sextet(byte)?;
        }
        word <<= 6 * padding as u32;
        let decoded = [(word >> 16) as u8, (word >> 8) as u8, word as u8];
        out.extend_from_slice(&decoded[..3 - padding]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_with_padding_only() {
        assert_eq!(decode_base64("aGk=").unwrap(), b"hi");
        assert_eq!(decode_base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode_base64("YWJj").unwrap(), b"abc");
        assert_eq!(decode_base64("").unwrap(), b"");
        assert!(decode_base64("aGk").is_none());
        assert!(decode_base64("a=Gk").is_none());
        assert!(decode_base64("aG!=").is_none());
        assert!(decode_base64("aGk=aGk=").is_none());
    }

    #[test]
    fn a_key_is_in_one_map_and_values_are_checked() {
        let both = json!({"data": {"a": "x"}, "binaryData": {"a": "aGk="}});
        let error = entries(&both, ("data", "binaryData"), "configMap").unwrap_err();
        assert!(error.to_string().contains("key \"a\" is both"), "{error}");
        let bad = json!({"stringData": {"a": "x"}, "data": {"b": "not base64"}});
        let error = entries(&bad, ("stringData", "data"), "secret").unwrap_err();
        assert!(error.to_string().contains("secret.data.b"), "{error}");
        assert!(!error.to_string().contains("not base64"), "{error}");
        let number = json!({"data": {"a": 1}});
        assert!(entries(&number, ("data", "binaryData"), "configMap").is_err());
    }

    #[test]
    fn specs_hold_text_as_content_and_bytes_as_base64() {
        let labels: Map<String, Value> = [("tier".to_owned(), json!("web"))].into_iter().collect();
        assert_eq!(
            spec(&Content::Text("a".into()), &labels),
            json!({"content": "a", "labels": {"tier": "web"}})
        );
        let bytes = Content::Base64("/w==".into());
        assert_eq!(spec(&bytes, &Map::new()), json!({"x-opm-base64": "/w=="}));
        assert_eq!(
            Content::of_spec(&spec(&bytes, &Map::new())),
            Some(bytes.clone())
        );
        assert_eq!(bytes.bytes(), [0xff]);
        assert_eq!(bytes.text(), None);
    }
}
