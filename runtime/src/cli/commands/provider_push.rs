//! `opm provider push BUNDLE oci://host[:port]/repository[:tag]`: stores a bundle file, and its
//! `BUNDLE.minisig` when there is one, in an OCI registry as a provider artifact (see `oci`).
//! Without a tag, the provider's version is the tag.
//!
//! With `--sign KEY`, the pushed manifest is signed as cosign v3 signs an image — a Sigstore
//! bundle holding a DSSE in-toto statement (predicate `https://sigstore.dev/cosign/sign/v1`)
//! whose subject is the manifest digest — and the bundle is attached as an OCI 1.1 referrer
//! (`opm_core::provider::oci::attached`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::cli::Output;
use opm_core::bundle::{self, signature};
use opm_core::provider::oci::OciRef;

/// Arguments of `opm provider push`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm provider push kubernetes-0.2.0.opmb oci://registry.example.com/opm/kubernetes
  opm provider push kubernetes-0.2.0.opmb oci://127.0.0.1:5000/opm/kubernetes:0.2.0")]
pub struct PushArgs {
    /// The bundle file (its BUNDLE.minisig goes along when there is one).
    #[arg(value_name = "BUNDLE")]
    pub bundle: PathBuf,

    /// Where to: oci://host[:port]/repository[:tag]; the tag defaults to the version.
    #[arg(value_name = "REFERENCE")]
    pub target: String,

    /// Sign the pushed manifest with this ECDSA P-256 private key (PEM, or cosign's encrypted
    /// key with COSIGN_PASSWORD) and attach the Sigstore bundle as a referrer.
    #[arg(long, value_name = "KEY")]
    pub sign: Option<PathBuf>,

    /// Allow plain HTTP to a registry that is not on loopback.
    #[arg(long)]
    pub insecure_http: bool,
}

/// Runs `opm provider push`.
pub fn run(args: PushArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let name = args.bundle.display().to_string();
    let bytes = bundle::read_bytes(&args.bundle)?;
    let provider =
        opm_core::provider::from_bundle_checked(name.clone(), bundle::read(&name, &bytes)?)?;
    let metadata = &provider.manifest.metadata;
    let digest = provider.digest.clone().unwrap_or_default();
    let signature_path = signature::signature_path(&args.bundle);
    let signature = std::fs::read(&signature_path).ok();
    let mut target = OciRef::parse(&args.target)?;
    if !OciRef::names_version(&args.target) {
        target = target.with_tag(&metadata.version);
    }
    let options = opm_registry::Options {
        insecure_http: args.insecure_http,
        ..opm_registry::Options::default()
    };
    // The key is read before anything is pushed: a wrong password pushes nothing.
    let key = args
        .sign
        .as_deref()
        .map(|key| super::trust_args::signing_key(key, out.env))
        .transpose()?;
    let pushed = opm_registry::push(
        &target,
        &bytes,
        signature.as_deref(),
        (&metadata.name, &metadata.version, &digest),
        &options,
    )?;
    writeln!(
        out.stdout,
        "pushed {} {} ({digest}{}) to {target}",
        metadata.name,
        metadata.version,
        if signature.is_some() {
            ", with its signature"
        } else {
            ""
        }
    )?;
    writeln!(out.stdout, "manifest {}", pushed.manifest_digest)?;
    if let Some(key) = &key {
        let attachment =
            super::trust_args::sign_manifest(&target, &pushed.manifest_digest, key, &options)?;
        writeln!(
            out.stdout,
            "signed {} with {}: referrer {}, listed by {}",
            pushed.manifest_digest, key.public.origin, attachment.digest, attachment.listed
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
