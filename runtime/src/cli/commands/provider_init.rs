//! `opm provider init [--upgrade] [--dry-run] [--force]`: resolves every provider of the
//! project's `.opm/providers.yaml` in its source, verifies it (its digests, that it is the
//! provider and version asked for, and its signature where keys are configured), installs it
//! under `.opm/providers/NAME/VERSION/` and writes `.opm/providers.lock.json` (see
//! `provider::installed`).
//!
//! Without `--upgrade`, a locked provider keeps its locked version and bytes; with it, each
//! moves to the newest version its requirement allows, and a move to an older version is said.
//! `--dry-run` writes nothing and says what it would do; `--force` installs again what is
//! already installed. Two `init`s of one project never interleave: each holds an exclusive lock
//! on `.opm/.init.lock`, and every file is written to a temporary name and renamed.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::Args;

use crate::bundle;
use crate::cli::Output;
use crate::provider::installed::{self, Lock, Locked, Project, Requirement};

/// Arguments of `opm provider init`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm provider init
  opm provider init --upgrade --dry-run
  OPM_REGISTRY=/srv/opm-registry opm provider init")]
pub struct InitArgs {
    /// Move each provider to the newest version its requirement allows, even one older than
    /// the locked version.
    #[arg(long)]
    pub upgrade: bool,

    /// Say what would be installed and locked, and change nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Install again what is already installed.
    #[arg(long)]
    pub force: bool,

    /// Allow plain HTTP to OCI registries that are not on loopback.
    #[arg(long)]
    pub insecure_http: bool,
}

/// Runs `opm provider init`.
pub fn run(args: InitArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir()?;
    let root = installed::find(&cwd).with_context(|| {
        format!(
            "no {}/{} in {} or above: write one naming the providers this project uses \
             (see providers/README.md)",
            installed::DIR,
            installed::CONFIG,
            cwd.display()
        )
    })?;
    let project = Project::load(&root)?;
    let _guard = ExclusiveLock::take(&root.join(installed::DIR).join(".init.lock"))?;
    let old = project.lock()?;
    let mut providers: Vec<&Requirement> = project.config.providers.iter().collect();
    providers.sort_by(|a, b| a.name.cmp(&b.name));
    let mut lock = Lock {
        lock_version: installed::LOCK_VERSION,
        providers: Vec::new(),
    };
    for requirement in providers {
        let entry = resolve(&project, requirement, &old, &args, out)?;
        lock.providers.push(entry);
    }
    if args.dry_run {
        writeln!(out.stdout, "dry run: nothing was installed or locked")?;
        return Ok(ExitCode::SUCCESS);
    }
    let text = serde_json::to_string_pretty(&lock)? + "\n";
    let path = project.lock_path();
    crate::render::write::write_atomically(&path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    writeln!(
        out.stdout,
        "locked {} provider{} in {}",
        lock.providers.len(),
        if lock.providers.len() == 1 { "" } else { "s" },
        path.display()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Resolves, verifies and (unless a dry run) installs one provider; returns its lock entry.
fn resolve(
    project: &Project,
    requirement: &Requirement,
    old_lock: &Lock,
    args: &InitArgs,
    out: &mut Output<'_>,
) -> anyhow::Result<Locked> {
    let name = &requirement.name;
    let locked = old_lock.get(name);
    let wanted = installed::version_req(requirement).map_err(anyhow::Error::msg)?;
    // A locked provider stays as it is unless asked otherwise.
    if let Some(locked) = locked.filter(|_| !args.upgrade) {
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
        if !args.force && installed::load_locked(project, old_lock, name).is_ok() {
            writeln!(
                out.stdout,
                "kept {name} {} (locked, installed)",
                locked.version
            )?;
            return Ok(locked.clone());
        }
    }
    let source = installed::source_of(project, requirement, &(out.env))?;
    let options = oci_options(args);
    let offered = installed::offered(&source, name, &options)?;
    let chosen = match locked.filter(|_| !args.upgrade) {
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
    let (version, offer) = chosen;
    let version_text = version.to_string();
    // A locked OCI artifact is fetched by the manifest digest the lock pins.
    let pinned = locked
        .filter(|l| l.version == version_text && !args.upgrade)
        .and_then(|l| l.oci_digest.as_deref());
    let fetched = installed::fetch(&offer, name, pinned, &options)?;
    let origin = fetched.origin.clone();
    let provider =
        crate::provider::from_bundle(origin.clone(), bundle::read(&origin, &fetched.bytes)?)?;
    let metadata = &provider.manifest.metadata;
    if metadata.name != *name || metadata.version != version_text {
        bail!(
            "provider {name}: {origin} holds {} {}, not {name} {version_text}",
            metadata.name,
            metadata.version
        );
    }
    let digest = provider.digest.clone().unwrap_or_default();
    if let Some(locked) = locked.filter(|l| l.version == version_text && !args.upgrade)
        && locked.digest != digest
    {
        bail!(
            "provider {name}: {name} {version_text} in {source} is {digest}, but the lock says \
             {}: the bundle changed since it was locked; check it, then run `opm provider init \
             --upgrade` to lock what is there now",
            locked.digest
        );
    }
    let keys = project.keys(requirement)?;
    let key_id = installed::check_signature(
        &origin,
        &fetched.bytes,
        fetched.signature.as_deref(),
        &keys,
        name,
        &version_text,
    )?;
    let verb = if args.dry_run {
        "would install"
    } else {
        "installed"
    };
    let signed = key_id
        .as_deref()
        .map(|id| format!(", signature by key {id} verified"))
        .unwrap_or_default();
    let moved = match locked {
        Some(locked) if locked.version != version_text => {
            let older = semver::Version::parse(&locked.version).is_ok_and(|l| version < l);
            format!(
                " ({} from {})",
                if older { "DOWNGRADED" } else { "upgraded" },
                locked.version
            )
        }
        _ => String::new(),
    };
    writeln!(
        out.stdout,
        "{verb} {name} {version_text} from {origin} ({digest}{signed}){moved}"
    )?;
    if !args.dry_run {
        install(project, name, &version_text, &fetched)?;
    }
    let source = match &offer {
        installed::Offer::File(path) => relative_to(path, &project.root),
        installed::Offer::Oci(reference) => reference.to_string(),
    };
    Ok(Locked {
        name: name.clone(),
        version: version_text,
        source,
        oci_digest: fetched.oci_digest,
        digest,
        key_id,
    })
}

/// The registry options `init` uses.
fn oci_options(args: &InitArgs) -> crate::oci::Options {
    crate::oci::Options {
        insecure_http: args.insecure_http,
        ..crate::oci::Options::default()
    }
}

/// Writes `fetched` (the bundle, and its signature if it has one) into the install folder of
/// `name` `version`, each through a temporary file and a rename.
fn install(
    project: &Project,
    name: &str,
    version: &str,
    fetched: &installed::Fetched,
) -> anyhow::Result<()> {
    let target = project.bundle_path(name, version);
    let dir = target.parent().context("an install path has a folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    installed::write_with_signature(&target, &fetched.bytes, fetched.signature.as_deref())?;
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
