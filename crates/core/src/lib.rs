//! The core of opm: everything that parses, checks, plans and writes, and nothing that runs a
//! guest. No wasmtime, no network: the sandbox (`opm-sandbox`), the registry client
//! (`opm-registry`) and the pipeline and command line (`opm-runtime`) are crates of their own
//! that build on this one, and the fuzz targets (`tests/fuzz/`) link it alone.
//!
//! Data flows one way through its modules:
//!
//! - [`module`] loads `module.yaml` and its values;
//! - [`provider`] loads a provider manifest and its components, and installs, locks and
//!   resolves providers ([`provider::installed`]; `oci://` sources through a
//!   [`provider::oci::Fetch`] the caller gives);
//! - [`bundle`] is the provider bundle format: read, checked, packed, signed;
//! - [`definitions`] validates what components attach;
//! - [`matching`] computes the plan: which transformer runs on which component, and why;
//! - [`calls`] is what one transform call is given, may consume, and gives back;
//! - [`render`] is the render's pure stages: the checks of what calls returned, labels,
//!   checksums, patches, the layout of the output and its writers;
//! - [`redact`] keeps sensitive values out of everything but the rendered output, and
//!   [`printable`] escapes what a remote party wrote before it reaches a terminal;
//! - [`platform`] reads a releases file: every release of a platform in every environment.
//!
//! Shared by several of them, each in a home named for what it does: [`contract`] (what a
//! component may import), [`origin`] (where a piece of a module came from), [`progress`] (the
//! progress line of slow work), [`files`] (writes that never leave half a file), [`json`]
//! (canonical JSON), [`yaml`] (the parser's errors in words), [`names`] (the names the platform
//! accepts), [`background`] (work started early). Above them all, [`inspect`] is what `opm
//! provider inspect` shows of a provider. No module imports from one that imports it
//! (`runtime/tests/layering.rs` checks).

pub mod background;
pub mod bundle;
pub mod calls;
pub mod contract;
pub mod definitions;
pub mod files;
pub mod inspect;
pub use opm_bundle_format::json;
pub mod matching;
pub mod module;
pub mod names;
pub mod origin;
pub mod platform;
pub mod printable;
pub mod progress;
pub mod provider;
pub mod redact;
pub mod render;
pub mod yaml;

/// What the unit tests share.
#[cfg(test)]
pub(crate) mod testing {
    /// Numbers below `n`, each call the next of a sequence fixed by `seed` (xorshift): the
    /// generated documents of the fast paths' tests.
    pub(crate) fn numbers(mut seed: u64) -> impl FnMut(usize) -> usize {
        move |n| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            usize::try_from(seed % n as u64).unwrap()
        }
    }
}
