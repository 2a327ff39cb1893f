//! `opm-native`: `opm mod build` with the embedded Kubernetes provider's transformer crates
//! compiled into this process and called directly, instead of their WebAssembly components in
//! the sandbox. Everything else — loading, planning, checking, labelling, ordering, writing — is
//! `opm mod build`'s own code ([`mod_build::run_with`]), so the difference between the two is
//! what the sandbox costs. Used by `benches/e2e.sh` as its variant (c); not a product.
//!
//! ```sh
//! cargo build --release -p opm-benches --bin opm-native
//! target/release/opm-native module.yaml -j 2 > out.yaml
//! ```

use std::process::ExitCode;

use clap::Parser;
use opm_benches::Native;
use opm_runtime::cli::Output;
use opm_runtime::cli::commands::mod_build::{self, BuildArgs};
use opm_runtime::render;

/// `opm-native` takes exactly `opm mod build`'s arguments.
#[derive(Debug, Parser)]
#[command(name = "opm-native")]
struct Cli {
    #[command(flatten)]
    build: BuildArgs,
}

/// The same allocator as `opm`'s, so that the comparison measures the sandbox alone.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let native = Native::new();
    let backend = |plan: &_, _: &_, context: &_, limits: &_, _: &_| {
        Ok(render::execute_with(
            &native,
            &render::jobs(plan),
            context,
            limits,
        ))
    };
    let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr().lock());
    let mut out = Output {
        stdout: &mut stdout,
        stderr: &mut stderr,
        env: &opm_runtime::cli::process_env,
        stderr_is_terminal: false,
        stdout_is_terminal: false,
    };
    match mod_build::run_with(&cli.build, &mut out, &backend) {
        Ok(status) => status,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}
