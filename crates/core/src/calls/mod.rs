//! What one transform call is given and gives back, as plain data: the [`Context`] it renders
//! in, what it may consume ([`limits`]), what it produces ([`outcome`]) and how it fails
//! ([`CallError`], [`CompileError`]). The sandbox (`opm-sandbox`) runs calls with these; the
//! render and the report read them, and the fuzz targets link them without an engine.

mod error;
pub mod limits;
pub mod outcome;

pub use error::{CallError, CompileError};
pub use limits::{Bytes, Caps, Limits};
pub use outcome::{
    CallOutcome, LOG_LINE_COST, LogLevel, LogLine, MAX_ERROR_TEXT, MAX_LOG_LINE, Outcome,
};

/// Where a component is being rendered: what a transform or renderer call receives as its
/// `context` (`docs/host-guest-contract.md`). The sandbox gives each component the fields of the
/// contract version it was built for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Context {
    /// The instance name.
    pub name: String,
    /// The target namespace.
    pub namespace: String,
    /// The module version.
    pub version: String,
    /// The provider (or providers, comma-separated) doing the rendering.
    pub provider: String,
    /// The render time, RFC 3339.
    pub timestamp: String,
    /// Whether the render runs in strict mode.
    pub strict: bool,
    /// The module's labels plus the tracking labels, sorted by key.
    pub labels: Vec<(String, String)>,
    /// Since contract 1.1.0: the module's name (`name` is the instance's).
    pub module: String,
    /// Since contract 1.1.0: the platform of the render (`kubernetes`, `compose`), or empty.
    pub platform: String,
    /// Since contract 1.1.0: the version of the provider that holds the component called.
    pub provider_version: String,
    /// Since contract 1.1.0: the FQN of the transformer called; empty for the renderer.
    pub transformer: String,
}
