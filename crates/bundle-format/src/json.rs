//! JSON in canonical form, for digests and stable text: the bundle manifest, the content a
//! checksum covers, the YAML `opm mod diff` compares; and compact JSON text. Here, beside the
//! bundle format that uses it, so that `runtime/build.rs` has it too; `opm-core` re-exports it
//! as its `json`.

use serde_json::{Map, Value};

/// `value` as compact JSON text. Not `Value::to_string`: `Display` writes through a
/// `fmt::Formatter`, a call per token, which made writing a render's 20,000 resources and call
/// inputs a fifth slower.
pub fn compact(value: &Value) -> String {
    serde_json::to_string(value).expect("a JSON value always serializes")
}

/// `map` as compact JSON text, as [`compact`] would write it as an object.
pub fn compact_object(map: &Map<String, Value>) -> String {
    serde_json::to_string(map).expect("a JSON object always serializes")
}

/// `value` with the keys of every object sorted.
pub fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for key in keys {
                out.insert(key.clone(), sorted(&map[key]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}
