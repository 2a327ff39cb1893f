//! Verification against a policy: trusted keys, trusted keyless identities and the trusted root
//! they chain to.

use std::path::Path;
use std::sync::Arc;

use sigstore_types::bundle::{SignatureContent, VerificationMaterialContent};
use sigstore_types::{Artifact, Bundle};
use sigstore_verify::{PublicKeyVerificationPolicy, VerificationPolicy, Verifier};

use crate::{Error, PublicKey, printable};

/// A trusted root (`trusted_root.json`, Sigstore's trust-root format) and the verifier made
/// from it once.
#[derive(Clone)]
pub struct TrustedRoot {
    /// Where it was read from.
    pub origin: String,
    verifier: Arc<Verifier>,
}

impl std::fmt::Debug for TrustedRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrustedRoot")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl TrustedRoot {
    /// Reads the trusted root at `path`.
    pub fn read(path: &Path) -> Result<Self, Error> {
        let origin = path.display().to_string();
        let bytes = crate::read_bounded(path, crate::MAX_TRUSTED_ROOT_BYTES)?.ok_or_else(|| {
            Error::TrustedRoot {
                path: origin.clone(),
                message: format!("over {} bytes", crate::MAX_TRUSTED_ROOT_BYTES),
            }
        })?;
        let text = String::from_utf8(bytes).map_err(|_| Error::TrustedRoot {
            path: origin.clone(),
            message: "not UTF-8".to_owned(),
        })?;
        Self::from_json(&origin, &text)
    }

    /// Parses the trusted root `text` (from `origin`, for messages).
    pub fn from_json(origin: &str, text: &str) -> Result<Self, Error> {
        crate::crypto::install();
        let bad = |message: String| Error::TrustedRoot {
            path: origin.to_owned(),
            message,
        };
        let root =
            sigstore_trust_root::TrustedRoot::from_json(text).map_err(|e| bad(e.to_string()))?;
        let verifier = Verifier::new(&root).map_err(|e| bad(e.to_string()))?;
        Ok(Self {
            origin: origin.to_owned(),
            verifier: Arc::new(verifier),
        })
    }

    /// The Sigstore public-good trusted root this build carries: what a key bundle's log
    /// entries are checked against when no trusted root is given.
    pub fn public_good() -> Result<Self, Error> {
        Self::from_json(
            "the Sigstore public-good trusted root built into opm",
            sigstore_trust_root::SIGSTORE_PRODUCTION_TRUSTED_ROOT,
        )
    }
}

/// How a value is matched: exactly, or by a regular expression that must match somewhere in it
/// (Go's `regexp.MatchString`, as cosign's `-regexp` flags do; anchor it with `^…$`).
#[derive(Debug, Clone)]
pub enum Matcher {
    /// Equal to this.
    Exact(String),
    /// Matched by this.
    Regexp(regex::Regex),
}

impl Matcher {
    /// A regular-expression matcher; `what` names the field in the error.
    pub fn regexp(what: &str, pattern: &str) -> Result<Self, String> {
        regex::Regex::new(pattern)
            .map(Self::Regexp)
            .map_err(|e| format!("{what} {pattern:?} is not a regular expression: {e}"))
    }

    /// The matcher of a value given exactly (`exact`) or by a regular expression (`regexp`,
    /// named `what` in errors): `None` when neither is given, an error when both are.
    pub fn either(
        exact: Option<&str>,
        regexp: Option<&str>,
        what: &str,
    ) -> Result<Option<Self>, String> {
        match (exact, regexp) {
            (Some(exact), None) => Ok(Some(Self::Exact(exact.to_owned()))),
            (None, Some(pattern)) => Self::regexp(what, pattern).map(Some),
            (None, None) => Ok(None),
            (Some(_), Some(_)) => Err(format!(
                "{what} and its exact form are both given: give one"
            )),
        }
    }

    /// Whether `value` matches.
    pub fn matches(&self, value: &str) -> bool {
        match self {
            Self::Exact(expected) => expected == value,
            Self::Regexp(regexp) => regexp.is_match(value),
        }
    }
}

impl std::fmt::Display for Matcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exact(value) => write!(f, "{value}"),
            Self::Regexp(regexp) => write!(f, "/{}/", regexp.as_str()),
        }
    }
}

/// A keyless identity trusted: the certificate's subject (its SAN: an email address or URI)
/// and the OIDC issuer that vouched for it.
#[derive(Debug, Clone)]
pub struct Identity {
    /// The subject.
    pub subject: Matcher,
    /// The issuer.
    pub issuer: Matcher,
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} from {}", self.subject, self.issuer)
    }
}

/// What is trusted: keys, keyless identities, and the trusted root keyless bundles (and key
/// bundles' log entries) are checked against.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Trusted public keys.
    pub keys: Vec<PublicKey>,
    /// Trusted keyless identities.
    pub identities: Vec<Identity>,
    /// The trusted root; without one keyless bundles are refused, and key bundles' log entries
    /// are checked against the public-good root.
    pub trusted_root: Option<TrustedRoot>,
}

impl Policy {
    /// Whether the policy trusts anything at all.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.identities.is_empty()
    }

    fn trusts(&self) -> String {
        let mut trusted: Vec<String> = self
            .keys
            .iter()
            .map(|key| format!("key {}", key.origin))
            .collect();
        trusted.extend(self.identities.iter().map(|id| format!("identity {id}")));
        trusted.join(", ")
    }
}

/// Who signed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Signer {
    /// A trusted key.
    Key {
        /// Where the key was read from.
        key: String,
    },
    /// A keyless certificate.
    Identity {
        /// Its subject.
        subject: String,
        /// Its OIDC issuer.
        issuer: String,
    },
}

impl std::fmt::Display for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Key { key } => write!(f, "key {key}"),
            Self::Identity { subject, issuer } => write!(f, "{subject} (issuer {issuer})"),
        }
    }
}

/// What a bundle signed.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A message signature over the artifact.
    MessageSignature,
    /// A DSSE envelope: the in-toto statement it carries, as signed.
    Statement(Vec<u8>),
}

/// A bundle that verified.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    /// Who signed.
    pub signer: Signer,
    /// The bundle's SHA-256 (`sha256:HEX`), as a lock records it.
    pub bundle_digest: String,
    /// What it signed.
    pub content: Content,
    /// Whether transparency-log entries were checked (a keyless bundle always has one).
    pub logged: bool,
    /// The verified signing times (log integration, RFC 3161), RFC 3339.
    pub times: Vec<String>,
}

/// The artifact whose SHA-256 is `digest` (`sha256:HEX` or HEX): what an OCI signature covers.
pub fn sha256_artifact(digest: &str) -> Result<Artifact<'static>, String> {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    let hash = sigstore_types::Sha256Hash::from_hex(hex)
        .map_err(|e| format!("{digest} is not a SHA-256 digest: {e}"))?;
    Ok(Artifact::from_digest(hash))
}

/// Verifies the bundle `bundle` (its JSON, from `origin`) over `artifact` against `policy`.
pub fn verify(
    artifact: Artifact<'_>,
    bundle: &[u8],
    origin: &str,
    policy: &Policy,
) -> Result<Verified, Error> {
    crate::crypto::install();
    let malformed = |message: String| Error::Malformed {
        origin: origin.to_owned(),
        message,
    };
    if bundle.len() as u64 > crate::MAX_BUNDLE_BYTES {
        return Err(malformed(format!(
            "{} bytes, over the limit of {}",
            bundle.len(),
            crate::MAX_BUNDLE_BYTES
        )));
    }
    let text = std::str::from_utf8(bundle).map_err(|_| malformed("not UTF-8".to_owned()))?;
    let parsed = Bundle::from_json(text).map_err(|e| malformed(e.to_string()))?;
    let invalid = |message: String| Error::Invalid {
        origin: origin.to_owned(),
        message,
    };
    let kind = |message: String| Error::Kind {
        origin: origin.to_owned(),
        message,
    };
    let (signer, result) = match &parsed.verification_material.content {
        VerificationMaterialContent::PublicKey(_) => {
            if policy.keys.is_empty() {
                return Err(kind(format!(
                    "signed with a key, but only keyless identities are trusted ({})",
                    policy.trusts()
                )));
            }
            // A key is trust of its own: a bundle signed offline has neither log entry nor
            // timestamp (as `cosign verify-blob --key --insecure-ignore-tlog` accepts), and is
            // checked here; one that has them is checked whole by sigstore-verify, against the
            // trusted root given or the public-good one.
            let material = &parsed.verification_material;
            let offline = material.tlog_entries.is_empty()
                && material
                    .timestamp_verification_data
                    .rfc3161_timestamps
                    .is_empty();
            let root = match (&policy.trusted_root, offline) {
                (Some(root), _) => Some(root.clone()),
                (None, false) => Some(TrustedRoot::public_good()?),
                (None, true) => None,
            };
            let mut failures = Vec::new();
            let mut found = None;
            for key in &policy.keys {
                let key_policy = PublicKeyVerificationPolicy::new(key.der.clone());
                let checked = if let Some(root) = root.as_ref().filter(|_| !offline) {
                    root.verifier
                        .verify(artifact.clone(), &parsed, &key_policy)
                        .map(Some)
                        .map_err(|e| e.to_string())
                } else {
                    verify_offline(&artifact, &parsed, key).map(|()| None)
                };
                match checked {
                    Ok(result) => {
                        found = Some((
                            Signer::Key {
                                key: key.origin.clone(),
                            },
                            result,
                        ));
                        break;
                    }
                    Err(e) => failures.push(format!("with key {}: {e}", key.origin)),
                }
            }
            found.ok_or_else(|| invalid(failures.join("; ")))?
        }
        _ => {
            if policy.identities.is_empty() {
                return Err(kind(format!(
                    "a keyless signature (a certificate), but only keys are trusted ({})",
                    policy.trusts()
                )));
            }
            let root = policy.trusted_root.as_ref().ok_or_else(|| {
                kind("a keyless signature, and no trusted root is given to check its certificate and log entry against (--trusted-root)".to_owned())
            })?;
            let result = root
                .verifier
                .verify(artifact, &parsed, &VerificationPolicy::any_identity())
                .map_err(|e| invalid(format!("{e} (trusted root {})", root.origin)))?;
            let subject = result
                .identity()
                .map(|id| id.as_str().to_owned())
                .unwrap_or_default();
            let issuer = result.issuer().unwrap_or_default().to_owned();
            if !policy
                .identities
                .iter()
                .any(|id| id.subject.matches(&subject) && id.issuer.matches(&issuer))
            {
                return Err(Error::Identity {
                    origin: origin.to_owned(),
                    subject: printable(&subject),
                    issuer: printable(&issuer),
                    expected: policy
                        .identities
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
            (
                Signer::Identity {
                    subject: printable(&subject),
                    issuer: printable(&issuer),
                },
                Some(result),
            )
        }
    };
    let content = match &parsed.content {
        SignatureContent::DsseEnvelope(envelope) => {
            Content::Statement(envelope.payload.as_bytes().to_vec())
        }
        _ => Content::MessageSignature,
    };
    let digest = ring::digest::digest(&ring::digest::SHA256, bundle);
    Ok(Verified {
        signer,
        bundle_digest: format!("sha256:{}", hex(digest.as_ref())),
        content,
        logged: result.as_ref().is_some_and(|r| r.tlog_verified())
            && !parsed.verification_material.tlog_entries.is_empty(),
        times: result
            .iter()
            .flat_map(|r| r.verified_timestamps())
            .map(ToString::to_string)
            .collect(),
    })
}

/// Checks a key bundle that has neither log entry nor timestamp: its signature with `key`, and
/// that it signs this artifact — a message digest equal to the artifact's SHA-256, or a DSSE
/// statement with a subject of that SHA-256.
fn verify_offline(artifact: &Artifact<'_>, bundle: &Bundle, key: &PublicKey) -> Result<(), String> {
    let key_bytes = sigstore_crypto::VerificationKey::from_spki(&key.der)
        .map_err(|e| format!("the key: {e}"))?;
    let digest = match artifact {
        Artifact::Blob(bytes) => sigstore_crypto::sha256(bytes),
        Artifact::Digest(digest) => <[u8; 32]>::try_from(digest.as_bytes())
            .map(sigstore_types::Sha256Hash::new)
            .map_err(|_| "the artifact's digest is not a SHA-256".to_owned())?,
        _ => return Err("an artifact of a kind this opm does not know".to_owned()),
    };
    match &bundle.content {
        SignatureContent::MessageSignature(message) => {
            if let Some(stated) = &message.message_digest
                && (stated.algorithm != sigstore_types::HashAlgorithm::Sha2256
                    || stated.digest.as_bytes() != digest.as_bytes())
            {
                return Err(
                    "artifact mismatch: the bundle's messageDigest is not this artifact's SHA-256"
                        .to_owned(),
                );
            }
            match artifact {
                Artifact::Blob(bytes) if !key_bytes.scheme().supports_prehashed() => {
                    key_bytes.verify(bytes, &message.signature)
                }
                _ => key_bytes.verify_prehashed(digest.as_bytes(), &message.signature),
            }
            .map_err(|_| {
                "invalid signature: it does not verify over this artifact with this key".to_owned()
            })
        }
        SignatureContent::DsseEnvelope(envelope) => {
            if envelope.payload_type != crate::statement::PAYLOAD_TYPE {
                return Err(format!(
                    "its DSSE payload is {}, not an in-toto statement",
                    printable(&envelope.payload_type)
                ));
            }
            key_bytes
                .verify(envelope.pae(), &envelope.signature.sig)
                .map_err(|_| {
                    "invalid signature: the DSSE envelope does not verify with this key".to_owned()
                })?;
            let statement: sigstore_types::Statement =
                serde_json::from_slice(envelope.payload.as_bytes())
                    .map_err(|e| format!("its statement does not parse: {e}"))?;
            if statement.matches_sha256(&digest) {
                Ok(())
            } else {
                Err(
                    "artifact mismatch: no subject of its statement has this artifact's SHA-256"
                        .to_owned(),
                )
            }
        }
        _ => Err("it holds neither a message signature nor a DSSE envelope".to_owned()),
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `type` of cosign v2's simple-signing payload.
const SIMPLE_SIGNING_TYPE: &str = "cosign container image signature";

/// Verifies a cosign v2 signature of an OCI artifact (the `sha256-HEX.sig` tag): the
/// simple-signing `payload` naming the manifest `subject_digest`, and `signature`, the base64
/// ECDSA signature of it (the layer's `dev.cosignproject.cosign/signature` annotation), with a
/// trusted key. cosign v2's keyless signatures (a certificate and a Rekor SET in annotations) are
/// not read: they are refused as unsigned.
pub fn verify_simple_signing(
    payload: &[u8],
    signature: &str,
    subject_digest: &str,
    origin: &str,
    policy: &Policy,
) -> Result<Verified, Error> {
    use base64::Engine as _;
    crate::crypto::install();
    let invalid = |message: String| Error::Invalid {
        origin: origin.to_owned(),
        message,
    };
    if policy.keys.is_empty() {
        return Err(Error::Kind {
            origin: origin.to_owned(),
            message: format!(
                "a cosign v2 key signature, but only keyless identities are trusted ({})",
                policy.trusts()
            ),
        });
    }
    let value: serde_json::Value = serde_json::from_slice(payload)
        .map_err(|e| invalid(format!("its simple-signing payload is not JSON: {e}")))?;
    let critical = &value["critical"];
    if critical["type"].as_str() != Some(SIMPLE_SIGNING_TYPE) {
        return Err(invalid(format!(
            "its payload's critical.type is not {SIMPLE_SIGNING_TYPE:?}"
        )));
    }
    let signed = critical["image"]["docker-manifest-digest"]
        .as_str()
        .unwrap_or_default();
    if signed != subject_digest {
        return Err(invalid(format!(
            "artifact mismatch: it signs {}, not {subject_digest}",
            printable(signed)
        )));
    }
    let signature = base64::engine::general_purpose::STANDARD
        .decode(signature.trim())
        .map_err(|e| invalid(format!("its signature is not base64: {e}")))?;
    let signature = sigstore_types::SignatureBytes::new(signature);
    let mut failures = Vec::new();
    for key in &policy.keys {
        let checked = sigstore_crypto::VerificationKey::from_spki(&key.der)
            .map_err(|e| e.to_string())
            .and_then(|k| k.verify(payload, &signature).map_err(|e| e.to_string()));
        match checked {
            Ok(()) => {
                let digest = ring::digest::digest(&ring::digest::SHA256, payload);
                return Ok(Verified {
                    signer: Signer::Key {
                        key: key.origin.clone(),
                    },
                    bundle_digest: format!("sha256:{}", hex(digest.as_ref())),
                    content: Content::MessageSignature,
                    logged: false,
                    times: Vec::new(),
                });
            }
            Err(_) => failures.push(format!(
                "with key {}: invalid signature: it does not verify over the payload",
                key.origin
            )),
        }
    }
    Err(invalid(failures.join("; ")))
}
