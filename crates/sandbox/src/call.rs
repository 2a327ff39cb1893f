//! One transform call: a fresh `Store` with fuel, an epoch deadline, a resource limiter that
//! counts every memory and table of the call together, a bound on what one copy between guest
//! and host may allocate, a fresh instance, the call, and the mapping of every outcome to a
//! [`CallError`].
//!
//! What the guest says — log lines, its stdout and stderr, its error text — is redacted before
//! it is cut to length (so a cut never leaves half a secret behind), and kept within the log
//! limit, which charges [`LOG_LINE_COST`] bytes per line on top of its text so that empty lines
//! cost too.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use wasmtime::{Engine, ResourceLimiter, Store, Trap};

use crate::CompiledTransformer;
use crate::engine::{RendererPre, TransformerPre};
use crate::wasi::{WasiSetup, WasiState};
use crate::wit::{self, Level};
use opm_core::calls::limits::Limits;
use opm_core::calls::outcome::{
    CallOutcome, LOG_LINE_COST, LogLevel, LogLine, MAX_ERROR_TEXT, MAX_LOG_LINE,
};
use opm_core::calls::{CallError, Context};
use opm_core::contract::Version;
use opm_core::redact::Redactor;

/// How much more than the output limit one copy from guest to host may take: room for the
/// bookkeeping of a list of resources (8 bytes an entry) on top of their text.
const HOSTCALL_SLACK: usize = 1 << 20;

/// The data of one call's `Store`: the limiter's counts, the log, and WASI when the guest uses
/// it.
pub(super) struct CallState {
    memory_limit: u64,
    table_limit: u64,
    instance_limit: usize,
    /// Bytes of linear memory of all the call's memories together.
    memory_used: u64,
    /// Elements of all the call's tables together.
    table_used: u64,
    /// Set when the guest asked for more memory than allowed: the total it asked for.
    memory_denied: Option<u64>,
    table_denied: Option<u64>,
    log: LogSink,
    wasi_setup: WasiSetup,
    wasi: Option<WasiState>,
}

impl CallState {
    /// The call's WASI context, made on first use.
    pub(super) fn wasi(&mut self) -> &mut WasiState {
        let setup = &self.wasi_setup;
        self.wasi.get_or_insert_with(|| WasiState::new(setup))
    }

    pub(super) fn wasi_setup(&self) -> &WasiSetup {
        &self.wasi_setup
    }
}

impl ResourceLimiter for CallState {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = grown_total(self.memory_used, current, desired);
        if total > self.memory_limit {
            self.memory_denied = Some(total);
            return Ok(false);
        }
        self.memory_used = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = grown_total(self.table_used, current, desired);
        if total > self.table_limit {
            self.table_denied = Some(total);
            return Ok(false);
        }
        self.table_used = total;
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

/// The call's total after one memory (or table) of it grows from `current` to `desired`.
fn grown_total(total: u64, current: usize, desired: usize) -> u64 {
    total
        .saturating_sub(current as u64)
        .saturating_add(desired as u64)
}

impl wit::opm::transformer::log::Host for CallState {
    fn log(&mut self, level: Level, message: String) {
        let level = match level {
            Level::Debug => LogLevel::Debug,
            Level::Info => LogLevel::Info,
            Level::Warn => LogLevel::Warn,
            Level::Error => LogLevel::Error,
        };
        self.log.push(level, &message);
    }
}

impl wit::opm::transformer::types::Host for CallState {}

/// `log` and `types` of an older version of the contract (`wit::v1_0`, `wit::v1_1`): the
/// newest's, whose levels are the same four.
macro_rules! older_version_hosts {
    ($($version:ident),*) => {$(
        impl wit::$version::opm::transformer::log::Host for CallState {
            fn log(
                &mut self,
                level: wit::$version::opm::transformer::log::Level,
                message: String,
            ) {
                use wit::$version::opm::transformer::log::Level as Old;
                let level = match level {
                    Old::Debug => Level::Debug,
                    Old::Info => Level::Info,
                    Old::Warn => Level::Warn,
                    Old::Error => Level::Error,
                };
                wit::opm::transformer::log::Host::log(self, level, message);
            }
        }

        impl wit::$version::opm::transformer::types::Host for CallState {}
    )*};
}

older_version_hosts!(v1_0, v1_1);

/// A call's log: lines kept within a byte budget, redacted, each cut to [`MAX_LOG_LINE`].
struct LogSink {
    budget: usize,
    lines: Vec<LogLine>,
    dropped: usize,
    redactor: Arc<Redactor>,
    /// The last line, when it is what `opm-guest`'s panic hook logs just before the guest
    /// aborts; kept whatever the budget, so a panic is reported even after a flood of logs.
    panic: Option<String>,
}

impl LogSink {
    fn push(&mut self, level: LogLevel, message: &str) {
        self.panic = (level == LogLevel::Error && message.starts_with(GUEST_PANIC_PREFIX))
            .then(|| self.clean(message, MAX_LOG_LINE));
        // Charge before doing any work, so that a line over the budget costs nothing more.
        if LOG_LINE_COST + message.len().min(MAX_LOG_LINE) > self.budget {
            self.dropped += 1;
            return;
        }
        let message = self.clean(message, MAX_LOG_LINE);
        self.budget = self.budget.saturating_sub(LOG_LINE_COST + message.len());
        self.lines.push(LogLine { level, message });
    }

    /// Each line of what the guest wrote to stdout or stderr, as log lines at `level`.
    fn push_output(&mut self, level: LogLevel, stream: &str, bytes: &[u8], dropped: u64) {
        let text = String::from_utf8_lossy(bytes);
        for line in text.lines() {
            self.push(level, line);
        }
        if dropped > 0 {
            self.push(
                LogLevel::Warn,
                &format!("{dropped} more bytes written to {stream} were dropped"),
            );
        }
    }

    /// `text` redacted, then cut to `max` bytes.
    fn clean(&self, text: &str, max: usize) -> String {
        clean(&self.redactor, text, max, cut)
    }
}

/// What a guest wrote, made fit to print: redacted, its control and invisible characters
/// escaped ([`opm_core::printable::escape`]: a guest cannot clear the terminal or fake a line of
/// opm's), then cut to `max` bytes by `cut`.
fn clean(
    redactor: &Redactor,
    text: &str,
    max: usize,
    cut: fn(&str, usize) -> Cow<'_, str>,
) -> String {
    let redacted = redactor.redact(text);
    let escaped = opm_core::printable::escape(&redacted);
    cut(&escaped, max).into_owned()
}

/// `text` cut to at most `max` bytes (at a character boundary) and an ellipsis.
pub(crate) fn cut(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…", &text[..end]))
}

/// `text` cut to at most `max` bytes, with a note of how many bytes were cut.
pub(crate) fn cut_noting(text: &str, max: usize) -> Cow<'_, str> {
    match cut(text, max) {
        Cow::Borrowed(text) => Cow::Borrowed(text),
        Cow::Owned(mut shortened) => {
            let kept = shortened.len() - '…'.len_utf8();
            shortened.push_str(&format!(" ({} more bytes cut)", text.len() - kept));
            Cow::Owned(shortened)
        }
    }
}

pub(super) fn call(
    engine: &Engine,
    transformer: &CompiledTransformer,
    input: &String,
    context: Context,
    limits: &Limits,
    deadline_ticks: u64,
    redactor: &Arc<Redactor>,
) -> CallOutcome {
    let timestamp = context.timestamp.clone();
    let seed = seed(transformer.random, || blake3::hash(input.as_bytes()));
    let run = Run {
        engine,
        limits,
        timestamp: &timestamp,
        seed,
        deadline_ticks,
        redactor,
    };
    run.run(|store| {
        let returned = match &transformer.pre {
            TransformerPre::V1_2(pre) => {
                let instance = pre
                    .instantiate(&mut *store)
                    .map_err(|error| instantiate_error(error, store.data(), limits))?;
                instance.opm_transformer_transformer().call_transform(
                    &mut *store,
                    input,
                    &wit::Context::from(context),
                )
            }
            TransformerPre::V1_1(pre) => {
                let instance = pre
                    .instantiate(&mut *store)
                    .map_err(|error| instantiate_error(error, store.data(), limits))?;
                instance
                    .opm_transformer_transformer()
                    .call_transform(&mut *store, input, &wit::v1_1::Context::from(context))
                    .map(|returned| returned.map_err(wit::TransformError::from))
            }
            TransformerPre::V1_0(pre) => {
                let instance = pre
                    .instantiate(&mut *store)
                    .map_err(|error| instantiate_error(error, store.data(), limits))?;
                instance
                    .opm_transformer_transformer()
                    .call_transform(&mut *store, input, &wit::v1_0::Context::from(context))
                    .map(|returned| returned.map_err(wit::TransformError::from))
            }
        };
        returned
            .map_err(|error| classify(error, store.data(), limits))
            .and_then(|returned| match returned {
                Ok(resources) => check_output(resources, limits),
                Err(error) => Err(transform_error(error, &store.data().log, limits)),
            })
    })
}

/// The renderer's one call: `render` of `renderer` with the resources, in a store set up as a
/// transform call's is, under `limits`. What it returns is checked by the caller; its size is
/// bounded here, by the store's hostcall fuel.
pub(super) fn render(
    engine: &Engine,
    renderer: &crate::engine::CompiledRenderer,
    input: RenderInput<'_>,
    limits: &Limits,
    deadline_ticks: u64,
    redactor: &Arc<Redactor>,
) -> opm_core::calls::outcome::Outcome<Vec<wit::renderer::File>> {
    let seed = seed(renderer.random, || {
        let mut hasher = blake3::Hasher::new();
        for resource in input.resources {
            hasher.update(resource.value.as_bytes());
        }
        hasher.finalize()
    });
    let run = Run {
        engine,
        limits,
        timestamp: &input.context.timestamp,
        seed,
        deadline_ticks,
        redactor,
    };
    run.run(|store| {
        let returned = match &renderer.pre {
            RendererPre::V1_2(pre) => {
                let instance = pre
                    .instantiate(&mut *store)
                    .map_err(|error| instantiate_error(error, store.data(), limits))?;
                let context = wit::Context::from(input.context.clone());
                instance.opm_transformer_renderer().call_render(
                    &mut *store,
                    input.resources,
                    &context,
                    input.options,
                )
            }
            RendererPre::Before1_2(version, pre, render) => {
                let instance = pre
                    .instantiate(&mut *store)
                    .map_err(|error| instantiate_error(error, store.data(), limits))?;
                let returned = if *version == Version::V1_0 {
                    let context = wit::v1_0::Context::from(input.context.clone());
                    instance
                        .get_typed_func::<RenderParams<'_, wit::v1_0::Context>, ResultsBefore1_2>(
                            &mut *store,
                            render,
                        )
                        .and_then(|render| {
                            render.call(&mut *store, (input.resources, &context, input.options))
                        })
                } else {
                    // 1.1.0's context is the newest's.
                    let context = wit::Context::from(input.context.clone());
                    instance
                        .get_typed_func::<RenderParams<'_, wit::Context>, ResultsBefore1_2>(
                            &mut *store,
                            render,
                        )
                        .and_then(|render| {
                            render.call(&mut *store, (input.resources, &context, input.options))
                        })
                };
                returned.map(|(returned,)| {
                    returned.map(|files| files.into_iter().map(wit::renderer::File::from).collect())
                })
            }
        };
        returned
            .map_err(|error| classify(error, store.data(), limits))
            .and_then(|returned| {
                returned.map_err(|error| match error {
                    // Each refusal becomes a failure the host reports: no more of them than
                    // resources, and none cleaned before that is known.
                    wit::renderer::RenderError::Refused(refused)
                        if refused.len() > input.resources.len() =>
                    {
                        CallError::Failed(format!(
                            "refused {} resources, but it was given {}",
                            refused.len(),
                            input.resources.len()
                        ))
                    }
                    wit::renderer::RenderError::Refused(refused) => CallError::Refused(
                        refused
                            .into_iter()
                            .map(|(index, reason)| {
                                (index, store.data().log.clean(&reason, MAX_ERROR_TEXT))
                            })
                            .collect(),
                    ),
                    wit::renderer::RenderError::Failed(message) => {
                        CallError::Failed(store.data().log.clean(&message, MAX_ERROR_TEXT))
                    }
                })
            })
    })
}

/// `render`'s parameters, with the context of a version, as any version has them (the component
/// model types records by their fields, so the newest bindings' serve for all), and its results
/// before 1.2.0 gave a file a mode.
type RenderParams<'a, C> = (
    &'a [wit::renderer::Resource],
    &'a C,
    &'a wit::renderer::Options,
);
type ResultsBefore1_2 = (Result<Vec<wit::renderer::FileBefore1_2>, wit::renderer::RenderError>,);

/// Why an instance could not be made: a trap while instantiating is reported as such.
fn instantiate_error(error: wasmtime::Error, state: &CallState, limits: &Limits) -> CallError {
    match classify(error, state, limits) {
        CallError::Trap { message } => CallError::Instantiate { message },
        other => other,
    }
}

/// The seed of a call's randomness: the BLAKE3 of its input (`hash`) for a component that
/// imports `wasi:random`, zeros for one that does not, which has no way to read it. Hashing
/// regardless took the Kubernetes renderer's call 17 ms at 10,000 components, on the one
/// thread the renderer runs on (`benches/RESULTS.md`), and every transform call its input.
fn seed(random: bool, hash: impl FnOnce() -> blake3::Hash) -> [u8; 32] {
    if random { *hash().as_bytes() } else { [0; 32] }
}

/// What a renderer is given.
pub(super) struct RenderInput<'a> {
    pub(super) resources: &'a [wit::renderer::Resource],
    pub(super) context: &'a Context,
    pub(super) options: &'a wit::renderer::Options,
}

/// What one guest call needs of the host: the engine, its limits, and what seeds its WASI.
struct Run<'a> {
    engine: &'a Engine,
    limits: &'a Limits,
    timestamp: &'a str,
    seed: [u8; 32],
    deadline_ticks: u64,
    redactor: &'a Arc<Redactor>,
}

impl Run<'_> {
    /// Makes a fresh store with the call's fuel, deadline, limiter and log, runs `invoke` in it,
    /// and gathers what the guest logged and wrote.
    fn run<T>(
        self,
        invoke: impl FnOnce(&mut Store<CallState>) -> Result<T, CallError>,
    ) -> opm_core::calls::outcome::Outcome<T> {
        let Run {
            engine,
            limits,
            timestamp,
            seed,
            deadline_ticks,
            redactor,
        } = self;
        let started = Instant::now();
        let state = CallState {
            memory_limit: limits.memory,
            table_limit: limits.table_elements,
            instance_limit: limits.instances,
            memory_used: 0,
            table_used: 0,
            memory_denied: None,
            table_denied: None,
            log: LogSink {
                budget: limits.log,
                lines: Vec::new(),
                dropped: 0,
                redactor: Arc::clone(redactor),
                panic: None,
            },
            wasi_setup: WasiSetup {
                now: crate::wasi::timestamp_since_epoch(timestamp),
                seed,
                capture_limit: limits.log,
            },
            wasi: None,
        };
        let mut store = Store::new(engine, state);
        store.limiter(|state| state);
        // Fuel was enabled on the engine, so this cannot fail.
        let _ = store.set_fuel(limits.fuel);
        store.set_epoch_deadline(deadline_ticks);
        store.epoch_deadline_trap();
        // What the host allocates for one copy out of the guest (the returned list, an error
        // text, a log line) is bounded by the output limit, not by wasmtime's default of
        // 128 MiB.
        store.set_hostcall_fuel(limits.output.saturating_add(HOSTCALL_SLACK));

        let mut result = invoke(&mut store);
        let fuel_used = limits.fuel.saturating_sub(store.get_fuel().unwrap_or(0));
        let mut state = store.into_data();
        if let Some(wasi) = state.wasi.take() {
            let [(stdout, stdout_dropped), (stderr, stderr_dropped)] = wasi.take_output();
            result = match result {
                Err(CallError::Trap { message }) if !stderr.is_empty() => {
                    let stderr = state
                        .log
                        .redactor
                        .redact(&String::from_utf8_lossy(&stderr))
                        .into_owned();
                    Err(match uncaught(&stderr) {
                        Some(exception) => CallError::Uncaught {
                            exception: cut(&exception, MAX_ERROR_TEXT).into_owned(),
                        },
                        None => CallError::Trap {
                            message: cut(
                                &format!("{message}, after writing to stderr: {}", tail(&stderr)),
                                MAX_ERROR_TEXT,
                            )
                            .into_owned(),
                        },
                    })
                }
                other => other,
            };
            state
                .log
                .push_output(LogLevel::Info, "stdout", &stdout, stdout_dropped);
            state
                .log
                .push_output(LogLevel::Warn, "stderr", &stderr, stderr_dropped);
        }
        opm_core::calls::outcome::Outcome {
            result,
            logs: state.log.lines,
            logs_dropped: state.log.dropped,
            fuel_used,
            elapsed: started.elapsed(),
        }
    }
}

fn check_output(resources: Vec<String>, limits: &Limits) -> Result<Vec<String>, CallError> {
    if resources.len() > limits.resources {
        return Err(CallError::Resources {
            limit: limits.resources,
            count: resources.len(),
        });
    }
    let size: usize = resources.iter().map(String::len).sum();
    if size > limits.output {
        return Err(CallError::Output {
            limit: limits.output,
            size,
        });
    }
    Ok(resources)
}

/// The transformer's own error, its text counted against the output limit, redacted and cut.
fn transform_error(error: wit::TransformError, log: &LogSink, limits: &Limits) -> CallError {
    let (wit::TransformError::InvalidComponent(message) | wit::TransformError::Failed(message)) =
        &error;
    if message.len() > limits.output {
        return CallError::Output {
            limit: limits.output,
            size: message.len(),
        };
    }
    let text = clean(&log.redactor, message, MAX_ERROR_TEXT, cut_noting);
    match error {
        wit::TransformError::InvalidComponent(_) => CallError::InvalidComponent(text),
        wit::TransformError::Failed(_) => CallError::Failed(text),
    }
}

/// Names what stopped a call. A limit the engine enforces (fuel, time, stack) is what stopped
/// it; otherwise a denied memory growth wins over the trap it leads to (a Rust guest aborts
/// when an allocation fails, which must not read as a panic).
fn classify(error: wasmtime::Error, state: &CallState, limits: &Limits) -> CallError {
    let trap = error.downcast_ref::<Trap>().copied();
    match trap {
        Some(Trap::OutOfFuel) => return CallError::Fuel { limit: limits.fuel },
        Some(Trap::Interrupt) => {
            return CallError::Timeout {
                limit: limits.timeout,
            };
        }
        Some(Trap::StackOverflow) => {
            return CallError::Stack {
                limit: limits.wasm_stack,
            };
        }
        _ => {}
    }
    if let Some(exit) = error.downcast_ref::<wasmtime_wasi::I32Exit>() {
        return CallError::Exit { code: exit.0 };
    }
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
    if is_copy_over_limit(&error) {
        return CallError::Copy {
            limit: limits.output,
        };
    }
    // Only an abort right after the SDK's panic hook logged is a panic: a guest that logs
    // "panicked" and then traps some other way has trapped.
    if trap == Some(Trap::UnreachableCodeReached)
        && let Some(message) = &state.log.panic
    {
        return CallError::Panic {
            message: message.clone(),
        };
    }
    let message = match trap {
        Some(trap) => trap.to_string(),
        None => format!("{error:#}"),
    };
    CallError::Trap {
        message: cut(&state.log.redactor.redact(&message), MAX_ERROR_TEXT).into_owned(),
    }
}

/// The exception a language runtime wrote to `stderr` before it trapped, in one line:
///
/// - Python (componentize-py) prints a traceback: its last line is the exception, the frame
///   above it the author's file, line and function (`KeyError: 'issuer' (app.py, line 11, in
///   helper)`);
/// - JavaScript (componentize-js) reports an exception thrown out of `transform` that is not a
///   `{payload}` as an invalid variant tag, quoting the exception (`received \`TypeError: …\``);
///   its stack is the generated bindings', so only the message is kept.
fn uncaught(stderr: &str) -> Option<String> {
    if let Some(start) = stderr.find("Traceback (most recent call last):") {
        let lines: Vec<&str> = stderr[start..].lines().skip(1).collect();
        let exception = lines
            .iter()
            .position(|line| !line.starts_with(char::is_whitespace) && !line.is_empty())?;
        let frame = lines[..exception]
            .iter()
            .rev()
            .find_map(|line| line.trim().strip_prefix("File \""));
        let mut text = lines[exception].trim().to_owned();
        if let Some(frame) = frame {
            // `/0/app.py", line 11, in helper`: componentize-py mounts the sources at `/0`.
            let frame = frame.replacen("\",", ",", 1);
            let frame = frame
                .strip_prefix('/')
                .and_then(|f| f.split_once('/'))
                .filter(|(mount, _)| mount.chars().all(|c| c.is_ascii_digit()))
                .map_or(frame.as_str(), |(_, path)| path);
            text.push_str(&format!(" ({frame})"));
        }
        return Some(text);
    }
    let received = stderr.split_once("(received `")?.1;
    let (exception, _) = received.split_once("`) specified for")?;
    Some(format!(
        "{exception} (thrown out of transform; catch it there to report it with its file and \
         line, as the scaffold of `opm transformer new --lang js` does)"
    ))
}

/// The last lines of what a guest wrote, at most 512 bytes of them, on one line.
fn tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut kept: Vec<&str> = Vec::new();
    let mut size = 0;
    for line in lines.iter().rev().take(8) {
        size += line.len() + 3;
        if size > 512 && !kept.is_empty() {
            break;
        }
        kept.push(line.trim());
    }
    kept.reverse();
    kept.join(" / ")
}

/// Whether wasmtime stopped a copy from guest to host at the hostcall fuel the call set.
fn is_copy_over_limit(error: &wasmtime::Error) -> bool {
    error
        .chain()
        .any(|cause| cause.to_string().starts_with(HOSTCALL_FUEL_EXHAUSTED))
}

/// How wasmtime 48 words the error when one copy exceeds the store's hostcall fuel.
const HOSTCALL_FUEL_EXHAUSTED: &str =
    "too much data is being copied between the host and the guest";

/// What `opm-guest`'s panic hook logs first (`panicked at FILE:LINE:COL: MESSAGE`), at error
/// level, just before the guest traps.
const GUEST_PANIC_PREFIX: &str = "panicked";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutting_keeps_whole_characters_and_notes_what_was_cut() {
        assert_eq!(cut("héllo", 10), "héllo");
        assert_eq!(cut("héllo", 2), "h…");
        assert_eq!(cut_noting("abcdef", 4), "abcd… (2 more bytes cut)");
        assert_eq!(cut_noting("abc", 4), "abc");
    }

    #[test]
    fn an_uncaught_exception_is_found_in_what_the_runtime_wrote() {
        let python = "Traceback (most recent call last):\n  File \"/0/app.py\", line 8, in \
                      transform\n  File \"/0/app.py\", line 11, in helper\nKeyError: \
                      'certificate'\n\nthread '<unnamed>' (1) panicked at runtime/src/lib.rs:1293:29:\n\
                      Python function threw an unexpected exception\n";
        assert_eq!(
            uncaught(python).as_deref(),
            Some("KeyError: 'certificate' (app.py, line 11, in helper)")
        );
        let js = "invalid variant tag value `undefined` (received `TypeError: cannot read the \
                  issuer of api`) specified for `TransformError`\nStack:\n  \
                  export_transformer_1_0_0$transform@/tmp/c8/sources/initializer.js:228:17\n";
        assert!(
            uncaught(js)
                .unwrap()
                .starts_with("TypeError: cannot read the issuer of api (thrown out of transform;")
        );
        assert_eq!(uncaught("some other noise\n"), None);
        assert_eq!(tail("a\n\nb\nc\n"), "a / b / c");
    }

    #[test]
    fn growth_is_counted_across_memories() {
        assert_eq!(grown_total(0, 0, 100), 100);
        assert_eq!(grown_total(100, 0, 100), 200);
        assert_eq!(grown_total(200, 100, 150), 250);
    }

    fn sink(budget: usize, secrets: &[&str]) -> LogSink {
        LogSink {
            budget,
            lines: Vec::new(),
            dropped: 0,
            redactor: Arc::new(Redactor::new(secrets.iter().map(|s| (*s).to_owned()))),
            panic: None,
        }
    }

    /// An empty log line costs its fixed cost, so empty lines cannot bypass the log budget.
    #[test]
    fn empty_log_lines_are_charged_against_the_budget() {
        let mut log = sink(64 << 10, &[]);
        for _ in 0..1_000_000 {
            log.push(LogLevel::Debug, "");
        }
        assert_eq!(log.lines.len(), (64 << 10) / LOG_LINE_COST);
        assert_eq!(log.lines.len() + log.dropped, 1_000_000);
    }

    /// A log line is redacted before it is cut, so a secret straddling the cut never prints
    /// half of itself.
    #[test]
    fn a_secret_straddling_the_cut_is_redacted_before_the_cut() {
        let secret = "s3cr3t-t0k3n-value";
        let mut log = sink(1 << 20, &[secret]);
        let line = format!("{}{secret}", "x".repeat(MAX_LOG_LINE - 6));
        log.push(LogLevel::Info, &line);
        let kept = &log.lines[0].message;
        assert!(!kept.contains("s3cr3t"), "{}", &kept[kept.len() - 40..]);
        assert!(kept.len() <= MAX_LOG_LINE + '…'.len_utf8());
    }

    /// Only the SDK's hook, the last line before the abort, makes a trap a panic: a guest that
    /// logged "panicked…" earlier has trapped.
    #[test]
    fn only_the_last_line_before_the_abort_counts_as_a_panic() {
        let mut log = sink(1 << 20, &[]);
        log.push(LogLevel::Error, "panicked at src/lib.rs:1:1: boom");
        assert!(log.panic.is_some());
        log.push(LogLevel::Info, "and then something else");
        assert!(log.panic.is_none());
    }
}
