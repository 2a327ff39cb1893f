//! What one call produces: the resources or a [`CallError`], what its guest logged, and the
//! fuel and time it used; and the bounds on what is kept of a guest's words.

use std::time::Duration;

use super::error::CallError;

/// What the guest of a call logged, one line per `log` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Its level.
    pub level: LogLevel,
    /// Its text, cut to [`MAX_LOG_LINE`] bytes.
    pub message: String,
}

/// The level of a [`LogLine`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detail for the transformer's author.
    Debug,
    /// What the transformer did.
    Info,
    /// Something the user should look at.
    Warn,
    /// Something went wrong.
    Error,
}

impl std::fmt::Display for LogLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Warn => "warn",
            Self::Error => "error",
        })
    }
}

/// The longest log line kept; longer ones are cut (after redaction).
pub const MAX_LOG_LINE: usize = 4096;

/// What each log line costs against the log limit on top of its text: the host's own cost of
/// keeping a line, so that a million empty lines cost as much as 64 MB of text would.
pub const LOG_LINE_COST: usize = 64;

/// The longest error text of a transformer that is shown; the rest is cut, with a note.
pub const MAX_ERROR_TEXT: usize = 4096;

/// Everything one guest call produced: what it returned (the resources of a transform call,
/// the files of a render) or why it failed, what it logged, and what it used.
#[derive(Debug, Clone)]
pub struct Outcome<T> {
    /// What it returned, or why the call failed.
    pub result: Result<T, CallError>,
    /// What the guest logged (and wrote to stdout and stderr), within the log limit, redacted.
    pub logs: Vec<LogLine>,
    /// Log lines dropped because the log limit was reached.
    pub logs_dropped: usize,
    /// Fuel units the call used.
    pub fuel_used: u64,
    /// Wall-clock time of instantiation and call.
    pub elapsed: Duration,
}

/// Everything one transform call produced; its resources are each one JSON document as the
/// guest returned it.
pub type CallOutcome = Outcome<Vec<String>>;
