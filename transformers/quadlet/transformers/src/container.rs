//! One container of the pod as a `.container` unit: its image, command, environment, mounts,
//! health check, security and resources, and the service around it.
//!
//! | the module's field | unit key |
//! |---|---|
//! | `image`, `imagePullPolicy` | `Image=` (fully qualified: `nginx` is `docker.io/library/nginx`), `Pull=` |
//! | `command`, `args` | `Entrypoint=` (a JSON array), `Exec=`; `$(VAR)` expanded as the kubelet does |
//! | `env` `value`, `fieldRef` | `Environment=` (`spec.nodeName` is the host's name, `%H`) |
//! | `env` `secretKeyRef`, `configMapKeyRef`, `envFrom` | an `EnvironmentFile=` the renderer writes: `secrets/NAME.env` (0600) when a Secret is read, else `config/NAME.env` |
//! | `resources` | `[Service] MemoryMax=`, `CPUQuota=` (limits), `CPUWeight=` (the CPU request, weighed as the kubelet weighs it) |
//! | probes, HealthCheck | `HealthCmd=` and its timing, `Notify=healthy` with `[Service] TimeoutStartSec=` the time the probes allow to become healthy and 300 s for the image pull; a startup probe `HealthStartup*=`; a liveness probe alone `HealthOnFailure=kill` |
//! | `securityContext`, SecurityContext | `User=`, `Group=`, `GroupAdd=`, `ReadOnly=`, `NoNewPrivileges=`, `DropCapability=`, `AddCapability=`, `SeccompProfile=`, `SecurityLabel*=`, `Unmask=`, `Sysctl=` |
//! | `lifecycle`, GracefulShutdown | `[Service] ExecStartPost=`, `ExecStop=` (`podman exec`), `StopTimeout=` |
//! | `workingDir`, `tty`, `stdin`, `ulimits` | `WorkingDir=`, `PodmanArgs=--tty`, `--interactive`, `Ulimit=` |

use std::collections::BTreeMap;

use opm_compose_common::quantity;
use opm_guest::{Map, TransformError, Value, json};
use opm_module_common::container::{SecurityContext, image_reference};
use opm_module_common::env::{expand, ordered, references};
use opm_module_common::host::{CONTAINER_SELINUX_TYPES, beyond_default};
use opm_module_common::notes::{caveat, unhonoured};
use opm_module_common::probe::{http_command, port_number};
use opm_quadlet_common::unit::Unit;
use opm_quadlet_common::{CONFIG_DIR, SECRET_DIR, escape, quote, sorted_entries, words};

use crate::workload::{Kind, Pod, dependencies, network_unit};

/// What a container is in its pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// The main container, started after these units (init containers, native sidecars).
    Main {
        /// The units it starts after.
        after: Vec<String>,
    },
    /// A sidecar, started after these units.
    Sidecar {
        /// The units it starts after.
        after: Vec<String>,
    },
    /// An init container, run to completion after these.
    Init {
        /// The init containers before it.
        after: Vec<String>,
    },
}

/// The unit of the container `spec`, named `name`; `path` names it in messages.
pub fn unit(
    pod: &Pod,
    spec: &Value,
    name: &str,
    role: Role,
    path: &str,
) -> Result<Unit, TransformError> {
    let mut unit = Unit::default();
    let what = match &role {
        Role::Main { .. } => "the main container".to_owned(),
        Role::Sidecar { .. } => format!("the sidecar {path}"),
        Role::Init { .. } => format!("the init container {path}"),
    };
    unit.set("Unit", "Description", pod.description(&what));
    let after = match &role {
        Role::Main { after } | Role::Sidecar { after } | Role::Init { after } => after,
    };
    for before in after {
        unit.add("Unit", "Requires", format!("{before}.service"));
        unit.add("Unit", "After", format!("{before}.service"));
    }
    for (other, required) in dependencies(pod)? {
        unit.add(
            "Unit",
            if required { "Requires" } else { "Wants" },
            format!("{other}.service"),
        );
        unit.add("Unit", "After", format!("{other}.service"));
    }

    let image = image_reference(spec.get("image").unwrap_or(&Value::Null), path)?;
    unit.set("Container", "Image", escape(&qualified(&image)));
    unit.set("Container", "ContainerName", name.to_owned());
    if pod.in_pod {
        unit.set("Container", "Pod", format!("{}.pod", pod.name));
    } else {
        network(pod, &mut unit, "Container")?;
    }
    for label in &pod.labels {
        unit.add("Container", "Label", label.clone());
    }
    for annotation in &pod.annotations {
        unit.add("Container", "Annotation", annotation.clone());
    }
    match spec.get("imagePullPolicy").and_then(Value::as_str) {
        Some("Always") => unit.set("Container", "Pull", "always"),
        Some("IfNotPresent") => unit.set("Container", "Pull", "missing"),
        Some("Never") => unit.set("Container", "Pull", "never"),
        _ => {}
    }

    let known = environment(pod, spec, name, path, &mut unit)?;
    command(spec, &known, &mut unit)?;
    if let Some(dir) = spec.get("workingDir").and_then(Value::as_str) {
        unit.set("Container", "WorkingDir", quote(dir));
    }
    if spec.get("tty").and_then(Value::as_bool) == Some(true) {
        unit.add("Container", "PodmanArgs", "--tty");
    }
    if spec.get("stdin").and_then(Value::as_bool) == Some(true) {
        unit.add("Container", "PodmanArgs", "--interactive");
    }
    for (limit, value) in sorted_entries(spec.get("ulimits")) {
        let text = match value {
            Value::Object(pair) => format!(
                "{limit}={}:{}",
                pair.get("soft").map(Value::to_string).unwrap_or_default(),
                pair.get("hard").map(Value::to_string).unwrap_or_default()
            ),
            other => format!("{limit}={other}"),
        };
        unit.add("Container", "Ulimit", text);
    }
    pod.volumes.mount(pod, spec, path, &mut unit)?;
    if matches!(role, Role::Main { .. }) && !pod.in_pod {
        publish(pod, spec, &mut unit, "Container")?;
    }
    let long_running = !matches!(role, Role::Init { .. }) && !pod.kind.completes();
    health(pod, spec, path, long_running, &mut unit)?;
    security(pod, spec, path, &mut unit)?;
    runtime(pod, &mut unit)?;
    resources(pod, spec, path, &mut unit)?;
    lifecycle(
        pod,
        spec,
        name,
        path,
        matches!(role, Role::Main { .. }),
        &mut unit,
    )?;

    match role {
        Role::Init { .. } => {
            unit.set("Service", "Type", "oneshot");
            unit.set("Service", "RemainAfterExit", "yes");
            // The kubelet retries a failed init container until it succeeds.
            unit.set("Service", "Restart", "on-failure");
        }
        _ if pod.kind.completes() => {
            unit.set("Service", "Type", "oneshot");
            let (restart, retries) = pod.restart()?;
            unit.set("Service", "Restart", restart);
            if let Some(retries) = retries {
                // The backoff limit: at most `retries` restarts of one run, 10 s apart.
                unit.set("Unit", "StartLimitIntervalSec", retry_window(pod)?);
                unit.set("Unit", "StartLimitBurst", (retries + 1).to_string());
                unit.set("Service", "RestartSec", "10");
            }
            let config: Option<Value> = pod.component.field("jobConfig")?;
            if let Some(deadline) = config
                .as_ref()
                .and_then(|c| c.get("activeDeadlineSeconds"))
                .and_then(Value::as_u64)
            {
                unit.set("Service", "TimeoutStartSec", deadline.to_string());
            }
        }
        _ => {
            let (restart, _) = pod.restart()?;
            unit.set("Service", "Restart", restart);
        }
    }
    if pod.kind != Kind::CronJob {
        unit.set("Install", "WantedBy", "default.target");
    }
    Ok(unit)
}

/// The `StartLimitIntervalSec=` in which a job's `StartLimitBurst=` (its first start and its
/// retries) is counted. systemd counts every start against it, a timer's too: a job, started
/// once at boot, counts a day; a cronjob counts a window shorter than the shortest gap between
/// two runs of its schedule ([`crate::cron::shortest_gap`], less a minute for the timer's
/// accuracy, or half of it under two minutes), so that each run gets the whole limit and no
/// scheduled run is ever refused (a day's window stopped a `*/15` schedule after 7 runs).
fn retry_window(pod: &Pod) -> Result<String, TransformError> {
    if pod.kind != Kind::CronJob {
        return Ok("1d".to_owned());
    }
    let schedule: Value = pod.component.require("schedule")?;
    let cron = schedule
        .get("cron")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let gap = crate::cron::shortest_gap(cron).map_err(|e| {
        TransformError::invalid(format!(
            "schedule.cron cannot be a systemd calendar event: {e}"
        ))
    })?;
    Ok((gap - (gap / 2).min(60)).to_string())
}

/// `image` as Podman should pull it, fully qualified: Docker Hub's `docker.io/` (and
/// `library/` for an official image) before a reference that names no registry, as Docker and
/// Kubernetes read it; Quadlet warns of a short name, which the host's registries would
/// resolve.
pub fn qualified(image: &str) -> String {
    let (first, rest) = match image.split_once('/') {
        Some((first, rest)) => (first, Some(rest)),
        None => (image, None),
    };
    match rest {
        Some(_) if first.contains(['.', ':']) || first == "localhost" => image.to_owned(),
        Some(_) => format!("docker.io/{image}"),
        None => format!("docker.io/library/{image}"),
    }
}

/// The network keys of a unit (`section` `Container` or `Pod`): the module's network (or the
/// host's), the unit's name as an alias, and PodNetwork's DNS and hosts.
pub fn network(pod: &Pod, unit: &mut Unit, section: &str) -> Result<(), TransformError> {
    if pod.host_network() {
        unit.set(section, "Network", "host");
    } else {
        unit.set(section, "Network", network_unit(pod.context));
        if section == "Pod" {
            unit.add(section, "NetworkAlias", pod.name.clone());
        }
    }
    let Some(network) = &pod.network else {
        return Ok(());
    };
    if let Some(config) = network.get("dnsConfig") {
        for server in config
            .get("nameservers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            unit.add(section, "DNS", server.as_str().unwrap_or_default());
        }
        for search in config
            .get("searches")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            unit.add(
                section,
                "DNSSearch",
                escape(search.as_str().unwrap_or_default()),
            );
        }
        for option in config
            .get("options")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = option
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let text = match option.get("value").and_then(Value::as_str) {
                Some(value) => format!("{name}:{value}"),
                None => name.to_owned(),
            };
            unit.add(section, "DNSOption", escape(&text));
        }
    }
    for alias in network
        .get("hostAliases")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let ip = alias.get("ip").and_then(Value::as_str).unwrap_or_default();
        for host in alias
            .get("hostnames")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            unit.add(
                section,
                "AddHost",
                format!("{}:{ip}", host.as_str().unwrap_or_default()),
            );
        }
    }
    if network.get("dnsPolicy").and_then(Value::as_str) == Some("None")
        && network.get("dnsConfig").is_none()
    {
        unhonoured(
            pod.context,
            "podNetwork.dnsPolicy None without dnsConfig: Podman's DNS is kept",
        )?;
    }
    Ok(())
}

/// Expose as `PublishPort=` of `section`: NodePort at its `nodePort` (or one Podman picks),
/// LoadBalancer at its `port`; ClusterIP and Headless publish nothing, the container being
/// reached by name on the module network.
pub fn publish(
    pod: &Pod,
    main: &Value,
    unit: &mut Unit,
    section: &str,
) -> Result<(), TransformError> {
    let Some(expose) = pod.component.field::<Value>("expose")? else {
        return Ok(());
    };
    let kind = expose
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    for field in [
        "sessionAffinity",
        "loadBalancerClass",
        "loadBalancerSourceRanges",
        "ipFamilies",
        "ipFamilyPolicy",
    ] {
        if expose.get(field).is_some() {
            unhonoured(
                pod.context,
                &format!("expose.{field}: a cluster's, nothing on one host"),
            )?;
        }
    }
    if expose.get("name").is_some() {
        unhonoured(
            pod.context,
            "expose.name: the container is reached by its unit's name on the module network",
        )?;
    }
    let ports = match expose.get("ports") {
        Some(ports) => ports.clone(),
        None => Value::Object(
            sorted_entries(main.get("ports"))
                .into_iter()
                .map(|(name, port)| {
                    (
                        name.clone(),
                        json!({"port": port["containerPort"], "protocol": port.get("protocol")}),
                    )
                })
                .collect(),
        ),
    };
    for (port_name, port) in sorted_entries(Some(&ports)) {
        let number = port.get("port").and_then(Value::as_u64).unwrap_or_default();
        let target = match port.get("targetPort") {
            None => number,
            Some(Value::Number(n)) => n.as_u64().unwrap_or(number),
            Some(Value::String(named)) => main
                .get("ports")
                .and_then(|p| p.get(named))
                .and_then(|p| p.get("containerPort"))
                .and_then(Value::as_u64)
                .ok_or_else(|| TransformError::invalid(format!(
                    "expose.ports.{port_name}.targetPort {named:?} names no port of the container"
                )))?,
            Some(_) => number,
        };
        let protocol = match port.get("protocol").and_then(Value::as_str) {
            Some("UDP") => "/udp",
            Some("SCTP") => "/sctp",
            _ => "",
        };
        let host = match kind {
            "NodePort" => port
                .get("nodePort")
                .and_then(Value::as_u64)
                .map(|p| p.to_string())
                .unwrap_or_default(),
            "LoadBalancer" => number.to_string(),
            _ => {
                if number != target {
                    caveat(&format!(
                        "expose.ports.{port_name}: clients on the module network reach the \
                         container's port {target}, not {number}: a network maps no port"
                    ));
                }
                continue;
            }
        };
        let value = if host.is_empty() {
            format!("{target}{protocol}")
        } else {
            format!("{host}:{target}{protocol}")
        };
        unit.add(section, "PublishPort", value);
    }
    Ok(())
}

/// `Environment=` of the literal variables, `fieldRef`s and `resourceFieldRef`s; a variable
/// read from a ConfigMap or Secret, and `envFrom`, in the extension `x-opm` for the renderer
/// to write as an `EnvironmentFile=`. Returns the literal values, for `$(VAR)` in the command.
fn environment(
    pod: &Pod,
    spec: &Value,
    name: &str,
    path: &str,
    unit: &mut Unit,
) -> Result<BTreeMap<String, String>, TransformError> {
    let rule = "Kubernetes expands a reference only to a variable defined before it";
    let mut known: BTreeMap<String, String> = BTreeMap::new();
    let mut from_files: Vec<String> = Vec::new();
    let mut refs = Vec::new();
    let mut secret = false;
    for (var, source) in ordered(spec.get("env"), path, rule)? {
        if let Some(value) = source.get("value") {
            let text = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            for reference in references(&text) {
                if from_files.iter().any(|f| f == reference) {
                    unhonoured(
                        pod.context,
                        &format!(
                            "{path}.env.{var}: $({reference}) is read from a ConfigMap or Secret, \
                         which a unit cannot expand; the reference is left as written"
                        ),
                    )?;
                }
            }
            let text = expand(&text, |name| known.get(name).cloned());
            unit.add("Container", "Environment", quote(&format!("{var}={text}")));
            known.insert(var.to_owned(), text);
        } else if let Some(key_ref) = source
            .get("secretKeyRef")
            .or_else(|| source.get("configMapKeyRef"))
        {
            let is_secret = source.get("secretKeyRef").is_some();
            secret |= is_secret;
            refs.push(json!({
                "name": var,
                if is_secret { "secret" } else { "configMap" }: key_ref.get("name"),
                "key": key_ref.get("key"),
                "optional": key_ref.get("optional").and_then(Value::as_bool).unwrap_or(false),
            }));
            from_files.push(var.to_owned());
        } else if let Some(field) = source.get("fieldRef") {
            let field_path = field
                .get("fieldPath")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let value = match field_path {
                "metadata.name" => Some(escape(name)),
                "metadata.namespace" => Some(escape(&pod.context.namespace)),
                "spec.nodeName" => Some("%H".to_owned()),
                other => {
                    let labelled = |prefix: &str, map: &BTreeMap<String, String>| {
                        other
                            .strip_prefix(prefix)
                            .and_then(|rest| rest.strip_suffix("']"))
                            .and_then(|key| map.get(key))
                            .map(|value| escape(value))
                    };
                    labelled("metadata.labels['", &pod.context.labels)
                        .or_else(|| labelled("metadata.annotations['", pod.component.annotations()))
                }
            };
            match value {
                Some(value) => {
                    unit.add(
                        "Container",
                        "Environment",
                        quote_raw(&format!("{var}={value}")),
                    );
                    if field_path != "spec.nodeName" {
                        known.insert(var.to_owned(), value.replace("%%", "%").replace("$$", "$"));
                    }
                }
                None => unhonoured(
                    pod.context,
                    &format!(
                        "{path}.env.{var}: fieldRef {field_path} is known only on Kubernetes; the variable is left out"
                    ),
                )?,
            }
        } else if let Some(field) = source.get("resourceFieldRef") {
            match resource_field(pod, spec, field) {
                Some(value) => {
                    unit.add("Container", "Environment", quote(&format!("{var}={value}")));
                    known.insert(var.to_owned(), value);
                }
                None => unhonoured(
                    pod.context,
                    &format!(
                        "{path}.env.{var}: resourceFieldRef without a limit is the node's capacity, \
                     which a unit cannot know; the variable is left out"
                    ),
                )?,
            }
        }
    }
    let mut from = Vec::new();
    for item in spec
        .get("envFrom")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (field, key) = if let Some(r) = item.get("secretRef") {
            secret = true;
            (r, "secret")
        } else if let Some(r) = item.get("configMapRef") {
            (r, "configMap")
        } else {
            continue;
        };
        from.push(json!({
            key: field.get("name"),
            "prefix": item.get("prefix").and_then(Value::as_str).unwrap_or_default(),
            "optional": field.get("optional").and_then(Value::as_bool).unwrap_or(false),
        }));
    }
    if !refs.is_empty() || !from.is_empty() {
        let dir = if secret { SECRET_DIR } else { CONFIG_DIR };
        let file = format!("{dir}/{name}.env");
        unit.add("Container", "EnvironmentFile", format!("./{file}"));
        let mut extension = Map::new();
        extension.insert("envFile".into(), Value::String(file));
        extension.insert("env".into(), Value::Array(refs));
        extension.insert("envFrom".into(), Value::Array(from));
        unit.set_extension(Value::Object(extension));
    }
    Ok(known)
}

/// A `KEY=value` already escaped, quoted when it must be.
fn quote_raw(text: &str) -> String {
    if text
        .chars()
        .any(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '\\'))
    {
        format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        text.to_owned()
    }
}

/// A `resourceFieldRef`'s value, from the container's own limits or requests.
fn resource_field(pod: &Pod, spec: &Value, field: &Value) -> Option<String> {
    let container = match field.get("containerName").and_then(Value::as_str) {
        Some(other) => pod.containers.get(other)?,
        None => spec,
    };
    let resource = field.get("resource").and_then(Value::as_str)?;
    let (group, name) = resource.split_once('.')?;
    let value = quantity::parse(container.get("resources")?.get(group)?.get(name)?)?;
    let divisor = field
        .get("divisor")
        .and_then(quantity::parse)
        .unwrap_or(1.0);
    Some(quantity::divide(value, divisor))
}

/// `Entrypoint=` and `Exec=` from `command` and `args`, `$(VAR)` expanded.
fn command(
    spec: &Value,
    known: &BTreeMap<String, String>,
    unit: &mut Unit,
) -> Result<(), TransformError> {
    let list = |field: &str| -> Vec<String> {
        spec.get(field)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|i| {
                        expand(i.as_str().unwrap_or_default(), |name| {
                            known.get(name).cloned()
                        })
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let command = list("command");
    let args = list("args");
    if spec.get("command").is_some() {
        let json =
            serde_json::to_string(&command).map_err(|e| TransformError::invalid(e.to_string()))?;
        unit.set("Container", "Entrypoint", escape(&json));
    }
    if !args.is_empty() {
        unit.set("Container", "Exec", words(args.iter().map(String::as_str)));
    }
    Ok(())
}

/// The probe's command as Podman's health check runs it: an `exec` command as a JSON array
/// (run as is), an HTTP, TCP or gRPC probe as a shell command of tools the image must have
/// (an HTTP probe as compose's: `opm_module_common::probe`). Quadlet passes `HealthCmd=` on
/// as written, so it is escaped, not quoted.
fn probe_command(spec: &Value, probe: &Value, path: &str) -> Result<String, TransformError> {
    if let Some(exec) = probe.get("exec") {
        let command = exec.get("command").cloned().unwrap_or(json!([]));
        return Ok(escape(&command.to_string()));
    }
    if let Some(http) = probe.get("httpGet") {
        caveat(&format!(
            "{path}: the HTTP probe runs wget, else curl, inside the container: the image needs one"
        ));
        return Ok(escape(&http_command(http, spec, path)?));
    }
    if let Some(tcp) = probe.get("tcpSocket") {
        let host = tcp
            .get("host")
            .and_then(Value::as_str)
            .unwrap_or("127.0.0.1");
        caveat(&format!(
            "{path}: the TCP probe runs nc inside the container: the image needs it"
        ));
        let port = port_number(tcp.get("port"), spec, path)?;
        return Ok(escape(&format!("nc -z {host} {port}")));
    }
    if let Some(grpc) = probe.get("grpc") {
        caveat(&format!(
            "{path}: the gRPC probe runs grpc_health_probe inside the container: the image needs it"
        ));
        let mut args = vec![
            "grpc_health_probe".to_owned(),
            format!(
                "-addr=127.0.0.1:{}",
                port_number(grpc.get("port"), spec, path)?
            ),
        ];
        if let Some(service) = grpc.get("service").and_then(Value::as_str) {
            args.push(format!("-service={service}"));
        }
        return Ok(escape(&json!(args).to_string()));
    }
    Err(TransformError::invalid(format!(
        "{path}: a probe needs exec, httpGet, tcpSocket or grpc"
    )))
}

/// The health check: the readiness probe (else the liveness one) as `HealthCmd=` with
/// Kubernetes' timing, `Notify=healthy` for a container that runs until stopped, whose start
/// then lasts until the check passes: `TimeoutStartSec=` the time the startup probe and the
/// health check's probe allow ([`time_to_healthy`]) and [`PULL_MARGIN`]; a liveness
/// probe alone kills the container when it fails (`HealthOnFailure=kill`), and systemd restarts
/// it; a startup probe as `HealthStartup*=`.
fn health(
    pod: &Pod,
    spec: &Value,
    path: &str,
    long_running: bool,
    unit: &mut Unit,
) -> Result<(), TransformError> {
    let readiness = spec.get("readinessProbe");
    let liveness = spec.get("livenessProbe");
    let Some(probe) = readiness.or(liveness) else {
        return Ok(());
    };
    let seconds =
        |field: &str, default: u64| probe.get(field).and_then(Value::as_u64).unwrap_or(default);
    unit.set("Container", "HealthCmd", probe_command(spec, probe, path)?);
    unit.set(
        "Container",
        "HealthInterval",
        format!("{}s", seconds("periodSeconds", 10)),
    );
    unit.set(
        "Container",
        "HealthTimeout",
        format!("{}s", seconds("timeoutSeconds", 1)),
    );
    unit.set(
        "Container",
        "HealthRetries",
        seconds("failureThreshold", 3).to_string(),
    );
    let delay = seconds("initialDelaySeconds", 0);
    if delay > 0 {
        unit.set("Container", "HealthStartPeriod", format!("{delay}s"));
    }
    if readiness.is_none() {
        unit.set("Container", "HealthOnFailure", "kill");
    } else if liveness.is_some() && liveness != readiness {
        unhonoured(
            pod.context,
            &format!(
                "{path}: one health check runs, the readiness probe: the liveness probe's restarts \
             are lost (give both the same probe, or the liveness one alone to restart on failure)"
            ),
        )?;
    }
    if let Some(startup) = spec.get("startupProbe") {
        let seconds = |field: &str, default: u64| {
            startup
                .get(field)
                .and_then(Value::as_u64)
                .unwrap_or(default)
        };
        unit.set(
            "Container",
            "HealthStartupCmd",
            probe_command(spec, startup, path)?,
        );
        unit.set(
            "Container",
            "HealthStartupInterval",
            format!("{}s", seconds("periodSeconds", 10)),
        );
        unit.set(
            "Container",
            "HealthStartupTimeout",
            format!("{}s", seconds("timeoutSeconds", 1)),
        );
        unit.set(
            "Container",
            "HealthStartupRetries",
            seconds("failureThreshold", 3).to_string(),
        );
    }
    if long_running {
        unit.set("Container", "Notify", "healthy");
        if !unit.has("Service", "TimeoutStartSec") {
            let gate = [spec.get("startupProbe"), Some(probe)]
                .into_iter()
                .flatten()
                .map(time_to_healthy)
                .sum::<u64>();
            unit.set(
                "Service",
                "TimeoutStartSec",
                (gate + PULL_MARGIN).to_string(),
            );
        }
    }
    Ok(())
}

/// The seconds `TimeoutStartSec=` allows beyond the probes for the image to be pulled (which
/// `podman run` does as it starts): 5 minutes, a large image (1 GB) over a modest link, where
/// systemd's default of 90 s for the whole start would fail a container whose probes allow
/// more (Kubernetes gives a pull and a startup probe as long as they take).
pub const PULL_MARGIN: u64 = 300;

/// The longest a probe lets a container take to pass it, as the kubelet counts it: the initial
/// delay and the failure threshold's periods (`initialDelaySeconds + periodSeconds ×
/// failureThreshold`, defaults 0, 10 and 3).
fn time_to_healthy(probe: &Value) -> u64 {
    let seconds =
        |field: &str, default: u64| probe.get(field).and_then(Value::as_u64).unwrap_or(default);
    seconds("initialDelaySeconds", 0)
        + seconds("periodSeconds", 10) * seconds("failureThreshold", 3)
}

/// The pod's SecurityContext and the container's `securityContext` (which wins, field by
/// field) as unit keys; what reaches into the host needs host access.
fn security(pod: &Pod, spec: &Value, path: &str, unit: &mut Unit) -> Result<(), TransformError> {
    let security = SecurityContext::new(pod.security.as_ref(), spec, path);
    let pod_level = &security.pod;
    let user = security.field("runAsUser").and_then(Value::as_u64);
    if let Some(user) = user {
        unit.set("Container", "User", user.to_string());
    }
    if let Some(group) = security.field("runAsGroup").and_then(Value::as_u64) {
        unit.set("Container", "Group", group.to_string());
    }
    if security.field("runAsNonRoot").and_then(Value::as_bool) == Some(true) && user.is_none() {
        unhonoured(
            pod.context,
            &format!(
                "{}: without runAsUser, Podman does not check the image's user",
                security.at("runAsNonRoot")
            ),
        )?;
    }
    if let Some(group) = pod_level.get("fsGroup").and_then(Value::as_u64) {
        unit.add("Container", "GroupAdd", group.to_string());
    }
    for group in pod_level
        .get("supplementalGroups")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        unit.add("Container", "GroupAdd", group.to_string());
    }
    if security
        .field("readOnlyRootFilesystem")
        .and_then(Value::as_bool)
        == Some(true)
    {
        unit.set("Container", "ReadOnly", "true");
    }
    if security
        .field("allowPrivilegeEscalation")
        .and_then(Value::as_bool)
        == Some(false)
    {
        unit.set("Container", "NoNewPrivileges", "true");
    }
    if security.field("privileged").and_then(Value::as_bool) == Some(true) {
        pod.require_host_access(
            &security.at("privileged"),
            "every device and capability of the host",
        )?;
        unit.add("Container", "PodmanArgs", "--privileged");
    }
    if let Some(caps) = security.field("capabilities") {
        for cap in caps
            .get("drop")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            unit.add(
                "Container",
                "DropCapability",
                cap.as_str().unwrap_or_default().to_owned(),
            );
        }
        for cap in caps
            .get("add")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let cap = cap.as_str().unwrap_or_default();
            if !beyond_default([cap]).is_empty() {
                pod.require_host_access(
                    &format!("{} {cap}", security.at("capabilities.add")),
                    "a capability beyond a container's default set",
                )?;
            }
            unit.add("Container", "AddCapability", cap.to_owned());
        }
    }
    if let Some(profile) = security.field("seccompProfile") {
        match profile.get("type").and_then(Value::as_str) {
            Some("Unconfined") => {
                pod.require_host_access(
                    &security.at("seccompProfile"),
                    "the kernel without seccomp's confinement",
                )?;
                unit.set("Container", "SeccompProfile", "unconfined");
            }
            Some("Localhost") => {
                let file = profile
                    .get("localhostProfile")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                unit.set("Container", "SeccompProfile", quote(file));
            }
            _ => {}
        }
    }
    if let Some(profile) = security.field("appArmorProfile") {
        match profile.get("type").and_then(Value::as_str) {
            Some("Unconfined") => {
                pod.require_host_access(
                    &security.at("appArmorProfile"),
                    "the host without AppArmor's confinement",
                )?;
                unit.add(
                    "Container",
                    "PodmanArgs",
                    "--security-opt=apparmor=unconfined",
                );
            }
            Some("Localhost") => {
                let name = profile
                    .get("localhostProfile")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                unit.add(
                    "Container",
                    "PodmanArgs",
                    quote(&format!("--security-opt=apparmor={name}")),
                );
            }
            _ => {}
        }
    }
    if let Some(selinux) = security.field("seLinuxOptions") {
        for (key, flag) in [("user", "user"), ("role", "role")] {
            if let Some(value) = selinux.get(key).and_then(Value::as_str) {
                pod.require_host_access(
                    &security.at(&format!("seLinuxOptions.{key}")),
                    "another SELinux identity",
                )?;
                unit.add(
                    "Container",
                    "PodmanArgs",
                    quote(&format!("--security-opt=label={flag}:{value}")),
                );
            }
        }
        if let Some(kind) = selinux.get("type").and_then(Value::as_str) {
            if !CONTAINER_SELINUX_TYPES.contains(&kind) {
                pod.require_host_access(
                    &security.at("seLinuxOptions.type"),
                    "an SELinux domain that is not a container's",
                )?;
            }
            unit.set("Container", "SecurityLabelType", kind.to_owned());
        }
        if let Some(level) = selinux.get("level").and_then(Value::as_str) {
            unit.set("Container", "SecurityLabelLevel", level.to_owned());
        }
    }
    if security.field("procMount").and_then(Value::as_str) == Some("Unmasked") {
        pod.require_host_access(
            &security.at("procMount"),
            "the host's kernel files under /proc and /sys",
        )?;
        unit.set("Container", "Unmask", "ALL");
    }
    for sysctl in pod_level
        .get("sysctls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = sysctl
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let value = sysctl
            .get("value")
            .and_then(Value::as_str)
            .unwrap_or_default();
        unit.add("Container", "Sysctl", quote(&format!("{name}={value}")));
    }
    if security.field("windowsOptions").is_some() {
        unhonoured(
            pod.context,
            &format!(
                "{}: Podman runs Linux containers",
                security.at("windowsOptions")
            ),
        )?;
    }
    Ok(())
}

/// PodRuntime's `runtimeClassName` as Podman's OCI runtime (`--runtime`); its
/// `shareProcessNamespace` is the pod's, and a container alone has its own.
fn runtime(pod: &Pod, unit: &mut Unit) -> Result<(), TransformError> {
    let Some(runtime) = pod.component.field::<Value>("podRuntime")? else {
        return Ok(());
    };
    if let Some(class) = runtime.get("runtimeClassName").and_then(Value::as_str) {
        caveat(&format!(
            "podRuntime.runtimeClassName {class:?}: Podman runs the container with the OCI \
             runtime of that name, which the host must have"
        ));
        unit.add(
            "Container",
            "PodmanArgs",
            quote(&format!("--runtime={class}")),
        );
    }
    if runtime
        .get("shareProcessNamespace")
        .and_then(Value::as_bool)
        == Some(true)
        && !pod.in_pod
    {
        unhonoured(
            pod.context,
            "podRuntime.shareProcessNamespace: a container without sidecars has its own process \
             namespace; there is nothing to share it with",
        )?;
    }
    Ok(())
}

/// The container's limits as the service's cgroup limits (Quadlet runs the container in the
/// service's cgroup, `--cgroups=split`): `MemoryMax=`, `CPUQuota=`; its CPU request as
/// `CPUWeight=`, the weight the kubelet gives it.
fn resources(pod: &Pod, spec: &Value, path: &str, unit: &mut Unit) -> Result<(), TransformError> {
    let Some(resources) = spec.get("resources") else {
        return Ok(());
    };
    for (group, values) in sorted_entries(Some(resources)) {
        for (name, value) in sorted_entries(Some(values)) {
            let parsed = quantity::parse(value);
            match (group.as_str(), name.as_str(), parsed) {
                ("limits", "memory", Some(bytes)) => {
                    unit.set("Service", "MemoryMax", format!("{}", bytes.ceil() as u64))
                }
                ("limits", "cpu", Some(cores)) => unit.set(
                    "Service",
                    "CPUQuota",
                    format!("{}%", (cores * 100.0).ceil() as u64),
                ),
                ("requests", "cpu", Some(cores)) => {
                    let shares = ((cores * 1024.0).ceil() as u64).max(2);
                    let weight = 1 + ((shares - 2) * 9999) / 262_142;
                    unit.set("Service", "CPUWeight", weight.clamp(1, 10_000).to_string());
                }
                // A request is what a scheduler places by, and there is none.
                ("requests", "memory", Some(_)) => {}
                _ => unhonoured(
                    pod.context,
                    &format!("{path}.resources.{group}.{name}: a unit has no such limit"),
                )?,
            }
        }
    }
    Ok(())
}

/// `lifecycle` hooks and GracefulShutdown: `exec` and `sleep` hooks as `podman exec` in
/// `[Service] ExecStartPost=` and `ExecStop=` (which runs before Quadlet's own stop), the grace
/// period as `StopTimeout=`.
fn lifecycle(
    pod: &Pod,
    spec: &Value,
    name: &str,
    path: &str,
    main: bool,
    unit: &mut Unit,
) -> Result<(), TransformError> {
    let shutdown = pod.shutdown.clone().unwrap_or(Value::Null);
    let grace = shutdown
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_u64);
    if let Some(grace) = grace {
        unit.set("Container", "StopTimeout", grace.to_string());
        if grace > 60 {
            unit.set("Service", "TimeoutStopSec", (grace + 30).to_string());
        }
    }
    let hooks = spec.get("lifecycle").cloned().unwrap_or(Value::Null);
    let pre_stop = hooks
        .get("preStop")
        .or(if main { shutdown.get("preStop") } else { None });
    for (hook, key, handler) in [
        ("postStart", "ExecStartPost", hooks.get("postStart")),
        ("preStop", "ExecStop", pre_stop),
    ] {
        let Some(handler) = handler else { continue };
        // The kubelet kills a container whose postStart hook fails, and stops one whose preStop
        // hook fails all the same: `-` makes systemd go on after a failed ExecStop=.
        let ignored = if hook == "preStop" { "-" } else { "" };
        if let Some(command) = handler
            .get("exec")
            .and_then(|e| e.get("command"))
            .and_then(Value::as_array)
        {
            let mut line = vec![
                "/usr/bin/podman".to_owned(),
                "exec".to_owned(),
                name.to_owned(),
            ];
            line.extend(
                command
                    .iter()
                    .map(|c| c.as_str().unwrap_or_default().to_owned()),
            );
            unit.add(
                "Service",
                key,
                format!("{}{}", ignored, words(line.iter().map(String::as_str))),
            );
        } else if let Some(seconds) = handler
            .get("sleep")
            .and_then(|s| s.get("seconds"))
            .and_then(Value::as_u64)
        {
            caveat(&format!(
                "{path}.lifecycle.{hook}: the sleep runs as `sleep {seconds}` inside the \
                 container (podman exec): the image needs it"
            ));
            unit.add(
                "Service",
                key,
                format!("{ignored}/usr/bin/podman exec {name} sleep {seconds}"),
            );
        } else {
            unhonoured(
                pod.context,
                &format!("{path}.lifecycle.{hook}: only exec and sleep hooks run from a unit"),
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_fully_qualified() {
        assert_eq!(qualified("nginx:1.27"), "docker.io/library/nginx:1.27");
        assert_eq!(
            qualified("fluent/fluent-bit:3.2"),
            "docker.io/fluent/fluent-bit:3.2"
        );
        assert_eq!(qualified("ghcr.io/acme/api:1"), "ghcr.io/acme/api:1");
        assert_eq!(qualified("localhost/app"), "localhost/app");
        assert_eq!(qualified("registry:5000/app"), "registry:5000/app");
    }
}
