//! Fuzz target `registry`: the host's parsers of what an OCI registry sends, each on the same
//! bytes — a manifest or index ([`opm_core::provider::oci::parse_document`], and
//! [`parse_manifest`](opm_core::provider::oci::parse_manifest) and
//! [`parse_index`](opm_core::provider::oci::parse_index) directly), a tag list
//! ([`opm_core::provider::oci::parse_tag_list`]), a token response
//! ([`opm_core::provider::oci::parse_token`]) and a `WWW-Authenticate` header
//! ([`opm_core::provider::oci::parse_challenges`]) — and the escaping of registry text for the terminal
//! ([`opm_core::printable::escape`]).
//!
//! Besides never panicking: a manifest that parses must write back to JSON that parses to the
//! same manifest (opm pushes what it would pull), `parse_document` must agree with the direct
//! parsers, a token must be fit for a header, and escaped text must hold no control character.

#![no_main]

use libfuzzer_sys::fuzz_target;
use opm_core::provider::oci::{self, Document};
use opm_core::printable;

fuzz_target!(|data: &[u8]| {
    match oci::parse_document(data) {
        Ok(Document::Manifest(manifest)) => {
            let same = oci::parse_manifest(data).expect("parse_document read a manifest");
            assert_eq!(same, *manifest);
            let written = serde_json::to_vec(&manifest).expect("a manifest writes as JSON");
            let read = oci::parse_manifest(&written).expect("a written manifest parses");
            assert_eq!(read, *manifest, "a manifest does not survive writing");
        }
        Ok(Document::Index(index)) => {
            let same = oci::parse_index(data).expect("parse_document read an index");
            assert_eq!(same, index);
        }
        Err(error) => {
            let _ = error.to_string();
            let _ = oci::parse_manifest(data).map_err(|e| e.to_string());
            let _ = oci::parse_index(data).map_err(|e| e.to_string());
        }
    }
    if let Ok(tags) = oci::parse_tag_list(data) {
        for tag in &tags {
            let _ = printable::escape(tag);
        }
    }
    match oci::parse_token(data) {
        Ok(token) => assert!(
            !token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic()),
            "a token that cannot go into a header: {token:?}"
        ),
        Err(error) => {
            let _ = error.to_string();
        }
    }
    let text = String::from_utf8_lossy(data);
    for challenge in oci::parse_challenges(&text) {
        assert!(!challenge.scheme.is_empty(), "a challenge without a scheme");
        assert_eq!(challenge.scheme, challenge.scheme.to_ascii_lowercase());
    }
    let escaped = printable::escape(&text);
    assert!(
        !escaped.chars().any(char::is_control),
        "escaped text with a control character: {escaped:?}"
    );
});
