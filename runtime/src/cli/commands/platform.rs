//! `opm platform build` and `opm platform diff`: every release of a releases file
//! (`docs/platforms.md`) rendered in one process, and the difference a change makes to every
//! environment. The work is [`crate::platform`]'s; this parses the flags and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::mod_build::{OutputArg, RunArgs};
use crate::cli::{EXIT_FAILED, Output};
use crate::platform::build::{self as platform_build, Build, Status};
use crate::render::{OutputOptions, Request};
use crate::report::Verbose;

/// `opm platform …`.
#[derive(Debug, Subcommand)]
pub enum PlatformCommand {
    /// Render every release of a releases file in one environment, in one process, into
    /// DIR/ENV/RELEASE/ (each exactly what `opm mod build --out-dir` writes for it); releases
    /// whose inputs did not change since their last render are not rendered again.
    Build(BuildArgs),
    /// Render every release of every environment as it is in the working tree and as it was
    /// at a git revision, and show what differs, release by release (masked): as text, as
    /// Markdown for a pull-request comment, or as JSON. Exit 0 equal, 1 different, 2 error.
    Diff(DiffArgs),
    /// Check every release of every environment (or those given) as `opm platform build`
    /// would render it, writing nothing: `opm mod vet` for a whole platform.
    Vet(VetArgs),
}

/// Arguments of `opm platform vet`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm platform vet platform.yaml
  opm platform vet platform.yaml --env prod --verbose=json 2> vet.jsonl")]
pub struct VetArgs {
    /// The releases file (`kind: Platform`).
    #[arg(default_value = "platform.yaml", value_name = "FILE")]
    pub file: PathBuf,

    /// Only this environment (repeatable); default: every one.
    ///
    /// Example: --env prod
    #[arg(short = 'e', long = "env", value_name = "ENV")]
    pub environment: Vec<String>,

    /// Output format checked, as `opm mod build -o` takes it.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputArg::Yaml)]
    pub output: OutputArg,

    /// Check the one-file-per-resource form, as `opm mod build --split`.
    #[arg(long)]
    pub split: bool,

    #[command(flatten)]
    pub run: RunArgs,
}

/// Arguments of `opm platform diff`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm platform diff platform.yaml --against-ref origin/main
  opm platform diff platform.yaml --against-ref HEAD~1 --env prod -o markdown > comment.md
  opm platform diff platform.yaml --against-ref v1.4.0 -o json | jq '.environments[].releases[] | select(.status != \"same\")'")]
pub struct DiffArgs {
    /// The releases file (`kind: Platform`), in a git working tree.
    #[arg(default_value = "platform.yaml", value_name = "FILE")]
    pub file: PathBuf,

    /// The git revision to compare the working tree with: a commit, branch or tag. Read with
    /// `git archive`; the working tree and the repository are not touched.
    ///
    /// Example: --against-ref origin/main
    #[arg(long, value_name = "REV")]
    pub against_ref: String,

    /// Only this environment (repeatable); default: every environment of either side.
    ///
    /// Example: --env prod
    #[arg(short = 'e', long = "env", value_name = "ENV")]
    pub environment: Vec<String>,

    /// `text`, a unified diff per changed object; `markdown`, a table per environment with
    /// each release's diff folded, for a pull-request comment; `json`, every release's status,
    /// diffs and both sides' objects.
    ///
    /// Example: -o markdown
    #[arg(short = 'o', long = "output", value_enum, default_value_t = DiffOutput::Text)]
    pub output: DiffOutput,

    /// Show Secret data and other sensitive values instead of masking them.
    #[arg(long)]
    pub show_secrets: bool,

    /// Transform calls run at once (default: every core).
    ///
    /// Example: -j 1
    #[arg(short = 'j', long = "jobs", value_name = "JOBS")]
    pub jobs: Option<usize>,

    #[command(flatten)]
    pub limits: super::module_args::LimitArgs,

    #[command(flatten)]
    pub cache: super::module_args::CacheArgs,

    #[command(flatten)]
    pub compile: super::module_args::CompileArgs,
}

/// `opm platform diff -o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffOutput {
    /// Unified diffs.
    Text,
    /// A pull-request comment.
    Markdown,
    /// Everything, for checks of one's own.
    Json,
}

/// Arguments of `opm platform build`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm platform build platform.yaml --env prod --out-dir out/
  opm platform build platform.yaml --env dev --out-dir out/ --release shop --force
  opm platform build platform.yaml --env prod --out-dir out/ --verbose=json 2> build.jsonl")]
pub struct BuildArgs {
    /// The releases file (`kind: Platform`).
    ///
    /// Example: opm platform build deploy/platform.yaml --env prod --out-dir out/
    #[arg(default_value = "platform.yaml", value_name = "FILE")]
    pub file: PathBuf,

    /// The environment to render (one of the file's `environments`); may be left out when the
    /// file has only one.
    ///
    /// Example: --env prod
    #[arg(short = 'e', long = "env", value_name = "ENV")]
    pub environment: Option<String>,

    /// Where the environment's releases are written: DIR/ENV/RELEASE/, each replaced
    /// atomically (a release that fails keeps its last good render), and DIR/ENV/.opm-platform.json,
    /// the input key of each release's render.
    ///
    /// Example: --out-dir out/
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,

    /// Render only this release (repeatable); the others are left as they are.
    ///
    /// Example: --release shop
    #[arg(long = "release", value_name = "NAME")]
    pub release: Vec<String>,

    /// Render every release, even those whose inputs did not change since their last render.
    #[arg(long)]
    pub force: bool,

    /// Output format of every release, as `opm mod build -o` takes it.
    ///
    /// Example: -o json
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputArg::Yaml)]
    pub output: OutputArg,

    /// One file per resource in each release's directory, as `opm mod build --split`.
    #[arg(long)]
    pub split: bool,

    /// Mark objects Flux's variable substitution would change, as `opm mod build --flux`.
    #[arg(long)]
    pub flux: bool,

    /// Push every release that rendered or was unchanged as its own OCI artifact,
    /// oci://HOST/PREFIX/RELEASE:ENV — exactly what `opm mod push` pushes for it — once the
    /// directories are written.
    ///
    /// Example: --push oci://registry.example.com/deploy
    #[arg(long, value_name = "oci://HOST/PREFIX")]
    pub push: Option<String>,

    /// Sign each pushed artifact and its provenance with this P-256 key, as `opm mod push
    /// --sign` does.
    ///
    /// Example: --sign cosign.key
    #[arg(long, value_name = "KEY", requires = "push")]
    pub sign: Option<PathBuf>,

    /// Allow plain HTTP to registries that are not on loopback: modules fetched
    /// (`module: oci://…`) and releases pushed.
    #[arg(long)]
    pub insecure_http: bool,

    #[command(flatten)]
    pub run: RunArgs,
}

/// Runs `opm platform …`.
pub fn run(command: PlatformCommand, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    match command {
        PlatformCommand::Build(args) => build(args, out),
        PlatformCommand::Diff(args) => diff(args, out),
        PlatformCommand::Vet(args) => vet(args, out),
    }
}

/// The environment `given`, or the file's only one.
pub(crate) fn environment_of(
    given: Option<&str>,
    file: &std::path::Path,
) -> anyhow::Result<String> {
    if let Some(environment) = given {
        return Ok(environment.to_owned());
    }
    let platform = opm_core::platform::Platform::load(file)?;
    match platform.environments.as_slice() {
        [only] => Ok(only.clone()),
        all => anyhow::bail!("say which environment to render: --env {}", all.join(" | ")),
    }
}

fn build(args: BuildArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let environment = environment_of(args.environment.as_deref(), &args.file)?;
    let push = args
        .push
        .as_deref()
        .map(|prefix| push_prefix(prefix, &environment))
        .transpose()?;
    // The key is read before anything is rendered or pushed: a wrong password pushes nothing.
    let key = args
        .sign
        .as_deref()
        .map(|key| super::trust_args::signing_key(key, out.env))
        .transpose()?;
    let output = OutputOptions {
        format: args.output.name().to_owned(),
        split: args.split,
        directory: true,
    };
    let base = Request {
        flux: args.flux,
        ..args.run.apply(Request::new(""), output, out.env)
    };
    let verbose = args.run.verbose();
    let built = platform_build::build(
        &Build {
            file: args.file.clone(),
            environment: environment.clone(),
            only: args.release.clone(),
            out_dir: args.out_dir.clone(),
            force: args.force,
            base,
            verbose,
            registry: opm_registry::Options {
                insecure_http: args.insecure_http,
                ..opm_registry::Options::default()
            },
        },
        out.env,
    )?;
    let (rendered, unchanged, failed) =
        print_outcomes(&environment, &built.releases, verbose, "rendered", out)?;
    let mut push_failed = 0;
    if let Some(prefix) = &push {
        let options = opm_registry::Options {
            insecure_http: args.insecure_http,
            ..opm_registry::Options::default()
        };
        for outcome in &built.releases {
            if outcome.status == Status::Failed {
                continue;
            }
            let name = format!("{environment}/{}", outcome.release.name);
            match push_release(prefix, &environment, outcome, key.as_ref(), &options) {
                Ok(line) => {
                    if verbose == Some(Verbose::Json) {
                        writeln!(
                            out.stderr,
                            "{}",
                            json!({"event": "push", "environment": environment, "release": outcome.release.name, "url": line})
                        )?;
                    } else {
                        writeln!(out.stderr, "{name}: pushed {line}")?;
                    }
                }
                Err(error) => {
                    push_failed += 1;
                    if verbose == Some(Verbose::Json) {
                        writeln!(
                            out.stderr,
                            "{}",
                            json!({"event": "error", "environment": environment, "release": outcome.release.name, "message": format!("pushing: {error:#}")})
                        )?;
                    } else {
                        writeln!(out.stderr, "{name}: error: pushing: {error:#}")?;
                    }
                }
            }
        }
    }
    let failed = failed + push_failed;
    let status = if failed > 0 { EXIT_FAILED } else { 0 };
    if verbose == Some(Verbose::Json) {
        writeln!(
            out.stderr,
            "{}",
            json!({
                "event": "summary",
                "environment": environment,
                "releases": built.releases.len(),
                "rendered": rendered,
                "unchanged": unchanged,
                "failed": failed,
                "removed": built.removed,
                "status": status,
            })
        )?;
    } else {
        for name in &built.removed {
            writeln!(
                out.stderr,
                "{environment}/{name}: removed (no longer in {})",
                args.file.display()
            )?;
        }
        writeln!(
            out.stderr,
            "{environment}: {} release{}: {rendered} rendered, {unchanged} unchanged, {failed} failed",
            built.releases.len(),
            if built.releases.len() == 1 { "" } else { "s" },
        )?;
    }
    Ok(ExitCode::from(status))
}

fn diff(args: DiffArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    use crate::platform::diff;
    let base = Request {
        jobs: args.jobs,
        caps: args.limits.caps(),
        cache: args.cache.cache(out.env),
        compiler: args.compile.compiler(),
        ..Request::new("")
    };
    let compared = diff::diff(
        &diff::Diff {
            file: args.file.clone(),
            against: args.against_ref.clone(),
            environments: args.environment.clone(),
            base,
            show_secrets: args.show_secrets,
        },
        out.env,
    )?;
    let text = match args.output {
        DiffOutput::Text => diff::text(&compared, &args.against_ref, out.stdout_colors()),
        DiffOutput::Markdown => diff::markdown(&compared, &args.against_ref),
        DiffOutput::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&diff::json(&compared, &args.against_ref))?
        ),
    };
    // Once more through the redactor of both sides, as `mod diff` does.
    let text = if args.show_secrets {
        text
    } else {
        compared.redactor.redact(&text).into_owned()
    };
    out.stdout.write_all(text.as_bytes())?;
    for line in &compared.errors {
        writeln!(out.stderr, "{}", compared.redactor.redact(line))?;
    }
    for environment in &compared.environments {
        let differing = environment
            .releases
            .iter()
            .filter(|r| r.status != "same")
            .count();
        let total = environment.releases.len();
        if differing == 0 {
            writeln!(
                out.stderr,
                "{}: no difference ({total} releases)",
                environment.name
            )?;
        } else {
            writeln!(
                out.stderr,
                "{}: {differing} of {total} releases differ",
                environment.name
            )?;
        }
    }
    Ok(ExitCode::from(if !compared.errors.is_empty() {
        crate::cli::EXIT_USAGE
    } else if compared.different() {
        EXIT_FAILED
    } else {
        0
    }))
}

/// Prints each release's report (under `--verbose=json` with its environment and release added
/// to each event) and its status line (`done` for a release rendered); the counts rendered,
/// unchanged and failed.
fn print_outcomes(
    environment: &str,
    outcomes: &[platform_build::ReleaseOutcome],
    verbose: Option<Verbose>,
    done: &str,
    out: &mut Output<'_>,
) -> anyhow::Result<(usize, usize, usize)> {
    let (mut rendered, mut unchanged, mut failed) = (0, 0, 0);
    for outcome in outcomes {
        let name = format!("{environment}/{}", outcome.release.name);
        let (status, files) = match outcome.status {
            Status::Rendered(files) => {
                rendered += 1;
                (done, Some(files))
            }
            Status::Unchanged => {
                unchanged += 1;
                ("unchanged", None)
            }
            Status::Failed => {
                failed += 1;
                ("failed", None)
            }
        };
        let report = String::from_utf8_lossy(&outcome.report);
        if verbose == Some(Verbose::Json) {
            for line in report.lines() {
                let mut event = serde_json::Map::new();
                event.insert("environment".into(), json!(environment));
                event.insert("release".into(), json!(outcome.release.name));
                match serde_json::from_str::<Value>(line) {
                    Ok(Value::Object(fields)) => event.extend(fields),
                    _ => {
                        event.insert("event".into(), json!("error"));
                        event.insert("message".into(), json!(line));
                    }
                }
                writeln!(out.stderr, "{}", Value::Object(event))?;
            }
            let mut event = json!({
                "event": "release",
                "environment": environment,
                "release": outcome.release.name,
                "status": status,
                "dir": outcome.dir.display().to_string(),
                "key": outcome.key,
            });
            if let Some(files) = files {
                event["files"] = json!(files);
            }
            writeln!(out.stderr, "{event}")?;
        } else {
            for line in report.lines() {
                writeln!(out.stderr, "{name}: {line}")?;
            }
            match files {
                Some(files) if outcome.dir.as_os_str().is_empty() => writeln!(
                    out.stderr,
                    "{name}: {done}, {files} file{}",
                    if files == 1 { "" } else { "s" }
                )?,
                Some(files) => writeln!(
                    out.stderr,
                    "{name}: {done} {files} files into {}",
                    outcome.dir.display()
                )?,
                None => writeln!(out.stderr, "{name}: {status}")?,
            }
        }
    }
    Ok((rendered, unchanged, failed))
}

fn vet(args: VetArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let output = OutputOptions {
        format: args.output.name().to_owned(),
        split: args.split,
        directory: args.split,
    };
    let base = Request {
        progress: false,
        ..args.run.apply(Request::new(""), output, out.env)
    };
    let verbose = args.run.verbose();
    let checked = platform_build::vet(
        &args.file,
        &args.environment,
        &base,
        &opm_registry::Options::default(),
        verbose,
        out.env,
    )?;
    let mut failed_all = 0;
    for (environment, outcomes) in &checked {
        let (checked, _, failed) = print_outcomes(environment, outcomes, verbose, "checked", out)?;
        failed_all += failed;
        if verbose == Some(Verbose::Json) {
            writeln!(
                out.stderr,
                "{}",
                json!({"event": "environment", "environment": environment, "checked": checked, "failed": failed})
            )?;
        } else {
            writeln!(
                out.stderr,
                "{environment}: {checked} checked, {failed} failed"
            )?;
        }
    }
    let status = if failed_all > 0 { EXIT_FAILED } else { 0 };
    if verbose == Some(Verbose::Json) {
        writeln!(
            out.stderr,
            "{}",
            json!({"event": "summary", "failed": failed_all, "status": status})
        )?;
    }
    Ok(ExitCode::from(status))
}

/// `oci://HOST/PREFIX` checked: a reference without tag or digest, to which each release's
/// name and the environment's tag are added.
fn push_prefix(prefix: &str, environment: &str) -> anyhow::Result<String> {
    let trimmed = prefix.trim_end_matches('/');
    let probe = opm_core::provider::oci::OciRef::parse(&format!("{trimmed}/release:{environment}"))
        .map_err(|e| anyhow::anyhow!("--push {prefix}: {e}"))?;
    anyhow::ensure!(
        probe.tag() == Some(environment) && probe.digest().is_none(),
        "--push {prefix}: give oci://HOST/PREFIX, without a tag or digest (each release is \
         pushed to PREFIX/RELEASE:{environment})"
    );
    Ok(trimmed.to_owned())
}

/// Pushes the directory of `outcome` as `PREFIX/RELEASE:ENV` (and signs it with `key`); the
/// pushed reference with its digest.
fn push_release(
    prefix: &str,
    environment: &str,
    outcome: &platform_build::ReleaseOutcome,
    key: Option<&opm_sigstore::SigningKey>,
    options: &opm_registry::Options,
) -> anyhow::Result<String> {
    let target = opm_core::provider::oci::OciRef::parse(&format!(
        "{prefix}/{}:{environment}",
        outcome.release.name
    ))?;
    let (files, provenance) = crate::render::deliver::read_out_dir(&outcome.dir)?;
    let artifact = crate::render::deliver::artifact(&files, &provenance)?;
    crate::render::deliver::push_artifact(&target, &artifact, options)?;
    if let Some(key) = key {
        super::mod_push::sign(&target, &artifact.digest, &files, &provenance, key, options)?;
    }
    Ok(format!(
        "oci://{}/{}:{environment}@{}",
        target.registry(),
        target.repository(),
        artifact.digest
    ))
}
