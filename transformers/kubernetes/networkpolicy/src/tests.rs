use super::*;

fn render(policy: Value) -> Result<Vec<Value>, TransformError> {
    let component = Component::from_value(json!({
        "metadata": {"name": "db"},
        "spec": {"container": {"image": "pg", "ports": {"pg": {"containerPort": 5432},
                                                        "dns": {"containerPort": 53, "protocol": "UDP"}}},
                 "networkPolicy": policy},
    }))?;
    let context = Context {
        name: "shop".into(),
        ..Context::default()
    };
    NetworkPolicyTransformer::transform(&component, &context)
}

fn refusal(policy: Value) -> String {
    render(policy).unwrap_err().to_string()
}

const DNS_RULE: &str =
    r#"{"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}"#;

fn dns_rule() -> Value {
    serde_json::from_str(DNS_RULE).unwrap()
}

#[test]
fn minimal_policy_denies_all_ingress() {
    let out = render(json!({})).unwrap();
    assert_eq!(
        out[0]["spec"],
        json!({"podSelector": {"matchLabels": {"app.kubernetes.io/instance": "shop",
                                               "app.kubernetes.io/name": "db"}},
               "policyTypes": ["Ingress"], "ingress": []})
    );
    let no_ports = render(json!({"allowFrom": [], "ports": []})).unwrap();
    assert_eq!(no_ports[0]["spec"]["ingress"], json!([]));
}

#[test]
fn ports_without_sources_are_invalid_rather_than_dropped() {
    let err = render(json!({"ports": ["pg"]})).unwrap_err();
    assert!(
        matches!(&err, TransformError::InvalidComponent(m)
            if m.contains("networkPolicy.ports") && m.contains("allowFrom is empty")
                && m.contains("add allowFrom entries or remove ports")),
        "{err}"
    );
    assert!(render(json!({"allowFrom": [], "ports": ["pg"]})).is_err());
}

#[test]
fn maximal_policy_allows_components_namespaces_and_cidrs_on_named_ports() {
    let out = render(json!({
        "allowFrom": [{"component": "api"}, {"namespace": "monitoring"}, {"cidr": "10.0.0.0/8"}],
        "ports": ["pg", "dns"],
    }))
    .unwrap();
    assert_eq!(
        out[0]["spec"]["ingress"],
        json!([{
            "from": [
                {"podSelector": {"matchLabels": {"app.kubernetes.io/instance": "shop",
                                                 "app.kubernetes.io/name": "api"}}},
                {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}},
                {"ipBlock": {"cidr": "10.0.0.0/8"}},
            ],
            "ports": [{"protocol": "TCP", "port": "pg"}, {"protocol": "UDP", "port": "dns"}],
        }])
    );
}

#[test]
fn unknown_ports_and_ambiguous_sources_are_invalid() {
    let err = render(json!({"allowFrom": [{"component": "api"}], "ports": ["http"]})).unwrap_err();
    assert!(err.to_string().contains("\"http\""), "{err}");
    let err =
        render(json!({"allowFrom": [{"component": "api", "cidr": "1.2.3.4/32"}]})).unwrap_err();
    assert!(err.to_string().contains("allowFrom[0]"), "{err}");
    let err =
        render(json!({"allowFrom": [{"podSelector": {}, "cidr": "1.2.3.4/32"}]})).unwrap_err();
    assert!(
        err.to_string()
            .contains("allowFrom[0] needs exactly one of"),
        "{err}"
    );
}

#[test]
fn selector_peers_select_pods_namespaces_or_both_and_ip_blocks_take_exceptions() {
    let out = render(json!({"allowFrom": [
        {"podSelector": {"matchLabels": {"role": "frontend"}}},
        {"namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "staging"]}]}},
        {"namespaceSelector": {"matchLabels": {"team": "obs"}},
         "podSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}},
        {"namespaceSelector": {}},
        {"except": ["10.1.0.0/16", "10.2.3.0/24"], "cidr": "10.0.0.0/8"},
        {"cidr": "2001:db8::/32", "except": ["2001:db8:1::/48"]},
    ]}))
    .unwrap();
    assert_eq!(
        out[0]["spec"]["ingress"][0]["from"],
        json!([
            {"podSelector": {"matchLabels": {"role": "frontend"}}},
            {"namespaceSelector": {"matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "staging"]}]}},
            {"podSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
             "namespaceSelector": {"matchLabels": {"team": "obs"}}},
            {"namespaceSelector": {}},
            {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16", "10.2.3.0/24"]}},
            {"ipBlock": {"cidr": "2001:db8::/32", "except": ["2001:db8:1::/48"]}},
        ])
    );
    assert_eq!(out[0]["spec"]["policyTypes"], json!(["Ingress"]));
    assert!(out[0]["spec"].get("egress").is_none());
}

#[test]
fn an_exception_outside_its_block_or_as_wide_is_invalid() {
    for except in [
        "192.168.0.0/16",
        "10.0.0.0/8",
        "10.0.0.0/7",
        "2001:db8::/48",
        "10.0.0.0/33",
    ] {
        let err = refusal(json!({"allowFrom": [{"cidr": "10.0.0.0/8", "except": [except]}]}));
        assert!(err.contains("allowFrom[0].except[0]"), "{except}: {err}");
    }
    let err = refusal(json!({"allowFrom": [{"cidr": "10.0.0.0"}]}));
    assert!(err.contains("is not an IP block"), "{err}");
}

#[test]
fn egress_rules_go_to_each_peer_on_its_ports_and_dns_stays_open() {
    let out = render(json!({
        "allowFrom": [{"component": "api"}],
        "ports": ["pg"],
        "allowTo": [
            {"component": "cache", "ports": [{"port": 6379}]},
            {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"], "ports": [{"port": 443, "protocol": "TCP"}]},
            {"namespaceSelector": {"matchLabels": {"team": "data"}},
             "ports": [{"port": 30000, "endPort": 32767, "protocol": "UDP"}]},
            {"ports": [{"port": 123, "protocol": "UDP"}]},
            {"namespace": "vault"},
        ],
    }))
    .unwrap();
    let spec = &out[0]["spec"];
    assert_eq!(spec["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(
        spec["ingress"][0]["ports"],
        json!([{"protocol": "TCP", "port": "pg"}])
    );
    assert_eq!(
        spec["egress"],
        json!([
            {"to": [{"podSelector": {"matchLabels": {"app.kubernetes.io/instance": "shop",
                                                     "app.kubernetes.io/name": "cache"}}}],
             "ports": [{"protocol": "TCP", "port": 6379}]},
            {"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]}}],
             "ports": [{"protocol": "TCP", "port": 443}]},
            {"to": [{"namespaceSelector": {"matchLabels": {"team": "data"}}}],
             "ports": [{"protocol": "UDP", "port": 30000, "endPort": 32767}]},
            {"ports": [{"protocol": "UDP", "port": 123}]},
            {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "vault"}}}]},
            dns_rule(),
        ])
    );
}

#[test]
fn an_empty_allow_to_denies_all_egress_but_dns_unless_dns_is_left_out() {
    let out = render(json!({"allowTo": []})).unwrap();
    assert_eq!(out[0]["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(out[0]["spec"]["egress"], json!([dns_rule()]));
    let out = render(json!({"allowTo": [], "allowDNS": false})).unwrap();
    assert_eq!(out[0]["spec"]["egress"], json!([]));
    let out = render(json!({"allowTo": [], "allowDNS": true})).unwrap();
    assert_eq!(out[0]["spec"]["egress"], json!([dns_rule()]));
}

#[test]
fn policy_types_choose_what_is_restricted() {
    let egress_only = render(json!({"allowFrom": [], "policyTypes": ["Egress"]})).unwrap();
    let spec = &egress_only[0]["spec"];
    assert_eq!(spec["policyTypes"], json!(["Egress"]));
    assert!(spec.get("ingress").is_none(), "{spec}");
    assert_eq!(spec["egress"], json!([dns_rule()]));
    let both = render(json!({"policyTypes": ["Ingress", "Egress"], "allowDNS": false})).unwrap();
    assert_eq!(both[0]["spec"]["ingress"], json!([]));
    assert_eq!(both[0]["spec"]["egress"], json!([]));

    let err = refusal(json!({"policyTypes": ["Egress"], "allowFrom": [{"component": "api"}]}));
    assert!(
        err.contains("leaves out Ingress, so allowFrom and ports would restrict nothing"),
        "{err}"
    );
    let err = refusal(json!({"policyTypes": ["Ingress"], "allowTo": []}));
    assert!(
        err.contains("leaves out Egress, so allowTo would restrict nothing"),
        "{err}"
    );
    let err = refusal(json!({"allowDNS": true}));
    assert!(
        err.contains("allowDNS only applies when egress is restricted"),
        "{err}"
    );
    assert!(refusal(json!({"policyTypes": []})).contains("must list Ingress, Egress or both"));
}

#[test]
fn egress_ports_need_a_number_a_protocol_and_an_end_no_lower_than_the_port() {
    let port = |port: Value| json!({"allowTo": [{"component": "cache", "ports": [port]}]});
    assert!(
        refusal(port(json!({"port": 8000, "endPort": 7999})))
            .contains("allowTo[0].ports[0].endPort must be at least port (8000)")
    );
    assert!(
        refusal(port(json!({"port": "http"})))
            .contains("allowTo[0].ports[0].port must be 1 to 65535")
    );
    assert!(refusal(port(json!({"port": 80, "protocol": "ICMP"}))).contains("TCP, UDP or SCTP"));
    assert!(refusal(json!({"allowTo": [{}]})).contains("allowTo[0] needs a peer, ports or both"));
}
