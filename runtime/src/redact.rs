//! Redaction of sensitive values (`docs/module-format.md#sensitive-values`): values from `${env:…}`
//! and everything under a Secret resource appear in rendered manifests and nowhere else.
//!
//! A [`Redactor`] knows the sensitive strings and replaces every occurrence with
//! [`REDACTED`] — verbatim, JSON-escaped (as in `--verbose=json`) and base64-encoded (as a
//! Kubernetes Secret's `data` holds it). A [`RedactingWriter`] applies it to everything written
//! through it, line by line, so a command wraps its stderr once and nothing it prints there —
//! errors, verbose output, what a guest logs, a guest's panic message — can leak.
//!
//! ```
//! use opm_runtime::redact::Redactor;
//! let redactor = Redactor::new(["hunter2".to_owned()]);
//! assert_eq!(redactor.redact("password is hunter2"), "password is [redacted]");
//! ```

use std::borrow::Cow;
use std::io::{self, Write};

use base64::Engine as _;

/// What a sensitive value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Replaces sensitive strings in text.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Every form of every sensitive value, longest first, so a value that contains another is
    /// replaced whole.
    needles: Vec<String>,
}

impl Redactor {
    /// A redactor for `secrets`. Empty strings are ignored; each value is also redacted in its
    /// JSON-escaped and base64 forms, and each line of a multi-line value on its own.
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Self {
        let mut needles = Vec::new();
        for secret in secrets {
            if secret.is_empty() {
                continue;
            }
            let escaped = serde_json::to_string(&secret).unwrap_or_default();
            let escaped = escaped.trim_matches('"').to_owned();
            let base64 = base64::engine::general_purpose::STANDARD.encode(secret.as_bytes());
            for line in secret.lines().filter(|line| !line.trim().is_empty()) {
                needles.push(line.to_owned());
            }
            needles.extend([secret, escaped, base64]);
        }
        needles.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        needles.dedup();
        Self { needles }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// `text` with every sensitive string replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut text = Cow::Borrowed(text);
        for needle in &self.needles {
            if text.contains(needle.as_str()) {
                text = Cow::Owned(text.replace(needle.as_str(), REDACTED));
            }
        }
        text
    }
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

    #[test]
    fn every_form_of_a_secret_is_redacted() {
        let redactor = Redactor::new(["s3cr\"et".to_owned(), String::new()]);
        assert_eq!(redactor.redact("a s3cr\"et b"), "a [redacted] b");
        assert_eq!(
            redactor.redact(r#"{"m":"s3cr\"et"}"#),
            r#"{"m":"[redacted]"}"#
        );
        assert_eq!(redactor.redact("czNjciJldA=="), "[redacted]");
        assert_eq!(redactor.redact("nothing here"), "nothing here");
    }

    #[test]
    fn a_longer_secret_containing_a_shorter_one_is_redacted_whole() {
        let redactor = Redactor::new(["abc".to_owned(), "xxabcxx".to_owned()]);
        assert_eq!(redactor.redact("xxabcxx abc"), "[redacted] [redacted]");
    }

    #[test]
    fn multi_line_secrets_are_redacted_line_by_line_too() {
        let redactor = Redactor::new(["line-one\nline-two".to_owned()]);
        assert_eq!(redactor.redact("got line-two"), "got [redacted]");
    }

    #[test]
    fn the_writer_finds_secrets_split_across_writes() {
        let redactor = Redactor::new(["hunter2".to_owned()]);
        let mut out = Vec::new();
        {
            let mut writer = RedactingWriter::new(&mut out, &redactor);
            write!(writer, "pass: hun").unwrap();
            write!(writer, "ter2\nnext ").unwrap();
            write!(writer, "hunter2").unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "pass: [redacted]\nnext [redacted]"
        );
    }
}
