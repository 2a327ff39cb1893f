//! Kubernetes' `$(VAR)` expansion, which compose does not have, and compose's `$$` escape,
//! which Kubernetes does not need.
//!
//! Kubernetes expands `$(NAME)` in a container's environment values, command and arguments
//! with the variables defined before (or, for command and arguments, in) the container's
//! environment, reduces `$$` to `$`, and leaves a reference to a variable it does not know as
//! written. Compose instead interpolates `${NAME}` and `$NAME` in the whole file from the
//! environment of `docker compose` itself, so every `$` of a value that should reach the
//! container must be written `$$` ([`escape`]).
//!
//! ```
//! use opm_compose_common::expand::{escape, expand};
//! let expanded = expand("$(ROOT)/library, $$(ROOT), $(OTHER)", |name| {
//!     (name == "ROOT").then(|| "/media".to_owned())
//! });
//! assert_eq!(expanded, "/media/library, $(ROOT), $(OTHER)");
//! assert_eq!(escape("a$b"), "a$$b");
//! ```

pub use opm_module_common::env::references;

/// `text` with every `$(NAME)` that `lookup` knows replaced by its value, `$$` reduced to `$`,
/// and everything else as written, as Kubernetes expands a container's variables.
pub fn expand(text: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(escaped) = after.strip_prefix('$') {
            out.push('$');
            rest = escaped;
        } else if let Some(open) = after.strip_prefix('(')
            && let Some(close) = open.find(')')
        {
            let name = &open[..close];
            match lookup(name) {
                Some(value) => out.push_str(&value),
                None => {
                    out.push_str("$(");
                    out.push_str(name);
                    out.push(')');
                }
            }
            rest = &open[close + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `text` with every `$` doubled, so that compose passes it on as written instead of
/// interpolating it.
pub fn escape(text: &str) -> String {
    text.replace('$', "$$")
}

/// The text [`escape`] was given.
pub fn unescape(text: &str) -> String {
    text.replace("$$", "$")
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
    fn expansion_follows_kubernetes() {
        assert_eq!(expand("x$(A)y", known), "x1y");
        // A value is substituted as it is, not expanded again.
        assert_eq!(expand("$(B)", known), "$(A)");
        assert_eq!(expand("$$(A) $$ $x $( $(A", known), "$(A) $ $x $( $(A");
        assert_eq!(expand("$(UNKNOWN)-$", known), "$(UNKNOWN)-$");
        assert_eq!(expand("", known), "");
    }

    #[test]
    fn references_leave_out_escapes() {
        assert_eq!(references("$(A)$$(B)$(C) $(D"), ["A", "C"]);
        assert_eq!(protect("$(A)$(AB)", "A"), "$$(A)$(AB)");
        assert_eq!(expand(&protect("$(A)", "A"), known), "$(A)");
    }

    #[test]
    fn escape_doubles_every_dollar_and_unescape_undoes_it() {
        let text = "pa$$word ${HOME} $";
        assert_eq!(escape(text), "pa$$$$word $${HOME} $$");
        assert_eq!(unescape(&escape(text)), text);
    }
}
