//! Pushing and pulling provider artifacts through the registry client: see `opm_core`'s
//! `provider::oci` for how an artifact is laid out and what is checked.

use std::collections::BTreeMap;

use anyhow::{Context as _, bail};

use crate::client::{self, Client};
use opm_core::provider::oci::{
    ARTIFACT_TYPE, BUNDLE_MEDIA_TYPE, CONFIG_MEDIA_TYPE, DIGEST_ANNOTATION, Descriptor, Document,
    MANIFEST_MEDIA_TYPE, Manifest, NAME_ANNOTATION, OciRef, Pulled, Pushed, SIGNATURE_MEDIA_TYPE,
    TITLE_ANNOTATION, VERSION_ANNOTATION, documents, limits, parse_document, parse_manifest,
};

use crate::{Options, credentials};
use opm_core::printable::escape;

/// Runs `work` against a client for `reference`'s repository on a single-threaded runtime.
pub(crate) fn with_client<T>(
    reference: &OciRef,
    options: &Options,
    work: impl AsyncFnOnce(&mut Client) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the network runtime")?;
    let credentials =
        credentials::for_registry(reference.api_host(), options.docker_config.clone());
    let mut client = Client::new(reference, options.insecure_http, credentials)?;
    runtime.block_on(work(&mut client))
}

/// Pushes the bundle `bundle` (of provider `name` `version`, digest `digest`) and its
/// `signature`, if any, to `target`, which must name a tag.
pub fn push(
    target: &OciRef,
    bundle: &[u8],
    signature: Option<&[u8]>,
    (name, version, digest): (&str, &str, &str),
    options: &Options,
) -> anyhow::Result<Pushed> {
    let file = format!("{name}-{version}.{}", opm_core::bundle::format::EXTENSION);
    let mut blobs = vec![(BUNDLE_MEDIA_TYPE, bundle.to_vec(), file.clone())];
    if let Some(signature) = signature {
        blobs.push((
            SIGNATURE_MEDIA_TYPE,
            signature.to_vec(),
            format!("{file}.minisig"),
        ));
    }
    let config = serde_json::to_vec(
        &serde_json::json!({"name": name, "version": version, "digest": digest}),
    )?;
    let annotations = BTreeMap::from([
        (NAME_ANNOTATION.to_owned(), name.to_owned()),
        (VERSION_ANNOTATION.to_owned(), version.to_owned()),
        (DIGEST_ANNOTATION.to_owned(), digest.to_owned()),
        (TITLE_ANNOTATION.to_owned(), name.to_owned()),
        (
            "org.opencontainers.image.version".to_owned(),
            version.to_owned(),
        ),
    ]);
    let descriptor = |media_type: &str, bytes: &[u8], annotations| Descriptor {
        media_type: media_type.to_owned(),
        size: bytes.len() as u64,
        digest: documents::sha256_digest(bytes),
        artifact_type: None,
        annotations,
    };
    let manifest = serde_json::to_vec(&Manifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.to_owned()),
        artifact_type: Some(ARTIFACT_TYPE.to_owned()),
        config: descriptor(CONFIG_MEDIA_TYPE, &config, None),
        layers: blobs
            .iter()
            .map(|(media_type, bytes, file)| {
                descriptor(
                    media_type,
                    bytes,
                    Some(BTreeMap::from([(
                        TITLE_ANNOTATION.to_owned(),
                        file.clone(),
                    )])),
                )
            })
            .collect(),
        annotations: Some(annotations),
        subject: None,
    })?;
    let mut named = vec![("the config blob".to_owned(), config)];
    named.extend(
        blobs
            .into_iter()
            .map(|(media_type, bytes, _)| (format!("the {media_type} layer"), bytes)),
    );
    push_artifact(target, named, manifest, options)
}

/// Pushes an artifact whose manifest is made already: each of `blobs` (what it is, for
/// messages, and its bytes; one the registry has is not sent again), then `manifest` under
/// `target`'s tag. The registry client of `opm provider push` and `opm mod push` alike.
pub fn push_artifact(
    target: &OciRef,
    blobs: Vec<(String, Vec<u8>)>,
    manifest: Vec<u8>,
    options: &Options,
) -> anyhow::Result<Pushed> {
    let (Some(tag), None) = (target.tag(), target.digest()) else {
        bail!("{target}: push to a tag, not a digest");
    };
    with_client(target, options, async |client| {
        for (what, bytes) in blobs {
            client.push_blob(&what, bytes).await?;
        }
        let manifest_digest = documents::sha256_digest(&manifest);
        client.push_manifest(tag, manifest).await?;
        Ok(Pushed { manifest_digest })
    })
    .with_context(|| format!("pushing to {target}"))
}

/// The tags of `repository` (its tag or digest is ignored), as the registry wrote them: escape
/// them before printing.
pub fn tags(repository: &OciRef, options: &Options) -> anyhow::Result<Vec<String>> {
    with_client(repository, options, async |client| {
        Ok(client.tags().await?)
    })
    .with_context(|| format!("listing the tags of {repository}"))
}

/// The annotations of the provider artifact `source`, from its manifest alone, as the
/// registry wrote them: escape them before printing.
pub fn annotations(source: &OciRef, options: &Options) -> anyhow::Result<BTreeMap<String, String>> {
    with_client(source, options, async |client| {
        let (_, manifest, _) = manifest(client, source).await?;
        Ok(manifest.annotations.unwrap_or_default())
    })
}

/// The manifest of the provider artifact `source`: its tag resolved to a digest once, the
/// manifest fetched by that digest, its bytes checked against it, its type checked. A digest
/// that names an index is followed to the one provider manifest it lists.
async fn manifest(
    client: &mut Client,
    source: &OciRef,
) -> anyhow::Result<(String, Manifest, Vec<u8>)> {
    let (manifest_digest, raw) = resolved(client, source).await?;
    let (manifest, raw) = match parse_document(&raw)
        .with_context(|| format!("{source}: its manifest {manifest_digest}"))?
    {
        Document::Manifest(manifest) => (*manifest, raw),
        Document::Index(index) => {
            let ours: Vec<&Descriptor> = index
                .manifests
                .iter()
                .filter(|d| d.artifact_type.as_deref() == Some(ARTIFACT_TYPE))
                .collect();
            let [one] = ours.as_slice() else {
                bail!(
                    "{source} is an image index listing {} manifests of artifactType \
                     {ARTIFACT_TYPE}, not one",
                    ours.len()
                );
            };
            let raw = by_digest(client, &one.digest, source).await?;
            let manifest = parse_manifest(&raw).with_context(|| {
                format!("{source}: the manifest {} its index lists", one.digest)
            })?;
            (manifest, raw)
        }
    };
    if manifest.artifact_type.as_deref() != Some(ARTIFACT_TYPE)
        && manifest.config.media_type != CONFIG_MEDIA_TYPE
    {
        bail!(
            "{source} is not an opm provider (its artifactType is {}, not {ARTIFACT_TYPE})",
            escape(manifest.artifact_type.as_deref().unwrap_or("missing"))
        );
    }
    Ok((manifest_digest, manifest, raw))
}

/// The digest `source` names (its tag resolved once) and the document it names, its bytes
/// checked against that digest.
async fn resolved(client: &mut Client, source: &OciRef) -> anyhow::Result<(String, Vec<u8>)> {
    let (digest, resolved) = match (source.digest(), source.tag()) {
        (Some(digest), _) => (digest.to_owned(), None),
        (None, Some(tag)) => client
            .resolve(tag)
            .await
            .with_context(|| format!("resolving {source}"))?,
        (None, None) => bail!("{source} names neither a tag nor a digest"),
    };
    let raw = match resolved {
        Some(raw) => raw,
        None => by_digest(client, &digest, source).await?,
    };
    Ok((digest, raw))
}

/// The manifest `digest` of `source`, its bytes checked against it.
async fn by_digest(client: &mut Client, digest: &str, source: &OciRef) -> anyhow::Result<Vec<u8>> {
    let raw = client
        .manifest(digest)
        .await
        .with_context(|| format!("fetching the manifest {digest} of {source}"))?;
    client::check_digest("the manifest", digest, &raw)
        .with_context(|| format!("{source}: its manifest"))?;
    Ok(raw)
}

/// Pulls the provider artifact `source`: its tag resolved to a digest once, then everything by
/// digest and checked. `max_bundle` bounds the bundle layer.
pub fn pull(source: &OciRef, options: &Options, max_bundle: u64) -> anyhow::Result<Pulled> {
    with_client(source, options, async |client| {
        let (manifest_digest, manifest, raw) = manifest(client, source).await?;
        let layer = |media_type: &str| manifest.layers.iter().find(|l| l.media_type == media_type);
        let bundle_layer = layer(BUNDLE_MEDIA_TYPE)
            .with_context(|| format!("{source}: the artifact has no {BUNDLE_MEDIA_TYPE} layer"))?;
        let bundle = fetch(client, bundle_layer, max_bundle, source).await?;
        let signature = match layer(SIGNATURE_MEDIA_TYPE) {
            Some(l) => Some(fetch(client, l, limits::MAX_SIGNATURE_BYTES, source).await?),
            None => None,
        };
        Ok(Pulled {
            manifest_digest,
            manifest: raw,
            bundle,
            signature,
            annotations: manifest.annotations.unwrap_or_default(),
        })
    })
}

/// Fetches the blob `layer` describes, refusing one that declares more than `max` bytes or
/// delivers other bytes than it declares.
async fn fetch(
    client: &mut Client,
    layer: &Descriptor,
    max: u64,
    source: &OciRef,
) -> anyhow::Result<Vec<u8>> {
    let what = format!("its {} layer {}", layer.media_type, layer.digest);
    if layer.size > max {
        bail!(
            "{source}: {what} declares {} bytes, over the limit of {max}",
            layer.size
        );
    }
    client
        .blob(&what, &layer.digest, layer.size)
        .await
        .with_context(|| {
            format!(
                "{source}: fetching {what} (a registry that serves other bytes than the digest \
                 names is refused)"
            )
        })
}

/// A pushed render (`opm mod push`): the digest of the manifest `source` resolves to, and its
/// layer, at most `max_layer` bytes.
pub fn pull_render(
    source: &OciRef,
    options: &Options,
    max_layer: u64,
) -> anyhow::Result<(String, Vec<u8>)> {
    use opm_core::render::artifact::LAYER_MEDIA_TYPE;
    with_client(source, options, async |client| {
        let (digest, raw) = resolved(client, source).await?;
        let manifest = parse_manifest(&raw).with_context(|| {
            format!("{source}: its manifest {digest} (a render is one manifest)")
        })?;
        let layer = manifest
            .layers
            .iter()
            .find(|l| l.media_type == LAYER_MEDIA_TYPE)
            .with_context(|| format!("{source}: the artifact has no {LAYER_MEDIA_TYPE} layer"))?;
        let bytes = fetch(client, layer, max_layer, source).await?;
        Ok((digest, bytes))
    })
}
