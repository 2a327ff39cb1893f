//! `opm provider export PROVIDER [-o FILE]`: writes a provider this opm can render with as a
//! bundle file — the embedded `kubernetes`, a provider the project has installed (exactly its
//! locked bytes, with its signature), or a bundle file (copied) — so that it can be inspected,
//! signed, pushed, served from a directory registry and locked like any other. The bytes are
//! the provider's own: the exported embedded provider is the bundle the binary loads, with the
//! same digest, and renders byte-identically.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::cli::Output;
use opm_core::bundle;
use opm_core::provider::{self, installed};

/// Arguments of `opm provider export`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm provider export kubernetes                      # → kubernetes-0.2.0.opmb
  opm provider export kubernetes -o registry/kubernetes/0.2.0/kubernetes-0.2.0.opmb")]
pub struct ExportArgs {
    /// The provider: `kubernetes` (embedded), a provider the project installed, or a bundle
    /// file. A provider source directory is packed with `opm provider pack` instead.
    #[arg(value_name = "PROVIDER")]
    pub provider: String,

    /// Where to write the bundle (default: NAME-VERSION.opmb in the current directory); its
    /// signature, if it has one, is written beside it.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Runs `opm provider export`.
pub fn run(args: ExportArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let (bytes, signature, origin, locked) =
        bundle_of(&args.provider, &std::env::current_dir()?, out.env)?;
    // Everything is checked as a render would load it before a byte is written.
    let provider = provider::from_bundle_checked(origin.clone(), bundle::read(&origin, &bytes)?)?;
    if let Some(locked) = locked
        && provider.digest.as_deref() != Some(locked.as_str())
    {
        anyhow::bail!(
            "{origin} changed while it was exported: it is no longer the locked {locked}"
        );
    }
    let metadata = &provider.manifest.metadata;
    let path = args
        .output
        .unwrap_or_else(|| PathBuf::from(metadata.bundle_file_name()));
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    installed::write_with_signature(&path, &bytes, signature.as_deref())?;
    writeln!(
        out.stdout,
        "exported {} {} ({}) from {origin} to {}{}",
        metadata.name,
        metadata.version,
        provider.digest.as_deref().unwrap_or_default(),
        path.display(),
        if signature.is_some() {
            " with its signature"
        } else {
            ""
        }
    )?;
    Ok(ExitCode::SUCCESS)
}

/// The bundle bytes of `reference`, its signature's, where they came from, and for a provider
/// the project installed, the digest its lock (checked) pins: the bytes are read once more to
/// be written, and must still be those.
type Exported = (Vec<u8>, Option<Vec<u8>>, String, Option<String>);

/// What `export` writes of `reference` ([`Exported`]).
fn bundle_of(
    reference: &str,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<Exported> {
    let path = Path::new(reference);
    if path.is_dir() {
        anyhow::bail!(
            "{reference} is a provider source directory: pack it into a bundle with `opm provider \
             pack {reference}`"
        );
    }
    let file = |path: &Path| -> anyhow::Result<_> {
        let bytes = bundle::read_bytes(path)?;
        let signature = std::fs::read(bundle::signature::signature_path(path)).ok();
        Ok((bytes, signature, path.display().to_string(), None))
    };
    if path.is_file() {
        return file(path);
    }
    if let Some(root) = installed::find(cwd, env)? {
        let project = installed::Project::load(&root)?;
        if project.requirement(reference).is_some() {
            // Load it as a render would: locked, installed, its bytes and signature checked.
            let lock = project.lock()?;
            installed::load_locked(&project, &lock, reference)?;
            let locked = lock.get(reference).expect("load_locked found it locked");
            let (bytes, signature, origin, _) =
                file(&project.bundle_path(reference, &locked.version))?;
            return Ok((bytes, signature, origin, Some(locked.digest.clone())));
        }
    }
    if let Some(bundle) = crate::embedded::PROVIDERS.bundle_of(reference) {
        return Ok((bundle.to_vec(), None, format!("embedded:{reference}"), None));
    }
    Err(provider::ProviderError::Unknown(reference.to_owned()).into())
}
