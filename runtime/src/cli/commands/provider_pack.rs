//! `opm provider pack DIR [-o FILE]`: packs a provider source directory into one bundle file
//! (`providers/README.md`, "Bundles") and prints its digest. Core modules are turned into
//! components; every component is checked before it is packed. Exits 2 when the source is refused.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::cli::Output;
use opm_core::provider::pack;

/// Arguments of `opm provider pack`.
#[derive(Debug, Args)]
pub struct PackArgs {
    /// The provider source directory: a `provider.yaml` and the `.wasm` files it names.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,

    /// Where to write the bundle (default: NAME-VERSION.opmb in the current directory).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Runs `opm provider pack`.
pub fn run(args: PackArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let packed = pack::pack_dir(&args.dir)?;
    let path = args
        .output
        .unwrap_or_else(|| PathBuf::from(packed.file_name()));
    opm_core::files::write_atomically(&path, &packed.packed.bytes)
        .with_context(|| format!("writing {}", path.display()))?;
    for fqn in &packed.componentized {
        writeln!(
            out.stderr,
            "note: {fqn}: core module turned into a component"
        )?;
    }
    writeln!(
        out.stdout,
        "packed {} {} ({} transformers, {} bytes) into {}",
        packed.manifest.metadata.name,
        packed.manifest.metadata.version,
        packed.manifest.transformers.len(),
        packed.packed.bytes.len(),
        path.display()
    )?;
    writeln!(out.stdout, "digest {}", packed.packed.digest)?;
    Ok(ExitCode::SUCCESS)
}
