//! Key files: an ECDSA P-256 private key in PEM — PKCS#8 (`openssl genpkey`, `BEGIN PRIVATE
//! KEY`), SEC1 (`openssl ecparam -genkey`, `BEGIN EC PRIVATE KEY`) or cosign's own encrypted
//! file (`cosign generate-key-pair`: scrypt, then NaCl secretbox, its password in
//! `COSIGN_PASSWORD` as cosign reads it) — and a public key in PEM (`BEGIN PUBLIC KEY`, as
//! `cosign generate-key-pair` and `openssl ec -pubout` write it).

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sigstore_crypto::KeyPair;
use sigstore_types::DerPublicKey;

use crate::Error;

/// The environment variable holding the password of an encrypted cosign key, as cosign names it.
pub const PASSWORD_VARIABLE: &str = "COSIGN_PASSWORD";

/// The largest key file read.
const MAX_KEY_BYTES: u64 = 64 << 10;

/// A private key to sign with.
pub struct SigningKey {
    pub(crate) pair: KeyPair,
    /// Its public key.
    pub public: PublicKey,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

/// A public key that signatures are checked with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    /// Its DER (SubjectPublicKeyInfo).
    pub der: DerPublicKey,
    /// Where it was read from, for messages.
    pub origin: String,
}

impl PublicKey {
    /// The key's hint, as cosign writes it into a bundle: the base64 SHA-256 of its DER.
    pub fn hint(&self) -> String {
        STANDARD.encode(ring::digest::digest(
            &ring::digest::SHA256,
            self.der.as_bytes(),
        ))
    }

    /// Reads the PEM public key `text` (from `origin`, for messages).
    pub fn from_pem(origin: &str, text: &str) -> Result<Self, Error> {
        let der = DerPublicKey::from_pem(text).map_err(|e| Error::Key {
            path: origin.into(),
            message: format!("not a PEM public key (BEGIN PUBLIC KEY): {e}"),
        })?;
        Ok(Self {
            der,
            origin: origin.to_owned(),
        })
    }
}

/// Reads the PEM public key file at `path`.
pub fn read_public_key(path: &Path) -> Result<PublicKey, Error> {
    PublicKey::from_pem(&path.display().to_string(), &read_text(path)?)
}

/// The public key in the file at `path` if it holds a PEM public key (`BEGIN PUBLIC KEY`);
/// `None` for any other key file (a minisign key, say) or one that cannot be read, which the
/// reader of that kind reports. Read once, at most [`MAX_KEY_BYTES`].
pub fn read_public_key_if_pem(path: &Path) -> Result<Option<PublicKey>, Error> {
    match read_text(path) {
        Ok(text) if text.trim_start().starts_with("-----BEGIN PUBLIC KEY-----") => {
            PublicKey::from_pem(&path.display().to_string(), &text).map(Some)
        }
        _ => Ok(None),
    }
}

/// Reads the private key file at `path`; `password` gives an encrypted cosign key's password
/// (`env::var(PASSWORD_VARIABLE)` for the CLI).
pub fn read_signing_key(path: &Path, password: Option<&str>) -> Result<SigningKey, Error> {
    crate::crypto::install();
    let bad = |message: String| Error::Key {
        path: path.to_owned(),
        message,
    };
    let text = read_text(path)?;
    let (label, der) = pem(&text).ok_or_else(|| bad("not a PEM file".to_owned()))?;
    let pkcs8 = match label.as_str() {
        "PRIVATE KEY" => der,
        "EC PRIVATE KEY" => {
            use p256::pkcs8::EncodePrivateKey as _;
            let key = p256::SecretKey::from_sec1_der(&der)
                .map_err(|e| bad(format!("not an ECDSA P-256 key: {e}")))?;
            key.to_pkcs8_der()
                .map_err(|e| bad(e.to_string()))?
                .as_bytes()
                .to_vec()
        }
        "ENCRYPTED SIGSTORE PRIVATE KEY" | "ENCRYPTED COSIGN PRIVATE KEY" => {
            let password = password.ok_or_else(|| {
                bad(format!(
                    "an encrypted cosign key: set {PASSWORD_VARIABLE} to its password"
                ))
            })?;
            decrypt_cosign(&der, password).map_err(bad)?
        }
        "ENCRYPTED PRIVATE KEY" => {
            return Err(bad(
                "an encrypted PKCS#8 key: decrypt it (`openssl pkcs8 -in KEY -out PLAIN.pem`) \
                 or use a cosign key"
                    .to_owned(),
            ));
        }
        other => return Err(bad(format!("a PEM {other}, not a private key"))),
    };
    let pair = KeyPair::from_pkcs8_der(&pkcs8)
        .map_err(|_| bad("not an ECDSA P-256 private key (opm signs with P-256)".to_owned()))?;
    let der = pair.public_key_der().map_err(|e| bad(e.to_string()))?;
    Ok(SigningKey {
        pair,
        public: PublicKey {
            der,
            origin: path.display().to_string(),
        },
    })
}

/// The first PEM block of `text`: its label and its decoded bytes.
fn pem(text: &str) -> Option<(String, Vec<u8>)> {
    let mut lines = text.lines().map(str::trim);
    let label = lines
        .find_map(|line| line.strip_prefix("-----BEGIN "))?
        .strip_suffix("-----")?
        .to_owned();
    let end = format!("-----END {label}-----");
    let mut body = String::new();
    for line in lines.by_ref() {
        if line == end {
            return Some((label, STANDARD.decode(body.as_bytes()).ok()?));
        }
        body.push_str(line);
    }
    None
}

/// cosign's encrypted key: JSON naming scrypt's parameters and salt, the secretbox nonce, and
/// the ciphertext of the PKCS#8 key.
#[derive(serde::Deserialize)]
struct CosignKey {
    kdf: Kdf,
    cipher: Cipher,
    ciphertext: String,
}

#[derive(serde::Deserialize)]
struct Kdf {
    name: String,
    params: KdfParams,
    salt: String,
}

#[derive(serde::Deserialize)]
struct KdfParams {
    #[serde(rename = "N")]
    n: u64,
    r: u32,
    p: u32,
}

#[derive(serde::Deserialize)]
struct Cipher {
    name: String,
    nonce: String,
}

fn decrypt_cosign(json: &[u8], password: &str) -> Result<Vec<u8>, String> {
    use crypto_secretbox::aead::{Aead as _, KeyInit as _};
    let key: CosignKey =
        serde_json::from_slice(json).map_err(|e| format!("not a cosign key: {e}"))?;
    if key.kdf.name != "scrypt" || key.cipher.name != "nacl/secretbox" {
        return Err(format!(
            "a cosign key with {} and {}, where opm reads scrypt and nacl/secretbox",
            key.kdf.name, key.cipher.name
        ));
    }
    // cosign writes N = 2^15 (2^16 with --high); anything far larger is a key made to exhaust
    // the reader's memory.
    let n = key.kdf.params.n;
    if !n.is_power_of_two() || n > 1 << 20 || key.kdf.params.r > 32 || key.kdf.params.p > 16 {
        return Err(format!(
            "its scrypt parameters (N={n}, r={}, p={}) are out of range",
            key.kdf.params.r, key.kdf.params.p
        ));
    }
    let decode = |what: &str, text: &str| {
        STANDARD
            .decode(text)
            .map_err(|e| format!("its {what} is not base64: {e}"))
    };
    let params = scrypt::Params::new(
        n.trailing_zeros() as u8,
        key.kdf.params.r,
        key.kdf.params.p,
        32,
    )
    .map_err(|e| format!("its scrypt parameters: {e}"))?;
    let mut secret = [0u8; 32];
    scrypt::scrypt(
        password.as_bytes(),
        &decode("salt", &key.kdf.salt)?,
        &params,
        &mut secret,
    )
    .map_err(|e| format!("scrypt: {e}"))?;
    let nonce = decode("nonce", &key.cipher.nonce)?;
    if nonce.len() != 24 {
        return Err("its nonce is not 24 bytes".to_owned());
    }
    crypto_secretbox::XSalsa20Poly1305::new(&secret.into())
        .decrypt(
            nonce.as_slice().into(),
            decode("ciphertext", &key.ciphertext)?.as_slice(),
        )
        .map_err(|_| format!("the password in {PASSWORD_VARIABLE} does not open it"))
}

pub(crate) fn read_text(path: &Path) -> Result<String, Error> {
    let bad = |message: String| Error::Key {
        path: path.to_owned(),
        message,
    };
    let bytes = crate::read_bounded(path, MAX_KEY_BYTES)?
        .ok_or_else(|| bad(format!("over {MAX_KEY_BYTES} bytes, which no key file is")))?;
    String::from_utf8(bytes).map_err(|_| bad("not UTF-8 text".to_owned()))
}
