//! The cost of one sandboxed transform call with a fresh instance (DESIGN §8: at least 25,000
//! fresh-instance calls per second per core), and of a whole render of many components.
//!
//! Run: `cargo bench -p opm-benches --bench sandbox`.

use std::collections::BTreeMap;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use opm_runtime::provider;
use opm_runtime::render::{self, Job, RenderContext};
use opm_runtime::sandbox::{Limits, Sandbox};
use serde_json::json;

const DEPLOYMENT: &str = "transformer.opm.dev/workload@v1#DeploymentTransformer";

fn context() -> RenderContext {
    RenderContext {
        name: "bench".into(),
        namespace: "bench".into(),
        version: "1.0.0".into(),
        provider: "kubernetes".into(),
        timestamp: "2026-01-01T00:00:00Z".into(),
        strict: false,
        module_labels: BTreeMap::new(),
    }
}

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

fn calls(c: &mut Criterion) {
    let provider = provider::load_embedded().expect("embedded provider");
    let limits = Limits::default();
    let sandbox = Sandbox::new(&limits).expect("engine");
    let deployment = sandbox
        .compile(DEPLOYMENT, &provider.components[DEPLOYMENT])
        .expect("compiles");
    let wit_context = context().for_component("api");
    let api_input = input("api");

    let mut group = c.benchmark_group("sandbox");
    group.throughput(Throughput::Elements(1));
    group.bench_function("fresh-instance call (Deployment)", |b| {
        b.iter(|| {
            let outcome = sandbox.call(&deployment, &api_input, &wit_context, &limits);
            assert!(outcome.result.is_ok());
        })
    });
    group.finish();

    let mut group = c.benchmark_group("render");
    group.sample_size(10);
    let compiled = BTreeMap::from([(DEPLOYMENT.to_owned(), Ok(deployment.clone()))]);
    for components in [100usize, 1_000] {
        let jobs: Vec<Job> = (0..components)
            .map(|i| Job {
                component: format!("c{i:05}"),
                transformer: DEPLOYMENT.into(),
                input: input(&format!("c{i:05}")),
            })
            .collect();
        group.throughput(Throughput::Elements(components as u64));
        group.bench_with_input(BenchmarkId::new("execute", components), &jobs, |b, jobs| {
            b.iter(|| {
                let rendered = render::execute(&sandbox, &compiled, jobs, &context(), &limits);
                assert_eq!(rendered.resources.len(), jobs.len());
            })
        });
    }
    group.finish();
}

criterion_group!(benches, calls);
criterion_main!(benches);
