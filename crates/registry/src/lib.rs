//! The registry client of opm: provider bundles pushed to and pulled from OCI registries
//! (`opm provider push/pull`, `init` from `oci://` sources) over HTTP and TLS, through a small
//! client of the distribution API of opm's own ([`client`]), so that opm decides how much of
//! each response it reads. What an artifact is, and the parsers of what a registry sends, are
//! `opm_core::provider::oci`'s; [`Registry`] implements its [`Fetch`], which the core's
//! provider resolution calls.
//!
//! A registry is untrusted: every response is read chunk by chunk up to a limit, every request
//! has a deadline, and everything it wrote is escaped before it is printed. Plain HTTP is used
//! only for loopback registries unless the caller allows it; credentials come from the Docker
//! config file when it has some, and are never printed.

mod client;
mod credentials;
mod error;
mod signatures;
mod transfer;

use std::collections::BTreeMap;

use opm_core::provider::oci::{Attached, Fetch, OciRef, Pulled};

pub use error::RegistryError;
pub use signatures::{Attachment, attach, find};
pub use transfer::{annotations, pull, pull_render, push, push_artifact, tags};

/// How to reach registries.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Allow plain HTTP to registries that are not on loopback.
    pub insecure_http: bool,
    /// The Docker config file to read credentials from (default `$DOCKER_CONFIG/config.json`,
    /// else `~/.docker/config.json`).
    pub docker_config: Option<std::path::PathBuf>,
}

/// The registries reached as [`Options`] say: what the core's provider resolution fetches
/// `oci://` sources through.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    /// How to reach them.
    pub options: Options,
}

impl Fetch for Registry {
    fn tags(&self, repository: &OciRef) -> anyhow::Result<Vec<String>> {
        tags(repository, &self.options)
    }

    fn annotations(&self, source: &OciRef) -> anyhow::Result<BTreeMap<String, String>> {
        annotations(source, &self.options)
    }

    fn pull(&self, source: &OciRef, max_bundle: u64) -> anyhow::Result<Pulled> {
        pull(source, &self.options, max_bundle)
    }

    fn attached(&self, repository: &OciRef, digest: &str) -> anyhow::Result<Vec<Attached>> {
        find(repository, digest, &self.options)
    }
}
