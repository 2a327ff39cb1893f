//! Which catalog fields a transformer reads, found by running it: its output is compared, call
//! by call, with what it returns when one field of its input is changed or removed.
//!
//! A [`Probe`] is one call an example's render made: the transformer, the exact input and
//! context, the limits. For every leaf value under `spec` of the input (a string, number,
//! boolean, null, or an empty map or list), [`measure`] runs the call again with that one value
//! changed (a string gets a suffix, a number one more, a boolean the other one) and, if that
//! changes nothing, with it removed. Where the result — the resources, or the error, and every
//! log line — differs from the call with the input unchanged, the transformer **reads** that
//! field: its output depends on it. A field the examples gave it whose change and removal both
//! left the result as it was is **given, not read**. A field no example gave a transformer is not
//! in its table: nothing can be said of it.
//!
//! Fields are named by definition FQN and a path in its value as its schema spells it: a key
//! the schema declares by name, `*` for a key of the user's (a port's name, a variable's), `[]`
//! for a list's items (`ports.*.containerPort`, `env[].name`). Every run compares the
//! transformer's output with its output for the very input re-serialized unchanged (a
//! transformer that keeps the order of a map's keys sees one order in both), and runs under the
//! call's own limits; a transformer that draws random numbers (seeded by its input) reads every
//! field by this measure. At most [`INSTANCES`] values of one path are tried per call, and a path
//! found read by one call is not tried again by others: the result is the same, sooner.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;

use opm_core::calls::{CallOutcome, LogLevel};
use opm_core::definitions::{DefinitionSpec, default_field};
use opm_core::redact::Redactor;
use opm_sandbox::{Context, Limits, Sandbox};

use crate::render::Transformers;

/// The most values of one field path tried in one call (the variables of a long `env` are one
/// path, `env.*.value`).
pub const INSTANCES: usize = 3;

/// One call of an example's render, to be run again with its input changed.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The transformer's FQN.
    pub transformer: String,
    /// Its input, as the plan made it.
    pub input: String,
    /// Its context.
    pub context: Context,
    /// Its limits.
    pub limits: Limits,
    /// The redactor of the module it came from, for what the guest says.
    pub redactor: Arc<Redactor>,
}

/// What each transformer reads, by FQN.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Coverage {
    /// Per transformer FQN: its calls and fields.
    pub transformers: BTreeMap<String, TransformerCoverage>,
}

/// What one transformer was given by the examples, and what of it it reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TransformerCoverage {
    /// The calls of the examples' renders that ran it and succeeded.
    pub calls: usize,
    /// Per definition FQN, per field path: whether its output depends on it. Of a definition
    /// the transformer does not name among its required or optional ones, only when it reads
    /// one of its fields.
    pub fields: BTreeMap<String, BTreeMap<String, bool>>,
    /// The fields of definitions it does not name that it was given and reads none of: left
    /// out of `fields`.
    pub others_unread: usize,
}

impl Coverage {
    /// Leaves out of each transformer's fields the definitions it does not name (`declared`,
    /// by transformer) and reads nothing of: every transformer of a component is given the
    /// whole component, and what it was never meant to read says nothing of it.
    pub fn keep_declared(&mut self, declared: &BTreeMap<String, BTreeSet<String>>) {
        for (transformer, entry) in &mut self.transformers {
            let names = declared.get(transformer);
            entry.fields.retain(|fqn, fields| {
                let keep = names.is_some_and(|names| names.contains(fqn))
                    || fields.values().any(|read| *read);
                if !keep {
                    entry.others_unread += fields.len();
                }
                keep
            });
        }
    }
}

/// One leaf value of a probe's input: where it is, and what it is called.
#[derive(Debug, Clone)]
struct Leaf {
    fqn: String,
    path: String,
    pointer: Vec<Step>,
}

/// One step from the input's root to a value.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// The result of a call as compared: resources or error, and the log lines.
#[derive(Debug, PartialEq, Eq)]
struct Verdict {
    result: Result<Vec<String>, String>,
    logs: Vec<(LogLevel, String)>,
}

impl Verdict {
    fn of(outcome: CallOutcome) -> Self {
        Self {
            result: outcome.result.map_err(|error| error.to_string()),
            logs: outcome
                .logs
                .into_iter()
                .map(|line| (line.level, line.message))
                .collect(),
        }
    }
}

/// Runs `probes` again with each field of their input changed and removed, on the current rayon
/// pool, in `sandbox` with the compiled `transformers`; `definitions` are the provider's, whose
/// fields and schemas name the paths. `called` are every transformer of the provider, so that
/// one no example ran is listed with no calls.
pub fn measure(
    sandbox: &Sandbox,
    transformers: &Transformers,
    definitions: &BTreeMap<String, DefinitionSpec>,
    called: impl IntoIterator<Item = String>,
    probes: &[Probe],
) -> Coverage {
    let mut coverage = Coverage::default();
    for transformer in called {
        coverage.transformers.entry(transformer).or_default();
    }
    // Each probe once: two components of one shape make the same call.
    let mut seen = BTreeSet::new();
    let probes: Vec<(&Probe, Value, Vec<Leaf>)> = probes
        .iter()
        .filter(|probe| seen.insert((&probe.transformer, &probe.input)))
        .filter_map(|probe| {
            let input: Value = serde_json::from_str(&probe.input).ok()?;
            let leaves = leaves(&input, definitions);
            Some((probe, input, leaves))
        })
        .collect();
    for (probe, _, leaves) in &probes {
        let entry = coverage
            .transformers
            .entry(probe.transformer.clone())
            .or_default();
        entry.calls += 1;
        for leaf in leaves {
            entry
                .fields
                .entry(leaf.fqn.clone())
                .or_default()
                .insert(leaf.path.clone(), false);
        }
    }
    let read: Mutex<BTreeSet<(String, String, String)>> = Mutex::new(BTreeSet::new());
    let run = |probe: &Probe, input: &Value| -> Option<Verdict> {
        let Some(Ok(compiled)) = transformers.get(&probe.transformer) else {
            return None;
        };
        let text = serde_json::to_string(input).expect("a JSON value serializes");
        Some(Verdict::of(sandbox.call_redacting(
            compiled,
            &text,
            probe.context.clone(),
            &probe.limits,
            &probe.redactor,
        )))
    };
    let baselines: Vec<Option<Verdict>> = probes
        .par_iter()
        .with_max_len(1)
        .map(|(probe, input, _)| run(probe, input))
        .collect();
    let work: Vec<(usize, &Leaf)> = probes
        .iter()
        .enumerate()
        .flat_map(|(index, (_, _, leaves))| leaves.iter().map(move |leaf| (index, leaf)))
        .collect();
    work.par_iter().with_max_len(1).for_each(|(index, leaf)| {
        let (probe, input, _) = &probes[*index];
        let Some(baseline) = &baselines[*index] else {
            return;
        };
        let key = (
            probe.transformer.clone(),
            leaf.fqn.clone(),
            leaf.path.clone(),
        );
        if read.lock().expect("not poisoned").contains(&key) {
            return;
        }
        let depends = variants(input, &leaf.pointer)
            .iter()
            .any(|variant| run(probe, variant).as_ref() != Some(baseline));
        if depends {
            read.lock().expect("not poisoned").insert(key);
        }
    });
    for (transformer, fqn, path) in read.into_inner().expect("not poisoned") {
        if let Some(fields) = coverage
            .transformers
            .get_mut(&transformer)
            .and_then(|entry| entry.fields.get_mut(&fqn))
        {
            fields.insert(path, true);
        }
    }
    coverage
}

/// Every leaf under `spec` of `input`, at most [`INSTANCES`] of one path, each named by the
/// definition attached under its field.
fn leaves(input: &Value, definitions: &BTreeMap<String, DefinitionSpec>) -> Vec<Leaf> {
    let mut out = Vec::new();
    for section in ["resources", "traits", "policies"] {
        let Some(fqns) = input.get(section).and_then(Value::as_array) else {
            continue;
        };
        for fqn in fqns.iter().filter_map(Value::as_str) {
            let spec = definitions.get(fqn);
            let field = spec
                .and_then(|spec| spec.field.clone())
                .unwrap_or_else(|| default_field(fqn.rsplit('#').next().unwrap_or(fqn)));
            let Some(value) = input.get("spec").and_then(|spec| spec.get(&field)) else {
                continue;
            };
            let mut found = Vec::new();
            let mut walk = Walk {
                fqn,
                pointer: vec![Step::Key("spec".into()), Step::Key(field)],
                path: Vec::new(),
                out: &mut found,
            };
            walk.value(value, spec.and_then(|spec| spec.schema.as_ref()));
            // By path, each path's values in the order written.
            found.sort_by(|a, b| a.path.cmp(&b.path));
            let mut counts: BTreeMap<String, usize> = BTreeMap::new();
            out.extend(found.into_iter().filter(|leaf| {
                let count = counts.entry(leaf.path.clone()).or_default();
                *count += 1;
                *count <= INSTANCES
            }));
        }
    }
    out
}

/// A walk of one definition's value beside its schema.
struct Walk<'a> {
    fqn: &'a str,
    pointer: Vec<Step>,
    path: Vec<String>,
    out: &'a mut Vec<Leaf>,
}

impl Walk<'_> {
    fn value(&mut self, value: &Value, schema: Option<&Value>) {
        match value {
            Value::Object(map) if !map.is_empty() => {
                for (key, child) in map {
                    let (named, sub) = property(schema, key);
                    self.pointer.push(Step::Key(key.clone()));
                    self.path.push(if named { key.clone() } else { "*".into() });
                    self.value(child, sub);
                    self.path.pop();
                    self.pointer.pop();
                }
            }
            Value::Array(items) if !items.is_empty() => {
                let sub = schema.and_then(|schema| {
                    branches(schema)
                        .into_iter()
                        .find_map(|branch| branch.get("items").filter(|v| v.is_object()))
                });
                let had = self.path.pop();
                self.path
                    .push(format!("{}[]", had.clone().unwrap_or_default()));
                for (index, child) in items.iter().enumerate() {
                    self.pointer.push(Step::Index(index));
                    self.value(child, sub);
                    self.pointer.pop();
                }
                self.path.pop();
                self.path.extend(had);
            }
            _ => self.out.push(Leaf {
                fqn: self.fqn.to_owned(),
                path: self
                    .path
                    .iter()
                    .filter(|segment| !segment.is_empty())
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("."),
                pointer: self.pointer.clone(),
            }),
        }
    }
}

/// `schema` and, recursively, the members of its `allOf`, `anyOf` and `oneOf`.
fn branches(schema: &Value) -> Vec<&Value> {
    let mut out = vec![schema];
    for combinator in ["allOf", "anyOf", "oneOf"] {
        if let Some(members) = schema.get(combinator).and_then(Value::as_array) {
            out.extend(members.iter().flat_map(branches));
        }
    }
    out
}

/// Whether `key` of an object under `schema` is a name the schema declares (else a key of the
/// user's, `*`), and the schema of its value.
fn property<'a>(schema: Option<&'a Value>, key: &str) -> (bool, Option<&'a Value>) {
    let Some(schema) = schema else {
        return (true, None);
    };
    let branches = branches(schema);
    if let Some(sub) = branches
        .iter()
        .find_map(|branch| branch.get("properties").and_then(|p| p.get(key)))
    {
        return (true, Some(sub));
    }
    for branch in &branches {
        if let Some(sub) = branch.get("additionalProperties").filter(|v| v.is_object()) {
            return (false, Some(sub));
        }
        if let Some(sub) = branch
            .get("patternProperties")
            .and_then(Value::as_object)
            .and_then(|patterns| patterns.values().next())
        {
            return (false, Some(sub));
        }
        if branch.get("propertyNames").is_some()
            || branch.get("additionalProperties") == Some(&Value::Bool(true))
        {
            return (false, None);
        }
    }
    (true, None)
}

/// `input` with the value at `pointer` changed (where it can be), then removed.
fn variants(input: &Value, pointer: &[Step]) -> Vec<Value> {
    let mut out = Vec::with_capacity(2);
    let mut changed = input.clone();
    if let Some(value) = at(&mut changed, pointer) {
        let new = match value {
            Value::String(text) => Some(Value::String(format!("{text}-opm-check"))),
            Value::Bool(flag) => Some(Value::Bool(!*flag)),
            Value::Number(number) => number
                .as_i64()
                .and_then(|n| n.checked_add(1))
                .map(Value::from)
                .or_else(|| number.as_f64().map(|n| Value::from(n + 1.0))),
            _ => None,
        };
        if let Some(new) = new {
            *value = new;
            out.push(changed);
        }
    }
    let mut removed = input.clone();
    if let Some((last, parent)) = pointer.split_last()
        && let Some(parent) = at(&mut removed, parent)
    {
        match (parent, last) {
            (Value::Object(map), Step::Key(key)) => {
                map.remove(key);
            }
            (Value::Array(items), Step::Index(index)) if *index < items.len() => {
                items.remove(*index);
            }
            _ => {}
        }
        out.push(removed);
    }
    out
}

/// The value at `pointer` in `value`.
fn at<'a>(value: &'a mut Value, pointer: &[Step]) -> Option<&'a mut Value> {
    pointer.iter().try_fold(value, |value, step| match step {
        Step::Key(key) => value.get_mut(key.as_str()),
        Step::Index(index) => value.get_mut(*index),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn definitions() -> BTreeMap<String, DefinitionSpec> {
        let container: DefinitionSpec = serde_json::from_value(json!({
            "kind": "Resource",
            "schema": {"type": "object", "properties": {
                "image": {"type": "string"},
                "ports": {"type": "object", "additionalProperties": {
                    "type": "object", "properties": {"containerPort": {"type": "integer"}}}},
                "env": {"oneOf": [
                    {"type": "object", "additionalProperties": {"type": "object"}},
                    {"type": "array", "items": {"type": "object", "properties": {"name": {}, "value": {}}}}
                ]}
            }}
        }))
        .unwrap();
        let replicas: DefinitionSpec =
            serde_json::from_value(json!({"kind": "Trait", "schema": {"type": "integer"}}))
                .unwrap();
        BTreeMap::from([
            (
                "opm.dev/resources/workload@v1#Container".to_owned(),
                container,
            ),
            ("opm.dev/traits/scaling@v1#Replicas".to_owned(), replicas),
        ])
    }

    /// Paths are named as the schema spells them: declared keys by name, the user's keys `*`,
    /// list items `[]`, a scalar definition by nothing; one path at most `INSTANCES` times.
    #[test]
    fn leaves_are_named_by_the_schema() {
        let input = json!({
            "resources": ["opm.dev/resources/workload@v1#Container"],
            "traits": ["opm.dev/traits/scaling@v1#Replicas"],
            "spec": {
                "container": {"image": "nginx", "ports": {"http": {"containerPort": 80}},
                              "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"},
                                      {"name": "C", "value": "3"}, {"name": "D", "value": "4"}]},
                "replicas": 2
            }
        });
        let leaves = leaves(&input, &definitions());
        let paths: Vec<(&str, &str)> = leaves
            .iter()
            .map(|leaf| (leaf.fqn.rsplit('#').next().unwrap(), leaf.path.as_str()))
            .collect();
        assert_eq!(
            paths,
            [
                ("Container", "env[].name"),
                ("Container", "env[].name"),
                ("Container", "env[].name"),
                ("Container", "env[].value"),
                ("Container", "env[].value"),
                ("Container", "env[].value"),
                ("Container", "image"),
                ("Container", "ports.*.containerPort"),
                ("Replicas", ""),
            ]
        );
    }

    /// A value is changed by its type, then removed.
    #[test]
    fn each_leaf_is_changed_then_removed() {
        let input = json!({"spec": {"a": {"n": 1, "s": "x", "b": true, "z": null}}});
        let step = |k: &str| Step::Key(k.to_owned());
        let at = |key: &str| [step("spec"), step("a"), step(key)];
        assert_eq!(
            variants(&input, &at("n")),
            [
                json!({"spec": {"a": {"n": 2, "s": "x", "b": true, "z": null}}}),
                json!({"spec": {"a": {"s": "x", "b": true, "z": null}}}),
            ]
        );
        assert_eq!(
            variants(&input, &at("s"))[0]["spec"]["a"]["s"],
            "x-opm-check"
        );
        assert_eq!(variants(&input, &at("b"))[0]["spec"]["a"]["b"], false);
        assert_eq!(
            variants(&input, &at("z")),
            [json!({"spec": {"a": {"n": 1, "s": "x", "b": true}}})]
        );
    }
}
