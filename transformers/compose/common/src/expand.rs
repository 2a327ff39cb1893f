//! Kubernetes' `$(VAR)` expansion, which compose does not have, and compose's `$$` escape,
//! which Kubernetes does not need.
//!
//! Kubernetes expands `$(NAME)` ([`expand`], `opm_module_common::env`'s, which the quadlet
//! provider uses too) in a container's environment values, command and arguments
//! with the variables defined before (or, for command and arguments, in) the container's
//! environment, reduces `$$` to `$`, and leaves a reference to a variable it does not know as
//! written. Compose instead interpolates `${NAME}` and `$NAME` in every value of the file from
//! the environment of `docker compose` itself — the deployer's, with their credentials in it —
//! so every `$` of a value must be written `$$` ([`escape`]) for compose to pass it on as
//! written.
//!
//! The two never meet: the transformers and the renderer work on raw text, Kubernetes'
//! expansion included, and the renderer escapes every string of the finished document once
//! ([`escape_values`]), keys left as they are (compose does not interpolate them).
//!
//! ```
//! use opm_compose_common::expand::{escape, escape_values, expand};
//! use opm_guest::json;
//! let expanded = expand("$(ROOT)/library, $$(ROOT), $(OTHER)", |name| {
//!     (name == "ROOT").then(|| "/media".to_owned())
//! });
//! assert_eq!(expanded, "/media/library, $(ROOT), $(OTHER)");
//! assert_eq!(escape("a$b"), "a$$b");
//! let mut service = json!({"image": "x:${TAG}", "labels": {"$key": "$value"}, "replicas": 2});
//! escape_values(&mut service);
//! assert_eq!(service, json!({"image": "x:$${TAG}", "labels": {"$key": "$$value"}, "replicas": 2}));
//! ```

use opm_guest::Value;

pub use opm_module_common::env::{expand, references};

/// `text` with every `$` doubled, so that compose passes it on as written instead of
/// interpolating it.
pub fn escape(text: &str) -> String {
    text.replace('$', "$$")
}

/// Every string of `value` [escaped](escape), in objects (their values, not their keys) and
/// lists at any depth; numbers, booleans and null are left as they are.
pub fn escape_values(value: &mut Value) {
    match value {
        Value::String(text) if text.contains('$') => *text = escape(text),
        Value::Array(items) => items.iter_mut().for_each(escape_values),
        Value::Object(fields) => fields.values_mut().for_each(escape_values),
        _ => {}
    }
}

/// Whether compose would interpolate something in `text`: a `$` that is not half of a `$$`.
pub fn interpolates(text: &str) -> bool {
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        match rest[at + 1..].strip_prefix('$') {
            Some(after) => rest = after,
            None => return true,
        }
    }
    false
}

/// `$(NAME)` written so that [`expand`] leaves it as it is: `$$(NAME)`.
pub fn protect(text: &str, name: &str) -> String {
    text.replace(&format!("$({name})"), &format!("$$({name})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(name: &str) -> Option<String> {
        match name {
            "A" => Some("1".into()),
            "B" => Some("$(A)".into()),
            _ => None,
        }
    }

    #[test]
    fn references_leave_out_escapes() {
        assert_eq!(references("$(A)$$(B)$(C) $(D"), ["A", "C"]);
        assert_eq!(protect("$(A)$(AB)", "A"), "$$(A)$(AB)");
        assert_eq!(expand(&protect("$(A)", "A"), known), "$(A)");
    }

    #[test]
    fn escape_doubles_every_dollar_so_that_compose_interpolates_nothing() {
        let text = "pa$$word ${HOME} $";
        assert_eq!(escape(text), "pa$$$$word $${HOME} $$");
        assert!(interpolates(text));
        assert!(!interpolates(&escape(text)));
        for text in ["$X", "a$", "$$$", "${Y:-z}", "$$$X"] {
            assert!(interpolates(text), "{text}");
        }
        for text in ["", "plain", "$$", "$$X", "a$$$$b"] {
            assert!(!interpolates(text), "{text}");
        }
    }

    #[test]
    fn escape_values_escapes_every_string_at_any_depth_and_no_key() {
        let mut value = opm_guest::json!({
            "$image": "$A", "list": ["$B", 1, true, null, {"deep": ["${C:-d}"]}], "n": 2,
        });
        escape_values(&mut value);
        assert_eq!(
            value,
            opm_guest::json!({
                "$image": "$$A", "list": ["$$B", 1, true, null, {"deep": ["$${C:-d}"]}], "n": 2,
            })
        );
    }
}
