//! `opm mod verify oci://HOST/REPO@sha256:…`: checks that a pushed render is signed by a signer
//! trusted (`--key`, or `--trusted-root` with a keyless identity, as cosign spells them) — a
//! Sigstore bundle among its referrers (API or tag schema), or a cosign v2 `.sig` tag — and
//! with `--provenance` its signed SLSA provenance: that it verifies, that its subjects are this
//! artifact and exactly the files of its layer, by SHA-256, and, with `--files DIR`, that DIR
//! (the files as Flux or Argo CD unpacked them, say) holds exactly those files. It prints what
//! the provenance says.
//!
//! Exit status: 0 verified; 1 a check failed; 2 unreadable input or an unreachable registry.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, ValueEnum};

use super::trust_args::{self, TrustArgs};
use crate::cli::{EXIT_FAILED, Output};
use crate::render::deliver;
use opm_core::provider::oci::OciRef;
use opm_core::provider::oci::attached::{self, Wanted};
use opm_core::render::provenance::{self, FileDigest};
use opm_sigstore::statement;

/// The largest layer read: a render's files.
const MAX_LAYER_BYTES: u64 = 512 << 20;

/// Arguments of `opm mod verify`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm mod verify oci://registry.example.com/deploy/shop@sha256:… --key cosign.pub
  opm mod verify oci://127.0.0.1:5000/shop:prod --key cosign.pub --provenance --files shop/
  opm mod verify oci://ghcr.io/acme/shop:1.0.0 --trusted-root trusted_root.json \\
    --certificate-identity-regexp '^https://github.com/acme/' \\
    --certificate-oidc-issuer https://token.actions.githubusercontent.com")]
pub struct VerifyArgs {
    /// The pushed render: oci://host[:port]/repository@sha256:… (a tag is resolved once, and
    /// the digest it named is printed).
    #[arg(value_name = "REFERENCE")]
    pub source: String,

    #[command(flatten)]
    pub trust: TrustArgs,

    /// Also check the signed provenance (SLSA v1) and print what it says.
    #[arg(long)]
    pub provenance: bool,

    /// With --provenance: check that DIR holds exactly the files the provenance lists.
    #[arg(long, value_name = "DIR", requires = "provenance")]
    pub files: Option<PathBuf>,

    /// What to print: sentences, or `json` (the verified provenance statement, for checks of
    /// your own).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = VerifyOutput::Text)]
    pub output: VerifyOutput,

    /// Allow plain HTTP to a registry that is not on loopback.
    #[arg(long)]
    pub insecure_http: bool,
}

/// `-o` of `opm mod verify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VerifyOutput {
    /// Sentences for a person.
    Text,
    /// The provenance statement as JSON.
    Json,
}

/// Runs `opm mod verify`.
pub fn run(args: VerifyArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let (policy, _) = args.trust.policy(false)?;
    let source = OciRef::parse(&args.source)?;
    let options = opm_registry::Options {
        insecure_http: args.insecure_http,
        ..opm_registry::Options::default()
    };
    let (digest, layer) = opm_registry::pull_render(&source, &options, MAX_LAYER_BYTES)?;
    let found = opm_registry::find(&source, &digest, &options)?;
    let name = format!("oci://{}/{}", source.registry(), source.repository());
    let fail = |out: &mut Output<'_>, reasons: Vec<String>| -> anyhow::Result<ExitCode> {
        for reason in reasons {
            writeln!(out.stderr, "error: {reason}")?;
        }
        Ok(ExitCode::from(EXIT_FAILED))
    };
    let (signed, origin) = match attached::verify(&found, &digest, &policy, Wanted::Signature) {
        Ok(verified) => verified,
        Err(reasons) => return fail(out, reasons),
    };
    let mut said = vec![format!(
        "verified {name}@{digest}: {}, in {origin}",
        trust_args::describe(&signed)
    )];
    if !args.provenance {
        writeln!(out.stdout, "{}", said.join("\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let (attested, origin) = match attached::verify(&found, &digest, &policy, Wanted::Provenance) {
        Ok(verified) => verified,
        Err(reasons) => return fail(out, reasons),
    };
    let opm_sigstore::Content::Statement(bytes) = &attested.content else {
        return fail(out, vec![format!("{origin} holds no statement")]);
    };
    let read = statement::read(bytes).map_err(anyhow::Error::msg)?;
    let files: Vec<FileDigest> = read
        .subjects
        .iter()
        .filter(|s| s.name != name)
        .map(|s| FileDigest {
            path: s.name.clone(),
            sha256: s.sha256.clone(),
        })
        .collect();
    let in_layer = opm_core::render::artifact::read_layer(&layer, MAX_LAYER_BYTES)
        .with_context(|| format!("{name}@{digest}: its layer"))?;
    let in_layer = provenance::file_digests(
        in_layer
            .iter()
            .map(|(path, bytes)| (path.as_str(), bytes.as_slice())),
    );
    let mut problems = differences("the artifact's layer", &in_layer, &files);
    if let Some(dir) = &args.files {
        // A copy of the layer as a consumer unpacked it, or as `mod build --out-dir` wrote it
        // (beside its record of what it wrote, which the layer does not hold).
        let local = deliver::files_in(dir, &[opm_core::render::write::MANIFEST])?;
        problems.extend(differences(&dir.display().to_string(), &local, &files));
    }
    if !problems.is_empty() {
        return fail(out, problems);
    }
    said.push(format!(
        "provenance: {}, in {origin}; {} files, each as its SHA-256 says{}",
        trust_args::describe(&attested),
        files.len(),
        match &args.files {
            Some(dir) => format!(", in the layer and in {}", dir.display()),
            None => ", in the layer".to_owned(),
        }
    ));
    match args.output {
        VerifyOutput::Json => {
            let value: serde_json::Value = serde_json::from_slice(bytes)?;
            writeln!(out.stdout, "{}", serde_json::to_string_pretty(&value)?)?;
        }
        VerifyOutput::Text => {
            said.extend(summary(&read.predicate));
            writeln!(out.stdout, "{}", said.join("\n"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What differs between `found` (in `place`) and the files the provenance lists.
fn differences(place: &str, found: &[FileDigest], listed: &[FileDigest]) -> Vec<String> {
    let differences = provenance::compare(found, listed);
    let missing = differences
        .missing
        .iter()
        .map(|path| format!("{place}: {path} is missing, but the provenance lists it"));
    let changed = differences.changed.iter().map(|path| {
        format!("{place}: {path} is not what was signed (its SHA-256 is not the provenance's)")
    });
    let extra = differences
        .extra
        .iter()
        .map(|path| format!("{place}: {path} is not among the files the provenance lists"));
    missing.chain(changed).chain(extra).collect()
}

/// What the provenance says, a line each.
fn summary(predicate: &serde_json::Value) -> Vec<String> {
    let definition = &predicate["buildDefinition"];
    let external = &definition["externalParameters"];
    let mut lines = vec![
        format!(
            "  rendered by opm {} with: {}",
            text(&definition["internalParameters"]["opm"]),
            text(&external["command"])
        ),
        format!(
            "  instance {} in namespace {}",
            text(&external["instance"]),
            text(&external["namespace"])
        ),
    ];
    if let Some(source) = external.get("source") {
        lines.push(format!(
            "  source {} at {}",
            text(&source["url"]),
            text(&source["revision"])
        ));
    }
    for dependency in definition["resolvedDependencies"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let digest = dependency["digest"]
            .as_object()
            .and_then(|d| d.iter().next())
            .map(|(algorithm, hex)| format!("{algorithm}:{}", text(hex)))
            .unwrap_or_else(|| "no digest".to_owned());
        lines.push(format!("  {} {digest}", text(&dependency["name"])));
    }
    lines
}

/// A JSON string as printable text (what the statement says is printed escaped).
fn text(value: &serde_json::Value) -> String {
    opm_core::printable::escape(value.as_str().unwrap_or("-")).into_owned()
}
