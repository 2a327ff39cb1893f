use super::*;

fn render(route: Value, ports: Value) -> Result<Vec<Value>, TransformError> {
    let component = Component::from_value(json!({
        "metadata": {"name": "greeter"},
        "spec": {"container": {"image": "greeter", "ports": ports},
                 "expose": {"type": "ClusterIP"}, "grpcRoute": route},
    }))?;
    GrpcRouteTransformer::transform(&component, &opm_k8s_common::test_context())
}

fn one_port() -> Value {
    json!({"grpc": {"containerPort": 50051}})
}

#[test]
fn a_minimal_route_sends_every_call_to_the_only_port() {
    let out = render(json!({"gateways": {"public": {}}}), one_port()).unwrap();
    assert_eq!(out[0]["apiVersion"], "gateway.networking.k8s.io/v1");
    assert_eq!(out[0]["kind"], "GRPCRoute");
    assert_eq!(out[0]["metadata"]["name"], "greeter");
    assert_eq!(
        out[0]["spec"],
        json!({"parentRefs": [{"name": "public"}],
               "rules": [{"backendRefs": [{"name": "greeter", "port": 50051}]}]})
    );
}

#[test]
fn rules_by_name_match_services_methods_and_headers_and_name_ports() {
    let out = render(
        json!({
            "gateways": {"public": {"namespace": "gateways", "sectionName": "grpc", "port": 443},
                         "internal": {}},
            "hostnames": ["grpc.example.com"],
            "rules": {
                "say-hello": {"port": "grpc",
                              "matches": [{"headers": {"x-tenant": "a", "env": "canary"},
                                           "method": {"method": "SayHello",
                                                      "service": "helloworld.Greeter"}}]},
                "reflection": {"port": "admin",
                               "matches": [{"method": {"type": "RegularExpression",
                                                       "service": "grpc\\.reflection\\..*"}}]},
                "health": {"port": "admin", "matches": [{"method": {"service": ".grpc.health.v1.Health"}}]},
            },
            "labels": {"gateway": "public"},
            "annotations": {"example.com/team": "greeters"},
        }),
        json!({"grpc": {"containerPort": 50051}, "admin": {"containerPort": 9000}}),
    )
    .unwrap();
    let spec = &out[0]["spec"];
    assert_eq!(
        spec["parentRefs"],
        json!([{"name": "internal"},
               {"name": "public", "namespace": "gateways", "sectionName": "grpc", "port": 443}])
    );
    assert_eq!(spec["hostnames"], json!(["grpc.example.com"]));
    assert_eq!(
        spec["rules"],
        json!([
            {"name": "health",
             "matches": [{"method": {"type": "Exact", "service": ".grpc.health.v1.Health"}}],
             "backendRefs": [{"name": "greeter", "port": 9000}]},
            {"name": "reflection",
             "matches": [{"method": {"type": "RegularExpression", "service": "grpc\\.reflection\\..*"}}],
             "backendRefs": [{"name": "greeter", "port": 9000}]},
            {"name": "say-hello",
             "matches": [{"method": {"type": "Exact", "service": "helloworld.Greeter", "method": "SayHello"},
                          "headers": [{"type": "Exact", "name": "env", "value": "canary"},
                                      {"type": "Exact", "name": "x-tenant", "value": "a"}]}],
             "backendRefs": [{"name": "greeter", "port": 50051}]},
        ])
    );
    let method = spec["rules"][2]["matches"][0]["method"]
        .as_object()
        .unwrap();
    assert_eq!(
        method.keys().collect::<Vec<_>>(),
        ["type", "service", "method"]
    );
    assert_eq!(out[0]["metadata"]["labels"]["gateway"], "public");
    assert_eq!(
        out[0]["metadata"]["annotations"],
        json!({"example.com/team": "greeters"})
    );
}

#[test]
fn what_the_gateway_apis_rules_refuse_is_invalid() {
    let rule = |method: Value| json!({"gateways": {"g": {}}, "rules": {"r": {"matches": [{"method": method}]}}});
    let refusal = |method: Value| render(rule(method), one_port()).unwrap_err().to_string();
    assert!(
        refusal(json!({"type": "Exact"}))
            .contains("grpcRoute.rules.r.matches[0].method needs a service, a method or both")
    );
    assert!(refusal(json!({"service": "hello world"})).contains("is not a gRPC service name"));
    assert!(refusal(json!({"service": "a..b"})).contains("is not a gRPC service name"));
    assert!(refusal(json!({"method": "Say-Hello"})).contains("is not a gRPC method name"));
    assert!(
        refusal(json!({"method": "x", "type": "Prefix"})).contains("Exact or RegularExpression")
    );
    // A regular expression is not a name, and need not look like one.
    assert!(
        render(
            rule(json!({"type": "RegularExpression", "method": "Say.*"})),
            one_port()
        )
        .is_ok()
    );

    let many: Vec<Value> = (0..65)
        .map(|_| json!({"method": {"method": "A"}}))
        .collect();
    let err = render(
        json!({"gateways": {"g": {}}, "rules": {"a": {"matches": many}, "b": {"matches": many}}}),
        one_port(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("130 matches in all"), "{err}");
}

#[test]
fn a_port_that_is_not_the_services_a_missing_one_or_no_expose_is_invalid() {
    let ports = json!({"grpc": {"containerPort": 50051}, "admin": {"containerPort": 9000}});
    let named = render(
        json!({"gateways": {"g": {}}, "rules": {"r": {"port": "http"}}}),
        ports.clone(),
    )
    .unwrap_err();
    assert!(
        named
            .to_string()
            .contains("grpcRoute.rules.r.port \"http\" is not a port"),
        "{named}"
    );
    let missing = render(json!({"gateways": {"g": {}}}), ports).unwrap_err();
    assert!(
        missing
            .to_string()
            .contains("is required when the Service has several ports")
    );
    let component = Component::from_value(json!({
        "metadata": {"name": "greeter"},
        "spec": {"container": {"image": "greeter"}, "grpcRoute": {"gateways": {"g": {}}}},
    }))
    .unwrap();
    let err = GrpcRouteTransformer::transform(&component, &Context::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("has a GrpcRoute but no Expose trait"),
        "{err}"
    );
}

#[test]
fn a_second_instance_routes_to_its_own_service() {
    let component = Component::from_value(json!({
        "metadata": {"name": "greeter"},
        "spec": {"container": {"image": "greeter", "ports": one_port()},
                 "expose": {}, "grpcRoute": {"gateways": {"g": {}}}},
    }))
    .unwrap();
    let out = GrpcRouteTransformer::transform(&component, &opm_k8s_common::test_instance_context())
        .unwrap();
    assert_eq!(out[0]["metadata"]["name"], "shop-eu-greeter");
    assert_eq!(
        out[0]["spec"]["rules"][0]["backendRefs"][0]["name"],
        "shop-eu-greeter"
    );
}
