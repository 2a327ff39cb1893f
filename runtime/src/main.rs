//! The `opm` binary: the CLI of [`opm_runtime::cli`] connected to this process.

use std::io::IsTerminal;
use std::process::ExitCode;

fn main() -> ExitCode {
    use opm_sandbox::isolated::{self, CompileProcess};
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|arg| arg == isolated::SUBCOMMAND) {
        let rest: Vec<String> = args[2..]
            .iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        return isolated::serve(&rest);
    }
    // Every component this process compiles is compiled in a child of this binary, under a
    // memory limit and a deadline (`opm_sandbox::isolated`).
    match CompileProcess::from_env(
        CompileProcess::this_program(),
        &opm_runtime::cli::process_env,
    ) {
        Ok(process) => isolated::use_children(process),
        Err(error) => {
            eprintln!("opm: {error}");
            return ExitCode::from(2);
        }
    }
    // The background compile `opm provider init` and `pull` start, compiling in children too.
    if args
        .get(1)
        .is_some_and(|arg| arg == opm_runtime::install::SUBCOMMAND)
    {
        return opm_runtime::install::serve(&opm_runtime::cli::process_env);
    }
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr().lock();
    let mut out = opm_runtime::cli::Output {
        stdout: &mut stdout,
        stderr: &mut stderr,
        env: &opm_runtime::cli::process_env,
        stderr_is_terminal: std::io::stderr().is_terminal(),
        stdout_is_terminal: std::io::stdout().is_terminal(),
    };
    opm_runtime::cli::run(args, &mut out)
}

/// glibc's allocator spent a fifth to a quarter of a 10,000-component render consolidating
/// free chunks (benches/RESULTS.md); mimalloc's per-thread free lists do not.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
