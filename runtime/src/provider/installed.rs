//! Installed providers (`providers/README.md`, "Installed providers"): a project names the
//! providers it uses in `.opm/providers.yaml`; `opm provider init` resolves each in its source,
//! verifies it, installs its bundle under `.opm/providers/NAME/VERSION/` and pins it in
//! `.opm/providers.lock.json`; `opm mod build -p NAME` then loads exactly the locked bytes
//! ([`load_locked`]).
//!
//! ```yaml
//! # .opm/providers.yaml
//! keys: [keys/platform.pub]          # trusted for every provider (optional)
//! providers:
//!   - name: kubernetes
//!     version: ^0.2                   # exact, or a semver requirement
//!     source: ../registry             # a bundle file, or a directory registry DIR/NAME/VERSION/
//!     keys: [keys/k8s-team.pub]       # trusted for this one (optional)
//! ```
//!
//! A provider without `source` is looked up in `$OPM_REGISTRY`. Where keys are configured, a
//! bundle must carry a signature by one of them that vouches for its name and version, at
//! `init` and at every render.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Provider, ProviderError};
use crate::bundle::{self, signature};

/// The project directory's folder of opm files.
pub const DIR: &str = ".opm";
/// The providers a project uses, in [`DIR`].
pub const CONFIG: &str = "providers.yaml";
/// What `init` resolved, in [`DIR`].
pub const LOCK: &str = "providers.lock.json";
/// Where `init` installs bundles, in [`DIR`].
pub const INSTALL: &str = "providers";
/// The lock file format this opm writes and reads.
pub const LOCK_VERSION: u32 = 1;

/// `.opm/providers.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Public keys trusted for every provider, relative to the project directory.
    #[serde(default)]
    pub keys: Vec<PathBuf>,
    /// The providers.
    pub providers: Vec<Requirement>,
}

/// One provider a project uses.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    /// Its name, as its manifest states it.
    pub name: String,
    /// An exact version or a semver requirement (`0.2.0`, `^0.2`, `>=1, <2`).
    pub version: String,
    /// Where to find it: a bundle file or a directory registry, relative to the project
    /// directory; `$OPM_REGISTRY` when left out.
    #[serde(default)]
    pub source: Option<String>,
    /// Public keys trusted for this provider, on top of the project's.
    #[serde(default)]
    pub keys: Vec<PathBuf>,
}

/// `.opm/providers.lock.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Lock {
    /// [`LOCK_VERSION`].
    pub lock_version: u32,
    /// One entry per provider, in name order.
    pub providers: Vec<Locked>,
}

/// A provider as `init` resolved and installed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Locked {
    /// Its name.
    pub name: String,
    /// The version installed.
    pub version: String,
    /// Where it came from, as resolved (a path, relative to the project directory when inside
    /// it).
    pub source: String,
    /// The OCI manifest digest it was fetched by, for an OCI source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci_digest: Option<String>,
    /// The bundle digest: `blake3:` of its canonical manifest, which pins every byte.
    pub digest: String,
    /// The id of the key whose signature was verified, when keys are configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
}

impl Lock {
    /// The entry of the provider `name`.
    pub fn get(&self, name: &str) -> Option<&Locked> {
        self.providers.iter().find(|entry| entry.name == name)
    }
}

/// A project: the directory holding `.opm/providers.yaml`, and that file.
#[derive(Debug, Clone)]
pub struct Project {
    /// The project directory.
    pub root: PathBuf,
    /// Its providers.
    pub config: Config,
}

/// Why installed providers could not be resolved, installed or loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstallError {
    /// A file could not be read or written.
    #[error("{what} {path}")]
    Io {
        /// What was being done (`cannot read`).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A configuration or lock file is malformed.
    #[error("{path}: {message}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Something about one provider.
    #[error("provider {name}: {message}")]
    Provider {
        /// The provider.
        name: String,
        /// What is wrong, and what to do.
        message: String,
    },
    /// A bundle that loading refused.
    #[error(transparent)]
    Load(#[from] ProviderError),
    /// A signature that did not verify.
    #[error(transparent)]
    Signature(#[from] signature::SignatureError),
}

fn provider_error(name: &str, message: impl Into<String>) -> InstallError {
    InstallError::Provider {
        name: name.to_owned(),
        message: message.into(),
    }
}

/// The nearest directory at or above `start` that holds `.opm/providers.yaml`.
pub fn find(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join(DIR).join(CONFIG).is_file())
        .map(Path::to_owned)
}

impl Project {
    /// Reads the project whose directory is `root`.
    pub fn load(root: &Path) -> Result<Self, InstallError> {
        let path = root.join(DIR).join(CONFIG);
        let text = std::fs::read_to_string(&path).map_err(|source| InstallError::Io {
            what: "cannot read",
            path: path.clone(),
            source,
        })?;
        let config: Config =
            serde_saphyr::from_str(&text).map_err(|e| InstallError::Malformed {
                path: path.clone(),
                message: crate::module::yaml_message(&e),
            })?;
        let mut seen = std::collections::BTreeSet::new();
        for requirement in &config.providers {
            if !crate::module::is_dns_label(&requirement.name) {
                return Err(InstallError::Malformed {
                    path,
                    message: format!(
                        "{:?} is not a provider name: lowercase letters, digits and hyphens",
                        requirement.name
                    ),
                });
            }
            if !seen.insert(&requirement.name) {
                return Err(InstallError::Malformed {
                    path,
                    message: format!("provider {} is named twice", requirement.name),
                });
            }
            version_req(requirement).map_err(|message| InstallError::Malformed {
                path: path.clone(),
                message,
            })?;
        }
        Ok(Self {
            root: root.to_owned(),
            config,
        })
    }

    /// The requirement of the provider `name`, if the project uses it.
    pub fn requirement(&self, name: &str) -> Option<&Requirement> {
        self.config.providers.iter().find(|r| r.name == name)
    }

    /// The lock file's path.
    pub fn lock_path(&self) -> PathBuf {
        self.root.join(DIR).join(LOCK)
    }

    /// The lock, or an empty one when there is no lock file yet.
    pub fn lock(&self) -> Result<Lock, InstallError> {
        let path = self.lock_path();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Lock {
                    lock_version: LOCK_VERSION,
                    providers: Vec::new(),
                });
            }
            Err(source) => {
                return Err(InstallError::Io {
                    what: "cannot read",
                    path,
                    source,
                });
            }
        };
        let lock: Lock = serde_json::from_str(&text).map_err(|e| InstallError::Malformed {
            path: path.clone(),
            message: e.to_string(),
        })?;
        if lock.lock_version != LOCK_VERSION {
            return Err(InstallError::Malformed {
                path,
                message: format!(
                    "lockVersion {} is not {LOCK_VERSION}, the format this opm reads",
                    lock.lock_version
                ),
            });
        }
        Ok(lock)
    }

    /// Where the bundle of `name` at `version` is installed.
    pub fn bundle_path(&self, name: &str, version: &str) -> PathBuf {
        self.root
            .join(DIR)
            .join(INSTALL)
            .join(name)
            .join(version)
            .join(format!("{name}-{version}.{}", bundle::format::EXTENSION))
    }

    /// The keys trusted for `requirement`: the project's and its own.
    pub fn keys(
        &self,
        requirement: &Requirement,
    ) -> Result<Vec<minisign::PublicKey>, InstallError> {
        self.config
            .keys
            .iter()
            .chain(&requirement.keys)
            .map(|key| Ok(signature::read_public_key(&self.root.join(key))?))
            .collect()
    }
}

/// The version requirement of `requirement`: an exact version means exactly it.
pub fn version_req(requirement: &Requirement) -> Result<semver::VersionReq, String> {
    let text = requirement.version.trim();
    if let Ok(exact) = semver::Version::parse(text) {
        return Ok(semver::VersionReq {
            comparators: vec![semver::Comparator {
                op: semver::Op::Exact,
                major: exact.major,
                minor: Some(exact.minor),
                patch: Some(exact.patch),
                pre: exact.pre,
            }],
        });
    }
    semver::VersionReq::parse(text).map_err(|e| {
        format!(
            "provider {}: version {:?} is neither a version nor a requirement: {e}",
            requirement.name, requirement.version
        )
    })
}

/// Checks `signature` (the text of a `.minisig`, if there is one) of the bundle `origin`
/// (`bytes`) against `keys`, as vouching for the provider `name` at `version`; returns the
/// signing key's id. No keys, no check.
pub fn check_signature(
    origin: &str,
    bytes: &[u8],
    signature: Option<&[u8]>,
    keys: &[minisign::PublicKey],
    name: &str,
    version: &str,
) -> Result<Option<String>, InstallError> {
    if keys.is_empty() {
        return Ok(None);
    }
    let path = PathBuf::from(format!("{origin}.minisig"));
    let Some(text) = signature else {
        return Err(signature::SignatureError::Unsigned {
            bundle: origin.to_owned(),
            signature: path,
        }
        .into());
    };
    let sig = signature::parse_signature(&path, &String::from_utf8_lossy(text))?;
    let binding = signature::Binding {
        name: name.to_owned(),
        version: version.to_owned(),
    };
    let verified = signature::verify_provider(origin, bytes, &sig, keys, &binding)?;
    Ok(Some(verified.key_id))
}

/// Loads the provider `name` as `project` locked (in `lock`, its lock file's contents) and
/// installed it: exactly the locked bytes, their signature checked where keys are configured.
/// Every way this can fail says to run `opm provider init`.
pub fn load_locked(project: &Project, lock: &Lock, name: &str) -> Result<Provider, InstallError> {
    let requirement = project
        .requirement(name)
        .ok_or_else(|| provider_error(name, "the project does not use it"))?;
    let init = "run `opm provider init`";
    let locked = lock.get(name).ok_or_else(|| {
        provider_error(
            name,
            format!(
                "{} names it, but it is not locked; {init}",
                project.root.join(DIR).join(CONFIG).display()
            ),
        )
    })?;
    let path = project.bundle_path(name, &locked.version);
    let bytes = std::fs::read(&path).map_err(|_| {
        provider_error(
            name,
            format!(
                "{} {} is locked but not installed ({} is missing); {init}",
                name,
                locked.version,
                path.display()
            ),
        )
    })?;
    let origin = path.display().to_string();
    let loaded = bundle::read(&origin, &bytes)
        .map_err(ProviderError::from)
        .and_then(|bundle| super::from_bundle(origin.clone(), bundle));
    let provider = match loaded {
        Ok(provider) if provider.digest.as_deref() == Some(locked.digest.as_str()) => provider,
        Ok(provider) => {
            return Err(provider_error(
                name,
                format!(
                    "the installed bundle {} is {}, not the locked {}; {init} --force to \
                     reinstall the locked bytes",
                    path.display(),
                    provider.digest.unwrap_or_default(),
                    locked.digest
                ),
            ));
        }
        Err(e) => {
            return Err(provider_error(
                name,
                format!("the installed bundle is refused ({e}); {init} --force to reinstall it"),
            ));
        }
    };
    let keys = project.keys(requirement)?;
    let signature = std::fs::read(signature::signature_path(&path)).ok();
    check_signature(
        &origin,
        &bytes,
        signature.as_deref(),
        &keys,
        name,
        &locked.version,
    )?;
    Ok(provider)
}

/// Where a provider is looked for.
#[derive(Debug, Clone)]
pub enum Source {
    /// A bundle file, or a directory registry `DIR/NAME/VERSION/NAME-VERSION.opmb`.
    Path(PathBuf),
    /// An OCI repository, or one tag or digest of it.
    Oci {
        /// The reference (one written without a tag or digest names the tag `latest`).
        reference: crate::oci::OciRef,
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
    Oci(crate::oci::OciRef),
}

/// A fetched bundle.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Where it came from, for messages and the lock.
    pub origin: String,
    /// The bundle file's bytes.
    pub bytes: Vec<u8>,
    /// Its signature file's text, if it has one.
    pub signature: Option<Vec<u8>>,
    /// The OCI manifest digest it was fetched by, for an OCI artifact.
    pub oci_digest: Option<String>,
}

/// The source of `requirement`: its `source` (a path relative to the project directory, or
/// `oci://…`), or `$OPM_REGISTRY` (a directory registry, or an `oci://` base under which the
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
        let reference = crate::oci::OciRef::parse(&text)
            .map_err(|e| provider_error(name, format!("{from}: {e:#}")))?;
        return Ok(Source::Oci {
            reference,
            pinned: crate::oci::OciRef::names_version(&text),
        });
    }
    let path = project.root.join(&text);
    if !path.exists() {
        return Err(provider_error(
            name,
            format!("{from} {} does not exist", path.display()),
        ));
    }
    Ok(Source::Path(path))
}

/// The versions `source` offers of the provider `name`. An OCI repository offers its tags that
/// are versions; an OCI tag or digest offers the version its manifest's annotation names.
pub fn offered(
    source: &Source,
    name: &str,
    options: &crate::oci::Options,
) -> Result<BTreeMap<semver::Version, Offer>, InstallError> {
    let mut versions = BTreeMap::new();
    let oci_error = |e: anyhow::Error| provider_error(name, format!("{e:#}"));
    match source {
        Source::Oci {
            reference,
            pinned: true,
        } => {
            let annotations = crate::oci::annotations(reference, options).map_err(oci_error)?;
            let version = annotations
                .get(crate::oci::VERSION_ANNOTATION)
                .and_then(|v| semver::Version::parse(v).ok())
                .or_else(|| reference.tag().and_then(|t| semver::Version::parse(t).ok()))
                .ok_or_else(|| {
                    provider_error(
                        name,
                        format!(
                            "{reference} names no version (no {} annotation, no version tag)",
                            crate::oci::VERSION_ANNOTATION
                        ),
                    )
                })?;
            versions.insert(version, Offer::Oci(reference.clone()));
        }
        Source::Oci {
            reference: repository,
            pinned: false,
        } => {
            for tag in crate::oci::tags(repository, options).map_err(oci_error)? {
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

/// Fetches the bundle `offer` points at, with its signature. `oci_digest`, when given, is the
/// manifest digest an OCI artifact must have (the lock's).
pub fn fetch(
    offer: &Offer,
    name: &str,
    oci_digest: Option<&str>,
    options: &crate::oci::Options,
) -> Result<Fetched, InstallError> {
    match offer {
        Offer::File(path) => Ok(Fetched {
            origin: path.display().to_string(),
            bytes: bundle::read_bytes(path).map_err(ProviderError::from)?,
            signature: std::fs::read(signature::signature_path(path)).ok(),
            oci_digest: None,
        }),
        Offer::Oci(reference) => {
            let reference = match oci_digest {
                Some(digest) => reference.with_digest(digest),
                None => reference.clone(),
            };
            let progress = crate::report::progress::Progress::start(format!("pulling {reference}"));
            let pulled = crate::oci::pull(&reference, options, bundle::format::MAX_BUNDLE_BYTES);
            drop(progress);
            let pulled = pulled.map_err(|e| provider_error(name, format!("{e:#}")))?;
            Ok(Fetched {
                origin: reference.to_string(),
                bytes: pulled.bundle,
                signature: pulled.signature,
                oci_digest: Some(pulled.manifest_digest),
            })
        }
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
        Some(text) => crate::render::write::write_atomically(&signature_path, text)
            .map_err(io(&signature_path))?,
        None => match std::fs::remove_file(&signature_path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(&signature_path)(e))?,
            _ => {}
        },
    }
    crate::render::write::write_atomically(path, bytes).map_err(io(path))
}
