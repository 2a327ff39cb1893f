//! `opm provider check PROVIDER [--examples DIR] [-o text|json]`: the conformance run of a
//! provider ([`crate::conformance`]) — every example module rendered with it, nothing written;
//! its definitions and catalog version beside this opm's catalog; and the coverage table, which
//! catalog fields each transformer reads. Exits 1 when an example does not render, naming it,
//! its component and transformer; 2 when the provider does not load.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::module_args::CacheArgs;
use crate::cli::{EXIT_FAILED, Output};
use crate::conformance::{self, Report};
use opm_core::printable::escape_lines;

/// Arguments of `opm provider check`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm provider check ./my-provider                     # a source directory
  opm provider check my-provider-0.1.0.opmb -o json
  opm provider check docker-compose --examples examples/

A field is read when changing or removing it alone, in one call of an example's render,
changes what the transformer returns (docs/cli.md, \"opm provider check\").")]
pub struct CheckArgs {
    /// The provider: a source directory, a bundle file, a provider the project installed, or a
    /// built-in one (`kubernetes`, `docker-compose`, `quadlet`).
    #[arg(value_name = "PROVIDER")]
    pub provider: String,

    /// The modules to render: a folder whose subfolders each hold a `module.yaml` (as
    /// `examples/` of opm's repository), or one module's folder (default: the examples built
    /// into opm, those of its repository when it was built).
    #[arg(long, value_name = "DIR")]
    pub examples: Option<PathBuf>,

    /// How to print.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = CheckFormat::Text)]
    pub output: CheckFormat,

    /// Render threads (default: every core).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,

    #[command(flatten)]
    pub cache: CacheArgs,
}

/// The formats `opm provider check` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    /// The examples, the catalog and the coverage table, for a person.
    Text,
    /// One JSON object.
    Json,
}

/// Runs `opm provider check`.
pub fn run(args: CheckArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let options = conformance::Options {
        provider: args.provider,
        examples: args.examples,
        jobs: args.jobs,
        cache: args.cache.cache(out.env),
    };
    let report = conformance::check(&options, out.env)?;
    match args.output {
        CheckFormat::Text => {
            let mut text = String::new();
            write_text(&report, &mut text);
            // Example modules and providers from anywhere are quoted: escaped.
            write!(out.stdout, "{}", escape_lines(&text))?;
        }
        CheckFormat::Json => {
            let text = serde_json::to_string_pretty(&report)?;
            writeln!(out.stdout, "{}", opm_core::printable::escape_json(&text))?;
        }
    }
    if let Some(advice) = &report.catalog.advice {
        writeln!(out.stderr, "warning: {}", escape_lines(advice))?;
    }
    if report.passed() {
        return Ok(ExitCode::SUCCESS);
    }
    let failed: Vec<&str> = report
        .examples
        .iter()
        .filter(|example| !example.problems.is_empty())
        .map(|example| example.name.as_str())
        .collect();
    writeln!(
        out.stderr,
        "error: provider {} does not render {} of {} examples: {}",
        report.provider.name,
        failed.len(),
        report.examples.len(),
        escape_lines(&failed.join(", "))
    )?;
    Ok(ExitCode::from(EXIT_FAILED))
}

/// The part of an FQN after `#`.
fn short(fqn: &str) -> &str {
    fqn.rsplit('#').next().unwrap_or(fqn)
}

/// `report` in words: the provider, its catalog, every example, the coverage table.
fn write_text(report: &Report, text: &mut String) {
    use std::fmt::Write as _;
    let Report {
        provider,
        catalog,
        examples_from,
        examples,
        coverage,
    } = report;
    let _ = writeln!(
        text,
        "provider {} {} ({})",
        provider.name, provider.version, provider.origin
    );
    let compared = &catalog.definitions;
    let _ = writeln!(
        text,
        "\ncatalog: this opm's is {} ({}); the provider follows {}\n  {} of its definitions \
         as in the catalog, {} changed, {} missing; {} of its own",
        catalog.version,
        catalog.digest,
        catalog.follows.as_deref().unwrap_or("none it states"),
        compared.same.len(),
        compared.differ.len(),
        compared.missing.len(),
        compared.own.len(),
    );
    for (what, list) in [
        ("changed", &compared.differ),
        ("missing", &compared.missing),
    ] {
        for fqn in list {
            let _ = writeln!(text, "  {what}: {fqn}");
        }
    }

    let _ = writeln!(text, "\nexamples ({examples_from}):");
    let width = examples.iter().map(|e| e.name.len()).max().unwrap_or(0);
    for example in examples {
        let verdict = if example.problems.is_empty() {
            "ok    "
        } else {
            "FAILED"
        };
        let _ = writeln!(
            text,
            "  {verdict}  {:width$}  {} components, {} calls, {} warnings",
            example.name,
            example.components,
            example.calls,
            example.warnings.len(),
        );
        for problem in &example.problems {
            let _ = writeln!(text, "      {}", problem.replace('\n', "\n      "));
        }
    }

    let _ = writeln!(
        text,
        "\ncoverage: what each transformer's output depends on, over the examples' calls (a \
         field is read when changing or removing it alone changes the output)"
    );
    let mut rows: Vec<[String; 5]> = vec![[
        "TRANSFORMER".into(),
        "CALLS".into(),
        "DEFINITION".into(),
        "FIELD".into(),
        "READ".into(),
    ]];
    for (transformer, entry) in &coverage.transformers {
        if entry.fields.is_empty() {
            rows.push([
                short(transformer).into(),
                entry.calls.to_string(),
                "-".into(),
                if entry.calls == 0 {
                    "(no example calls it)".into()
                } else {
                    "(given no catalog field)".into()
                },
                "-".into(),
            ]);
            continue;
        }
        for (fqn, fields) in &entry.fields {
            for (path, read) in fields {
                rows.push([
                    short(transformer).into(),
                    entry.calls.to_string(),
                    short(fqn).into(),
                    if path.is_empty() {
                        "(the value)".into()
                    } else {
                        path.clone()
                    },
                    if *read { "yes" } else { "no" }.into(),
                ]);
            }
        }
    }
    let widths: Vec<usize> = (0..5)
        .map(|column| rows.iter().map(|row| row[column].len()).max().unwrap_or(0))
        .collect();
    for row in &rows {
        let line = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:width$}"))
            .collect::<Vec<_>>()
            .join("  ");
        let _ = writeln!(text, "  {}", line.trim_end());
    }
    let others: usize = coverage
        .transformers
        .values()
        .map(|entry| entry.others_unread)
        .sum();
    if others > 0 {
        let _ = writeln!(
            text,
            "  ({others} fields of definitions a transformer does not name were given to it and \
             not read: -o json counts them per transformer)"
        );
    }
}
