//! YAML as people write it: the parser's errors in their words, and the scalars whose type
//! every YAML 1.1 reader agrees on, which the fast paths of reading a module
//! (`module::simple`) and of writing a resource (`render::emit`) decide alone.

/// The parser's message for `error`, in words for a person who writes YAML rather than for one
/// who configures the parser.
pub fn message(error: &serde_saphyr::Error) -> String {
    match error {
        serde_saphyr::Error::DuplicateMappingKey { key, .. } => {
            let key = key
                .as_deref()
                .map(|k| format!(" `{k}`"))
                .unwrap_or_default();
            let location = error
                .location()
                .map(|at| format!(" at line {}, column {}", at.line(), at.column()))
                .unwrap_or_default();
            format!("duplicate key{key}: a key may appear only once in a map{location}")
        }
        _ => error.to_string(),
    }
}

/// The words YAML 1.1 reads as a boolean, null or a float, in any case.
pub(crate) fn is_word(text: &str) -> bool {
    [
        "y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf", "~",
    ]
    .iter()
    .any(|word| text.eq_ignore_ascii_case(word))
}

/// Digits, then letters and digits, the first letter none of `eExXbBoO` (`64Mi`, `2Gi`; not
/// `1e3` or `0x1F`): never a number in any radix.
pub(crate) fn is_never_a_number(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.first().is_some_and(u8::is_ascii_digit)
        && bytes.iter().all(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .find(|b| !b.is_ascii_digit())
            .is_some_and(|b| !b"eExXbBoO".contains(b))
}

/// The integer `text` spells in plain decimal: `0`, or up to 18 digits without a leading zero,
/// with an optional `-` (`-0` and `012` are read as floats, longer ones may not fit).
pub(crate) fn plain_integer(text: &str) -> Option<serde_json::Number> {
    if text == "0" {
        return Some(0u64.into());
    }
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty()
        || digits.len() > 18
        || digits.starts_with('0')
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    if text.starts_with('-') {
        text.parse::<i64>().ok().map(Into::into)
    } else {
        text.parse::<u64>().ok().map(Into::into)
    }
}

/// An upper bound on the bytes of `value`'s YAML document, worked out before it is written: YAML
/// indents every line by its depth, and a string's line breaks start new indented lines, so a
/// deeply nested resource is many times its JSON (8 MB of JSON became 976 MB). Each node counts
/// its indentation and punctuation, each string its bytes, an escape for each control
/// character and an indentation for each line break.
pub fn bound(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    fn text(s: &str, depth: usize) -> usize {
        let controls = s.bytes().filter(|b| *b < 0x20 || *b == 0x7f).count();
        let breaks = s.bytes().filter(|b| *b == b'\n').count();
        s.len() + controls * 5 + breaks * (2 * depth + 4) + 2
    }
    fn node(value: &Value, depth: usize) -> usize {
        let line = 2 * depth + 6;
        match value {
            Value::String(s) => line + text(s, depth),
            Value::Array(items) => {
                line + items
                    .iter()
                    .map(|item| node(item, depth + 1))
                    .fold(0, usize::saturating_add)
            }
            Value::Object(map) => {
                line + map
                    .iter()
                    .map(|(key, item)| text(key, depth).saturating_add(node(item, depth + 1)))
                    .fold(0, usize::saturating_add)
            }
            _ => line + 32,
        }
    }
    node(value, 0)
}
