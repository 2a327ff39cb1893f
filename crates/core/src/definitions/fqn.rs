//! Fully qualified names of definitions and transformers.
//!
//! The grammar is `<domain-path>@v<major>#<Name>`:
//! `opm.dev/resources/workload@v1#Container`, `transformer.opm.dev/workload@v1#DeploymentTransformer`.
//! The domain path is one or more `/`-separated segments of lowercase letters, digits, `.` and
//! `-` (the first segment a domain with at least one dot); the major version is a decimal number;
//! the name is an UpperCamelCase identifier.
//!
//! ```
//! use opm_core::definitions::{Fqn, default_field};
//!
//! let fqn = Fqn::parse("opm.dev/traits/storage@v1#PersistentStorage").unwrap();
//! assert_eq!(fqn.name(), "PersistentStorage");
//! assert_eq!(fqn.major(), 1);
//! assert_eq!(default_field(fqn.name()), "persistentStorage");
//! ```

use std::fmt;

/// A parsed FQN, borrowing the text it was parsed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fqn<'a> {
    text: &'a str,
    path: &'a str,
    major: u32,
    name: &'a str,
}

/// Why a string is not an FQN.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{text:?} is not an FQN ({reason}); expected <domain-path>@v<major>#<Name>, e.g. opm.dev/resources/workload@v1#Container"
)]
pub struct FqnError {
    /// The text that failed to parse.
    pub text: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// The longest FQN: every resource and failure of a call carries its transformer's, so a
/// provider's names must not be able to multiply the host's memory and output.
pub const MAX_FQN_BYTES: usize = 256;

impl<'a> Fqn<'a> {
    /// Parses `text` as `<domain-path>@v<major>#<Name>`, at most [`MAX_FQN_BYTES`] long.
    pub fn parse(text: &'a str) -> Result<Self, FqnError> {
        let fail = |reason| FqnError {
            text: crate::printable::truncate(text, 80),
            reason,
        };
        if text.len() > MAX_FQN_BYTES {
            return Err(fail("longer than the limit of 256 bytes"));
        }
        let (api_version, name) = text.split_once('#').ok_or_else(|| fail("no '#'"))?;
        let (path, version) = api_version
            .rsplit_once('@')
            .ok_or_else(|| fail("no '@v<major>'"))?;
        let major = version
            .strip_prefix('v')
            .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|digits| digits.parse::<u32>().ok())
            .ok_or_else(|| fail("the version is not v<major>"))?;
        if !is_domain_path(path) {
            return Err(fail(
                "the domain path must be a domain and '/'-separated segments of lowercase letters, digits, '.' and '-'",
            ));
        }
        if !is_name(name) {
            return Err(fail(
                "the name after '#' must be an UpperCamelCase identifier",
            ));
        }
        Ok(Self {
            text,
            path,
            major,
            name,
        })
    }

    /// The whole FQN.
    pub fn as_str(&self) -> &'a str {
        self.text
    }

    /// The domain path before `@` (`opm.dev/resources/workload`).
    pub fn path(&self) -> &'a str {
        self.path
    }

    /// The major version.
    pub fn major(&self) -> u32 {
        self.major
    }

    /// The name after `#` (`Container`), also called the short name.
    pub fn name(&self) -> &'a str {
        self.name
    }
}

impl fmt::Display for Fqn<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text)
    }
}

/// Whether `text` is a definition's short name: an identifier starting with an uppercase letter.
pub fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase()) && chars.all(|c| c.is_ascii_alphanumeric())
}

/// The short name of `text`: the part after `#` for an FQN, `text` itself otherwise.
pub fn short_name(text: &str) -> &str {
    text.rsplit_once('#').map_or(text, |(_, name)| name)
}

fn is_domain_path(path: &str) -> bool {
    let mut segments = path.split('/');
    let domain_ok = segments
        .next()
        .is_some_and(|domain| is_segment(domain) && domain.contains('.'));
    domain_ok && segments.all(is_segment)
}

fn is_segment(segment: &str) -> bool {
    !segment.is_empty()
        && segment
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && !segment.starts_with(['.', '-'])
        && !segment.ends_with(['.', '-'])
}

/// The spec field a definition named `name` fills by default: `name` in lowerCamelCase.
///
/// A leading run of capitals is lowered as one word, so an acronym stays readable:
/// `Container` → `container`, `PersistentStorage` → `persistentStorage`, `HTTPRoute` →
/// `httpRoute`, `URL` → `url`.
pub fn default_field(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let upper_run = chars.iter().take_while(|c| c.is_ascii_uppercase()).count();
    // In `HTTPRoute` the `R` starts the next word; in `URL` or `Container` the run is all lowered.
    let lower = if upper_run > 1 && upper_run < chars.len() {
        upper_run - 1
    } else {
        upper_run.max(1)
    };
    chars
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if i < lower {
                c.to_ascii_lowercase()
            } else {
                *c
            }
        })
        .collect()
}

/// Whether `text` is a valid spec field name: a lowerCamelCase identifier.
pub fn is_field(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Security review (2026-11): a 1 MB transformer name was copied into every resource and failure.
    #[test]
    fn an_fqn_longer_than_the_limit_is_refused_and_not_quoted_whole() {
        let long = format!("acme.dev/x@v1#{}", "A".repeat(MAX_FQN_BYTES));
        let error = Fqn::parse(&long).unwrap_err();
        assert_eq!(error.reason, "longer than the limit of 256 bytes");
        assert!(error.to_string().len() < 400, "{error}");
        let longest = format!("acme.dev/x@v1#A{}", "a".repeat(MAX_FQN_BYTES - 15));
        assert_eq!(longest.len(), MAX_FQN_BYTES);
        assert!(Fqn::parse(&longest).is_ok());
    }

    #[test]
    fn parses_definition_and_transformer_fqns() {
        let fqn = Fqn::parse("opm.dev/resources/workload@v1#Container").unwrap();
        assert_eq!(
            (fqn.path(), fqn.major(), fqn.name()),
            ("opm.dev/resources/workload", 1, "Container")
        );
        let fqn = Fqn::parse("transformer.opm.dev/workload@v12#DeploymentTransformer").unwrap();
        assert_eq!((fqn.major(), fqn.name()), (12, "DeploymentTransformer"));
        assert!(Fqn::parse("acme.io@v2#Thing").is_ok());
    }

    #[test]
    fn rejects_malformed_fqns() {
        for bad in [
            "",
            "Container",
            "opm.dev/resources/workload#Container",
            "opm.dev/resources/workload@1#Container",
            "opm.dev/resources/workload@v#Container",
            "opm.dev/resources/workload@v1#",
            "opm.dev/resources/workload@v1#container",
            "opm.dev/resources/workload@v1#Con-tainer",
            "opm/resources@v1#Container",
            "opm.dev//workload@v1#Container",
            "Opm.dev/workload@v1#Container",
            "opm.dev/workload@v1.2#Container",
            "opm.dev/workload@v99999999999#Container",
        ] {
            let error = Fqn::parse(bad).unwrap_err();
            assert!(
                error.to_string().contains("is not an FQN"),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn default_field_is_lower_camel_case() {
        assert_eq!(default_field("Container"), "container");
        assert_eq!(default_field("PersistentStorage"), "persistentStorage");
        assert_eq!(default_field("ConfigMap"), "configMap");
        assert_eq!(default_field("HTTPRoute"), "httpRoute");
        assert_eq!(default_field("URL"), "url");
        assert_eq!(default_field("A"), "a");
    }

    #[test]
    fn short_names() {
        assert_eq!(short_name("opm.dev/traits/scaling@v1#Replicas"), "Replicas");
        assert_eq!(short_name("Replicas"), "Replicas");
        assert!(is_name("Replicas") && !is_name("replicas") && !is_name("Re-plicas"));
    }
}
