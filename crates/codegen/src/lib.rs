//! The engine settings that decide the machine code of a compiled component, in one place for
//! the two that compile: the sandbox's engine at run time, and `runtime/build.rs`, which
//! precompiles the embedded providers' components into the binary with these very settings.
//!
//! A crate of its own that names only wasmtime, so that the build script depends on it without
//! waiting for the host to compile (it builds the guests meanwhile). What a
//! setting changes in the code is covered by wasmtime's compatibility check: code made with other
//! settings, or by another wasmtime, is refused when it is loaded, never run (a test loads every
//! embedded component into the sandbox's engine, so such a change fails the build's tests).

/// The engine configuration of compiled code: fuel and epoch interruption on, the component model
/// on, WebAssembly's default features (no threads), relaxed SIMD in its deterministic form, and
/// the compiler — Cranelift optimizing for speed when `baseline` is false, else Winch,
/// wasmtime's single-pass baseline compiler.
///
/// Relaxed SIMD lets an instruction such as `f32x4.relaxed_madd` give what the machine's
/// instructions give (fused on a processor with FMA, rounded twice on one without), so the same
/// bundle and module would render other bytes on another machine. Its deterministic form gives
/// every such instruction one result on every processor, at the price of a few instructions
/// more where the processor's own differ.
///
/// Cranelift's code checks memory bounds in code rather than through guard pages, so that a pool
/// slot's pages stay readable and writable from one call to the next: otherwise every call
/// whose memory grows changes page protections twice (at the growth, and back at the next
/// instantiation), and each change takes the process's memory-map lock and flushes the TLB of
/// the other render threads. Measured at 10,000 components on two threads: a third of the kernel
/// time gone, for a few per cent more guest time (benches/RESULTS.md). Winch needs wasmtime's
/// signal handlers for its traps, so its code keeps the default guard pages.
pub fn config(baseline: bool) -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    config
        .consume_fuel(true)
        .epoch_interruption(true)
        .wasm_component_model(true)
        .relaxed_simd_deterministic(true);
    if baseline {
        config.strategy(wasmtime::Strategy::Winch);
    } else {
        config
            .strategy(wasmtime::Strategy::Cranelift)
            .cranelift_opt_level(wasmtime::OptLevel::Speed)
            .signals_based_traps(false)
            .memory_guard_size(0);
    }
    config
}

/// The instruction-set extensions of precompiled code for an x86-64 `target`: x86-64-v2 (SSE3,
/// SSSE3, SSE4.1, SSE4.2, POPCNT), which every x86-64 processor of the last fifteen years has,
/// so that a binary built on one machine loads its code on another. wasmtime checks at load that
/// the host has each one the code was made with; on a host without them, the component is
/// compiled for it instead.
pub const X86_64_PORTABLE: &[&str] = &[
    "has_sse3",
    "has_ssse3",
    "has_sse41",
    "has_sse42",
    "has_popcnt",
];

/// [`config`] for Cranelift code that loads on any host of `target` (a Rust target triple),
/// rather than code for the features of the machine that compiles it.
pub fn portable_config(target: &str) -> wasmtime::Result<wasmtime::Config> {
    let mut config = config(false);
    config.target(target)?;
    if target.starts_with("x86_64") {
        for flag in X86_64_PORTABLE {
            // SAFETY: enabling an instruction-set extension only changes which instructions the
            // code may use; wasmtime checks, when it loads the code, that the host has every
            // extension the code was compiled with, and refuses the code otherwise.
            unsafe {
                config.cranelift_flag_enable(flag);
            }
        }
    }
    Ok(config)
}
