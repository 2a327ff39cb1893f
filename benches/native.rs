//! `opm-native`: `opm mod build` with the embedded Kubernetes provider's transformer crates
//! compiled into this process and called directly, instead of their WebAssembly components in
//! the sandbox. Everything else — loading, planning, checking, labelling, ordering, reporting,
//! writing — is `opm mod build`'s own code (the pipeline [`render::build_with`], with this
//! process's [`Native`] runner in place of the sandbox), so the difference between the two is
//! what the sandbox costs. Used by `benches/e2e.sh` as its variant (c); not a product.
//!
//! ```sh
//! cargo build --release -p opm-benches --bin opm-native
//! target/release/opm-native module.yaml -j 2 > out.yaml
//! ```

use std::process::ExitCode;

use clap::Parser;
use opm_benches::Native;
use opm_runtime::cli::commands::mod_build::{self, BuildArgs};
use opm_runtime::{render, report};

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
    let env = &opm_runtime::cli::process_env;
    let native = Native::new();
    let request = cli.build.request(env);
    let built = render::build_with(&request, env, Some(&native));
    let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr().lock());
    let status = report::render(
        built,
        cli.build.verbose(),
        &mut stderr,
        &mut |done, redactor| {
            // As `opm mod build` writes it: with --out-dir, the render's provenance beside it.
            let provenance = match &cli.build.out_dir {
                Some(_) => Some(render::deliver::provenance(
                    &request, done, redactor, env, None,
                )?),
                None => None,
            };
            mod_build::write_output(&cli.build, done, provenance.as_ref(), &mut stdout)
        },
    );
    match status {
        Ok(status) => status,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}
