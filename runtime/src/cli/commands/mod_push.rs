//! `opm mod push MODULE oci://HOST/REPO[:TAG]`: renders a module and stores the render in an
//! OCI registry as one reproducible artifact that Flux's `OCIRepository` and Argo CD's OCI
//! sources read unchanged (`opm_core::render::artifact`), and/or writes it as an OCI image
//! layout (`--oci-layout DIR`) for `skopeo copy` to push later. The layer holds exactly what
//! `mod build --out-dir` writes, with the render's provenance. A render that fails pushes
//! nothing.
//!
//! With `--sign KEY` the pushed manifest gets two Sigstore bundles as OCI referrers: its
//! signature, as cosign v3 signs an image, and the render's signed provenance, an in-toto
//! statement with the SLSA Provenance v1 predicate (`opm_core::render::attestation`) whose
//! subjects are the artifact and every file of its layer. `opm mod verify` checks both.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, ValueEnum};

use super::mod_build::RunArgs;
use super::module_args::ModuleArgs;
use crate::cli::Output;
use crate::render::artifact;
use crate::render::provenance::{Provenance, Source};
use crate::render::{self, OutputOptions, Render, Request, deliver};
use crate::report;
use opm_core::provider::oci::OciRef;

/// Arguments of `opm mod push`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm mod push shop/ oci://registry.example.com/deploy/shop:prod -f prod.yaml
  opm mod push shop/ oci://127.0.0.1:5000/shop --split -o json
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) opm mod push shop/ --oci-layout shop-layout/")]
pub struct PushArgs {
    #[command(flatten)]
    pub module: ModuleArgs,

    /// Where to: oci://host[:port]/repository[:tag]; the tag defaults to the module's version.
    /// Optional with --oci-layout.
    #[arg(value_name = "REFERENCE", required_unless_present = "oci_layout")]
    pub target: Option<String>,

    /// Also (or only) write the artifact into the OCI image layout DIR, under the tag, for
    /// `skopeo copy oci:DIR:TAG docker://…` to push later; other tags a layout holds are kept.
    ///
    /// Example: --oci-layout out/layout
    #[arg(long, value_name = "DIR")]
    pub oci_layout: Option<PathBuf>,

    /// The tag of an --oci-layout written without a REFERENCE (default: the module's version).
    #[arg(long, value_name = "TAG", conflicts_with = "target")]
    pub tag: Option<String>,

    /// One file per resource in the layer, as `mod build --split --out-dir` writes them.
    #[arg(long)]
    pub split: bool,

    /// Mark objects Flux's variable substitution would change, as `mod build --flux` does.
    #[arg(long)]
    pub flux: bool,

    /// The source repository's URL (annotation org.opencontainers.image.source; default: the
    /// module's git checkout's remote `origin`).
    #[arg(long, value_name = "URL")]
    pub source: Option<String>,

    /// The source revision (annotation org.opencontainers.image.revision; default: the
    /// module's git checkout's commit, `sha1:COMMIT`).
    #[arg(long, value_name = "REVISION")]
    pub revision: Option<String>,

    /// What to print: a sentence, or `json` — {"url", "repository", "tag", "digest"}, as
    /// `flux push artifact -o json` prints them — for the signing step that follows.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = PushOutput::Text)]
    pub output: PushOutput,

    /// Sign the pushed artifact with this ECDSA P-256 private key (PEM, or cosign's encrypted
    /// key with COSIGN_PASSWORD), and attach its signature and signed SLSA provenance as
    /// referrers.
    #[arg(long, value_name = "KEY", requires = "target")]
    pub sign: Option<PathBuf>,

    /// Allow plain HTTP to a registry that is not on loopback.
    #[arg(long)]
    pub insecure_http: bool,

    #[command(flatten)]
    pub run: RunArgs,
}

/// `-o` of `opm mod push`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PushOutput {
    /// A sentence for a person.
    Text,
    /// One JSON object.
    Json,
}

/// Runs `opm mod push`.
pub fn run(args: PushArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let target = args.target.as_deref().map(OciRef::parse).transpose()?;
    if let Some(target) = &target {
        anyhow::ensure!(
            target.digest().is_none(),
            "{target}: push to a tag, not a digest"
        );
    }
    let output = OutputOptions {
        format: "yaml".to_owned(),
        split: args.split,
        directory: true,
    };
    let request = Request {
        flux: args.flux,
        ..args.run.request(&args.module, output, out.env)
    };
    // A module in a registry (`oci://…`), fetched for as long as the render runs.
    let fetched = render::remote::Fetched::new(opm_registry::Options {
        insecure_http: args.insecure_http,
        ..opm_registry::Options::default()
    });
    let request = fetched.resolve(request)?;
    // The checkout is asked only for what the flags do not say.
    let from_git = match (&args.source, &args.revision) {
        (Some(_), Some(_)) => None,
        _ => deliver::git_source(&request.module),
    };
    let mut source = from_git.unwrap_or(Source {
        url: None,
        revision: None,
    });
    if args.source.is_some() {
        source.url = args.source.clone();
    }
    if args.revision.is_some() {
        source.revision = args.revision.clone();
    }
    let source = (source.url.is_some() || source.revision.is_some()).then_some(source);
    // The key is read before anything is rendered or pushed: a wrong password pushes nothing.
    let key = args
        .sign
        .as_deref()
        .map(|key| super::trust_args::signing_key(key, out.env))
        .transpose()?;
    let built = render::build(&request, out.env);
    let Output {
        stdout,
        stderr,
        env,
        ..
    } = out;
    Ok(report::render(
        built,
        args.run.verbose(),
        &mut **stderr,
        &mut |render, redactor| {
            let provenance = deliver::provenance(&request, render, redactor, env, source.clone())?;
            let mut pushed = push(&args, target.as_ref(), render, &provenance)?;
            if let (Some(key), Some(target)) = (&key, &pushed.target) {
                let files = deliver::files(render, &provenance);
                let options = opm_registry::Options {
                    insecure_http: args.insecure_http,
                    ..opm_registry::Options::default()
                };
                pushed.signed = Some(sign(
                    target,
                    &pushed.digest,
                    &files,
                    &provenance,
                    key,
                    &options,
                )?);
            }
            pushed.print(args.output, &mut **stdout)?;
            Ok(ExitCode::SUCCESS)
        },
    )?)
}

/// What `--sign` attached: the referrer manifests of the signature and of the provenance.
pub(crate) struct Signed {
    pub(crate) key: String,
    pub(crate) signature: String,
    pub(crate) provenance: String,
    pub(crate) listed: String,
}

/// Attaches the signature of the artifact pushed to `target` as `digest` and its signed
/// provenance, whose subjects are the artifact and its `files`.
pub(crate) fn sign(
    target: &OciRef,
    digest: &str,
    files: &[render::OutputFile],
    provenance: &Provenance,
    key: &opm_sigstore::SigningKey,
    options: &opm_registry::Options,
) -> anyhow::Result<Signed> {
    let signature = super::trust_args::sign_manifest(target, digest, key, options)?;
    let files = opm_core::render::provenance::file_digests(
        files.iter().map(|f| (f.path.as_str(), f.bytes.as_slice())),
    );
    let name = format!("oci://{}/{}", target.registry(), target.repository());
    let statement = opm_core::render::attestation::statement_of(provenance, &name, digest, &files);
    let bundle = opm_sigstore::sign_statement(&statement, key)?;
    let attestation = opm_registry::attach(target, digest, &bundle, options)?;
    Ok(Signed {
        key: key.public.origin.clone(),
        signature: signature.digest,
        provenance: attestation.digest,
        listed: attestation.listed,
    })
}

/// What was pushed or written.
struct Pushed {
    target: Option<OciRef>,
    tag: String,
    digest: String,
    layout: Option<PathBuf>,
    signed: Option<Signed>,
}

impl Pushed {
    fn print(&self, output: PushOutput, stdout: &mut dyn std::io::Write) -> anyhow::Result<()> {
        match output {
            PushOutput::Json => {
                let mut json = serde_json::Map::new();
                if let Some(target) = &self.target {
                    json.insert(
                        "url".into(),
                        format!(
                            "oci://{}/{}@{}",
                            target.registry(),
                            target.repository(),
                            self.digest
                        )
                        .into(),
                    );
                    json.insert(
                        "repository".into(),
                        format!("{}/{}", target.registry(), target.repository()).into(),
                    );
                }
                json.insert("tag".into(), self.tag.clone().into());
                json.insert("digest".into(), self.digest.clone().into());
                if let Some(layout) = &self.layout {
                    json.insert("ociLayout".into(), layout.display().to_string().into());
                }
                if let Some(signed) = &self.signed {
                    json.insert("signature".into(), signed.signature.clone().into());
                    json.insert("provenance".into(), signed.provenance.clone().into());
                }
                writeln!(stdout, "{}", serde_json::to_string_pretty(&json)?)?;
            }
            PushOutput::Text => {
                if let Some(target) = &self.target {
                    writeln!(stdout, "pushed {target} ({})", self.digest)?;
                }
                if let Some(layout) = &self.layout {
                    writeln!(
                        stdout,
                        "wrote oci:{}:{} ({})",
                        layout.display(),
                        self.tag,
                        self.digest
                    )?;
                }
                if let Some(signed) = &self.signed {
                    writeln!(
                        stdout,
                        "signed it with {}: signature {}, provenance {}, listed by {}",
                        signed.key, signed.signature, signed.provenance, signed.listed
                    )?;
                }
            }
        }
        Ok(())
    }
}

/// Makes the artifact of `render` and pushes it to `target` and/or writes it into the layout.
fn push(
    args: &PushArgs,
    target: Option<&OciRef>,
    render: &Render,
    provenance: &Provenance,
) -> anyhow::Result<Pushed> {
    // A reference without a tag names `latest`, which `mod push` does not default to.
    let given = args
        .target
        .as_deref()
        .is_some_and(OciRef::names_version)
        .then(|| target.and_then(OciRef::tag))
        .flatten();
    let tag = match (given, args.tag.as_deref()) {
        (Some(tag), _) | (None, Some(tag)) => tag.to_owned(),
        // A version's build metadata (`+…`) is not allowed in a tag; Helm writes `_` for it.
        (None, None) => render.context.version.replace('+', "_"),
    };
    let target = target.map(|t| t.with_tag(&tag));
    let files = deliver::files(render, provenance);
    let artifact = deliver::artifact(&files, provenance)?;
    if let Some(dir) = &args.oci_layout {
        artifact::write_layout(dir, &artifact, &tag)
            .with_context(|| format!("writing the OCI layout {}", dir.display()))?;
    }
    if let Some(target) = &target {
        let options = opm_registry::Options {
            insecure_http: args.insecure_http,
            ..opm_registry::Options::default()
        };
        deliver::push_artifact(target, &artifact, &options)?;
    }
    Ok(Pushed {
        target,
        tag,
        digest: artifact.digest,
        layout: args.oci_layout.clone(),
        signed: None,
    })
}
