//! The data maps of a ConfigMap and a Secret: text (`configMap.data`, `secret.stringData`) and
//! base64 (`configMap.binaryData`, `secret.data`), in key order. A key may be in one of an
//! object's two maps only: Kubernetes refuses a ConfigMap whose `data` and `binaryData` share a
//! key, and a Secret's `stringData` would silently replace the `data` entry of the same key.
//!
//! Errors name the field and the key, never the value: a Secret's values are sensitive.
//!
//! ```
//! use opm_guest::json;
//! use opm_k8s_common::data::{base64_map, disjoint, is_base64, text_map};
//! let config = json!({"data": {"b": "x", "a": "y"}, "binaryData": {"logo.png": "iVBORw0K"}});
//! let text = text_map(config.get("data"), "configMap.data").unwrap();
//! let binary = base64_map(config.get("binaryData"), "configMap.binaryData").unwrap();
//! assert_eq!(text.keys().collect::<Vec<_>>(), ["a", "b"]);
//! disjoint((&text, "configMap.data"), (&binary, "configMap.binaryData")).unwrap();
//! assert!(is_base64("aGk=") && !is_base64("hi!"));
//! ```

use opm_guest::{Map, TransformError, Value};

use crate::sorted_entries;

/// Whether `text` is standard base64 with its padding, as Kubernetes reads a `[]byte` field:
/// groups of four characters of `A-Z a-z 0-9 + /`, the last one ending in at most two `=`.
pub fn is_base64(text: &str) -> bool {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return false;
    }
    let padding = bytes.iter().rev().take_while(|&&b| b == b'=').count();
    padding <= 2
        && bytes[..bytes.len() - padding]
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

/// The text values of the map `value` (the field `field`), in key order.
pub fn text_map(value: Option<&Value>, field: &str) -> Result<Map<String, Value>, TransformError> {
    let mut out = Map::new();
    for (key, text) in sorted_entries(value) {
        let Value::String(text) = text else {
            return Err(TransformError::invalid(format!(
                "{field}.{key} must be a string"
            )));
        };
        out.insert(key.clone(), Value::from(text.as_str()));
    }
    Ok(out)
}

/// The base64 values of the map `value` (the field `field`), in key order; an error naming the
/// key of a value that is not base64.
pub fn base64_map(
    value: Option<&Value>,
    field: &str,
) -> Result<Map<String, Value>, TransformError> {
    let out = text_map(value, field)?;
    if let Some(key) = out
        .iter()
        .find(|(_, text)| !text.as_str().is_some_and(is_base64))
        .map(|(key, _)| key)
    {
        return Err(TransformError::invalid(format!(
            "{field}.{key} must be base64 (standard alphabet, padded with =); write text in the \
             text map instead"
        )));
    }
    Ok(out)
}

/// An error naming the first key that both maps (each with the name of its field) hold.
pub fn disjoint(
    (one, one_field): (&Map<String, Value>, &str),
    (other, other_field): (&Map<String, Value>, &str),
) -> Result<(), TransformError> {
    match one.keys().find(|key| other.contains_key(*key)) {
        Some(key) => Err(TransformError::invalid(format!(
            "key {key:?} is in both {one_field} and {other_field}; a key may be in one of them \
             only"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opm_guest::json;

    #[test]
    fn base64_is_padded_standard_alphabet() {
        for good in ["", "aGk=", "aGV5", "aA==", "+/+/", "SGVsbG8sIHdvcmxkIQ=="] {
            assert!(is_base64(good), "{good}");
        }
        for bad in [
            "aGk",
            "aA=",
            "a===",
            "aGk=aGk=",
            "a-_b",
            "aGk =",
            "aGVs\nbG8=",
            "é",
        ] {
            assert!(!is_base64(bad), "{bad}");
        }
    }

    #[test]
    fn maps_come_in_key_order_and_errors_name_keys_not_values() {
        let map = json!({"b": "YQ==", "a": "Yg=="});
        let out = base64_map(Some(&map), "secret.data").unwrap();
        assert_eq!(out.keys().collect::<Vec<_>>(), ["a", "b"]);
        let err = base64_map(Some(&json!({"token": "not base64 hunter2"})), "secret.data")
            .unwrap_err()
            .to_string();
        assert!(err.contains("secret.data.token must be base64"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
        let err = text_map(Some(&json!({"n": 12345})), "secret.stringData")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("secret.stringData.n") && !err.contains("12345"),
            "{err}"
        );
        assert!(text_map(None, "x").unwrap().is_empty());
    }

    #[test]
    fn a_key_in_both_maps_is_refused() {
        let text = text_map(Some(&json!({"a": "1", "b": "2"})), "configMap.data").unwrap();
        let binary = base64_map(Some(&json!({"b": "Mg=="})), "configMap.binaryData").unwrap();
        let err = disjoint((&text, "configMap.data"), (&binary, "configMap.binaryData"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("key \"b\" is in both configMap.data and configMap.binaryData"),
            "{err}"
        );
        assert!(disjoint((&text, "a"), (&Map::new(), "b")).is_ok());
    }
}
