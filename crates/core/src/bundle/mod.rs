//! Provider bundles: one file holding a manifest and the components of its transformers,
//! content-addressed with BLAKE3 (`providers/README.md`, "Bundles").
//!
//! - [`format`] defines the file format and writes it ([`format::pack`]): the crate
//!   `opm-bundle-format`, which `runtime/build.rs` uses too, so the embedded provider is an
//!   ordinary bundle.
//! - [`read`] opens a bundle and trusts nothing: sizes are checked before anything is read,
//!   every entry must be a regular file at a path the format names, every digest is checked,
//!   and the manifest must be canonical. What it returns has passed all of that.
//! - [`component`] checks that a component is one opm can run (a component, not a core module
//!   or precompiled code; the right export; allowed imports), without compiling it.
//! - [`signature`] signs and verifies bundle files with minisign keys.
//! - [`pack`](mod@pack) builds a bundle from a provider source directory.
//!
//! ```no_run
//! let bytes = std::fs::read("kubernetes-0.1.0.opmb")?;
//! let bundle = opm_core::bundle::read("kubernetes-0.1.0.opmb", &bytes)?;
//! println!("{} holds {} components", bundle.digest, bundle.components.len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod component;
pub use opm_bundle_format as format;
pub mod signature;

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;
use std::sync::Arc;

use format::{
    COMPONENTS_DIR, MANIFEST_DIR, MAX_BUNDLE_BYTES, MAX_COMPONENT_BYTES, MAX_ENTRIES,
    MAX_MANIFEST_BYTES,
};

/// A bundle whose structure and digests have been checked.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// `blake3:<hex>` of the canonical manifest.
    pub digest: String,
    /// The canonical manifest's bytes.
    pub manifest: Vec<u8>,
    /// Component bytes keyed by entry path (`components/<hex>.wasm`); each matches its name.
    pub components: BTreeMap<String, Blob>,
}

/// The bytes of a component: borrowed from the binary for an embedded provider, which needs no
/// copy, or shared.
#[derive(Clone)]
pub enum Blob {
    /// Part of the binary.
    Static(&'static [u8]),
    /// Read from a file or a registry.
    Shared(Arc<[u8]>),
}

impl std::ops::Deref for Blob {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Static(bytes) => bytes,
            Self::Shared(bytes) => bytes,
        }
    }
}

impl AsRef<[u8]> for Blob {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl std::fmt::Debug for Blob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Blob({} bytes)", self.len())
    }
}

impl From<Vec<u8>> for Blob {
    fn from(bytes: Vec<u8>) -> Self {
        Self::Shared(Arc::from(bytes))
    }
}

/// Reads a bundle that this binary embeds: made by `runtime/build.rs` with the packer of
/// [`format`] from the repository's own sources, and part of the program, so neither its
/// digests nor its structure are checked again, and its components are borrowed rather than
/// copied. Anything but the packer's plain entries (a header this does not read) is read by
/// [`read`] instead.
pub fn read_embedded(bundle: &str, bytes: &'static [u8]) -> Result<Bundle, BundleError> {
    let block = BLOCK as usize;
    let mut offset = 0;
    let mut manifest = None;
    let mut components = BTreeMap::new();
    while let Some(header) = bytes.get(offset..offset + block) {
        if header.iter().all(|b| *b == 0) {
            break;
        }
        let name_end = header[..100].iter().position(|b| *b == 0).unwrap_or(100);
        let name = std::str::from_utf8(&header[..name_end]).ok();
        let size = std::str::from_utf8(&header[124..136])
            .ok()
            .map(|text| text.trim_matches(|c: char| c == '\0' || c == ' '))
            .and_then(|text| usize::from_str_radix(text, 8).ok());
        let start = offset + block;
        let (Some(name), Some(size), b'0' | 0, Some(data)) = (
            name,
            size,
            header[156],
            size.and_then(|size| bytes.get(start..start + size)),
        ) else {
            return read(bundle, bytes);
        };
        match classify(name) {
            Some(Kind::Manifest(hex)) => manifest = Some((hex, data.to_vec())),
            Some(Kind::Component(_)) => {
                components.insert(name.to_owned(), Blob::Static(data));
            }
            None => return read(bundle, bytes),
        }
        offset = start + size.next_multiple_of(block);
    }
    match manifest {
        Some((hex, manifest)) => Ok(Bundle {
            digest: format!("blake3:{hex}"),
            manifest,
            components,
        }),
        None => read(bundle, bytes),
    }
}

/// Why a bundle was refused. Each names the bundle and, where there is one, the entry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    /// The bundle file could not be read.
    #[error("cannot read bundle {bundle}")]
    Read {
        /// The bundle.
        bundle: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The bundle file is larger than any bundle may be.
    #[error("bundle {bundle} is {size} bytes, over the limit of {limit} bytes for a bundle")]
    BundleTooLarge {
        /// The bundle.
        bundle: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The file ends before the archive does: cut short, or not a bundle at all.
    #[error(
        "bundle {bundle} is truncated or not a bundle: it does not end with the end-of-archive marker"
    )]
    Truncated {
        /// The bundle.
        bundle: String,
    },
    /// Bytes follow the end-of-archive marker. A bundle ends with the marker, so that one bundle
    /// digest has one bundle file.
    #[error(
        "bundle {bundle} has {bytes} bytes after the end-of-archive marker; a bundle ends with the marker's two zero blocks, right after its last entry"
    )]
    TrailingData {
        /// The bundle.
        bundle: String,
        /// How many bytes follow the marker.
        bytes: u64,
    },
    /// The archive structure is broken (a bad header checksum, an entry cut short).
    #[error("bundle {bundle} is malformed: {message}")]
    Malformed {
        /// The bundle.
        bundle: String,
        /// What the archive reader said.
        message: String,
    },
    /// An entry's path is absolute or goes up with `..`.
    #[error("bundle {bundle}: entry {entry:?} has a path that leaves the bundle")]
    PathEscapes {
        /// The bundle.
        bundle: String,
        /// The entry's path.
        entry: String,
    },
    /// An entry is a symbolic or hard link.
    #[error(
        "bundle {bundle}: entry {entry:?} is a link (to {target:?}); a bundle holds only regular files"
    )]
    Link {
        /// The bundle.
        bundle: String,
        /// The entry's path.
        entry: String,
        /// Where it points.
        target: String,
    },
    /// An entry is a directory, device or other non-file.
    #[error("bundle {bundle}: entry {entry:?} is a {kind}, not a regular file")]
    NotAFile {
        /// The bundle.
        bundle: String,
        /// The entry's path.
        entry: String,
        /// What it is.
        kind: String,
    },
    /// Two entries have the same path.
    #[error("bundle {bundle}: entry {entry:?} appears more than once")]
    Duplicate {
        /// The bundle.
        bundle: String,
        /// The entry's path.
        entry: String,
    },
    /// The bundle has more entries than any bundle may.
    #[error("bundle {bundle} has more than {limit} entries")]
    TooManyEntries {
        /// The bundle.
        bundle: String,
        /// The limit.
        limit: usize,
    },
    /// An entry is larger than its kind of entry may be.
    #[error("bundle {bundle}: entry {entry:?} is {size} bytes, over the limit of {limit} bytes")]
    EntryTooLarge {
        /// The bundle.
        bundle: String,
        /// The entry's path.
        entry: String,
        /// Its size, as its header says.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// An entry is at a path the format does not name.
    #[error(
        "bundle {bundle}: unexpected entry {entry:?}; a bundle holds only {MANIFEST_DIR}/<blake3>.json and {COMPONENTS_DIR}/<blake3>.wasm"
    )]
    UnexpectedEntry {
        /// The bundle.
        bundle: String,
        /// The entry's path.
        entry: String,
    },
    /// An entry's bytes do not have the digest its name says.
    #[error(
        "bundle {bundle}: entry {entry:?} has digest blake3:{actual}, not the blake3:{expected} its name says; the bundle was modified or corrupted"
    )]
    DigestMismatch {
        /// The bundle.
        bundle: String,
        /// The entry's path.
        entry: String,
        /// The digest in its name.
        expected: String,
        /// The digest of its bytes.
        actual: String,
    },
    /// The bundle has no manifest entry, or more than one.
    #[error("bundle {bundle} has {count} manifest entries; it must have exactly one")]
    ManifestCount {
        /// The bundle.
        bundle: String,
        /// How many it has.
        count: usize,
    },
    /// The manifest is not in canonical form, so its digest would not be the bundle's.
    #[error(
        "bundle {bundle}: the manifest is not in canonical form (sorted keys, two-space indentation); repack it with `opm provider pack`"
    )]
    NotCanonical {
        /// The bundle.
        bundle: String,
    },
    /// The manifest is not valid JSON.
    #[error("bundle {bundle}: the manifest is not valid JSON: {message}")]
    ManifestSyntax {
        /// The bundle.
        bundle: String,
        /// What the parser said, with line and column.
        message: String,
    },
    /// A component entry no transformer names.
    #[error("bundle {bundle}: entry {entry:?} is not the component of any transformer")]
    Unreferenced {
        /// The bundle.
        bundle: String,
        /// The entry's path.
        entry: String,
    },
    /// A transformer's `component` or `digest` does not name an entry of the bundle correctly.
    #[error("bundle {bundle}: transformer {transformer}: {message}")]
    Transformer {
        /// The bundle.
        bundle: String,
        /// The transformer FQN.
        transformer: String,
        /// What is wrong.
        message: String,
    },
}

/// Reads the bundle file at `path`; its size is checked before it is read.
pub fn read_file(path: &Path) -> Result<Bundle, BundleError> {
    let bytes = read_bytes(path)?;
    read(&path.display().to_string(), &bytes)
}

/// The bytes of the bundle file at `path`, refusing a file over [`MAX_BUNDLE_BYTES`] before
/// reading it.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, BundleError> {
    let bundle = path.display().to_string();
    let io = |source| BundleError::Read {
        bundle: bundle.clone(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    if size > MAX_BUNDLE_BYTES {
        return Err(BundleError::BundleTooLarge {
            bundle,
            size,
            limit: MAX_BUNDLE_BYTES,
        });
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(MAX_BUNDLE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_BUNDLE_BYTES {
        return Err(BundleError::BundleTooLarge {
            bundle,
            size: bytes.len() as u64,
            limit: MAX_BUNDLE_BYTES,
        });
    }
    Ok(bytes)
}

/// Checks and reads a bundle from its bytes; `bundle` names it in errors.
pub fn read(bundle: &str, bytes: &[u8]) -> Result<Bundle, BundleError> {
    let name = || bundle.to_owned();
    if bytes.len() as u64 > MAX_BUNDLE_BYTES {
        return Err(BundleError::BundleTooLarge {
            bundle: name(),
            size: bytes.len() as u64,
            limit: MAX_BUNDLE_BYTES,
        });
    }
    if bytes.len() < 1024
        || !bytes.len().is_multiple_of(512)
        || bytes[bytes.len() - 1024..].iter().any(|b| *b != 0)
    {
        return Err(BundleError::Truncated { bundle: name() });
    }
    let malformed = |e: std::io::Error| BundleError::Malformed {
        bundle: name(),
        message: e.to_string(),
    };
    let mut archive = tar::Archive::new(bytes);
    let mut manifests: Vec<(String, Vec<u8>)> = Vec::new();
    let mut components: BTreeMap<String, Blob> = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    // Where the last entry's data ends, padded to a whole block: where the marker must start.
    let mut entries_end = 0;
    for entry in archive.entries().map_err(malformed)? {
        let mut entry = entry.map_err(malformed)?;
        let path = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        check_path(bundle, &path)?;
        let kind = entry.header().entry_type();
        if kind.is_symlink() || kind.is_hard_link() {
            let target = entry
                .link_name_bytes()
                .map(|t| String::from_utf8_lossy(&t).into_owned())
                .unwrap_or_default();
            return Err(BundleError::Link {
                bundle: name(),
                entry: path,
                target,
            });
        }
        if !kind.is_file() {
            return Err(BundleError::NotAFile {
                bundle: name(),
                entry: path,
                kind: kind_name(kind),
            });
        }
        if !seen.insert(path.clone()) {
            return Err(BundleError::Duplicate {
                bundle: name(),
                entry: path,
            });
        }
        if seen.len() > MAX_ENTRIES {
            return Err(BundleError::TooManyEntries {
                bundle: name(),
                limit: MAX_ENTRIES,
            });
        }
        let (expected, limit, is_manifest) = match classify(&path) {
            Some(Kind::Manifest(hex)) => (hex, MAX_MANIFEST_BYTES, true),
            Some(Kind::Component(hex)) => (hex, MAX_COMPONENT_BYTES, false),
            None => {
                return Err(BundleError::UnexpectedEntry {
                    bundle: name(),
                    entry: path,
                });
            }
        };
        let size = entry.header().size().map_err(malformed)?;
        entries_end = (entry.raw_file_position() + size).next_multiple_of(BLOCK);
        if size > limit {
            return Err(BundleError::EntryTooLarge {
                bundle: name(),
                entry: path,
                size,
                limit,
            });
        }
        let mut data = Vec::with_capacity(size as usize);
        (&mut entry)
            .take(limit + 1)
            .read_to_end(&mut data)
            .map_err(malformed)?;
        if data.len() as u64 != size {
            return Err(BundleError::Truncated { bundle: name() });
        }
        let actual = format::hex_digest(&data);
        if actual != expected {
            return Err(BundleError::DigestMismatch {
                bundle: name(),
                entry: path,
                expected,
                actual,
            });
        }
        if is_manifest {
            manifests.push((actual, data));
        } else {
            components.insert(path, Blob::from(data));
        }
    }
    check_ends_at_marker(bundle, bytes.len() as u64, entries_end)?;
    if manifests.len() != 1 {
        return Err(BundleError::ManifestCount {
            bundle: name(),
            count: manifests.len(),
        });
    }
    let (hex, manifest) = manifests.pop().expect("one manifest");
    let value: serde_json::Value =
        serde_json::from_slice(&manifest).map_err(|e| BundleError::ManifestSyntax {
            bundle: name(),
            message: e.to_string(),
        })?;
    if format::canonical_json(&value) != manifest {
        return Err(BundleError::NotCanonical { bundle: name() });
    }
    check_references(bundle, &value, &components)?;
    Ok(Bundle {
        digest: format!("blake3:{hex}"),
        manifest,
        components,
    })
}

/// The size of a tar block; the end-of-archive marker is two zero blocks.
const BLOCK: u64 = 512;

/// The archive of `len` bytes, whose last entry's data ends (padded to a block) at
/// `entries_end`, holds nothing after its end-of-archive marker.
///
/// `format::pack` writes the marker, two zero blocks, right after the last entry and nothing
/// after it (no padding to a 10240-byte record as GNU tar writes), and `read` has already
/// checked that the file's last two blocks are zero. So anything past `entries_end` + 2 blocks
/// is extra bytes that no bundle digest would account for.
fn check_ends_at_marker(bundle: &str, len: u64, entries_end: u64) -> Result<(), BundleError> {
    let marker_end = entries_end + 2 * BLOCK;
    match len.checked_sub(marker_end) {
        Some(0) => Ok(()),
        Some(bytes) => Err(BundleError::TrailingData {
            bundle: bundle.to_owned(),
            bytes,
        }),
        // The last entry runs into the file's final zero blocks: they are its data, not a marker.
        None => Err(BundleError::Truncated {
            bundle: bundle.to_owned(),
        }),
    }
}

/// Every transformer (and the renderer) names its component by digest, every such entry
/// exists, and every component entry is named by one of them.
fn check_references(
    bundle: &str,
    manifest: &serde_json::Value,
    components: &BTreeMap<String, Blob>,
) -> Result<(), BundleError> {
    let mut used = std::collections::BTreeSet::new();
    let transformers = manifest
        .get("transformers")
        .and_then(serde_json::Value::as_object)
        .into_iter()
        .flatten()
        .map(|(fqn, transformer)| (fqn.clone(), transformer));
    let renderer = manifest
        .get("renderer")
        .map(|renderer| ("renderer".to_owned(), renderer));
    for (holder, entry) in transformers.chain(renderer) {
        let fail = |message: String| BundleError::Transformer {
            bundle: bundle.to_owned(),
            transformer: holder.clone(),
            message,
        };
        let field = |key: &str| entry.get(key).and_then(serde_json::Value::as_str);
        let component = field("component").ok_or_else(|| fail("no `component`".into()))?;
        let digest = field("digest").ok_or_else(|| {
            fail("no `digest`; a bundle's manifest holds every component's digest".into())
        })?;
        let hex = digest
            .strip_prefix("blake3:")
            .ok_or_else(|| fail(format!("digest {digest:?} is not blake3:<hex>")))?;
        if component != format::component_entry(hex) {
            return Err(fail(format!(
                "component {component:?} is not the entry named by its digest ({})",
                format::component_entry(hex)
            )));
        }
        if !components.contains_key(component) {
            return Err(fail(format!(
                "component {component:?} is not in the bundle"
            )));
        }
        used.insert(component.to_owned());
    }
    if let Some(entry) = components.keys().find(|entry| !used.contains(*entry)) {
        return Err(BundleError::Unreferenced {
            bundle: bundle.to_owned(),
            entry: entry.clone(),
        });
    }
    Ok(())
}

enum Kind {
    Manifest(String),
    Component(String),
}

/// What the entry at `path` is, by the format's names, with the digest its name gives.
fn classify(path: &str) -> Option<Kind> {
    let hex = |name: &str, ext: &str| {
        name.strip_suffix(ext)
            .filter(|hex| {
                hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            })
            .map(str::to_owned)
    };
    let (dir, file) = path.split_once('/')?;
    match dir {
        MANIFEST_DIR => hex(file, ".json").map(Kind::Manifest),
        COMPONENTS_DIR => hex(file, ".wasm").map(Kind::Component),
        _ => None,
    }
}

fn check_path(bundle: &str, path: &str) -> Result<(), BundleError> {
    let escapes = path.starts_with('/')
        || path.starts_with('\\')
        || path.as_bytes().get(1) == Some(&b':')
        || path.split(['/', '\\']).any(|part| part == "..");
    if escapes {
        return Err(BundleError::PathEscapes {
            bundle: bundle.to_owned(),
            entry: path.to_owned(),
        });
    }
    Ok(())
}

fn kind_name(kind: tar::EntryType) -> String {
    match kind {
        tar::EntryType::Directory => "directory".into(),
        tar::EntryType::Char => "character device".into(),
        tar::EntryType::Block => "block device".into(),
        tar::EntryType::Fifo => "fifo".into(),
        other => format!("{other:?} entry"),
    }
}
