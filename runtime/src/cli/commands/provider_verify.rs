//! `opm provider verify BUNDLE --key PUB...`: checks a bundle's detached minisign signature
//! (`BUNDLE.minisig`) against trusted public keys, then loads the bundle and checks every digest
//! and component (`providers/README.md`, "Signatures"). Signatures made by `minisign -Sm BUNDLE`
//! verify too.
//!
//! Exit status: 0 verified; 1 the check failed (no signature, a key that is not trusted, a
//! signature that does not match the bytes); 2 unreadable input (bundle, key or signature file)
//! or a bundle that loading refuses.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::cli::{EXIT_FAILED, Output};
use opm_core::bundle;
use opm_core::bundle::signature::{self, SignatureError};
use opm_core::provider;

/// Arguments of `opm provider verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The bundle file to verify.
    #[arg(value_name = "BUNDLE")]
    pub bundle: PathBuf,

    /// A trusted minisign public key: a file as `minisign -G` writes it, or the base64 key.
    /// Repeatable; the signature must be made by one of them.
    #[arg(short = 'p', long = "key", value_name = "PUB", required = true)]
    pub keys: Vec<PathBuf>,

    /// The signature file (default: BUNDLE.minisig).
    #[arg(short = 'x', long = "signature", value_name = "FILE")]
    pub signature: Option<PathBuf>,
}

/// Runs `opm provider verify`.
pub fn run(args: VerifyArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let keys = args
        .keys
        .iter()
        .map(|key| signature::read_public_key(key))
        .collect::<Result<Vec<_>, _>>()?;
    let name = args.bundle.display().to_string();
    let bytes = bundle::read_bytes(&args.bundle)?;
    let verified =
        signature::read_signature(&args.bundle, args.signature.as_deref()).and_then(|found| {
            match found {
                Some((sig, _)) => signature::verify(&name, &bytes, &sig, &keys),
                None => Err(SignatureError::Unsigned {
                    bundle: name.clone(),
                    signature: signature::signature_path(&args.bundle),
                }),
            }
        });
    let verified = match verified {
        Ok(verified) => verified,
        Err(e) if e.is_check_failure() => {
            writeln!(out.stderr, "error: {e}")?;
            return Ok(ExitCode::from(EXIT_FAILED));
        }
        Err(e) => return Err(e.into()),
    };
    let loaded = provider::from_bundle_checked(name.clone(), bundle::read(&name, &bytes)?)?;
    let binding = loaded.manifest.metadata.binding();
    if let Err(e) = signature::check_binding(&name, &verified, &binding) {
        writeln!(out.stderr, "error: {e}")?;
        return Ok(ExitCode::from(EXIT_FAILED));
    }
    writeln!(
        out.stdout,
        "verified {name}: {} {}, digest {}, signed by key {}",
        loaded.manifest.metadata.name,
        loaded.manifest.metadata.version,
        loaded.digest.unwrap_or_default(),
        verified.key_id
    )?;
    writeln!(out.stdout, "trusted comment: {}", verified.trusted_comment)?;
    Ok(ExitCode::SUCCESS)
}
