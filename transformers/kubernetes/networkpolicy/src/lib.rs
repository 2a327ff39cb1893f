//! NetworkPolicyTransformer: renders the NetworkPolicy policy into a `networking.k8s.io/v1`
//! NetworkPolicy that admits ingress to the component's pods only from the listed sources, and
//! only on the listed ports.
//!
//! A source is `{component}` (pods of that component of the module, in the same namespace,
//! selected by the same labels as the component's own workload: module and component name),
//! `{namespace}` (every pod of that namespace) or `{cidr}`. Ports are names of the main
//! container's ports, with their protocols. No sources means no ingress at all, so ports without
//! sources are refused: they would restrict nothing.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::{component_selector_labels, object_metadata, selector_labels};

/// Renders the NetworkPolicy policy into NetworkPolicies.
pub struct NetworkPolicyTransformer;

/// The label Kubernetes puts on every namespace with its name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

impl Transformer for NetworkPolicyTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let policy: Value = component.require("networkPolicy")?;
        let sources = policy
            .get("allowFrom")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let from = sources
            .iter()
            .enumerate()
            .map(|(index, source)| peer(index, source, context))
            .collect::<Result<Vec<_>, _>>()?;
        let ports = ports(component, policy.get("ports"))?;
        if from.is_empty() && !ports.is_empty() {
            return Err(TransformError::invalid(
                "networkPolicy.ports is set but networkPolicy.allowFrom is empty: ports only \
                 restrict what the allowFrom peers may reach, and with no allowFrom entries no \
                 ingress is allowed at all; add allowFrom entries or remove ports",
            ));
        }
        let mut ingress = Vec::new();
        if !from.is_empty() {
            let mut rule = Map::new();
            rule.insert("from".into(), Value::Array(from));
            if !ports.is_empty() {
                rule.insert("ports".into(), Value::Array(ports));
            }
            ingress.push(Value::Object(rule));
        }
        Ok(vec![json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": object_metadata(component, context, &context.object_name(component.name())),
            "spec": {
                "podSelector": {"matchLabels": selector_labels(component, context)},
                "policyTypes": ["Ingress"],
                "ingress": ingress,
            },
        })])
    }
}

/// One `allowFrom` entry as a NetworkPolicyPeer. A component is one of the module's, so it is
/// selected by its selector labels in the module of `context`.
fn peer(index: usize, source: &Value, context: &Context) -> Result<Value, TransformError> {
    let one = |key: &str| source.get(key).and_then(Value::as_str);
    match (one("component"), one("namespace"), one("cidr")) {
        (Some(name), None, None) => Ok(json!({
            "podSelector": {"matchLabels": component_selector_labels(name, context)},
        })),
        (None, Some(namespace), None) => Ok(json!({
            "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: namespace}},
        })),
        (None, None, Some(cidr)) => Ok(json!({"ipBlock": {"cidr": cidr}})),
        _ => Err(TransformError::invalid(format!(
            "networkPolicy.allowFrom[{index}] needs exactly one of component, namespace, cidr"
        ))),
    }
}

/// The named container ports as NetworkPolicyPorts, with the container's protocol (default TCP).
fn ports(component: &Component, names: Option<&Value>) -> Result<Vec<Value>, TransformError> {
    let Some(names) = names.and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    let container: Option<Value> = component.field("container")?;
    let declared = container.as_ref().and_then(|c| c.get("ports"));
    names
        .iter()
        .map(|name| {
            let name = name.as_str().unwrap_or_default();
            let port = declared.and_then(|ports| ports.get(name)).ok_or_else(|| {
                TransformError::invalid(format!(
                    "networkPolicy.ports names {name:?}, which is not a container port of {:?}",
                    component.name()
                ))
            })?;
            let protocol = port
                .get("protocol")
                .and_then(Value::as_str)
                .unwrap_or("TCP");
            Ok(json!({"protocol": protocol, "port": name}))
        })
        .collect()
}

opm_guest::export!(NetworkPolicyTransformer);

#[cfg(test)]
mod tests {
    use super::*;

    fn render(policy: Value) -> Result<Vec<Value>, TransformError> {
        let component = Component::from_value(json!({
            "metadata": {"name": "db"},
            "spec": {"container": {"image": "pg", "ports": {"pg": {"containerPort": 5432},
                                                            "dns": {"containerPort": 53, "protocol": "UDP"}}},
                     "networkPolicy": policy},
        }))?;
        let context = Context {
            name: "shop".into(),
            ..Context::default()
        };
        NetworkPolicyTransformer::transform(&component, &context)
    }

    #[test]
    fn minimal_policy_denies_all_ingress() {
        let out = render(json!({})).unwrap();
        assert_eq!(
            out[0]["spec"],
            json!({"podSelector": {"matchLabels": {"app.kubernetes.io/instance": "shop",
                                                   "app.kubernetes.io/name": "db"}},
                   "policyTypes": ["Ingress"], "ingress": []})
        );
        let no_ports = render(json!({"allowFrom": [], "ports": []})).unwrap();
        assert_eq!(no_ports[0]["spec"]["ingress"], json!([]));
    }

    #[test]
    fn ports_without_sources_are_invalid_rather_than_dropped() {
        let err = render(json!({"ports": ["pg"]})).unwrap_err();
        assert!(
            matches!(&err, TransformError::InvalidComponent(m)
                if m.contains("networkPolicy.ports") && m.contains("allowFrom is empty")
                    && m.contains("add allowFrom entries or remove ports")),
            "{err}"
        );
        assert!(render(json!({"allowFrom": [], "ports": ["pg"]})).is_err());
    }

    #[test]
    fn maximal_policy_allows_components_namespaces_and_cidrs_on_named_ports() {
        let out = render(json!({
            "allowFrom": [{"component": "api"}, {"namespace": "monitoring"}, {"cidr": "10.0.0.0/8"}],
            "ports": ["pg", "dns"],
        }))
        .unwrap();
        assert_eq!(
            out[0]["spec"]["ingress"],
            json!([{
                "from": [
                    {"podSelector": {"matchLabels": {"app.kubernetes.io/instance": "shop",
                                                     "app.kubernetes.io/name": "api"}}},
                    {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}},
                    {"ipBlock": {"cidr": "10.0.0.0/8"}},
                ],
                "ports": [{"protocol": "TCP", "port": "pg"}, {"protocol": "UDP", "port": "dns"}],
            }])
        );
    }

    #[test]
    fn unknown_ports_and_ambiguous_sources_are_invalid() {
        let err =
            render(json!({"allowFrom": [{"component": "api"}], "ports": ["http"]})).unwrap_err();
        assert!(err.to_string().contains("\"http\""), "{err}");
        let err =
            render(json!({"allowFrom": [{"component": "api", "cidr": "1.2.3.4/32"}]})).unwrap_err();
        assert!(err.to_string().contains("allowFrom[0]"), "{err}");
    }
}
