//! `opm platform diff --against-ref REV`: what a change does to every environment. The releases
//! file is rendered as it is in the working tree and as it was at the git revision `REV`, every
//! release of every environment, in one process and one sandbox ([`super::build::render_all`]),
//! and each release's objects are compared as `opm mod diff` compares them
//! (`opm_core::render::diff`): paired by identity, compared as values, each changed one a
//! unified diff of its YAML, sensitive values masked.
//!
//! The revision is read with `git archive` into a temporary directory, so the working tree, the
//! index and the repository are left as they are. Installed providers are not in git (they are
//! `.opm/providers/` beside each project's `providers.yaml`): the revision's side uses the
//! working tree's, each still checked against the revision's own lock, so a provider the
//! revision locks at another version must be installed too (`opm provider init` at that
//! revision installs it beside the other).
//!
//! Masking: each side's sensitive values (its `${env:}` values, its Secrets' values) are joined
//! into one redactor ([`Redactor::joined`]), so a value that only one side has — a rotated
//! password — is masked on both; every Secret's `data` and `stringData` reads `[redacted]`; and
//! the whole output passes through that redactor once more, in every form it knows (raw,
//! base64, URL-encoded).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use anyhow::Context as _;
use serde_json::{Value, json};

use super::build::{jobs_of, render_all};
use crate::render::{self, Request};
use opm_core::platform::{Platform, Release};
use opm_core::redact::Redactor;
use opm_core::render::diff::{Changes, changes_text, compare, manifests, unified};
use opm_core::render::identity::Identity;

/// What `opm platform diff` is asked.
#[derive(Debug)]
pub struct Diff {
    /// The releases file, in the working tree.
    pub file: PathBuf,
    /// The git revision to compare with.
    pub against: String,
    /// Only these environments; none: every one of either side's file.
    pub environments: Vec<String>,
    /// Threads, limits, cache and compiler of the renders.
    pub base: Request,
    /// Leave sensitive values unmasked.
    pub show_secrets: bool,
}

/// What differs in one release.
#[derive(Debug)]
pub struct ReleaseDiff {
    /// The release.
    pub name: String,
    /// `same`, `changed`, `added` (only in the working tree), `removed` (only at the revision).
    pub status: &'static str,
    /// The objects' changes, masked.
    pub changes: Changes,
    /// The objects at the revision, masked.
    pub old: Vec<Value>,
    /// The objects in the working tree, masked.
    pub new: Vec<Value>,
}

/// One environment's releases.
#[derive(Debug)]
pub struct EnvironmentDiff {
    /// The environment.
    pub name: String,
    /// Every release of either side, in name order.
    pub releases: Vec<ReleaseDiff>,
}

/// The whole comparison.
#[derive(Debug)]
pub struct Compared {
    /// Every environment compared.
    pub environments: Vec<EnvironmentDiff>,
    /// What the renders that failed reported, a line each, each with its side, environment and
    /// release in front: any is an error (exit 2).
    pub errors: Vec<String>,
    /// Masks every sensitive value of both sides.
    pub redactor: Redactor,
}

impl Compared {
    /// Whether anything differs.
    pub fn different(&self) -> bool {
        self.environments
            .iter()
            .flat_map(|e| &e.releases)
            .any(|r| r.status != "same")
    }
}

/// Which side a render is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Side {
    Old,
    New,
}

/// Renders both sides and compares them.
pub fn diff(
    diff: &Diff,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> anyhow::Result<Compared> {
    let new_platform = Platform::load(&diff.file)?;
    let checkout = Checkout::at(&diff.file, &diff.against)?;
    let old_platform = match checkout.file.exists() {
        true => Some(
            Platform::load(&checkout.file)
                .with_context(|| format!("the releases file at {}", diff.against))?,
        ),
        false => None,
    };
    // Environments: the working tree's, then those only the revision has.
    let mut environments: Vec<String> = new_platform.environments.clone();
    for environment in old_platform.iter().flat_map(|p| &p.environments) {
        if !environments.contains(environment) {
            environments.push(environment.clone());
        }
    }
    for wanted in &diff.environments {
        if !environments.contains(wanted) {
            new_platform.check_environment(wanted)?;
        }
    }
    if !diff.environments.is_empty() {
        environments.retain(|e| diff.environments.contains(e));
    }
    let releases_of =
        |platform: Option<&Platform>, environment: &str| -> anyhow::Result<Vec<Release>> {
            match platform {
                Some(platform) if platform.environments.iter().any(|e| e == environment) => {
                    Ok(platform.releases(environment)?)
                }
                _ => Ok(Vec::new()),
            }
        };
    let mut wanted: Vec<(Side, String, Release)> = Vec::new();
    for environment in &environments {
        for release in releases_of(old_platform.as_ref(), environment)? {
            wanted.push((Side::Old, environment.clone(), release));
        }
        for release in releases_of(Some(&new_platform), environment)? {
            wanted.push((Side::New, environment.clone(), release));
        }
    }
    let base = Request {
        output: render::OutputOptions::default(),
        progress: false,
        ..diff.base.clone()
    };
    let pool = Arc::new(render::render_threads(base.jobs)?);
    let fetched = render::remote::Fetched::new(opm_registry::Options::default());
    let jobs = jobs_of(
        wanted.iter().map(|(_, _, release)| release),
        &base,
        &fetched,
        env,
    );
    let done = AtomicUsize::new(0);
    let rendered = render_all(
        jobs,
        &base,
        env,
        &pool,
        None,
        &done,
        &|_, _, render, redactor| {
            let texts = render
                .rendered
                .files
                .iter()
                .map(|f| {
                    (
                        f.path.clone(),
                        String::from_utf8_lossy(&f.bytes).into_owned(),
                    )
                })
                .collect();
            Ok((manifests(texts)?, redactor.clone()))
        },
    )?;
    drop(checkout);
    let mut objects: BTreeMap<(String, String, Side), Vec<Value>> = BTreeMap::new();
    let mut redactors = Vec::new();
    let mut errors = Vec::new();
    let mut failed: BTreeSet<(String, String)> = BTreeSet::new();
    for (index, report, made) in rendered {
        let (side, environment, release) = &wanted[index];
        let label = match side {
            Side::Old => format!("{}:{environment}/{}", diff.against, release.name),
            Side::New => format!("{environment}/{}", release.name),
        };
        match made {
            Some((resources, redactor)) => {
                objects.insert(
                    (environment.clone(), release.name.clone(), *side),
                    resources,
                );
                redactors.push(redactor);
            }
            None => {
                failed.insert((environment.clone(), release.name.clone()));
                let report = String::from_utf8_lossy(&report);
                errors.extend(report.lines().map(|line| format!("{label}: {line}")));
                if report.trim().is_empty() {
                    errors.push(format!("{label}: the render failed"));
                }
            }
        }
    }
    let redactor = Redactor::joined(&redactors);
    let mask = (!diff.show_secrets).then_some(&redactor);
    let mut compared = Vec::new();
    for environment in &environments {
        let names: BTreeSet<&String> = wanted
            .iter()
            .filter(|(_, e, _)| e == environment)
            .map(|(_, _, r)| &r.name)
            .collect();
        let mut releases = Vec::new();
        for name in names {
            if failed.contains(&(environment.clone(), name.clone())) {
                continue;
            }
            let side = |side| objects.get(&(environment.clone(), name.clone(), side));
            let (old, new) = (side(Side::Old), side(Side::New));
            let status = match (old, new) {
                (None, _) => "added",
                (_, None) => "removed",
                _ => "",
            };
            let (old, new) = (
                old.cloned().unwrap_or_default(),
                new.cloned().unwrap_or_default(),
            );
            let changes = compare(&old, &new, mask);
            let status = match status {
                "" if changes.changed.is_empty()
                    && changes.added.is_empty()
                    && changes.removed.is_empty() =>
                {
                    "same"
                }
                "" => "changed",
                status => status,
            };
            releases.push(ReleaseDiff {
                name: name.clone(),
                status,
                changes,
                old: masked(old, mask),
                new: masked(new, mask),
            });
        }
        compared.push(EnvironmentDiff {
            name: environment.clone(),
            releases,
        });
    }
    Ok(Compared {
        environments: compared,
        errors,
        redactor,
    })
}

/// `objects` with every Secret's data and every sensitive value masked, when `mask`.
fn masked(mut objects: Vec<Value>, mask: Option<&Redactor>) -> Vec<Value> {
    let Some(redactor) = mask else {
        return objects;
    };
    for object in &mut objects {
        let identity = Identity::of(object, "");
        if identity.group.is_empty() && identity.kind == "Secret" {
            for field in ["data", "stringData"] {
                if let Some(map) = object.get_mut(field).and_then(Value::as_object_mut) {
                    map.values_mut()
                        .for_each(|v| *v = Value::from(opm_core::redact::REDACTED));
                }
            }
        }
        redactor.redact_value(object);
    }
    objects
}

/// The releases file's tree at a revision, in a temporary directory removed when dropped.
struct Checkout {
    _dir: tempfile::TempDir,
    /// The releases file in it.
    file: PathBuf,
}

impl Checkout {
    /// Writes the tree of `revision` of the repository holding `file` into a temporary
    /// directory with `git archive` (nothing of the working tree or the repository changes),
    /// with each project's installed providers linked from the working tree.
    fn at(file: &Path, revision: &str) -> anyhow::Result<Self> {
        let dir = match file.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
            _ => PathBuf::from("."),
        };
        let git_in = |dir: &Path, args: &[&str]| -> anyhow::Result<Vec<u8>> {
            let output = std::process::Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(args)
                .stdin(std::process::Stdio::null())
                .output()
                .context("running git (opm platform diff reads the revision with it)")?;
            anyhow::ensure!(
                output.status.success(),
                "git {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr).trim()
            );
            Ok(output.stdout)
        };
        let top = PathBuf::from(
            String::from_utf8(git_in(&dir, &["rev-parse", "--show-toplevel"])?)
                .context("git's answer is not UTF-8")?
                .trim(),
        );
        anyhow::ensure!(
            !revision.starts_with('-'),
            "--against-ref {revision:?} is not a revision"
        );
        let commit = format!("{revision}^{{commit}}");
        // From the top: in a subdirectory, `git archive` writes only that directory's tree.
        let git = |args: &[&str]| git_in(&top, args);
        git(&["rev-parse", "--verify", "--quiet", &commit]).map_err(|_| {
            anyhow::anyhow!(
                "--against-ref {revision}: no such commit in {}",
                top.display()
            )
        })?;
        let checkout = tempfile::Builder::new()
            .prefix("opm-platform-diff-")
            .tempdir()
            .context("creating a directory for the revision's tree")?;
        // Streamed from git into the directory: a large repository is never held in memory.
        let mut archive = std::process::Command::new("git")
            .arg("-C")
            .arg(&top)
            .args(["archive", "--format=tar", &commit])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .context("running git archive")?;
        let stdout = archive.stdout.take().context("git archive's output")?;
        let unpacked = tar::Archive::new(stdout).unpack(checkout.path());
        let finished = archive.wait_with_output().context("running git archive")?;
        anyhow::ensure!(
            finished.status.success(),
            "git archive {commit}: {}",
            String::from_utf8_lossy(&finished.stderr).trim()
        );
        unpacked.with_context(|| format!("unpacking {revision}'s tree"))?;
        let absolute = std::fs::canonicalize(file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let top = std::fs::canonicalize(&top).unwrap_or(top);
        let relative = absolute
            .strip_prefix(&top)
            .with_context(|| format!("{} is not inside {}", file.display(), top.display()))?;
        link_installed_providers(&top, checkout.path());
        Ok(Self {
            file: checkout.path().join(relative),
            _dir: checkout,
        })
    }
}

/// For each project of the checkout at `tree` (a `.opm/providers.yaml`), a link to the working
/// tree's installed providers, where the checkout has none.
fn link_installed_providers(top: &Path, tree: &Path) {
    use opm_core::provider::installed::{DIR, INSTALL};
    fn walk(top: &Path, tree: &Path, relative: &Path, depth: usize) {
        let here = tree.join(relative);
        if here.join(DIR).is_dir() && !here.join(DIR).join(INSTALL).exists() {
            let installed = top.join(relative).join(DIR).join(INSTALL);
            if installed.is_dir() {
                #[cfg(unix)]
                let _ = std::os::unix::fs::symlink(&installed, here.join(DIR).join(INSTALL));
            }
        }
        if depth == 0 {
            return;
        }
        let Ok(entries) = std::fs::read_dir(&here) else {
            return;
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) && entry.file_name() != DIR {
                walk(top, tree, &relative.join(entry.file_name()), depth - 1);
            }
        }
    }
    walk(top, tree, Path::new(""), 8);
}

/// The text form: per release a header, each changed object's unified diff, the added and
/// removed objects.
pub fn text(compared: &Compared, against: &str, colors: bool) -> String {
    use opm_core::render::diff::{BOLD, paint};
    let mut out = String::new();
    for environment in &compared.environments {
        for release in environment.releases.iter().filter(|r| r.status != "same") {
            out.push_str(&paint(
                &format!(
                    "=== {}/{}: {}\n",
                    environment.name, release.name, release.status
                ),
                BOLD,
                colors,
            ));
            out.push_str(&changes_text(
                &release.changes,
                against,
                "working tree",
                colors,
            ));
        }
    }
    out
}

/// The most characters of unified diffs the Markdown form holds (a GitHub comment holds 65,536).
const MARKDOWN_DIFF_BUDGET: usize = 50_000;

/// The Markdown form, for a pull-request comment: a table per environment of the releases that
/// differ, each release's diff folded under it.
pub fn markdown(compared: &Compared, against: &str) -> String {
    let mut out = format!("## opm platform diff: `{against}` → working tree\n");
    let mut budget = MARKDOWN_DIFF_BUDGET;
    for environment in &compared.environments {
        let differing: Vec<&ReleaseDiff> = environment
            .releases
            .iter()
            .filter(|r| r.status != "same")
            .collect();
        let total = environment.releases.len();
        if differing.is_empty() {
            out.push_str(&format!(
                "\n### {}: no difference ({total} release{})\n",
                environment.name,
                if total == 1 { "" } else { "s" }
            ));
            continue;
        }
        out.push_str(&format!(
            "\n### {}: {} of {total} release{} differ\n\n| Release | Status | Changed | Added | Removed |\n|---|---|---:|---:|---:|\n",
            environment.name,
            differing.len(),
            if total == 1 { "" } else { "s" },
        ));
        for release in &differing {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                release.name,
                release.status,
                release.changes.changed.len(),
                release.changes.added.len(),
                release.changes.removed.len()
            ));
        }
        for release in &differing {
            let body = changes_text(&release.changes, against, "working tree", false);
            let body = if body.len() <= budget {
                budget -= body.len();
                // A fence longer than any run of backticks in the diff.
                let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
                let fence = "`".repeat(longest.max(2) + 1);
                format!("{fence}diff\n{body}{fence}\n")
            } else {
                budget = 0;
                "The diff is left out: the comment would be too long. Run `opm platform diff` \
                 for it.\n"
                    .to_owned()
            };
            out.push_str(&format!(
                "\n<details><summary>{}/{}: {} changed, {} added, {} removed</summary>\n\n{body}\n</details>\n",
                environment.name,
                release.name,
                release.changes.changed.len(),
                release.changes.added.len(),
                release.changes.removed.len(),
            ));
        }
    }
    out
}

/// The JSON form: every environment's releases with their status, the identities of what
/// changed, was added or removed, each changed object's unified diff, and both sides' objects.
pub fn json(compared: &Compared, against: &str) -> Value {
    let identity = |identity: &Identity| {
        json!({
            "group": identity.group,
            "kind": identity.kind,
            "namespace": identity.namespace,
            "name": identity.name,
        })
    };
    let environments: Vec<Value> = compared
        .environments
        .iter()
        .map(|environment| {
            let releases: Vec<Value> = environment
                .releases
                .iter()
                .map(|release| {
                    json!({
                        "name": release.name,
                        "status": release.status,
                        "changed": release.changes.changed.iter().map(|(id, old, new)| json!({
                            "object": identity(id),
                            "diff": unified(id, old, new, against, "working tree", false),
                        })).collect::<Vec<_>>(),
                        "added": release.changes.added.iter().map(identity).collect::<Vec<_>>(),
                        "removed": release.changes.removed.iter().map(identity).collect::<Vec<_>>(),
                        "old": release.old,
                        "new": release.new,
                    })
                })
                .collect();
            json!({"name": environment.name, "releases": releases})
        })
        .collect();
    json!({
        "against": against,
        "different": compared.different(),
        "environments": environments,
        "errors": compared.errors,
    })
}
