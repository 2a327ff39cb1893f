//! `opm transformer test [DIR|COMPONENT] [--cases DIR] [--bless]`: runs a transformer's case
//! folders against its built component in the sandbox, with the limits a render uses (see
//! `authoring::cases`). A project directory is built first, as `cargo test` does, unless
//! `--no-build`, or unless its component is newer than every source — the project
//! directory's and its `sources:` (as `make` decides, `authoring::sources::freshness`). Each
//! case's fuel and time are shown; a case that fails shows a diff; any failure exits 1.
//! `--bless` rewrites each case's `expected.json` from what the component returned.
//!
//! `--module M` without `--with` renders M with the project's own provider alone — its
//! transformers and its renderer, the provider the project's `provider:` names — and compares
//! every file it writes, as into `--out-dir`, with `rendered/` beside M: the golden test of a
//! whole provider.
//!
//! A renderer (a project with `kind: renderer`, or a component file that exports the renderer
//! interface) is tested the same way with renderer cases (`authoring::renderer_cases`: the
//! resources in, the files out), run as the last step of a render runs it; `--with` renders
//! the module with the given providers and the renderer's own (`--module` alone, with the
//! renderer's provider alone), and compares every file it writes with `rendered/` beside the
//! module.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::module_args::{CacheArgs, LimitArgs};
use crate::authoring::cases::{self, Ran, Verdict};
use crate::authoring::goldens::Compared;
use crate::authoring::project::{self, Kind};
use crate::authoring::renderer_cases;
use crate::authoring::sources::{self, Freshness};
use crate::authoring::suite::{self, Folder, WithOutcome};
use crate::cli::{EXIT_FAILED, Output};
use opm_core::provider::ProviderManifest;
use opm_sandbox::Compiler;
use opm_sandbox::{Bytes, Limits, Sandbox};

/// Arguments of `opm transformer test`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm transformer test
  opm transformer test --bless
  opm transformer test --with kubernetes
  opm transformer test --module ../examples/shop/module.yaml --bless
  opm transformer test build/service.wasm --cases cases/")]
pub struct TestArgs {
    /// A project directory (holding transformer.yaml), or a component file.
    #[arg(value_name = "DIR|COMPONENT", default_value = ".")]
    pub target: PathBuf,

    /// The case folders' directory (default: the project's `cases`, or `cases/` beside a
    /// component file).
    #[arg(long, value_name = "DIR")]
    pub cases: Option<PathBuf>,

    /// Rewrite each case's expected.json from what the component returns (and with --with the
    /// module's rendered.yaml, or for a renderer its rendered/).
    #[arg(long)]
    pub bless: bool,

    /// Test the component as it is, without running the project's build first (by default
    /// the build runs unless the component is newer than every source).
    #[arg(long)]
    pub no_build: bool,

    /// The provider source directory the transformer ships in (default: transformer.yaml's
    /// `provider`): its `limits` are the test's, as in a render.
    ///
    /// Example: --provider ..
    #[arg(long, value_name = "DIR")]
    pub provider: Option<PathBuf>,

    /// After the cases, render a module with these providers and the transformer's own
    /// together, as `opm mod build -p PROVIDER… -p DIR` will (repeatable), and compare the
    /// output with `rendered.yaml` beside the module (`--bless` writes it). For a renderer,
    /// the render writes its files as into `--out-dir`, compared with `rendered/` beside the
    /// module. The project's own provider is always in the render: naming it here (`--with
    /// ..`) changes nothing. To test a provider that ships its own renderer, give `--module`
    /// without `--with`.
    ///
    /// Example: --with kubernetes
    #[arg(long, value_name = "PROVIDER")]
    pub with: Vec<String>,

    /// Compile with Cranelift, as renders do, instead of the baseline compiler (Winch), which
    /// compiles a JavaScript or Python component several times faster into slower code: what
    /// the edit loop wants, and the limits hold alike.
    #[arg(long)]
    pub optimized: bool,

    /// The module `--with` renders (default: transformer.yaml's `module`). Without `--with`,
    /// the golden test of the whole provider the project ships in: after the cases, render
    /// MODULE with that provider alone — its transformers and its renderer, as `opm mod build
    /// -p DIR --out-dir` will — and compare every file with `rendered/` beside MODULE
    /// (`--bless` writes it).
    ///
    /// Example: --module ../examples/shop/module.yaml
    #[arg(long, value_name = "MODULE")]
    pub module: Option<PathBuf>,

    #[command(flatten)]
    pub limits: LimitArgs,

    #[command(flatten)]
    pub cache: CacheArgs,
}

/// Runs `opm transformer test`.
pub fn run(args: TestArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let mut provider_dir = None;
    let mut module = None;
    let mut kind = None;
    let (component_path, cases_dir) = if args.target.is_dir() {
        let loaded = project::load(&args.target)?;
        if !args.no_build {
            build_unless_fresh(&loaded, out)?;
        }
        provider_dir = loaded.provider_dir();
        module = loaded.module_path();
        kind = Some(loaded.project.kind);
        (
            loaded.component_path(),
            args.cases.clone().unwrap_or_else(|| loaded.cases_dir()),
        )
    } else {
        let beside = args.target.parent().unwrap_or(Path::new(".")).join("cases");
        (args.target.clone(), args.cases.clone().unwrap_or(beside))
    };
    let bytes = suite::read_component(&component_path)?;
    let kind = kind.unwrap_or_else(|| suite::kind_of(&bytes));

    let provider_dir = args.provider.clone().or(provider_dir).map(|p| tidy(&p));
    let module = args.module.clone().or(module).map(|m| tidy(&m));
    let manifest = match &provider_dir {
        Some(dir) => Some(opm_core::provider::read_manifest(dir)?),
        None => None,
    };
    let name = component_path.display().to_string();
    if kind == Kind::Renderer {
        let under_test = UnderTest {
            name,
            bytes,
            cases_dir,
            manifest: manifest.map(|(_, manifest)| manifest),
            provider_dir,
            module,
        };
        return test_renderer(&args, under_test, out);
    }
    let cases = cases::load_all(&cases_dir)?;
    // The limits of the provider it ships in, as a render applies them; else the host's. The
    // kinds whose checksums are stretched: its renderer's, else the default provider's.
    let limits = suite::transformer_limits(manifest.as_ref(), &args.limits.caps())?;
    let secret_kinds = suite::secret_kinds(manifest.as_ref().map(|(_, m)| m))?;
    let (sandbox, transformer) = suite::compile_transformer(
        &name,
        &bytes,
        &limits,
        compiler(&args),
        args.cache.cache(out.env),
        out.stderr,
    )?;
    let transformer = transformer?;
    writeln!(
        out.stdout,
        "testing {name} ({}) against {} case{} in {}",
        Bytes(bytes.len() as u64),
        cases.len(),
        if cases.len() == 1 { "" } else { "s" },
        cases_dir.display()
    )?;

    let folders: Vec<Folder<'_>> = cases
        .iter()
        .map(|case| Folder {
            name: &case.name,
            dir: &case.dir,
            expected: case.expected.as_ref(),
        })
        .collect();
    let mut failed = run_cases(
        &folders,
        |index| {
            cases::run(
                &sandbox,
                &transformer,
                &cases[index],
                &limits,
                &secret_kinds,
            )
        },
        "`opm mod build` would refuse what it returned:",
        args.bless,
        out,
    )?;
    if renders(&args) && !render_with(&args, provider_dir, module, Kind::Transformer, out)? {
        failed += 1;
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILED)
    })
}

/// Builds the project of `loaded` unless its component is newer than every source, the
/// project directory's and its `sources:` ([`sources::freshness`]), saying which.
pub(crate) fn build_unless_fresh(
    loaded: &project::Loaded,
    out: &mut Output<'_>,
) -> anyhow::Result<()> {
    match sources::freshness(loaded)? {
        Freshness::Fresh => writeln!(
            out.stderr,
            "{} is up to date: {} is newer than every source \
             (`opm transformer build` builds it again)",
            loaded.project.name,
            loaded.project.component.display()
        )?,
        freshness => {
            if let Freshness::Stale(newest) = freshness {
                writeln!(
                    out.stderr,
                    "{} changed since {} was built",
                    newest.path.display(),
                    loaded.project.component.display()
                )?;
            }
            let built = project::build(loaded, out.stderr)?;
            super::transformer_build::report(&built, out.stderr)?;
        }
    }
    Ok(())
}

/// Runs each of `folders` ([`suite::run_cases`]) and prints a line for each with its fuel and
/// time, and a diff, the reasons of `refused_header` and the guest's log for each that failed;
/// then the summary. Returns how many failed.
fn run_cases(
    folders: &[Folder<'_>],
    run: impl Fn(usize) -> Ran,
    refused_header: &str,
    bless: bool,
    out: &mut Output<'_>,
) -> anyhow::Result<usize> {
    let width = folders.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let tally = suite::run_cases(folders, run, refused_header, bless, &mut |case| {
        let figures = format!(
            "fuel {:>13}  {:>8.2} ms",
            grouped(case.fuel),
            case.elapsed.as_secs_f64() * 1000.0
        );
        let label = match &case.verdict {
            Verdict::Pass => "ok",
            Verdict::Blessed => "blessed",
            Verdict::Fail(_) => "FAIL",
        };
        writeln!(out.stdout, "  {label:<7} {:<width$}  {figures}", case.name)?;
        if let Verdict::Fail(why) = &case.verdict {
            for line in why.lines() {
                writeln!(out.stdout, "      {line}")?;
            }
            for line in &case.logs {
                writeln!(out.stdout, "      log {line}")?;
            }
        }
        Ok(())
    })?;
    writeln!(
        out.stdout,
        "{} case{}: {} passed, {} failed{}",
        folders.len(),
        if folders.len() == 1 { "" } else { "s" },
        tally.passed,
        tally.failed,
        if bless {
            format!(", {} blessed", tally.blessed)
        } else {
            String::new()
        }
    )?;
    Ok(tally.failed)
}

/// The renderer `opm transformer test` tests, and where its project keeps what it needs.
struct UnderTest {
    /// The component's path, as messages name it.
    name: String,
    /// The component.
    bytes: Vec<u8>,
    /// The case folders' directory.
    cases_dir: PathBuf,
    /// The manifest of the provider it ships in, if named: the renderer's name, version and
    /// limits.
    manifest: Option<ProviderManifest>,
    /// That provider's source directory, which `--with` renders with.
    provider_dir: Option<PathBuf>,
    /// The module `--with` renders.
    module: Option<PathBuf>,
}

/// `opm transformer test` of a renderer: its cases, each run as the last step of a render runs
/// the renderer (its provider's `renderer.limits`, the host's checks of the files), then with
/// `--with` a render of the module.
fn test_renderer(
    args: &TestArgs,
    under_test: UnderTest,
    out: &mut Output<'_>,
) -> anyhow::Result<ExitCode> {
    let cases = renderer_cases::load_all(&under_test.cases_dir)?;
    let renderer = suite::renderer_under_test(
        &under_test.name,
        &under_test.bytes,
        under_test.manifest.as_ref(),
    );
    // Room for the largest memory a renderer may be given: the render step applies its limits.
    let sandbox_with = |compiler| -> anyhow::Result<Sandbox> {
        let ceiling = Limits {
            memory: u64::MAX,
            ..Limits::default()
        };
        Ok(Sandbox::with_compiler(&ceiling, compiler)?.with_cache(args.cache.cache(out.env)))
    };
    // Compiled once here, into the cache each case's run finds it in.
    let mut sandbox = sandbox_with(compiler(args))?;
    if let Err(error) = sandbox.compile_renderer(&renderer.name, &renderer.component) {
        if compiler(args) != Compiler::Baseline {
            return Err(error.into());
        }
        writeln!(
            out.stderr,
            "the baseline compiler cannot compile {} ({error}); compiling it with Cranelift, as \
             a render does",
            under_test.name
        )?;
        sandbox = sandbox_with(Compiler::Optimizing)?;
        sandbox.compile_renderer(&renderer.name, &renderer.component)?;
    }
    writeln!(
        out.stdout,
        "testing renderer {} ({}) against {} case{} in {}",
        under_test.name,
        Bytes(renderer.component.len() as u64),
        cases.len(),
        if cases.len() == 1 { "" } else { "s" },
        under_test.cases_dir.display()
    )?;
    let folders: Vec<Folder<'_>> = cases
        .iter()
        .map(|case| Folder {
            name: &case.name,
            dir: &case.dir,
            expected: case.expected.as_ref(),
        })
        .collect();
    let mut failed = run_cases(
        &folders,
        |index| renderer_cases::run(&sandbox, &renderer, &cases[index]),
        "`opm mod build` would fail:",
        args.bless,
        out,
    )?;
    if renders(args)
        && !render_with(
            args,
            under_test.provider_dir,
            under_test.module,
            Kind::Renderer,
            out,
        )?
    {
        failed += 1;
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILED)
    })
}

/// Renders the module with the providers of `--with` and the project's own
/// ([`suite::render_with`]) and prints how it compared with its golden. Whether it passed.
fn render_with(
    args: &TestArgs,
    provider_dir: Option<PathBuf>,
    module: Option<PathBuf>,
    kind: Kind,
    out: &mut Output<'_>,
) -> anyhow::Result<bool> {
    // The project was built if it had to be; the other projects of its provider are rendered
    // as built, as `mod build -p DIR` renders them, and as it does, a stale one is said.
    if let Some(dir) = &provider_dir {
        super::mod_build::warn_stale(&[dir.display().to_string()], &mut *out.stderr)?;
    }
    let asked = suite::WithRender {
        with: &args.with,
        provider_dir,
        module,
        kind,
        compiler: compiler(args),
        caps: args.limits.caps(),
        cache: args.cache.cache(out.env),
        bless: args.bless,
    };
    let outcome = suite::render_with(asked, out.env, &mut *out.stderr)?;
    match &outcome {
        WithOutcome::Failed { what } => writeln!(out.stdout, "  FAIL    render of {what}")?,
        WithOutcome::Compared {
            summary,
            golden,
            compared,
        } => match compared {
            Compared::Same => writeln!(out.stdout, "  ok      {summary}")?,
            Compared::Blessed => writeln!(
                out.stdout,
                "  blessed {summary}, written to {}",
                golden.display()
            )?,
            Compared::Missing => {
                writeln!(out.stdout, "  FAIL    {summary}")?;
                writeln!(
                    out.stdout,
                    "      no {} (run with --bless to record the render)",
                    golden.display()
                )?;
            }
            Compared::Differs(diff) => {
                writeln!(out.stdout, "  FAIL    {summary}")?;
                for line in diff.lines() {
                    writeln!(out.stdout, "      {line}")?;
                }
            }
        },
    }
    Ok(outcome.passed())
}

/// Whether a module is rendered after the cases: with `--with`, beside those providers; with
/// `--module` alone, with the project's own provider.
fn renders(args: &TestArgs) -> bool {
    !args.with.is_empty() || args.module.is_some()
}

/// The compiler the test compiles with: the baseline one unless `--optimized`.
fn compiler(args: &TestArgs) -> Compiler {
    if args.optimized {
        Compiler::Optimizing
    } else {
        Compiler::Baseline
    }
}

/// `path` without its `.` components (`./.` is `.`, `./../m.yaml` is `../m.yaml`), as messages
/// show it.
fn tidy(path: &Path) -> PathBuf {
    let tidied: PathBuf = path
        .components()
        .filter(|c| *c != std::path::Component::CurDir)
        .collect();
    if tidied.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        tidied
    }
}

/// `n` with thousands separated by commas.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn groups_thousands() {
        assert_eq!(super::grouped(0), "0");
        assert_eq!(super::grouped(999), "999");
        assert_eq!(super::grouped(1000), "1,000");
        assert_eq!(super::grouped(1234567), "1,234,567");
    }
}
