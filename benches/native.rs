//! `opm-native`: `opm mod build` with the embedded Kubernetes provider's transformer crates
//! compiled into this process and called directly, instead of their WebAssembly components in
//! the sandbox. Everything else — loading, planning, checking, labelling, ordering, writing — is
//! `opm mod build`'s own code ([`mod_build::run_with`]), so the difference between the two is
//! what the sandbox costs. Used by `benches/e2e.sh` as its variant (c); not a product.
//!
//! ```sh
//! cargo build --release -p opm-benches --bin opm-native
//! target/release/opm-native module.yaml -j 2 > out.yaml
//! ```

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use opm_guest::{Component, Context, TransformError, Transformer};
use opm_runtime::cli::Output;
use opm_runtime::cli::commands::mod_build::{self, BuildArgs};
use opm_runtime::render::{self, Job, Runner};
use opm_runtime::sandbox::{CallError, CallOutcome, Limits, LogLevel, LogLine};
use opm_runtime::wit;

/// `opm-native` takes exactly `opm mod build`'s arguments.
#[derive(Debug, Parser)]
#[command(name = "opm-native")]
struct Cli {
    #[command(flatten)]
    build: BuildArgs,
}

/// A transform function of one of the provider's crates.
type Transform = fn(&Component, &Context) -> Result<Vec<opm_guest::Value>, TransformError>;

/// The embedded provider's transformers by FQN, each its crate's `Transformer::transform`.
fn transformers() -> BTreeMap<&'static str, Transform> {
    use kubernetes_configmap::ConfigMapTransformer;
    use kubernetes_cronjob::CronJobTransformer;
    use kubernetes_daemonset::DaemonSetTransformer;
    use kubernetes_deployment::DeploymentTransformer;
    use kubernetes_horizontalpodautoscaler::HorizontalPodAutoscalerTransformer;
    use kubernetes_ingress::IngressTransformer;
    use kubernetes_job::JobTransformer;
    use kubernetes_networkpolicy::NetworkPolicyTransformer;
    use kubernetes_persistentvolumeclaim::PersistentVolumeClaimTransformer;
    use kubernetes_poddisruptionbudget::PodDisruptionBudgetTransformer;
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
struct Native {
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

/// The same allocator as `opm`'s, so that the comparison measures the sandbox alone.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let native = Native {
        transformers: transformers(),
    };
    let backend = |plan: &_, _: &_, context: &_, limits: &_, _: &_| {
        Ok(render::execute_with(
            &native,
            &render::jobs(plan),
            context,
            limits,
        ))
    };
    let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr().lock());
    let mut out = Output {
        stdout: &mut stdout,
        stderr: &mut stderr,
        env: &opm_runtime::cli::process_env,
    };
    match mod_build::run_with(&cli.build, &mut out, &backend) {
        Ok(status) => status,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}
