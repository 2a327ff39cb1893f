//! The sandbox: one wasmtime [`Engine`] per process, each transformer compiled once, and a
//! fresh, limited instance in its own `Store` for every transform call
//! (`docs/host-guest-contract.md#what-the-sandbox-guarantees`).
//!
//! - [`Sandbox`] owns the engine, the linker (which offers `log` and a WASI 0.2 that grants
//!   nothing, see [`wasi`](self::wasi)), the epoch ticker that enforces wall-clock limits, and
//!   the redactor every guest's words pass through.
//! - [`Sandbox::compile`] turns component bytes into a [`CompiledTransformer`]: compiled,
//!   type-checked against the WIT world and pre-instantiated.
//! - [`Sandbox::call`] runs one transform under [`Limits`] and returns a [`CallOutcome`]: the
//!   resources or a [`CallError`] that names the limit hit, plus what the guest logged and the
//!   fuel and time it used.
//!
//! ```no_run
//! use opm_sandbox::{Limits, Sandbox};
//! # fn demo(bytes: &[u8], context: opm_sandbox::Context) -> anyhow::Result<()> {
//! let sandbox = Sandbox::new(&Limits::default())?;
//! let deployment = sandbox.compile("transformer.opm.dev/workload@v1#DeploymentTransformer", bytes)?;
//! let input = r#"{"metadata": {"name": "api"}, "spec": {"container": {"image": "nginx"}}}"#.to_owned();
//! let outcome = sandbox.call(&deployment, &input, context, &Limits::default());
//! println!("{:?} after {} units of fuel", outcome.result, outcome.fuel_used);
//! # Ok(()) }
//! ```
//!
//! What a call is limited by, what it produces and how it fails are plain data, `opm_core`'s
//! `calls`, re-exported here. The engine is this crate's alone: the core and the fuzz targets
//! build without wasmtime.

pub mod cache;
mod call;
pub mod compiler;
mod engine;
pub mod isolated;
mod pool;
pub mod precompiled;
mod wasi;
pub mod wit;

pub use cache::{CompileCache, CompileTurn, Tally};
pub use compiler::{Compiler, engine_config, engine_config_for};
pub use engine::{CodeReport, CodeSource, CompiledRenderer, CompiledTransformer, Sandbox};
pub use opm_core::calls::{
    Bytes, CallError, CallOutcome, Caps, CompileError, Context, LOG_LINE_COST, Limits, LogLevel,
    LogLine, MAX_ERROR_TEXT, MAX_LOG_LINE, Outcome, limits, outcome,
};
pub use precompiled::Precompiled;
