//! The flags that say whom to trust, spelled as cosign spells them, shared by every command that
//! verifies: `opm verify-blob`, `opm provider verify`, `opm mod verify`. `--key` takes Sigstore
//! (PEM) public keys, and minisign keys where a command checks minisign signatures too.

use std::path::{Path, PathBuf};

use clap::Args;

use opm_sigstore::{Identity, Matcher, Policy, TrustedRoot};

/// Whom to trust.
#[derive(Debug, Clone, Default, Args)]
pub struct TrustArgs {
    /// A trusted public key: PEM (`BEGIN PUBLIC KEY`, as `cosign generate-key-pair` and `openssl
    /// ec -pubout` write it), or where minisign signatures are checked a minisign key. Repeatable.
    #[arg(short = 'p', long = "key", value_name = "PUB")]
    pub keys: Vec<PathBuf>,

    /// The Sigstore trusted root (`trusted_root.json`) a keyless signature's certificate, SCT,
    /// log entry and timestamps are checked against, offline.
    #[arg(long, value_name = "FILE")]
    pub trusted_root: Option<PathBuf>,

    /// The keyless signer trusted: the certificate's identity (an email address or URI), exactly.
    #[arg(
        long,
        value_name = "IDENTITY",
        conflicts_with = "certificate_identity_regexp"
    )]
    pub certificate_identity: Option<String>,

    /// The keyless signer trusted, by a regular expression that must match in its identity
    /// (unanchored, as cosign's; write `^…$` to match it whole).
    #[arg(long, value_name = "REGEXP")]
    pub certificate_identity_regexp: Option<String>,

    /// The OIDC issuer that must have vouched for the keyless signer, exactly.
    #[arg(
        long,
        value_name = "ISSUER",
        conflicts_with = "certificate_oidc_issuer_regexp"
    )]
    pub certificate_oidc_issuer: Option<String>,

    /// The OIDC issuer, by a regular expression.
    #[arg(long, value_name = "REGEXP")]
    pub certificate_oidc_issuer_regexp: Option<String>,
}

impl TrustArgs {
    /// The Sigstore policy the flags state, and the minisign keys among `--key` (refused unless
    /// `minisign` is allowed). At least one key or identity is required.
    pub fn policy(&self, minisign: bool) -> anyhow::Result<(Policy, Vec<PathBuf>)> {
        let mut policy = Policy::default();
        let mut minisign_keys = Vec::new();
        for key in &self.keys {
            if let Some(public) = opm_sigstore::read_public_key_if_pem(key)? {
                policy.keys.push(public);
            } else if minisign {
                minisign_keys.push(key.clone());
            } else {
                anyhow::bail!(
                    "{}: not a PEM public key (BEGIN PUBLIC KEY); Sigstore bundles are checked \
                     with one",
                    key.display()
                );
            }
        }
        let subject = Matcher::either(
            self.certificate_identity.as_deref(),
            self.certificate_identity_regexp.as_deref(),
            "--certificate-identity-regexp",
        )
        .map_err(anyhow::Error::msg)?;
        let issuer = Matcher::either(
            self.certificate_oidc_issuer.as_deref(),
            self.certificate_oidc_issuer_regexp.as_deref(),
            "--certificate-oidc-issuer-regexp",
        )
        .map_err(anyhow::Error::msg)?;
        policy.trusted_root = self
            .trusted_root
            .as_deref()
            .map(TrustedRoot::read)
            .transpose()?;
        match (subject, issuer) {
            (Some(subject), Some(issuer)) => {
                anyhow::ensure!(
                    policy.trusted_root.is_some(),
                    "a keyless identity is checked against a trusted root: give --trusted-root \
                     FILE (Sigstore's trusted_root.json)"
                );
                policy.identities.push(Identity { subject, issuer });
            }
            (None, None) => {}
            _ => anyhow::bail!(
                "a keyless signer is named by both its identity (--certificate-identity or \
                 --certificate-identity-regexp) and its issuer (--certificate-oidc-issuer or \
                 --certificate-oidc-issuer-regexp)"
            ),
        }
        if policy.is_empty() && minisign_keys.is_empty() {
            anyhow::bail!(
                "trust something: --key PUB, or --trusted-root FILE with --certificate-identity \
                 and --certificate-oidc-issuer (or their -regexp forms)"
            );
        }
        Ok((policy, minisign_keys))
    }
}

/// Where a signature bundle of `file` is kept unless told otherwise: `FILE.sigstore.json`.
pub fn bundle_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".sigstore.json");
    PathBuf::from(name)
}

/// Reads the private key `key`, an encrypted cosign key's password from `COSIGN_PASSWORD`.
pub fn signing_key(
    key: &Path,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> anyhow::Result<opm_sigstore::SigningKey> {
    let password = env(opm_sigstore::PASSWORD_VARIABLE);
    Ok(opm_sigstore::read_signing_key(key, password.as_deref())?)
}

/// Signs the manifest `digest` of `target`'s repository as cosign v3 signs an image (a DSSE
/// statement, predicate `https://sigstore.dev/cosign/sign/v1`) and attaches the bundle.
pub fn sign_manifest(
    target: &opm_core::provider::oci::OciRef,
    digest: &str,
    key: &opm_sigstore::SigningKey,
    options: &opm_registry::Options,
) -> anyhow::Result<opm_registry::Attachment> {
    let statement = opm_sigstore::statement::cosign_sign(digest);
    let bundle = opm_sigstore::sign_statement(&statement, key)?;
    opm_registry::attach(target, digest, &bundle, options)
}

/// One line saying what a verification established.
pub fn describe(verified: &opm_sigstore::Verified) -> String {
    let log = if verified.logged {
        format!(
            "its transparency-log entry verified (signed at {})",
            verified.times.join(", ")
        )
    } else if verified.times.is_empty() {
        "no transparency-log entry (signed offline)".to_owned()
    } else {
        format!("timestamped {}", verified.times.join(", "))
    };
    format!(
        "signed by {}; {log}; bundle {}",
        verified.signer, verified.bundle_digest
    )
}
