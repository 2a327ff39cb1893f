//! The network half of the parent module in a build without the `registry` feature (the fuzz
//! targets link the parsers, not the client): every transfer says it is not there.

use std::collections::BTreeMap;

use super::{OciRef, Options, Pulled};

fn missing(what: &str, reference: &OciRef) -> anyhow::Error {
    anyhow::anyhow!(
        "{what} {reference}: this build of opm has no registry client (the `registry` feature)"
    )
}

/// See the `registry` build's `tags`.
pub fn tags(repository: &OciRef, _options: &Options) -> anyhow::Result<Vec<String>> {
    Err(missing("listing the tags of", repository))
}

/// See the `registry` build's `annotations`.
pub fn annotations(
    source: &OciRef,
    _options: &Options,
) -> anyhow::Result<BTreeMap<String, String>> {
    Err(missing("reading the annotations of", source))
}

/// See the `registry` build's `pull`.
pub fn pull(source: &OciRef, _options: &Options, _max_bundle: u64) -> anyhow::Result<Pulled> {
    Err(missing("pulling", source))
}
