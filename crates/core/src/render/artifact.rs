//! A render as an OCI artifact (`opm mod push`): one `tar+gzip` layer of exactly the files
//! `--out-dir` writes, a config blob, and a manifest whose annotations say where the render came
//! from — reproducible to the digest, so that the same inputs give the same manifest digest on
//! any machine and at any time. [`write_layout`] writes it as an OCI image layout on disk, which
//! `skopeo copy oci:DIR:TAG docker://…` pushes unchanged later (an air-gapped copy).
//!
//! What reads it (docs/delivering.md has the sources this was checked against):
//! - Flux's `OCIRepository` takes the first layer unless a `layerSelector` says otherwise,
//!   requires it gzipped, and never reads the config blob; the config is Flux's own type
//!   ([`CONFIG_MEDIA_TYPE`]) all the same, as `flux push artifact` writes it.
//! - Argo CD (3.1 and later) wants exactly one content layer of an allowed media type, by
//!   default `application/vnd.oci.image.layer.v1.tar+gzip` ([`LAYER_MEDIA_TYPE`]) — not Flux's
//!   own layer type — and ignores any config but Helm's.
//!
//! ```
//! use opm_core::render::artifact::{self, LayerFile};
//!
//! use opm_core::render::FileMode;
//! let files = [LayerFile { path: "hello.yaml", bytes: b"kind: List\n", mode: FileMode::Regular }];
//! let a = artifact::build(&files, 0, Default::default()).unwrap();
//! let b = artifact::build(&files, 0, Default::default()).unwrap();
//! assert_eq!(a.digest, b.digest);
//! assert!(a.digest.starts_with("sha256:"));
//! ```

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;

use crate::provider::oci::documents::{self, MANIFEST_MEDIA_TYPE, Manifest};

/// The media type of the one layer: the generic OCI `tar+gzip`, which both Flux and Argo CD
/// read.
pub const LAYER_MEDIA_TYPE: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
/// The media type of the config blob: Flux's, as `flux push artifact` writes it.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.cncf.flux.config.v1+json";
/// The config blob: nothing that the annotations do not say already.
pub const CONFIG: &[u8] = b"{}";

/// Annotation: where the module's source lives (a repository URL).
pub const SOURCE_ANNOTATION: &str = "org.opencontainers.image.source";
/// Annotation: the source revision rendered (`sha1:COMMIT` from a git checkout).
pub const REVISION_ANNOTATION: &str = "org.opencontainers.image.revision";
/// Annotation: when, as `SOURCE_DATE_EPOCH` says (else 1970-01-01T00:00:00Z).
pub const CREATED_ANNOTATION: &str = "org.opencontainers.image.created";
/// The prefix of opm's own annotations of a render.
pub const RENDER_ANNOTATION_PREFIX: &str = "dev.opmodel.render.";

/// One file of the layer.
#[derive(Debug, Clone, Copy)]
pub struct LayerFile<'a> {
    /// Relative, `/`-separated path.
    pub path: &'a str,
    /// Its bytes.
    pub bytes: &'a [u8],
    /// Its mode, the tar entry's.
    pub mode: super::FileMode,
}

/// An artifact, every blob in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// The config blob ([`CONFIG`]).
    pub config: Vec<u8>,
    /// The layer: a gzipped tar of the files.
    pub layer: Vec<u8>,
    /// The image manifest, as pushed.
    pub manifest: Vec<u8>,
    /// The manifest's `sha256:` digest.
    pub digest: String,
}

impl Artifact {
    /// The blobs the manifest names, config first, each with its digest.
    pub fn blobs(&self) -> [(String, &[u8]); 2] {
        [
            (documents::sha256_digest(&self.config), &self.config[..]),
            (documents::sha256_digest(&self.layer), &self.layer[..]),
        ]
    }
}

/// The artifact of `files` (sorted by path here, whatever their order), each of its mode (0644,
/// 0600 or 0755) and owned by uid and gid 0, with `mtime` (seconds since the epoch: `SOURCE_DATE_EPOCH`, else 0)
/// on every entry; folders on the way to a file are entries of their own (0755). The gzip
/// stream has no name and no time. `annotations` go on the manifest.
pub fn build(
    files: &[LayerFile<'_>],
    mtime: u64,
    annotations: BTreeMap<String, String>,
) -> anyhow::Result<Artifact> {
    let layer = layer(files, mtime)?;
    let config = CONFIG.to_vec();
    let descriptor = crate::provider::oci::attached::descriptor;
    let manifest = serde_json::to_vec(&Manifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.to_owned()),
        artifact_type: None,
        config: descriptor(CONFIG_MEDIA_TYPE, &config),
        layers: vec![descriptor(LAYER_MEDIA_TYPE, &layer)],
        annotations: (!annotations.is_empty()).then_some(annotations),
        subject: None,
    })?;
    let digest = documents::sha256_digest(&manifest);
    Ok(Artifact {
        config,
        layer,
        manifest,
        digest,
    })
}

/// The gzipped tar of `files`, as [`build`] describes it.
pub fn layer(files: &[LayerFile<'_>], mtime: u64) -> anyhow::Result<Vec<u8>> {
    let mut sorted: Vec<&LayerFile<'_>> = files.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(b.path));
    let gzip = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gzip);
    let mut folders = std::collections::BTreeSet::new();
    for file in sorted {
        let mut at = 0;
        while let Some(slash) = file.path[at..].find('/') {
            let folder = &file.path[..at + slash];
            if folders.insert(folder.to_owned()) {
                let mut header = header(tar::EntryType::Directory, 0o755, 0, mtime);
                tar.append_data(&mut header, format!("{folder}/"), std::io::empty())
                    .with_context(|| format!("writing the folder {folder} into the layer"))?;
            }
            at += slash + 1;
        }
        let mut header = header(
            tar::EntryType::Regular,
            file.mode.bits(),
            file.bytes.len() as u64,
            mtime,
        );
        tar.append_data(&mut header, file.path, file.bytes)
            .with_context(|| format!("writing {} into the layer", file.path))?;
    }
    let gzip = tar.into_inner().context("finishing the layer's tar")?;
    gzip.finish().context("finishing the layer's gzip")
}

/// The regular files of the gzipped tar `layer` (a pushed render's), by `/`-separated path,
/// reading at most `max` bytes of them in all, each entry counted with its 512-byte header (so
/// that a small gzip of endless empty entries is cut as soon as a large one): what `opm mod
/// verify` compares with the signed provenance, and a module fetched from a registry. Links,
/// devices and paths that leave the root are refused.
pub fn read_layer(layer: &[u8], max: u64) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    use std::io::Read as _;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(layer));
    let mut files = Vec::new();
    let mut total = 0u64;
    for entry in archive.entries().context("reading the layer's tar")? {
        let entry = entry.context("reading the layer's tar")?;
        total += HEADER_BYTES;
        anyhow::ensure!(total <= max, "the layer's files are over {max} bytes");
        let kind = entry.header().entry_type();
        let path = entry.path().context("a path in the layer")?.into_owned();
        if kind.is_dir() {
            continue;
        }
        anyhow::ensure!(
            kind.is_file(),
            "the layer holds {}, which is not a regular file",
            path.display()
        );
        let relative = path
            .components()
            .map(|c| match c {
                std::path::Component::Normal(part) => part.to_str().map(str::to_owned),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .with_context(|| format!("the layer holds the path {}", path.display()))?
            .join("/");
        let mut bytes = Vec::new();
        entry
            .take(max.saturating_sub(total) + 1)
            .read_to_end(&mut bytes)
            .with_context(|| format!("reading {relative} from the layer"))?;
        total += bytes.len() as u64;
        anyhow::ensure!(total <= max, "the layer's files are over {max} bytes");
        files.push((relative, bytes));
    }
    Ok(files)
}

/// What a tar entry's header takes, which [`read_layer`] counts toward its limit.
const HEADER_BYTES: u64 = 512;

/// A header of `kind` with `mode`, `size` and `mtime`, owned by root with no user or group
/// names; the path and checksum are set by `append_data`.
fn header(kind: tar::EntryType, mode: u32, size: u64, mtime: u64) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(mtime);
    header.set_size(size);
    header
}

/// Writes `artifact` into the OCI image layout `dir` under the tag `tag`
/// (`org.opencontainers.image.ref.name`): its blobs under `blobs/sha256/`, the `oci-layout`
/// file, and `index.json`, which keeps the other tags an existing layout has and replaces the
/// one of the same name.
pub fn write_layout(dir: &Path, artifact: &Artifact, tag: &str) -> anyhow::Result<()> {
    const REF_NAME: &str = "org.opencontainers.image.ref.name";
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).with_context(|| format!("creating {}", blobs.display()))?;
    let layout = dir.join("oci-layout");
    write_file(&layout, br#"{"imageLayoutVersion":"1.0.0"}"#)?;
    let (config, layer) = {
        let [config, layer] = artifact.blobs();
        (config, layer)
    };
    for (digest, bytes) in [
        config,
        layer,
        (artifact.digest.clone(), &artifact.manifest[..]),
    ] {
        let hex = digest.trim_start_matches("sha256:");
        write_file(&blobs.join(hex), bytes)?;
    }
    let index_path = dir.join("index.json");
    let mut manifests: Vec<serde_json::Value> = match std::fs::symlink_metadata(&index_path) {
        Ok(meta) if !meta.is_file() || meta.len() > MAX_INDEX_BYTES => anyhow::bail!(
            "{} is not a regular file of at most {MAX_INDEX_BYTES} bytes, as an OCI layout's \
             index is",
            index_path.display()
        ),
        Ok(_) => {
            let bytes = std::fs::read(&index_path)
                .with_context(|| format!("reading {}", index_path.display()))?;
            let index: serde_json::Value = serde_json::from_slice(&bytes)
                .with_context(|| format!("{} is not an OCI image index", index_path.display()))?;
            index["manifests"]
                .as_array()
                .cloned()
                .with_context(|| format!("{} lists no `manifests`", index_path.display()))?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", index_path.display())),
    };
    manifests.retain(|m| m["annotations"][REF_NAME].as_str() != Some(tag));
    manifests.push(serde_json::json!({
        "mediaType": MANIFEST_MEDIA_TYPE,
        "digest": artifact.digest,
        "size": artifact.manifest.len(),
        "annotations": {REF_NAME: tag},
    }));
    let index = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": documents::INDEX_MEDIA_TYPE,
        "manifests": manifests,
    });
    // Written beside and renamed over the old index, so that a push killed here leaves the
    // layout's other tags as they were.
    let staged = dir.join(".index.json.opm-tmp");
    write_file(&staged, &serde_json::to_vec(&index)?)?;
    std::fs::rename(&staged, &index_path)
        .with_context(|| format!("replacing {}", index_path.display()))
}

/// The largest `index.json` of an existing layout opm reads (as a registry's manifests).
const MAX_INDEX_BYTES: u64 = crate::provider::oci::limits::MAX_MANIFEST_BYTES;

fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut file =
        std::fs::File::create(path).with_context(|| format!("writing {}", path.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(layer: &[u8]) -> Vec<(String, u32, u64, u64, u64, Vec<u8>)> {
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(layer));
        archive
            .entries()
            .unwrap()
            .map(|entry| {
                let mut entry = entry.unwrap();
                let header = entry.header().clone();
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut entry, &mut bytes).unwrap();
                (
                    entry.path().unwrap().display().to_string(),
                    header.mode().unwrap(),
                    header.uid().unwrap(),
                    header.gid().unwrap(),
                    header.mtime().unwrap(),
                    bytes,
                )
            })
            .collect()
    }

    #[test]
    fn the_layer_is_sorted_root_owned_with_each_file_s_mode_and_the_given_time() {
        let files = [
            LayerFile {
                path: "b.yaml",
                bytes: b"b",
                mode: super::super::FileMode::Regular,
            },
            LayerFile {
                path: "configs/site/index.html",
                bytes: b"<p>",
                mode: super::super::FileMode::Private,
            },
            LayerFile {
                path: "a.yaml",
                bytes: b"a",
                mode: super::super::FileMode::Regular,
            },
        ];
        let layer = layer(&files, 1_700_000_000).unwrap();
        let found = entries(&layer);
        let names: Vec<&str> = found.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "a.yaml",
                "b.yaml",
                "configs/",
                "configs/site/",
                "configs/site/index.html"
            ]
        );
        for (name, mode, uid, gid, mtime, _) in &found {
            let want = if name.ends_with('/') {
                0o755
            } else if name.ends_with(".html") {
                0o600
            } else {
                0o644
            };
            assert_eq!((*mode, *uid, *gid, *mtime), (want, 0, 0, 1_700_000_000));
        }
        assert_eq!(found[4].5, b"<p>");
        // gzip: no name (FLG 0), no time (MTIME 0), OS unknown.
        assert_eq!(&layer[..4], &[0x1f, 0x8b, 8, 0]);
        assert_eq!(&layer[4..8], &[0, 0, 0, 0]);
        assert_eq!(layer[9], 255);
    }

    #[test]
    fn the_same_files_in_any_order_give_the_same_digest_and_another_time_another() {
        let one = [
            LayerFile {
                path: "a",
                bytes: b"1",
                mode: super::super::FileMode::Regular,
            },
            LayerFile {
                path: "b",
                bytes: b"2",
                mode: super::super::FileMode::Regular,
            },
        ];
        let other = [one[1], one[0]];
        let annotations = BTreeMap::from([("k".to_owned(), "v".to_owned())]);
        let a = build(&one, 0, annotations.clone()).unwrap();
        assert_eq!(a, build(&other, 0, annotations.clone()).unwrap());
        assert_ne!(a.digest, build(&one, 1, annotations).unwrap().digest);
        let manifest: serde_json::Value = serde_json::from_slice(&a.manifest).unwrap();
        assert_eq!(manifest["layers"][0]["mediaType"], LAYER_MEDIA_TYPE);
        assert_eq!(manifest["config"]["mediaType"], CONFIG_MEDIA_TYPE);
        assert_eq!(manifest["annotations"]["k"], "v");
    }

    /// Whoever made the layout directory controls its `index.json`: one over its limit, or a
    /// link (to `/dev/zero`, say), is refused unread, and nothing of the layout changes.
    #[test]
    fn an_index_over_its_limit_or_not_a_file_is_refused_unread() {
        let files = [LayerFile {
            path: "a",
            bytes: b"1",
            mode: super::super::FileMode::Regular,
        }];
        let artifact = build(&files, 0, BTreeMap::new()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join("index.json");
        // Sparse: as large as it says, without the bytes on disk.
        std::fs::File::create(&index)
            .unwrap()
            .set_len(MAX_INDEX_BYTES + 1)
            .unwrap();
        let error = write_layout(dir.path(), &artifact, "t").unwrap_err();
        assert!(
            format!("{error:#}").contains("not a regular file of at most"),
            "{error:#}"
        );
        assert_eq!(
            std::fs::metadata(&index).unwrap().len(),
            MAX_INDEX_BYTES + 1
        );
        std::fs::remove_file(&index).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &index).unwrap();
        let error = write_layout(dir.path(), &artifact, "t").unwrap_err();
        assert!(
            format!("{error:#}").contains("not a regular file of at most"),
            "{error:#}"
        );
        assert!(std::fs::symlink_metadata(&index).unwrap().is_symlink());
    }

    #[test]
    fn a_layout_keeps_other_tags_and_replaces_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let files = [LayerFile {
            path: "a",
            bytes: b"1",
            mode: super::super::FileMode::Regular,
        }];
        let first = build(&files, 0, BTreeMap::new()).unwrap();
        let second = build(&files, 5, BTreeMap::new()).unwrap();
        write_layout(dir.path(), &first, "one").unwrap();
        write_layout(dir.path(), &first, "two").unwrap();
        write_layout(dir.path(), &second, "two").unwrap();
        let index: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("index.json")).unwrap()).unwrap();
        let tags: Vec<(&str, &str)> = index["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["annotations"]["org.opencontainers.image.ref.name"]
                        .as_str()
                        .unwrap(),
                    m["digest"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            tags,
            [
                ("one", first.digest.as_str()),
                ("two", second.digest.as_str())
            ]
        );
        let hex = second.digest.trim_start_matches("sha256:");
        assert_eq!(
            std::fs::read(dir.path().join("blobs/sha256").join(hex)).unwrap(),
            second.manifest
        );
    }
}
