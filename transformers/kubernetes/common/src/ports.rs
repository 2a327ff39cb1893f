//! The ports a component offers through its Service: `expose.ports` when given, else every
//! container port, in name order. The Service, the StatefulSet's headless Service and the Ingress
//! all read them from here, so a port name means the same thing to each.
//!
//! An expose port's `targetPort` is a number, or the name of a container port. Left out, it is
//! the container port of the same name (by name) when there is one, else the port number. Its
//! `protocol`, `appProtocol` and `nodePort` are copied as written.

use opm_guest::{Component, Map, TransformError, Value, json};

use crate::{copy_fields, sorted_entries};

/// The Expose trait of a component whose trait `what` (`an Ingress`, `a GrpcRoute`) uses the
/// Service that Expose renders, `how` (`the Ingress routes to`); without it, an error that says
/// so.
pub fn required_expose(
    component: &Component,
    what: &str,
    how: &str,
) -> Result<Value, TransformError> {
    component.field("expose")?.ok_or_else(|| {
        TransformError::invalid(format!(
            "component {:?} has {what} but no Expose trait: {how} the Service that Expose renders",
            component.name()
        ))
    })
}

/// The Service ports of `component`, as Kubernetes `ServicePort`s. `expose` is the Expose trait's
/// value, if the component has one.
pub fn service_ports(
    component: &Component,
    expose: Option<&Value>,
) -> Result<Vec<Value>, TransformError> {
    let container: Option<Value> = component.field("container")?;
    let container_ports = container.as_ref().and_then(|c| c.get("ports"));
    let declared = expose.and_then(|expose| expose.get("ports"));
    let mut ports = Vec::new();
    if declared
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty())
    {
        for (name, port) in sorted_entries(declared) {
            let number = port.get("port").cloned().ok_or_else(|| {
                TransformError::invalid(format!("expose.ports.{name}.port is required"))
            })?;
            let target = target_port(name, port, &number, container_ports)?;
            let mut entry = port_entry(name, number, target);
            copy_fields(port, &mut entry, &["protocol", "appProtocol", "nodePort"]);
            ports.push(Value::Object(entry));
        }
    } else {
        for (name, port) in sorted_entries(container_ports) {
            let number = port.get("containerPort").cloned().unwrap_or(Value::Null);
            let mut entry = port_entry(name, number, json!(name));
            copy_fields(port, &mut entry, &["protocol"]);
            ports.push(Value::Object(entry));
        }
    }
    Ok(ports)
}

/// The names of [`service_ports`], in order.
pub fn port_names(ports: &[Value]) -> Vec<&str> {
    ports
        .iter()
        .filter_map(|port| port.get("name").and_then(Value::as_str))
        .collect()
}

/// The port of the Service (one of [`service_ports`]) that `field` names, or its only port
/// when `field` names none; an error when the name is not a port, or when it is left out and
/// the Service has several.
pub fn backend_port<'a>(
    ports: &'a [Value],
    wanted: Option<&str>,
    field: &str,
) -> Result<&'a Value, TransformError> {
    let names = port_names(ports);
    match (wanted, ports) {
        (Some(name), _) => ports
            .iter()
            .find(|port| port.get("name").and_then(Value::as_str) == Some(name))
            .ok_or_else(|| {
                TransformError::invalid(format!(
                    "{field} {name:?} is not a port of the Service; it has {}",
                    if names.is_empty() {
                        "none".to_owned()
                    } else {
                        names.join(", ")
                    }
                ))
            }),
        (None, [only]) => Ok(only),
        (None, _) => Err(TransformError::invalid(format!(
            "{field} is required when the Service has several ports ({})",
            names.join(", ")
        ))),
    }
}

/// The `targetPort` of the expose port `name`: as given, where a name must be a port of the
/// container; else the container port named `name`, by name; else the port number.
fn target_port(
    name: &str,
    port: &Value,
    number: &Value,
    container_ports: Option<&Value>,
) -> Result<Value, TransformError> {
    let names: Vec<&str> = sorted_entries(container_ports)
        .into_iter()
        .map(|(name, _)| name.as_str())
        .collect();
    match port.get("targetPort").filter(|target| !target.is_null()) {
        Some(Value::String(target)) if names.contains(&target.as_str()) => Ok(json!(target)),
        Some(Value::String(target)) => Err(TransformError::invalid(format!(
            "expose.ports.{name}.targetPort {target:?} is not a port of the container; it has {}",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ))),
        Some(target) => Ok(target.clone()),
        None if names.contains(&name) => Ok(json!(name)),
        None => Ok(number.clone()),
    }
}

fn port_entry(name: &str, port: Value, target: Value) -> Map<String, Value> {
    let mut entry = Map::new();
    entry.insert("name".into(), Value::from(name));
    entry.insert("port".into(), port);
    entry.insert("targetPort".into(), target);
    entry
}

#[cfg(test)]
mod tests {
    use super::*;

    fn component(spec: Value) -> Component {
        Component::from_value(json!({"metadata": {"name": "api"}, "spec": spec})).unwrap()
    }

    #[test]
    fn container_ports_by_default_targeting_the_named_port() {
        let c = component(json!({"container": {"image": "x", "ports": {
            "metrics": {"containerPort": 9090}, "http": {"containerPort": 8080, "protocol": "TCP"}}}}));
        let ports = service_ports(&c, Some(&json!({"type": "ClusterIP"}))).unwrap();
        assert_eq!(
            ports,
            [
                json!({"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"}),
                json!({"name": "metrics", "port": 9090, "targetPort": "metrics"}),
            ]
        );
        assert_eq!(port_names(&ports), ["http", "metrics"]);
    }

    #[test]
    fn declared_ports_win() {
        let c = component(
            json!({"container": {"image": "x", "ports": {"http": {"containerPort": 8080}}}}),
        );
        let expose = json!({"ports": {"web": {"port": 80, "targetPort": "http", "nodePort": 30080,
                                              "appProtocol": "kubernetes.io/ws"}}});
        let ports = service_ports(&c, Some(&expose)).unwrap();
        assert_eq!(
            ports,
            [json!({"name": "web", "port": 80, "targetPort": "http",
                    "appProtocol": "kubernetes.io/ws", "nodePort": 30080})]
        );
    }

    #[test]
    fn a_declared_port_targets_the_container_port_of_its_name_else_its_number() {
        let c = component(json!({"container": {"image": "x", "ports": {
            "http": {"containerPort": 8080}, "metrics": {"containerPort": 9090}}}}));
        let expose = json!({"ports": {"http": {"port": 80}, "admin": {"port": 8443},
                                      "raw": {"port": 81, "targetPort": 8081}}});
        let ports = service_ports(&c, Some(&expose)).unwrap();
        assert_eq!(
            ports,
            [
                json!({"name": "admin", "port": 8443, "targetPort": 8443}),
                json!({"name": "http", "port": 80, "targetPort": "http"}),
                json!({"name": "raw", "port": 81, "targetPort": 8081}),
            ]
        );
    }

    #[test]
    fn a_target_port_name_that_is_no_container_port_is_invalid() {
        let c = component(json!({"container": {"image": "x", "ports": {
            "http": {"containerPort": 8080}, "metrics": {"containerPort": 9090}}}}));
        let expose = json!({"ports": {"web": {"port": 80, "targetPort": "htp"}}});
        let err = service_ports(&c, Some(&expose)).unwrap_err();
        assert_eq!(
            err,
            TransformError::invalid(
                "expose.ports.web.targetPort \"htp\" is not a port of the container; it has \
                 http, metrics"
            )
        );
        let bare = component(json!({"container": {"image": "x"}}));
        let err = service_ports(&bare, Some(&expose)).unwrap_err();
        assert!(err.to_string().ends_with("it has none"), "{err}");
    }

    #[test]
    fn no_ports_at_all_is_an_empty_list() {
        let c = component(json!({"container": {"image": "x"}}));
        assert!(service_ports(&c, None).unwrap().is_empty());
    }
}
