//! `opm mod verify-render DIR`: renders again the inputs a directory's provenance (`opm.render`,
//! written by `mod build --out-dir` and `mod push`) records, and says whether the directory is
//! exactly what they give — naming each file edited, missing or added since, and each input
//! (module file, values, providers, opm) that changed. The work is
//! `render::deliver::verify`'s.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::mod_build::RunArgs;
use super::module_args::ModuleArgs;
use crate::cli::Output;
use crate::render::OutputOptions;
use crate::render::deliver::{self, Verdict};
use crate::report::EXIT_FAILED;

/// Arguments of `opm mod verify-render`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm mod verify-render deploy/
  opm mod verify-render deploy/ --set db.password=\"$DB_PASSWORD\"")]
pub struct VerifyRenderArgs {
    /// The directory a render wrote (it holds `opm.render`).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,

    /// Give again a `--set PATH=VALUE` whose value the provenance holds redacted (a
    /// sensitive value is never written there).
    ///
    /// Example: --set adminPassword="$GRAFANA_ADMIN_PASSWORD"
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,

    #[command(flatten)]
    pub run: RunArgs,
}

/// Runs `opm mod verify-render`.
pub fn run(args: VerifyRenderArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let module = ModuleArgs {
        module: PathBuf::new(),
        provider: Vec::new(),
        values: Vec::new(),
        set: Vec::new(),
        strict: false,
        instance: None,
        renderer: None,
        namespace: None,
        allow_env: Vec::new(),
    };
    let base = args.run.request(&module, OutputOptions::default(), out.env);
    let dir = args.dir.display();
    match deliver::verify(&args.dir, &args.set, base, out.env)? {
        Verdict::Same(files) => {
            writeln!(
                out.stdout,
                "{dir}: exactly what its inputs render ({files} files)"
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Verdict::Different(lines) => {
            writeln!(out.stdout, "{dir}: not what its inputs render")?;
            for line in lines {
                writeln!(out.stdout, "  {line}")?;
            }
            Ok(ExitCode::from(EXIT_FAILED))
        }
    }
}
