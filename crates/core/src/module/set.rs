//! `--set PATH=VALUE`: one change to the module document, applied after the values files.
//!
//! The rule, also in `opm mod vet --help`:
//!
//! - `PATH` is keys separated by `.`; a key followed by `[N]` indexes a list
//!   (`a.b[0].c`). A key holding dots (an FQN) is written in double quotes
//!   (`components.api.traits."opm.dev/traits/scaling@v1#Replicas"`) or with each dot escaped as
//!   `\.`; inside quotes `\"` and `\\` stand for `"` and `\`. Under a component's `resources`,
//!   `traits` and `policies` a short name finds the FQN key with that name
//!   (`components.api.traits.Replicas=3`).
//! - The first `=` outside quotes ends the path. `VALUE` is read as one YAML value: `3` is a
//!   number, `true` a boolean, `null` null, `[a, b]` a list, `{k: v}` a map, `"3"` (quoted) the
//!   string `3`; anything else is a string. An empty `VALUE` is the empty string.
//! - `null` removes the key, as it does in a values file.
//! - Missing map keys are created, but for a component: a name under `components` must be one
//!   the module has (a typo gets a "did you mean"). An index may name an existing item or the one just past the
//!   end (which appends); a list is created for index 0 where nothing is. Going through a value
//!   that is not a map (for a key) or not a list (for an index) is an error.

use std::sync::Arc;

use super::tree::{self, Entry, Node, Value};
use super::values::{did_you_mean, find_entry, is_attachment_section};
use super::{ModuleError, Origin};

/// One step of a `--set` path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    Key(String),
    Index(usize),
}

/// A parsed `--set` argument.
#[derive(Debug, Clone)]
pub(crate) struct SetArg {
    /// The path as written, for messages (never the value, which may be secret).
    pub(crate) path_text: String,
    pub(crate) path: Vec<Segment>,
    pub(crate) value: Node,
}

/// Parses `PATH=VALUE`.
pub(crate) fn parse(arg: &str) -> Result<SetArg, ModuleError> {
    let (path, value_text) = parse_path(arg)?;
    let path_text = arg[..arg.len() - value_text.len() - 1].to_owned();
    let fail = |message: String| ModuleError::Set {
        path: path_text.clone(),
        message,
    };
    let origin = Origin::whole(format!("--set {path_text}"));
    let value = if value_text.is_empty() {
        Node::new(Value::String(String::new()), origin)
    } else {
        let source: Arc<str> = Arc::from(format!("--set {path_text}"));
        let parsed = tree::parse(value_text, &source).map_err(|_| {
            fail("the value is not a YAML value; quote it to pass a string".to_owned())
        })?;
        relocate(parsed, &origin)
    };
    Ok(SetArg {
        path_text,
        path,
        value,
    })
}

/// Gives every node of a `--set` value the argument as its origin (its own lines mean nothing).
fn relocate(mut node: Node, origin: &Origin) -> Node {
    node.origin = origin.clone();
    node.value = match node.value {
        Value::List(items) => Value::List(
            items
                .into_iter()
                .map(|item| relocate(item, origin))
                .collect(),
        ),
        Value::Map(entries) => Value::Map(
            entries
                .into_iter()
                .map(|entry| Entry {
                    key: entry.key,
                    key_origin: origin.clone(),
                    value: relocate(entry.value, origin),
                })
                .collect(),
        ),
        other => other,
    };
    node
}

/// Splits `arg` into its path and the text after the first `=` outside quotes.
fn parse_path(arg: &str) -> Result<(Vec<Segment>, &str), ModuleError> {
    let fail = |message: &str| ModuleError::Set {
        path: arg.split('=').next().unwrap_or(arg).to_owned(),
        message: message.to_owned(),
    };
    let mut segments = Vec::new();
    let mut key = String::new();
    // Whether the current key has been started (a quoted empty key `""` is still a key).
    let mut key_started = false;
    let mut chars = arg.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '=' => {
                finish_key(&mut segments, &mut key, &mut key_started);
                if segments.is_empty() {
                    return Err(fail("the path is empty; expected PATH=VALUE"));
                }
                return Ok((segments, &arg[at + 1..]));
            }
            '.' => {
                if !key_started && !matches!(segments.last(), Some(Segment::Index(_))) {
                    return Err(fail("a key in the path is empty"));
                }
                finish_key(&mut segments, &mut key, &mut key_started);
                if matches!(chars.peek(), None | Some((_, '=' | '.'))) {
                    return Err(fail("a key in the path is empty"));
                }
            }
            '\\' => match chars.next() {
                Some((_, escaped @ ('.' | '[' | ']' | '=' | '"' | '\\'))) => {
                    key.push(escaped);
                    key_started = true;
                }
                _ => return Err(fail("'\\' must be followed by one of . [ ] = \" \\")),
            },
            '"' if !key_started => {
                key_started = true;
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, '\\')) => match chars.next() {
                            Some((_, escaped @ ('"' | '\\'))) => key.push(escaped),
                            _ => {
                                return Err(fail(
                                    "inside quotes '\\' must be followed by \" or \\",
                                ));
                            }
                        },
                        Some((_, other)) => key.push(other),
                        None => return Err(fail("a quoted key is not closed")),
                    }
                }
                if !matches!(chars.peek(), None | Some((_, '.' | '[' | '='))) {
                    return Err(fail("a quoted key must be followed by '.', '[' or '='"));
                }
            }
            '[' => {
                finish_key(&mut segments, &mut key, &mut key_started);
                if segments.is_empty() {
                    return Err(fail("an index must follow a key"));
                }
                let mut digits = String::new();
                loop {
                    match chars.next() {
                        Some((_, ']')) => break,
                        Some((_, d)) if d.is_ascii_digit() => digits.push(d),
                        _ => return Err(fail("an index is written [N] with N a number")),
                    }
                }
                let index = digits
                    .parse()
                    .map_err(|_| fail("an index is written [N] with N a number"))?;
                segments.push(Segment::Index(index));
                if !matches!(chars.peek(), None | Some((_, '.' | '[' | '='))) {
                    return Err(fail("an index must be followed by '.', '[' or '='"));
                }
            }
            other => {
                key.push(other);
                key_started = true;
            }
        }
    }
    Err(fail("no '=' found; expected PATH=VALUE"))
}

fn finish_key(segments: &mut Vec<Segment>, key: &mut String, started: &mut bool) {
    if *started {
        segments.push(Segment::Key(std::mem::take(key)));
        *started = false;
    }
}

/// What a `--set` changes: the module document, or a module's parameters (its `config`), where
/// no key is a component or a definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Document,
    Parameters,
}

/// Applies `set` to `root`, the module document or the parameters.
pub(crate) fn apply(root: &mut Node, set: SetArg, target: Target) -> Result<(), ModuleError> {
    let document = target == Target::Document;
    let mut walked: Vec<String> = Vec::new();
    let mut node = root;
    let last = set.path.len() - 1;
    for (i, segment) in set.path.iter().enumerate() {
        let here = if walked.is_empty() {
            "the document".to_owned()
        } else {
            format!("`{}`", walked.join("."))
        };
        let fail = |message: String| ModuleError::Set {
            path: set.path_text.clone(),
            message,
        };
        match segment {
            Segment::Key(key) => {
                if matches!(node.value, Value::Null) {
                    node.value = Value::Map(Vec::new());
                }
                let attachments = document
                    && is_attachment_section(
                        &walked.iter().map(String::as_str).collect::<Vec<_>>(),
                    );
                if !matches!(node.value, Value::Map(_)) {
                    let hint = if matches!(node.value, Value::List(_)) {
                        "; index it with [N]"
                    } else {
                        ""
                    };
                    return Err(fail(format!(
                        "{here} ({}) is {}, not a map{hint}",
                        node.origin,
                        node.describe()
                    )));
                }
                let Value::Map(entries) = &mut node.value else {
                    unreachable!("checked above")
                };
                let found = find_entry(entries, key, attachments).map_err(|candidates| {
                    fail(format!(
                        "{key:?} could mean any of {}; write the FQN in quotes",
                        candidates.join(", ")
                    ))
                })?;
                if i == last && matches!(set.value.value, Value::Null) {
                    // As in a values file: null removes the key.
                    if let Some(index) = found {
                        entries.remove(index);
                    }
                    return Ok(());
                }
                let index = match found {
                    Some(index) => index,
                    None if document && walked == ["components"] => {
                        return Err(fail(format!(
                            "the module has no component {key:?}: values and --set change \
                             components, they do not add them{}",
                            did_you_mean(key, entries)
                        )));
                    }
                    None => {
                        entries.push(Entry {
                            key: key.clone(),
                            key_origin: set.value.origin.clone(),
                            value: Node::new(Value::Null, set.value.origin.clone()),
                        });
                        entries.len() - 1
                    }
                };
                walked.push(entries[index].key.clone());
                node = &mut entries[index].value;
            }
            Segment::Index(index) => {
                if matches!(node.value, Value::Null) {
                    node.value = Value::List(Vec::new());
                }
                if !matches!(node.value, Value::List(_)) {
                    return Err(fail(format!(
                        "{here} ({}) is {}, not a list",
                        node.origin,
                        node.describe()
                    )));
                }
                let Value::List(items) = &mut node.value else {
                    unreachable!("checked above")
                };
                if *index > items.len() {
                    return Err(fail(format!(
                        "index {index} is out of range: {here} has {} item(s); use [{}] to append",
                        items.len(),
                        items.len()
                    )));
                }
                if *index == items.len() {
                    items.push(Node::new(Value::Null, set.value.origin.clone()));
                }
                walked.push(format!("[{index}]"));
                node = &mut items[*index];
            }
        }
        if i == last {
            *node = set.value;
            return Ok(());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn doc(text: &str) -> Node {
        tree::parse(text, &Arc::from("m.yaml")).unwrap()
    }

    fn set(text: &str, arg: &str) -> Result<serde_json::Value, ModuleError> {
        let mut root = doc(text);
        apply(&mut root, parse(arg)?, Target::Document)?;
        Ok(root.to_json())
    }

    fn keys(path: &[&str]) -> Vec<Segment> {
        path.iter().map(|k| Segment::Key((*k).to_owned())).collect()
    }

    #[test]
    fn paths_with_quotes_escapes_and_indices() {
        assert_eq!(
            parse_path("a.b.c=1").unwrap(),
            (keys(&["a", "b", "c"]), "1")
        );
        assert_eq!(
            parse_path(r#"components.api.traits."opm.dev/traits/scaling@v1#Replicas"=3"#)
                .unwrap()
                .0,
            keys(&[
                "components",
                "api",
                "traits",
                "opm.dev/traits/scaling@v1#Replicas"
            ])
        );
        assert_eq!(
            parse_path(r"labels.app\.kubernetes\.io/name=x").unwrap().0,
            keys(&["labels", "app.kubernetes.io/name"])
        );
        assert_eq!(
            parse_path("a.b[0][2].c=x=y").unwrap(),
            (
                vec![
                    Segment::Key("a".into()),
                    Segment::Key("b".into()),
                    Segment::Index(0),
                    Segment::Index(2),
                    Segment::Key("c".into())
                ],
                "x=y"
            )
        );
        assert_eq!(
            parse_path(r#""a\"b".c="#).unwrap(),
            (keys(&["a\"b", "c"]), "")
        );
    }

    #[test]
    fn malformed_paths_are_errors() {
        for bad in [
            "=1", "a..b=1", ".a=1", "a.=1", "a[x]=1", "[0]=1", "a[0=1", "\"a=1", "a\\q=1",
            "noequals", "\"a\"b=1",
        ] {
            let error = parse(bad).unwrap_err();
            assert!(error.to_string().starts_with("--set "), "{bad}: {error}");
        }
    }

    #[test]
    fn values_are_yaml_scalars_or_flow_collections() {
        assert_eq!(set("a: 1", "a=3").unwrap(), json!({"a": 3}));
        assert_eq!(set("a: 1", "a=\"3\"").unwrap(), json!({"a": "3"}));
        assert_eq!(set("a: 1", "a=true").unwrap(), json!({"a": true}));
        assert_eq!(set("a: 1", "a=").unwrap(), json!({"a": ""}));
        assert_eq!(
            set("a: 1\nb: 2", "a=null").unwrap(),
            json!({"b": 2}),
            "null removes"
        );
        assert_eq!(set("b: 2", "a=null").unwrap(), json!({"b": 2}));
        assert_eq!(
            set("a: [1, 2]", "a[0]=null").unwrap(),
            json!({"a": [null, 2]})
        );
        assert_eq!(
            set("a: 1", "a=ghcr.io/acme/api:1.4.0").unwrap(),
            json!({"a": "ghcr.io/acme/api:1.4.0"})
        );
        assert_eq!(
            set("a: 1", "b.c=[x, 2]").unwrap(),
            json!({"a": 1, "b": {"c": ["x", 2]}})
        );
        assert_eq!(
            set("a: 1", "b={k: v}").unwrap(),
            json!({"a": 1, "b": {"k": "v"}})
        );
    }

    #[test]
    fn indices_replace_append_or_fail() {
        assert_eq!(set("a: [1, 2]", "a[1]=9").unwrap(), json!({"a": [1, 9]}));
        assert_eq!(set("a: [1, 2]", "a[2]=9").unwrap(), json!({"a": [1, 2, 9]}));
        assert_eq!(
            set("x: 1", "a[0].b=9").unwrap(),
            json!({"x": 1, "a": [{"b": 9}]})
        );
        let error = set("a: [1, 2]", "a[5]=9").unwrap_err();
        assert_eq!(
            error.to_string(),
            "--set a[5]: index 5 is out of range: `a` has 2 item(s); use [2] to append"
        );
    }

    #[test]
    fn a_list_where_a_map_is_expected_is_an_error() {
        let error = set("a: {b: [1, 2]}", "a.b.c=1").unwrap_err();
        assert_eq!(
            error.to_string(),
            "--set a.b.c: `a.b` (m.yaml:1:8) is a list, not a map; index it with [N]"
        );
        let error = set("a: {b: x}", "a.b[0]=1").unwrap_err();
        assert_eq!(
            error.to_string(),
            "--set a.b[0]: `a.b` (m.yaml:1:8) is a string, not a list"
        );
    }

    #[test]
    fn short_names_find_fqn_keys_under_attachments() {
        let module =
            "components:\n  api:\n    traits:\n      opm.dev/traits/scaling@v1#Replicas: 1\n";
        assert_eq!(
            set(module, "components.api.traits.Replicas=3").unwrap(),
            json!({"components": {"api": {"traits": {"opm.dev/traits/scaling@v1#Replicas": 3}}}})
        );
        assert_eq!(
            set(
                module,
                r#"components.api.traits."opm.dev/traits/scaling@v1#Replicas"=4"#
            )
            .unwrap(),
            json!({"components": {"api": {"traits": {"opm.dev/traits/scaling@v1#Replicas": 4}}}})
        );
    }

    #[test]
    fn errors_never_quote_the_value() {
        let error = parse("password=[unclosed hunter2").unwrap_err();
        assert!(!error.to_string().contains("hunter2"), "{error}");
    }
}
