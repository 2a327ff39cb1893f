//! Where providers come from: a bundle file, a directory registry `DIR/NAME/VERSION/`, or an
//! OCI repository; which versions each offers, fetching one, and writing it where it is
//! installed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{InstallError, Project, Requirement, provider_error};
use crate::bundle::{self, signature};
use crate::provider::ProviderError;
use crate::provider::oci::Fetch;

/// Where a provider is looked for.
#[derive(Debug, Clone)]
pub enum Source {
    /// A bundle file, or a directory registry `DIR/NAME/VERSION/NAME-VERSION.opmb`.
    Path(PathBuf),
    /// An OCI repository, or one tag or digest of it.
    Oci {
        /// The reference (one written without a tag or digest names the tag `latest`).
        reference: crate::provider::oci::OciRef,
        /// Whether the reference as written names a tag or digest: then it is the one version
        /// on offer; else every version tag of the repository is.
        pinned: bool,
    },
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Path(path) => write!(f, "{}", path.display()),
            Self::Oci { reference, .. } => write!(f, "{reference}"),
        }
    }
}

/// Where one version of a provider is.
#[derive(Debug, Clone)]
pub enum Offer {
    /// A bundle file (its `.minisig` beside it).
    File(PathBuf),
    /// An OCI artifact.
    Oci(crate::provider::oci::OciRef),
}

/// A fetched bundle.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Where it came from, for messages and the lock.
    pub origin: String,
    /// The bundle file's bytes.
    pub bytes: Vec<u8>,
    /// Its signatures.
    pub evidence: super::Evidence,
    /// The OCI manifest digest it was fetched by, for an OCI artifact.
    pub oci_digest: Option<String>,
}

/// The source of `requirement`: its `source` (a path relative to `.opm/`, where
/// `providers.yaml` is, or `oci://…`), or `$OPM_REGISTRY` (a directory registry, or an `oci://` base under which the
/// provider is the repository `NAME`).
pub fn source_of(
    project: &Project,
    requirement: &Requirement,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Source, InstallError> {
    let name = &requirement.name;
    let (text, from, base) = match &requirement.source {
        Some(source) => (source.clone(), "its source", false),
        None => (
            env("OPM_REGISTRY")
                .filter(|r| !r.is_empty())
                .ok_or_else(|| {
                    provider_error(
                        name,
                        "no source, and OPM_REGISTRY is not set; give it a `source` (a bundle \
                     file, a directory registry or an oci:// reference) or set OPM_REGISTRY",
                    )
                })?,
            "OPM_REGISTRY",
            true,
        ),
    };
    if text.starts_with("oci://") {
        let text = if base {
            format!("{}/{name}", text.trim_end_matches('/'))
        } else {
            text
        };
        let reference = crate::provider::oci::OciRef::parse(&text)
            .map_err(|e| provider_error(name, format!("{from}: {e:#}")))?;
        return Ok(Source::Oci {
            reference,
            pinned: crate::provider::oci::OciRef::names_version(&text),
        });
    }
    // A `source` is written in `.opm/providers.yaml`, and is relative to it (as a Terraform
    // module source is to its `.tf` file, a kustomize resource to its kustomization); a
    // registry from the environment is relative to the project directory.
    let path = if base {
        project.root.join(&text)
    } else {
        project.config_dir().join(&text)
    };
    if !path.exists() {
        return Err(provider_error(
            name,
            format!("{from} {} does not exist", path.display()),
        ));
    }
    Ok(Source::Path(path))
}

/// The versions `source` offers of the provider `name`. An OCI repository offers its tags that
/// are versions; an OCI tag or digest offers the version its manifest's annotation names,
/// asked of `registry` (without one, an OCI source is an error that says so).
pub fn offered(
    source: &Source,
    name: &str,
    registry: Option<&dyn Fetch>,
) -> Result<BTreeMap<semver::Version, Offer>, InstallError> {
    let mut versions = BTreeMap::new();
    let oci_error = |e: anyhow::Error| provider_error(name, format!("{e:#}"));
    let registry = || reached(name, registry);
    match source {
        Source::Oci {
            reference,
            pinned: true,
        } => {
            let annotations = registry()?.annotations(reference).map_err(oci_error)?;
            let version = annotations
                .get(crate::provider::oci::VERSION_ANNOTATION)
                .and_then(|v| semver::Version::parse(v).ok())
                .or_else(|| reference.tag().and_then(|t| semver::Version::parse(t).ok()))
                .ok_or_else(|| {
                    provider_error(
                        name,
                        format!(
                            "{reference} names no version (no {} annotation, no version tag)",
                            crate::provider::oci::VERSION_ANNOTATION
                        ),
                    )
                })?;
            versions.insert(version, Offer::Oci(reference.clone()));
        }
        Source::Oci {
            reference: repository,
            pinned: false,
        } => {
            for tag in registry()?.tags(repository).map_err(oci_error)? {
                if let Ok(version) = semver::Version::parse(&tag) {
                    versions.insert(version, Offer::Oci(repository.with_tag(&tag)));
                }
            }
        }
        Source::Path(path) if path.is_file() => {
            // The version its manifest states; the whole provider is checked once, when fetched.
            let bundle = bundle::read_file(path).map_err(ProviderError::from)?;
            let manifest: serde_json::Value = serde_json::from_slice(&bundle.manifest)
                .map_err(|e| provider_error(name, format!("{}: {e}", path.display())))?;
            let version = manifest["metadata"]["version"]
                .as_str()
                .and_then(|v| semver::Version::parse(v).ok())
                .ok_or_else(|| {
                    provider_error(name, format!("{} states no semver version", path.display()))
                })?;
            versions.insert(version, Offer::File(path.clone()));
        }
        Source::Path(dir) => {
            let dir = dir.join(name);
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(versions),
                Err(source) => {
                    return Err(InstallError::Io {
                        what: "cannot read",
                        path: dir,
                        source,
                    });
                }
            };
            for entry in entries.flatten() {
                let file_name = entry.file_name();
                let Some(text) = file_name.to_str() else {
                    continue;
                };
                let Ok(version) = semver::Version::parse(text) else {
                    continue;
                };
                let bundle = entry
                    .path()
                    .join(format!("{name}-{text}.{}", bundle::format::EXTENSION));
                if bundle.is_file() {
                    versions.insert(version, Offer::File(bundle));
                }
            }
        }
    }
    Ok(versions)
}

/// `registry`, or the error of a caller that gave none (a build without a registry client).
fn reached<'a>(name: &str, registry: Option<&'a dyn Fetch>) -> Result<&'a dyn Fetch, InstallError> {
    registry.ok_or_else(|| {
        provider_error(
            name,
            "this build of opm has no registry client for oci:// sources".to_owned(),
        )
    })
}

/// Fetches the bundle `offer` points at, with its signature. `oci_digest`, when given, is the
/// manifest digest an OCI artifact must have (the lock's). An OCI artifact is pulled through
/// `registry`, and with `sigstore` the signatures attached to its manifest are fetched too.
pub fn fetch(
    offer: &Offer,
    name: &str,
    oci_digest: Option<&str>,
    registry: Option<&dyn Fetch>,
    sigstore: bool,
) -> Result<Fetched, InstallError> {
    match offer {
        Offer::File(path) => Ok(Fetched {
            origin: path.display().to_string(),
            bytes: bundle::read_bytes(path).map_err(ProviderError::from)?,
            evidence: super::evidence_beside(path),
            oci_digest: None,
        }),
        Offer::Oci(reference) => {
            let reference = match oci_digest {
                Some(digest) => reference.with_digest(digest),
                None => reference.clone(),
            };
            let registry = reached(name, registry)?;
            let progress = crate::progress::Progress::start(format!("pulling {reference}"));
            let pulled = registry.pull(&reference, bundle::format::MAX_BUNDLE_BYTES);
            drop(progress);
            let pulled = pulled.map_err(|e| provider_error(name, format!("{e:#}")))?;
            // The signatures of the manifest that lists the bundle (which an index, if the
            // reference named one, points to).
            let signed = crate::provider::oci::documents::sha256_digest(&pulled.manifest);
            let sigstore = match sigstore {
                true => registry
                    .attached(&reference, &signed)
                    .map_err(|e| provider_error(name, format!("{e:#}")))?,
                false => Vec::new(),
            };
            Ok(Fetched {
                origin: reference.to_string(),
                bytes: pulled.bundle,
                evidence: super::Evidence {
                    minisign: pulled.signature,
                    sigstore,
                    manifest: Some(pulled.manifest),
                },
                oci_digest: Some(pulled.manifest_digest),
            })
        }
    }
}

/// Writes `bytes` to `path` through a temporary file and a rename, or removes `path` (a stale
/// file of an earlier install) when there are none.
pub fn write_beside(path: &Path, bytes: Option<&[u8]>) -> Result<(), InstallError> {
    let io = |source| InstallError::Io {
        what: "cannot write",
        path: path.to_owned(),
        source,
    };
    match bytes {
        Some(bytes) => crate::files::write_atomically(path, bytes).map_err(io),
        None => match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
            _ => Ok(()),
        },
    }
}

/// Writes the bundle `bytes` to `path` and its `signature` to `path.minisig` (removing a stale
/// one when there is none), each through a temporary file and a rename, the signature first: a
/// reader never finds a new bundle beside an old signature.
pub fn write_with_signature(
    path: &Path,
    bytes: &[u8],
    signature: Option<&[u8]>,
) -> Result<(), InstallError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| InstallError::Io {
            what: "cannot write",
            path,
            source,
        }
    };
    let signature_path = signature::signature_path(path);
    match signature {
        Some(text) => {
            crate::files::write_atomically(&signature_path, text).map_err(io(&signature_path))?
        }
        None => match std::fs::remove_file(&signature_path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(&signature_path)(e))?,
            _ => {}
        },
    }
    crate::files::write_atomically(path, bytes).map_err(io(path))
}
