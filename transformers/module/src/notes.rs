//! What a transformer or the renderer cannot honour is never dropped in silence.
//!
//! [`unhonoured`] logs a warning, which the host shows on stderr; under `--strict` it is an
//! error instead. [`caveat`] is for what is honoured on a condition the module cannot see (the
//! image must have `wget` for an HTTP probe): always a warning. Messages name fields and keys,
//! never a Secret's values.

use opm_guest::{Context, TransformError};

/// Something the module asks for that the platform cannot do: a warning, or with `--strict` an
/// invalid-component error.
pub fn unhonoured(context: &Context, message: &str) -> Result<(), TransformError> {
    if context.strict {
        Err(TransformError::invalid(format!(
            "{message} (an error under --strict)"
        )))
    } else {
        opm_guest::log::warn(message);
        Ok(())
    }
}

/// A condition of the mapping the module cannot see: always a warning.
pub fn caveat(message: &str) {
    opm_guest::log::warn(message);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_unless_strict() {
        let (result, lines) = opm_guest::log::capture(|| unhonoured(&Context::default(), "lost"));
        assert!(result.is_ok());
        assert_eq!(lines, [("warn", "lost".to_owned())]);
        let strict = Context {
            strict: true,
            ..Context::default()
        };
        let (result, lines) = opm_guest::log::capture(|| unhonoured(&strict, "lost"));
        assert_eq!(
            result,
            Err(TransformError::invalid("lost (an error under --strict)"))
        );
        assert!(lines.is_empty());
    }
}
