//! What a project's component is built from, and whether the component is older than it, as
//! `make` decides: the project directory's files and the extra `sources:` its
//! `transformer.yaml` names (paths or globs relative to the project, such as
//! `../common/*.py`, code several projects of one provider share).
//!
//! [`freshness`] says whether `opm transformer test` may test the component as it is or must
//! build it first; [`stale_components`] finds, for `opm mod build -p DIR`, every component of a
//! provider source directory that is older than its project's sources (the render uses it as
//! built, and warns).
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! use opm_runtime::authoring::{project, sources};
//! let loaded = project::load(std::path::Path::new("greeter"))?;
//! match sources::freshness(&loaded)? {
//!     sources::Freshness::Fresh => println!("up to date"),
//!     sources::Freshness::Missing => println!("not built yet"),
//!     sources::Freshness::Stale(newest) => println!("{} changed", newest.path.display()),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! What builds, tests and other tools leave behind is not a source, wherever it lies: the
//! component itself, the case folders, hidden entries (`.git`, `.venv`), `target/`,
//! `node_modules/`, `__pycache__/`, packed bundles with their signatures, and the golden
//! render `opm transformer test --bless` records beside the project's module.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context as _, bail};

use super::project::{self, Loaded};

/// Directories other tools fill, never sources.
const OTHERS: [&str; 3] = ["target", "node_modules", "__pycache__"];
/// Extensions of packed bundles and their signatures, never sources.
const PACKED: [&str; 2] = ["opmb", "minisig"];

/// The most recently modified source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Newest {
    /// Its path (the project directory joined with what was found under it).
    pub path: PathBuf,
    /// When it was last modified.
    pub modified: SystemTime,
}

/// Whether a project's component may be used as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Freshness {
    /// Newer than every source.
    Fresh,
    /// Not built (or not readable).
    Missing,
    /// A source was modified at or after the component: the newest one.
    Stale(Newest),
}

/// Whether the project's component is newer than every one of its sources — the files of the
/// project directory and of its `sources:` — as `make` decides. A `sources:` entry that names
/// nothing is an error naming it: a mistyped path would otherwise leave an edit untested.
pub fn freshness(loaded: &Loaded) -> anyhow::Result<Freshness> {
    let Ok(built) = std::fs::metadata(loaded.component_path()).and_then(|m| m.modified()) else {
        return Ok(Freshness::Missing);
    };
    Ok(match newest_source(loaded)? {
        Some(newest) if newest.modified >= built => Freshness::Stale(newest),
        _ => Freshness::Fresh,
    })
}

/// The newest of the project's sources (see the module's doc), if it has any.
pub fn newest_source(loaded: &Loaded) -> anyhow::Result<Option<Newest>> {
    let mut skip = vec![loaded.component_path(), loaded.cases_dir()];
    // What `opm transformer test --bless` records beside the module is an expectation, as the
    // cases are: `rendered.yaml`, or the `rendered/` of a renderer's or a whole provider's.
    if let Some(module) = loaded.module_path() {
        skip.push(project::rendered_path(&module, project::Kind::Transformer));
        skip.push(project::rendered_path(&module, project::Kind::Renderer));
    }
    // Every walk starts from a canonical path, so what it meets is compared with `skip` as the
    // same path however it was named: a `sources:` entry `..` or `../**` reaches the project's
    // own component and cases by another name, which would make every build stale.
    let skip: Vec<PathBuf> = skip.iter().map(|path| canonical(path)).collect();
    let mut newest = None;
    newest_under(&canonical(&loaded.dir), &skip, &mut newest)
        .with_context(|| format!("cannot read the sources in {}", loaded.dir.display()))?;
    for entry in &loaded.project.sources {
        let matched = expand(&loaded.dir, entry).with_context(|| {
            format!(
                "{}: cannot read sources entry {entry:?}",
                loaded.dir.join(project::MANIFEST).display()
            )
        })?;
        if matched.is_empty() {
            bail!(
                "{}: sources entry {entry:?} names no file (paths and globs are relative to the \
                 project directory, {})",
                loaded.dir.join(project::MANIFEST).display(),
                loaded.dir.display()
            );
        }
        for path in matched {
            let path = canonical(&path);
            if skip.contains(&path) {
                continue;
            }
            newest_at(&path, &skip, &mut newest)
                .with_context(|| format!("cannot read the source {}", path.display()))?;
        }
    }
    Ok(newest)
}

/// `path` with every link and `..` resolved, or as it is when it cannot be (it does not exist).
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// The newest source at `path`: the file, or the newest file under the directory.
fn newest_at(path: &Path, skip: &[PathBuf], newest: &mut Option<Newest>) -> std::io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        newest_under(path, skip, newest)
    } else {
        consider(path, meta.modified()?, newest);
        Ok(())
    }
}

/// Keeps `path` in `newest` if it was modified later than what `newest` holds.
fn consider(path: &Path, modified: SystemTime, newest: &mut Option<Newest>) {
    if newest.as_ref().is_none_or(|n| modified > n.modified) {
        *newest = Some(Newest {
            path: path.to_owned(),
            modified,
        });
    }
}

/// The newest source file under `dir`, at any depth, leaving out `skip` and what tools leave
/// behind. A link is not followed into: it is a source by its own time.
fn newest_under(dir: &Path, skip: &[PathBuf], newest: &mut Option<Newest>) -> std::io::Result<()> {
    let mut entries = std::fs::read_dir(dir)?.collect::<Result<Vec<_>, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || skip.contains(&path) {
            continue;
        }
        let kind = entry.file_type()?;
        if kind.is_dir() {
            if !OTHERS.contains(&name.as_ref()) {
                newest_under(&path, skip, newest)?;
            }
            continue;
        }
        let packed = path
            .extension()
            .is_some_and(|ext| PACKED.iter().any(|p| ext == *p));
        if !packed {
            consider(&path, entry.metadata()?.modified()?, newest);
        }
    }
    Ok(())
}

/// What a `sources:` entry names under `base`, in name order: the path itself, or with `*`
/// (any run of characters within one name), `?` (one character) and `**` (any number of
/// directories) every path that matches. A wildcard matches no hidden name unless the pattern
/// starts with `.`, and `**` does not descend into hidden directories or those tools fill.
pub fn expand(base: &Path, entry: &str) -> std::io::Result<Vec<PathBuf>> {
    let parts: Vec<&str> = entry.split('/').filter(|part| !part.is_empty()).collect();
    let mut found = Vec::new();
    let start = if entry.starts_with('/') {
        PathBuf::from("/")
    } else {
        base.to_owned()
    };
    expand_parts(&start, &parts, &mut found)?;
    found.dedup();
    Ok(found)
}

fn expand_parts(base: &Path, parts: &[&str], found: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let Some((first, rest)) = parts.split_first() else {
        if std::fs::symlink_metadata(base).is_ok() {
            found.push(base.to_owned());
        }
        return Ok(());
    };
    if !is_pattern(first) {
        return expand_parts(&base.join(first), rest, found);
    }
    if !base.is_dir() {
        return Ok(());
    }
    let mut entries = std::fs::read_dir(base)?.collect::<Result<Vec<_>, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    if *first == "**" {
        expand_parts(base, rest, found)?;
        for entry in entries {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if entry.file_type()?.is_dir()
                && !name.starts_with('.')
                && !OTHERS.contains(&name.as_ref())
            {
                expand_parts(&entry.path(), parts, found)?;
            }
        }
        return Ok(());
    }
    for entry in entries {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') && !first.starts_with('.') {
            continue;
        }
        if wildcard(first, &name) {
            expand_parts(&entry.path(), rest, found)?;
        }
    }
    Ok(())
}

/// Whether a path component is a pattern rather than a name.
fn is_pattern(part: &str) -> bool {
    part.contains(['*', '?'])
}

/// Whether `name` matches `pattern`, where `*` is any run of characters and `?` one character.
fn wildcard(pattern: &str, name: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    let (mut p, mut n) = (0, 0);
    // Where the last `*` was, and the name position it was tried at: backtrack there.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((at, tried)) => {
                    p = at + 1;
                    n = tried + 1;
                    star = Some((at, tried + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

/// A component of a provider source directory older than a source of the project that builds
/// it ([`stale_components`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    /// The component, as the provider's manifest names it (relative to the provider directory).
    pub component: String,
    /// The project directory that builds it.
    pub project: PathBuf,
    /// Its newest source.
    pub newest: Newest,
}

/// Every component of the provider source directory `dir` (its `provider.yaml`'s transformers
/// and renderer) that is older than a source of the project that builds it: the nearest
/// directory from the component's up to `dir` holding a `transformer.yaml` whose `component`
/// is that file. A component no project builds, or whose project cannot be read, is left out:
/// this is a warning's evidence, never a reason to refuse a render.
pub fn stale_components(dir: &Path) -> Vec<Stale> {
    let Ok((_, manifest)) = opm_core::provider::read_manifest(dir) else {
        return Vec::new();
    };
    let mut components: Vec<&str> = manifest
        .transformers
        .values()
        .map(|t| t.component.as_str())
        .chain(manifest.renderer.as_ref().map(|r| r.component.as_str()))
        .collect();
    components.sort_unstable();
    components.dedup();
    let root = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
    components
        .into_iter()
        .filter_map(|component| {
            let file = std::fs::canonicalize(dir.join(component)).ok()?;
            let loaded = project_of(&file, &root)?;
            match freshness(&loaded).ok()? {
                Freshness::Stale(newest) => Some(Stale {
                    component: component.to_owned(),
                    project: loaded.dir,
                    newest,
                }),
                _ => None,
            }
        })
        .collect()
}

/// The project whose `component` is `file`: looked for in `file`'s directory, then each parent
/// up to `root`.
fn project_of(file: &Path, root: &Path) -> Option<Loaded> {
    let mut dir = file.parent();
    while let Some(candidate) = dir {
        if candidate.join(project::MANIFEST).is_file()
            && let Ok(loaded) = project::load(candidate)
            && std::fs::canonicalize(loaded.component_path()).is_ok_and(|c| c == file)
        {
            return Some(loaded);
        }
        if candidate == root {
            break;
        }
        dir = candidate.parent();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_at(path: &Path, time: SystemTime) {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        let file = std::fs::File::create(path).expect("create");
        file.set_modified(time).expect("set mtime");
    }

    #[test]
    fn wildcards_match_within_one_name() {
        assert!(wildcard("*.py", "render.py"));
        assert!(wildcard("*", "x"));
        assert!(wildcard("a*b*c", "aXXbYYc"));
        assert!(wildcard("?.rs", "x.rs"));
        assert!(!wildcard("*.py", "render.pyc"));
        assert!(!wildcard("a*b", "ac"));
        assert!(wildcard("**", "anything"));
    }

    #[test]
    fn entries_expand_to_paths_globs_and_any_depth() {
        let dir = tempfile::tempdir().expect("temp dir");
        let now = SystemTime::now();
        for file in [
            "common/a.py",
            "common/b.js",
            "common/deep/c.py",
            "common/.hidden.py",
            "common/node_modules/d.py",
        ] {
            write_at(&dir.path().join(file), now);
        }
        let project = dir.path().join("project");
        std::fs::create_dir_all(&project).expect("mkdir");
        let names = |entry: &str| -> Vec<String> {
            expand(&project, entry)
                .expect("expands")
                .iter()
                .map(|p| {
                    p.strip_prefix(&project)
                        .expect("under the project")
                        .display()
                        .to_string()
                })
                .collect()
        };
        assert_eq!(names("../common/*.py"), ["../common/a.py"]);
        assert_eq!(names("../common"), ["../common"]);
        assert_eq!(
            names("../common/**/*.py"),
            ["../common/a.py", "../common/deep/c.py"]
        );
        assert_eq!(names("../common/.*.py"), ["../common/.hidden.py"]);
        assert!(names("../missing/*.py").is_empty());
        assert!(names("../common/none.py").is_empty());
    }
}
