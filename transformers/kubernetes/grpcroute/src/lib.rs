//! GrpcRouteTransformer: renders the GrpcRoute trait into a Gateway API
//! `gateway.networking.k8s.io/v1` GRPCRoute that attaches to the named Gateways and sends
//! matching gRPC calls to the component's Service (the one Expose renders).
//!
//! - `gateways` (by name, each with an optional `namespace`, `sectionName` and `port`) become
//!   `parentRefs`, in name order;
//! - `hostnames` are copied;
//! - `rules` (by name, rendered in name order with that `name`) each match a gRPC `method`
//!   (`service` and/or `method`, Exact unless `type` says RegularExpression) and `headers`
//!   (exact values, in name order), and send to one port of the Service, named by its port name
//!   (`port`, which may be left out when the Service has one port) and rendered as the port
//!   number the Gateway API wants. Without `rules`, every call goes to the Service's only port;
//! - `labels` and `annotations` are merged over the component's on the GRPCRoute.
//!
//! What the Gateway API's CRD refuses through its CEL rules is refused here too: a method match
//! with neither service nor method, an Exact service or method that is not a gRPC name, and more
//! than 128 matches over all rules.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::gateway::{backend_refs, route_object};
use opm_k8s_common::ports::{required_expose, service_ports};
use opm_k8s_common::sorted_entries;

/// Renders the GrpcRoute trait into GRPCRoutes.
pub struct GrpcRouteTransformer;

/// The most matches the Gateway API accepts over all the rules of one route.
pub const MAX_MATCHES: usize = 128;

impl Transformer for GrpcRouteTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let route: Value = component.require("grpcRoute")?;
        let expose = required_expose(component, "a GrpcRoute", "the route sends calls to")?;
        let ports = service_ports(component, Some(&expose))?;

        let backend = |wanted: Option<&str>, field: &str| {
            backend_refs(component, context, &ports, wanted, field)
        };
        let mut total_matches = 0;
        let rules = match route.get("rules").and_then(Value::as_object) {
            Some(rules) if !rules.is_empty() => sorted_entries(route.get("rules"))
                .into_iter()
                .map(|(name, rule)| {
                    let mut out = Map::new();
                    out.insert("name".into(), Value::from(name.as_str()));
                    if let Some(matches) = rule.get("matches").and_then(Value::as_array) {
                        total_matches += matches.len();
                        let matches = matches
                            .iter()
                            .enumerate()
                            .map(|(index, written)| {
                                route_match(
                                    written,
                                    &format!("grpcRoute.rules.{name}.matches[{index}]"),
                                )
                            })
                            .collect::<Result<Vec<_>, _>>()?;
                        out.insert("matches".into(), Value::Array(matches));
                    }
                    out.insert(
                        "backendRefs".into(),
                        backend(
                            rule.get("port").and_then(Value::as_str),
                            &format!("grpcRoute.rules.{name}.port"),
                        )?,
                    );
                    Ok(Value::Object(out))
                })
                .collect::<Result<Vec<_>, TransformError>>()?,
            _ => vec![json!({"backendRefs": backend(None, "grpcRoute.rules")?})],
        };
        if total_matches > MAX_MATCHES {
            return Err(TransformError::invalid(format!(
                "grpcRoute.rules have {total_matches} matches in all; the Gateway API accepts at \
                 most {MAX_MATCHES} in one route"
            )));
        }

        Ok(vec![route_object(
            component,
            context,
            &route,
            "grpcRoute",
            "GRPCRoute",
            rules,
        )?])
    }
}

/// One match of a rule: a method (`{type, service, method}`, Exact unless it says) and headers
/// (exact values, in name order), as the Gateway API spells them.
fn route_match(written: &Value, field: &str) -> Result<Value, TransformError> {
    let mut out = Map::new();
    if let Some(method) = written.get("method") {
        out.insert(
            "method".into(),
            method_match(method, &format!("{field}.method"))?,
        );
    }
    if let Some(headers) = written.get("headers").and_then(Value::as_object) {
        let mut names: Vec<&String> = headers.keys().collect();
        names.sort();
        let headers: Vec<Value> = names
            .into_iter()
            .map(|name| json!({"type": "Exact", "name": name, "value": headers[name]}))
            .collect();
        out.insert("headers".into(), Value::Array(headers));
    }
    Ok(Value::Object(out))
}

/// A GRPCMethodMatch: at least one of `service` and `method`, each a gRPC name when the match
/// is Exact (a dotted package and service, a method identifier).
fn method_match(written: &Value, field: &str) -> Result<Value, TransformError> {
    let kind = written
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("Exact");
    if kind != "Exact" && kind != "RegularExpression" {
        return Err(TransformError::invalid(format!(
            "{field}.type must be Exact or RegularExpression"
        )));
    }
    let service = written.get("service").and_then(Value::as_str);
    let method = written.get("method").and_then(Value::as_str);
    if service.is_none() && method.is_none() {
        return Err(TransformError::invalid(format!(
            "{field} needs a service, a method or both"
        )));
    }
    if kind == "Exact" {
        if let Some(service) = service.filter(|s| !is_grpc_service(s)) {
            return Err(TransformError::invalid(format!(
                "{field}.service {service:?} is not a gRPC service name (package.Service)"
            )));
        }
        if let Some(method) = method.filter(|m| !is_identifier(m)) {
            return Err(TransformError::invalid(format!(
                "{field}.method {method:?} is not a gRPC method name"
            )));
        }
    }
    let mut out = Map::new();
    out.insert("type".into(), Value::from(kind));
    if let Some(service) = service {
        out.insert("service".into(), Value::from(service));
    }
    if let Some(method) = method {
        out.insert("method".into(), Value::from(method));
    }
    Ok(Value::Object(out))
}

/// `[A-Za-z_][A-Za-z_0-9]*`.
fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Identifiers joined by dots, optionally after a leading dot, as the Gateway API wants an
/// Exact service.
fn is_grpc_service(text: &str) -> bool {
    let text = text.strip_prefix('.').unwrap_or(text);
    text.split('.').all(is_identifier)
}

#[cfg(not(feature = "library"))]
opm_guest::export!(GrpcRouteTransformer);

#[cfg(test)]
mod tests;
