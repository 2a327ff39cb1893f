//! The `opm` binary: the CLI of [`opm_runtime::cli`] connected to this process.

use std::io::IsTerminal;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr().lock();
    let mut out = opm_runtime::cli::Output {
        stdout: &mut stdout,
        stderr: &mut stderr,
        env: &opm_runtime::cli::process_env,
        stderr_is_terminal: std::io::stderr().is_terminal(),
        stdout_is_terminal: std::io::stdout().is_terminal(),
    };
    opm_runtime::cli::run(std::env::args_os(), &mut out)
}

/// glibc's allocator spent a fifth to a quarter of a 10,000-component render consolidating
/// free chunks (benches/RESULTS.md); mimalloc's per-thread free lists do not.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
