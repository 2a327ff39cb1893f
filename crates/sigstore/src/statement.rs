//! in-toto v1 statements, as opm writes and reads them: the signature cosign v3 attaches to an
//! OCI artifact (predicate `https://sigstore.dev/cosign/sign/v1` over the manifest digest), and
//! the SLSA Provenance v1 statement of a pushed render. Written with a fixed key order and no
//! clock, so the same inputs give the same bytes.

use serde_json::{Value, json};

/// The DSSE payload type of an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// An in-toto v1 statement's `_type`.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The predicate of cosign v3's signature of an OCI artifact.
pub const COSIGN_SIGN: &str = "https://sigstore.dev/cosign/sign/v1";
/// The SLSA Provenance v1 predicate.
pub const SLSA_PROVENANCE: &str = "https://slsa.dev/provenance/v1";

/// One subject of a statement: a name and its SHA-256 (hex).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Subject {
    /// Its name (a path, or a reference).
    pub name: String,
    /// Its SHA-256, 64 hex digits.
    pub sha256: String,
}

/// The statement's bytes: `subjects`, `predicate_type` and `predicate`, then a newline.
pub fn statement(subjects: &[Subject], predicate_type: &str, predicate: Value) -> Vec<u8> {
    let subject: Vec<Value> = subjects
        .iter()
        .map(|s| json!({"name": s.name, "digest": {"sha256": s.sha256}}))
        .collect();
    let value = json!({
        "_type": STATEMENT_TYPE,
        "subject": subject,
        "predicateType": predicate_type,
        "predicate": predicate,
    });
    let mut bytes = serde_json::to_vec(&value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// The statement cosign v3 signs for an OCI artifact: its manifest digest (`sha256:HEX`).
pub fn cosign_sign(manifest_digest: &str) -> Vec<u8> {
    let hex = manifest_digest
        .strip_prefix("sha256:")
        .unwrap_or(manifest_digest);
    statement(
        &[Subject {
            name: String::new(),
            sha256: hex.to_owned(),
        }],
        COSIGN_SIGN,
        json!({}),
    )
}

/// A statement read back: its predicate type, subjects (those with a SHA-256) and predicate.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    /// `predicateType`.
    pub predicate_type: String,
    /// The subjects with a SHA-256 digest.
    pub subjects: Vec<Subject>,
    /// `predicate`.
    pub predicate: Value,
}

/// Parses the statement `bytes`.
pub fn read(bytes: &[u8]) -> Result<Read, String> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("not an in-toto statement: {e}"))?;
    if value.get("_type").and_then(Value::as_str) != Some(STATEMENT_TYPE) {
        return Err(format!("its _type is not {STATEMENT_TYPE}"));
    }
    let subjects = value
        .get("subject")
        .and_then(Value::as_array)
        .map(|subjects| {
            subjects
                .iter()
                .filter_map(|s| {
                    Some(Subject {
                        name: s
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                        sha256: s.get("digest")?.get("sha256")?.as_str()?.to_owned(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Read {
        predicate_type: value
            .get("predicateType")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        subjects,
        predicate: value.get("predicate").cloned().unwrap_or(Value::Null),
    })
}
