//! `opm provider export-catalog [--out FILE|DIR]`: writes the catalog of definitions built into
//! this opm — the one its built-in providers take — with its version, so that a provider outside
//! the repository takes it with `definitionsFrom:` instead of a copy made by hand, and records
//! the version it follows (`providers/README.md#the-catalog-and-its-version`). Without `--out`,
//! on stdout.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::catalog;
use crate::cli::Output;

/// Arguments of `opm provider export-catalog`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm provider export-catalog > catalog.yaml
  opm provider export-catalog --out my-provider/        # → my-provider/catalog.yaml
  # then, in my-provider/provider.yaml: definitionsFrom: catalog.yaml")]
pub struct ExportCatalogArgs {
    /// Where to write it: a file, or a folder to write `catalog.yaml` in (default: stdout).
    #[arg(short = 'o', long = "out", value_name = "FILE|DIR")]
    pub out: Option<PathBuf>,
}

/// The file name the catalog gets in a folder.
pub const FILE_NAME: &str = "catalog.yaml";

/// Runs `opm provider export-catalog`.
pub fn run(args: ExportCatalogArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let text = catalog::exported();
    let Some(path) = args.out else {
        out.stdout.write_all(text.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    };
    let path = if path.is_dir() {
        path.join(FILE_NAME)
    } else {
        path
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    opm_core::files::write_atomically_readable(&path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    let embedded = catalog::embedded();
    writeln!(
        out.stdout,
        "exported catalog {} ({}, {} definitions) to {}",
        embedded.version,
        embedded.digest,
        embedded.definitions.len(),
        path.display()
    )?;
    Ok(ExitCode::SUCCESS)
}
