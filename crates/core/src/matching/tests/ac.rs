//! The 18 acceptance criteria of matching (`docs/matching.md#acceptance-criteria`), in order.

use serde_json::json;

use super::*;
use crate::matching::{LabelSource, Missing, Problem, Reason};

// --- Label-based matching ---

#[test]
fn ac01_required_label_present_matches() {
    let plan = plan_of("  api:\n    resources: {Container: {image: nginx}}\n");
    let api = plan.component("api").unwrap();
    let deployment = api
        .matched
        .iter()
        .find(|m| m.transformer == DEPLOYMENT)
        .expect("deployment matches");
    assert!(deployment.reasons.contains(&Reason::Label {
        key: WORKLOAD_TYPE.into(),
        value: "stateless".into(),
        from: LabelSource::Definition(CONTAINER.into()),
    }));
}

#[test]
fn ac02_missing_or_different_label_does_not_match() {
    // A different value.
    let plan = plan_of(&format!(
        "  db:\n    metadata: {{labels: {{{WORKLOAD_TYPE}: stateful}}}}\n    resources: {{Container: {{image: postgres}}}}\n"
    ));
    let db = plan.component("db").unwrap();
    let deployment = db
        .unmatched
        .iter()
        .find(|u| u.transformer == DEPLOYMENT)
        .expect("deployment does not match");
    assert_eq!(
        deployment.missing,
        [Missing::Label {
            key: WORKLOAD_TYPE.into(),
            wanted: "stateless".into(),
            found: Some("stateful".into())
        }]
    );
    // A missing label.
    let mut provider = provider();
    provider
        .transformers
        .get_mut(DEPLOYMENT)
        .unwrap()
        .required_labels
        .insert("example.com/tier".into(), "web".into());
    let plan = matching::plan(
        &module("  api:\n    resources: {Container: {image: nginx}}\n"),
        &provider,
        false,
    );
    let deployment = plan
        .component("api")
        .unwrap()
        .unmatched
        .iter()
        .find(|u| u.transformer == DEPLOYMENT)
        .cloned();
    assert_eq!(
        deployment.unwrap().missing,
        [Missing::Label {
            key: "example.com/tier".into(),
            wanted: "web".into(),
            found: None
        }]
    );
}

#[test]
fn ac03_no_required_labels_matches_on_other_requirements() {
    let plan = plan_of(&format!(
        "  db:\n    metadata: {{labels: {{{WORKLOAD_TYPE}: stateful}}}}\n    resources: {{Container: {{image: postgres}}}}\n    traits: {{Expose: {{}}}}\n"
    ));
    let service = &plan
        .component("db")
        .unwrap()
        .matched
        .iter()
        .find(|m| m.transformer == SERVICE)
        .unwrap()
        .reasons;
    assert_eq!(
        service,
        &[
            Reason::Resource {
                fqn: CONTAINER.into()
            },
            Reason::Trait { fqn: EXPOSE.into() }
        ]
    );
}

// --- Resource/trait/policy requirements ---

#[test]
fn ac04_required_resource_attached_satisfies() {
    let plan = plan_of("  settings:\n    resources: {ConfigMap: {data: {mode: fast}}}\n");
    let api = plan.component("settings").unwrap();
    assert_eq!(api.matched.len(), 1);
    assert_eq!(
        api.matched[0].transformer,
        "transformer.opm.dev/config@v1#ConfigMapTransformer"
    );
    assert_eq!(
        api.matched[0].reasons,
        [Reason::Resource {
            fqn: "opm.dev/resources/config@v1#ConfigMap".into()
        }]
    );
}

#[test]
fn ac05_required_trait_attached_satisfies() {
    let plan = plan_of(API);
    let service = plan
        .component("api")
        .unwrap()
        .matched
        .iter()
        .find(|m| m.transformer == SERVICE)
        .cloned();
    assert!(
        service
            .unwrap()
            .reasons
            .contains(&Reason::Trait { fqn: EXPOSE.into() })
    );
}

#[test]
fn ac06_missing_resource_trait_or_policy_does_not_match() {
    let plan = plan_of(
        "  settings:\n    resources: {ConfigMap: {}}\n    traits: {PersistentStorage: {}}\n",
    );
    let settings = plan.component("settings").unwrap();
    let missing = |fqn: &str| {
        settings
            .unmatched
            .iter()
            .find(|u| u.transformer == fqn)
            .unwrap()
            .missing
            .clone()
    };
    assert!(missing(SERVICE).contains(&Missing::Resource {
        fqn: CONTAINER.into()
    }));
    assert!(missing(SERVICE).contains(&Missing::Trait { fqn: EXPOSE.into() }));
    assert!(
        missing("transformer.opm.dev/network@v1#NetworkPolicyTransformer").contains(
            &Missing::Policy {
                fqn: "opm.dev/policies/network@v1#NetworkPolicy".into()
            }
        )
    );
    // Everything but one requirement: a transformer that needs two resources, two traits and
    // a policy, against components that lack exactly one of them.
    let text = PROVIDER.to_owned()
        + "  example.com/t@v1#Demanding:\n    requiredResources: [opm.dev/resources/workload@v1#Container, opm.dev/resources/config@v1#ConfigMap]\n    requiredTraits: [opm.dev/traits/network@v1#Expose, opm.dev/traits/scaling@v1#Replicas]\n    requiredPolicies: [opm.dev/policies/network@v1#NetworkPolicy]\n    component: placeholder.component\n";
    let provider = manifest(&text);
    let full = [
        "    resources: {Container: {image: x}, ConfigMap: {}}\n",
        "    traits: {Expose: {}, Replicas: 2}\n",
        "    policies: {NetworkPolicy: {}}\n",
    ];
    let all_but = |drop: &str, keep: &str| {
        let body: String = full.iter().map(|line| line.replace(drop, keep)).collect();
        let plan = matching::plan(&module(&format!("  c:\n{body}")), &provider, false);
        let component = plan.component("c").unwrap();
        let demanding = "example.com/t@v1#Demanding";
        assert!(
            !component.matched.iter().any(|m| m.transformer == demanding),
            "matches without {drop}"
        );
        component
            .unmatched
            .iter()
            .find(|u| u.transformer == demanding)
            .unwrap()
            .missing
            .clone()
    };
    assert_eq!(
        all_but(", ConfigMap: {}", ""),
        [Missing::Resource {
            fqn: "opm.dev/resources/config@v1#ConfigMap".into()
        }]
    );
    assert_eq!(
        all_but(", Replicas: 2", ""),
        [Missing::Trait {
            fqn: REPLICAS.into()
        }]
    );
    assert_eq!(
        all_but("{NetworkPolicy: {}}", "{}"),
        [Missing::Policy {
            fqn: "opm.dev/policies/network@v1#NetworkPolicy".into()
        }]
    );
    let body: String = full.concat();
    let plan = matching::plan(&module(&format!("  c:\n{body}")), &provider, false);
    assert!(
        matched(&plan, "c").contains(&"example.com/t@v1#Demanding".to_owned()),
        "with everything attached it matches"
    );

    // With the policy attached, the policy transformer matches.
    let plan = plan_of(
        "  api:\n    resources: {Container: {image: x}}\n    policies: {NetworkPolicy: {}}\n",
    );
    assert!(
        matched(&plan, "api")
            .contains(&"transformer.opm.dev/network@v1#NetworkPolicyTransformer".to_owned())
    );
}

// --- The matching algorithm ---

#[test]
fn ac07_stateless_container_matches_deployment_not_statefulset() {
    let plan = plan_of("  api:\n    resources: {Container: {image: nginx}}\n");
    assert_eq!(matched(&plan, "api"), [DEPLOYMENT]);
    let statefulset = plan
        .component("api")
        .unwrap()
        .unmatched
        .iter()
        .find(|u| u.transformer == STATEFULSET)
        .cloned();
    assert_eq!(
        statefulset.unwrap().missing[0].to_string(),
        "label core.opm.dev/workload-type is \"stateless\", not \"stateful\""
    );
}

#[test]
fn ac08_service_matches_regardless_of_workload_type() {
    for workload in ["stateless", "stateful", "daemon", "job", "cronjob"] {
        let plan = plan_of(&format!(
            "  w:\n    metadata: {{labels: {{{WORKLOAD_TYPE}: {workload}}}}}\n    resources: {{Container: {{image: x}}}}\n    traits: {{Expose: {{}}}}\n"
        ));
        assert!(
            matched(&plan, "w").contains(&SERVICE.to_owned()),
            "{workload}"
        );
    }
}

#[test]
fn ac09_container_and_expose_match_deployment_and_service() {
    let plan = plan_of(API);
    assert_eq!(matched(&plan, "api"), [SERVICE, DEPLOYMENT]);
    assert!(plan.is_ok(), "{:?}", plan.errors());
}

// --- Conflict detection ---

#[test]
fn ac10_identical_requirements_are_an_error() {
    let text = PROVIDER.to_owned()
        + "  transformer.opm.dev/workload@v1#DeploymentTransformerB:\n    requiredLabels: {core.opm.dev/workload-type: stateless}\n    requiredResources: [opm.dev/resources/workload@v1#Container, opm.dev/resources/workload@v1#Container]\n    optionalTraits: [opm.dev/traits/scaling@v1#Replicas]\n    component: placeholder.component\n";
    let plan = matching::plan(&module(API), &manifest(&text), false);
    assert!(!plan.is_ok());
    let errors: Vec<&Problem> = plan
        .errors()
        .iter()
        .filter(|p| matches!(p, Problem::MultipleExactMatches { .. }))
        .collect();
    assert_eq!(errors.len(), 1);
    let message = errors[0].to_string();
    assert!(
        message.contains("multiple exact transformer matches for component \"api\""),
        "{message}"
    );
    assert!(
        message.contains(&format!("{DEPLOYMENT}, {DEPLOYMENT}B")),
        "{message}"
    );
    assert_eq!(
        plan.calls().len(),
        0,
        "a component with an error gets no calls"
    );
}

#[test]
fn ac11_different_required_traits_are_complementary() {
    let plan = plan_of(API);
    assert!(plan.errors().is_empty());
    let calls: Vec<&str> = plan.calls().map(|c| c.transformer.as_str()).collect();
    assert_eq!(calls, [SERVICE, DEPLOYMENT]);

    // Transformers that differ from the Deployment transformer only in their required traits,
    // or only in their required policies, are complementary too.
    let text = PROVIDER.to_owned()
        + "  example.com/t@v1#ByTrait:\n    requiredLabels: {core.opm.dev/workload-type: stateless}\n    requiredResources: [opm.dev/resources/workload@v1#Container]\n    requiredTraits: [opm.dev/traits/scaling@v1#Replicas]\n    component: placeholder.component\n"
        + "  example.com/t@v1#ByPolicy:\n    requiredLabels: {core.opm.dev/workload-type: stateless}\n    requiredResources: [opm.dev/resources/workload@v1#Container]\n    requiredPolicies: [opm.dev/policies/network@v1#NetworkPolicy]\n    component: placeholder.component\n";
    let plan = matching::plan(
        &module(
            "  api:\n    resources: {Container: {image: x}}\n    traits: {Replicas: 2}\n    policies: {NetworkPolicy: {}}\n",
        ),
        &manifest(&text),
        false,
    );
    assert!(plan.errors().is_empty(), "{:?}", plan.errors());
    let matched = matched(&plan, "api");
    for transformer in [
        "example.com/t@v1#ByTrait",
        "example.com/t@v1#ByPolicy",
        DEPLOYMENT,
    ] {
        assert!(matched.contains(&transformer.to_owned()), "{matched:?}");
    }
}

// --- Transform execution (what the plan hands the sandbox) ---

#[test]
fn ac12_each_matched_transformer_receives_the_whole_component() {
    let plan = plan_of(API);
    let calls: Vec<_> = plan.calls().collect();
    assert_eq!(calls.len(), 2);
    for call in &calls {
        let input = &call.input_value();
        // Compact text with `defaults` last, as a transformer has always received it.
        assert_eq!(call.input, crate::json::compact(input));
        assert_eq!(
            input.as_object().unwrap().keys().next_back().unwrap(),
            "defaults"
        );
        assert_eq!(input["metadata"]["name"], "api");
        assert_eq!(input["metadata"]["labels"][WORKLOAD_TYPE], "stateless");
        assert_eq!(input["resources"], json!([CONTAINER]));
        assert_eq!(input["traits"], json!([EXPOSE, REPLICAS]));
        assert_eq!(input["policies"], json!([]));
        assert_eq!(
            input["spec"],
            json!({
                "container": {"imagePullPolicy": "IfNotPresent", "image": "ghcr.io/acme/api:1.4.0", "ports": {"http": {"containerPort": 8080}}},
                "expose": {"type": "ClusterIP"},
                "replicas": 3,
            })
        );
    }
    // Only `defaults` differs: the defaults of each transformer's optional definitions the
    // component does not attach.
    let by = |t: &str| {
        calls
            .iter()
            .find(|c| c.transformer == t)
            .unwrap()
            .input_value()["defaults"]
            .clone()
    };
    assert_eq!(
        by(DEPLOYMENT),
        json!({"restartPolicy": {"policy": "Always"}})
    );
    assert_eq!(by(SERVICE), json!({}));
}

// ac13 (every call returns a list of resources, even of one) and ac14 (the outputs of a
// component's transformers are concatenated into one list) need real transforms: they are
// `tests/all/sandbox.rs::ac13_…` and `tests/all/render.rs::ac14_…`. Here: the plan side of ac14.

#[test]
fn ac14_calls_of_one_component_are_adjacent_in_plan_order() {
    // Calls for one component are adjacent and ordered by transformer FQN, so concatenating
    // their outputs gives one deterministic resource list per component.
    let plan = plan_of(&format!(
        "{API}  web:\n    resources: {{Container: {{image: nginx}}}}\n    traits: {{Expose: {{}}}}\n"
    ));
    let pairs: Vec<(&str, &str)> = plan
        .calls()
        .map(|c| (c.component.as_str(), c.transformer.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("api", SERVICE),
            ("api", DEPLOYMENT),
            ("web", SERVICE),
            ("web", DEPLOYMENT)
        ]
    );
}

// --- Unhandled definitions ---

const WITH_SCHEDULE: &str =
    "  api:\n    resources: {Container: {image: x}}\n    traits: {Schedule: {cron: '* * * * *'}}\n";

#[test]
fn ac15_unhandled_trait_is_a_warning() {
    let plan = plan_of(WITH_SCHEDULE);
    assert!(plan.is_ok());
    assert_eq!(
        plan.component("api").unwrap().unhandled,
        ["opm.dev/traits/workload@v1#Schedule"]
    );
    assert_eq!(
        messages(plan.warnings()),
        [
            "module.yaml:5:3: component \"api\": no matched transformer handles opm.dev/traits/workload@v1#Schedule"
        ]
    );
    assert_eq!(plan.calls().len(), 1);
}

#[test]
fn ac16_unhandled_trait_is_an_error_under_strict() {
    let plan = matching::plan(&module(WITH_SCHEDULE), &provider(), true);
    assert!(!plan.is_ok());
    assert!(plan.warnings().is_empty());
    assert_eq!(
        messages(plan.errors()),
        [
            "module.yaml:5:3: component \"api\": no matched transformer handles opm.dev/traits/workload@v1#Schedule"
        ]
    );
    assert_eq!(plan.calls().len(), 0);
}

// --- No match ---

#[test]
fn ac17_no_match_lists_every_transformer_with_what_is_missing() {
    let plan = plan_of("  data:\n    resources: {Volumes: {cache: {emptyDir: {}}}}\n");
    let [
        Problem::NoMatch {
            component,
            candidates,
            ..
        },
    ] = plan.errors()
    else {
        panic!("expected one no-match error: {:?}", plan.errors())
    };
    assert_eq!(component, "data");
    assert_eq!(candidates.len(), provider().transformers.len());
    let message = plan.errors()[0].to_string();
    assert!(
        message.starts_with("module.yaml:5:3: component \"data\" matches no transformer\n    it has: labels none; resources opm.dev/resources/storage@v1#Volumes; traits none; policies none\n"),
        "the component's details come first: {message}"
    );
    for transformer in provider().transformers.keys() {
        assert!(
            message.contains(transformer.as_str()),
            "{transformer} missing from {message}"
        );
    }
    assert!(message.contains(&format!(
        "{DEPLOYMENT}\n      requires: labels core.opm.dev/workload-type=stateless; resources {CONTAINER}\n      lacks: label core.opm.dev/workload-type=stateless is missing; resource {CONTAINER} is not attached"
    )), "{message}");
}

// --- Provider declaration ---

#[test]
fn ac18_declared_lists_every_fqn_of_every_transformer() {
    let declared = matching::declared(&provider());
    assert_eq!(
        declared
            .resources
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        [
            "opm.dev/resources/config@v1#ConfigMap",
            "opm.dev/resources/config@v1#Secret",
            "opm.dev/resources/storage@v1#Volumes",
            CONTAINER,
        ]
    );
    assert_eq!(
        declared
            .traits
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        [
            EXPOSE,
            REPLICAS,
            "opm.dev/traits/storage@v1#PersistentStorage",
            "opm.dev/traits/workload@v1#HealthCheck",
            "opm.dev/traits/workload@v1#RestartPolicy",
            "opm.dev/traits/workload@v1#Schedule",
        ]
    );
    assert_eq!(
        declared
            .policies
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        ["opm.dev/policies/network@v1#NetworkPolicy"]
    );
    assert_eq!(plan_of(API).declared(), &declared);
}
