//! Provider bundles in OCI registries, as OCI artifacts (`opm provider push/pull`, `init` from
//! `oci://` sources), through a small client of the distribution API of opm's own
//! ([`client`]), so that opm decides how much of each response it reads.
//!
//! An artifact is one image manifest whose `artifactType` is [`ARTIFACT_TYPE`] and whose config
//! (media type [`CONFIG_MEDIA_TYPE`]) is the provider's name and version as JSON; its first layer
//! ([`BUNDLE_MEDIA_TYPE`]) is the bundle file, and a second ([`SIGNATURE_MEDIA_TYPE`]) its
//! minisign signature when it has one. Annotations name the provider, its version and its bundle
//! digest (`org.opencontainers.image.title`/`version` too), so tools that track image updates
//! track providers. A tag may also name an image index listing exactly one such manifest.
//!
//! Pulling resolves a tag to a manifest digest once (`HEAD`, else the digest of what `GET`
//! returns), fetches the manifest by that digest and checks its bytes hash to it, then fetches
//! every blob by digest, its size bounded before it is read and its bytes checked against the
//! digest. A registry is untrusted: every response is read chunk by chunk up to a limit
//! ([`limits`]: manifests and tag lists 1 MiB, tokens 64 KiB, blobs their declared size, the
//! first 4 KiB of an error), every request has a deadline, and everything it wrote is escaped
//! before it is printed ([`crate::printable`]). Plain HTTP is used only for loopback registries
//! unless the caller allows it; credentials come from the Docker config file when it has some,
//! and are never printed.
//!
//! The parsers of what a registry sends — [`parse_document`], [`parse_manifest`],
//! [`parse_index`], [`parse_tag_list`], [`parse_token`], [`parse_challenges`] — are public for
//! the `registry` fuzz target.

mod challenge;
#[cfg(feature = "registry")]
mod client;
#[cfg(feature = "registry")]
mod credentials;
mod documents;
#[cfg(feature = "registry")]
mod error;
pub mod limits;
mod reference;
// The network half: push, pull, tags and annotations, through the client. Without the
// `registry` feature (the fuzz targets' build) each says so instead.
#[cfg(feature = "registry")]
mod transfer;
#[cfg(not(feature = "registry"))]
#[path = "without_registry.rs"]
mod transfer;

use std::collections::BTreeMap;

pub use challenge::{Challenge, parse_challenges};
pub use documents::{
    Descriptor, Document, DocumentError, INDEX_MEDIA_TYPE, Index, MANIFEST_MEDIA_TYPE, Manifest,
    parse_document, parse_index, parse_manifest, parse_tag_list, parse_token,
};
#[cfg(feature = "registry")]
pub use error::RegistryError;
pub use reference::OciRef;
#[cfg(feature = "registry")]
pub use transfer::push;
pub use transfer::{annotations, pull, tags};

/// The `artifactType` of a provider bundle artifact.
pub const ARTIFACT_TYPE: &str = "application/vnd.opmodel.provider.v1";
/// The media type of its config blob.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.opmodel.provider.config.v1+json";
/// The media type of the layer holding the bundle file.
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.opmodel.provider.bundle.v1.tar";
/// The media type of the layer holding the bundle's minisign signature.
pub const SIGNATURE_MEDIA_TYPE: &str = "application/vnd.opmodel.provider.signature.v1.minisig";
/// Annotation: the provider's name.
pub const NAME_ANNOTATION: &str = "dev.opmodel.provider.name";
/// Annotation: the provider's version.
pub const VERSION_ANNOTATION: &str = "dev.opmodel.provider.version";
/// Annotation: the bundle digest.
pub const DIGEST_ANNOTATION: &str = "dev.opmodel.provider.digest";
/// The annotation of a layer's file name.
#[cfg(feature = "registry")]
pub(crate) const TITLE_ANNOTATION: &str = "org.opencontainers.image.title";

/// How to reach registries.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Allow plain HTTP to registries that are not on loopback.
    pub insecure_http: bool,
    /// The Docker config file to read credentials from (default `$DOCKER_CONFIG/config.json`,
    /// else `~/.docker/config.json`).
    pub docker_config: Option<std::path::PathBuf>,
}

/// A pulled artifact.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The manifest digest the reference resolved to.
    pub manifest_digest: String,
    /// The bundle file's bytes.
    pub bundle: Vec<u8>,
    /// Its signature file's text, if the artifact has one.
    pub signature: Option<Vec<u8>>,
    /// The manifest's annotations, as the registry sent them: escape them before printing.
    pub annotations: BTreeMap<String, String>,
}

/// What a push stored.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// The manifest's digest.
    pub manifest_digest: String,
}
