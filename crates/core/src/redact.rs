//! Redaction of sensitive values (`docs/module-format.md#sensitive-values`): values from `${env:…}`
//! and everything under a Secret resource appear in rendered manifests and nowhere else.
//!
//! A [`Redactor`] knows the sensitive strings and replaces every occurrence with [`REDACTED`]:
//! verbatim, each line of a multi-line value, JSON-escaped (as in `--verbose=json`),
//! base64-encoded in the standard and URL-safe alphabets at each of the three offsets a value
//! can start at inside a longer encoded string (as a Kubernetes Secret's `data` or a Docker
//! `auth` of `user:password` holds it), and percent-encoded (as in a URL or a form). Where
//! matches overlap or touch, the whole stretch they cover is replaced once, so no part of any
//! value is left between two replacements. A [`RedactingWriter`] applies it to everything
//! written through it, line by line, so a command wraps its stderr once and nothing it prints
//! there — errors, verbose output, what a guest logs, a guest's panic message — can leak.
//!
//! A value shorter than [`MIN_REDACTED_CHARS`] characters is not redacted: it would match
//! ordinary text (a port, `true`, a short word) and shred every message that contains it, and
//! where `[redacted]` stood a reader could tell which ordinary word the value is. Such values are
//! counted ([`Redactor::unredacted`]) so that the commands can warn about them.
//!
//! ```
//! use opm_core::redact::Redactor;
//! let redactor = Redactor::new(["hunter2-hunter2".to_owned(), "short".to_owned()]);
//! assert_eq!(redactor.redact("password is hunter2-hunter2"), "password is [redacted]");
//! assert_eq!(redactor.unredacted(), 1);
//! ```

use std::borrow::Cow;
use std::io::{self, Write};

use aho_corasick::AhoCorasick;
use base64::Engine as _;

/// What a sensitive value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// The fewest characters a sensitive value must have to be redacted.
pub const MIN_REDACTED_CHARS: usize = 8;

/// Replaces sensitive strings in text.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Finds every form of every sensitive value, overlapping matches included; `None` when
    /// there is nothing to redact.
    matcher: Option<AhoCorasick>,
    /// How many values were too short to redact.
    unredacted: usize,
    /// Finds the names and paths that are never redacted (see [`Redactor::keeping`]).
    public: Option<AhoCorasick>,
    /// How many sensitive values occur inside one of those.
    in_public: usize,
    /// The values too short to redact, kept so that [`Redactor::holds_secret`] knows them.
    short: std::collections::BTreeSet<String>,
    /// What it was made of, for [`Redactor::joined`].
    made_of: (Vec<String>, Vec<String>),
}

impl Redactor {
    /// A redactor for `secrets`. Empty strings are ignored, and values shorter than
    /// [`MIN_REDACTED_CHARS`] characters only counted; each other value is redacted in every
    /// form the module documentation lists.
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Self {
        Self::keeping(secrets, Vec::new())
    }

    /// [`new`](Self::new), but a match that lies inside one of the texts `public` — the names
    /// of the module, its components, namespace and instance, and the paths of its files — is
    /// left as it is, so that a Secret value that is also an ordinary word of those (a database
    /// user called as the app is) does not make every message unreadable. A sensitive value
    /// that occurs in one of them is counted for [`warning`](Self::warning): where that name is
    /// printed, so is the value.
    pub fn keeping(secrets: impl IntoIterator<Item = String>, public: Vec<String>) -> Self {
        let public: Vec<String> = public.into_iter().filter(|p| !p.is_empty()).collect();
        let secrets: Vec<String> = secrets.into_iter().filter(|s| !s.is_empty()).collect();
        let made_of = (secrets.clone(), public.clone());
        // The secrets found in the public texts, in one pass over them (not each secret
        // searched for in each text: a module of many components and many Secret values).
        let in_public = match (public.is_empty(), AhoCorasick::new(&secrets)) {
            (false, Ok(raw)) if !secrets.is_empty() => public
                .iter()
                .flat_map(|text| raw.find_overlapping_iter(text).map(|m| m.pattern()))
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            _ => 0,
        };
        let mut needles = Vec::new();
        let mut unredacted = 0;
        let mut short = std::collections::BTreeSet::new();
        for secret in secrets {
            if secret.chars().count() < MIN_REDACTED_CHARS {
                unredacted += 1;
                short.insert(secret);
                continue;
            }
            needles.extend(forms(&secret));
        }
        needles.sort();
        needles.dedup();
        let matcher = (!needles.is_empty()).then(|| {
            AhoCorasick::new(&needles).expect("a few thousand literal strings build a matcher")
        });
        let public = (!public.is_empty()).then(|| {
            AhoCorasick::new(&public).expect("a few hundred literal strings build a matcher")
        });
        Self {
            matcher,
            unredacted,
            public,
            in_public,
            short,
            made_of,
        }
    }

    /// One redactor for the sensitive values of all of `redactors` (what two renders compared
    /// side by side, each with its own values, must both keep out of their diff).
    pub fn joined<'a>(redactors: impl IntoIterator<Item = &'a Redactor>) -> Self {
        let (mut secrets, mut public) = (Vec::new(), Vec::new());
        for redactor in redactors {
            secrets.extend(redactor.made_of.0.iter().cloned());
            public.extend(redactor.made_of.1.iter().cloned());
        }
        secrets.sort();
        secrets.dedup();
        public.sort();
        public.dedup();
        Self::keeping(secrets, public)
    }

    /// Whether `value` holds a sensitive value anywhere, or is one of those too short to redact
    /// (which [`redact`](Self::redact) leaves as they are): what is never written where a file
    /// keeps it, such as a render's provenance.
    pub fn holds_secret(&self, value: &str) -> bool {
        self.short.contains(value)
            || self
                .matcher
                .as_ref()
                .is_some_and(|matcher| matcher.find_overlapping_iter(value).next().is_some())
    }

    /// Redacts every string in `value`, in place: what a JSON event or object holds, each
    /// string redacted as a whole text rather than after it is serialised (where its escapes
    /// would hide a value from the matcher).
    pub fn redact_value(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(text) => {
                if let Cow::Owned(redacted) = self.redact(text) {
                    *text = redacted;
                }
            }
            serde_json::Value::Array(items) => {
                items.iter_mut().for_each(|item| self.redact_value(item))
            }
            serde_json::Value::Object(map) => {
                map.values_mut().for_each(|item| self.redact_value(item))
            }
            _ => {}
        }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// How many sensitive values are too short to be redacted.
    pub fn unredacted(&self) -> usize {
        self.unredacted
    }

    /// The warning to show when some values are too short to redact, or are names opm prints
    /// as they are (a line each).
    pub fn warning(&self) -> Option<String> {
        let plural = |count: usize| {
            if count == 1 { ("", "is") } else { ("s", "are") }
        };
        let mut lines = Vec::new();
        let count = self.unredacted;
        if count > 0 {
            let (s, are) = plural(count);
            lines.push(format!(
                "{count} sensitive value{s} (from a Secret or ${{env:…}}) {are} shorter than \
                 {MIN_REDACTED_CHARS} characters and {are} not redacted on stderr: short values \
                 match ordinary text, and where [redacted] stood a reader could tell which word \
                 it was; use longer secrets"
            ));
        }
        let count = self.in_public;
        if count > 0 {
            let (s, are) = plural(count);
            lines.push(format!(
                "{count} sensitive value{s} (from a Secret or ${{env:…}}) {are} part of the \
                 module's, a component's, the namespace's or the instance's name or a file's \
                 path, which opm prints as they are: where that name is printed, so is the \
                 value; use a secret that is not a name"
            ));
        }
        (!lines.is_empty()).then(|| lines.join("\nwarning: "))
    }

    /// `text` with every stretch covered by a sensitive string replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some(matcher) = &self.matcher else {
            return Cow::Borrowed(text);
        };
        // Every match, overlapping ones too, merged into the stretches they cover.
        let mut found: Vec<(usize, usize)> = matcher
            .find_overlapping_iter(text)
            .map(|found| (found.start(), found.end()))
            .collect();
        found.sort_unstable();
        if let Some(public) = &self.public {
            // A match inside a public text is left. One sweep over both, in order of start: a
            // match is inside one when the furthest end of the texts starting at or before it
            // reaches its end.
            let mut kept: Vec<(usize, usize)> = public
                .find_overlapping_iter(text)
                .map(|found| (found.start(), found.end()))
                .collect();
            kept.sort_unstable();
            let mut next = kept.iter().peekable();
            let mut reach = None;
            found.retain(|(start, end)| {
                while let Some((_, to)) = next.next_if(|(from, _)| from <= start) {
                    reach = reach.max(Some(*to));
                }
                reach.is_none_or(|reach| reach < *end)
            });
        }
        let mut covered: Vec<(usize, usize)> = Vec::new();
        for (start, end) in found {
            match covered.last_mut() {
                Some((_, last)) if start <= *last => *last = (*last).max(end),
                _ => covered.push((start, end)),
            }
        }
        if covered.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end) in covered {
            // A needle is whole UTF-8 text, so a match starts and ends on character boundaries;
            // a base64 or percent form is ASCII.
            out.push_str(&text[at..start]);
            out.push_str(REDACTED);
            at = end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }
}

/// Every form of `secret` that is redacted.
fn forms(secret: &str) -> Vec<String> {
    let mut forms = vec![secret.to_owned()];
    forms.extend(
        secret
            .lines()
            .filter(|line| line.trim().chars().count() >= MIN_REDACTED_CHARS)
            .map(str::to_owned),
    );
    let escaped = serde_json::to_string(secret).unwrap_or_default();
    forms.push(escaped.trim_matches('"').to_owned());
    for engine in [
        base64::engine::general_purpose::STANDARD,
        base64::engine::general_purpose::URL_SAFE,
    ] {
        forms.push(engine.encode(secret));
        forms.extend((0..3).filter_map(|offset| base64_inside(&engine, secret, offset)));
    }
    for (space, upper) in [("%20", true), ("+", true), ("%20", false)] {
        forms.push(percent_encoded(secret, space, upper));
    }
    forms.retain(|form| form.len() >= MIN_REDACTED_CHARS);
    forms
}

/// The base64 characters that encode only bytes of `secret` when it starts `offset` bytes into
/// a longer encoded string: the same whatever precedes or follows it.
fn base64_inside(
    engine: &base64::engine::GeneralPurpose,
    secret: &str,
    offset: usize,
) -> Option<String> {
    let mut bytes = vec![0u8; offset];
    bytes.extend_from_slice(secret.as_bytes());
    let encoded = engine.encode(&bytes);
    // Character i encodes bits 6i..6i+6; the secret's are bits 8·offset..8·(offset+len).
    let first = (8 * offset).div_ceil(6);
    let end = 8 * bytes.len() / 6;
    encoded.get(first..end).map(str::to_owned)
}

/// `secret` percent-encoded as RFC 3986 says for anything but unreserved characters, with
/// `space` for a space (`%20`, or `+` in a form) and upper- or lowercase hex digits.
fn percent_encoded(secret: &str, space: &str, upper: bool) -> String {
    let mut out = String::with_capacity(secret.len() * 3);
    for byte in secret.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(char::from(byte));
            }
            b' ' => out.push_str(space),
            _ if upper => out.push_str(&format!("%{byte:02X}")),
            _ => out.push_str(&format!("%{byte:02x}")),
        }
    }
    out
}

/// A writer that redacts what passes through it. It holds back an unfinished line until the
/// line ends or the writer is flushed, so a value split across two `write` calls is still found.
pub struct RedactingWriter<'a> {
    inner: &'a mut dyn Write,
    redactor: &'a Redactor,
    pending: Vec<u8>,
}

impl std::fmt::Debug for RedactingWriter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedactingWriter").finish_non_exhaustive()
    }
}

impl<'a> RedactingWriter<'a> {
    /// Wraps `inner`.
    pub fn new(inner: &'a mut dyn Write, redactor: &'a Redactor) -> Self {
        Self {
            inner,
            redactor,
            pending: Vec::new(),
        }
    }

    fn emit(&mut self, bytes: &[u8]) -> io::Result<()> {
        let text = String::from_utf8_lossy(bytes);
        self.inner.write_all(self.redactor.redact(&text).as_bytes())
    }
}

impl Write for RedactingWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        if let Some(end) = self.pending.iter().rposition(|b| *b == b'\n') {
            let complete: Vec<u8> = self.pending.drain(..=end).collect();
            self.emit(&complete)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let rest = std::mem::take(&mut self.pending);
        if !rest.is_empty() {
            self.emit(&rest)?;
        }
        self.inner.flush()
    }
}

impl Drop for RedactingWriter<'_> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A match that lies inside a public text (a name opm prints) is left, one that reaches past
    /// it is not; a secret inside a name is counted for the warning.
    #[test]
    fn a_match_inside_a_public_name_is_left_and_one_past_it_redacted() {
        let redactor = Redactor::keeping(
            ["nextcloud".to_owned(), "hunter2-hunter2".to_owned()],
            vec!["nextcloud-mail".to_owned(), "cloud".to_owned()],
        );
        assert_eq!(
            redactor.redact("component nextcloud-mail; password nextcloud; hunter2-hunter2"),
            "component nextcloud-mail; password [redacted]; [redacted]"
        );
        // Public texts that overlap: the match is inside the first.
        assert_eq!(
            redactor.redact("nextcloud-mailcloud"),
            "nextcloud-mailcloud"
        );
        assert!(
            redactor.warning().is_some_and(
                |w| w.starts_with("1 sensitive value (from a Secret or ${env:…}) is part of")
            ),
            "{:?}",
            redactor.warning()
        );
    }

    #[test]
    fn every_form_of_a_secret_is_redacted() {
        let redactor = Redactor::new(["s3cr\"et-value".to_owned(), String::new()]);
        assert_eq!(redactor.redact("a s3cr\"et-value b"), "a [redacted] b");
        assert_eq!(
            redactor.redact(r#"{"m":"s3cr\"et-value"}"#),
            r#"{"m":"[redacted]"}"#
        );
        let base64 = base64::engine::general_purpose::STANDARD.encode("s3cr\"et-value");
        assert_eq!(redactor.redact(&base64), "[redacted]");
        assert_eq!(redactor.redact("nothing here"), "nothing here");
    }

    #[test]
    fn a_longer_secret_containing_a_shorter_one_is_redacted_whole() {
        let redactor = Redactor::new(["abcdefgh".to_owned(), "xxabcdefghxx".to_owned()]);
        assert_eq!(
            redactor.redact("xxabcdefghxx abcdefgh"),
            "[redacted] [redacted]"
        );
    }

    #[test]
    fn overlapping_secrets_leave_no_part_of_either_visible() {
        let redactor = Redactor::new(["abcdefgh12".to_owned(), "gh12ijklmn".to_owned()]);
        assert_eq!(redactor.redact("<abcdefgh12ijklmn>"), "<[redacted]>");
        // A value overlapping itself.
        let redactor = Redactor::new(["aaaaaaaa".to_owned()]);
        assert_eq!(redactor.redact("-aaaaaaaaaaa-"), "-[redacted]-");
        // Touching matches become one replacement.
        let redactor = Redactor::new(["12345678".to_owned(), "abcdefgh".to_owned()]);
        assert_eq!(redactor.redact("12345678abcdefgh"), "[redacted]");
    }

    #[test]
    fn a_secret_base64_encoded_at_any_offset_inside_a_longer_value_is_redacted() {
        let secret = "correct-horse-battery";
        let redactor = Redactor::new([secret.to_owned()]);
        for engine in [
            base64::engine::general_purpose::STANDARD,
            base64::engine::general_purpose::URL_SAFE,
        ] {
            for prefix in ["", "u:", "user:", "admin:"] {
                for suffix in ["", "\n", "@host"] {
                    let encoded = engine.encode(format!("{prefix}{secret}{suffix}"));
                    let redacted = redactor.redact(&encoded);
                    let visible = redacted.replace(REDACTED, "");
                    // What is left encodes the prefix and suffix, and at most the two
                    // characters that share bits with them.
                    let most = (prefix.len() + suffix.len()).div_ceil(3) * 4 + 4;
                    assert!(
                        redacted.contains(REDACTED) && visible.len() <= most,
                        "{prefix:?}{suffix:?}: {encoded} became {redacted}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_secret_percent_encoded_in_a_url_or_a_form_is_redacted() {
        let redactor = Redactor::new(["p@ss w/rd:secret".to_owned()]);
        for text in [
            "postgres://app:p%40ss%20w%2Frd%3Asecret@db/app",
            "password=p%40ss+w%2Frd%3Asecret&next=1",
            "postgres://app:p%40ss%20w%2frd%3asecret@db/app",
        ] {
            let redacted = redactor.redact(text);
            assert!(
                redacted.contains(REDACTED)
                    && !redacted.contains("secret@")
                    && !redacted.contains("secret&"),
                "{text} became {redacted}"
            );
        }
    }

    #[test]
    fn values_shorter_than_the_minimum_are_counted_not_redacted() {
        let redactor = Redactor::new([
            "job".to_owned(),
            "5432".to_owned(),
            "long-enough".to_owned(),
        ]);
        assert_eq!(redactor.unredacted(), 2);
        assert_eq!(
            redactor.redact(r#"workload-type is "stateless", not "job"; port 5432; long-enough"#),
            r#"workload-type is "stateless", not "job"; port 5432; [redacted]"#
        );
    }

    #[test]
    fn multi_line_secrets_are_redacted_line_by_line_too() {
        let redactor = Redactor::new(["line-one\nline-two".to_owned()]);
        assert_eq!(redactor.redact("got line-two"), "got [redacted]");
    }

    #[test]
    fn the_writer_finds_secrets_split_across_writes() {
        let redactor = Redactor::new(["hunter2-hunter2".to_owned()]);
        let mut out = Vec::new();
        {
            let mut writer = RedactingWriter::new(&mut out, &redactor);
            write!(writer, "pass: hunter2-hun").unwrap();
            write!(writer, "ter2\nnext ").unwrap();
            write!(writer, "hunter2-hunter2").unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "pass: [redacted]\nnext [redacted]"
        );
    }
}
