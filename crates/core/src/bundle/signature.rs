//! Signatures of bundle files with minisign keys (`providers/README.md`, "Signatures"), using the
//! `minisign` crate by minisign's author, which reads and writes the standard key and signature
//! files.
//!
//! A signature covers the bundle file's bytes, and is stored beside it as `BUNDLE.minisig`,
//! minisign's own default. Since the file holds the canonical manifest, which holds every
//! component digest, a signature pins the bundle digest and every byte; and `minisign -Sm
//! BUNDLE` and `minisign -Vm BUNDLE` work on the same thing opm signs and verifies. opm writes
//! the bundle digest and the provider's name and version into the signed (trusted) comment,
//! where `minisign -V` shows them, and refuses a signature that vouches for another provider or
//! version than the bundle holds ([`verify_provider`]).

use std::io::Cursor;
use std::path::{Path, PathBuf};

use minisign::{PublicKey, PublicKeyBox, SecretKey, SecretKeyBox, SignatureBox};

/// Why signing or verifying failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// A key or signature file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A key file is not a minisign key.
    #[error("{path} is not a minisign {what}: {message}")]
    BadKey {
        /// The file.
        path: PathBuf,
        /// `public key` or `secret key`.
        what: &'static str,
        /// What minisign said.
        message: String,
    },
    /// The signature file is not a minisign signature.
    #[error("{path} is not a minisign signature: {message}")]
    BadSignatureFile {
        /// The file.
        path: PathBuf,
        /// What minisign said.
        message: String,
    },
    /// Signing failed.
    #[error("cannot sign {bundle}: {message}")]
    Sign {
        /// The bundle.
        bundle: String,
        /// What minisign said.
        message: String,
    },
    /// The bundle has no signature file.
    #[error("bundle {bundle} is not signed: {signature} does not exist")]
    Unsigned {
        /// The bundle.
        bundle: String,
        /// Where the signature was looked for.
        signature: PathBuf,
    },
    /// The signature was made by a key that is not trusted.
    #[error(
        "bundle {bundle} is signed by key {key_id}, which is not among the trusted keys ({trusted})"
    )]
    UntrustedKey {
        /// The bundle.
        bundle: String,
        /// The signing key's id.
        key_id: String,
        /// The trusted keys' ids.
        trusted: String,
    },
    /// The signature verifies but vouches for another provider or version than the bundle's
    /// manifest names: an old release renamed, or another provider signed by the same key.
    #[error(
        "bundle {bundle} holds provider {actual}, but its signature by key {key_id} is for {signed}; a signature vouches for one provider version only"
    )]
    WrongProvider {
        /// The bundle.
        bundle: String,
        /// The signing key's id.
        key_id: String,
        /// What the signature names.
        signed: String,
        /// What the bundle's manifest names.
        actual: String,
    },
    /// The signature verifies but names no provider and version.
    #[error(
        "bundle {bundle}: the signature by key {key_id} does not name the provider and version it vouches for (its trusted comment lacks provider:NAME and version:VERSION); sign it again with `opm provider sign`"
    )]
    Unbound {
        /// The bundle.
        bundle: String,
        /// The signing key's id.
        key_id: String,
    },
    /// The signature does not match the bundle's bytes.
    #[error(
        "bundle {bundle}: the signature by key {key_id} does not verify ({message}); the bundle or its signature was modified"
    )]
    Invalid {
        /// The bundle.
        bundle: String,
        /// The signing key's id.
        key_id: String,
        /// What minisign said.
        message: String,
    },
}

/// The provider a signature vouches for, as opm writes it into the signed (trusted) comment:
/// `provider:NAME` and `version:VERSION` among its tab-separated fields. Someone signing with
/// `minisign` itself writes the same: `minisign -Sm BUNDLE -t "provider:NAME\tversion:VERSION"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The provider's name.
    pub name: String,
    /// Its version.
    pub version: String,
}

impl Binding {
    /// The binding a trusted comment states, if it states one.
    pub fn from_comment(comment: &str) -> Option<Self> {
        let field = |key: &str| {
            comment
                .split('\t')
                .find_map(|field| field.strip_prefix(key))
                .map(str::to_owned)
        };
        Some(Self {
            name: field("provider:")?,
            version: field("version:")?,
        })
    }

    /// The comment fields that state this binding.
    pub fn to_comment(&self) -> String {
        format!("provider:{}\tversion:{}", self.name, self.version)
    }
}

impl std::fmt::Display for Binding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.name, self.version)
    }
}

impl SignatureError {
    /// Whether this is a verification that failed (as opposed to input that could not be read).
    pub fn is_check_failure(&self) -> bool {
        matches!(
            self,
            Self::Unsigned { .. }
                | Self::UntrustedKey { .. }
                | Self::Invalid { .. }
                | Self::WrongProvider { .. }
                | Self::Unbound { .. }
        )
    }
}

/// A signature that verified.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Verified {
    /// The id of the key that made it, as minisign prints it.
    pub key_id: String,
    /// The signed comment.
    pub trusted_comment: String,
}

/// What a bundle's signature file says, before any key is involved.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SignatureInfo {
    /// Where it is.
    pub path: PathBuf,
    /// The id of the key that made it.
    pub key_id: String,
    /// The signed comment, unverified.
    pub trusted_comment: String,
}

/// Where the signature of the bundle at `bundle` is kept: `BUNDLE.minisig`.
pub fn signature_path(bundle: &Path) -> PathBuf {
    let mut name = bundle.as_os_str().to_owned();
    name.push(".minisig");
    PathBuf::from(name)
}

/// Signs `bytes`, the bundle file `bundle`, with the minisign secret key in `key`; returns the
/// signature file's text. `trusted_comment` is signed too. A password-protected key asks for
/// its password on the terminal.
pub fn sign(
    bundle: &str,
    bytes: &[u8],
    key: &Path,
    trusted_comment: &str,
) -> Result<String, SignatureError> {
    let text = read_text(key)?;
    let bad = |message: String| SignatureError::BadKey {
        path: key.to_owned(),
        what: "secret key",
        message,
    };
    let secret = read_secret_key(&text).map_err(bad)?;
    let signature = minisign::sign(
        None,
        &secret,
        Cursor::new(bytes),
        Some(trusted_comment),
        Some("signature from opm provider sign"),
    )
    .map_err(|e| SignatureError::Sign {
        bundle: bundle.to_owned(),
        message: e.to_string(),
    })?;
    Ok(signature.into_string())
}

/// Parses a minisign secret key file. An unencrypted key (`minisign -G -W`) is read directly:
/// the C tool leaves its checksum zero, which the crate's own reader takes for corruption. A
/// password-protected key asks for its password on the terminal.
fn read_secret_key(text: &str) -> Result<SecretKey, String> {
    use base64::Engine as _;
    let encoded = text
        .lines()
        .nth(1)
        .ok_or("the second line, the key, is missing")?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|e| format!("the key is not base64: {e}"))?;
    let kdf_none = bytes.get(2..4) == Some(&[0, 0]);
    if kdf_none {
        SecretKey::from_bytes(&bytes).map_err(|e| e.to_string())
    } else {
        SecretKeyBox::from_string(text)
            .and_then(|secret| secret.into_secret_key(None))
            .map_err(|e| e.to_string())
    }
}

/// Reads the minisign public key file at `path` (or, if no such file exists, `path` as the
/// base64 key itself, as `minisign -P` takes it).
pub fn read_public_key(path: &Path) -> Result<PublicKey, SignatureError> {
    let bad = |message: String| SignatureError::BadKey {
        path: path.to_owned(),
        what: "public key",
        message,
    };
    if !path.exists()
        && let Some(text) = path.to_str()
        && let Ok(key) = PublicKey::from_base64(text)
    {
        return Ok(key);
    }
    let text = read_text(path)?;
    PublicKeyBox::from_string(&text)
        .and_then(PublicKeyBox::into_public_key)
        .map_err(|e| bad(e.to_string()))
}

/// Reads the signature of the bundle at `bundle` from `signature` (default `BUNDLE.minisig`).
pub fn read_signature(
    bundle: &Path,
    signature: Option<&Path>,
) -> Result<Option<(SignatureBox, SignatureInfo)>, SignatureError> {
    let path = signature.map_or_else(|| signature_path(bundle), Path::to_owned);
    if signature.is_none() && !path.exists() {
        return Ok(None);
    }
    let signature = parse_signature(&path, &read_text(&path)?)?;
    let info = SignatureInfo {
        key_id: key_id(signature.keynum()),
        trusted_comment: signature.trusted_comment().unwrap_or_default(),
        path,
    };
    Ok(Some((signature, info)))
}

/// Parses `text`, the signature file at `path` (named in errors).
pub fn parse_signature(path: &Path, text: &str) -> Result<SignatureBox, SignatureError> {
    SignatureBox::from_string(text).map_err(|e| SignatureError::BadSignatureFile {
        path: path.to_owned(),
        message: e.to_string(),
    })
}

/// Verifies `signature` of `bytes`, the bundle file `bundle`, against the trusted `keys`.
pub fn verify(
    bundle: &str,
    bytes: &[u8],
    signature: &SignatureBox,
    keys: &[PublicKey],
) -> Result<Verified, SignatureError> {
    let signer = key_id(signature.keynum());
    let Some(key) = keys.iter().find(|key| key.keynum() == signature.keynum()) else {
        let trusted: Vec<String> = keys.iter().map(|key| key_id(key.keynum())).collect();
        return Err(SignatureError::UntrustedKey {
            bundle: bundle.to_owned(),
            key_id: signer,
            trusted: trusted.join(", "),
        });
    };
    minisign::verify(key, signature, Cursor::new(bytes), true, false, false).map_err(|e| {
        SignatureError::Invalid {
            bundle: bundle.to_owned(),
            key_id: signer.clone(),
            message: e.to_string().to_lowercase(),
        }
    })?;
    Ok(Verified {
        key_id: signer,
        trusted_comment: signature.trusted_comment().unwrap_or_default(),
    })
}

/// Verifies `signature` as [`verify`] does, then that it vouches for `provider`: the name and
/// version the bundle's own manifest states ([`check_binding`]).
pub fn verify_provider(
    bundle: &str,
    bytes: &[u8],
    signature: &SignatureBox,
    keys: &[PublicKey],
    provider: &Binding,
) -> Result<Verified, SignatureError> {
    let verified = verify(bundle, bytes, signature, keys)?;
    check_binding(bundle, &verified, provider)?;
    Ok(verified)
}

/// Checks that `verified`, a signature of the bundle `bundle`, vouches for `provider`.
pub fn check_binding(
    bundle: &str,
    verified: &Verified,
    provider: &Binding,
) -> Result<(), SignatureError> {
    match Binding::from_comment(&verified.trusted_comment) {
        Some(signed) if &signed == provider => Ok(()),
        Some(signed) => Err(SignatureError::WrongProvider {
            bundle: bundle.to_owned(),
            key_id: verified.key_id.clone(),
            signed: signed.to_string(),
            actual: provider.to_string(),
        }),
        None => Err(SignatureError::Unbound {
            bundle: bundle.to_owned(),
            key_id: verified.key_id.clone(),
        }),
    }
}

/// A key id as minisign prints it: the 8 bytes as a little-endian number in uppercase hex.
pub fn key_id(keynum: &[u8]) -> String {
    let mut bytes = [0u8; 8];
    for (slot, byte) in bytes.iter_mut().zip(keynum) {
        *slot = *byte;
    }
    format!("{:016X}", u64::from_le_bytes(bytes))
}

fn read_text(path: &Path) -> Result<String, SignatureError> {
    std::fs::read_to_string(path).map_err(|source| SignatureError::Read {
        path: path.to_owned(),
        source,
    })
}
