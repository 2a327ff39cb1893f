//! Installed providers (`providers/README.md`, "Installed providers"): a project names the
//! providers it uses in `.opm/providers.yaml`; `opm provider init` resolves each in its source,
//! verifies it, installs its bundle under `.opm/providers/NAME/VERSION/` and pins it in
//! `.opm/providers.lock.json`; `opm mod build -p NAME` then loads exactly the locked bytes
//! ([`load_locked`]).
//!
//! ```yaml
//! # .opm/providers.yaml
//! keys: [keys/platform.pub]          # trusted for every provider (optional)
//! providers:
//!   - name: kubernetes
//!     version: ^0.2                   # exact, or a semver requirement
//!     source: ../../registry          # a bundle file or a directory registry DIR/NAME/VERSION/, from .opm/
//!     keys: [keys/k8s-team.pub]       # trusted for this one (optional)
//! ```
//!
//! A provider without `source` is looked up in `$OPM_REGISTRY`. Where keys are configured, a
//! bundle must carry a signature by one of them that vouches for its name and version, at
//! `init` and at every render.
//!
//! By concern: [`project`] (configuration, lock, install paths, loading what is locked),
//! [`sources`] (bundle files, directory registries, OCI), [`trust`] (keys and signatures) and
//! [`resolve`] (`opm provider init`: choosing, verifying, installing and locking each provider).

pub mod project;
pub mod resolve;
pub mod sources;
pub mod trust;

pub use project::*;
pub use sources::*;
pub use trust::*;
