//! The signed provenance of a pushed render: an in-toto v1 statement with the SLSA Provenance
//! v1 predicate, built from the render's provenance ([`super::provenance`]). Its subjects are
//! the pushed artifact (its manifest digest) and every file of its layer, by SHA-256 as
//! `sha256sum` prints it; its build definition is opm's version, the command, the module and
//! values digests, the instance and namespace; its resolved dependencies are the module file,
//! the values and every provider bundle by digest. Nothing in it depends on the machine or the
//! clock, so the same inputs give the same statement bytes.

use serde_json::{Map, Value, json};

use super::provenance::{FileDigest, Provenance};
use opm_sigstore::statement::{self, SLSA_PROVENANCE, Subject};

/// The SLSA `buildType` of an opm render.
pub const BUILD_TYPE: &str = "https://opmodel.dev/render/v1";

/// The SLSA `builder.id` of opm.
pub const BUILDER: &str = "https://opmodel.dev/opm";

/// The statement of the artifact `artifact` (`oci://HOST/REPOSITORY`) whose manifest is
/// `manifest_digest`, holding `files`, rendered as `provenance` says.
pub fn statement_of(
    provenance: &Provenance,
    artifact: &str,
    manifest_digest: &str,
    files: &[FileDigest],
) -> Vec<u8> {
    let mut subjects = vec![Subject {
        name: artifact.to_owned(),
        sha256: manifest_digest
            .strip_prefix("sha256:")
            .unwrap_or(manifest_digest)
            .to_owned(),
    }];
    subjects.extend(files.iter().map(|file| Subject {
        name: file.path.clone(),
        sha256: file.sha256.clone(),
    }));
    statement::statement(&subjects, SLSA_PROVENANCE, predicate(provenance))
}

fn predicate(provenance: &Provenance) -> Value {
    let module = &provenance.module;
    let mut external = Map::new();
    external.insert("command".into(), provenance.command.clone().into());
    external.insert(
        "inputs".into(),
        serde_json::to_value(&provenance.inputs).unwrap_or(Value::Null),
    );
    external.insert("instance".into(), module.instance.clone().into());
    external.insert("namespace".into(), module.namespace.clone().into());
    if let Some(source) = &provenance.source {
        external.insert(
            "source".into(),
            serde_json::to_value(source).unwrap_or(Value::Null),
        );
    }
    let mut dependencies = vec![json!({
        "name": format!("module {} {}", module.name, module.version),
        "uri": provenance.inputs.module,
        "digest": digest_set(&module.digest),
    })];
    dependencies.push(json!({
        "name": "values",
        "digest": digest_set(&provenance.values.digest),
    }));
    for file in &provenance.values.files {
        let mut entry = json!({"name": "values file", "uri": file.path});
        if let Some(digest) = &file.digest {
            entry["digest"] = digest_set(digest);
        }
        dependencies.push(entry);
    }
    for provider in &provenance.providers {
        let mut entry = json!({
            "name": format!("provider {} {}", provider.name, provider.version),
        });
        if let Some(digest) = &provider.digest {
            entry["digest"] = digest_set(digest);
        }
        dependencies.push(entry);
    }
    if let Some(revision) = provenance
        .source
        .as_ref()
        .and_then(|s| s.revision.as_deref())
        .and_then(|r| r.strip_prefix("sha1:"))
    {
        let mut entry = json!({"name": "source", "digest": {"gitCommit": revision}});
        if let Some(url) = provenance.source.as_ref().and_then(|s| s.url.as_deref()) {
            entry["uri"] = url.into();
        }
        dependencies.push(entry);
    }
    json!({
        "buildDefinition": {
            "buildType": BUILD_TYPE,
            "externalParameters": external,
            "internalParameters": {"opm": provenance.opm},
            "resolvedDependencies": dependencies,
        },
        "runDetails": {
            "builder": {"id": BUILDER, "version": {"opm": provenance.opm}},
        },
    })
}

/// `algorithm:hex` as an in-toto digest set `{"algorithm": "hex"}`.
fn digest_set(digest: &str) -> Value {
    match digest.split_once(':') {
        Some((algorithm, hex)) => json!({ algorithm: hex }),
        None => json!({}),
    }
}
