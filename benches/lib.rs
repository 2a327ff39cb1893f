//! What the benchmarks share: [`Native`], the embedded Kubernetes provider's transformer crates
//! compiled into the process and called directly, the baseline the sandbox is measured against
//! (`native.rs`, `benches/sandbox.rs`).

use std::collections::BTreeMap;
use std::time::Instant;

use opm_guest::{Component, Context, TransformError, Transformer};
use opm_runtime::render::{Job, Runner};
use opm_runtime::sandbox::{CallError, CallOutcome, Limits, LogLevel, LogLine};
use opm_runtime::wit;

/// A transform function of one of the provider's crates.
pub type Transform = fn(&Component, &Context) -> Result<Vec<opm_guest::Value>, TransformError>;

/// The embedded provider's transformers by FQN, each its crate's `Transformer::transform`.
pub fn transformers() -> BTreeMap<&'static str, Transform> {
    use kubernetes_configmap::ConfigMapTransformer;
    use kubernetes_cronjob::CronJobTransformer;
    use kubernetes_daemonset::DaemonSetTransformer;
    use kubernetes_deployment::DeploymentTransformer;
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
    use kubernetes_statefulset::StatefulSetTransformer;
    BTreeMap::from([
        (
            "transformer.opm.dev/workload@v1#DeploymentTransformer",
            DeploymentTransformer::transform as Transform,
        ),
        (
            "transformer.opm.dev/workload@v1#StatefulSetTransformer",
            StatefulSetTransformer::transform,
        ),
        (
            "transformer.opm.dev/workload@v1#DaemonSetTransformer",
            DaemonSetTransformer::transform,
        ),
        (
            "transformer.opm.dev/workload@v1#JobTransformer",
            JobTransformer::transform,
        ),
        (
            "transformer.opm.dev/workload@v1#CronJobTransformer",
            CronJobTransformer::transform,
        ),
        (
            "transformer.opm.dev/network@v1#ServiceTransformer",
            ServiceTransformer::transform,
        ),
        (
            "transformer.opm.dev/network@v1#IngressTransformer",
            IngressTransformer::transform,
        ),
        (
            "transformer.opm.dev/network@v1#HttpRouteTransformer",
            HttpRouteTransformer::transform,
        ),
        (
            "transformer.opm.dev/kubernetes@v1#ObjectTransformer",
            ObjectTransformer::transform,
        ),
        (
            "transformer.opm.dev/security@v1#RoleTransformer",
            RoleTransformer::transform,
        ),
        (
            "transformer.opm.dev/network@v1#NetworkPolicyTransformer",
            NetworkPolicyTransformer::transform,
        ),
        (
            "transformer.opm.dev/storage@v1#PersistentVolumeClaimTransformer",
            PersistentVolumeClaimTransformer::transform,
        ),
        (
            "transformer.opm.dev/config@v1#ConfigMapTransformer",
            ConfigMapTransformer::transform,
        ),
        (
            "transformer.opm.dev/config@v1#SecretTransformer",
            SecretTransformer::transform,
        ),
        (
            "transformer.opm.dev/scaling@v1#HorizontalPodAutoscalerTransformer",
            HorizontalPodAutoscalerTransformer::transform,
        ),
        (
            "transformer.opm.dev/availability@v1#PodDisruptionBudgetTransformer",
            PodDisruptionBudgetTransformer::transform,
        ),
        (
            "transformer.opm.dev/security@v1#ServiceAccountTransformer",
            ServiceAccountTransformer::transform,
        ),
    ])
}

/// Calls each job's transformer in-process, as the guest SDK's glue does in the sandbox: parse
/// the component, transform, serialise each resource; logs kept, not printed.
#[derive(Debug)]
pub struct Native {
    transformers: BTreeMap<&'static str, Transform>,
}

impl Runner for Native {
    fn call(
        &self,
        job: &Job,
        context: &wit::Context,
        _limits: &Limits,
    ) -> Result<CallOutcome, String> {
        let transform = *self
            .transformers
            .get(job.transformer.as_str())
            .ok_or_else(|| format!("{} is not compiled into opm-native", job.transformer))?;
        let started = Instant::now();
        let context = Context {
            name: context.name.clone(),
            namespace: context.namespace.clone(),
            version: context.version.clone(),
            provider: context.provider.clone(),
            timestamp: context.timestamp.clone(),
            strict: context.strict,
            labels: context.labels.iter().cloned().collect(),
        };
        let (result, lines) = opm_guest::log::capture(|| {
            let component = Component::from_json(&job.input)?;
            transform(&component, &context)
        });
        let result = result
            .map(|resources| resources.iter().map(ToString::to_string).collect())
            .map_err(|error| match error {
                TransformError::InvalidComponent(message) => CallError::InvalidComponent(message),
                TransformError::Failed(message) => CallError::Failed(message),
            });
        let logs = lines
            .into_iter()
            .map(|(level, message)| LogLine {
                level: match level {
                    "debug" => LogLevel::Debug,
                    "info" => LogLevel::Info,
                    "warn" => LogLevel::Warn,
                    _ => LogLevel::Error,
                },
                message,
            })
            .collect();
        Ok(CallOutcome {
            result,
            logs,
            logs_dropped: 0,
            fuel_used: 0,
            elapsed: started.elapsed(),
        })
    }

    fn digest(&self, _transformer: &str) -> String {
        "native".to_owned()
    }
}

impl Native {
    /// Every transformer of the embedded provider.
    pub fn new() -> Self {
        Self {
            transformers: transformers(),
        }
    }
}

impl Default for Native {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use opm_runtime::render::{self, RenderContext, Transformers};
    use opm_runtime::sandbox::{Limits, Sandbox};
    use opm_runtime::{matching, module, provider};

    use super::Native;

    /// The Kubernetes transformers and the host must agree on which kinds have no namespace:
    /// the object passthrough leaves one out for them, and the host then finds duplicates by the
    /// namespace a resource lands in.
    #[test]
    fn host_and_transformers_know_the_same_cluster_scoped_kinds() {
        assert_eq!(
            render::order::CLUSTER_SCOPED,
            opm_k8s_common::CLUSTER_SCOPED
        );
    }

    /// The baseline the sandbox is measured against must be the same work: every example renders
    /// to the same resources in the sandbox and natively.
    #[test]
    fn native_calls_render_what_the_sandbox_renders() {
        let provider = provider::load_embedded().expect("embedded provider");
        let limits = Limits::default();
        let sandbox = Sandbox::new(&limits).expect("engine");
        let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
        let mut rendered_any = 0;
        for entry in std::fs::read_dir(examples).expect("examples") {
            let path = entry.expect("entry").path().join("module.yaml");
            let module = module::load(
                &path,
                &[],
                &[],
                &|_| Some("from-the-environment".to_owned()),
                &mut BTreeSet::new(),
            )
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let plan = matching::plan(&module, &provider.manifest, false);
            assert!(plan.is_ok(), "{}: {:?}", path.display(), plan.errors());
            let context = RenderContext {
                name: module.name().to_owned(),
                namespace: module.namespace().unwrap_or("default").to_owned(),
                version: module.version().to_owned(),
                provider: "kubernetes".into(),
                timestamp: "2026-01-01T00:00:00Z".into(),
                strict: false,
                module_labels: module.labels().clone(),
            };
            let jobs = render::jobs(&plan);
            let compiled: Transformers = jobs
                .iter()
                .map(|job| {
                    let fqn = job.transformer.as_str();
                    let bytes = &provider.components[fqn];
                    (fqn.to_owned(), sandbox.compile(fqn, bytes))
                })
                .collect::<BTreeMap<_, _>>();
            let sandboxed = render::execute(&sandbox, &compiled, &jobs, &context, &limits);
            let native = render::execute_with(&Native::new(), &jobs, &context, &limits);
            assert!(sandboxed.failures.is_empty(), "{:?}", sandboxed.failures);
            assert!(native.failures.is_empty(), "{:?}", native.failures);
            assert!(!sandboxed.resources.is_empty(), "{}", path.display());
            assert_eq!(sandboxed.resources, native.resources, "{}", path.display());
            rendered_any += 1;
        }
        assert!(rendered_any >= 5, "{rendered_any} examples");
    }
}
