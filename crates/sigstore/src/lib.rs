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
    PASSWORD_VARIABLE, PublicKey, SigningKey, is_pem_public_key, read_public_key, read_signing_key,
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
