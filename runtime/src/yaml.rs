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
