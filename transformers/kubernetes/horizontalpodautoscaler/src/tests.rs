use super::*;

fn render(workload: &str, autoscaling: Value) -> Result<Vec<Value>, TransformError> {
    let component = Component::from_value(json!({
        "metadata": {"name": "api", "labels": {"core.opm.dev/workload-type": workload}},
        "spec": {"container": {"image": "x"}, "autoscaling": autoscaling},
    }))?;
    HorizontalPodAutoscalerTransformer::transform(&component, &Context::default())
}

fn refusal(autoscaling: Value) -> String {
    render("stateless", autoscaling).unwrap_err().to_string()
}

#[test]
fn minimal_autoscaler_targets_the_deployment() {
    let out = render("stateless", json!({"maxReplicas": 5})).unwrap();
    assert_eq!(out[0]["apiVersion"], "autoscaling/v2");
    assert_eq!(
        out[0]["spec"],
        json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
               "minReplicas": 1, "maxReplicas": 5})
    );
}

#[test]
fn maximal_autoscaler_targets_a_statefulset_with_both_metrics() {
    let out = render(
        "stateful",
        json!({"minReplicas": 2, "maxReplicas": 10, "targetCPUUtilizationPercentage": 70,
               "targetMemoryUtilizationPercentage": 80}),
    )
    .unwrap();
    let spec = &out[0]["spec"];
    assert_eq!(spec["scaleTargetRef"]["kind"], "StatefulSet");
    assert_eq!(spec["minReplicas"], 2);
    assert_eq!(spec["metrics"][0]["resource"]["name"], "cpu");
    assert_eq!(
        spec["metrics"][0]["resource"]["target"]["averageUtilization"],
        70
    );
    assert_eq!(spec["metrics"][1]["resource"]["name"], "memory");
}

#[test]
fn daemons_and_inverted_bounds_are_invalid() {
    let err = render("daemon", json!({"maxReplicas": 3})).unwrap_err();
    assert!(err.to_string().contains("\"daemon\""), "{err}");
    let err = render("stateless", json!({"minReplicas": 4, "maxReplicas": 3})).unwrap_err();
    assert!(err.to_string().contains("greater than"), "{err}");
}

#[test]
fn a_second_instance_scales_its_own_workload() {
    let component = Component::from_value(json!({
        "metadata": {"name": "api", "labels": {"core.opm.dev/workload-type": "stateless"}},
        "spec": {"container": {"image": "x"}, "autoscaling": {"maxReplicas": 3}},
    }))
    .unwrap();
    let context = opm_k8s_common::test_instance_context();
    let out = HorizontalPodAutoscalerTransformer::transform(&component, &context).unwrap();
    assert_eq!(out[0]["metadata"]["name"], "shop-eu-api");
    assert_eq!(out[0]["spec"]["scaleTargetRef"]["name"], "shop-eu-api");
}

#[test]
fn every_metric_kind_renders_after_the_percentages_in_the_apis_field_order() {
    let out = render(
        "stateless",
        json!({
            "maxReplicas": 8,
            "targetCPUUtilizationPercentage": 75,
            "metrics": [
                {"resource": {"target": {"averageValue": "500Mi", "type": "AverageValue"},
                              "name": "memory"}, "type": "Resource"},
                {"type": "ContainerResource",
                 "containerResource": {"name": "cpu", "container": "web",
                                       "target": {"type": "Utilization", "averageUtilization": 60}}},
                {"type": "Pods",
                 "pods": {"metric": {"name": "requests_per_second",
                                     "selector": {"matchLabels": {"verb": "GET", "code": "200"}}},
                          "target": {"type": "AverageValue", "averageValue": "1k"}}},
                {"type": "Object",
                 "object": {"describedObject": {"name": "main", "kind": "Ingress",
                                                "apiVersion": "networking.k8s.io/v1"},
                            "metric": {"name": "requests-per-second"},
                            "target": {"type": "Value", "value": 2000}}},
                {"type": "External",
                 "external": {"metric": {"name": "queue_messages_ready",
                                         "selector": {"matchExpressions": [
                                             {"key": "queue", "operator": "In", "values": ["jobs"]}]}},
                              "target": {"type": "AverageValue", "averageValue": 30}}},
            ],
        }),
    )
    .unwrap();
    assert_eq!(
        out[0]["spec"]["metrics"],
        json!([
            {"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 75}}},
            {"type": "Resource", "resource": {"name": "memory",
                "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
            {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "web",
                "target": {"type": "Utilization", "averageUtilization": 60}}},
            {"type": "Pods", "pods": {
                "metric": {"name": "requests_per_second",
                           "selector": {"matchLabels": {"code": "200", "verb": "GET"}}},
                "target": {"type": "AverageValue", "averageValue": "1k"}}},
            {"type": "Object", "object": {
                "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                                    "name": "main"},
                "metric": {"name": "requests-per-second"},
                "target": {"type": "Value", "value": 2000}}},
            {"type": "External", "external": {
                "metric": {"name": "queue_messages_ready",
                           "selector": {"matchExpressions": [
                               {"key": "queue", "operator": "In", "values": ["jobs"]}]}},
                "target": {"type": "AverageValue", "averageValue": 30}}},
        ])
    );
    // Field order, not only content: the golden reads as the API documents it.
    let resource = out[0]["spec"]["metrics"][1]["resource"]
        .as_object()
        .unwrap();
    assert_eq!(resource.keys().collect::<Vec<_>>(), ["name", "target"]);
}

#[test]
fn a_target_needs_the_field_of_its_type_and_a_type_its_metric_allows() {
    let metric = |target: Value| {
        json!({"maxReplicas": 3, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": target}}]})
    };
    assert!(
        refusal(metric(json!({"type": "Utilization", "averageValue": "1"})))
            .contains("autoscaling.metrics[0].resource.target.averageValue is not allowed with type Utilization")
    );
    assert!(
        refusal(metric(json!({"type": "Value", "value": 1}))).contains(
            "target.type must be Utilization or AverageValue for a metric of type Resource"
        )
    );
    assert!(
        refusal(metric(json!({"type": "AverageValue", "averageValue": "0"})))
            .contains("target.averageValue must be greater than 0")
    );
    assert!(
        refusal(metric(json!({"type": "Utilization"})))
            .contains("target.averageUtilization is required with type Utilization")
    );
    let pods = json!({"maxReplicas": 3, "metrics": [{"type": "Pods", "pods": {
        "metric": {"name": "rps"}, "target": {"type": "Value", "value": 10}}}]});
    assert!(refusal(pods).contains("must be AverageValue for a metric of type Pods"));
    let mixed = json!({"maxReplicas": 3, "metrics": [{"type": "External",
        "resource": {"name": "cpu"}, "external": {}}]});
    assert!(
        refusal(mixed).contains("metrics[0].resource is not allowed for a metric of type External")
    );
    let slash = json!({"maxReplicas": 3, "metrics": [{"type": "External", "external": {
        "metric": {"name": "a/b"}, "target": {"type": "Value", "value": 1}}}]});
    assert!(refusal(slash).contains("may not be '.' or '..' or contain '/' or '%'"));
}

#[test]
fn behavior_renders_scale_up_then_scale_down_in_the_apis_field_order() {
    let out = render(
        "stateless",
        json!({"maxReplicas": 6, "behavior": {
            "scaleDown": {"policies": [{"periodSeconds": 60, "value": 10, "type": "Percent"}],
                          "stabilizationWindowSeconds": 300},
            "scaleUp": {"selectPolicy": "Max", "stabilizationWindowSeconds": 0,
                        "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                     {"type": "Percent", "value": 100, "periodSeconds": 15}]},
        }}),
    )
    .unwrap();
    let behavior = &out[0]["spec"]["behavior"];
    assert_eq!(
        behavior,
        &json!({
            "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                        "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                     {"type": "Percent", "value": 100, "periodSeconds": 15}]},
            "scaleDown": {"stabilizationWindowSeconds": 300,
                          "policies": [{"type": "Percent", "value": 10, "periodSeconds": 60}]},
        })
    );
    let keys: Vec<&String> = behavior.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["scaleUp", "scaleDown"]);
    let disabled = render(
        "stateful",
        json!({"maxReplicas": 2, "behavior": {"scaleDown": {"selectPolicy": "Disabled"}}}),
    )
    .unwrap();
    assert_eq!(
        disabled[0]["spec"]["behavior"],
        json!({"scaleDown": {"selectPolicy": "Disabled"}})
    );
}

#[test]
fn behavior_out_of_the_api_servers_bounds_is_invalid() {
    let rules = |rules: Value| json!({"maxReplicas": 3, "behavior": {"scaleUp": rules}});
    assert!(
        refusal(rules(json!({"stabilizationWindowSeconds": 3601})))
            .contains("scaleUp.stabilizationWindowSeconds must be 0 to 3600")
    );
    assert!(refusal(rules(json!({"selectPolicy": "max"}))).contains("Max, Min or Disabled"));
    assert!(refusal(rules(json!({"policies": []}))).contains("at least one policy"));
    assert!(
        refusal(rules(
            json!({"policies": [{"type": "Pods", "value": 0, "periodSeconds": 15}]})
        ))
        .contains("policies[0].value must be greater than 0")
    );
    assert!(
        refusal(rules(
            json!({"policies": [{"type": "Pods", "value": 1, "periodSeconds": 1801}]})
        ))
        .contains("policies[0].periodSeconds must be 1 to 1800")
    );
    assert!(
        refusal(rules(
            json!({"policies": [{"type": "Replicas", "value": 1, "periodSeconds": 1}]})
        ))
        .contains("policies[0].type must be Pods or Percent")
    );
    let other = json!({"maxReplicas": 3, "behavior": {"scaleSideways": {}}});
    assert!(refusal(other).contains("behavior.scaleSideways is not allowed"));
}

#[test]
fn quantities_are_positive_only_with_a_non_zero_digit_and_no_sign() {
    for positive in [
        json!(1),
        json!(0.5),
        json!("1k"),
        json!("500m"),
        json!("0.1"),
    ] {
        assert!(is_positive(&positive), "{positive}");
    }
    for not in [
        json!(0),
        json!(-1),
        json!("0"),
        json!("0Mi"),
        json!("-1"),
        json!("k"),
        json!(null),
    ] {
        assert!(!is_positive(&not), "{not}");
    }
}
