//! `opm mod publish MODULE oci://HOST/REPO[:TAG]`: pushes a module itself — not its render — as
//! an OCI artifact of one `tar+gzip` layer, so that a releases file (`module: oci://…`), `opm mod
//! build oci://…` and `opm mod push oci://…` can render it from the registry
//! (`crate::render::remote`). The artifact is reproducible: the same files give the same digest.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::cli::Output;
use crate::render::{OutputFile, deliver, remote};
use opm_core::provider::oci::OciRef;
use opm_core::render::artifact::{self, LayerFile};

/// Arguments of `opm mod publish`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm mod publish modules/shop oci://registry.example.com/modules/shop
  opm mod publish modules/shop/module.yaml oci://127.0.0.1:5000/modules/shop:1.4.0")]
pub struct PublishArgs {
    /// The module: a directory (every file under it whose name does not start with `.`: the
    /// module file and whatever sits beside it, values files included), or a module file (alone,
    /// as `module.yaml`).
    #[arg(value_name = "MODULE")]
    pub module: PathBuf,

    /// Where to push it: oci://HOST/REPO[:TAG]; the tag defaults to the module's version.
    ///
    /// Example: oci://registry.example.com/modules/shop
    #[arg(value_name = "REFERENCE")]
    pub target: String,

    /// Allow plain HTTP to a registry that is not on loopback.
    #[arg(long)]
    pub insecure_http: bool,
}

/// Runs `opm mod publish`.
pub fn run(args: PublishArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let target = OciRef::parse(&args.target)?;
    anyhow::ensure!(
        target.digest().is_none(),
        "{target}: publish to a tag, not a digest"
    );
    let files: Vec<OutputFile> = remote::published_files(&args.module)?;
    // Only what the module says of itself: its name and version, as written in its metadata.
    let module_file = opm_core::module::module_file(&args.module);
    let text = std::fs::read_to_string(&module_file)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", module_file.display()))?;
    let document: serde_json::Value = serde_saphyr::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", module_file.display()))?;
    let metadata = |key: &str| {
        document["metadata"][key]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| anyhow::anyhow!("{}: metadata.{key} is missing", module_file.display()))
    };
    let (name, version) = (metadata("name")?, metadata("version")?);
    let tag = if OciRef::names_version(&args.target) {
        target.tag().unwrap_or_default().to_owned()
    } else {
        version.replace('+', "_")
    };
    let target = target.with_tag(&tag);
    let annotations = [
        ("org.opencontainers.image.title", name),
        ("org.opencontainers.image.version", version),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let layer: Vec<LayerFile<'_>> = files
        .iter()
        .map(|f| LayerFile {
            path: &f.path,
            bytes: &f.bytes,
            mode: f.mode,
        })
        .collect();
    let built = artifact::build(&layer, 0, annotations)?;
    let options = opm_registry::Options {
        insecure_http: args.insecure_http,
        ..opm_registry::Options::default()
    };
    deliver::push_artifact(&target, &built, &options)?;
    writeln!(
        out.stdout,
        "published {} file{} as oci://{}/{}:{tag}@{}",
        files.len(),
        if files.len() == 1 { "" } else { "s" },
        target.registry(),
        target.repository(),
        built.digest
    )?;
    Ok(ExitCode::SUCCESS)
}
