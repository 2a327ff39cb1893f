//! `opm sign-blob FILE --key KEY` and `opm verify-blob FILE --bundle F`, as cosign spells them:
//! a Sigstore bundle (v0.3) over any file, so that a team can sign and check with opm what opm
//! did not make, and check with opm what cosign or another Sigstore client signed.
//!
//! Exit status of `verify-blob`: 0 verified; 1 the check failed (a signature that does not
//! verify, a signer not trusted, a keyless bundle where only keys are trusted or the reverse);
//! 2 unreadable input.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use super::trust_args::{self, TrustArgs};
use crate::cli::{EXIT_FAILED, Output};

/// Arguments of `opm sign-blob`.
#[derive(Debug, Args)]
pub struct SignBlobArgs {
    /// The file to sign.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// The ECDSA P-256 private key: PEM (PKCS#8 or SEC1), or cosign's encrypted key file (its
    /// password in COSIGN_PASSWORD).
    #[arg(long, value_name = "KEY")]
    pub key: PathBuf,

    /// Where to write the bundle (default: FILE.sigstore.json).
    #[arg(long, value_name = "FILE")]
    pub bundle: Option<PathBuf>,
}

/// Arguments of `opm verify-blob`.
#[derive(Debug, Args)]
pub struct VerifyBlobArgs {
    /// The file the bundle signs, or its digest `sha256:HEX` (as cosign takes it) when no such
    /// file exists.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// The Sigstore bundle (default: FILE.sigstore.json).
    #[arg(long, value_name = "FILE")]
    pub bundle: Option<PathBuf>,

    #[command(flatten)]
    pub trust: TrustArgs,
}

/// Runs `opm sign-blob`.
pub fn sign(args: SignBlobArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let key = trust_args::signing_key(&args.key, out.env)?;
    let bytes = std::fs::read(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let bundle = opm_sigstore::sign_blob(&bytes, &key)?;
    let path = args
        .bundle
        .unwrap_or_else(|| trust_args::bundle_path(&args.file));
    opm_core::files::write_atomically(&path, &bundle)
        .with_context(|| format!("writing {}", path.display()))?;
    writeln!(
        out.stdout,
        "signed {} with {}; bundle in {}",
        args.file.display(),
        args.key.display(),
        path.display()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `opm verify-blob`.
pub fn verify(args: VerifyBlobArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let (policy, _) = args.trust.policy(false)?;
    let digest = args
        .file
        .to_str()
        .filter(|name| name.starts_with("sha256:") && !args.file.exists());
    let bytes = match digest {
        Some(_) => Vec::new(),
        None => std::fs::read(&args.file)
            .with_context(|| format!("cannot read {}", args.file.display()))?,
    };
    let artifact = match digest {
        Some(digest) => opm_sigstore::sha256_artifact(digest).map_err(anyhow::Error::msg)?,
        None => opm_sigstore::Artifact::from_blob(&bytes),
    };
    let path = args
        .bundle
        .unwrap_or_else(|| trust_args::bundle_path(&args.file));
    let bundle = opm_sigstore::read_bundle(&path)?;
    let origin = path.display().to_string();
    match opm_sigstore::verify(artifact, &bundle, &origin, &policy) {
        Ok(verified) => {
            writeln!(
                out.stdout,
                "verified {}: {}",
                args.file.display(),
                trust_args::describe(&verified)
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) if e.is_check_failure() => {
            writeln!(out.stderr, "error: {e}")?;
            Ok(ExitCode::from(EXIT_FAILED))
        }
        Err(e) => Err(e.into()),
    }
}
