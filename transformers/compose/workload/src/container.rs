//! One container of the pod as a compose service.
//!
//! | Kubernetes | compose |
//! |---|---|
//! | `image`, `imagePullPolicy` | `image`, `pull_policy` (`always`, `missing`, `never`) |
//! | `command`, `args` | `entrypoint`, `command`, `$(VAR)` expanded |
//! | `workingDir`, `stdin`, `tty` | `working_dir`, `stdin_open`, `tty` |
//! | `ulimits` | `ulimits`, as written |
//! | `env`, `envFrom` | `environment` ([`crate::env`]) |
//! | `resources` | `deploy.resources` (`cpus`, `memory`; `nvidia.com/gpu` as a device reservation), and a CPU request's weight as `cpu_shares` |
//! | `volumeMounts` | `volumes` ([`crate::volumes`]) |
//! | probes | `healthcheck` ([`crate::probe`]) |
//! | `lifecycle` | `post_start`, `pre_stop` |
//! | `securityContext` | [`crate::security`] |

use std::collections::BTreeMap;

use opm_compose_common::extension::{self, Extension};
use opm_compose_common::{quantity, seconds, sorted_entries};
use opm_guest::{Map, TransformError, Value, json};
pub use opm_module_common::container::image_reference;
use opm_module_common::notes::unhonoured;

use crate::env::environment;
use crate::pod::{Pod, Workload};
use crate::volumes::Mount;
use crate::{ports, probe, security};

/// The part a container plays in the pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// The main container, the service named after the component, which waits for the init
    /// containers' services `inits`.
    Main {
        /// The init containers' services.
        inits: Vec<String>,
    },
    /// A sidecar, in the main container's network.
    Sidecar,
    /// An init container, which runs once after the one before it.
    Init {
        /// The service of the init container before it.
        previous: Option<String>,
    },
}

/// The compose service of the container `spec` of `pod`; `path` names it in messages.
pub fn service(
    pod: &Pod,
    spec: &Value,
    role: Role,
    path: &str,
) -> Result<Map<String, Value>, TransformError> {
    let fields = spec
        .as_object()
        .ok_or_else(|| TransformError::invalid(format!("{path} must be an object")))?;
    let mut out = Map::new();
    let image = fields
        .get("image")
        .ok_or_else(|| TransformError::invalid(format!("{path}.image is required")))?;
    out.insert("image".into(), json!(image_reference(image, path)?));
    if let Some(policy) = fields.get("imagePullPolicy").and_then(Value::as_str) {
        let policy = match policy {
            "Always" => "always",
            "Never" => "never",
            _ => "missing",
        };
        out.insert("pull_policy".into(), json!(policy));
    }

    let env = environment(pod, spec, path)?;
    let mut extension = Extension {
        env_from: env.env_from.clone(),
        environment: env.deferred.clone(),
        ..Extension::default()
    };
    for (field, compose) in [("command", "entrypoint"), ("args", "command")] {
        let Some(list) = fields.get(field).and_then(Value::as_array) else {
            continue;
        };
        let raw: Vec<String> = list
            .iter()
            .map(|arg| match arg {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            })
            .collect();
        if raw.iter().any(|arg| env.needs_renderer(arg)) {
            if compose == "entrypoint" {
                extension.entrypoint = Some(raw);
            } else {
                extension.command = Some(raw);
            }
        } else {
            let expanded: Vec<Value> = raw.iter().map(|arg| json!(env.expand(arg))).collect();
            out.insert(compose.into(), Value::Array(expanded));
        }
    }
    if let Some(dir) = fields.get("workingDir") {
        out.insert(
            "working_dir".into(),
            json!(dir.as_str().unwrap_or_default()),
        );
    }
    security::apply(pod, spec, &mut out, path)?;
    if !env.values.is_empty() {
        let environment: Map<String, Value> = env
            .values
            .iter()
            .map(|(name, value)| (name.clone(), json!(value)))
            .collect();
        out.insert("environment".into(), Value::Object(environment));
    }

    let mut labels = pod.labels.clone();
    if matches!(role, Role::Main { .. }) {
        let (ports, expose_labels) = ports::published(pod, spec)?;
        if !ports.is_empty() {
            out.insert("ports".into(), Value::Array(ports));
        }
        for (key, value) in expose_labels {
            labels.insert(key, value);
        }
    }

    let mut volumes = Vec::new();
    for (name, mounts) in sorted_entries(fields.get("volumeMounts")) {
        // A volume's mount, or a list of them in the order written.
        let several = mounts.is_array();
        for (index, mount) in opm_compose_common::mounts_of(mounts)
            .into_iter()
            .enumerate()
        {
            let at = if several {
                format!("{path}.volumeMounts.{name}[{index}]")
            } else {
                format!("{path}.volumeMounts.{name}")
            };
            match pod.volumes.mount(name, mount, &at)? {
                Mount::Volume(volume) => volumes.push(volume),
                Mount::Files(files) => extension.files.extend(files),
                Mount::Nothing => {}
            }
        }
    }
    if !volumes.is_empty() {
        out.insert("volumes".into(), Value::Array(volumes));
    }
    if let Some(limits) = fields.get("ulimits") {
        out.insert("ulimits".into(), limits.clone());
    }
    for (field, compose) in [("stdin", "stdin_open"), ("tty", "tty")] {
        if let Some(flag) = fields.get(field) {
            out.insert(compose.into(), flag.clone());
        }
    }

    if !matches!(role, Role::Init { .. })
        && let Some(check) = probe::healthcheck(pod.context, spec, path)?
    {
        out.insert("healthcheck".into(), check);
    }
    hooks(pod, spec, &role, path, &mut out)?;
    if let Some(grace) = pod
        .shutdown
        .as_ref()
        .and_then(|s| s.get("terminationGracePeriodSeconds"))
        .and_then(Value::as_u64)
    {
        out.insert("stop_grace_period".into(), json!(seconds(grace)));
    }

    let depends_on = dependencies(pod, &role);
    if !depends_on.is_empty() {
        let map: Map<String, Value> = depends_on
            .into_iter()
            .map(|(service, condition)| (service, json!({"condition": condition})))
            .collect();
        out.insert("depends_on".into(), Value::Object(map));
    }
    network(pod, &role, path, &mut out)?;
    if let Some(runtime) = pod.component.field::<Value>("podRuntime")? {
        if let Some(class) = runtime.get("runtimeClassName").and_then(Value::as_str) {
            out.insert("runtime".into(), json!(class));
            if matches!(role, Role::Main { .. }) {
                opm_module_common::notes::caveat(&format!(
                    "podRuntime.runtimeClassName {class:?} is the Docker runtime of the services: \
                     the Docker engine must have a runtime of that name"
                ));
            }
        }
        if runtime
            .get("shareProcessNamespace")
            .and_then(Value::as_bool)
            == Some(true)
            && role == Role::Sidecar
        {
            out.insert("pid".into(), json!(format!("service:{}", pod.service)));
        }
    }

    if let Some(shares) = cpu_shares(spec.pointer("/resources/requests/cpu")) {
        out.insert("cpu_shares".into(), json!(shares));
    }
    let deploy = deploy(pod, spec, &role, path)?;
    if !deploy.is_empty() {
        out.insert("deploy".into(), Value::Object(deploy));
    }
    let init = matches!(role, Role::Init { .. });
    let restart = if pod.workload != Workload::Job && role == Role::Sidecar {
        pod.restart(false)?
    } else {
        pod.restart(init)?
    };
    out.insert("restart".into(), json!(restart));
    if !labels.is_empty() {
        labels.sort_keys();
        out.insert("labels".into(), Value::Object(labels));
    }
    if !pod.annotations.is_empty() {
        out.insert("annotations".into(), Value::Object(pod.annotations.clone()));
    }
    if !extension.is_empty() {
        out.insert(
            extension::FIELD.into(),
            serde_json::to_value(&extension)
                .map_err(|e| TransformError::failed(format!("encoding x-opm: {e}")))?,
        );
    }
    Ok(out)
}

/// `post_start` and `pre_stop` from the container's `lifecycle`, and for the main container the
/// GracefulShutdown trait's `preStop`.
fn hooks(
    pod: &Pod,
    spec: &Value,
    role: &Role,
    path: &str,
    out: &mut Map<String, Value>,
) -> Result<(), TransformError> {
    let mut pre_stop = spec.pointer("/lifecycle/preStop").cloned();
    if matches!(role, Role::Main { .. })
        && let Some(hook) = pod.shutdown.as_ref().and_then(|s| s.get("preStop"))
    {
        if pre_stop.is_some() {
            return Err(TransformError::invalid(
                "the container has a lifecycle.preStop hook and gracefulShutdown.preStop gives \
                 another; keep one",
            ));
        }
        pre_stop = Some(hook.clone());
    }
    if let Some(handler) = spec.pointer("/lifecycle/postStart") {
        let hook = probe::hook(handler, spec, &format!("{path}.lifecycle.postStart"))?;
        out.insert("post_start".into(), json!([hook]));
    }
    if let Some(handler) = pre_stop {
        let hook = probe::hook(&handler, spec, &format!("{path}.lifecycle.preStop"))?;
        out.insert("pre_stop".into(), json!([hook]));
    }
    Ok(())
}

/// The services a container waits for, with their conditions: the main container its init
/// containers (each having exited 0) and the component's annotated dependencies, an init
/// container the one before it and those dependencies, a sidecar the main container.
fn dependencies(pod: &Pod, role: &Role) -> BTreeMap<String, &'static str> {
    let mut out = BTreeMap::new();
    match role {
        Role::Sidecar => {
            out.insert(pod.service.clone(), "service_started");
        }
        Role::Main { inits } => {
            out.extend(pod.depends_on.iter().map(|(s, c)| (s.clone(), *c)));
            for init in inits {
                out.insert(init.clone(), "service_completed_successfully");
            }
        }
        Role::Init { previous } => {
            out.extend(pod.depends_on.iter().map(|(s, c)| (s.clone(), *c)));
            if let Some(previous) = previous {
                out.insert(previous.clone(), "service_completed_successfully");
            }
        }
    }
    out
}

/// The pod's network: sidecars in the main container's (`network_mode: service:<main>`); the
/// host's with `podNetwork.hostNetwork`; otherwise the project network, with the PodNetwork
/// trait's DNS settings and host aliases.
fn network(
    pod: &Pod,
    role: &Role,
    path: &str,
    out: &mut Map<String, Value>,
) -> Result<(), TransformError> {
    if *role == Role::Sidecar {
        out.insert(
            "network_mode".into(),
            json!(format!("service:{}", pod.service)),
        );
        // A container in another's network namespace takes that one's kernel settings.
        out.remove("sysctls");
        return Ok(());
    }
    let Some(network) = &pod.network else {
        return Ok(());
    };
    let main = matches!(role, Role::Main { .. });
    if pod.host_network {
        out.insert("network_mode".into(), json!("host"));
    }
    let dns = network.get("dnsConfig");
    let aliases = network.get("hostAliases").and_then(Value::as_array);
    if pod.host_network {
        if main && (dns.is_some() || aliases.is_some()) {
            unhonoured(
                pod.context,
                &format!(
                    "{path}: podNetwork.dnsConfig and hostAliases: a container in the host's \
                     network uses the host's DNS settings and /etc/hosts"
                ),
            )?;
        }
    } else {
        if let Some(dns) = dns {
            for (field, compose) in [("nameservers", "dns"), ("searches", "dns_search")] {
                if let Some(list) = dns
                    .get(field)
                    .filter(|l| l.as_array().is_some_and(|l| !l.is_empty()))
                {
                    out.insert(compose.into(), list.clone());
                }
            }
            let options: Vec<Value> = dns
                .get("options")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|option| {
                    let name = option.get("name").and_then(Value::as_str)?;
                    Some(match option.get("value").and_then(Value::as_str) {
                        Some(value) => json!(format!("{name}:{value}")),
                        None => json!(name),
                    })
                })
                .collect();
            if !options.is_empty() {
                out.insert("dns_opt".into(), Value::Array(options));
            }
        }
        let hosts: Vec<Value> = aliases
            .into_iter()
            .flatten()
            .flat_map(|alias| {
                let ip = alias.get("ip").and_then(Value::as_str).unwrap_or_default();
                alias
                    .get("hostnames")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(move |host| json!(format!("{host}={ip}")))
            })
            .collect();
        if !hosts.is_empty() {
            out.insert("extra_hosts".into(), Value::Array(hosts));
        }
    }
    if main && network.get("enableServiceLinks").and_then(Value::as_bool) == Some(true) {
        unhonoured(
            pod.context,
            "podNetwork.enableServiceLinks: compose gives containers no variables for the other \
             services; reach them by name",
        )?;
    }
    Ok(())
}

/// `deploy`: the main service's copies (`replicas`, or `mode: global` for a daemon) and every
/// container's resources.
fn deploy(
    pod: &Pod,
    spec: &Value,
    role: &Role,
    path: &str,
) -> Result<Map<String, Value>, TransformError> {
    let mut deploy = Map::new();
    if matches!(role, Role::Main { .. }) {
        if pod.workload == Workload::Daemon {
            deploy.insert("mode".into(), json!("global"));
        } else {
            deploy.insert("replicas".into(), json!(pod.copies));
        }
    }
    if let Some(resources) = resources(pod, spec.get("resources"), path)? {
        deploy.insert("resources".into(), resources);
    }
    Ok(deploy)
}

/// The CPU weight of a CPU request, as the kubelet gives a container's cgroup: 1024 per core,
/// at least 2. Docker applies no `deploy.resources.reservations.cpus` to a container, so the
/// weight is what makes a request count when CPUs are contended.
fn cpu_shares(request: Option<&Value>) -> Option<u64> {
    let cores = quantity::parse(request?)?;
    Some(((cores * 1024.0).round() as u64).max(2))
}

/// `deploy.resources` from a container's `resources`: CPU and memory limits and requests
/// (reservations), and NVIDIA GPUs as a device reservation.
fn resources(
    pod: &Pod,
    resources: Option<&Value>,
    path: &str,
) -> Result<Option<Value>, TransformError> {
    let Some(resources) = resources else {
        return Ok(None);
    };
    let mut out = Map::new();
    for (from, to) in [("limits", "limits"), ("requests", "reservations")] {
        let mut section = Map::new();
        for (name, quantity) in sorted_entries(resources.get(from)) {
            let at = format!("{path}.resources.{from}.{name}");
            match name.as_str() {
                "cpu" => {
                    let cpus = quantity::cpus(quantity).ok_or_else(|| {
                        TransformError::invalid(format!("{at} is not a quantity"))
                    })?;
                    section.insert("cpus".into(), json!(cpus));
                }
                "memory" => {
                    let size = quantity::bytes(quantity).ok_or_else(|| {
                        TransformError::invalid(format!("{at} is not a quantity"))
                    })?;
                    section.insert("memory".into(), json!(size));
                }
                "nvidia.com/gpu" if from == "limits" => {
                    let count = quantity::parse(quantity).map_or(1, |n| n.ceil() as u64);
                    out.entry("reservations")
                        .or_insert_with(|| json!({}))
                        .as_object_mut()
                        .expect("an object")
                        .insert(
                            "devices".into(),
                            json!([{"driver": "nvidia", "count": count, "capabilities": ["gpu"]}]),
                        );
                }
                "nvidia.com/gpu" => {}
                other => unhonoured(
                    pod.context,
                    &format!(
                        "{at}: compose has no {other} to {}",
                        if from == "limits" { "limit" } else { "reserve" }
                    ),
                )?,
            }
        }
        if !section.is_empty() {
            let entry = out.entry(to).or_insert_with(|| json!({}));
            let entry = entry.as_object_mut().expect("an object");
            for (key, value) in section {
                entry.insert(key, value);
            }
        }
    }
    Ok((!out.is_empty()).then_some(Value::Object(out)))
}
