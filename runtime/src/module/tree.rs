//! The module document as a tree of nodes that remember where they came from.
//!
//! The module file and each values file are parsed into a [`Node`] tree by `serde-saphyr`, which
//! gives every node and every map key its line and column (JSON is parsed the same way: it is
//! YAML). Values files and `--set` are merged into the tree before it is interpreted, so an error
//! about any part of the merged document still names the file, line and column that supplied it.

use std::sync::Arc;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

use super::{ModuleError, Origin};

/// One value of the document, with its origin.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub(crate) value: Value,
    pub(crate) origin: Origin,
}

/// The shape of a node.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    List(Vec<Node>),
    /// Entries in document order; keys are unique.
    Map(Vec<Entry>),
}

/// One entry of a map.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) key: String,
    pub(crate) key_origin: Origin,
    pub(crate) value: Node,
}

impl Node {
    pub(crate) fn new(value: Value, origin: Origin) -> Self {
        Self { value, origin }
    }

    /// What kind of value this is, for messages: `a map`, `a string`.
    pub(crate) fn describe(&self) -> &'static str {
        match self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::List(_) => "a list",
            Value::Map(_) => "a map",
        }
    }

    /// Whether this is a map with no entries.
    pub(crate) fn is_empty_map(&self) -> bool {
        matches!(&self.value, Value::Map(entries) if entries.is_empty())
    }

    /// The origin of the deepest node on the way to `pointer` (a JSON pointer: `/a/0/b`).
    pub(crate) fn origin_at(&self, pointer: &str) -> &Origin {
        let mut node = self;
        for token in pointer.split('/').skip(1) {
            let token = token.replace("~1", "/").replace("~0", "~");
            let next = match &node.value {
                Value::Map(entries) => entries.iter().find(|e| e.key == token).map(|e| &e.value),
                Value::List(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            };
            match next {
                Some(child) => node = child,
                None => break,
            }
        }
        &node.origin
    }

    /// The node as plain JSON.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        match &self.value {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(n) => serde_json::Value::Number(n.clone()),
            Value::String(s) => serde_json::Value::String(s.clone()),
            Value::List(items) => items.iter().map(Node::to_json).collect(),
            Value::Map(entries) => serde_json::Value::Object(
                entries
                    .iter()
                    .map(|entry| (entry.key.clone(), entry.value.to_json()))
                    .collect(),
            ),
        }
    }
}

/// Parses YAML or JSON `text` from `source` into a tree.
pub(crate) fn parse(text: &str, source: &Arc<str>) -> Result<Node, ModuleError> {
    let mut options = serde_saphyr::Options::default();
    // The snippet would quote the file's text, which may hold secrets; the location is enough.
    options.with_snippet = false;
    let raw: Spanned<Raw> =
        serde_saphyr::from_str_with_options(text, options).map_err(|error| {
            let location = error.location();
            let origin = location.map_or_else(
                || Origin::whole(source.clone()),
                |at| Origin::new(source.clone(), clamp(at.line()), clamp(at.column())),
            );
            ModuleError::Syntax {
                origin,
                message: strip_location(&crate::yaml::message(&error)),
            }
        })?;
    Ok(convert(raw, source))
}

fn clamp(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// `serde-saphyr` ends messages with ` at line L, column C`; the origin already says that.
fn strip_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) if message[at..].contains(", column ") => message[..at].to_owned(),
        _ => message.to_owned(),
    }
}

fn origin_of<T>(spanned: &Spanned<T>, source: &Arc<str>) -> Origin {
    Origin::new(
        source.clone(),
        clamp(spanned.referenced.line()),
        clamp(spanned.referenced.column()),
    )
}

fn convert(raw: Spanned<Raw>, source: &Arc<str>) -> Node {
    let origin = origin_of(&raw, source);
    let value = match raw.value {
        Raw::Null => Value::Null,
        Raw::Bool(b) => Value::Bool(b),
        Raw::Number(n) => Value::Number(n),
        Raw::String(s) => Value::String(s),
        Raw::List(items) => Value::List(
            items
                .into_iter()
                .map(|item| convert(item, source))
                .collect(),
        ),
        Raw::Map(entries) => Value::Map(
            entries
                .into_iter()
                .map(|(key, value)| Entry {
                    key_origin: origin_of(&key, source),
                    key: key.value,
                    value: convert(value, source),
                })
                .collect(),
        ),
    };
    Node { value, origin }
}

/// What `serde-saphyr` produces before origins are attached.
enum Raw {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    List(Vec<Spanned<Raw>>),
    Map(Vec<(Spanned<String>, Spanned<Raw>)>),
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }

    fn visit_none<E>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Raw, D::Error> {
        Raw::deserialize(deserializer)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Raw, E> {
        Ok(Raw::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Raw, E> {
        Ok(Raw::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Raw, E> {
        Ok(Raw::Number(n.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Raw, E> {
        serde_json::Number::from_f64(n)
            .map(Raw::Number)
            .ok_or_else(|| E::custom("a number must be finite"))
    }

    fn visit_str<E>(self, s: &str) -> Result<Raw, E> {
        Ok(Raw::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Raw, E> {
        Ok(Raw::String(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Raw::List(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            entries.push((key, map.next_value()?));
        }
        Ok(Raw::Map(entries))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn source() -> Arc<str> {
        Arc::from("m.yaml")
    }

    #[test]
    fn yaml_and_json_parse_with_locations() {
        let node = parse("a: 1\nb:\n  c: [x, 1.5, true, null]\n", &source()).unwrap();
        assert_eq!(
            node.to_json(),
            json!({"a": 1, "b": {"c": ["x", 1.5, true, null]}})
        );
        let Value::Map(entries) = &node.value else {
            panic!("not a map")
        };
        assert_eq!(entries[1].key_origin.to_string(), "m.yaml:2:1");
        assert_eq!(entries[1].value.origin.to_string(), "m.yaml:3:3");
        let node = parse("{\n\t\"a\": {\"b\": \"c\"}\n}\n", &source()).unwrap();
        assert_eq!(node.to_json(), json!({"a": {"b": "c"}}));
    }

    #[test]
    fn quoted_numbers_stay_strings_and_versions_are_strings() {
        let node = parse("a: \"3\"\nb: 1.4.0\nc: 3\n", &source()).unwrap();
        assert_eq!(node.to_json(), json!({"a": "3", "b": "1.4.0", "c": 3}));
    }

    #[test]
    fn syntax_errors_and_duplicate_keys_name_line_and_column() {
        let error = parse("a: 1\na: 2\n", &source()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "m.yaml:2:1: duplicate key `a`: a key may appear only once in a map"
        );
        let error = parse("a: [1\nb: 2\n", &source()).unwrap_err();
        assert!(error.to_string().starts_with("m.yaml:2:"), "{error}");
        let error = parse("a: .inf\n", &source()).unwrap_err();
        assert!(error.to_string().starts_with("m.yaml:1:4:"), "{error}");
    }

    #[test]
    fn syntax_errors_do_not_quote_the_file() {
        let error = parse("password: hunter2\n  bad: [\n", &source()).unwrap_err();
        assert!(!error.to_string().contains("hunter2"), "{error}");
    }
}
