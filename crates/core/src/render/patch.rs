//! Applying the module's patches (`docs/module-format.md#patches`) to what the transformers
//! rendered: after every call has run and before the checksum references are resolved and
//! duplicates searched for, so that what a patch makes of an object passes the same checks as
//! what a transformer returns (`docs/rendering.md#patches`).
//!
//! Patches apply in module order, each to every object it targets in render order (the order of
//! the plan's calls, each call's objects in the order it returned them); a later patch sees what
//! an earlier one made. An object a patch
//! targets is parsed once, when first needed, and written back once at the end; a render whose
//! module has no patches never comes here.
//!
//! A patch fails — and with it the render — when it matches nothing (unless a component it could
//! touch did not render completely, which is reported already), when an operation of its JSON
//! Patch cannot be applied, when it leaves an object that is not a resource ([`check_value`]),
//! or when it changes a tracking label the host sets. No message quotes what an object or a
//! patch holds, only paths: the object may be a Secret.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{RenderContext, Resource, check_value, identity};
use crate::matching::PlanPatch;
use crate::module::patch::{JsonPatchOp, Operation, Target};
use crate::origin::Origin;

/// What one patch did, for `--verbose`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchReport {
    /// Its position in the module's `patches`.
    pub index: usize,
    /// Where it is written.
    pub at: Origin,
    /// Its target, in words (`kind Deployment, component api`).
    pub target: String,
    /// What it does, without values (`merge`, `jsonPatch [add /spec/x]`).
    pub operation: String,
    /// The objects it changed, in render order (`apps/Deployment shop/api`), each with its new
    /// identity when the patch renamed it.
    pub changed: Vec<String>,
    /// The objects it targeted but left as they were.
    pub unchanged: Vec<String>,
}

/// Why a patch failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: patches[{index}] (target {target}) {error}")]
pub struct PatchFailure {
    /// The patch's position in the module's `patches`.
    pub index: usize,
    /// Where the patch is written, or the operation that failed.
    pub at: Origin,
    /// The patch's target, in words.
    pub target: String,
    /// What went wrong.
    pub error: PatchFailureKind,
}

/// What went wrong with a patch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatchFailureKind {
    /// No rendered object has everything the target gives.
    #[error(
        "matches no rendered object; check the target against `opm mod build --verbose` or the \
         rendered output (name is the object's metadata.name as rendered, instance prefix \
         included)"
    )]
    NoMatch,
    /// An operation of the JSON Patch cannot be applied to an object.
    #[error(
        "jsonPatch[{op}] ({summary}) cannot be applied to {object} of component {component:?}: \
         {reason}"
    )]
    Operation {
        /// The operation's position in the JSON Patch, from 0.
        op: usize,
        /// The operation, without its value.
        summary: String,
        /// `group/kind namespace/name` of the object.
        object: String,
        /// The component that rendered it.
        component: String,
        /// Why, naming paths only.
        reason: String,
    },
    /// The patched object is not a resource any more.
    #[error("leaves {object} of component {component:?} invalid: {reason}")]
    Invalid {
        /// `group/kind namespace/name` of the object before the patch.
        object: String,
        /// The component that rendered it.
        component: String,
        /// What the output check refused.
        reason: String,
    },
    /// The patched object would be larger or deeper than a patch may make one.
    #[error("would make {object} of component {component:?} {reason}")]
    TooLarge {
        /// `group/kind namespace/name` of the object.
        object: String,
        /// The component that rendered it.
        component: String,
        /// Which bound, in words.
        reason: String,
    },
    /// The render's patches together would do more work than [`MAX_PATCH_WORK`] allows.
    #[error(
        "would take the work of the module's patches past {} MiB of objects copied, compared and \
         checked, the most one render's patches may do; give the patches narrower targets, or \
         fewer operations on large objects",
        MAX_PATCH_WORK >> 20
    )]
    Budget,
    /// The patch changes or removes a label the host sets on every object.
    #[error(
        "changes label {label} of {object} of component {component:?}, which opm sets on every \
         object; patch other labels one by one (/metadata/labels/KEY)"
    )]
    TrackingLabel {
        /// `group/kind namespace/name` of the object.
        object: String,
        /// The component that rendered it.
        component: String,
        /// The label.
        label: String,
    },
}

/// What applying a render's patches did.
#[derive(Debug, Default)]
pub struct Applied {
    /// What each patch changed, in module order.
    pub reports: Vec<PatchReport>,
    /// Every patch that failed, in module order.
    pub failures: Vec<PatchFailure>,
}

/// Applies `patches` in order to `resources` (in render order), rendered into `context`.
/// `complete` says whether a component rendered all it should: a patch that matches nothing is
/// an error only when every component it could touch did. What a render calls between its
/// calls and its checksum references; public, like [`super::check_resource`], for whatever
/// checks the host's treatment of output without running WebAssembly.
pub fn apply(
    patches: &[PlanPatch],
    resources: &mut [Resource],
    context: &RenderContext,
    complete: &dyn Fn(&str) -> bool,
) -> Applied {
    let mut applied = Applied::default();
    // Each object as a value, parsed when a patch first looks past its identity; whether a
    // patch failed on it (no later patch touches it, and it is not written back); whether a
    // patch changed it (it is written back once, at the end).
    let mut values: Vec<Option<Value>> = vec![None; resources.len()];
    let mut broken = vec![false; resources.len()];
    let mut changed = vec![false; resources.len()];
    // The size of each object as JSON, and the work of every patch so far (MAX_PATCH_WORK).
    let mut sizes: Vec<usize> = resources.iter().map(|r| r.json.len()).collect();
    let mut work = 0_usize;
    'patches: for patch in patches {
        let target = &patch.patch.target;
        let target_text = target.to_string();
        let mut report = PatchReport {
            index: patch.index,
            at: patch.at.clone(),
            target: target_text.clone(),
            operation: patch.patch.operation.summary(),
            changed: Vec::new(),
            unchanged: Vec::new(),
        };
        let fail = |at: &Origin, error| PatchFailure {
            index: patch.index,
            at: at.clone(),
            target: target_text.clone(),
            error,
        };
        let mut matched = 0;
        let mut failures = Vec::new();
        for (index, resource) in resources.iter_mut().enumerate() {
            if broken[index] || !matches_identity(target, resource) {
                continue;
            }
            let value = values[index].get_or_insert_with(|| resource.value());
            if !has_labels(target, value) {
                continue;
            }
            matched += 1;
            // Copying, ordering, checking, comparing and measuring the object.
            work = work.saturating_add(sizes[index].saturating_mul(2));
            if work > MAX_PATCH_WORK {
                failures.push(fail(&patch.at, PatchFailureKind::Budget));
                applied.failures.extend(failures);
                break 'patches;
            }
            let object = resource.identity.to_string();
            let component = resource.component.clone();
            let before = value.clone();
            let outcome = patch_value(
                &patch.patch.operation,
                value,
                &object,
                &component,
                &mut work,
            )
            .and_then(|()| {
                sizes[index] = json_size(value);
                if sizes[index] > MAX_PATCHED_OBJECT {
                    return Err((
                        None,
                        PatchFailureKind::TooLarge {
                            object: object.clone(),
                            component: component.clone(),
                            reason: format!(
                                "larger than {} MiB, the most a patch may make of one object",
                                MAX_PATCHED_OBJECT >> 20
                            ),
                        },
                    ));
                }
                keep_order(&before, value);
                check(value, context, &object, &component).map_err(|error| (None, error))
            });
            if let Err((at, error)) = outcome {
                let spent = matches!(error, PatchFailureKind::Budget);
                failures.push(fail(at.unwrap_or(&patch.at), error));
                if spent {
                    applied.failures.extend(failures);
                    break 'patches;
                }
                broken[index] = true;
                continue;
            }
            if *value == before {
                report.unchanged.push(object);
                continue;
            }
            changed[index] = true;
            value["apiVersion"]
                .as_str()
                .unwrap_or_default()
                .clone_into(&mut resource.api_version);
            let identity = identity::Identity::of(value, &context.namespace);
            if identity == resource.identity {
                report.changed.push(object);
            } else {
                report.changed.push(format!("{object} (now {identity})"));
                resource.identity = identity;
            }
        }
        // A patch that can change no component's objects is a plan error already.
        if matched == 0
            && !patch.components.is_empty()
            && patch.components.iter().all(|c| complete(c))
        {
            failures.push(fail(&patch.at, PatchFailureKind::NoMatch));
        }
        applied.failures.extend(failures);
        applied.reports.push(report);
    }
    for (index, resource) in resources.iter_mut().enumerate() {
        if changed[index]
            && !broken[index]
            && let Some(value) = &values[index]
        {
            resource.json = crate::json::compact(value);
        }
    }
    applied
}

/// Puts the keys of every map of `value` that `before` had too back in `before`'s order, the
/// keys a patch added after them in the order it added them. Removing a key (a merge patch's
/// null, a JSON Patch `remove` or `move`) moves the map's last key into its place, which would
/// otherwise reorder the fields of what a transformer wrote.
fn keep_order(before: &Value, value: &mut Value) {
    match (before, value) {
        (Value::Object(old), Value::Object(new)) => {
            let position: std::collections::HashMap<&str, usize> = old
                .keys()
                .enumerate()
                .map(|(index, key)| (key.as_str(), index))
                .collect();
            let mut entries: Vec<(String, Value)> = std::mem::take(new).into_iter().collect();
            entries
                .sort_by_key(|(key, _)| position.get(key.as_str()).copied().unwrap_or(usize::MAX));
            for (key, mut entry) in entries {
                if let Some(old_entry) = old.get(&key) {
                    keep_order(old_entry, &mut entry);
                }
                new.insert(key, entry);
            }
        }
        (Value::Array(old), Value::Array(new)) => {
            for (old_item, item) in old.iter().zip(new.iter_mut()) {
                keep_order(old_item, item);
            }
        }
        _ => {}
    }
}

/// Whether `resource` has the kind, name and component `target` gives.
fn matches_identity(target: &Target, resource: &Resource) -> bool {
    target
        .kind
        .as_ref()
        .is_none_or(|k| *k == resource.identity.kind)
        && target
            .name
            .as_ref()
            .is_none_or(|n| *n == resource.identity.name)
        && target
            .component
            .as_ref()
            .is_none_or(|c| *c == resource.component)
}

/// Whether every label `target` gives is in `value`'s `metadata.labels`, with its value.
fn has_labels(target: &Target, value: &Value) -> bool {
    let labels = &value["metadata"]["labels"];
    target
        .labels
        .iter()
        .all(|(key, wanted)| labels.get(key).and_then(Value::as_str) == Some(wanted.as_str()))
}

/// Applies `operation` to `value`, adding to `work` what measuring it costs; on failure, where
/// (the operation, for a JSON Patch) and why.
fn patch_value<'a>(
    operation: &'a Operation,
    value: &mut Value,
    object: &str,
    component: &str,
    work: &mut usize,
) -> Result<(), (Option<&'a Origin>, PatchFailureKind)> {
    match operation {
        Operation::Merge(merge) => {
            // The merge copies the patch into the object, which is then copied, checked and
            // compared whole: the work grows with what the object becomes, not what it was.
            let size = json_size(merge);
            *work = work.saturating_add(size.saturating_mul(3));
            if *work > MAX_PATCH_WORK {
                return Err((None, PatchFailureKind::Budget));
            }
            json_patch::merge(value, merge);
            Ok(())
        }
        Operation::JsonPatch(ops) => {
            for (index, op) in ops.iter().enumerate() {
                let failed = |reason| {
                    (
                        Some(&op.origin),
                        PatchFailureKind::Operation {
                            op: index,
                            summary: op.summary(),
                            object: object.to_owned(),
                            component: component.to_owned(),
                            reason,
                        },
                    )
                };
                if let Some(reason) = too_big(op, value, work) {
                    return Err(failed(reason));
                }
                json_patch::patch(value, std::slice::from_ref(&op.operation))
                    .map_err(|error| failed(reason(op, &error.kind)))?;
                if let Some(reason) = too_deep(op, value, work) {
                    return Err((
                        Some(&op.origin),
                        PatchFailureKind::TooLarge {
                            object: object.to_owned(),
                            component: component.to_owned(),
                            reason,
                        },
                    ));
                }
            }
            Ok(())
        }
    }
}

/// The most a JSON Patch may make of one object, in bytes of JSON: what a call may return by
/// default ([`crate::calls::Limits`]).
pub const MAX_PATCHED_OBJECT: usize = 16 << 20;

/// The work all of one render's patches may do together, in bytes of JSON copied, compared,
/// checked or measured: with [`MAX_PATCHED_OBJECT`] and [`MAX_PATCHED_DEPTH`] per object, what
/// bounds the time and memory a module's patches can make the host spend, however many patches
/// there are and however many objects each targets. A module that patches each of 10,000
/// objects of a few KiB once uses a tenth of it.
pub const MAX_PATCH_WORK: usize = 256 << 20;

/// How deeply a JSON Patch may nest what it writes, in maps and lists from the object's top:
/// below the 128 levels a JSON reader takes, so that whatever reads the object next can.
pub const MAX_PATCHED_DEPTH: usize = 100;

/// The size of `value` as JSON text, in bytes.
fn json_size(value: &Value) -> usize {
    let mut counter = ByteCounter(0);
    serde_json::to_writer(&mut counter, value).map_or(usize::MAX, |()| counter.0)
}

/// Why `op` may not run on `value`: a `copy` is the one operation that can make an object
/// larger than the module that asks for it (each doubling what the last copied), so one that
/// would take the object over [`MAX_PATCHED_OBJECT`] is refused before it runs. Measuring is
/// added to `work`.
fn too_big(op: &JsonPatchOp, value: &Value, work: &mut usize) -> Option<String> {
    let json_patch::PatchOperation::Copy(copy) = &op.operation else {
        return None;
    };
    let source = value.pointer(copy.from.as_str())?;
    let (whole, copied) = (json_size(value), json_size(source));
    *work = work.saturating_add(whole).saturating_add(copied);
    (whole.saturating_add(copied) > MAX_PATCHED_OBJECT).then(|| {
        format!(
            "copying {} would make the object larger than {} MiB, the most a patch may make of one",
            copy.from,
            MAX_PATCHED_OBJECT >> 20
        )
    })
}

/// Why what `op` wrote into `value` may not stay: nested deeper than [`MAX_PATCHED_DEPTH`].
/// Only what the operation wrote is walked (its path, then the value there), and the walk is
/// added to `work`: a `move` or `copy` repeated can otherwise nest an object one level more each
/// time, for as long as the patch goes on.
fn too_deep(op: &JsonPatchOp, value: &Value, work: &mut usize) -> Option<String> {
    use json_patch::PatchOperation as Op;
    let path = match &op.operation {
        Op::Add(_) | Op::Replace(_) | Op::Move(_) | Op::Copy(_) => op.operation.path().to_string(),
        Op::Remove(_) | Op::Test(_) => return None,
    };
    let written = value.pointer(&path)?;
    let above = path.matches('/').count();
    let mut stack = vec![(written, above)];
    while let Some((node, depth)) = stack.pop() {
        *work = work.saturating_add(1);
        let children: Box<dyn Iterator<Item = &Value>> = match node {
            Value::Object(map) => Box::new(map.values()),
            Value::Array(items) => Box::new(items.iter()),
            _ => continue,
        };
        if depth + 1 > MAX_PATCHED_DEPTH {
            return Some(format!(
                "nested deeper than {MAX_PATCHED_DEPTH} levels at {path}, the most a patch may \
                 nest an object"
            ));
        }
        stack.extend(children.map(|child| (child, depth + 1)));
    }
    None
}

/// Counts what is written to it.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Why `op` failed, in words that name its paths and never a value.
fn reason(op: &JsonPatchOp, kind: &json_patch::PatchErrorKind) -> String {
    use json_patch::{PatchErrorKind as Kind, PatchOperation as Op};
    let path = op.operation.path();
    match (kind, &op.operation) {
        (Kind::TestFailed, _) => format!("the value at {path} is not the one the test expects"),
        (Kind::InvalidFromPointer, Op::Move(m)) => format!("{} does not exist", m.from),
        (Kind::InvalidFromPointer, Op::Copy(c)) => format!("{} does not exist", c.from),
        (Kind::InvalidPointer, Op::Add(_)) => format!(
            "{path} cannot be added: its parent does not exist, or an array index is out of \
             range (add creates only the last step of a path)"
        ),
        (Kind::InvalidPointer, _) => format!("{path} does not exist"),
        (Kind::CannotMoveInsideItself, _) => format!("cannot move a value inside itself ({path})"),
        (other, _) => format!("{other} ({path})"),
    }
}

/// The checks a patched object must pass: it is still a resource ([`check_value`], whose key
/// order it takes) with names its platform accepts, the tracking labels are as the host set them, and its labels stay sorted.
fn check(
    value: &mut Value,
    context: &RenderContext,
    object: &str,
    component: &str,
) -> Result<(), PatchFailureKind> {
    *value = check_value(std::mem::take(value))
        .and_then(|value| {
            super::platform_names::check(&value, context.platform.as_deref()).map(|()| value)
        })
        .map_err(|reason| PatchFailureKind::Invalid {
            object: object.to_owned(),
            component: component.to_owned(),
            reason,
        })?;
    let labels = value["metadata"]
        .as_object_mut()
        .expect("checked to be an object")
        .get_mut("labels");
    let tracking: BTreeMap<String, String> = context.tracking_labels(component);
    let kept = |label: &str, wanted: &str| {
        labels
            .as_ref()
            .and_then(|labels| labels.get(label))
            .and_then(Value::as_str)
            == Some(wanted)
    };
    if let Some((label, _)) = tracking.iter().find(|(label, wanted)| !kept(label, wanted)) {
        return Err(PatchFailureKind::TrackingLabel {
            object: object.to_owned(),
            component: component.to_owned(),
            label: label.clone(),
        });
    }
    if let Some(Value::Object(labels)) = labels {
        labels.sort_keys();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::module::patch::Patch;

    fn context() -> RenderContext {
        RenderContext {
            name: "shop".into(),
            instance: "shop".into(),
            namespace: "prod".into(),
            version: "1.0.0".into(),
            provider: "kubernetes".into(),
            timestamp: "1970-01-01T00:00:00Z".into(),
            strict: false,
            module_labels: BTreeMap::new(),
            secret_kinds: vec!["Secret".into()],
            platform: None,
            provider_versions: Default::default(),
        }
    }

    fn resource(component: &str, kind: &str, name: &str, labels: Value) -> Resource {
        let mut all = context().tracking_labels(component);
        for (key, value) in labels.as_object().unwrap() {
            all.insert(key.clone(), value.as_str().unwrap().to_owned());
        }
        let api_version = if kind == "Deployment" {
            "apps/v1"
        } else {
            "v1"
        };
        Resource::new(
            component,
            "t",
            &json!({"apiVersion": api_version, "kind": kind,
                    "metadata": {"name": name, "labels": all}, "spec": {"replicas": 1}}),
            "prod",
        )
    }

    fn resources() -> Vec<Resource> {
        vec![
            resource("api", "Service", "api", json!({"tier": "web"})),
            resource("api", "Deployment", "api", json!({"tier": "web"})),
            resource("worker", "Deployment", "worker", json!({})),
            resource("web", "Deployment", "api-web", json!({"tier": "web"})),
        ]
    }

    fn plan_patch(index: usize, target: Value, patch: Value) -> PlanPatch {
        let text = serde_json::to_string(&json!([{"target": target, "merge": patch}])).unwrap();
        plan_patch_from(index, &text)
    }

    fn plan_patch_from(index: usize, text: &str) -> PlanPatch {
        let node = crate::module::tree::parse(text, &"module.yaml".into()).unwrap();
        let mut patches: Vec<Patch> =
            crate::module::patch::read(&node, &[], &mut |_, message| panic!("{message}"));
        let mut patch = patches.remove(0);
        patch.index = index;
        PlanPatch::of(&patch, &["api", "web", "worker"])
    }

    /// The objects `target` matches among [`resources`], by identity.
    fn matched(target: Value) -> Vec<String> {
        let patch = plan_patch(0, target, json!({"metadata": {"annotations": {"x": "y"}}}));
        let mut resources = resources();
        let applied = apply(&[patch], &mut resources, &context(), &|_| true);
        if let Some(failure) = applied.failures.first() {
            assert_eq!(failure.error, PatchFailureKind::NoMatch);
        }
        applied.reports[0].changed.clone()
    }

    #[test]
    fn a_target_matches_every_object_with_all_it_gives() {
        assert_eq!(
            matched(json!({"kind": "Deployment"})),
            [
                "apps/Deployment prod/api",
                "apps/Deployment prod/worker",
                "apps/Deployment prod/api-web"
            ]
        );
        assert_eq!(
            matched(json!({"component": "api"})),
            ["Service prod/api", "apps/Deployment prod/api"]
        );
        assert_eq!(
            matched(json!({"kind": "Deployment", "name": "api"})),
            ["apps/Deployment prod/api"]
        );
        assert_eq!(
            matched(json!({"labels": {"tier": "web"}, "kind": "Deployment"})),
            ["apps/Deployment prod/api", "apps/Deployment prod/api-web"]
        );
        assert_eq!(
            matched(json!({"labels": {"component.opmodel.dev/name": "worker"}})),
            ["apps/Deployment prod/worker"]
        );
        assert_eq!(
            matched(json!({"labels": {"tier": "web", "other": "x"}})),
            Vec::<String>::new()
        );
        assert_eq!(
            matched(json!({"kind": "deployment"})),
            Vec::<String>::new(),
            "kinds are compared as written"
        );
    }

    #[test]
    fn a_patch_that_matches_nothing_fails_unless_a_component_it_could_touch_failed() {
        let patch = plan_patch(3, json!({"kind": "Ingress"}), json!({"a": "b"}));
        let applied = apply(
            std::slice::from_ref(&patch),
            &mut resources(),
            &context(),
            &|_| true,
        );
        assert_eq!(
            applied.failures[0].to_string(),
            format!(
                "{}: patches[3] (target kind Ingress) matches no rendered object; check the \
                 target against `opm mod build --verbose` or the rendered output (name is the \
                 object's metadata.name as rendered, instance prefix included)",
                patch.at
            )
        );
        let applied = apply(&[patch], &mut resources(), &context(), &|c| c != "web");
        assert!(applied.failures.is_empty());
    }

    #[test]
    fn later_patches_see_what_earlier_ones_made_and_renames_move_the_identity() {
        let first = plan_patch(
            0,
            json!({"kind": "Deployment", "name": "worker"}),
            json!({"metadata": {"labels": {"b": "1", "a": "2"}, "name": "jobs"}}),
        );
        let second = plan_patch(
            1,
            json!({"labels": {"a": "2"}}),
            json!({"spec": {"replicas": 1}}),
        );
        let mut resources = resources();
        let applied = apply(&[first, second], &mut resources, &context(), &|_| true);
        assert!(applied.failures.is_empty(), "{:?}", applied.failures);
        assert_eq!(
            applied.reports[0].changed,
            ["apps/Deployment prod/worker (now apps/Deployment prod/jobs)"]
        );
        assert_eq!(applied.reports[1].unchanged, ["apps/Deployment prod/jobs"]);
        let value = resources[2].value();
        assert_eq!(resources[2].identity.name, "jobs");
        let labels: Vec<&String> = value["metadata"]["labels"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert!(labels.is_sorted(), "{labels:?}");
        assert_eq!(
            value
                .as_object()
                .unwrap()
                .keys()
                .take(3)
                .collect::<Vec<_>>(),
            ["apiVersion", "kind", "metadata"]
        );
    }

    #[test]
    fn a_failed_operation_names_its_index_and_the_object_but_no_value() {
        let patch = plan_patch_from(
            0,
            "- target: {kind: Service}\n  jsonPatch:\n  - {op: add, path: /spec/a, value: s3cret-value}\n  - {op: test, path: /spec/replicas, value: 2}\n",
        );
        let applied = apply(&[patch], &mut resources(), &context(), &|_| true);
        let text = applied.failures[0].to_string();
        assert_eq!(
            text,
            "module.yaml:4:5: patches[0] (target kind Service) jsonPatch[1] (test /spec/replicas) \
             cannot be applied to Service prod/api of component \"api\": the value at \
             /spec/replicas is not the one the test expects"
        );
        let patch = plan_patch_from(
            0,
            "- target: {kind: Service}\n  jsonPatch: [{op: replace, path: /spec/nothing/here, value: 1}]\n",
        );
        let applied = apply(&[patch], &mut resources(), &context(), &|_| true);
        assert!(
            applied.failures[0]
                .to_string()
                .ends_with("/spec/nothing/here does not exist"),
            "{}",
            applied.failures[0]
        );
    }

    #[test]
    fn copies_cannot_grow_an_object_without_bound() {
        let mut doubling = String::from(
            "- target: {kind: Service}\n  jsonPatch:\n  - {op: add, path: /spec/l, value: [0123456789abcdef]}\n",
        );
        for _ in 0..30 {
            doubling.push_str("  - {op: copy, from: /spec/l, path: /spec/l/-}\n");
        }
        let patch = plan_patch_from(0, &doubling);
        let applied = apply(&[patch], &mut resources(), &context(), &|_| true);
        let text = applied.failures[0].to_string();
        assert!(
            text.contains("(copy /spec/l -> /spec/l/-) cannot be applied to Service prod/api")
                && text.ends_with(
                    "copying /spec/l would make the object larger than 16 MiB, the most a patch \
                     may make of one"
                ),
            "{text}"
        );
    }

    #[test]
    fn removing_a_field_keeps_the_order_of_the_others() {
        let before = json!({"a": 1, "b": {"x": 1, "y": 2, "z": 3}, "c": 3, "d": 4});
        for operation in [
            json!({"merge": {"a": null, "b": {"x": null}}}),
            json!({"jsonPatch": [{"op": "remove", "path": "/a"}, {"op": "remove", "path": "/b/x"}]}),
        ] {
            let mut value = before.clone();
            match operation.get("merge") {
                Some(merge) => json_patch::merge(&mut value, merge),
                None => {
                    let ops: json_patch::Patch =
                        serde_json::from_value(operation["jsonPatch"].clone()).unwrap();
                    json_patch::patch(&mut value, &ops).unwrap();
                }
            }
            keep_order(&before, &mut value);
            value["e"] = json!(5);
            assert_eq!(
                serde_json::to_string(&value).unwrap(),
                r#"{"b":{"y":2,"z":3},"c":3,"d":4,"e":5}"#
            );
        }
    }

    #[test]
    fn a_patch_that_breaks_an_object_or_a_tracking_label_fails() {
        let patch = plan_patch(
            0,
            json!({"kind": "Service"}),
            json!({"metadata": {"name": null}}),
        );
        let mut all = resources();
        let applied = apply(&[patch], &mut all, &context(), &|_| true);
        assert!(
            applied.failures[0].to_string().ends_with(
                "leaves Service prod/api of component \"api\" invalid: `metadata.name` is missing \
                 or not a non-empty string"
            ),
            "{}",
            applied.failures[0]
        );
        assert_eq!(
            all[0],
            resources()[0],
            "a broken object is not written back"
        );
        let patch = plan_patch(
            0,
            json!({"kind": "Service"}),
            json!({"metadata": {"labels": {"app.kubernetes.io/managed-by": "me"}}}),
        );
        let applied = apply(&[patch], &mut resources(), &context(), &|_| true);
        assert!(
            matches!(&applied.failures[0].error, PatchFailureKind::TrackingLabel { label, .. } if label == "app.kubernetes.io/managed-by")
        );
    }
}
