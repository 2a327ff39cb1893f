//! `opm argocd plugin|parameters`: opm as an Argo CD Config Management Plugin — the plugin's
//! `plugin.yaml`, and the parameter announcement of a module (what the plugin's
//! `parameters.dynamic` command prints). The plugin's `generate` is `opm mod build --argocd`.
//! The work is [`crate::argocd`]'s.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::cli::Output;

/// `opm argocd …`.
#[derive(Debug, Subcommand)]
pub enum ArgocdCommand {
    /// Print the plugin's plugin.yaml (a ConfigManagementPlugin), for the sidecar.
    Plugin,
    /// Print a module's parameters as Argo CD's parameter announcement (a JSON array), each
    /// with its default as the announced value.
    Parameters(ParametersArgs),
}

/// Arguments of `opm argocd parameters`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm argocd parameters .
  opm argocd parameters examples/grafana/module.yaml")]
pub struct ParametersArgs {
    /// The module file, or a directory holding `module.yaml`.
    #[arg(default_value = ".", value_name = "MODULE")]
    pub module: PathBuf,
}

/// Runs `opm argocd …`.
pub fn run(command: ArgocdCommand, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    match command {
        ArgocdCommand::Plugin => out
            .stdout
            .write_all(crate::argocd::PLUGIN_YAML.as_bytes())?,
        ArgocdCommand::Parameters(args) => {
            let schema = opm_core::module::config_schema(&args.module)?;
            let announced = crate::argocd::announcements(schema.as_ref());
            writeln!(out.stdout, "{}", serde_json::to_string(&announced)?)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
