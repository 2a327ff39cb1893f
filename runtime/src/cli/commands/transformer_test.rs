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

    #[command(flatten)]
    pub limits: LimitArgs,

    #[command(flatten)]
    pub cache: CacheArgs,
}

/// Runs `opm transformer test`.
pub fn run(args: TestArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
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

    let limits = LimitsSpec::default()
        .limits(&args.limits.caps())
        .map_err(anyhow::Error::msg)?;
    let sandbox = Sandbox::new(&limits)?.with_cache(args.cache.cache(out.env));
    let name = component_path.display().to_string();
    let transformer = crate::render::build::compile_all(&sandbox, &[(&name, &bytes)], true)
        .remove(&name)
        .expect("compile_all compiles every component it is given")?;
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
        let ran = cases::run(&sandbox, &transformer, case, &limits);
        let figures = format!(
            "fuel {:>13}  {:>8.2} ms",
            grouped(ran.fuel),
            ran.elapsed.as_secs_f64() * 1000.0
        );
        let verdict = verdict(case, &ran.outcome, args.bless)?;
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
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILED)
    })
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
