//! Writing a render: YAML documents of resources (what a renderer's `yaml` chunk asks the host
//! for), and the atomic replacement of an `--out-dir` with the renderer's files.

use std::io::Write;

use serde_json::Value;

/// One YAML document, ending in a newline, from a resource's JSON text: written straight from
/// the text when it has the usual shape ([`super::emit`]), else converted by `serde-saphyr` as
/// it is read, without building the value in between. Both write the same bytes.
pub fn yaml_of(json: &str) -> anyhow::Result<String> {
    if let Some(text) = super::emit::yaml_of_object(json) {
        return Ok(text);
    }
    let mut reader = serde_json::Deserializer::from_str(json);
    let text = yaml_document(&serde_transcode::Transcoder::new(&mut reader))?;
    reader.end()?;
    Ok(text)
}

/// One YAML document, ending in a newline.
pub fn yaml(value: &Value) -> anyhow::Result<String> {
    yaml_document(value)
}

fn yaml_document(value: &impl serde::Serialize) -> anyhow::Result<String> {
    let mut text = serde_saphyr::to_string(value)?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// Writes `files` as the whole content of `dir`, atomically: the files are
/// written into a fresh sibling directory, synced, and swapped in with one atomic exchange
/// (`renameat2(RENAME_EXCHANGE)` on Linux, two renames elsewhere). A failure at any point before
/// the swap leaves `dir` exactly as it was.
///
/// `dir` belongs to opm: after a successful write it holds exactly `files` (a name may have
/// `/`-separated folders). To keep a typo such as `--out-dir .` from deleting someone's work, an
/// existing `dir` that holds anything but `.yaml`, `.yml` or `.json` files (or files named like
/// those written now, `.jsonl` say), and folders of files beside them, is refused.
pub fn replace_dir(dir: &std::path::Path, files: &[super::OutputFile]) -> anyhow::Result<()> {
    use anyhow::Context as _;

    // A folder of earlier output holds files like the ones written now.
    let written: Vec<&str> = files
        .iter()
        .filter(|file| !file.path.contains('/'))
        .filter_map(|file| std::path::Path::new(&file.path).extension()?.to_str())
        .collect();
    check_replaceable(dir, &written)?;
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => std::path::PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).with_context(|| format!("creating {}", parent.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".opm-out-")
        .tempdir_in(&parent)
        .with_context(|| format!("creating a staging directory in {}", parent.display()))?;
    for super::OutputFile { path: name, bytes } in files {
        let path = staging.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let mut file =
            std::fs::File::create(&path).with_context(|| format!("writing {}", path.display()))?;
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if dir.exists() {
        swap(staging.path(), dir).with_context(|| format!("replacing {}", dir.display()))?;
        // `staging` now names the old content, which its drop removes.
    } else {
        let staged = staging.keep();
        std::fs::rename(&staged, dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    Ok(())
}

fn check_replaceable(dir: &std::path::Path, written: &[&str]) -> anyhow::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(anyhow::anyhow!(
                "cannot read --out-dir {}: {e}",
                dir.display()
            ));
        }
    };
    let refuse = |path: &std::path::Path| {
        anyhow::anyhow!(
            "--out-dir {} holds {}, which is not rendered output: opm replaces the whole \
             directory, so give it a directory of its own",
            dir.display(),
            path.display()
        )
    };
    let mut rendered_file = false;
    let mut subdirectories = Vec::new();
    for entry in entries {
        let entry = entry?;
        let kind = entry.file_type()?;
        let path = entry.path();
        if kind.is_dir() {
            subdirectories.push(path);
        } else if kind.is_file()
            && path
                .extension()
                .and_then(|ext| ext.to_str())
                .is_some_and(|ext| ["yaml", "yml", "json"].contains(&ext) || written.contains(&ext))
        {
            rendered_file = true;
        } else {
            return Err(refuse(&path));
        }
    }
    // A renderer's side files (a compose project's secrets) live in folders beside the file
    // it rendered; a folder beside nothing rendered is someone's work.
    if let Some(folder) = subdirectories.first()
        && !rendered_file
    {
        return Err(refuse(folder));
    }
    for folder in subdirectories {
        check_only_files(&folder, &refuse)?;
    }
    Ok(())
}

/// Whether `dir` holds only regular files and folders of them (no links), as a renderer writes.
fn check_only_files(
    dir: &std::path::Path,
    refuse: &dyn Fn(&std::path::Path) -> anyhow::Error,
) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            check_only_files(&entry.path(), refuse)?;
        } else if !kind.is_file() {
            return Err(refuse(&entry.path()));
        }
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn swap(a: &std::path::Path, b: &std::path::Path) -> std::io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(std::io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn swap(a: &std::path::Path, b: &std::path::Path) -> std::io::Result<()> {
    let aside = a.with_extension("old");
    std::fs::rename(b, &aside)?;
    std::fs::rename(a, b)?;
    std::fs::rename(&aside, a)
}
