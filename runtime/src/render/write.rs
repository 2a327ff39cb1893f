//! Writers of rendered resources: a multi-document YAML stream, or a `v1` `List` as JSON.

use std::io::Write;

use rayon::prelude::*;
use serde_json::{Value, json};

use super::Resource;

/// The output formats of `opm mod build -o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A multi-document YAML stream, one document per resource.
    Yaml,
    /// One JSON `v1` `List` holding every resource.
    Json,
}

/// Rendered resources serialised in one format, ready to be written ([`Serialized::write`]).
#[derive(Debug)]
pub struct Serialized {
    format: Format,
    /// One YAML document per resource, or the one JSON `List`.
    documents: Vec<String>,
}

/// Serialises `resources` in `format`, each YAML document on the current rayon pool. Nothing is
/// written yet, so a failure here writes nothing.
pub fn serialize(resources: &[Resource], format: Format) -> anyhow::Result<Serialized> {
    let documents = match format {
        Format::Yaml => resources
            .par_iter()
            .map(|resource| yaml_of(&resource.json))
            .collect::<anyhow::Result<Vec<String>>>()?,
        Format::Json => {
            let items: Vec<Value> = resources.par_iter().map(Resource::value).collect();
            let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
            vec![serde_json::to_string_pretty(&list)? + "\n"]
        }
    };
    Ok(Serialized { format, documents })
}

impl Serialized {
    /// Writes the documents to `out` one after the other (never copied into one buffer first)
    /// and flushes.
    pub fn write(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
        for document in &self.documents {
            if self.format == Format::Yaml {
                out.write_all(b"---\n")?;
            }
            out.write_all(document.as_bytes())?;
        }
        out.flush()
    }
}

/// One YAML document, ending in a newline, from a resource's JSON text: converted as it is
/// read, without building the value in between.
pub fn yaml_of(json: &str) -> anyhow::Result<String> {
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

/// The file name of each resource under `--split`, in the same order: `<lowercase-kind>-<name>.yaml`.
///
/// Names never collide. When several resources share kind and name, each of them gets its
/// namespace after an underscore (`deployment-api_staging.yaml`; none for a cluster-scoped one);
/// when that still collides (the same kind in two API groups), the group follows after another
/// underscore (`ingress-web_shop_networking.k8s.io.yaml`, `core` for the core group).
/// Kubernetes names and namespaces never contain `_`, so the three forms cannot meet.
pub fn split_names(resources: &[Resource]) -> Vec<String> {
    use std::collections::BTreeMap;

    use super::order::Identity;

    let identities: Vec<&Identity> = resources.iter().map(|r| &r.identity).collect();
    let base: Vec<String> = identities
        .iter()
        .map(|id| format!("{}-{}", id.kind.to_lowercase(), id.name))
        .collect();
    let with_namespace: Vec<String> = identities
        .iter()
        .zip(&base)
        .map(|(id, base)| {
            if id.namespace.is_empty() {
                base.clone()
            } else {
                format!("{base}_{}", id.namespace)
            }
        })
        .collect();
    let count = |names: &[String]| {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for name in names {
            *counts.entry(name.as_str()).or_default() += 1;
        }
        counts
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect::<BTreeMap<String, usize>>()
    };
    let base_counts = count(&base);
    let namespace_counts = count(&with_namespace);
    identities
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let stem = if base_counts[&base[i]] == 1 {
                base[i].clone()
            } else if namespace_counts[&with_namespace[i]] == 1 {
                with_namespace[i].clone()
            } else {
                let group = if id.group.is_empty() {
                    "core"
                } else {
                    id.group.as_str()
                };
                let namespace = &id.namespace;
                format!("{}_{namespace}_{group}", base[i])
            };
            format!("{stem}.yaml")
        })
        .collect()
}

/// Writes `files` (name, bytes) as the whole content of `dir`, atomically: the files are
/// written into a fresh sibling directory, synced, and swapped in with one atomic exchange
/// (`renameat2(RENAME_EXCHANGE)` on Linux, two renames elsewhere). A failure at any point before
/// the swap leaves `dir` exactly as it was.
///
/// `dir` belongs to opm: after a successful write it holds exactly `files`. To keep a typo such
/// as `--out-dir .` from deleting someone's work, an existing `dir` that holds anything but
/// `.yaml` files is refused.
pub fn replace_dir(dir: &std::path::Path, files: &[(String, Vec<u8>)]) -> anyhow::Result<()> {
    use anyhow::Context as _;

    check_replaceable(dir)?;
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => std::path::PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).with_context(|| format!("creating {}", parent.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".opm-out-")
        .tempdir_in(&parent)
        .with_context(|| format!("creating a staging directory in {}", parent.display()))?;
    for (name, bytes) in files {
        let path = staging.path().join(name);
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

fn check_replaceable(dir: &std::path::Path) -> anyhow::Result<()> {
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
    for entry in entries {
        let entry = entry?;
        let is_yaml_file = entry.file_type()?.is_file()
            && entry.path().extension().is_some_and(|ext| ext == "yaml");
        if !is_yaml_file {
            anyhow::bail!(
                "--out-dir {} holds {}, which is not a rendered manifest: opm replaces the whole \
                 directory, so give it a directory of its own",
                dir.display(),
                entry.path().display()
            );
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
