//! `opm transformer test [DIR|COMPONENT] [--cases DIR] [--bless]`: runs a transformer's case
//! folders against its built component in the sandbox, with the limits a render uses (see
//! `authoring::cases`). A project directory is built first, as `cargo test` does, unless
//! `--no-build`, or unless its component is newer than every source (as `make` decides,
//! `authoring::project::up_to_date`). Each case's fuel and time are shown; a case that fails
//! shows a diff; any failure exits 1. `--bless` rewrites each case's `expected.json` from what
//! the component returned.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use super::module_args::{CacheArgs, LimitArgs};
use crate::authoring::cases::{self, Case};
use crate::authoring::project;
use crate::cli::{EXIT_FAILED, Output};
use crate::contract::Compiler;
use crate::provider::LimitsSpec;
use crate::sandbox::{Bytes, Sandbox};

/// Arguments of `opm transformer test`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm transformer test
  opm transformer test --bless
  opm transformer test build/service.wasm --cases cases/")]
pub struct TestArgs {
    /// A project directory (holding transformer.yaml), or a component file.
    #[arg(value_name = "DIR|COMPONENT", default_value = ".")]
    pub target: PathBuf,

    /// The case folders' directory (default: the project's `cases`, or `cases/` beside a
    /// component file).
    #[arg(long, value_name = "DIR")]
    pub cases: Option<PathBuf>,

    /// Rewrite each case's expected.json from what the component returns.
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
    /// output with `rendered.yaml` beside the module (`--bless` writes it).
    ///
    /// Example: --with kubernetes
    #[arg(long, value_name = "PROVIDER")]
    pub with: Vec<String>,

    /// Compile with Cranelift, as renders do, instead of the baseline compiler (Winch), which
    /// compiles a JavaScript or Python component several times faster into slower code: what
    /// the edit loop wants, and the limits hold alike.
    #[arg(long)]
    pub optimized: bool,

    /// The module `--with` renders (default: transformer.yaml's `module`).
    ///
    /// Example: --module ../module.yaml
    #[arg(long, value_name = "MODULE", requires = "with")]
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
    let (component_path, cases_dir) = if args.target.is_dir() {
        let loaded = project::load(&args.target)?;
        if !args.no_build {
            if project::up_to_date(&loaded) {
                writeln!(
                    out.stderr,
                    "{} is up to date: {} is newer than every source \
                     (`opm transformer build` builds it again)",
                    loaded.project.name,
                    loaded.project.component.display()
                )?;
            } else {
                let built = project::build(&loaded, out.stderr)?;
                super::transformer_build::report(&built, out.stderr)?;
            }
        }
        provider_dir = loaded.provider_dir();
        module = loaded.module_path();
        (
            loaded.component_path(),
            args.cases.clone().unwrap_or_else(|| loaded.cases_dir()),
        )
    } else {
        let beside = args.target.parent().unwrap_or(Path::new(".")).join("cases");
        (args.target.clone(), args.cases.clone().unwrap_or(beside))
    };
    let bytes = std::fs::read(&component_path).with_context(|| {
        format!(
            "cannot read the component {} (run `opm transformer build` first)",
            component_path.display()
        )
    })?;
    // A core module built with wit-bindgen is tested as `opm provider pack` would ship it.
    let bytes = if wasmparser::Parser::is_core_wasm(&bytes) {
        crate::bundle::component::componentize(&bytes).with_context(|| {
            format!(
                "{} is a core module that cannot be made a component",
                component_path.display()
            )
        })?
    } else {
        bytes
    };
    let cases = cases::load_all(&cases_dir)?;

    let provider_dir = args.provider.clone().or(provider_dir).map(|p| tidy(&p));
    let module = args.module.clone().or(module).map(|m| tidy(&m));
    // The limits of the provider it ships in, as a render applies them; else the host's. The
    // kinds whose checksums are stretched: its renderer's, else the default provider's.
    let manifest = match &provider_dir {
        Some(dir) => Some(crate::provider::read_manifest(dir)?),
        None => None,
    };
    let limits = match &manifest {
        Some((origin, manifest)) => manifest
            .limits
            .limits(&args.limits.caps())
            .map_err(|e| anyhow::anyhow!("{origin}: {e}"))?,
        None => LimitsSpec::default()
            .limits(&args.limits.caps())
            .map_err(anyhow::Error::msg)?,
    };
    let secret_kinds = match manifest.as_ref().and_then(|(_, m)| m.renderer.as_ref()) {
        Some(renderer) => renderer.secret_kinds.clone(),
        None => crate::provider::load_embedded()?
            .manifest
            .renderer
            .map(|renderer| renderer.secret_kinds)
            .unwrap_or_default(),
    };
    let name = component_path.display().to_string();
    let compile = |compiler| -> anyhow::Result<_> {
        let sandbox =
            Sandbox::with_compiler(&limits, compiler)?.with_cache(args.cache.cache(out.env));
        let transformer = crate::render::build::compile_all(&sandbox, &[(&name, &bytes)], true)
            .remove(&name)
            .expect("compile_all compiles every component it is given");
        Ok((sandbox, transformer))
    };
    let (sandbox, transformer) = match compile(compiler(&args))? {
        (_, Err(error)) if compiler(&args) == Compiler::Baseline => {
            // Something the baseline compiler does not support: compile as a render does.
            writeln!(
                out.stderr,
                "the baseline compiler cannot compile {name} ({error}); compiling it with \
                 Cranelift, as a render does"
            )?;
            compile(Compiler::Optimizing)?
        }
        compiled => compiled,
    };
    let transformer = transformer?;
    writeln!(
        out.stdout,
        "testing {name} ({}) against {} case{} in {}",
        Bytes(bytes.len() as u64),
        cases.len(),
        if cases.len() == 1 { "" } else { "s" },
        cases_dir.display()
    )?;

    let width = cases.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let (mut passed, mut failed, mut blessed) = (0, 0, 0);
    for case in &cases {
        let ran = cases::run(&sandbox, &transformer, case, &limits, &secret_kinds);
        let figures = format!(
            "fuel {:>13}  {:>8.2} ms",
            grouped(ran.fuel),
            ran.elapsed.as_secs_f64() * 1000.0
        );
        let verdict = if ran.refused.is_empty() {
            verdict(case, &ran.outcome, args.bless)?
        } else {
            Verdict::Fail(format!(
                "`opm mod build` would refuse what it returned:\n{}",
                ran.refused
                    .iter()
                    .map(|why| format!("- {why}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ))
        };
        let label = match &verdict {
            Verdict::Pass => "ok",
            Verdict::Blessed => "blessed",
            Verdict::Fail(_) => "FAIL",
        };
        writeln!(out.stdout, "  {label:<7} {:<width$}  {figures}", case.name)?;
        match verdict {
            Verdict::Pass => passed += 1,
            Verdict::Blessed => blessed += 1,
            Verdict::Fail(why) => {
                failed += 1;
                for line in why.lines() {
                    writeln!(out.stdout, "      {line}")?;
                }
                for line in &ran.logs {
                    writeln!(out.stdout, "      log {line}")?;
                }
            }
        }
    }
    writeln!(
        out.stdout,
        "{} case{}: {passed} passed, {failed} failed{}",
        cases.len(),
        if cases.len() == 1 { "" } else { "s" },
        if args.bless {
            format!(", {blessed} blessed")
        } else {
            String::new()
        }
    )?;
    if !args.with.is_empty() {
        let dir = provider_dir.context(
            "--with renders the transformer's own provider beside the others: name its source \
             directory in transformer.yaml (`provider: DIR`) or with --provider DIR",
        )?;
        let module = module.context(
            "--with renders a module: name it in transformer.yaml (`module: PATH`) or with \
             --module PATH",
        )?;
        let mut providers = args.with.clone();
        providers.push(dir.display().to_string());
        if !render_with(&args, &module, providers, out)? {
            failed += 1;
        }
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILED)
    })
}

/// Renders `module` with `providers` as `opm mod build` does and compares the output with
/// `rendered.yaml` beside it (or writes it, with `--bless`). Whether it passed.
fn render_with(
    args: &TestArgs,
    module: &Path,
    providers: Vec<String>,
    out: &mut Output<'_>,
) -> anyhow::Result<bool> {
    let names = providers.join(" + ");
    let request = crate::render::Request {
        providers,
        compiler: compiler(args),
        caps: args.limits.caps(),
        cache: args.cache.cache(out.env),
        ..crate::render::Request::new(module)
    };
    let built = crate::render::build(&request, out.env);
    let mut text = None;
    let status = crate::report::render(built, None, &mut *out.stderr, &mut |done, _| {
        let bytes = done
            .rendered
            .files
            .first()
            .map(|file| file.bytes.clone())
            .unwrap_or_default();
        text = Some((String::from_utf8(bytes)?, done.rendered.resources.len()));
        Ok(ExitCode::SUCCESS)
    })?;
    let golden = project::rendered_path(module);
    let Some((text, count)) = text.filter(|_| status == ExitCode::SUCCESS) else {
        writeln!(
            out.stdout,
            "  FAIL    render of {} with {names}",
            module.display()
        )?;
        return Ok(false);
    };
    let summary = format!(
        "render of {} with {names}: {count} resource{}",
        module.display(),
        if count == 1 { "" } else { "s" }
    );
    let expected = std::fs::read_to_string(&golden).ok();
    if expected.as_deref() == Some(text.as_str()) {
        writeln!(out.stdout, "  ok      {summary}")?;
        return Ok(true);
    }
    if args.bless {
        crate::files::write_atomically(&golden, text.as_bytes())
            .with_context(|| format!("cannot write {}", golden.display()))?;
        writeln!(
            out.stdout,
            "  blessed {summary}, written to {}",
            golden.display()
        )?;
        return Ok(true);
    }
    writeln!(out.stdout, "  FAIL    {summary}")?;
    match expected {
        None => writeln!(
            out.stdout,
            "      no {} (run with --bless to record the render)",
            golden.display()
        )?,
        Some(expected) => {
            let diff = cases::diff(&expected, &text, &golden.display().to_string(), "rendered");
            for line in diff.lines() {
                writeln!(out.stdout, "      {line}")?;
            }
        }
    }
    Ok(false)
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

/// How one case went.
enum Verdict {
    Pass,
    Blessed,
    /// Why it failed: a diff, or what the sandbox said.
    Fail(String),
}

/// Compares a case's outcome with its expectation, or records it with `--bless`.
fn verdict(
    case: &Case,
    outcome: &Result<serde_json::Value, String>,
    bless: bool,
) -> anyhow::Result<Verdict> {
    let got = match outcome {
        Ok(got) => got,
        Err(error) => return Ok(Verdict::Fail(format!("the call did not return: {error}"))),
    };
    if bless {
        if case.expected.as_ref() == Some(got) {
            return Ok(Verdict::Pass);
        }
        let path = case.dir.join(cases::EXPECTED);
        crate::files::write_atomically(&path, cases::pretty(got).as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        return Ok(Verdict::Blessed);
    }
    let Some(expected) = &case.expected else {
        return Ok(Verdict::Fail(format!(
            "no {} (run with --bless to record what it returns); it returned:\n{}",
            cases::EXPECTED,
            cases::pretty(got)
        )));
    };
    Ok(match cases::compare(expected, got) {
        None => Verdict::Pass,
        Some(diff) => Verdict::Fail(diff),
    })
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
