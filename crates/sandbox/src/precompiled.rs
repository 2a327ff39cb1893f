//! Code precompiled into a binary for the components it embeds, with the engine settings of
//! [`opm_codegen`]: a sandbox given it ([`Sandbox::with_precompiled`](crate::Sandbox::with_precompiled))
//! loads that code instead of compiling. `opm-runtime` makes its table at build time
//! (`runtime/build.rs`) for the embedded providers.
//!
//! The code is kept compressed with zstd, the largest component's alone and every other's with
//! it as a dictionary (the components share most of their code): each is decompressed when a
//! render loads it, the dictionary once per process. The dictionary's code is lent, not
//! copied, both to its own component and to zstd's prepared dictionary: each copy of the
//! Kubernetes provider's 5 MiB took a first render a millisecond or two of copying and
//! zeroing fresh memory (benches/RESULTS.md).

use std::borrow::Cow;
use std::sync::OnceLock;

/// One entry of a table: the component's BLAKE3 (hex), its code compressed, the code's length.
pub type Entry = (&'static str, &'static [u8], usize);

/// A table of precompiled code, sorted by digest, and which entry is the others' dictionary.
pub struct Precompiled {
    code: &'static [Entry],
    base: usize,
    base_code: OnceLock<Option<Vec<u8>>>,
    dictionary: OnceLock<Option<zstd::dict::DecoderDictionary<'static>>>,
}

impl std::fmt::Debug for Precompiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Precompiled")
            .field("components", &self.code.len())
            .finish_non_exhaustive()
    }
}

impl Precompiled {
    /// The table `code`, whose entry `base` is compressed alone and is every other's dictionary.
    ///
    /// # Safety
    ///
    /// A sandbox deserializes this code into native code it runs, without compiling. Every
    /// entry must therefore be what `wasmtime::Engine::precompile_component` made, with
    /// [`opm_codegen`]'s configuration and the wasmtime this crate links, from the component
    /// whose BLAKE3 keys it, compressed as this module's doc says; and it must be part of the
    /// program (`include_bytes!` of a build script's output), which no one can change without
    /// changing the program itself. wasmtime checks the code's header again (its version,
    /// settings and the host's CPU features) and refuses a mismatch, which is then compiled.
    pub const unsafe fn new(code: &'static [Entry], base: usize) -> Self {
        Self {
            code,
            base,
            base_code: OnceLock::new(),
            dictionary: OnceLock::new(),
        }
    }

    /// Whether there is code precompiled from the component whose BLAKE3 is `digest`.
    pub fn has_code(&self, digest: &blake3::Hash) -> bool {
        self.index(digest).is_some()
    }

    /// The entry of the component whose BLAKE3 is `digest`.
    fn index(&self, digest: &blake3::Hash) -> Option<usize> {
        let hex = digest.to_hex();
        self.code
            .binary_search_by(|(known, _, _)| (*known).cmp(hex.as_str()))
            .ok()
    }

    /// The code precompiled from the component whose BLAKE3 is `digest`, if it is one: lent
    /// when it is the dictionary's.
    pub fn code(&'static self, digest: &blake3::Hash) -> Option<Cow<'static, [u8]>> {
        let index = self.index(digest)?;
        let (_, compressed, len) = self.code[index];
        if index == self.base {
            return self.base().map(Cow::Borrowed);
        }
        let dictionary = self
            .dictionary
            .get_or_init(|| self.base().map(zstd::dict::DecoderDictionary::new))
            .as_ref()?;
        zstd::bulk::Decompressor::with_prepared_dictionary(dictionary)
            .ok()?
            .decompress(compressed, len)
            .ok()
            .map(Cow::Owned)
    }

    /// The dictionary entry's code, decompressed once per process.
    fn base(&'static self) -> Option<&'static [u8]> {
        self.base_code
            .get_or_init(|| {
                let (_, compressed, len) = self.code.get(self.base)?;
                zstd::bulk::decompress(compressed, *len).ok()
            })
            .as_deref()
    }
}
