//! `opm-compilers`: Cranelift (the built-in code's compiler, and `opm provider init`'s) against
//! Winch (wasmtime's baseline compiler: `opm transformer test`'s, and a render's for what it must
//! compile) on components of any language: the time to compile each, with wasmtime's parallel
//! compilation and without, and the time of one sandboxed call of each compiler's code, as a
//! render makes it (a fresh instance per call).
//!
//! Run from the repository root, with a component's input (a case's `component.json`) and the
//! components to compare, e.g. the service example in the four languages the tests build:
//!
//! ```sh
//! cargo run --release -p opm-benches --bin opm-compilers -- \
//!   transformers/examples/service/cases/container-ports/component.json \
//!   target/toolchain-guests/example-service-{js,python,c}-*.wasm \
//!   target/debug/build/opm-tests-*/out/example_service_rust.wasm
//! ```
//!
//! Prints a Markdown table (medians; `benches/RESULTS.md` keeps the figures).

use std::time::{Duration, Instant};

use anyhow::Context as _;
use opm_sandbox::{Compiler, engine_config_for};
use opm_sandbox::{Limits, Sandbox};

/// Compiles timed per component, compiler and setting.
const COMPILES: usize = 3;
/// Calls timed per component and compiler.
const CALLS: usize = 51;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let input_path = args
        .next()
        .context("usage: opm-compilers COMPONENT.json COMPONENT.wasm...")?;
    let input = std::fs::read_to_string(&input_path).with_context(|| input_path.clone())?;
    let context = opm_benches::context().for_component("api");
    let limits = Limits::default();
    println!(
        "| component | size | Cranelift | Cranelift, serial | Winch | Winch, serial | call, Cranelift | call, Winch |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for path in args {
        let bytes = std::fs::read(&path).with_context(|| path.clone())?;
        let mut row = vec![
            opm_benches::short_name(&path),
            format!("{:.1} MiB", bytes.len() as f64 / f64::from(1 << 20)),
        ];
        for compiler in [Compiler::Optimizing, Compiler::Baseline] {
            for parallel in [true, false] {
                let mut config = engine_config_for(compiler);
                config.parallel_compilation(parallel);
                let engine =
                    wasmtime::Engine::new(&config).map_err(|e| anyhow::anyhow!("{e:#}"))?;
                let times = (0..COMPILES)
                    .map(|_| {
                        let start = Instant::now();
                        wasmtime::component::Component::new(&engine, &bytes)
                            .map(|_| start.elapsed())
                    })
                    .collect::<wasmtime::Result<Vec<_>>>()
                    .map_err(|e| anyhow::anyhow!("{path}: {e:#}"))?;
                row.push(seconds(median(times)));
            }
        }
        for compiler in [Compiler::Optimizing, Compiler::Baseline] {
            let sandbox = Sandbox::with_compiler(&limits, compiler)?;
            let compiled = sandbox.compile("bench", &bytes)?;
            let mut times = Vec::with_capacity(CALLS);
            for _ in 0..CALLS {
                let outcome = sandbox.call(&compiled, &input, context.clone(), &limits);
                if let Err(error) = outcome.result {
                    anyhow::bail!("{path}: the call failed: {error}");
                }
                times.push(outcome.elapsed);
            }
            row.push(format!("{:.2} ms", median(times).as_secs_f64() * 1e3));
        }
        println!("| {} |", row.join(" | "));
    }
    Ok(())
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn seconds(time: Duration) -> String {
    format!("{:.2} s", time.as_secs_f64())
}
