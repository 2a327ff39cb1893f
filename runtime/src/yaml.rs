//! YAML as people write it: the parser's errors in their words.

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
