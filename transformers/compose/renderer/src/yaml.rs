//! A small YAML writer for a JSON value: block mappings and sequences indented by two spaces,
//! keys in the value's order, multi-line text as literal blocks (`|`), and every string that a
//! YAML reader could take for something else — a number, a boolean, a null, a date, an
//! indicator — double-quoted. Compose reads YAML 1.2 (Go's yaml.v3); the writer also quotes
//! what YAML 1.1 would misread (`yes`, `on`, `0777`), so that no reader gets a different value.
//!
//! ```
//! use compose_renderer::yaml::to_yaml;
//! use opm_guest::json;
//! let text = to_yaml(&json!({"name": "shop", "services": {"api": {
//!     "command": ["--port", "8080"], "read_only": true, "labels": {"on": "yes"},
//!     "content": "a: 1\nb: 2\n"}}}));
//! assert_eq!(text, "name: shop\nservices:\n  api:\n    command:\n      - \"--port\"\n      - \"8080\"\n    read_only: true\n    labels:\n      \"on\": \"yes\"\n    content: |\n      a: 1\n      b: 2\n");
//! ```

use opm_guest::{Map, Value};

/// `value` as a YAML document.
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => write_map(&mut out, map, 0, false),
        Value::Array(items) if !items.is_empty() => write_seq(&mut out, items, 0),
        other => {
            out.push_str(&inline(other));
            out.push('\n');
        }
    }
    out
}

/// The entries of `map` at `indent`; the first one's key not indented when `inline_first`
/// (it follows a sequence's `- `).
fn write_map(out: &mut String, map: &Map<String, Value>, indent: usize, inline_first: bool) {
    for (index, (key, value)) in map.iter().enumerate() {
        if index > 0 || !inline_first {
            push_indent(out, indent);
        }
        out.push_str(&scalar(key));
        out.push(':');
        write_nested(out, value, indent);
    }
}

/// A value after `key:` or `- ` at `indent`.
fn write_nested(out: &mut String, value: &Value, indent: usize) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push('\n');
            write_map(out, map, indent + 2, false);
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            write_seq(out, items, indent + 2);
        }
        Value::String(text) if literal(text) => {
            out.push(' ');
            write_literal(out, text, indent + 2);
        }
        other => {
            out.push(' ');
            out.push_str(&inline(other));
            out.push('\n');
        }
    }
}

fn write_seq(out: &mut String, items: &[Value], indent: usize) {
    for item in items {
        push_indent(out, indent);
        out.push('-');
        match item {
            Value::Object(map) if !map.is_empty() => {
                out.push(' ');
                write_map(out, map, indent + 2, true);
            }
            other => write_nested(out, other, indent),
        }
    }
}

/// A literal block scalar whose lines are indented by `indent`.
fn write_literal(out: &mut String, text: &str, indent: usize) {
    let (chomp, body) = if let Some(body) = text.strip_suffix("\n\n") {
        ("+", format!("{body}\n"))
    } else if let Some(body) = text.strip_suffix('\n') {
        ("", body.to_owned())
    } else {
        ("-", text.to_owned())
    };
    out.push('|');
    out.push_str(chomp);
    out.push('\n');
    for line in body.split('\n') {
        if !line.is_empty() {
            push_indent(out, indent);
            out.push_str(line);
        }
        out.push('\n');
    }
}

fn push_indent(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// A value on one line: a scalar, or an empty collection.
fn inline(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => number.to_string(),
        Value::String(text) => scalar(text),
        Value::Array(_) => "[]".to_owned(),
        Value::Object(_) => "{}".to_owned(),
    }
}

/// `text` as a plain scalar when YAML reads it back as that string, else double-quoted.
pub fn scalar(text: &str) -> String {
    if plain(text) {
        text.to_owned()
    } else {
        quoted(text)
    }
}

/// Whether `text` may be a literal block: several lines of printable text, not newlines
/// alone, whose first line does not start with a space (which would need an indentation
/// indicator) and no line of blanks only.
fn literal(text: &str) -> bool {
    text.contains('\n')
        && !text.trim_end_matches('\n').is_empty()
        && text.chars().all(|c| c == '\n' || c == '\t' || printable(c))
        && !text.starts_with([' ', '\t'])
        && text
            .split('\n')
            .all(|line| line.is_empty() || !line.chars().all(|c| c == ' ' || c == '\t'))
}

/// Characters a YAML reader takes as they are.
fn printable(c: char) -> bool {
    c >= ' ' && c != '\u{7f}' && !matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}')
}

/// Words YAML 1.1 or 1.2 reads as booleans, nulls or special numbers.
const RESERVED: &[&str] = &[
    "", "~", "null", "true", "false", "yes", "no", "on", "off", "y", "n", ".inf", "-.inf", "+.inf",
    ".nan", "<<", "=",
];

fn plain(text: &str) -> bool {
    let Some(first) = text.chars().next() else {
        return false;
    };
    if RESERVED.contains(&text.to_lowercase().as_str())
        || "-?:,[]{}#&*!|>'\"%@`".contains(first)
        || text.starts_with(char::is_whitespace)
        || text.ends_with(char::is_whitespace)
        || text.ends_with(':')
        || text.contains(": ")
        || text.contains(" #")
        || text.contains(['[', ']', '{', '}', ',', '\t'])
        || !text.chars().all(printable)
    {
        return false;
    }
    !number_like(text)
}

/// Whether a reader might take `text` for a number, a date or a time: it starts like a number
/// and has nothing but what numbers, dates and times are written with.
fn number_like(text: &str) -> bool {
    let mut chars = text.chars();
    let first = chars.next().unwrap_or(' ');
    let starts = first.is_ascii_digit()
        || ("+-.".contains(first) && chars.next().is_some_and(|c| c.is_ascii_digit() || c == '.'));
    starts
        && text
            .chars()
            .all(|c| c.is_ascii_hexdigit() || "xXoO_.:+-tTzZ ".contains(c))
}

/// `text` double-quoted, with YAML's escapes.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{85}' => out.push_str("\\N"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            '\u{feff}' => out.push_str("\\uFEFF"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use opm_guest::json;

    #[test]
    fn strings_a_reader_would_misread_are_quoted() {
        for text in [
            "",
            "true",
            "No",
            "on",
            "null",
            "~",
            "123",
            "0.25",
            "0777",
            "0x1F",
            "1e3",
            ".5",
            "2001-12-14",
            "12:30",
            "-x",
            "--listen=:8080",
            "a: b",
            "a #b",
            "key:",
            "[a]",
            "a,b",
            " lead",
            "trail ",
            "*ref",
            "!tag",
            "%x",
            "@x",
            "`x",
            "tab\there",
            "<<",
            "+1",
        ] {
            assert!(scalar(text).starts_with('"'), "{text:?} should be quoted");
        }
        for text in [
            "nginx:1.27",
            "10s",
            "256m",
            "1Gi",
            "unless-stopped",
            "service:web",
            "app.kubernetes.io/name",
            "http://web:8080/",
            "a b",
            "no-new-privileges:true",
            "CMD-SHELL",
            "café",
            "x#y",
            "a:b",
        ] {
            assert_eq!(scalar(text), text, "{text:?} should be plain");
        }
    }

    #[test]
    fn quoting_escapes_what_a_double_quoted_scalar_needs() {
        assert_eq!(quoted("a\"b\\c\nd\u{7}\u{2028}"), r#""a\"b\\c\nd\x07\L""#);
    }

    #[test]
    fn multi_line_text_is_a_literal_block_with_its_trailing_newlines_kept() {
        let value =
            json!({"a": "x\ny\n", "b": "x\ny", "c": "x\n\n", "d": " lead\nx", "e": "x\n  \ny"});
        assert_eq!(
            to_yaml(&value),
            "a: |\n  x\n  y\nb: |-\n  x\n  y\nc: |+\n  x\n\nd: \" lead\\nx\"\ne: \"x\\n  \\ny\"\n"
        );
    }

    #[test]
    fn collections_nest_in_block_style_and_empty_ones_are_flow() {
        let value = json!({
            "list": [{"a": 1, "b": [1, 2]}, [3], "s", {}],
            "empty": {}, "none": [], "nothing": null, "text": "multi\nline\n",
            "items": [{"key": "multi\nline\n"}],
        });
        assert_eq!(
            to_yaml(&value),
            "list:\n  - a: 1\n    b:\n      - 1\n      - 2\n  -\n    - 3\n  - s\n  - {}\nempty: {}\nnone: []\nnothing: null\ntext: |\n  multi\n  line\nitems:\n  - key: |\n      multi\n      line\n"
        );
    }

    /// What the writer writes reads back as the value it was given.
    fn round_trip(value: &Value) {
        let text = to_yaml(value);
        let back: Value =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{e}\n--- written:\n{text}"));
        assert_eq!(&back, value, "--- written:\n{text}");
    }

    #[test]
    fn a_yaml_reader_reads_back_every_string_as_written() {
        let strings = [
            "",
            " ",
            "true",
            "True",
            "TRUE",
            "yes",
            "No",
            "on",
            "OFF",
            "y",
            "n",
            "null",
            "Null",
            "~",
            "123",
            "-1",
            "+1",
            "0.25",
            "1e3",
            "1E3",
            ".5",
            "5.",
            "0777",
            "0o17",
            "0x1F",
            "0b101",
            "1_000",
            ".inf",
            "-.Inf",
            ".NaN",
            "2001-12-14",
            "2001-12-14t21:59:43.10-05:00",
            "2001-12-14 21:59:43.10 -5",
            "12:30",
            "1:20:30",
            "-",
            "--",
            "---",
            "...",
            "?",
            ":",
            "-x",
            "? x",
            ": x",
            "a: b",
            "a:b",
            "a #b",
            "a#b",
            "#x",
            "key:",
            "[a]",
            "{a}",
            "a,b",
            "a]",
            "*ref",
            "&anchor",
            "!tag",
            "!!str",
            "%x",
            "@x",
            "`x",
            "|",
            ">",
            "'",
            "\"",
            "'quoted'",
            "\"quoted\"",
            "back\\slash",
            "tab\there",
            " lead",
            "trail ",
            "multi\nline\n",
            "multi\nline",
            "multi\n\n",
            "\n",
            "\n\n",
            "x\n  indented\n",
            " lead\nline",
            "x\n \ny",
            "crlf\r\nline",
            "bell\u{7}",
            "del\u{7f}",
            "nel\u{85}x",
            "ls\u{2028}x",
            "bom\u{feff}x",
            "café",
            "日本",
            "emoji 🦀",
            "<<",
            "=",
            "$$HOME",
            "${VAR:?message}",
            "http://web:8080/",
            "nginx:1.27",
            "10s",
            "256m",
            "1Gi",
        ];
        let mut document = Map::new();
        let mut list = Vec::new();
        for (index, text) in strings.iter().enumerate() {
            document.insert(format!("k{index}"), json!(text));
            document.insert((*text).to_owned(), json!(index));
            list.push(json!(text));
            list.push(json!({"key": text, "other": [text]}));
        }
        document.insert("list".into(), Value::Array(list));
        round_trip(&Value::Object(document));
    }

    #[test]
    fn a_yaml_reader_reads_back_numbers_booleans_nulls_and_nesting() {
        round_trip(&json!({
            "numbers": [0, 1, -1, 292, 1.5, 1e20, -0.25],
            "flags": [true, false, null],
            "empty": {"map": {}, "list": [], "nested": [[], {}, [[1]]]},
            "deep": {"a": {"b": [{"c": {"d": ["e", {"f": "multi\nline\n"}]}}]}},
        }));
    }
}
