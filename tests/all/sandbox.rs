//! The sandbox against hostile guests built from `transformers/testing/`: each is stopped by
//! the right limit with an error that names the component, the transformer and the limit, and a
//! healthy component in the same render still renders.

use std::collections::BTreeMap;
use std::time::Duration;

use opm_runtime::render::{self, FailureKind, Job, RenderContext, Rendered};
use opm_runtime::sandbox::{CallError, Limits, Sandbox};
use opm_tests::guests;
use serde_json::json;

const DEPLOYMENT: &str = "transformer.opm.dev/workload@v1#DeploymentTransformer";
const HOSTILE: &str = "test.opm.dev/hostile@v1#HostileTransformer";

// A guest without a test here is a compile error.
macro_rules! assert_guest_has_test {
    ($guest:ident) => {
        const _: fn() = $guest;
    };
}
use crate::fixtures::markers::*;
use crate::render::testing_leak;
opm_tests::foreach_guest!(assert_guest_has_test);

fn context() -> RenderContext {
    RenderContext {
        name: "hostile".into(),
        namespace: "default".into(),
        version: "0.1.0".into(),
        provider: "test".into(),
        timestamp: "2026-01-01T00:00:00Z".into(),
        strict: false,
        module_labels: BTreeMap::new(),
    }
}

/// Renders two components in one render: `bad`, run by `guest`, and `good`, a stateless
/// container run by the real Deployment transformer of the embedded provider.
fn render_beside_a_healthy_component(guest: &[u8], limits: Limits) -> Rendered {
    render_beside_a_healthy_component_labelled(guest, &[], limits)
}

/// As [`render_beside_a_healthy_component`], with `labels` added to the `bad` component's.
fn render_beside_a_healthy_component_labelled(
    guest: &[u8],
    labels: &[(&str, &str)],
    limits: Limits,
) -> Rendered {
    let provider = opm_runtime::provider::load_embedded().expect("embedded provider loads");
    let sandbox = Sandbox::new(&limits).expect("engine");
    let mut compiled = BTreeMap::new();
    compiled.insert(
        HOSTILE.to_owned(),
        sandbox.compile(HOSTILE, guest).expect("guest compiles"),
    );
    compiled.insert(
        DEPLOYMENT.to_owned(),
        sandbox
            .compile(DEPLOYMENT, &provider.components[DEPLOYMENT])
            .expect("deployment compiles"),
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
    let jobs = [
        Job {
            component: "bad".into(),
            transformer: HOSTILE.into(),
            input: input("bad"),
        },
        Job {
            component: "good".into(),
            transformer: DEPLOYMENT.into(),
            input: input("good"),
        },
    ];
    render::execute(&sandbox, &compiled, &jobs, &context(), &limits)
}

/// The one failure of a render, which must be the hostile component's; the healthy component
/// must have rendered its Deployment.
fn single_failure(rendered: &Rendered) -> (&CallError, String) {
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
    assert_eq!(rendered.resources[0].value["kind"], "Deployment");
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
    let chatty = rendered
        .calls
        .iter()
        .find(|call| call.component == "bad")
        .expect("the chatty call is reported");
    let kept: usize = chatty.logs.iter().map(|line| line.message.len()).sum();
    assert!(kept <= 8 << 10, "{kept} bytes of log kept");
    assert_eq!(chatty.logs.len(), (8 << 10) / 100);
    assert_eq!(chatty.logs.len() + chatty.logs_dropped, 10_000);
    assert_eq!(chatty.resources, 1, "the call itself succeeds");
}

/// Matching spec ac13: a transformer's output is a list of resources, even of one.
#[test]
fn ac13_a_single_resource_output_is_a_list() {
    let provider = opm_runtime::provider::load_embedded().expect("embedded provider loads");
    let service = "transformer.opm.dev/network@v1#ServiceTransformer";
    let sandbox = Sandbox::new(&Limits::default()).expect("engine");
    let compiled = sandbox
        .compile(service, &provider.components[service])
        .expect("compiles");
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
        &context().for_component("api"),
        &Limits::default(),
    );
    let documents = outcome.result.expect("the call succeeds");
    assert_eq!(documents.len(), 1, "{documents:?}");
    let service: serde_json::Value = serde_json::from_str(&documents[0]).unwrap();
    assert_eq!(service["kind"], "Service");
}

#[test]
fn embedded_transformers_import_nothing_but_log_and_export_the_transformer() {
    let provider = opm_runtime::provider::load_embedded().expect("embedded provider loads");
    let sandbox = Sandbox::new(&Limits::default()).expect("engine");
    assert!(!provider.components.is_empty());
    for (fqn, bytes) in &provider.components {
        let compiled = sandbox.compile(fqn, bytes).expect("compiles");
        assert_eq!(
            compiled.imports,
            ["opm:transformer/log@1.0.0", "opm:transformer/types@1.0.0"],
            "{fqn}"
        );
        assert_eq!(
            compiled.exports,
            ["opm:transformer/transformer@1.0.0"],
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
    let provider = opm_runtime::provider::load_embedded().expect("embedded provider loads");
    let bytes = &provider.components[DEPLOYMENT];
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = dir.path().join("compiled");
    let sandbox = || {
        let cache =
            opm_runtime::sandbox::CompileCache::open(cache_dir.clone()).expect("cache opens");
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
        &context().for_component("api"),
        &Limits::default(),
    );
    assert!(outcome.result.is_ok(), "{:?}", outcome.result);
    assert_eq!(
        std::fs::read(&entry).unwrap(),
        sound,
        "the entry is rewritten"
    );
}
