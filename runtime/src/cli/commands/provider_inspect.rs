//! `opm provider inspect PROVIDER [-o text|json] [--key PUB]...`: what a provider holds, at a
//! glance: metadata, bundle digest, signature status, limits, every transformer with its
//! requirements and its component's digest, size, imports and source language and toolchain
//! (from its producers sections), and the declared resources,
//! traits and policies. Takes what `--provider` takes (a bundle file, a source directory, or
//! `kubernetes`); loading checks everything, so inspecting a tampered bundle exits 2.
//!
//! With `--key`, the signature is verified and a signature that does not verify exits 1. What
//! is shown is the core's `inspect`; this parses the flags and prints it escaped.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::cli::{EXIT_FAILED, Output};
use opm_core::inspect::{SignatureStatus, report, signature_status, write_text};
use opm_core::provider;

/// Arguments of `opm provider inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// A bundle file, a provider source directory, or `kubernetes` (the embedded provider).
    #[arg(value_name = "PROVIDER")]
    pub provider: String,

    /// How to print.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = InspectFormat::Text)]
    pub output: InspectFormat,

    /// A trusted minisign public key to verify the signature with (repeatable).
    #[arg(short = 'p', long = "key", value_name = "PUB")]
    pub keys: Vec<PathBuf>,
}

/// The formats `opm provider inspect` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InspectFormat {
    /// A summary and a table a person reads at a glance.
    Text,
    /// One JSON object.
    Json,
}

/// Runs `opm provider inspect`.
pub fn run(args: InspectArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let provider = provider::load_in(
        &args.provider,
        &std::env::current_dir()?,
        out.env,
        &crate::embedded::PROVIDERS,
    )?;
    let infos = provider.check_components()?;
    let path = Path::new(&args.provider);
    let signature = if provider.digest.is_some() && path.is_file() {
        signature_status(path, &args.keys, &provider.manifest.metadata.binding())?
    } else {
        SignatureStatus::NotABundleFile
    };
    let report = report(&provider, &infos, signature);
    // A bundle's text (descriptions, labels, producers) may come from a registry: nothing in
    // it reaches the terminal unescaped.
    match args.output {
        InspectFormat::Text => {
            let mut text = Vec::new();
            write_text(&report, &mut text)?;
            let text = String::from_utf8_lossy(&text);
            write!(out.stdout, "{}", opm_core::printable::escape_lines(&text))?;
        }
        InspectFormat::Json => {
            let text = serde_json::to_string_pretty(&report)?;
            writeln!(out.stdout, "{}", opm_core::printable::escape_json(&text))?;
        }
    }
    Ok(match report.signature {
        SignatureStatus::Invalid { .. } => ExitCode::from(EXIT_FAILED),
        SignatureStatus::Unsigned if !args.keys.is_empty() => ExitCode::from(EXIT_FAILED),
        _ => ExitCode::SUCCESS,
    })
}
