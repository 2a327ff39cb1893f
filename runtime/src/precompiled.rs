//! The code of the embedded providers' components, precompiled by `runtime/build.rs` for this
//! binary's target with the engine settings of [`codegen`](crate::codegen): a render of an
//! embedded provider loads it instead of compiling. Empty in a build without the `sandbox`
//! feature, which has no engine.

include!(concat!(env!("OUT_DIR"), "/embedded_code.rs"));

/// The code precompiled from the embedded component whose BLAKE3 is `digest`, if it is one.
pub fn code(digest: &blake3::Hash) -> Option<&'static [u8]> {
    let hex = digest.to_hex();
    CODE.binary_search_by(|(known, _)| (*known).cmp(hex.as_str()))
        .ok()
        .map(|index| CODE[index].1)
}
