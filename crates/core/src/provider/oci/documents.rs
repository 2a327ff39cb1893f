//! The JSON documents a registry sends and opm parses: image manifests ([`Manifest`]), image
//! indexes ([`Index`]), tag lists and token responses, each parsed from bytes already bounded in
//! size by the client. These parsers see a hostile registry's bytes first, so they are public
//! for the `registry` fuzz target, and each returns an error, never panics.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::Digest as _;

/// The media type of an OCI image manifest.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The media type of an OCI image index.
pub const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";

/// A document a registry sent that is not what it should be.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DocumentError {
    /// Not JSON of the document's shape.
    #[error("it is not {what}: {detail}")]
    Json {
        /// What it should be.
        what: &'static str,
        /// What serde_json found, escaped (it quotes the document).
        detail: String,
    },
    /// A descriptor names a digest opm cannot check.
    #[error("a descriptor names {digest:?}, not a sha256 or sha512 digest")]
    Digest {
        /// The digest, escaped for printing.
        digest: String,
    },
    /// A token response holds no token, or one that cannot be sent in a header.
    #[error("the token response {0}")]
    Token(&'static str),
}

/// A content descriptor: what a manifest says about a blob or a manifest it points to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// The blob's media type.
    pub media_type: String,
    /// Its digest, `sha256:…` or `sha512:…`.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
    /// The artifact type of a manifest an index points to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// Its annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// An OCI image manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Always 2.
    pub schema_version: u32,
    /// [`MANIFEST_MEDIA_TYPE`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// What the artifact is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// The layer blobs.
    pub layers: Vec<Descriptor>,
    /// The manifest's annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// The manifest this one refers to (OCI 1.1): a signature's signed artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Descriptor>,
}

/// An OCI image index: manifests, each by descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Index {
    /// Always 2.
    pub schema_version: u32,
    /// [`INDEX_MEDIA_TYPE`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The manifests.
    pub manifests: Vec<Descriptor>,
}

/// What a document says it is, read before the rest.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Kind {
    #[serde(default)]
    media_type: Option<String>,
    #[serde(default)]
    manifests: Option<serde::de::IgnoredAny>,
}

/// A manifest or an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Document {
    /// An image manifest.
    Manifest(Box<Manifest>),
    /// An image index.
    Index(Index),
}

/// Parses an image manifest, checking the digests of its descriptors.
pub fn parse_manifest(bytes: &[u8]) -> Result<Manifest, DocumentError> {
    let manifest: Manifest = serde_json::from_slice(bytes).map_err(|e| DocumentError::Json {
        what: "an OCI image manifest",
        detail: crate::printable::escape(&e.to_string()).into_owned(),
    })?;
    for descriptor in std::iter::once(&manifest.config).chain(&manifest.layers) {
        check_digest(&descriptor.digest)?;
    }
    Ok(manifest)
}

/// Parses an image index, checking the digests of its descriptors.
pub fn parse_index(bytes: &[u8]) -> Result<Index, DocumentError> {
    let index: Index = serde_json::from_slice(bytes).map_err(|e| DocumentError::Json {
        what: "an OCI image index",
        detail: crate::printable::escape(&e.to_string()).into_owned(),
    })?;
    for descriptor in &index.manifests {
        check_digest(&descriptor.digest)?;
    }
    Ok(index)
}

/// Parses a manifest or an index, by its `mediaType` (or, without one, whether it lists
/// `manifests`).
pub fn parse_document(bytes: &[u8]) -> Result<Document, DocumentError> {
    let kind: Kind = serde_json::from_slice(bytes).map_err(|e| DocumentError::Json {
        what: "an OCI manifest or index",
        detail: crate::printable::escape(&e.to_string()).into_owned(),
    })?;
    let is_index = match kind.media_type.as_deref() {
        Some(INDEX_MEDIA_TYPE) => true,
        Some(_) => false,
        None => kind.manifests.is_some(),
    };
    if is_index {
        parse_index(bytes).map(Document::Index)
    } else {
        parse_manifest(bytes).map(|m| Document::Manifest(Box::new(m)))
    }
}

/// Parses a tag list, `{"name": …, "tags": […]}`; a `null` list is empty.
pub fn parse_tag_list(bytes: &[u8]) -> Result<Vec<String>, DocumentError> {
    #[derive(Deserialize)]
    struct TagList {
        #[serde(default)]
        tags: Option<Vec<String>>,
    }
    let list: TagList = serde_json::from_slice(bytes).map_err(|e| DocumentError::Json {
        what: "a tag list",
        detail: crate::printable::escape(&e.to_string()).into_owned(),
    })?;
    Ok(list.tags.unwrap_or_default())
}

/// Parses a token response, `{"token": …}` or `{"access_token": …}`, into the token, which must
/// be visible ASCII (it goes into an `Authorization` header).
pub fn parse_token(bytes: &[u8]) -> Result<String, DocumentError> {
    #[derive(Deserialize)]
    struct TokenResponse {
        #[serde(default)]
        token: Option<String>,
        #[serde(default)]
        access_token: Option<String>,
    }
    let response: TokenResponse =
        serde_json::from_slice(bytes).map_err(|e| DocumentError::Json {
            what: "a token response",
            detail: crate::printable::escape(&e.to_string()).into_owned(),
        })?;
    let token = response
        .token
        .filter(|t| !t.is_empty())
        .or(response.access_token.filter(|t| !t.is_empty()))
        .ok_or(DocumentError::Token(
            "holds neither a `token` nor an `access_token`",
        ))?;
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(DocumentError::Token(
            "holds a token with characters other than visible ASCII",
        ));
    }
    Ok(token)
}

fn check_digest(digest: &str) -> Result<(), DocumentError> {
    if super::reference::is_digest(digest) {
        Ok(())
    } else {
        Err(DocumentError::Digest {
            digest: crate::printable::escape(digest).into_owned(),
        })
    }
}

/// The `sha256:…` digest of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&sha2::Sha256::digest(bytes)))
}

/// The digest of `bytes` with the algorithm `like` names (`sha256:…` or `sha512:…`), or `None`
/// for another algorithm.
pub fn digest_like(like: &str, bytes: &[u8]) -> Option<String> {
    match like.split_once(':')?.0 {
        "sha256" => Some(sha256_digest(bytes)),
        "sha512" => Some(format!("sha512:{}", hex(&sha2::Sha512::digest(bytes)))),
        _ => None,
    }
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_and_a_manifest_are_told_apart() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let index = format!(
            r#"{{"schemaVersion": 2, "manifests": [{{"mediaType": "{MANIFEST_MEDIA_TYPE}", "digest": "{digest}", "size": 3}}]}}"#
        );
        assert!(matches!(
            parse_document(index.as_bytes()),
            Ok(Document::Index(_))
        ));
        let manifest = format!(
            r#"{{"schemaVersion": 2, "config": {{"mediaType": "x", "digest": "{digest}", "size": 3}}, "layers": []}}"#
        );
        assert!(matches!(
            parse_document(manifest.as_bytes()),
            Ok(Document::Manifest(_))
        ));
        let bad = manifest.replace(&digest, "sha256:../../x");
        assert!(parse_document(bad.as_bytes()).is_err());
    }

    #[test]
    fn a_token_is_token_or_access_token_and_header_safe() {
        assert_eq!(parse_token(br#"{"token": "abc"}"#).unwrap(), "abc");
        assert_eq!(
            parse_token(br#"{"token": "", "access_token": "def"}"#).unwrap(),
            "def"
        );
        assert!(parse_token(br#"{"token": "a\nb"}"#).is_err());
        assert!(parse_token(br#"{}"#).is_err());
    }

    #[test]
    fn a_null_tag_list_is_empty() {
        assert!(
            parse_tag_list(br#"{"name": "a", "tags": null}"#)
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            parse_tag_list(br#"{"name": "a", "tags": ["1.0.0"]}"#).unwrap(),
            ["1.0.0"]
        );
    }
}
