//! The cryptography the Sigstore crates call through their `CryptoProvider` trait: hashes and
//! signature checks on ring (the TLS stack's library, already in the build), ECDSA over a
//! digest given whole (a `messageSignature` over a large file is checked against its SHA-256)
//! and P-256 signing on RustCrypto's `p256`/`p384`. Installed once per process by [`install`];
//! without it the crates' default provider would be aws-lc, which needs cmake to build.

use std::sync::OnceLock;

use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::signature::hazmat::{PrehashSigner as _, PrehashVerifier as _};
use ring::signature as rs;
use sigstore_crypto::{
    CryptoProvider, Error, HashContext, KeyAlgorithm, Result, SigningKeyPair, SigningScheme,
};
use sigstore_types::HashAlgorithm;

/// opm's provider.
#[derive(Debug)]
pub struct Provider;

static PROVIDER: Provider = Provider;

/// Makes [`Provider`] the process's provider, once; later calls do nothing.
pub fn install() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        // Fails only when a provider is installed already, which is as good.
        let _ = sigstore_crypto::install_default_provider(&PROVIDER);
    });
}

struct Hash(ring::digest::Context);

impl HashContext for Hash {
    fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    fn finalize(self: Box<Self>) -> Vec<u8> {
        self.0.finish().as_ref().to_vec()
    }
}

fn unsupported(what: &str) -> Error {
    Error::UnsupportedAlgorithm(what.to_owned())
}

fn mismatch() -> Error {
    Error::UnsupportedAlgorithm("the signature does not verify".to_owned())
}

impl CryptoProvider for Provider {
    fn hash(&self, algorithm: HashAlgorithm) -> Result<Box<dyn HashContext>> {
        let algorithm = match algorithm {
            HashAlgorithm::Sha2256 => &ring::digest::SHA256,
            HashAlgorithm::Sha2384 => &ring::digest::SHA384,
            HashAlgorithm::Sha2512 => &ring::digest::SHA512,
            other => return Err(unsupported(&format!("hash {other:?}"))),
        };
        Ok(Box::new(Hash(ring::digest::Context::new(algorithm))))
    }

    fn verify_raw(
        &self,
        scheme: SigningScheme,
        public_key: &[u8],
        data: &[u8],
        signature: &[u8],
    ) -> Result<()> {
        let algorithm: &dyn rs::VerificationAlgorithm = match scheme {
            SigningScheme::EcdsaP256Sha256 => &rs::ECDSA_P256_SHA256_ASN1,
            SigningScheme::EcdsaP256Sha384 => &rs::ECDSA_P256_SHA384_ASN1,
            SigningScheme::EcdsaP384Sha256 => &rs::ECDSA_P384_SHA256_ASN1,
            SigningScheme::EcdsaP384Sha384 => &rs::ECDSA_P384_SHA384_ASN1,
            SigningScheme::Ed25519 => &rs::ED25519,
            SigningScheme::RsaPkcs1Sha256 => &rs::RSA_PKCS1_2048_8192_SHA256,
            SigningScheme::RsaPkcs1Sha384 => &rs::RSA_PKCS1_2048_8192_SHA384,
            SigningScheme::RsaPkcs1Sha512 => &rs::RSA_PKCS1_2048_8192_SHA512,
            SigningScheme::RsaPssSha256 => &rs::RSA_PSS_2048_8192_SHA256,
            SigningScheme::RsaPssSha384 => &rs::RSA_PSS_2048_8192_SHA384,
            SigningScheme::RsaPssSha512 => &rs::RSA_PSS_2048_8192_SHA512,
            other => return Err(unsupported(other.name())),
        };
        rs::UnparsedPublicKey::new(algorithm, public_key)
            .verify(data, signature)
            .map_err(|_| mismatch())
    }

    fn verify_prehashed(
        &self,
        scheme: SigningScheme,
        public_key: &[u8],
        digest: &[u8],
        signature: &[u8],
    ) -> Result<()> {
        match scheme {
            SigningScheme::EcdsaP256Sha256 | SigningScheme::EcdsaP256Sha384 => {
                let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(public_key)
                    .map_err(|_| unsupported("a P-256 key that does not parse"))?;
                let signature =
                    p256::ecdsa::Signature::from_der(signature).map_err(|_| mismatch())?;
                key.verify_prehash(digest, &signature)
                    .map_err(|_| mismatch())
            }
            SigningScheme::EcdsaP384Sha256 | SigningScheme::EcdsaP384Sha384 => {
                let key = p384::ecdsa::VerifyingKey::from_sec1_bytes(public_key)
                    .map_err(|_| unsupported("a P-384 key that does not parse"))?;
                let signature =
                    p384::ecdsa::Signature::from_der(signature).map_err(|_| mismatch())?;
                key.verify_prehash(digest, &signature)
                    .map_err(|_| mismatch())
            }
            other => Err(unsupported(&format!(
                "{} over a digest (sign the file whole)",
                other.name()
            ))),
        }
    }

    fn key_pair_from_pkcs8_der(&self, pkcs8: &[u8]) -> Result<Box<dyn SigningKeyPair>> {
        use p256::pkcs8::DecodePrivateKey as _;
        let key = p256::ecdsa::SigningKey::from_pkcs8_der(pkcs8)
            .map_err(|_| unsupported("a private key that is not ECDSA P-256 in PKCS#8"))?;
        Ok(Box::new(P256::new(key)))
    }
}

/// An ECDSA P-256 signing key. Signatures are deterministic (RFC 6979): the same key and bytes
/// give the same signature, so the same render signs to the same bundle.
pub(crate) struct P256 {
    key: p256::ecdsa::SigningKey,
    public: Vec<u8>,
}

impl P256 {
    pub(crate) fn new(key: p256::ecdsa::SigningKey) -> Self {
        let public = key
            .verifying_key()
            .to_encoded_point(false)
            .as_bytes()
            .to_vec();
        Self { key, public }
    }
}

impl SigningKeyPair for P256 {
    fn algorithm(&self) -> KeyAlgorithm {
        KeyAlgorithm::EcdsaP256
    }

    fn public_key_bytes(&self) -> &[u8] {
        &self.public
    }

    fn sign_raw(&self, data: &[u8]) -> Result<Vec<u8>> {
        let signature: p256::ecdsa::Signature = self.key.sign(data);
        Ok(signature.to_der().as_bytes().to_vec())
    }

    fn sign_prehashed(&self, digest: &[u8]) -> Result<Vec<u8>> {
        let signature: p256::ecdsa::Signature = self
            .key
            .sign_prehash(digest)
            .map_err(|_| unsupported("signing this digest"))?;
        Ok(signature.to_der().as_bytes().to_vec())
    }
}
