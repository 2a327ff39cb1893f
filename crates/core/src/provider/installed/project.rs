//! The project's side of installed providers: `.opm/providers.yaml` (its [`Config`] of
//! [`Requirement`]s), the lock `.opm/providers.lock.json`, where bundles are installed, and
//! [`load_locked`], which a render reaches through `provider::load_in`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::check_trust;
use crate::bundle::{self, signature};
use crate::provider::{Provider, ProviderError};

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
    /// Public keys trusted for every provider, relative to `.opm/` (this file's directory):
    /// minisign keys, or Sigstore keys (PEM).
    #[serde(default)]
    pub keys: Vec<PathBuf>,
    /// Keyless (Sigstore) identities trusted for every provider.
    #[serde(default)]
    pub identities: Vec<super::IdentityConfig>,
    /// The Sigstore trusted root keyless signatures are checked against, relative to `.opm/`.
    #[serde(default, rename = "trustedRoot")]
    pub trusted_root: Option<PathBuf>,
    /// The providers.
    pub providers: Vec<Requirement>,
    /// The provider whose renderer writes the files, when it is not the one the providers with
    /// transformers ship (a provider that ships only a renderer is used only when named).
    #[serde(default)]
    pub renderer: Option<String>,
}

/// One provider a project uses.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    /// Its name, as its manifest states it.
    pub name: String,
    /// An exact version or a semver requirement (`0.2.0`, `^0.2`, `>=1, <2`).
    pub version: String,
    /// Where to find it: a bundle file or a directory registry, relative to `.opm/` (this
    /// file's directory), or `oci://…`; `$OPM_REGISTRY` when left out.
    #[serde(default)]
    pub source: Option<String>,
    /// Public keys trusted for this provider, on top of the project's.
    #[serde(default)]
    pub keys: Vec<PathBuf>,
    /// Keyless identities trusted for this provider, on top of the project's.
    #[serde(default)]
    pub identities: Vec<super::IdentityConfig>,
    /// The trusted root for this provider's keyless signatures (default: the project's).
    #[serde(default, rename = "trustedRoot")]
    pub trusted_root: Option<PathBuf>,
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
    /// Who signed, when a Sigstore signature verified: a key file or a keyless identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    /// The SHA-256 of the Sigstore bundle that verified (`sha256:…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
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
    /// Providers that cannot render together.
    #[error(transparent)]
    Set(#[from] crate::provider::SetError),
    /// A project found above the module that someone else controls.
    #[error(
        "{path} {why}: the providers it names would choose the code this render runs, so the \
         project at {root} is not used; if you trust it, name it in {SAFE_DIRECTORIES} \
         ({SAFE_DIRECTORIES}={root}, paths separated by `:`)",
        path = path.display(),
        root = root.display()
    )]
    Untrusted {
        /// The directory or file that is not the user's own.
        path: PathBuf,
        /// Who owns it, or who may write it.
        why: String,
        /// The project's directory.
        root: PathBuf,
    },
}

pub(super) fn provider_error(name: &str, message: impl Into<String>) -> InstallError {
    InstallError::Provider {
        name: name.to_owned(),
        message: message.into(),
    }
}

/// The environment variable naming directories whose `.opm/` is trusted though it is not the
/// user's own: paths separated by `:`, or `*` for every directory (as git's `safe.directory`).
pub const SAFE_DIRECTORIES: &str = "OPM_SAFE_DIRECTORIES";

/// The nearest directory at or above `start` that holds `.opm/providers.yaml`, looked for as
/// git looks for `.git`: up to the root of the file system `start` is on, and no higher than
/// the first directory holding `.git` (a repository's root). A project whose `.opm/`,
/// `providers.yaml` or lock is owned by another user, or writable by others, is refused —
/// whoever can write it chooses the code a render runs — unless `env`'s
/// [`SAFE_DIRECTORIES`] names its directory.
pub fn find(
    start: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<PathBuf>, InstallError> {
    #[cfg(unix)]
    use std::os::unix::fs::MetadataExt as _;
    #[cfg(unix)]
    let device = std::fs::metadata(start).ok().map(|m| m.dev());
    for dir in start.ancestors() {
        #[cfg(unix)]
        if std::fs::metadata(dir).ok().map(|m| m.dev()) != device {
            break;
        }
        if dir.join(DIR).join(CONFIG).is_file() {
            check_owner(dir, env)?;
            return Ok(Some(dir.to_owned()));
        }
        if dir.join(".git").exists() {
            break;
        }
    }
    Ok(None)
}

/// Whether the project at `root` is the user's own: `.opm/` and the files in it that choose
/// what a render runs owned by the user running opm, and writable by no one else.
fn check_owner(root: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<(), InstallError> {
    let trusted = env(SAFE_DIRECTORIES).unwrap_or_default();
    if trusted
        .split(':')
        .any(|entry| entry == "*" || (!entry.is_empty() && Path::new(entry) == root))
    {
        return Ok(());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let me = rustix::process::geteuid().as_raw();
        let dir = root.join(DIR);
        for path in [dir.clone(), dir.join(CONFIG), dir.join(LOCK)] {
            let metadata = match std::fs::symlink_metadata(&path) {
                Ok(metadata) => metadata,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => {
                    return Err(InstallError::Io {
                        what: "cannot read",
                        path,
                        source,
                    });
                }
            };
            let why = if metadata.uid() != me {
                format!(
                    "is owned by user {}, not by you (user {me})",
                    metadata.uid()
                )
            } else if metadata.mode() & 0o022 != 0 {
                format!(
                    "is writable by others (mode {:o})",
                    metadata.mode() & 0o7777
                )
            } else {
                continue;
            };
            return Err(InstallError::Untrusted {
                path,
                why,
                root: root.to_owned(),
            });
        }
    }
    Ok(())
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
                message: crate::yaml::message(&e),
            })?;
        let mut seen = std::collections::BTreeSet::new();
        for requirement in &config.providers {
            if !crate::names::is_dns_label(&requirement.name) {
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

    /// `.opm/`, where `providers.yaml` is: the paths it writes are relative to it.
    pub fn config_dir(&self) -> PathBuf {
        self.root.join(DIR)
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
        .and_then(|bundle| crate::provider::from_bundle(origin.clone(), bundle));
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
    let trust = project.trust(requirement)?;
    check_trust(
        &origin,
        &bytes,
        &super::evidence_beside(&path),
        &trust,
        (name, &locked.version),
    )?;
    Ok(provider)
}
