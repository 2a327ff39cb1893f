//! Fuzz target `component`: checking a transformer's component without compiling it
//! ([`opm_core::bundle::component::check`]: not native code, a valid component, the right
//! export and signature, allowed imports). The `bundle` target reaches this only for entries
//! whose digest matches; here the bytes come straight from the fuzzer.

#![no_main]

use libfuzzer_sys::fuzz_target;
use opm_core::bundle::component;

fuzz_target!(|data: &[u8]| {
    match component::check(data) {
        Ok(info) => assert_eq!(info.size, data.len()),
        Err(error) => {
            let _ = error.to_string();
        }
    }
});
