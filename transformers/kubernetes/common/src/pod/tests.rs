use super::*;

fn component(labels: Value, spec: Value) -> Component {
    Component::from_value(json!({"metadata": {"name": "api", "labels": labels}, "spec": spec}))
        .unwrap()
}

fn render(spec: Value, kind: WorkloadKind) -> Result<PodTemplate, TransformError> {
    let context = Context {
        name: "shop".into(),
        version: "1.2.0".into(),
        labels: [
            ("team".to_owned(), "payments".to_owned()),
            ("module.opmodel.dev/version".to_owned(), "1.2.0".to_owned()),
        ]
        .into(),
        ..Context::default()
    };
    pod_template(&component(json!({}), spec), &context, kind)
}

#[test]
fn minimal_pod_has_one_container_and_the_selector_labels_but_not_the_version() {
    let pod = render(
        json!({"container": {"image": "nginx"}}),
        WorkloadKind::Deployment,
    )
    .unwrap();
    assert_eq!(
        pod.template,
        json!({
            "metadata": {"labels": {"app.kubernetes.io/instance": "shop",
                                    "app.kubernetes.io/name": "api", "team": "payments"}},
            "spec": {"containers": [{"name": "api", "image": "nginx"}]},
        })
    );
}

#[test]
fn maximal_pod_renders_every_trait() {
    let pod = render(
        json!({
            "container": {"image": "api:1", "volumeMounts": {"cache": {"mountPath": "/cache"}},
                          "livenessProbe": {"tcpSocket": {"port": 1}}},
            "sidecarContainers": {"proxy": {"image": "envoy"}, "logs": {"image": "fluent-bit"}},
            "initContainers": {"b-seed": {"image": "seed"}, "a-migrate": {"image": "migrate"}},
            "volumes": {"cache": {"emptyDir": {}}, "conf": {"configMap": "api-conf"},
                        "creds": {"secret": "api-creds"}, "shared": {"persistentClaim": "nfs"},
                        "logs": {"hostPath": {"path": "/var/log"}}},
            "persistentStorage": {"data": {"size": "1Gi", "mountPath": "/data"}},
            "healthCheck": {"liveness": {"httpGet": {"path": "/live", "port": "http"}},
                            "readiness": {"httpGet": {"path": "/ready", "port": "http"}},
                            "startup": {"exec": {"command": ["true"]}}},
            "podScheduling": {"nodeSelector": {"disk": "ssd"}, "priorityClassName": "high",
                              "tolerations": [{"key": "k", "operator": "Exists"}],
                              "affinity": {"nodeAffinity": {}}},
            "securityContext": {"runAsNonRoot": true, "fsGroup": 1000},
            "serviceAccount": {"create": true, "automountToken": false},
            "restartPolicy": {"policy": "Always"},
        }),
        WorkloadKind::Deployment,
    )
    .unwrap();
    let spec = &pod.template["spec"];
    let keys: Vec<&str> = spec
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "serviceAccountName",
            "automountServiceAccountToken",
            "securityContext",
            "restartPolicy",
            "initContainers",
            "containers",
            "volumes",
            "nodeSelector",
            "affinity",
            "tolerations",
            "priorityClassName",
        ]
    );
    assert_eq!(spec["serviceAccountName"], "api");
    assert_eq!(spec["automountServiceAccountToken"], false);
    assert_eq!(spec["restartPolicy"], "Always");
    let names = |list: &Value| -> Vec<String> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&spec["initContainers"]), ["a-migrate", "b-seed"]);
    assert_eq!(names(&spec["containers"]), ["api", "logs", "proxy"]);
    assert_eq!(
        names(&spec["volumes"]),
        ["cache", "conf", "creds", "data", "logs", "shared"]
    );
    assert_eq!(spec["volumes"][1]["configMap"]["name"], "api-conf");
    assert_eq!(spec["volumes"][2]["secret"]["secretName"], "api-creds");
    assert_eq!(
        spec["volumes"][3]["persistentVolumeClaim"]["claimName"],
        "api-data"
    );
    assert_eq!(
        spec["volumes"][5]["persistentVolumeClaim"]["claimName"],
        "nfs"
    );
    let main = &spec["containers"][0];
    assert_eq!(main["livenessProbe"]["httpGet"]["path"], "/live");
    assert_eq!(main["readinessProbe"]["httpGet"]["path"], "/ready");
    assert_eq!(main["startupProbe"]["exec"]["command"][0], "true");
    assert_eq!(
        main["volumeMounts"],
        json!([{"name": "cache", "mountPath": "/cache"}, {"name": "data", "mountPath": "/data"}])
    );
    assert!(pod.claim_templates.is_empty());
}

#[test]
fn init_and_sidecar_containers_run_in_the_order_of_their_rendered_names() {
    let containers = json!({
        "z-first": {"name": "a-second", "image": "z"},
        "a-first": {"name": "z-second", "image": "a"},
        "m-keyed": {"image": "m"},
    });
    let pod = render(
        json!({"container": {"image": "x"}, "initContainers": containers,
               "sidecarContainers": {"b": {"name": "c", "image": "b"}, "c": {"name": "b", "image": "c"}}}),
        WorkloadKind::Deployment,
    )
    .unwrap();
    let spec = &pod.template["spec"];
    let inits: Vec<(&str, &str)> = spec["initContainers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["image"].as_str().unwrap()))
        .collect();
    assert_eq!(
        inits,
        [("a-second", "z"), ("m-keyed", "m"), ("z-second", "a")]
    );
    let containers: Vec<&str> = spec["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(containers, ["api", "b", "c"]);
    assert_eq!(spec["containers"][1]["image"], "c");
}

#[test]
fn stateful_storage_becomes_claim_templates_not_volumes() {
    let pod = render(
        json!({"container": {"image": "postgres"},
               "persistentStorage": {"data": {"size": "5Gi", "mountPath": "/var/lib/postgresql"}}}),
        WorkloadKind::StatefulSet,
    )
    .unwrap();
    assert!(pod.template["spec"].get("volumes").is_none());
    assert_eq!(
        pod.template["spec"]["containers"][0]["volumeMounts"],
        json!([{"name": "data", "mountPath": "/var/lib/postgresql"}])
    );
    assert_eq!(
        pod.claim_templates,
        [
            json!({"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "5Gi"}}}})
        ]
    );
}

#[test]
fn jobs_restart_on_failure_by_default_and_refuse_always() {
    let pod = render(json!({"container": {"image": "x"}}), WorkloadKind::Job).unwrap();
    assert_eq!(pod.template["spec"]["restartPolicy"], "OnFailure");
    let never = render(
        json!({"container": {"image": "x"}, "restartPolicy": {"policy": "Never"}}),
        WorkloadKind::CronJob,
    )
    .unwrap();
    assert_eq!(never.template["spec"]["restartPolicy"], "Never");
    let err = render(
        json!({"container": {"image": "x"}, "restartPolicy": {"policy": "Always"}}),
        WorkloadKind::Job,
    )
    .unwrap_err();
    assert!(err.to_string().contains("not allowed for a Job"), "{err}");
    let err = render(
        json!({"container": {"image": "x"}, "restartPolicy": {"policy": "Never"}}),
        WorkloadKind::Deployment,
    )
    .unwrap_err();
    assert!(err.to_string().contains("use Always"), "{err}");
}

#[test]
fn a_mount_of_an_unknown_volume_is_invalid() {
    let err = render(
        json!({"container": {"image": "x", "volumeMounts": {"nope": {"mountPath": "/x"}}}}),
        WorkloadKind::Deployment,
    )
    .unwrap_err();
    assert!(err.to_string().contains("mounts volume \"nope\""), "{err}");
}

#[test]
fn duplicate_container_and_volume_names_are_invalid() {
    let err = render(
        json!({"container": {"image": "x"}, "sidecarContainers": {"api": {"image": "y"}}}),
        WorkloadKind::Deployment,
    )
    .unwrap_err();
    assert!(err.to_string().contains("two containers"), "{err}");
    let err = render(
        json!({"container": {"image": "x"}, "volumes": {"data": {"emptyDir": {}}},
               "persistentStorage": {"data": {"size": "1Gi"}}}),
        WorkloadKind::Deployment,
    )
    .unwrap_err();
    assert!(err.to_string().contains("both in volumes"), "{err}");
}

#[test]
fn a_service_account_that_is_not_created_is_used_by_name_only() {
    let c = component(
        json!({}),
        json!({"serviceAccount": {"create": false, "name": "shared"}}),
    );
    for context in [crate::test_context(), crate::test_instance_context()] {
        assert_eq!(
            service_account(&c, &context).unwrap(),
            (Some("shared".to_owned()), None)
        );
    }
    let c = component(json!({}), json!({"serviceAccount": {"create": false}}));
    assert_eq!(
        service_account(&c, &crate::test_context()).unwrap(),
        (None, None)
    );
}

#[test]
fn a_service_account_that_is_created_is_named_for_the_instance() {
    let c = component(json!({}), json!({"serviceAccount": {}}));
    let named = component(json!({}), json!({"serviceAccount": {"name": "runner"}}));
    let name = |c: &Component, context: &Context| service_account(c, context).unwrap().0;
    assert_eq!(name(&c, &crate::test_context()).as_deref(), Some("api"));
    assert_eq!(
        name(&c, &crate::test_instance_context()).as_deref(),
        Some("shop-eu-api")
    );
    assert_eq!(
        name(&named, &crate::test_instance_context()).as_deref(),
        Some("shop-eu-runner")
    );
}

#[test]
fn autoscaling_leaves_replicas_unset() {
    let c = component(json!({}), json!({"replicas": 3}));
    assert_eq!(replicas(&c).unwrap(), Some(3));
    let c = component(
        json!({}),
        json!({"replicas": 3, "autoscaling": {"maxReplicas": 5}}),
    );
    assert_eq!(replicas(&c).unwrap(), None);
}

#[test]
fn update_strategies_per_kind() {
    let c = component(
        json!({}),
        json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}}),
    );
    assert_eq!(
        update_strategy(&c, WorkloadKind::Deployment).unwrap(),
        Some(
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}})
        )
    );
    let err = update_strategy(&c, WorkloadKind::StatefulSet).unwrap_err();
    assert!(
        err.to_string()
            .contains("maxSurge is not supported by a StatefulSet"),
        "{err}"
    );
    let recreate = component(json!({}), json!({"updateStrategy": {"type": "Recreate"}}));
    assert_eq!(
        update_strategy(&recreate, WorkloadKind::Deployment).unwrap(),
        Some(json!({"type": "Recreate"}))
    );
    assert!(update_strategy(&recreate, WorkloadKind::DaemonSet).is_err());
    let on_delete = component(json!({}), json!({"updateStrategy": {"type": "OnDelete"}}));
    assert!(update_strategy(&on_delete, WorkloadKind::Deployment).is_err());
    assert_eq!(
        update_strategy(&on_delete, WorkloadKind::Job).unwrap(),
        None
    );
    let mixed = component(
        json!({}),
        json!({"updateStrategy": {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}}),
    );
    assert!(update_strategy(&mixed, WorkloadKind::Deployment).is_err());
}

#[test]
fn pull_secrets_graceful_shutdown_and_pod_metadata_reach_the_pod() {
    let pod = render(
        json!({
            "container": {"image": "nginx"},
            "imagePullSecrets": ["registry", "mirror"],
            "gracefulShutdown": {"terminationGracePeriodSeconds": 45,
                                 "preStop": {"sleep": {"seconds": 10}}},
            "podMetadata": {"labels": {"tier": "web"},
                            "annotations": {"prometheus.io/scrape": "true"}},
        }),
        WorkloadKind::Deployment,
    )
    .unwrap();
    let spec = &pod.template["spec"];
    assert_eq!(
        spec["imagePullSecrets"],
        json!([{"name": "registry"}, {"name": "mirror"}])
    );
    assert_eq!(spec["terminationGracePeriodSeconds"], 45);
    assert_eq!(
        spec["containers"][0]["lifecycle"],
        json!({"preStop": {"sleep": {"seconds": 10}}})
    );
    assert_eq!(
        pod.template["metadata"],
        json!({
            "labels": {"app.kubernetes.io/instance": "shop", "app.kubernetes.io/name": "api",
                       "team": "payments", "tier": "web"},
            "annotations": {"prometheus.io/scrape": "true"},
        })
    );
}

#[test]
fn a_pre_stop_sleep_longer_than_the_grace_period_is_refused() {
    for shutdown in [
        json!({"preStop": {"sleep": {"seconds": 31}}}),
        json!({"terminationGracePeriodSeconds": 5, "preStop": {"sleep": {"seconds": 6}}}),
    ] {
        let error = render(
            json!({"container": {"image": "nginx"}, "gracefulShutdown": shutdown}),
            WorkloadKind::Deployment,
        )
        .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("is longer than the grace period"),
            "{error}"
        );
    }
    let exec = render(
        json!({"container": {"image": "nginx"},
               "gracefulShutdown": {"preStop": {"exec": {"command": ["nginx", "-s", "quit"]}}}}),
        WorkloadKind::Job,
    )
    .unwrap();
    assert!(
        exec.template["spec"]
            .get("terminationGracePeriodSeconds")
            .is_none()
    );
    assert_eq!(
        exec.template["spec"]["containers"][0]["lifecycle"]["preStop"]["exec"]["command"][0],
        "nginx"
    );
}

#[test]
fn pods_reading_config_carry_a_checksum_reference_to_it() {
    let pod = render(
        json!({
            "container": {"image": "nginx",
                          "env": {"A": {"configMapKeyRef": {"name": "settings", "key": "a"}},
                                  "B": {"secretKeyRef": {"name": "creds", "key": "b"}}},
                          "volumeMounts": {"conf": {"mountPath": "/etc/conf"}}},
            "volumes": {"conf": {"configMap": "files"}, "tls": {"secret": "creds"}},
            "initContainers": {"init": {"image": "busybox",
                                        "env": {"C": {"secretKeyRef": {"name": "early", "key": "c"}}}}},
        }),
        WorkloadKind::Deployment,
    )
    .unwrap();
    assert_eq!(
        pod.template["metadata"]["annotations"],
        json!({"checksum.opm.dev/config":
               "opm:checksum ConfigMap/files ConfigMap/settings Secret/creds Secret/early"})
    );
    let plain = render(
        json!({"container": {"image": "nginx"}}),
        WorkloadKind::CronJob,
    )
    .unwrap();
    assert!(plain.template["metadata"].get("annotations").is_none());
    // A Job's pod template is immutable, so it never carries a checksum that could change.
    let job = render(
        json!({"container": {"image": "nginx", "env": {"A": {"configMapKeyRef": {"name": "s", "key": "a"}}}}}),
        WorkloadKind::Job,
    )
    .unwrap();
    assert!(job.template["metadata"].get("annotations").is_none());
}

#[test]
fn an_init_container_list_runs_as_written_and_a_restartable_one_is_a_native_sidecar() {
    let pod = render(
        json!({"container": {"image": "x"}, "initContainers": [
            {"name": "migrate", "image": "m"},
            {"name": "cache", "image": "c", "restartPolicy": "Always",
             "readinessProbe": {"tcpSocket": {"port": 6379}}},
            {"name": "announce", "image": "a"},
        ]}),
        WorkloadKind::Job,
    )
    .unwrap();
    let inits = pod.template["spec"]["initContainers"].as_array().unwrap();
    let names: Vec<&str> = inits.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["migrate", "cache", "announce"]);
    assert_eq!(inits[1]["restartPolicy"], "Always");
    assert_eq!(inits[1]["readinessProbe"]["tcpSocket"]["port"], 6379);

    let unnamed = render(
        json!({"container": {"image": "x"}, "initContainers": [{"image": "m"}]}),
        WorkloadKind::Deployment,
    );
    assert!(unnamed.unwrap_err().to_string().contains("needs a name"));
    for spec in [
        json!({"container": {"image": "x", "restartPolicy": "Always"}}),
        json!({"container": {"image": "x"}, "sidecarContainers": {"log": {"image": "l", "restartPolicy": "Always"}}}),
    ] {
        let error = render(spec, WorkloadKind::Deployment)
            .unwrap_err()
            .to_string();
        assert!(error.contains("only an init container"), "{error}");
    }
}

#[test]
fn the_main_container_lifecycle_meets_the_graceful_shutdown_hook() {
    let pod = render(
        json!({"container": {"image": "x", "lifecycle": {"postStart": {"exec": {"command": ["warm"]}}}},
               "gracefulShutdown": {"preStop": {"sleep": {"seconds": 5}}}}),
        WorkloadKind::Deployment,
    )
    .unwrap();
    assert_eq!(
        pod.template["spec"]["containers"][0]["lifecycle"],
        json!({"postStart": {"exec": {"command": ["warm"]}}, "preStop": {"sleep": {"seconds": 5}}})
    );
    let both = render(
        json!({"container": {"image": "x", "lifecycle": {"preStop": {"exec": {"command": ["stop"]}}}},
               "gracefulShutdown": {"preStop": {"sleep": {"seconds": 5}}}}),
        WorkloadKind::Deployment,
    );
    assert!(both.unwrap_err().to_string().contains("keep one"));
}

#[test]
fn spread_constraints_spread_the_component_and_pod_network_and_runtime_reach_the_pod() {
    let pod = render(
        json!({"container": {"image": "x"},
               "podScheduling": {"topologySpreadConstraints": [
                   {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"},
                   {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"tier": "web"}}},
               ]},
               "podNetwork": {"dnsPolicy": "None", "dnsConfig": {"nameservers": ["1.1.1.1"]},
                              "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["db.local"]}],
                              "enableServiceLinks": false, "hostNetwork": false},
               "podRuntime": {"runtimeClassName": "gvisor", "shareProcessNamespace": true}}),
        WorkloadKind::Deployment,
    )
    .unwrap();
    let spec = &pod.template["spec"];
    assert_eq!(
        spec["topologySpreadConstraints"][0]["labelSelector"],
        json!({"matchLabels": {"app.kubernetes.io/instance": "shop", "app.kubernetes.io/name": "api"}})
    );
    assert_eq!(
        spec["topologySpreadConstraints"][1]["labelSelector"],
        json!({"matchLabels": {"tier": "web"}})
    );
    assert_eq!(spec["dnsPolicy"], "None");
    assert_eq!(spec["dnsConfig"]["nameservers"][0], "1.1.1.1");
    assert_eq!(spec["hostAliases"][0]["hostnames"][0], "db.local");
    assert_eq!(spec["enableServiceLinks"], false);
    assert_eq!(spec["hostNetwork"], false);
    assert_eq!(spec["runtimeClassName"], "gvisor");
    assert_eq!(spec["shareProcessNamespace"], true);
}

#[test]
fn every_volume_source_renders_and_a_shared_claim_is_named_for_its_owner() {
    let pod = render(
        json!({"container": {"image": "x"}, "volumes": {
            "a-config": {"configMap": {"name": "settings", "items": [{"key": "app.ini", "path": "app.ini", "mode": 256}], "defaultMode": 420, "optional": true}},
            "b-secret": {"secret": {"name": "creds", "defaultMode": 256}},
            "c-projected": {"projected": {"sources": [
                {"configMap": {"name": "settings"}}, {"secret": {"name": "tls"}},
                {"serviceAccountToken": {"path": "token", "audience": "vault", "expirationSeconds": 3600}}]}},
            "d-nfs": {"nfs": {"server": "nas.local", "path": "/exports/media", "readOnly": true}},
            "e-csi": {"csi": {"driver": "secrets-store.csi.k8s.io", "readOnly": true, "volumeAttributes": {"secretProviderClass": "vault"}}},
            "f-scratch": {"ephemeral": {"size": "1Gi", "storageClass": "fast"}},
            "g-library": {"persistentClaim": {"component": "server", "storage": "library"}},
        }}),
        WorkloadKind::Deployment,
    )
    .unwrap();
    let volumes = pod.template["spec"]["volumes"].as_array().unwrap();
    assert_eq!(
        volumes[0]["configMap"],
        json!({"name": "settings", "items": [{"key": "app.ini", "path": "app.ini", "mode": 256}], "defaultMode": 420, "optional": true})
    );
    assert_eq!(
        volumes[1]["secret"],
        json!({"secretName": "creds", "defaultMode": 256})
    );
    assert_eq!(
        volumes[2]["projected"]["sources"][2]["serviceAccountToken"]["audience"],
        "vault"
    );
    assert_eq!(volumes[3]["nfs"]["server"], "nas.local");
    assert_eq!(volumes[4]["csi"]["driver"], "secrets-store.csi.k8s.io");
    assert_eq!(
        volumes[5]["ephemeral"],
        json!({"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                                                "resources": {"requests": {"storage": "1Gi"}}}}})
    );
    assert_eq!(
        volumes[6]["persistentVolumeClaim"],
        json!({"claimName": "server-library"})
    );
    // Every ConfigMap and Secret the pod reads, through a projection too, rolls it.
    assert_eq!(
        pod.template["metadata"]["annotations"][CONFIG_CHECKSUM_ANNOTATION],
        "opm:checksum ConfigMap/settings Secret/creds Secret/tls"
    );
}

#[test]
fn env_from_sources_roll_the_pods_too() {
    let pod = render(
        json!({"container": {"image": "x", "envFrom": [{"configMapRef": {"name": "env"}}, {"secretRef": {"name": "keys"}}]}}),
        WorkloadKind::Deployment,
    )
    .unwrap();
    assert_eq!(
        pod.template["metadata"]["annotations"][CONFIG_CHECKSUM_ANNOTATION],
        "opm:checksum ConfigMap/env Secret/keys"
    );
}

/// What is compose's alone — ulimits, a relative bind mount — is a warning
/// (an error under --strict) and a refusal on Kubernetes, never dropped silently.
#[test]
fn compose_only_ulimits_warn_and_a_relative_host_path_is_refused() {
    let spec = json!({"container": {"image": "redis", "ulimits": {"nofile": 1024}}});
    let (pod, logs) = opm_guest::log::capture(|| render(spec.clone(), WorkloadKind::Deployment));
    assert!(pod.is_ok());
    assert!(
        logs.iter()
            .any(|(_, line)| line.starts_with("container.ulimits: Kubernetes sets no")),
        "{logs:?}"
    );
    let strict = Context {
        strict: true,
        ..Context::default()
    };
    let error = pod_template(
        &component(json!({}), spec),
        &strict,
        WorkloadKind::Deployment,
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("(an error under --strict)"), "{error}");
    let relative = json!({
        "container": {"image": "x", "volumeMounts": {"conf": {"mountPath": "/conf"}}},
        "volumes": {"conf": {"hostPath": {"path": "./conf"}}},
    });
    let error = render(relative, WorkloadKind::Deployment)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("a Kubernetes hostPath is absolute"),
        "{error}"
    );
}
