//! What the benchmarks share: [`Native`], the embedded Kubernetes provider's transformer crates
//! compiled into the process and called directly, the baseline the sandbox is measured against
//! (`native.rs`, `benches/sandbox.rs`), the render [`context`] their calls are made in, and
//! [`short_name`], a component file's name in the tables of `compilers.rs` and `per_call.rs`.

use std::collections::BTreeMap;
use std::time::Instant;

use opm_core::matching::Call;
use opm_guest::{Component, Context, TransformError, Transformer};
use opm_runtime::render::{RenderContext, Runner};
use opm_sandbox::{CallError, CallOutcome, Limits, LogLevel, LogLine};

/// The render context the benchmarks' calls are made in.
pub fn context() -> RenderContext {
    RenderContext {
        name: "bench".into(),
        instance: "bench".into(),
        namespace: "bench".into(),
        version: "1.0.0".into(),
        provider: "kubernetes".into(),
        timestamp: "2026-01-01T00:00:00Z".into(),
        strict: false,
        module_labels: BTreeMap::new(),
        secret_kinds: vec!["Secret".into()],
        platform: Some("kubernetes".into()),
        provider_versions: Default::default(),
    }
}

/// The file name of the component at `path` without its extension and without the hash the
/// tests' build appends (`example-service-js-0123456789abcdef.wasm` is `example-service-js`).
pub fn short_name(path: &str) -> String {
    let name = std::path::Path::new(path)
        .file_stem()
        .map_or_else(|| path.to_owned(), |s| s.to_string_lossy().into_owned());
    match name.rsplit_once('-') {
        Some((stem, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            stem.to_owned()
        }
        _ => name,
    }
}

/// A transform function of one of the provider's crates.
pub type Transform = fn(&Component, &Context) -> Result<Vec<opm_guest::Value>, TransformError>;

/// The embedded provider's transformers by FQN, each its crate's `Transformer::transform`.
pub fn transformers() -> BTreeMap<&'static str, Transform> {
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
            "transformer.opm.dev/network@v1#GrpcRouteTransformer",
            GrpcRouteTransformer::transform,
        ),
        (
            "transformer.opm.dev/observability@v1#ServiceMonitorTransformer",
            ServiceMonitorTransformer::transform,
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

/// Calls each call's transformer in-process, as the guest SDK's glue does in the sandbox: parse
/// the component, transform, serialise each resource; logs kept, not printed.
#[derive(Debug)]
pub struct Native {
    transformers: BTreeMap<&'static str, Transform>,
}

impl Runner for Native {
    fn call(
        &self,
        call: &Call,
        context: opm_sandbox::Context,
        _limits: &Limits,
    ) -> Result<CallOutcome, String> {
        let transform = *self
            .transformers
            .get(call.transformer.as_str())
            .ok_or_else(|| format!("{} is not compiled into opm-native", call.transformer))?;
        let started = Instant::now();
        let context = Context {
            name: context.name,
            namespace: context.namespace,
            version: context.version,
            provider: context.provider,
            timestamp: context.timestamp,
            strict: context.strict,
            labels: context.labels.into_iter().collect(),
            module: context.module,
            platform: context.platform,
            provider_version: context.provider_version,
            transformer: context.transformer,
        };
        let (result, lines) = opm_guest::log::capture(|| {
            let component = Component::from_json(&call.input)?;
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
    use opm_runtime::render::{self, Request};

    use super::{Native, short_name};

    /// The tables name a component by its file, without the hash the tests' build appends and
    /// only that: a name whose last part is not 16 hexadecimal digits keeps it.
    #[test]
    fn short_name_drops_the_build_hash_only() {
        for (path, name) in [
            (
                "guests/example-service-js-0123456789abcdef.wasm",
                "example-service-js",
            ),
            ("out/example_service_rust.wasm", "example_service_rust"),
            ("out/kubernetes-service.wasm", "kubernetes-service"),
            ("out/svc-0123456789abcdeg.wasm", "svc-0123456789abcdeg"),
        ] {
            assert_eq!(short_name(path), name, "{path}");
        }
    }

    /// The baseline the sandbox is measured against must be the same work: every example renders
    /// through the one pipeline to the same resources in the sandbox and natively.
    #[test]
    fn native_calls_render_what_the_sandbox_renders() {
        let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
        let env =
            |name: &str| (name != "SOURCE_DATE_EPOCH").then(|| "from-the-environment".to_owned());
        let native = Native::new();
        let mut rendered_any = 0;
        for entry in std::fs::read_dir(examples).expect("examples") {
            let dir = entry.expect("entry").path();
            // examples/platform holds a releases file, not a module.
            if !dir.join("module.yaml").is_file() {
                continue;
            }
            // The compile cache the CLI would use: each component compiled once, not once
            // per example.
            let request = Request {
                progress: false,
                cache: opm_sandbox::CompileCache::from_env(&opm_runtime::cli::process_env),
                ..Request::new(dir.join("module.yaml"))
            };
            let sandboxed = render::build(&request, &env).render;
            let sandboxed = sandboxed.unwrap_or_else(|e| panic!("{}: {e:#}", dir.display()));
            let native = render::build_with(&request, &env, Some(&native)).render;
            let native = native.unwrap_or_else(|e| panic!("{}: {e:#}", dir.display()));
            assert!(
                !sandboxed.failed(),
                "{}: {:?}",
                dir.display(),
                sandboxed.rendered.failures
            );
            assert!(
                !native.failed(),
                "{}: {:?}",
                dir.display(),
                native.rendered.failures
            );
            assert!(
                !sandboxed.rendered.resources.is_empty(),
                "{}",
                dir.display()
            );
            assert_eq!(
                sandboxed.rendered.resources,
                native.rendered.resources,
                "{}",
                dir.display()
            );
            rendered_any += 1;
        }
        assert!(rendered_any >= 5, "{rendered_any} examples");
    }
}
