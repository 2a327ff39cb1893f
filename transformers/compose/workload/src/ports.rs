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

use opm_compose_common::notes::{caveat, unhonoured};
use opm_compose_common::sorted_entries;
use opm_guest::{Map, TransformError, Value, json};

use crate::pod::Pod;

/// Expose's fields that compose has no use for, with why.
const LOST: &[(&str, &str)] = &[
    (
        "sessionAffinity",
        "Docker's DNS spreads clients over a service's copies",
    ),
    (
        "sessionAffinityConfig",
        "Docker's DNS spreads clients over a service's copies",
    ),
    (
        "externalTrafficPolicy",
        "a published port reaches the one Docker host",
    ),
    ("internalTrafficPolicy", "the project network has no nodes"),
    ("loadBalancerClass", "compose has no load balancer"),
    (
        "loadBalancerSourceRanges",
        "a published port is open to every address that reaches the host",
    ),
    (
        "ipFamilyPolicy",
        "Docker publishes on the host's IPv4 and IPv6 addresses alike",
    ),
    (
        "ipFamilies",
        "Docker publishes on the host's IPv4 and IPv6 addresses alike",
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
    let kind = expose
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    for (field, why) in LOST {
        if let Some(value) = expose.get(*field) {
            unhonoured(pod.context, &format!("expose.{field} {value}: {why}"))?;
        }
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
            entry.insert("published".into(), json!(published.to_string()));
        }
        entry.insert("protocol".into(), json!(protocol));
        if let Some(app) = port.and_then(|p| p.get("appProtocol")) {
            entry.insert("app_protocol".into(), app.clone());
        }
        ports.push(Value::Object(entry));
    }
    Ok((ports, opm_compose_common::entry_labels(&expose)))
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
