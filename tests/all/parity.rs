//! Parity with upstream Helm charts, measured: for each ported application, the vendored chart
//! under `tests/fixtures/charts/<app>/chart/` rendered by `helm template` with
//! `<app>/helm-values.yaml`, and the port `examples/<app>/` rendered by `opm mod build -o json`
//! with `<app>/opm-values.yaml` (the same settings in the module's parameters), are the same
//! Kubernetes objects, field by field. A second case per application renders the module with
//! its defaults, and the chart with `<app>/helm-defaults.yaml`, the values that make the chart
//! do what the module does by default: the paths a feature left unset takes are compared too.
//!
//! The method:
//!
//! 1. Both renders are parsed into JSON objects, one per Kubernetes object, in one namespace.
//! 2. Each object goes through [`normalise`], the one place that decides what is *not* a
//!    difference: the labels and annotations that only one tool writes for its own bookkeeping,
//!    the rollout checksums (each tool rolls the pods when their configuration changes, under
//!    its own annotation), Secret `stringData` as the API server stores it (`data`, base64),
//!    fields set to the value the API server gives them when they are left out, empty maps and
//!    nulls, and the names of pod volumes (internal to the pod). The app's `renames` give the
//!    objects whose names the tools choose differently one name, references included.
//! 3. The objects are paired by kind and name; every field that differs, and every object that
//!    only one side has, is a [`Difference`] at a JSON path (`spec.ports[http].port`: list
//!    entries that have a `name`, or a `metadata.name`, are matched by it, others by position;
//!    for `env` and `initContainers`, whose order matters, a different order is a difference
//!    too).
//! 4. Every difference must be listed in the app's allow-list, with the reason it is
//!    acceptable: a name, a label, a cosmetic choice — never something a user would notice in the
//!    cluster's behaviour. The test fails on a difference that is not listed, and on a listed
//!    one that no longer occurs, so that the list stays true. An entry marked `pending` is a
//!    difference caused by a field opm has not landed yet, and goes when it lands.
//!
//! Each tool's selectors are checked to select its own pods before the labels they use are
//! normalised away, so that dropping a bookkeeping label never hides a selector that misses; and
//! the module's render with the chart's values is strict-valid Kubernetes, as the examples'
//! default renders are (`tests/all/examples.rs`).
//!
//! `helm` is installed by `eval "$(tests/setup.sh)"`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

use opm_tests::{opm, repo_root, write_file};
use serde_json::{Map, Value};

use crate::examples::{assert_strict_valid, documents};

/// One ported application, rendered with one set of values.
struct App {
    /// `tests/fixtures/charts/<name>/` and `examples/<example>/`.
    name: &'static str,
    example: &'static str,
    /// The chart's values file in `tests/fixtures/charts/<name>/`, and the module's (none: the
    /// module's defaults).
    helm_values: &'static str,
    opm_values: Option<&'static str>,
    /// The Helm release and the module's instance: the module's name.
    release: &'static str,
    namespace: &'static str,
    /// Objects the tools name differently: (kind, the module's name, the chart's name, why).
    renames: &'static [(&'static str, &'static str, &'static str, &'static str)],
    /// Every difference that remains after [`normalise`], with the reason it is acceptable.
    allowed: &'static [Allowed],
}

/// One accepted difference: the object (`Kind/name`, the chart's name), the JSON path of the
/// field (`""` for the whole object, which only one side has), and why it is acceptable.
struct Allowed {
    object: &'static str,
    path: &'static str,
    reason: &'static str,
    /// A difference a field of opm's has not landed for yet: the field (written as
    /// `Allowed { object, path, reason, pending: Some("Ingress.annotations") }`, in a section of
    /// its own). The entry goes when the field lands; none is pending now.
    pending: Option<&'static str>,
}

const fn accepted(object: &'static str, path: &'static str, reason: &'static str) -> Allowed {
    Allowed {
        object,
        path,
        reason,
        pending: None,
    }
}

/// Vaultwarden: guerzon/vaultwarden 0.43.1 against examples/vaultwarden.
const VAULTWARDEN: App = App {
    name: "vaultwarden",
    example: "vaultwarden",
    helm_values: "helm-values.yaml",
    opm_values: Some("opm-values.yaml"),
    release: "vaultwarden",
    namespace: "vaultwarden",
    renames: &[],
    allowed: &[
        // Names and labels.
        accepted(
            "Service/vaultwarden-headless",
            "",
            "opm governs a StatefulSet by a headless Service of its own (stable pod DNS names); \
             the chart names its ordinary Service, which gives the pods no DNS names",
        ),
        accepted(
            "StatefulSet/vaultwarden",
            "spec.serviceName",
            "the governing Service's name: opm's headless one (see Service/vaultwarden-headless)",
        ),
        accepted(
            "StatefulSet/vaultwarden",
            "spec.selector.matchLabels[\"app.kubernetes.io/component\"]",
            "a label: the chart's selector also names the component; both select exactly the \
             component's pods (checked by each_selector_selects_its_own_pods)",
        ),
        accepted(
            "Service/vaultwarden",
            "spec.selector[\"app.kubernetes.io/component\"]",
            "a label: as the StatefulSet's selector",
        ),
        accepted(
            "Service/vaultwarden",
            "spec.ports[http].targetPort",
            "the container port by its name (http) rather than its number (8080): the same port",
        ),
        accepted(
            "Secret/vaultwarden",
            "data.YUBICO_SECRET_KEY",
            "the chart writes empty keys for features the module does not offer (Yubico, Duo, \
             push notifications); nothing reads them",
        ),
        accepted(
            "Secret/vaultwarden",
            "data.DUO_SKEY",
            "as data.YUBICO_SECRET_KEY",
        ),
        accepted(
            "Secret/vaultwarden",
            "data.PUSH_INSTALLATION_ID",
            "as data.YUBICO_SECRET_KEY",
        ),
        accepted(
            "Secret/vaultwarden",
            "data.PUSH_INSTALLATION_KEY",
            "as data.YUBICO_SECRET_KEY",
        ),
        accepted(
            "StatefulSet/vaultwarden",
            "spec.volumeClaimTemplates[vaultwarden-data].metadata.labels[\"app.kubernetes.io/name\"]",
            "a label on the claims: the chart labels its claim templates with the application's \
             name and instance too; opm's own labels cannot be set by a module, and opm labels \
             claim templates with what the module gives (here the component)",
        ),
        accepted(
            "StatefulSet/vaultwarden",
            "spec.volumeClaimTemplates[vaultwarden-data].metadata.labels[\"app.kubernetes.io/instance\"]",
            "a label on the claims: as app.kubernetes.io/name",
        ),
        // Pending fields: none.
    ],
};

/// The differences of every Mattermost case: names and labels.
const MATTERMOST_TESTS: Allowed = accepted(
    "ConfigMap/mattermost-tests",
    "",
    "the script of the chart's `helm test`, which no pod of the release reads",
);
const MATTERMOST_CONFIG_NAME_LABEL: Allowed = accepted(
    "Secret/mattermost-config",
    "metadata.labels[\"app.kubernetes.io/name\"]",
    "a label: opm's name label is the component's (mattermost-config), the chart's the \
     application's",
);
const MATTERMOST_DBSECRET_NAME_LABEL: Allowed = accepted(
    "Secret/mattermost-mattermost-dbsecret",
    "metadata.labels[\"app.kubernetes.io/name\"]",
    "a label: as Secret/mattermost-config's",
);

/// Mattermost Team Edition: mattermost/mattermost-helm's mattermost-team-edition 6.6.96 against
/// examples/mattermost.
const MATTERMOST: App = App {
    name: "mattermost",
    example: "mattermost",
    helm_values: "helm-values.yaml",
    opm_values: Some("opm-values.yaml"),
    release: "mattermost",
    namespace: "mattermost",
    renames: &[
        (
            "PersistentVolumeClaim",
            "mattermost-data",
            "mattermost",
            "opm names a claim after its component and PersistentStorage entry",
        ),
        (
            "Secret",
            "mattermost-dbsecret",
            "mattermost-mattermost-dbsecret",
            "the chart's name repeats the release's; opm names a Secret after its component",
        ),
    ],
    allowed: &[
        // Names and labels.
        MATTERMOST_TESTS,
        MATTERMOST_CONFIG_NAME_LABEL,
        MATTERMOST_DBSECRET_NAME_LABEL,
        accepted(
            "Ingress/mattermost",
            "spec.rules[0].http.paths[0].backend.service.port.name",
            "the Service port by its name (mattermost) rather than its number: the same port",
        ),
        accepted(
            "Ingress/mattermost",
            "spec.rules[0].http.paths[0].backend.service.port.number",
            "as backend.service.port.name: the chart gives the number 8065",
        ),
        // Pending fields: none.
    ],
};

/// Vaultwarden's defaults, against the chart with the values that make it do the same.
const VAULTWARDEN_DEFAULTS: App = App {
    helm_values: "helm-defaults.yaml",
    opm_values: None,
    ..VAULTWARDEN
};

/// Mattermost's defaults, against the chart with the values that make it do the same.
const MATTERMOST_DEFAULTS: App = App {
    helm_values: "helm-defaults.yaml",
    opm_values: None,
    allowed: &[
        // Names and labels.
        MATTERMOST_TESTS,
        MATTERMOST_CONFIG_NAME_LABEL,
        MATTERMOST_DBSECRET_NAME_LABEL,
        // Pending fields: none.
    ],
    ..MATTERMOST
};

#[test]
fn vaultwarden_renders_what_its_chart_renders() {
    assert_parity(&VAULTWARDEN);
}

#[test]
fn vaultwarden_defaults_render_what_its_chart_renders() {
    assert_parity(&VAULTWARDEN_DEFAULTS);
}

#[test]
fn mattermost_renders_what_its_chart_renders() {
    assert_parity(&MATTERMOST);
}

#[test]
fn mattermost_defaults_render_what_its_chart_renders() {
    assert_parity(&MATTERMOST_DEFAULTS);
}

/// A field that differs between the chart's object and the module's.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Difference {
    /// `Kind/name`, the chart's name.
    object: String,
    /// The field's JSON path; `""` when only one side has the object.
    path: String,
    /// What each side has, for the failure message.
    chart: String,
    module: String,
}

fn assert_parity(app: &App) {
    let fixtures = repo_root().join("tests/fixtures/charts").join(app.name);
    let chart = helm_template(app, &fixtures);
    let module = opm_build(app, &fixtures);
    for (tool, objects) in [("helm", &chart), ("opm", &module)] {
        each_selector_selects_its_own_pods(tool, objects);
    }
    // The module's defaults are checked with the other examples; its values here, too.
    if app.opm_values.is_some() {
        let dir = tempfile::tempdir().expect("temp dir");
        let files: Vec<String> = module
            .iter()
            .enumerate()
            .map(|(index, object)| {
                let file = format!("{index:02}.yaml");
                write_file(dir.path(), &file, &object.to_string());
                file
            })
            .collect();
        assert_strict_valid(dir.path(), &files);
    }
    let chart = index(chart.into_iter().map(|o| normalise(o, &[])));
    let module = index(module.into_iter().map(|o| normalise(o, app.renames)));
    let differences = compare(&chart, &module);

    for entry in app.allowed {
        assert!(
            !entry.reason.trim().is_empty() && entry.pending.is_none_or(|f| !f.trim().is_empty()),
            "{}: every allow-list entry says why ({} {})",
            app.name,
            entry.object,
            entry.path
        );
    }
    let mut unexpected = Vec::new();
    let mut used = BTreeSet::new();
    for difference in &differences {
        match app
            .allowed
            .iter()
            .position(|a| a.object == difference.object && a.path == difference.path)
        {
            Some(index) => {
                used.insert(index);
            }
            None => unexpected.push(format!(
                "  {}  {}\n      chart: {}\n      module: {}\n      allow with: accepted({:?}, {:?}, \"…\")",
                difference.object,
                display_path(&difference.path),
                difference.chart,
                difference.module,
                difference.object,
                difference.path,
            )),
        }
    }
    let stale: Vec<String> = app
        .allowed
        .iter()
        .enumerate()
        .filter(|(index, _)| !used.contains(index))
        .map(|(_, a)| {
            let pending = a
                .pending
                .map(|f| format!(" (pending {f})"))
                .unwrap_or_default();
            format!(
                "  {}  {}{pending}: {}",
                a.object,
                display_path(a.path),
                a.reason
            )
        })
        .collect();
    assert!(
        unexpected.is_empty() && stale.is_empty(),
        "{} ({}): the chart's and the module's objects differ.\n\
         Differences not in the allow-list ({}):\n{}\n\
         Allow-list entries that no longer occur ({}), remove them:\n{}",
        app.name,
        app.helm_values,
        unexpected.len(),
        unexpected.join("\n"),
        stale.len(),
        stale.join("\n"),
    );
}

fn display_path(path: &str) -> &str {
    if path.is_empty() {
        "(the whole object: only one side has it)"
    } else {
        path
    }
}

/// `helm template RELEASE CHART -n NAMESPACE -f HELM_VALUES`, one object per document.
fn helm_template(app: &App, fixtures: &std::path::Path) -> Vec<Value> {
    let output = Command::new("helm")
        .arg("template")
        .arg(app.release)
        .arg(fixtures.join("chart"))
        .args(["--namespace", app.namespace, "--skip-tests", "--values"])
        .arg(fixtures.join(app.helm_values))
        .output()
        .unwrap_or_else(|e| panic!("run helm (install it with `eval \"$(tests/setup.sh)\"`): {e}"));
    assert!(
        output.status.success(),
        "helm template {}: {}",
        app.name,
        String::from_utf8_lossy(&output.stderr)
    );
    documents(&String::from_utf8_lossy(&output.stdout))
        .iter()
        .map(|document| {
            serde_saphyr::from_str::<Value>(document)
                .unwrap_or_else(|e| panic!("helm's output parses: {e}\n{document}"))
        })
        .filter(|object| !object.is_null())
        .collect()
}

/// `opm mod build examples/EXAMPLE [-f OPM_VALUES] -n NAMESPACE -o json`, its items.
fn opm_build(app: &App, fixtures: &std::path::Path) -> Vec<Value> {
    let module: PathBuf = repo_root().join("examples").join(app.example);
    let mut args = vec![
        "mod".to_owned(),
        "build".to_owned(),
        module.display().to_string(),
        "-n".to_owned(),
        app.namespace.to_owned(),
        "-o".to_owned(),
        "json".to_owned(),
    ];
    if let Some(values) = app.opm_values {
        args.extend(["-f".to_owned(), fixtures.join(values).display().to_string()]);
    }
    let run = opm(&args);
    assert!(
        run.exited(0),
        "opm mod build {}: {}",
        app.example,
        run.stderr
    );
    let list: Value = serde_json::from_str(&run.stdout).expect("stdout is a JSON List");
    list["items"].as_array().expect("a List has items").clone()
}

/// Objects by `Kind/name`.
fn index(objects: impl Iterator<Item = Value>) -> BTreeMap<String, Value> {
    let mut indexed = BTreeMap::new();
    for object in objects {
        let key = format!(
            "{}/{}",
            object["kind"].as_str().unwrap_or_default(),
            object["metadata"]["name"].as_str().unwrap_or_default()
        );
        assert!(
            indexed.insert(key.clone(), object).is_none(),
            "two objects are {key}"
        );
    }
    indexed
}

/// Every workload's selector matches its own pod template's labels, and every Service's
/// selector the pod template of some workload of the same render.
fn each_selector_selects_its_own_pods(tool: &str, objects: &[Value]) {
    let matches = |selector: &Value, labels: &Value| {
        selector
            .as_object()
            .is_some_and(|s| !s.is_empty() && s.iter().all(|(k, v)| labels.get(k) == Some(v)))
    };
    let templates: Vec<&Value> = objects
        .iter()
        .filter_map(|o| o.pointer("/spec/template/metadata/labels"))
        .collect();
    for object in objects {
        let name = format!("{}/{}", object["kind"], object["metadata"]["name"]);
        if let Some(selector) = object.pointer("/spec/selector/matchLabels") {
            let labels = &object["spec"]["template"]["metadata"]["labels"];
            assert!(
                matches(selector, labels),
                "{tool}: {name}'s selector misses its pods"
            );
        } else if object["kind"] == "Service" {
            let selector = &object["spec"]["selector"];
            assert!(
                templates.iter().any(|labels| matches(selector, labels)),
                "{tool}: {name}'s selector matches no pods of the render"
            );
        }
    }
}

/// Label keys that only one of the tools writes, for its own bookkeeping: Helm's (the chart and
/// its version, the release's manager, the app's version) and opm's (its manager, the module,
/// its version and instance, the component). Dropped from labels and selectors alike.
const BOOKKEEPING_LABELS: &[&str] = &[
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/version",
    "module.opmodel.dev/name",
    "module.opmodel.dev/version",
    "module.opmodel.dev/instance",
    "component.opmodel.dev/name",
];

/// Annotation keys, or prefixes ending in `/`, that are bookkeeping or rollout checksums: Helm's
/// release annotations and each tool's checksum of the configuration the pods read.
const BOOKKEEPING_ANNOTATIONS: &[&str] = &["meta.helm.sh/", "checksum/", "checksum.opm.dev/"];

/// Keys whose empty map means something (an emptyDir volume, a selector of everything), kept
/// when empty maps are dropped.
const MEANINGFUL_WHEN_EMPTY: &[&str] = &["emptyDir", "podSelector", "namespaceSelector"];

/// The method's normalisation of one object (see the module's documentation): what it removes
/// or rewrites is not a difference a cluster would show.
///
/// - `metadata.namespace`: both render into the test's namespace (Helm leaves it out where a
///   template does not write it, and `helm install -n` supplies it).
/// - [`BOOKKEEPING_LABELS`] from every `labels`, `matchLabels` and Service `selector`;
///   [`BOOKKEEPING_ANNOTATIONS`] from every `annotations`.
/// - A Secret's `stringData` becomes `data`, base64, as the API server stores it.
/// - Fields equal to the API server's default for them when absent ([`drop_defaults`]).
/// - `renames`: the module's name of an object becomes the chart's, in its metadata and in
///   every reference to it (secretKeyRef, secretRef, claimName, a backend Service…).
/// - Pod volumes are named after what they mount (`claim:NAME`, `secret:NAME`,
///   `configMap:NAME`; others keep their name), and their mounts follow: a volume's name is
///   internal to its pod.
/// - Nulls, and empty maps and lists but those in [`MEANINGFUL_WHEN_EMPTY`].
fn normalise(mut object: Value, renames: &[(&str, &str, &str, &str)]) -> Value {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("namespace");
    }
    for (kind, from, to, _) in renames {
        rename(&mut object, kind, from, to);
    }
    strip_bookkeeping(&mut object, None);
    if object["kind"] == "Secret" {
        string_data_to_data(&mut object);
    }
    drop_defaults(&mut object);
    name_pod_volumes(&mut object);
    drop_empty(&mut object);
    object
}

fn strip_bookkeeping(value: &mut Value, key: Option<&str>) {
    match value {
        Value::Object(map) => {
            if matches!(key, Some("labels" | "matchLabels" | "selector")) {
                map.retain(|k, _| !BOOKKEEPING_LABELS.contains(&k.as_str()));
            }
            if key == Some("annotations") {
                map.retain(|k, _| {
                    !BOOKKEEPING_ANNOTATIONS
                        .iter()
                        .any(|a| k == a || (a.ends_with('/') && k.starts_with(a)))
                });
            }
            for (k, v) in map.iter_mut() {
                strip_bookkeeping(v, Some(k));
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| strip_bookkeeping(v, key)),
        _ => {}
    }
}

/// The parent keys under which a `name` (or `claimName`, `secretName`) refers to an object of a
/// kind.
fn refers_to(kind: &str, parent: &str, key: &str) -> bool {
    match kind {
        "Secret" => {
            (matches!(parent, "secretKeyRef" | "secretRef") && key == "name")
                || (parent == "secret" && key == "secretName")
        }
        "ConfigMap" => {
            matches!(parent, "configMapKeyRef" | "configMapRef" | "configMap") && key == "name"
        }
        "PersistentVolumeClaim" => parent == "persistentVolumeClaim" && key == "claimName",
        "Service" => (parent == "service" && key == "name") || key == "serviceName",
        _ => false,
    }
}

fn rename(object: &mut Value, kind: &str, from: &str, to: &str) {
    if object["kind"] == kind && object["metadata"]["name"] == from {
        object["metadata"]["name"] = Value::from(to);
    }
    fn walk(value: &mut Value, parent: &str, kind: &str, from: &str, to: &str) {
        match value {
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    if v.as_str() == Some(from) && refers_to(kind, parent, key) {
                        *v = Value::from(to);
                    } else {
                        walk(v, key, kind, from, to);
                    }
                }
            }
            Value::Array(items) => items
                .iter_mut()
                .for_each(|v| walk(v, parent, kind, from, to)),
            _ => {}
        }
    }
    if let Some(spec) = object.get_mut("spec") {
        walk(spec, "spec", kind, from, to);
    }
}

fn string_data_to_data(secret: &mut Value) {
    let Some(map) = secret.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(strings)) = map.remove("stringData") {
        let data = map
            .entry("data")
            .or_insert_with(|| Value::Object(Map::new()));
        for (key, value) in strings {
            let text = value.as_str().unwrap_or_default();
            data[key.as_str()] = Value::from(base64(text.as_bytes()));
        }
    }
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Removes, at `pointer` in `value`, a field equal to `default`.
fn drop_if(value: &mut Value, pointer: &str, default: &Value) {
    let (parent, key) = pointer.rsplit_once('/').expect("a pointer has a /");
    if let Some(Value::Object(map)) = value.pointer_mut(parent)
        && map.get(key) == Some(default)
    {
        map.remove(key);
    }
}

/// Fields the API server defaults when they are left out, removed where they hold that default:
/// Service type, protocols, target ports (the port), session affinity, IP family policy and
/// internal traffic policy;
/// a workload's replicas, history, strategies and claim retention; a pod's restart, DNS and
/// scheduler policies, grace period and service links; a container's pull policy (IfNotPresent
/// unless the tag is `latest` or missing), termination message and probe timings; a claim's
/// volume mode; a Secret's type.
fn drop_defaults(object: &mut Value) {
    let s = |text: &str| Value::from(text);
    let n = |number: i64| Value::from(number);
    match object["kind"].as_str().unwrap_or_default() {
        "Service" => {
            for (pointer, default) in [
                ("/spec/type", s("ClusterIP")),
                ("/spec/sessionAffinity", s("None")),
                ("/spec/ipFamilyPolicy", s("SingleStack")),
                ("/spec/internalTrafficPolicy", s("Cluster")),
            ] {
                drop_if(object, pointer, &default);
            }
            each_item(object, "/spec/ports", |port| {
                drop_if(port, "/protocol", &s("TCP"));
                let number = port["port"].clone();
                drop_if(port, "/targetPort", &number);
            });
        }
        "Secret" => drop_if(object, "/type", &s("Opaque")),
        "PersistentVolumeClaim" => drop_if(object, "/spec/volumeMode", &s("Filesystem")),
        "Deployment" => {
            for (pointer, default) in [
                ("/spec/replicas", n(1)),
                ("/spec/revisionHistoryLimit", n(10)),
                ("/spec/progressDeadlineSeconds", n(600)),
                ("/spec/strategy/rollingUpdate/maxSurge", s("25%")),
                ("/spec/strategy/rollingUpdate/maxUnavailable", s("25%")),
            ] {
                drop_if(object, pointer, &default);
            }
            drop_empty(object);
            drop_if(
                object,
                "/spec/strategy",
                &serde_json::json!({"type": "RollingUpdate"}),
            );
            pod_defaults(object, "/spec/template/spec");
        }
        "StatefulSet" => {
            for (pointer, default) in [
                ("/spec/replicas", n(1)),
                ("/spec/revisionHistoryLimit", n(10)),
                ("/spec/podManagementPolicy", s("OrderedReady")),
                ("/spec/updateStrategy/rollingUpdate/partition", n(0)),
                (
                    "/spec/persistentVolumeClaimRetentionPolicy/whenDeleted",
                    s("Retain"),
                ),
                (
                    "/spec/persistentVolumeClaimRetentionPolicy/whenScaled",
                    s("Retain"),
                ),
            ] {
                drop_if(object, pointer, &default);
            }
            drop_empty(object);
            drop_if(
                object,
                "/spec/updateStrategy",
                &serde_json::json!({"type": "RollingUpdate"}),
            );
            each_item(object, "/spec/volumeClaimTemplates", |claim| {
                drop_if(claim, "/spec/volumeMode", &s("Filesystem"));
            });
            pod_defaults(object, "/spec/template/spec");
        }
        "DaemonSet" | "Job" => pod_defaults(object, "/spec/template/spec"),
        "CronJob" => pod_defaults(object, "/spec/jobTemplate/spec/template/spec"),
        _ => {}
    }
}

fn pod_defaults(object: &mut Value, pod: &str) {
    let s = |text: &str| Value::from(text);
    let n = |number: i64| Value::from(number);
    let Some(spec) = object.pointer_mut(pod) else {
        return;
    };
    for (pointer, default) in [
        ("/dnsPolicy", s("ClusterFirst")),
        ("/schedulerName", s("default-scheduler")),
        ("/terminationGracePeriodSeconds", n(30)),
        ("/enableServiceLinks", Value::Bool(true)),
        ("/hostNetwork", Value::Bool(false)),
    ] {
        drop_if(spec, pointer, &default);
    }
    if object["kind"] != "Job" && object["kind"] != "CronJob" {
        drop_if(
            object.pointer_mut(pod).expect("pod spec"),
            "/restartPolicy",
            &s("Always"),
        );
    }
    let spec = object.pointer_mut(pod).expect("pod spec");
    for list in ["/containers", "/initContainers"] {
        each_item(spec, list, |container| {
            let image = container["image"].as_str().unwrap_or_default().to_owned();
            let tag = image
                .split('@')
                .next()
                .and_then(|name| name.rsplit_once(':'))
                .filter(|(_, tag)| !tag.contains('/'))
                .map(|(_, tag)| tag.to_owned());
            // Kubernetes pulls Always an image with no tag and no digest, or tagged latest.
            let digest = image.contains('@');
            let pull = if (tag.is_none() && !digest) || tag.as_deref() == Some("latest") {
                "Always"
            } else {
                "IfNotPresent"
            };
            drop_if(container, "/imagePullPolicy", &s(pull));
            drop_if(
                container,
                "/terminationMessagePath",
                &s("/dev/termination-log"),
            );
            drop_if(container, "/terminationMessagePolicy", &s("File"));
            each_item(container, "/ports", |port| {
                drop_if(port, "/protocol", &s("TCP"));
            });
            for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
                if let Some(probe) = container.get_mut(probe) {
                    for (pointer, default) in [
                        ("/timeoutSeconds", n(1)),
                        ("/periodSeconds", n(10)),
                        ("/successThreshold", n(1)),
                        ("/failureThreshold", n(3)),
                        ("/initialDelaySeconds", n(0)),
                        ("/httpGet/scheme", s("HTTP")),
                    ] {
                        drop_if(probe, pointer, &default);
                    }
                }
            }
        });
    }
}

fn each_item(value: &mut Value, pointer: &str, mut visit: impl FnMut(&mut Value)) {
    if let Some(Value::Array(items)) = value.pointer_mut(pointer) {
        items.iter_mut().for_each(&mut visit);
    }
}

/// Names each volume of a pod after what it mounts, and its mounts with it.
fn name_pod_volumes(object: &mut Value) {
    let pod = if object["kind"] == "CronJob" {
        "/spec/jobTemplate/spec/template/spec"
    } else {
        "/spec/template/spec"
    };
    let Some(spec) = object.pointer_mut(pod) else {
        return;
    };
    let mut names = BTreeMap::new();
    each_item(spec, "/volumes", |volume| {
        let source = [
            ("persistentVolumeClaim", "claimName", "claim"),
            ("secret", "secretName", "secret"),
            ("configMap", "name", "configMap"),
        ]
        .iter()
        .find_map(|(field, key, prefix)| {
            volume[*field][*key]
                .as_str()
                .map(|name| format!("{prefix}:{name}"))
        });
        if let (Some(source), Some(name)) = (source, volume["name"].as_str()) {
            names.insert(name.to_owned(), source.clone());
            volume["name"] = Value::from(source);
        }
    });
    for list in ["/containers", "/initContainers"] {
        each_item(spec, list, |container| {
            each_item(container, "/volumeMounts", |mount| {
                if let Some(source) = mount["name"].as_str().and_then(|n| names.get(n)) {
                    mount["name"] = Value::from(source.clone());
                }
            });
        });
    }
}

fn drop_empty(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.values_mut().for_each(drop_empty);
            map.retain(|k, v| match v {
                Value::Null => false,
                Value::Object(m) => !m.is_empty() || MEANINGFUL_WHEN_EMPTY.contains(&k.as_str()),
                Value::Array(a) => !a.is_empty(),
                _ => true,
            });
        }
        Value::Array(items) => items.iter_mut().for_each(drop_empty),
        _ => {}
    }
}

/// Every difference between the chart's objects and the module's.
fn compare(chart: &BTreeMap<String, Value>, module: &BTreeMap<String, Value>) -> Vec<Difference> {
    let mut differences = Vec::new();
    let keys: BTreeSet<&String> = chart.keys().chain(module.keys()).collect();
    for key in keys {
        match (chart.get(key), module.get(key)) {
            (Some(a), Some(b)) => diff(key, "", a, b, &mut differences),
            (a, b) => differences.push(Difference {
                object: key.clone(),
                path: String::new(),
                chart: show(a),
                module: show(b),
            }),
        }
    }
    differences
}

fn show(value: Option<&Value>) -> String {
    value.map_or_else(|| "(absent)".to_owned(), Value::to_string)
}

/// `path.key`, or `path["key"]` for a key that is not a plain word.
fn join(path: &str, key: &str) -> String {
    let plain = key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (path.is_empty(), plain) {
        (true, true) => key.to_owned(),
        (false, true) => format!("{path}.{key}"),
        (_, false) => format!("{path}[{key:?}]"),
    }
}

/// Lists whose order is behaviour: variables that refer to earlier ones, init containers that
/// run in turn.
const ORDERED_LISTS: &[&str] = &["env", "initContainers"];

fn diff(object: &str, path: &str, chart: &Value, module: &Value, out: &mut Vec<Difference>) {
    let mut differ = |path: String, a: Option<&Value>, b: Option<&Value>| {
        out.push(Difference {
            object: object.to_owned(),
            path,
            chart: show(a),
            module: show(b),
        });
    };
    match (chart, module) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let here = join(path, key);
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => diff(object, &here, x, y, out),
                    (x, y) => out.push(Difference {
                        object: object.to_owned(),
                        path: here,
                        chart: show(x),
                        module: show(y),
                    }),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            let named = |items: &[Value]| -> Option<Vec<String>> {
                items
                    .iter()
                    .map(|item| {
                        item["name"]
                            .as_str()
                            .or_else(|| item["metadata"]["name"].as_str())
                            .map(str::to_owned)
                    })
                    .collect()
            };
            match (named(a), named(b)) {
                (Some(names_a), Some(names_b)) => {
                    // Two entries of one name are compared by name no more: a difference.
                    for (names, side) in [(&names_a, "chart"), (&names_b, "module")] {
                        let unique: BTreeSet<&String> = names.iter().collect();
                        if unique.len() != names.len() {
                            differ(
                                format!("{path} (a name twice in the {side}'s)"),
                                Some(&Value::from(names_a.clone())),
                                Some(&Value::from(names_b.clone())),
                            );
                        }
                    }
                    let last = path.rsplit(['.', ']']).next().unwrap_or_default();
                    if ORDERED_LISTS.contains(&last) {
                        let common_a: Vec<&String> =
                            names_a.iter().filter(|n| names_b.contains(n)).collect();
                        let common_b: Vec<&String> =
                            names_b.iter().filter(|n| names_a.contains(n)).collect();
                        if common_a != common_b {
                            differ(
                                format!("{path} (order)"),
                                Some(&Value::from(names_a.clone())),
                                Some(&Value::from(names_b.clone())),
                            );
                        }
                    }
                    let all: BTreeSet<&String> = names_a.iter().chain(&names_b).collect();
                    for name in all {
                        let here = format!("{path}[{name}]");
                        let find = |items: &'_ [Value], names: &[String]| {
                            names
                                .iter()
                                .position(|n| n == name)
                                .map(|i| items[i].clone())
                        };
                        match (find(a, &names_a), find(b, &names_b)) {
                            (Some(x), Some(y)) => diff(object, &here, &x, &y, out),
                            (x, y) => out.push(Difference {
                                object: object.to_owned(),
                                path: here,
                                chart: show(x.as_ref()),
                                module: show(y.as_ref()),
                            }),
                        }
                    }
                }
                _ => {
                    for index in 0..a.len().max(b.len()) {
                        let here = format!("{path}[{index}]");
                        match (a.get(index), b.get(index)) {
                            (Some(x), Some(y)) => diff(object, &here, x, y, out),
                            (x, y) => out.push(Difference {
                                object: object.to_owned(),
                                path: here,
                                chart: show(x),
                                module: show(y),
                            }),
                        }
                    }
                }
            }
        }
        (a, b) if a != b => differ(path.to_owned(), Some(a), Some(b)),
        _ => {}
    }
}

#[test]
fn base64_encodes_as_the_api_server_stores_secrets() {
    assert_eq!(base64(b""), "");
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foo"), "Zm9v");
    assert_eq!(base64(b"./client/plugins"), "Li9jbGllbnQvcGx1Z2lucw==");
}
