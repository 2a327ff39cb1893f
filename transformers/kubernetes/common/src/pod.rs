//! The pod template every workload kind shares, and the workload settings several kinds share.
//!
//! [`pod_template`] reads the whole component: the main container (`container`, its probes
//! replaced by `healthCheck`), `sidecarContainers` and `initContainers` (each in the order of
//! the container names the pod shows: a container's own `name`, else its key),
//! pod volumes from `volumes` and `persistentStorage` (mounted at each entry's `mountPath`),
//! `podScheduling`, the pod `securityContext`, the `serviceAccount`, the `restartPolicy`,
//! `imagePullSecrets`, `gracefulShutdown` (the grace period, and the main container's `preStop`
//! hook) and `podMetadata` (labels and annotations added to the template's). It
//! checks what Kubernetes would only refuse at apply time: a mount of a volume that does not
//! exist, two containers with one name, a restart policy the workload kind does not allow.
//!
//! ```
//! use opm_guest::{Component, Context, json};
//! use opm_k8s_common::pod::{WorkloadKind, pod_template};
//!
//! let component = Component::from_value(json!({
//!     "metadata": {"name": "api"},
//!     "spec": {"container": {"image": "nginx:1.27"}, "restartPolicy": {"policy": "Always"}},
//! })).unwrap();
//! let pod = pod_template(&component, &Context::default(), WorkloadKind::Deployment).unwrap();
//! assert_eq!(pod.template["spec"]["containers"][0]["name"], "api");
//! assert!(pod.claim_templates.is_empty());
//! ```

use std::collections::BTreeSet;

use opm_guest::{Component, Context, Map, TransformError, Value, json};
use opm_module_common::container::{init_list_name, main_container, refuse_restart_policy};
use opm_module_common::volumes;

use crate::storage::{self, Storage};
use crate::{container, copy_fields, sorted_entries, template_labels};

/// The Kubernetes workload kinds OPM renders, one per workload type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadKind {
    /// `stateless`.
    Deployment,
    /// `stateful`.
    StatefulSet,
    /// `daemon`.
    DaemonSet,
    /// `job`.
    Job,
    /// `cronjob`.
    CronJob,
}

impl WorkloadKind {
    /// The Kubernetes kind.
    pub fn kind(self) -> &'static str {
        match self {
            Self::Deployment => "Deployment",
            Self::StatefulSet => "StatefulSet",
            Self::DaemonSet => "DaemonSet",
            Self::Job => "Job",
            Self::CronJob => "CronJob",
        }
    }

    /// Whether its pods run to completion (a Job's or a CronJob's) rather than forever.
    pub fn runs_to_completion(self) -> bool {
        matches!(self, Self::Job | Self::CronJob)
    }

    /// The restart policies Kubernetes allows for its pods, the default first.
    pub fn restart_policies(self) -> &'static [&'static str] {
        if self.runs_to_completion() {
            &["OnFailure", "Never"]
        } else {
            &["Always"]
        }
    }
}

/// A rendered pod template, and the volume claim templates a StatefulSet adds next to it.
#[derive(Debug, Clone, PartialEq)]
pub struct PodTemplate {
    /// `{metadata: {labels}, spec}` for the workload's `template`.
    pub template: Value,
    /// `volumeClaimTemplates` entries; empty but for a StatefulSet with persistent storage.
    pub claim_templates: Vec<Value>,
}

/// The pod template of `component` rendered as a `kind`.
pub fn pod_template(
    component: &Component,
    context: &Context,
    kind: WorkloadKind,
) -> Result<PodTemplate, TransformError> {
    let storage = storage::persistent_storage(component)?;
    let claims_are_templates = kind == WorkloadKind::StatefulSet;

    let mounts = storage
        .iter()
        .map(|s| (s.name.as_str(), s.mount_path.as_deref()));
    let main = main_container(component, mounts)?;

    if main.get("ulimits").is_some() {
        let message = "container.ulimits: Kubernetes sets no process limits per container (the \
                       node's apply); leave them out here with $when: ${instance.platform == \
                       'compose'}";
        if context.strict {
            return Err(TransformError::invalid(format!(
                "{message} (an error under --strict)"
            )));
        }
        opm_guest::log::warn(message);
    }
    let shutdown: Option<Value> = component.field("gracefulShutdown")?;
    let mut first = container(&main, component.name())?;
    if let Some(hook) = shutdown.as_ref().and_then(|s| s.get("preStop")) {
        let lifecycle = first
            .as_object_mut()
            .expect("container returns an object")
            .entry("lifecycle")
            .or_insert_with(|| json!({}));
        if lifecycle.get("preStop").is_some() {
            return Err(TransformError::invalid(
                "the container has a lifecycle.preStop hook and gracefulShutdown.preStop gives \
                 another; keep one",
            ));
        }
        lifecycle["preStop"] = hook.clone();
    }
    let mut containers = vec![first];
    containers.extend(named_containers(component, "sidecarContainers")?);
    for container in &containers {
        refuse_restart_policy(container["name"].as_str().unwrap_or_default(), container)?;
    }
    let init_containers = init_containers(component)?;

    let volumes = pod_volumes(component, context, &storage, claims_are_templates)?;
    let mut volume_names: BTreeSet<&str> = volumes
        .iter()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .collect();
    if claims_are_templates {
        volume_names.extend(storage.iter().map(|s| s.name.as_str()));
    }
    check_containers(&containers, &init_containers, &volume_names)?;

    let mut spec = Map::new();
    let (account, automount) = service_account(component, context)?;
    if let Some(account) = account {
        spec.insert("serviceAccountName".into(), Value::from(account));
    }
    if let Some(automount) = automount {
        spec.insert("automountServiceAccountToken".into(), automount);
    }
    if let Some(security) = component.field::<Value>("securityContext")? {
        spec.insert("securityContext".into(), security);
    }
    if let Some(policy) = restart_policy(component, kind)? {
        spec.insert("restartPolicy".into(), Value::from(policy));
    }
    if let Some(grace) = termination_grace_period(shutdown.as_ref())? {
        spec.insert("terminationGracePeriodSeconds".into(), json!(grace));
    }
    if let Some(secrets) = component.field::<Vec<String>>("imagePullSecrets")? {
        let secrets: Vec<Value> = secrets.iter().map(|name| json!({"name": name})).collect();
        spec.insert("imagePullSecrets".into(), Value::Array(secrets));
    }
    if !init_containers.is_empty() {
        spec.insert("initContainers".into(), Value::Array(init_containers));
    }
    spec.insert("containers".into(), Value::Array(containers));
    if !volumes.is_empty() {
        spec.insert("volumes".into(), Value::Array(volumes));
    }
    if let Some(scheduling) = component.field::<Value>("podScheduling")? {
        copy_fields(
            &scheduling,
            &mut spec,
            &[
                "nodeSelector",
                "affinity",
                "tolerations",
                "priorityClassName",
            ],
        );
        if let Some(constraints) = scheduling.get("topologySpreadConstraints") {
            spec.insert(
                "topologySpreadConstraints".into(),
                spread_constraints(component, context, constraints)?,
            );
        }
    }
    if let Some(network) = component.field::<Value>("podNetwork")? {
        copy_fields(
            &network,
            &mut spec,
            &[
                "hostNetwork",
                "dnsPolicy",
                "dnsConfig",
                "hostAliases",
                "enableServiceLinks",
            ],
        );
    }
    if let Some(runtime) = component.field::<Value>("podRuntime")? {
        copy_fields(
            &runtime,
            &mut spec,
            &["runtimeClassName", "shareProcessNamespace"],
        );
    }

    let claim_templates = if claims_are_templates {
        storage
            .iter()
            .map(Storage::claim_template)
            .collect::<Result<_, _>>()?
    } else {
        Vec::new()
    };
    let mut metadata = pod_metadata(component, context)?;
    // A Job's pod template cannot change once created: a new checksum would make it
    // impossible to apply. Its pods read the configuration when they start anyway.
    let reference = (kind != WorkloadKind::Job)
        .then(|| config_checksum_reference(&spec))
        .flatten();
    if let Some(reference) = reference {
        let annotations = metadata
            .as_object_mut()
            .expect("pod_metadata returns an object")
            .entry("annotations")
            .or_insert_with(|| json!({}));
        annotations[CONFIG_CHECKSUM_ANNOTATION] = Value::String(reference);
    }
    Ok(PodTemplate {
        template: json!({"metadata": metadata, "spec": spec}),
        claim_templates,
    })
}

/// The pod template annotation whose value changes with the content of the ConfigMaps and
/// Secrets the pods read, so that changing them rolls the pods.
pub const CONFIG_CHECKSUM_ANNOTATION: &str = "checksum.opm.dev/config";

/// A checksum reference (`opm:checksum ConfigMap/a Secret/b`, which the host replaces by a
/// checksum of the content of those objects if this render produces them) to every ConfigMap
/// and Secret the pod mounts or reads an environment variable from; none if it reads none.
fn config_checksum_reference(spec: &Map<String, Value>) -> Option<String> {
    let mut references = BTreeSet::new();
    let mut refer = |items: Option<&Value>, pointers: [(&str, &str); 2]| {
        for item in items.and_then(Value::as_array).into_iter().flatten() {
            for (pointer, kind) in pointers {
                if let Some(name) = item.pointer(pointer).and_then(Value::as_str) {
                    references.insert(format!("{kind}/{name}"));
                }
            }
        }
    };
    refer(
        spec.get("volumes"),
        [
            ("/configMap/name", "ConfigMap"),
            ("/secret/secretName", "Secret"),
        ],
    );
    for volume in spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        refer(
            volume.pointer("/projected/sources"),
            [("/configMap/name", "ConfigMap"), ("/secret/name", "Secret")],
        );
    }
    let containers = ["initContainers", "containers"]
        .into_iter()
        .filter_map(|field| spec.get(field).and_then(Value::as_array))
        .flatten();
    for container in containers {
        refer(
            container.get("env"),
            [
                ("/valueFrom/configMapKeyRef/name", "ConfigMap"),
                ("/valueFrom/secretKeyRef/name", "Secret"),
            ],
        );
        refer(
            container.get("envFrom"),
            [
                ("/configMapRef/name", "ConfigMap"),
                ("/secretRef/name", "Secret"),
            ],
        );
    }
    if references.is_empty() {
        return None;
    }
    let references: Vec<String> = references.into_iter().collect();
    Some(format!("opm:checksum {}", references.join(" ")))
}

/// The template's `metadata`: opm's labels over the PodMetadata trait's, and its annotations.
/// (The trait's schema refuses the keys of opm's own labels, so none is silently dropped.)
fn pod_metadata(component: &Component, context: &Context) -> Result<Value, TransformError> {
    let own = template_labels(component, context);
    let Some(extra) = component.field::<Value>("podMetadata")? else {
        return Ok(json!({"labels": own}));
    };
    let mut labels = extra
        .get("labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.extend(own.as_object().cloned().unwrap_or_default());
    labels.sort_keys();
    let mut metadata = json!({"labels": labels});
    if let Some(annotations) = extra
        .get("annotations")
        .filter(|a| a.as_object().is_some_and(|a| !a.is_empty()))
    {
        metadata["annotations"] = annotations.clone();
    }
    Ok(metadata)
}

/// `terminationGracePeriodSeconds` from the GracefulShutdown trait, checked against its
/// `preStop.sleep`, which Kubernetes wants no longer than the grace period (30 s by default).
fn termination_grace_period(shutdown: Option<&Value>) -> Result<Option<u64>, TransformError> {
    let Some(shutdown) = shutdown else {
        return Ok(None);
    };
    let grace = shutdown
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_u64);
    let sleep = shutdown
        .pointer("/preStop/sleep/seconds")
        .and_then(Value::as_u64);
    if let Some(sleep) = sleep {
        let limit = grace.unwrap_or(DEFAULT_GRACE_PERIOD);
        if sleep > limit {
            return Err(TransformError::invalid(format!(
                "gracefulShutdown.preStop.sleep.seconds ({sleep}) is longer than the grace \
                 period ({limit} s{}): the pod would be killed while it sleeps; raise \
                 terminationGracePeriodSeconds",
                if grace.is_none() { ", the default" } else { "" }
            )));
        }
    }
    Ok(grace)
}

/// Kubernetes' grace period when a pod names none.
pub const DEFAULT_GRACE_PERIOD: u64 = 30;

/// `replicas` for a Deployment or StatefulSet: the Replicas trait or its default, and none at all
/// when the Autoscaling trait is attached, so the workload does not fight the autoscaler.
pub fn replicas(component: &Component) -> Result<Option<u64>, TransformError> {
    if component.spec().contains_key("autoscaling") {
        return Ok(None);
    }
    component.field_or_default("replicas")
}

/// The UpdateStrategy trait as `kind` spells it (`strategy` of a Deployment, `updateStrategy` of
/// a StatefulSet or DaemonSet), checked against what that kind supports.
pub fn update_strategy(
    component: &Component,
    kind: WorkloadKind,
) -> Result<Option<Value>, TransformError> {
    let Some(strategy) = component.field_or_default::<Value>("updateStrategy")? else {
        return Ok(None);
    };
    let (types, rolling): (&[&str], &[&str]) = match kind {
        WorkloadKind::Deployment => (
            &["RollingUpdate", "Recreate"],
            &["maxSurge", "maxUnavailable"],
        ),
        WorkloadKind::StatefulSet => (
            &["RollingUpdate", "OnDelete"],
            &["maxUnavailable", "partition"],
        ),
        WorkloadKind::DaemonSet => (
            &["RollingUpdate", "OnDelete"],
            &["maxSurge", "maxUnavailable"],
        ),
        WorkloadKind::Job | WorkloadKind::CronJob => return Ok(None),
    };
    let update_type = strategy
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("RollingUpdate");
    if !types.contains(&update_type) {
        return Err(TransformError::invalid(format!(
            "updateStrategy.type {update_type:?} is not supported by a {}; use one of {}",
            kind.kind(),
            types.join(", ")
        )));
    }
    let mut out = Map::new();
    out.insert("type".into(), Value::from(update_type));
    if let Some(settings) = strategy.get("rollingUpdate").and_then(Value::as_object) {
        if update_type != "RollingUpdate" && !settings.is_empty() {
            return Err(TransformError::invalid(format!(
                "updateStrategy.rollingUpdate is set but updateStrategy.type is {update_type:?}"
            )));
        }
        if let Some(field) = settings.keys().find(|key| !rolling.contains(&key.as_str())) {
            return Err(TransformError::invalid(format!(
                "updateStrategy.rollingUpdate.{field} is not supported by a {}; use {}",
                kind.kind(),
                rolling.join(" or ")
            )));
        }
        if !settings.is_empty() {
            let mut rolling_update = Map::new();
            copy_fields(
                &Value::Object(settings.clone()),
                &mut rolling_update,
                rolling,
            );
            out.insert("rollingUpdate".into(), Value::Object(rolling_update));
        }
    }
    Ok(Some(Value::Object(out)))
}

/// The service account the pods run as and whether its token is mounted: the ServiceAccount
/// trait's `name` (default: the component's name, when the trait creates the account). An
/// account the trait creates is named for the instance ([`Context::object_name`]); one it only
/// uses (`create: false`) keeps the name written.
pub fn service_account(
    component: &Component,
    context: &Context,
) -> Result<(Option<String>, Option<Value>), TransformError> {
    let Some(account) = component.field::<Value>("serviceAccount")? else {
        return Ok((None, None));
    };
    let create = account
        .get("create")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let name = match account.get("name").and_then(Value::as_str) {
        Some(name) if create => Some(context.object_name(name)),
        Some(name) => Some(name.to_owned()),
        None if create => Some(context.object_name(component.name())),
        None => None,
    };
    Ok((name, account.get("automountToken").cloned()))
}

/// The pod's restart policy: the RestartPolicy trait, checked against what `kind` allows, or
/// the kind's default where Kubernetes requires one (OnFailure for jobs).
fn restart_policy(
    component: &Component,
    kind: WorkloadKind,
) -> Result<Option<&'static str>, TransformError> {
    let allowed = kind.restart_policies();
    let policy: Option<Value> = component.field_or_default("restartPolicy")?;
    match policy
        .as_ref()
        .and_then(|p| p.get("policy"))
        .and_then(Value::as_str)
    {
        Some(policy) => allowed
            .iter()
            .find(|allowed| **allowed == policy)
            .map(|allowed| Some(*allowed))
            .ok_or_else(|| {
                TransformError::invalid(format!(
                    "restartPolicy.policy {policy:?} is not allowed for a {}; use {}",
                    kind.kind(),
                    allowed.join(" or ")
                ))
            }),
        None if kind.runs_to_completion() => Ok(Some(allowed[0])),
        None => Ok(None),
    }
}

/// The containers of the trait `field` (`sidecarContainers` or `initContainers`), each named by
/// its own `name` or else its key, in the order of those names: the order the pod runs them in
/// is the order of the names it shows.
fn named_containers(component: &Component, field: &str) -> Result<Vec<Value>, TransformError> {
    let declared: Option<Value> = component.field(field)?;
    let mut containers = sorted_entries(declared.as_ref())
        .into_iter()
        .map(|(key, spec)| container(spec, key))
        .collect::<Result<Vec<_>, _>>()?;
    containers.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    Ok(containers)
}

/// The InitContainers trait's containers in the order they run: a list as written, a map in the
/// order of the container names ([`named_containers`]).
fn init_containers(component: &Component) -> Result<Vec<Value>, TransformError> {
    match component.field::<Value>("initContainers")? {
        Some(Value::Array(list)) => list
            .iter()
            .map(|spec| container(spec, init_list_name(spec)?))
            .collect(),
        _ => named_containers(component, "initContainers"),
    }
}

/// The PodScheduling trait's `topologySpreadConstraints`, each spreading the component's own
/// pods (its selector labels) unless it gives a `labelSelector`.
fn spread_constraints(
    component: &Component,
    context: &Context,
    constraints: &Value,
) -> Result<Value, TransformError> {
    let constraints = constraints.as_array().ok_or_else(|| {
        TransformError::invalid("podScheduling.topologySpreadConstraints must be a list")
    })?;
    let own = json!({"matchLabels": crate::selector_labels(component, context)});
    let spread = constraints
        .iter()
        .map(|constraint| {
            let mut out = constraint.as_object().cloned().unwrap_or_default();
            out.entry("labelSelector").or_insert_with(|| own.clone());
            Value::Object(out)
        })
        .collect();
    Ok(Value::Array(spread))
}

/// The pod's volumes, in name order: the Volumes resource, plus a claim volume per storage entry
/// unless the claims are a StatefulSet's templates.
fn pod_volumes(
    component: &Component,
    context: &Context,
    storage: &[Storage],
    claims_are_templates: bool,
) -> Result<Vec<Value>, TransformError> {
    let declared: Option<Value> = component.field("volumes")?;
    let mut volumes: Vec<(String, Value)> = Vec::new();
    for (name, source) in sorted_entries(declared.as_ref()) {
        volumes.push((name.clone(), volume(name, source, context)?));
    }
    for entry in storage {
        if volumes.iter().any(|(name, _)| *name == entry.name) {
            return Err(TransformError::invalid(format!(
                "volume {:?} is declared both in volumes and in persistentStorage",
                entry.name
            )));
        }
        if !claims_are_templates {
            let claim = storage::claim_name(component, context, entry);
            volumes.push((
                entry.name.clone(),
                json!({"name": entry.name, "persistentVolumeClaim": {"claimName": claim}}),
            ));
        }
    }
    volumes.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(volumes.into_iter().map(|(_, volume)| volume).collect())
}

/// One entry of the Volumes resource as a Kubernetes volume.
fn volume(name: &str, source: &Value, context: &Context) -> Result<Value, TransformError> {
    let mut out = Map::new();
    out.insert("name".into(), Value::from(name));
    let (key, value) = volumes::source(name, source)?;
    let (kind, spec) = match (key.as_str(), value) {
        ("emptyDir", spec) => ("emptyDir", spec.clone()),
        ("configMap", Value::String(map)) => ("configMap", json!({"name": map})),
        ("configMap", Value::Object(map)) => ("configMap", Value::Object(map.clone())),
        ("secret", Value::String(secret)) => ("secret", json!({"secretName": secret})),
        ("secret", Value::Object(secret)) => {
            // One shape for both: `name`, as a configMap volume spells it.
            let mut out = Map::new();
            for (key, value) in secret {
                let key = if key == "name" { "secretName" } else { key };
                out.insert(key.to_owned(), value.clone());
            }
            ("secret", Value::Object(out))
        }
        ("persistentClaim", Value::String(claim)) => {
            ("persistentVolumeClaim", json!({"claimName": claim}))
        }
        ("persistentClaim", Value::Object(shared)) => {
            // The claim another component's PersistentStorage renders, by the name
            // `storage::claim_name` gives it.
            let mut claim = json!({"claimName": volumes::shared_claim(name, shared, context)?});
            if let Some(read_only) = shared.get("readOnly") {
                claim["readOnly"] = read_only.clone();
            }
            ("persistentVolumeClaim", claim)
        }
        ("hostPath", spec) => {
            if !spec["path"]
                .as_str()
                .is_some_and(|path| path.starts_with('/'))
            {
                return Err(TransformError::invalid(format!(
                    "volumes.{name}.hostPath.path: a relative path is a compose bind mount in the \
                     output directory; a Kubernetes hostPath is absolute"
                )));
            }
            ("hostPath", spec.clone())
        }
        ("projected", spec) => ("projected", spec.clone()),
        ("nfs", spec) => ("nfs", spec.clone()),
        ("csi", spec) => ("csi", spec.clone()),
        ("ephemeral", spec) => ("ephemeral", ephemeral_claim(spec)),
        (other, _) => {
            return Err(TransformError::invalid(format!(
                "volumes.{name}.{other} is not a volume source this provider knows"
            )));
        }
    };
    out.insert(kind.into(), spec);
    Ok(Value::Object(out))
}

/// A generic ephemeral volume: `{size, storageClass, accessModes}` as the claim template that
/// Kubernetes creates with the pod and deletes with it.
fn ephemeral_claim(spec: &Value) -> Value {
    let mut claim = Map::new();
    claim.insert(
        "accessModes".into(),
        spec.get("accessModes")
            .cloned()
            .unwrap_or_else(|| json!([storage::DEFAULT_ACCESS_MODE])),
    );
    if let Some(class) = spec.get("storageClass") {
        claim.insert("storageClassName".into(), class.clone());
    }
    claim.insert(
        "resources".into(),
        json!({"requests": {"storage": spec.get("size").cloned().unwrap_or(Value::Null)}}),
    );
    json!({"volumeClaimTemplate": {"spec": claim}})
}

/// Container names are unique across the pod, and every mount names a pod volume.
fn check_containers(
    containers: &[Value],
    init_containers: &[Value],
    volumes: &BTreeSet<&str>,
) -> Result<(), TransformError> {
    let mut names = BTreeSet::new();
    for container in containers.iter().chain(init_containers) {
        let name = container["name"].as_str().unwrap_or_default();
        if !names.insert(name) {
            return Err(TransformError::invalid(format!(
                "two containers of the pod are named {name:?}"
            )));
        }
        let mounts = container.get("volumeMounts").and_then(Value::as_array);
        for mount in mounts.into_iter().flatten() {
            let volume = mount["name"].as_str().unwrap_or_default();
            if !volumes.contains(volume) {
                return Err(TransformError::invalid(format!(
                    "container {name:?} mounts volume {volume:?}, which is neither in volumes \
                     nor in persistentStorage"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
