//! JSON in canonical form, for digests and stable text: the bundle manifest, the content a
//! checksum covers, the YAML `opm mod diff` compares. Also compiled into `runtime/build.rs`
//! (with the bundle format that uses it), so it uses nothing else of the crate.

use serde_json::{Map, Value};

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
