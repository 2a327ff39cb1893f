//! What a renderer's answer may lay out, checked before the host makes anything of it: the
//! files' paths, how many files, and which resources it asks the host to write as YAML. The
//! checks see a renderer's files as [`Piece`]s (the length of a `bytes` chunk, the position a
//! `yaml` chunk names), so that they run, and are fuzzed, without the sandbox.
//!
//! ```
//! use opm_core::render::layout::{Piece, check_files};
//!
//! let stream = [("hello.yaml", vec![Piece::Bytes(4), Piece::Yaml(0), Piece::Yaml(1)])];
//! let checked = check_files(&stream, 2).unwrap();
//! assert_eq!(checked.wanted, [1, 1]);
//! assert!(check_files(&[("../x", vec![])], 2).is_err());
//! ```

use std::collections::BTreeSet;

/// A piece of a file a renderer returned, as the checks see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece {
    /// A `bytes` chunk of this many bytes.
    Bytes(usize),
    /// A `yaml` chunk: the resource at this position, written by the host.
    Yaml(u32),
}

/// What a layout that passed asks of the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// How often each resource, by position, is asked for as YAML.
    pub wanted: Vec<usize>,
    /// The bytes of the `bytes` chunks together.
    pub bytes: usize,
}

/// The most `yaml` chunks a renderer may return per resource it was given (plus a
/// few): enough to write every resource in a stream and once more in a file of its own, not
/// enough to make the host write a large resource a million times.
pub const YAML_CHUNKS_PER_RESOURCE: usize = 4;

/// Checks the files a renderer returned for `resources` resources, each a path and its pieces
/// (as many without `--out-dir` as with it: the host prints several in its multi-file form): at
/// most [`max_files`]; every path inside the
/// directory ([`check_path`]) and given once; every `yaml` chunk naming a resource it was given,
/// at most [`YAML_CHUNKS_PER_RESOURCE`] times each.
pub fn check_files(files: &[(&str, Vec<Piece>)], resources: usize) -> Result<Checked, String> {
    let most_files = max_files(resources);
    if files.len() > most_files {
        return Err(format!(
            "returned {} files for {resources} resources, over the limit of {most_files} \
             ({MAX_FILES_BASE} and {FILES_PER_RESOURCE} per resource)",
            files.len()
        ));
    }
    let mut paths = BTreeSet::new();
    // How often each resource is asked for as YAML, by position: a set of 20,000 numbers built
    // and then read back in order on one thread took 2 ms of a large render.
    let mut wanted = vec![0usize; resources];
    let mut bytes = 0usize;
    for (path, pieces) in files {
        check_path(path)?;
        if !paths.insert(*path) {
            return Err(format!("returned the file {path:?} twice"));
        }
        for piece in pieces {
            match *piece {
                Piece::Bytes(size) => bytes = bytes.saturating_add(size),
                Piece::Yaml(index) => {
                    let Some(slot) = wanted.get_mut(index as usize) else {
                        return Err(format!(
                            "asked for resource #{index} as YAML, but it was given {resources}"
                        ));
                    };
                    *slot += 1;
                    if *slot > YAML_CHUNKS_PER_RESOURCE {
                        return Err(format!(
                            "asked for resource #{index} as YAML more than \
                             {YAML_CHUNKS_PER_RESOURCE} times, the limit per resource"
                        ));
                    }
                }
            }
        }
    }
    Ok(Checked { wanted, bytes })
}

/// The longest reason for a refusal that is reported: each becomes a failure on stderr.
pub const MAX_REFUSAL_REASON: usize = 1024;

/// Whether `refused` names each resource at most once, and only resources it was given
/// (`count` of them): every refusal is a failure the host reports, so a renderer must not make
/// it report more than the render has resources.
pub fn check_refusals(refused: &[(u32, String)], count: usize) -> Result<(), String> {
    if refused.len() > count {
        return Err(format!(
            "refused {} resources, but it was given {count}",
            refused.len()
        ));
    }
    let mut seen = vec![false; count];
    for (index, _) in refused {
        match seen.get_mut(*index as usize) {
            None => {
                return Err(format!(
                    "refused resource #{index}, but it was given {count}"
                ));
            }
            Some(true) => return Err(format!("refused resource #{index} twice")),
            Some(slot) => *slot = true,
        }
    }
    Ok(())
}

/// The longest path a renderer may return.
pub const MAX_PATH: usize = 1024;

/// The most `/`-separated segments of a path a renderer may return: folders of folders are
/// directories the host makes.
pub const MAX_PATH_SEGMENTS: usize = 16;

/// The files a renderer may return whatever the render: a stream, a compose project and its
/// side files.
pub const MAX_FILES_BASE: usize = 1024;

/// The files a renderer may return for each resource beyond [`MAX_FILES_BASE`]: one per resource
/// (`--split`) and a few side files (a compose config's keys).
pub const FILES_PER_RESOURCE: usize = 4;

/// The most files a renderer of `resources` resources may return.
pub fn max_files(resources: usize) -> usize {
    resources
        .saturating_mul(FILES_PER_RESOURCE)
        .saturating_add(MAX_FILES_BASE)
}

/// Whether `path` stays inside `--out-dir`: relative, `/`-separated, no empty, `.` or `..`
/// segment, no backslash or control character.
pub fn check_path(path: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("returned the file path {path:?}, which {why}"));
    if path.is_empty() || path.len() > MAX_PATH {
        return bad(&format!("is empty or longer than {MAX_PATH} bytes"));
    }
    if path.chars().any(|c| c.is_control() || c == '\\') {
        return bad("holds a control character or a backslash");
    }
    if path
        .split('/')
        .any(|segment| matches!(segment, "" | "." | ".."))
    {
        return bad("is absolute or has an empty, `.` or `..` segment");
    }
    if path.split('/').count() > MAX_PATH_SEGMENTS {
        return bad(&format!("is more than {MAX_PATH_SEGMENTS} folders deep"));
    }
    if path.split('/').next() == Some(super::write::MANIFEST) {
        return bad("is the host's own record of what it wrote");
    }
    if path.split('/').next() == Some(super::provenance::FILE) {
        return bad("is the host's own provenance of the render");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_output_directory() {
        for good in ["compose.yaml", "secrets/db/password", "a.b/c"] {
            assert!(check_path(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../b",
            "a//b",
            "./a",
            "a\\b",
            "a\nb",
            "a/",
            ".opm-output",
            "opm.render",
        ] {
            assert!(check_path(bad).is_err(), "{bad:?}");
        }
    }
}
