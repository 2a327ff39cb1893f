//! The YAML of most modules, parsed without `serde-saphyr`: block maps and lists, one-line flow
//! maps and lists, comments, and scalars whose type is certain. [`parse`] gives the very tree
//! `serde-saphyr` gives, origins included, or `None` for anything else (an anchor, a tag, a
//! block scalar, a scalar that could be read two ways, a key twice, a syntax error), which
//! [`super::tree`] then hands to `serde-saphyr`. Its errors and odd corners stay its own.
//!
//! What is read here:
//!
//! - a block map whose keys are plain (a letter, digit or `_`, then those and `-./`) or
//!   double-quoted without escapes, each with a value on its line or nested below it;
//! - a block list, indented under its key or not, whose items start on the dash's line;
//! - a flow map or list that ends on the line it starts on;
//! - scalars: `true`, `false`, integers in plain decimal, quoted strings without escapes, and
//!   plain strings no YAML reader takes for anything but a string (the rules of
//!   [`plain_string`]);
//! - comments and blank lines, spaces for indentation (a tab or a carriage return anywhere
//!   sends the text to `serde-saphyr`).
//!
//! The test `the_simple_parse_is_serde_saphyr_s_parse` holds the two to the same trees on
//! generated documents and every module, values file and fixture in the repository.

use std::sync::Arc;

use super::Origin;
use super::tree::{Entry, Node, Value};
use crate::yaml;

/// Nesting deeper than this is left to `serde-saphyr`.
const DEPTH: usize = 64;

/// The tree of `text`, whose first line is line `line_offset + 1` of `source`; `None` when the
/// text is not of the simple shape.
pub(super) fn parse(text: &str, source: &Arc<str>, line_offset: u32) -> Option<Node> {
    if text.bytes().any(|b| matches!(b, b'\t' | b'\r')) || text.starts_with('\u{feff}') {
        return None;
    }
    let mut lines = Vec::new();
    for (number, line) in text.split('\n').enumerate() {
        if line.starts_with("---") || line.starts_with("...") || line.starts_with('%') {
            return None;
        }
        let indent = line.len() - line.trim_start_matches(' ').len();
        let end = content_end(line)?;
        if end > indent {
            lines.push(Line {
                number: u32::try_from(number).ok()?.checked_add(line_offset)?,
                text: &line[..end],
                indent,
            });
        }
    }
    let mut parser = Parser {
        lines,
        source,
        next: 0,
    };
    // A document may be indented as a whole: the batches of a module's components are.
    let indent = parser.lines.first()?.indent;
    let node = parser.block(0, indent, 0)?;
    (parser.next == parser.lines.len()).then_some(node)
}

/// The end of `line`'s content: before a comment (a `#` at the start or after a space, outside
/// quotes) and the spaces before it. `None` for an unclosed quote.
fn content_end(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    let mut quote = None;
    let mut end = bytes.len();
    for (at, &b) in bytes.iter().enumerate() {
        match (quote, b) {
            (Some(open), _) if b == open => quote = None,
            (Some(_), _) => {}
            // A quote opens a quoted scalar where a scalar starts, not inside a word (`it's`).
            (None, b'"' | b'\'')
                if at == 0 || matches!(bytes[at - 1], b' ' | b'[' | b'{' | b',') =>
            {
                quote = Some(b);
            }
            (None, b'#') if at == 0 || bytes[at - 1] == b' ' => {
                end = at;
                break;
            }
            _ => {}
        }
    }
    if quote.is_some() {
        return None;
    }
    Some(line[..end].trim_end_matches(' ').len())
}

/// A line with content: its number from 0 (with the offset), its text up to any comment, and
/// its indentation.
struct Line<'a> {
    number: u32,
    text: &'a str,
    indent: usize,
}

struct Parser<'a, 's> {
    lines: Vec<Line<'a>>,
    source: &'s Arc<str>,
    /// The first line not read yet.
    next: usize,
}

impl<'a> Parser<'a, '_> {
    fn origin(&self, line: usize, column: usize) -> Option<Origin> {
        Some(Origin::new(
            self.source.clone(),
            self.lines[line].number.checked_add(1)?,
            u32::try_from(column + 1).ok()?,
        ))
    }

    /// The block node starting on line `line` at `column` (its indentation, or where it
    /// follows a `- `): a list, a map, or a one-line scalar or flow collection.
    fn block(&mut self, line: usize, column: usize, depth: usize) -> Option<Node> {
        if depth > DEPTH {
            return None;
        }
        let rest = &self.lines[line].text[column..];
        if rest == "-" || rest.starts_with("- ") {
            self.list(line, column, false, depth)
        } else if key_end(rest).is_some() {
            self.map(line, column, depth)
        } else {
            let node = self.inline(line, column)?;
            self.next = line + 1;
            Some(node)
        }
    }

    /// The block list whose first dash is on line `line` at `column`. `indentless`: the origin
    /// of a list that starts at its key's column, which is its first item's.
    fn list(
        &mut self,
        mut line: usize,
        column: usize,
        indentless: bool,
        depth: usize,
    ) -> Option<Node> {
        let mut items = Vec::new();
        let mut origin = None;
        loop {
            let text = self.lines[line].text;
            let after = text[column + 1..].len() - text[column + 1..].trim_start_matches(' ').len();
            if after == 0 {
                // A dash alone on its line: the item starts below it.
                return None;
            }
            let item_column = column + 1 + after;
            if origin.is_none() {
                origin = Some(if indentless {
                    self.origin(line, item_column)?
                } else {
                    self.origin(line, column)?
                });
            }
            items.push(self.block(line, item_column, depth + 1)?);
            line = self.next;
            match self.lines.get(line) {
                Some(next) if next.indent == column && is_dash(&next.text[column..]) => {}
                Some(next) if next.indent > column => return None,
                _ => break,
            }
        }
        Some(Node::new(Value::List(items), origin?))
    }

    /// The block map whose first key is on line `line` at `column`.
    fn map(&mut self, mut line: usize, column: usize, depth: usize) -> Option<Node> {
        let origin = self.origin(line, column)?;
        let mut entries = Vec::new();
        loop {
            let text = self.lines[line].text;
            let rest = &text[column..];
            let (key, end) = key_end(rest)?;
            let key_origin = self.origin(line, column)?;
            let value_column = column + end + 1;
            let value = if value_column < text.len() {
                // Spaces separate a value from its key; other whitespace there (a vertical tab,
                // a no-break space) is left to serde-saphyr.
                let after = text[value_column..].trim_start_matches(' ');
                let spaces = text.len() - value_column - after.len();
                if spaces == 0 || after.is_empty() || after.starts_with(char::is_whitespace) {
                    return None;
                }
                let node = self.inline(line, value_column + spaces)?;
                self.next = line + 1;
                node
            } else {
                let below = self.lines.get(line + 1)?;
                if below.indent > column {
                    self.block(line + 1, below.indent, depth + 1)?
                } else if below.indent == column && is_dash(&below.text[column..]) {
                    self.list(line + 1, column, true, depth + 1)?
                } else {
                    // An empty value: null, at an origin of serde-saphyr's own.
                    return None;
                }
            };
            entries.push(Entry {
                key: key.to_owned(),
                key_origin,
                value,
            });
            line = self.next;
            match self.lines.get(line) {
                Some(next) if next.indent == column && !is_dash(&next.text[column..]) => {}
                Some(next) if next.indent >= column => return None,
                _ => break,
            }
        }
        unique(&entries).then(|| Node::new(Value::Map(entries), origin))
    }

    /// A scalar or a flow collection that makes up the rest of line `line` from `column`.
    fn inline(&self, line: usize, column: usize) -> Option<Node> {
        let text = self.lines[line].text;
        if !matches!(text.as_bytes()[column], b'{' | b'[') {
            let origin = self.origin(line, column)?;
            return Some(Node::new(scalar(&text[column..], false)?, origin));
        }
        let mut flow = Flow {
            parser: self,
            line,
            text,
            at: column,
        };
        let node = flow.collection(0)?;
        (flow.at == text.len()).then_some(node)
    }
}

/// Whether `rest` starts a list item.
fn is_dash(rest: &str) -> bool {
    rest == "-" || rest.starts_with("- ")
}

/// The key that starts `rest` and the position of its colon, when `rest` starts with a key: a
/// plain key (see the module's doc) or a double-quoted one, then `:` at the end or before a
/// space.
fn key_end(rest: &str) -> Option<(&str, usize)> {
    let bytes = rest.as_bytes();
    let (key, end) = if bytes.first()? == &b'"' {
        let close = 1 + rest[1..].find('"')?;
        (&rest[1..close], close + 1)
    } else {
        let end = rest.find(':')?;
        let key = &rest[..end];
        if !is_plain_key(key) {
            return None;
        }
        (key, end)
    };
    if bytes.get(end)? != &b':' || !matches!(bytes.get(end + 1), None | Some(b' ')) {
        return None;
    }
    Some((key, end))
}

fn is_plain_key(key: &str) -> bool {
    !yaml::is_word(key)
        && key
            .as_bytes()
            .first()
            .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$'))
        && key.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/' | b'@' | b'#' | b'$')
        })
}

/// Whether no key of `entries` is there twice.
fn unique(entries: &[Entry]) -> bool {
    if entries.len() <= 8 {
        return entries
            .iter()
            .enumerate()
            .all(|(i, entry)| entries[..i].iter().all(|other| other.key != entry.key));
    }
    let mut keys: Vec<&str> = entries.iter().map(|entry| entry.key.as_str()).collect();
    keys.sort_unstable();
    keys.windows(2).all(|pair| pair[0] != pair[1])
}

/// A flow collection on one line.
struct Flow<'p, 'a, 's> {
    parser: &'p Parser<'a, 's>,
    line: usize,
    text: &'a str,
    at: usize,
}

impl Flow<'_, '_, '_> {
    fn skip_spaces(&mut self) {
        while self.text.as_bytes().get(self.at) == Some(&b' ') {
            self.at += 1;
        }
    }

    fn byte(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    /// The flow map or list at `at`.
    fn collection(&mut self, depth: usize) -> Option<Node> {
        if depth > DEPTH {
            return None;
        }
        let origin = self.parser.origin(self.line, self.at)?;
        let open = self.byte()?;
        let close = if open == b'{' { b'}' } else { b']' };
        self.at += 1;
        self.skip_spaces();
        let mut entries = Vec::new();
        let mut items = Vec::new();
        if self.byte()? == close {
            self.at += 1;
        } else {
            loop {
                if open == b'{' {
                    let key_origin = self.parser.origin(self.line, self.at)?;
                    let (key, end) = key_end(&self.text[self.at..])?;
                    if end == self.text.len() - self.at - 1 {
                        return None;
                    }
                    self.at += end + 1;
                    self.skip_spaces();
                    let value = self.value(depth)?;
                    entries.push(Entry {
                        key: key.to_owned(),
                        key_origin,
                        value,
                    });
                } else {
                    items.push(self.value(depth)?);
                }
                self.skip_spaces();
                match self.byte()? {
                    b',' => {
                        self.at += 1;
                        self.skip_spaces();
                    }
                    b if b == close => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        let value = if open == b'{' {
            if !unique(&entries) {
                return None;
            }
            Value::Map(entries)
        } else {
            Value::List(items)
        };
        Some(Node::new(value, origin))
    }

    /// A value inside a flow collection: a nested one, or a scalar up to `,`, `]` or `}`.
    fn value(&mut self, depth: usize) -> Option<Node> {
        if matches!(self.byte()?, b'{' | b'[') {
            return self.collection(depth + 1);
        }
        let origin = self.parser.origin(self.line, self.at)?;
        let rest = &self.text[self.at..];
        let length = if let Some(quoted) = rest.strip_prefix('"') {
            2 + quoted.find('"')?
        } else {
            rest.find([',', ']', '}']).unwrap_or(rest.len())
        };
        let token = rest[..length].trim_end_matches(' ');
        self.at += length;
        Some(Node::new(scalar(token, true)?, origin))
    }
}

/// The value of the scalar `token`, when its type is certain.
fn scalar(token: &str, in_flow: bool) -> Option<Value> {
    let bytes = token.as_bytes();
    match *bytes.first()? {
        b'"' | b'\'' => {
            let quote = bytes[0];
            let inner = token.get(1..token.len() - 1)?;
            (bytes[bytes.len() - 1] == quote
                && !inner.contains(char::from(quote))
                && !(quote == b'"' && inner.contains('\\')))
            .then(|| Value::String(inner.to_owned()))
        }
        _ if token == "null" || token == "~" => Some(Value::Null),
        _ if token == "true" => Some(Value::Bool(true)),
        _ if token == "false" => Some(Value::Bool(false)),
        b'-' | b'0'..=b'9' if yaml::plain_integer(token).is_some() => {
            yaml::plain_integer(token).map(Value::Number)
        }
        _ => plain_string(token, in_flow).then(|| Value::String(token.to_owned())),
    }
}

/// A plain scalar no YAML reader takes for anything but a string:
///
/// - a letter or `/` (or `-`, `--` and a letter), then any printable characters (no `,[]{}`
///   in a flow collection), with no `: `, no ` #`, no `:` or space at the end, and not a YAML
///   1.1 word (`yes`, `off`, `null`, ...);
/// - a digit, then letters and digits, the first letter none of `eExXbBoO` (`64Mi`: never a
///   number in any radix);
/// - three or more runs of digits between dots, then nothing or `-`, `+` or `@` and more
///   (`0.1.0`, `1.36.0-alpine`: a version);
/// - `/`, `$`, `./` or `../`, then as after a letter (`/data`, `${config.name}`).
fn plain_string(token: &str, in_flow: bool) -> bool {
    let bytes = token.as_bytes();
    let dashes = bytes.iter().take(2).take_while(|&&b| b == b'-').count();
    let body = &token[dashes..];
    let Some(&first) = body.as_bytes().first() else {
        return false;
    };
    if first.is_ascii_digit() {
        if dashes > 0 {
            return false;
        }
        // A version: three or more runs of digits between dots, then nothing or `-`, `+` or
        // `@` and printable characters (`1.36.0-alpine`, `11.6.1@sha256:...`).
        let version = token
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(token.len());
        let (core, suffix) = token.split_at(version);
        let runs: Vec<&str> = core.split('.').collect();
        if runs.len() >= 3 {
            return runs
                .iter()
                .all(|run| !run.is_empty() && run.bytes().all(|b| b.is_ascii_digit()))
                && (suffix.is_empty()
                    || (suffix.len() > 1
                        && suffix.starts_with(['-', '+', '@'])
                        && plain_body(suffix, in_flow)));
        }
        return yaml::is_never_a_number(token);
    }
    let starts_well = first.is_ascii_alphabetic()
        || (dashes == 0
            && (first == b'/'
                || first == b'$'
                || token.starts_with("./")
                || token.starts_with("../")));
    starts_well && plain_body(token, in_flow) && !yaml::is_word(body)
}

/// Whether `token` holds only printable characters (no `,[]{}` in a flow collection), no `: `
/// or ` #`, and no space or `:` at the end.
fn plain_body(token: &str, in_flow: bool) -> bool {
    token
        .chars()
        .all(|c| !(is_special(c) || (in_flow && matches!(c, ',' | '[' | ']' | '{' | '}'))))
        && !token.ends_with(' ')
        && !token.ends_with(':')
        && !token.contains(": ")
        && !token.contains(" #")
}

/// A character a plain scalar cannot hold as it is: a control character, a line or paragraph
/// separator, a byte order mark, a non-character.
fn is_special(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::module::tree::parse_saphyr;

    fn source() -> Arc<str> {
        Arc::from("m.yaml")
    }

    /// Checks that `text`'s simple parse, when there is one, is `serde-saphyr`'s; whether
    /// there is one.
    fn check(text: &str) -> bool {
        match parse(text, &source(), 3) {
            Some(node) => {
                let slow = parse_saphyr(text, &source(), 3)
                    .unwrap_or_else(|e| panic!("serde-saphyr refuses what parsed:\n{text}\n{e}"));
                assert_eq!(node, slow, "for\n{text}");
                true
            }
            None => false,
        }
    }

    #[test]
    fn a_module_parses_as_serde_saphyr_parses_it() {
        let text = "\
apiVersion: core.opm.dev/v1   # the format
kind: Module
metadata: {name: bench, version: 0.1.0, namespace: bench}

components:
  web:
    labels: {core.opm.dev/workload-type: stateless}
    resources:
      Container:
        image: nginxinc/nginx-unprivileged:1.27
        args: [--port, \"8080\", -v]
        ports: {http: {containerPort: 8080}}
        env:
        - name: A
          value: 'x y'
        -   name: B
            value: \"\"
    traits:
      Replicas: -2
      Expose: {type: ClusterIP, ports: []}
      Resources:
        limits: {memory: 64Mi, cpu: 500m}
      list:
        - - a
          - b
        - c
";
        assert!(check(text));
    }

    /// The fuzzer's finding: a value that is only whitespace other than spaces (a vertical tab,
    /// a form feed, a no-break space) after `key: ` made the parser read past the line's end.
    #[test]
    fn a_value_of_other_whitespace_is_not_read_past_the_line() {
        for text in [
            "a: \u{b}\n",
            "a: \u{c}\n",
            "a:  \u{a0}\n",
            "kind: Module\nx:\n  ttl: \u{b}\n",
            "- \u{b}\n",
            "a: \u{b}x\n",
            "apiVersion: core.opm.dev/v2\nkind: \u{b}",
        ] {
            check(text);
        }
    }

    #[test]
    fn what_it_cannot_be_sure_of_is_left_to_serde_saphyr() {
        for text in [
            "a:\n",
            "a: yes\n",
            "a: 1.5\n",
            "a: 012\n",
            "a: &x 1\nb: *x\n",
            "a: |\n  text\n",
            "a: b\n  c\n",
            "a: 1\na: 2\n",
            "a:\n\tb: 1\n",
            "a: {b: 1\n",
            "a: \"x\\ny\"\n",
            "a: 1\n---\nb: 2\n",
            "a: 'don''t'\n",
            "a: [x, y\n",
            "a: b: c\n",
        ] {
            assert!(!check(text), "{text}");
        }
    }

    /// Every YAML file of the repository's examples, fixtures and providers.
    fn repository_yaml() -> Vec<std::path::PathBuf> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        let mut folders: Vec<_> = ["examples", "tests/fixtures", "providers"]
            .iter()
            .map(|folder| root.join(folder))
            .collect();
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    // Helm's templates are not YAML until rendered.
                    if !path.ends_with("templates") {
                        folders.push(path);
                    }
                } else if path
                    .extension()
                    .is_some_and(|ext| ext == "yaml" || ext == "yml")
                {
                    files.push(path);
                }
            }
        }
        files
    }

    #[test]
    fn the_simple_parse_is_serde_saphyr_s_parse_for_the_repository_s_yaml() {
        let files = repository_yaml();
        let mut simple = 0;
        for path in &files {
            let text = std::fs::read_to_string(path).unwrap();
            simple += usize::from(check(&text));
        }
        // Enough of them are of the simple shape for the comparison to mean something.
        assert!(simple >= 15, "{simple} of {}", files.len());
    }

    #[test]
    fn the_simple_parse_is_serde_saphyr_s_parse_for_generated_documents() {
        let keys = [
            "a",
            "b",
            "name",
            "app.kubernetes.io/name",
            "x-y",
            "k_1",
            "_k",
            "8080",
            "yes",
            "Yes",
            "true",
            "null",
            "y",
            "0.1",
            "1e3",
            "a.b/c-d",
            "a@v1#B",
            "#a",
            "a#",
            "1.2.3",
        ];
        let scalars = [
            "x",
            "a b",
            "a  b",
            "-v",
            "--port=80",
            "-inf",
            "--",
            "-1",
            "0",
            "-0",
            "7",
            "012",
            "123456789012345678",
            "1234567890123456789",
            "8080",
            "1.5",
            "0.1.0",
            "1.2.3.4",
            "10.0.0.1",
            "1..2",
            "64Mi",
            "500m",
            "2Gi",
            "1e3",
            "0x1F",
            "0b1",
            "0o7",
            "1_000",
            "true",
            "false",
            "True",
            "yes",
            "no",
            "on",
            "off",
            "y",
            "n",
            "null",
            "Null",
            "~",
            "nan",
            ".inf",
            "inf",
            "/data",
            "/",
            "a:b",
            "http://x:80/y",
            "a:",
            "a,b",
            "a=b",
            "a@b",
            "x+y",
            "a/b",
            "\"q\"",
            "\"\"",
            "\"a b, c\"",
            "'s'",
            "''",
            "'a, b'",
            "\"8080\"",
            "é",
            "aé",
            "[]",
            "{}",
            "1.36.0-alpine",
            "11.6.1@sha256:ab12",
            "1.2.3+build.1",
            "1.2.3-",
            "1.2.3.",
            "1.2.3-a b",
            "./x",
            "../x",
            ".x",
            "..",
            "...",
            "$x",
            "${a.b}",
            "${ a }",
            "$",
            "it's",
            "a'b'",
            "a(b)",
            "a*b",
            "a&b",
            "a!b",
            "a|b",
            "a>b",
            "a%b",
            "a#b",
            "a?",
            "a`b",
            "~x",
            "x~",
            "null",
            "~",
            "NULL",
            "[1, a]",
            "{a: 1}",
            "{a: [b, {c: d}]}",
            "[a, [b]]",
            "{\"k\": v}",
        ];
        let mut next = crate::testing::numbers(0x9e37_79b9_7f4a_7c15u64);
        let mut parsed = 0;
        for _ in 0..20_000 {
            let mut text = String::new();
            let entries = 1 + next(4);
            for _ in 0..entries {
                block_entry(&mut text, 0, &mut next, &keys, &scalars, 0);
            }
            parsed += usize::from(check(&text));
            // Indented as a whole, as a batch of a module's components is.
            let indented: String = text.lines().map(|line| format!("  {line}\n")).collect();
            check(&indented);
        }
        assert!(parsed > 1_000, "{parsed} of 20,000 parsed simply");
    }

    /// Writes one map entry at `indent`: a scalar, a nested map or a list, in various styles,
    /// with comments and blank lines here and there.
    fn block_entry(
        text: &mut String,
        indent: usize,
        next: &mut dyn FnMut(usize) -> usize,
        keys: &[&str],
        scalars: &[&str],
        depth: usize,
    ) {
        let pad = " ".repeat(indent);
        let key = keys[next(keys.len())];
        let key = if next(6) == 0 {
            format!("\"{key}\"")
        } else {
            key.to_owned()
        };
        match if depth > 2 { 0 } else { next(4) } {
            0 => {
                let comment = if next(5) == 0 { "  # note" } else { "" };
                text.push_str(&format!(
                    "{pad}{key}: {}{comment}\n",
                    scalars[next(scalars.len())]
                ));
            }
            1 => {
                text.push_str(&format!("{pad}{key}:\n"));
                if next(4) == 0 {
                    text.push_str("\n   # a comment\n");
                }
                for _ in 0..1 + next(3) {
                    block_entry(text, indent + 2, next, keys, scalars, depth + 1);
                }
            }
            _ => {
                text.push_str(&format!("{pad}{key}:\n"));
                let dash = if next(2) == 0 { indent } else { indent + 2 };
                for _ in 0..1 + next(3) {
                    let gap = " ".repeat(1 + next(2) * 2);
                    match next(3) {
                        0 => text.push_str(&format!(
                            "{}-{gap}{}\n",
                            " ".repeat(dash),
                            scalars[next(scalars.len())]
                        )),
                        1 => {
                            // A map in the list: its first key after the dash.
                            let mut item = String::new();
                            for _ in 0..1 + next(3) {
                                block_entry(
                                    &mut item,
                                    dash + 1 + gap.len(),
                                    next,
                                    keys,
                                    scalars,
                                    depth + 1,
                                );
                            }
                            let item = &item[dash + 1 + gap.len()..];
                            text.push_str(&format!("{}-{gap}{item}", " ".repeat(dash)));
                        }
                        _ => text.push_str(&format!(
                            "{}-{gap}- {}\n{}  - {}\n",
                            " ".repeat(dash),
                            scalars[next(scalars.len())],
                            " ".repeat(dash + 1 + gap.len() - 2),
                            scalars[next(scalars.len())]
                        )),
                    }
                }
            }
        }
    }
}
