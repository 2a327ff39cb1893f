//! `opm provider pull oci://host[:port]/repository[:tag|@digest] [-o FILE]`: fetches a provider
//! artifact (see `oci`) — the tag resolved to a digest once, every byte checked against its
//! digest —, checks the bundle as loading does, and writes it (default `NAME-VERSION.opmb`) with
//! its signature beside it, then compiles its components into the compile cache as `init`
//! does — Winch's code now and Cranelift's in the background, or Cranelift's before it returns
//! with `--optimized`. What it writes is what `init` takes from a file: the air-gapped workflow.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::cli::Output;
use opm_core::bundle;
use opm_core::provider::oci::{self, OciRef};

/// Arguments of `opm provider pull`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm provider pull oci://registry.example.com/opm/kubernetes:0.2.0
  opm provider pull oci://127.0.0.1:5000/opm/kubernetes@sha256:… -o kubernetes.opmb")]
pub struct PullArgs {
    /// What to fetch: oci://host[:port]/repository[:tag|@digest].
    #[arg(value_name = "REFERENCE")]
    pub source: String,

    /// Where to write the bundle (default: NAME-VERSION.opmb in the current directory).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Allow plain HTTP to a registry that is not on loopback.
    #[arg(long)]
    pub insecure_http: bool,

    #[command(flatten)]
    pub compile: super::provider_init::OptimizedArg,
}

/// Runs `opm provider pull`.
pub fn run(args: PullArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let source = OciRef::parse(&args.source)?;
    let options = opm_registry::Options {
        insecure_http: args.insecure_http,
        ..opm_registry::Options::default()
    };
    let progress = opm_core::progress::Progress::start(format!("pulling {source}"));
    let pulled = opm_registry::pull(&source, &options, bundle::format::MAX_BUNDLE_BYTES);
    drop(progress);
    let pulled = pulled?;
    let origin = source.to_string();
    let provider = opm_core::provider::from_bundle_checked(
        origin.clone(),
        bundle::read(&origin, &pulled.bundle)?,
    )?;
    let metadata = &provider.manifest.metadata;
    let digest = provider.digest.clone().unwrap_or_default();
    if let Some(annotated) = pulled.annotations.get(oci::DIGEST_ANNOTATION)
        && *annotated != digest
    {
        anyhow::bail!(
            "{source}: the artifact's annotation says bundle {}, but the bundle is {digest}: \
             refused",
            opm_core::printable::escape(annotated)
        );
    }
    let path = args
        .output
        .unwrap_or_else(|| PathBuf::from(metadata.bundle_file_name()));
    opm_core::provider::installed::write_with_signature(
        &path,
        &pulled.bundle,
        pulled.signature.as_deref(),
    )?;
    writeln!(
        out.stdout,
        "pulled {} {} ({digest}) from {source}@{} into {}{}",
        metadata.name,
        metadata.version,
        pulled.manifest_digest,
        path.display(),
        if pulled.signature.is_some() {
            ", with its signature"
        } else {
            ""
        }
    )?;
    let pending = super::provider_init::compile_into_cache(&provider, &args.compile, out)?;
    super::provider_init::optimize_in_background(&pending, out)?;
    Ok(ExitCode::SUCCESS)
}
