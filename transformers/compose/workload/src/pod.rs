//! A component's pod as compose services: the main container is the service named after the
//! component, each sidecar a service `<service>-<sidecar>` in the main one's network
//! (`network_mode: service:<service>`), each init container a one-shot service
//! `<service>-init-<name>` that the main one waits for (`service_completed_successfully`), in
//! the order Kubernetes runs them. The pod's volumes are shared by name
//! ([`crate::volumes`]), and what is the pod's — its security context, network, runtime,
//! labels and grace period — goes to each of its services.

use std::collections::{BTreeMap, BTreeSet};

use opm_compose_common::{SERVICE, WORKLOAD_TYPE_LABEL, resource, sorted_entries};
use opm_guest::{Component, Context, Map, TransformError, Value, json};
use opm_module_common::container::{init_list_name, main_container, refuse_restart_policy};
use opm_module_common::notes::{caveat, unhonoured};
use opm_module_common::workload::{Restart, restart};

use crate::container::{self, Role};
use crate::host;
use opm_module_common::volumes::Storage;

use crate::volumes::PodVolumes;

/// The annotation prefix by which a component waits for another one: the annotation
/// `depends-on.opm.dev/<component>` with the value `started`, `healthy` (its readiness check
/// passes) or `completed` (a job that exited 0).
pub const DEPENDS_ON_PREFIX: &str = "depends-on.opm.dev/";

/// The workload types this provider runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// `stateless`: a service with `deploy.replicas`.
    Stateless,
    /// `stateful`: a service with `deploy.replicas` and its named volumes.
    Stateful,
    /// `daemon`: a service with `deploy.mode: global`, one copy on the one Docker engine.
    Daemon,
    /// `job`: a one-shot service.
    Job,
}

impl Workload {
    /// The workload type of `component`, from its `core.opm.dev/workload-type` label.
    pub fn of(component: &Component) -> Result<Self, TransformError> {
        match component.label(WORKLOAD_TYPE_LABEL).unwrap_or("stateless") {
            "stateless" => Ok(Self::Stateless),
            "stateful" => Ok(Self::Stateful),
            "daemon" => Ok(Self::Daemon),
            "job" => Ok(Self::Job),
            "cronjob" => Err(TransformError::invalid(
                "a cronjob workload cannot run on docker compose, which has no schedule",
            )),
            other => Err(TransformError::invalid(format!(
                "workload type {other:?} is not one of stateless, stateful, daemon, job"
            ))),
        }
    }
}

/// What every container of the pod shares.
#[derive(Debug)]
pub struct Pod<'a> {
    /// The component.
    pub component: &'a Component,
    /// The render's context.
    pub context: &'a Context,
    /// Its workload type.
    pub workload: Workload,
    /// The main service's name: the component's, for the instance.
    pub service: String,
    /// How many copies of the main service run.
    pub copies: u64,
    /// The pod's volumes.
    pub volumes: PodVolumes,
    /// Every container's spec by its name, for `resourceFieldRef`.
    pub containers: BTreeMap<String, Value>,
    /// The SecurityContext trait.
    pub security: Option<Value>,
    /// The PodNetwork trait.
    pub network: Option<Value>,
    /// Whether the pod uses the host's network.
    pub host_network: bool,
    /// Whether the component asks for host access ([`host::HOST_ACCESS_LABEL`]).
    pub host_access: bool,
    /// The services every container of the pod waits for (the annotations
    /// [`DEPENDS_ON_PREFIX`]), by service name, with their condition.
    pub depends_on: BTreeMap<String, &'static str>,
    /// The labels of the pod's containers (PodMetadata's).
    pub labels: Map<String, Value>,
    /// The annotations of the pod's containers (the component's and PodMetadata's).
    pub annotations: Map<String, Value>,
    /// The GracefulShutdown trait.
    pub shutdown: Option<Value>,
}

impl Pod<'_> {
    /// The compose restart policy of the pod's long-running containers, or for a job of its
    /// main container; `init` asks for an init container's.
    pub fn restart(&self, init: bool) -> Result<String, TransformError> {
        let restart = restart(
            self.component,
            self.workload == Workload::Job,
            &format!("a {} workload", self.workload_name()),
        )?;
        Ok(match restart {
            // Kubernetes retries a failed init container until it succeeds.
            Restart::Always => if init { "on-failure" } else { "unless-stopped" }.to_owned(),
            Restart::Never => "no".to_owned(),
            Restart::OnFailure(retries) => format!("on-failure:{retries}"),
        })
    }

    fn workload_name(&self) -> &'static str {
        match self.workload {
            Workload::Stateless => "stateless",
            Workload::Stateful => "stateful",
            Workload::Daemon => "daemon",
            Workload::Job => "job",
        }
    }
}

/// The services and volumes of `component`.
pub fn render(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
    let workload = Workload::of(component)?;
    let service = context.object_name(component.name());
    let storage = Storage::of(component, context)?;

    let mounts = storage
        .iter()
        .map(|s| (s.name.as_str(), s.mount_path.as_deref()));
    let main = main_container(component, mounts)?;
    let main_name = main
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or(component.name())
        .to_owned();
    let sidecars = named_containers(component, "sidecarContainers")?;
    let inits = init_containers(component)?;
    for (name, spec) in
        std::iter::once((&main_name, &main)).chain(sidecars.iter().map(|(n, s)| (n, s)))
    {
        refuse_restart_policy(name, spec)?;
    }

    let mut containers = BTreeMap::new();
    for (name, spec) in std::iter::once((&main_name, &main))
        .chain(sidecars.iter().map(|(n, s)| (n, s)))
        .chain(inits.iter().map(|(n, s)| (n, s)))
    {
        if containers.insert(name.clone(), spec.clone()).is_some() {
            return Err(TransformError::invalid(format!(
                "two containers of the pod are named {name:?}"
            )));
        }
    }
    let copies = copies(component, context, workload)?;
    let volumes = PodVolumes::new(component, context, &service, &storage, &containers, copies)?;
    let network: Option<Value> = component.field("podNetwork")?;
    let host_network = network
        .as_ref()
        .and_then(|n| n.get("hostNetwork"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let host_access = host::allowed(component);
    if host_network {
        host::require(
            host_access,
            "podNetwork.hostNetwork",
            "the host's network stack, every service the host listens on included",
        )?;
    }
    let (labels, annotations) = pod_metadata(component)?;
    let pod = Pod {
        component,
        context,
        workload,
        service: service.clone(),
        copies,
        depends_on: annotated_dependencies(component, context)?,
        volumes,
        containers,
        security: component.field("securityContext")?,
        network,
        host_network,
        host_access,
        labels,
        annotations,
        shutdown: component.field("gracefulShutdown")?,
    };
    stateful_notes(&pod)?;

    let mut services = Vec::new();
    let mut init_names = Vec::new();
    for (name, spec) in &inits {
        let native = spec.get("restartPolicy").and_then(Value::as_str) == Some("Always");
        let path = format!("initContainers.{name}");
        if native {
            caveat(&format!(
                "{path} is a native sidecar: it runs as the service {service}-{name} in the \
                 main service's network, started after the main container rather than before it"
            ));
            let body = container::service(&pod, spec, Role::Sidecar, &path)?;
            services.push((format!("{service}-{name}"), body));
            continue;
        }
        let previous = init_names.last().cloned();
        let body = container::service(&pod, spec, Role::Init { previous }, &path)?;
        let init = format!("{service}-init-{name}");
        init_names.push(init.clone());
        services.push((init, body));
    }
    let body = container::service(&pod, &main, Role::Main { inits: init_names }, "container")?;
    services.insert(0, (service.clone(), body));
    for (name, spec) in &sidecars {
        let body = container::service(
            &pod,
            spec,
            Role::Sidecar,
            &format!("sidecarContainers.{name}"),
        )?;
        services.push((format!("{service}-{name}"), body));
    }
    sidecar_notes(&pod, &sidecars, &inits)?;

    let mut out: Vec<Value> = services
        .into_iter()
        .map(|(name, body)| resource(SERVICE, &name, context, Value::Object(body)))
        .collect();
    out.extend(pod.volumes.resources(context));
    opm_guest::log::debug(&format!(
        "{} {service}: {} services, {copies} copies",
        pod.workload_name(),
        out.len()
    ));
    Ok(out)
}

/// How many copies of the main service run: a daemon's one (one Docker engine), a job's
/// parallelism, else Autoscaling's minimum or the Replicas trait (default 1).
fn copies(
    component: &Component,
    context: &Context,
    workload: Workload,
) -> Result<u64, TransformError> {
    match workload {
        Workload::Daemon => Ok(1),
        Workload::Job => job_copies(component, context),
        Workload::Stateless | Workload::Stateful => {
            if let Some(scaling) = component.field::<Value>("autoscaling")? {
                return Ok(scaling
                    .get("minReplicas")
                    .and_then(Value::as_u64)
                    .unwrap_or(1));
            }
            Ok(component.field_or_default::<u64>("replicas")?.unwrap_or(1))
        }
    }
}

/// A job runs `parallelism` copies at once, each once; compose cannot run more completions
/// than copies, nor stop a job at a deadline.
fn job_copies(component: &Component, context: &Context) -> Result<u64, TransformError> {
    let Some(config) = component.field::<Value>("jobConfig")? else {
        return Ok(1);
    };
    let number = |field: &str| config.get(field).and_then(Value::as_u64);
    let parallelism = number("parallelism").unwrap_or(1);
    if let Some(completions) = number("completions")
        && completions != parallelism
    {
        unhonoured(
            context,
            &format!(
                "jobConfig.completions {completions} with parallelism {parallelism}: a one-shot \
                 compose service runs {parallelism} copies once each, so the job completes \
                 {parallelism} times, not {completions}"
            ),
        )?;
    }
    if let Some(deadline) = number("activeDeadlineSeconds") {
        unhonoured(
            context,
            &format!(
                "jobConfig.activeDeadlineSeconds {deadline}: compose does not stop a one-shot \
                 service at a deadline"
            ),
        )?;
    }
    if let Some(ttl) = number("ttlSecondsAfterFinished") {
        unhonoured(
            context,
            &format!(
                "jobConfig.ttlSecondsAfterFinished {ttl}: compose keeps the exited container \
                 until `docker compose down`"
            ),
        )?;
    }
    Ok(parallelism.max(1))
}

/// The services the component waits for: its annotations `depends-on.opm.dev/<component>`.
fn annotated_dependencies(
    component: &Component,
    context: &Context,
) -> Result<BTreeMap<String, &'static str>, TransformError> {
    let mut out = BTreeMap::new();
    for (key, value) in component.annotations() {
        let Some(other) = key.strip_prefix(DEPENDS_ON_PREFIX) else {
            continue;
        };
        let condition = match value.as_str() {
            "started" => "service_started",
            "healthy" => "service_healthy",
            "completed" => "service_completed_successfully",
            other => {
                return Err(TransformError::invalid(format!(
                    "annotation {key}: {other:?} is not a condition; use started, healthy \
                     (its readiness check passes) or completed (a job that exited 0)"
                )));
            }
        };
        if other == component.name() {
            return Err(TransformError::invalid(format!(
                "annotation {key}: a component cannot wait for itself"
            )));
        }
        out.insert(context.object_name(other), condition);
    }
    Ok(out)
}

/// Labels or annotations, by key.
type Metadata = Map<String, Value>;

/// The labels (PodMetadata's) and annotations (the component's, then PodMetadata's) of the
/// pod's containers, in key order.
fn pod_metadata(component: &Component) -> Result<(Metadata, Metadata), TransformError> {
    let metadata: Option<Value> = component.field("podMetadata")?;
    let mut annotations: Map<String, Value> = component
        .annotations()
        .iter()
        .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
        .collect();
    for (key, value) in sorted_entries(metadata.as_ref().and_then(|m| m.get("annotations"))) {
        annotations.insert(key.clone(), json!(value.as_str().unwrap_or_default()));
    }
    annotations.sort_keys();
    let labels = sorted_entries(metadata.as_ref().and_then(|m| m.get("labels")))
        .into_iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok((labels, annotations))
}

/// What a stateful workload with several copies loses on compose.
fn stateful_notes(pod: &Pod) -> Result<(), TransformError> {
    if pod.workload == Workload::Stateful && pod.copies > 1 {
        unhonoured(
            pod.context,
            &format!(
                "a stateful workload with {} replicas: compose gives the copies neither stable \
                 names nor a volume each; they share the component's named volumes",
                pod.copies
            ),
        )?;
    }
    Ok(())
}

/// What sidecars lose when the main service runs several copies.
fn sidecar_notes(
    pod: &Pod,
    sidecars: &[(String, Value)],
    inits: &[(String, Value)],
) -> Result<(), TransformError> {
    let natives = inits
        .iter()
        .filter(|(_, spec)| spec.get("restartPolicy").is_some())
        .count();
    if pod.copies > 1 && (!sidecars.is_empty() || natives > 0) {
        unhonoured(
            pod.context,
            &format!(
                "{} copies of a component with sidecars: each sidecar runs once, in the network \
                 of the first copy",
                pod.copies
            ),
        )?;
    }
    Ok(())
}

/// The containers of the trait `field` by name (each one's own `name`, else its key), in the
/// order of those names.
fn named_containers(
    component: &Component,
    field: &str,
) -> Result<Vec<(String, Value)>, TransformError> {
    let declared: Option<Value> = component.field(field)?;
    let mut containers: Vec<(String, Value)> = sorted_entries(declared.as_ref())
        .into_iter()
        .map(|(key, spec)| {
            let name = spec.get("name").and_then(Value::as_str).unwrap_or(key);
            (name.to_owned(), spec.clone())
        })
        .collect();
    containers.sort_by(|a, b| a.0.cmp(&b.0));
    let mut seen = BTreeSet::new();
    for (name, _) in &containers {
        if !seen.insert(name) {
            return Err(TransformError::invalid(format!(
                "two containers of {field} are named {name:?}"
            )));
        }
    }
    Ok(containers)
}

/// The init containers in the order they run: a list as written, a map in name order.
fn init_containers(component: &Component) -> Result<Vec<(String, Value)>, TransformError> {
    match component.field::<Value>("initContainers")? {
        Some(Value::Array(list)) => list
            .iter()
            .map(|spec| Ok((init_list_name(spec)?.to_owned(), spec.clone())))
            .collect(),
        _ => named_containers(component, "initContainers"),
    }
}
