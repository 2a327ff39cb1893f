//! Sigstore bundles for opm (`application/vnd.dev.sigstore.bundle.v0.3+json`, the format cosign
//! v3 writes): signing with an ECDSA P-256 key, offline ([`sign`]), and verification of
//! key-pair and keyless bundles, offline, against a policy ([`Policy`]) and a supplied
//! `trusted_root.json` ([`verify`]).
//!
//! What a verification checks is sigstore-rust's (`sigstore-verify`, pinned exactly): for a
//! keyless bundle the certificate chain to the trusted root's Fulcio at the signing time, the
//! embedded SCT against its CT logs, each transparency-log entry's inclusion proof and signed
//! checkpoint (or its SET), RFC 3161 timestamps where present, and that the log entry describes
//! this very artifact and signature (the CVE-2022-36056 class); for a key bundle the signature
//! with a trusted key, and any log entry or timestamp it carries. opm adds the policy: which
//! keys, which identities (exact or regular expression, as cosign's `--certificate-identity`
//! and `--certificate-identity-regexp` take them), and that a keyless bundle is refused where
//! only keys are trusted and the reverse. See SECURITY.md, "Sigstore signatures".

mod crypto;
mod keys;
mod sign;
pub mod statement;
mod verify;

use std::path::PathBuf;

pub use keys::{
    PASSWORD_VARIABLE, PublicKey, SigningKey, read_public_key, read_public_key_if_pem,
    read_signing_key,
};
pub use sign::{sign_blob, sign_statement};
pub use sigstore_types::Artifact;
pub use verify::{
    Content, Identity, Matcher, Policy, Signer, TrustedRoot, Verified, sha256_artifact, verify,
    verify_simple_signing,
};

/// The media type of a Sigstore bundle v0.3, as an OCI artifact type and layer type.
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

/// The largest bundle read: a keyless bundle is a few KiB.
pub const MAX_BUNDLE_BYTES: u64 = 1 << 20;

/// The largest trusted root read.
pub const MAX_TRUSTED_ROOT_BYTES: u64 = 4 << 20;

/// Why signing or verifying failed. Each message names the file and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A key file that is not a usable key.
    #[error("{path}: {message}")]
    Key {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A trusted root that does not parse.
    #[error("{path}: not a Sigstore trusted root: {message}")]
    TrustedRoot {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A bundle that is not one.
    #[error("{origin}: not a Sigstore bundle: {message}")]
    Malformed {
        /// Where it is.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// A bundle of a kind the policy does not accept: keyless where only keys are trusted, or
    /// the reverse.
    #[error("{origin}: {message}")]
    Kind {
        /// Where it is.
        origin: String,
        /// What it is and what the policy wants.
        message: String,
    },
    /// A bundle that does not verify: the signature, certificate, log entry or timestamp.
    #[error("{origin} does not verify: {message}")]
    Invalid {
        /// Where it is.
        origin: String,
        /// Why, per key tried.
        message: String,
    },
    /// A keyless bundle that verifies, by an identity the policy does not trust.
    #[error(
        "{origin} is signed by {subject} (issuer {issuer}), which no trusted identity matches ({expected})"
    )]
    Identity {
        /// Where it is.
        origin: String,
        /// The certificate's identity.
        subject: String,
        /// Its OIDC issuer.
        issuer: String,
        /// The identities trusted.
        expected: String,
    },
    /// Signing failed.
    #[error("cannot sign: {0}")]
    Sign(String),
}

impl Error {
    /// Whether this is a verification that failed (as opposed to input that could not be read).
    pub fn is_check_failure(&self) -> bool {
        matches!(
            self,
            Self::Kind { .. } | Self::Invalid { .. } | Self::Identity { .. }
        )
    }
}

/// The Sigstore bundle file at `path`, refused unread past [`MAX_BUNDLE_BYTES`].
pub fn read_bundle(path: &std::path::Path) -> Result<Vec<u8>, Error> {
    read_bounded(path, MAX_BUNDLE_BYTES)?.ok_or_else(|| Error::Malformed {
        origin: path.display().to_string(),
        message: format!("over {MAX_BUNDLE_BYTES} bytes, which no Sigstore bundle is"),
    })
}

/// The file `path`, at most `max` bytes: `Ok(None)` when it holds more.
pub(crate) fn read_bounded(path: &std::path::Path, max: u64) -> Result<Option<Vec<u8>>, Error> {
    use std::io::Read as _;
    let io = |source| Error::Read {
        path: path.to_owned(),
        source,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(io)?
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    Ok((bytes.len() as u64 <= max).then_some(bytes))
}

/// `text` with control characters escaped: what a bundle or certificate says is printed.
pub(crate) fn printable(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A P-256 key from a fixed scalar, written as PKCS#8 PEM into `dir`; its path.
    fn key_file(dir: &std::path::Path, seed: u8) -> PathBuf {
        use p256::pkcs8::EncodePrivateKey as _;
        let secret = p256::SecretKey::from_slice(&[seed; 32]).expect("a scalar in range");
        let pem = secret
            .to_pkcs8_pem(p256::pkcs8::LineEnding::LF)
            .expect("PEM");
        let path = dir.join(format!("key-{seed}.pem"));
        std::fs::write(&path, pem.as_bytes()).expect("write");
        path
    }

    fn policy_of(key: &SigningKey) -> Policy {
        Policy {
            keys: vec![key.public.clone()],
            ..Policy::default()
        }
    }

    #[test]
    fn a_blob_signed_offline_verifies_and_another_blob_or_key_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let key = read_signing_key(&key_file(dir.path(), 7), None).unwrap();
        let other = read_signing_key(&key_file(dir.path(), 9), None).unwrap();
        let bundle = sign_blob(b"bytes", &key).unwrap();
        assert_eq!(bundle, sign_blob(b"bytes", &key).unwrap(), "RFC 6979");
        let verified = verify(
            Artifact::from_blob(b"bytes"),
            &bundle,
            "b",
            &policy_of(&key),
        )
        .unwrap();
        assert_eq!(verified.content, Content::MessageSignature);
        assert!(!verified.logged);
        let digest = sigstore_crypto::sha256(b"bytes");
        verify(
            Artifact::from_digest(digest),
            &bundle,
            "b",
            &policy_of(&key),
        )
        .unwrap();
        let e = verify(
            Artifact::from_blob(b"other"),
            &bundle,
            "b",
            &policy_of(&key),
        )
        .unwrap_err();
        assert!(e.to_string().contains("artifact mismatch"), "{e}");
        let e = verify(
            Artifact::from_blob(b"bytes"),
            &bundle,
            "b",
            &policy_of(&other),
        )
        .unwrap_err();
        assert!(e.to_string().contains("invalid signature"), "{e}");
        assert!(e.is_check_failure());
    }

    #[test]
    fn a_statement_binds_its_subjects_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let key = read_signing_key(&key_file(dir.path(), 3), None).unwrap();
        let digest = format!("sha256:{}", "ab".repeat(32));
        let bundle = sign_statement(&statement::cosign_sign(&digest), &key).unwrap();
        let verified = verify(
            sha256_artifact(&digest).unwrap(),
            &bundle,
            "s",
            &policy_of(&key),
        )
        .unwrap();
        let Content::Statement(bytes) = verified.content else {
            panic!("a statement")
        };
        assert_eq!(
            statement::read(&bytes).unwrap().predicate_type,
            statement::COSIGN_SIGN
        );
        let elsewhere = format!("sha256:{}", "cd".repeat(32));
        let e = verify(
            sha256_artifact(&elsewhere).unwrap(),
            &bundle,
            "s",
            &policy_of(&key),
        )
        .unwrap_err();
        assert!(e.to_string().contains("no subject"), "{e}");
    }

    #[test]
    fn a_key_bundle_under_a_keyless_policy_is_refused_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let key = read_signing_key(&key_file(dir.path(), 5), None).unwrap();
        let bundle = sign_blob(b"x", &key).unwrap();
        let policy = Policy {
            identities: vec![Identity {
                subject: Matcher::Exact("a@example.com".into()),
                issuer: Matcher::Exact("https://issuer.example".into()),
            }],
            ..Policy::default()
        };
        let e = verify(Artifact::from_blob(b"x"), &bundle, "b", &policy).unwrap_err();
        assert!(matches!(e, Error::Kind { .. }), "{e}");
    }

    #[test]
    fn a_bundle_over_its_limit_is_refused_unparsed() {
        let big = vec![b' '; MAX_BUNDLE_BYTES as usize + 1];
        let e = verify(Artifact::from_blob(b"x"), &big, "big", &Policy::default()).unwrap_err();
        assert!(e.to_string().contains("over the limit"), "{e}");
    }

    #[test]
    fn a_cosign_key_asking_for_unbounded_scrypt_work_is_refused_before_any() {
        use base64::Engine as _;
        let dir = tempfile::tempdir().unwrap();
        let json = serde_json::json!({
            "kdf": {"name": "scrypt", "params": {"N": 1u64 << 40, "r": 8, "p": 1}, "salt": "AA=="},
            "cipher": {"name": "nacl/secretbox", "nonce": "AA=="},
            "ciphertext": "AA==",
        });
        let pem = format!(
            "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n{}\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n",
            base64::engine::general_purpose::STANDARD.encode(json.to_string())
        );
        let path = dir.path().join("hostile.key");
        std::fs::write(&path, pem).unwrap();
        let e = read_signing_key(&path, Some("")).unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
    }

    #[test]
    fn a_simple_signing_payload_verifies_for_its_digest_only() {
        use base64::Engine as _;
        use p256::ecdsa::signature::Signer as _;
        let digest = format!("sha256:{}", "12".repeat(32));
        let payload = serde_json::to_vec(&serde_json::json!({
            "critical": {"identity": {"docker-reference": "r"}, "image": {"docker-manifest-digest": digest}, "type": "cosign container image signature"},
            "optional": null,
        }))
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let key = read_signing_key(&key_file(dir.path(), 11), None).unwrap();
        let signer = p256::ecdsa::SigningKey::from_slice(&[11; 32]).unwrap();
        let signature: p256::ecdsa::Signature = signer.sign(&payload);
        let signature =
            base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes());
        verify_simple_signing(&payload, &signature, &digest, "sig", &policy_of(&key)).unwrap();
        let other = format!("sha256:{}", "34".repeat(32));
        let e = verify_simple_signing(&payload, &signature, &other, "sig", &policy_of(&key))
            .unwrap_err();
        assert!(e.to_string().contains("artifact mismatch"), "{e}");
    }
}
