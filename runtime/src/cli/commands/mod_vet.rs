//! `opm mod vet`: load, validate and match a module; run no transformer.

use std::process::ExitCode;

use clap::Args;

use super::module_args::ModuleArgs;
use crate::cli::Output;

/// Arguments of `opm mod vet`.
#[derive(Debug, Args)]
pub struct VetArgs {
    #[command(flatten)]
    pub module: ModuleArgs,
}

/// Runs `opm mod vet`.
pub fn run(_args: VetArgs, _out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    anyhow::bail!("opm mod vet is not implemented yet")
}
