//! Signing offline: a bundle holding the signature, the public key's hint, and no log entry or
//! timestamp — what `cosign sign-blob --key KEY --tlog-upload=false --new-bundle-format`
//! writes. Signatures are deterministic (RFC 6979), so the same key and bytes give the same
//! bundle.

use sigstore_bundle::{BundleV03, VerificationMaterialV03};
use sigstore_types::bundle::{MessageDigest, MessageSignature, SignatureContent};
use sigstore_types::{DsseEnvelope, DsseSignature, HashAlgorithm, KeyId, PayloadBytes};

use crate::statement::PAYLOAD_TYPE;
use crate::{Error, SigningKey};

/// A `messageSignature` bundle over `bytes`: the signature of their SHA-256, which the bundle
/// states too. Returns the bundle's JSON.
pub fn sign_blob(bytes: &[u8], key: &SigningKey) -> Result<Vec<u8>, Error> {
    let signature = key
        .pair
        .sign(bytes)
        .map_err(|e| Error::Sign(e.to_string()))?;
    let digest = sigstore_crypto::sha256(bytes);
    let content = SignatureContent::MessageSignature(
        MessageSignature::new(signature)
            .with_message_digest(MessageDigest::new(HashAlgorithm::Sha2256, digest.into())),
    );
    finish(content, key)
}

/// A `dsseEnvelope` bundle over the in-toto statement `statement` (its bytes as given: the
/// envelope carries them, and the signature covers their pre-authentication encoding).
pub fn sign_statement(statement: &[u8], key: &SigningKey) -> Result<Vec<u8>, Error> {
    let signed = sigstore_types::pae(PAYLOAD_TYPE, statement);
    let signature = key
        .pair
        .sign(&signed)
        .map_err(|e| Error::Sign(e.to_string()))?;
    let envelope = DsseEnvelope::new(
        PAYLOAD_TYPE,
        PayloadBytes::new(statement.to_vec()),
        DsseSignature::new(signature, KeyId::new("")),
    );
    finish(SignatureContent::DsseEnvelope(envelope), key)
}

fn finish(content: SignatureContent, key: &SigningKey) -> Result<Vec<u8>, Error> {
    let material = VerificationMaterialV03::PublicKey {
        hint: key.public.hint(),
    };
    let mut json = BundleV03::new(material, content)
        .into_bundle()
        .to_json()
        .map_err(|e| Error::Sign(e.to_string()))?
        .into_bytes();
    json.push(b'\n');
    Ok(json)
}
