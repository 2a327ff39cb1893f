//! Rendering: runs every planned (transformer, component) call in the sandbox, in parallel
//! ([`execute`]), then checks and labels what came back with the core's pure stages
//! (`opm_core::render`, re-exported here), resolving the checksum references once every call
//! has run, and hands the resources to the provider's renderer (`renderer.rs`), which orders
//! them and makes the output's files. [`build`] is the whole pipeline as one call.
//!
//! [`execute`] takes the calls and compiled transformers and returns a [`Rendered`]: the
//! resources in the order of the calls and every [`Failure`], grouped by component. A failure of
//! one call never stops the others (fail on end), and neither does a transformer that could not
//! be compiled: its calls fail, the others run.

pub mod build;
pub mod deliver;
mod execute;
pub mod remote;
mod renderer;
mod shared;

pub use opm_core::render::*;

pub use build::{
    Built, Planned, Planning, Render, Request, build, build_with, load_providers, plan, plan_in,
    render_threads,
};
pub(crate) use execute::Sandboxed;
pub use execute::{Runner, Transformers, execute, execute_patched, execute_with};
pub use renderer::{OutputOptions, Renderer, run as run_renderer};
pub use shared::Shared;

/// What `report` says of the component `name` with `digest`: where its code came from.
pub fn code_load(name: String, digest: String, report: &opm_sandbox::CodeReport) -> CodeLoad {
    CodeLoad {
        name,
        digest,
        source: report.source.name(),
        elapsed: report.elapsed,
    }
}
