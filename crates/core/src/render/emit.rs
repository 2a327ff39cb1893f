//! YAML written straight from a resource's compact JSON text, for the shapes resources nearly
//! always have. `serde-saphyr` writes every YAML document opm prints; this writes the same bytes
//! for the documents whose every key and string it can decide alone, a few times faster, and
//! gives up (`None`) on any other, which [`super::write::yaml_of`] then hands to `serde-saphyr`.
//!
//! What it writes itself, in `serde-saphyr`'s layout (two-space indent; a list under a key
//! starts at the key's column; a map in a list starts after its `- `):
//!
//! - objects and arrays, `{}` and `[]` when empty;
//! - `true`, `false`, `null`, and integers in their plain decimal form;
//! - keys of letters, digits and `-._/` that start with a letter and are not a YAML 1.1 word
//!   (`yes`, `on`, `null`, ...);
//! - string values that are plain for certain ([`is_plain`]), and strings quoted for certain
//!   with nothing to escape: empty, YAML 1.1 words, and number-like strings of digits and dots
//!   (`"8080"`, `"0.1.0"`).
//!
//! Anything else gives up: an escape in a string (a newline, a quote), a string longer than
//! a line of 80 characters (folded by `serde-saphyr`), a fraction or exponent, a list directly
//! in a list, JSON that is not compact. The test `the_fast_yaml_is_serde_saphyr_s_yaml` holds
//! both writers to the same bytes over every example's resources and generated documents.

use crate::yaml;

/// The longest string written here: `serde-saphyr` folds longer ones.
const LINE: usize = 80;

/// Nesting deeper than this is left to `serde-saphyr`.
const DEPTH: usize = 64;

/// The YAML document (ending in a newline) of `json`, a JSON object in compact form, or `None`
/// when it holds something this does not write.
pub(super) fn yaml_of_object(json: &str) -> Option<String> {
    let mut emitter = Emitter {
        json: json.as_bytes(),
        text: json,
        at: 0,
        out: String::with_capacity(json.len() + json.len() / 2),
    };
    if !json.starts_with('{') || json.starts_with("{}") {
        return None;
    }
    emitter.entries(0, false, 0)?;
    (emitter.at == json.len()).then_some(emitter.out)
}

struct Emitter<'a> {
    json: &'a [u8],
    text: &'a str,
    at: usize,
    out: String,
}

impl<'a> Emitter<'a> {
    fn peek(&self) -> Option<u8> {
        self.json.get(self.at).copied()
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Writes `before` and `{}` or `[]` for an empty object or array at `at`; whether there
    /// was one.
    fn empty(&mut self, before: &str) -> bool {
        let pair = match self.json.get(self.at..self.at + 2) {
            Some(b"{}") => "{}",
            Some(b"[]") => "[]",
            _ => return false,
        };
        self.out.push_str(before);
        self.out.push_str(pair);
        self.out.push('\n');
        self.at += 2;
        true
    }

    /// Past the `,` after an entry or item (`false`), or the `close` that ends its collection
    /// (`true`).
    fn closes(&mut self, close: u8) -> Option<bool> {
        let byte = self.peek()?;
        (byte == b',' || byte == close).then(|| {
            self.at += 1;
            byte == close
        })
    }

    fn indent(&mut self, columns: usize) {
        self.out.extend(std::iter::repeat_n(' ', columns));
    }

    /// The entries of the non-empty object at `at`, keys at column `column`; the first on the
    /// current line when `inline` (after a `- `).
    fn entries(&mut self, column: usize, inline: bool, depth: usize) -> Option<()> {
        if depth > DEPTH {
            return None;
        }
        self.expect(b'{')?;
        let mut first = true;
        loop {
            if !(first && inline) {
                self.indent(column);
            }
            first = false;
            let key = self.string()?;
            if !is_plain_key(key) {
                return None;
            }
            self.out.push_str(key);
            self.out.push(':');
            self.expect(b':')?;
            if !self.empty(" ") {
                match self.peek()? {
                    b'{' => {
                        self.out.push('\n');
                        self.entries(column + 2, false, depth + 1)?;
                    }
                    b'[' => {
                        self.out.push('\n');
                        self.items(column, depth + 1)?;
                    }
                    _ => {
                        self.out.push(' ');
                        self.scalar()?;
                    }
                }
            }
            if self.closes(b'}')? {
                return Some(());
            }
        }
    }

    /// The items of the non-empty array at `at`, each `- ` at column `column`.
    fn items(&mut self, column: usize, depth: usize) -> Option<()> {
        if depth > DEPTH {
            return None;
        }
        self.expect(b'[')?;
        loop {
            self.indent(column);
            self.out.push_str("- ");
            if !self.empty("") {
                match self.peek()? {
                    b'{' => self.entries(column + 2, true, depth + 1)?,
                    b'[' => return None,
                    _ => self.scalar()?,
                }
            }
            if self.closes(b']')? {
                return Some(());
            }
        }
    }

    /// A string, number, boolean or null, and the end of its line.
    fn scalar(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => {
                let text = self.string()?;
                if is_plain(text) {
                    self.out.push_str(text);
                } else if is_quoted_as_is(text) {
                    self.out.push('"');
                    self.out.push_str(text);
                    self.out.push('"');
                } else {
                    return None;
                }
            }
            b't' => self.word("true")?,
            b'f' => self.word("false")?,
            b'n' => self.word("null")?,
            _ => {
                let start = self.at;
                while let Some(b'-' | b'0'..=b'9') = self.peek() {
                    self.at += 1;
                }
                let number = &self.text[start..self.at];
                // Its YAML is its JSON (`-0` would be read as a float).
                yaml::plain_integer(number)?;
                self.out.push_str(number);
            }
        }
        self.out.push('\n');
        Some(())
    }

    fn word(&mut self, word: &str) -> Option<()> {
        let end = self.at + word.len();
        (self.json.get(self.at..end)? == word.as_bytes()).then_some(())?;
        self.at = end;
        self.out.push_str(word);
        Some(())
    }

    /// A string without escapes, as it stands in the JSON.
    fn string(&mut self) -> Option<&'a str> {
        self.expect(b'"')?;
        let start = self.at;
        let length = self.json[start..]
            .iter()
            .position(|&b| b == b'"' || b == b'\\')?;
        self.at = start + length;
        self.expect(b'"')?;
        // Both ends sit next to an ASCII quote: a boundary of the UTF-8 text.
        let text: &'a str = self.text;
        Some(&text[start..start + length])
    }
}

/// A key `serde-saphyr` writes as it is: a letter, then letters, digits and `-._/`, and not a
/// YAML word.
fn is_plain_key(key: &str) -> bool {
    key.len() <= LINE
        && key.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'/'))
        && !yaml::is_word(key)
}

/// A string value `serde-saphyr` writes plain for certain.
///
/// - Starting with a letter or `/`, or with `-` or `--` and a letter: letters, digits, spaces
///   and `-._/:@+=,`, no space at the end, no `: ` and no `:` at the end, not a YAML word.
///   Nothing then reads as a number, a timestamp, an indicator, a comment or a document marker.
/// - Starting with a digit: never a number ([`yaml::is_never_a_number`]: `64Mi`, `2Gi`).
fn is_plain(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.is_empty() || bytes.len() > LINE {
        return false;
    }
    // `-v`, `--port=80`: options, not negative numbers, list items or `-inf`.
    let dashes = bytes.iter().take(2).take_while(|&&b| b == b'-').count();
    if dashes > 0 {
        return bytes.get(dashes).is_some_and(u8::is_ascii_alphabetic)
            && !yaml::is_word(&text[dashes..])
            && is_plain(&text[dashes..]);
    }
    if bytes[0].is_ascii_digit() {
        return yaml::is_never_a_number(text);
    }
    (bytes[0].is_ascii_alphabetic() || bytes[0] == b'/')
        && bytes.iter().all(|&b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b' ' | b'-' | b'.' | b'_' | b'/' | b':' | b'@' | b'+' | b'=' | b','
                )
        })
        && bytes[bytes.len() - 1] != b' '
        && bytes[bytes.len() - 1] != b':'
        && !text.contains(": ")
        && !yaml::is_word(text)
}

/// A string value `serde-saphyr` double-quotes for certain, with nothing to escape: empty, a
/// YAML word, or digits and dots after a digit (`"8080"`, `"1.27"`, `"0.1.0"`: YAML 1.1 reads
/// all of them as numbers).
fn is_quoted_as_is(text: &str) -> bool {
    text.is_empty()
        || yaml::is_word(text)
        || (text.as_bytes()[0].is_ascii_digit()
            && text.len() <= LINE
            && text.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// What `serde-saphyr` writes for `json`, as `yaml_of` did before this module.
    fn saphyr(json: &str) -> String {
        let mut reader = serde_json::Deserializer::from_str(json);
        let mut text =
            serde_saphyr::to_string(&serde_transcode::Transcoder::new(&mut reader)).unwrap();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text
    }

    /// Checks that `value`'s fast YAML, when there is one, is `serde-saphyr`'s; whether there
    /// is one.
    fn check(value: &Value) -> bool {
        let json = serde_json::to_string(value).unwrap();
        match yaml_of_object(&json) {
            Some(fast) => {
                assert_eq!(fast, saphyr(&json), "for {json}");
                true
            }
            None => false,
        }
    }

    #[test]
    fn a_resource_is_written_as_serde_saphyr_writes_it() {
        let deployment = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "web",
                "labels": {"app.kubernetes.io/name": "web", "module.opmodel.dev/version": "0.1.0"},
                "annotations": {}
            },
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {
                    "containers": [{
                        "name": "web",
                        "image": "nginxinc/nginx-unprivileged:1.27",
                        "args": ["--port", "8080", "-v", "a b,c"],
                        "ports": [{"name": "http", "containerPort": 8080}],
                        "resources": {"limits": {"memory": "64Mi", "cpu": "500m"}},
                        "env": [{"name": "DEBUG", "value": "true"}, {"name": "E", "value": ""}],
                        "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": false}]
                    }],
                    "volumes": [{"name": "data", "emptyDir": {}}],
                    "tolerations": [],
                    "nodeSelector": null,
                    "offset": -12,
                }}
            }
        });
        assert!(check(&deployment));
    }

    #[test]
    fn what_it_cannot_decide_is_left_to_serde_saphyr() {
        for value in [
            json!({"a": "two\nlines"}),
            json!({"a": "say \"hi\""}),
            json!({"a": "x".repeat(81)}),
            json!({"a": 1.5}),
            json!({"a": [[1, 2]]}),
            json!({"y": 1}),
            json!({"8080": 1}),
            json!({"a": "key: value"}),
            json!({"a": "- leading"}),
            json!({"a": "-inf"}),
            json!({"a": "1e3"}),
            json!({"a": 12345678901234567890u64}),
            json!({}),
        ] {
            assert!(!check(&value), "{value}");
        }
        assert_eq!(yaml_of_object("[1]"), None);
        assert_eq!(yaml_of_object("{\"a\": 1}"), None);
        assert_eq!(yaml_of_object("{\"a\":1} "), None);
    }

    #[test]
    fn the_fast_yaml_is_serde_saphyr_s_yaml_for_generated_documents() {
        // Keys and strings from the edges of each rule, in nested objects and lists.
        let strings = [
            "",
            "a",
            "ab",
            "Yes",
            "NO",
            "on",
            "y",
            "n",
            "Null",
            "nan",
            "Inf",
            "true",
            "0",
            "7",
            "8080",
            "0.1.0",
            "1.",
            "1..2",
            "64Mi",
            "2Gi",
            "1e3",
            "0x1F",
            "0b1",
            "0o7",
            "1_000",
            "12:30",
            "2024-01-01",
            "/data",
            "/",
            "a:b",
            "a:",
            "a: b",
            "a b",
            "a ",
            "a #b",
            "a#b",
            "a,b",
            "a=b",
            "a@b",
            "x+y",
            "-a",
            "_a",
            ".a",
            "~",
            "<<",
            "=",
            "@a",
            "%a",
            "é",
            "aé",
            "web-1.example_com/x",
            "---",
            "a\tb",
            "-v",
            "--port=80",
            "-inf",
            "-Inf",
            "--",
            "-1",
            "-",
            "- a",
            "-a:",
            "--a b",
        ];
        let mut next = crate::testing::numbers(0x2545_f491_4f6c_dd1du64);
        fn build(
            next: &mut dyn FnMut(usize) -> usize,
            strings: &[&str],
            keys: &[&str],
            depth: usize,
        ) -> Value {
            match if depth > 3 { next(5) } else { next(8) } {
                0 => Value::String(strings[next(strings.len())].to_owned()),
                1 => json!(next(100_000) as i64 - 50_000),
                2 => [json!(true), json!(false), Value::Null][next(3)].clone(),
                3 => json!(strings[next(strings.len())]),
                4 => json!(next(10)),
                5 | 6 => Value::Object(
                    (0..next(4))
                        .map(|_| {
                            (
                                keys[next(keys.len())].to_owned(),
                                build(next, strings, keys, depth + 1),
                            )
                        })
                        .collect(),
                ),
                _ => Value::Array(
                    (0..next(4))
                        .map(|_| build(next, strings, keys, depth + 1))
                        .collect(),
                ),
            }
        }
        let keys = [
            "app.kubernetes.io/name",
            "name",
            "a",
            "b",
            "x-y",
            "k_1",
            "B2",
            "Yes",
            "y",
            "8080",
            "a b",
            "é",
            "-a",
        ];
        let mut written = 0;
        for _ in 0..20_000 {
            let document = Value::Object(
                (0..1 + next(4))
                    .map(|_| {
                        (
                            keys[next(keys.len())].to_owned(),
                            build(&mut next, &strings, &keys, 0),
                        )
                    })
                    .collect(),
            );
            written += usize::from(check(&document));
        }
        // The rules are not so narrow that the fast path never runs.
        assert!(written > 2_000, "{written} of 20,000 written fast");
    }
}
