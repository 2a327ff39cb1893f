//! The pod and container fields real applications need: ordered env and init
//! containers, envFrom, hooks, native sidecars, every volume source, topology spread, DNS and the
//! runtime class. Each renders, and `opm mod vet` refuses what the API server would refuse.

use serde_json::Value;

use crate::kubernetes::{build_json, vet_and_build_refuse, vet_refuses};

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|item| item["name"].as_str().unwrap())
        .collect()
}

/// Env and init containers run in the order the author meant: a list as written, a map with each
/// variable after those it refers to; a cycle of references is an error naming the variables.
#[test]
fn env_and_init_containers_keep_the_order_the_author_meant() {
    let resources = build_json(
        "  api:\n    resources:\n      Container:\n        image: api\n        env:\n          DATABASE_URL: {value: 'postgres://$(DB_HOST)/app'}\n          DB_HOST: {value: db}\n    traits:\n      InitContainers:\n        - {name: zz-migrate, image: api}\n        - {name: aa-seed, image: api}\n        - {name: proxy, image: envoy, restartPolicy: Always, readinessProbe: {tcpSocket: {port: 9901}}}\n",
    );
    let deployment = resources
        .iter()
        .find(|r| r["kind"] == "Deployment")
        .unwrap();
    let spec = &deployment["spec"]["template"]["spec"];
    assert_eq!(
        names(&spec["containers"][0]["env"]),
        ["DB_HOST", "DATABASE_URL"]
    );
    assert_eq!(
        names(&spec["initContainers"]),
        ["zz-migrate", "aa-seed", "proxy"]
    );
    assert_eq!(spec["initContainers"][2]["restartPolicy"], "Always");

    crate::kubernetes::refuses(
        "build",
        "  api:\n    resources:\n      Container: {image: api, env: {A: {value: '$(B)'}, B: {value: '$(A)'}}}\n",
        &["container.env: A, B refer to each other through $(NAME)"],
        &[],
    );
}

/// Containers: what the API server refuses of env, envFrom, hooks and restart policies.
#[test]
fn container_fields_refuse_at_vet_what_kubernetes_would() {
    vet_refuses(
        "  api:\n    resources:\n      Container:\n        image: api\n        envFrom: [{configMapRef: {name: a}, secretRef: {name: b}}]\n        lifecycle: {postStart: {exec: {command: [a]}, sleep: {seconds: 1}}}\n  listed:\n    resources:\n      Container:\n        image: api\n        env: [{value: x}, {name: TWO, value: x, fieldRef: {fieldPath: spec.nodeName}}]\n",
        &[
            "component \"api\", opm.dev/resources/workload@v1#Container: at /envFrom/0: ",
            "component \"api\", opm.dev/resources/workload@v1#Container: at /lifecycle/postStart: ",
            "component \"listed\", opm.dev/resources/workload@v1#Container: at /env/0: \"name\" is a required property",
            "component \"listed\", opm.dev/resources/workload@v1#Container: at /env/1: the value has more than 2 properties",
        ],
    );
    // Found in review: what the API server refuses of envFrom's prefix and names.
    vet_refuses(
        "  api:\n    resources:\n      Container:\n        image: api\n        env: {'A=B': {value: x}}\n        envFrom: [{prefix: 'X=', configMapRef: {name: Bad_Name}}]\n",
        &[
            "at /env: \"A=B\" does not match",
            "at /envFrom/0/prefix: ",
            "at /envFrom/0/configMapRef/name: ",
        ],
    );
    // Probes and hooks only on a native sidecar; restartPolicy only Always, only on init
    // containers.
    vet_refuses(
        "  api:\n    resources:\n      Container: {image: api}\n    traits:\n      InitContainers:\n        - {name: migrate, image: api, livenessProbe: {exec: {command: [x]}}}\n        - {name: hook, image: api, lifecycle: {preStop: {sleep: {seconds: 1}}}}\n        - {name: never, image: api, restartPolicy: Never}\n        - {image: unnamed}\n",
        &[
            "InitContainers: at /0/livenessProbe: this field is not allowed here",
            "InitContainers: at /1/lifecycle: this field is not allowed here",
            "InitContainers: at /2/restartPolicy: \"Always\" was expected",
            "InitContainers: at /3: \"name\" is a required property",
        ],
    );
    for components in [
        "  api:\n    resources: {Container: {image: api, restartPolicy: Always}}\n",
        "  api:\n    resources: {Container: {image: api}}\n    traits: {SidecarContainers: {log: {image: log, restartPolicy: Always}}}\n",
    ] {
        vet_and_build_refuse(
            components,
            "api",
            "workload@v1#DeploymentTransformer",
            "restartPolicy belongs on an init container only, where Always makes it a native sidecar",
        );
    }
}

/// Volumes: file modes, relative paths, one source per entry and per projection, and the API's
/// bounds.
#[test]
fn volume_sources_refuse_at_vet_what_kubernetes_would() {
    vet_refuses(
        "  api:\n    resources:\n      Container: {image: api}\n      Volumes:\n        abs: {configMap: {name: c, items: [{key: k, path: /etc/k}]}}\n        dots: {configMap: {name: c, items: [{key: k, path: ..data}]}}\n        up: {secret: {name: s, items: [{key: k, path: a/../../b}]}}\n        mode: {configMap: {name: c, defaultMode: 512}}\n        two: {projected: {sources: [{configMap: {name: c}, secret: {name: s}}]}}\n        short: {projected: {sources: [{serviceAccountToken: {path: t, expirationSeconds: 60}}]}}\n        nfs: {nfs: {path: /x}}\n        csi: {csi: {driver: 'not a driver'}}\n        eph: {ephemeral: {storageClass: fast}}\n        shared: {persistentClaim: {component: other}}\n",
        &[
            "at /abs/configMap/items/0/path: ",
            "at /dots/configMap/items/0/path: ",
            "at /up/secret/items/0/path: ",
            "at /mode/configMap/defaultMode: the value is greater than the maximum of 511",
            "at /two/projected/sources/0: the value has more than 1 property",
            "at /short/projected/sources/0/serviceAccountToken/expirationSeconds: ",
            "at /nfs/nfs: ",
            "at /csi/csi/driver: ",
            "at /eph/ephemeral: ",
            "at /shared/persistentClaim: \"storage\" is a required property",
        ],
    );
}

/// Pod settings: topology spread, DNS, host aliases and the runtime class.
#[test]
fn pod_settings_refuse_at_vet_what_kubernetes_would() {
    vet_refuses(
        "  api:\n    resources: {Container: {image: api}}\n    traits:\n      PodScheduling:\n        topologySpreadConstraints:\n          - {maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n          - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, minDomains: 2}\n          - {maxSkew: 1, topologyKey: 'not a key', whenUnsatisfiable: DoNotSchedule, matchLabelKeys: ['bad key'], labelSelector: {matchExpressions: [{key: tier, operator: In}]}}\n      PodNetwork:\n        dnsPolicy: None\n        hostAliases: [{ip: not-an-ip, hostnames: [a]}, {ip: 300.1.1.1, hostnames: [Not_A_Host]}]\n      PodRuntime: {runtimeClassName: Bad_Name}\n  dns:\n    resources: {Container: {image: api}}\n    traits:\n      PodNetwork: {dnsConfig: {nameservers: [1.1.1.1, 1.0.0.1, 8.8.8.8, 8.8.4.4]}}\n",
        &[
            "opm.dev/traits/scheduling@v1#PodScheduling: at /topologySpreadConstraints/0/maxSkew: ",
            "opm.dev/traits/scheduling@v1#PodScheduling: at /topologySpreadConstraints/1",
            "opm.dev/traits/network@v1#PodNetwork: ",
            "opm.dev/traits/network@v1#PodNetwork: at /hostAliases/0/ip: ",
            "opm.dev/traits/network@v1#PodNetwork: at /hostAliases/1/ip: ",
            "opm.dev/traits/network@v1#PodNetwork: at /hostAliases/1/hostnames/0: ",
            "opm.dev/traits/scheduling@v1#PodScheduling: at /topologySpreadConstraints/2/topologyKey: ",
            "opm.dev/traits/scheduling@v1#PodScheduling: at /topologySpreadConstraints/2/matchLabelKeys/0: ",
            "opm.dev/traits/scheduling@v1#PodScheduling: at /topologySpreadConstraints/2/labelSelector/matchExpressions/0: ",
            "opm.dev/traits/workload@v1#PodRuntime: at /runtimeClassName: ",
            "component \"dns\", opm.dev/traits/network@v1#PodNetwork: at /dnsConfig/nameservers: ",
        ],
    );
}
