//! A workload component as Quadlet units: the main container is `NAME.container` (`NAME` the
//! component's name, for the instance), and a component with sidecars or init containers is a
//! pod — `NAME.pod`, Podman's pod `NAME-pod` (pods and containers share one namespace), which
//! joins the module network as `NAME` and publishes the ports, with the main container `NAME`,
//! each sidecar `NAME-<sidecar>` and each init container `NAME-init-<name>` in it
//! (`Pod=NAME.pod`).
//!
//! | workload type | units |
//! |---|---|
//! | `stateless`, `stateful`, `daemon` | a container that runs until stopped: `[Service] Restart=always`, `[Install] WantedBy=default.target` |
//! | `job` | a oneshot service (`Type=oneshot`): `Restart=on-failure` (RestartPolicy OnFailure, the default) or `no`; JobConfig's `activeDeadlineSeconds` as `TimeoutStartSec=` (a oneshot service's run is its start) |
//! | `cronjob` | the same oneshot container, started by `NAME.timer` with `OnCalendar=` the schedule ([`crate::cron`]); its retries counted in a window shorter than the schedule's shortest gap, not a day, as systemd counts the timer's starts too |
//!
//! Init containers run in order before the others: each is a oneshot service
//! (`RemainAfterExit=yes`) that the next one, and every long-running container, needs
//! (`Requires=`, `After=`); one with `restartPolicy: Always` (a native sidecar) is a sidecar
//! started in its turn. A component waits for another with the annotation
//! `depends-on.opm.dev/<component>` (`started`, `healthy` or `completed`): `Wants=` or
//! `Requires=`, and `After=`, on that component's service.

use std::collections::BTreeMap;

use opm_guest::{Component, Context, TransformError, Value};
use opm_module_common::container::{init_list_name, main_container, refuse_restart_policy};
use opm_module_common::host::{self, HOST_ACCESS_LABEL};
use opm_module_common::notes::unhonoured;
use opm_module_common::workload::{Restart, restart};
use opm_quadlet_common::unit::Unit;
use opm_quadlet_common::{
    CONTAINER, POD, TIMER, escape, network_name, quote, resource, sorted_entries,
};

use crate::container::{self, Role};
use crate::volumes::PodVolumes;

/// The annotation prefix by which a component waits for another one.
pub const DEPENDS_ON_PREFIX: &str = "depends-on.opm.dev/";

/// The workload types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Runs until stopped.
    Stateless,
    /// Runs until stopped, with its PersistentStorage.
    Stateful,
    /// Runs until stopped, one copy on the host.
    Daemon,
    /// Runs once, to completion.
    Job,
    /// Runs to completion on a schedule.
    CronJob,
}

impl Kind {
    /// The kind a `core.opm.dev/workload-type` label names (none: `stateless`).
    pub fn of_label(label: Option<&str>) -> Result<Self, TransformError> {
        Ok(match label.unwrap_or("stateless") {
            "stateless" => Self::Stateless,
            "stateful" => Self::Stateful,
            "daemon" => Self::Daemon,
            "job" => Self::Job,
            "cronjob" => Self::CronJob,
            other => {
                return Err(TransformError::invalid(format!(
                    "workload type {other:?} is not one of stateless, stateful, daemon, job, cronjob"
                )));
            }
        })
    }

    /// Whether it runs to completion.
    pub fn completes(self) -> bool {
        matches!(self, Self::Job | Self::CronJob)
    }
}

/// What every container of the component shares.
#[derive(Debug)]
pub struct Pod<'a> {
    /// The component.
    pub component: &'a Component,
    /// The render's context.
    pub context: &'a Context,
    /// Its workload type.
    pub kind: Kind,
    /// The main container's unit name: the component's, for the instance.
    pub name: String,
    /// Whether the containers run in a `.pod` (sidecars or init containers).
    pub in_pod: bool,
    /// Whether the component asks for host access ([`HOST_ACCESS_LABEL`]).
    pub host_access: bool,
    /// The pod's volumes.
    pub volumes: PodVolumes,
    /// Every container's spec by name, for `resourceFieldRef`.
    pub containers: BTreeMap<String, Value>,
    /// The SecurityContext trait.
    pub security: Option<Value>,
    /// The PodNetwork trait.
    pub network: Option<Value>,
    /// The GracefulShutdown trait.
    pub shutdown: Option<Value>,
    /// `Label=` values: the module's and opm's labels, then PodMetadata's.
    pub labels: Vec<String>,
    /// `Annotation=` values: the component's and PodMetadata's annotations.
    pub annotations: Vec<String>,
}

impl Pod<'_> {
    /// Whether the pod uses the host's network.
    pub fn host_network(&self) -> bool {
        self.network
            .as_ref()
            .and_then(|n| n.get("hostNetwork"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// Nothing when the component asks for host access; otherwise the invalid-component error
    /// for `field`, which would give the container `grants`.
    pub fn require_host_access(&self, field: &str, grants: &str) -> Result<(), TransformError> {
        if self.host_access {
            return Ok(());
        }
        Err(TransformError::invalid(format!(
            "{field} would give the container {grants}; a Quadlet unit gets it on the machine \
             that runs it, with no Pod Security admission in between, so host access is refused \
             unless the component asks for it: label the component {HOST_ACCESS_LABEL}: \"true\" \
             (in its metadata.labels) if it needs it"
        )))
    }

    /// The `[Service] Restart=` of the main container (and sidecars), and for a job the
    /// failures it retries (`StartLimitBurst=`).
    pub fn restart(&self) -> Result<(String, Option<u64>), TransformError> {
        let restart = restart(
            self.component,
            self.kind.completes(),
            "a workload that runs until stopped",
        )?;
        Ok(match restart {
            Restart::Always => ("always".to_owned(), None),
            Restart::Never => ("no".to_owned(), None),
            Restart::OnFailure(retries) => ("on-failure".to_owned(), Some(retries)),
        })
    }

    /// The `Description=` of the unit of container `name`.
    pub fn description(&self, what: &str) -> String {
        let module = if self.context.module.is_empty() {
            self.context
                .labels
                .get("module.opmodel.dev/name")
                .map_or(self.context.name.as_str(), String::as_str)
        } else {
            self.context.module.as_str()
        };
        escape(&format!(
            "{what} of component {} of module {module} ({})",
            self.component.name(),
            self.context.name
        ))
    }
}

/// The units of the workload `component` of `kind`.
pub fn render(
    component: &Component,
    context: &Context,
    kind: Kind,
) -> Result<Vec<Value>, TransformError> {
    let name = context.object_name(component.name());
    let storage = opm_module_common::volumes::Storage::of(component, context)?;
    let mounts = storage
        .iter()
        .map(|s| (s.name.as_str(), s.mount_path.as_deref()));
    let main = main_container(component, mounts)?;
    refuse_restart_policy("container", &main)?;
    let sidecars = named(component, "sidecarContainers")?;
    for (sidecar, spec) in &sidecars {
        refuse_restart_policy(sidecar, spec)?;
    }
    let inits = init_containers(component)?;

    let main_name = main
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or(component.name())
        .to_owned();
    let mut containers = BTreeMap::new();
    for (container, spec) in std::iter::once((&main_name, &main))
        .chain(sidecars.iter().map(|(n, s)| (n, s)))
        .chain(inits.iter().map(|(n, s)| (n, s)))
    {
        if containers.insert(container.clone(), spec.clone()).is_some() {
            return Err(TransformError::invalid(format!(
                "two containers of the pod are named {container:?}"
            )));
        }
    }
    if let Some(clash) = sidecars
        .iter()
        .map(|(sidecar, _)| sidecar)
        .chain(inits.iter().filter_map(|(init, spec)| {
            (spec.get("restartPolicy").and_then(Value::as_str) == Some("Always")).then_some(init)
        }))
        .find(|sidecar| sidecar.as_str() == "pod")
    {
        return Err(TransformError::invalid(format!(
            "the sidecar {clash:?} would be the container {name}-pod, the name of the pod \
             itself (and of its service, {name}-pod.service): rename the sidecar"
        )));
    }
    let volumes = PodVolumes::new(component, context, &name, storage, &containers)?;
    let (labels, annotations) = metadata(component, context)?;
    let pod = Pod {
        component,
        context,
        kind,
        name: name.clone(),
        in_pod: !sidecars.is_empty() || !inits.is_empty(),
        host_access: host::allowed(component),
        volumes,
        containers,
        security: component.field("securityContext")?,
        network: component.field("podNetwork")?,
        shutdown: component.field("gracefulShutdown")?,
        labels,
        annotations,
    };
    if pod.host_network() {
        pod.require_host_access(
            "podNetwork.hostNetwork",
            "the host's network stack, every service the host listens on included",
        )?;
    }
    copies(&pod)?;

    let mut units: Vec<(String, Unit)> = Vec::new();
    let mut init_units: Vec<String> = Vec::new();
    let mut native: Vec<String> = Vec::new();
    for (init, spec) in &inits {
        let path = format!("initContainers.{init}");
        let always = spec.get("restartPolicy").and_then(Value::as_str) == Some("Always");
        let unit_name = if always {
            format!("{name}-{init}")
        } else {
            format!("{name}-init-{init}")
        };
        let role = if always {
            Role::Sidecar {
                after: init_units.clone(),
            }
        } else {
            Role::Init {
                after: init_units.clone(),
            }
        };
        let unit = container::unit(&pod, spec, &unit_name, role, &path)?;
        if always {
            native.push(unit_name.clone());
        } else {
            init_units.push(unit_name.clone());
        }
        units.push((unit_name, unit));
    }
    let mut after = init_units.clone();
    after.extend(native);
    let main_unit = container::unit(
        &pod,
        &main,
        &name,
        Role::Main {
            after: after.clone(),
        },
        "container",
    )?;
    units.insert(0, (name.clone(), main_unit));
    for (sidecar, spec) in &sidecars {
        let unit_name = format!("{name}-{sidecar}");
        let path = format!("sidecarContainers.{sidecar}");
        let unit = container::unit(
            &pod,
            spec,
            &unit_name,
            Role::Sidecar {
                after: after.clone(),
            },
            &path,
        )?;
        units.push((unit_name, unit));
    }

    let mut out = Vec::new();
    if pod.in_pod {
        out.push(resource(
            POD,
            &name,
            context,
            pod_unit(&pod, &main)?.into_value(),
        ));
    }
    for (unit_name, unit) in units {
        out.push(resource(CONTAINER, &unit_name, context, unit.into_value()));
    }
    if kind == Kind::CronJob {
        out.push(resource(TIMER, &name, context, timer(&pod)?.into_value()));
    }
    out.extend(pod.volumes.resources(context));
    Ok(out)
}

/// The `.pod` of a component with sidecars or init containers: its network, the ports it
/// publishes, its DNS; the containers join it.
fn pod_unit(pod: &Pod, main: &Value) -> Result<Unit, TransformError> {
    let mut unit = Unit::default();
    unit.set("Unit", "Description", pod.description("the pod"));
    unit.set("Pod", "PodName", pod_name(&pod.name));
    container::network(pod, &mut unit, "Pod")?;
    crate::container::publish(pod, main, &mut unit, "Pod")?;
    let share_pid = pod
        .component
        .field::<Value>("podRuntime")?
        .and_then(|r| r.get("shareProcessNamespace").and_then(Value::as_bool))
        .unwrap_or(false);
    if share_pid {
        unit.add("Pod", "PodmanArgs", "--share=+pid");
    }
    if pod.kind != Kind::CronJob {
        unit.set("Install", "WantedBy", "default.target");
    }
    Ok(unit)
}

/// The Podman name of the pod whose main container is `name`: `NAME-pod`, as Podman keeps pods
/// and containers in one namespace and refuses a pod of its main container's name ("name is in
/// use"). Its network alias stays `NAME`, by which the module reaches the component.
pub fn pod_name(name: &str) -> String {
    format!("{name}-pod")
}

/// The `.timer` of a cronjob: its schedule, time zone, and whether it is enabled.
fn timer(pod: &Pod) -> Result<Unit, TransformError> {
    let schedule: Value = pod.component.require("schedule")?;
    let cron = schedule
        .get("cron")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let zone = schedule.get("timeZone").and_then(Value::as_str);
    let events = crate::cron::calendar(cron, zone).map_err(|e| {
        TransformError::invalid(format!(
            "schedule.cron cannot be a systemd calendar event: {e}"
        ))
    })?;
    let mut unit = Unit::default();
    unit.set("Unit", "Description", pod.description("the schedule"));
    for event in events {
        unit.add("Timer", "OnCalendar", escape(&event));
    }
    match schedule.get("concurrencyPolicy").and_then(Value::as_str) {
        Some("Replace") => unhonoured(
            pod.context,
            "schedule.concurrencyPolicy Replace: a timer never starts its service while it \
             runs, so a run still going when the next is due is kept and the next skipped (as \
             Forbid)",
        )?,
        Some("Allow") => unhonoured(
            pod.context,
            "schedule.concurrencyPolicy Allow: a timer never starts its service while it runs, \
             so runs never overlap (as Forbid)",
        )?,
        _ => {}
    }
    if schedule.get("startingDeadlineSeconds").is_some() {
        unhonoured(
            pod.context,
            "schedule.startingDeadlineSeconds: a timer has no deadline for a missed run",
        )?;
    }
    if schedule.get("suspend").and_then(Value::as_bool) == Some(true) {
        opm_guest::log::info(
            "schedule.suspend: the timer is written without [Install], so it is not started",
        );
    } else {
        unit.set("Install", "WantedBy", "timers.target");
    }
    Ok(unit)
}

/// How many copies run: one, as a unit starts one container; more is a warning.
fn copies(pod: &Pod) -> Result<(), TransformError> {
    let replicas: Option<u64> = pod.component.field("replicas")?;
    if let Some(replicas) = replicas.filter(|r| *r > 1 && !pod.kind.completes()) {
        unhonoured(
            pod.context,
            &format!(
                "replicas {replicas}: a Quadlet unit runs one container, so one copy runs \
                 (copy the units as a template, NAME@.container, to run several)"
            ),
        )?;
    }
    if pod.kind.completes() {
        let config: Option<Value> = pod.component.field("jobConfig")?;
        for field in ["parallelism", "completions"] {
            if let Some(n) = config
                .as_ref()
                .and_then(|c| c.get(field))
                .and_then(Value::as_u64)
                .filter(|n| *n > 1)
            {
                unhonoured(
                    pod.context,
                    &format!("jobConfig.{field} {n}: the service runs one container, once"),
                )?;
            }
        }
    }
    Ok(())
}

/// The `Label=` and `Annotation=` values of the pod's containers.
fn metadata(
    component: &Component,
    context: &Context,
) -> Result<(Vec<String>, Vec<String>), TransformError> {
    let mut labels: BTreeMap<String, String> = context.labels.clone().into_iter().collect();
    let mut annotations: BTreeMap<String, String> = component
        .annotations()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(meta) = component.field::<Value>("podMetadata")? {
        for (key, value) in sorted_entries(meta.get("labels")) {
            labels.insert(key.clone(), value.as_str().unwrap_or_default().to_owned());
        }
        for (key, value) in sorted_entries(meta.get("annotations")) {
            annotations.insert(key.clone(), value.as_str().unwrap_or_default().to_owned());
        }
    }
    let pairs = |map: BTreeMap<String, String>| {
        map.into_iter()
            .map(|(k, v)| quote(&format!("{k}={v}")))
            .collect()
    };
    Ok((pairs(labels), pairs(annotations)))
}

/// The containers of a map trait (`sidecarContainers`), in name order.
fn named(component: &Component, field: &str) -> Result<Vec<(String, Value)>, TransformError> {
    let value: Option<Value> = component.field(field)?;
    Ok(sorted_entries(value.as_ref())
        .into_iter()
        .map(|(name, spec)| (name.clone(), spec.clone()))
        .collect())
}

/// The init containers, in the order they run: a list as written, a map in name order.
fn init_containers(component: &Component) -> Result<Vec<(String, Value)>, TransformError> {
    let value: Option<Value> = component.field("initContainers")?;
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .map(|spec| Ok((init_list_name(spec)?.to_owned(), spec.clone())))
            .collect(),
        other => Ok(sorted_entries(other.as_ref())
            .into_iter()
            .map(|(name, spec)| (name.clone(), spec.clone()))
            .collect()),
    }
}

/// The services the component waits for, by the annotations [`DEPENDS_ON_PREFIX`]: each
/// other component's service name with whether it must succeed (`completed`).
pub fn dependencies(pod: &Pod) -> Result<Vec<(String, bool)>, TransformError> {
    let mut out = Vec::new();
    for (key, value) in pod.component.annotations() {
        let Some(other) = key.strip_prefix(DEPENDS_ON_PREFIX) else {
            continue;
        };
        let required = match value.as_str() {
            "started" | "healthy" => false,
            "completed" => true,
            other_value => {
                return Err(TransformError::invalid(format!(
                    "annotation {key}: {other_value:?} is not one of started, healthy, completed"
                )));
            }
        };
        out.push((pod.context.object_name(other), required));
    }
    Ok(out)
}

/// The name of the module's network unit file.
pub fn network_unit(context: &Context) -> String {
    format!("{}.network", network_name(context))
}
