//! Signatures beside artifacts in a registry: attaching a Sigstore bundle as a referrer (with
//! the tag schema where the registry has no referrers API), and finding every signature of a
//! manifest. What the documents are is `opm_core::provider::oci::attached`'s.

use anyhow::Context as _;

use crate::Options;
use crate::client::{self, Client};
use crate::transfer::with_client;
use opm_core::provider::oci::OciRef;
use opm_core::provider::oci::attached::{
    self, Attached, COSIGN_SIGNATURE_ANNOTATION, EMPTY, MAX_REFERRERS, SIMPLE_SIGNING_MEDIA_TYPE,
};
use opm_core::provider::oci::documents::{
    self, Descriptor, INDEX_MEDIA_TYPE, MANIFEST_MEDIA_TYPE, parse_index, parse_manifest,
};
use opm_core::provider::oci::limits::MAX_SIGNATURE_BYTES;
use opm_sigstore::{BUNDLE_MEDIA_TYPE, MAX_BUNDLE_BYTES};

/// How a signature was attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// The referrer manifest's digest.
    pub digest: String,
    /// Where it is listed: the referrers API, or the tag-schema tag.
    pub listed: String,
}

/// Attaches the Sigstore `bundle` to the manifest `subject` (digest) of `repository`: its blobs,
/// the referrer manifest by digest, and — where the registry has no referrers API — the
/// `sha256-HEX` index, which keeps every referrer it listed and lists this one once.
pub fn attach(
    repository: &OciRef,
    subject: &str,
    bundle: &[u8],
    options: &Options,
) -> anyhow::Result<Attachment> {
    with_client(repository, options, async |client| {
        let subject_bytes = client
            .manifest(subject)
            .await
            .with_context(|| format!("fetching the signed manifest {subject}"))?;
        client::check_digest("the signed manifest", subject, &subject_bytes)?;
        let subject_descriptor = Descriptor {
            media_type: subject_media_type(&subject_bytes),
            digest: subject.to_owned(),
            size: subject_bytes.len() as u64,
            artifact_type: None,
            annotations: None,
        };
        let manifest = attached::referrer(subject_descriptor, bundle);
        client.push_blob("the empty config", EMPTY.to_vec()).await?;
        client
            .push_blob("the signature bundle", bundle.to_vec())
            .await?;
        let digest = documents::sha256_digest(&manifest);
        client
            .push_document(&digest, MANIFEST_MEDIA_TYPE, manifest.clone())
            .await?;
        if client.referrers(subject).await?.is_some() {
            return Ok(Attachment {
                digest,
                listed: "the registry's referrers API".to_owned(),
            });
        }
        let tag = attached::fallback_tag(subject);
        let existing = client.manifest_if_any(&tag).await?;
        if let Some(index) = attached::add_to_index(existing.as_deref(), &manifest)
            .with_context(|| format!("the referrers index {tag}"))?
        {
            client.push_document(&tag, INDEX_MEDIA_TYPE, index).await?;
        }
        Ok(Attachment {
            digest,
            listed: format!("the referrers tag {tag}"),
        })
    })
    .with_context(|| format!("attaching a signature to {repository}@{subject}"))
}

/// The media type a manifest states, an image manifest's when it states none.
fn subject_media_type(bytes: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|v| v.get("mediaType")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| MANIFEST_MEDIA_TYPE.to_owned())
}

/// Every signature attached to the manifest `subject` of `repository`: the Sigstore bundles its
/// referrers hold (by the API, else the tag schema) and a cosign v2 `.sig` tag's signatures.
pub fn find(
    repository: &OciRef,
    subject: &str,
    options: &Options,
) -> anyhow::Result<Vec<Attached>> {
    let base = format!(
        "oci://{}/{}",
        repository.registry(),
        repository.repository()
    );
    with_client(repository, options, async |client| {
        let mut found = Vec::new();
        let index = match client.referrers(subject).await? {
            Some(index) => Some(index),
            None => {
                client
                    .manifest_if_any(&attached::fallback_tag(subject))
                    .await?
            }
        };
        if let Some(index) = index {
            let index = parse_index(&index).context("the referrers index")?;
            let bundles = index
                .manifests
                .iter()
                .filter(|d| d.artifact_type.as_deref() == Some(BUNDLE_MEDIA_TYPE))
                .take(MAX_REFERRERS);
            for referrer in bundles {
                let origin = format!("{base}@{} (a referrer)", referrer.digest);
                // One referrer that cannot be read is a reason, not the end of the others.
                match referred(client, referrer, subject).await {
                    Ok(Some(bytes)) => found.push(Attached::Bundle { origin, bytes }),
                    Ok(None) => {}
                    Err(e) => found.push(Attached::Unreadable {
                        origin,
                        reason: format!("{e:#}"),
                    }),
                }
            }
        }
        let tag = attached::cosign_tag(subject);
        if let Some(raw) = client.manifest_if_any(&tag).await? {
            let manifest = parse_manifest(&raw).with_context(|| format!("the manifest {tag}"))?;
            for layer in manifest
                .layers
                .iter()
                .filter(|l| l.media_type == SIMPLE_SIGNING_MEDIA_TYPE)
                .take(MAX_REFERRERS)
            {
                let Some(signature) = layer
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(COSIGN_SIGNATURE_ANNOTATION))
                else {
                    continue;
                };
                if layer.size > MAX_SIGNATURE_BYTES {
                    continue;
                }
                let origin = format!("{base}:{tag}");
                match client
                    .blob("a cosign signature payload", &layer.digest, layer.size)
                    .await
                {
                    Ok(payload) => found.push(Attached::SimpleSigning {
                        origin,
                        payload,
                        signature: signature.clone(),
                    }),
                    Err(e) => found.push(Attached::Unreadable {
                        origin,
                        reason: format!("{e:#}"),
                    }),
                }
            }
        }
        Ok(found)
    })
    .with_context(|| format!("finding the signatures of {repository}@{subject}"))
}

/// The bundle the referrer `descriptor` holds, if it is a Sigstore bundle of `subject`.
async fn referred(
    client: &mut Client,
    descriptor: &Descriptor,
    subject: &str,
) -> anyhow::Result<Option<Vec<u8>>> {
    let raw = client.manifest(&descriptor.digest).await?;
    client::check_digest("a referrer", &descriptor.digest, &raw)?;
    let manifest = parse_manifest(&raw)?;
    if manifest.subject.as_ref().map(|s| s.digest.as_str()) != Some(subject) {
        return Ok(None);
    }
    let Some(layer) = manifest
        .layers
        .iter()
        .find(|l| l.media_type == BUNDLE_MEDIA_TYPE)
    else {
        return Ok(None);
    };
    if layer.size > MAX_BUNDLE_BYTES {
        return Ok(None);
    }
    Ok(Some(
        client
            .blob("a signature bundle", &layer.digest, layer.size)
            .await?,
    ))
}
