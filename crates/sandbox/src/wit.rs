//! The host bindings of the contract: the one place the host calls `bindgen!`. Everything else
//! uses the generated types through this module.
//!
//! The newest version, `wit/transformer.wit`, is bound at this module's top; each older version
//! the host serves is bound from its frozen copy in `wit/` in a module of its own ([`v1_0`]).
//! All are linked into one linker: a component imports `log` and `types` at the version it was
//! built for, and is called with the context of that version.

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "opm:transformer/transformer-world",
});

pub use exports::opm::transformer::transformer::TransformError;
pub use opm::transformer::log::Level;
pub use opm::transformer::types::Context;

/// The context of the contract from the host's own, its strings moved, not copied: a call's
/// context is made for that call alone.
impl From<opm_core::calls::Context> for Context {
    fn from(context: opm_core::calls::Context) -> Self {
        Self {
            name: context.name,
            namespace: context.namespace,
            version: context.version,
            provider: context.provider,
            timestamp: context.timestamp,
            strict: context.strict,
            labels: context.labels,
            module: context.module,
            platform: context.platform,
            provider_version: context.provider_version,
            transformer: context.transformer,
        }
    }
}

/// The bindings of `renderer-world`. It shares `types` and `log` with `transformer-world`, so a
/// renderer is linked with the same `log` as a transformer.
pub mod renderer {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "opm:transformer/renderer-world",
        with: {
            "opm:transformer/types": crate::wit::opm::transformer::types,
            "opm:transformer/log": crate::wit::opm::transformer::log,
        },
    });

    pub use exports::opm::transformer::renderer::{Chunk, File, Options, RenderError, Resource};
}

/// Version 1.0.0 of the contract, from its frozen WIT (`wit/1.0.0/transformer.wit`).
///
/// Its renderer world is not bound: a 1.0.0 renderer's `render` differs from 1.1.0's in its
/// context alone, so the host calls it with the newest bindings' resources, options and files
/// (which the component model types by their structure, not their names) and this version's
/// context ([`crate::call`]).
pub mod v1_0 {
    wasmtime::component::bindgen!({
        path: "../../wit/1.0.0",
        world: "opm:transformer/transformer-world",
    });

    pub use exports::opm::transformer::transformer::TransformError;
    pub use opm::transformer::types::Context;

    /// The context of version 1.0.0: the host's, less what later versions added.
    impl From<opm_core::calls::Context> for Context {
        fn from(context: opm_core::calls::Context) -> Self {
            Self {
                name: context.name,
                namespace: context.namespace,
                version: context.version,
                provider: context.provider,
                timestamp: context.timestamp,
                strict: context.strict,
                labels: context.labels,
            }
        }
    }

    impl From<TransformError> for super::TransformError {
        fn from(error: TransformError) -> Self {
            match error {
                TransformError::InvalidComponent(message) => Self::InvalidComponent(message),
                TransformError::Failed(message) => Self::Failed(message),
            }
        }
    }
}
