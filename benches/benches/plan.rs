//! Planning cost: matching 10,000 components against 60 transformers (`docs/performance.md`: cost
//! grows linearly with components), with every explanation (`opm mod vet`) and with only what
//! problems need (`opm mod build`); flattening each matched component into its calls' input JSON is
//! part of both. Also 1,000 components, to show the ratio. Components are planned on the rayon pool
//! (two threads on the project machine).
//!
//! Loading and planning, a module written plainly against the same module with parameters: a
//! `config`, `${config.…}` references and CEL expressions in every component, and a condition
//! on a trait (`docs/expressions.md`); what a module with parameters costs over one without.
//!
//! Run: `cargo bench -p opm-benches --bench plan`.

use criterion::{Criterion, criterion_group, criterion_main};
use opm_core::matching;
use opm_core::module::{self, Module};
use opm_core::provider::ProviderManifest;
use serde_json::{Map, Value, json};

const WORKLOADS: [&str; 5] = ["stateless", "stateful", "daemon", "job", "cronjob"];
const TRAITS: usize = 20;
const RESOURCES: usize = 10;

/// A provider with 60 transformers: 5 workload ones on Container, 45 requiring traits (over
/// Container or another resource), 10 each requiring one of 10 other resources.
fn manifest() -> ProviderManifest {
    let mut definitions = Map::new();
    definitions.insert(
        "opm.dev/resources/workload@v1#Container".into(),
        json!({"kind": "Resource", "labels": {"core.opm.dev/workload-type": "stateless"},
               "defaults": {"imagePullPolicy": "IfNotPresent"},
               "schema": {"type": "object", "required": ["image"], "properties": {
                   "image": {"type": "string"},
                   "ports": {"type": "object", "additionalProperties": {"type": "object", "properties": {"containerPort": {"type": "integer"}}}}}}}),
    );
    for t in 0..TRAITS {
        definitions.insert(
            format!("bench.opm.dev/traits@v1#Trait{t}"),
            json!({"kind": "Trait", "defaults": {"enabled": true}, "schema": {"type": "object"}}),
        );
    }
    for r in 0..RESOURCES {
        definitions.insert(
            format!("bench.opm.dev/resources@v1#Resource{r}"),
            json!({"kind": "Resource", "schema": {"type": "object"}}),
        );
    }
    let all_traits: Vec<String> = (0..TRAITS)
        .map(|t| format!("bench.opm.dev/traits@v1#Trait{t}"))
        .collect();
    let mut transformers = Map::new();
    for workload in WORKLOADS {
        transformers.insert(
            format!("transformer.opm.dev/workload@v1#{workload}Transformer"),
            json!({"requiredLabels": {"core.opm.dev/workload-type": workload},
                   "requiredResources": ["opm.dev/resources/workload@v1#Container"],
                   "optionalTraits": all_traits, "component": "x.wasm"}),
        );
    }
    for i in 0..45 {
        // Each has its own requirements: Container with trait i, another resource with trait
        // i % 20, or Container with two traits.
        let (resource, traits) = match i {
            0..20 => (
                "opm.dev/resources/workload@v1#Container".to_owned(),
                vec![i],
            ),
            20..40 => (
                format!("bench.opm.dev/resources@v1#Resource{}", i % RESOURCES),
                vec![i % TRAITS],
            ),
            _ => (
                "opm.dev/resources/workload@v1#Container".to_owned(),
                vec![i - 40, i - 39],
            ),
        };
        let traits: Vec<String> = traits
            .iter()
            .map(|t| format!("bench.opm.dev/traits@v1#Trait{t}"))
            .collect();
        transformers.insert(
            format!("transformer.opm.dev/traits@v1#Trait{i}Transformer"),
            json!({"requiredResources": [resource], "requiredTraits": traits, "component": "x.wasm"}),
        );
    }
    for r in 0..RESOURCES {
        transformers.insert(
            format!("transformer.opm.dev/resources@v1#Resource{r}Transformer"),
            json!({"requiredResources": [format!("bench.opm.dev/resources@v1#Resource{r}")], "component": "x.wasm"}),
        );
    }
    serde_json::from_value(json!({
        "apiVersion": "core.opm.dev/v1", "kind": "Provider",
        "metadata": {"name": "bench", "version": "1.0.0"},
        "definitions": Value::Object(definitions), "transformers": Value::Object(transformers),
    }))
    .expect("bench manifest")
}

/// A module of `n` components, each a container with two traits, some with another resource.
fn module(n: usize) -> Module {
    module::from_str(&module_text(n), "bench.yaml").expect("bench module")
}

fn module_text(n: usize) -> String {
    let mut text = String::from(
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: bench, version: 1.0.0}\ncomponents:\n",
    );
    for i in 0..n {
        text.push_str(&format!(
            "  c{i}:\n    resources:\n      Container: {{image: 'ghcr.io/acme/c{i}:1.0', ports: {{http: {{containerPort: 8080}}}}}}\n      Resource{}: {{}}\n    traits:\n      Trait{}: {{replicas: 2}}\n      Trait{}: {{}}\n",
            i % RESOURCES,
            i % TRAITS,
            (i + 7) % TRAITS,
        ));
    }
    text
}

/// The module [`load_and_plan`] loads, plainly or with parameters: each component a container
/// with two traits and another resource. With parameters, the image comes from two references,
/// the replicas from a CEL expression, and the first trait is behind a condition (true, so both
/// modules plan the same calls). No ports, unlike [`module_text`]: the YAML parser's node budget
/// then holds 10,000 components with parameters too.
fn lean_module_text(n: usize, parameters: bool) -> String {
    let mut text = String::from(
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: bench, version: 1.0.0}\n",
    );
    if parameters {
        text.push_str("config:\n  properties:\n    registry: {type: string, default: ghcr.io/acme}\n    tag: {type: string, default: '1.0'}\n    highAvailability: {type: boolean, default: true}\n    extras: {type: object, properties: {enabled: {type: boolean, default: true}}}\n");
    }
    text.push_str("components:\n");
    for i in 0..n {
        let (image, replicas, condition) = if parameters {
            (
                format!("${{config.registry}}/c{i}:${{config.tag}}"),
                "${ config.highAvailability ? 2 : 1 }".to_owned(),
                ", $when: '${config.extras.enabled}'",
            )
        } else {
            (format!("ghcr.io/acme/c{i}:1.0"), "2".to_owned(), "")
        };
        text.push_str(&format!(
            "  c{i}:\n    resources:\n      Container: {{image: '{image}'}}\n      Resource{}: {{}}\n    traits:\n      Trait{}: {{replicas: '{replicas}'{condition}}}\n      Trait{}: {{}}\n",
            i % RESOURCES,
            i % TRAITS,
            (i + 7) % TRAITS,
        ));
    }
    text
}

/// Loading and planning: a plain module against the same with parameters.
fn load_and_plan(c: &mut Criterion) {
    let manifest = manifest();
    let mut group = c.benchmark_group("load and plan");
    group.sample_size(10);
    let n = 10_000;
    let plain = lean_module_text(n, false);
    let plain_calls = matching::plan(
        &module::from_str(&plain, "bench.yaml").expect("bench module"),
        &manifest,
        false,
    )
    .calls()
    .len();
    for (name, text) in [
        ("plain", plain),
        ("with parameters", lean_module_text(n, true)),
    ] {
        let loaded = module::from_str(&text, "bench.yaml").expect("bench module");
        let check = matching::plan(&loaded, &manifest, false);
        assert!(check.is_ok(), "{:?}", check.errors().first());
        assert_eq!(
            check.calls().len(),
            plain_calls,
            "{name} plans the same calls"
        );
        group.bench_function(format!("{n} components, {name}"), |b| {
            b.iter(|| {
                let module = module::from_str(&text, "bench.yaml").expect("bench module");
                matching::plan_with(&module, &manifest, false, matching::Explain::ProblemsOnly)
            })
        });
    }
    group.finish();
}

fn plan(c: &mut Criterion) {
    let manifest = manifest();
    assert_eq!(manifest.transformers.len(), 60);
    let mut group = c.benchmark_group("plan");
    group.sample_size(10);
    for n in [1_000, 10_000] {
        let module = module(n);
        let check = matching::plan(&module, &manifest, false);
        assert!(check.is_ok(), "{:?}", check.errors().first());
        group.bench_function(format!("{n} components x 60 transformers"), |b| {
            b.iter(|| matching::plan(&module, &manifest, false))
        });
        // What `opm mod build` plans when it prints no explanation.
        group.bench_function(
            format!("{n} components x 60 transformers, problems only"),
            |b| {
                b.iter(|| {
                    matching::plan_with(&module, &manifest, false, matching::Explain::ProblemsOnly)
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, plan, load_and_plan);
criterion_main!(benches);
