//! How transform calls scale from one thread to two: the calls per second of one thread, of two
//! threads sharing one sandbox (as a render's threads do), and of two threads with a sandbox
//! each (two engines and two pools: nothing shared but the process). The last is what two
//! cores give this work at best; the gap between it and the second is what sharing costs.
//!
//!   cargo run --release -p opm-benches --bin opm-scaling -- [CALLS] [ROUNDS]
//!
//! Each round runs CALLS calls per thread (default 4,000), alternating the embedded provider's
//! Deployment and Service transformers on one component, and prints the milliseconds of each
//! form and the throughput of two threads over one (2 × one / two). `MODE=shared` or `MODE=own`
//! runs only that form, ROUNDS times, for a profiler.

use std::time::Instant;

use opm_benches::context;
use opm_sandbox::{CompiledTransformer, Limits, Sandbox};
use serde_json::json;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const DEPLOYMENT: &str = "transformer.opm.dev/workload@v1#DeploymentTransformer";
const SERVICE: &str = "transformer.opm.dev/network@v1#ServiceTransformer";

/// A sandbox and the two transformers compiled by it.
struct Prepared {
    sandbox: Sandbox,
    transformers: [CompiledTransformer; 2],
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let calls: usize = args.next().map_or(Ok(4000), |a| a.parse())?;
    let rounds: usize = args.next().map_or(Ok(5), |a| a.parse())?;
    let provider = opm_runtime::embedded::load()?;
    let limits = Limits::default();
    let input = json!({
        "metadata": {"name": "api", "labels": {"core.opm.dev/workload-type": "stateless"}},
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
    let wit_context = context().for_component("api");
    let prepare = || -> anyhow::Result<Prepared> {
        let sandbox = Sandbox::new(&limits)?.with_precompiled(&opm_runtime::embedded::CODE);
        let transformers = [
            sandbox.compile(DEPLOYMENT, &provider.components[DEPLOYMENT])?,
            sandbox.compile(SERVICE, &provider.components[SERVICE])?,
        ];
        Ok(Prepared {
            sandbox,
            transformers,
        })
    };
    let work = |prepared: &Prepared| {
        for i in 0..calls {
            let transformer = &prepared.transformers[i % 2];
            let outcome = prepared
                .sandbox
                .call(transformer, &input, wit_context.clone(), &limits);
            assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        }
    };
    let shared = prepare()?;
    let own = [prepare()?, prepare()?];
    // Two threads that live as long as the bench, as a render's do, each running the same
    // sandbox's calls every round: the pool gives a thread a home among its slots when it first
    // takes one, which threads made afresh each round would change.
    let threads = rayon::ThreadPoolBuilder::new().num_threads(2).build()?;
    let two = |a: &Prepared, b: &Prepared| {
        let started = Instant::now();
        threads.broadcast(|thread| work(if thread.index() == 0 { a } else { b }));
        started.elapsed().as_secs_f64()
    };
    let one = || {
        let started = Instant::now();
        threads.broadcast(|thread| {
            if thread.index() == 0 {
                work(&shared);
            }
        });
        started.elapsed().as_secs_f64()
    };
    // Warm-up: every slot the rounds use touched once.
    two(&shared, &shared);
    two(&own[0], &own[1]);
    match std::env::var("MODE").as_deref() {
        Ok("shared") => (0..rounds).for_each(|_| {
            two(&shared, &shared);
        }),
        Ok("own") => (0..rounds).for_each(|_| {
            two(&own[0], &own[1]);
        }),
        _ => {
            println!(
                "| one thread, ms | two sharing, ms | two apart, ms | sharing: 2 × one / two | apart: 2 × one / two |"
            );
            println!("|---:|---:|---:|---:|---:|");
            for round in 0..rounds {
                let one = one();
                // Each form first in every other round.
                let (sharing, apart) = if round % 2 == 0 {
                    let sharing = two(&shared, &shared);
                    (sharing, two(&own[0], &own[1]))
                } else {
                    let apart = two(&own[0], &own[1]);
                    (two(&shared, &shared), apart)
                };
                println!(
                    "| {:.0} | {:.0} | {:.0} | {:.2} | {:.2} |",
                    one * 1e3,
                    sharing * 1e3,
                    apart * 1e3,
                    2.0 * one / sharing,
                    2.0 * one / apart
                );
            }
        }
    }
    Ok(())
}
