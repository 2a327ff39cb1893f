//! `opm provider init` as a library call ([`init`]): resolves every provider of the project's
//! `.opm/providers.yaml` in its source, verifies it (its digests, that it is the provider and
//! version asked for, and its signature where keys are configured), installs it under
//! `.opm/providers/NAME/VERSION/` and writes `.opm/providers.lock.json`.
//!
//! Without [`Options::upgrade`], a locked provider keeps its locked version and bytes; with it,
//! each moves to the newest version its requirement allows, and a move to an older version is
//! said. [`Options::dry_run`] writes nothing; [`Options::force`] installs again what is already
//! installed. Two `init`s of one project never interleave: each holds an exclusive lock on
//! `.opm/.init.lock`, and every file is written to a temporary name and renamed.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use super::{Fetched, Lock, Locked, Offer, Project, Requirement};
use crate::bundle;
use crate::provider::oci;

/// How [`init`] resolves.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Move each provider to the newest version its requirement allows, even one older than
    /// the locked version.
    pub upgrade: bool,
    /// Say what would be installed and locked, and change nothing.
    pub dry_run: bool,
    /// Install again what is already installed.
    pub force: bool,
    /// What `oci://` sources are fetched through (`opm-registry`'s client); without it such a
    /// source is an error that says so.
    pub registry: Option<std::sync::Arc<dyn oci::Fetch>>,
}

/// What [`init`] did with one provider, in the words `opm provider init` prints.
#[derive(Debug, Clone)]
pub enum Step {
    /// Locked and installed already: kept as it is.
    Kept {
        /// The provider.
        name: String,
        /// Its locked version.
        version: String,
    },
    /// Fetched, verified and installed (or, in a dry run, would be).
    Installed {
        /// The provider.
        name: String,
        /// The version chosen.
        version: String,
        /// Where it came from.
        origin: String,
        /// `blake3:<hex>` of its bundle.
        digest: String,
        /// Who signed, where signers are configured.
        signer: Option<String>,
        /// The locked version it moved from, and whether that was newer.
        moved: Option<(String, bool)>,
        /// Whether nothing was written.
        dry_run: bool,
    },
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Kept { name, version } => write!(f, "kept {name} {version} (locked, installed)"),
            Self::Installed {
                name,
                version,
                origin,
                digest,
                signer,
                moved,
                dry_run,
            } => {
                let verb = if *dry_run {
                    "would install"
                } else {
                    "installed"
                };
                write!(f, "{verb} {name} {version} from {origin} ({digest}")?;
                if let Some(signer) = signer {
                    write!(f, ", signature by {signer} verified")?;
                }
                write!(f, ")")?;
                if let Some((from, older)) = moved {
                    let how = if *older { "DOWNGRADED" } else { "upgraded" };
                    write!(f, " ({how} from {from})")?;
                }
                Ok(())
            }
        }
    }
}

/// What [`init`] installed and will lock, and where; the project's init lock is held until it
/// is dropped, so that what is checked before [`write_lock`](Self::write_lock) is what is
/// locked.
#[derive(Debug)]
pub struct Initialized {
    /// Every provider's lock entry, by name.
    pub lock: Lock,
    /// The lock file (not written in a dry run).
    pub lock_path: PathBuf,
    dry_run: bool,
    _guard: ExclusiveLock,
}

impl Initialized {
    /// Writes the lock (not in a dry run): only once every provider is installed and whatever
    /// the caller checks of them (`opm provider init` compiles each one first) has passed, so
    /// that a provider that cannot be used is never locked.
    pub fn write_lock(&self) -> anyhow::Result<()> {
        if !self.dry_run {
            let text = serde_json::to_string_pretty(&self.lock)? + "\n";
            crate::files::write_atomically(&self.lock_path, text.as_bytes())
                .with_context(|| format!("cannot write {}", self.lock_path.display()))?;
        }
        Ok(())
    }
}

/// Resolves, verifies and installs every provider of the project found from `cwd` (not in a
/// dry run) and says what the lock will hold, which [`Initialized::write_lock`] writes; `step`
/// hears of each provider as it is done. `env` is where `$OPM_REGISTRY` is read.
pub fn init(
    cwd: &Path,
    options: &Options,
    env: &dyn Fn(&str) -> Option<String>,
    step: &mut dyn FnMut(&Step) -> anyhow::Result<()>,
) -> anyhow::Result<Initialized> {
    let root = super::find(cwd, env)?.with_context(|| {
        format!(
            "no {}/{} in {} or above: write one naming the providers this project uses \
             (see providers/README.md)",
            super::DIR,
            super::CONFIG,
            cwd.display()
        )
    })?;
    let project = Project::load(&root)?;
    let _guard = ExclusiveLock::take(&root.join(super::DIR).join(".init.lock"))?;
    let old = project.lock()?;
    let mut providers: Vec<&Requirement> = project.config.providers.iter().collect();
    providers.sort_by(|a, b| a.name.cmp(&b.name));
    let mut lock = Lock {
        lock_version: super::LOCK_VERSION,
        providers: Vec::new(),
    };
    for requirement in providers {
        let entry = resolve(&project, requirement, &old, options, env, step)?;
        lock.providers.push(entry);
    }
    Ok(Initialized {
        lock,
        lock_path: project.lock_path(),
        dry_run: options.dry_run,
        _guard,
    })
}

/// Resolves, verifies and (unless a dry run) installs one provider; returns its lock entry.
fn resolve(
    project: &Project,
    requirement: &Requirement,
    old_lock: &Lock,
    options: &Options,
    env: &dyn Fn(&str) -> Option<String>,
    step: &mut dyn FnMut(&Step) -> anyhow::Result<()>,
) -> anyhow::Result<Locked> {
    let name = &requirement.name;
    // A locked provider stays as it is unless asked otherwise.
    let locked = old_lock.get(name).filter(|_| !options.upgrade);
    let wanted = super::version_req(requirement).map_err(anyhow::Error::msg)?;
    if let Some(locked) = locked {
        let version = semver::Version::parse(&locked.version)
            .with_context(|| format!("the lock's version of {name}"))?;
        if !wanted.matches(&version) {
            bail!(
                "provider {name}: the locked {} does not satisfy {:?} any more; run `opm \
                 provider init --upgrade` to move it",
                locked.version,
                requirement.version
            );
        }
        if !options.force && super::load_locked(project, old_lock, name).is_ok() {
            step(&Step::Kept {
                name: name.clone(),
                version: locked.version.clone(),
            })?;
            return Ok(locked.clone());
        }
    }
    let source = super::source_of(project, requirement, &env)?;
    let offered = super::offered(&source, name, options.registry.as_deref())?;
    let (version, offer) = match locked {
        Some(locked) => {
            let version = semver::Version::parse(&locked.version)?;
            let offer = offered.get(&version).with_context(|| {
                format!(
                    "provider {name}: the locked {} is not in {source} any more; run `opm \
                     provider init --upgrade` to choose another",
                    locked.version
                )
            })?;
            (version, offer.clone())
        }
        None => {
            let newest = offered
                .iter()
                .rev()
                .find(|(version, _)| wanted.matches(version));
            let Some((version, offer)) = newest else {
                let all: Vec<String> = offered.keys().map(ToString::to_string).collect();
                bail!(
                    "provider {name}: no version in {source} satisfies {:?} (it has {})",
                    requirement.version,
                    if all.is_empty() {
                        "none".to_owned()
                    } else {
                        all.join(", ")
                    }
                );
            };
            (version.clone(), offer.clone())
        }
    };
    let version_text = version.to_string();
    // The lock entry of this very version, when it stays: its OCI manifest digest pins what is
    // fetched, and its bundle digest must not have changed.
    let same = locked.filter(|l| l.version == version_text);
    // Whom the project trusts, read before anything is fetched: an OCI artifact's Sigstore
    // signatures are looked for only where Sigstore signers are trusted.
    let trust = project.trust(requirement)?;
    let fetched = super::fetch(
        &offer,
        name,
        same.and_then(|l| l.oci_digest.as_deref()),
        options.registry.as_deref(),
        !trust.sigstore.is_empty(),
    )?;
    let origin = fetched.origin.clone();
    let provider = crate::provider::from_bundle_checked(
        origin.clone(),
        bundle::read(&origin, &fetched.bytes)?,
    )?;
    let metadata = &provider.manifest.metadata;
    if metadata.name != *name || metadata.version != version_text {
        bail!(
            "provider {name}: {origin} holds {} {}, not {name} {version_text}",
            metadata.name,
            metadata.version
        );
    }
    let digest = provider.digest.clone().unwrap_or_default();
    if let Some(same) = same
        && same.digest != digest
    {
        bail!(
            "provider {name}: {name} {version_text} in {source} is {digest}, but the lock says \
             {}: the bundle changed since it was locked; check it, then run `opm provider init \
             --upgrade` to lock what is there now",
            same.digest
        );
    }
    let trusted = super::check_trust(
        &origin,
        &fetched.bytes,
        &fetched.evidence,
        &trust,
        (name, &version_text),
    )?;
    // A move is said against the lock as it was, --upgrade or not.
    let moved = old_lock
        .get(name)
        .filter(|old| old.version != version_text)
        .map(|old| {
            let older = semver::Version::parse(&old.version).is_ok_and(|o| version < o);
            (old.version.clone(), older)
        });
    step(&Step::Installed {
        name: name.clone(),
        version: version_text.clone(),
        origin,
        digest: digest.clone(),
        signer: trusted.signer.clone(),
        moved,
        dry_run: options.dry_run,
    })?;
    if !options.dry_run {
        install(project, name, &version_text, &fetched, &trusted)?;
    }
    let source = match &offer {
        Offer::File(path) => relative_to(path, &project.root),
        Offer::Oci(reference) => reference.to_string(),
    };
    Ok(Locked {
        name: name.clone(),
        version: version_text,
        source,
        oci_digest: fetched.oci_digest,
        digest,
        key_id: trusted.key_id,
        signer: trusted.sigstore.as_ref().and(trusted.signer),
        signature: trusted.sigstore.map(|(_, digest)| digest),
    })
}

/// Writes `fetched` (the bundle, its minisign signature if it has one, the Sigstore signature
/// that verified and the OCI manifest it signs) into the install folder of `name` `version`,
/// each through a temporary file and a rename.
fn install(
    project: &Project,
    name: &str,
    version: &str,
    fetched: &Fetched,
    trusted: &super::Trusted,
) -> anyhow::Result<()> {
    let target = project.bundle_path(name, version);
    let dir = target.parent().context("an install path has a folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let signature = trusted.sigstore.as_ref().map(|(found, _)| found);
    for (path, bytes) in super::installed_signature(&target, signature) {
        super::write_beside(&path, bytes.as_deref())?;
    }
    let manifest = signature.and(fetched.evidence.manifest.as_deref());
    super::write_beside(&super::manifest_path(&target), manifest)?;
    super::write_with_signature(
        &target,
        &fetched.bytes,
        fetched.evidence.minisign.as_deref(),
    )?;
    Ok(())
}

/// `path` relative to `root` when it is inside it, else as it is.
fn relative_to(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// An exclusive advisory lock on a file, held until dropped.
#[derive(Debug)]
struct ExclusiveLock {
    /// Held open: closing it releases the lock.
    _file: std::fs::File,
}

impl ExclusiveLock {
    fn take(path: &Path) -> anyhow::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .with_context(|| format!("cannot lock {}", path.display()))?;
        Ok(Self { _file: file })
    }
}
