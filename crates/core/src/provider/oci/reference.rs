//! `oci://host[:port]/repository[:tag|@digest]` references: [`OciRef`].
//!
//! The host is the registry as written (`docker.io` is reached at `index.docker.io`); the
//! repository is lowercase path components as the distribution spec allows them; a tag is up to
//! 128 word characters, dots and dashes; a digest is `sha256:` or `sha512:` and lowercase hex of
//! the right length. A reference with neither tag nor digest names the tag `latest`.
//!
//! ```
//! use opm_core::provider::oci::OciRef;
//! let r = OciRef::parse("oci://127.0.0.1:5000/opm/kubernetes:0.2.0").unwrap();
//! assert_eq!((r.registry(), r.repository(), r.tag()), ("127.0.0.1:5000", "opm/kubernetes", Some("0.2.0")));
//! assert_eq!(r.to_string(), "oci://127.0.0.1:5000/opm/kubernetes:0.2.0");
//! ```

use anyhow::{Context as _, bail};

/// An `oci://host[:port]/repository[:tag|@digest]` reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciRef {
    registry: String,
    repository: String,
    tag: Option<String>,
    digest: Option<String>,
}

/// What a reference should look like, for messages.
const SHAPE: &str = "expected oci://host[:port]/repository[:tag|@digest]";

impl OciRef {
    /// Parses `text`, which must start with `oci://`.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let shown = crate::printable::escape(text);
        let rest = text
            .strip_prefix("oci://")
            .with_context(|| format!("{shown:?} is not an oci:// reference"))?;
        let Some((registry, path)) = rest.split_once('/') else {
            bail!("{shown:?} names no repository: {SHAPE}");
        };
        if !is_registry(registry) {
            bail!("{shown:?}: {registry:?} is not a registry host[:port]: {SHAPE}");
        }
        let (path, digest) = match path.split_once('@') {
            Some((path, digest)) => {
                if !is_digest(digest) {
                    bail!(
                        "{shown:?}: the digest is not sha256:<64 lowercase hex> or \
                         sha512:<128 lowercase hex>"
                    );
                }
                (path, Some(digest.to_owned()))
            }
            None => (path, None),
        };
        let (repository, tag) = match path.rsplit_once(':') {
            Some((repository, tag)) => {
                if !is_tag(tag) {
                    bail!(
                        "{shown:?}: the tag is not 1 to 128 letters, digits, `_`, `.` and `-` \
                         starting with a letter, digit or `_`"
                    );
                }
                (repository, Some(tag.to_owned()))
            }
            None => (path, None),
        };
        if !is_repository(repository) {
            bail!(
                "{shown:?}: {repository:?} is not a repository (lowercase letters, digits and \
                 single `.`, `_`, `__` or `-` between them, in `/`-separated parts)"
            );
        }
        let tag = if tag.is_none() && digest.is_none() {
            Some("latest".to_owned())
        } else {
            tag
        };
        Ok(Self {
            registry: registry.to_owned(),
            repository: repository.to_owned(),
            tag,
            digest,
        })
    }

    /// The registry as written: `host[:port]`.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The registry's API host: the registry, except Docker Hub's `docker.io`.
    pub fn api_host(&self) -> &str {
        match self.registry.as_str() {
            "docker.io" => "index.docker.io",
            other => other,
        }
    }

    /// The repository: `opm/kubernetes`.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// The tag, if it names one.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The digest, if it names one.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    /// This reference with `tag` instead of any tag or digest it has.
    pub fn with_tag(&self, tag: &str) -> Self {
        Self {
            tag: Some(tag.to_owned()),
            digest: None,
            ..self.clone()
        }
    }

    /// This reference pinned to `digest` (its tag, if any, kept for messages).
    pub fn with_digest(&self, digest: &str) -> Self {
        Self {
            digest: Some(digest.to_owned()),
            ..self.clone()
        }
    }

    /// Whether `text` names a tag or digest, or only a repository (which names `latest`).
    pub fn names_version(text: &str) -> bool {
        let rest = text.strip_prefix("oci://").unwrap_or(text);
        let path = rest.split_once('/').map_or("", |(_, path)| path);
        path.contains('@') || path.contains(':')
    }
}

impl std::fmt::Display for OciRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "oci://{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// Whether `text` is `sha256:` and 64 lowercase hex digits, or `sha512:` and 128.
pub fn is_digest(text: &str) -> bool {
    let Some((algorithm, hex)) = text.split_once(':') else {
        return false;
    };
    let length = match algorithm {
        "sha256" => 64,
        "sha512" => 128,
        _ => return false,
    };
    hex.len() == length && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
fn is_tag(text: &str) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 128
        && (bytes[0].is_ascii_alphanumeric() || bytes[0] == b'_')
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// `/`-separated components of `[a-z0-9]+` joined by `.`, `_`, `__` or dashes.
fn is_repository(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 255
        && text.split('/').all(|part| {
            let bytes = part.as_bytes();
            let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
            bytes.first().is_some_and(alnum)
                && bytes.last().is_some_and(alnum)
                && bytes
                    .iter()
                    .all(|b| alnum(b) || matches!(b, b'.' | b'_' | b'-'))
                && !part.contains("..")
                && !part.contains("___")
                && !part.contains("._")
                && !part.contains("_.")
                && !part.contains(".-")
                && !part.contains("-.")
                && !part.contains("_-")
                && !part.contains("-_")
        })
}

/// A host name, IPv4 address or bracketed IPv6 address, with an optional port.
fn is_registry(text: &str) -> bool {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let Some((inside, after)) = rest.split_once(']') else {
            return false;
        };
        if inside.parse::<std::net::Ipv6Addr>().is_err() {
            return false;
        }
        match after {
            "" => return true,
            _ => match after.strip_prefix(':') {
                Some(port) => ("", port),
                None => return false,
            },
        }
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (host, port),
            None => (text, "1"),
        }
    };
    let port_ok = port.parse::<u16>().is_ok_and(|p| p > 0);
    let host_ok = host.is_empty() && text.starts_with('[')
        || !host.is_empty()
            && host.len() <= 253
            && host.split('.').all(|label| {
                !label.is_empty()
                    && !label.starts_with('-')
                    && !label.ends_with('-')
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
    port_ok && host_ok
}

/// Whether the registry `host[:port]` is this machine: `localhost` or a loopback address.
pub fn is_loopback(registry: &str) -> bool {
    let host = match registry.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map_or(rest, |(inside, _)| inside),
        None => registry.rsplit_once(':').map_or(registry, |(host, _)| host),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse_into_their_parts() {
        let r = OciRef::parse("oci://localhost:5000/a/b-c:1.2.3").unwrap();
        assert_eq!(
            (r.registry(), r.repository(), r.tag(), r.digest()),
            ("localhost:5000", "a/b-c", Some("1.2.3"), None)
        );
        let digest = format!("sha256:{}", "0f".repeat(32));
        let r = OciRef::parse(&format!("oci://[::1]:5000/a@{digest}")).unwrap();
        assert_eq!((r.tag(), r.digest()), (None, Some(digest.as_str())));
        let r = OciRef::parse("oci://registry.example.com/opm/kubernetes").unwrap();
        assert_eq!(r.tag(), Some("latest"));
        assert_eq!(
            r.to_string(),
            "oci://registry.example.com/opm/kubernetes:latest"
        );
        assert_eq!(r.with_tag("1.0.0").tag(), Some("1.0.0"));
    }

    #[test]
    fn malformed_references_are_refused() {
        for text in [
            "registry.example.com/a",
            "oci://registry.example.com",
            "oci://registry.example.com/",
            "oci://registry.example.com/A",
            "oci://registry.example.com/a:",
            "oci://registry.example.com/a@sha256:00",
            "oci://registry.example.com/a@md5:00",
            "oci://registry.example.com:99999/a",
            "oci://reg\u{1b}istry/a",
            "oci://registry.example.com/a/../b",
            "oci://user@registry.example.com/a",
        ] {
            assert!(OciRef::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn loopback_is_localhost_and_loopback_addresses() {
        for registry in [
            "localhost",
            "localhost:5000",
            "127.0.0.1:80",
            "[::1]:5000",
            "[::1]",
        ] {
            assert!(is_loopback(registry), "{registry}");
        }
        for registry in ["10.0.0.1:5000", "registry.example.com", "[::2]:5000"] {
            assert!(!is_loopback(registry), "{registry}");
        }
    }
}
