//! The host's work on what transformers return: checking each document (`check_resource`, the
//! parse and the shape checks every returned resource goes through) and writing a render's
//! resources as YAML and as JSON through the Kubernetes renderer (`render::run_renderer`: the
//! renderer's call in the sandbox, then the host's YAML documents), for a render of 1,000
//! components (2,000 resources: a Deployment and a Service each).
//!
//! Run: `cargo bench -p opm-benches --bench output`.

use std::collections::BTreeMap;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use opm_benches::Native;
use opm_core::{matching, module};
use opm_runtime::render::{self, OutputOptions, RenderContext, Renderer};
use opm_sandbox::{Limits, Sandbox};

fn output(c: &mut Criterion) {
    let provider = opm_runtime::embedded::load().expect("embedded provider");
    let mut text = String::from(
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: bench, version: 0.1.0, namespace: bench}\ncomponents:\n",
    );
    for i in 0..1_000 {
        text.push_str(&format!(
            "  c{i:05}:\n    resources:\n      Container: {{image: nginxinc/nginx-unprivileged:1.27, ports: {{http: {{containerPort: 8080}}}}}}\n    traits:\n      Expose: {{type: ClusterIP}}\n      Replicas: 2\n"
        ));
    }
    let module = module::from_str(&text, "bench.yaml").expect("module");
    let plan = matching::plan(&module, &provider.manifest, false);
    let context = RenderContext {
        name: "bench".into(),
        instance: "bench".into(),
        namespace: "bench".into(),
        version: "0.1.0".into(),
        provider: "kubernetes".into(),
        timestamp: "2026-01-01T00:00:00Z".into(),
        strict: false,
        module_labels: BTreeMap::new(),
        secret_kinds: vec!["Secret".into()],
        platform: Some("kubernetes".into()),
        provider_versions: Default::default(),
    };
    let rendered = render::execute_with(
        &Native::new(),
        &plan.calls().collect::<Vec<_>>(),
        &context,
        &Limits::default().into(),
    );
    assert_eq!(rendered.resources.len(), 2_000);
    let documents: Vec<String> = rendered
        .resources
        .iter()
        .map(|resource| resource.json.clone())
        .collect();

    let mut group = c.benchmark_group("output");
    group.throughput(Throughput::Elements(2_000));
    group.bench_function("check 2,000 returned documents", |b| {
        b.iter(|| {
            for document in &documents {
                std::hint::black_box(render::check_resource(document).expect("valid"));
            }
        })
    });
    let renderer = Renderer::of(&provider).expect("the Kubernetes provider ships a renderer");
    let sandbox = Sandbox::new(&Limits {
        memory: 1 << 30,
        ..Limits::default()
    })
    .expect("sandbox")
    .with_precompiled(&opm_runtime::embedded::CODE);
    for format in ["yaml", "json"] {
        let options = OutputOptions {
            format: format.into(),
            ..OutputOptions::default()
        };
        group.bench_function(format!("write 2,000 resources as {format}"), |b| {
            b.iter(|| {
                let mut written = rendered.clone();
                render::run_renderer(
                    &sandbox,
                    &renderer,
                    &mut written,
                    &context,
                    &options,
                    &|_| (String::new(), String::new()),
                );
                assert_eq!(written.files.len(), 1, "{:?}", written.renderer_failure);
                written
            })
        });
    }
    group.finish();
}

criterion_group!(benches, output);
criterion_main!(benches);
