//! What the Gateway API routes (HTTPRoute, GRPCRoute) share: the Gateways they attach to and
//! the component's Service they send to.

use opm_guest::{Component, Context, Map, TransformError, Value, json};

use crate::meta::merge_metadata;
use crate::ports::backend_port;
use crate::{object_metadata, sorted_entries};

/// The route's `parentRefs`: one per entry of the trait's `gateways` map, in name order, with
/// the entry's `namespace`, `sectionName` and `port`.
pub fn parent_refs(route: &Value) -> Vec<Value> {
    sorted_entries(route.get("gateways"))
        .into_iter()
        .map(|(name, gateway)| {
            let mut parent = Map::new();
            parent.insert("name".into(), Value::from(name.as_str()));
            for field in ["namespace", "sectionName", "port"] {
                if let Some(value) = gateway.get(field) {
                    parent.insert(field.into(), value.clone());
                }
            }
            Value::Object(parent)
        })
        .collect()
}

/// A rule's `backendRefs`: the component's Service (named for the instance) at the port of
/// `ports` that `wanted` names, or its only one; `field` names the setting in errors.
pub fn backend_refs(
    component: &Component,
    context: &Context,
    ports: &[Value],
    wanted: Option<&str>,
    field: &str,
) -> Result<Value, TransformError> {
    let port = backend_port(ports, wanted, field)?;
    Ok(json!([{"name": context.object_name(component.name()), "port": port["port"]}]))
}

/// The route `kind` (`HTTPRoute`, `GRPCRoute`) of the trait `field` with its `rules`: attached
/// to the trait's Gateways ([`parent_refs`]) for its `hostnames`, named for the component, with
/// the trait's labels and annotations.
pub fn route_object(
    component: &Component,
    context: &Context,
    route: &Value,
    field: &str,
    kind: &str,
    rules: Vec<Value>,
) -> Result<Value, TransformError> {
    let mut spec = Map::new();
    spec.insert("parentRefs".into(), Value::Array(parent_refs(route)));
    if let Some(hostnames) = route.get("hostnames") {
        spec.insert("hostnames".into(), hostnames.clone());
    }
    spec.insert("rules".into(), Value::Array(rules));
    let mut metadata = object_metadata(component, context, &context.object_name(component.name()));
    merge_metadata(&mut metadata, route, field)?;
    Ok(json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": kind,
        "metadata": metadata,
        "spec": spec,
    }))
}
