//! What `opm provider inspect` shows of a provider, as a value ([`Report`], serialised for `-o
//! json`) and as text ([`write_text`]): metadata, bundle digest, signature status, limits, every
//! transformer with its requirements and its component's digest, size, imports, contract
//! version and source language and toolchain (from its producers sections), and the declared resources, traits and
//! policies. What a bundle says may come from a registry: the caller escapes it before a
//! terminal.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::bundle::component::{ComponentInfo, Producers};
use crate::bundle::signature;
use crate::definitions::DefinitionSpec;
use crate::matching;
use crate::provider;
use crate::provider::{ComponentInfos, LimitsSpec, Provider};

/// The signature status of a provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum SignatureStatus {
    /// Not a bundle file: embedded or a source directory.
    NotABundleFile,
    /// No `BUNDLE.minisig`.
    Unsigned,
    /// Signed; no key was given to verify it.
    Signed {
        key_id: String,
        trusted_comment: String,
    },
    /// Verified with one of the given keys.
    Verified {
        key_id: String,
        trusted_comment: String,
    },
    /// Did not verify.
    Invalid { key_id: String, error: String },
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report<'a> {
    pub name: &'a str,
    pub version: &'a str,
    pub description: &'a str,
    pub min_version: Option<&'a str>,
    pub labels: &'a std::collections::BTreeMap<String, String>,
    pub source: &'a str,
    pub digest: Option<&'a str>,
    pub signature: SignatureStatus,
    pub limits: &'a LimitsSpec,
    /// The renderer, when the provider ships one.
    pub renderer: Option<RendererReport<'a>>,
    /// What the provider says it cannot honour, and why.
    pub unhandled: &'a [provider::Unhandled],
    pub transformers: Vec<TransformerReport<'a>>,
    pub declared: matching::Declared,
    /// Every definition, with its schema and defaults, by FQN.
    pub definitions: &'a std::collections::BTreeMap<String, DefinitionSpec>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RendererReport<'a> {
    pub name: &'a str,
    pub version: &'a str,
    pub description: &'a str,
    pub component: &'a str,
    pub digest: String,
    pub size: usize,
    pub imports: &'a [String],
    /// The version of the contract its component was built for.
    pub contract: crate::contract::Version,
    pub secret_kinds: &'a [String],
    pub limits: &'a LimitsSpec,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TransformerReport<'a> {
    pub fqn: &'a str,
    pub description: &'a str,
    pub requirements: matching::Requirements,
    pub component: &'a str,
    pub digest: String,
    pub size: usize,
    pub imports: &'a [String],
    /// The version of the contract its component was built for.
    pub contract: Option<crate::contract::Version>,
    /// The source language, as the component's producers sections tell it.
    pub language: Option<String>,
    /// Everything its producers sections say.
    pub producers: Option<&'a Producers>,
}

/// The signature status of the bundle file `bundle` of `provider`: verified with one of `keys`
/// when they are given.
pub fn signature_status(
    bundle: &Path,
    keys: &[PathBuf],
    provider: &signature::Binding,
) -> anyhow::Result<SignatureStatus> {
    let Some((sig, info)) = signature::read_signature(bundle, None)? else {
        return Ok(SignatureStatus::Unsigned);
    };
    if keys.is_empty() {
        return Ok(SignatureStatus::Signed {
            key_id: info.key_id,
            trusted_comment: info.trusted_comment,
        });
    }
    let keys = keys
        .iter()
        .map(|key| signature::read_public_key(key))
        .collect::<Result<Vec<_>, _>>()?;
    let bytes = crate::bundle::read_bytes(bundle)?;
    let name = bundle.display().to_string();
    Ok(
        match signature::verify_provider(&name, &bytes, &sig, &keys, provider) {
            Ok(verified) => SignatureStatus::Verified {
                key_id: verified.key_id,
                trusted_comment: verified.trusted_comment,
            },
            Err(e) if e.is_check_failure() => SignatureStatus::Invalid {
                key_id: info.key_id,
                error: e.to_string(),
            },
            Err(e) => return Err(e.into()),
        },
    )
}

/// What `opm provider inspect` shows of `provider`, whose components' `infos` were checked.
pub fn report<'a>(
    provider: &'a Provider,
    infos: &'a ComponentInfos,
    signature: SignatureStatus,
) -> Report<'a> {
    let manifest = &provider.manifest;
    let transformers = manifest
        .transformers
        .iter()
        .map(|(fqn, spec)| {
            let info = infos.transformers.get(fqn);
            TransformerReport {
                fqn,
                description: &spec.description,
                requirements: spec.requirements(),
                component: &spec.component,
                digest: provider
                    .components
                    .get(fqn)
                    .map_or_else(String::new, |bytes| {
                        format!("blake3:{}", blake3::hash(bytes).to_hex())
                    }),
                size: info.map_or(0, |info: &ComponentInfo| info.size),
                imports: info.map_or(&[], |info| &info.imports),
                contract: info.map(|info| info.contract),
                language: info.and_then(|info| info.producers.source_language()),
                producers: info.map(|info| &info.producers),
            }
        })
        .collect();
    Report {
        name: &manifest.metadata.name,
        version: &manifest.metadata.version,
        description: &manifest.metadata.description,
        min_version: manifest.metadata.min_version.as_deref(),
        labels: &manifest.metadata.labels,
        source: &provider.origin,
        digest: provider.digest.as_deref(),
        signature,
        limits: &manifest.limits,
        renderer: manifest
            .renderer
            .as_ref()
            .zip(provider.renderer.as_ref().zip(infos.renderer.as_ref()))
            .map(|(spec, (bytes, info))| RendererReport {
                name: &spec.name,
                version: &spec.version,
                description: &spec.description,
                component: &spec.component,
                digest: format!("blake3:{}", blake3::hash(bytes).to_hex()),
                size: info.size,
                imports: &info.imports,
                contract: info.contract,
                secret_kinds: &spec.secret_kinds,
                limits: &spec.limits,
            }),
        unhandled: &manifest.unhandled,
        transformers,
        declared: matching::declared(manifest),
        definitions: &manifest.definitions,
    }
}

/// Writes `report` as the text `opm provider inspect` prints (to be escaped before a terminal).
pub fn write_text(report: &Report<'_>, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let row =
        |out: &mut dyn std::io::Write, key: &str, value: &str| writeln!(out, "{key:<12}{value}");
    row(
        out,
        "provider",
        &format!("{} {}", report.name, report.version),
    )?;
    if !report.description.is_empty() {
        row(out, "description", report.description)?;
    }
    row(out, "minVersion", report.min_version.unwrap_or("-"))?;
    if !report.labels.is_empty() {
        let labels: Vec<String> = report
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        row(out, "labels", &labels.join(", "))?;
    }
    row(out, "source", report.source)?;
    row(out, "digest", report.digest.unwrap_or("- (not a bundle)"))?;
    let signature = match &report.signature {
        SignatureStatus::NotABundleFile => "- (not a bundle file)".to_owned(),
        SignatureStatus::Unsigned => "unsigned".to_owned(),
        SignatureStatus::Signed { key_id, .. } => {
            format!("signed by key {key_id} (not verified: pass --key PUB)")
        }
        SignatureStatus::Verified { key_id, .. } => format!("verified, signed by key {key_id}"),
        SignatureStatus::Invalid { error, .. } => format!("INVALID: {error}"),
    };
    row(out, "signature", &signature)?;
    let limits = &report.limits;
    row(
        out,
        "limits",
        &format!(
            "fuel {}, memory {}, timeout {} (per call; the host caps them)",
            limits.fuel.map_or("default".into(), |f| f.to_string()),
            limits.memory.as_deref().unwrap_or("default"),
            limits.timeout.as_deref().unwrap_or("default"),
        ),
    )?;
    match &report.renderer {
        Some(renderer) => {
            let short = renderer.digest.get(..23).unwrap_or(&renderer.digest);
            row(
                out,
                "renderer",
                &format!(
                    "{} {} ({short}, {}, contract {})",
                    renderer.name,
                    renderer.version,
                    human_size(renderer.size),
                    renderer.contract
                ),
            )?;
            if !renderer.description.is_empty() {
                row(out, "", renderer.description)?;
            }
        }
        None => row(
            out,
            "renderer",
            "- (none: a render uses another provider's, else the embedded one's)",
        )?,
    }
    for entry in report.unhandled {
        let what = if entry.definitions.is_empty() {
            let labels: Vec<String> = entry
                .labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            format!("components labelled {}", labels.join(", "))
        } else {
            entry.definitions.join(", ")
        };
        row(out, "unhandled", &format!("{what}: {}", entry.reason))?;
    }
    writeln!(out)?;
    let width = report
        .transformers
        .iter()
        .map(|t| t.fqn.len())
        .max()
        .unwrap_or(0)
        .max("TRANSFORMER".len());
    writeln!(
        out,
        "{:<width$}  {:<23}  {:>9}  IMPORTS",
        "TRANSFORMER", "COMPONENT DIGEST", "SIZE"
    )?;
    for t in &report.transformers {
        let short = t.digest.get(..23).unwrap_or(&t.digest);
        let imports = if t.imports.is_empty() {
            "-".to_owned()
        } else {
            t.imports.join(", ")
        };
        writeln!(
            out,
            "{:<width$}  {short:<23}  {:>9}  {imports}",
            t.fqn,
            human_size(t.size)
        )?;
        if let Some(producers) = t.producers {
            let toolchain = producers.toolchain();
            writeln!(
                out,
                "    built     {}{}",
                t.language.as_deref().unwrap_or("unknown language"),
                if toolchain.is_empty() {
                    String::new()
                } else {
                    format!(", with {toolchain}")
                }
            )?;
        }
        if let Some(contract) = t.contract {
            writeln!(out, "    contract  {contract}")?;
        }
        let r = &t.requirements;
        let mut required = Vec::new();
        required.extend(
            r.required_labels
                .iter()
                .map(|(k, v)| format!("label {k}={v}")),
        );
        required.extend(r.required_resources.iter().map(|f| format!("resource {f}")));
        required.extend(r.required_traits.iter().map(|f| format!("trait {f}")));
        required.extend(r.required_policies.iter().map(|f| format!("policy {f}")));
        let mut optional = Vec::new();
        optional.extend(
            r.optional_labels
                .iter()
                .map(|(k, v)| format!("label {k}={v}")),
        );
        optional.extend(r.optional_resources.iter().map(|f| format!("resource {f}")));
        optional.extend(r.optional_traits.iter().map(|f| format!("trait {f}")));
        optional.extend(r.optional_policies.iter().map(|f| format!("policy {f}")));
        if !required.is_empty() {
            writeln!(out, "    requires  {}", required.join("; "))?;
        }
        if !optional.is_empty() {
            writeln!(out, "    optional  {}", optional.join("; "))?;
        }
    }
    writeln!(out)?;
    let declared = &report.declared;
    for (kind, set) in [
        ("resources", &declared.resources),
        ("traits", &declared.traits),
        ("policies", &declared.policies),
    ] {
        let list: Vec<&str> = set.iter().map(String::as_str).collect();
        writeln!(
            out,
            "declared {kind:<10}{}",
            if list.is_empty() {
                "-".to_owned()
            } else {
                list.join(", ")
            }
        )?;
    }
    write_definitions(report.definitions, out)
}

/// Each definition: its kind, field and description, then its schema's fields, one per line,
/// with their types, whether they are required and their defaults (`-o json` has the schemas
/// whole).
fn write_definitions(
    definitions: &std::collections::BTreeMap<String, DefinitionSpec>,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    writeln!(out)?;
    if definitions.is_empty() {
        return writeln!(
            out,
            "definitions  - (it uses those of the providers it renders with)"
        );
    }
    writeln!(out, "definitions (schemas whole with -o json):")?;
    for (fqn, spec) in definitions {
        let field = spec.field.clone().unwrap_or_else(|| {
            crate::definitions::default_field(crate::definitions::fqn::short_name(fqn))
        });
        writeln!(out, "  {} {fqn}  (field {field})", spec.kind)?;
        if let Some(description) = &spec.description {
            writeln!(out, "      {description}")?;
        }
        let schema = spec.schema.as_ref();
        let required: Vec<&str> = schema
            .and_then(|s| s.get("required"))
            .and_then(|r| r.as_array())
            .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        let Some(properties) = schema
            .and_then(|s| s.get("properties"))
            .and_then(|p| p.as_object())
        else {
            let shape = schema.map_or_else(|| "any value".to_owned(), type_of);
            writeln!(out, "      {shape}")?;
            continue;
        };
        let width = properties.keys().map(String::len).max().unwrap_or(0);
        for (name, property) in properties {
            let mut line = format!("      {name:width$}  {}", type_of(property));
            if required.contains(&name.as_str()) {
                line.push_str(", required");
            }
            if let Some(default) = spec.defaults.as_ref().and_then(|d| d.get(name)) {
                line.push_str(&format!(", default {default}"));
            }
            if let Some(description) = property.get("description").and_then(|d| d.as_str()) {
                line.push_str(&format!("  # {description}"));
            }
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// A schema's type in a few words: `string`, `integer 1..65535`, `one of a, b`, `list of object`.
fn type_of(schema: &serde_json::Value) -> String {
    if let Some(values) = schema.get("enum").and_then(|e| e.as_array()) {
        let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        return format!("one of {}", values.join(", "));
    }
    let kind = match schema.get("type") {
        Some(serde_json::Value::String(kind)) => kind.clone(),
        Some(serde_json::Value::Array(kinds)) => kinds
            .iter()
            .filter_map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(" or "),
        _ if schema.get("oneOf").is_some() || schema.get("anyOf").is_some() => {
            "one of several shapes".to_owned()
        }
        _ => "any".to_owned(),
    };
    match kind.as_str() {
        "array" => format!(
            "list of {}",
            schema
                .get("items")
                .map_or_else(|| "any".to_owned(), type_of)
        ),
        "integer" | "number" => match (schema.get("minimum"), schema.get("maximum")) {
            (Some(min), Some(max)) => format!("{kind} {min}..{max}"),
            (Some(min), None) => format!("{kind} >= {min}"),
            _ => kind,
        },
        _ => kind,
    }
}

fn human_size(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}
