//! What the Gateway API routes (HTTPRoute, GRPCRoute) share: the Gateways they attach to and
//! the component's Service they send to.

use opm_guest::{Component, Context, Map, TransformError, Value, json};

use crate::ports::backend_port;
use crate::sorted_entries;

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
