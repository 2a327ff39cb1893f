//! The `opm` binary's crate: the pipeline entry that turns a module into files
//! ([`render::build`]), the providers built into the binary ([`embedded`]), the report of what a
//! render decided and did ([`report`]), the transformer author's tools ([`authoring`]), and the
//! command line over all of it ([`cli`]), which parses flags and prints and holds no pipeline of
//! its own.
//!
//! It builds on the workspace's other crates, each a layer the compiler keeps:
//!
//! - `opm-core` ([`opm_core`]): modules, definitions, matching, provider and bundle formats,
//!   installed providers, the render's pure stages — everything that parses, checks, plans and
//!   writes, with no engine and no network;
//! - `opm-sandbox` ([`opm_sandbox`]): wasmtime, the compile cache, precompiled code, and a fresh
//!   limited instance for every call;
//! - `opm-registry` ([`opm_registry`]): the OCI registry client, the core's
//!   `provider::oci::Fetch`;
//! - `opm-bundle-format` and `opm-codegen`: the bundle writer and the engine settings, which
//!   `build.rs` shares with the host.
//!
//! [`render`] re-exports the core's pure stages beside the running of a plan in the sandbox
//! (`render/execute.rs`) and the provider's renderer (`render/renderer.rs`). No module imports
//! from one that imports it (`runtime/tests/layering.rs` checks).

pub mod argocd;
pub mod authoring;
pub mod catalog;
pub mod cli;
pub mod conformance;
pub mod embedded;
pub mod install;
pub mod platform;
pub mod render;
pub mod report;
