//! `opm transformer build [DIR]`: runs the build command of a transformer project's
//! `transformer.yaml` and checks that the result is a component opm runs (see
//! `authoring::project`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::authoring::project::{self, Built};
use crate::cli::Output;
use opm_sandbox::Bytes;

/// Arguments of `opm transformer build`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm transformer build
  opm transformer build transformers/greeter")]
pub struct BuildArgs {
    /// The project directory, holding transformer.yaml.
    #[arg(value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
}

/// Runs `opm transformer build`.
pub fn run(args: BuildArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let loaded = project::load(&args.dir)?;
    let built = project::build(&loaded, out.stderr)?;
    report(&built, out.stdout)?;
    Ok(ExitCode::SUCCESS)
}

/// Says what was built: where, how big, from which language and tools, importing what.
pub(crate) fn report(built: &Built, stdout: &mut dyn std::io::Write) -> std::io::Result<()> {
    let info = &built.info;
    writeln!(
        stdout,
        "built {} in {:.1} s: a {} component{}",
        built.path.display(),
        built.elapsed.as_secs_f64(),
        Bytes(info.size as u64),
        if built.componentized {
            " (opm made the core module the build produced a component)"
        } else {
            ""
        }
    )?;
    if let Some(language) = info.producers.source_language() {
        writeln!(
            stdout,
            "  language  {language} ({})",
            info.producers.toolchain()
        )?;
    }
    writeln!(stdout, "  exports   {}", info.exports.join(", "))?;
    writeln!(stdout, "  imports   {}", info.imports.join(", "))?;
    Ok(())
}
