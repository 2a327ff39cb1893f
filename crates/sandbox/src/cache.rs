//! The on-disk cache of compiled components (`docs/host-guest-contract.md`, `docs/performance.md`):
//! compiling a transformer with Cranelift costs tens of milliseconds, loading it back costs well
//! under one.
//!
//! Compiled code is native code: loading it is `unsafe`, and a forged entry would run in the
//! host. So an entry is authenticated, not merely checked for corruption:
//!
//! - **A key outside the cache.** 32 random bytes in a key file — `$OPM_CACHE_KEY`, else
//!   `$XDG_CONFIG_HOME/opm/compile-cache.key`, else `$HOME/.config/opm/compile-cache.key`
//!   ([`CompileCache::default_key_file`]). It is created once, from `/dev/urandom`, with mode
//!   0600 in a directory created with mode 0700, and published without ever being seen half
//!   written: two opm processes that race to create it both end up with the winner's key. Each
//!   time it is read it must be a regular file owned by the current user that nobody else may
//!   read or write, in a directory nobody else may write, and not in the cache directory.
//!   Without such a key there is no cache.
//! - **Entries bound to their component.** An entry is the serialized code, a keyed BLAKE3 MAC,
//!   and a magic line. The MAC covers a domain-separation tag, the BLAKE3 of the component's
//!   bytes, the engine's compatibility hash (wasmtime version, target, and every setting that
//!   changes the code) and the code; so an entry copied onto another component's name, made
//!   with another key, or carrying a digest anyone could recompute is refused.
//! - **One file, through one descriptor.** A load checks again that the cache directory belongs
//!   to the user and nobody else may enter it, opens the entry without following a link, checks
//!   through that descriptor that it is a regular file of the user's that nobody else may
//!   write, checks the MAC of what it reads from that same descriptor, and has wasmtime map the
//!   code from that same open file (`/proc/self/fd`) rather than copy it into fresh memory
//!   (benches/RESULTS.md has what that saves). Without `/proc`, it reads the file once into
//!   memory and deserializes what it checked. The one exception is code opm itself vouches
//!   for, stored and mapped at once ([`CompileCache::store_and_load`]): it is mapped through
//!   the descriptor that has just written it, and checked when a later load reads it.
//!
//! Anything else — a missing, foreign, truncated or forged entry — is ignored, and the
//! component is compiled afresh and the entry rewritten. A cache problem never fails a render.
//! Entries are written to a temporary file and renamed into place, so a reader never sees half
//! of one. Processes that miss the same entry at once take turns through a lock file beside it
//! (for a bounded time), so that one compiles and the others load its entry.
//!
//! ```no_run
//! use opm_sandbox::{CompileCache, Limits, Sandbox};
//! let cache = CompileCache::from_env(&|name| std::env::var(name).ok());
//! let sandbox = Sandbox::new(&Limits::default())?.with_cache(cache);
//! # Ok::<(), opm_sandbox::CompileError>(())
//! ```

use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

/// The last line of every entry; the number changes whenever the layout does. (The code comes
/// first, so that it can be mapped from the file where it lies.)
const MAGIC: &[u8] = b"\nopm-compiled-component-v3\n";
/// What the MAC of an entry starts with, so no other use of the key can produce an entry's MAC.
const MAC_TAG: &[u8] = b"opm compile cache: compiled component v3\0";
/// What an entry's file name is derived from, besides the component and the engine.
const NAME_TAG: &[u8] = b"opm compile cache: entry name v3\0";
/// The length of the key, and of a MAC.
const KEY_LEN: usize = 32;
/// The first line of every remembered result ([`CompileCache::recall`]).
const MEMO_MAGIC: &[u8] = b"opm-memo-v1\n";
/// What a remembered result's file name is derived from, besides its input.
const MEMO_NAME_TAG: &[u8] = b"opm compile cache: memo name v1\0";
/// What the MAC of a remembered result starts with.
const MEMO_MAC_TAG: &[u8] = b"opm compile cache: memo v1\0";
/// What the key of the digests of valid values is derived from, with the cache's key.
const VALUES_KEY_CONTEXT: &str = "opm compile cache 2026-12 digests of valid values v1";
/// How long a compile waits for another process compiling the same component before it
/// compiles the component itself: longer than compiling the largest interpreter component on a
/// busy machine takes.
pub const TURN_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

/// The most the compiled components of a cache take together unless `opm cache limit` says
/// otherwise: the standard provider's (a few MiB) and some twelve JavaScript or Python ones
/// (some 80 MiB each).
pub const DEFAULT_SIZE_LIMIT: u64 = 1 << 30;
/// The file in the cache directory that holds its size limit (`opm cache limit`), as text
/// `parse_size` reads (`2Gi`).
const SIZE_LIMIT_FILE: &str = "size-limit";

/// A directory of compiled components and the key that authenticates them.
#[derive(Clone)]
pub struct CompileCache {
    dir: PathBuf,
    key: [u8; KEY_LEN],
}

impl std::fmt::Debug for CompileCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompileCache")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
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

    /// The key file for an environment: `$OPM_CACHE_KEY`, else
    /// `$XDG_CONFIG_HOME/opm/compile-cache.key`, else `$HOME/.config/opm/compile-cache.key`;
    /// `None` when none is set. It is kept apart from the cache: whoever can write entries must
    /// not be able to read it.
    pub fn default_key_file(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
        let set = |name: &str| env(name).filter(|value| !value.is_empty());
        if let Some(file) = set("OPM_CACHE_KEY") {
            return Some(PathBuf::from(file));
        }
        if let Some(config) = set("XDG_CONFIG_HOME") {
            return Some(Path::new(&config).join("opm/compile-cache.key"));
        }
        set("HOME").map(|home| Path::new(&home).join(".config/opm/compile-cache.key"))
    }

    /// The cache an environment names ([`default_dir`](Self::default_dir) and
    /// [`default_key_file`](Self::default_key_file)), opened; `None` when it is off or cannot
    /// be used.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Option<Self> {
        Self::open(Self::default_dir(env)?, &Self::default_key_file(env)?)
    }

    /// Opens (creating it, mode 0700) the cache at `dir`, with the key in `key_file` (created
    /// if missing); `None` when either cannot be created or is not private to the current user,
    /// or when the key file is in the cache directory.
    pub fn open(dir: PathBuf, key_file: &Path) -> Option<Self> {
        create_private_dir(&dir).ok()?;
        if !is_private_dir(&dir) {
            return None;
        }
        let key_dir = key_file.parent().filter(|p| !p.as_os_str().is_empty())?;
        create_private_dir(key_dir).ok()?;
        let (cache_dir, key_dir) = (dir.canonicalize().ok()?, key_dir.canonicalize().ok()?);
        if key_dir.starts_with(&cache_dir) {
            return None;
        }
        let key = load_or_create_key(key_file).ok()?;
        Some(Self { dir, key })
    }

    /// The entries in the cache directory `dir`, with their sizes in bytes, by name: every
    /// compiled component, and any temporary or lock file a process that was killed left
    /// behind.
    pub fn entries(dir: &Path) -> std::io::Result<Vec<(PathBuf, u64)>> {
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let ours = name.ends_with(".cwasm")
                || name.ends_with(".memo")
                || name.ends_with(".lock")
                || name.starts_with(".tmp");
            let metadata = entry.metadata()?;
            if ours && metadata.is_file() {
                entries.push((entry.path(), metadata.len()));
            }
        }
        entries.sort();
        Ok(entries)
    }

    /// Removes every entry of the cache directory `dir` ([`entries`](Self::entries)) and nothing
    /// else; returns how many it removed and their bytes. A missing directory is an empty cache.
    pub fn clear(dir: &Path) -> std::io::Result<Tally> {
        let entries = match Self::entries(dir) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Tally::default());
            }
            other => other?,
        };
        let mut removed = Tally::default();
        for (path, size) in entries {
            match std::fs::remove_file(&path) {
                Ok(()) => removed.add(&path, size),
                // Another opm cleared it first.
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
        Ok(removed)
    }

    /// The size limit of the cache directory `dir`: what `opm cache limit` set, else
    /// [`DEFAULT_SIZE_LIMIT`].
    pub fn size_limit(dir: &Path) -> u64 {
        std::fs::read_to_string(dir.join(SIZE_LIMIT_FILE))
            .ok()
            .and_then(|text| opm_core::calls::limits::parse_size(text.trim()).ok())
            .unwrap_or(DEFAULT_SIZE_LIMIT)
    }

    /// Sets the size limit of the cache directory `dir` (creating it, private), and evicts
    /// what is over it at once; returns how many entries and bytes were evicted.
    pub fn set_size_limit(dir: &Path, limit: u64) -> std::io::Result<Tally> {
        create_private_dir(dir)?;
        opm_core::files::write_atomically(
            &dir.join(SIZE_LIMIT_FILE),
            format!("{limit}\n").as_bytes(),
        )?;
        evict(dir, limit, None)
    }

    /// The cached compilation of `bytes`, if there is an entry this cache's key vouches for. A
    /// hit marks the entry used now, so that eviction takes the least recently used first.
    pub fn load(&self, engine: &Engine, digest: &blake3::Hash) -> Option<Component> {
        if !is_private_dir(&self.dir) {
            return None;
        }
        let compatibility = compatibility(engine);
        let path = self.path(digest, &compatibility);
        let file = open_own_file(&path, 0o022).ok()?;
        let component = match self.verified_file(&file, digest, &compatibility) {
            // SAFETY: `Component::deserialize_file` requires a file that holds what
            // `Component::serialize` produced for an engine compatible with `engine` (bytes
            // after it are not read: the ELF image says where each of its sections lies).
            // `mapped` is such a file:
            // - it is the file `file` has open: `/proc/self/fd/N` opens the very file that
            //   descriptor has open, whatever is renamed into `path` meanwhile;
            // - `open_own_file` opened it only as a regular file of the current user's that
            //   nobody else may write, in a directory only the user may enter, and nothing in opm
            //   writes an entry in place (`write_entry` writes a new file and renames it): so what
            //   `verified_file` just read through `file` is what wasmtime maps, unless the user
            //   (or root) rewrites the file meanwhile — who can run native code as the user
            //   anyway;
            // - `verified_file` returned `true` only because the MAC stored after the code
            //   equals `self.mac(digest, compatibility, code)`, keyed with `self.key`, which
            //   `open` read from a file that only the current user may read, outside the cache
            //   directory. The only code here that makes a MAC with that key is `store_code`,
            //   over `component.serialize()` (through `store`), over the code built into opm
            //   that `engine` has just loaded, or over the code a compiler child made that
            //   `engine` has just loaded (`Sandbox::compile_component`, `isolated`); so the code
            //   is what `store_code` wrote, unless someone who can read the user's key file (the
            //   user, or root) forged it — who can run native code as the user anyway;
            // - that MAC covers `digest`, the BLAKE3 of the component's bytes, and
            //   `compatibility`, this engine's `precompile_compatibility_hash`: the code was
            //   serialized from a compilation of these very component bytes by an engine that
            //   `engine` can load (wasmtime checks the compatibility again from the code's own
            //   header and refuses a mismatch).
            Some(true) => {
                let mapped = proc_fd_path(&file);
                unsafe { Component::deserialize_file(engine, &mapped) }.ok()
            }
            Some(false) => return None,
            None => None,
        };
        let component = match component {
            Some(component) => component,
            None => {
                // No `/proc` to map the file through: read it once, check what was read.
                let entry = read_open_file(file).ok()?;
                let code = self.verified_code(&entry, digest, &compatibility)?;
                // SAFETY: as above, for `code`, a slice of `entry`, the bytes read into memory
                // once, through one descriptor, whose MAC `verified_code` checked: what was
                // checked is what is deserialized.
                unsafe { Component::deserialize(engine, code) }.ok()?
            }
        };
        mark_used(&path);
        Some(component)
    }

    /// Whether there is an entry for the component with BLAKE3 `digest` compiled by `engine` —
    /// not whether it is sound, which only [`load`](Self::load) checks; enough to tell a person a
    /// compile is coming.
    pub fn has_entry(&self, engine: &Engine, digest: &blake3::Hash) -> bool {
        self.path(digest, &compatibility(engine)).is_file()
    }

    /// Waits until no other process is compiling the component with BLAKE3 `digest` for this
    /// cache, and holds that turn until the returned lock is dropped: two renders that start
    /// together (parallel CI jobs sharing a cache, a test suite) compile a component once, and
    /// the second loads what the first stored. The wait is bounded by [`TURN_WAIT`]; past it, or
    /// when the lock file cannot be made, `None`, and the caller compiles anyway.
    pub fn turn_to_compile(&self, engine: &Engine, digest: &blake3::Hash) -> Option<CompileTurn> {
        use std::os::unix::fs::OpenOptionsExt as _;
        if !is_private_dir(&self.dir) {
            return None;
        }
        let path = self
            .path(digest, &compatibility(engine))
            .with_extension("lock");
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&path)
            .ok()?;
        let started = std::time::Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Some(CompileTurn { path, _file: file }),
                Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < TURN_WAIT => {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(_) => return None,
            }
        }
    }

    /// Stores `component`, the compilation of the component with BLAKE3 `digest`; failures are
    /// ignored (the next run compiles again).
    pub fn store(&self, engine: &Engine, digest: &blake3::Hash, component: &Component) {
        if let Ok(code) = component.serialize() {
            self.store_code(engine, digest, &code);
        }
    }

    /// Stores `code`, what [`Component::serialize`] (or [`Engine::precompile_component`]) made
    /// of the component with BLAKE3 `digest` for an engine compatible with `engine`; failures
    /// are ignored.
    pub fn store_code(&self, engine: &Engine, digest: &blake3::Hash, code: &[u8]) {
        let _ = self.write_code(engine, digest, code);
    }

    /// Writes the entry of `code` ([`store_code`](Self::store_code)) and evicts what is then
    /// over the size limit; the entry's file, still open, or `None` when it was not written.
    fn write_code(
        &self,
        engine: &Engine,
        digest: &blake3::Hash,
        code: &[u8],
    ) -> Option<std::fs::File> {
        let compatibility = compatibility(engine);
        let mac = self.mac(digest, &compatibility, code);
        let path = self.path(digest, &compatibility);
        let written = write_entry(&self.dir, &path, &[code, mac.as_bytes(), MAGIC]).ok()?;
        let _ = evict(&self.dir, Self::size_limit(&self.dir), Some(&path));
        Some(written)
    }

    /// Stores `code` as [`store_code`](Self::store_code) does, drops it, and gives the component
    /// mapped from the entry just written, through the descriptor that wrote it: the code is not
    /// read back and its MAC not checked again, as [`load`](Self::load) does for an entry this
    /// process did not write (a first render's embedded code: some 1 ms for the Kubernetes
    /// provider's 5 MiB). `None` when the entry cannot be written or mapped.
    ///
    /// # Safety
    ///
    /// `code` must be what [`Component::deserialize`] may load into `engine`: what wasmtime's
    /// serialization made of the component with BLAKE3 `digest`, for an engine compatible with
    /// `engine`.
    pub unsafe fn store_and_load(
        &self,
        engine: &Engine,
        digest: &blake3::Hash,
        code: impl AsRef<[u8]>,
    ) -> Option<Component> {
        if !is_private_dir(&self.dir) {
            return None;
        }
        let written = self.write_code(engine, digest, code.as_ref())?;
        drop(code);
        // SAFETY: `Component::deserialize_file` requires a file that holds what
        // `Component::serialize` produced for an engine compatible with `engine`. `written` has
        // open the file this function has just written `code` into, followed by its MAC and the
        // magic line (bytes after the code are not read): `code` is such bytes, as the caller
        // promised. The file was created new (`O_EXCL`, mode 0600) in a directory only the
        // user may enter, and `/proc/self/fd/N` opens the very file `written` has open, whatever
        // is renamed into `path` meanwhile: so it holds what was written, unless the user (or
        // root) rewrote it meanwhile — who can run native code as the user anyway.
        unsafe { Component::deserialize_file(engine, proc_fd_path(&written)) }.ok()
    }

    /// Where the entry of the component with BLAKE3 `digest` compiled by an engine with
    /// `compatibility` lives. The name only finds the entry; the MAC is what vouches for it.
    fn path(&self, digest: &blake3::Hash, compatibility: &[u8; 32]) -> PathBuf {
        let mut name = blake3::Hasher::new();
        name.update(NAME_TAG);
        name.update(digest.as_bytes());
        name.update(compatibility);
        self.dir.join(format!("{}.cwasm", name.finalize().to_hex()))
    }

    /// The MAC of `code` as the compilation of the component with BLAKE3 `digest` by an engine
    /// with `compatibility`.
    fn mac(&self, digest: &blake3::Hash, compatibility: &[u8; 32], code: &[u8]) -> blake3::Hash {
        let mut mac = self.mac_of(digest, compatibility);
        mac.update(code);
        mac.finalize()
    }

    /// The MAC of [`mac`](Self::mac) before the code: what the code is then fed into.
    fn mac_of(&self, digest: &blake3::Hash, compatibility: &[u8; 32]) -> blake3::Hasher {
        let mut mac = blake3::Hasher::new_keyed(&self.key);
        mac.update(MAC_TAG);
        mac.update(digest.as_bytes());
        mac.update(compatibility);
        mac
    }

    /// The code of `entry`, when `entry` is the code, then its MAC as the compilation of
    /// `digest` by an engine with `compatibility`, then the magic line.
    fn verified_code<'a>(
        &self,
        entry: &'a [u8],
        digest: &blake3::Hash,
        compatibility: &[u8; 32],
    ) -> Option<&'a [u8]> {
        let rest = entry.strip_suffix(MAGIC)?;
        let (code, mac) = rest.split_last_chunk::<KEY_LEN>()?;
        // `blake3::Hash` compares in constant time.
        (blake3::Hash::from_bytes(*mac) == self.mac(digest, compatibility, code)).then_some(code)
    }

    /// Whether the entry `file` has open is sound ([`verified_code`](Self::verified_code)),
    /// read through that descriptor a piece at a time rather than into memory whole; `None`
    /// when it cannot be read.
    fn verified_file(
        &self,
        file: &std::fs::File,
        digest: &blake3::Hash,
        compatibility: &[u8; 32],
    ) -> Option<bool> {
        use std::os::unix::fs::FileExt as _;
        let len = file.metadata().ok()?.len();
        let tail = (KEY_LEN + MAGIC.len()) as u64;
        let Some(code_len) = len.checked_sub(tail) else {
            return Some(false);
        };
        let mut end = [0; KEY_LEN + MAGIC.len()];
        file.read_exact_at(&mut end, code_len).ok()?;
        let (mac, magic) = end.split_at(KEY_LEN);
        if magic != MAGIC {
            return Some(false);
        }
        let mut hasher = self.mac_of(digest, compatibility);
        let mut buffer = vec![0; 256 << 10];
        let mut at = 0;
        while at < code_len {
            let want = usize::try_from((code_len - at).min(buffer.len() as u64)).ok()?;
            file.read_exact_at(&mut buffer[..want], at).ok()?;
            hasher.update(&buffer[..want]);
            at += want as u64;
        }
        let mac: [u8; KEY_LEN] = mac.try_into().ok()?;
        Some(blake3::Hash::from_bytes(mac) == hasher.finalize())
    }
}

/// Results worth remembering between renders that only the user may learn anything from: a
/// Secret's stretched checksum ([`opm_core::render::checksum`]) and the values a module's
/// renders found valid ([`opm_core::definitions::validated`]). An entry's file name is a keyed
/// BLAKE3 of its input, so without the key it tells nothing of the input; its content is a
/// magic line, the result, and a MAC of both under the key, so a result someone else put there
/// is not recalled. Entries are evicted and cleared with the compiled components.
impl opm_core::render::checksum::Memo for CompileCache {
    fn recall(&self, input: &[u8]) -> Option<[u8; 32]> {
        self.recall_memo(input)?.try_into().ok()
    }

    fn remember(&self, input: &[u8], output: &[u8; 32]) {
        self.remember_memo(input, output);
    }
}

impl opm_core::definitions::validated::Store for CompileCache {
    fn recall_bytes(&self, name: &[u8]) -> Option<Vec<u8>> {
        self.recall_memo(name)
    }

    fn remember_bytes(&self, name: &[u8], bytes: &[u8]) {
        self.remember_memo(name, bytes);
    }

    fn keyed_hasher(&self) -> blake3::Hasher {
        blake3::Hasher::new_keyed(&blake3::derive_key(VALUES_KEY_CONTEXT, &self.key))
    }
}

impl CompileCache {
    /// The result remembered for `input`, when its entry is sound.
    fn recall_memo(&self, input: &[u8]) -> Option<Vec<u8>> {
        if !is_private_dir(&self.dir) {
            return None;
        }
        let (path, name) = self.memo_path(input);
        let entry = read_own_file(&path, 0o022).ok()?;
        let rest = entry.strip_prefix(MEMO_MAGIC)?;
        let (output, mac) = rest.split_last_chunk::<KEY_LEN>()?;
        (blake3::Hash::from_bytes(*mac) == self.memo_mac(&name, output)).then(|| {
            mark_used(&path);
            output.to_vec()
        })
    }

    /// Remembers `output` for `input`; failures are ignored.
    fn remember_memo(&self, input: &[u8], output: &[u8]) {
        let (path, name) = self.memo_path(input);
        let mac = self.memo_mac(&name, output);
        let _ = write_entry(&self.dir, &path, &[MEMO_MAGIC, output, mac.as_bytes()]);
    }
}

impl CompileCache {
    /// Where the result remembered for `input` lives, and the keyed hash its name shows.
    fn memo_path(&self, input: &[u8]) -> (PathBuf, blake3::Hash) {
        let mut name = blake3::Hasher::new_keyed(&self.key);
        name.update(MEMO_NAME_TAG);
        name.update(input);
        let name = name.finalize();
        (self.dir.join(format!("{}.memo", name.to_hex())), name)
    }

    /// The MAC of `output` as the result remembered under `name`.
    fn memo_mac(&self, name: &blake3::Hash, output: &[u8]) -> blake3::Hash {
        let mut mac = blake3::Hasher::new_keyed(&self.key);
        mac.update(MEMO_MAC_TAG);
        mac.update(name.as_bytes());
        mac.update(output);
        mac.finalize()
    }
}

/// A process's turn to compile one component ([`CompileCache::turn_to_compile`]), held while
/// its lock file is locked. Dropping it removes the file, then unlocks: a process still waiting
/// on it then finds the entry stored, and one that comes later finds no file and makes its own.
#[derive(Debug)]
pub struct CompileTurn {
    path: PathBuf,
    /// Holds the lock until it is closed, after `drop` has removed the file.
    _file: std::fs::File,
}

impl Drop for CompileTurn {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Marks the entry at `path` used now (its modification time), for [`evict`]. Best effort; a
/// link put in the entry's place is not followed, as no read of the cache follows one.
fn mark_used(path: &Path) {
    use std::os::unix::fs::OpenOptionsExt as _;
    if let Ok(file) = std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
    {
        let _ = file.set_modified(std::time::SystemTime::now());
    }
}

/// Removes compiled components from `dir`, least recently used first, until those left take at
/// most `limit` bytes — never `keep`, the entry just stored; returns how many entries and bytes
/// it removed. An entry that another process removed first is not counted.
fn evict(dir: &Path, limit: u64, keep: Option<&Path>) -> std::io::Result<Tally> {
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if path
            .extension()
            .is_none_or(|ext| ext != "cwasm" && ext != "memo")
        {
            continue;
        }
        let metadata = entry.metadata()?;
        if metadata.is_file() {
            entries.push((metadata.modified()?, path, metadata.len()));
        }
    }
    let mut total: u64 = entries.iter().map(|(_, _, size)| size).sum();
    entries.sort();
    let mut evicted = Tally::default();
    for (_, path, size) in entries {
        if total <= limit {
            break;
        }
        if Some(path.as_path()) == keep {
            continue;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => evicted.add(&path, size),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
        total -= size;
    }
    Ok(evicted)
}

/// What `opm cache` counts: the entries of compiled components (with their locks and files
/// being written), the remembered results (`.memo`), and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Compiled components, their locks and files being written.
    pub components: usize,
    /// Remembered results: stretched checksums, values found valid.
    pub remembered: usize,
    /// Their bytes.
    pub bytes: u64,
}

impl Tally {
    /// Counts the entry at `path` of `size` bytes.
    fn add(&mut self, path: &Path, size: u64) {
        if path.extension().is_some_and(|ext| ext == "memo") {
            self.remembered += 1;
        } else {
            self.components += 1;
        }
        self.bytes += size;
    }

    /// The tally of `entries` ([`CompileCache::entries`]).
    pub fn of(entries: &[(PathBuf, u64)]) -> Self {
        let mut tally = Self::default();
        for (path, size) in entries {
            tally.add(path, *size);
        }
        tally
    }
}

/// "2 compiled components" or "2 compiled components and 1 remembered result".
impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        write!(
            f,
            "{} compiled component{}",
            self.components,
            plural(self.components)
        )?;
        if self.remembered > 0 {
            write!(
                f,
                " and {} remembered result{}",
                self.remembered,
                plural(self.remembered)
            )?;
        }
        Ok(())
    }
}

/// The BLAKE3 of the engine's compatibility hash: which engines can load each other's code.
fn compatibility(engine: &Engine) -> [u8; 32] {
    let mut hasher = Blake3Hasher(blake3::Hasher::new());
    engine.precompile_compatibility_hash().hash(&mut hasher);
    *hasher.0.finalize().as_bytes()
}

/// Writes `parts` one after another as the file `path` in `dir`: to a temporary file, renamed
/// into place, so that an entry is never written where it lies.
fn write_entry(dir: &Path, path: &Path, parts: &[&[u8]]) -> std::io::Result<std::fs::File> {
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    for part in parts {
        file.write_all(part)?;
    }
    // Not synced to disk first: an entry torn by a crash fails its MAC and is compiled again,
    // and a sync of a JavaScript component's 60 MiB of code costs the edit loop a second.
    file.persist(path).map_err(|e| e.error)
}

/// The key in `path`, creating the file with a fresh key if there is none.
///
/// A new key is written to a temporary file (mode 0600) beside `path` and then published with a
/// rename that never replaces an existing file. Whoever loses a race to create it finds the
/// winner's file, and every process then reads the key back from `path`, so all of them use the
/// same key, and none sees the file half written.
fn load_or_create_key(path: &Path) -> std::io::Result<[u8; KEY_LEN]> {
    match read_key(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        read => return read,
    }
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("the key file has no directory"))?;
    let mut key = [0; KEY_LEN];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
    let mut file = tempfile::Builder::new()
        .prefix(".compile-cache.key.")
        .tempfile_in(dir)?;
    file.write_all(&key)?;
    file.as_file().sync_all()?;
    match file.persist_noclobber(path) {
        Ok(_) => {}
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e.error),
    }
    read_key(path)
}

/// The key in `path`: exactly [`KEY_LEN`] bytes in a regular file that belongs to the current
/// user, that nobody else may read or write, in a directory nobody else may write.
fn read_key(path: &Path) -> std::io::Result<[u8; KEY_LEN]> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("the key file has no directory"))?;
    if !is_own_dir(dir, 0o022) {
        return Err(std::io::Error::other(
            "the key's directory is not the user's, or others may write to it",
        ));
    }
    let bytes = read_own_file(path, 0o077)?;
    bytes
        .try_into()
        .map_err(|_| std::io::Error::other("the key file does not hold a key"))
}

/// The bytes of `path`, read through one descriptor ([`open_own_file`]).
fn read_own_file(path: &Path, forbidden: u32) -> std::io::Result<Vec<u8>> {
    read_open_file(open_own_file(path, forbidden)?)
}

/// Everything `file` holds, from its start.
fn read_open_file(file: std::fs::File) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt as _;
    let len = usize::try_from(file.metadata()?.len()).map_err(std::io::Error::other)?;
    let mut bytes = vec![0; len];
    file.read_exact_at(&mut bytes, 0)?;
    Ok(bytes)
}

/// Where a process may open again the very file `file` has open.
fn proc_fd_path(file: &std::fs::File) -> PathBuf {
    use std::os::fd::AsRawFd as _;
    PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// `path`, opened without following a link, only if it is a regular file that belongs to the
/// current user with none of the `forbidden` mode bits set.
#[cfg(unix)]
fn open_own_file(path: &Path, forbidden: u32) -> std::io::Result<std::fs::File> {
    use rustix::fs::{FileType, Mode, OFlags};
    // NONBLOCK, so that a FIFO put in the file's place cannot hang the open; it changes nothing
    // for a regular file.
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let fd = rustix::fs::open(path, flags, Mode::empty())?;
    let stat = rustix::fs::fstat(&fd)?;
    let regular = FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile;
    if !regular
        || stat.st_uid != rustix::process::getuid().as_raw()
        || stat.st_mode & forbidden != 0
    {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{} is not a private file of the user's", path.display()),
        ));
    }
    Ok(std::fs::File::from(fd))
}

#[cfg(not(unix))]
fn open_own_file(_path: &Path, _forbidden: u32) -> std::io::Result<std::fs::File> {
    Err(std::io::Error::other(
        "the compile cache needs Unix permissions",
    ))
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

/// Whether the directory `dir` belongs to the current user and nobody else may list, enter or
/// write to it.
fn is_private_dir(dir: &Path) -> bool {
    is_own_dir(dir, 0o077)
}

/// Whether `dir` (not followed if it is a link) is a directory that belongs to the current user
/// with none of the `forbidden` mode bits set.
#[cfg(unix)]
fn is_own_dir(dir: &Path, forbidden: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(dir).is_ok_and(|metadata| {
        metadata.is_dir()
            && metadata.uid() == rustix::process::getuid().as_raw()
            && metadata.mode() & forbidden == 0
    })
}

#[cfg(not(unix))]
fn is_own_dir(_dir: &Path, _forbidden: u32) -> bool {
    false
}

/// Feeds `Hash` output into BLAKE3, so the engine's compatibility hash becomes bytes.
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
    /// Code of the baseline compiler and of Cranelift never share an entry: the engines'
    /// compatibility differs.
    #[test]
    fn the_two_compilers_have_distinct_entries() {
        use crate::compiler::{Compiler, engine_config_for};
        let engine = |compiler| Engine::new(&engine_config_for(compiler)).expect("engine");
        assert_ne!(
            compatibility(&engine(Compiler::Optimizing)),
            compatibility(&engine(Compiler::Baseline))
        );
    }

    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_cache_dir_follows_the_environment() {
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
    fn the_key_file_follows_the_environment_outside_the_cache() {
        assert_eq!(
            CompileCache::default_key_file(&env(&[("OPM_CACHE_KEY", "/k"), ("HOME", "/h")])),
            Some("/k".into())
        );
        assert_eq!(
            CompileCache::default_key_file(&env(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")])),
            Some("/x/opm/compile-cache.key".into())
        );
        assert_eq!(
            CompileCache::default_key_file(&env(&[("HOME", "/h")])),
            Some("/h/.config/opm/compile-cache.key".into())
        );
        assert_eq!(CompileCache::default_key_file(&env(&[])), None);
        assert!(CompileCache::from_env(&env(&[("OPM_CACHE_DIR", "/c")])).is_none());
    }

    /// A fresh cache in a temporary directory: `(dir, cache dir, key file)`.
    fn fresh() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache/compiled");
        let key = dir.path().join("config/opm/compile-cache.key");
        (dir, cache, key)
    }

    #[test]
    fn a_component_is_compiled_by_one_process_at_a_time_and_the_others_wait() {
        let (_dir, cache_dir, key_file) = fresh();
        let cache = CompileCache::open(cache_dir.clone(), &key_file).expect("cache opens");
        let engine = Engine::default();
        let first = cache
            .turn_to_compile(&engine, &blake3::hash(b"component"))
            .expect("a turn");
        assert!(
            cache
                .turn_to_compile(&engine, &blake3::hash(b"another component"))
                .is_some(),
            "another component's compile does not wait"
        );
        let (started, waited) = std::sync::mpsc::channel();
        let second = {
            let (cache, engine) = (cache.clone(), engine.clone());
            std::thread::spawn(move || {
                let turn = cache.turn_to_compile(&engine, &blake3::hash(b"component"));
                started.send(()).expect("send");
                turn.is_some()
            })
        };
        assert!(
            waited
                .recv_timeout(std::time::Duration::from_millis(300))
                .is_err(),
            "the second waits while the first holds its turn"
        );
        drop(first);
        assert!(second.join().expect("joins"), "then takes its turn");
        let entries = CompileCache::entries(&cache_dir).expect("entries");
        assert_eq!(entries, [], "no lock file is left behind");
    }

    /// The values a render found valid are remembered as digests keyed with the cache's key
    /// (another cache's digests differ), of any number of bytes, and refused when changed.
    #[test]
    fn digests_of_valid_values_are_keyed_and_remembered_whole() {
        use opm_core::definitions::validated::Store;
        let (dir, cache_dir, key_file) = fresh();
        let cache = CompileCache::open(cache_dir.clone(), &key_file).expect("cache opens");
        let other = CompileCache::open(
            dir.path().join("elsewhere/cache"),
            &dir.path().join("elsewhere/other.key"),
        )
        .expect("cache opens");
        let digest = |cache: &CompileCache| cache.keyed_hasher().update(b"value").finalize();
        assert_eq!(digest(&cache), digest(&cache));
        assert_ne!(digest(&cache), digest(&other), "another key");
        assert_ne!(digest(&cache), blake3::hash(b"value"), "keyed");
        let set = [7u8; 96];
        cache.remember_bytes(b"module.yaml", &set);
        assert_eq!(
            cache.recall_bytes(b"module.yaml").as_deref(),
            Some(&set[..])
        );
        assert_eq!(other.recall_bytes(b"module.yaml"), None);
        let entries = CompileCache::entries(&cache_dir).expect("entries");
        let mut changed = std::fs::read(&entries[0].0).unwrap();
        changed[MEMO_MAGIC.len() + 50] ^= 1;
        std::fs::write(&entries[0].0, changed).unwrap();
        assert_eq!(cache.recall_bytes(b"module.yaml"), None, "a changed entry");
    }

    #[test]
    fn a_remembered_result_is_recalled_only_under_its_key_and_input() {
        use opm_core::render::checksum::Memo;
        let (dir, cache_dir, key_file) = fresh();
        let cache = CompileCache::open(cache_dir.clone(), &key_file).expect("cache opens");
        let input = b"stretch parameters, salt and the secret hunter2";
        assert_eq!(cache.recall(input), None, "nothing before");
        cache.remember(input, &[5; 32]);
        assert_eq!(cache.recall(input), Some([5; 32]));
        assert_eq!(cache.recall(b"another input"), None);
        // The name says nothing of the input without the key.
        let entries = CompileCache::entries(&cache_dir).expect("entries");
        assert_eq!(entries.len(), 1, "{entries:?}");
        let name = entries[0]
            .0
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            !name.contains(&blake3::hash(input).to_hex().to_string()),
            "{name}"
        );
        let bytes = std::fs::read(&entries[0].0).unwrap();
        assert!(
            !bytes.windows(7).any(|w| w == b"hunter2"),
            "the input is not stored"
        );
        // Another key recalls nothing; a changed result is refused.
        let other_key = dir.path().join("elsewhere/other.key");
        let other = CompileCache::open(cache_dir.clone(), &other_key).expect("cache opens");
        assert_eq!(other.recall(input), None, "another key's cache");
        let mut forged = bytes.clone();
        forged[MEMO_MAGIC.len()] ^= 1;
        std::fs::write(&entries[0].0, &forged).unwrap();
        assert_eq!(cache.recall(input), None, "a changed result");
        // Cleared with the compiled components.
        cache.remember(input, &[5; 32]);
        assert_eq!(
            CompileCache::clear(&cache_dir).expect("clears").remembered,
            1
        );
        assert_eq!(cache.recall(input), None);
    }

    #[test]
    fn code_is_used_only_under_the_mac_of_its_key_component_and_engine() {
        let (_dir, cache_dir, key_file) = fresh();
        let cache = CompileCache::open(cache_dir, &key_file).expect("cache opens");
        let engine = Engine::default();
        let (digest, compatibility) = (blake3::hash(b"component"), compatibility(&engine));
        let code = b"compiled code";
        let entry = |mac: &[u8]| [code, mac, MAGIC].concat();
        let sound = entry(cache.mac(&digest, &compatibility, code).as_bytes());
        assert_eq!(
            cache.verified_code(&sound, &digest, &compatibility),
            Some(&code[..])
        );
        let other_component = blake3::hash(b"another component");
        assert_eq!(
            cache.verified_code(&sound, &other_component, &compatibility),
            None
        );
        assert_eq!(cache.verified_code(&sound, &digest, &[0; 32]), None);
        let mut flipped = sound.clone();
        flipped[0] ^= 1;
        assert_eq!(cache.verified_code(&flipped, &digest, &compatibility), None);
        let forgeries = [
            *blake3::hash(code).as_bytes(),
            *blake3::keyed_hash(&[0; 32], code).as_bytes(),
            [0; 32],
        ];
        for forged in forgeries {
            assert_eq!(
                cache.verified_code(&entry(&forged), &digest, &compatibility),
                None
            );
        }
        assert_eq!(
            cache.verified_code(&sound[10..], &digest, &compatibility),
            None,
            "truncated"
        );
    }

    #[cfg(unix)]
    #[test]
    fn the_key_is_made_once_private_and_kept() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, cache_dir, key_file) = fresh();
        let first = CompileCache::open(cache_dir.clone(), &key_file).expect("cache opens");
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&key_file), 0o600);
        assert_eq!(mode(key_file.parent().unwrap()), 0o700);
        assert_eq!(std::fs::read(&key_file).unwrap(), first.key);
        let again = CompileCache::open(cache_dir, &key_file).expect("cache opens");
        assert_eq!(again.key, first.key);
        assert_ne!(first.key, [0; KEY_LEN]);
    }

    #[test]
    fn racing_openers_end_with_one_key() {
        let (_dir, cache_dir, key_file) = fresh();
        let keys: Vec<[u8; KEY_LEN]> = std::thread::scope(|scope| {
            let openers: Vec<_> = (0..8)
                .map(|_| {
                    scope.spawn(|| {
                        CompileCache::open(cache_dir.clone(), &key_file)
                            .expect("cache opens")
                            .key
                    })
                })
                .collect();
            openers.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert!(keys.iter().all(|key| *key == keys[0]), "{keys:?}");
        assert_eq!(std::fs::read(&key_file).unwrap(), keys[0]);
    }

    #[cfg(unix)]
    #[test]
    fn a_key_others_can_read_or_reach_turns_the_cache_off() {
        use std::os::unix::fs::PermissionsExt;
        let chmod = |path: &Path, mode| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        let (_dir, cache_dir, key_file) = fresh();
        assert!(CompileCache::open(cache_dir.clone(), &key_file).is_some());
        chmod(&key_file, 0o644);
        assert!(
            CompileCache::open(cache_dir.clone(), &key_file).is_none(),
            "0644"
        );
        chmod(&key_file, 0o600);
        assert!(CompileCache::open(cache_dir.clone(), &key_file).is_some());
        chmod(key_file.parent().unwrap(), 0o777);
        assert!(
            CompileCache::open(cache_dir.clone(), &key_file).is_none(),
            "a directory anyone may write to"
        );
        chmod(key_file.parent().unwrap(), 0o700);
        let link = key_file.with_file_name("link.key");
        std::os::unix::fs::symlink(&key_file, &link).unwrap();
        assert!(
            CompileCache::open(cache_dir.clone(), &link).is_none(),
            "a link"
        );
        std::fs::write(key_file.with_file_name("short.key"), [1; 16]).unwrap();
        chmod(&key_file.with_file_name("short.key"), 0o600);
        assert!(
            CompileCache::open(cache_dir, &key_file.with_file_name("short.key")).is_none(),
            "not 32 bytes"
        );
    }

    #[test]
    fn a_key_in_the_cache_directory_turns_the_cache_off() {
        let (_dir, cache_dir, _) = fresh();
        assert!(CompileCache::open(cache_dir.clone(), &cache_dir.join("cache.key")).is_none());
        assert!(CompileCache::open(cache_dir.clone(), &cache_dir.join("k/cache.key")).is_none());
    }

    #[cfg(unix)]
    #[test]
    fn a_directory_others_can_write_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, cache_dir, key_file) = fresh();
        assert!(CompileCache::open(cache_dir.clone(), &key_file).is_some());
        std::fs::set_permissions(&cache_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(CompileCache::open(cache_dir, &key_file).is_none());
    }

    /// An entry is opened once, without following a link and without blocking, and checked
    /// (regular file, the user's, private) on that same descriptor before it is read: a link or
    /// a FIFO put in its place is refused, and cannot hang the render.
    #[test]
    fn an_entry_is_read_through_one_descriptor_that_refuses_links_and_fifos() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("entry");
        std::fs::write(&real, b"code").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_own_file(&real, 0o077).unwrap(), b"code");
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(read_own_file(&real, 0o077).is_err(), "others may read it");
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(
            read_own_file(&link, 0o077).is_err(),
            "a link is not followed"
        );
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        assert!(
            read_own_file(&fifo, 0o077).is_err(),
            "a FIFO is refused, not waited on"
        );
    }
}
