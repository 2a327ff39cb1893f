//! Matching's edge cases, the plan's rules beyond the acceptance criteria, and bad input.

use serde_json::json;

use super::*;
use crate::matching::{LabelSource, Missing, Problem};

#[test]
fn edge_component_without_workload_type_matches_no_workload_transformer() {
    let m = module_with(
        "  task:\n    resources: {Task: {}}\n",
        "definitions:\n  acme.io/resources@v1#Task: {kind: Resource}\n",
    );
    let plan = matching::plan(&m, &provider(), false);
    let task = plan.component("task").unwrap();
    assert!(task.matched.is_empty());
    let deployment = task
        .unmatched
        .iter()
        .find(|u| u.transformer == DEPLOYMENT)
        .unwrap();
    assert!(deployment.missing.contains(&Missing::Label {
        key: WORKLOAD_TYPE.into(),
        wanted: "stateless".into(),
        found: None
    }));
    assert!(matches!(plan.errors(), [Problem::NoMatch { .. }]));
}

#[test]
fn edge_conflicting_labels_from_definitions_are_an_error_naming_both() {
    let m = module_with(
        "  api:\n    resources: {Container: {image: x}}\n    traits: {Batch: {}}\n",
        "definitions:\n  acme.io/traits@v1#Batch: {kind: Trait, labels: {core.opm.dev/workload-type: job}}\n",
    );
    let plan = matching::plan(&m, &provider(), false);
    assert_eq!(
        messages(plan.errors()).first().map(String::as_str),
        Some(
            "module.yaml:5:3: component \"api\": label core.opm.dev/workload-type is \"job\" from acme.io/traits@v1#Batch but \"stateless\" from opm.dev/resources/workload@v1#Container; attach only one of them"
        )
    );
}

#[test]
fn component_label_overrides_definition_label() {
    let plan = plan_of(&format!(
        "  db:\n    metadata: {{labels: {{{WORKLOAD_TYPE}: stateful}}}}\n    resources: {{Container: {{image: postgres}}}}\n"
    ));
    let db = plan.component("db").unwrap();
    assert_eq!(db.labels[WORKLOAD_TYPE].value, "stateful");
    assert_eq!(db.labels[WORKLOAD_TYPE].from, LabelSource::Component);
    assert_eq!(matched(&plan, "db"), [STATEFULSET]);
    let call = plan.calls().next().unwrap();
    assert_eq!(
        call.input_value()["metadata"]["labels"][WORKLOAD_TYPE],
        "stateful"
    );
}

#[test]
fn component_with_no_resources_is_an_error() {
    let plan = plan_of("  scale:\n    traits: {PersistentStorage: {}}\n");
    assert!(
        matched(&plan, "scale")
            .contains(&"transformer.opm.dev/storage@v1#PVCTransformer".to_owned())
    );
    assert_eq!(
        messages(plan.errors()),
        [
            "module.yaml:5:3: component \"scale\" attaches no resource; a component must attach at least one (a Container, for a workload)"
        ]
    );
}

/// A policy that no matched transformer enforces would be silently dropped, as a trait would, so
/// it is unhandled too: a warning, an error under --strict (`docs/matching.md`).
#[test]
fn an_unhandled_policy_is_a_warning_and_an_error_under_strict() {
    let mut provider = provider();
    provider
        .transformers
        .remove("transformer.opm.dev/network@v1#NetworkPolicyTransformer");
    let components =
        "  api:\n    resources: {Container: {image: x}}\n    policies: {NetworkPolicy: {}}\n";
    let expected = "module.yaml:5:3: component \"api\": no matched transformer handles opm.dev/policies/network@v1#NetworkPolicy";
    let plan = matching::plan(&module(components), &provider, false);
    assert!(plan.is_ok(), "{:?}", plan.errors());
    assert_eq!(messages(plan.warnings()), [expected]);
    let plan = matching::plan(&module(components), &provider, true);
    assert_eq!(messages(plan.errors()), [expected]);
}

#[test]
fn unknown_definition_is_an_error_with_suggestions() {
    let plan = plan_of("  api:\n    resources: {Container: {image: x}, Containr: {}}\n");
    let errors = messages(plan.errors());
    assert!(
        errors
            .iter()
            .any(|e| e.contains("no definition is named \"Containr\"")),
        "{errors:?}"
    );
    // A lower-case key is not a definition name at all; the module loader refuses it.
    let text = "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: a, version: '1'}\ncomponents:\n  api:\n    resources: {acme.io/x@v1#Contianer: {}}\n";
    let plan = matching::plan(
        &module::from_str(text, "m.yaml").unwrap(),
        &provider(),
        false,
    );
    assert_eq!(
        messages(plan.errors())[0],
        "m.yaml:6:17: component \"api\": no definition is named \"acme.io/x@v1#Contianer\" in the provider or the module; did you mean \"opm.dev/resources/workload@v1#Container\"?"
    );
    // A typo of a short name gets the definition it is likely a typo of.
    let plan =
        plan_of("  api:\n    resources: {Container: {image: x}}\n    traits: {Replicaz: 2}\n");
    assert!(
        messages(plan.errors())[0]
            .ends_with("no definition is named \"Replicaz\" in the provider or the module; did you mean \"opm.dev/traits/scaling@v1#Replicas\"?"),
        "{:?}",
        messages(plan.errors())
    );
}

#[test]
fn ambiguous_short_name_is_an_error_listing_candidates() {
    let m = module_with(
        "  api:\n    resources: {Container: {image: x}}\n    traits: {Expose: {}}\n",
        "definitions:\n  acme.io/traits@v1#Expose: {kind: Trait}\n",
    );
    let plan = matching::plan(&m, &provider(), false);
    assert_eq!(
        messages(plan.errors()),
        [
            "module.yaml:7:14: component \"api\": \"Expose\" could mean any of acme.io/traits@v1#Expose, opm.dev/traits/network@v1#Expose; write the FQN"
        ]
    );
}

/// A name that resolves to nothing (ambiguous or unknown) is the one cause reported; the component
/// matching no transformer because of it is not a second error.
#[test]
fn an_unresolved_resource_name_is_reported_once() {
    let ambiguous = module_with(
        "  api:\n    resources: {Container: {image: x}}\n",
        "definitions:\n  acme.io/resources@v1#Container: {kind: Resource}\n",
    );
    let plan = matching::plan(&ambiguous, &provider(), false);
    assert_eq!(
        messages(plan.errors()),
        [
            "module.yaml:6:17: component \"api\": \"Container\" could mean any of acme.io/resources@v1#Container, opm.dev/resources/workload@v1#Container; write the FQN"
        ]
    );
    let plan = plan_of("  api:\n    resources: {Containr: {image: x}}\n");
    let errors = messages(plan.errors());
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("no definition is named \"Containr\""),
        "{errors:?}"
    );
    // A component whose names all resolve and that still matches nothing is reported as such.
    let plan = plan_of(
        "  api:\n    metadata: {labels: {core.opm.dev/workload-type: wizard}}\n    resources: {Container: {image: x}}\n",
    );
    let errors = messages(plan.errors());
    assert!(
        errors.iter().any(|e| e.contains("matches no transformer")),
        "{errors:?}"
    );
}

/// A transformer's `validations` run on the JSON it would receive, defaults included, and a
/// failed one is an error of the plan (so `vet` refuses what `build` would), naming component
/// and transformer, and leaving the component without calls.
#[test]
fn a_failed_validation_refuses_the_component_at_plan_time() {
    let mut provider = provider();
    let service = provider.transformers.get_mut(SERVICE).unwrap();
    service.validations = vec![
        crate::provider::Validation {
            message: "a Service needs a container port".into(),
            schema: json!({"properties": {"spec": {"properties": {"container": {"required": ["ports"]}}}}}),
        },
        crate::provider::Validation {
            message: "the default pull policy reaches the transformer".into(),
            schema: json!({"properties": {"spec": {"properties": {"container": {"properties": {"imagePullPolicy": {"const": "IfNotPresent"}}}}}}}),
        },
    ];
    let module = module(
        "  api:\n    resources: {Container: {image: x}}\n    traits: {Expose: {}}\n  web:\n    resources: {Container: {image: x, ports: {http: {containerPort: 80}}}}\n    traits: {Expose: {}}\n",
    );
    let plan = matching::plan(&module, &provider, false);
    assert_eq!(
        messages(plan.errors()),
        [format!(
            "module.yaml:5:3: component \"api\": transformer {SERVICE} refuses it: a Service needs a container port"
        )]
    );
    assert!(!plan.component("api").unwrap().ok);
    assert!(plan.calls().all(|call| call.component == "web"));
    assert_eq!(
        plan.calls().count(),
        2,
        "web renders: Deployment and Service"
    );

    service_validation_that_does_not_compile_is_a_plan_error(provider);
}

fn service_validation_that_does_not_compile_is_a_plan_error(mut provider: ProviderManifest) {
    provider.transformers.get_mut(SERVICE).unwrap().validations =
        vec![crate::provider::Validation {
            message: "m".into(),
            schema: json!({"type": "no-such-type"}),
        }];
    assert!(
        provider
            .check()
            .unwrap_err()
            .contains("validations[0].schema does not compile")
    );
    let plan = matching::plan(
        &module("  api:\n    resources: {Container: {image: x}}\n    traits: {Expose: {}}\n"),
        &provider,
        false,
    );
    assert!(
        messages(plan.errors())[0].starts_with(&format!(
            "transformer {SERVICE}: validations[0].schema does not compile"
        )),
        "{:?}",
        messages(plan.errors())
    );
    // A transformer's validations are compiled when a component first matches it: a module
    // none of whose components the Service transformer matches does not pay for them, and is
    // not refused for them (a checked provider never holds such a schema: `check` refuses it).
    let plan = matching::plan(
        &module("  api:\n    resources: {Container: {image: x}}\n"),
        &provider,
        false,
    );
    assert!(plan.is_ok(), "{:?}", messages(plan.errors()));
}

#[test]
fn definition_under_the_wrong_section_is_an_error() {
    let plan = plan_of("  api:\n    resources: {Container: {image: x}, Replicas: 2}\n");
    assert_eq!(
        messages(plan.errors()),
        [
            "module.yaml:6:40: component \"api\": opm.dev/traits/scaling@v1#Replicas is a trait, but it is attached under resources; move it to traits"
        ]
    );
}

#[test]
fn one_definition_attached_twice_is_an_error() {
    let plan = plan_of(&format!(
        "  api:\n    resources: {{Container: {{image: x}}, {CONTAINER}: {{image: y}}}}\n"
    ));
    assert!(messages(plan.errors())[0].contains(&format!(
        "attaches {CONTAINER} twice, as Container and {CONTAINER}"
    )));
}

#[test]
fn invalid_values_name_component_definition_and_path_not_the_value() {
    let plan = plan_of(
        "  api:\n    resources:\n      Container: {image: hunter2, ports: {http: {containerPort: hunter2-port}}}\n    traits: {Replicas: -1}\n",
    );
    let errors = messages(plan.errors());
    assert_eq!(
        errors,
        [
            format!(
                "module.yaml:7:65: component \"api\", {CONTAINER}: at /ports/http/containerPort: the value is not of type \"integer\""
            ),
            format!(
                "module.yaml:8:14: component \"api\", {REPLICAS}: the value is less than the minimum of 0"
            ),
        ]
    );
    let json = serde_json::to_string(&plan).unwrap();
    assert!(!json.contains("hunter2"), "{json}");
    assert!(!format!("{plan:?}").contains("hunter2"));
}

#[test]
fn defaults_fill_in_under_the_value() {
    let plan = plan_of(
        "  api:\n    resources: {Container: {image: x}}\n    traits: {Replicas: null, Expose: {}}\n",
    );
    let call = plan.calls().next().unwrap();
    assert_eq!(call.input_value()["spec"]["replicas"], json!(1));
    assert_eq!(
        call.input_value()["spec"]["expose"],
        json!({"type": "ClusterIP"})
    );
    assert_eq!(
        call.input_value()["spec"]["container"],
        json!({"imagePullPolicy": "IfNotPresent", "image": "x"})
    );
}

#[test]
fn module_definitions_extend_the_provider_and_conflicts_are_errors() {
    let m = module_with(
        "  api:\n    resources: {Container: {image: x}}\n    traits: {Canary: {weight: 10}}\n",
        "definitions:\n  acme.io/traits@v1#Canary: {kind: Trait, schema: {type: object}}\n",
    );
    let mut provider = provider();
    provider
        .transformers
        .get_mut(DEPLOYMENT)
        .unwrap()
        .optional_traits
        .push("acme.io/traits@v1#Canary".into());
    let plan = matching::plan(&m, &provider, false);
    assert!(plan.is_ok(), "{:?}", plan.errors());
    assert_eq!(
        plan.calls().next().unwrap().input_value()["spec"]["canary"],
        json!({"weight": 10})
    );

    let m = module_with(
        "  api:\n    resources: {Container: {image: x}}\n",
        "definitions:\n  opm.dev/traits/scaling@v1#Replicas: {kind: Trait, defaults: 2}\n",
    );
    let plan = matching::plan(&m, &super::provider(), false);
    assert_eq!(
        messages(plan.errors()),
        [
            "definition opm.dev/traits/scaling@v1#Replicas is defined differently in provider testk8s and in the module at module.yaml:8:3; rename one or make them identical"
        ]
    );
}

#[test]
fn two_definitions_filling_one_field_is_an_error() {
    let m = module_with(
        "  api:\n    resources: {Container: {image: x}}\n    traits: {MoreReplicas: 2, Replicas: 3}\n",
        "definitions:\n  acme.io/traits@v1#MoreReplicas: {kind: Trait, field: replicas}\n",
    );
    let plan = matching::plan(&m, &provider(), false);
    assert!(messages(plan.errors()).iter().any(|e| e.contains(&format!(
        "acme.io/traits@v1#MoreReplicas, {REPLICAS} all fill spec field \"replicas\""
    ))));
}

#[test]
fn a_transformer_naming_an_undeclared_definition_is_a_warning() {
    let mut provider = provider();
    provider
        .transformers
        .get_mut(SERVICE)
        .unwrap()
        .optional_traits
        .push("acme.io/traits@v1#Nope".into());
    let plan = matching::plan(&module(API), &provider, false);
    assert!(plan.is_ok());
    assert_eq!(
        messages(plan.warnings()),
        [format!(
            "transformer {SERVICE} names acme.io/traits@v1#Nope, which no definition declares"
        )]
    );
}

#[test]
fn plan_json_has_reasons_and_messages_but_no_inputs() {
    let plan = plan_of(&format!("{API}  data:\n    resources: {{Volumes: {{}}}}\n"));
    let json = serde_json::to_value(&plan).unwrap();
    assert_eq!(json["ok"], false);
    assert_eq!(json["components"][0]["name"], "api");
    assert_eq!(
        json["components"][0]["labels"][WORKLOAD_TYPE],
        json!({"value": "stateless", "from": CONTAINER})
    );
    assert_eq!(
        json["components"][0]["matched"][1]["reasons"][0],
        json!({"kind": "label", "key": WORKLOAD_TYPE, "value": "stateless", "from": CONTAINER})
    );
    assert_eq!(json["errors"][0]["kind"], "noMatch");
    assert!(
        json["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("matches no transformer")
    );
    assert_eq!(
        json["calls"],
        json!([
            {"component": "api", "transformer": SERVICE, "provider": "testk8s"},
            {"component": "api", "transformer": DEPLOYMENT, "provider": "testk8s"}
        ])
    );
    assert!(
        !json.to_string().contains("ghcr.io"),
        "inputs are not serialized"
    );
}

#[test]
fn text_report_explains_each_component() {
    let plan = plan_of(API);
    let mut out = Vec::new();
    plan.write_text(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("component api (module.yaml:5:3)"), "{text}");
    let row = |transformer: &str| {
        let line = text
            .lines()
            .find(|line| line.starts_with(&format!("  {transformer} ")))
            .unwrap();
        line.split_whitespace()
            .skip(1)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        row(DEPLOYMENT),
        format!(
            "matches label core.opm.dev/workload-type=stateless (from {CONTAINER}); resource {CONTAINER}"
        )
    );
    assert_eq!(
        row(STATEFULSET),
        "no match label core.opm.dev/workload-type is \"stateless\", not \"stateful\""
    );
    assert!(
        text.ends_with("1 component, 2 calls, 0 errors, 0 warnings\n"),
        "{text}"
    );
}

#[test]
fn secrets_never_reach_the_plan_text_json_or_debug() {
    let plan = plan_of("  creds:\n    resources: {Secret: {stringData: {token: s3cr3t-token}}}\n");
    assert!(plan.is_ok());
    assert_eq!(
        plan.calls().next().unwrap().input_value()["spec"]["secret"]["stringData"]["token"],
        "s3cr3t-token"
    );
    let mut text = Vec::new();
    plan.write_text(&mut text).unwrap();
    for shown in [
        String::from_utf8(text).unwrap(),
        serde_json::to_string(&plan).unwrap(),
        format!("{plan:?}"),
    ] {
        assert!(!shown.contains("s3cr3t"), "{shown}");
    }
}
