//! The workload transformer on the shapes of the example modules' components.

use opm_compose_common::{test_context, test_instance_context};
use opm_guest::{Component, Context, TransformError, Transformer, Value, json};

use super::WorkloadTransformer;

type Logs = Vec<(&'static str, String)>;

fn render_in(context: &Context, component: Value) -> (Result<Vec<Value>, TransformError>, Logs) {
    opm_guest::log::capture(|| {
        WorkloadTransformer::transform(&Component::from_value(component).unwrap(), context)
    })
}

fn render(component: Value) -> (Vec<Value>, Logs) {
    let (result, logs) = render_in(&test_context(), component);
    (result.unwrap(), logs)
}

fn warns(logs: &Logs) -> Vec<&str> {
    logs.iter()
        .filter(|(level, _)| *level == "warn")
        .map(|(_, line)| line.as_str())
        .collect()
}

fn names(out: &[Value]) -> Vec<String> {
    out.iter()
        .map(|r| {
            format!(
                "{}/{}",
                r["kind"].as_str().unwrap(),
                r["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn hello_a_stateless_component_is_a_replicated_service_reachable_by_name() {
    let (out, logs) = render(json!({
        "metadata": {"name": "api", "labels": {"core.opm.dev/workload-type": "stateless"}},
        "spec": {"container": {"image": "nginxinc/nginx-unprivileged:1.27",
                               "ports": {"http": {"containerPort": 8080}}},
                 "expose": {"type": "ClusterIP"}, "replicas": 2},
    }));
    assert_eq!(
        out,
        [json!({
            "apiVersion": "compose.opm.dev/v1", "kind": "Service",
            "metadata": {"name": "api", "labels": {"module.opmodel.dev/name": "shop",
                         "module.opmodel.dev/version": "1.2.0", "team": "payments"}},
            "spec": {"image": "nginxinc/nginx-unprivileged:1.27",
                     "deploy": {"replicas": 2}, "restart": "unless-stopped"},
        })]
    );
    assert!(warns(&logs).is_empty(), "{logs:?}");
}

#[test]
fn shop_api_resources_security_secret_env_and_http_probes() {
    let (out, logs) = render(json!({
        "metadata": {"name": "api"},
        "spec": {
            "container": {
                "image": "ghcr.io/acme/shop-api:1.4.0",
                "ports": {"http": {"containerPort": 8080}},
                "env": {
                    "DATABASE_HOST": {"value": "db"},
                    "DATABASE_USER": {"secretKeyRef": {"name": "db-credentials", "key": "username"}},
                    "DATABASE_PASSWORD": {"secretKeyRef": {"name": "db-credentials", "key": "password"}},
                },
                "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
                "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                                    "capabilities": {"drop": ["ALL"]}},
            },
            "replicas": 3,
            "expose": {"type": "ClusterIP"},
            "healthCheck": {
                "liveness": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 10},
                "readiness": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5},
            },
            "securityContext": {"runAsNonRoot": true, "runAsUser": 10001,
                                "seccompProfile": {"type": "RuntimeDefault"}},
        },
    }));
    assert_eq!(names(&out), ["Service/api"]);
    let api = &out[0]["spec"];
    assert_eq!(api["user"], "10001");
    // 250m, weighted as the kubelet weighs it: Docker applies no CPU reservation.
    assert_eq!(api["cpu_shares"], 256);
    assert_eq!(api["read_only"], true);
    assert_eq!(api["cap_drop"], json!(["ALL"]));
    assert_eq!(api["security_opt"], json!(["no-new-privileges:true"]));
    assert_eq!(api["environment"], json!({"DATABASE_HOST": "db"}));
    assert_eq!(
        api["x-opm"]["environment"],
        json!([{"name": "DATABASE_PASSWORD", "secret": "db-credentials", "key": "password"},
               {"name": "DATABASE_USER", "secret": "db-credentials", "key": "username"}])
    );
    assert_eq!(
        api["deploy"],
        json!({"replicas": 3, "resources": {"limits": {"memory": "512m"},
                                             "reservations": {"cpus": "0.25", "memory": "256m"}}})
    );
    assert_eq!(
        api["healthcheck"],
        json!({"test": ["CMD-SHELL", "wget -q -O /dev/null 'http://127.0.0.1:8080/ready' || curl -fsS -o /dev/null 'http://127.0.0.1:8080/ready'"],
               "interval": "5s", "timeout": "1s", "retries": 3})
    );
    let warnings = warns(&logs);
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert!(warnings[0].contains("livenessProbe: Docker does not restart"));
    assert!(warnings[1].contains("`wget` or else `curl`"));
}

#[test]
fn shop_db_stateful_storage_is_a_named_volume_and_fs_group_a_group() {
    let (out, logs) = render(json!({
        "metadata": {"name": "db", "labels": {"core.opm.dev/workload-type": "stateful"}},
        "spec": {
            "container": {"image": "postgres:17.2", "ports": {"postgres": {"containerPort": 5432}},
                          "env": {"PGDATA": {"value": "/var/lib/postgresql/data/pgdata"}},
                          "readinessProbe": {"exec": {"command": ["pg_isready", "-U", "shop"]}, "periodSeconds": 10}},
            "expose": {"type": "ClusterIP"},
            "persistentStorage": {"data": {"size": "20Gi", "mountPath": "/var/lib/postgresql/data",
                                           "labels": {"backup": "daily"},
                                           "annotations": {"helm.sh/resource-policy": "keep"}}},
            "securityContext": {"fsGroup": 999, "runAsUser": 999, "runAsNonRoot": true},
        },
    }));
    assert_eq!(names(&out), ["Service/db", "Volume/db-data"]);
    let db = &out[0]["spec"];
    assert_eq!(
        db["volumes"],
        json!([{"type": "volume", "source": "db-data", "target": "/var/lib/postgresql/data"}])
    );
    assert_eq!(db["user"], "999");
    assert_eq!(db["group_add"], json!(["999"]));
    assert_eq!(db["deploy"], json!({"replicas": 1}));
    assert_eq!(
        db["healthcheck"]["test"],
        json!(["CMD", "pg_isready", "-U", "shop"])
    );
    assert_eq!(
        out[1]["spec"],
        json!({"labels": {"backup": "daily", "helm.sh/resource-policy": "keep"}})
    );
    let warnings = warns(&logs);
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(warnings[0].contains("fsGroup 999"), "{warnings:?}");
}

#[test]
fn shop_log_agent_a_daemon_is_global_with_a_bind_mount_and_no_node_name() {
    let (out, logs) = render(json!({
        "metadata": {"name": "log-agent", "labels": {"core.opm.dev/workload-type": "daemon",
                                                     "security.opm.dev/host-access": "true"}},
        "spec": {
            "container": {"image": "fluent/fluent-bit:3.2",
                          "env": {"NODE_NAME": {"fieldRef": {"fieldPath": "spec.nodeName"}},
                                  "NS": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                          "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
                          "volumeMounts": {"varlog": {"mountPath": "/var/log", "readOnly": true}}},
            "volumes": {"varlog": {"hostPath": {"path": "/var/log", "type": "Directory"}}},
        },
    }));
    let agent = &out[0]["spec"];
    assert_eq!(agent["deploy"]["mode"], "global");
    assert!(agent["deploy"].get("replicas").is_none());
    assert_eq!(agent["environment"], json!({"NS": "shop"}));
    assert_eq!(
        agent["volumes"],
        json!([{"type": "bind", "source": "/var/log", "target": "/var/log", "read_only": true,
                "bind": {"create_host_path": false}}])
    );
    let warnings = warns(&logs);
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].starts_with("container.env.NODE_NAME: fieldRef spec.nodeName"),
        "{warnings:?}"
    );
}

#[test]
fn a_job_is_one_shot_and_retries_as_its_restart_policy_says() {
    let job = |spec: Value| {
        let (out, logs) = render(json!({
            "metadata": {"name": "extract", "labels": {"core.opm.dev/workload-type": "job"}},
            "spec": spec,
        }));
        (
            out[0]["spec"].clone(),
            warns(&logs)
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>(),
        )
    };
    let (never, _) =
        job(json!({"container": {"image": "etl"}, "restartPolicy": {"policy": "Never"}}));
    assert_eq!(never["restart"], "no");
    assert_eq!(never["deploy"], json!({"replicas": 1}));
    let (default, _) = job(json!({"container": {"image": "etl"}}));
    assert_eq!(default["restart"], "on-failure:6");
    let (configured, warnings) = job(json!({
        "container": {"image": "etl"},
        "jobConfig": {"backoffLimit": 2, "completions": 4, "parallelism": 4,
                      "activeDeadlineSeconds": 3600, "ttlSecondsAfterFinished": 86400},
    }));
    assert_eq!(configured["restart"], "on-failure:2");
    assert_eq!(configured["deploy"]["replicas"], 4);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("activeDeadlineSeconds"));
    let (no_retries, _) =
        job(json!({"container": {"image": "etl"}, "jobConfig": {"backoffLimit": 0}}));
    assert_eq!(no_retries["restart"], "no");
    let (_, warnings) = job(
        json!({"container": {"image": "etl"}, "jobConfig": {"completions": 16, "parallelism": 4}}),
    );
    assert!(
        warnings[0].contains("completes 4 times, not 16"),
        "{warnings:?}"
    );
}

#[test]
fn pipeline_init_containers_are_one_shot_services_the_main_one_waits_for_in_order() {
    let (out, _) = render(json!({
        "metadata": {"name": "load", "labels": {"core.opm.dev/workload-type": "job"}},
        "spec": {
            "container": {"image": "etl", "args": ["load"],
                          "volumeMounts": {"staging": {"mountPath": "/staging", "readOnly": true}}},
            "volumes": {"staging": {"persistentClaim": "extract-staging"}},
            "initContainers": {
                "wait-for-transform": {"image": "busybox:1.36",
                    "command": ["sh", "-c", "until [ -f /staging/.transformed ]; do sleep 5; done"],
                    "volumeMounts": {"staging": {"mountPath": "/staging", "readOnly": true}}},
                "wait-for-warehouse": {"image": "postgres:17.2",
                    "command": ["sh", "-c", "until pg_isready -h warehouse; do sleep 2; done"]},
            },
            "restartPolicy": {"policy": "Never"},
        },
    }));
    assert_eq!(
        names(&out),
        [
            "Service/load",
            "Service/load-init-wait-for-transform",
            "Service/load-init-wait-for-warehouse"
        ]
    );
    let load = &out[0]["spec"];
    assert_eq!(
        load["depends_on"],
        json!({"load-init-wait-for-transform": {"condition": "service_completed_successfully"},
               "load-init-wait-for-warehouse": {"condition": "service_completed_successfully"}})
    );
    assert_eq!(
        load["volumes"],
        json!([{"type": "volume", "source": "extract-staging", "target": "/staging", "read_only": true}])
    );
    let first = &out[1]["spec"];
    assert_eq!(first["restart"], "no");
    assert!(first.get("depends_on").is_none());
    assert!(first.get("deploy").is_none());
    assert_eq!(
        first["entrypoint"][2],
        "until [ -f /staging/.transformed ]; do sleep 5; done"
    );
    assert_eq!(
        out[2]["spec"]["depends_on"],
        json!({"load-init-wait-for-transform": {"condition": "service_completed_successfully"}})
    );
}

#[test]
fn node_ports_and_load_balancers_are_published_and_cluster_ports_are_not() {
    let component = |expose: Value| {
        json!({"metadata": {"name": "web"},
               "spec": {"container": {"image": "x", "ports": {"http": {"containerPort": 8080},
                                                             "admin": {"containerPort": 9000}}},
                        "expose": expose}})
    };
    let (out, logs) = render(component(json!({"type": "NodePort", "ports": {
        "http": {"port": 80, "targetPort": "http", "nodePort": 31847, "appProtocol": "http"},
        "admin": {"port": 9000, "protocol": "UDP"}}})));
    assert_eq!(
        out[0]["spec"]["ports"],
        json!([{"name": "admin", "target": 9000, "protocol": "udp"},
               {"name": "http", "target": 8080, "published": "31847", "protocol": "tcp", "app_protocol": "http"}])
    );
    let warnings = warns(&logs);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("reaches web:8080"), "{warnings:?}");
    let (out, _) = render(component(
        json!({"type": "LoadBalancer", "ports": {"http": {"port": 80, "targetPort": 8080}}}),
    ));
    assert_eq!(
        out[0]["spec"]["ports"],
        json!([{"name": "http", "target": 8080, "published": "80", "protocol": "tcp"}])
    );
    let (out, _) = render(component(json!({"type": "LoadBalancer"})));
    assert_eq!(
        out[0]["spec"]["ports"][1],
        json!({"name": "http", "target": 8080, "published": "8080", "protocol": "tcp"})
    );
    let (out, logs) = render(component(
        json!({"type": "Headless", "ports": {"http": {"port": 8080}}}),
    ));
    assert!(out[0]["spec"].get("ports").is_none());
    assert!(warns(&logs).is_empty(), "{logs:?}");
}

#[test]
fn everything_web_sidecars_inits_volumes_and_the_environment() {
    let (out, logs) = render(json!({
        "metadata": {"name": "web", "annotations": {"depends-on.opm.dev/store": "healthy"}},
        "spec": {
            "container": {
                "name": "web", "image": {"repository": "ghcr.io/acme/web", "tag": "3.1"},
                "imagePullPolicy": "IfNotPresent",
                "command": ["/app/web"], "args": ["--listen=:8080", "--token=$(API_TOKEN)"],
                "ports": {"http": {"containerPort": 8080}},
                "env": {
                    "WORKERS": {"value": 4},
                    "FEATURE_FLAGS": {"configMapKeyRef": {"name": "settings", "key": "flags"}},
                    "API_TOKEN": {"secretKeyRef": {"name": "credentials", "key": "token", "optional": false}},
                    "POD_IP": {"fieldRef": {"fieldPath": "status.podIP"}},
                    "ADVERTISE_URL": {"value": "http://$(POD_NAME):8080/$$HOME"},
                    "POD_NAME": {"fieldRef": {"fieldPath": "metadata.name"}},
                    "MEMORY_LIMIT": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
                    "TIER": {"fieldRef": {"fieldPath": "metadata.labels['tier']"}},
                },
                "resources": {"requests": {"cpu": "200m"}, "limits": {"cpu": "1", "memory": "256Mi"}},
                "volumeMounts": {
                    "cache": {"mountPath": "/cache"},
                    "config": {"mountPath": "/etc/web", "readOnly": true},
                    "tls": {"mountPath": "/etc/tls", "readOnly": true},
                    "uploads": {"mountPath": "/srv/uploads/tenant-a", "subPath": "tenant-a"},
                },
            },
            "volumes": {
                "cache": {"emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
                "config": {"configMap": "settings"},
                "tls": {"secret": {"name": "credentials", "items": [{"key": "token", "path": "token", "mode": 256}]}},
                "uploads": {"persistentClaim": "shared-uploads-claim"},
            },
            "expose": {"type": "NodePort", "ports": {"http": {"port": 8080, "nodePort": 30080}},
                       "labels": {"exposure": "public"}},
            "sidecarContainers": {"proxy": {"image": "envoyproxy/envoy:v1.32.1",
                                            "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}},
            "initContainers": {
                "b-warm-cache": {"image": "ghcr.io/acme/web:3.1", "args": ["warm-cache"],
                                 "volumeMounts": {"cache": {"mountPath": "/cache"}}},
                "a-migrate": {"image": "ghcr.io/acme/web:3.1", "args": ["migrate"]},
            },
            "gracefulShutdown": {"terminationGracePeriodSeconds": 40, "preStop": {"sleep": {"seconds": 5}}},
            "podMetadata": {"labels": {"tier": "frontend"}, "annotations": {"prometheus.io/scrape": "true"}},
            "podRuntime": {"shareProcessNamespace": true},
        },
    }));
    assert_eq!(
        names(&out),
        [
            "Service/web",
            "Service/web-init-a-migrate",
            "Service/web-init-b-warm-cache",
            "Service/web-proxy",
            "Volume/web-cache"
        ]
    );
    let web = &out[0]["spec"];
    assert_eq!(web["image"], "ghcr.io/acme/web:3.1");
    assert_eq!(web["pull_policy"], "missing");
    assert_eq!(web["entrypoint"], json!(["/app/web"]));
    assert!(web.get("command").is_none());
    assert_eq!(
        web["x-opm"]["command"],
        json!(["--listen=:8080", "--token=$(API_TOKEN)"])
    );
    assert_eq!(
        web["environment"],
        json!({"ADVERTISE_URL": "http://web:8080/$HOME", "MEMORY_LIMIT": "256",
               "POD_NAME": "web", "TIER": "frontend", "WORKERS": "4"})
    );
    assert_eq!(
        web["x-opm"]["environment"],
        json!([{"name": "API_TOKEN", "secret": "credentials", "key": "token"},
               {"name": "FEATURE_FLAGS", "configMap": "settings", "key": "flags"}])
    );
    assert_eq!(
        web["x-opm"]["files"],
        json!([{"configMap": "settings", "target": "/etc/web"},
               {"secret": "credentials", "target": "/etc/tls", "items": [{"key": "token", "path": "token", "mode": 256}]}])
    );
    assert_eq!(
        web["volumes"],
        json!([{"type": "volume", "source": "web-cache", "target": "/cache"},
               {"type": "volume", "source": "shared-uploads-claim", "target": "/srv/uploads/tenant-a",
                "volume": {"subpath": "tenant-a"}}])
    );
    assert_eq!(
        out[4]["spec"],
        json!({"driver": "local", "driver_opts": {"type": "tmpfs", "device": "tmpfs", "o": "size=64m"}})
    );
    assert_eq!(
        web["depends_on"],
        json!({"store": {"condition": "service_healthy"},
               "web-init-a-migrate": {"condition": "service_completed_successfully"},
               "web-init-b-warm-cache": {"condition": "service_completed_successfully"}})
    );
    assert_eq!(
        web["labels"],
        json!({"exposure": "public", "tier": "frontend"})
    );
    assert_eq!(
        web["annotations"],
        json!({"depends-on.opm.dev/store": "healthy", "prometheus.io/scrape": "true"})
    );
    assert_eq!(web["stop_grace_period"], "40s");
    assert_eq!(web["pre_stop"], json!([{"command": ["sleep", "5"]}]));
    assert_eq!(
        web["deploy"]["resources"],
        json!({"limits": {"cpus": "1", "memory": "256m"}, "reservations": {"cpus": "0.2"}})
    );
    let proxy = &out[3]["spec"];
    assert_eq!(proxy["network_mode"], "service:web");
    assert_eq!(proxy["pid"], "service:web");
    assert_eq!(
        proxy["depends_on"],
        json!({"web": {"condition": "service_started"}})
    );
    assert!(proxy.get("ports").is_none());
    assert_eq!(
        proxy["deploy"],
        json!({"resources": {"reservations": {"cpus": "0.05", "memory": "64m"}}})
    );
    let migrate = &out[1]["spec"];
    assert_eq!(migrate["restart"], "on-failure");
    assert_eq!(
        migrate["depends_on"],
        json!({"store": {"condition": "service_healthy"}})
    );
    assert_eq!(
        out[2]["spec"]["depends_on"],
        json!({"store": {"condition": "service_healthy"},
               "web-init-a-migrate": {"condition": "service_completed_successfully"}})
    );
    assert_eq!(out[2]["spec"]["volumes"][0]["source"], "web-cache");
    let warnings = warns(&logs);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("POD_IP: fieldRef status.podIP")),
        "{warnings:#?}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("`sleep`")),
        "{warnings:#?}"
    );
}

#[test]
fn a_list_env_keeps_its_order_and_a_reference_to_a_deferred_variable_waits_for_the_renderer() {
    let (out, _) = render(json!({
        "metadata": {"name": "transcoder"},
        "spec": {"container": {
            "image": "x",
            "env": [
                {"name": "LATER", "value": "$(MEDIA_ROOT)/x"},
                {"name": "MEDIA_ROOT", "value": "/media"},
                {"name": "LIBRARY", "value": "$(MEDIA_ROOT)/library"},
                {"name": "TOKEN", "secretKeyRef": {"name": "credentials", "key": "token"}},
                {"name": "URL", "value": "https://$(TOKEN)@$(MEDIA_ROOT)/$(AFTER)"},
                {"name": "AFTER", "value": "a"},
            ],
            "command": ["run", "$(LIBRARY)", "$$(LIBRARY)"],
        }},
    }));
    let spec = &out[0]["spec"];
    assert_eq!(
        spec["environment"],
        json!({"AFTER": "a", "LATER": "$(MEDIA_ROOT)/x", "LIBRARY": "/media/library", "MEDIA_ROOT": "/media"})
    );
    assert_eq!(
        spec["x-opm"]["environment"],
        json!([{"name": "TOKEN", "secret": "credentials", "key": "token"},
               {"name": "URL", "value": "https://$(TOKEN)@$(MEDIA_ROOT)/$$(AFTER)"}])
    );
    // `$$(LIBRARY)` is Kubernetes' escape: the container gets `$(LIBRARY)`.
    assert_eq!(
        spec["entrypoint"],
        json!(["run", "/media/library", "$(LIBRARY)"])
    );
}

#[test]
fn env_from_makes_unknown_references_wait_for_the_renderer() {
    let (out, _) = render(json!({
        "metadata": {"name": "app"},
        "spec": {"container": {
            "image": "x",
            "envFrom": [{"configMapRef": {"name": "settings"}},
                        {"secretRef": {"name": "credentials", "optional": true}, "prefix": "SECRET_"}],
            "env": {"URL": {"value": "http://$(HOST)"}, "PLAIN": {"value": "a"}},
        }},
    }));
    let spec = &out[0]["spec"];
    assert_eq!(spec["environment"], json!({"PLAIN": "a"}));
    assert_eq!(
        spec["x-opm"],
        json!({"envFrom": [{"configMap": "settings"},
                           {"secret": "credentials", "prefix": "SECRET_", "optional": true}],
               "environment": [{"name": "URL", "value": "http://$(HOST)"}]})
    );
}

#[test]
fn a_second_instance_prefixes_every_name_it_owns() {
    let (result, _) = render_in(
        &test_instance_context(),
        json!({
            "metadata": {"name": "db", "annotations": {"depends-on.opm.dev/migrate": "completed"}},
            "spec": {"container": {"image": "postgres", "volumeMounts": {"shared": {"mountPath": "/s"}}},
                     "volumes": {"shared": {"persistentClaim": {"component": "files", "storage": "data"}}},
                     "persistentStorage": {"data": {"size": "1Gi", "mountPath": "/data"}},
                     "sidecarContainers": {"exporter": {"image": "exporter"}}},
        }),
    );
    let out = result.unwrap();
    assert_eq!(
        names(&out),
        [
            "Service/shop-eu-db",
            "Service/shop-eu-db-exporter",
            "Volume/shop-eu-db-data"
        ]
    );
    let db = &out[0]["spec"];
    assert_eq!(
        db["depends_on"],
        json!({"shop-eu-migrate": {"condition": "service_completed_successfully"}})
    );
    assert_eq!(db["volumes"][0]["source"], "shop-eu-db-data");
    assert_eq!(db["volumes"][1]["source"], "shop-eu-files-data");
    assert_eq!(out[1]["spec"]["network_mode"], "service:shop-eu-db");
}

#[test]
fn strict_makes_what_is_not_honoured_an_error() {
    let strict = Context {
        strict: true,
        ..test_context()
    };
    let (result, _) = render_in(
        &strict,
        json!({
            "metadata": {"name": "api"},
            "spec": {"container": {"image": "x", "env": {"IP": {"fieldRef": {"fieldPath": "status.podIP"}}}}},
        }),
    );
    let error = result.unwrap_err().to_string();
    assert!(
        error.contains("status.podIP") && error.contains("--strict"),
        "{error}"
    );
}

#[test]
fn mistakes_are_invalid_components() {
    let error = |component: Value| {
        render_in(&test_context(), component)
            .0
            .unwrap_err()
            .to_string()
    };
    assert!(error(json!({"metadata": {"name": "api"}})).contains("no spec.container"));
    let message = error(json!({"metadata": {"name": "api"},
        "spec": {"container": {"image": "x", "volumeMounts": {"nope": {"mountPath": "/x"}}}}}));
    assert!(message.contains("mounts volume \"nope\""), "{message}");
    let message = error(
        json!({"metadata": {"name": "api", "annotations": {"depends-on.opm.dev/db": "ready"}},
        "spec": {"container": {"image": "x"}}}),
    );
    assert!(
        message.contains("\"ready\" is not a condition"),
        "{message}"
    );
    let message = error(json!({"metadata": {"name": "api"},
        "spec": {"container": {"image": "x"}, "restartPolicy": {"policy": "Never"}}}));
    assert!(message.contains("use Always"), "{message}");
    let message = error(
        json!({"metadata": {"name": "api", "labels": {"core.opm.dev/workload-type": "cronjob"}},
        "spec": {"container": {"image": "x"}}}),
    );
    assert!(message.contains("no schedule"), "{message}");
    let message = error(json!({"metadata": {"name": "api"},
        "spec": {"container": {"image": "x"}, "sidecarContainers": {"api": {"image": "y"}}}}));
    assert!(message.contains("two containers"), "{message}");
}

#[test]
fn volume_sources_map_to_compose_mounts() {
    let (out, logs) = render(json!({
        "metadata": {"name": "media"},
        "spec": {
            "container": {"image": "x", "volumeMounts": {
                "scratch": {"mountPath": "/scratch"}, "fast": {"mountPath": "/fast"},
                "nas": {"mountPath": "/nas"}, "secrets": {"mountPath": "/mnt/secrets"},
                "bundle": {"mountPath": "/bundle"}, "eph": {"mountPath": "/eph"},
                "one": {"mountPath": "/etc/app.yaml", "subPath": "app.yaml"}}},
            "volumes": {
                "scratch": {"emptyDir": {"sizeLimit": "1Gi"}},
                "fast": {"emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
                "nas": {"nfs": {"server": "nas.example.com", "path": "/exports/media", "readOnly": true}},
                "secrets": {"csi": {"driver": "secrets-store.csi.k8s.io"}},
                "bundle": {"projected": {"defaultMode": 288, "sources": [
                    {"configMap": {"name": "settings", "items": [{"key": "flags", "path": "flags"}]}},
                    {"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]}},
                "eph": {"ephemeral": {"size": "10Gi", "storageClass": "fast-ssd"}},
                "one": {"configMap": "settings"},
            },
        },
    }));
    assert_eq!(names(&out), ["Service/media", "Volume/media-nas"]);
    let spec = &out[0]["spec"];
    assert_eq!(
        spec["volumes"],
        json!([{"type": "volume", "target": "/eph"},
               {"type": "tmpfs", "target": "/fast", "tmpfs": {"size": "64m"}},
               {"type": "volume", "source": "media-nas", "target": "/nas", "read_only": true},
               {"type": "volume", "target": "/scratch"}])
    );
    assert_eq!(
        spec["x-opm"]["files"],
        json!([{"configMap": "settings", "target": "/bundle", "items": [{"key": "flags", "path": "flags"}], "mode": 288},
               {"configMap": "settings", "target": "/etc/app.yaml", "subPath": "app.yaml"}])
    );
    assert_eq!(
        out[1]["spec"],
        json!({"driver": "local", "driver_opts": {"type": "nfs", "o": "addr=nas.example.com,ro", "device": ":/exports/media"}})
    );
    let warnings = warns(&logs);
    assert_eq!(warnings.len(), 4, "{warnings:#?}");
}

#[test]
fn copies_publish_a_range_of_host_ports_and_lost_service_settings_are_one_warning_per_reason() {
    let (out, logs) = render(json!({
        "metadata": {"name": "web"},
        "spec": {"container": {"image": "x", "ports": {"http": {"containerPort": 8080}}},
                 "replicas": 3,
                 "expose": {"type": "LoadBalancer", "ports": {"http": {"port": 8080}},
                            "sessionAffinity": "None", "externalTrafficPolicy": "Local",
                            "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"]}},
    }));
    assert_eq!(out[0]["spec"]["ports"][0]["published"], "8080-8082");
    let warnings = warns(&logs);
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert!(
        warnings[0]
            .starts_with("expose.ipFamilyPolicy \"SingleStack\", expose.ipFamilies [\"IPv4\"]: "),
        "{warnings:?}"
    );
    assert!(
        warnings[1].contains("published on 8080-8082, one port each"),
        "{warnings:?}"
    );
}

/// The error of rendering `component`, which must fail.
fn refusal(component: Value) -> String {
    render_in(&test_context(), component)
        .0
        .expect_err("the component is refused")
        .to_string()
}

/// Asserts that `error` is an invalid component naming `field` and saying how to allow it.
fn assert_host_access_refused(error: &str, field: &str) {
    assert!(error.starts_with("invalid component: "), "{error}");
    assert!(error.contains(field), "{field}: {error}");
    assert!(
        error.contains("label the component security.opm.dev/host-access: \"true\""),
        "{error}"
    );
}

/// A component with `spec`, and with `labels`.
fn component_with(labels: Value, spec: Value) -> Value {
    json!({"metadata": {"name": "agent", "labels": labels}, "spec": spec})
}

fn host_path(path: &str) -> Value {
    json!({
        "container": {"image": "x", "volumeMounts": {"host": {"mountPath": "/host", "readOnly": true}}},
        "volumes": {"host": {"hostPath": {"path": path}}},
    })
}

#[test]
fn a_host_bind_mount_is_refused_without_the_host_access_label() {
    let error = refusal(component_with(json!({}), host_path("/var/log")));
    assert_host_access_refused(&error, "volumes.host.hostPath \"/var/log\"");
    // Declared is enough: a host path nothing mounts yet is refused too.
    let error = refusal(component_with(
        json!({}),
        json!({"container": {"image": "x"}, "volumes": {"host": {"hostPath": {"path": "/etc"}}}}),
    ));
    assert_host_access_refused(&error, "volumes.host.hostPath \"/etc\"");
}

#[test]
fn the_host_root_and_the_docker_socket_are_refused_without_the_host_access_label() {
    let error = refusal(component_with(json!({}), host_path("/")));
    assert_host_access_refused(&error, "volumes.host.hostPath \"/\"");
    assert!(error.contains("the host's whole file system"), "{error}");
    for socket in [
        "/var/run/docker.sock",
        "/run/docker.sock",
        "//var/run/./docker.sock",
    ] {
        let error = refusal(component_with(json!({}), host_path(socket)));
        assert_host_access_refused(&error, &format!("volumes.host.hostPath {socket:?}"));
        assert!(error.contains("the Docker engine's socket"), "{error}");
    }
    // A label that is not "true" asks for nothing.
    for value in ["false", "yes", "True", ""] {
        let error = refusal(component_with(
            json!({"security.opm.dev/host-access": value}),
            host_path("/"),
        ));
        assert_host_access_refused(&error, "volumes.host.hostPath");
    }
}

#[test]
fn a_privileged_container_is_refused_without_the_host_access_label() {
    let privileged = json!({"privileged": true});
    let error = refusal(component_with(
        json!({}),
        json!({"container": {"image": "x", "securityContext": privileged}}),
    ));
    assert_host_access_refused(&error, "container.securityContext.privileged");
    let error = refusal(component_with(
        json!({}),
        json!({"container": {"image": "x"},
               "sidecarContainers": {"helper": {"image": "y", "securityContext": privileged}}}),
    ));
    assert_host_access_refused(
        &error,
        "sidecarContainers.helper.securityContext.privileged",
    );
    let error = refusal(component_with(
        json!({}),
        json!({"container": {"image": "x"},
               "initContainers": {"setup": {"image": "y", "securityContext": privileged}}}),
    ));
    assert_host_access_refused(&error, "initContainers.setup.securityContext.privileged");
    // privileged: false is no host access.
    let (out, _) = render(component_with(
        json!({}),
        json!({"container": {"image": "x", "securityContext": {"privileged": false}}}),
    ));
    assert!(out[0]["spec"].get("privileged").is_none());
}

#[test]
fn an_added_capability_beyond_a_containers_default_set_is_refused_without_the_host_access_label() {
    let capabilities = |add: Value| {
        component_with(
            json!({}),
            json!({"container": {"image": "x", "securityContext": {
                "capabilities": {"drop": ["ALL"], "add": add}}}}),
        )
    };
    for add in [
        json!(["SYS_ADMIN"]),
        json!(["NET_BIND_SERVICE", "NET_ADMIN"]),
        json!(["ALL"]),
    ] {
        let error = refusal(capabilities(add.clone()));
        assert_host_access_refused(&error, "container.securityContext.capabilities.add");
        assert!(!error.contains("NET_BIND_SERVICE"), "{error}");
    }
    // Adding back what every container has is no host access.
    let (out, _) = render(capabilities(json!(["NET_BIND_SERVICE", "CAP_CHOWN"])));
    assert_eq!(
        out[0]["spec"]["cap_add"],
        json!(["NET_BIND_SERVICE", "CAP_CHOWN"])
    );
    assert_eq!(out[0]["spec"]["cap_drop"], json!(["ALL"]));
}

#[test]
fn the_host_network_is_refused_without_the_host_access_label() {
    let error = refusal(component_with(
        json!({}),
        json!({"container": {"image": "x"}, "podNetwork": {"hostNetwork": true}}),
    ));
    assert_host_access_refused(&error, "podNetwork.hostNetwork");
    let (out, _) = render(component_with(
        json!({}),
        json!({"container": {"image": "x"}, "podNetwork": {"hostNetwork": false}}),
    ));
    assert!(out[0]["spec"].get("network_mode").is_none());
}

#[test]
fn a_confinement_turned_off_is_refused_without_the_host_access_label() {
    let cases = [
        (
            json!({"container": {"image": "x"},
                   "securityContext": {"seccompProfile": {"type": "Unconfined"}}}),
            "securityContext.seccompProfile Unconfined",
        ),
        (
            json!({"container": {"image": "x", "securityContext": {
                "appArmorProfile": {"type": "Unconfined"}}}}),
            "container.securityContext.appArmorProfile Unconfined",
        ),
        (
            json!({"container": {"image": "x", "securityContext": {"procMount": "Unmasked"}}}),
            "container.securityContext.procMount Unmasked",
        ),
        (
            json!({"container": {"image": "x"},
                   "securityContext": {"seLinuxOptions": {"type": "spc_t"}}}),
            "securityContext.seLinuxOptions.type \"spc_t\"",
        ),
        (
            json!({"container": {"image": "x", "securityContext": {
                "seLinuxOptions": {"user": "system_u"}}}}),
            "container.securityContext.seLinuxOptions.user \"system_u\"",
        ),
    ];
    for (spec, field) in cases {
        let error = refusal(component_with(json!({}), spec));
        assert_host_access_refused(&error, field);
    }
    // A container's own SELinux type and level, and Docker's default profiles, are not.
    let (out, _) = render(component_with(
        json!({}),
        json!({"container": {"image": "x"},
               "securityContext": {"seLinuxOptions": {"type": "container_t", "level": "s0:c1,c2"},
                                   "seccompProfile": {"type": "RuntimeDefault"},
                                   "appArmorProfile": {"type": "RuntimeDefault"}}}),
    ));
    assert_eq!(
        out[0]["spec"]["security_opt"],
        json!(["label=type:container_t", "label=level:s0:c1,c2"])
    );
}

#[test]
fn the_host_access_label_allows_host_mounts_privilege_capabilities_and_the_host_network() {
    let (out, logs) = render(component_with(
        json!({"core.opm.dev/workload-type": "daemon", "security.opm.dev/host-access": "true"}),
        json!({
            "container": {"image": "x",
                          "volumeMounts": {"root": {"mountPath": "/host", "readOnly": true},
                                           "docker": {"mountPath": "/var/run/docker.sock"}},
                          "securityContext": {"privileged": true, "procMount": "Unmasked",
                                              "capabilities": {"add": ["SYS_ADMIN"]}}},
            "volumes": {"root": {"hostPath": {"path": "/"}},
                        "docker": {"hostPath": {"path": "/var/run/docker.sock", "type": "Socket"}}},
            "podNetwork": {"hostNetwork": true},
            "securityContext": {"seccompProfile": {"type": "Unconfined"},
                                "seLinuxOptions": {"type": "spc_t"}},
        }),
    ));
    let agent = &out[0]["spec"];
    assert_eq!(
        agent["volumes"],
        json!([{"type": "bind", "source": "/var/run/docker.sock", "target": "/var/run/docker.sock",
                "bind": {"create_host_path": false}},
               {"type": "bind", "source": "/", "target": "/host", "read_only": true,
                "bind": {"create_host_path": true}}])
    );
    assert_eq!(agent["privileged"], true);
    assert_eq!(agent["cap_add"], json!(["SYS_ADMIN"]));
    assert_eq!(agent["network_mode"], "host");
    assert_eq!(
        agent["security_opt"],
        json!([
            "seccomp=unconfined",
            "label=type:spc_t",
            "systempaths=unconfined"
        ])
    );
    assert!(warns(&logs).is_empty(), "{logs:?}");
}

/// `ulimits` as compose writes them; a relative bind mount inside the output
/// directory, which needs no host access and may not leave it; one volume mounted twice, and a
/// claim whose volume name is pinned (`claimName`, the upstream project's `redisdata`).
#[test]
fn ulimits_relative_binds_mounts_of_one_volume_and_a_pinned_volume_name() {
    let (out, _) = render(json!({
        "metadata": {"name": "broker"},
        "spec": {
            "container": {
                "image": "redis:7",
                "ulimits": {"nofile": {"soft": 20000, "hard": 40000}, "nproc": 65535},
                "volumeMounts": {
                    "conf": {"mountPath": "/usr/local/etc/redis", "readOnly": true},
                    "redisdata": [{"mountPath": "/data", "subPath": "data"}, {"mountPath": "/logs", "subPath": "logs"}],
                },
            },
            "volumes": {"conf": {"hostPath": {"path": "./conf/redis"}}},
            "persistentStorage": {"redisdata": {"size": "1Gi", "claimName": "redisdata"}},
        },
    }));
    let spec = &out[0]["spec"];
    assert_eq!(
        spec["ulimits"],
        json!({"nofile": {"soft": 20000, "hard": 40000}, "nproc": 65535})
    );
    let volumes = spec["volumes"].as_array().unwrap();
    assert!(
        volumes
            .iter()
            .any(|v| v["type"] == "bind" && v["source"] == "./conf/redis"),
        "{volumes:#?}"
    );
    let pinned: Vec<&Value> = volumes
        .iter()
        .filter(|v| v["source"] == "redisdata")
        .collect();
    assert_eq!(pinned.len(), 2, "{volumes:#?}");
    assert_eq!(pinned[1]["volume"], json!({"subpath": "logs"}));
    assert!(
        names(&out).contains(&"Volume/redisdata".to_owned()),
        "{:?}",
        names(&out)
    );
    for outside in ["./../etc", "./a/../../x"] {
        let error = refusal(component_with(json!({}), host_path(outside)));
        assert!(error.contains("may not leave it"), "{outside}: {error}");
    }
}
