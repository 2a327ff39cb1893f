//! `opm provider sign BUNDLE --key KEY`: signs a bundle file with a minisign secret key and writes
//! the detached signature to `BUNDLE.minisig` (`providers/README.md`, "Signatures"). The bundle is
//! loaded and checked first, so a corrupt bundle is never signed. The signature verifies with
//! `minisign -Vm BUNDLE -p KEY.pub` as well as with `opm provider verify`.
//!
//! With `--sigstore`, the key is an ECDSA P-256 private key (PEM, or cosign's encrypted key) and
//! the signature a Sigstore bundle, `BUNDLE.sigstore.json`, that `cosign verify-blob --key` and
//! other Sigstore verifiers check as well as opm does. The bundle file holds its manifest, so
//! either signature covers the provider's name, version and every digest.

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

    /// The minisign secret key file (as `minisign -G` writes it); with --sigstore, an ECDSA
    /// P-256 private key in PEM or cosign's encrypted key file (password in COSIGN_PASSWORD).
    #[arg(short = 's', long = "key", value_name = "KEY")]
    pub key: PathBuf,

    /// Sign into a Sigstore bundle (BUNDLE.sigstore.json) rather than a minisign signature.
    #[arg(long)]
    pub sigstore: bool,

    /// Where to write the signature (default: BUNDLE.minisig, or BUNDLE.sigstore.json).
    #[arg(short = 'x', long = "signature", value_name = "FILE")]
    pub signature: Option<PathBuf>,
}

/// Runs `opm provider sign`.
pub fn run(args: SignArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let name = args.bundle.display().to_string();
    let bytes = bundle::read_bytes(&args.bundle)?;
    let loaded = provider::from_bundle_checked(name.clone(), bundle::read(&name, &bytes)?)?;
    let digest = loaded.digest.unwrap_or_default();
    if args.sigstore {
        let key = super::trust_args::signing_key(&args.key, out.env)?;
        let signed = opm_sigstore::sign_blob(&bytes, &key)?;
        let path = args
            .signature
            .unwrap_or_else(|| super::trust_args::bundle_path(&args.bundle));
        opm_core::files::write_atomically(&path, &signed)
            .with_context(|| format!("writing {}", path.display()))?;
        writeln!(
            out.stdout,
            "signed {name} ({digest}) with {}; Sigstore bundle in {}",
            args.key.display(),
            path.display()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
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
