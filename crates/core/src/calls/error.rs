//! What can go wrong in the sandbox: compiling a component ([`CompileError`]) and running one
//! transform call ([`CallError`]). The render adds the component and transformer names.

use std::time::Duration;

use super::limits::{Bytes, format_duration};

/// A component could not be compiled or linked.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CompileError {
    /// The engine could not be configured.
    #[error("cannot set up the WebAssembly engine: {0}")]
    Engine(String),
    /// The component is not valid, or not a transformer the sandbox can run.
    #[error("transformer {transformer} ({digest}) cannot be loaded: {reason}")]
    Component {
        /// The transformer FQN.
        transformer: String,
        /// `blake3:<hex>` of the component.
        digest: String,
        /// What wasmtime said.
        reason: String,
    },
}

/// Why one transform call failed. Each limit variant carries the limit's value, and every
/// message says what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The guest ran out of fuel, the deterministic instruction budget.
    #[error(
        "ran out of fuel: used all {limit} units of its fuel limit (a loop that never ends, or more work than the limit allows; raise it with --fuel)"
    )]
    Fuel {
        /// The fuel limit.
        limit: u64,
    },
    /// The guest ran longer than the wall-clock limit.
    #[error("timed out: still running after the time limit of {} (raise it with --timeout)", format_duration(*limit))]
    Timeout {
        /// The time limit.
        limit: Duration,
    },
    /// The guest tried to grow its linear memory past the memory limit, which counts all the
    /// memories of the call together.
    #[error("hit the memory limit of {}: it asked for {} of linear memory in all (raise it with --memory)", Bytes(*limit), Bytes(*requested))]
    Memory {
        /// The memory limit in bytes.
        limit: u64,
        /// The size all its memories together would have had.
        requested: u64,
    },
    /// The guest tried to grow its tables past the table limit, which counts all the tables of
    /// the call together.
    #[error("hit the table limit of {limit} elements: it asked for {requested} in all")]
    Table {
        /// The table-element limit.
        limit: u64,
        /// The number of elements all its tables together would have had.
        requested: u64,
    },
    /// The guest overflowed its WebAssembly stack (deep or endless recursion).
    #[error("overflowed its stack of {} (deep or endless recursion)", Bytes(*limit as u64))]
    Stack {
        /// The stack limit in bytes.
        limit: usize,
    },
    /// The guest panicked; its panic message, as the SDK reported it before trapping.
    #[error("{message}")]
    Panic {
        /// `panicked at FILE:LINE:COL: MESSAGE`.
        message: String,
    },
    /// The guest threw an exception it did not catch — JavaScript, Python — and its runtime
    /// trapped; the exception as the runtime wrote it to stderr first.
    #[error(
        "threw an uncaught exception: {exception} (the guest's whole output: `opm transformer \
         test`, or --verbose)"
    )]
    Uncaught {
        /// `TypeError: message`, with the author's file and line where the runtime gave them.
        exception: String,
    },
    /// The guest trapped for any other reason.
    #[error("trapped: {message} (what the guest logged and wrote: --verbose)")]
    Trap {
        /// What the trap was, and the last of what the guest wrote to stderr before it.
        message: String,
    },
    /// The guest could not be instantiated.
    #[error("could not be instantiated: {message}")]
    Instantiate {
        /// What wasmtime said.
        message: String,
    },
    /// The guest returned more output than allowed.
    #[error("returned {} of output, over the output limit of {}", Bytes(*size as u64), Bytes(*limit as u64))]
    Output {
        /// The output limit in bytes.
        limit: usize,
        /// What it returned.
        size: usize,
    },
    /// The guest passed more data to the host in one go (its result, an error text, one log
    /// line) than its output limit allows; the copy was stopped there.
    #[error("returned or passed to the host more data at once than its output limit of {} allows (the copy was stopped)", Bytes(*limit as u64))]
    Copy {
        /// The output limit in bytes.
        limit: usize,
    },
    /// The guest returned more resources than allowed.
    #[error("returned {count} resources, over the limit of {limit} resources per call")]
    Resources {
        /// The most resources a call may return.
        limit: usize,
        /// How many it returned.
        count: usize,
    },
    /// The guest called WASI's `exit` instead of returning.
    #[error("called exit with status {code} instead of returning a result")]
    Exit {
        /// The status it passed.
        code: i32,
    },
    /// The transformer says the component lacks data it needs, or has it malformed.
    #[error("invalid component: {0}")]
    InvalidComponent(String),
    /// The transformer reported a failure.
    #[error("failed: {0}")]
    Failed(String),
    /// A renderer refused resources, each by its position in the list it was given and why.
    #[error("refused {} resources", .0.len())]
    Refused(Vec<(u32, String)>),
}

impl CallError {
    /// Whether the call stopped at one of the sandbox's limits.
    pub fn is_limit(&self) -> bool {
        matches!(
            self,
            Self::Fuel { .. }
                | Self::Timeout { .. }
                | Self::Memory { .. }
                | Self::Table { .. }
                | Self::Stack { .. }
                | Self::Output { .. }
                | Self::Copy { .. }
                | Self::Resources { .. }
        )
    }
}
