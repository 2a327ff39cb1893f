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

/// Parses YAML or JSON `text` from `source` into a tree: a large module's components in
/// parallel on the current rayon pool when the text allows it ([`parse_split`]), else the whole
/// text at once. Both give the same tree.
pub(crate) fn parse(text: &str, source: &Arc<str>) -> Result<Node, ModuleError> {
    parse_on(None, text, source)
}

/// [`parse`], the parts parsed in parallel on `pool` (else on the current rayon pool).
pub(crate) fn parse_on(
    pool: Option<&rayon::ThreadPool>,
    text: &str,
    source: &Arc<str>,
) -> Result<Node, ModuleError> {
    if text.len() >= SPLIT_FROM {
        let split = || parse_split(text, source);
        if let Some(node) = pool.map_or_else(split, |pool| pool.install(split)) {
            return Ok(node);
        }
    }
    parse_whole(text, source, 0)
}

/// The size from which [`parse`] tries to parse a module's components in parallel: below it,
/// one parse is quicker than the split.
const SPLIT_FROM: usize = 256 * 1024;

/// The key whose entries [`parse_split`] parses in parallel.
const COMPONENTS: &str = "components:";

/// Parses the block-style document `text` with its `components:` entries cut into batches
/// parsed in parallel, and the rest of the document parsed with those lines left blank (so
/// that every line keeps its number); `None` when the text is not the plain shape this
/// handles, or when any part does not parse on its own (an alias to an anchor in another part,
/// a syntax error, a key twice): the whole text is then parsed at once, which reports errors
/// with their true location.
///
/// The shape: a line `components:` at column 0 with nothing after it, then lines indented by
/// spaces until the next line at column 0 that is not a comment; each line indented by exactly
/// as much as the first of them starts a component. No document markers or directives.
fn parse_split(text: &str, source: &Arc<str>) -> Option<Node> {
    use rayon::prelude::*;
    // (byte offset, line index) of the start of every line.
    let mut lines = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        lines.push((offset, line));
        offset += line.len();
    }
    let top = |line: &str| !line.starts_with([' ', '\t', '#', '\n', '\r']) && !line.is_empty();
    if lines.iter().any(|(_, line)| {
        line.starts_with("---") || line.starts_with("...") || line.starts_with('%')
    }) {
        return None;
    }
    let header = lines
        .iter()
        .position(|(_, line)| line.trim_end() == COMPONENTS)?;
    let end = lines[header + 1..]
        .iter()
        .position(|(_, line)| top(line))
        .map_or(lines.len(), |at| header + 1 + at);
    let body = &lines[header + 1..end];
    let is_content = |line: &str| {
        let trimmed = line.trim_start_matches(' ');
        !trimmed.trim().is_empty() && !trimmed.starts_with('#')
    };
    let indent = body
        .iter()
        .find(|(_, line)| is_content(line))
        .map(|(_, line)| line.len() - line.trim_start_matches(' ').len())?;
    if indent == 0 {
        return None;
    }
    // The lines that start a component.
    let mut starts = Vec::new();
    for (index, (_, line)) in body.iter().enumerate() {
        if !is_content(line) {
            continue;
        }
        let spaces = line.len() - line.trim_start_matches(' ').len();
        if line[spaces..].starts_with('\t') || spaces < indent {
            return None;
        }
        if spaces == indent {
            if line[spaces..].starts_with(['-', '?', '{', '[', '&', '*', '!', '|', '>']) {
                return None;
            }
            starts.push(header + 1 + index);
        }
    }
    if starts.len() < 2 {
        return None;
    }
    let batches = (rayon::current_num_threads() * 4).min(starts.len());
    let bounds: Vec<(usize, usize)> = (0..batches)
        .map(|batch| {
            let first = starts[batch * starts.len() / batches];
            let next = starts
                .get((batch + 1) * starts.len() / batches)
                .copied()
                .unwrap_or(end);
            (first, next)
        })
        .collect();
    let byte = |line: usize| lines.get(line).map_or(text.len(), |(offset, _)| *offset);
    let parsed: Vec<Node> = bounds
        .par_iter()
        .map(|&(first, next)| {
            let line_offset = u32::try_from(first).ok()?;
            // Each batch's nodes share a copy of the source's name of their own: every node
            // holds it, and one reference count for all of them, changed by both threads at
            // once, moved between the cores at every node (at 10,000 components, 4 ms of CPU
            // at -j 2 in making nodes' origins, per a profile: 78 → 31 samples in six renders).
            let source = Arc::from(&**source);
            parse_whole(&text[byte(first)..byte(next)], &source, line_offset).ok()
        })
        .collect::<Option<_>>()?;
    let mut components = Vec::with_capacity(starts.len());
    let mut origin = None;
    for node in parsed {
        let Value::Map(entries) = node.value else {
            return None;
        };
        origin.get_or_insert(node.origin);
        components.extend(entries);
    }
    let mut keys: Vec<&str> = components.iter().map(|entry| entry.key.as_str()).collect();
    keys.par_sort_unstable();
    if components.len() != starts.len() || keys.windows(2).any(|pair| pair[0] == pair[1]) {
        return None;
    }
    // The rest of the document, with the components' lines blank.
    let (from, to) = (byte(header + 1), byte(end));
    let mut rest = String::with_capacity(text.len() - (to - from) + (end - header));
    rest.push_str(&text[..from]);
    rest.extend(std::iter::repeat_n('\n', end - header - 1));
    rest.push_str(&text[to..]);
    let mut root = parse_whole(&rest, source, 0).ok()?;
    let Value::Map(entries) = &mut root.value else {
        return None;
    };
    let entry = entries.iter_mut().find(|entry| entry.key == "components")?;
    if entry.value.value != Value::Null {
        return None;
    }
    entry.value = Node::new(Value::Map(components), origin?);
    Some(root)
}

/// Parses YAML or JSON `text`, whose first line is line `line_offset + 1` of `source`: by
/// [`super::simple`] when the text has its simple shape, else by `serde-saphyr`. Both give the
/// same tree.
fn parse_whole(text: &str, source: &Arc<str>, line_offset: u32) -> Result<Node, ModuleError> {
    if let Some(node) = super::simple::parse(text, source, line_offset) {
        return Ok(node);
    }
    parse_saphyr(text, source, line_offset)
}

/// [`parse_whole`] by `serde-saphyr`.
pub(super) fn parse_saphyr(
    text: &str,
    source: &Arc<str>,
    line_offset: u32,
) -> Result<Node, ModuleError> {
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
    Ok(convert(raw, source, line_offset))
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

fn origin_of<T>(spanned: &Spanned<T>, source: &Arc<str>, line_offset: u32) -> Origin {
    Origin::new(
        source.clone(),
        clamp(spanned.referenced.line()).saturating_add(line_offset),
        clamp(spanned.referenced.column()),
    )
}

fn convert(raw: Spanned<Raw>, source: &Arc<str>, line_offset: u32) -> Node {
    let origin = origin_of(&raw, source, line_offset);
    let value = match raw.value {
        Raw::Null => Value::Null,
        Raw::Bool(b) => Value::Bool(b),
        Raw::Number(n) => Value::Number(n),
        Raw::String(s) => Value::String(s),
        Raw::List(items) => Value::List(
            items
                .into_iter()
                .map(|item| convert(item, source, line_offset))
                .collect(),
        ),
        Raw::Map(entries) => Value::Map(
            entries
                .into_iter()
                .map(|(key, value)| Entry {
                    key_origin: origin_of(&key, source, line_offset),
                    key: key.value,
                    value: convert(value, source, line_offset),
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

    /// A module of `n` components in the plain block style, with `extra` appended to the first
    /// component's lines.
    fn large_module(n: usize, extra: &str) -> String {
        let mut text = String::from(
            "apiVersion: core.opm.dev/v1\nkind: Module\n# the components\ncomponents:\n",
        );
        for i in 0..n {
            text.push_str(&format!(
                "  c{i:05}:\n    resources:\n      Container: {{image: nginx, ports: {{http: {{containerPort: 8080}}}}}}\n\n# between\n    traits:\n      Replicas: {i}\n{}",
                if i == 0 { extra } else { "" }
            ));
        }
        text.push_str("metadata: {name: big, version: 0.1.0}\n");
        text
    }

    /// A large module's components are parsed in parallel, into exactly the tree (origins
    /// included) that one parse of the whole text gives.
    #[test]
    fn a_large_module_parses_in_parts_to_the_same_tree() {
        let text = large_module(4000, "");
        assert!(text.len() > SPLIT_FROM);
        let split = parse_split(&text, &source()).expect("the plain shape splits");
        assert_eq!(split, parse_whole(&text, &source(), 0).unwrap());
        assert_eq!(parse(&text, &source()).unwrap(), split);
    }

    /// What one part cannot parse alone — an alias to another part's anchor, a key twice, a
    /// syntax error — is parsed whole, which resolves it or reports it where it is.
    #[test]
    fn a_large_module_that_parts_cannot_parse_is_parsed_whole() {
        let anchored = large_module(4000, "    labels: &shared {a: b}\n").replace(
            "      Replicas: 3999\n",
            "      Replicas: 3999\n    labels: *shared\n",
        );
        assert!(parse_split(&anchored, &source()).is_none());
        let node = parse(&anchored, &source()).expect("the whole text resolves the alias");
        assert_eq!(
            node.to_json()["components"]["c03999"]["labels"],
            json!({"a": "b"})
        );

        let twice = large_module(4000, "  c03999:\n    resources: {}\n");
        assert!(parse_split(&twice, &source()).is_none());
        let error = parse(&twice, &source()).unwrap_err().to_string();
        assert!(error.contains("duplicate key `c03999`"), "{error}");

        let broken =
            large_module(4000, "").replace("      Replicas: 2000\n", "      Replicas: [2000\n");
        let error = parse(&broken, &source()).unwrap_err().to_string();
        assert!(error.starts_with("m.yaml:"), "{error}");
    }

    #[test]
    fn syntax_errors_do_not_quote_the_file() {
        let error = parse("password: hunter2\n  bad: [\n", &source()).unwrap_err();
        assert!(!error.to_string().contains("hunter2"), "{error}");
    }
}
