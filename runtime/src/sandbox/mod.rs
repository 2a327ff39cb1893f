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
//! use opm_runtime::sandbox::{Limits, Sandbox};
//! # fn demo(bytes: &[u8], context: &opm_runtime::wit::Context) -> anyhow::Result<()> {
//! let sandbox = Sandbox::new(&Limits::default())?;
//! let deployment = sandbox.compile("transformer.opm.dev/workload@v1#DeploymentTransformer", bytes)?;
//! let input = r#"{"metadata": {"name": "api"}, "spec": {"container": {"image": "nginx"}}}"#.to_owned();
//! let outcome = sandbox.call(&deployment, &input, context, &Limits::default());
//! println!("{:?} after {} units of fuel", outcome.result, outcome.fuel_used);
//! # Ok(()) }
//! ```

//!
//! What a call is limited by ([`limits`]), what it produces ([`outcome`]) and how it fails
//! ([`CallError`], [`CompileError`]) are plain data, there without wasmtime too: the fuzz
//! targets build this crate without its `sandbox` feature, which leaves out the engine and
//! everything that needs it.

#[cfg(feature = "sandbox")]
pub mod cache;
#[cfg(feature = "sandbox")]
mod call;
#[cfg(feature = "sandbox")]
mod engine;
mod error;
#[cfg(feature = "sandbox")]
pub mod isolated;
pub mod limits;
pub mod outcome;
#[cfg(feature = "sandbox")]
mod pool;
#[cfg(feature = "sandbox")]
mod wasi;

#[cfg(feature = "sandbox")]
pub use cache::{CompileCache, CompileTurn};
#[cfg(feature = "sandbox")]
pub use engine::{CodeReport, CodeSource, CompiledRenderer, CompiledTransformer, Sandbox};
pub use error::{CallError, CompileError};
pub use limits::{Bytes, Caps, Limits};
pub use outcome::{
    CallOutcome, LOG_LINE_COST, LogLevel, LogLine, MAX_ERROR_TEXT, MAX_LOG_LINE, Outcome,
};
