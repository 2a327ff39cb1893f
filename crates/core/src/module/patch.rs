//! Module patches (`docs/module-format.md#patches`): the module's top-level `patches`, a list of
//! changes the host makes to what the transformers rendered, each with a [`Target`] and either an
//! RFC 7386 merge patch or an RFC 6902 JSON Patch ([`Operation`]).
//!
//! ```yaml
//! patches:
//!   - target: {kind: Deployment, component: api}
//!     merge: {metadata: {annotations: {example.com/owner: team-a}}}
//!   - target: {kind: Service, component: api}
//!     when: ${config.sticky}
//!     jsonPatch:
//!       - {op: add, path: /spec/sessionAffinity, value: ClientIP}
//! ```
//!
//! This module reads them: a patch's `when` is a condition as a component's is, and the rest of
//! it is resolved as every string of the module is (`${config.x}`, CEL). Patches are the module
//! file's own: a values file or a `--set` that names `patches` is refused unless the module
//! feeds them through its `config`. Applying them is [`crate::render::patch`]'s.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::tree::{Entry, Node, Value};
use super::{ModuleError, Origin};

/// The top-level key of the module's patches.
pub(crate) const KEY: &str = "patches";

/// One entry of the module's `patches`.
#[derive(Clone, PartialEq)]
pub struct Patch {
    /// Its position in the module's `patches` list, from 0 (counting patches a condition left
    /// out), as errors and plans name it: `patches[1]`.
    pub index: usize,
    /// Where the entry is written.
    pub origin: Origin,
    /// What it applies to.
    pub target: Target,
    /// What it does. May hold secrets: never printed by `Debug`.
    pub operation: Operation,
}

impl fmt::Debug for Patch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Patch")
            .field("index", &self.index)
            .field("origin", &self.origin)
            .field("target", &self.target)
            .field("operation", &self.operation.summary())
            .finish()
    }
}

/// Which rendered objects a patch applies to: every one that has all that is given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Target {
    /// The platforms whose objects it patches (a provider's `core.opm.dev/format` label), one
    /// or a list of them — for providers that keep a kind's shape, as the Quadlet provider keeps
    /// a Kubernetes ConfigMap's: [`DEFAULT_PLATFORM`] unless given. A render for
    /// another platform leaves the patch out.
    #[serde(rename = "platform", skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<String>,
    /// The object's `kind`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The object's `metadata.name` as rendered (after any instance prefix).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The module component whose call rendered it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// Labels that must all be in its `metadata.labels` with these values.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// The platform a patch is written for unless its target says otherwise: patches name the kinds
/// and fields of one platform's objects, and modules patched Kubernetes objects before there
/// was a second platform.
pub const DEFAULT_PLATFORM: &str = "kubernetes";

impl Target {
    /// Whether it patches the objects of a render for `platform`.
    pub fn applies_to(&self, platform: &str) -> bool {
        if self.platforms.is_empty() {
            platform == DEFAULT_PLATFORM
        } else {
            self.platforms.iter().any(|p| p == platform)
        }
    }

    /// The platforms whose objects it patches, in words: `kubernetes`, `compose or quadlet`.
    pub fn platforms_text(&self) -> String {
        match self.platforms.split_last() {
            None => DEFAULT_PLATFORM.to_owned(),
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        }
    }
}

impl fmt::Display for Target {
    /// `kind Deployment, name api, component api, labels tier=web`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if !self.platforms.is_empty() {
            parts.push(format!("platform {}", self.platforms_text()));
        }
        if let Some(kind) = &self.kind {
            parts.push(format!("kind {kind}"));
        }
        if let Some(name) = &self.name {
            parts.push(format!("name {name}"));
        }
        if let Some(component) = &self.component {
            parts.push(format!("component {component}"));
        }
        if !self.labels.is_empty() {
            let labels: Vec<String> = self
                .labels
                .iter()
                .map(|(key, value)| format!("{key}={value}"))
                .collect();
            parts.push(format!("labels {}", labels.join(",")));
        }
        f.write_str(&parts.join(", "))
    }
}

/// What a patch does to each object it targets.
#[derive(Clone, PartialEq)]
pub enum Operation {
    /// An RFC 7386 merge patch: maps merge key by key, `null` removes a key, anything else
    /// replaces. Always a map.
    Merge(serde_json::Value),
    /// An RFC 6902 JSON Patch: operations applied in order, each where it is written.
    JsonPatch(Vec<JsonPatchOp>),
}

/// One operation of a JSON Patch.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPatchOp {
    /// The operation (its `value` may be secret).
    pub operation: json_patch::PatchOperation,
    /// Where it is written.
    pub origin: Origin,
}

impl JsonPatchOp {
    /// `add /spec/sessionAffinity`, `move /a -> /b`: the operation without its value.
    pub fn summary(&self) -> String {
        use json_patch::PatchOperation as Op;
        match &self.operation {
            Op::Add(op) => format!("add {}", op.path),
            Op::Remove(op) => format!("remove {}", op.path),
            Op::Replace(op) => format!("replace {}", op.path),
            Op::Move(op) => format!("move {} -> {}", op.from, op.path),
            Op::Copy(op) => format!("copy {} -> {}", op.from, op.path),
            Op::Test(op) => format!("test {}", op.path),
        }
    }
}

impl Operation {
    /// `merge`, or `jsonPatch` with its operations' summaries: what the patch does, without any
    /// value.
    pub fn summary(&self) -> String {
        match self {
            Self::Merge(_) => "merge".to_owned(),
            Self::JsonPatch(ops) => {
                let ops: Vec<String> = ops.iter().map(JsonPatchOp::summary).collect();
                format!("jsonPatch [{}]", ops.join("; "))
            }
        }
    }
}

impl fmt::Debug for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())
    }
}

/// A patch that a false `when` left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOutPatch {
    /// Its position in the module's `patches` list.
    pub index: usize,
    /// The condition, as written.
    pub condition: String,
    /// Where the condition is written.
    pub origin: Origin,
}

/// Evaluates each patch's `when`, removing the patches it leaves out (before anything in them is
/// resolved, so they may use parameters that are not set) and the conditions of the others.
/// Returns the original positions of the patches kept, and the ones left out.
pub(crate) fn apply_conditions(
    patches: &mut Node,
    scope: &mut super::expr::Scope,
) -> Result<(Vec<usize>, Vec<LeftOutPatch>), ModuleError> {
    let (mut kept, mut left_out) = (Vec::new(), Vec::new());
    let Value::List(items) = &mut patches.value else {
        return Ok((kept, left_out));
    };
    let mut kept_items = Vec::with_capacity(items.len());
    for (index, mut item) in std::mem::take(items).into_iter().enumerate() {
        match super::expr::take_condition(&mut item, "when", scope)? {
            Some(((condition, false), origin)) => left_out.push(LeftOutPatch {
                index,
                condition,
                origin,
            }),
            _ => {
                kept.push(index);
                kept_items.push(item);
            }
        }
    }
    *items = kept_items;
    Ok((kept, left_out))
}

/// Whether the patch entry `item` (as written, not yet checked) targets the kind `Secret`:
/// every string it writes is then sensitive.
pub(crate) fn targets_secrets(item: &Node) -> bool {
    let Value::Map(entries) = &item.value else {
        return false;
    };
    let target = entries.iter().find(|e| e.key == "target");
    let Some(Value::Map(target)) = target.map(|e| &e.value.value) else {
        return false;
    };
    target.iter().any(|e| {
        e.key == "kind" && matches!(&e.value.value, Value::String(kind) if kind == "Secret")
    })
}

/// What the patch entry `item` writes: its merge patch, or its operations' values.
pub(crate) fn written_values(item: &Node) -> Vec<serde_json::Value> {
    let Value::Map(entries) = &item.value else {
        return Vec::new();
    };
    let mut values = Vec::new();
    for entry in entries {
        match (entry.key.as_str(), &entry.value.value) {
            ("merge", _) => values.push(entry.value.to_json()),
            ("jsonPatch", Value::List(ops)) => {
                for op in ops {
                    if let Value::Map(fields) = &op.value
                        && let Some(value) = fields.iter().find(|f| f.key == "value")
                    {
                        values.push(value.value.to_json());
                    }
                }
            }
            _ => {}
        }
    }
    values
}

/// Reads the checked-for-nothing `patches` node: every problem goes to `problem`. `written`
/// gives each entry's place in the list as written, before conditions left some out (an entry
/// it does not cover keeps its place in `node`).
pub(crate) fn read(
    node: &Node,
    written: &[usize],
    problem: &mut dyn FnMut(&Origin, String),
) -> Vec<Patch> {
    let items = match &node.value {
        Value::Null => return Vec::new(),
        Value::List(items) => items,
        _ => {
            problem(
                &node.origin,
                format!("patches must be a list, not {}", node.describe()),
            );
            return Vec::new();
        }
    };
    items
        .iter()
        .enumerate()
        .filter_map(|(index, item)| {
            read_patch(written.get(index).copied().unwrap_or(index), item, problem)
        })
        .collect()
}

fn read_patch(
    index: usize,
    item: &Node,
    problem: &mut dyn FnMut(&Origin, String),
) -> Option<Patch> {
    let what = format!("patches[{index}]");
    let Value::Map(entries) = &item.value else {
        problem(
            &item.origin,
            format!(
                "{what} must be a map with `target` and `merge` or `jsonPatch`, not {}",
                item.describe()
            ),
        );
        return None;
    };
    let mut valid = true;
    for entry in entries {
        if !["target", "merge", "jsonPatch"].contains(&entry.key.as_str()) {
            problem(
                &entry.key_origin,
                format!(
                    "unknown field `{}` in {what}; expected one of: target, when, merge, jsonPatch",
                    entry.key
                ),
            );
            valid = false;
        }
    }
    let field = |key: &str| entries.iter().find(|e| e.key == key);
    let target = match field("target") {
        Some(entry) => read_target(&entry.value, &what, problem),
        None => {
            problem(
                &item.origin,
                format!(
                    "{what} has no `target`: say which objects it patches (kind, name, component, labels)"
                ),
            );
            None
        }
    };
    let operation = match (field("merge"), field("jsonPatch")) {
        (Some(_), Some(json_patch)) => {
            problem(
                &json_patch.key_origin,
                format!("{what} has both `merge` and `jsonPatch`; write one per patch"),
            );
            None
        }
        (None, None) => {
            problem(
                &item.origin,
                format!(
                    "{what} needs `merge` (a merge patch) or `jsonPatch` (a list of operations)"
                ),
            );
            None
        }
        (Some(merge), None) => match &merge.value.value {
            Value::Map(_) => Some(Operation::Merge(merge.value.to_json())),
            _ => {
                problem(
                    &merge.value.origin,
                    format!(
                        "{what}.merge must be a map (a merge patch of the object), not {}",
                        merge.value.describe()
                    ),
                );
                None
            }
        },
        (None, Some(ops)) => read_ops(&ops.value, &what, problem).map(Operation::JsonPatch),
    };
    match (valid, target, operation) {
        (true, Some(target), Some(operation)) => Some(Patch {
            index,
            origin: item.origin.clone(),
            target,
            operation,
        }),
        _ => None,
    }
}

fn read_target(
    node: &Node,
    what: &str,
    problem: &mut dyn FnMut(&Origin, String),
) -> Option<Target> {
    let Value::Map(entries) = &node.value else {
        problem(
            &node.origin,
            format!("{what}.target must be a map, not {}", node.describe()),
        );
        return None;
    };
    let mut target = Target::default();
    let mut valid = true;
    let text = |entry: &Entry, problem: &mut dyn FnMut(&Origin, String)| match &entry.value.value {
        Value::String(text) if !text.is_empty() => Some(text.clone()),
        _ => {
            problem(
                &entry.value.origin,
                format!(
                    "{what}.target.{} must be a non-empty string, not {}",
                    entry.key,
                    entry.value.describe()
                ),
            );
            None
        }
    };
    for entry in entries {
        match entry.key.as_str() {
            "platform" => match &entry.value.value {
                Value::List(items) if !items.is_empty() => {
                    for item in items {
                        match &item.value {
                            Value::String(text) if target.platforms.contains(text) => {
                                problem(
                                    &item.origin,
                                    format!("{what}.target.platform names {text} twice"),
                                );
                                valid = false;
                            }
                            Value::String(text) if !text.is_empty() => {
                                target.platforms.push(text.clone());
                            }
                            _ => {
                                problem(
                                    &item.origin,
                                    format!(
                                        "{what}.target.platform must list platforms, each a \
                                         non-empty string, not {}",
                                        item.describe()
                                    ),
                                );
                                valid = false;
                            }
                        }
                    }
                }
                Value::List(_) => {
                    problem(
                        &entry.value.origin,
                        format!("{what}.target.platform is an empty list: name a platform"),
                    );
                    valid = false;
                }
                _ => target.platforms.extend(text(entry, problem)),
            },
            "kind" => target.kind = text(entry, problem),
            "name" => target.name = text(entry, problem),
            "component" => target.component = text(entry, problem),
            "labels" => match &entry.value.value {
                Value::Map(labels) => {
                    for label in labels {
                        match &label.value.value {
                            Value::String(value) => {
                                target.labels.insert(label.key.clone(), value.clone());
                            }
                            _ => {
                                problem(
                                    &label.value.origin,
                                    format!(
                                        "{what}.target.labels `{}` must be a string, not {}; quote it",
                                        label.key,
                                        label.value.describe()
                                    ),
                                );
                                valid = false;
                            }
                        }
                    }
                }
                _ => {
                    problem(
                        &entry.value.origin,
                        format!(
                            "{what}.target.labels must be a map, not {}",
                            entry.value.describe()
                        ),
                    );
                    valid = false;
                }
            },
            other => {
                problem(
                    &entry.key_origin,
                    format!(
                        "unknown field `{other}` in {what}.target; expected one of: platform, kind, name, component, labels"
                    ),
                );
                valid = false;
            }
        }
    }
    let given = entries.len();
    let read = usize::from(!target.platforms.is_empty())
        + usize::from(target.kind.is_some())
        + usize::from(target.name.is_some())
        + usize::from(target.component.is_some())
        + usize::from(entries.iter().any(|e| e.key == "labels"));
    if given == usize::from(entries.iter().any(|e| e.key == "platform")) {
        problem(
            &node.origin,
            format!("{what}.target is empty: give at least one of kind, name, component, labels"),
        );
        return None;
    }
    if !valid || read < given {
        return None;
    }
    Some(target)
}

fn read_ops(
    node: &Node,
    what: &str,
    problem: &mut dyn FnMut(&Origin, String),
) -> Option<Vec<JsonPatchOp>> {
    let Value::List(items) = &node.value else {
        problem(
            &node.origin,
            format!(
                "{what}.jsonPatch must be a list of operations, not {}",
                node.describe()
            ),
        );
        return None;
    };
    if items.is_empty() {
        problem(&node.origin, format!("{what}.jsonPatch has no operations"));
        return None;
    }
    let mut ops = Vec::with_capacity(items.len());
    let mut valid = true;
    for (index, item) in items.iter().enumerate() {
        match serde_json::from_value::<json_patch::PatchOperation>(item.to_json()) {
            Ok(operation) => ops.push(JsonPatchOp {
                operation,
                origin: item.origin.clone(),
            }),
            Err(error) => {
                problem(
                    &item.origin,
                    format!(
                        "{what}.jsonPatch[{index}] is not a JSON Patch operation (op add, remove, \
                         replace, move, copy or test, with a path that starts with /): {error}"
                    ),
                );
                valid = false;
            }
        }
    }
    valid.then_some(ops)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::module::tree;

    fn read_text(text: &str) -> (Vec<Patch>, Vec<String>) {
        let node = tree::parse(text, &Arc::from("module.yaml")).unwrap();
        let mut problems = Vec::new();
        let patches = read(&node, &[], &mut |origin, message| {
            problems.push(format!("{origin}: {message}"));
        });
        (patches, problems)
    }

    #[test]
    fn a_merge_and_a_json_patch_are_read_with_their_targets() {
        let (patches, problems) = read_text(
            "- target: {kind: Deployment, name: api, component: api, labels: {tier: web}}\n  \
               merge: {metadata: {annotations: {a: b}}}\n\
             - target: {kind: Service}\n  \
               jsonPatch:\n  - {op: add, path: /spec/x, value: 1}\n  - {op: test, path: /a, value: 2}\n",
        );
        assert_eq!(problems, Vec::<String>::new());
        assert_eq!(patches.len(), 2);
        assert_eq!(
            patches[0].target.to_string(),
            "kind Deployment, name api, component api, labels tier=web"
        );
        assert_eq!(patches[0].origin.to_string(), "module.yaml:1:3");
        assert_eq!(patches[0].operation.summary(), "merge");
        assert_eq!(
            patches[1].operation.summary(),
            "jsonPatch [add /spec/x; test /a]"
        );
        let Operation::JsonPatch(ops) = &patches[1].operation else {
            panic!()
        };
        assert_eq!(ops[1].origin.line(), 6);
    }

    #[test]
    fn bad_patches_are_refused_where_they_are_written() {
        let (patches, problems) = read_text(
            "- merge: {a: 1}\n\
             - target: {}\n  merge: {a: 1}\n\
             - target: {kind: Service}\n\
             - target: {kind: Service}\n  merge: {a: 1}\n  jsonPatch: [{op: remove, path: /a}]\n\
             - target: {kind: Service, colour: red}\n  merge: 3\n\
             - target: {kind: Service}\n  jsonPatch: [{op: frobnicate, path: /a}, {op: add, path: a, value: 1}]\n",
        );
        assert!(patches.is_empty());
        let expected = [
            "module.yaml:1:3: patches[0] has no `target`",
            "module.yaml:2:11: patches[1].target is empty",
            "module.yaml:4:3: patches[2] needs `merge` (a merge patch) or `jsonPatch`",
            "module.yaml:7:3: patches[3] has both `merge` and `jsonPatch`",
            "module.yaml:8:27: unknown field `colour` in patches[4].target",
            "module.yaml:9:10: patches[4].merge must be a map",
            "module.yaml:11:15: patches[5].jsonPatch[0] is not a JSON Patch operation",
            "module.yaml:11:43: patches[5].jsonPatch[1] is not a JSON Patch operation",
        ];
        assert_eq!(problems.len(), expected.len(), "{problems:#?}");
        for (problem, expected) in problems.iter().zip(expected) {
            assert!(
                problem.starts_with(expected),
                "{problem}\nexpected {expected}"
            );
        }
    }

    /// A target names one platform or a list of them (issue 48: a patch for objects that keep
    /// their shape on several platforms, such as a ConfigMap's `data`, applies on each).
    #[test]
    fn a_target_names_one_platform_or_several() {
        let (patches, problems) = read_text(
            "- target: {kind: ConfigMap}\n  merge: {data: {a: null}}\n\
             - target: {platform: compose, kind: ConfigMap}\n  merge: {data: {a: null}}\n\
             - target: {platform: [kubernetes, quadlet], kind: ConfigMap}\n  merge: {data: {a: null}}\n",
        );
        assert_eq!(problems, Vec::<String>::new());
        let applies: Vec<Vec<bool>> = patches
            .iter()
            .map(|patch| {
                ["kubernetes", "compose", "quadlet"]
                    .map(|platform| patch.target.applies_to(platform))
                    .to_vec()
            })
            .collect();
        assert_eq!(
            applies,
            [
                [true, false, false],
                [false, true, false],
                [true, false, true]
            ]
        );
        assert_eq!(patches[0].target.platforms_text(), "kubernetes");
        assert_eq!(patches[2].target.platforms_text(), "kubernetes or quadlet");
        assert_eq!(
            patches[2].target.to_string(),
            "platform kubernetes or quadlet, kind ConfigMap"
        );
        let (patches, problems) = read_text(
            "- target: {platform: [], kind: ConfigMap}\n  merge: {a: 1}\n\
             - target: {platform: [compose, compose], kind: ConfigMap}\n  merge: {a: 1}\n\
             - target: {platform: [compose, 3], kind: ConfigMap}\n  merge: {a: 1}\n",
        );
        assert!(patches.is_empty());
        assert_eq!(
            problems,
            [
                "module.yaml:1:22: patches[0].target.platform is an empty list: name a platform",
                "module.yaml:3:32: patches[1].target.platform names compose twice",
                "module.yaml:5:32: patches[2].target.platform must list platforms, each a non-empty string, not a number",
            ]
        );
    }

    #[test]
    fn debug_never_shows_what_a_patch_writes() {
        let (patches, _) = read_text(
            "- target: {kind: Secret}\n  merge: {stringData: {password: hunter2-hunter2}}\n\
             - target: {kind: Secret}\n  jsonPatch: [{op: add, path: /data/x, value: hunter2-hunter2}]\n",
        );
        let debug = format!("{patches:?}");
        assert!(!debug.contains("hunter2"), "{debug}");
        assert!(debug.contains("add /data/x"), "{debug}");
    }
}
