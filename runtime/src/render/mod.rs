//! Rendering: runs every planned (transformer, component) call in the sandbox, in parallel,
//! then checks, labels and orders what came back (`docs/rendering.md`), resolving the checksum
//! references of [`checksum`] once every call has run.
//!
//! [`execute`] takes the calls and compiled transformers and returns a [`Rendered`]: the
//! resources in install order and every [`Failure`], grouped by component. A failure of one call
//! never stops the others (fail on end), and neither does a transformer that could not be
//! compiled: its calls fail, the others run. The writers live in [`write`].

pub mod build;
pub mod checksum;
pub mod context;
pub mod order;
pub mod write;

use std::collections::BTreeMap;
use std::time::Duration;

use rayon::prelude::*;
use serde_json::{Map, Value};

pub use build::{Built, Render, Request, build, build_with};
pub use context::RenderContext;

use crate::matching::Call;
use crate::sandbox::{
    CallError, CallOutcome, CompileError, CompiledTransformer, Limits, LogLine, Sandbox,
};
use crate::wit;

/// Each transformer a render uses, by FQN: compiled, or why it could not be.
pub type Transformers = BTreeMap<String, Result<CompiledTransformer, CompileError>>;

/// Most invalid resources reported for one call; the rest are counted in one more failure.
const MAX_INVALID_REPORTED: usize = 10;

/// A rendered platform resource and where it came from.
///
/// The resource is kept as its compact JSON text (checked, labelled, keys in output order) with
/// its identity beside it, not as a `serde_json::Value`: a large render holds every resource
/// until it is ordered and written, and the text takes a fifth of the memory of the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// The component it was rendered from.
    pub component: String,
    /// The transformer that rendered it.
    pub transformer: String,
    /// Its group, kind, namespace and name.
    pub identity: order::Identity,
    /// The resource, a JSON object with `apiVersion`, `kind` and `metadata.name`, as compact
    /// JSON text.
    pub json: String,
}

impl Resource {
    /// `value`, a checked resource, rendered from `component` by `transformer` into
    /// `target_namespace`.
    pub fn new(component: &str, transformer: &str, value: &Value, target_namespace: &str) -> Self {
        Self {
            component: component.to_owned(),
            transformer: transformer.to_owned(),
            identity: order::Identity::of(value, target_namespace),
            json: value.to_string(),
        }
    }

    /// The resource as a JSON value.
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.json).expect("a resource is JSON text written by the host")
    }
}

/// What one call did, for `--verbose`.
#[derive(Debug, Clone)]
pub struct CallReport {
    /// The component.
    pub component: String,
    /// The transformer.
    pub transformer: String,
    /// Fuel the call used.
    pub fuel_used: u64,
    /// Wall-clock time of the call.
    pub elapsed: Duration,
    /// Resources it returned (0 when it failed).
    pub resources: usize,
    /// What the guest logged.
    pub logs: Vec<LogLine>,
    /// Log lines dropped at the log limit.
    pub logs_dropped: usize,
}

/// Why a component did not render completely.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("component {component:?}: transformer {transformer} ({digest}) {error}")]
pub struct Failure {
    /// The component.
    pub component: String,
    /// The transformer FQN.
    pub transformer: String,
    /// `blake3:<hex>` of the transformer's component.
    pub digest: String,
    /// What went wrong.
    pub error: FailureKind,
}

/// What went wrong in one call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FailureKind {
    /// The call failed in the sandbox or the transformer reported an error.
    #[error("{0}")]
    Call(#[from] CallError),
    /// A returned resource is not acceptable.
    #[error("returned an invalid resource #{index}: {reason}")]
    InvalidOutput {
        /// Its position in the returned list, from 0.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The transformer's component could not be compiled, so none of its calls ran.
    #[error("cannot be loaded: {0}")]
    Load(String),
    /// A resource's checksum reference (see [`checksum`]) does not parse.
    #[error("rendered {identity} with a bad checksum reference: {reason}")]
    Checksum {
        /// `group/kind namespace/name` of the resource.
        identity: String,
        /// What is wrong with the reference.
        reason: String,
    },
    /// The call's checksum references name more Secrets than the host stretches for one call
    /// (see [`checksum::MAX_SECRETS_PER_CALL`]).
    #[error(
        "references {0} Secrets in checksum annotations, over the limit of {max} Secrets per \
         call (each costs the host a memory-hard hash)",
        max = checksum::MAX_SECRETS_PER_CALL
    )]
    TooManySecrets(usize),
    /// More of the call's resources were invalid than are reported one by one.
    #[error("returned {0} more invalid resources")]
    MoreInvalid(usize),
    /// Two calls returned the same resource.
    #[error(
        "rendered {identity}, which component {other_component:?} (transformer {other_transformer}) also rendered"
    )]
    Duplicate {
        /// `group/kind namespace/name` of the resource.
        identity: String,
        /// The other producer's component.
        other_component: String,
        /// The other producer's transformer.
        other_transformer: String,
    },
}

/// The result of a render: resources in install order, failures, and per-call reports.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// Resources in install order (kind, namespace, name).
    pub resources: Vec<Resource>,
    /// Every failure, ordered by component then transformer.
    pub failures: Vec<Failure>,
    /// One report per call, in plan order.
    pub calls: Vec<CallReport>,
}

/// What runs the calls of a render: the sandbox (what [`execute`] uses), or, in the benchmark
/// that measures what the sandbox costs (`benches/native.rs`), the same transformer crates
/// compiled into the process.
pub trait Runner: Sync {
    /// Runs `call` under `limits`; `Err` says why its transformer could not be loaded, so that
    /// none of its calls ran.
    fn call(
        &self,
        call: &Call,
        context: &wit::Context,
        limits: &Limits,
    ) -> Result<CallOutcome, String>;

    /// `blake3:<hex>` of the component of `transformer`, for failures; empty when unknown.
    fn digest(&self, transformer: &str) -> String;
}

/// The sandbox with the transformers a render uses, compiled (or why each could not be).
pub(crate) struct Sandboxed<'a> {
    pub(crate) sandbox: &'a Sandbox,
    pub(crate) transformers: &'a Transformers,
}

impl Runner for Sandboxed<'_> {
    fn call(
        &self,
        call: &Call,
        context: &wit::Context,
        limits: &Limits,
    ) -> Result<CallOutcome, String> {
        match &self.transformers[&call.transformer] {
            Ok(compiled) => Ok(self.sandbox.call(compiled, &call.input, context, limits)),
            Err(error) => Err(load_reason(error)),
        }
    }

    fn digest(&self, transformer: &str) -> String {
        digest_of(self.transformers, transformer)
    }
}

/// Runs `calls` on the current rayon pool, each in a fresh sandbox instance, and checks, labels
/// and orders the results. `transformers` holds, for every call's FQN, the compiled transformer
/// or why it could not be compiled. Each call may log at most `limits.log` bytes and at most
/// its share of `limits.render_log`, so the logs a render keeps are bounded whatever its size.
///
/// Each call's output is checked and labelled on the thread that ran it; only the merge (in call
/// order), the sort into install order and the search for duplicates run on one thread.
pub fn execute(
    sandbox: &Sandbox,
    transformers: &Transformers,
    calls: &[&Call],
    context: &RenderContext,
    limits: &Limits,
) -> Rendered {
    execute_with(
        &Sandboxed {
            sandbox,
            transformers,
        },
        calls,
        context,
        limits,
    )
}

/// [`execute`] with the calls run by `runner`.
pub fn execute_with(
    runner: &dyn Runner,
    calls: &[&Call],
    context: &RenderContext,
    limits: &Limits,
) -> Rendered {
    let call_limits = Limits {
        log: limits.log.min(limits.render_log / calls.len().max(1)),
        ..*limits
    };
    let outputs: Vec<CallOutput> = calls
        .par_iter()
        .map(|call| run_call(runner, call, context, &call_limits))
        .collect();

    let mut rendered = Rendered {
        resources: Vec::with_capacity(outputs.iter().map(|o| o.resources.len()).sum()),
        ..Rendered::default()
    };
    for output in outputs {
        rendered.resources.extend(output.resources);
        rendered.failures.extend(output.failures);
        rendered.calls.extend(output.report);
    }
    for problem in checksum::resolve(&mut rendered.resources) {
        let (index, error) = match problem {
            checksum::Problem::BadReference { index, reason } => (
                index,
                FailureKind::Checksum {
                    identity: rendered.resources[index].identity.to_string(),
                    reason,
                },
            ),
            checksum::Problem::TooManySecrets { index, secrets } => {
                (index, FailureKind::TooManySecrets(secrets))
            }
        };
        let resource = &rendered.resources[index];
        rendered.failures.push(Failure {
            component: resource.component.clone(),
            transformer: resource.transformer.clone(),
            digest: runner.digest(&resource.transformer),
            error,
        });
    }
    order::sort(&mut rendered.resources);
    rendered
        .failures
        .extend(duplicates(&rendered.resources, runner));
    rendered
        .failures
        .sort_by(|a, b| (&a.component, &a.transformer).cmp(&(&b.component, &b.transformer)));
    rendered
}

/// What one call contributes to a render.
struct CallOutput {
    resources: Vec<Resource>,
    failures: Vec<Failure>,
    /// None when the transformer could not be loaded, so nothing ran.
    report: Option<CallReport>,
}

/// Runs one call and checks and labels what it returned.
fn run_call(
    runner: &dyn Runner,
    call: &Call,
    context: &RenderContext,
    limits: &Limits,
) -> CallOutput {
    let fail = |error: FailureKind| Failure {
        component: call.component.clone(),
        transformer: call.transformer.clone(),
        digest: runner.digest(&call.transformer),
        error,
    };
    let mut output = CallOutput {
        resources: Vec::new(),
        failures: Vec::new(),
        report: None,
    };
    let outcome = match runner.call(call, &context.for_component(&call.component), limits) {
        Ok(outcome) => outcome,
        Err(reason) => {
            output.failures.push(fail(FailureKind::Load(reason)));
            return output;
        }
    };
    match outcome.result {
        Ok(documents) => {
            let labels = context.tracking_labels(&call.component);
            let mut invalid = 0;
            for (index, document) in documents.iter().enumerate() {
                match check_resource(document) {
                    Ok(mut value) => {
                        apply_labels(&mut value, &labels);
                        output.resources.push(Resource::new(
                            &call.component,
                            &call.transformer,
                            &value,
                            &context.namespace,
                        ));
                    }
                    Err(reason) => {
                        invalid += 1;
                        if invalid <= MAX_INVALID_REPORTED {
                            output
                                .failures
                                .push(fail(FailureKind::InvalidOutput { index, reason }));
                        }
                    }
                }
            }
            if invalid > MAX_INVALID_REPORTED {
                output.failures.push(fail(FailureKind::MoreInvalid(
                    invalid - MAX_INVALID_REPORTED,
                )));
            }
        }
        Err(error) => output.failures.push(fail(FailureKind::Call(error))),
    }
    output.report = Some(CallReport {
        component: call.component.clone(),
        transformer: call.transformer.clone(),
        fuel_used: outcome.fuel_used,
        elapsed: outcome.elapsed,
        resources: output.resources.len(),
        logs: outcome.logs,
        logs_dropped: outcome.logs_dropped,
    });
    output
}

/// Why a transformer could not be compiled, without the transformer and digest the failure
/// already names.
fn load_reason(error: &CompileError) -> String {
    match error {
        CompileError::Component { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}

/// `blake3:<hex>` of a transformer's component, as compiled or as refused.
fn digest_of(transformers: &Transformers, fqn: &str) -> String {
    match transformers.get(fqn) {
        Some(Ok(compiled)) => compiled.digest.to_string(),
        Some(Err(CompileError::Component { digest, .. })) => digest.clone(),
        _ => String::new(),
    }
}

/// Parses one returned document and checks it is a resource: a JSON object with string
/// `apiVersion`, `kind` and `metadata.name`. Returns it with its top-level keys in reading order.
///
/// This is everything the host assumes of a transformer's output before it labels, orders and
/// writes it; it is public so that the fuzz target `output` (`tests/fuzz/`) can call it.
///
/// ```
/// use opm_runtime::render::check_resource;
/// let document = r#"{"kind": "Service", "apiVersion": "v1", "metadata": {"name": "api"}}"#;
/// let value = check_resource(document).unwrap();
/// assert_eq!(value.as_object().unwrap().keys().next().unwrap(), "apiVersion");
/// assert!(check_resource("[]").is_err());
/// ```
pub fn check_resource(document: &str) -> Result<Value, String> {
    let value: Value = serde_json::from_str(document).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(object) = value else {
        return Err(format!(
            "a JSON {} where an object was expected",
            json_type(&value)
        ));
    };
    for field in ["apiVersion", "kind"] {
        match object.get(field) {
            Some(Value::String(s)) if !s.is_empty() => {}
            _ => return Err(format!("`{field}` is missing or not a non-empty string")),
        }
    }
    match object.get("metadata").and_then(|m| m.get("name")) {
        Some(Value::String(s)) if !s.is_empty() => {}
        _ => return Err("`metadata.name` is missing or not a non-empty string".into()),
    }
    if !object["metadata"].is_object() {
        return Err("`metadata` is not an object".into());
    }
    Ok(Value::Object(reading_order(object)))
}

/// apiVersion, kind, metadata first; the rest in the order the transformer wrote them.
fn reading_order(mut object: Map<String, Value>) -> Map<String, Value> {
    let mut ordered = Map::new();
    for key in ["apiVersion", "kind", "metadata"] {
        if let Some(value) = object.remove(key) {
            ordered.insert(key.to_owned(), value);
        }
    }
    ordered.extend(object);
    ordered
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Sets the tracking labels on `metadata.labels`, over whatever the transformer set.
fn apply_labels(resource: &mut Value, labels: &BTreeMap<String, String>) {
    let metadata = resource["metadata"]
        .as_object_mut()
        .expect("checked to be an object");
    let existing = metadata
        .entry("labels")
        .or_insert_with(|| Value::Object(Map::new()));
    if !existing.is_object() {
        *existing = Value::Object(Map::new());
    }
    let map = existing.as_object_mut().expect("just made an object");
    for (key, value) in labels {
        map.insert(key.clone(), Value::String(value.clone()));
    }
    map.sort_keys();
}

/// A failure for every resource whose identity (group, kind, namespace, name) an earlier
/// resource already has, naming both producers. `resources` are in install order, where equal
/// identities are neighbours, so the first of each run is the one the others collide with.
fn duplicates(resources: &[Resource], runner: &dyn Runner) -> Vec<Failure> {
    let mut failures = Vec::new();
    let mut first = 0;
    for (index, resource) in resources.iter().enumerate().skip(1) {
        if resource.identity != resources[first].identity {
            first = index;
            continue;
        }
        let original = &resources[first];
        failures.push(Failure {
            component: resource.component.clone(),
            transformer: resource.transformer.clone(),
            digest: runner.digest(&resource.transformer),
            error: FailureKind::Duplicate {
                identity: resource.identity.to_string(),
                other_component: original.component.clone(),
                other_transformer: original.transformer.clone(),
            },
        });
    }
    failures
}
