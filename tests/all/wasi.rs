//! Components from other toolchains through the deny-all WASI: the `wasm32-wasip2` Rust guest
//! `testing-wasi` (one behaviour per `wasi.opm.dev/mode` label) and the wasi-libc C guest
//! `c-hello`, each rendered beside a healthy component. They see no files, sockets,
//! environment or arguments, a clock fixed at the render timestamp and seeded randomness; what
//! they print becomes log lines; they cannot wait, and `exit` ends their call.

use opm_runtime::render::Rendered;
use opm_sandbox::{CallError, Limits, LogLevel};
use opm_tests::guests;
use serde_json::Value;

use crate::sandbox::{call_of, render_beside_a_healthy_component_labelled, single_failure};

/// Renders the wasip2 guest in `mode` beside a healthy component.
fn wasi(mode: &str, limits: Limits) -> Rendered {
    render_beside_a_healthy_component_labelled(
        guests::TESTING_WASI,
        &[("wasi.opm.dev/mode", mode)],
        limits,
    )
}

/// The ConfigMap the guest rendered for the component `bad`, when it survived.
fn rendered_data(rendered: &Rendered) -> serde_json::Map<String, Value> {
    assert!(rendered.failures.is_empty(), "{:#?}", rendered.failures);
    let config_map = rendered
        .resources
        .iter()
        .find(|resource| resource.component == "bad")
        .expect("the WASI guest rendered")
        .value();
    assert_eq!(config_map["kind"], "ConfigMap");
    config_map["data"]
        .as_object()
        .expect("a ConfigMap has data")
        .clone()
}

/// The log of the call of `bad`.
fn logs(rendered: &Rendered) -> Vec<(LogLevel, String)> {
    call_of(rendered, "bad")
        .logs
        .iter()
        .map(|line| (line.level, line.message.clone()))
        .collect()
}

/// The error the guest's own call failed with.
fn guest_error(rendered: &Rendered) -> String {
    let (error, message) = single_failure(rendered);
    assert!(
        matches!(error, CallError::Failed(_)),
        "the guest reports the denial itself: {message}"
    );
    message
}

#[test]
fn a_wasip2_guest_prints_to_stdout_and_stderr_as_logs() {
    let rendered = wasi("print", Limits::default());
    rendered_data(&rendered);
    let logs = logs(&rendered);
    assert!(
        logs.iter()
            .any(|(level, line)| *level == LogLevel::Info && line.contains("stdout")),
        "{logs:?}"
    );
    assert!(
        logs.iter()
            .any(|(level, line)| *level == LogLevel::Warn && line.contains("stderr")),
        "{logs:?}"
    );
}

#[test]
fn a_c_guest_prints_through_the_deny_all_wasi() {
    let rendered = render_beside_a_healthy_component_labelled(
        guests::testing_c_hello(),
        &[],
        Limits::default(),
    );
    let data = rendered_data(&rendered);
    assert_eq!(data["language"], "c");
    let logs = logs(&rendered);
    assert!(
        logs.iter().any(|(level, _)| *level == LogLevel::Info),
        "what printf wrote is a log line: {logs:?}"
    );
}

#[test]
fn a_wasip2_guest_sees_no_files() {
    for mode in ["read-file", "list-root"] {
        let message = guest_error(&wasi(mode, Limits::default()));
        eprintln!("{mode}: {message}");
    }
}

#[test]
fn a_wasip2_guest_sees_no_environment_no_arguments_and_an_empty_stdin() {
    let rendered = wasi("env-args", Limits::default());
    let data = rendered_data(&rendered).clone();
    eprintln!("{data:?}");
    assert_eq!(data["vars"], "0", "{data:?}");
    assert_eq!(data["args"], "0", "{data:?}");
    let rendered = wasi("stdin", Limits::default());
    let data = rendered_data(&rendered).clone();
    assert_eq!(data["stdinBytes"], "0", "{data:?}");
}

#[test]
fn a_wasip2_guest_cannot_open_a_socket() {
    let message = guest_error(&wasi("socket", Limits::default()));
    eprintln!("{message}");
}

#[test]
fn a_wasip2_guest_that_sleeps_an_hour_returns_at_once() {
    // Were the sleep real, the call would hit its 2 s time limit; it renders instead.
    let rendered = wasi("sleep", Limits::default());
    rendered_data(&rendered);
}

#[test]
fn a_wasip2_guest_that_busy_polls_the_clock_is_stopped() {
    let rendered = wasi(
        "busy-poll",
        Limits {
            fuel: 50_000_000,
            ..Limits::default()
        },
    );
    let (error, message) = single_failure(&rendered);
    assert_eq!(*error, CallError::Fuel { limit: 50_000_000 }, "{message}");
}

#[test]
fn a_wasip2_guest_that_writes_stdout_forever_is_stopped_and_its_output_bounded() {
    let limits = Limits {
        fuel: 200_000_000,
        ..Limits::default()
    };
    let rendered = wasi("stdout-forever", limits);
    let (error, message) = single_failure(&rendered);
    assert!(
        matches!(error, CallError::Fuel { .. } | CallError::Timeout { .. }),
        "{message}"
    );
    let call = call_of(&rendered, "bad");
    let kept: usize = call
        .logs
        .iter()
        .map(|line| line.message.len() + opm_sandbox::LOG_LINE_COST)
        .sum();
    assert!(kept <= limits.log, "{kept} bytes of log kept");
}

#[test]
fn a_wasip2_guest_that_calls_exit_ends_its_call() {
    // The guest calls `std::process::exit(3)`; WASI 0.2's `exit` carries only success or
    // failure, which wasmtime-wasi reports as status 1.
    let rendered = wasi("exit", Limits::default());
    let (error, message) = single_failure(&rendered);
    assert_eq!(*error, CallError::Exit { code: 1 }, "{message}");
    assert!(
        message.contains("called exit with status 1 instead of returning a result"),
        "{message}"
    );
}

#[test]
fn clock_and_random_are_the_same_in_every_render() {
    let first = rendered_data(&wasi("clock-random", Limits::default())).clone();
    let second = rendered_data(&wasi("clock-random", Limits::default())).clone();
    eprintln!("{first:?}");
    assert_eq!(first, second);
    // The render timestamp of `sandbox::context()`, 2026-01-01T00:00:00Z.
    assert_eq!(first["unixSeconds"], "1767225600", "{first:?}");
    assert_eq!(first["instantElapsedNanos"], "0", "the clock does not move");
    assert_ne!(
        first["random1"], first["random2"],
        "random, if reproducible"
    );
    // Seeded from the call's input: another input draws other bytes.
    let other = render_beside_a_healthy_component_labelled(
        guests::TESTING_WASI,
        &[
            ("wasi.opm.dev/mode", "clock-random"),
            ("example.com/other", "input"),
        ],
        Limits::default(),
    );
    let other = rendered_data(&other);
    assert_eq!(other["unixSeconds"], first["unixSeconds"]);
    assert_ne!(other["random1"], first["random1"], "{other:?}");
}
