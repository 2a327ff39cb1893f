//! The opm host: it loads a module and a provider, matches the module's components to the
//! provider's transformers natively, and runs each matched transform in a fresh WebAssembly
//! sandbox.
//!
//! Data flows one way through the modules of this crate:
//!
//! - [`module`] loads `module.yaml` and its values;
//! - [`provider`] loads a provider manifest and its components;
//! - [`bundle`] is the provider bundle format: read, checked, packed, signed;
//! - [`definitions`] validates what components attach;
//! - [`matching`] computes the plan: which transformer runs on which component, and why;
//! - [`sandbox`] runs one transform call in a fresh, limited instance;
//! - [`render`] runs the plan, checks the output and writes what the renderer laid out, and
//!   [`render::build`] is the whole pipeline as one call;
//! - [`report`] turns what a render decided and did into words, events and an exit status;
//! - [`redact`] keeps sensitive values out of everything but the rendered output;
//! - [`provider::oci`] moves provider bundles through OCI registries, and [`printable`] escapes
//!   what a remote party wrote before it reaches a terminal;
//! - [`cli`] is the `opm` command line over all of it: it parses flags and prints, and holds no
//!   pipeline of its own.
//!
//! Shared by several of them, each in a home named for what it does: [`origin`] (where a piece
//! of a module came from), [`progress`] (the progress line of slow work), [`files`] (writes that
//! never leave half a file), [`json`] (canonical JSON), [`yaml`] (the parser's errors in words),
//! [`names`] (the names the platform accepts). No module imports from one that imports it
//! (`runtime/tests/layering.rs` checks).
//!
//! The `sandbox` feature (on by default) is wasmtime and everything that needs it: the engine
//! half of [`sandbox`] (with `sandbox/isolated.rs`), running a render ([`render::build`],
//! [`render::execute`], `render/renderer.rs`), `codegen`, `precompiled`, `authoring`,
//! `report`, `wit` and `cli`. Without it this crate is a core that parses, checks and plans
//! but runs nothing — what the fuzz targets (`tests/fuzz/`) link, so that fuzzing a YAML loader
//! does not compile a WebAssembly compiler. The `registry` feature (on by default) is the
//! registry client, HTTP and TLS (`provider::oci`'s push and pull); without it the parsers of
//! what a registry sends stay, and `cli`, which pushes, is left out too.

#[cfg(feature = "sandbox")]
pub mod authoring;
pub mod background;
pub mod bundle;
#[cfg(all(feature = "sandbox", feature = "registry"))]
pub mod cli;
#[cfg(feature = "sandbox")]
pub mod codegen;
pub mod contract;
pub mod definitions;
pub mod files;
pub mod json;
pub mod matching;
pub mod module;
pub mod names;
pub mod origin;
#[cfg(feature = "sandbox")]
pub mod precompiled;
pub mod printable;
pub mod progress;
pub mod provider;
pub mod redact;
pub mod render;
#[cfg(feature = "sandbox")]
pub mod report;
pub mod sandbox;
#[cfg(feature = "sandbox")]
pub mod wit;
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
