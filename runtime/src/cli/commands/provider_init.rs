//! `opm provider init [--upgrade] [--dry-run] [--force]`: resolves every provider of the
//! project's `.opm/providers.yaml` in its source, verifies it (its digests, that it is the
//! provider and version asked for, and its signature where keys are configured), installs it
//! under `.opm/providers/NAME/VERSION/` and writes `.opm/providers.lock.json` (see
//! `provider::installed`). The work is [`resolve::init`]; this file parses the flags and prints
//! each step.
//!
//! Without `--upgrade`, a locked provider keeps its locked version and bytes; with it, each
//! moves to the newest version its requirement allows, and a move to an older version is said.
//! `--dry-run` writes nothing and says what it would do; `--force` installs again what is
//! already installed. Then every component of every provider is compiled into the compile cache
//! (`opm cache dir`), in parallel, so that no render of the project compiles — what a CI job
//! that keeps the cache between runs pays once — and only then is the lock written: a provider
//! whose components do not compile is never locked. The compile is [`crate::install`]'s: Winch
//! for what has no code yet, so that the project is ready to render in seconds, and Cranelift's
//! faster code made behind it by a background `opm` that outlives this one; `--optimized`
//! compiles with Cranelift before returning instead. Two `init`s of one project never
//! interleave: each holds an exclusive lock on `.opm/.init.lock`, and every file is written to a
//! temporary name and renamed.

use std::process::ExitCode;

use clap::Args;

use anyhow::Context as _;

use crate::cli::Output;
use crate::install::{self, Pending};
use opm_core::provider::Provider;
use opm_core::provider::installed::resolve::{self, Options};
use opm_core::provider::installed::{self};
use opm_sandbox::{CompileCache, Compiler};

/// Arguments of `opm provider init`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm provider init
  opm provider init --upgrade --dry-run
  opm provider init --optimized    # a CI image that bakes the compile cache
  OPM_REGISTRY=/srv/opm-registry opm provider init")]
pub struct InitArgs {
    /// Move each provider to the newest version its requirement allows, even one older than
    /// the locked version.
    #[arg(long)]
    pub upgrade: bool,

    /// Say what would be installed and locked, and change nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Install again what is already installed.
    #[arg(long)]
    pub force: bool,

    /// Allow plain HTTP to OCI registries that are not on loopback.
    #[arg(long)]
    pub insecure_http: bool,

    #[command(flatten)]
    pub compile: OptimizedArg,
}

/// How `init` and `pull` compile what they install.
#[derive(Debug, Clone, Args)]
pub struct OptimizedArg {
    /// Compile every component with Cranelift before returning, and wait for it, rather than with
    /// Winch now (ready to render in seconds) and Cranelift's faster code in the background:
    /// what a CI image that bakes the compile cache wants. Waits for a background compile of the
    /// same components that is under way rather than compiling them twice.
    #[arg(long)]
    pub optimized: bool,
}

impl OptimizedArg {
    /// The compiler of the compile that the command waits for: Cranelift with `--optimized`,
    /// and also in a program that runs the CLI in its own process, which has no `opm` to start
    /// in the background; else Winch for what has no code yet.
    fn compiler(&self) -> Compiler {
        if self.optimized || !install::can_optimize_in_background() {
            Compiler::Optimizing
        } else {
            Compiler::Tiered
        }
    }
}

/// Runs `opm provider init`.
pub fn run(args: InitArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let options = Options {
        upgrade: args.upgrade,
        dry_run: args.dry_run,
        force: args.force,
        registry: Some(std::sync::Arc::new(opm_registry::Registry {
            options: opm_registry::Options {
                insecure_http: args.insecure_http,
                ..opm_registry::Options::default()
            },
        })),
    };
    let stdout = &mut *out.stdout;
    let done = resolve::init(&std::env::current_dir()?, &options, out.env, &mut |step| {
        Ok(writeln!(stdout, "{step}")?)
    })?;
    if args.dry_run {
        writeln!(out.stdout, "dry run: nothing was installed or locked")?;
        return Ok(ExitCode::SUCCESS);
    }
    // Each provider is compiled before the lock names it: one whose components cannot be
    // compiled (within the compiler's limits, `opm_sandbox::isolated`) is never locked, and the lock
    // stays as it was.
    let root = installed::find(&std::env::current_dir()?, out.env)?
        .context("the project's .opm directory went away")?;
    let project = installed::Project::load(&root)?;
    let mut pending = Vec::new();
    for locked in &done.lock.providers {
        let provider = installed::load_locked(&project, &done.lock, &locked.name)?;
        pending.extend(
            compile_into_cache(&provider, &args.compile, out)
                .with_context(|| format!("{} {} was not locked", locked.name, locked.version))?,
        );
    }
    done.write_lock()?;
    let count = done.lock.providers.len();
    writeln!(
        out.stdout,
        "locked {count} provider{} in {}",
        if count == 1 { "" } else { "s" },
        done.lock_path.display()
    )?;
    optimize_in_background(&pending, out)?;
    Ok(ExitCode::SUCCESS)
}

/// Compiles every component of `provider` into the compile cache the environment names, as
/// `compile` says, and says so; returns the components whose code is Winch's, for
/// [`optimize_in_background`]. Without a cache, compiles them all the same, as the check that
/// they can be, and says that renders will compile them again. Shared with `opm provider pull`.
pub fn compile_into_cache(
    provider: &Provider,
    compile: &OptimizedArg,
    out: &mut Output<'_>,
) -> anyhow::Result<Vec<Pending>> {
    let metadata = &provider.manifest.metadata;
    let cache = CompileCache::from_env(out.env);
    let kept = cache.is_some();
    let started = std::time::Instant::now();
    let done = install::compile_into_cache(provider, cache, compile.compiler())?;
    let plural = if done.compiled == 1 { "" } else { "s" };
    let seconds = started.elapsed().as_secs_f64();
    if kept {
        writeln!(
            out.stdout,
            "{} {}: {} component{plural} compiled into the compile cache in {seconds:.1} s, {} \
             there already",
            metadata.name, metadata.version, done.compiled, done.had
        )?;
        Ok(done.pending)
    } else {
        writeln!(
            out.stdout,
            "{} {}: {} component{plural} compiled in {seconds:.1} s; no compile cache (see `opm \
             cache dir`): renders compile them again on first use",
            metadata.name, metadata.version, done.compiled
        )?;
        Ok(Vec::new())
    }
}

/// Starts the background compile of `pending` with Cranelift ([`install`]) and says so, with its
/// process id; nothing when nothing is pending. A background compile that cannot start is a
/// warning: the components keep Winch's code, which renders run.
pub fn optimize_in_background(pending: &[Pending], out: &mut Output<'_>) -> anyhow::Result<()> {
    if pending.is_empty() {
        return Ok(());
    }
    let count = pending.len();
    let plural = if count == 1 { "" } else { "s" };
    match install::optimize_in_background(pending, out.env) {
        Ok(id) => writeln!(
            out.stdout,
            "compiling {count} component{plural} with Cranelift in the background (process \
             {id}, nice 19): renders use Winch's code until then, and Cranelift's faster code \
             once it is in the cache; `--optimized` waits for it"
        )?,
        Err(error) => writeln!(
            out.stderr,
            "warning: {count} component{plural} keep Winch's code: cannot compile them with \
             Cranelift in the background: {error:#}"
        )?,
    }
    Ok(())
}
