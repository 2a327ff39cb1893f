//! `opm-per-call`: what one transform call costs, as a render makes it — a fresh instance per
//! call from the sandbox's pool — for components of any language: the median, 10th and 90th
//! percentile of N calls' wall time, the fuel of one call, and the page faults and the system
//! time the calls took between them (from `/proc/self/stat`, per call).
//!
//! The code comes from the compile cache when it holds it (`$OPM_CACHE_DIR`, as a render finds
//! it), else it is compiled with Cranelift and cached, so that a second run measures only calls.
//! Run from the repository root, with a component's input (a case's `component.json`) and the
//! components to compare, e.g. the service example in the languages the tests build:
//!
//! ```sh
//! cargo run --release -p opm-benches --bin opm-per-call -- --calls 201 \
//!   transformers/examples/service/cases/container-ports/component.json \
//!   target/toolchain-guests/example-service-{js,python}-*.wasm \
//!   target/debug/build/opm-tests-*/out/example_service_rust.wasm
//! ```
//!
//! Prints a Markdown table (`benches/RESULTS.md`, "Interpreted transformers per call", keeps the
//! figures). `--compiler baseline` measures Winch's code instead, as `opm transformer test`
//! runs it; `--threads 2` makes the calls from two threads at once, as a render's do.

use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use opm_sandbox::{CompileCache, Compiler, Limits, Sandbox};

/// opm's allocator (`runtime/src/main.rs`): the host's side of a call allocates as in a render.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(about = "The per-call cost of transformers in a fresh instance each")]
struct Args {
    /// Calls timed per component (after one untimed call).
    #[arg(long, default_value_t = 201)]
    calls: usize,
    /// Whose code to run: `optimizing` (Cranelift, a render's) or `baseline` (Winch).
    #[arg(long, default_value = "optimizing")]
    compiler: String,
    /// Threads making the calls at once, each its share of them.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// The component's input: a flattened component document (a case's `component.json`).
    input: String,
    /// The components to call.
    #[arg(required = true)]
    components: Vec<String>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let compiler = match args.compiler.as_str() {
        "optimizing" => Compiler::Optimizing,
        "baseline" => Compiler::Baseline,
        other => bail!("--compiler {other}: expected optimizing or baseline"),
    };
    let input = std::fs::read_to_string(&args.input).with_context(|| args.input.clone())?;
    let context = opm_benches::context().for_component("api");
    let limits = Limits::default();
    let threads = args.threads.max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    // The sandbox sizes its pool for the rayon pool it is made in, as a render's is.
    let sandbox = pool.install(|| Sandbox::with_compiler(&limits, compiler))?;
    let sandbox = sandbox.with_cache(CompileCache::from_env(&|name| std::env::var(name).ok()));
    println!(
        "| component | size | code | median | p10 | p90 | fuel | page faults / call | system time / call |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|");
    for path in &args.components {
        let bytes = std::fs::read(path).with_context(|| path.clone())?;
        let compiled = sandbox.compile("bench", &bytes)?;
        let call = || {
            let start = Instant::now();
            let outcome = sandbox.call(&compiled, &input, context.clone(), &limits);
            let elapsed = start.elapsed();
            outcome
                .result
                .map(|_| (elapsed, outcome.fuel_used))
                .map_err(|error| anyhow::anyhow!("{path}: the call failed: {error}"))
        };
        // The first call maps the slot's image; a render's first call pays for that once.
        let (_, fuel) = call()?;
        let before = ProcessCounters::now()?;
        let per_thread = args.calls.div_ceil(threads);
        let mut times = pool.install(|| {
            use rayon::prelude::*;
            (0..threads)
                .into_par_iter()
                .map(|_| {
                    (0..per_thread)
                        .map(|_| call().map(|(time, _)| time))
                        .collect()
                })
                .collect::<anyhow::Result<Vec<Vec<Duration>>>>()
        })?;
        let after = ProcessCounters::now()?;
        let mut times: Vec<Duration> = times.drain(..).flatten().collect();
        times.sort();
        let calls = times.len() as f64;
        println!(
            "| {} | {:.1} MiB | {} | {} | {} | {} | {fuel} | {:.0} | {} |",
            opm_benches::short_name(path),
            bytes.len() as f64 / f64::from(1 << 20),
            compiled.code.source.name(),
            millis(percentile(&times, 50)),
            millis(percentile(&times, 10)),
            millis(percentile(&times, 90)),
            (after.minor_faults - before.minor_faults) as f64 / calls,
            millis(Duration::from_secs_f64(
                (after.system_ticks - before.system_ticks) as f64 / TICKS_PER_SECOND / calls
            )),
        );
    }
    Ok(())
}

/// The clock ticks of `/proc/self/stat`'s times (`sysconf(_SC_CLK_TCK)`, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

/// What the kernel counts for this process.
struct ProcessCounters {
    minor_faults: u64,
    system_ticks: u64,
}

impl ProcessCounters {
    /// Read from `/proc/self/stat`: fields 10 (`minflt`) and 15 (`stime`), counted after the
    /// command name in parentheses, which may hold spaces.
    fn now() -> anyhow::Result<Self> {
        let stat = std::fs::read_to_string("/proc/self/stat").context("/proc/self/stat")?;
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        // After the name, field 3 (`state`) is the first.
        let field = |n: usize| -> anyhow::Result<u64> {
            fields
                .get(n - 3)
                .and_then(|value| value.parse().ok())
                .with_context(|| format!("field {n} of /proc/self/stat"))
        };
        Ok(Self {
            minor_faults: field(10)?,
            system_ticks: field(15)?,
        })
    }
}

/// The `p`th percentile of sorted `times`.
fn percentile(times: &[Duration], p: usize) -> Duration {
    times[(times.len() - 1) * p / 100]
}

fn millis(time: Duration) -> String {
    format!("{:.3} ms", time.as_secs_f64() * 1e3)
}
