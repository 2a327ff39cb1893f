//! Trust: the signers a project configures for a provider — minisign keys, Sigstore public keys
//! (PEM), keyless identities with the trusted root they chain to — and the check a bundle must
//! pass against them at `init` and at every render. One signature by one trusted signer is
//! enough; where nothing is configured, nothing is checked.
//!
//! The Sigstore signature of a bundle file is `BUNDLE.sigstore.json` beside it (`opm provider
//! sign --sigstore`); that of an OCI artifact is a referrer of its manifest (`opm provider push
//! --sign`), which pins the bundle layer's SHA-256. `init` installs the signature that verified
//! (and, for an OCI artifact, the manifest) beside the bundle, so that every render checks it
//! again offline.

use std::path::{Path, PathBuf};

use super::{InstallError, Project, Requirement, provider_error};
use crate::bundle::signature;
use crate::provider::oci::attached::{self, Attached, Wanted};
use crate::provider::oci::documents;
use opm_sigstore::{Identity, Matcher, Policy, TrustedRoot};

/// A keyless identity trusted, as `providers.yaml` states it: the certificate's subject and
/// its OIDC issuer, each exactly or by a regular expression.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IdentityConfig {
    /// The OIDC issuer, exactly (`https://token.actions.githubusercontent.com`).
    #[serde(default)]
    pub issuer: Option<String>,
    /// The OIDC issuer, by a regular expression.
    #[serde(default)]
    pub issuer_regexp: Option<String>,
    /// The subject (an email address or a URI), exactly.
    #[serde(default)]
    pub subject: Option<String>,
    /// The subject, by a regular expression (unanchored, as cosign's; write `^…$`).
    #[serde(default)]
    pub subject_regexp: Option<String>,
}

impl IdentityConfig {
    fn identity(&self, name: &str) -> Result<Identity, InstallError> {
        let pick = |exact: &Option<String>, regexp: &Option<String>, what: &str| {
            let once = || {
                provider_error(
                    name,
                    format!("a trusted identity names its {what} once: `{what}` or `{what}Regexp`"),
                )
            };
            if exact.is_some() && regexp.is_some() {
                return Err(once());
            }
            Matcher::either(
                exact.as_deref(),
                regexp.as_deref(),
                &format!("{what}Regexp"),
            )
            .map_err(|e| provider_error(name, e))?
            .ok_or_else(once)
        };
        Ok(Identity {
            subject: pick(&self.subject, &self.subject_regexp, "subject")?,
            issuer: pick(&self.issuer, &self.issuer_regexp, "issuer")?,
        })
    }
}

/// Whom a project trusts for one provider.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// minisign keys.
    pub minisign: Vec<minisign::PublicKey>,
    /// Sigstore keys and identities.
    pub sigstore: Policy,
}

impl Trust {
    /// Whether anything is trusted (then a signature is required).
    pub fn is_empty(&self) -> bool {
        self.minisign.is_empty() && self.sigstore.is_empty()
    }
}

impl Project {
    /// Whom the project trusts for `requirement`: the project's keys and identities and its
    /// own, their paths relative to `.opm/` (where `providers.yaml`, which names them, is). A
    /// key file holding a PEM public key is a Sigstore key; any other a minisign key.
    pub fn trust(&self, requirement: &Requirement) -> Result<Trust, InstallError> {
        let dir = self.config_dir();
        let mut trust = Trust::default();
        for key in self.config.keys.iter().chain(&requirement.keys) {
            let path = dir.join(key);
            let pem = opm_sigstore::read_public_key_if_pem(&path)
                .map_err(|e| provider_error(&requirement.name, e.to_string()))?;
            if let Some(mut public) = pem {
                // Named as providers.yaml names it: the lock records it, the same on every
                // machine.
                public.origin = key.display().to_string();
                trust.sigstore.keys.push(public);
            } else {
                trust.minisign.push(signature::read_public_key(&path)?);
            }
        }
        for identity in self.config.identities.iter().chain(&requirement.identities) {
            trust
                .sigstore
                .identities
                .push(identity.identity(&requirement.name)?);
        }
        let root = requirement
            .trusted_root
            .as_ref()
            .or(self.config.trusted_root.as_ref());
        match root {
            Some(root) => {
                trust.sigstore.trusted_root = Some(
                    TrustedRoot::read(&dir.join(root))
                        .map_err(|e| provider_error(&requirement.name, e.to_string()))?,
                );
            }
            None if !trust.sigstore.identities.is_empty() => {
                return Err(provider_error(
                    &requirement.name,
                    "keyless identities are trusted, but no `trustedRoot` (Sigstore's \
                     trusted_root.json, relative to .opm/) says which certificate authorities \
                     and logs they are checked against",
                ));
            }
            None => {}
        }
        Ok(trust)
    }
}

/// What a bundle carries for the check: its minisign signature, and its Sigstore signatures
/// with the OCI manifest they sign, if it came from one.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// The `.minisig` text.
    pub minisign: Option<Vec<u8>>,
    /// Sigstore signatures: of the bundle file, or of `manifest`.
    pub sigstore: Vec<Attached>,
    /// The OCI manifest the bundle was pulled by.
    pub manifest: Option<Vec<u8>>,
}

/// The signature that verified.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trusted {
    /// Who signed: `key ID` (minisign), `key FILE` or an identity (Sigstore).
    pub signer: Option<String>,
    /// The minisign key id.
    pub key_id: Option<String>,
    /// The Sigstore signature that verified, and its SHA-256.
    pub sigstore: Option<(Attached, String)>,
}

/// Checks the bundle `origin` (`bytes`) against `trust` with `evidence`, as vouching for the
/// provider `name` at `version`. No trust configured, no check.
pub fn check_trust(
    origin: &str,
    bytes: &[u8],
    evidence: &Evidence,
    trust: &Trust,
    (name, version): (&str, &str),
) -> Result<Trusted, InstallError> {
    if trust.is_empty() {
        return Ok(Trusted::default());
    }
    let minisign = || {
        check_signature(
            origin,
            bytes,
            evidence.minisign.as_deref(),
            &trust.minisign,
            name,
            version,
        )
        .map(|key_id| Trusted {
            signer: key_id.as_ref().map(|id| format!("key {id}")),
            key_id,
            sigstore: None,
        })
    };
    if trust.sigstore.is_empty() {
        return minisign();
    }
    let mut failures = Vec::new();
    if !trust.minisign.is_empty() {
        match minisign() {
            Ok(trusted) => return Ok(trusted),
            Err(e) => failures.push(e.to_string()),
        }
    }
    if !trust.sigstore.is_empty() {
        match check_sigstore(origin, bytes, evidence, &trust.sigstore) {
            Ok((verified, found)) => {
                let bundle = evidence
                    .sigstore
                    .iter()
                    .find(|a| a.origin() == found)
                    .cloned();
                return Ok(Trusted {
                    signer: Some(verified.signer.to_string()),
                    key_id: None,
                    sigstore: bundle.map(|b| (b, verified.bundle_digest)),
                });
            }
            Err(reasons) => failures.extend(reasons),
        }
    }
    Err(provider_error(
        name,
        format!(
            "{origin} is not signed by a signer the project trusts: {}",
            failures.join("; ")
        ),
    ))
}

/// The Sigstore check: a signature of the manifest (which must list the bundle's SHA-256) or
/// of the bundle file itself.
fn check_sigstore(
    origin: &str,
    bytes: &[u8],
    evidence: &Evidence,
    policy: &Policy,
) -> Result<(opm_sigstore::Verified, String), Vec<String>> {
    let subject = match &evidence.manifest {
        Some(manifest) => {
            let layer = documents::sha256_digest(bytes);
            let listed = documents::parse_manifest(manifest)
                .is_ok_and(|m| m.layers.iter().any(|l| l.digest == layer));
            if !listed {
                return Err(vec![format!(
                    "{origin}: its OCI manifest does not list the bundle ({layer})"
                )]);
            }
            documents::sha256_digest(manifest)
        }
        None => documents::sha256_digest(bytes),
    };
    if evidence.sigstore.is_empty() {
        return Err(vec![format!("{origin} has no Sigstore signature")]);
    }
    attached::verify(&evidence.sigstore, &subject, policy, Wanted::Signature)
}

/// Where the installed Sigstore signature of the bundle at `bundle` is: `BUNDLE.sigstore.json`.
pub fn sigstore_path(bundle: &Path) -> PathBuf {
    suffixed(bundle, ".sigstore.json")
}

/// Where the installed cosign v2 signature of the bundle at `bundle` is, as JSON holding its
/// payload (base64) and signature: `BUNDLE.cosign.json`.
pub fn cosign_path(bundle: &Path) -> PathBuf {
    suffixed(bundle, ".cosign.json")
}

/// The files `init` writes beside the bundle at `bundle` for the signature `signature`: the
/// Sigstore bundle, or the cosign v2 signature, and the other one's absence.
pub fn installed_signature(
    bundle: &Path,
    signature: Option<&Attached>,
) -> [(PathBuf, Option<Vec<u8>>); 2] {
    use base64::Engine as _;
    let (sigstore, cosign) = match signature {
        Some(Attached::Bundle { bytes, .. }) => (Some(bytes.clone()), None),
        Some(Attached::SimpleSigning {
            payload, signature, ..
        }) => (
            None,
            serde_json::to_vec(&serde_json::json!({
                "payload": base64::engine::general_purpose::STANDARD.encode(payload),
                "signature": signature,
            }))
            .ok(),
        ),
        Some(Attached::Unreadable { .. }) | None => (None, None),
    };
    [
        (sigstore_path(bundle), sigstore),
        (cosign_path(bundle), cosign),
    ]
}

/// The cosign v2 signature installed at `path`.
fn read_cosign(path: &Path) -> Option<Attached> {
    use base64::Engine as _;
    let bytes = read_limited(path, crate::provider::oci::limits::MAX_SIGNATURE_BYTES * 2)?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    Some(Attached::SimpleSigning {
        origin: path.display().to_string(),
        payload: base64::engine::general_purpose::STANDARD
            .decode(value["payload"].as_str()?)
            .ok()?,
        signature: value["signature"].as_str()?.to_owned(),
    })
}

/// Where the OCI manifest an installed bundle was pulled by is: `BUNDLE.manifest.json`.
pub fn manifest_path(bundle: &Path) -> PathBuf {
    suffixed(bundle, ".manifest.json")
}

fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The evidence beside the bundle file `path`: `.minisig`, `.sigstore.json`, `.manifest.json`.
pub fn evidence_beside(path: &Path) -> Evidence {
    let sigstore_path = sigstore_path(path);
    Evidence {
        minisign: std::fs::read(signature::signature_path(path)).ok(),
        sigstore: opm_sigstore::read_bundle(&sigstore_path)
            .ok()
            .map(|bytes| Attached::Bundle {
                origin: sigstore_path.display().to_string(),
                bytes,
            })
            .into_iter()
            .chain(read_cosign(&cosign_path(path)))
            .collect(),
        manifest: read_limited(
            &manifest_path(path),
            crate::provider::oci::limits::MAX_MANIFEST_BYTES,
        ),
    }
}

fn read_limited(path: &Path, max: u64) -> Option<Vec<u8>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(max)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

/// Checks `signature` (the text of a `.minisig`, if there is one) of the bundle `origin`
/// (`bytes`) against `keys`, as vouching for the provider `name` at `version`; returns the
/// signing key's id. No keys, no check.
pub fn check_signature(
    origin: &str,
    bytes: &[u8],
    signature: Option<&[u8]>,
    keys: &[minisign::PublicKey],
    name: &str,
    version: &str,
) -> Result<Option<String>, InstallError> {
    if keys.is_empty() {
        return Ok(None);
    }
    let path = PathBuf::from(format!("{origin}.minisig"));
    let Some(text) = signature else {
        return Err(signature::SignatureError::Unsigned {
            bundle: origin.to_owned(),
            signature: path,
        }
        .into());
    };
    let sig = signature::parse_signature(&path, &String::from_utf8_lossy(text))?;
    let binding = signature::Binding {
        name: name.to_owned(),
        version: version.to_owned(),
    };
    let verified = signature::verify_provider(origin, bytes, &sig, keys, &binding)?;
    Ok(Some(verified.key_id))
}
