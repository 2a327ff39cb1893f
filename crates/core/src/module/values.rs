//! Values files: `${env:NAME}` substitution and the deep merge onto the module document.
//!
//! Merge rule (`docs/module-format.md#values`, as Helm users expect): maps merge key by key,
//! scalars and lists replace, and a `null` in a values file removes the key it names. Under a
//! component's `resources`, `traits` and `policies`, a short name and an FQN with that short name
//! are the same key, so `traits: {Replicas: 5}` in a values file changes
//! `opm.dev/traits/scaling@v1#Replicas` in the module. Values change the module's components
//! but never add one: a component name the module does not have is an error (with the name it
//! is likely a typo of), not a new component.
//!
//! In a values file, `${env:NAME}` anywhere in a string is replaced by the environment variable
//! `NAME` (`$${env:NAME}` stays literal as `${env:NAME}`). An unset variable is an error; the
//! substituted strings and the variables' values are recorded as sensitive.

use std::collections::BTreeSet;

use super::tree::{Entry, Node, Value};
use super::{ModuleError, Origin};
use crate::definitions::fqn::short_name;

/// Whether the map at `path` holds a component's attachments (`components.NAME.traits`).
pub(crate) fn is_attachment_section(path: &[&str]) -> bool {
    matches!(path, ["components", _, "resources" | "traits" | "policies"])
}

/// The index of the entry for `key`: the exact key, or, in an attachment section, the entry
/// whose key is the same definition written the other way (short name versus FQN).
/// `Err` lists the entries a short name could mean when it could mean several.
pub(crate) fn find_entry(
    entries: &[Entry],
    key: &str,
    attachments: bool,
) -> Result<Option<usize>, Vec<String>> {
    if let Some(index) = entries.iter().position(|entry| entry.key == key) {
        return Ok(Some(index));
    }
    if !attachments {
        return Ok(None);
    }
    let same: Vec<usize> = if key.contains('#') {
        let name = short_name(key);
        entries
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.key.contains('#') && e.key == name)
            .map(|(i, _)| i)
            .collect()
    } else {
        entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.key.contains('#') && short_name(&e.key) == key)
            .map(|(i, _)| i)
            .collect()
    };
    match same.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        many => Err(many.iter().map(|&i| entries[i].key.clone()).collect()),
    }
}

/// `; did you mean "web"?` when `key` is likely a typo of one of the keys of `entries`.
pub(crate) fn did_you_mean(key: &str, entries: &[Entry]) -> String {
    did_you_mean_among(key, entries.iter().map(|e| e.key.as_str()))
}

/// `; did you mean "web"?` when `key` is likely a typo of one of `known`.
pub(crate) fn did_you_mean_among<'a>(
    key: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> String {
    crate::names::did_you_mean(&crate::names::suggest(key, known))
}

/// Deep-merges `overlay` onto `base`; `path` is the key path of `base` in the document.
pub(crate) fn merge(
    base: &mut Node,
    overlay: Node,
    path: &mut Vec<String>,
) -> Result<(), ModuleError> {
    let Value::Map(over_entries) = overlay.value else {
        *base = overlay;
        return Ok(());
    };
    let Value::Map(base_entries) = &mut base.value else {
        *base = Node::new(Value::Map(over_entries), overlay.origin);
        return Ok(());
    };
    let attachments = is_attachment_section(&path.iter().map(String::as_str).collect::<Vec<_>>());
    for entry in over_entries {
        let found = find_entry(base_entries, &entry.key, attachments).map_err(|candidates| {
            ModuleError::invalid(
                entry.key_origin.clone(),
                format!(
                    "{:?} could mean any of {}; write the FQN",
                    entry.key,
                    candidates.join(", ")
                ),
            )
        })?;
        match (found, entry.value.value) {
            (Some(index), Value::Null) => {
                base_entries.remove(index);
            }
            (None, Value::Null) => {}
            (Some(index), value) => {
                path.push(base_entries[index].key.clone());
                let result = merge(
                    &mut base_entries[index].value,
                    Node::new(value, entry.value.origin),
                    path,
                );
                path.pop();
                result?;
            }
            (None, _) if path.as_slice() == ["components"] => {
                return Err(ModuleError::invalid(
                    entry.key_origin.clone(),
                    format!(
                        "the module has no component {:?}: values change components, they do \
                         not add them{}",
                        entry.key,
                        did_you_mean(&entry.key, base_entries)
                    ),
                ));
            }
            (None, value) => base_entries.push(Entry {
                key: entry.key,
                key_origin: entry.key_origin,
                value: Node::new(value, entry.value.origin),
            }),
        }
    }
    Ok(())
}

/// Replaces every `${env:NAME}` in the strings of `node`, recording what it substituted in
/// `sensitive`.
pub(crate) fn substitute_env(
    node: &mut Node,
    env: &dyn Fn(&str) -> Option<String>,
    sensitive: &mut BTreeSet<String>,
) -> Result<(), ModuleError> {
    match &mut node.value {
        Value::String(text) if text.contains("${env:") => {
            let (substituted, used) = substitute(text, &node.origin, env)?;
            if !used.is_empty() {
                // The variables' own values are sensitive too, wherever they end up in a string.
                sensitive.extend(used.into_iter().filter(|value| !value.is_empty()));
                if !substituted.is_empty() {
                    sensitive.insert(substituted.clone());
                }
            }
            *text = substituted;
        }
        Value::List(items) => {
            for item in items {
                substitute_env(item, env, sensitive)?;
            }
        }
        Value::Map(entries) => {
            for entry in entries {
                substitute_env(&mut entry.value, env, sensitive)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Substitutes one string. Returns the result and the values of the variables it used.
fn substitute(
    text: &str,
    origin: &Origin,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(String, Vec<String>), ModuleError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut used = Vec::new();
    while let Some(at) = rest.find("${env:") {
        if rest[..at].ends_with('$') {
            // `$${env:NAME}`: an escaped, literal `${env:NAME}`.
            out.push_str(&rest[..at - 1]);
            out.push_str("${env:");
            rest = &rest[at + 6..];
            continue;
        }
        out.push_str(&rest[..at]);
        let after = &rest[at + 6..];
        let end = after.find('}').ok_or_else(|| {
            ModuleError::invalid(
                origin.clone(),
                "unterminated ${env:NAME}: a '}' is missing".to_owned(),
            )
        })?;
        let name = &after[..end];
        let value = super::expr::env_value(name, origin, env)?;
        out.push_str(&value);
        used.push(value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok((out, used))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::module::tree::parse;

    fn node(text: &str, file: &str) -> Node {
        parse(text, &Arc::from(file)).unwrap()
    }

    fn merged(base: &str, overlay: &str) -> Result<serde_json::Value, ModuleError> {
        let mut base = node(base, "m.yaml");
        merge(&mut base, node(overlay, "v.yaml"), &mut Vec::new())?;
        Ok(base.to_json())
    }

    #[test]
    fn maps_merge_scalars_and_lists_replace_null_removes() {
        let result = merged(
            "a: {b: 1, c: [1, 2], d: x, e: keep}\nf: 1\n",
            "a: {b: 2, c: [3], d: {now: map}, e: null}\ng: new\n",
        )
        .unwrap();
        assert_eq!(
            result,
            json!({"a": {"b": 2, "c": [3], "d": {"now": "map"}}, "f": 1, "g": "new"})
        );
    }

    #[test]
    fn short_name_and_fqn_are_one_attachment_key() {
        let base =
            "components:\n  api:\n    traits:\n      opm.dev/traits/scaling@v1#Replicas: 1\n";
        let result = merged(base, "components: {api: {traits: {Replicas: 5}}}").unwrap();
        assert_eq!(
            result,
            json!({"components": {"api": {"traits": {"opm.dev/traits/scaling@v1#Replicas": 5}}}})
        );
        // Outside attachment sections keys are compared exactly.
        let result = merged(
            "metadata: {labels: {a.b/c@v1#X: 1}}",
            "metadata: {labels: {X: 2}}",
        )
        .unwrap();
        assert_eq!(
            result,
            json!({"metadata": {"labels": {"a.b/c@v1#X": 1, "X": 2}}})
        );
    }

    #[test]
    fn ambiguous_short_key_is_an_error() {
        let base = "components: {api: {traits: {a.io/x@v1#Expose: {}, b.io/x@v1#Expose: {}}}}";
        let error = merged(
            base,
            "components: {api: {traits: {Expose: {type: NodePort}}}}",
        )
        .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("could mean any of a.io/x@v1#Expose, b.io/x@v1#Expose"),
            "{error}"
        );
    }

    #[test]
    fn env_substitution_marks_values_sensitive() {
        let env = |name: &str| match name {
            "PASSWORD" => Some("hunter2".to_owned()),
            "HOST" => Some("db".to_owned()),
            _ => None,
        };
        let mut sensitive = BTreeSet::new();
        let mut values = node(
            "a: ${env:PASSWORD}\nb: postgres://${env:HOST}:5432\nc: $${env:HOST}\n",
            "v.yaml",
        );
        substitute_env(&mut values, &env, &mut sensitive).unwrap();
        assert_eq!(
            values.to_json(),
            json!({"a": "hunter2", "b": "postgres://db:5432", "c": "${env:HOST}"})
        );
        let sensitive: Vec<&str> = sensitive.iter().map(String::as_str).collect();
        assert_eq!(sensitive, ["db", "hunter2", "postgres://db:5432"]);
    }

    #[test]
    fn unset_env_is_an_error_with_location() {
        let mut values = node("x:\n  y: ${env:NOPE_NOT_SET}\n", "v.yaml");
        let error = substitute_env(&mut values, &|_| None, &mut BTreeSet::new()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "v.yaml:2:6: environment variable NOPE_NOT_SET is not set"
        );
        let mut values = node("x: ${env:1BAD}\n", "v.yaml");
        assert!(substitute_env(&mut values, &|_| None, &mut BTreeSet::new()).is_err());
        let mut values = node("x: ${env:OPEN\n", "v.yaml");
        assert!(
            substitute_env(&mut values, &|_| None, &mut BTreeSet::new())
                .unwrap_err()
                .to_string()
                .contains("unterminated")
        );
    }
}
