//! Provider bundles in OCI registries, as OCI artifacts (`opm provider push/pull`, `init` from
//! `oci://` sources): what an artifact is, the parsers of what a registry sends, and [`Fetch`],
//! what resolving an `oci://` source needs of a registry. The client that implements it, a
//! small one of the distribution API of opm's own so that opm decides how much of each response
//! it reads, is the crate `opm-registry`.
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

pub mod attached;
pub mod challenge;
pub mod documents;
pub mod limits;
pub mod reference;

use std::collections::BTreeMap;

pub use attached::Attached;
pub use challenge::{Challenge, parse_challenges};
pub use documents::{
    Descriptor, Document, DocumentError, INDEX_MEDIA_TYPE, Index, MANIFEST_MEDIA_TYPE, Manifest,
    parse_document, parse_index, parse_manifest, parse_tag_list, parse_token,
};
pub use reference::OciRef;

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
pub const TITLE_ANNOTATION: &str = "org.opencontainers.image.title";

/// What resolving an `oci://` provider source needs of a registry ([`super::installed`]): the
/// crate `opm-registry` implements it over HTTP, bounded as this module's doc says. Each error
/// names the reference and what the registry said, escaped.
pub trait Fetch: std::fmt::Debug + Send + Sync {
    /// The tags of `repository`.
    fn tags(&self, repository: &OciRef) -> anyhow::Result<Vec<String>>;
    /// The annotations of the manifest `source` resolves to.
    fn annotations(&self, source: &OciRef) -> anyhow::Result<BTreeMap<String, String>>;
    /// The artifact `source` resolves to, its bundle at most `max_bundle` bytes.
    fn pull(&self, source: &OciRef, max_bundle: u64) -> anyhow::Result<Pulled>;
    /// The signatures attached to the manifest `digest` of `repository` ([`attached`]).
    fn attached(&self, repository: &OciRef, digest: &str) -> anyhow::Result<Vec<Attached>>;
}

/// A pulled artifact.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The manifest digest the reference resolved to.
    pub manifest_digest: String,
    /// The manifest's bytes, as checked against its digest.
    pub manifest: Vec<u8>,
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
