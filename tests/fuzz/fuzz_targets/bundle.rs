//! Fuzz target `bundle`: reading a provider bundle ([`opm_core::bundle::read`]) and, for one
//! that passes, checking each component as a render does before compiling it
//! ([`opm_core::bundle::component::check_structure`]) and in full
//! ([`opm_core::bundle::component::check`]), and turning it into a provider checked in full
//! ([`opm_core::provider::from_bundle_checked`]): what loading and installing a `.opmb` file
//! do before anything is compiled.
//!
//! Every entry is named by its BLAKE3, so mutations rarely get past the digest checks; the
//! `component` target fuzzes what comes after them.

#![no_main]

use libfuzzer_sys::fuzz_target;
use opm_core::bundle::{self, component};
use opm_core::provider;

fuzz_target!(|data: &[u8]| {
    let bundle = match bundle::read("fuzz.opmb", data) {
        Ok(bundle) => bundle,
        Err(error) => {
            let _ = error.to_string();
            return;
        }
    };
    for bytes in bundle.components.values() {
        if let Err(error) = component::check_structure(bytes) {
            let _ = error.to_string();
        }
        if let Err(error) = component::check(bytes) {
            let _ = error.to_string();
        }
    }
    if let Err(error) = provider::from_bundle_checked("fuzz.opmb".into(), bundle) {
        let _ = error.to_string();
    }
});
