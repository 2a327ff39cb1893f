//! Logging from a transformer: bounded and redacted by the host, shown with `opm mod build
//! --verbose`. Natively (in unit tests) the lines go to stderr.

/// What the SDK's panic hook puts before a panic message, so the host can tell a panic from
/// any other trap.
pub const PANIC_PREFIX: &str = "panicked";

/// Logs a debug line.
pub fn debug(message: &str) {
    emit(Level::Debug, message);
}

/// Logs an informational line.
pub fn info(message: &str) {
    emit(Level::Info, message);
}

/// Logs a warning.
pub fn warn(message: &str) {
    emit(Level::Warn, message);
}

/// Logs an error.
pub fn error(message: &str) {
    emit(Level::Error, message);
}

#[derive(Debug, Clone, Copy)]
enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

#[cfg(target_arch = "wasm32")]
fn emit(level: Level, message: &str) {
    use crate::__private::bindings::opm::transformer::log;
    let level = match level {
        Level::Debug => log::Level::Debug,
        Level::Info => log::Level::Info,
        Level::Warn => log::Level::Warn,
        Level::Error => log::Level::Error,
    };
    log::log(level, message);
}

#[cfg(not(target_arch = "wasm32"))]
std::thread_local! {
    static CAPTURED: std::cell::RefCell<Option<Vec<(&'static str, String)>>> =
        const { std::cell::RefCell::new(None) };
}

#[cfg(not(target_arch = "wasm32"))]
fn emit(level: Level, message: &str) {
    let level = match level {
        Level::Debug => "debug",
        Level::Info => "info",
        Level::Warn => "warn",
        Level::Error => "error",
    };
    let printed = CAPTURED.with_borrow_mut(|captured| match captured {
        Some(lines) => {
            lines.push((level, message.to_owned()));
            false
        }
        None => true,
    });
    if printed {
        eprintln!("[{level}] {message}");
    }
}

/// Natively: runs `f` and returns what it returned with the lines it logged on this thread,
/// each with its level (`debug`, `info`, `warn` or `error`), instead of printing them. For unit
/// tests that check what a transform logs, and for calling transforms in-process.
///
/// ```
/// let ((), lines) = opm_guest::log::capture(|| opm_guest::log::info("hello"));
/// assert_eq!(lines, [("info", "hello".to_owned())]);
/// ```
#[cfg(not(target_arch = "wasm32"))]
pub fn capture<R>(f: impl FnOnce() -> R) -> (R, Vec<(&'static str, String)>) {
    let outer = CAPTURED.replace(Some(Vec::new()));
    let result = f();
    let lines = CAPTURED.replace(outer).unwrap_or_default();
    (result, lines)
}
