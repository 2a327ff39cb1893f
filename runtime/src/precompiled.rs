//! The code of the embedded providers' components, precompiled by `runtime/build.rs` for this
//! binary's target with the engine settings of [`codegen`](crate::codegen): a render of an
//! embedded provider loads it instead of compiling.
//!
//! The code is kept compressed with zstd, the largest component's alone and every other's with
//! it as a dictionary (the components share most of their code): each is decompressed when a
//! render loads it, the dictionary once per process.

use std::sync::OnceLock;

include!(concat!(env!("OUT_DIR"), "/embedded_code.rs"));

/// Whether there is code precompiled from the embedded component whose BLAKE3 is `digest`.
pub fn has_code(digest: &blake3::Hash) -> bool {
    index(digest).is_some()
}

/// The entry of `CODE` of the embedded component whose BLAKE3 is `digest`.
fn index(digest: &blake3::Hash) -> Option<usize> {
    let hex = digest.to_hex();
    CODE.binary_search_by(|(known, _, _)| (*known).cmp(hex.as_str()))
        .ok()
}

/// The code precompiled from the embedded component whose BLAKE3 is `digest`, if it is one.
pub fn code(digest: &blake3::Hash) -> Option<Vec<u8>> {
    let index = index(digest)?;
    let (_, compressed, len) = CODE[index];
    if index == BASE {
        return base().as_ref().map(|(code, _)| code.clone());
    }
    let (_, dictionary) = base().as_ref()?;
    zstd::bulk::Decompressor::with_prepared_dictionary(dictionary)
        .ok()?
        .decompress(compressed, len)
        .ok()
}

/// The dictionary entry's code, and that code prepared as the others' dictionary.
fn base() -> &'static Option<(Vec<u8>, zstd::dict::DecoderDictionary<'static>)> {
    static BASE_CODE: OnceLock<Option<(Vec<u8>, zstd::dict::DecoderDictionary<'static>)>> =
        OnceLock::new();
    BASE_CODE.get_or_init(|| {
        let (_, compressed, len) = CODE.get(BASE)?;
        let code = zstd::bulk::decompress(compressed, *len).ok()?;
        let dictionary = zstd::dict::DecoderDictionary::copy(&code);
        Some((code, dictionary))
    })
}
