//! `opm provider sign BUNDLE --key KEY`: signs a bundle file with a minisign secret key and writes
//! the detached signature to `BUNDLE.minisig` (`providers/README.md`, "Signatures"). The bundle is
//! loaded and checked first, so a corrupt bundle is never signed. The signature verifies with
//! `minisign -Vm BUNDLE -p KEY.pub` as well as with `opm provider verify`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::cli::Output;
use opm_core::bundle::{self, signature};
use opm_core::provider;

/// Arguments of `opm provider sign`.
#[derive(Debug, Args)]
pub struct SignArgs {
    /// The bundle file to sign.
    #[arg(value_name = "BUNDLE")]
    pub bundle: PathBuf,

    /// The minisign secret key file (as `minisign -G` writes it).
    #[arg(short = 's', long = "key", value_name = "KEY")]
    pub key: PathBuf,

    /// Where to write the signature (default: BUNDLE.minisig).
    #[arg(short = 'x', long = "signature", value_name = "FILE")]
    pub signature: Option<PathBuf>,
}

/// Runs `opm provider sign`.
pub fn run(args: SignArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let name = args.bundle.display().to_string();
    let bytes = bundle::read_bytes(&args.bundle)?;
    let loaded = provider::from_bundle_checked(name.clone(), bundle::read(&name, &bytes)?)?;
    let digest = loaded.digest.unwrap_or_default();
    let file_name = args
        .bundle
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let timestamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let binding = loaded.manifest.metadata.binding();
    let comment = format!(
        "{}\ttimestamp:{timestamp}\tfile:{file_name}\tbundle:{digest}",
        binding.to_comment()
    );
    let text = signature::sign(&name, &bytes, &args.key, &comment)?;
    let path = args
        .signature
        .unwrap_or_else(|| signature::signature_path(&args.bundle));
    opm_core::files::write_atomically(&path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    let (_, info) = signature::read_signature(&args.bundle, Some(&path))?
        .context("the signature just written cannot be read")?;
    writeln!(
        out.stdout,
        "signed {name} ({digest}) with key {}; signature in {}",
        info.key_id,
        path.display()
    )?;
    Ok(ExitCode::SUCCESS)
}
