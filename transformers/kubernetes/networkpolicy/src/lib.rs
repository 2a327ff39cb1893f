//! NetworkPolicyTransformer: renders the NetworkPolicy policy into a `networking.k8s.io/v1`
//! NetworkPolicy over the component's pods that admits ingress only from the listed peers on the
//! listed ports, and, when asked, egress only to the listed peers on their ports.
//!
//! A peer is `{component}` (pods of that component of the module, in the same namespace,
//! selected by the same labels as the component's own workload: module and component name),
//! `{namespace}` (every pod of that namespace), `{cidr, except}` (an IP block, `except` strictly
//! inside it), or `{podSelector, namespaceSelector}` (label selectors, either or both, as the
//! API spells them: pods matching in this namespace, every pod of the matching namespaces, or
//! pods matching in the matching namespaces).
//!
//! Ingress: `allowFrom` peers, one rule on `ports` (names of the main container's ports, with
//! their protocols). No peers means no ingress at all, so ports without peers are refused: they
//! would restrict nothing.
//!
//! Egress: `allowTo` entries, each a peer (or none: any destination) with its own `ports`
//! (numbers, with `protocol` and an `endPort` for a range), one rule each, in the order written.
//! Egress is restricted when `allowTo` is set or `policyTypes` names Egress; `policyTypes` left
//! out is Ingress, plus Egress with `allowTo`, so a policy written before egress existed renders
//! as it did.
//!
//! DNS: an egress policy that forgets port 53 breaks name resolution, which fails in ways that
//! do not point at the policy. So whenever egress is restricted, a last rule admits port 53 over
//! UDP and TCP to any destination (a cluster's DNS Service, a node-local cache on a link-local
//! address, or an upstream resolver); `allowDNS: false` leaves it out, for a module that writes
//! its own DNS rule (say `allowTo` the kube-system namespace on 53) or means to deny DNS.

use std::net::IpAddr;

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::selector::label_selector;
use opm_k8s_common::{component_selector_labels, object_metadata, selector_labels};

/// Renders the NetworkPolicy policy into NetworkPolicies.
pub struct NetworkPolicyTransformer;

/// The label Kubernetes puts on every namespace with its name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The port DNS answers on.
pub const DNS_PORT: u16 = 53;

impl Transformer for NetworkPolicyTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let policy: Value = component.require("networkPolicy")?;
        let (restricts_ingress, restricts_egress) = policy_types(&policy)?;
        let mut spec = Map::new();
        spec.insert(
            "podSelector".into(),
            json!({"matchLabels": selector_labels(component, context)}),
        );
        let mut types = Vec::new();
        if restricts_ingress {
            types.push("Ingress");
        }
        if restricts_egress {
            types.push("Egress");
        }
        spec.insert("policyTypes".into(), json!(types));
        if restricts_ingress {
            spec.insert(
                "ingress".into(),
                Value::Array(ingress(component, context, &policy)?),
            );
        } else if list(policy.get("allowFrom")).next().is_some() || policy.get("ports").is_some() {
            return Err(TransformError::invalid(
                "networkPolicy.policyTypes leaves out Ingress, so allowFrom and ports would \
                 restrict nothing; add Ingress to policyTypes or remove them",
            ));
        }
        if restricts_egress {
            spec.insert("egress".into(), Value::Array(egress(context, &policy)?));
        } else if policy.get("allowDNS").is_some() {
            return Err(TransformError::invalid(
                "networkPolicy.allowDNS only applies when egress is restricted; add allowTo \
                 (or Egress to policyTypes), or remove allowDNS",
            ));
        }
        Ok(vec![json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": object_metadata(component, context, &context.object_name(component.name())),
            "spec": spec,
        })])
    }
}

/// Whether the policy restricts ingress and egress: `policyTypes` as written, or else ingress
/// always and egress when `allowTo` is set.
fn policy_types(policy: &Value) -> Result<(bool, bool), TransformError> {
    let Some(types) = policy.get("policyTypes") else {
        return Ok((true, policy.get("allowTo").is_some()));
    };
    let types: Vec<&str> = list(Some(types)).filter_map(Value::as_str).collect();
    if types.is_empty() || types.iter().any(|t| *t != "Ingress" && *t != "Egress") {
        return Err(TransformError::invalid(
            "networkPolicy.policyTypes must list Ingress, Egress or both",
        ));
    }
    let egress = types.contains(&"Egress");
    if !egress && policy.get("allowTo").is_some() {
        return Err(TransformError::invalid(
            "networkPolicy.policyTypes leaves out Egress, so allowTo would restrict nothing; \
             add Egress to policyTypes or remove allowTo",
        ));
    }
    Ok((types.contains(&"Ingress"), egress))
}

/// The ingress rules: none (no ingress at all) without `allowFrom` peers, else one rule from
/// every peer on `ports`.
fn ingress(
    component: &Component,
    context: &Context,
    policy: &Value,
) -> Result<Vec<Value>, TransformError> {
    let from = list(policy.get("allowFrom"))
        .enumerate()
        .map(|(index, source)| {
            peer(
                &format!("networkPolicy.allowFrom[{index}]"),
                source,
                context,
            )
        })
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
    Ok(ingress)
}

/// The egress rules: one per `allowTo` entry, to its peer (any destination without one) on its
/// ports (any port without them), then DNS unless `allowDNS` is false.
fn egress(context: &Context, policy: &Value) -> Result<Vec<Value>, TransformError> {
    let mut rules = Vec::new();
    for (index, entry) in list(policy.get("allowTo")).enumerate() {
        let field = format!("networkPolicy.allowTo[{index}]");
        let mut rule = Map::new();
        let has_peer = entry
            .as_object()
            .is_some_and(|entry| entry.keys().any(|key| key != "ports"));
        if has_peer {
            rule.insert("to".into(), json!([peer(&field, entry, context)?]));
        }
        let ports = list(entry.get("ports"))
            .enumerate()
            .map(|(index, port)| egress_port(&format!("{field}.ports[{index}]"), port))
            .collect::<Result<Vec<_>, _>>()?;
        if !ports.is_empty() {
            rule.insert("ports".into(), Value::Array(ports));
        }
        if rule.is_empty() {
            return Err(TransformError::invalid(format!(
                "{field} needs a peer, ports or both; an empty entry would admit all egress"
            )));
        }
        rules.push(Value::Object(rule));
    }
    if policy.get("allowDNS").and_then(Value::as_bool) != Some(false) {
        rules.push(json!({"ports": [
            {"protocol": "UDP", "port": DNS_PORT},
            {"protocol": "TCP", "port": DNS_PORT},
        ]}));
    }
    Ok(rules)
}

/// One peer as a NetworkPolicyPeer. A component is one of the module's, so it is selected by its
/// selector labels in the module of `context`. `field` names the entry in errors; its `ports`,
/// if any, are not part of the peer.
fn peer(field: &str, source: &Value, context: &Context) -> Result<Value, TransformError> {
    let keys: Vec<&str> = source
        .as_object()
        .into_iter()
        .flat_map(|entry| entry.keys())
        .map(String::as_str)
        .filter(|key| *key != "ports")
        .collect();
    let text = |key: &str| source.get(key).and_then(Value::as_str);
    match keys.as_slice() {
        ["component"] => Ok(json!({
            "podSelector": {"matchLabels": component_selector_labels(text("component").unwrap_or_default(), context)},
        })),
        ["namespace"] => Ok(json!({
            "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: text("namespace")}},
        })),
        ["cidr"] | ["cidr", "except"] | ["except", "cidr"] => ip_block(field, source),
        selectors
            if !selectors.is_empty()
                && selectors
                    .iter()
                    .all(|key| matches!(*key, "podSelector" | "namespaceSelector")) =>
        {
            let mut peer = Map::new();
            for key in ["podSelector", "namespaceSelector"] {
                if let Some(selector) = source.get(key) {
                    peer.insert(
                        key.into(),
                        label_selector(selector, &format!("{field}.{key}"))?,
                    );
                }
            }
            Ok(Value::Object(peer))
        }
        _ => Err(TransformError::invalid(format!(
            "{field} needs exactly one of component, namespace, cidr (with except), or \
             podSelector and namespaceSelector (either or both)"
        ))),
    }
}

/// `{cidr, except}` as an ipBlock; each `except` must be strictly inside `cidr`, as the API
/// server wants.
fn ip_block(field: &str, source: &Value) -> Result<Value, TransformError> {
    let cidr = source
        .get("cidr")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let outer = parse_cidr(cidr).ok_or_else(|| {
        TransformError::invalid(format!(
            "{field}.cidr {cidr:?} is not an IP block (address/prefix)"
        ))
    })?;
    let mut block = Map::new();
    block.insert("cidr".into(), Value::from(cidr));
    if let Some(except) = source.get("except") {
        for (index, inner) in list(Some(except)).enumerate() {
            let text = inner.as_str().unwrap_or_default();
            let parsed = parse_cidr(text).ok_or_else(|| {
                TransformError::invalid(format!(
                    "{field}.except[{index}] {text:?} is not an IP block (address/prefix)"
                ))
            })?;
            if !strictly_inside(parsed, outer) {
                return Err(TransformError::invalid(format!(
                    "{field}.except[{index}] {text:?} is not strictly inside cidr {cidr:?}"
                )));
            }
        }
        block.insert("except".into(), except.clone());
    }
    Ok(json!({"ipBlock": block}))
}

/// An `address/prefix` block: its address and prefix length, the length within the family's.
fn parse_cidr(text: &str) -> Option<(IpAddr, u32)> {
    let (address, prefix) = text.split_once('/')?;
    let address: IpAddr = address.parse().ok()?;
    let prefix: u32 = prefix.parse().ok()?;
    let bits = if address.is_ipv4() { 32 } else { 128 };
    (prefix <= bits).then_some((address, prefix))
}

/// Whether the block `inner` is a strict subset of `outer`: the same family, a longer prefix,
/// and the same network bits over `outer`'s prefix.
fn strictly_inside(inner: (IpAddr, u32), outer: (IpAddr, u32)) -> bool {
    let network = |address: IpAddr, prefix: u32| -> u128 {
        let (value, bits) = match address {
            IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32),
            IpAddr::V6(v6) => (u128::from(v6), 128),
        };
        value.checked_shr(bits - prefix).unwrap_or(0)
    };
    inner.0.is_ipv4() == outer.0.is_ipv4()
        && inner.1 > outer.1
        && network(inner.0, outer.1) == network(outer.0, outer.1)
}

/// One egress port: a number with its protocol (TCP unless it says) and, for a range, an
/// `endPort` no lower than the port.
fn egress_port(field: &str, written: &Value) -> Result<Value, TransformError> {
    let port = written
        .get("port")
        .and_then(Value::as_u64)
        .filter(|port| (1..=65_535).contains(port))
        .ok_or_else(|| TransformError::invalid(format!("{field}.port must be 1 to 65535")))?;
    let protocol = written
        .get("protocol")
        .and_then(Value::as_str)
        .unwrap_or("TCP");
    if !matches!(protocol, "TCP" | "UDP" | "SCTP") {
        return Err(TransformError::invalid(format!(
            "{field}.protocol must be TCP, UDP or SCTP"
        )));
    }
    let mut out = Map::new();
    out.insert("protocol".into(), Value::from(protocol));
    out.insert("port".into(), json!(port));
    if let Some(end) = written.get("endPort") {
        if end.as_u64().is_none_or(|end| end < port || end > 65_535) {
            return Err(TransformError::invalid(format!(
                "{field}.endPort must be at least port ({port}) and at most 65535"
            )));
        }
        out.insert("endPort".into(), end.clone());
    }
    Ok(Value::Object(out))
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

/// The items of a list, none for anything else.
fn list(value: Option<&Value>) -> impl Iterator<Item = &Value> {
    value
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
}

#[cfg(not(feature = "library"))]
opm_guest::export!(NetworkPolicyTransformer);

#[cfg(test)]
mod tests;
