//! Provider bundles in OCI registries, as OCI artifacts (`opm provider push/pull`, `init` from
//! `oci://` sources), with the ORAS project's `oci-client`.
//!
//! An artifact is one image manifest whose `artifactType` is [`ARTIFACT_TYPE`] and whose config
//! (media type [`CONFIG_MEDIA_TYPE`]) is the provider's name and version as JSON; its first layer
//! ([`BUNDLE_MEDIA_TYPE`]) is the bundle file, and a second ([`SIGNATURE_MEDIA_TYPE`]) its
//! minisign signature when it has one. Annotations name the provider, its version and its bundle
//! digest (`org.opencontainers.image.title`/`version` too), so tools that track image updates
//! track providers.
//!
//! Pulling resolves a tag to a manifest digest once, fetches the manifest by that digest and
//! checks its bytes hash to it, then fetches every blob by digest (oci-client checks each) with
//! its size bounded before it is read. Plain HTTP is used only for loopback registries unless
//! the caller allows it; credentials come from the Docker config file when it has some, and are
//! never printed.

use std::collections::BTreeMap;

use anyhow::{Context as _, bail};
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use sha2::Digest as _;

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
/// The most a manifest may weigh.
const MAX_MANIFEST: usize = 1 << 20;

/// An `oci://host[:port]/repository[:tag|@digest]` reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciRef {
    /// What oci-client takes.
    pub reference: Reference,
}

impl OciRef {
    /// Parses `text`, which must start with `oci://`.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let rest = text
            .strip_prefix("oci://")
            .with_context(|| format!("{text:?} is not an oci:// reference"))?;
        if !rest.contains('/') {
            bail!(
                "{text:?} names no repository: expected oci://host[:port]/repository[:tag|@digest]"
            );
        }
        let reference: Reference = rest
            .parse()
            .with_context(|| format!("{text:?} is not an OCI reference"))?;
        Ok(Self { reference })
    }

    /// This reference with `tag` instead of any tag or digest it has.
    pub fn with_tag(&self, tag: &str) -> Self {
        Self {
            reference: Reference::with_tag(
                self.reference.registry().to_owned(),
                self.reference.repository().to_owned(),
                tag.to_owned(),
            ),
        }
    }

    /// Whether it names a tag or digest, or only a repository (oci-client fills in `latest`).
    pub fn names_version(text: &str) -> bool {
        let rest = text.strip_prefix("oci://").unwrap_or(text);
        let path = rest.split_once('/').map_or("", |(_, path)| path);
        path.contains('@') || path.contains(':')
    }
}

impl std::fmt::Display for OciRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "oci://{}", self.reference.whole())
    }
}

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
    /// The manifest's annotations.
    pub annotations: BTreeMap<String, String>,
}

/// What a push stored.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// The manifest's digest.
    pub manifest_digest: String,
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the network runtime")
}

fn client(reference: &Reference, options: &Options) -> anyhow::Result<Client> {
    let registry = reference.resolve_registry().to_owned();
    let host = registry
        .rsplit_once(':')
        .map_or(registry.as_str(), |(host, _)| host);
    let loopback = host == "localhost"
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    let protocol = if loopback || options.insecure_http {
        ClientProtocol::HttpsExcept(vec![registry])
    } else {
        ClientProtocol::Https
    };
    // rustls without a default provider: ring, installed once per process.
    let _ = rustls::crypto::ring::default_provider().install_default();
    Client::try_from(ClientConfig {
        protocol,
        ..ClientConfig::default()
    })
    .map_err(|e| anyhow::anyhow!("cannot set up the registry client: {e}"))
}

/// Credentials for `registry` from the Docker config file (`auths.REGISTRY.auth`, base64 of
/// `user:password`), else anonymous.
fn auth(registry: &str, options: &Options) -> RegistryAuth {
    let path = options.docker_config.clone().or_else(|| {
        std::env::var_os("DOCKER_CONFIG")
            .map(|dir| std::path::PathBuf::from(dir).join("config.json"))
            .or_else(|| {
                std::env::var_os("HOME")
                    .map(|home| std::path::PathBuf::from(home).join(".docker/config.json"))
            })
    });
    let credentials = path
        .and_then(|path| std::fs::read_to_string(path).ok())
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|config| {
            let auths = config.get("auths")?.as_object()?;
            let entry = auths.iter().find(|(key, _)| {
                let key = key
                    .trim_start_matches("https://")
                    .trim_start_matches("http://");
                key.trim_end_matches('/') == registry
            })?;
            let encoded = entry.1.get("auth")?.as_str()?;
            use base64::Engine as _;
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            let text = String::from_utf8(decoded).ok()?;
            let (user, password) = text.split_once(':')?;
            Some((user.to_owned(), password.to_owned()))
        });
    match credentials {
        Some((user, password)) => RegistryAuth::Basic(user, password),
        None => RegistryAuth::Anonymous,
    }
}

/// Pushes the bundle `bundle` (of provider `name` `version`, digest `digest`) and its
/// `signature`, if any, to `target`.
pub fn push(
    target: &OciRef,
    bundle: &[u8],
    signature: Option<&[u8]>,
    (name, version, digest): (&str, &str, &str),
    options: &Options,
) -> anyhow::Result<Pushed> {
    let reference = &target.reference;
    let client = client(reference, options)?;
    let auth = auth(reference.resolve_registry(), options);
    let annotations = BTreeMap::from([
        (NAME_ANNOTATION.to_owned(), name.to_owned()),
        (VERSION_ANNOTATION.to_owned(), version.to_owned()),
        (DIGEST_ANNOTATION.to_owned(), digest.to_owned()),
        ("org.opencontainers.image.title".to_owned(), name.to_owned()),
        (
            "org.opencontainers.image.version".to_owned(),
            version.to_owned(),
        ),
    ]);
    let mut layers = vec![ImageLayer::new(
        bundle.to_vec(),
        BUNDLE_MEDIA_TYPE.to_owned(),
        Some(BTreeMap::from([(
            "org.opencontainers.image.title".to_owned(),
            format!("{name}-{version}.{}", crate::bundle::format::EXTENSION),
        )])),
    )];
    if let Some(signature) = signature {
        layers.push(ImageLayer::new(
            signature.to_vec(),
            SIGNATURE_MEDIA_TYPE.to_owned(),
            Some(BTreeMap::from([(
                "org.opencontainers.image.title".to_owned(),
                format!(
                    "{name}-{version}.{}.minisig",
                    crate::bundle::format::EXTENSION
                ),
            )])),
        ));
    }
    let config_json = serde_json::to_vec(
        &serde_json::json!({"name": name, "version": version, "digest": digest}),
    )?;
    let config = Config::new(config_json, CONFIG_MEDIA_TYPE.to_owned(), None);
    let mut manifest = OciImageManifest::build(&layers, &config, Some(annotations));
    manifest.artifact_type = Some(ARTIFACT_TYPE.to_owned());
    let runtime = runtime()?;
    runtime
        .block_on(client.push(reference, &layers, config, &auth, Some(manifest.clone())))
        .with_context(|| format!("pushing to {target}"))?;
    let (_, manifest_digest) = runtime
        .block_on(client.pull_manifest_raw(
            reference,
            &auth,
            &[oci_client::manifest::OCI_IMAGE_MEDIA_TYPE],
        ))
        .with_context(|| format!("reading back the manifest pushed to {target}"))?;
    Ok(Pushed { manifest_digest })
}

/// The tags of `repository` (its tag or digest is ignored).
pub fn tags(repository: &OciRef, options: &Options) -> anyhow::Result<Vec<String>> {
    let reference = &repository.reference;
    let client = client(reference, options)?;
    let auth = auth(reference.resolve_registry(), options);
    let runtime = runtime()?;
    let response = runtime
        .block_on(client.list_tags(reference, &auth, None, None))
        .with_context(|| format!("listing the tags of {repository}"))?;
    Ok(response.tags)
}

/// The annotations of the provider artifact `source`, from its manifest alone.
pub fn annotations(source: &OciRef, options: &Options) -> anyhow::Result<BTreeMap<String, String>> {
    let client = client(&source.reference, options)?;
    let auth = auth(source.reference.resolve_registry(), options);
    let runtime = runtime()?;
    let (_, manifest) = manifest(&runtime, &client, &auth, source)?;
    Ok(manifest.annotations.unwrap_or_default())
}

/// The manifest of the provider artifact `source`: its tag resolved to a digest once, the
/// manifest fetched by that digest, its bytes checked against it, its type checked.
fn manifest(
    runtime: &tokio::runtime::Runtime,
    client: &Client,
    auth: &RegistryAuth,
    source: &OciRef,
) -> anyhow::Result<(String, OciImageManifest)> {
    let reference = &source.reference;
    let accepted = [oci_client::manifest::OCI_IMAGE_MEDIA_TYPE];
    let manifest_digest = match reference.digest() {
        Some(digest) => digest.to_owned(),
        None => runtime
            .block_on(client.fetch_manifest_digest(reference, auth))
            .with_context(|| format!("resolving {source}"))?,
    };
    let by_digest = reference.clone_with_digest(manifest_digest.clone());
    let (raw, _) = runtime
        .block_on(client.pull_manifest_raw(&by_digest, auth, &accepted))
        .with_context(|| format!("fetching the manifest {manifest_digest} of {source}"))?;
    if raw.len() > MAX_MANIFEST {
        bail!(
            "{source}: its manifest is {} bytes, more than a provider's ever is",
            raw.len()
        );
    }
    let hash = sha2::Sha256::digest(&raw);
    let hex: String = hash.iter().map(|byte| format!("{byte:02x}")).collect();
    let actual = format!("sha256:{hex}");
    if actual != manifest_digest {
        bail!(
            "{source}: the registry served a manifest whose digest is {actual}, not \
             {manifest_digest}: refused"
        );
    }
    let manifest: OciImageManifest = serde_json::from_slice(&raw)
        .with_context(|| format!("{source}: its manifest is not an OCI image manifest"))?;
    if manifest.artifact_type.as_deref() != Some(ARTIFACT_TYPE)
        && manifest.config.media_type != CONFIG_MEDIA_TYPE
    {
        bail!(
            "{source} is not an opm provider (its artifactType is {}, not {ARTIFACT_TYPE})",
            manifest.artifact_type.as_deref().unwrap_or("missing")
        );
    }
    Ok((manifest_digest, manifest))
}

/// Pulls the provider artifact `source`: its tag resolved to a digest once, then everything by
/// digest and checked. `max_bundle` bounds the bundle layer.
pub fn pull(source: &OciRef, options: &Options, max_bundle: u64) -> anyhow::Result<Pulled> {
    let client = client(&source.reference, options)?;
    let auth = auth(source.reference.resolve_registry(), options);
    let runtime = runtime()?;
    let (manifest_digest, manifest) = manifest(&runtime, &client, &auth, source)?;
    let by_digest = source.reference.clone_with_digest(manifest_digest.clone());
    let layer = |media_type: &str| manifest.layers.iter().find(|l| l.media_type == media_type);
    let bundle_layer = layer(BUNDLE_MEDIA_TYPE)
        .with_context(|| format!("{source}: the artifact has no {BUNDLE_MEDIA_TYPE} layer"))?;
    let bundle = fetch(
        &runtime,
        &client,
        &by_digest,
        bundle_layer,
        max_bundle,
        source,
    )?;
    let signature = layer(SIGNATURE_MEDIA_TYPE)
        .map(|l| fetch(&runtime, &client, &by_digest, l, 64 * 1024, source))
        .transpose()?;
    Ok(Pulled {
        manifest_digest,
        bundle,
        signature,
        annotations: manifest.annotations.unwrap_or_default(),
    })
}

/// Fetches the blob `layer` describes, refusing one that declares or delivers more than `max`
/// bytes; oci-client checks the bytes against the descriptor's digest.
fn fetch(
    runtime: &tokio::runtime::Runtime,
    client: &Client,
    reference: &Reference,
    layer: &OciDescriptor,
    max: u64,
    source: &OciRef,
) -> anyhow::Result<Vec<u8>> {
    let declared = u64::try_from(layer.size).unwrap_or(u64::MAX);
    if declared > max {
        bail!(
            "{source}: its {} layer declares {declared} bytes, over the limit of {max}",
            layer.media_type
        );
    }
    let mut out = BoundedWriter {
        bytes: Vec::new(),
        max: declared,
    };
    runtime
        .block_on(client.pull_blob(reference, layer, &mut out))
        .with_context(|| {
            format!(
                "{source}: fetching its {} layer {} (a registry that serves other bytes than \
                 the digest names is refused)",
                layer.media_type, layer.digest
            )
        })?;
    Ok(out.bytes)
}

/// Collects at most `max` bytes; more is an error.
struct BoundedWriter {
    bytes: Vec<u8>,
    max: u64,
}

impl tokio::io::AsyncWrite for BoundedWriter {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if self.bytes.len() as u64 + buf.len() as u64 > self.max {
            return std::task::Poll::Ready(Err(std::io::Error::other(
                "the registry sent more bytes than the descriptor declares",
            )));
        }
        self.bytes.extend_from_slice(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}
