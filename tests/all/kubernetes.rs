//! The default Kubernetes provider's promises beyond valid output: what `opm mod vet` refuses,
//! `opm mod build` refuses with the same words, and the other way round, before any transformer
//! runs; and the footguns it removes.

use opm_tests::{opm, write_file};
use serde_json::Value;

/// A module named `shop` in namespace `shop` whose `components:` section is `components`.
pub(crate) fn module(components: &str) -> String {
    format!(
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {{name: shop, version: 1.0.0, namespace: shop}}\ncomponents:\n{components}"
    )
}

/// Runs `opm mod vet` and `opm mod build` on `components` and checks that both refuse it with
/// an error naming `component`, `transformer` and saying `message`.
pub(crate) fn vet_and_build_refuse(
    components: &str,
    component: &str,
    transformer: &str,
    message: &str,
) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "module.yaml", &module(components));
    let expected = format!(
        "component {component:?}: transformer transformer.opm.dev/{transformer} refuses it: {message}"
    );
    for command in ["vet", "build"] {
        let run = opm(["mod", command, &path]);
        let output = format!("{}{}", run.stdout, run.stderr);
        assert!(
            run.exited(1),
            "opm mod {command} should refuse {component:?}:\n{output}"
        );
        assert!(
            output.contains(&expected),
            "opm mod {command}: {expected:?} missing from:\n{output}"
        );
    }
}

pub(crate) fn build_json(components: &str) -> Vec<Value> {
    build_json_with(components, &[])
}

/// The objects `opm mod build -o json` renders of `components`, with `args` added.
pub(crate) fn build_json_with(components: &str, args: &[&str]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "module.yaml", &module(components));
    let mut command = vec!["mod", "build", &path, "-o", "json"];
    command.extend(args);
    let run = opm(command);
    assert!(run.exited(0), "{}", run.stderr);
    let list: Value = serde_json::from_str(&run.stdout).unwrap();
    list["items"].as_array().unwrap().clone()
}

fn kind<'a>(resources: &'a [Value], kind: &str) -> &'a Value {
    resources
        .iter()
        .find(|r| r["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {resources:#?}"))
}

/// An Ingress without Expose is refused by vet, not only by the transformer.
#[test]
fn an_ingress_without_expose_is_refused_by_vet_and_build_alike() {
    vet_and_build_refuse(
        "  web:\n    resources: {Container: {image: nginx}}\n    traits: {Ingress: {host: shop.example.com}}\n",
        "web",
        "network@v1#IngressTransformer",
        "the Ingress routes to the Service that Expose renders; attach the Expose trait too",
    );
}

/// Autoscaling on a daemon, job or cronjob is refused by vet, not only by the autoscaler.
#[test]
fn autoscaling_a_daemon_job_or_cronjob_is_refused_by_vet_and_build_alike() {
    for (workload, extra) in [
        ("daemon", ""),
        ("job", ""),
        ("cronjob", ", Schedule: {cron: '@daily'}"),
    ] {
        vet_and_build_refuse(
            &format!(
                "  agent:\n    metadata: {{labels: {{core.opm.dev/workload-type: {workload}}}}}\n    resources: {{Container: {{image: agent}}}}\n    traits: {{Autoscaling: {{maxReplicas: 3}}{extra}}}\n"
            ),
            "agent",
            "scaling@v1#HorizontalPodAutoscalerTransformer",
            "Autoscaling scales Deployments and StatefulSets, so it needs a stateless or stateful workload",
        );
    }
}

/// One ReadWriteOnce claim mounted by three replicas, or by a daemon on every node, is refused:
/// it would render and then never start on a second node.
#[test]
fn a_single_node_claim_shared_by_several_pods_is_refused() {
    let refusal = "its PersistentStorage is one claim shared by every replica";
    for traits in [
        "Replicas: 3",
        "Autoscaling: {maxReplicas: 4}",
        "Replicas: 2, PersistentStorage: {data: {size: 1Gi, accessModes: [ReadWriteOncePod], mountPath: /d}}",
    ] {
        let storage = if traits.contains("PersistentStorage") {
            ""
        } else {
            ", PersistentStorage: {data: {size: 1Gi, mountPath: /data}}"
        };
        vet_and_build_refuse(
            &format!(
                "  api:\n    resources: {{Container: {{image: api}}}}\n    traits: {{{traits}{storage}}}\n"
            ),
            "api",
            "workload@v1#DeploymentTransformer",
            refusal,
        );
    }
    vet_and_build_refuse(
        "  agent:\n    metadata: {labels: {core.opm.dev/workload-type: daemon}}\n    resources: {Container: {image: agent}}\n    traits: {PersistentStorage: {cache: {size: 1Gi, mountPath: /cache}}}\n",
        "agent",
        "workload@v1#DaemonSetTransformer",
        "a DaemonSet runs a pod on every node",
    );
    vet_and_build_refuse(
        "  api:\n    resources: {Container: {image: api}}\n    traits: {UpdateStrategy: {type: RollingUpdate}, PersistentStorage: {data: {size: 1Gi, mountPath: /data}}}\n",
        "api",
        "workload@v1#DeploymentTransformer",
        "a rolling update starts the new pod before it stops the old one",
    );
}

/// What does render: one replica is replaced with Recreate, and storage every node can mount may be
/// shared by any number of replicas.
#[test]
fn storage_that_works_renders() {
    let single = build_json(
        "  api:\n    resources: {Container: {image: api}}\n    traits: {PersistentStorage: {data: {size: 1Gi, mountPath: /data}}}\n",
    );
    assert_eq!(
        kind(&single, "Deployment")["spec"]["strategy"],
        serde_json::json!({"type": "Recreate"})
    );
    let shared = build_json(
        "  api:\n    resources: {Container: {image: api}}\n    traits: {Replicas: 3, PersistentStorage: {data: {size: 1Gi, accessModes: [ReadWriteMany], mountPath: /data}}}\n  agent:\n    metadata: {labels: {core.opm.dev/workload-type: daemon}}\n    resources: {Container: {image: agent}}\n    traits: {PersistentStorage: {assets: {size: 1Gi, accessModes: [ReadOnlyMany], mountPath: /assets}}}\n",
    );
    let deployment = kind(&shared, "Deployment");
    assert_eq!(deployment["spec"]["replicas"], 3);
    assert!(deployment["spec"].get("strategy").is_none());
    kind(&shared, "DaemonSet");
}

/// Runs `opm mod vet` on `components` and checks that it refuses them saying each of
/// `expected`.
pub(crate) fn vet_refuses(components: &str, expected: &[&str]) {
    refuses("vet", components, expected, &[]);
}

/// Runs `opm mod COMMAND` on `components` and checks that it refuses them saying each of
/// `expected`, and never any of `hidden`.
pub(crate) fn refuses(command: &str, components: &str, expected: &[&str], hidden: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "module.yaml", &module(components));
    let run = opm(["mod", command, &path]);
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(run.exited(1), "{said}");
    for expected in expected {
        assert!(
            said.contains(expected),
            "{expected:?} missing from:\n{said}"
        );
    }
    for hidden in hidden {
        assert!(!said.contains(hidden), "{hidden:?} printed in:\n{said}");
    }
}

/// Pull secrets, graceful shutdown and pod metadata refuse at vet what Kubernetes would refuse, and
/// what would silently break the workload (overriding its selector labels).
#[test]
fn pod_traits_refuse_at_vet_what_kubernetes_would() {
    vet_refuses(
        "  api:\n    resources: {Container: {image: api}}\n    traits:\n      ImagePullSecrets: [Registry_Creds]\n      GracefulShutdown: {preStop: {sleep: {seconds: 1}, exec: {command: [x]}}}\n      PodMetadata: {labels: {app.kubernetes.io/name: other, tier: 'not a value'}, annotations: {'bad key': x}}\n",
        &[
            "opm.dev/traits/workload@v1#ImagePullSecrets: at /0: the value does not match",
            "opm.dev/traits/workload@v1#GracefulShutdown: at /preStop: ",
            "opm.dev/traits/workload@v1#PodMetadata: at /labels: ",
            "opm.dev/traits/workload@v1#PodMetadata: at /labels/tier: the value does not match",
            "opm.dev/traits/workload@v1#PodMetadata: at /annotations: ",
        ],
    );
}

/// Any object, written whole, renders as written plus labels and namespace; what the API server
/// would refuse, and a Secret (whose values only the Secret resource keeps out of logs), is refused
/// at vet.
#[test]
fn any_object_renders_as_written_and_bad_ones_are_refused_at_vet() {
    let resources = build_json(
        "  issuer:\n    resources:\n      Object:\n        apiVersion: cert-manager.io/v1\n        kind: ClusterIssuer\n        metadata: {name: letsencrypt, namespace: ''}\n        spec: {acme: {server: 'https://acme.example/directory'}}\n  quota:\n    resources:\n      Object: {apiVersion: v1, kind: ResourceQuota, metadata: {name: q}, spec: {hard: {pods: '10'}}}\n",
    );
    let issuer = kind(&resources, "ClusterIssuer");
    assert!(issuer["metadata"].get("namespace").is_none(), "{issuer}");
    assert_eq!(
        issuer["spec"]["acme"]["server"],
        "https://acme.example/directory"
    );
    assert_eq!(
        issuer["metadata"]["labels"]["component.opmodel.dev/name"],
        "issuer"
    );
    assert_eq!(
        kind(&resources, "ResourceQuota")["metadata"]["namespace"],
        "shop"
    );
    vet_refuses(
        "  bad:\n    resources: {Object: {apiVersion: v1, kind: Secret, metadata: {name: s}}}\n  nameless:\n    resources: {Object: {apiVersion: 'Not A Version', kind: thing, metadata: {}}}\n",
        &[
            "component \"bad\", opm.dev/resources/kubernetes@v1#Object: at /kind: ",
            "component \"nameless\", opm.dev/resources/kubernetes@v1#Object: at /apiVersion: the value does not match",
            "component \"nameless\", opm.dev/resources/kubernetes@v1#Object: at /kind: the value does not match",
            "component \"nameless\", opm.dev/resources/kubernetes@v1#Object: at /metadata: \"name\" is a required property",
        ],
    );
}

/// A Role binds the component's own service account, and what the API server refuses in a rule is
/// refused at vet.
#[test]
fn roles_bind_the_component_account_and_bad_rules_are_refused_at_vet() {
    vet_and_build_refuse(
        "  api:\n    resources:\n      Container: {image: api}\n      Role: {rules: [{apiGroups: [''], resources: [pods], verbs: [get]}]}\n",
        "api",
        "security@v1#RoleTransformer",
        "a Role is bound to the component's own service account",
    );
    vet_refuses(
        "  api:\n    resources:\n      Container: {image: api}\n      Role:\n        rules:\n          - {nonResourceURLs: [/metrics], verbs: [get]}\n          - {resources: [pods], verbs: [get]}\n          - {apiGroups: [''], resources: [pods], verbs: []}\n    traits: {ServiceAccount: {}}\n",
        &[
            "opm.dev/resources/security@v1#Role: at /rules/0: ",
            "opm.dev/resources/security@v1#Role: at /rules/1: the value fits none of the allowed forms",
            "opm.dev/resources/security@v1#Role: at /rules/2/verbs: ",
        ],
    );
}

/// An HttpRoute needs the Service that Expose renders, like an Ingress, and its schema refuses what
/// the Gateway API's would.
#[test]
fn http_routes_need_expose_and_a_valid_shape() {
    vet_and_build_refuse(
        "  web:\n    resources: {Container: {image: nginx, ports: {http: {containerPort: 80}}}}\n    traits: {HttpRoute: {gateways: {public: {}}}}\n",
        "web",
        "network@v1#HttpRouteTransformer",
        "the HTTPRoute sends traffic to the Service that Expose renders; attach the Expose trait too",
    );
    vet_refuses(
        "  web:\n    resources: {Container: {image: nginx}}\n    traits:\n      Expose: {}\n      HttpRoute:\n        gateways: {}\n        hostnames: [Not_A_Host]\n        rules: {api: {matches: [{path: {type: RegularExpression, value: api}}]}}\n",
        &[
            "opm.dev/traits/network@v1#HttpRoute: at /gateways: ",
            "opm.dev/traits/network@v1#HttpRoute: at /hostnames/0: the value does not match",
            "opm.dev/traits/network@v1#HttpRoute: at /rules/api/matches/0/path/type: ",
            "opm.dev/traits/network@v1#HttpRoute: at /rules/api/matches/0/path/value: the value does not match",
        ],
    );
}

/// A workload that reads a ConfigMap or Secret of its module carries a checksum of their content on
/// its pod template: changing the config rolls the pods, a new module version does not, and the
/// Secret's value cannot be read from the checksum.
#[test]
fn config_changes_roll_the_pods_through_a_checksum_annotation() {
    let components = |setting: &str, password: &str| {
        format!(
            "  api:\n    resources:\n      Container:\n        image: api\n        env:\n          MODE: {{configMapKeyRef: {{name: settings, key: mode}}}}\n          PASSWORD: {{secretKeyRef: {{name: creds, key: password}}}}\n  settings:\n    resources: {{ConfigMap: {{data: {{mode: {setting}}}}}}}\n  creds:\n    resources: {{Secret: {{stringData: {{password: {password}}}}}}}\n"
        )
    };
    let checksum = |resources: &[Value]| {
        kind(resources, "Deployment")["spec"]["template"]["metadata"]["annotations"]
            ["checksum.opm.dev/config"]
            .as_str()
            .unwrap_or_else(|| panic!("no checksum in {resources:#?}"))
            .to_owned()
    };
    let first = build_json(&components("fast", "hunter2"));
    let sum = checksum(&first);
    assert_eq!(sum.len(), 64, "{sum}");
    assert_eq!(checksum(&build_json(&components("fast", "hunter2"))), sum);
    assert_ne!(checksum(&build_json(&components("slow", "hunter2"))), sum);
    assert_ne!(checksum(&build_json(&components("fast", "hunter3"))), sum);
    let text = serde_json::to_string(kind(&first, "Deployment")).unwrap();
    assert!(!text.contains("hunter2"), "{text}");

    // A new module version changes labels, not content: the pods stay.
    let dir = tempfile::tempdir().unwrap();
    let newer = module(&components("fast", "hunter2")).replace("version: 1.0.0", "version: 1.0.1");
    let path = write_file(dir.path(), "module.yaml", &newer);
    let run = opm(["mod", "build", &path, "-o", "json"]);
    assert!(run.exited(0), "{}", run.stderr);
    let list: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(checksum(list["items"].as_array().unwrap()), sum);

    // Config this module does not render is nobody's to checksum.
    let external = build_json(
        "  api:\n    resources:\n      Container: {image: api, env: {MODE: {configMapKeyRef: {name: elsewhere, key: mode}}}}\n",
    );
    let template = &kind(&external, "Deployment")["spec"]["template"]["metadata"];
    assert!(template.get("annotations").is_none(), "{template}");
}

/// What the workload transformers refuse about restart policies, update strategies and network
/// policy ports, vet refuses too.
#[test]
fn restart_policies_update_strategies_and_policy_ports_are_refused_by_vet_and_build_alike() {
    vet_and_build_refuse(
        "  api:\n    resources: {Container: {image: api}}\n    traits: {RestartPolicy: {policy: Never}}\n",
        "api",
        "workload@v1#DeploymentTransformer",
        "restartPolicy.policy is not allowed for a Deployment; use Always",
    );
    vet_and_build_refuse(
        "  db:\n    metadata: {labels: {core.opm.dev/workload-type: stateful}}\n    resources: {Container: {image: db}}\n    traits: {UpdateStrategy: {type: Recreate}}\n",
        "db",
        "workload@v1#StatefulSetTransformer",
        "updateStrategy is not supported by a StatefulSet; use type RollingUpdate or OnDelete",
    );
    vet_and_build_refuse(
        "  api:\n    resources: {Container: {image: api}}\n    traits: {UpdateStrategy: {type: Recreate, rollingUpdate: {maxSurge: 1}}}\n",
        "api",
        "workload@v1#DeploymentTransformer",
        "updateStrategy is not supported by a Deployment",
    );
    vet_and_build_refuse(
        "  task:\n    metadata: {labels: {core.opm.dev/workload-type: job}}\n    resources: {Container: {image: task}}\n    traits: {RestartPolicy: {policy: Always}}\n",
        "task",
        "workload@v1#JobTransformer",
        "restartPolicy.policy is not allowed for a Job; use OnFailure or Never",
    );
    vet_and_build_refuse(
        "  api:\n    resources: {Container: {image: api, ports: {http: {containerPort: 80}}}}\n    policies: {NetworkPolicy: {ports: [http]}}\n",
        "api",
        "network@v1#NetworkPolicyTransformer",
        "networkPolicy.ports is set but networkPolicy.allowFrom is empty",
    );
}
