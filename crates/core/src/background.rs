//! Work a command need not wait for.

/// Frees `value` on a thread of its own, so that the command can finish without waiting:
/// dropping the module, plan and resources of a 10,000-component render takes a tenth of a
/// second, and when `opm` exits next the operating system takes the memory back anyway. If no
/// thread can be started, `value` is dropped here.
pub fn drop_in_background<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new()
        .name("opm-free".into())
        .spawn(move || drop(value));
}
