//! `opm mod build`: render a module into platform manifests.
//!
//! Pipeline (`docs/rendering.md#the-pipeline`): load module and values → load provider → validate,
//! flatten and match (the plan) → compile the matched transformers → run every call in parallel →
//! check, label and order → write. Every component is attempted; all problems are reported together
//! at the end, and nothing is written to stdout unless the whole render succeeded.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use rayon::prelude::*;

use super::module_args::{CacheArgs, LimitArgs, ModuleArgs};
use crate::cli::{EXIT_FAILED, EXIT_USAGE, Output};
use crate::matching::{self, Plan};
use crate::provider::{self, Provider};
use crate::redact::{RedactingWriter, Redactor};
use crate::render::verbose::Verbose;
use crate::render::{self, RenderContext, Rendered, Transformers, write::Format};
use crate::sandbox::{CompileCache, Limits, Sandbox};

/// Arguments of `opm mod build`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm mod build examples/hello/module.yaml
  opm mod build shop/module.yaml -f prod.yaml --set components.api.traits.Replicas=5 -n shop-prod
  opm mod build module.yaml -o json -j 4 --fuel 50000000 --memory 32Mi --timeout 1s")]
pub struct BuildArgs {
    #[command(flatten)]
    pub module: ModuleArgs,

    /// Namespace of the rendered resources (default: the module's, else `default`).
    ///
    /// Example: -n shop-staging
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,

    /// Output format: a multi-document YAML stream, or a JSON `v1` List.
    ///
    /// Example: -o json
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Yaml)]
    pub output: Format,

    /// Write one file per resource into --out-dir instead of one stream on stdout.
    ///
    /// Files are named `<lowercase-kind>-<name>.yaml`; when two resources would share a name,
    /// each gets `_<namespace>` (and, if still shared, `_<api-group>`) appended. The directory
    /// is replaced atomically and holds exactly the rendered files; a failed render leaves it
    /// as it was.
    ///
    /// Example: --split --out-dir manifests/
    #[arg(long, requires = "out_dir")]
    pub split: bool,

    /// The directory --split writes into.
    ///
    /// Example: --split --out-dir manifests/
    #[arg(long, value_name = "DIR", requires = "split")]
    pub out_dir: Option<std::path::PathBuf>,

    /// Explain every decision on stderr: which transformers matched each component and why,
    /// which did not and what was missing, each call's fuel, time and guest log.
    /// `--verbose=json` writes the same as one JSON object per line.
    ///
    /// Example: --verbose=json 2> render.jsonl
    #[arg(
        short = 'v',
        long,
        value_enum,
        value_name = "FORMAT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "text"
    )]
    pub verbose: Option<Verbose>,

    /// Transform calls run at once (default: every core).
    ///
    /// Example: -j 1
    #[arg(short = 'j', long = "jobs", value_name = "JOBS")]
    pub jobs: Option<usize>,

    #[command(flatten)]
    pub limits: LimitArgs,

    #[command(flatten)]
    pub cache: CacheArgs,
}

/// How a build turns its plan into rendered resources, on the render threads: `opm mod build`
/// compiles the provider's components and runs each call in the sandbox; the benchmark of what
/// the sandbox costs (`benches/native.rs`) calls the same transformer crates compiled into the
/// process. Given the plan, the provider, the context, the limits and the redactor.
pub type Backend<'a> = dyn Fn(&Plan, &Provider, &RenderContext, &Limits, &Redactor) -> anyhow::Result<Rendered>
    + Sync
    + 'a;

/// Runs `opm mod build`.
pub fn run(args: BuildArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    run_sandboxed(&args, out, &mut |rendered, _, pool, stdout| {
        write_output(&args, rendered, pool, stdout)
    })
}

/// Runs `opm mod build`'s render in the sandbox, handing a render that succeeded to `finish`.
pub fn run_sandboxed(
    args: &BuildArgs,
    out: &mut Output<'_>,
    finish: &mut Finish<'_>,
) -> anyhow::Result<ExitCode> {
    let cache = args.cache.cache(out.env);
    // A progress line would be the one line on stderr that is not JSON.
    let progress = args.verbose != Some(Verbose::Json);
    let sandboxed = |plan: &Plan,
                     provider: &Provider,
                     context: &RenderContext,
                     limits: &Limits,
                     redactor: &Redactor| {
        render_plan(
            plan,
            provider,
            context,
            limits,
            cache.clone(),
            redactor.clone(),
            progress,
        )
    };
    run_finishing(args, out, &sandboxed, finish)
}

/// What a render that succeeded is handed to: its resources, the redactor of the module's
/// sensitive values, the render threads and stdout. `opm mod build` writes the resources;
/// `opm mod diff` compares them, masking what the redactor knows.
pub type Finish<'a> = dyn FnMut(&Rendered, &Redactor, &rayon::ThreadPool, &mut dyn Write) -> anyhow::Result<ExitCode>
    + 'a;

/// Runs `opm mod build` with the calls rendered by `backend`: loading, planning, checking,
/// ordering, reporting and writing exactly as `opm mod build` does.
pub fn run_with(
    args: &BuildArgs,
    out: &mut Output<'_>,
    backend: &Backend<'_>,
) -> anyhow::Result<ExitCode> {
    run_finishing(args, out, backend, &mut |rendered, _, pool, stdout| {
        write_output(args, rendered, pool, stdout)
    })
}

/// [`run_with`], handing a render that succeeded to `finish` instead of writing it.
pub fn run_finishing(
    args: &BuildArgs,
    out: &mut Output<'_>,
    backend: &Backend<'_>,
    finish: &mut Finish<'_>,
) -> anyhow::Result<ExitCode> {
    let env = out.env;
    let mut sensitive = BTreeSet::new();
    let module = crate::module::load(
        &args.module.module,
        &args.module.values,
        &args.module.set,
        env,
        &mut sensitive,
    );
    // Everything on stderr goes through the redactor, the module's own load errors included:
    // they may quote a sensitive value.
    let redactor = Redactor::new(sensitive);
    let mut stderr = RedactingWriter::new(&mut *out.stderr, &redactor);
    let result = module.map_err(anyhow::Error::from).and_then(|module| {
        build(
            args,
            module,
            env,
            &redactor,
            Streams {
                stderr: &mut stderr,
                stdout: &mut *out.stdout,
            },
            backend,
            finish,
        )
    });
    let status = if args.verbose == Some(Verbose::Json) {
        json_exit_status(result, &redactor, &mut stderr)
    } else {
        crate::cli::exit_status(result, &mut stderr)
    };
    stderr.flush()?;
    Ok(status)
}

/// [`crate::cli::exit_status`] under `--verbose=json`: an error that stopped the command before
/// it could report (a module or provider that does not load) is an `error` event and a
/// `summary` with status 2.
fn json_exit_status(
    result: anyhow::Result<ExitCode>,
    redactor: &Redactor,
    stderr: &mut dyn Write,
) -> ExitCode {
    match result {
        Err(error) if !crate::cli::is_broken_pipe(&error) => {
            let _ = render::verbose::event(
                serde_json::json!({"event": "error", "message": format!("{error:#}")}),
                redactor,
                stderr,
            );
            let _ = render::verbose::event(
                serde_json::json!({"event": "summary", "status": EXIT_USAGE, "errors": 1,
                                   "warnings": 0, "resources": 0}),
                redactor,
                stderr,
            );
            ExitCode::from(EXIT_USAGE)
        }
        other => crate::cli::exit_status(other, stderr),
    }
}

/// Where a build writes: diagnostics (through the redactor) and output.
struct Streams<'a> {
    stderr: &'a mut dyn Write,
    stdout: &'a mut dyn Write,
}

fn build(
    args: &BuildArgs,
    module: crate::module::Module,
    env: &dyn Fn(&str) -> Option<String>,
    redactor: &Redactor,
    streams: Streams<'_>,
    backend: &Backend<'_>,
    finish: &mut Finish<'_>,
) -> anyhow::Result<ExitCode> {
    let Streams { stderr, stdout } = streams;
    let provider = provider::load_in(&args.module.provider, &std::env::current_dir()?)?;
    // Planning, rendering and serialising all run on these threads, as many as -j says.
    let mut pool = rayon::ThreadPoolBuilder::new().thread_name(|i| format!("opm-render-{i}"));
    if let Some(jobs) = args.jobs {
        anyhow::ensure!(jobs > 0, "-j/--jobs must be at least 1");
        pool = pool.num_threads(jobs);
    }
    let pool = pool.build().context("starting the render threads")?;
    // Only --verbose prints why each transformer matched or not; without it, the plan keeps
    // only what its problems need.
    let explain = match args.verbose {
        Some(_) => matching::Explain::Everything,
        None => matching::Explain::ProblemsOnly,
    };
    let plan = pool
        .install(|| matching::plan_with(&module, &provider.manifest, args.module.strict, explain));

    let caps = args.limits.caps();
    let limits = provider
        .manifest
        .limits
        .limits(&caps)
        .map_err(|e| anyhow::anyhow!("provider {}: {e}", provider.origin))?;
    let context = RenderContext {
        name: module.name().to_owned(),
        namespace: args
            .namespace
            .clone()
            .or_else(|| module.namespace().map(str::to_owned))
            .unwrap_or_else(|| "default".to_owned()),
        version: module.version().to_owned(),
        provider: provider.manifest.metadata.name.clone(),
        timestamp: render::context::timestamp(env("SOURCE_DATE_EPOCH").as_deref())
            .map_err(anyhow::Error::msg)?,
        strict: args.module.strict,
        module_labels: module.labels().clone(),
    };
    // The plan and the context hold all the render needs of the module.
    drop_in_background(module);

    let rendered = pool.install(|| backend(&plan, &provider, &context, &limits, redactor))?;

    if let Some(format) = args.verbose {
        render::verbose::report(format, &plan, &context, &rendered.calls, redactor, stderr)?;
    }
    let json = args.verbose == Some(Verbose::Json);
    let failed = !plan.is_ok() || !rendered.failures.is_empty();
    if json {
        report_events(&plan, &rendered, redactor, stderr)?;
        if failed {
            return Ok(ExitCode::from(EXIT_FAILED));
        }
    } else {
        for warning in plan.warnings() {
            writeln!(stderr, "warning: {warning}")?;
        }
        if let Some(warning) = redactor.warning() {
            writeln!(stderr, "warning: {warning}")?;
        }
        if failed {
            report_failures(&plan, &rendered, stderr)?;
            return Ok(ExitCode::from(EXIT_FAILED));
        }
    }
    let status = finish(&rendered, redactor, &pool, stdout)?;
    drop_in_background((plan, rendered, provider));
    Ok(status)
}

/// Writes the resources of a render that succeeded: one stream on stdout, or with `--split`
/// one file each in `--out-dir`.
fn write_output(
    args: &BuildArgs,
    rendered: &Rendered,
    pool: &rayon::ThreadPool,
    stdout: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    match &args.out_dir {
        Some(dir) => {
            let names = render::write::split_names(&rendered.resources);
            // Serialised on the render threads, as many as -j allows.
            let files = pool.install(|| {
                names
                    .into_par_iter()
                    .zip(&rendered.resources)
                    .map(|(name, resource)| {
                        Ok((name, render::write::yaml_of(&resource.json)?.into_bytes()))
                    })
                    .collect::<anyhow::Result<Vec<_>>>()
            })?;
            render::write::replace_dir(dir, &files)?;
        }
        None => {
            let serialized =
                pool.install(|| render::write::serialize(&rendered.resources, args.output))?;
            serialized.write(stdout)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Frees `value` on a thread of its own, so that the command can finish without waiting:
/// dropping the module, plan and resources of a 10,000-component render takes a tenth of a
/// second, and when `opm` exits next the operating system takes the memory back anyway. If no
/// thread can be started, `value` is dropped here.
fn drop_in_background<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new()
        .name("opm-free".into())
        .spawn(move || drop(value));
}

/// Compiles the transformers the plan uses and runs its calls.
fn render_plan(
    plan: &Plan,
    provider: &Provider,
    context: &RenderContext,
    limits: &Limits,
    cache: Option<CompileCache>,
    redactor: Redactor,
    progress: bool,
) -> anyhow::Result<Rendered> {
    let sandbox = Sandbox::new(limits)?
        .with_cache(cache)
        .with_redactor(redactor);
    let mut used: Vec<&str> = plan.calls().map(|call| call.transformer.as_str()).collect();
    used.sort_unstable();
    used.dedup();
    let progress = progress
        .then(|| {
            crate::cli::progress::compiling(|| {
                used.iter()
                    .filter_map(|fqn| provider.components.get(*fqn))
                    .filter(|bytes| !sandbox.is_cached(bytes))
                    .map(|bytes| bytes.len())
                    .collect()
            })
        })
        .flatten();
    // A transformer that does not compile fails its own calls, reported with the others.
    let compiled: Transformers = used
        .par_iter()
        .map(|fqn| {
            let bytes = provider.components.get(*fqn).with_context(|| {
                format!("provider {} has no component for {fqn}", provider.origin)
            })?;
            Ok(((*fqn).to_owned(), sandbox.compile(fqn, bytes)))
        })
        .collect::<anyhow::Result<_>>()?;
    drop(progress);
    let jobs = render::jobs(plan);
    Ok(render::execute(&sandbox, &compiled, &jobs, context, limits))
}

/// What [`report_failures`] and the warnings say, as `--verbose=json` events: a `warning` per
/// warning, an `error` per plan error and render failure (with its component, and transformer
/// and digest when a call failed), then a `summary` with the counts and the exit status.
fn report_events(
    plan: &Plan,
    rendered: &Rendered,
    redactor: &Redactor,
    stderr: &mut dyn Write,
) -> std::io::Result<()> {
    use serde_json::json;
    let mut emit = |value| render::verbose::event(value, redactor, &mut *stderr);
    for warning in plan.warnings() {
        emit(json!({"event": "warning", "component": warning.component(),
                    "message": warning.to_string()}))?;
    }
    let unredacted = redactor.warning();
    if let Some(warning) = &unredacted {
        emit(json!({"event": "warning", "message": warning}))?;
    }
    for problem in plan.errors() {
        emit(json!({"event": "error", "component": problem.component(),
                    "message": problem.to_string()}))?;
    }
    for failure in &rendered.failures {
        emit(json!({"event": "error", "component": failure.component,
                    "transformer": failure.transformer, "digest": failure.digest,
                    "message": failure.error.to_string()}))?;
    }
    let errors = plan.errors().len() + rendered.failures.len();
    let status = if errors == 0 { 0 } else { EXIT_FAILED };
    emit(
        json!({"event": "summary", "status": status, "errors": errors,
                "warnings": plan.warnings().len() + usize::from(unredacted.is_some()),
                "resources": if errors == 0 { rendered.resources.len() } else { 0 }}),
    )
}

/// Writes every plan error and render failure, grouped by component.
fn report_failures(
    plan: &Plan,
    rendered: &Rendered,
    stderr: &mut dyn Write,
) -> std::io::Result<()> {
    let mut by_component: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut general = Vec::new();
    for problem in plan.errors() {
        match problem.component() {
            Some(component) => by_component
                .entry(component.to_owned())
                .or_default()
                .push(problem.to_string()),
            None => general.push(problem.to_string()),
        }
    }
    for failure in &rendered.failures {
        by_component
            .entry(failure.component.clone())
            .or_default()
            .push(format!(
                "transformer {} ({}) {}",
                failure.transformer, failure.digest, failure.error
            ));
    }
    let count = general.len() + by_component.values().map(Vec::len).sum::<usize>();
    writeln!(
        stderr,
        "error: render failed with {count} problem{} in {} component{}",
        if count == 1 { "" } else { "s" },
        by_component.len(),
        if by_component.len() == 1 { "" } else { "s" },
    )?;
    for problem in general {
        writeln!(stderr, "  {problem}")?;
    }
    for (component, problems) in by_component {
        writeln!(stderr, "  component {component:?}:")?;
        for problem in problems {
            writeln!(stderr, "    - {}", problem.replace('\n', "\n      "))?;
        }
    }
    Ok(())
}
