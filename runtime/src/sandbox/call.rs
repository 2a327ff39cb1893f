//! One transform call: a fresh `Store` with fuel, an epoch deadline and a resource limiter, a
//! fresh instance, the call, and the mapping of every outcome to a [`CallError`].

use std::time::{Duration, Instant};

use wasmtime::{Engine, ResourceLimiter, Store, Trap};

use super::CompiledTransformer;
use super::error::CallError;
use super::limits::Limits;
use crate::wit::{self, Level};

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

/// The longest log line kept; longer ones are cut.
pub const MAX_LOG_LINE: usize = 4096;

/// Everything one call produced.
#[derive(Debug, Clone)]
pub struct CallOutcome {
    /// The resources, each one JSON document as the guest returned it, or why the call failed.
    pub result: Result<Vec<String>, CallError>,
    /// What the guest logged, within the log limit.
    pub logs: Vec<LogLine>,
    /// Log lines dropped because the log limit was reached.
    pub logs_dropped: usize,
    /// Fuel units the call used.
    pub fuel_used: u64,
    /// Wall-clock time of instantiation and call.
    pub elapsed: Duration,
}

/// The data of one call's `Store`: the limiter and the log.
pub(super) struct CallState {
    memory_limit: u64,
    table_limit: u64,
    instance_limit: usize,
    /// Set when the guest asked for more memory than allowed: (limit, requested).
    memory_denied: Option<u64>,
    table_denied: Option<u64>,
    log_budget: usize,
    logs: Vec<LogLine>,
    logs_dropped: usize,
}

impl ResourceLimiter for CallState {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired as u64 > self.memory_limit {
            self.memory_denied = Some(desired as u64);
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired as u64 > self.table_limit {
            self.table_denied = Some(desired as u64);
            return Ok(false);
        }
        Ok(true)
    }

    fn instances(&self) -> usize {
        self.instance_limit
    }

    fn tables(&self) -> usize {
        self.instance_limit
    }

    fn memories(&self) -> usize {
        self.instance_limit
    }
}

impl wit::opm::transformer::log::Host for CallState {
    fn log(&mut self, level: Level, mut message: String) {
        if message.len() > MAX_LOG_LINE {
            let mut cut = MAX_LOG_LINE;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push('…');
        }
        if message.len() > self.log_budget {
            self.logs_dropped += 1;
            return;
        }
        self.log_budget -= message.len();
        let level = match level {
            Level::Debug => LogLevel::Debug,
            Level::Info => LogLevel::Info,
            Level::Warn => LogLevel::Warn,
            Level::Error => LogLevel::Error,
        };
        self.logs.push(LogLine { level, message });
    }
}

impl wit::opm::transformer::types::Host for CallState {}

pub(super) fn call(
    engine: &Engine,
    transformer: &CompiledTransformer,
    input: &String,
    context: &wit::Context,
    limits: &Limits,
    deadline_ticks: u64,
) -> CallOutcome {
    let started = Instant::now();
    let state = CallState {
        memory_limit: limits.memory,
        table_limit: limits.table_elements,
        instance_limit: limits.instances,
        memory_denied: None,
        table_denied: None,
        log_budget: limits.log,
        logs: Vec::new(),
        logs_dropped: 0,
    };
    let mut store = Store::new(engine, state);
    store.limiter(|state| state);
    // Fuel was enabled on the engine, so this cannot fail.
    let _ = store.set_fuel(limits.fuel);
    store.set_epoch_deadline(deadline_ticks);
    store.epoch_deadline_trap();

    let result = match transformer.pre.instantiate(&mut store) {
        Ok(instance) => instance
            .opm_transformer_transformer()
            .call_transform(&mut store, input, context)
            .map_err(|error| classify(error, store.data(), limits))
            .and_then(|returned| match returned {
                Ok(resources) => check_output(resources, limits),
                Err(wit::TransformError::InvalidComponent(message)) => {
                    Err(CallError::InvalidComponent(message))
                }
                Err(wit::TransformError::Failed(message)) => Err(CallError::Failed(message)),
            }),
        Err(error) => Err(match classify(error, store.data(), limits) {
            CallError::Trap { message } => CallError::Instantiate { message },
            other => other,
        }),
    };
    let fuel_used = limits.fuel.saturating_sub(store.get_fuel().unwrap_or(0));
    let state = store.into_data();
    CallOutcome {
        result,
        logs: state.logs,
        logs_dropped: state.logs_dropped,
        fuel_used,
        elapsed: started.elapsed(),
    }
}

fn check_output(resources: Vec<String>, limits: &Limits) -> Result<Vec<String>, CallError> {
    let size: usize = resources.iter().map(String::len).sum();
    if size > limits.output {
        return Err(CallError::Output {
            limit: limits.output,
            size,
        });
    }
    Ok(resources)
}

/// Names what stopped a call. A denied memory growth wins over the trap it leads to (a Rust
/// guest aborts with `unreachable` when an allocation fails, which must not read as a panic).
fn classify(error: wasmtime::Error, state: &CallState, limits: &Limits) -> CallError {
    if let Some(requested) = state.memory_denied {
        return CallError::Memory {
            limit: limits.memory,
            requested,
        };
    }
    if let Some(requested) = state.table_denied {
        return CallError::Table {
            limit: limits.table_elements,
            requested,
        };
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => CallError::Fuel { limit: limits.fuel },
        Some(Trap::Interrupt) => CallError::Timeout {
            limit: limits.timeout,
        },
        Some(Trap::StackOverflow) => CallError::Stack {
            limit: limits.wasm_stack,
        },
        _ => match panic_message(state) {
            Some(message) => CallError::Panic { message },
            None => CallError::Trap {
                message: trap_message(&error),
            },
        },
    }
}

/// The panic message the SDK's panic hook logged, if the guest panicked.
fn panic_message(state: &CallState) -> Option<String> {
    state
        .logs
        .iter()
        .rev()
        .find(|line| line.level == LogLevel::Error && line.message.starts_with(GUEST_PANIC_PREFIX))
        .map(|line| line.message.clone())
}

/// What `opm-guest`'s panic hook logs first (`panicked at FILE:LINE:COL: MESSAGE`), at error
/// level, just before the guest traps.
const GUEST_PANIC_PREFIX: &str = "panicked";

fn trap_message(error: &wasmtime::Error) -> String {
    match error.downcast_ref::<Trap>() {
        Some(trap) => trap.to_string(),
        None => format!("{error:#}"),
    }
}
