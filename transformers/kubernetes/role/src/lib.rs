//! RoleTransformer: renders the Role resource into RBAC permissions for the component's own
//! service account (the one the ServiceAccount trait names, which its pods run as): a
//! `rbac.authorization.k8s.io/v1` Role and a RoleBinding, both named after the component.
//!
//! With `scope: Cluster` it renders a ClusterRole and a ClusterRoleBinding instead, named
//! `<namespace>-<component>`: cluster-scoped names are shared by every namespace, and two
//! installs of one module in two namespaces must not take over each other's role. A second
//! instance puts its name before either (`Context::object_name`). Only a
//! cluster role may name `nonResourceURLs`; the provider's schema refuses them otherwise.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::object_metadata;
use opm_k8s_common::pod::service_account;

/// Renders Role resources into a role and its binding.
pub struct RoleTransformer;

/// The RBAC API version.
const RBAC: &str = "rbac.authorization.k8s.io/v1";

impl Transformer for RoleTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let role: Value = component.require("role")?;
        let cluster = role.get("scope").and_then(Value::as_str) == Some("Cluster");
        let (account, _) = service_account(component, context)?;
        let account = account.ok_or_else(|| {
            TransformError::invalid(format!(
                "component {:?} has a Role but no service account of its own to bind it to; \
                 attach the ServiceAccount trait",
                component.name()
            ))
        })?;
        let rules = role
            .get("rules")
            .and_then(Value::as_array)
            .map(|rules| rules.iter().map(rule).collect::<Vec<_>>())
            .unwrap_or_default();
        let (role_kind, binding_kind, name) = if cluster {
            (
                "ClusterRole",
                "ClusterRoleBinding",
                context.object_name(&format!("{}-{}", context.namespace, component.name())),
            )
        } else {
            ("Role", "RoleBinding", context.object_name(component.name()))
        };
        let mut metadata = object_metadata(component, context, &name);
        if cluster && let Some(metadata) = metadata.as_object_mut() {
            metadata.remove("namespace");
        }
        Ok(vec![
            json!({
                "apiVersion": RBAC,
                "kind": role_kind,
                "metadata": metadata,
                "rules": rules,
            }),
            json!({
                "apiVersion": RBAC,
                "kind": binding_kind,
                "metadata": metadata,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": account,
                              "namespace": context.namespace}],
            }),
        ])
    }
}

/// A policy rule with its fields in Kubernetes' order.
fn rule(written: &Value) -> Value {
    let mut out = Map::new();
    for field in [
        "apiGroups",
        "resources",
        "resourceNames",
        "nonResourceURLs",
        "verbs",
    ] {
        if let Some(value) = written.get(field) {
            out.insert(field.into(), value.clone());
        }
    }
    Value::Object(out)
}

#[cfg(not(feature = "library"))]
opm_guest::export!(RoleTransformer);

#[cfg(test)]
mod tests {
    use super::*;

    fn render(spec: Value) -> Result<Vec<Value>, TransformError> {
        let component = Component::from_value(json!({"metadata": {"name": "ops"}, "spec": spec}))?;
        let context = Context {
            namespace: "prod".into(),
            ..opm_k8s_common::test_context()
        };
        RoleTransformer::transform(&component, &context)
    }

    #[test]
    fn a_role_is_bound_to_the_component_service_account() {
        let out = render(json!({
            "role": {"rules": [{"verbs": ["get", "list"], "resources": ["pods"], "apiGroups": [""]}]},
            "serviceAccount": {"create": true},
        }))
        .unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0]["kind"], "Role");
        assert_eq!(out[0]["metadata"]["namespace"], "prod");
        assert_eq!(
            out[0]["rules"],
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}])
        );
        let keys: Vec<&String> = out[0]["rules"][0].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["apiGroups", "resources", "verbs"]);
        assert_eq!(out[1]["kind"], "RoleBinding");
        assert_eq!(
            out[1]["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "ops"})
        );
        assert_eq!(
            out[1]["subjects"],
            json!([{"kind": "ServiceAccount", "name": "ops", "namespace": "prod"}])
        );
    }

    #[test]
    fn a_cluster_role_is_named_after_namespace_and_component_and_binds_the_named_account() {
        let out = render(json!({
            "role": {"scope": "Cluster", "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]},
            "serviceAccount": {"name": "scraper", "create": false},
        }))
        .unwrap();
        assert_eq!(out[0]["kind"], "ClusterRole");
        assert_eq!(out[0]["metadata"]["name"], "prod-ops");
        assert!(out[0]["metadata"].get("namespace").is_none());
        assert_eq!(out[1]["kind"], "ClusterRoleBinding");
        assert_eq!(out[1]["roleRef"]["kind"], "ClusterRole");
        assert_eq!(out[1]["roleRef"]["name"], "prod-ops");
        assert_eq!(
            out[1]["subjects"],
            json!([{"kind": "ServiceAccount", "name": "scraper", "namespace": "prod"}])
        );
    }

    #[test]
    fn a_role_without_an_account_of_its_own_is_invalid() {
        for spec in [
            json!({"role": {"rules": []}}),
            json!({"role": {"rules": []}, "serviceAccount": {"create": false}}),
        ] {
            assert!(render(spec).is_err());
        }
    }

    #[test]
    fn a_second_instance_binds_its_own_role_to_its_own_account() {
        let component = Component::from_value(json!({"metadata": {"name": "ops"}, "spec": {
            "role": {"rules": [{"verbs": ["get"], "resources": ["pods"], "apiGroups": [""]}]},
            "serviceAccount": {},
        }}))
        .unwrap();
        let context = opm_k8s_common::test_instance_context();
        let out = RoleTransformer::transform(&component, &context).unwrap();
        assert_eq!(out[0]["metadata"]["name"], "shop-eu-ops");
        assert_eq!(out[1]["roleRef"]["name"], "shop-eu-ops");
        assert_eq!(out[1]["subjects"][0]["name"], "shop-eu-ops");
    }
}
