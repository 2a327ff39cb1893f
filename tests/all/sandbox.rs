//! The sandbox against hostile guests built from `transformers/testing/`: each is stopped by
//! the right limit with an error that names the component, the transformer and the limit, and a
//! healthy component in the same render still renders.

use std::collections::BTreeMap;
use std::time::Duration;

use opm_core::matching::Call;
use opm_runtime::render::{self, CallReport, FailureKind, RenderContext, Rendered};
use opm_sandbox::{CallError, Limits, Sandbox};
use opm_tests::guests;
use serde_json::json;

pub(crate) const DEPLOYMENT: &str = "transformer.opm.dev/workload@v1#DeploymentTransformer";
pub(crate) const HOSTILE: &str = "test.opm.dev/hostile@v1#HostileTransformer";

// A guest without a test here is a compile error.
macro_rules! assert_guest_has_test {
    ($guest:ident) => {
        const _: fn() = $guest;
    };
}
use crate::contract::{
    contract_1_0_kubernetes_deployment, contract_1_0_kubernetes_renderer,
    contract_1_1_kubernetes_deployment, contract_1_1_kubernetes_renderer, testing_context,
};
use crate::fixtures::markers::*;
use crate::polyglot::{
    example_service_c, example_service_js, example_service_python, example_service_rust,
};
use crate::render::testing_leak;
use crate::renderer::testing_hostile_renderer;
opm_tests::foreach_guest!(assert_guest_has_test);

pub(crate) fn context() -> RenderContext {
    RenderContext {
        name: "hostile".into(),
        instance: "hostile".into(),
        namespace: "default".into(),
        version: "0.1.0".into(),
        provider: "test".into(),
        timestamp: "2026-01-01T00:00:00Z".into(),
        strict: false,
        module_labels: BTreeMap::new(),
        secret_kinds: vec!["Secret".into()],
        platform: None,
        provider_versions: Default::default(),
    }
}

/// Renders two components in one render: `bad`, run by `guest`, and `good`, a stateless
/// container run by the real Deployment transformer of the embedded provider.
pub(crate) fn render_beside_a_healthy_component(guest: &[u8], limits: Limits) -> Rendered {
    render_beside_a_healthy_component_labelled(guest, &[], limits)
}

/// As [`render_beside_a_healthy_component`], with `labels` added to the `bad` component's.
pub(crate) fn render_beside_a_healthy_component_labelled(
    guest: &[u8],
    labels: &[(&str, &str)],
    limits: Limits,
) -> Rendered {
    let provider = opm_runtime::embedded::load().expect("embedded provider loads");
    let sandbox = opm_tests::shared_cache_sandbox(&limits);
    let mut compiled = BTreeMap::new();
    compiled.insert(HOSTILE.to_owned(), sandbox.compile(HOSTILE, guest));
    compiled.insert(
        DEPLOYMENT.to_owned(),
        Ok(sandbox
            .compile(DEPLOYMENT, &provider.components[DEPLOYMENT])
            .expect("deployment compiles")),
    );
    let input = |name: &str| {
        let mut component_labels = json!({"core.opm.dev/workload-type": "stateless"});
        if name == "bad" {
            for (key, value) in labels {
                component_labels[*key] = json!(value);
            }
        }
        json!({
            "metadata": {"name": name, "labels": component_labels},
            "resources": ["opm.dev/resources/workload@v1#Container"],
            "traits": [], "policies": [],
            "spec": {"container": {"image": "nginx:1.27"}},
            "defaults": {},
        })
        .to_string()
    };
    let calls = [
        Call {
            component: "bad".into(),
            transformer: HOSTILE.into(),
            provider: "test".into(),
            input: input("bad"),
        },
        Call {
            component: "good".into(),
            transformer: DEPLOYMENT.into(),
            provider: "kubernetes".into(),
            input: input("good"),
        },
    ];
    render::execute(
        &sandbox,
        &compiled,
        &[&calls[0], &calls[1]],
        &context(),
        &limits.into(),
    )
}

/// The one failure of a render, which must be the hostile component's; the healthy component
/// must have rendered its Deployment.
pub(crate) fn single_failure(rendered: &Rendered) -> (&CallError, String) {
    assert_eq!(rendered.failures.len(), 1, "{:#?}", rendered.failures);
    let failure = &rendered.failures[0];
    assert_eq!(failure.component, "bad");
    assert_eq!(failure.transformer, HOSTILE);
    assert!(failure.digest.starts_with("blake3:"), "{}", failure.digest);
    let FailureKind::Call(error) = &failure.error else {
        panic!("not a call failure: {failure}")
    };
    assert_eq!(
        rendered.resources.len(),
        1,
        "the healthy component still renders"
    );
    assert_eq!(rendered.resources[0].component, "good");
    assert_eq!(rendered.resources[0].value()["kind"], "Deployment");
    let message = failure.to_string();
    eprintln!("{message}");
    (error, message)
}

fn testing_spin() {}

#[test]
fn an_endless_loop_runs_out_of_fuel() {
    let limits = Limits {
        fuel: 20_000_000,
        ..Limits::default()
    };
    let rendered = render_beside_a_healthy_component(guests::TESTING_SPIN, limits);
    let (error, message) = single_failure(&rendered);
    assert_eq!(*error, CallError::Fuel { limit: 20_000_000 });
    assert!(
        message.starts_with(&format!(
            "component \"bad\": transformer {HOSTILE} (blake3:"
        )),
        "{message}"
    );
    assert!(
        message.contains("ran out of fuel: used all 20000000 units"),
        "{message}"
    );
}

#[test]
fn an_endless_loop_with_fuel_to_spare_times_out() {
    let limits = Limits {
        fuel: u64::MAX / 2,
        timeout: Duration::from_millis(200),
        ..Limits::default()
    };
    let rendered = render_beside_a_healthy_component(guests::TESTING_SPIN, limits);
    let (error, message) = single_failure(&rendered);
    assert_eq!(
        *error,
        CallError::Timeout {
            limit: Duration::from_millis(200)
        }
    );
    assert!(
        message.contains("timed out: still running after the time limit of 200ms"),
        "{message}"
    );
}

fn testing_hog() {}

#[test]
fn unbounded_allocation_hits_the_memory_limit_not_a_panic() {
    let limits = Limits {
        memory: 16 << 20,
        ..Limits::default()
    };
    let rendered = render_beside_a_healthy_component(guests::TESTING_HOG, limits);
    let (error, message) = single_failure(&rendered);
    let CallError::Memory { limit, requested } = error else {
        panic!("not a memory error: {message}")
    };
    assert_eq!(*limit, 16 << 20);
    assert!(*requested > 16 << 20);
    assert!(
        message.contains("hit the memory limit of 16 MiB"),
        "{message}"
    );
    assert!(!message.contains("panicked"), "{message}");
}

fn testing_panic() {}

#[test]
fn a_panic_reports_its_message() {
    let rendered = render_beside_a_healthy_component(guests::TESTING_PANIC, Limits::default());
    let (error, message) = single_failure(&rendered);
    let CallError::Panic { message: panic } = error else {
        panic!("not a panic: {message}")
    };
    assert!(panic.starts_with("panicked at "), "{panic}");
    assert!(
        panic.ends_with(": component bad has nothing this transformer can use"),
        "{panic}"
    );
    assert!(!error.is_limit());
}

fn testing_misbehave() {}

#[test]
fn endless_recursion_overflows_the_stack() {
    let limits = Limits::default();
    let rendered = render_beside_a_healthy_component_labelled(
        guests::TESTING_MISBEHAVE,
        &[("misbehave.opm.dev/mode", "recurse")],
        limits,
    );
    let (error, message) = single_failure(&rendered);
    assert_eq!(
        *error,
        CallError::Stack {
            limit: limits.wasm_stack
        }
    );
    assert!(
        message.contains("overflowed its stack of 512 KiB (deep or endless recursion)"),
        "{message}"
    );
}

#[test]
fn output_over_the_output_limit_fails_the_call() {
    let limits = Limits {
        output: 256 << 10,
        ..Limits::default()
    };
    let rendered = render_beside_a_healthy_component_labelled(
        guests::TESTING_MISBEHAVE,
        &[("misbehave.opm.dev/mode", "huge")],
        limits,
    );
    let (error, message) = single_failure(&rendered);
    let CallError::Output { limit, size } = error else {
        panic!("not an output error: {message}")
    };
    assert_eq!(*limit, 256 << 10);
    assert!(*size > 1 << 20, "{size}");
    assert!(
        message.contains("of output, over the output limit of 256 KiB"),
        "{message}"
    );
}

#[test]
fn log_lines_past_the_log_limit_are_dropped_and_counted() {
    let limits = Limits {
        log: 8 << 10,
        ..Limits::default()
    };
    let rendered = render_beside_a_healthy_component_labelled(
        guests::TESTING_MISBEHAVE,
        &[("misbehave.opm.dev/mode", "chatty")],
        limits,
    );
    assert!(rendered.failures.is_empty(), "{:#?}", rendered.failures);
    let chatty = call_of(&rendered, "bad");
    let kept: usize = chatty.logs.iter().map(|line| line.message.len()).sum();
    assert!(kept <= 8 << 10, "{kept} bytes of log kept");
    // Each 100-byte line costs its text plus the fixed cost of a line.
    assert_eq!(
        chatty.logs.len(),
        (8 << 10) / (100 + opm_sandbox::LOG_LINE_COST)
    );
    assert_eq!(chatty.logs.len() + chatty.logs_dropped, 10_000);
    assert_eq!(chatty.resources, 1, "the call itself succeeds");
}

/// Matching spec ac13: a transformer's output is a list of resources, even of one.
#[test]
fn ac13_a_single_resource_output_is_a_list() {
    let sandbox = opm_runtime::embedded::sandbox(&Limits::default()).expect("engine");
    assert_eq!(
        kinds_made_by(
            &sandbox,
            "transformer.opm.dev/network@v1#ServiceTransformer"
        ),
        ["Service"]
    );
}

#[test]
fn embedded_transformers_import_nothing_but_log_and_export_the_transformer() {
    let provider = opm_runtime::embedded::load().expect("embedded provider loads");
    let sandbox = opm_tests::shared_cache_sandbox(&Limits::default());
    assert!(!provider.components.is_empty());
    for (fqn, bytes) in &provider.components {
        let compiled = sandbox.compile(fqn, bytes).expect("compiles");
        assert_eq!(
            compiled.imports,
            ["opm:transformer/log@1.2.0", "opm:transformer/types@1.2.0"],
            "{fqn}"
        );
        assert_eq!(
            compiled.exports,
            ["opm:transformer/transformer@1.2.0"],
            "{fqn}"
        );
        assert_eq!(
            compiled.contract,
            opm_core::contract::Version::NEWEST,
            "{fqn}"
        );
    }
}

#[test]
fn a_core_module_is_not_a_transformer() {
    let sandbox = Sandbox::new(&Limits::default()).expect("engine");
    // The smallest valid core module: the magic number and version 1.
    let error = sandbox
        .compile(HOSTILE, b"\0asm\x01\0\0\0")
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with(&format!("transformer {HOSTILE} (blake3:")),
        "{error}"
    );
    assert!(error.contains("cannot be loaded"), "{error}");
}

#[test]
fn a_tampered_compile_cache_entry_is_never_loaded() {
    let bytes = &not_embedded(DEPLOYMENT);
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = dir.path().join("compiled");
    let key_file = dir.path().join("config/compile-cache.key");
    let sandbox = || {
        let cache =
            opm_sandbox::CompileCache::open(cache_dir.clone(), &key_file).expect("cache opens");
        Sandbox::new(&Limits::default())
            .expect("engine")
            .with_cache(Some(cache))
    };
    sandbox()
        .compile(DEPLOYMENT, bytes)
        .expect("compiles and caches");
    let entries = opm_tests::file_names(&cache_dir);
    assert_eq!(entries.len(), 1, "{entries:?}");
    let entry = cache_dir.join(&entries[0]);
    let sound = std::fs::read(&entry).unwrap();

    // Flip one byte of the compiled code: the entry must be refused, the component compiled
    // afresh (so the call still works), and the entry rewritten.
    let mut tampered = sound.clone();
    let middle = tampered.len() / 2;
    tampered[middle] ^= 0xff;
    std::fs::write(&entry, &tampered).unwrap();
    let sandbox = sandbox();
    let compiled = sandbox.compile(DEPLOYMENT, bytes).expect("recompiles");
    let input =
        json!({"metadata": {"name": "api"}, "spec": {"container": {"image": "nginx"}}}).to_string();
    let outcome = sandbox.call(
        &compiled,
        &input,
        context().for_component("api"),
        &Limits::default(),
    );
    assert!(outcome.result.is_ok(), "{:?}", outcome.result);
    assert_eq!(
        std::fs::read(&entry).unwrap(),
        sound,
        "the entry is rewritten"
    );
}

/// The report of the call that rendered `component`.
pub(crate) fn call_of<'a>(rendered: &'a Rendered, component: &str) -> &'a CallReport {
    rendered
        .calls
        .iter()
        .find(|call| call.component == component)
        .unwrap_or_else(|| panic!("the call of {component} is reported"))
}

/// Asserts that the call of `bad` succeeded and kept exactly as many empty log lines as its log
/// limit pays for, and counted the rest of the `total` it logged as dropped.
pub(crate) fn assert_empty_lines_charged(rendered: &Rendered, limits: &Limits, total: usize) {
    assert!(rendered.failures.is_empty(), "{:#?}", rendered.failures);
    let call = call_of(rendered, "bad");
    assert_eq!(call.logs.len(), limits.log / opm_sandbox::LOG_LINE_COST);
    assert_eq!(call.logs.len() + call.logs_dropped, total);
}

/// Renders the misbehaving guest in `mode` beside a healthy component under `limits`.
fn misbehave(mode: &str, limits: Limits) -> Rendered {
    render_beside_a_healthy_component_labelled(
        guests::TESTING_MISBEHAVE,
        &[("misbehave.opm.dev/mode", mode)],
        limits,
    )
}

/// Each log line costs its text plus a fixed cost, so two million empty lines are not all kept:
/// past the log limit, lines are dropped and only counted.
#[test]
fn empty_log_lines_are_charged_and_dropped_past_the_log_limit() {
    let limits = Limits {
        timeout: Duration::from_secs(60),
        ..Limits::default()
    };
    let rendered = misbehave("empty-log-spam", limits);
    assert_empty_lines_charged(&rendered, &limits, 2_000_000);
}

/// A render's logs are bounded as a whole, not only per call: each of N calls keeps at most
/// `render_log / N` bytes.
#[test]
fn a_render_keeps_at_most_its_share_of_the_render_log_per_call() {
    let limits = Limits {
        render_log: 8 << 10,
        ..Limits::default()
    };
    let rendered = misbehave("chatty", limits);
    let chatty = call_of(&rendered, "bad");
    let kept: usize = chatty
        .logs
        .iter()
        .map(|line| line.message.len() + opm_sandbox::LOG_LINE_COST)
        .sum();
    assert!(kept <= (8 << 10) / 2, "{kept} bytes of log kept");
    assert!(chatty.logs_dropped > 9_900, "{}", chatty.logs_dropped);
}

/// An error text counts against the output limit: a 60 MiB one is not copied, kept or printed
/// whole, since the copy out of the guest stops at the limit.
#[test]
fn a_huge_error_text_counts_against_the_output_limit() {
    let limits = Limits {
        memory: 256 << 20,
        ..Limits::default()
    };
    let rendered = misbehave("huge-error", limits);
    let (error, message) = single_failure(&rendered);
    assert!(
        matches!(error, CallError::Copy { .. } | CallError::Output { .. }),
        "{message}"
    );
    assert!(message.contains("output limit of 16 MiB"), "{message}");
    assert!(message.len() < 1024, "{} bytes of message", message.len());
}

/// Output over the limit is never copied into the host whole: with a 1 MiB limit, the copy of
/// 30 MiB stops at the limit, and the error names it.
#[test]
fn the_copy_out_of_the_guest_stops_at_the_output_limit() {
    let limits = Limits {
        output: 1 << 20,
        memory: 256 << 20,
        ..Limits::default()
    };
    let rendered = misbehave("big-copy", limits);
    let (error, message) = single_failure(&rendered);
    assert_eq!(*error, CallError::Copy { limit: 1 << 20 }, "{message}");
    assert!(message.contains("output limit of 1 MiB"), "{message}");
}

/// A million tiny resources: the host's copy of the list (24 bytes an entry on the host) stops
/// at the output limit before the list is complete.
#[test]
fn a_million_tiny_resources_stop_at_the_output_limit() {
    let limits = Limits {
        memory: 256 << 20,
        ..Limits::default()
    };
    let rendered = misbehave("many-resources", limits);
    let (error, message) = single_failure(&rendered);
    assert_eq!(*error, CallError::Copy { limit: 16 << 20 }, "{message}");
}

/// Fewer, still too many: the list is copied, and refused by count before any is parsed.
#[test]
fn too_many_resources_hit_the_resource_limit() {
    let limits = Limits {
        resources: 500,
        ..Limits::default()
    };
    let rendered = render_beside_a_healthy_component_labelled(
        guests::TESTING_MISBEHAVE,
        &[
            ("misbehave.opm.dev/mode", "many-resources"),
            ("misbehave.opm.dev/count", "20000"),
        ],
        limits,
    );
    let (error, message) = single_failure(&rendered);
    assert_eq!(
        *error,
        CallError::Resources {
            limit: 500,
            count: 20_000
        }
    );
    assert!(
        message.contains("returned 20000 resources, over the limit of 500 resources per call"),
        "{message}"
    );
}

/// The host stretches a Secret's content with a memory-hard hash for each checksum reference
/// to it, after the call and outside its fuel and time: a call that references more Secrets
/// than the host stretches for one call fails by name, without the host hashing them, and the
/// healthy component beside it renders.
#[test]
fn a_call_referencing_ten_thousand_secrets_fails_at_the_secret_checksum_limit() {
    let rendered = render_beside_a_healthy_component_labelled(
        guests::TESTING_MISBEHAVE,
        &[("misbehave.opm.dev/mode", "secret-checksums")],
        Limits::default(),
    );
    assert_eq!(rendered.failures.len(), 1, "{:#?}", rendered.failures);
    let failure = &rendered.failures[0];
    assert_eq!(
        (failure.component.as_str(), failure.transformer.as_str()),
        ("bad", HOSTILE)
    );
    assert_eq!(failure.error, FailureKind::TooManySecrets(9_999));
    let message = failure.to_string();
    assert!(
        message.contains(
            "references 9999 Secrets in checksum annotations, over the limit of 32 Secrets per call"
        ),
        "{message}"
    );
    let good: Vec<_> = rendered
        .resources
        .iter()
        .filter(|resource| resource.component == "good")
        .collect();
    assert_eq!(good.len(), 1, "the healthy component still renders");
    assert_eq!(good[0].value()["kind"], "Deployment");
}

/// Within the limit, every reference resolves.
#[test]
fn a_call_referencing_as_many_secrets_as_the_limit_resolves_them() {
    let rendered = render_beside_a_healthy_component_labelled(
        guests::TESTING_MISBEHAVE,
        &[
            ("misbehave.opm.dev/mode", "secret-checksums"),
            ("misbehave.opm.dev/count", "32"),
        ],
        Limits::default(),
    );
    assert_eq!(rendered.failures, []);
    let referrer = rendered
        .resources
        .iter()
        .find(|resource| resource.identity.kind == "ConfigMap")
        .expect("the referring ConfigMap")
        .value();
    let sum = &referrer["metadata"]["annotations"]["checksum.opm.dev/config"];
    assert_eq!(sum.as_str().map(str::len), Some(64), "{sum}");
}

/// A guest that logs a line starting with "panicked" and then traps some other way has
/// trapped; it does not get to call that a panic.
#[test]
fn logging_panicked_does_not_make_a_trap_a_panic() {
    let rendered = misbehave("fake-panic", Limits::default());
    let (error, message) = single_failure(&rendered);
    let CallError::Trap { message: trap } = error else {
        panic!("not a trap: {message}")
    };
    assert!(trap.contains("out of bounds memory access"), "{trap}");
}

/// A denied `memory.grow` the guest handled does not hide the endless loop that followed: what
/// stopped the call is the fuel limit, and the error says so.
#[test]
fn a_handled_memory_refusal_does_not_hide_the_limit_that_stopped_the_call() {
    let limits = Limits {
        fuel: 20_000_000,
        ..Limits::default()
    };
    let rendered = misbehave("grow-then-spin", limits);
    let (error, message) = single_failure(&rendered);
    assert_eq!(*error, CallError::Fuel { limit: 20_000_000 }, "{message}");
}

/// A log line and an error text cut at 4,096 bytes are redacted before they are cut, so a
/// secret straddling the cut never prints half of itself.
#[test]
fn a_secret_straddling_the_cut_is_redacted_in_logs_and_errors() {
    let secret = "nginx:1.27";
    let sandbox = Sandbox::new(&Limits::default())
        .expect("engine")
        .with_redactor(opm_core::redact::Redactor::new([secret.to_owned()]));
    let guest = sandbox
        .compile(HOSTILE, guests::TESTING_MISBEHAVE)
        .expect("compiles");
    let input = json!({
        "metadata": {"name": "bad", "labels": {"misbehave.opm.dev/mode": "say-secret"}},
        "spec": {"container": {"image": secret}},
    })
    .to_string();
    let outcome = sandbox.call(
        &guest,
        &input,
        context().for_component("bad"),
        &Limits::default(),
    );
    let error = outcome.result.expect_err("the guest fails").to_string();
    let logged = &outcome.logs[0].message;
    for text in [&error, logged] {
        // Before the fix the kept text ended in "ngin", the first four bytes of the secret.
        assert!(!text.contains("ngi"), "…{}", &text[text.len() - 60..]);
        assert!(text.contains("xxx[red"), "…{}", &text[text.len() - 60..]);
    }
    assert!(
        error.ends_with("more bytes cut)"),
        "…{}",
        &error[error.len() - 60..]
    );
}

/// A component whose core module has a shared memory: valid WebAssembly with threads, which
/// the sandbox's engine does not enable.
fn shared_memory_component() -> Vec<u8> {
    wat::parse_str(
        r#"(component
            (core module $m (memory 1 1 shared))
            (core instance (instantiate $m)))"#,
    )
    .expect("valid component text")
}

/// A component that does not compile does not abort the render: it fails its own calls,
/// reported with the others, and the rest of the render completes.
#[test]
fn a_transformer_that_does_not_compile_fails_alone() {
    let rendered = render_beside_a_healthy_component(&shared_memory_component(), Limits::default());
    assert_eq!(rendered.failures.len(), 1, "{:#?}", rendered.failures);
    let failure = &rendered.failures[0];
    let message = failure.to_string();
    assert_eq!(failure.component, "bad");
    assert!(matches!(failure.error, FailureKind::Load(_)), "{message}");
    assert!(
        message.starts_with(&format!(
            "component \"bad\": transformer {HOSTILE} (blake3:"
        )),
        "{message}"
    );
    assert!(message.contains("cannot be loaded"), "{message}");
    assert_eq!(rendered.resources.len(), 1, "the healthy component renders");
    assert_eq!(rendered.resources[0].value()["kind"], "Deployment");
}

/// The load checks validate with the engine's WebAssembly features, so a component the engine
/// cannot compile does not pass them (nor `opm mod vet`).
#[test]
fn the_load_checks_use_the_engines_features() {
    let error = opm_core::bundle::component::check(&shared_memory_component())
        .expect_err("refused at load")
        .to_string();
    assert!(
        error.starts_with("it is not a valid WebAssembly component"),
        "{error}"
    );
    assert!(error.contains("threads"), "{error}");
}

/// The load checks validate function bodies too.
#[test]
fn the_load_checks_validate_function_bodies() {
    let ill_typed = wat::parse_str(
        r#"(component
            (core module $m (func (result i32) i64.const 0))
            (core instance (instantiate $m)))"#,
    )
    .expect("the text parses; the body is ill-typed");
    let error = opm_core::bundle::component::check(&ill_typed)
        .expect_err("refused at load")
        .to_string();
    assert!(
        error.starts_with("it is not a valid WebAssembly component"),
        "{error}"
    );
    assert!(error.contains("type mismatch"), "{error}");
}

const SERVICE: &str = "transformer.opm.dev/network@v1#ServiceTransformer";

/// The component of the embedded provider's transformer `fqn`, with a custom section more: its
/// code is not built into opm, so a sandbox compiles it or loads it from its cache.
fn not_embedded(fqn: &str) -> Vec<u8> {
    let provider = opm_runtime::embedded::load().expect("embedded provider loads");
    // The provider's transformers share one component: each gets a copy of its own, named
    // after it, so that two of them are two components, two compiles and two cache entries.
    let short = fqn.rsplit('#').next().unwrap_or(fqn);
    opm_tests::with_custom_section_named(&provider.components[fqn], short)
}

/// A sandbox that keeps compiled components in `cache_dir`, with the key in `config/` beside it.
fn cached_sandbox(cache_dir: &std::path::Path) -> Sandbox {
    cached_sandbox_keyed(cache_dir, "compile-cache.key")
}

/// A sandbox that keeps compiled components in `cache_dir`, with the key in `config/KEY_FILE`
/// beside it.
fn cached_sandbox_keyed(cache_dir: &std::path::Path, key_file: &str) -> Sandbox {
    let key_file = cache_dir.with_file_name("config").join(key_file);
    let cache =
        opm_sandbox::CompileCache::open(cache_dir.to_owned(), &key_file).expect("cache opens");
    Sandbox::new(&Limits::default())
        .expect("engine")
        .with_cache(Some(cache))
}

/// The kinds of the resources the transformer `fqn` of the embedded provider makes, compiled
/// by `sandbox`, of a container with an exposed port (which both the Deployment and the Service
/// transformers accept).
fn kinds_made_by(sandbox: &Sandbox, fqn: &str) -> Vec<String> {
    let compiled = sandbox.compile(fqn, &not_embedded(fqn)).expect("compiles");
    let input = json!({
        "metadata": {"name": "api", "labels": {}},
        "resources": ["opm.dev/resources/workload@v1#Container"],
        "traits": ["opm.dev/traits/network@v1#Expose"],
        "policies": [],
        "spec": {
            "container": {"image": "nginx:1.27", "ports": {"http": {"containerPort": 8080}}},
            "expose": {"type": "ClusterIP"},
        },
        "defaults": {},
    })
    .to_string();
    let outcome = sandbox.call(
        &compiled,
        &input,
        context().for_component("api"),
        &Limits::default(),
    );
    let documents = outcome.result.expect("the call succeeds");
    documents
        .iter()
        .map(|document| {
            let resource: serde_json::Value = serde_json::from_str(document).unwrap();
            resource["kind"].as_str().unwrap_or_default().to_owned()
        })
        .collect()
}

/// Compiles the Deployment and then the Service transformer into an empty `cache_dir`, and
/// returns the paths of their two entries.
fn deployment_and_service_entries(
    cache_dir: &std::path::Path,
) -> (std::path::PathBuf, std::path::PathBuf) {
    assert_eq!(
        kinds_made_by(&cached_sandbox(cache_dir), DEPLOYMENT),
        ["Deployment"]
    );
    let first = opm_tests::file_names(cache_dir);
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(
        kinds_made_by(&cached_sandbox(cache_dir), SERVICE),
        ["Service"]
    );
    let both = opm_tests::file_names(cache_dir);
    assert_eq!(both.len(), 2, "{both:?}");
    let second = both.iter().find(|name| **name != first[0]).unwrap();
    (cache_dir.join(&first[0]), cache_dir.join(second))
}

/// The audit's finding: copying component A's entry onto B's key made B run A's code, reported
/// under B's digest. An entry is bound to the component it was compiled from.
#[test]
fn a_compile_cache_entry_copied_onto_another_components_key_is_not_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = dir.path().join("compiled");
    let (deployment, service) = deployment_and_service_entries(&cache_dir);
    std::fs::copy(&deployment, &service).unwrap();

    assert_eq!(
        kinds_made_by(&cached_sandbox(&cache_dir), SERVICE),
        ["Service"],
        "the Service transformer runs its own code"
    );
    assert_ne!(
        std::fs::read(&service).unwrap(),
        std::fs::read(&deployment).unwrap(),
        "the Service entry is rewritten"
    );
}

/// A cached component's code is mapped from its entry, not copied into fresh memory: the
/// process maps the entry's file while it holds the component.
#[cfg(target_os = "linux")]
#[test]
fn a_compile_cache_entry_is_mapped_from_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = dir.path().join("compiled");
    let (deployment, _) = deployment_and_service_entries(&cache_dir);
    let sandbox = cached_sandbox(&cache_dir);
    let compiled = sandbox
        .compile(DEPLOYMENT, &not_embedded(DEPLOYMENT))
        .expect("loads");
    assert_eq!(compiled.code.source, opm_sandbox::CodeSource::Cache);
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let entry = deployment.canonicalize().unwrap();
    assert!(
        maps.lines()
            .any(|line| line.ends_with(entry.to_str().unwrap())),
        "{} is not mapped:\n{maps}",
        entry.display()
    );
}

/// A first render's embedded code is written to the cache and mapped from the entry it has just
/// written, not copied into memory: and what it wrote is sound, a MAC and all, so the next
/// sandbox loads it from the cache.
#[test]
fn embedded_code_is_mapped_from_the_entry_it_is_stored_in_and_found_there_next() {
    use opm_sandbox::CodeSource;
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = dir.path().join("compiled");
    let provider = opm_runtime::embedded::load().expect("embedded");
    let (fqn, bytes) = provider.components.iter().next().expect("a component");
    let first = cached_sandbox(&cache_dir).with_precompiled(&opm_runtime::embedded::CODE);
    let compiled = first.compile(fqn, bytes).expect("loads");
    assert_eq!(compiled.code.source, CodeSource::Embedded);
    let entries = std::fs::read_dir(&cache_dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "cwasm"))
        .collect::<Vec<_>>();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let entry = entries[0].canonicalize().unwrap();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    assert!(
        maps.lines()
            .any(|line| line.ends_with(entry.to_str().unwrap())),
        "{} is not mapped:\n{maps}",
        entry.display()
    );
    let second = cached_sandbox(&cache_dir).with_precompiled(&opm_runtime::embedded::CODE);
    let compiled = second.compile(fqn, bytes).expect("loads");
    assert_eq!(compiled.code.source, CodeSource::Cache);
}

/// Anyone who can write an entry can recompute a plain digest of it; an entry is loaded only
/// with a MAC made by the key, which lives outside the cache directory.
#[test]
fn a_compile_cache_entry_with_a_forged_mac_is_not_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = dir.path().join("compiled");
    let (deployment, service) = deployment_and_service_entries(&cache_dir);
    // An entry is the compiled code, 32 bytes that vouch for it, and a magic line (itself
    // between two newlines).
    let split = |entry: &[u8]| {
        let magic = entry[..entry.len() - 1]
            .iter()
            .rposition(|&b| b == b'\n')
            .unwrap();
        (entry[magic..].to_vec(), entry[..magic - 32].to_vec())
    };
    let (magic, deployment_code) = split(&std::fs::read(&deployment).unwrap());
    let forgeries = [
        blake3::hash(&deployment_code).as_bytes().to_vec(),
        blake3::keyed_hash(&[7; 32], &deployment_code)
            .as_bytes()
            .to_vec(),
    ];
    for forged_mac in forgeries {
        let forged = [deployment_code.clone(), forged_mac, magic.clone()].concat();
        std::fs::write(&service, &forged).unwrap();
        assert_eq!(
            kinds_made_by(&cached_sandbox(&cache_dir), SERVICE),
            ["Service"],
            "the Service transformer runs its own code"
        );
        assert_ne!(
            std::fs::read(&service).unwrap(),
            forged,
            "the entry is rewritten"
        );
    }
}

/// An entry is made with the key of the cache that wrote it: a cache with another key refuses
/// it, compiles afresh and rewrites it.
#[test]
fn a_compile_cache_entry_made_with_another_key_is_not_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = dir.path().join("compiled");
    let (deployment, service) = deployment_and_service_entries(&cache_dir);
    let (made_with_one_key, service_entry) = (
        std::fs::read(&deployment).unwrap(),
        std::fs::read(&service).unwrap(),
    );
    std::fs::copy(&deployment, &service).unwrap();
    let other = cached_sandbox_keyed(&cache_dir, "another.key");
    assert_eq!(kinds_made_by(&other, SERVICE), ["Service"]);
    assert_eq!(kinds_made_by(&other, DEPLOYMENT), ["Deployment"]);
    let made_with_another = std::fs::read(&deployment).unwrap();
    assert_ne!(
        made_with_another, made_with_one_key,
        "rewritten with the other key"
    );
    assert_ne!(std::fs::read(&service).unwrap(), service_entry);
}

/// The audit's finding: a huge timeout wrapped when turned into epoch ticks. A call under the
/// largest timeout there is runs as any other.
#[test]
fn a_call_under_the_largest_timeout_runs() {
    let limits = Limits {
        timeout: Duration::MAX,
        ..Limits::default()
    };
    let provider = opm_runtime::embedded::load().expect("embedded provider loads");
    let sandbox = opm_tests::shared_cache_sandbox(&limits);
    let compiled = sandbox
        .compile(DEPLOYMENT, &provider.components[DEPLOYMENT])
        .expect("compiles");
    let input =
        json!({"metadata": {"name": "api"}, "spec": {"container": {"image": "nginx"}}}).to_string();
    let outcome = sandbox.call(&compiled, &input, context().for_component("api"), &limits);
    assert!(outcome.result.is_ok(), "{:?}", outcome.result);
}

/// A render's sandbox is tiered: what has no code yet, Winch compiles, and what Winch cannot
/// compile (a tail call: Winch does not take the tail-call proposal) Cranelift does. Either way
/// the transformer runs, each in the engine that compiled it.
#[test]
fn what_winch_cannot_compile_a_tiered_sandbox_compiles_with_cranelift() {
    use opm_sandbox::CodeSource;
    use opm_sandbox::Compiler;
    let tiered = Sandbox::with_compiler(&Limits::default(), Compiler::Tiered).expect("engine");
    let baseline = Sandbox::with_compiler(&Limits::default(), Compiler::Baseline).expect("engine");
    let run = |compiled| {
        tiered
            .call(
                compiled,
                &"{}".to_owned(),
                context().for_component("c"),
                &Limits::default(),
            )
            .result
    };

    let compiled = tiered
        .compile("invalid-json", guests::INVALID_JSON)
        .expect("compiles");
    assert_eq!(compiled.code.source, CodeSource::CompiledBaseline);
    assert_eq!(run(&compiled).expect("runs").len(), 2);

    let error = baseline
        .compile("tail-call", guests::TAIL_CALL)
        .expect_err("Winch compiles tail calls now: the test needs another construct");
    assert!(error.to_string().contains("tail"), "{error}");
    let compiled = tiered
        .compile("tail-call", guests::TAIL_CALL)
        .expect("Cranelift compiles it");
    assert_eq!(compiled.code.source, CodeSource::Compiled);
    assert_eq!(run(&compiled).expect("runs"), Vec::<String>::new());
}

/// CI's finding: a render that loaded Winch's code from the cache showed "compiling 1
/// transformer … on first use" on a busy machine, because the check behind the progress line
/// asked only for Cranelift's entry. What a tiered sandbox stored with Winch counts as cached.
#[test]
fn what_a_tiered_sandbox_stored_with_winch_counts_as_cached() {
    use opm_sandbox::CodeSource;
    use opm_sandbox::Compiler;
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = dir.path().join("compiled");
    let tiered = || {
        let key_file = dir.path().join("config").join("compile-cache.key");
        let cache =
            opm_sandbox::CompileCache::open(cache_dir.clone(), &key_file).expect("cache opens");
        Sandbox::with_compiler(&Limits::default(), Compiler::Tiered)
            .expect("engine")
            .with_cache(Some(cache))
    };
    let first = tiered();
    assert!(!first.is_cached(guests::INVALID_JSON));
    let compiled = first
        .compile("invalid-json", guests::INVALID_JSON)
        .expect("compiles");
    assert_eq!(compiled.code.source, CodeSource::CompiledBaseline);

    let second = tiered();
    assert!(second.is_cached(guests::INVALID_JSON));
    let compiled = second
        .compile("invalid-json", guests::INVALID_JSON)
        .expect("loads");
    assert_eq!(compiled.code.source, CodeSource::CacheBaseline);
}

/// Every component of every embedded provider loads the code build.rs precompiled for it into
/// the sandbox's engine, and compiles nothing: a change of the engine's settings, or of
/// wasmtime, that the build did not follow fails here rather than making every render compile.
/// The baseline compiler's engine never takes that code.
#[test]
fn every_embedded_component_loads_its_precompiled_code() {
    use opm_sandbox::CodeSource;
    use opm_sandbox::Compiler;
    let sandbox = opm_runtime::embedded::sandbox(&Limits::default()).expect("engine");
    let baseline = Sandbox::with_compiler(&Limits::default(), Compiler::Baseline)
        .expect("engine")
        .with_precompiled(&opm_runtime::embedded::CODE);
    let mut loaded = 0;
    for name in opm_runtime::embedded::PROVIDERS.names() {
        let provider = opm_runtime::embedded::PROVIDERS
            .load_named(name)
            .expect("embedded");
        for (fqn, bytes) in &provider.components {
            let compiled = sandbox.compile(fqn, bytes).expect("compiles");
            assert_eq!(compiled.code.source, CodeSource::Embedded, "{name}: {fqn}");
            loaded += 1;
        }
        let renderer = provider.renderer.as_ref().expect("a renderer");
        let compiled = sandbox
            .compile_renderer("renderer", renderer)
            .expect("compiles");
        assert_eq!(
            compiled.code.source,
            CodeSource::Embedded,
            "{name}: renderer"
        );
    }
    assert!(loaded > 10, "{loaded}");
    assert!(
        opm_runtime::embedded::CODE
            .code(&blake3::hash(
                opm_runtime::embedded::load()
                    .unwrap()
                    .renderer
                    .as_ref()
                    .unwrap()
            ))
            .is_some()
    );
    let provider = opm_runtime::embedded::load().expect("embedded");
    let (fqn, bytes) = provider.components.iter().next().expect("a component");
    let compiled = baseline.compile(fqn, bytes).expect("compiles");
    assert_eq!(compiled.code.source, CodeSource::Compiled);
}
