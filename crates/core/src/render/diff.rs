//! Comparing two sets of rendered resources, as `opm mod diff` does (`docs/cli.md`): resources
//! paired by identity (API group, kind, namespace, name) and compared as values, so key order
//! and YAML style do not count; each changed one shown as a unified diff of its YAML (keys
//! sorted); and, before anything is shown, sensitive values masked.
//!
//! Masking, since diffs are what gets pasted into pull requests: each value of a Secret's
//! `data` and `stringData`, and every string anywhere in any resource that holds a sensitive
//! value of the module (in any form the [`Redactor`] knows), reads `[redacted]`, or
//! `[redacted: value before]` and `[redacted: value after]` when the two sides differ there —
//! so a reviewer sees what changed and never the values (helm-diff's habit). The old side's
//! string at the same place is masked with the new one's (an item of a list of named objects,
//! such as `env` or `containers`, is found by its `name`), so a rotated token shows neither its
//! old nor its new value.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::identity::Identity;
use crate::json::sorted;
use crate::redact::Redactor;

/// The resources of the documents in `texts` (each a name and a stream of YAML or JSON
/// documents), a `List` standing for its items. A document that is not a manifest (a
/// `compose.yaml`) stands for itself, as a `File` named after its file.
pub fn manifests(texts: Vec<(String, String)>) -> anyhow::Result<Vec<Value>> {
    let mut resources = Vec::new();
    for (name, text) in texts {
        let documents: Vec<Value> = serde_saphyr::from_multiple(&text)
            .map_err(|e| anyhow::anyhow!("{name}: not YAML or JSON manifests: {e}"))?;
        for document in documents {
            match document {
                Value::Null => {}
                Value::Object(ref map) if map.get("kind") == Some(&Value::from("List")) => {
                    let items = map.get("items").and_then(Value::as_array);
                    resources.extend(items.into_iter().flatten().cloned());
                }
                Value::Object(ref map) if map.get("kind").is_some_and(Value::is_string) => {
                    resources.push(document)
                }
                Value::Object(_) => {
                    let file = Path::new(&name)
                        .file_name()
                        .map_or(name.clone(), |n| n.to_string_lossy().into_owned());
                    resources.push(serde_json::json!({
                        "kind": "File",
                        "metadata": {"name": file},
                        "content": document,
                    }));
                }
                other => anyhow::bail!("{name}: a document is not a manifest but {other}"),
            }
        }
    }
    Ok(resources)
}

/// What differs between two sets of resources.
#[derive(Debug, Default)]
pub struct Changes {
    /// Present on both sides with different values: identity, old, new.
    pub changed: Vec<(Identity, Value, Value)>,
    /// Only in the new render.
    pub added: Vec<Identity>,
    /// Only in the old set.
    pub removed: Vec<Identity>,
}

/// Pairs `old` and `new` by identity and compares each pair as values; with a redactor to
/// `mask` by, Secret data and every string holding a sensitive value are masked first.
pub fn compare(old: &[Value], new: &[Value], mask: Option<&Redactor>) -> Changes {
    let by_identity = |resources: &[Value]| -> BTreeMap<Identity, Value> {
        resources
            .iter()
            .map(|value| (Identity::of(value, ""), value.clone()))
            .collect()
    };
    let (old, new) = (by_identity(old), by_identity(new));
    let mut changes = Changes::default();
    for (identity, new_value) in &new {
        match old.get(identity) {
            None => changes.added.push(identity.clone()),
            Some(old_value) if old_value != new_value => {
                let (mut old_value, mut new_value) = (old_value.clone(), new_value.clone());
                if let Some(redactor) = mask {
                    // What `mod diff` compares are manifests as `--split` writes them: a
                    // core-group Secret's data is what it masks.
                    if identity.group.is_empty() && identity.kind == "Secret" {
                        mask_secret_data(&mut old_value, &mut new_value);
                    }
                    mask_sensitive(&mut old_value, &mut new_value, redactor);
                }
                changes
                    .changed
                    .push((identity.clone(), old_value, new_value));
            }
            Some(_) => {}
        }
    }
    changes.removed = old
        .keys()
        .filter(|identity| !new.contains_key(identity))
        .cloned()
        .collect();
    changes
}

/// Replaces each value of the Secrets' `data` and `stringData` by `[redacted]`, or, when the
/// two sides differ, by `[redacted: value before]` and `[redacted: value after]`.
fn mask_secret_data(old: &mut Value, new: &mut Value) {
    for field in ["data", "stringData"] {
        let before = old.get(field).and_then(Value::as_object).cloned();
        let after = new.get(field).and_then(Value::as_object).cloned();
        mask(old, field, &before, &after, "[redacted: value before]");
        mask(new, field, &after, &before, "[redacted: value after]");
    }
}

/// Masks every value of `side`'s `field`, with `changed` for those `other` has differently.
fn mask(
    side: &mut Value,
    field: &str,
    this: &Option<Map<String, Value>>,
    other: &Option<Map<String, Value>>,
    changed: &str,
) {
    let Some(map) = side.get_mut(field).and_then(Value::as_object_mut) else {
        return;
    };
    for (key, value) in map.iter_mut() {
        let theirs = other.as_ref().and_then(|m| m.get(key));
        let differs = theirs.is_some() && this.as_ref().and_then(|m| m.get(key)) != theirs;
        *value = Value::from(if differs { changed } else { "[redacted]" });
    }
}

/// One step into a resource: a key, an item of a list found by its `name`, or by position.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Key(String),
    Named(String),
    Index(usize),
}

/// Masks, on both sides, every string that holds a sensitive value on either side, and the
/// string at the same place on the other side.
fn mask_sensitive(old: &mut Value, new: &mut Value, redactor: &Redactor) {
    let mut places = std::collections::BTreeSet::new();
    for side in [&*old, &*new] {
        sensitive_places(side, &mut Vec::new(), redactor, &mut places);
    }
    for place in places {
        let before = step_into(old, &place).and_then(|v| v.as_str().map(str::to_owned));
        let after = step_into(new, &place).and_then(|v| v.as_str().map(str::to_owned));
        let differs = before.is_some() && after.is_some() && before != after;
        for (side, label) in [
            (&mut *old, "[redacted: value before]"),
            (&mut *new, "[redacted: value after]"),
        ] {
            if let Some(value @ Value::String(_)) = step_into(side, &place) {
                *value = Value::from(if differs { label } else { "[redacted]" });
            }
        }
    }
}

/// Adds to `places` the place of every string under `value` (at `path`) that the redactor
/// would change.
fn sensitive_places(
    value: &Value,
    path: &mut Vec<Step>,
    redactor: &Redactor,
    places: &mut std::collections::BTreeSet<Vec<Step>>,
) {
    match value {
        Value::String(text) if redactor.redact(text) != text.as_str() => {
            places.insert(path.clone());
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push(match item.get("name").and_then(Value::as_str) {
                    Some(name) => Step::Named(name.to_owned()),
                    None => Step::Index(index),
                });
                sensitive_places(item, path, redactor, places);
                path.pop();
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                path.push(Step::Key(key.clone()));
                sensitive_places(item, path, redactor, places);
                path.pop();
            }
        }
        _ => {}
    }
}

/// The value at `place` under `value`, if there is one.
fn step_into<'a>(value: &'a mut Value, place: &[Step]) -> Option<&'a mut Value> {
    place
        .iter()
        .try_fold(value, |value, step| match (step, value) {
            (Step::Key(key), Value::Object(map)) => map.get_mut(key),
            (Step::Named(name), Value::Array(items)) => items
                .iter_mut()
                .find(|item| item.get("name").and_then(Value::as_str) == Some(name)),
            (Step::Index(index), Value::Array(items)) => items.get_mut(*index),
            _ => None,
        })
}

/// ANSI red.
pub const RED: &str = "\x1b[31m";
/// ANSI green.
pub const GREEN: &str = "\x1b[32m";
/// ANSI cyan.
pub const CYAN: &str = "\x1b[36m";
/// ANSI bold.
pub const BOLD: &str = "\x1b[1m";

/// `text` in `colour` when `colors`, as one line.
pub fn paint(text: &str, colour: &str, colors: bool) -> String {
    if colors {
        format!("{colour}{}\x1b[0m\n", text.trim_end_matches('\n'))
    } else {
        text.to_owned()
    }
}

/// A unified diff of the YAML of `old` and `new` (keys sorted), headed by the identity.
pub fn unified(
    identity: &Identity,
    old: &Value,
    new: &Value,
    old_name: &str,
    new_name: &str,
    colors: bool,
) -> String {
    let yaml =
        |value: &Value| super::write::yaml(&sorted(value)).unwrap_or_else(|e| format!("# {e}\n"));
    let (old_text, new_text) = (yaml(old), yaml(new));
    let diff = similar::TextDiff::from_lines(&old_text, &new_text);
    let body = diff
        .unified_diff()
        .context_radius(3)
        .header(
            &format!("{identity} ({old_name})"),
            &format!("{identity} ({new_name})"),
        )
        .to_string();
    if !colors {
        return body;
    }
    body.lines()
        .map(|line| {
            let colour = if line.starts_with("+++") || line.starts_with("---") {
                BOLD
            } else if line.starts_with('+') {
                GREEN
            } else if line.starts_with('-') {
                RED
            } else if line.starts_with("@@") {
                CYAN
            } else {
                return format!("{line}\n");
            };
            paint(line, colour, true)
        })
        .collect()
}

/// What differs, as `opm mod diff` prints it: a unified diff of each changed object
/// ([`unified`]), then a line `added: IDENTITY` or `removed: IDENTITY` for each of the others.
pub fn changes_text(changes: &Changes, old_name: &str, new_name: &str, colors: bool) -> String {
    let mut text = String::new();
    for (identity, old, new) in &changes.changed {
        text.push_str(&unified(identity, old, new, old_name, new_name, colors));
    }
    for (label, identities, colour) in [
        ("added", &changes.added, GREEN),
        ("removed", &changes.removed, RED),
    ] {
        for identity in identities {
            text.push_str(&paint(&format!("{label}: {identity}\n"), colour, colors));
        }
    }
    text
}

/// A warning for each stateful object (a claim, and a StatefulSet, whose claims Kubernetes
/// names after it) the new render would remove — under a new name, when it
/// adds one of the kind in the namespace (as a migration from a chart renames a claim
/// `grafana` to `grafana-grafana`) — since applying it starts on empty volumes.
pub fn data_not_moved(changes: &Changes) -> Vec<String> {
    changes
        .removed
        .iter()
        .filter(|old| {
            old.group.is_empty() && old.kind == "PersistentVolumeClaim"
                || old.group == "apps" && old.kind == "StatefulSet"
        })
        .map(|old| {
            let renamed: Vec<&str> = changes
                .added
                .iter()
                .filter(|new| {
                    new.kind == old.kind && new.group == old.group && new.namespace == old.namespace
                })
                .map(|new| new.name.as_str())
                .collect();
            let what = if old.kind == "StatefulSet" {
                "its pods' claims, named after it, are not moved"
            } else {
                "its data is not moved"
            };
            let pin = "pin the name (PersistentStorage claimName, or the instance) to keep it";
            match renamed.as_slice() {
                [] => format!("{old} would be removed: {what}; {pin}"),
                names => format!(
                    "{old} would be replaced by {} {}: {what}; {pin}",
                    old.kind,
                    names
                        .iter()
                        .map(|name| format!("{}/{name}", old.namespace))
                        .collect::<Vec<_>>()
                        .join(" or ")
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn secret(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"},
               "stringData": data})
    }

    #[test]
    fn values_are_compared_not_their_key_order() {
        let a = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                       "data": {"a": "1", "b": "2"}});
        let b = json!({"data": {"b": "2", "a": "1"}, "kind": "ConfigMap",
                       "metadata": {"name": "c"}, "apiVersion": "v1"});
        let changes = compare(&[a], &[b], Some(&Redactor::default()));
        assert!(
            changes.changed.is_empty() && changes.added.is_empty() && changes.removed.is_empty()
        );
    }

    #[test]
    fn secret_values_are_masked_but_which_changed_is_shown() {
        let changes = compare(
            &[secret(
                json!({"same": "keep", "pw": "old-secret", "gone": "x"}),
            )],
            &[secret(
                json!({"same": "keep", "pw": "new-secret", "new": "y"}),
            )],
            Some(&Redactor::default()),
        );
        let (_, old, new) = &changes.changed[0];
        assert_eq!(
            old["stringData"],
            json!({"same": "[redacted]", "pw": "[redacted: value before]", "gone": "[redacted]"})
        );
        assert_eq!(
            new["stringData"],
            json!({"same": "[redacted]", "pw": "[redacted: value after]", "new": "[redacted]"})
        );
        let text = unified(&changes.changed[0].0, old, new, "a", "b", false);
        assert!(
            !text.contains("old-secret") && !text.contains("new-secret"),
            "{text}"
        );
        assert!(
            text.contains("\n-  pw: \"[redacted: value before]\"\n")
                && text.contains("\n+  pw: \"[redacted: value after]\"\n"),
            "{text}"
        );
    }

    #[test]
    fn an_env_value_in_any_field_is_masked_and_its_old_value_with_it() {
        let deployment = |token: &str, extra_env: bool| {
            let mut env = vec![json!({"name": "API_TOKEN", "value": token})];
            if extra_env {
                env.insert(0, json!({"name": "MODE", "value": "fast"}));
            }
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api",
                   "annotations": {"auth": format!("Bearer {token}")}},
                   "spec": {"template": {"spec": {"containers": [
                       {"name": "api", "image": "api:1", "env": env}]}}}})
        };
        let redactor = Redactor::new(["new-token-value".to_owned()]);
        let changes = compare(
            &[deployment("old-token-value", false)],
            &[deployment("new-token-value", true)],
            Some(&redactor),
        );
        let (identity, old, new) = &changes.changed[0];
        let text = unified(identity, old, new, "a", "b", false);
        assert!(
            !text.contains("old-token-value") && !text.contains("new-token-value"),
            "{text}"
        );
        assert!(
            text.contains("[redacted: value before]") && text.contains("[redacted: value after]"),
            "{text}"
        );
        assert!(
            text.contains("MODE"),
            "what is not sensitive still shows: {text}"
        );
    }
}
