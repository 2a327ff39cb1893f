//! `opm mod build`: render a module into platform manifests.

use std::process::ExitCode;

use clap::Args;

use super::module_args::ModuleArgs;
use crate::cli::Output;

/// Arguments of `opm mod build`.
#[derive(Debug, Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub module: ModuleArgs,
}

/// Runs `opm mod build`.
pub fn run(_args: BuildArgs, _out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    anyhow::bail!("opm mod build is not implemented yet")
}
