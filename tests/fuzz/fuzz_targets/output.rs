//! Fuzz target `output`: the host's check of a document a transformer returned
//! ([`opm_core::render::check_resource`]) and the YAML writer on what passes
//! ([`opm_core::render::write::yaml`]).
//!
//! What passes must be what the render relies on (`metadata` is an object, which labelling
//! expects), and its YAML must read back as the same JSON value: otherwise `opm mod build`
//! would print something other than what the transformer returned.

#![no_main]

use libfuzzer_sys::fuzz_target;
use opm_core::render::{self, identity, write};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    // The WIT `string`s a guest returns are UTF-8 by the time the host sees them.
    let Ok(document) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(value) = render::check_resource(document) else {
        return;
    };
    assert!(
        value["metadata"].is_object(),
        "checked, so metadata is an object"
    );
    let _ = identity::Identity::of(&value, "fuzz").to_string();
    let yaml = write::yaml(&value).expect("a checked resource can be written as YAML");
    let read_back: Value = serde_saphyr::from_str(&yaml).expect("the written YAML parses");
    assert_eq!(
        read_back, value,
        "the YAML does not read back as the document:\n{yaml}"
    );
});
