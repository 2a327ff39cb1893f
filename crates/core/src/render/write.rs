//! Writing a render: YAML documents of resources (what a renderer's `yaml` chunk asks the host
//! for), and the atomic replacement of an `--out-dir` with the renderer's files and a record of
//! them ([`MANIFEST`]), so that opm never removes what it did not write.

use std::collections::BTreeSet;
use std::io::Write;

use serde_json::Value;

use super::FileMode;

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

pub use crate::yaml::bound as yaml_bound;

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

/// Prints the files of a render on `out`, as `opm mod build` does without `--out-dir`: one file
/// as it is, byte for byte; several in the multi-file form, the same for every renderer
/// (docs/rendering.md, "Several files on stdout"): each file after a line `==> PATH <==`
/// (`==> PATH (0600) <==` for a file not [`FileMode::Regular`]), ended with a newline if its
/// content is not, and a blank line between two files — the form `head` and `tail` print
/// several files in.
///
/// ```
/// use opm_core::render::{FileMode, OutputFile, write::print_files};
/// let mut out = Vec::new();
/// print_files(
///     &[
///         OutputFile::regular("api.container", b"[Container]\nImage=api\n".to_vec()),
///         OutputFile { mode: FileMode::Private, ..OutputFile::regular("secrets/key", b"k".to_vec()) },
///     ],
///     &mut out,
/// )
/// .unwrap();
/// assert_eq!(
///     String::from_utf8(out).unwrap(),
///     "==> api.container <==\n[Container]\nImage=api\n\n==> secrets/key (0600) <==\nk\n"
/// );
/// ```
pub fn print_files(files: &[super::OutputFile], out: &mut dyn Write) -> std::io::Result<()> {
    if let [one] = files {
        return out.write_all(&one.bytes);
    }
    for (index, file) in files.iter().enumerate() {
        if index > 0 {
            out.write_all(b"\n")?;
        }
        match file.mode {
            FileMode::Regular => writeln!(out, "==> {} <==", file.path)?,
            mode => writeln!(out, "==> {} ({:04o}) <==", file.path, mode.bits())?,
        }
        out.write_all(&file.bytes)?;
        if !file.bytes.is_empty() && !file.bytes.ends_with(b"\n") {
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

/// The file in an `--out-dir` that records what opm wrote there: a header line, then one path
/// per line, followed by a tab and its mode for a file not [`FileMode::Regular`]
/// (`secrets/db\t0600`; a path holds no control character). Without a `.yaml` or `.json`
/// extension, so that a GitOps engine reading the directory's manifests skips it; a renderer
/// may not write a file of this name.
pub const MANIFEST: &str = ".opm-output";

/// The first line of [`MANIFEST`].
const MANIFEST_HEADER: &str = "# opm output v1: the files opm wrote here; opm replaces this directory only while it holds nothing else";

/// The largest [`MANIFEST`] opm reads.
const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// From this many files on, `--out-dir` writes them on several threads: creating a file costs
/// the file system's latency more than the CPU (benches/RESULTS.md, "Writing --out-dir").
const PARALLEL_WRITES_FROM: usize = 64;

/// The prefix of the sibling directories a write is staged in: `.opm-out-PID-…`.
const STAGING_PREFIX: &str = ".opm-out-";

/// Writes `files` as the whole content of `dir`, atomically: the files are
/// written into a fresh sibling directory, synced to disk together ([`sync_staged`]), and
/// swapped in with one atomic exchange
/// (`renameat2(RENAME_EXCHANGE)` on Linux, two renames elsewhere). A failure at any point before
/// the swap leaves `dir` exactly as it was.
///
/// `dir` belongs to opm: after a successful write it holds exactly `files` (a name may have
/// `/`-separated folders) and [`MANIFEST`], the record of them. opm never removes what it did
/// not write, whatever the renderer writes: an existing `dir` is replaced only when everything
/// in it is listed in its record — or, for a directory opm has not recorded (an earlier opm's
/// output), when it holds only `.yaml`, `.yml` and `.json` files — and refused otherwise,
/// naming what it holds. Staging directories that renders killed before they finished are
/// removed first.
pub fn replace_dir(dir: &std::path::Path, files: &[super::OutputFile]) -> anyhow::Result<()> {
    let staged = stage(dir, files, true)?;
    sync_all([&staged])?;
    staged.commit()
}

/// The new content of a directory, written beside it and not yet swapped in
/// ([`replace_dir`] in three steps, so that many directories are synced to disk together:
/// `opm platform build` stages every release, syncs once, then swaps each in).
#[derive(Debug)]
pub struct Staged {
    dir: std::path::PathBuf,
    staging: tempfile::TempDir,
    /// Open since before the writes, so that a write-back error of what follows is reported
    /// by its sync ([`sync_staged`]).
    opened: std::fs::File,
    /// Every file staged, by path under the staging directory.
    paths: Vec<String>,
}

/// Writes `files` into a fresh sibling directory of `dir` (first checking that `dir` may be
/// replaced, and, with `sweep`, removing the staging directories of killed renders in its
/// parent: once per parent is enough, [`sweep_stale_staging`]).
pub fn stage(
    dir: &std::path::Path,
    files: &[super::OutputFile],
    sweep: bool,
) -> anyhow::Result<Staged> {
    use anyhow::Context as _;

    check_replaceable(dir)?;
    let parent = parent_of(dir);
    std::fs::create_dir_all(&parent).with_context(|| format!("creating {}", parent.display()))?;
    if sweep {
        sweep_stale_staging(&parent);
    }
    let staging = tempfile::Builder::new()
        .prefix(&format!("{STAGING_PREFIX}{}-", std::process::id()))
        .tempdir_in(&parent)
        .with_context(|| format!("creating a staging directory in {}", parent.display()))?;
    let mut record = String::from(MANIFEST_HEADER);
    record.push('\n');
    for super::OutputFile { path, mode, .. } in files {
        record.push_str(path);
        if *mode != FileMode::Regular {
            record.push_str(&format!("\t{:04o}", mode.bits()));
        }
        record.push('\n');
    }
    let manifest = super::OutputFile::regular(MANIFEST, record.into_bytes());
    let opened = std::fs::File::open(staging.path())
        .with_context(|| format!("opening {}", staging.path().display()))?;
    let all: Vec<&super::OutputFile> = files.iter().chain([&manifest]).collect();
    // Each folder once (not a `create_dir_all` per file: two system calls for each of 20,000
    // files of a large `--split`), then the files, on several threads when there are many.
    let folders: BTreeSet<&str> = all
        .iter()
        .filter_map(|file| file.path.rsplit_once('/').map(|(folder, _)| folder))
        .collect();
    for folder in folders {
        let path = staging.path().join(folder);
        std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
    }
    let write_new = |file: &super::OutputFile| -> anyhow::Result<()> {
        let path = staging.path().join(&file.path);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        // Created with its mode (less the umask), so a private file is never readable by
        // others, not even for a moment.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, file.mode.bits());
        let mut written = options
            .open(&path)
            .with_context(|| format!("writing {}", path.display()))?;
        written
            .write_all(&file.bytes)
            .with_context(|| format!("writing {}", path.display()))
    };
    // The record first: what a file written now is like (its mode, its owner), which a file
    // of the old directory must be too to be linked rather than written.
    write_new(&manifest)?;
    let fresh = dir
        .is_dir()
        .then(|| std::fs::metadata(staging.path().join(MANIFEST)).ok())
        .flatten();
    let write = |file: &&super::OutputFile| -> anyhow::Result<()> {
        if file.path == MANIFEST {
            return Ok(());
        }
        let path = staging.path().join(&file.path);
        // A file the directory holds already, byte for byte, with the mode and owner a new one
        // gets, is linked rather than written again: no data written, and removing the old
        // directory then frees no blocks (replacing a 10,000-component --split took 3–7× the
        // render to stdout, now 1.6×: benches/RESULTS.md).
        // A private or executable file is always written: the record's mode is a regular
        // file's.
        if let Some(fresh) = &fresh
            && file.mode == FileMode::Regular
            && same_file(&dir.join(&file.path), &file.bytes, fresh)
            && std::fs::hard_link(dir.join(&file.path), &path).is_ok()
        {
            return Ok(());
        }
        write_new(file)
    };
    if all.len() >= PARALLEL_WRITES_FROM {
        use rayon::prelude::*;
        all.par_iter().try_for_each(write)?;
    } else {
        all.iter().try_for_each(write)?;
    }
    Ok(Staged {
        dir: dir.to_owned(),
        paths: all.iter().map(|file| file.path.clone()).collect(),
        staging,
        opened,
    })
}

/// Removes `dir`, a directory opm wrote (as [`replace_dir`] would replace it: everything in it
/// listed in its record); anything else is refused and left.
pub fn remove_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context as _;
    anyhow::ensure!(
        dir.join(MANIFEST).is_file(),
        "{} has no record of what opm wrote",
        dir.display()
    );
    check_replaceable(dir)?;
    std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))
}

/// The files `dir`'s record lists, in its order, each with its mode: what opm wrote there last.
pub fn recorded(dir: &std::path::Path) -> anyhow::Result<Vec<(String, FileMode)>> {
    let manifest = dir.join(MANIFEST);
    let text = match std::fs::symlink_metadata(&manifest) {
        Ok(metadata) if metadata.is_file() && metadata.len() <= MAX_MANIFEST_BYTES => {
            std::fs::read_to_string(&manifest)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", manifest.display()))?
        }
        _ => anyhow::bail!("{} has no record of what opm wrote", dir.display()),
    };
    let mut lines = text.lines();
    anyhow::ensure!(
        lines.next() == Some(MANIFEST_HEADER),
        "{} is not opm's record of what it wrote",
        manifest.display()
    );
    lines
        .map(|line| {
            record_entry(line)
                .ok_or_else(|| anyhow::anyhow!("{}: a bad line {line:?}", manifest.display()))
        })
        .collect()
}

/// A line of the record: a path, and its mode when it is not [`FileMode::Regular`].
fn record_entry(line: &str) -> Option<(String, FileMode)> {
    match line.split_once('\t') {
        None => Some((line.to_owned(), FileMode::Regular)),
        Some((path, mode)) => {
            let mode = u32::from_str_radix(mode, 8)
                .ok()
                .and_then(FileMode::from_bits)?;
            Some((path.to_owned(), mode))
        }
    }
}

/// Whether the regular file at `path` holds exactly `bytes`, with the mode and owner of
/// `fresh` (what cannot be read does not).
fn same_file(path: &std::path::Path, bytes: &[u8], fresh: &std::fs::Metadata) -> bool {
    use std::io::Read as _;
    let Ok(metadata) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if !metadata.is_file() || metadata.len() != bytes.len() as u64 {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        if metadata.mode() != fresh.mode()
            || metadata.uid() != fresh.uid()
            || metadata.gid() != fresh.gid()
        {
            return false;
        }
    }
    #[cfg(not(unix))]
    let _ = fresh;
    let mut old = Vec::with_capacity(bytes.len());
    std::fs::File::open(path)
        .and_then(|file| file.take(bytes.len() as u64 + 1).read_to_end(&mut old))
        .is_ok_and(|_| old == bytes)
}

/// The directory `dir` is in (`.` for a bare name).
fn parent_of(dir: &std::path::Path) -> std::path::PathBuf {
    match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => std::path::PathBuf::from("."),
    }
}

/// Makes everything `staged` holds durable: one sync of each file system they are on.
pub fn sync_all<'a>(staged: impl IntoIterator<Item = &'a Staged>) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let mut synced = BTreeSet::new();
    for one in staged {
        #[cfg(unix)]
        let device = {
            use std::os::unix::fs::MetadataExt as _;
            one.opened.metadata().map(|m| m.dev()).ok()
        };
        #[cfg(not(unix))]
        let device: Option<u64> = None;
        // Elsewhere than Linux each staging directory's files are synced one by one.
        if cfg!(target_os = "linux") && device.is_some_and(|device| !synced.insert(device)) {
            continue;
        }
        sync_staged(&one.opened, one.staging.path(), &one.paths)
            .with_context(|| format!("syncing {} to disk", one.staging.path().display()))?;
    }
    Ok(())
}

impl Staged {
    /// The directory it replaces.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// Swaps the staged content in, once synced ([`sync_all`]): one atomic exchange when the
    /// directory exists (the old content is then removed), one rename when it does not.
    pub fn commit(self) -> anyhow::Result<()> {
        use anyhow::Context as _;
        let Self { dir, staging, .. } = self;
        if dir.exists() {
            swap(staging.path(), &dir).with_context(|| format!("replacing {}", dir.display()))?;
            // `staging` now names the old content, which its drop removes: its files first, on
            // several threads when there are many.
            remove_files(staging.path());
        } else {
            let staged = staging.keep();
            std::fs::rename(&staged, &dir)
                .with_context(|| format!("creating {}", dir.display()))?;
        }
        Ok(())
    }
}

/// Makes everything written into the staging directory `dir` (open as `opened` since before
/// the writes; the files at `paths` under it) durable before it is swapped in: on Linux with one
/// `syncfs` of the file system that holds it, which writes every file and folder out together
/// and reports a write-back error since `opened` was opened (Linux 5.8 and later; a FUSE file
/// system without `syncfs` support flushes nothing), elsewhere by syncing each file. One sync
/// per file cost a `--split` render of 10,000 components 10 s where its stdout took 1 s
/// (benches/RESULTS.md, "Writing --out-dir"). The price: `syncfs` also writes out what other
/// processes left dirty on that file system.
fn sync_staged(
    opened: &std::fs::File,
    dir: &std::path::Path,
    paths: &[String],
) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let _ = (dir, paths);
        rustix::fs::syncfs(opened).map_err(std::io::Error::from)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = opened;
        for path in paths {
            std::fs::File::open(dir.join(path))?.sync_all()?;
        }
        Ok(())
    }
}

/// Removes the files directly in `dir` (what is left, and the folders, `remove_dir_all` takes
/// after), on several threads when there are many; what cannot be removed is left.
fn remove_files(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let files: Vec<std::path::PathBuf> = entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_file()))
        .map(|entry| entry.path())
        .collect();
    let remove = |path: &std::path::PathBuf| {
        let _ = std::fs::remove_file(path);
    };
    if files.len() >= PARALLEL_WRITES_FROM {
        use rayon::prelude::*;
        files.par_iter().for_each(remove);
    } else {
        files.iter().for_each(remove);
    }
}

/// Removes the staging directories in `parent` of renders that were killed: those whose name
/// carries the id of a process that no longer runs. One a running render stages in, or one of
/// another opm's naming, is left alone; what cannot be removed is left for the next render.
pub fn sweep_stale_staging(parent: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(STAGING_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) && !process_runs(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether a process `pid` runs on this machine (or cannot be told apart from one that does).
fn process_runs(pid: i32) -> bool {
    #[cfg(unix)]
    {
        let Some(pid) = rustix::process::Pid::from_raw(pid) else {
            return true;
        };
        !matches!(
            rustix::process::test_kill_process(pid),
            Err(rustix::io::Errno::SRCH)
        )
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Whether `dir` may be replaced: absent, empty, everything in it listed in its [`MANIFEST`],
/// or, with no record, nothing but `.yaml`, `.yml` and `.json` files.
fn check_replaceable(dir: &std::path::Path) -> anyhow::Result<()> {
    let refuse = |path: &std::path::Path, why: &str| {
        anyhow::anyhow!(
            "--out-dir {} holds {}, which {why}: opm replaces the whole directory and never \
             removes what it did not write, so give it a directory of its own (or move that \
             away)",
            dir.display(),
            path.display()
        )
    };
    let manifest = dir.join(MANIFEST);
    let recorded = match std::fs::symlink_metadata(&manifest) {
        Ok(metadata) if metadata.is_file() && metadata.len() <= MAX_MANIFEST_BYTES => {
            let text = std::fs::read_to_string(&manifest)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", manifest.display()))?;
            if text.lines().next() != Some(MANIFEST_HEADER) {
                return Err(refuse(&manifest, "is not opm's record of what it wrote"));
            }
            Some(
                text.lines()
                    .skip(1)
                    .map(|line| record_entry(line).map(|(path, _)| path))
                    .collect::<Option<BTreeSet<_>>>()
                    .ok_or_else(|| refuse(&manifest, "is not opm's record of what it wrote"))?,
            )
        }
        Ok(_) => return Err(refuse(&manifest, "is not opm's record of what it wrote")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(anyhow::anyhow!(
                "--out-dir {} is a file, not a directory",
                dir.display()
            ));
        }
        Err(e) => {
            return Err(anyhow::anyhow!(
                "cannot read --out-dir {}: {e}",
                dir.display()
            ));
        }
    };
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
    match recorded {
        Some(recorded) => check_recorded(dir, "", &recorded, &refuse),
        None => {
            for entry in entries {
                let entry = entry?;
                let path = entry.path();
                let manifest_like = entry.file_type()?.is_file()
                    && path
                        .extension()
                        .and_then(|ext| ext.to_str())
                        .is_some_and(|ext| ["yaml", "yml", "json"].contains(&ext));
                if !manifest_like {
                    return Err(refuse(
                        &path,
                        "is not a manifest, and the directory has no record of what opm wrote",
                    ));
                }
            }
            Ok(())
        }
    }
}

/// Whether everything under `dir` (at `prefix`, `/`-separated) is a regular file `recorded`
/// lists, or a folder on the way to one.
fn check_recorded(
    dir: &std::path::Path,
    prefix: &str,
    recorded: &BTreeSet<String>,
    refuse: &dyn Fn(&std::path::Path, &str) -> anyhow::Error,
) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            return Err(refuse(&path, "opm did not write"));
        };
        let relative = format!("{prefix}{name}");
        let kind = entry.file_type()?;
        if prefix.is_empty() && name == MANIFEST && kind.is_file() {
            continue;
        }
        if kind.is_file() && recorded.contains(&relative) {
            continue;
        }
        let folder = format!("{relative}/");
        if kind.is_dir()
            && recorded
                .range(folder.clone()..)
                .next()
                .is_some_and(|first| first.starts_with(&folder))
        {
            check_recorded(&path, &folder, recorded, refuse)?;
            continue;
        }
        return Err(refuse(&path, "opm did not write"));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Each file is created with its mode (less the umask, which may only take bits away), and
    /// the record says which are not regular, so that a push of the directory read back packs
    /// the same modes.
    #[cfg(unix)]
    #[test]
    fn a_file_is_written_with_its_mode_and_recorded_with_it() {
        use std::os::unix::fs::MetadataExt as _;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let file = |path: &str, mode| super::super::OutputFile {
            path: path.to_owned(),
            bytes: b"x\n".to_vec(),
            mode,
        };
        let files = [
            file("api.container", FileMode::Regular),
            file("secrets/db/password", FileMode::Private),
            file("bin/start.sh", FileMode::Executable),
        ];
        for _ in 0..2 {
            replace_dir(&out, &files).unwrap();
            let mode = |name: &str| std::fs::metadata(out.join(name)).unwrap().mode() & 0o777;
            assert_eq!(mode("api.container") & !0o644, 0);
            assert_eq!(mode("secrets/db/password"), 0o600);
            assert_eq!(mode("bin/start.sh") & !0o755, 0);
            assert_eq!(mode("bin/start.sh") & 0o100, 0o100);
            assert_eq!(
                recorded(&out).unwrap(),
                [
                    ("api.container".to_owned(), FileMode::Regular),
                    ("secrets/db/password".to_owned(), FileMode::Private),
                    ("bin/start.sh".to_owned(), FileMode::Executable),
                ]
            );
        }
        std::fs::write(out.join(MANIFEST), format!("{MANIFEST_HEADER}\na\t0777\n")).unwrap();
        assert!(recorded(&out).is_err(), "a mode none of the three");
    }

    /// Replacing a directory links the files it holds already, byte for byte and as a new
    /// file would be (mode, owner), and writes the others: a changed file, and an unchanged
    /// one whose mode someone changed, are new files; the old directory's are untouched.
    #[cfg(unix)]
    #[test]
    fn an_unchanged_file_is_linked_and_any_other_written() {
        use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let file = |path: &str, bytes: &str| {
            super::super::OutputFile::regular(path, bytes.as_bytes().to_vec())
        };
        replace_dir(
            &out,
            &[
                file("same.yaml", "a: 1\n"),
                file("changed.yaml", "b: 1\n"),
                file("mode.yaml", "c: 1\n"),
            ],
        )
        .unwrap();
        std::fs::set_permissions(
            out.join("mode.yaml"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        let inode = |name: &str| std::fs::metadata(out.join(name)).unwrap().ino();
        let before = [
            inode("same.yaml"),
            inode("changed.yaml"),
            inode("mode.yaml"),
        ];
        // Held open: the old file stays readable, as it was, after the swap.
        let old_changed = std::fs::File::open(out.join("changed.yaml")).unwrap();
        replace_dir(
            &out,
            &[
                file("same.yaml", "a: 1\n"),
                file("changed.yaml", "b: 2\n"),
                file("mode.yaml", "c: 1\n"),
            ],
        )
        .unwrap();
        assert_eq!(
            inode("same.yaml"),
            before[0],
            "the unchanged file was written again"
        );
        assert_ne!(inode("changed.yaml"), before[1]);
        assert_ne!(
            inode("mode.yaml"),
            before[2],
            "a file of another mode was linked"
        );
        assert_ne!(
            std::fs::metadata(out.join("mode.yaml")).unwrap().mode() & 0o777,
            0o600
        );
        assert_eq!(
            std::fs::read_to_string(out.join("changed.yaml")).unwrap(),
            "b: 2\n"
        );
        assert_eq!(std::fs::metadata(out.join("same.yaml")).unwrap().nlink(), 1);
        let mut old = String::new();
        std::io::Read::read_to_string(&mut &old_changed, &mut old).unwrap();
        assert_eq!(old, "b: 1\n");
    }

    /// Whoever can write `--out-dir` can write its record: a record over the size opm reads,
    /// or one that is not a regular file, is refused before any of it is read, and the
    /// directory is left as it was.
    #[test]
    fn a_record_over_its_size_limit_or_not_a_file_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        // Sparse: as large as it says, without the bytes on disk.
        let record = std::fs::File::create(out.join(MANIFEST)).unwrap();
        record.set_len(MAX_MANIFEST_BYTES + 1).unwrap();
        let error = check_replaceable(&out).unwrap_err().to_string();
        assert!(
            error.contains("is not opm's record of what it wrote"),
            "{error}"
        );
        std::fs::remove_file(out.join(MANIFEST)).unwrap();
        std::fs::create_dir(out.join(MANIFEST)).unwrap();
        let error = check_replaceable(&out).unwrap_err().to_string();
        assert!(
            error.contains("is not opm's record of what it wrote"),
            "{error}"
        );
        assert!(out.join(MANIFEST).is_dir());
    }
}
