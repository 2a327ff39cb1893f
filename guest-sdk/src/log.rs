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
fn emit(level: Level, message: &str) {
    eprintln!("[{}] {message}", format!("{level:?}").to_lowercase());
}
