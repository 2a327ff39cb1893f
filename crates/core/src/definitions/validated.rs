//! Values found valid, remembered between renders.
//!
//! Compiling a definition's JSON Schema costs far more than validating a value with it: the
//! catalog's 31 schemas take some 9 ms to compile (their 53 patterns half of it, checking each
//! schema against the draft's meta-schema, itself compiled once per process, a fifth), a
//! quarter of a warm render of the 36-object example, and 2–4 ms of every small render, which
//! uses three to fifteen of them (benches/RESULTS.md). A render that validates exactly what an
//! earlier render found valid need not compile any.
//!
//! So a render may carry a [`Validated`]: what the renders of the same module (its file, values
//! files, instance and namespace: the scope) found valid before, recalled from a [`Store`] (the
//! compile cache). Each value a definition validates is named by a digest of the definition's
//! schema and the value, merged over its defaults (with opm's version); a value whose digest is
//! recalled is not validated again, and its schema is compiled only if another value needs it.
//! The [`Validated`] gathers the digests of every value of the render found valid, recalled or
//! validated ([`Validated::found`]); after a plan with no error they are remembered
//! ([`Validated::remember`]). Only a value with no violation under a schema that compiled is
//! remembered, so a recalled digest stands for a validation that passed.
//!
//! The digests are keyed BLAKE3 under the store's key ([`Store::keyed_hasher`]): a value may hold
//! a secret, and a digest anyone could compute would let whoever reads the entry test guesses
//! of it. The store keeps its entries where only the user can read them, under a MAC.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

/// Where remembered digests are kept between renders: the compile cache
/// (`opm_sandbox::CompileCache`), whose entries only the user can read and whose MAC refuses
/// what someone else wrote.
pub trait Store: Sync {
    /// The bytes remembered under `name`, if any, and sound.
    fn recall_bytes(&self, name: &[u8]) -> Option<Vec<u8>>;
    /// Remembers `bytes` under `name`; failures are ignored (the next render validates again).
    fn remember_bytes(&self, name: &[u8], bytes: &[u8]);
    /// A BLAKE3 hasher keyed with a secret only the store's owner holds, for digests of values.
    fn keyed_hasher(&self) -> blake3::Hasher;
}

/// The most digests one entry holds: a module of a few thousand attached values. A render with
/// more validates everything every time, as every render did before.
pub const MAX_REMEMBERED: usize = 4096;

/// What an entry's name and every digest start with, so that no other use of the store's key
/// names the same thing; opm's version follows, as another version may validate differently.
const TAG: &[u8] = b"opm validated values v1\0";

/// BLAKE3 of `value`'s JSON: what names a schema, or a transformer's validations, in a digest.
pub(crate) fn json_digest(value: &impl serde::Serialize) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    // Writing into a hasher cannot fail.
    let _ = serde_json::to_writer(&mut hasher, value);
    *hasher.finalize().as_bytes()
}

/// What a render's earlier renders found valid, how to name a value ([`module`](self)), and
/// what this render found valid so far.
pub struct Validated<'a> {
    store: &'a dyn Store,
    name: Vec<u8>,
    known: BTreeSet<[u8; 32]>,
    hasher: blake3::Hasher,
    found: Mutex<BTreeSet<[u8; 32]>>,
}

impl std::fmt::Debug for Validated<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validated")
            .field("known", &self.known.len())
            .finish_non_exhaustive()
    }
}

impl<'a> Validated<'a> {
    /// What `store` remembers for `scope` (the module's identity: its file, values files,
    /// instance and namespace), or nothing when it remembers nothing sound.
    pub fn recall(store: &'a dyn Store, scope: &[u8]) -> Self {
        let prefix = [TAG, env!("CARGO_PKG_VERSION").as_bytes(), b"\0"].concat();
        let name = [&prefix[..], scope].concat();
        let known = store
            .recall_bytes(&name)
            .filter(|bytes| bytes.len() % 32 == 0 && bytes.len() / 32 <= MAX_REMEMBERED)
            .map(|bytes| {
                bytes
                    .chunks_exact(32)
                    .map(|chunk| chunk.try_into().expect("chunks of 32"))
                    .collect()
            })
            .unwrap_or_default();
        let mut hasher = store.keyed_hasher();
        hasher.update(&prefix);
        Self {
            store,
            name,
            known,
            hasher,
            found: Mutex::default(),
        }
    }

    /// The digest naming `value` validated by the schema whose digest is `schema`.
    pub(crate) fn digest(&self, schema: &[u8; 32], value: &Value) -> [u8; 32] {
        let mut hasher = self.hasher.clone();
        hasher.update(b"value\0");
        hasher.update(schema);
        // Writing into a hasher cannot fail.
        let _ = serde_json::to_writer(&mut hasher, value);
        *hasher.finalize().as_bytes()
    }

    /// The digest naming the JSON `text` validated by the schemas whose digest is `schemas`
    /// (a transformer's input and its `validations`).
    pub(crate) fn digest_text(&self, schemas: &[u8; 32], text: &str) -> [u8; 32] {
        let mut hasher = self.hasher.clone();
        hasher.update(b"text\0");
        hasher.update(schemas);
        hasher.update(text.as_bytes());
        *hasher.finalize().as_bytes()
    }

    /// Whether an earlier render found the value named `digest` valid: if so, this render
    /// has found it valid too ([`found`](Self::found)).
    pub(crate) fn recalls(&self, digest: [u8; 32]) -> bool {
        let known = self.known.contains(&digest);
        if known {
            self.found(digest);
        }
        known
    }

    /// This render found the value named `digest` valid.
    pub(crate) fn found(&self, digest: [u8; 32]) {
        self.found
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(digest);
    }

    /// Remembers the digests of every value this render found valid, in place of what was
    /// recalled, unless they are the same, none, or too many.
    pub fn remember(&self) {
        let found = self.found.lock().unwrap_or_else(PoisonError::into_inner);
        if *found == self.known || found.is_empty() || found.len() > MAX_REMEMBERED {
            return;
        }
        let bytes: Vec<u8> = found.iter().flatten().copied().collect();
        self.store.remember_bytes(&self.name, &bytes);
    }

    /// How many values this render found valid so far.
    #[cfg(test)]
    pub(crate) fn found_count(&self) -> usize {
        self.found
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// A store in memory.
    #[derive(Default)]
    pub(crate) struct InMemory {
        pub(crate) kept: Mutex<HashMap<Vec<u8>, Vec<u8>>>,
    }

    impl Store for InMemory {
        fn recall_bytes(&self, name: &[u8]) -> Option<Vec<u8>> {
            self.kept.lock().unwrap().get(name).cloned()
        }
        fn remember_bytes(&self, name: &[u8], bytes: &[u8]) {
            self.kept
                .lock()
                .unwrap()
                .insert(name.to_vec(), bytes.to_vec());
        }
        fn keyed_hasher(&self) -> blake3::Hasher {
            blake3::Hasher::new_keyed(&[7; 32])
        }
    }

    #[test]
    fn what_one_render_found_valid_the_next_recalls_for_its_scope_only() {
        let store = InMemory::default();
        let first = Validated::recall(&store, b"module a");
        let schema = [1; 32];
        let digest = first.digest(&schema, &serde_json::json!({"image": "nginx"}));
        assert!(!first.recalls(digest));
        first.found(digest);
        first.remember();
        let second = Validated::recall(&store, b"module a");
        assert!(second.recalls(digest));
        assert!(!Validated::recall(&store, b"module b").recalls(digest));
        // Another value, or the same under another schema, is another digest.
        assert_ne!(
            digest,
            second.digest(&schema, &serde_json::json!({"image": "nginx:1"}))
        );
        assert_ne!(
            digest,
            second.digest(&[2; 32], &serde_json::json!({"image": "nginx"}))
        );
    }

    #[test]
    fn an_entry_that_is_not_whole_digests_or_holds_too_many_is_not_recalled() {
        let store = InMemory::default();
        let name = [TAG, env!("CARGO_PKG_VERSION").as_bytes(), b"\0", b"m"].concat();
        store.remember_bytes(&name, &[3; 33]);
        assert!(Validated::recall(&store, b"m").known.is_empty());
        store.remember_bytes(&name, &vec![3; 32 * (MAX_REMEMBERED + 1)]);
        assert!(Validated::recall(&store, b"m").known.is_empty());
        // And too many are not remembered.
        let validated = Validated::recall(&store, b"other");
        for i in 0..=MAX_REMEMBERED as u32 {
            let mut digest = [0; 32];
            digest[..4].copy_from_slice(&i.to_le_bytes());
            validated.found(digest);
        }
        validated.remember();
        assert!(Validated::recall(&store, b"other").known.is_empty());
    }
}
