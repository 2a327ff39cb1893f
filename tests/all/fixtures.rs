//! The shape of the guests that are not plain `wasm32-unknown-unknown` Rust: the `wasm32-wasip2`
//! guest, the C guest and the hand-made fixtures of `tests/fixtures/wat/`. These tests check
//! only what each fixture is (a component that imports WASI, a module with eight memories, bytes
//! that do not parse); how the sandbox treats them is `sandbox.rs`'s business.
//!
//! `cargo nextest run -p opm-tests fixtures --no-capture` prints the imports of the WASI and C
//! guests.

use opm_tests::guests;
use wasmparser::{Parser, Payload};
use wasmtime::component::Component;
use wasmtime::{Config, Engine};

/// The markers `foreach_guest!` asks for, one per guest whose shape is checked here.
pub(crate) mod markers {
    pub(crate) fn testing_wasi() {}
    pub(crate) fn testing_c_hello() {}
    pub(crate) fn many_memories() {}
    pub(crate) fn shared_memory() {}
    pub(crate) fn aliased_output() {}
    pub(crate) fn huge_error() {}
    pub(crate) fn grow_then_spin() {}
    pub(crate) fn wrong_version() {}
    pub(crate) fn unknown_import() {}
    pub(crate) fn empty_log_spam() {}
    pub(crate) fn malformed() {}
    pub(crate) fn core_module() {}
    pub(crate) fn invalid_json() {}
    pub(crate) fn tail_call() {}
}

/// What the hand-made fixtures export: they are made against the frozen 1.0.0.
const CONTRACT: &str = "opm:transformer/transformer@1.0.0";

/// What the guests built by toolchains export: they are built against the newest version.
const NEWEST: &str = "opm:transformer/transformer@1.2.0";

/// An engine with wasmtime's defaults: what these tests check is the fixtures, not opm's
/// configuration.
fn engine() -> Engine {
    Engine::new(&Config::new()).expect("default engine")
}

fn compile(bytes: &[u8]) -> (Engine, Component) {
    let engine = engine();
    let component = Component::new(&engine, bytes).expect("fixture compiles as a component");
    (engine, component)
}

/// The names a component imports and exports, as its type says. The instance
/// `opm:transformer/types`, which holds only the types the functions use, is left out of the
/// imports.
fn imports_and_exports(bytes: &[u8]) -> (Vec<String>, Vec<String>) {
    let (engine, component) = compile(bytes);
    let ty = component.component_type();
    let imports = ty
        .imports(&engine)
        .map(|(name, _)| name.to_owned())
        .filter(|name| !name.starts_with("opm:transformer/types@"))
        .collect();
    let exports = ty
        .exports(&engine)
        .map(|(name, _)| name.to_owned())
        .collect();
    (imports, exports)
}

/// The memories of every core module in `bytes`, nested ones included.
fn memories(bytes: &[u8]) -> Vec<wasmparser::MemoryType> {
    let mut memories = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        if let Payload::MemorySection(section) = payload.expect("fixture parses") {
            memories.extend(
                section
                    .into_iter()
                    .map(|memory| memory.expect("memory parses")),
            );
        }
    }
    memories
}

fn assert_exports_only_the_contract(name: &str, bytes: &[u8]) {
    let (_, exports) = imports_and_exports(bytes);
    assert_eq!(exports, [CONTRACT], "{name} exports");
}

#[test]
fn the_wasip2_guest_is_a_component_that_imports_wasi() {
    assert!(Parser::is_component(guests::TESTING_WASI));
    let (imports, exports) = imports_and_exports(guests::TESTING_WASI);
    eprintln!(
        "testing-wasi ({} bytes) imports:",
        guests::TESTING_WASI.len()
    );
    for import in &imports {
        eprintln!("  {import}");
    }
    assert_eq!(exports, [NEWEST]);
    for wanted in [
        "opm:transformer/log@1.2.0",
        "wasi:cli/stdout@0.2",
        "wasi:cli/stderr@0.2",
        "wasi:cli/stdin@0.2",
        "wasi:cli/environment@0.2",
        "wasi:cli/exit@0.2",
        "wasi:filesystem/preopens@0.2",
        "wasi:sockets/tcp@0.2",
        "wasi:clocks/monotonic-clock@0.2",
        "wasi:clocks/wall-clock@0.2",
        "wasi:random/random@0.2",
    ] {
        assert!(
            imports.iter().any(|import| import.starts_with(wanted)),
            "testing-wasi does not import {wanted}: {imports:?}"
        );
    }
}

#[test]
fn the_c_guest_is_a_component_that_imports_wasi() {
    assert!(Parser::is_component(guests::testing_c_hello()));
    let (imports, exports) = imports_and_exports(guests::testing_c_hello());
    eprintln!(
        "testing-c-hello ({} bytes) imports:",
        guests::testing_c_hello().len()
    );
    for import in &imports {
        eprintln!("  {import}");
    }
    assert_eq!(exports, [NEWEST]);
    assert!(
        imports
            .iter()
            .any(|import| import.starts_with("wasi:cli/stdout@0.2")),
        "testing-c-hello does not import wasi:cli/stdout: {imports:?}"
    );
}

#[test]
fn many_memories_has_eight_memories_of_1000_pages() {
    let memories = memories(guests::MANY_MEMORIES);
    assert_eq!(memories.len(), 8, "{memories:?}");
    for memory in &memories {
        assert_eq!(memory.initial, 1000, "{memory:?}");
        assert!(!memory.shared && !memory.memory64, "{memory:?}");
    }
    assert_exports_only_the_contract("many-memories", guests::MANY_MEMORIES);
}

#[test]
fn shared_memory_is_refused_by_an_engine_without_threads() {
    let memories = memories(guests::SHARED_MEMORY);
    assert!(memories.iter().any(|memory| memory.shared), "{memories:?}");
    // opm builds wasmtime without its `threads` feature, so no engine of it enables threads.
    let Err(error) = Component::new(&engine(), guests::SHARED_MEMORY) else {
        panic!("a shared memory needs threads, which the engine does not enable");
    };
    assert!(
        format!("{error:?}").contains("threads"),
        "the error names the threads feature: {error:?}"
    );
}

#[test]
fn the_output_and_loop_fixtures_are_valid_transformers() {
    for (name, bytes) in [
        ("aliased-output", guests::ALIASED_OUTPUT),
        ("huge-error", guests::HUGE_ERROR),
        ("grow-then-spin", guests::GROW_THEN_SPIN),
        ("tail-call", guests::TAIL_CALL),
    ] {
        let (imports, _) = imports_and_exports(bytes);
        assert!(imports.is_empty(), "{name} imports {imports:?}");
        assert_exports_only_the_contract(name, bytes);
    }
    let (imports, _) = imports_and_exports(guests::EMPTY_LOG_SPAM);
    assert_eq!(imports, ["opm:transformer/log@1.0.0"]);
    assert_exports_only_the_contract("empty-log-spam", guests::EMPTY_LOG_SPAM);
}

#[test]
fn wrong_version_exports_the_contract_at_2_0_0() {
    let (imports, exports) = imports_and_exports(guests::WRONG_VERSION);
    assert_eq!(imports, ["opm:transformer/log@2.0.0"]);
    assert_eq!(exports, ["opm:transformer/transformer@2.0.0"]);
}

#[test]
fn unknown_import_imports_an_interface_no_host_offers() {
    let (imports, _) = imports_and_exports(guests::UNKNOWN_IMPORT);
    assert!(
        imports.iter().any(|import| import == "evil:host/escape"),
        "{imports:?}"
    );
    assert_exports_only_the_contract("unknown-import", guests::UNKNOWN_IMPORT);
}

#[test]
fn malformed_has_a_component_header_but_does_not_parse() {
    assert!(guests::MALFORMED.starts_with(b"\0asm\x0d\x00\x01\x00"));
    assert!(Parser::is_component(guests::MALFORMED));
    assert!(Component::new(&engine(), guests::MALFORMED).is_err());
}

#[test]
fn core_module_is_a_valid_module_and_not_a_component() {
    assert!(Parser::is_core_wasm(guests::CORE_MODULE));
    let engine = engine();
    wasmtime::Module::new(&engine, guests::CORE_MODULE).expect("a valid core module");
    assert!(Component::new(&engine, guests::CORE_MODULE).is_err());
}
