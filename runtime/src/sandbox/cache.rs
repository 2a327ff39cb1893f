//! The on-disk cache of compiled components (DESIGN §6, §8): compiling a transformer with
//! Cranelift costs tens of milliseconds, loading it back costs well under one.
//!
//! An entry is keyed by the BLAKE3 of the component's bytes and of the engine's compatibility
//! hash (wasmtime version, target, and every setting that changes the code), so a cache is
//! never read by an engine it was not made for. Compiled code is native code: loading it is
//! `unsafe`, so an entry is loaded only if
//!
//! - the cache directory belongs to the current user and nobody else may write to it (it is
//!   created with mode 0700), and the entry file belongs to the user too;
//! - the entry starts with a magic line and the BLAKE3 of the rest, which must match.
//!
//! Anything else — a missing, foreign, truncated or altered entry — is ignored, and the
//! component is compiled afresh and the entry rewritten. A cache problem never fails a render.
//! Entries are written to a temporary file and renamed into place, so a reader never sees half
//! of one.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

const MAGIC: &[u8] = b"opm-compiled-component-v1\n";

/// A directory of compiled components.
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: PathBuf,
}

impl CompileCache {
    /// The cache directory for an environment: `$OPM_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/opm/compiled`, else `$HOME/.cache/opm/compiled`; `None` when none is set
    /// or `OPM_CACHE_DIR` is `off`.
    pub fn default_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
        let set = |name: &str| env(name).filter(|value| !value.is_empty());
        if let Some(dir) = set("OPM_CACHE_DIR") {
            return (dir != "off").then(|| PathBuf::from(dir));
        }
        if let Some(cache) = set("XDG_CACHE_HOME") {
            return Some(Path::new(&cache).join("opm/compiled"));
        }
        set("HOME").map(|home| Path::new(&home).join(".cache/opm/compiled"))
    }

    /// Opens (creating it, mode 0700) the cache at `dir`; `None` when it cannot be created or
    /// is not private to the current user.
    pub fn open(dir: PathBuf) -> Option<Self> {
        create_private_dir(&dir).ok()?;
        is_private(&dir, true).then_some(Self { dir })
    }

    /// The key of `bytes` compiled by `engine`.
    fn key(engine: &Engine, bytes: &[u8]) -> String {
        let mut hasher = Blake3Hasher(blake3::Hasher::new());
        hasher.0.update(MAGIC);
        hasher.0.update(blake3::hash(bytes).as_bytes());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        hasher.0.finalize().to_hex().to_string()
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.cwasm"))
    }

    /// The cached compilation of `bytes`, if there is a sound one.
    pub fn load(&self, engine: &Engine, bytes: &[u8]) -> Option<Component> {
        let path = self.path(&Self::key(engine, bytes));
        if !is_private(&path, false) {
            return None;
        }
        let entry = std::fs::read(&path).ok()?;
        let payload = verified_payload(&entry)?;
        // SAFETY: `Component::deserialize` trusts its input to be code that `Component::serialize`
        // produced for a compatible engine. The key includes this engine's compatibility hash
        // (and wasmtime checks it again); `verified_payload` has checked the BLAKE3 of the bytes
        // against the digest written with them; and `is_private` has checked that the directory
        // and the file belong to the current user and that nobody else can write to them, so the
        // bytes are those this user's opm wrote.
        unsafe { Component::deserialize(engine, payload) }.ok()
    }

    /// Stores the compilation of `bytes`; failures are ignored (the next run compiles again).
    pub fn store(&self, engine: &Engine, bytes: &[u8], component: &Component) {
        let Ok(payload) = component.serialize() else {
            return;
        };
        let path = self.path(&Self::key(engine, bytes));
        let _ = write_entry(&self.dir, &path, &payload);
    }
}

fn verified_payload(entry: &[u8]) -> Option<&[u8]> {
    let rest = entry.strip_prefix(MAGIC)?;
    if rest.len() < 32 {
        return None;
    }
    let (digest, payload) = rest.split_at(32);
    (blake3::hash(payload).as_bytes() == digest).then_some(payload)
}

fn write_entry(dir: &Path, path: &Path, payload: &[u8]) -> std::io::Result<()> {
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.write_all(MAGIC)?;
    file.write_all(blake3::hash(payload).as_bytes())?;
    file.write_all(payload)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(_dir: &Path) -> std::io::Result<()> {
    Err(std::io::Error::other(
        "the compile cache needs Unix permissions",
    ))
}

/// Whether `path` belongs to the current user and no one else may write to it (nor, for a
/// directory, list or enter it).
#[cfg(unix)]
fn is_private(path: &Path, directory: bool) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(metadata) = std::fs::symlink_metadata(path) else {
        return false;
    };
    let kind_ok = if directory {
        metadata.is_dir()
    } else {
        metadata.is_file()
    };
    let others = if directory { 0o077 } else { 0o022 };
    kind_ok && metadata.uid() == rustix::process::getuid().as_raw() && metadata.mode() & others == 0
}

#[cfg(not(unix))]
fn is_private(_path: &Path, _directory: bool) -> bool {
    false
}

/// Feeds `Hash` output into BLAKE3, so the engine's compatibility hash becomes part of a key.
struct Blake3Hasher(blake3::Hasher);

impl Hasher for Blake3Hasher {
    fn finish(&self) -> u64 {
        let digest = self.0.finalize();
        u64::from_le_bytes(digest.as_bytes()[..8].try_into().expect("32 bytes"))
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_dir_follows_the_environment() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert_eq!(
            CompileCache::default_dir(&env(&[("OPM_CACHE_DIR", "/c"), ("HOME", "/h")])),
            Some("/c".into())
        );
        assert_eq!(
            CompileCache::default_dir(&env(&[("OPM_CACHE_DIR", "off"), ("HOME", "/h")])),
            None
        );
        assert_eq!(
            CompileCache::default_dir(&env(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")])),
            Some("/x/opm/compiled".into())
        );
        assert_eq!(
            CompileCache::default_dir(&env(&[("HOME", "/h")])),
            Some("/h/.cache/opm/compiled".into())
        );
        assert_eq!(CompileCache::default_dir(&env(&[])), None);
    }

    #[test]
    fn a_payload_is_used_only_when_its_digest_matches() {
        let payload = b"compiled code";
        let mut entry = MAGIC.to_vec();
        entry.extend_from_slice(blake3::hash(payload).as_bytes());
        entry.extend_from_slice(payload);
        assert_eq!(verified_payload(&entry), Some(&payload[..]));
        let last = entry.len() - 1;
        entry[last] ^= 1;
        assert_eq!(verified_payload(&entry), None, "a flipped byte");
        assert_eq!(
            verified_payload(&entry[..MAGIC.len() + 10]),
            None,
            "truncated"
        );
        assert_eq!(
            verified_payload(b"something else entirely, long enough to split"),
            None
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_directory_others_can_write_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("compiled");
        assert!(CompileCache::open(cache.clone()).is_some());
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(CompileCache::open(cache).is_none());
    }
}
