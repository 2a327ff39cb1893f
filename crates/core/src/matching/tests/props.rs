//! Property: the plan does not depend on the order of components, of what each attaches, of the
//! provider's transformers or of their requirement lists.
//!
//! Reordering a YAML file moves lines, so the comparison drops origins and messages (which hold
//! the same facts as the structured fields beside them) and compares everything else, including
//! every call's input.

use proptest::prelude::*;
use serde_json::Value;

use super::*;

const ATTACHABLE: [(&str, &str); 9] = [
    ("resources", "Container: {image: nginx}"),
    ("resources", "Volumes: {cache: {emptyDir: {}}}"),
    ("resources", "ConfigMap: {data: {a: b}}"),
    ("traits", "Expose: {type: NodePort}"),
    ("traits", "Replicas: 2"),
    ("traits", "Schedule: {cron: '* * * * *'}"),
    ("traits", "PersistentStorage: {data: {size: 1Gi}}"),
    ("traits", "RestartPolicy: {policy: Never}"),
    ("policies", "NetworkPolicy: {}"),
];

const WORKLOADS: [Option<&str>; 4] = [None, Some("stateful"), Some("daemon"), Some("job")];

/// One generated component: which attachables it has and its own workload label.
#[derive(Debug, Clone)]
struct Spec {
    attached: Vec<usize>,
    workload: Option<&'static str>,
}

fn component_text(name: &str, spec: &Spec, order: &[usize]) -> String {
    let mut text = format!("  {name}:\n");
    if let Some(workload) = spec.workload {
        text.push_str(&format!(
            "    metadata: {{labels: {{{WORKLOAD_TYPE}: {workload}}}}}\n"
        ));
    }
    // `order` is a permutation of 0..5 and a component attaches at most 4 things.
    let ordered: Vec<usize> = order
        .iter()
        .filter(|&&i| i < spec.attached.len())
        .map(|&i| spec.attached[i])
        .collect();
    for section in ["resources", "traits", "policies"] {
        let entries: Vec<&str> = ordered
            .iter()
            .filter(|&&a| ATTACHABLE[a].0 == section)
            .map(|&a| ATTACHABLE[a].1)
            .collect();
        if !entries.is_empty() {
            text.push_str(&format!("    {section}: {{{}}}\n", entries.join(", ")));
        }
    }
    text
}

fn without_locations(mut value: Value) -> Value {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("origin");
                map.remove("at");
                map.remove("message");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut value);
    value
}

fn summary(plan: &Plan) -> (Value, Vec<(String, String, Value)>) {
    let calls = plan
        .calls()
        .map(|c| (c.component.clone(), c.transformer.clone(), c.input_value()))
        .collect();
    (
        without_locations(serde_json::to_value(plan).unwrap()),
        calls,
    )
}

fn specs() -> impl Strategy<Value = Vec<Spec>> {
    let spec = (
        proptest::sample::subsequence((0..ATTACHABLE.len()).collect::<Vec<_>>(), 0..5),
        0..WORKLOADS.len(),
    )
        .prop_map(|(attached, w)| Spec {
            attached,
            workload: WORKLOADS[w],
        });
    proptest::collection::vec(spec, 1..8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn shuffling_components_and_transformers_never_changes_the_plan(
        specs in specs(),
        component_order in Just((0..8).collect::<Vec<usize>>()).prop_shuffle(),
        attachment_order in Just((0..5).collect::<Vec<usize>>()).prop_shuffle(),
        requirement_seed in any::<u64>(),
    ) {
        let specs: Vec<Spec> = specs.into_iter().filter(|s| !s.attached.is_empty()).collect();
        prop_assume!(!specs.is_empty());
        let names: Vec<String> = (0..specs.len()).map(|i| format!("c{i}")).collect();
        let canonical: String = specs.iter().zip(&names).map(|(s, n)| component_text(n, s, &[0, 1, 2, 3, 4])).collect();
        let shuffled: String = component_order
            .iter()
            .filter(|&&i| i < specs.len())
            .map(|&i| component_text(&names[i], &specs[i], &attachment_order))
            .collect();

        let provider = provider();
        let mut seed = requirement_seed;
        let mut shuffled_provider = manifest(&with_transformers_shuffled(PROVIDER, &mut seed));
        for transformer in shuffled_provider.transformers.values_mut() {
            for list in [
                &mut transformer.required_resources,
                &mut transformer.optional_resources,
                &mut transformer.required_traits,
                &mut transformer.optional_traits,
                &mut transformer.required_policies,
                &mut transformer.optional_policies,
            ] {
                shuffle(list, &mut seed);
            }
        }

        for strict in [false, true] {
            let a = matching::plan(&module(&canonical), &provider, strict);
            let b = matching::plan(&module(&shuffled), &shuffled_provider, strict);
            prop_assert_eq!(summary(&a), summary(&b));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// `opm mod build` plans without explanations: it must find exactly the problems, warnings and
    /// calls that `opm mod vet` finds, and differ only in the reasons it drops.
    #[test]
    fn a_plan_without_explanations_has_the_same_problems_and_calls(specs in specs()) {
        let specs: Vec<Spec> = specs.into_iter().filter(|s| !s.attached.is_empty()).collect();
        prop_assume!(!specs.is_empty());
        let text: String = specs
            .iter()
            .enumerate()
            .map(|(i, s)| component_text(&format!("c{i}"), s, &[0, 1, 2, 3, 4]))
            .collect();
        let provider = provider();
        for strict in [false, true] {
            let module = module(&text);
            let full = matching::plan(&module, &provider, strict);
            let lean = matching::plan_with(&module, &provider, strict, matching::Explain::ProblemsOnly);
            let problems = |plan: &Plan| {
                serde_json::to_value((plan.errors(), plan.warnings())).unwrap()
            };
            prop_assert_eq!(problems(&full), problems(&lean));
            prop_assert_eq!(summary(&full).1, summary(&lean).1);
            prop_assert_eq!(full.is_ok(), lean.is_ok());
            for component in &lean.components {
                prop_assert!(component.unmatched.is_empty());
                prop_assert!(component.matched.iter().all(|m| m.reasons.is_empty()));
            }
        }
    }
}

/// The provider manifest `text` with the entries of its `transformers:` section (the last
/// section) in an order shuffled by `seed`.
fn with_transformers_shuffled(text: &str, seed: &mut u64) -> String {
    let (head, section) = text
        .split_once("\ntransformers:\n")
        .expect("the test provider has a transformers section");
    let mut entries: Vec<String> = Vec::new();
    for line in section.lines() {
        if line.starts_with("  ") && !line.starts_with("   ") {
            entries.push(String::new());
        }
        let entry = entries
            .last_mut()
            .expect("the section starts with an entry");
        entry.push_str(line);
        entry.push('\n');
    }
    shuffle(&mut entries, seed);
    format!("{head}\ntransformers:\n{}", entries.concat())
}

/// Fisher–Yates with a small xorshift generator: deterministic for a seed.
fn shuffle<T>(items: &mut [T], seed: &mut u64) {
    for i in (1..items.len()).rev() {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let j = usize::try_from(*seed % (i as u64 + 1)).unwrap_or(0);
        items.swap(i, j);
    }
}
