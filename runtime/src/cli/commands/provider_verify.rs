//! `opm provider verify BUNDLE --key PUB...`: checks a bundle's detached signature against
//! trusted keys or keyless identities, then loads the bundle and checks every digest and
//! component (`providers/README.md`, "Signatures"). A minisign key checks `BUNDLE.minisig`
//! (signatures made by `minisign -Sm BUNDLE` verify too); a PEM public key, or
//! `--trusted-root` with a keyless identity, checks the Sigstore bundle `BUNDLE.sigstore.json`
//! (`opm provider sign --sigstore`, `cosign sign-blob --bundle`). One signature by a trusted
//! signer is enough.
//!
//! Exit status: 0 verified; 1 the check failed (no signature, a key that is not trusted, a
//! signature that does not match the bytes); 2 unreadable input (bundle, key or signature file)
//! or a bundle that loading refuses.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::trust_args::{self, TrustArgs};
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

    #[command(flatten)]
    pub trust: TrustArgs,

    /// The minisign signature file (default: BUNDLE.minisig).
    #[arg(short = 'x', long = "signature", value_name = "FILE")]
    pub signature: Option<PathBuf>,

    /// The Sigstore bundle (default: BUNDLE.sigstore.json).
    #[arg(long = "sigstore-bundle", value_name = "FILE")]
    pub sigstore_bundle: Option<PathBuf>,
}

/// Runs `opm provider verify`.
pub fn run(args: VerifyArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let (policy, minisign_keys) = args.trust.policy(true)?;
    let keys = minisign_keys
        .iter()
        .map(|key| signature::read_public_key(key))
        .collect::<Result<Vec<_>, _>>()?;
    let name = args.bundle.display().to_string();
    let bytes = bundle::read_bytes(&args.bundle)?;
    let loaded = provider::from_bundle_checked(name.clone(), bundle::read(&name, &bytes)?)?;
    let mut failures = Vec::new();
    let mut said = Vec::new();
    if !policy.is_empty() {
        let path = args
            .sigstore_bundle
            .clone()
            .unwrap_or_else(|| trust_args::bundle_path(&args.bundle));
        let origin = path.display().to_string();
        if path.exists() || args.sigstore_bundle.is_some() {
            let signed = opm_sigstore::read_bundle(&path)?;
            match opm_sigstore::verify(
                opm_sigstore::Artifact::from_blob(&bytes),
                &signed,
                &origin,
                &policy,
            ) {
                Ok(verified) => said.push(trust_args::describe(&verified)),
                Err(e) if e.is_check_failure() => failures.push(e.to_string()),
                Err(e) => return Err(e.into()),
            }
        } else {
            failures.push(format!(
                "bundle {name} has no Sigstore signature: {origin} does not exist"
            ));
        }
    }
    if !keys.is_empty() {
        let verified = signature::read_signature(&args.bundle, args.signature.as_deref())
            .and_then(|found| match found {
                Some((sig, _)) => signature::verify(&name, &bytes, &sig, &keys),
                None => Err(SignatureError::Unsigned {
                    bundle: name.clone(),
                    signature: signature::signature_path(&args.bundle),
                }),
            })
            .and_then(|verified| {
                signature::check_binding(&name, &verified, &loaded.manifest.metadata.binding())
                    .map(|()| verified)
            });
        match verified {
            Ok(verified) => said.push(format!(
                "signed by minisign key {}; trusted comment: {}",
                verified.key_id, verified.trusted_comment
            )),
            Err(e) if e.is_check_failure() => failures.push(e.to_string()),
            Err(e) => return Err(e.into()),
        }
    }
    if said.is_empty() {
        for failure in failures {
            writeln!(out.stderr, "error: {failure}")?;
        }
        return Ok(ExitCode::from(EXIT_FAILED));
    }
    writeln!(
        out.stdout,
        "verified {name}: {} {}, digest {}",
        loaded.manifest.metadata.name,
        loaded.manifest.metadata.version,
        loaded.digest.unwrap_or_default(),
    )?;
    for line in said {
        writeln!(out.stdout, "{line}")?;
    }
    Ok(ExitCode::SUCCESS)
}
