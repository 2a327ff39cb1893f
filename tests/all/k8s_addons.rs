//! The add-ons real applications need beside their workload: autoscaling on any
//! `autoscaling/v2` metric with a scaling behavior, egress and label-selector peers in network
//! policies, gRPC routes through Gateway API Gateways and Prometheus Operator ServiceMonitors
//! that follow the component's Service. Each renders, and `opm mod vet` refuses what the API
//! server (or the CRD, or the operator) would refuse.

use serde_json::Value;

use crate::kubernetes::{build_json, vet_and_build_refuse, vet_refuses};

fn find<'a>(resources: &'a [Value], kind: &str) -> &'a Value {
    resources
        .iter()
        .find(|r| r["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {resources:#?}"))
}

/// A component `api` with two ports, exposed, with `traits` (YAML lines at six spaces) added.
fn exposed_api(traits: &str) -> String {
    format!(
        "  api:\n    resources:\n      Container: {{image: api, ports: {{grpc: {{containerPort: 50051}}, metrics: {{containerPort: 9090}}}}}}\n    traits:\n      Expose: {{}}\n{traits}"
    )
}

/// Custom and external metrics and a scaling behavior render as the API documents them.
#[test]
fn autoscaling_renders_every_metric_kind_and_the_behavior() {
    let resources = build_json(
        "  api:\n    resources: {Container: {image: api}}\n    traits:\n      Autoscaling:\n        maxReplicas: 5\n        metrics:\n          - {type: Pods, pods: {metric: {name: rps}, target: {type: AverageValue, averageValue: 100m}}}\n          - {type: External, external: {metric: {name: queue}, target: {type: Value, value: 30}}}\n        behavior: {scaleDown: {stabilizationWindowSeconds: 600, selectPolicy: Min, policies: [{type: Pods, value: 1, periodSeconds: 60}]}}\n",
    );
    let spec = &find(&resources, "HorizontalPodAutoscaler")["spec"];
    assert_eq!(spec["metrics"][0]["pods"]["target"]["averageValue"], "100m");
    assert_eq!(spec["metrics"][1]["external"]["target"]["value"], 30);
    assert_eq!(spec["behavior"]["scaleDown"]["selectPolicy"], "Min");
}

/// What the API server refuses of metrics and behavior is refused at vet.
#[test]
fn autoscaling_refuses_at_vet_what_kubernetes_would() {
    vet_refuses(
        r#"  api:
    resources: {Container: {image: api}}
    traits:
      Autoscaling:
        maxReplicas: 5
        metrics:
          - {type: Resource, resource: {name: cpu, target: {type: Value, value: 1}}}
          - {type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50, averageValue: "1"}}}
          - {type: Pods, pods: {metric: {name: rps}, target: {type: Utilization, averageUtilization: 50}}}
          - {type: External, external: {metric: {name: "a/b"}, target: {type: Value, value: "0"}}}
          - {type: Object, resource: {name: cpu, target: {type: Utilization, averageUtilization: 1}}}
          - {type: ContainerResource, containerResource: {name: cpu, target: {type: Utilization, averageUtilization: 0}}}
          - {type: External, external: {metric: {name: q, selector: {matchExpressions: [{key: a, operator: In}]}}, target: {type: AverageValue, averageValue: -1}}}
          - {type: Custom}
        behavior:
          scaleUp: {stabilizationWindowSeconds: 3601, selectPolicy: max, policies: [{type: Pods, value: 0, periodSeconds: 1801}]}
          scaleDown: {policies: []}
"#,
        &[
            "opm.dev/traits/scaling@v1#Autoscaling: at /metrics/0/resource/target/type: ",
            "opm.dev/traits/scaling@v1#Autoscaling: at /metrics/1/resource/target: ",
            "opm.dev/traits/scaling@v1#Autoscaling: at /metrics/2/pods/target",
            "opm.dev/traits/scaling@v1#Autoscaling: at /metrics/3/external/metric/name: ",
            "opm.dev/traits/scaling@v1#Autoscaling: at /metrics/3/external/target/value: ",
            "opm.dev/traits/scaling@v1#Autoscaling: at /metrics/4: ",
            "opm.dev/traits/scaling@v1#Autoscaling: at /metrics/5/containerResource: \"container\" is a required property",
            "opm.dev/traits/scaling@v1#Autoscaling: at /metrics/5/containerResource/target/averageUtilization: ",
            "opm.dev/traits/scaling@v1#Autoscaling: at /metrics/6/external/metric/selector/matchExpressions/0: ",
            "opm.dev/traits/scaling@v1#Autoscaling: at /metrics/6/external/target/averageValue: ",
            "opm.dev/traits/scaling@v1#Autoscaling: at /metrics/7/type: ",
            "opm.dev/traits/scaling@v1#Autoscaling: at /behavior/scaleUp/stabilizationWindowSeconds: ",
            "opm.dev/traits/scaling@v1#Autoscaling: at /behavior/scaleUp/selectPolicy: ",
            "opm.dev/traits/scaling@v1#Autoscaling: at /behavior/scaleUp/policies/0/value: ",
            "opm.dev/traits/scaling@v1#Autoscaling: at /behavior/scaleUp/policies/0/periodSeconds: ",
            "opm.dev/traits/scaling@v1#Autoscaling: at /behavior/scaleDown/policies: ",
        ],
    );
}

/// Egress to peers on their ports, selector peers and IP blocks with exceptions render; DNS stays
/// open unless the module says otherwise, and an egress-only policy leaves ingress alone.
#[test]
fn network_policies_render_egress_selector_peers_and_dns() {
    let resources = build_json(
        r#"  api:
    resources: {Container: {image: api, ports: {http: {containerPort: 80}}}}
    policies:
      NetworkPolicy:
        allowFrom: [{namespaceSelector: {matchLabels: {team: a}}, podSelector: {}}]
        ports: [http]
        allowTo:
          - {cidr: 0.0.0.0/0, except: [10.0.0.0/8], ports: [{port: 443}]}
          - {component: db, ports: [{port: 5000, endPort: 5010, protocol: UDP}]}
  job:
    resources: {Container: {image: job}}
    policies:
      NetworkPolicy: {policyTypes: [Egress], allowDNS: false}
"#,
    );
    let policies: Vec<&Value> = resources
        .iter()
        .filter(|r| r["kind"] == "NetworkPolicy")
        .collect();
    let api = &policies
        .iter()
        .find(|p| p["metadata"]["name"] == "api")
        .unwrap()["spec"];
    assert_eq!(api["policyTypes"], serde_json::json!(["Ingress", "Egress"]));
    assert_eq!(
        api["ingress"][0]["from"][0],
        serde_json::json!({"podSelector": {}, "namespaceSelector": {"matchLabels": {"team": "a"}}})
    );
    assert_eq!(
        api["egress"],
        serde_json::json!([
            {"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]}}],
             "ports": [{"protocol": "TCP", "port": 443}]},
            {"to": [{"podSelector": {"matchLabels": {"app.kubernetes.io/instance": "shop",
                                                     "app.kubernetes.io/name": "db"}}}],
             "ports": [{"protocol": "UDP", "port": 5000, "endPort": 5010}]},
            {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
        ])
    );
    let job = &policies
        .iter()
        .find(|p| p["metadata"]["name"] == "job")
        .unwrap()["spec"];
    assert_eq!(
        job,
        &serde_json::json!({
            "podSelector": {"matchLabels": {"app.kubernetes.io/instance": "shop",
                                            "app.kubernetes.io/name": "job"}},
            "policyTypes": ["Egress"],
            "egress": [],
        })
    );
}

/// What the API server refuses of peers, egress ports and policy types is refused at vet.
#[test]
fn network_policies_refuse_at_vet_what_kubernetes_would() {
    vet_refuses(
        r#"  api:
    resources: {Container: {image: api}}
    policies:
      NetworkPolicy:
        allowFrom:
          - {cidr: 10.0.0.0/8, podSelector: {}}
          - {cidr: 10.0.0.0/8, except: [not-a-cidr]}
          - {podSelector: {matchExpressions: [{key: a, operator: Exists, values: [x]}]}}
          - {namespaceSelector: {matchLabels: {"bad key!": x}}}
          - {}
        allowTo:
          - {}
          - {component: db, ports: [{port: 0}, {port: 80, endPort: 70000}, {port: 53, protocol: ICMP}, {port: http}]}
          - {namespace: vault, ports: []}
        policyTypes: [Ingress, Sideways]
"#,
        &[
            "opm.dev/policies/network@v1#NetworkPolicy: at /allowFrom/0: ",
            "opm.dev/policies/network@v1#NetworkPolicy: at /allowFrom/1/except/0: ",
            "opm.dev/policies/network@v1#NetworkPolicy: at /allowFrom/2/podSelector/matchExpressions/0",
            "opm.dev/policies/network@v1#NetworkPolicy: at /allowFrom/3/namespaceSelector/matchLabels: ",
            "opm.dev/policies/network@v1#NetworkPolicy: at /allowFrom/4: ",
            "opm.dev/policies/network@v1#NetworkPolicy: at /allowTo/0: ",
            "opm.dev/policies/network@v1#NetworkPolicy: at /allowTo/1/ports/0/port: ",
            "opm.dev/policies/network@v1#NetworkPolicy: at /allowTo/1/ports/1/endPort: ",
            "opm.dev/policies/network@v1#NetworkPolicy: at /allowTo/1/ports/2/protocol: ",
            "opm.dev/policies/network@v1#NetworkPolicy: at /allowTo/1/ports/3/port: ",
            "opm.dev/policies/network@v1#NetworkPolicy: at /allowTo/2/ports: ",
            "opm.dev/policies/network@v1#NetworkPolicy: at /policyTypes/1: ",
        ],
    );
}

/// Policy types and allowDNS that would restrict nothing are refused by vet and build alike, as
/// is an exception outside its IP block and a port range that ends before it starts (which no
/// schema can compare).
#[test]
fn network_policy_fields_that_restrict_nothing_are_refused_by_vet_and_build_alike() {
    for (policy, message) in [
        (
            "{allowDNS: true}",
            "networkPolicy.allowDNS only applies when egress is restricted",
        ),
        (
            "{policyTypes: [Ingress], allowTo: []}",
            "networkPolicy.policyTypes leaves out Egress, so allowTo would restrict nothing",
        ),
        (
            "{policyTypes: [Egress], allowFrom: [{component: web}]}",
            "networkPolicy.policyTypes leaves out Ingress, so allowFrom and ports would restrict nothing",
        ),
    ] {
        vet_and_build_refuse(
            &format!(
                "  api:\n    resources: {{Container: {{image: api}}}}\n    policies: {{NetworkPolicy: {policy}}}\n"
            ),
            "api",
            "network@v1#NetworkPolicyTransformer",
            message,
        );
    }
    for (policy, message) in [
        (
            "{allowFrom: [{cidr: 10.0.0.0/8, except: [192.168.0.0/16]}]}",
            "networkPolicy.allowFrom[0].except[0] \\\"192.168.0.0/16\\\" is not strictly inside cidr",
        ),
        (
            "{allowTo: [{component: db, ports: [{port: 8000, endPort: 7000}]}]}",
            "networkPolicy.allowTo[0].ports[0].endPort must be at least port (8000)",
        ),
    ] {
        build_refuses(
            &format!(
                "  api:\n    resources: {{Container: {{image: api}}}}\n    policies: {{NetworkPolicy: {policy}}}\n"
            ),
            message,
        );
    }
}

/// `opm mod build` fails on `components`, saying `message`.
fn build_refuses(components: &str, message: &str) {
    let message = message.replace("\\\"", "\"");
    crate::kubernetes::refuses("build", components, &[&message], &[]);
}

/// A GrpcRoute renders a GRPCRoute to the component's Service, by port name.
#[test]
fn grpc_routes_render_to_the_services_port_by_name() {
    let resources = build_json(&exposed_api(
        "      GrpcRoute:\n        gateways: {public: {}}\n        rules:\n          greet: {port: grpc, matches: [{method: {service: helloworld.Greeter, method: SayHello}}]}\n",
    ));
    let route = find(&resources, "GRPCRoute");
    assert_eq!(route["apiVersion"], "gateway.networking.k8s.io/v1");
    assert_eq!(
        route["spec"]["rules"],
        serde_json::json!([{"name": "greet",
            "matches": [{"method": {"type": "Exact", "service": "helloworld.Greeter", "method": "SayHello"}}],
            "backendRefs": [{"name": "api", "port": 50051}]}])
    );
}

/// A GrpcRoute needs the Service that Expose renders, and its schema refuses what the Gateway
/// API's would.
#[test]
fn grpc_routes_need_expose_and_a_valid_shape() {
    vet_and_build_refuse(
        "  api:\n    resources: {Container: {image: api, ports: {grpc: {containerPort: 50051}}}}\n    traits: {GrpcRoute: {gateways: {public: {}}}}\n",
        "api",
        "network@v1#GrpcRouteTransformer",
        "the GRPCRoute sends calls to the Service that Expose renders; attach the Expose trait too",
    );
    vet_refuses(
        &exposed_api(
            r#"      GrpcRoute:
        gateways: {}
        hostnames: [Not_A_Host]
        rules:
          a:
            matches:
              - {method: {type: Exact}}
              - {method: {service: "hello world", method: Say-Hello}}
              - {method: {type: Prefix, method: x}}
              - {headers: {"bad header": x}}
              - {path: {value: /}}
          Not_A_Rule: {}
        labels: {app.kubernetes.io/name: other}
"#,
        ),
        &[
            "opm.dev/traits/network@v1#GrpcRoute: at /gateways: ",
            "opm.dev/traits/network@v1#GrpcRoute: at /hostnames/0: the value does not match",
            "opm.dev/traits/network@v1#GrpcRoute: at /rules/a/matches/0/method: ",
            "opm.dev/traits/network@v1#GrpcRoute: at /rules/a/matches/1/method/service: the value does not match",
            "opm.dev/traits/network@v1#GrpcRoute: at /rules/a/matches/1/method/method: the value does not match",
            "opm.dev/traits/network@v1#GrpcRoute: at /rules/a/matches/2/method/type: ",
            "opm.dev/traits/network@v1#GrpcRoute: at /rules/a/matches/3/headers: ",
            "opm.dev/traits/network@v1#GrpcRoute: at /rules/a/matches/4: ",
            "opm.dev/traits/network@v1#GrpcRoute: at /rules: ",
            "opm.dev/traits/network@v1#GrpcRoute: at /labels: ",
        ],
    );
}

/// A ServiceMonitor selects the component's Service and scrapes its ports by name; on a stateful
/// component it keeps only that Service's targets, not the headless Service's too.
#[test]
fn service_monitors_follow_the_components_service() {
    let resources = build_json(&exposed_api(
        "      ServiceMonitor:\n        endpoints: [{port: metrics, path: /metrics, interval: 15s}]\n        labels: {release: prometheus}\n",
    ));
    let monitor = find(&resources, "ServiceMonitor");
    let service = find(&resources, "Service");
    assert_eq!(monitor["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(
        monitor["metadata"]["namespace"],
        service["metadata"]["namespace"]
    );
    assert_eq!(monitor["metadata"]["labels"]["release"], "prometheus");
    let selector = monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .unwrap();
    assert!(
        selector
            .iter()
            .all(|(key, value)| service["metadata"]["labels"][key] == *value),
        "{selector:?} does not select {service}"
    );
    assert_eq!(
        monitor["spec"]["endpoints"],
        serde_json::json!([{"port": "metrics", "path": "/metrics", "interval": "15s"}])
    );

    let stateful = build_json(
        "  db:\n    metadata: {labels: {core.opm.dev/workload-type: stateful}}\n    resources: {Container: {image: db, ports: {metrics: {containerPort: 9187}}}}\n    traits: {Expose: {}, ServiceMonitor: {}}\n",
    );
    assert_eq!(
        find(&stateful, "ServiceMonitor")["spec"]["endpoints"][0]["relabelings"],
        serde_json::json!([{"sourceLabels": ["__meta_kubernetes_service_name"], "regex": "db", "action": "keep"}])
    );
}

/// A ServiceMonitor needs Expose; its schema refuses what the CRD would, and the build refuses a
/// timeout longer than the interval, which the operator refuses.
#[test]
fn service_monitors_need_expose_and_a_valid_shape() {
    vet_and_build_refuse(
        "  api:\n    resources: {Container: {image: api, ports: {metrics: {containerPort: 9090}}}}\n    traits: {ServiceMonitor: {}}\n",
        "api",
        "observability@v1#ServiceMonitorTransformer",
        "the ServiceMonitor scrapes the Service that Expose renders; attach the Expose trait too",
    );
    vet_refuses(
        &exposed_api(
            r#"      ServiceMonitor:
        endpoints:
          - {port: metrics, path: metrics, interval: "30", scrapeTimeout: 10 s, scheme: ftp}
          - {port: "", honorLabels: true}
        labels: {app.kubernetes.io/instance: other, release: "not a value"}
        annotations: {"bad key": x}
        namespaceSelector: {any: true}
"#,
        ),
        &[
            "opm.dev/traits/observability@v1#ServiceMonitor: at /endpoints/0/path: the value does not match",
            "opm.dev/traits/observability@v1#ServiceMonitor: at /endpoints/0/interval: the value does not match",
            "opm.dev/traits/observability@v1#ServiceMonitor: at /endpoints/0/scrapeTimeout: the value does not match",
            "opm.dev/traits/observability@v1#ServiceMonitor: at /endpoints/0/scheme: ",
            "opm.dev/traits/observability@v1#ServiceMonitor: at /endpoints/1",
            "opm.dev/traits/observability@v1#ServiceMonitor: at /labels",
            "opm.dev/traits/observability@v1#ServiceMonitor: at /annotations: ",
            "opm.dev/traits/observability@v1#ServiceMonitor: additional properties are not allowed ('namespaceSelector' was unexpected)",
        ],
    );
    vet_refuses(
        &exposed_api("      ServiceMonitor: {endpoints: []}\n"),
        &["opm.dev/traits/observability@v1#ServiceMonitor: at /endpoints: "],
    );
    build_refuses(
        &exposed_api(
            "      ServiceMonitor: {endpoints: [{port: metrics, interval: 30s, scrapeTimeout: 1m}]}\n",
        ),
        "serviceMonitor.endpoints[0].scrapeTimeout is longer than its interval",
    );
}
