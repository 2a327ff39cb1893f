//! The cost of one sandboxed transform call with a fresh instance (`docs/performance.md`: at least
//! 25,000 fresh-instance calls per second per core), for every transformer of the embedded provider
//! beside the same crate called natively in-process; and of whole renders of many components.
//!
//! Run: `cargo bench -p opm-benches --bench sandbox`.

use std::collections::BTreeMap;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use opm_benches::{Native, context};
use opm_core::matching::Call;
use opm_core::{matching, module};
use opm_runtime::render::{self, Runner};
use opm_sandbox::{Limits, Sandbox};
use serde_json::json;

const DEPLOYMENT: &str = "transformer.opm.dev/workload@v1#DeploymentTransformer";

fn input(name: &str) -> String {
    json!({
        "metadata": {"name": name, "labels": {"core.opm.dev/workload-type": "stateless"}},
        "resources": ["opm.dev/resources/workload@v1#Container"],
        "traits": ["opm.dev/traits/scaling@v1#Replicas"],
        "policies": [],
        "spec": {
            "container": {"image": "registry.example/api:1.0", "ports": {"http": {"containerPort": 8080}}},
            "replicas": 3,
        },
        "defaults": {},
    })
    .to_string()
}

/// One call of each of the 14 transformers, on its first component of `examples/everything`,
/// in a fresh sandbox instance and natively.
fn per_transformer(c: &mut Criterion) {
    let provider = opm_runtime::embedded::load().expect("embedded provider");
    let limits = Limits::default();
    let sandbox = Sandbox::new(&limits)
        .expect("engine")
        .with_precompiled(&opm_runtime::embedded::CODE);
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/everything/module.yaml"
    );
    let text = std::fs::read_to_string(path).expect("examples/everything");
    let module = module::from_str(&text, "everything").expect("module");
    let plan = matching::plan(&module, &provider.manifest, false);
    let mut first: BTreeMap<String, &Call> = BTreeMap::new();
    for call in plan.calls() {
        first.entry(call.transformer.clone()).or_insert(call);
    }
    assert_eq!(
        first.len(),
        14,
        "examples/everything uses every transformer"
    );
    let context = context();
    let native = Native::new();

    let mut group = c.benchmark_group("call");
    group.throughput(Throughput::Elements(1));
    for (fqn, job) in &first {
        let short = fqn.rsplit('#').next().unwrap_or(fqn);
        let compiled = sandbox
            .compile(fqn, &provider.components[fqn.as_str()])
            .expect("compiles");
        let wit_context = context.for_component(&job.component);
        group.bench_function(BenchmarkId::new("sandboxed", short), |b| {
            b.iter(|| {
                let outcome = sandbox.call(&compiled, &job.input, wit_context.clone(), &limits);
                assert!(outcome.result.is_ok(), "{:?}", outcome.result);
            })
        });
        group.bench_function(BenchmarkId::new("native", short), |b| {
            b.iter(|| {
                let outcome = native
                    .call(job, wit_context.clone(), &limits)
                    .expect("native");
                assert!(outcome.result.is_ok(), "{:?}", outcome.result);
            })
        });
    }
    group.finish();
}

/// Whole renders: `render::execute` of N Deployment calls on the rayon pool (two threads on
/// the project machine), with checking, labelling and ordering.
fn renders(c: &mut Criterion) {
    let provider = opm_runtime::embedded::load().expect("embedded provider");
    let limits = Limits::default();
    let sandbox = Sandbox::new(&limits)
        .expect("engine")
        .with_precompiled(&opm_runtime::embedded::CODE);
    let deployment = sandbox
        .compile(DEPLOYMENT, &provider.components[DEPLOYMENT])
        .expect("compiles");
    let compiled = BTreeMap::from([(DEPLOYMENT.to_owned(), Ok(deployment))]);
    let mut group = c.benchmark_group("render");
    group.sample_size(10);
    for components in [100usize, 1_000] {
        let calls: Vec<Call> = (0..components)
            .map(|i| Call {
                component: format!("c{i:05}"),
                transformer: DEPLOYMENT.into(),
                provider: "kubernetes".into(),
                input: input(&format!("c{i:05}")),
            })
            .collect();
        group.throughput(Throughput::Elements(components as u64));
        let calls: Vec<&Call> = calls.iter().collect();
        group.bench_with_input(
            BenchmarkId::new("execute", components),
            &calls,
            |b, calls| {
                b.iter(|| {
                    let rendered =
                        render::execute(&sandbox, &compiled, calls, &context(), &limits.into());
                    assert_eq!(rendered.resources.len(), calls.len());
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, per_transformer, renders);
criterion_main!(benches);
