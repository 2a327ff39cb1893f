//! The `opm` command line: argument parsing and dispatch to one file per subcommand.
//!
//! [`run`] is the whole CLI as a function of its arguments and output streams, so tests can drive
//! it in-process; `main.rs` only connects it to the process. Exit status: 0 success, 1 the render
//! or check failed, 2 bad usage or unreadable input (DESIGN §7).

pub mod commands;

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit status of a render or check that failed (DESIGN §7).
pub const EXIT_FAILED: u8 = 1;
/// Exit status of bad usage or unreadable input (DESIGN §7).
pub const EXIT_USAGE: u8 = 2;

/// opm renders platform-agnostic modules into Kubernetes manifests through sandboxed
/// WebAssembly transformers.
#[derive(Debug, Parser)]
#[command(name = "opm", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Work with modules: render them, check them.
    #[command(subcommand, name = "mod")]
    Module(ModuleCommand),
}

#[derive(Debug, Subcommand)]
enum ModuleCommand {
    /// Render a module into platform manifests.
    Build(commands::mod_build::BuildArgs),
    /// Load, validate and match a module without running any transformer.
    Vet(commands::mod_vet::VetArgs),
}

/// Where a command writes, and where it reads environment variables (`${env:NAME}`,
/// `SOURCE_DATE_EPOCH`) — the process's, or a test's.
pub struct Output<'a> {
    /// Rendered output.
    pub stdout: &'a mut dyn Write,
    /// Diagnostics, verbose output, errors.
    pub stderr: &'a mut dyn Write,
    /// Looks up an environment variable; [`process_env`] in the binary.
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

/// The process's environment, for [`Output::env`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

impl std::fmt::Debug for Output<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Output").finish_non_exhaustive()
    }
}

/// Runs the CLI with `args` (the first is the program name) and returns the exit status.
pub fn run<I, T>(args: I, out: &mut Output<'_>) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let status = if e.use_stderr() { EXIT_USAGE } else { 0 };
            let rendered = if e.use_stderr() {
                e.render().ansi().to_string()
            } else {
                e.to_string()
            };
            let stream = if e.use_stderr() {
                &mut *out.stderr
            } else {
                &mut *out.stdout
            };
            let _ = write!(stream, "{rendered}");
            return ExitCode::from(status);
        }
    };
    let result = match cli.command {
        Command::Module(ModuleCommand::Build(args)) => commands::mod_build::run(args, out),
        Command::Module(ModuleCommand::Vet(args)) => commands::mod_vet::run(args, out),
    };
    match result {
        Ok(code) => code,
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            let _ = writeln!(out.stderr, "error: {error:#}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

pub(crate) fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
