//! `WWW-Authenticate` challenges (RFC 7235): what a registry's 401 asks for. A registry with
//! token auth answers `Bearer realm="https://auth.example.com/token",service="…",scope="…"`;
//! one with plain passwords `Basic realm="…"`.
//!
//! ```
//! use opm_core::provider::oci::parse_challenges;
//! let challenges = parse_challenges(r#"Bearer realm="https://a.example/token",service="reg""#);
//! assert_eq!(challenges[0].scheme, "bearer");
//! assert_eq!(challenges[0].params["realm"], "https://a.example/token");
//! ```

use std::collections::BTreeMap;

/// One challenge: a scheme and its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// The auth scheme, lowercased: `bearer`, `basic`.
    pub scheme: String,
    /// Its parameters, names lowercased, quoted values unquoted.
    pub params: BTreeMap<String, String>,
}

/// The challenges in one `WWW-Authenticate` header value. What does not parse is skipped: a
/// registry's header never makes this fail, it only leaves out what opm cannot use.
pub fn parse_challenges(header: &str) -> Vec<Challenge> {
    let mut cursor = Cursor {
        bytes: header.as_bytes(),
        at: 0,
    };
    let mut challenges = Vec::new();
    loop {
        cursor.skip(|b| b == b',' || is_space(b));
        if cursor.done() {
            return challenges;
        }
        let scheme = cursor.token();
        if scheme.is_empty() {
            // Not a challenge: skip to the next comma.
            cursor.skip(|b| b != b',');
            continue;
        }
        let mut challenge = Challenge {
            scheme: scheme.to_ascii_lowercase(),
            params: BTreeMap::new(),
        };
        cursor.skip(is_space);
        cursor.params(&mut challenge.params);
        challenges.push(challenge);
    }
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip(&mut self, while_: impl Fn(u8) -> bool) {
        while self.peek().is_some_and(&while_) {
            self.at += 1;
        }
    }

    /// An RFC 7230 token (possibly empty).
    fn token(&mut self) -> String {
        let start = self.at;
        self.skip(is_tchar);
        String::from_utf8_lossy(&self.bytes[start..self.at]).into_owned()
    }

    /// `name=value` pairs separated by commas, up to the next challenge or the end. A token68
    /// (`Basic abc==`) reads as a parameter with an empty value, which nothing uses.
    fn params(&mut self, params: &mut BTreeMap<String, String>) {
        loop {
            let start = self.at;
            let name = self.token();
            self.skip(is_space);
            if name.is_empty() || self.peek() != Some(b'=') {
                // The next challenge's scheme: leave it to the caller.
                self.at = start;
                return;
            }
            self.at += 1;
            self.skip(is_space);
            let value = if self.peek() == Some(b'"') {
                self.quoted()
            } else {
                self.token()
            };
            params.insert(name.to_ascii_lowercase(), value);
            self.skip(is_space);
            if self.peek() == Some(b',') {
                self.at += 1;
                self.skip(|b| b == b',' || is_space(b));
            } else {
                // Neither a comma nor the end: skip what does not parse.
                self.skip(|b| b != b',');
            }
            if self.done() {
                return;
            }
        }
    }

    /// A quoted string, unescaped; the cursor is on its opening quote.
    fn quoted(&mut self) -> String {
        self.at += 1;
        let mut out = Vec::new();
        while let Some(b) = self.peek() {
            self.at += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    if let Some(next) = self.peek() {
                        out.push(next);
                        self.at += 1;
                    }
                }
                _ => out.push(b),
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_challenge_has_its_realm_service_and_scope() {
        let challenges = parse_challenges(
            r#"Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:opm/kubernetes:pull""#,
        );
        assert_eq!(challenges.len(), 1);
        let params = &challenges[0].params;
        assert_eq!(params["realm"], "https://auth.example.com/token");
        assert_eq!(params["service"], "registry.example.com");
        assert_eq!(params["scope"], "repository:opm/kubernetes:pull");
    }

    #[test]
    fn several_challenges_in_one_header_are_each_read() {
        let challenges =
            parse_challenges(r#"Basic realm="a b", Bearer realm="https://x/t", scope=s, Other"#);
        let schemes: Vec<&str> = challenges.iter().map(|c| c.scheme.as_str()).collect();
        assert_eq!(schemes, ["basic", "bearer", "other"]);
        assert_eq!(challenges[0].params["realm"], "a b");
        assert_eq!(challenges[1].params["scope"], "s");
    }

    #[test]
    fn a_token68_and_garbage_do_not_stop_the_parse() {
        let challenges = parse_challenges("Basic abc==, Bearer realm=\"\\\"q\\\"\"");
        assert_eq!(challenges[1].params["realm"], "\"q\"");
        for text in [
            "",
            ",,,",
            "=",
            "\"",
            "Bearer realm=\"unterminated",
            "Bearer ===, ,",
        ] {
            let _ = parse_challenges(text);
        }
    }
}
