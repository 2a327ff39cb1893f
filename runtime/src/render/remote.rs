//! Modules in OCI registries: `opm mod publish` pushes a module — its file, or every file of its
//! directory — as an OCI artifact of one `tar+gzip` layer ([`published_files`]), and a module
//! reference `oci://HOST/REPO[:TAG|@DIGEST]` — in a releases file, or given to `opm mod build` and
//! `opm mod push` — is fetched ([`fetch`]) into a temporary directory that lives as long as the
//! render, every byte checked against the manifest's digests. What the render's provenance
//! records as its module is the reference as given, so a render of `oci://…` says where its
//! module came from, not where it was unpacked.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::{OutputFile, Request};
use opm_core::provider::oci::OciRef;

/// How a module reference names a registry.
pub const SCHEME: &str = "oci://";

/// The most bytes of module files opm publishes or fetches.
pub const MAX_MODULE_BYTES: u64 = 16 << 20;

/// Whether `module` names a module in a registry.
pub fn is_remote(module: &Path) -> bool {
    module.to_str().is_some_and(|text| text.starts_with(SCHEME))
}

/// The files `opm mod publish` puts in the layer of the module at `module`: for a directory,
/// every regular file under it whose name does not start with `.` (in path order); for a file,
/// that file alone, as `module.yaml` (or `module.json`) so that the fetched directory is a
/// module directory.
pub fn published_files(module: &Path) -> anyhow::Result<Vec<OutputFile>> {
    let mut files = Vec::new();
    let mut total = 0u64;
    let mut add = |path: String, full: &Path, files: &mut Vec<OutputFile>| -> anyhow::Result<()> {
        let bytes = std::fs::read(full).with_context(|| format!("reading {}", full.display()))?;
        total += bytes.len() as u64;
        anyhow::ensure!(
            total <= MAX_MODULE_BYTES,
            "{}: a module's files are at most {MAX_MODULE_BYTES} bytes",
            module.display()
        );
        files.push(OutputFile::regular(path, bytes));
        Ok(())
    };
    if module.is_file() {
        let name = if module.extension().is_some_and(|e| e == "json") {
            "module.json"
        } else {
            "module.yaml"
        };
        add(name.to_owned(), module, &mut files)?;
        return Ok(files);
    }
    anyhow::ensure!(
        opm_core::module::module_file(module).is_file(),
        "{} holds no module.yaml (or module.json)",
        module.display()
    );
    let mut pending = vec![(module.to_owned(), String::new())];
    while let Some((dir, prefix)) = pending.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .collect::<Result<_, _>>()
            .with_context(|| format!("reading {}", dir.display()))?;
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            let kind = entry.file_type()?;
            if kind.is_dir() {
                pending.push((entry.path(), format!("{prefix}{name}/")));
            } else if kind.is_file() {
                add(format!("{prefix}{name}"), &entry.path(), &mut files)?;
            }
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// Fetches the module `reference` into a new directory under `into`; the directory.
pub fn fetch(
    reference: &str,
    options: &opm_registry::Options,
    into: &Path,
) -> anyhow::Result<PathBuf> {
    let source = OciRef::parse(reference)?;
    let (digest, layer) = opm_registry::pull_render(&source, options, MAX_MODULE_BYTES)
        .with_context(|| format!("fetching the module {reference}"))?;
    let files = opm_core::render::artifact::read_layer(&layer, MAX_MODULE_BYTES)
        .with_context(|| format!("the module {reference} ({digest})"))?;
    let dir = into.join(digest.replace(':', "-"));
    for (path, bytes) in &files {
        let full = dir.join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&full, bytes).with_context(|| format!("writing {}", full.display()))?;
    }
    anyhow::ensure!(
        opm_core::module::module_file(&dir).is_file(),
        "{reference} ({digest}) holds no module.yaml (or module.json) at its root: it is not a \
         module (`opm mod publish` pushes one)"
    );
    Ok(dir)
}

/// Modules fetched for one run: each reference once, into a temporary directory removed when
/// this is dropped.
pub struct Fetched {
    /// Made on the first fetch: a render of a local module makes none.
    dir: std::sync::OnceLock<tempfile::TempDir>,
    options: opm_registry::Options,
    found: std::sync::Mutex<std::collections::HashMap<String, Result<PathBuf, String>>>,
}

impl std::fmt::Debug for Fetched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetched").finish_non_exhaustive()
    }
}

impl Fetched {
    /// Nothing fetched yet; registries reached with `options`.
    pub fn new(options: opm_registry::Options) -> Self {
        Self {
            dir: std::sync::OnceLock::new(),
            options,
            found: std::sync::Mutex::default(),
        }
    }

    /// The local directory of the module `reference`, fetched on first use.
    pub fn get(&self, reference: &str) -> anyhow::Result<PathBuf> {
        let mut found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        found
            .entry(reference.to_owned())
            .or_insert_with(|| {
                let dir = match self.dir.get() {
                    Some(dir) => dir,
                    None => {
                        let made = tempfile::Builder::new()
                            .prefix("opm-modules-")
                            .tempdir()
                            .map_err(|e| {
                                format!("creating a directory for fetched modules: {e}")
                            })?;
                        self.dir.get_or_init(|| made)
                    }
                };
                fetch(reference, &self.options, dir.path()).map_err(|e| format!("{e:#}"))
            })
            .clone()
            .map_err(anyhow::Error::msg)
    }

    /// `request` with a remote module fetched: its `module` the local directory, its
    /// `module_reference` the reference as given. A local module is left as it is.
    pub fn resolve(&self, mut request: Request) -> anyhow::Result<Request> {
        if is_remote(&request.module) {
            let reference = request.module.display().to_string();
            request.module = self.get(&reference)?;
            request.module_reference = Some(reference);
        }
        Ok(request)
    }
}
