//! Signatures beside OCI artifacts, as cosign and the OCI 1.1 specifications lay them out.
//!
//! A Sigstore bundle is attached to the manifest it signs as a *referrer*: a manifest of
//! `artifactType` [`opm_sigstore::BUNDLE_MEDIA_TYPE`] whose one layer is the bundle and whose
//! `subject` is the signed manifest ([`referrer`]). A registry with the referrers API lists it
//! by itself; for one without (the Debian `docker-registry` the tests use), the writer keeps the
//! referrers *tag schema*: an image index tagged `sha256-HEX` listing every referrer of the
//! manifest `sha256:HEX` ([`add_to_index`]). Readers ask the API, then that tag, and also read
//! cosign v2's `sha256-HEX.sig` tag (a simple-signing payload and its signature in an
//! annotation), so that both generations of signature verify ([`verify`]).
//!
//! A referrer holds no clock: the same bundle makes the same manifest, which an index lists
//! once however often it is pushed.

use std::collections::BTreeMap;

use super::documents::{self, Descriptor, INDEX_MEDIA_TYPE, Index, MANIFEST_MEDIA_TYPE, Manifest};
use opm_sigstore::{BUNDLE_MEDIA_TYPE, Content, Policy, Verified, statement};

/// The media type of the empty config blob `{}`.
pub const EMPTY_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";
/// The empty config blob.
pub const EMPTY: &[u8] = b"{}";
/// The media type of cosign v2's simple-signing layer.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The annotation holding cosign v2's base64 signature of the layer.
pub const COSIGN_SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The annotation saying what a bundle holds: `message-signature` or `dsse-envelope`.
pub const CONTENT_ANNOTATION: &str = "dev.sigstore.bundle.content";
/// The annotation naming a DSSE bundle's predicate type.
pub const PREDICATE_ANNOTATION: &str = "dev.sigstore.bundle.predicateType";
/// The most referrers of one manifest opm reads.
pub const MAX_REFERRERS: usize = 64;

/// The referrers tag-schema tag of the manifest `digest`: `sha256-HEX`.
pub fn fallback_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1)
}

/// cosign v2's signature tag of the manifest `digest`: `sha256-HEX.sig`.
pub fn cosign_tag(digest: &str) -> String {
    format!("{}.sig", fallback_tag(digest))
}

/// A signature found beside an artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attached {
    /// A Sigstore bundle, from a referrer.
    Bundle {
        /// Where it was found, for messages.
        origin: String,
        /// Its JSON.
        bytes: Vec<u8>,
    },
    /// A cosign v2 simple-signing signature, from the `.sig` tag.
    SimpleSigning {
        /// Where it was found.
        origin: String,
        /// The signed payload.
        payload: Vec<u8>,
        /// The base64 signature.
        signature: String,
    },
    /// A signature listed that could not be read (the registry failed, lied about its digest,
    /// or sent what is not one): a reason a verification names, which stops no other.
    Unreadable {
        /// Where it was listed.
        origin: String,
        /// Why it could not be read.
        reason: String,
    },
}

impl Attached {
    /// Where it was found.
    pub fn origin(&self) -> &str {
        match self {
            Self::Bundle { origin, .. }
            | Self::SimpleSigning { origin, .. }
            | Self::Unreadable { origin, .. } => origin,
        }
    }
}

/// The referrer manifest that attaches `bundle` to `subject` (the signed manifest's
/// descriptor), and its bytes.
pub fn referrer(subject: Descriptor, bundle: &[u8]) -> Vec<u8> {
    let mut annotations = BTreeMap::new();
    let predicate = bundle_predicate(bundle);
    annotations.insert(
        CONTENT_ANNOTATION.to_owned(),
        if predicate.is_some() {
            "dsse-envelope"
        } else {
            "message-signature"
        }
        .to_owned(),
    );
    if let Some(predicate) = predicate {
        annotations.insert(PREDICATE_ANNOTATION.to_owned(), predicate);
    }
    let manifest = Manifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.to_owned()),
        artifact_type: Some(BUNDLE_MEDIA_TYPE.to_owned()),
        config: descriptor(EMPTY_MEDIA_TYPE, EMPTY),
        layers: vec![descriptor(BUNDLE_MEDIA_TYPE, bundle)],
        annotations: Some(annotations),
        subject: Some(subject),
    };
    serde_json::to_vec(&manifest).unwrap_or_default()
}

/// The descriptor of `bytes` of `media_type`.
pub fn descriptor(media_type: &str, bytes: &[u8]) -> Descriptor {
    Descriptor {
        media_type: media_type.to_owned(),
        digest: documents::sha256_digest(bytes),
        size: bytes.len() as u64,
        artifact_type: None,
        annotations: None,
    }
}

/// The predicate type of a DSSE bundle's statement (unverified: for the annotation only).
fn bundle_predicate(bundle: &[u8]) -> Option<String> {
    use base64::Engine as _;
    let value: serde_json::Value = serde_json::from_slice(bundle).ok()?;
    let payload = value.get("dsseEnvelope")?.get("payload")?.as_str()?;
    let payload = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .ok()?;
    statement::read(&payload).ok().map(|s| s.predicate_type)
}

/// The referrers index `existing` (the tag schema's, if the tag exists) with the referrer
/// `manifest` added; `None` when it lists that manifest already.
pub fn add_to_index(existing: Option<&[u8]>, manifest: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
    let mut index = match existing {
        Some(bytes) => documents::parse_index(bytes)?,
        None => Index {
            schema_version: 2,
            media_type: Some(INDEX_MEDIA_TYPE.to_owned()),
            manifests: Vec::new(),
        },
    };
    let digest = documents::sha256_digest(manifest);
    if index.manifests.iter().any(|d| d.digest == digest) {
        return Ok(None);
    }
    let parsed = documents::parse_manifest(manifest)?;
    let mut entry = descriptor(MANIFEST_MEDIA_TYPE, manifest);
    entry.artifact_type = parsed.artifact_type;
    entry.annotations = parsed.annotations;
    index.manifests.push(entry);
    Ok(Some(serde_json::to_vec(&index)?))
}

/// What a verification looks for among the signatures of an artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// A signature: a message signature over the manifest, cosign v3's signing statement, or a
    /// cosign v2 signature.
    Signature,
    /// A SLSA provenance statement.
    Provenance,
}

/// The first of `attached` that verifies as `wanted` for the manifest `subject_digest` under
/// `policy`, or why none did (one reason each).
pub fn verify(
    attached: &[Attached],
    subject_digest: &str,
    policy: &Policy,
    wanted: Wanted,
) -> Result<(Verified, String), Vec<String>> {
    let mut failures = Vec::new();
    let artifact = match opm_sigstore::sha256_artifact(subject_digest) {
        Ok(artifact) => artifact,
        Err(e) => return Err(vec![e]),
    };
    for found in attached {
        let (origin, checked) = match found {
            Attached::Bundle { origin, bytes } => (
                origin,
                opm_sigstore::verify(artifact.clone(), bytes, origin, policy),
            ),
            Attached::SimpleSigning {
                origin,
                payload,
                signature,
            } => {
                if wanted == Wanted::Provenance {
                    continue;
                }
                (
                    origin,
                    opm_sigstore::verify_simple_signing(
                        payload,
                        signature,
                        subject_digest,
                        origin,
                        policy,
                    ),
                )
            }
            Attached::Unreadable { origin, reason } => {
                failures.push(format!("{origin}: {reason}"));
                continue;
            }
        };
        let verified = match checked {
            Ok(verified) => verified,
            Err(e) => {
                failures.push(e.to_string());
                continue;
            }
        };
        let predicate = match &verified.content {
            Content::MessageSignature => None,
            Content::Statement(bytes) => statement::read(bytes).ok().map(|s| s.predicate_type),
        };
        let fits = match wanted {
            Wanted::Signature => predicate
                .as_deref()
                .is_none_or(|p| p == statement::COSIGN_SIGN),
            Wanted::Provenance => predicate.as_deref() == Some(statement::SLSA_PROVENANCE),
        };
        if fits {
            return Ok((verified, origin.clone()));
        }
    }
    if failures.is_empty() {
        failures.push(match wanted {
            Wanted::Signature => format!("{subject_digest} has no signature"),
            Wanted::Provenance => format!("{subject_digest} has no signed provenance"),
        });
    }
    Err(failures)
}
