use super::*;

fn render(workload: &str, monitor: Value, expose: Value) -> Result<Vec<Value>, TransformError> {
    let component = Component::from_value(json!({
        "metadata": {"name": "api", "labels": {"core.opm.dev/workload-type": workload}},
        "spec": {"container": {"image": "api", "ports": {"http": {"containerPort": 8080},
                                                         "metrics": {"containerPort": 9090}}},
                 "expose": expose, "serviceMonitor": monitor},
    }))?;
    ServiceMonitorTransformer::transform(&component, &opm_k8s_common::test_context())
}

fn refusal(monitor: Value) -> String {
    render("stateless", monitor, json!({}))
        .unwrap_err()
        .to_string()
}

/// The whole object, as the CRD documents its fields: `spec.selector` a LabelSelector,
/// `spec.endpoints[]` with `port` (a Service port name), `path`, `scheme` (http or https),
/// `interval` and `scrapeTimeout` (Prometheus durations) — and nothing else.
#[test]
fn a_monitor_selects_the_components_service_and_scrapes_ports_by_name() {
    let out = render(
        "stateless",
        json!({
            "endpoints": [
                {"scrapeTimeout": "10s", "interval": "30s", "path": "/metrics", "port": "metrics", "scheme": "http"},
                {"port": "http", "path": "/admin/metrics", "scheme": "https"},
            ],
            "labels": {"release": "prometheus"},
            "annotations": {"example.com/owner": "sre"},
        }),
        json!({}),
    )
    .unwrap();
    assert_eq!(
        out,
        vec![json!({
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": {
                "name": "api",
                "labels": {"app.kubernetes.io/instance": "shop", "app.kubernetes.io/name": "api",
                           "module.opmodel.dev/version": "1.2.0", "release": "prometheus"},
                "annotations": {"example.com/owner": "sre"},
            },
            "spec": {
                "selector": {"matchLabels": {"app.kubernetes.io/instance": "shop",
                                             "app.kubernetes.io/name": "api"}},
                "endpoints": [
                    {"port": "metrics", "path": "/metrics", "scheme": "http", "interval": "30s",
                     "scrapeTimeout": "10s"},
                    {"port": "http", "path": "/admin/metrics", "scheme": "https"},
                ],
            },
        })]
    );
    let endpoint = out[0]["spec"]["endpoints"][0].as_object().unwrap();
    assert_eq!(
        endpoint.keys().collect::<Vec<_>>(),
        ["port", "path", "scheme", "interval", "scrapeTimeout"]
    );
}

#[test]
fn endpoints_name_expose_ports_and_a_single_port_needs_no_name() {
    let expose = json!({"ports": {"web": {"port": 80, "targetPort": "http"}}});
    let out = render("stateless", json!({}), expose.clone()).unwrap();
    assert_eq!(out[0]["spec"]["endpoints"], json!([{"port": "web"}]));
    let err = render(
        "stateless",
        json!({"endpoints": [{"port": "http"}]}),
        expose,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains(
            "serviceMonitor.endpoints[0].port \"http\" is not a port of the Service; it has web"
        ),
        "{err}"
    );
    assert!(
        refusal(json!({}))
            .contains("is required when the Service has several ports (http, metrics)")
    );
}

#[test]
fn a_stateful_monitor_keeps_only_the_targets_of_the_components_own_service() {
    let out = render(
        "stateful",
        json!({"endpoints": [{"port": "metrics"}]}),
        json!({}),
    )
    .unwrap();
    assert_eq!(
        out[0]["spec"]["endpoints"],
        json!([{"port": "metrics", "relabelings": [
            {"sourceLabels": ["__meta_kubernetes_service_name"], "regex": "api", "action": "keep"}]}])
    );
}

#[test]
fn a_timeout_longer_than_the_interval_or_a_bad_duration_is_invalid() {
    let endpoint = |interval: &str, timeout: &str| json!({"endpoints": [{"port": "metrics", "interval": interval, "scrapeTimeout": timeout}]});
    assert!(
        refusal(endpoint("30s", "1m"))
            .contains("endpoints[0].scrapeTimeout is longer than its interval")
    );
    assert!(render("stateless", endpoint("1m", "1m"), json!({})).is_ok());
    assert!(
        refusal(endpoint("30 s", "1s")).contains("interval \"30 s\" is not a Prometheus duration")
    );
}

#[test]
fn prometheus_durations_read_each_unit_once_in_order() {
    assert_eq!(milliseconds("1m30s"), Some(90_000));
    assert_eq!(milliseconds("500ms"), Some(500));
    assert_eq!(milliseconds("1h1m1s1ms"), Some(3_661_001));
    assert_eq!(milliseconds("2w1d"), Some(15 * 86_400_000));
    for bad in ["", "s", "30", "1s1m", "1m1m", "1.5s", "-1s", "1ms1s"] {
        assert_eq!(milliseconds(bad), None, "{bad}");
    }
}

#[test]
fn without_expose_there_is_no_service_to_scrape() {
    let component = Component::from_value(json!({
        "metadata": {"name": "api"},
        "spec": {"container": {"image": "api"}, "serviceMonitor": {}},
    }))
    .unwrap();
    let err = ServiceMonitorTransformer::transform(&component, &Context::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("has a ServiceMonitor but no Expose trait"),
        "{err}"
    );
}

#[test]
fn opms_own_labels_cannot_be_set() {
    let err = refusal(
        json!({"endpoints": [{"port": "metrics"}], "labels": {"app.kubernetes.io/name": "x"}}),
    );
    assert!(
        err.contains("serviceMonitor.labels.app.kubernetes.io/name is one of opm's own labels"),
        "{err}"
    );
}

#[test]
fn a_second_instance_monitors_its_own_service() {
    let component = Component::from_value(json!({
        "metadata": {"name": "api", "labels": {"core.opm.dev/workload-type": "stateful"}},
        "spec": {"container": {"image": "api", "ports": {"metrics": {"containerPort": 9090}}},
                 "expose": {}, "serviceMonitor": {}},
    }))
    .unwrap();
    let out =
        ServiceMonitorTransformer::transform(&component, &opm_k8s_common::test_instance_context())
            .unwrap();
    assert_eq!(out[0]["metadata"]["name"], "shop-eu-api");
    assert_eq!(
        out[0]["spec"]["selector"]["matchLabels"]["app.kubernetes.io/instance"],
        "shop-eu"
    );
    assert_eq!(
        out[0]["spec"]["endpoints"][0]["relabelings"][0]["regex"],
        "shop-eu-api"
    );
}
