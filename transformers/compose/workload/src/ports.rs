//! Expose as the main service's published `ports`.
//!
//! On compose every service is reachable by its name on the project network, on the ports its
//! containers listen on: that is a ClusterIP (or Headless) Service, so those publish nothing.
//! A NodePort is published on the Docker host at its `nodePort` (or a port Docker picks when it
//! has none, as Kubernetes picks one), a LoadBalancer at its `port`. Compose publishes on every
//! interface of the host, as a NodePort listens on every node's address.
//!
//! What is lost: a Service maps its `port` to the container's `targetPort`, and compose's
//! network does not, so a client on the project network reaches the container's port (a
//! warning names both when they differ); and the Service's traffic policies, session affinity,
//! IP families and load balancer settings, which are a cluster's.

use opm_compose_common::sorted_entries;
use opm_guest::{Map, TransformError, Value, json};
use opm_module_common::notes::{caveat, unhonoured};

use crate::pod::Pod;

/// Expose's fields that compose cannot honour, with why. (The traffic policies need nothing:
/// every copy runs on the one Docker host, so a node-local policy is honoured as it is.)
const LOST: &[(&str, &str)] = &[
    (
        "sessionAffinity",
        "Docker's DNS spreads clients over a service's copies, with no affinity",
    ),
    (
        "sessionAffinityConfig",
        "Docker's DNS spreads clients over a service's copies, with no affinity",
    ),
    (
        "loadBalancerClass",
        "compose has no load balancer to choose",
    ),
    (
        "loadBalancerSourceRanges",
        "a published port is open to every address that reaches the host",
    ),
    (
        "ipFamilyPolicy",
        "Docker chooses the address families of a published port (IPv6 needs enable_ipv6 on the network)",
    ),
    (
        "ipFamilies",
        "Docker chooses the address families of a published port (IPv6 needs enable_ipv6 on the network)",
    ),
];

/// The main service's `ports`, and the labels Expose adds (its `labels` and `annotations`).
pub fn published(
    pod: &Pod,
    main: &Value,
) -> Result<(Vec<Value>, Map<String, Value>), TransformError> {
    let Some(expose) = pod.component.field::<Value>("expose")? else {
        return Ok((Vec::new(), Map::new()));
    };
    if let Some(name) = expose.get("name").and_then(Value::as_str) {
        unhonoured(
            pod.context,
            &format!(
                "expose.name {name:?}: a client on the project network reaches the service by \
                 its component's name; the pinned name is the Kubernetes Service's"
            ),
        )?;
    }
    let kind = expose
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    let mut lost: Vec<(&str, Vec<String>)> = Vec::new();
    for (field, why) in LOST {
        let Some(value) = expose.get(*field) else {
            continue;
        };
        if *field == "sessionAffinity" && value == "None" {
            continue;
        }
        let setting = format!("expose.{field} {value}");
        match lost.iter_mut().find(|(reason, _)| reason == why) {
            Some((_, settings)) => settings.push(setting),
            None => lost.push((why, vec![setting])),
        }
    }
    for (why, settings) in lost {
        unhonoured(pod.context, &format!("{}: {why}", settings.join(", ")))?;
    }
    let container_ports = main.get("ports");
    let mut ports = Vec::new();
    let declared = expose
        .get("ports")
        .filter(|p| p.as_object().is_some_and(|p| !p.is_empty()));
    let entries: Vec<(String, u64, u64, Option<&Value>)> = match declared {
        Some(declared) => sorted_entries(Some(declared))
            .into_iter()
            .map(|(name, port)| {
                let number = port.get("port").and_then(Value::as_u64).ok_or_else(|| {
                    TransformError::invalid(format!("expose.ports.{name}.port is required"))
                })?;
                let target = target_port(name, port, number, container_ports)?;
                Ok((name.clone(), number, target, Some(port)))
            })
            .collect::<Result<_, TransformError>>()?,
        None => sorted_entries(container_ports)
            .into_iter()
            .filter_map(|(name, port)| {
                let number = port.get("containerPort").and_then(Value::as_u64)?;
                Some((name.clone(), number, number, Some(port)))
            })
            .collect(),
    };
    if pod.host_network && !entries.is_empty() {
        caveat(&format!(
            "expose: the pod uses the host's network (podNetwork.hostNetwork), so its ports are \
             the host's own and nothing is published ({} {kind})",
            pod.service
        ));
        return Ok((Vec::new(), Map::new()));
    }
    for (name, number, target, port) in entries {
        let protocol = port
            .and_then(|p| p.get("protocol"))
            .and_then(Value::as_str)
            .unwrap_or("TCP")
            .to_lowercase();
        let published = match kind {
            "NodePort" => port.and_then(|p| p.get("nodePort")).and_then(Value::as_u64),
            "LoadBalancer" => Some(number),
            _ => {
                if number != target {
                    unhonoured(
                        pod.context,
                        &format!(
                            "expose.ports.{name}: a client on the project network reaches {}:{target}, \
                             the container's port; compose does not map the Service port {number} \
                             to it",
                            pod.service
                        ),
                    )?;
                }
                continue;
            }
        };
        if number != target {
            unhonoured(
                pod.context,
                &format!(
                    "expose.ports.{name}: published on the host at {}, but a client on the \
                     project network reaches {}:{target}, the container's port, not the Service \
                     port {number}",
                    published.map_or_else(|| "a port Docker picks".to_owned(), |p| p.to_string()),
                    pod.service
                ),
            )?;
        }
        let mut entry = Map::new();
        entry.insert("name".into(), json!(name));
        entry.insert("target".into(), json!(target));
        if let Some(published) = published {
            entry.insert(
                "published".into(),
                json!(host_ports(pod, &name, published)?),
            );
        }
        entry.insert("protocol".into(), json!(protocol));
        if let Some(app) = port.and_then(|p| p.get("appProtocol")) {
            entry.insert("app_protocol".into(), app.clone());
        }
        ports.push(Value::Object(entry));
    }
    Ok((ports, opm_compose_common::entry_labels(&expose)))
}

/// The host port(s) of a port published at `port`: one container binds a host port, so the
/// copies of a service with several get a range from it, each its own port.
fn host_ports(pod: &Pod, name: &str, port: u64) -> Result<String, TransformError> {
    if pod.copies <= 1 {
        return Ok(port.to_string());
    }
    let last = port + pod.copies - 1;
    unhonoured(
        pod.context,
        &format!(
            "expose.ports.{name}: a host port is one container's, and {} runs {} copies: they are \
             published on {port}-{last}, one port each, not balanced behind {port}",
            pod.service, pod.copies
        ),
    )?;
    Ok(format!("{port}-{last}"))
}

/// The container port an Expose port sends to: its `targetPort` (a number, or the name of a
/// container port), else the container port of its own name, else its port number.
fn target_port(
    name: &str,
    port: &Value,
    number: u64,
    container_ports: Option<&Value>,
) -> Result<u64, TransformError> {
    let by_name = |wanted: &str| {
        container_ports
            .and_then(|ports| ports.get(wanted))
            .and_then(|port| port.get("containerPort"))
            .and_then(Value::as_u64)
    };
    match port.get("targetPort") {
        Some(Value::Number(target)) => target.as_u64().ok_or_else(|| {
            TransformError::invalid(format!("expose.ports.{name}.targetPort is not a port"))
        }),
        Some(Value::String(target)) => by_name(target).ok_or_else(|| {
            TransformError::invalid(format!(
                "expose.ports.{name}.targetPort {target:?} is not a port of the container"
            ))
        }),
        _ => Ok(by_name(name).unwrap_or(number)),
    }
}
