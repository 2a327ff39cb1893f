//! The adversarial suite: the hand-made fixtures of `tests/fixtures/wat/` against the load
//! checks and the sandbox, and renders where many hostile transformers run at once beside
//! healthy components — which must all render — while the host's memory stays bounded.

use std::collections::BTreeMap;

use opm_core::bundle::component::{self, ComponentError};
use opm_core::matching::Call;
use opm_runtime::render::{self, FailureKind, Rendered, Transformers};
use opm_sandbox::{CallError, Limits, Sandbox};
use opm_tests::guests;
use serde_json::json;

use crate::sandbox::{
    DEPLOYMENT, assert_empty_lines_charged, context, render_beside_a_healthy_component,
    single_failure,
};

/// The memory limit is the total of the call's memories, not each memory's own: eight memories
/// of 62.5 MiB each do not run under a 64 MiB limit.
#[test]
fn many_memories_share_one_memory_limit() {
    let rendered = render_beside_a_healthy_component(guests::MANY_MEMORIES, Limits::default());
    let (error, message) = single_failure(&rendered);
    let CallError::Memory { limit, requested } = error else {
        panic!("not a memory error: {message}")
    };
    assert_eq!(*limit, 64 << 20);
    assert!(*requested > 64 << 20, "{message}");
    assert!(message.contains("of linear memory in all"), "{message}");
}

/// 100 list entries pointing at one 1 MiB string would cost the host 100 MiB once lifted; the
/// copy out of the guest stops at the output limit before that.
#[test]
fn an_output_list_aliasing_one_string_stops_at_the_output_limit() {
    let rendered = render_beside_a_healthy_component(guests::ALIASED_OUTPUT, Limits::default());
    let (error, message) = single_failure(&rendered);
    assert_eq!(*error, CallError::Copy { limit: 16 << 20 }, "{message}");
    assert!(message.contains("output limit of 16 MiB"), "{message}");
}

/// An error text of 60 MiB, from core WebAssembly, stops at the output limit.
#[test]
fn a_60_mib_error_text_stops_at_the_output_limit() {
    let limits = Limits {
        memory: 128 << 20,
        ..Limits::default()
    };
    let rendered = render_beside_a_healthy_component(guests::HUGE_ERROR, limits);
    let (error, message) = single_failure(&rendered);
    assert_eq!(*error, CallError::Copy { limit: 16 << 20 }, "{message}");
}

/// From core WebAssembly: a refused `memory.grow` the guest ignores, then an endless loop, is
/// stopped by the time limit and reported as such, not as the memory limit.
#[test]
fn an_ignored_memory_refusal_then_a_loop_is_a_timeout() {
    let limits = Limits {
        fuel: u64::MAX / 2,
        timeout: std::time::Duration::from_millis(200),
        ..Limits::default()
    };
    let rendered = render_beside_a_healthy_component(guests::GROW_THEN_SPIN, limits);
    let (error, message) = single_failure(&rendered);
    assert_eq!(
        *error,
        CallError::Timeout {
            limit: limits.timeout
        },
        "{message}"
    );
}

/// Twenty million empty log lines, from core WebAssembly, keep the log within its bound.
#[test]
fn twenty_million_empty_log_lines_keep_the_log_bounded() {
    let limits = Limits {
        timeout: std::time::Duration::from_secs(60),
        fuel: u64::MAX / 2,
        ..Limits::default()
    };
    let rendered = render_beside_a_healthy_component(guests::EMPTY_LOG_SPAM, limits);
    assert_empty_lines_charged(&rendered, &limits, 20_000_000);
}

/// Documents that are not JSON fail the call, each reported with its index and the parser's
/// complaint.
#[test]
fn documents_that_are_not_json_are_invalid_output() {
    let rendered = render_beside_a_healthy_component(guests::INVALID_JSON, Limits::default());
    assert_eq!(rendered.failures.len(), 2, "{:#?}", rendered.failures);
    for (index, failure) in rendered.failures.iter().enumerate() {
        let message = failure.to_string();
        assert!(
            message.contains(&format!("returned an invalid resource #{index}: not JSON")),
            "{message}"
        );
    }
    assert_eq!(rendered.resources.len(), 1, "the healthy component renders");
}

#[test]
fn an_unknown_import_is_refused_at_load_with_the_offending_imports() {
    let error = component::check(guests::UNKNOWN_IMPORT).expect_err("refused");
    let ComponentError::DisallowedImports { imports } = &error else {
        panic!("not refused for its imports: {error}")
    };
    assert_eq!(imports, &["evil:host/escape"], "{error}");
    let sandbox = Sandbox::new(&Limits::default()).expect("engine");
    let message = sandbox
        .compile(
            "test.opm.dev/hostile@v1#HostileTransformer",
            guests::UNKNOWN_IMPORT,
        )
        .expect_err("the sandbox refuses it too")
        .to_string();
    assert!(message.contains("it imports evil:host/escape"), "{message}");
}

#[test]
fn the_wrong_interface_version_is_refused_at_load() {
    let error = component::check(guests::WRONG_VERSION).expect_err("refused");
    assert!(
        matches!(
            error,
            ComponentError::WrongVersion { .. } | ComponentError::DisallowedImports { .. }
        ),
        "{error}"
    );
}

#[test]
fn a_malformed_binary_and_a_core_module_are_refused_at_load() {
    assert!(matches!(
        component::check(guests::MALFORMED),
        Err(ComponentError::Invalid(_))
    ));
    assert!(matches!(
        component::check(guests::CORE_MODULE),
        Err(ComponentError::CoreModule)
    ));
}

/// With a real transformer: a component that exports the contract but needs threads is refused
/// at load, and in a render fails alone.
#[test]
fn a_component_needing_threads_is_refused_at_load_and_fails_alone_in_a_render() {
    let error = component::check(guests::SHARED_MEMORY).expect_err("refused at load");
    assert!(error.to_string().contains("threads"), "{error}");
    let rendered = render_beside_a_healthy_component(guests::SHARED_MEMORY, Limits::default());
    assert_eq!(rendered.failures.len(), 1, "{:#?}", rendered.failures);
    assert!(matches!(rendered.failures[0].error, FailureKind::Load(_)));
    assert_eq!(rendered.resources.len(), 1, "the healthy component renders");
}

/// One attack: a guest, run as a transformer of its own, with the labels that choose its
/// behaviour.
#[derive(Debug, Clone, Copy)]
struct Attack {
    name: &'static str,
    guest: &'static [u8],
    labels: &'static [(&'static str, &'static str)],
}

impl Attack {
    const fn new(
        name: &'static str,
        guest: &'static [u8],
        labels: &'static [(&'static str, &'static str)],
    ) -> Self {
        Self {
            name,
            guest,
            labels,
        }
    }
}

/// Every attack of the suite.
fn attacks() -> Vec<Attack> {
    vec![
        Attack::new("spin", guests::TESTING_SPIN, &[]),
        Attack::new("hog", guests::TESTING_HOG, &[]),
        Attack::new("panic", guests::TESTING_PANIC, &[]),
        Attack::new(
            "recurse",
            guests::TESTING_MISBEHAVE,
            &[("misbehave.opm.dev/mode", "recurse")],
        ),
        Attack::new(
            "big-copy",
            guests::TESTING_MISBEHAVE,
            &[("misbehave.opm.dev/mode", "big-copy")],
        ),
        Attack::new(
            "many-resources",
            guests::TESTING_MISBEHAVE,
            &[("misbehave.opm.dev/mode", "many-resources")],
        ),
        Attack::new(
            "invalid-json",
            guests::TESTING_MISBEHAVE,
            &[("misbehave.opm.dev/mode", "not-an-object")],
        ),
        Attack::new("invalid-json-text", guests::INVALID_JSON, &[]),
        Attack::new("many-memories", guests::MANY_MEMORIES, &[]),
        Attack::new("aliased-output", guests::ALIASED_OUTPUT, &[]),
        Attack::new("huge-error", guests::HUGE_ERROR, &[]),
        Attack::new("grow-then-spin", guests::GROW_THEN_SPIN, &[]),
        Attack::new("log-spam", guests::EMPTY_LOG_SPAM, &[]),
        Attack::new("shared-memory", guests::SHARED_MEMORY, &[]),
        Attack::new(
            "stdout-forever",
            guests::TESTING_WASI,
            &[("wasi.opm.dev/mode", "stdout-forever")],
        ),
        Attack::new(
            "read-file",
            guests::TESTING_WASI,
            &[("wasi.opm.dev/mode", "read-file")],
        ),
        Attack::new(
            "busy-poll",
            guests::TESTING_WASI,
            &[("wasi.opm.dev/mode", "busy-poll")],
        ),
        Attack::new(
            "socket",
            guests::TESTING_WASI,
            &[("wasi.opm.dev/mode", "socket")],
        ),
        Attack::new(
            "exit",
            guests::TESTING_WASI,
            &[("wasi.opm.dev/mode", "exit")],
        ),
    ]
}

/// Renders `healthy` stateless components with the embedded Deployment transformer, and one
/// component per attack, each run by a transformer of its own; default limits.
fn render_with_attacks(healthy: usize, attacks: &[Attack]) -> Rendered {
    let limits = Limits::default();
    let provider = opm_runtime::embedded::load().expect("embedded provider loads");
    let sandbox = opm_tests::shared_cache_sandbox(&limits);
    let mut transformers: Transformers = BTreeMap::new();
    transformers.insert(
        DEPLOYMENT.to_owned(),
        Ok(sandbox
            .compile(DEPLOYMENT, &provider.components[DEPLOYMENT])
            .expect("compiles")),
    );
    let input = |name: &str, labels: &[(&str, &str)]| {
        let mut component_labels = json!({"core.opm.dev/workload-type": "stateless"});
        for (key, value) in labels {
            component_labels[*key] = json!(value);
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
    let mut calls: Vec<Call> = (0..healthy)
        .map(|i| {
            let name = format!("healthy-{i:03}");
            Call {
                input: input(&name, &[]),
                component: name,
                transformer: DEPLOYMENT.into(),
                provider: "kubernetes".into(),
            }
        })
        .collect();
    for attack in attacks {
        let fqn = format!("test.opm.dev/hostile@v1#{}", attack.name);
        transformers.insert(fqn.clone(), sandbox.compile(&fqn, attack.guest));
        let component = format!("attack-{}", attack.name);
        calls.push(Call {
            input: input(&component, attack.labels),
            component,
            transformer: fqn,
            provider: "test".into(),
        });
    }
    // Two render threads, as on the project's machine, whatever this machine has: the bound
    // grows with the number of calls running at once.
    rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("render threads")
        .install(|| {
            render::execute(
                &sandbox,
                &transformers,
                &calls.iter().collect::<Vec<_>>(),
                &context(),
                &limits.into(),
            )
        })
}

/// Checks that every healthy component rendered its Deployment and that each attack failed,
/// named by its component and transformer.
fn assert_healthy_rendered_and_attacks_reported(
    rendered: &Rendered,
    healthy: usize,
    attacks: &[Attack],
) {
    let deployments: Vec<&str> = rendered
        .resources
        .iter()
        .filter(|resource| resource.component.starts_with("healthy-"))
        .map(|resource| resource.component.as_str())
        .collect();
    assert_eq!(
        deployments.len(),
        healthy,
        "every healthy component renders"
    );
    for Attack { name, .. } in attacks {
        let component = format!("attack-{name}");
        let failure = rendered
            .failures
            .iter()
            .find(|failure| failure.component == component)
            .unwrap_or_else(|| panic!("{component} is reported: {:#?}", rendered.failures));
        let message = failure.to_string();
        assert!(
            message.starts_with(&format!(
                "component \"{component}\": transformer test.opm.dev/hostile@v1#{name} (blake3:"
            )),
            "{message}"
        );
        eprintln!("{message}");
    }
}

/// The process's peak resident set, in bytes (Linux: `VmHWM` of `/proc/self/status`): the test's
/// own peak, as each test that reads it runs alone in its process (`opm_tests::in_own_process`).
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("procfs");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM is reported");
    kib << 10
}

/// The bound the README states for a render on two threads under default limits, whatever its
/// guests do (measured: 124 MiB for the 100-component render, 173 MiB for every attack at once).
const PEAK_RSS_BOUND: u64 = 384 << 20;

#[test]
fn a_render_of_100_components_with_10_hostile_transformers_completes_the_90() {
    if !opm_tests::in_own_process(
        "hostile::a_render_of_100_components_with_10_hostile_transformers_completes_the_90",
    ) {
        return;
    }
    let all = attacks();
    let ten: Vec<_> = all
        .iter()
        .filter(|attack| {
            [
                "spin",
                "hog",
                "big-copy",
                "many-memories",
                "aliased-output",
                "huge-error",
                "log-spam",
                "shared-memory",
                "stdout-forever",
                "exit",
            ]
            .contains(&attack.name)
        })
        .copied()
        .collect();
    assert_eq!(ten.len(), 10);
    let rendered = render_with_attacks(90, &ten);
    assert_healthy_rendered_and_attacks_reported(&rendered, 90, &ten);
    assert_eq!(rendered.failures.len(), 10, "{:#?}", rendered.failures);
    let peak = peak_rss();
    eprintln!("peak RSS: {} MiB", peak >> 20);
    assert!(peak < PEAK_RSS_BOUND, "peak RSS {} MiB", peak >> 20);
}

#[test]
fn every_attack_at_once_leaves_the_host_bounded() {
    if !opm_tests::in_own_process("hostile::every_attack_at_once_leaves_the_host_bounded") {
        return;
    }
    let attacks = attacks();
    let rendered = render_with_attacks(90, &attacks);
    assert_healthy_rendered_and_attacks_reported(&rendered, 90, &attacks);
    let peak = peak_rss();
    eprintln!("peak RSS: {} MiB", peak >> 20);
    assert!(peak < PEAK_RSS_BOUND, "peak RSS {} MiB", peak >> 20);
}

/// SECURITY.md backs each claim with a test: every test it names exists.
#[test]
fn security_md_names_only_tests_that_exist() {
    let root = opm_tests::repo_root();
    let text = std::fs::read_to_string(root.join("SECURITY.md")).expect("SECURITY.md");
    let mut sources = String::new();
    // The guest crates' own tests too (the docker-compose provider's), not their build output.
    let mut dirs = vec![
        root.join("tests/all"),
        root.join("runtime/src"),
        root.join("crates"),
        root.join("runtime/tests"),
        root.join("transformers"),
    ];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("reads").flatten() {
            let path = entry.path();
            if path.is_dir() {
                if !path.ends_with("target") && !path.ends_with("node_modules") {
                    dirs.push(path);
                }
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                sources.push_str(&std::fs::read_to_string(&path).expect("reads"));
            }
        }
    }
    let named: Vec<&str> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| {
            span.contains("::")
                && span
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == ':')
        })
        .collect();
    assert!(named.len() > 30, "{named:?}");
    for path in named {
        let name = path.rsplit("::").next().unwrap_or_default();
        assert!(
            sources.contains(&format!("fn {name}(")),
            "SECURITY.md names {path}, which is not a test"
        );
    }
}

/// Security review (2026-11): relaxed SIMD gave other bytes on another processor (`f32x4.relaxed_madd`
/// fused with FMA, rounded twice without). The engine's configuration makes it give one result
/// whatever the processor: code compiled for this machine and code compiled as if it had no FMA
/// compute the same bits.
#[test]
fn relaxed_simd_gives_the_same_result_with_and_without_fma() {
    let module = wat::parse_str(
        r#"(module
          (func (export "madd") (param f32 f32 f32) (result i32)
            (i32x4.extract_lane 0
              (f32x4.relaxed_madd
                (f32x4.splat (local.get 0))
                (f32x4.splat (local.get 1))
                (f32x4.splat (local.get 2))))))"#,
    )
    .unwrap();
    let run = |fma: bool| {
        let mut config = opm_codegen::config(false);
        config.consume_fuel(false).epoch_interruption(false);
        if !fma {
            // SAFETY: turning an instruction-set extension off only narrows which instructions
            // the code may use; the code runs on this very machine.
            unsafe {
                config.cranelift_flag_set("has_fma", "false");
            }
        }
        let engine = wasmtime::Engine::new(&config).unwrap();
        let module = wasmtime::Module::new(&engine, &module).unwrap();
        let mut store = wasmtime::Store::new(&engine, ());
        let instance = wasmtime::Instance::new(&mut store, &module, &[]).unwrap();
        let madd = instance
            .get_typed_func::<(f32, f32, f32), i32>(&mut store, "madd")
            .unwrap();
        // (1 + 2⁻²³)(1 − 2⁻²³) − 1 is −2⁻⁴⁶ fused, and 0 when the product is rounded first.
        let (a, b) = (1.0 + f32::EPSILON, 1.0 - f32::EPSILON);
        madd.call(&mut store, (a, b, -1.0)).unwrap() as u32
    };
    assert_eq!(
        format!("{:#x}", run(true)),
        format!("{:#x}", run(false)),
        "relaxed_madd with and without FMA"
    );
}
