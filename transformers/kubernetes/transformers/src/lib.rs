//! The Kubernetes provider's transformers, all in one component (`kubernetes_transformers.wasm`):
//! every transformer entry of `providers/kubernetes/provider.yaml` names it, and each call's
//! context says which entry called (`Context::transformer`, contract 1.1.0), so that a render
//! loads, maps and keeps one component's code and memory where it loaded one per transformer
//! (benches/RESULTS.md, "Real modules"). Each transformer keeps its crate of its own
//! (`kubernetes/deployment`, …), whose tests and documentation are its; this crate only chooses,
//! by the name after `#`, so that another provider may name this component for a transformer of
//! its own group (`acme.dev/availability@v1#PodDisruptionBudgetTransformer`).

use opm_guest::{Component, Context, TransformError, Transformer, Value};

use kubernetes_configmap::ConfigMapTransformer;
use kubernetes_cronjob::CronJobTransformer;
use kubernetes_daemonset::DaemonSetTransformer;
use kubernetes_deployment::DeploymentTransformer;
use kubernetes_grpcroute::GrpcRouteTransformer;
use kubernetes_horizontalpodautoscaler::HorizontalPodAutoscalerTransformer;
use kubernetes_httproute::HttpRouteTransformer;
use kubernetes_ingress::IngressTransformer;
use kubernetes_job::JobTransformer;
use kubernetes_networkpolicy::NetworkPolicyTransformer;
use kubernetes_object::ObjectTransformer;
use kubernetes_persistentvolumeclaim::PersistentVolumeClaimTransformer;
use kubernetes_poddisruptionbudget::PodDisruptionBudgetTransformer;
use kubernetes_role::RoleTransformer;
use kubernetes_secret::SecretTransformer;
use kubernetes_service::ServiceTransformer;
use kubernetes_serviceaccount::ServiceAccountTransformer;
use kubernetes_servicemonitor::ServiceMonitorTransformer;
use kubernetes_statefulset::StatefulSetTransformer;

/// The transformers this component serves, by the name after `#` in their FQN.
pub const SERVED: &[&str] = &[
    "ConfigMapTransformer",
    "CronJobTransformer",
    "DaemonSetTransformer",
    "DeploymentTransformer",
    "GrpcRouteTransformer",
    "HorizontalPodAutoscalerTransformer",
    "HttpRouteTransformer",
    "IngressTransformer",
    "JobTransformer",
    "NetworkPolicyTransformer",
    "ObjectTransformer",
    "PersistentVolumeClaimTransformer",
    "PodDisruptionBudgetTransformer",
    "RoleTransformer",
    "SecretTransformer",
    "ServiceTransformer",
    "ServiceAccountTransformer",
    "ServiceMonitorTransformer",
    "StatefulSetTransformer",
];

/// Renders a component as the transformer the context names.
pub struct KubernetesTransformers;

impl Transformer for KubernetesTransformers {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let fqn = context.transformer.as_str();
        let name = fqn.rsplit_once('#').map_or(fqn, |(_, name)| name);
        match name {
            "ConfigMapTransformer" => ConfigMapTransformer::transform(component, context),
            "CronJobTransformer" => CronJobTransformer::transform(component, context),
            "DaemonSetTransformer" => DaemonSetTransformer::transform(component, context),
            "DeploymentTransformer" => DeploymentTransformer::transform(component, context),
            "GrpcRouteTransformer" => GrpcRouteTransformer::transform(component, context),
            "HorizontalPodAutoscalerTransformer" => {
                HorizontalPodAutoscalerTransformer::transform(component, context)
            }
            "HttpRouteTransformer" => HttpRouteTransformer::transform(component, context),
            "IngressTransformer" => IngressTransformer::transform(component, context),
            "JobTransformer" => JobTransformer::transform(component, context),
            "NetworkPolicyTransformer" => NetworkPolicyTransformer::transform(component, context),
            "ObjectTransformer" => ObjectTransformer::transform(component, context),
            "PersistentVolumeClaimTransformer" => {
                PersistentVolumeClaimTransformer::transform(component, context)
            }
            "PodDisruptionBudgetTransformer" => {
                PodDisruptionBudgetTransformer::transform(component, context)
            }
            "RoleTransformer" => RoleTransformer::transform(component, context),
            "SecretTransformer" => SecretTransformer::transform(component, context),
            "ServiceTransformer" => ServiceTransformer::transform(component, context),
            "ServiceAccountTransformer" => ServiceAccountTransformer::transform(component, context),
            "ServiceMonitorTransformer" => ServiceMonitorTransformer::transform(component, context),
            "StatefulSetTransformer" => StatefulSetTransformer::transform(component, context),
            _ => Err(TransformError::invalid(format!(
                "kubernetes_transformers.wasm serves the Kubernetes provider's transformers, not \
                 {fqn:?}: name it only from the entries of providers/kubernetes/provider.yaml"
            ))),
        }
    }
}

opm_guest::export!(KubernetesTransformers);

#[cfg(test)]
mod tests {
    use super::*;

    /// Every transformer of the provider is served, and nothing else.
    #[test]
    fn it_serves_every_transformer_of_the_provider() {
        let manifest = include_str!("../../../../providers/kubernetes/provider.yaml");
        let mut named: Vec<&str> = manifest
            .lines()
            .filter_map(|line| line.strip_prefix("  transformer.opm.dev/"))
            .filter_map(|line| line.split_once('#'))
            .map(|(_, rest)| rest.trim_end_matches(':'))
            .collect();
        named.sort_unstable();
        let mut served = SERVED.to_vec();
        served.sort_unstable();
        assert_eq!(named, served);
        assert!(
            manifest
                .lines()
                .filter(|line| line.trim_start().starts_with("component:"))
                .all(
                    |line| line.trim_start() == "component: kubernetes_transformers.wasm"
                        || line.trim_start() == "component: kubernetes_renderer.wasm"
                ),
            "every transformer names this component"
        );
    }
}
