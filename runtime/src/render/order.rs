//! The order of rendered resources: Kubernetes install order by kind, then namespace, then name,
//! so output is byte-identical whatever order the calls finished in.
//!
//! | rank | kinds |
//! |---|---|
//! | 1–5 | Namespace, NetworkPolicy, ResourceQuota, LimitRange, PodDisruptionBudget |
//! | 6–9 | ServiceAccount, Secret, ConfigMap, StorageClass |
//! | 10–11 | PersistentVolume, PersistentVolumeClaim |
//! | 12–16 | CustomResourceDefinition, ClusterRole, ClusterRoleBinding, Role, RoleBinding |
//! | 17 | Service |
//! | 18–24 | DaemonSet, Pod, ReplicaSet, Deployment, HorizontalPodAutoscaler, StatefulSet, Job |
//! | 25–28 | CronJob, IngressClass, Ingress, APIService |
//! | last | every other kind, alphabetically |
//!
//! Resources are namespaced workloads' dependencies first: a Deployment's ServiceAccount,
//! Secrets, ConfigMaps and claims exist before its pods start.

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value;

use super::Resource;

/// Kinds in install order.
pub const INSTALL_ORDER: &[&str] = &[
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
];

/// Kinds that live in no namespace: the built-in cluster-scoped kinds, and the Gateway API's
/// GatewayClass, sorted. A `metadata.namespace` on one of them is ignored by the API server.
/// The Kubernetes transformers keep the same list (`opm_k8s_common::CLUSTER_SCOPED`; a test in
/// `benches/lib.rs` holds them equal).
pub const CLUSTER_SCOPED: &[&str] = &[
    "APIService",
    "CSIDriver",
    "CSINode",
    "CertificateSigningRequest",
    "ClusterRole",
    "ClusterRoleBinding",
    "ComponentStatus",
    "CustomResourceDefinition",
    "FlowSchema",
    "GatewayClass",
    "IngressClass",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
    "MutatingWebhookConfiguration",
    "Namespace",
    "Node",
    "PersistentVolume",
    "PriorityClass",
    "PriorityLevelConfiguration",
    "RuntimeClass",
    "StorageClass",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration",
    "VolumeAttachment",
];

/// Whether `kind` is one of the [`CLUSTER_SCOPED`] kinds.
pub fn is_cluster_scoped(kind: &str) -> bool {
    CLUSTER_SCOPED.binary_search(&kind).is_ok()
}

/// What makes two resources the same object in a cluster: API group, kind, the namespace it
/// lands in, name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Identity {
    /// The API group (`apps`; empty for the core group).
    pub group: String,
    /// The kind.
    pub kind: String,
    /// The namespace it lands in: its own, else the target namespace; empty for a
    /// cluster-scoped kind.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl Identity {
    /// Whether it is a core-group Secret.
    pub fn is_secret(&self) -> bool {
        self.group.is_empty() && self.kind == "Secret"
    }

    /// The identity of a checked resource rendered into `target_namespace`.
    pub fn of(resource: &Value, target_namespace: &str) -> Self {
        let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        let api_version = text(&resource["apiVersion"]);
        let group = api_version
            .rsplit_once('/')
            .map(|(group, _)| group.to_owned())
            .unwrap_or_default();
        let kind = text(&resource["kind"]);
        let namespace = if is_cluster_scoped(&kind) {
            String::new()
        } else {
            match resource["metadata"]["namespace"].as_str() {
                Some(own) if !own.is_empty() => own.to_owned(),
                _ => target_namespace.to_owned(),
            }
        };
        Self {
            group,
            kind,
            namespace,
            name: text(&resource["metadata"]["name"]),
        }
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.group.is_empty() {
            write!(f, "{}/", self.group)?;
        }
        write!(f, "{} ", self.kind)?;
        if !self.namespace.is_empty() {
            write!(f, "{}/", self.namespace)?;
        }
        write!(f, "{}", self.name)
    }
}

fn rank(kind: &str) -> usize {
    INSTALL_ORDER
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(INSTALL_ORDER.len())
}

/// Compares two resources, each with the rank of its kind, by install order: kind rank, kind,
/// namespace, name, then group, then producer, so the order is total.
fn compare_ranked((rank_a, a): (usize, &Resource), (rank_b, b): (usize, &Resource)) -> Ordering {
    let (ia, ib) = (&a.identity, &b.identity);
    rank_a
        .cmp(&rank_b)
        .then_with(|| ia.kind.cmp(&ib.kind))
        .then_with(|| ia.namespace.cmp(&ib.namespace))
        .then_with(|| ia.name.cmp(&ib.name))
        .then_with(|| ia.group.cmp(&ib.group))
        .then_with(|| (&a.component, &a.transformer).cmp(&(&b.component, &b.transformer)))
}

/// Each resource whose identity an earlier one already has, with the first that has it:
/// `(index, first)`. `resources` are in install order ([`sort`]), where equal identities are
/// neighbours.
pub fn duplicates(resources: &[Resource]) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    let mut first = 0;
    for (index, resource) in resources.iter().enumerate().skip(1) {
        if resource.identity != resources[first].identity {
            first = index;
            continue;
        }
        pairs.push((index, first));
    }
    pairs
}

/// Sorts resources into install order, looking up each kind's rank once.
pub fn sort(resources: &mut Vec<Resource>) {
    let mut ranked: Vec<(usize, Resource)> = std::mem::take(resources)
        .into_iter()
        .map(|resource| (rank(&resource.identity.kind), resource))
        .collect();
    ranked.sort_by(|(rank_a, a), (rank_b, b)| compare_ranked((*rank_a, a), (*rank_b, b)));
    resources.extend(ranked.into_iter().map(|(_, resource)| resource));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn resource(api_version: &str, kind: &str, name: &str) -> Resource {
        Resource::new(
            "c",
            "t",
            &json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}),
            "",
        )
    }

    #[test]
    fn install_order_then_name() {
        let mut resources = vec![
            resource("apps/v1", "Deployment", "b"),
            resource("example.com/v1", "Widget", "w"),
            resource("v1", "Service", "a"),
            resource("apps/v1", "Deployment", "a"),
            resource("v1", "ServiceAccount", "z"),
        ];
        sort(&mut resources);
        let order: Vec<String> = resources.iter().map(|r| r.identity.to_string()).collect();
        assert_eq!(
            order,
            [
                "ServiceAccount z",
                "Service a",
                "apps/Deployment a",
                "apps/Deployment b",
                "example.com/Widget w"
            ]
        );
    }

    #[test]
    fn identity_is_the_namespace_a_resource_lands_in() {
        let of = |value: Value| Identity::of(&value, "shop").to_string();
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert_eq!(of(config.clone()), "ConfigMap shop/c");
        let mut elsewhere = config;
        elsewhere["metadata"]["namespace"] = json!("other");
        assert_eq!(of(elsewhere), "ConfigMap other/c");
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                          "metadata": {"name": "r", "namespace": "shop"}});
        assert_eq!(of(role), "rbac.authorization.k8s.io/ClusterRole r");
        assert!(
            CLUSTER_SCOPED.is_sorted(),
            "CLUSTER_SCOPED is searched by bisection"
        );
    }
}
