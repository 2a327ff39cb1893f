//! The providers built into the `opm` binary — `kubernetes`, the default, `docker-compose` and
//! `quadlet` — packed by `runtime/build.rs` from `providers/` and `transformers/`, and the code
//! of their components, precompiled by it for the binary's target: a render of an embedded
//! provider loads that code instead of compiling, on the first run as on every other.

use opm_core::provider::{Embedded, Provider, ProviderError};

mod bundles {
    //! `PROVIDERS`: the embedded providers' bundles, packed by `runtime/build.rs`.
    include!(concat!(env!("OUT_DIR"), "/embedded_provider.rs"));
}

mod code {
    //! `CODE` and `BASE`: the embedded components' precompiled code, by digest.
    include!(concat!(env!("OUT_DIR"), "/embedded_code.rs"));
}

/// The providers built into this binary.
pub static PROVIDERS: Embedded = Embedded::new(bundles::PROVIDERS);

/// The code precompiled from their components, for `Sandbox::with_precompiled`.
// SAFETY: `runtime/build.rs` made every entry with `Engine::precompile_component` from the
// embedded component whose BLAKE3 keys it, with `opm_codegen`'s configuration and the wasmtime
// this binary links (its build-dependency is the very crate the host links, with the same
// features, Cargo.toml says so), for this binary's target, compressed as
// `opm_sandbox::precompiled` reads it; and it is part of the binary (`include_bytes!`).
pub static CODE: opm_sandbox::Precompiled =
    unsafe { opm_sandbox::Precompiled::new(code::CODE, code::BASE) };

/// Loads the default provider built into this binary: a bundle like any other.
pub fn load() -> Result<Provider, ProviderError> {
    PROVIDERS.load()
}

/// The bytes of the default provider's bundle.
pub fn bundle() -> &'static [u8] {
    PROVIDERS
        .bundle_of(opm_core::provider::DEFAULT_PROVIDER)
        .expect("the default provider is built in")
}

/// A sandbox with `limits` that loads the embedded components' precompiled code.
pub fn sandbox(
    limits: &opm_sandbox::Limits,
) -> Result<opm_sandbox::Sandbox, opm_sandbox::CompileError> {
    Ok(opm_sandbox::Sandbox::new(limits)?.with_precompiled(&CODE))
}
