//! The component's roles, rendered natively.

use opm_guest::{Component, Context, Transformer, Value, json};
use opm_quadlet_common::{test_context, test_instance_context};

use crate::QuadletTransformers;

const PREFIX: &str = "transformer.opm.dev/quadlet@v1#";

fn call(
    transformer: &str,
    component: Value,
    context: Context,
) -> Result<Vec<Value>, opm_guest::TransformError> {
    let component = Component::from_value(component).unwrap();
    let context = Context {
        transformer: format!("{PREFIX}{transformer}"),
        ..context
    };
    QuadletTransformers::transform(&component, &context)
}

fn web() -> Value {
    json!({"metadata": {"name": "web"}, "spec": {
        "container": {"image": "nginx:1.27", "ports": {"http": {"containerPort": 8080}},
                      "env": {"GREETING": {"value": "hi $(USER)"}, "USER": {"value": "50%"},
                              "TOKEN": {"secretKeyRef": {"name": "creds", "key": "token"}}},
                      "resources": {"requests": {"cpu": "250m"}, "limits": {"memory": "64Mi", "cpu": "500m"}},
                      "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5}},
        "expose": {"type": "NodePort", "ports": {"http": {"port": 80, "targetPort": "http", "nodePort": 30080}}},
        "persistentStorage": {"data": {"size": "1Gi", "mountPath": "/data"}},
    }})
}

#[test]
fn a_stateless_component_is_a_container_on_the_module_network() {
    let out = call("StatelessTransformer", web(), test_context()).unwrap();
    let kinds: Vec<(&str, &str)> = out
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap(),
                r["metadata"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(kinds, [("Container", "web"), ("Volume", "web-data")]);
    let spec = &out[0]["spec"];
    assert_eq!(spec["Container"]["Image"], "docker.io/library/nginx:1.27");
    assert_eq!(spec["Container"]["Network"], "shop.network");
    assert_eq!(spec["Container"]["PublishPort"], json!(["30080:8080"]));
    assert_eq!(
        spec["Container"]["Environment"],
        json!(["USER=50%%", "\"GREETING=hi 50%%\""])
    );
    assert_eq!(
        spec["Container"]["EnvironmentFile"],
        json!(["./secrets/web.env"])
    );
    assert_eq!(
        spec["x-opm"]["env"],
        json!([{"name": "TOKEN", "secret": "creds", "key": "token", "optional": false}])
    );
    assert_eq!(
        spec["Container"]["Volume"],
        json!(["web-data.volume:/data"])
    );
    assert_eq!(spec["Container"]["Notify"], "healthy");
    assert_eq!(spec["Container"]["HealthInterval"], "5s");
    // Started once healthy: the readiness probe allows 5 s × 3, and the pull 300 s.
    assert_eq!(
        spec["Service"],
        json!({"TimeoutStartSec": "315", "MemoryMax": "67108864", "CPUQuota": "50%",
               "CPUWeight": "10", "Restart": "always"})
    );
    assert_eq!(spec["Install"]["WantedBy"], "default.target");
    assert_eq!(out[1]["spec"]["Volume"]["VolumeName"], "web-data");
}

#[test]
fn a_second_instance_prefixes_every_unit_and_its_network() {
    let out = call("StatelessTransformer", web(), test_instance_context()).unwrap();
    assert_eq!(out[0]["metadata"]["name"], "shop-eu-web");
    assert_eq!(out[0]["spec"]["Container"]["Network"], "shop-eu.network");
    assert_eq!(out[1]["metadata"]["name"], "shop-eu-web-data");
}

#[test]
fn a_cronjob_is_a_oneshot_container_and_a_timer() {
    let component = json!({"metadata": {"name": "cleanup"}, "spec": {
        "container": {"image": "busybox:1.36", "args": ["sh", "-c", "echo $HOME"]},
        "schedule": {"cron": "0 3 * * *", "timeZone": "Etc/UTC"},
        "jobConfig": {"backoffLimit": 2}}});
    let out = call("CronJobTransformer", component, test_context()).unwrap();
    assert_eq!(
        out[0]["spec"]["Service"],
        json!({"Type": "oneshot", "Restart": "on-failure", "RestartSec": "10"})
    );
    // The retries of one nightly run are counted in 23 hours less a minute, not a day.
    assert_eq!(
        out[0]["spec"]["Unit"]["StartLimitIntervalSec"],
        (23 * 3600 - 60).to_string()
    );
    assert_eq!(out[0]["spec"]["Unit"]["StartLimitBurst"], "3");
    assert_eq!(out[0]["spec"]["Container"]["Exec"], "sh -c \"echo $$HOME\"");
    assert!(out[0]["spec"].get("Install").is_none());
    assert_eq!(out[1]["kind"], "Timer");
    assert_eq!(
        out[1]["spec"]["Timer"]["OnCalendar"],
        json!(["*-*-* 03:00:00 Etc/UTC"])
    );
    assert_eq!(out[1]["spec"]["Install"]["WantedBy"], "timers.target");
    let bad = json!({"metadata": {"name": "c"}, "spec": {"container": {"image": "x"}, "schedule": {"cron": "0 25 * * *"}}});
    let error = call("CronJobTransformer", bad, test_context())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("schedule.cron cannot be a systemd calendar event: the hour field \"25\""),
        "{error}"
    );
}

#[test]
fn a_cronjob_counts_the_retries_of_one_run_not_every_run_of_the_day() {
    // systemd counts every start against StartLimitBurst=, the timer's too: in a window of a
    // day, a */15 schedule with the default 6 retries was refused after its 7th run. The window
    // is shorter than the schedule's gap, so each run starts afresh with the whole limit.
    let cronjob = json!({"metadata": {"name": "sync"}, "spec": {
        "container": {"image": "busybox:1.36"},
        "schedule": {"cron": "*/15 * * * *"}}});
    let out = call("CronJobTransformer", cronjob, test_context()).unwrap();
    let unit = &out[0]["spec"]["Unit"];
    assert_eq!(unit["StartLimitIntervalSec"], "840");
    assert_eq!(unit["StartLimitBurst"], "7");
    let every_minute = json!({"metadata": {"name": "tick"}, "spec": {
        "container": {"image": "busybox:1.36"},
        "schedule": {"cron": "* * * * *"}, "jobConfig": {"backoffLimit": 1}}});
    let out = call("CronJobTransformer", every_minute, test_context()).unwrap();
    assert_eq!(out[0]["spec"]["Unit"]["StartLimitIntervalSec"], "30");
    // A job is started once, at boot: its retries are counted in a day.
    let job =
        json!({"metadata": {"name": "migrate"}, "spec": {"container": {"image": "busybox:1.36"}}});
    let out = call("JobTransformer", job, test_context()).unwrap();
    assert_eq!(out[0]["spec"]["Unit"]["StartLimitIntervalSec"], "1d");
    assert_eq!(out[0]["spec"]["Unit"]["StartLimitBurst"], "7");
}

#[test]
fn a_container_started_once_healthy_has_the_time_its_probes_allow_to_start() {
    // Mattermost's probes: systemd's default 90 s would fail a start its startup probe allows
    // 10 + 10 × 30 s for, and the readiness probe 15 + 10 × 3 s after it, before the pull.
    let component = json!({"metadata": {"name": "chat"}, "spec": {
        "container": {"image": "mattermost/mattermost-team-edition:10.5", "ports": {"http": {"containerPort": 8065}}},
        "healthCheck": {
            "startup": {"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": 10,
                        "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 30},
            "liveness": {"httpGet": {"path": "/ping", "port": "http"}, "initialDelaySeconds": 1},
            "readiness": {"httpGet": {"path": "/ping", "port": "http"}, "initialDelaySeconds": 15,
                          "periodSeconds": 10, "failureThreshold": 3}}}});
    let out = call("StatelessTransformer", component, test_context()).unwrap();
    let spec = &out[0]["spec"];
    assert_eq!(spec["Container"]["Notify"], "healthy");
    assert_eq!(
        spec["Service"]["TimeoutStartSec"],
        (310 + 45 + 300).to_string()
    );
    // A probe's defaults: 0 + 10 × 3. A job is not started once healthy: no timeout of it.
    let probe = json!({"exec": {"command": ["true"]}});
    let defaults = json!({"metadata": {"name": "db"}, "spec": {
        "container": {"image": "postgres:17", "livenessProbe": probe}}});
    let out = call("StatefulTransformer", defaults.clone(), test_context()).unwrap();
    assert_eq!(out[0]["spec"]["Service"]["TimeoutStartSec"], "330");
    let out = call("JobTransformer", defaults, test_context()).unwrap();
    assert!(out[0]["spec"]["Container"].get("Notify").is_none());
    assert!(out[0]["spec"]["Service"].get("TimeoutStartSec").is_none());
}

#[test]
fn an_http_probe_is_compose_s_command_escaped_for_systemd() {
    // HTTPS without a certificate check, as the kubelet probes; the headers; 127.0.0.1; and a
    // `%` and `$` of the path doubled for systemd, which Quadlet passes the value through.
    let component = json!({"metadata": {"name": "api"}, "spec": {"container": {
        "image": "x", "ports": {"https": {"containerPort": 8443}},
        "readinessProbe": {"httpGet": {"scheme": "HTTPS", "port": "https", "path": "/ready?q=100%&v=$V",
                           "httpHeaders": [{"name": "Host", "value": "api.example.com"}]}}}}});
    let out = call("StatelessTransformer", component, test_context()).unwrap();
    assert_eq!(
        out[0]["spec"]["Container"]["HealthCmd"],
        "wget -q -O /dev/null --no-check-certificate --header 'Host: api.example.com' \
         'https://127.0.0.1:8443/ready?q=100%%&v=$$V' || curl -fsS -o /dev/null -k \
         -H 'Host: api.example.com' 'https://127.0.0.1:8443/ready?q=100%%&v=$$V'"
    );
}

#[test]
fn dollars_are_expanded_as_the_kubelet_expands_them() {
    // `$$` is the kubelet's escape for `$`: the container gets `$HOME`, which systemd must
    // not expand (`$$HOME` in the unit); `$(A)` is A's value, `$$(A)` the text `$(A)`.
    let component = json!({"metadata": {"name": "api"}, "spec": {"container": {
        "image": "x", "args": ["echo", "$$HOME", "$(A)", "$$(A)"],
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "$$HOME/$(A)/$$(A)"}]}}});
    let out = call("StatelessTransformer", component, test_context()).unwrap();
    let container = &out[0]["spec"]["Container"];
    assert_eq!(container["Environment"], json!(["A=1", "B=$$HOME/1/$$(A)"]));
    assert_eq!(container["Exec"], "echo $$HOME 1 $$(A)");
}

#[test]
fn sidecars_and_init_containers_make_a_pod() {
    let component = json!({"metadata": {"name": "app"}, "spec": {
        "container": {"image": "app:1"},
        "expose": {"type": "LoadBalancer", "ports": {"http": {"port": 8080}}},
        "sidecarContainers": {"proxy": {"image": "envoy:1"}},
        "initContainers": [{"name": "migrate", "image": "app:1"}, {"name": "seed", "image": "app:1"}]}});
    let out = call("StatefulTransformer", component, test_context()).unwrap();
    let names: Vec<(&str, &str)> = out
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap(),
                r["metadata"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("Pod", "app"),
            ("Container", "app"),
            ("Container", "app-init-migrate"),
            ("Container", "app-init-seed"),
            ("Container", "app-proxy")
        ]
    );
    // Podman keeps pods and containers in one namespace: the pod is not its main container's
    // name, and the module network still reaches it as `app`.
    assert_eq!(out[0]["spec"]["Pod"]["PodName"], "app-pod");
    assert_eq!(out[0]["spec"]["Pod"]["NetworkAlias"], json!(["app"]));
    assert_eq!(out[1]["spec"]["Container"]["ContainerName"], "app");
    assert_eq!(out[0]["spec"]["Pod"]["PublishPort"], json!(["8080:8080"]));
    assert_eq!(out[0]["spec"]["Pod"]["Network"], "shop.network");
    assert_eq!(out[1]["spec"]["Container"]["Pod"], "app.pod");
    assert!(out[1]["spec"]["Container"].get("Network").is_none());
    assert_eq!(
        out[1]["spec"]["Unit"]["Requires"],
        json!(["app-init-migrate.service", "app-init-seed.service"])
    );
    assert_eq!(
        out[3]["spec"]["Unit"]["After"],
        json!(["app-init-migrate.service"])
    );
    assert_eq!(out[3]["spec"]["Service"]["Type"], "oneshot");

    let second = call(
        "StatefulTransformer",
        json!({"metadata": {"name": "app"}, "spec": {"container": {"image": "app:1"},
               "sidecarContainers": {"proxy": {"image": "envoy:1"}}}}),
        test_instance_context(),
    )
    .unwrap();
    assert_eq!(second[0]["spec"]["Pod"]["PodName"], "shop-eu-app-pod");
    let clash = json!({"metadata": {"name": "app"}, "spec": {"container": {"image": "app:1"},
        "sidecarContainers": {"pod": {"image": "envoy:1"}}}});
    let error = call("StatefulTransformer", clash, test_context())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("the sidecar \"pod\" would be the container app-pod"),
        "{error}"
    );
}

#[test]
fn host_access_is_refused_without_the_label() {
    let component = json!({"metadata": {"name": "agent"}, "spec": {
        "container": {"image": "x", "volumeMounts": {"log": {"mountPath": "/var/log"}}},
        "volumes": {"log": {"hostPath": {"path": "/var/log"}}}}});
    let error = call("DaemonTransformer", component.clone(), test_context())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("volumes.log.hostPath \"/var/log\"")
            && error.contains("security.opm.dev/host-access"),
        "{error}"
    );
    let mut allowed = component;
    allowed["metadata"]["labels"] = json!({"security.opm.dev/host-access": "true"});
    let out = call("DaemonTransformer", allowed, test_context()).unwrap();
    assert_eq!(
        out[0]["spec"]["Container"]["Volume"],
        json!(["/var/log:/var/log"])
    );
}

#[test]
fn a_capability_is_named_in_any_case_with_or_without_cap() {
    // Podman reads `cap_chown` as CHOWN, one of a container's defaults: no host access needed.
    let with = |caps: Value| {
        json!({"metadata": {"name": "agent"}, "spec": {"container": {"image": "x",
            "securityContext": {"capabilities": {"drop": ["ALL"], "add": caps}}}}})
    };
    let out = call(
        "DaemonTransformer",
        with(json!(["cap_chown", "Net_Bind_Service"])),
        test_context(),
    )
    .unwrap();
    assert_eq!(
        out[0]["spec"]["Container"]["AddCapability"],
        json!(["cap_chown", "Net_Bind_Service"])
    );
    let error = call(
        "DaemonTransformer",
        with(json!(["cap_sys_admin"])),
        test_context(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("securityContext.capabilities.add cap_sys_admin would give")
            && error.contains("security.opm.dev/host-access"),
        "{error}"
    );
}

#[test]
fn config_and_secret_are_one_resource_each() {
    let secret = json!({"metadata": {"name": "creds"}, "spec": {"secret": {"stringData": {"token": "t0k"}}}});
    let out = call("SecretTransformer", secret, test_context()).unwrap();
    assert_eq!(out[0]["kind"], "Secret");
    assert_eq!(out[0]["stringData"]["token"], "t0k");
    let config =
        json!({"metadata": {"name": "settings"}, "spec": {"configMap": {"data": {"a": "1"}}}});
    let out = call("ConfigTransformer", config, test_context()).unwrap();
    assert_eq!(out[0]["kind"], "ConfigMap");
}

#[test]
fn a_transformer_of_another_provider_is_refused_by_name() {
    let error = call("Nope", web(), test_context()).unwrap_err().to_string();
    assert!(
        error.contains("not \"transformer.opm.dev/quadlet@v1#Nope\""),
        "{error}"
    );
    // A 1.0.0 host names no transformer: the component says what it is.
    let component = Component::from_value(web()).unwrap();
    let out = QuadletTransformers::transform(&component, &test_context()).unwrap();
    assert_eq!(out[0]["kind"], "Container");
}

#[test]
fn values_quadlet_passes_on_as_written_are_escaped_never_quoted() {
    // Quadlet hands Volume=, Tmpfs= and HealthCmd= to podman as written: a quote would reach
    // Podman. Exec=, Environment= and Label= are split into words: there a blank is quoted.
    let component = json!({"metadata": {"name": "agent", "labels": {"security.opm.dev/host-access": "true"}},
        "spec": {
        "container": {"image": "x", "args": ["echo", "50% of $HOME"],
                      "volumeMounts": {"logs": {"mountPath": "/my logs"}, "tmp": {"mountPath": "/tmp"}},
                      "livenessProbe": {"httpGet": {"path": "/", "port": 80}}},
        "volumes": {"logs": {"hostPath": {"path": "/var/log/app"}}, "tmp": {"emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}}}}});
    let out = call("DaemonTransformer", component.clone(), test_context()).unwrap();
    let container = &out[0]["spec"]["Container"];
    assert_eq!(container["Volume"], json!(["/var/log/app:/my logs"]));
    assert_eq!(container["Tmpfs"], json!(["/tmp:rw,size=67108864"]));
    assert_eq!(
        container["HealthCmd"],
        "wget -q -O /dev/null 'http://127.0.0.1:80/' || curl -fsS -o /dev/null 'http://127.0.0.1:80/'"
    );
    assert_eq!(container["HealthOnFailure"], "kill");
    assert_eq!(container["Exec"], "echo \"50%% of $$HOME\"");
    // Quadlet writes a host path into RequiresMountsFor= unquoted: a blank would split it.
    let mut blank = component;
    blank["spec"]["volumes"]["logs"]["hostPath"]["path"] = json!("/var/my logs");
    let error = call("DaemonTransformer", blank, test_context())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("volumes.logs.hostPath \"/var/my logs\" has a blank")
            && error.contains("RequiresMountsFor="),
        "{error}"
    );
}
