//! Running a render's calls: each in the sandbox (or through another [`Runner`]), in parallel,
//! with its output checked and labelled on the thread that ran it, then merged in call order,
//! patched, and its checksum references resolved, through `opm_sandbox`. What order
//! the resources are written in, and which of them are one object on the platform, is the
//! renderer's to say ([`super::renderer`]).

use std::collections::{BTreeMap, BTreeSet};

use rayon::prelude::*;
use serde_json::{Map, Value};

use super::{
    CallReport, Failure, FailureKind, RenderContext, Rendered, Resource, check_resource, checksum,
};
use opm_core::matching::{Call, PlanPatch};
use opm_core::provider::CallLimits;
use opm_sandbox::{CallOutcome, CompileError, CompiledTransformer, Limits, Sandbox};

/// Each transformer a render uses, by FQN: compiled, or why it could not be.
pub type Transformers = BTreeMap<String, Result<CompiledTransformer, CompileError>>;

/// Most invalid resources reported for one call; the rest are counted in one more failure.
const MAX_INVALID_REPORTED: usize = 10;

/// How much larger than a call's output limit its resources may be as YAML
/// ([`super::write::yaml_bound`]): a resource of the usual shape is about as large as its JSON.
pub const YAML_PER_OUTPUT_BYTE: usize = 4;

/// What runs the calls of a render: the sandbox (what [`execute`] uses), or, in the benchmark
/// that measures what the sandbox costs (`benches/native.rs`), the same transformer crates
/// compiled into the process.
pub trait Runner: Sync {
    /// Runs `call` under `limits`, told `context` (its own copy, which the sandbox hands on to
    /// the guest without copying it again); `Err` says why its transformer could not be loaded,
    /// so that none of its calls ran.
    fn call(
        &self,
        call: &Call,
        context: opm_sandbox::Context,
        limits: &Limits,
    ) -> Result<CallOutcome, String>;

    /// `blake3:<hex>` of the component of `transformer`, for failures; empty when unknown.
    fn digest(&self, transformer: &str) -> String;

    /// Where the render remembers its Secrets' stretched checksums between renders
    /// ([`checksum::resolve_with`]); none: each is stretched afresh.
    fn memo(&self) -> Option<&dyn checksum::Memo> {
        None
    }
}

/// The sandbox with the transformers a render uses, compiled (or why each could not be).
pub(crate) struct Sandboxed<'a> {
    pub(crate) sandbox: &'a Sandbox,
    pub(crate) transformers: &'a Transformers,
    /// The render's redactor, when the sandbox is shared by several renders
    /// ([`super::Shared`]); none: the sandbox's own.
    pub(crate) redactor: Option<&'a std::sync::Arc<opm_core::redact::Redactor>>,
}

impl Runner for Sandboxed<'_> {
    fn call(
        &self,
        call: &Call,
        context: opm_sandbox::Context,
        limits: &Limits,
    ) -> Result<CallOutcome, String> {
        match &self.transformers[&call.transformer] {
            Ok(compiled) => Ok(match self.redactor {
                Some(redactor) => {
                    self.sandbox
                        .call_redacting(compiled, &call.input, context, limits, redactor)
                }
                None => self.sandbox.call(compiled, &call.input, context, limits),
            }),
            Err(error) => Err(load_reason(error)),
        }
    }

    fn digest(&self, transformer: &str) -> String {
        digest_of(self.transformers, transformer)
    }

    fn memo(&self) -> Option<&dyn checksum::Memo> {
        self.sandbox
            .compile_cache()
            .map(|cache| cache as &dyn checksum::Memo)
    }
}

/// Runs `calls` on the current rayon pool, each in a fresh sandbox instance, and checks, labels
/// and orders the results. `transformers` holds, for every call's FQN, the compiled transformer
/// or why it could not be compiled. Each call runs under its provider's limits (one set of
/// `limits` for all when they are plain [`Limits`]), may log at most their `log` bytes and at
/// most its share of their `render_log`, so the logs a render keeps are bounded whatever its
/// size.
///
/// Each call's output is checked and labelled on the thread that ran it; only the merge (in call
/// order), the patches and the checksums run after them all.
pub fn execute(
    sandbox: &Sandbox,
    transformers: &Transformers,
    calls: &[&Call],
    context: &RenderContext,
    limits: &CallLimits,
) -> Rendered {
    execute_with(
        &Sandboxed {
            sandbox,
            transformers,
            redactor: None,
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
    limits: &CallLimits,
) -> Rendered {
    execute_patched(runner, calls, context, limits, &[])
}

/// [`execute_with`], then the module's `patches` applied to what the calls rendered
/// ([`super::patch`]) before the checksum references are resolved (duplicates are the
/// renderer's to refuse).
pub fn execute_patched(
    runner: &dyn Runner,
    calls: &[&Call],
    context: &RenderContext,
    limits: &CallLimits,
    patches: &[PlanPatch],
) -> Rendered {
    let outputs: Vec<CallOutput> = calls
        .par_iter()
        // One call per rayon job: in runs of calls, those queued behind a slow call (a large
        // component, a transformer near its time limit) waited for it while the other threads
        // had nothing left to take (up to 180 ms of one idle thread at 10,000 components).
        .with_max_len(1)
        .map(|call| {
            let limits = limits.of(&call.provider);
            let limits = Limits {
                log: limits.log.min(limits.render_log / calls.len().max(1)),
                ..*limits
            };
            run_call(runner, call, context, &limits)
        })
        .collect();

    // Sized first: growing a vector of 20,000 reports copies them again at every doubling.
    let mut rendered = Rendered {
        resources: Vec::with_capacity(outputs.iter().map(|o| o.resources.len()).sum()),
        calls: Vec::with_capacity(outputs.len()),
        ..Rendered::default()
    };
    // Which provider holds each transformer, for the failures found after the calls: made
    // only when there is one, not for every render.
    let owners: std::cell::OnceCell<BTreeMap<&str, &str>> = std::cell::OnceCell::new();
    let provider_of = |transformer: &str| {
        let owners = owners.get_or_init(|| {
            calls
                .iter()
                .map(|call| (call.transformer.as_str(), call.provider.as_str()))
                .collect()
        });
        owners
            .get(transformer)
            .copied()
            .unwrap_or_default()
            .to_owned()
    };
    for output in outputs {
        rendered.resources.extend(output.resources);
        rendered.failures.extend(output.failures);
        rendered.calls.extend(output.report);
    }
    if !patches.is_empty() {
        let called: BTreeSet<&str> = calls.iter().map(|c| c.component.as_str()).collect();
        let failed: BTreeSet<&str> = rendered
            .failures
            .iter()
            .map(|f| f.component.as_str())
            .collect();
        let applied =
            super::patch::apply(patches, &mut rendered.resources, context, &|component| {
                called.contains(component) && !failed.contains(component)
            });
        rendered.patches = applied.reports;
        rendered.patch_failures = applied.failures;
    }
    for problem in checksum::resolve_with(
        &mut rendered.resources,
        &context.secret_kinds,
        runner.memo(),
    ) {
        let (index, error) = super::checksum_failure(problem, &rendered.resources);
        let resource = &rendered.resources[index];
        rendered.failures.push(Failure {
            component: resource.component.clone(),
            transformer: resource.transformer.clone(),
            provider: provider_of(&resource.transformer),
            digest: runner.digest(&resource.transformer),
            error,
        });
    }
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
        provider: call.provider.clone(),
        digest: runner.digest(&call.transformer),
        error,
    };
    let mut output = CallOutput {
        resources: Vec::new(),
        failures: Vec::new(),
        report: None,
    };
    let outcome = match runner.call(call, context.for_call(call), limits) {
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
            // What the call's resources may become as YAML, before any of it is written.
            let most_yaml = limits.output.saturating_mul(YAML_PER_OUTPUT_BYTE);
            let mut yaml = 0usize;
            for (index, document) in documents.iter().enumerate() {
                let checked = check_resource(document).and_then(|value| {
                    super::platform_names::check(&value, context.platform.as_deref())
                        .map(|()| value)
                });
                match checked {
                    Ok(mut value) => {
                        yaml = yaml.saturating_add(super::write::yaml_bound(&value));
                        if yaml > most_yaml {
                            output.resources.clear();
                            output.failures.push(fail(FailureKind::InvalidOutput {
                                index,
                                reason: format!(
                                    "the call's resources would be written as more than {} of \
                                     YAML (so deeply nested, or so many line breaks), over the \
                                     limit of {YAML_PER_OUTPUT_BYTE} times the output limit",
                                    opm_sandbox::limits::Bytes(most_yaml as u64)
                                ),
                            }));
                            break;
                        }
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    use super::*;

    /// A call that returned `documents` at no cost.
    fn returning(documents: Vec<String>) -> CallOutcome {
        CallOutcome {
            result: Ok(documents),
            logs: Vec::new(),
            logs_dropped: 0,
            fuel_used: 0,
            elapsed: Duration::ZERO,
        }
    }

    /// The context of a module `shop` rendered by `kubernetes`.
    fn context() -> RenderContext {
        RenderContext {
            name: "shop".into(),
            instance: "shop".into(),
            namespace: "shop".into(),
            version: "1.0.0".into(),
            provider: "kubernetes".into(),
            timestamp: "1970-01-01T00:00:00Z".into(),
            strict: false,
            module_labels: BTreeMap::new(),
            secret_kinds: Vec::new(),
            platform: None,
            provider_versions: Default::default(),
        }
    }

    /// A runner whose first call waits (at most `patience`) until every other call has run:
    /// a slow call at the head of the list.
    struct FirstWaitsForTheRest {
        calls: usize,
        ran: AtomicUsize,
        patience: Duration,
    }

    impl Runner for FirstWaitsForTheRest {
        fn call(
            &self,
            call: &Call,
            _: opm_sandbox::Context,
            _: &Limits,
        ) -> Result<CallOutcome, String> {
            if call.component == "c-0" {
                let started = Instant::now();
                while self.ran.load(Ordering::SeqCst) < self.calls - 1 {
                    if started.elapsed() > self.patience {
                        return Err("the calls after it waited for it".into());
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            self.ran.fetch_add(1, Ordering::SeqCst);
            Ok(returning(Vec::new()))
        }

        fn digest(&self, _: &str) -> String {
            String::new()
        }
    }

    #[test]
    fn a_slow_call_holds_back_no_call_after_it() {
        // rayon hands each thread a run of calls it works through alone: with runs of more
        // than one call, the calls queued behind a slow one waited for it while the other
        // threads had nothing left to do.
        let calls: Vec<Call> = (0..400)
            .map(|i| Call {
                component: format!("c-{i}"),
                transformer: "t".into(),
                provider: "p".into(),
                input: "{}".into(),
            })
            .collect();
        let calls: Vec<&Call> = calls.iter().collect();
        let runner = FirstWaitsForTheRest {
            calls: calls.len(),
            ran: AtomicUsize::new(0),
            patience: Duration::from_secs(20),
        };
        let context = context();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let rendered =
            pool.install(|| execute_with(&runner, &calls, &context, &Limits::default().into()));
        let failures: Vec<String> = rendered
            .failures
            .iter()
            .map(|f| format!("{}: {:?}", f.component, f.error))
            .collect();
        assert!(failures.is_empty(), "{failures:?}");
        assert_eq!(rendered.calls.len(), calls.len());
    }

    /// A runner whose every call returns `documents`.
    struct Returns(Vec<String>);

    impl Runner for Returns {
        fn call(
            &self,
            _: &Call,
            _: opm_sandbox::Context,
            _: &Limits,
        ) -> Result<CallOutcome, String> {
            Ok(returning(self.0.clone()))
        }

        fn digest(&self, _: &str) -> String {
            String::new()
        }
    }

    /// Security review (2026-11): a deeply nested resource is written as many times its JSON (8 MB
    /// per call became 976 MB). What a call's resources would be as YAML is bounded before any
    /// of it is written: a call over four times its output limit fails, a resource of the usual
    /// shape is far inside.
    #[test]
    fn a_call_whose_resources_would_be_too_large_as_yaml_fails_before_they_are_written() {
        let chain = format!("{}{{}}{}", r#"{"a":"#.repeat(120), "}".repeat(120));
        let deep = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"deep"}},"x":[{}]}}"#,
            vec![chain.as_str(); 40].join(",")
        );
        let limits = Limits {
            output: deep.len(),
            ..Limits::default()
        };
        let value: Value = serde_json::from_str(&deep).unwrap();
        let bound = super::super::write::yaml_bound(&value);
        let written = super::super::write::yaml(&value).unwrap().len();
        assert!(
            bound >= written,
            "the bound {bound} is under the YAML's {written} bytes"
        );
        assert!(
            written > deep.len() * YAML_PER_OUTPUT_BYTE,
            "the test needs a resource whose YAML is {YAML_PER_OUTPUT_BYTE}× its JSON: {written}"
        );
        let call = Call {
            component: "c".into(),
            transformer: "t".into(),
            provider: "p".into(),
            input: "{}".into(),
        };
        let context = context();
        let rendered = execute_with(&Returns(vec![deep]), &[&call], &context, &limits.into());
        assert!(rendered.resources.is_empty());
        let failure = format!("{}", rendered.failures[0].error);
        assert!(failure.contains("of YAML"), "{failure}");

        let usual = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api","labels":{"app":"api"}},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"api","image":"nginx:1.27","ports":[{"containerPort":8080}]}]}}}}"#;
        let value: Value = serde_json::from_str(usual).unwrap();
        let bound = super::super::write::yaml_bound(&value);
        let written = super::super::write::yaml(&value).unwrap().len();
        assert!(
            bound >= written && bound < usual.len() * YAML_PER_OUTPUT_BYTE,
            "{bound}"
        );
    }
}
