//! `opm provider push BUNDLE oci://host[:port]/repository[:tag]`: stores a bundle file, and its
//! `BUNDLE.minisig` when there is one, in an OCI registry as a provider artifact (see `oci`).
//! Without a tag, the provider's version is the tag.

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
    Ok(ExitCode::SUCCESS)
}
