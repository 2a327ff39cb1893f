//! A render's output against the golden an author recorded beside a project (`opm transformer
//! test --with MODULE`): one stream against a file, or every file of an `--out-dir` against a
//! directory, compared byte for byte, recorded with `--bless` (a directory replaced whole,
//! written beside it first, so a failed write leaves it as it was).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context as _;

use super::cases;
use crate::render::OutputFile;

/// How a render compared with what was recorded.
#[derive(Debug)]
pub enum Compared {
    /// It is what was recorded.
    Same,
    /// `--bless` recorded it.
    Blessed,
    /// Nothing was recorded.
    Missing,
    /// It differs: a diff.
    Differs(String),
}

/// The one stream of a render (`files`, one file) against the file `golden`.
pub fn compare_stream(
    files: &[OutputFile],
    golden: &Path,
    bless: bool,
) -> anyhow::Result<Compared> {
    let bytes = files
        .first()
        .map(|file| file.bytes.clone())
        .unwrap_or_default();
    let text = String::from_utf8(bytes)?;
    let expected = std::fs::read_to_string(golden).ok();
    if expected.as_deref() == Some(text.as_str()) {
        return Ok(Compared::Same);
    }
    if bless {
        opm_core::files::write_atomically(golden, text.as_bytes())
            .with_context(|| format!("cannot write {}", golden.display()))?;
        return Ok(Compared::Blessed);
    }
    Ok(match expected {
        None => Compared::Missing,
        Some(expected) => Compared::Differs(cases::diff(
            &expected,
            &text,
            &golden.display().to_string(),
            "rendered",
        )),
    })
}

/// Every file of a render (`files`, as into `--out-dir`) against the directory `golden`: the
/// same paths with the same bytes.
pub fn compare_files(files: &[OutputFile], golden: &Path, bless: bool) -> anyhow::Result<Compared> {
    let got: BTreeMap<String, Vec<u8>> = files
        .iter()
        .map(|file| (file.path.clone(), file.bytes.clone()))
        .collect();
    let expected = if golden.is_dir() {
        let mut expected = BTreeMap::new();
        read_tree(golden, "", &mut expected)?;
        Some(expected)
    } else {
        None
    };
    if expected.as_ref() == Some(&got) {
        return Ok(Compared::Same);
    }
    if bless {
        write_tree(golden, &got)?;
        return Ok(Compared::Blessed);
    }
    let Some(expected) = expected else {
        return Ok(Compared::Missing);
    };
    let mut diff = String::new();
    let paths: std::collections::BTreeSet<&String> = expected.keys().chain(got.keys()).collect();
    for path in paths {
        match (expected.get(path), got.get(path)) {
            (Some(_), None) => diff.push_str(&format!("{path}: recorded, not rendered\n")),
            (None, Some(_)) => diff.push_str(&format!("{path}: rendered, not recorded\n")),
            (Some(before), Some(after)) if before != after => diff.push_str(&cases::diff(
                &String::from_utf8_lossy(before),
                &String::from_utf8_lossy(after),
                &golden.join(path).display().to_string(),
                "rendered",
            )),
            _ => {}
        }
    }
    Ok(Compared::Differs(diff))
}

/// Reads every file under `dir` into `files`, keyed by its `/`-separated path after `prefix`.
fn read_tree(
    dir: &Path,
    prefix: &str,
    files: &mut BTreeMap<String, Vec<u8>>,
) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = format!("{prefix}{name}");
        if entry.file_type()?.is_dir() {
            read_tree(&entry.path(), &format!("{path}/"), files)?;
        } else {
            let bytes = std::fs::read(entry.path())
                .with_context(|| format!("cannot read {}", entry.path().display()))?;
            files.insert(path, bytes);
        }
    }
    Ok(())
}

/// Replaces the directory `dir` with one holding exactly `files`: written beside it first, so
/// that a failed write leaves it as it was.
fn write_tree(dir: &Path, files: &BTreeMap<String, Vec<u8>>) -> anyhow::Result<()> {
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let staging = tempfile::Builder::new()
        .prefix(".rendered-")
        .tempdir_in(parent)
        .with_context(|| format!("cannot write beside {}", dir.display()))?;
    for (path, bytes) in files {
        let file = staging.path().join(path);
        if let Some(folder) = file.parent() {
            std::fs::create_dir_all(folder)?;
        }
        std::fs::write(&file, bytes).with_context(|| format!("cannot write {}", file.display()))?;
    }
    if dir.exists() {
        std::fs::remove_dir_all(dir)
            .with_context(|| format!("cannot replace {}", dir.display()))?;
    }
    std::fs::rename(staging.keep(), dir)
        .with_context(|| format!("cannot write {}", dir.display()))?;
    Ok(())
}
