//! `opm completion SHELL`: the shell completion script, from clap's own generator.

use std::process::ExitCode;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use crate::cli::Output;

/// Arguments of `opm completion`.
#[derive(Debug, Args)]
#[command(after_long_help = "\
Install:
  bash:        opm completion bash > ~/.local/share/bash-completion/completions/opm
  zsh:         opm completion zsh > \"${fpath[1]}/_opm\"
  fish:        opm completion fish > ~/.config/fish/completions/opm.fish
  powershell:  opm completion powershell >> $PROFILE

Then start a new shell.")]
pub struct CompletionArgs {
    /// The shell to complete for.
    ///
    /// Example: opm completion bash
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: Shell,
}

/// Runs `opm completion`.
pub fn run(args: CompletionArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let mut command = crate::cli::Cli::command();
    clap_complete::generate(args.shell, &mut command, "opm", &mut *out.stdout);
    Ok(ExitCode::SUCCESS)
}
