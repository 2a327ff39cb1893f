//! Text a remote party wrote, made safe to print on a terminal.
//!
//! A registry's error message, a tag, an annotation or a provider manifest's description can
//! carry escape sequences that clear the screen, move the cursor or rewrite what opm printed
//! before ("verified"), and bidirectional-override characters that reorder what a reader sees.
//! [`escape`] writes every such character as a Rust-style escape instead of dropping it, so the
//! reader sees that something was there:
//!
//! ```
//! use opm_core::printable::escape;
//! assert_eq!(escape("\u{1b}[2Jverified\n"), r"\u{1b}[2Jverified\n");
//! assert_eq!(escape("plain text, café"), "plain text, café");
//! ```
//!
//! [`escape_lines`] keeps line breaks, for opm's own multi-line messages that quote remote text
//! already passed through [`escape`]. [`escape_json`] does the same for JSON text, as JSON's
//! own `\uXXXX` escapes, so the output stays the same JSON value.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every control character (C0, DEL, C1), every bidirectional-formatting character
/// and every other invisible format character written as an escape: `\n`, `\r`, `\t`, else
/// `\u{…}`. Printable text, including non-ASCII letters, is returned as it is.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_except(text, |_| false)
}

/// [`escape`], but line feeds stay line feeds.
pub fn escape_lines(text: &str) -> Cow<'_, str> {
    escape_except(text, |c| c == '\n')
}

/// JSON text with the characters [`escape`] escapes that are left in it (serde_json escapes
/// C0 controls itself, not DEL, C1 or format characters) written as JSON `\uXXXX` escapes, which
/// read back as the same characters: the same JSON value, safe on a terminal.
pub fn escape_json(json: &str) -> Cow<'_, str> {
    // JSON's own whitespace between tokens stays; inside strings serde_json escaped it.
    let unsafe_in_json = |c: char| needs_escape(c) && !matches!(c, '\n' | '\r' | '\t');
    if !json.chars().any(unsafe_in_json) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if unsafe_in_json(c) {
            // All of them are in the Basic Multilingual Plane: one \uXXXX each.
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// At most the first `most` bytes of `text` (cut at a character boundary), with `…` and the
/// length of the whole when it was cut: for quoting a value an attacker may have made huge.
pub fn truncate(text: &str, most: usize) -> String {
    if text.len() <= most {
        return text.to_owned();
    }
    let end = text.floor_char_boundary(most);
    format!("{}… ({} bytes in all)", &text[..end], text.len())
}

fn escape_except(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(|c| needs_escape(c) && !keep(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !needs_escape(c) || keep(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str(r"\n"),
            '\r' => out.push_str(r"\r"),
            '\t' => out.push_str(r"\t"),
            _ => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

/// Whether `c` changes what a terminal shows without showing itself.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            // Soft hyphen, zero-width and joiner characters, directional marks and embeddings,
            // overrides and isolates, word joiner and invisible operators, the byte-order mark;
            // the Arabic letter mark and the Mongolian vowel separator, which reorder or hide
            // like them; the line and paragraph separators, which break a line without looking
            // like a line break.
            '\u{ad}'
                | '\u{61c}'
                | '\u{180e}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{feff}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_bidi_characters_are_escaped_not_dropped() {
        assert_eq!(
            escape("\u{1b}[2J\u{1b}[Hverified\r\n\u{7}\u{9b}31m\u{7f}"),
            r"\u{1b}[2J\u{1b}[Hverified\r\n\u{7}\u{9b}31m\u{7f}"
        );
        assert_eq!(escape("a\u{202e}cod.exe"), r"a\u{202e}cod.exe");
        assert_eq!(escape("tab\there"), r"tab\there");
        // Security review (2026-11): the Arabic letter mark passed the escaper.
        assert_eq!(escape("a\u{61c}b\u{2028}c"), r"a\u{61c}b\u{2028}c");
    }

    #[test]
    fn truncate_cuts_at_a_character_boundary_and_says_how_long() {
        assert_eq!(truncate("short", 80), "short");
        assert_eq!(truncate("ééé", 3), "é… (6 bytes in all)");
    }

    #[test]
    fn printable_text_is_borrowed_unchanged() {
        let text = "kubernetes 0.2.0 — Grüße, 日本語 \\ \"quoted\"";
        assert!(matches!(escape(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn escape_json_keeps_the_json_value() {
        let value = serde_json::json!({"description": "a\u{9b}31m\u{202e}b\u{1b}c\nd"});
        let json = serde_json::to_string_pretty(&value).unwrap();
        let escaped = escape_json(&json);
        assert!(!escaped.chars().any(needs_escape_in_json), "{escaped}");
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, value);
    }

    fn needs_escape_in_json(c: char) -> bool {
        needs_escape(c) && c != '\n'
    }

    #[test]
    fn escape_lines_keeps_line_feeds_only() {
        assert_eq!(escape_lines("one\ntwo\r\u{1b}"), "one\ntwo\\r\\u{1b}");
    }
}
