//! The host bindings of the contract: the one place the host calls `bindgen!`. Everything else
//! uses the generated types through this module.
//!
//! The newest version, `wit/transformer.wit`, is bound at this module's top; each older version
//! the host serves is bound from its frozen copy in `wit/` in a module of its own ([`v1_0`],
//! [`v1_1`]). All are linked into one linker: a component imports `log` and `types` at the
//! version it was built for, and is called with the context of that version.

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "opm:transformer/transformer-world",
});

pub use exports::opm::transformer::transformer::TransformError;
pub use opm::transformer::log::Level;
pub use opm::transformer::types::Context;

/// `From<opm_core::calls::Context>` for the context of a version that has every field the
/// host's has (1.1.0's and later), its strings moved, not copied: a call's context is made for
/// that call alone.
macro_rules! full_context_from_host {
    ($context:ty) => {
        impl From<opm_core::calls::Context> for $context {
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
    };
}

/// `From` an older version's `transform-error` for the newest's: the same two cases.
macro_rules! transform_error_to_newest {
    () => {
        impl From<TransformError> for super::TransformError {
            fn from(error: TransformError) -> Self {
                match error {
                    TransformError::InvalidComponent(message) => Self::InvalidComponent(message),
                    TransformError::Failed(message) => Self::Failed(message),
                }
            }
        }
    };
}

full_context_from_host!(Context);

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

    pub use exports::opm::transformer::renderer::{
        Chunk, File, Mode, Options, RenderError, Resource,
    };

    /// A file as a renderer built before 1.2.0 returns it: without a mode. The component model
    /// types a record by its fields, so this is the `file` of 1.0.0 and 1.1.0 alike.
    #[derive(Debug, wasmtime::component::ComponentType, wasmtime::component::Lift)]
    #[component(record)]
    pub struct FileBefore1_2 {
        path: String,
        content: Vec<Chunk>,
    }

    /// Written as every file was before 1.2.0: [`Mode::Regular`].
    impl From<FileBefore1_2> for File {
        fn from(file: FileBefore1_2) -> Self {
            Self {
                path: file.path,
                content: file.content,
                mode: Mode::Regular,
            }
        }
    }
}

/// Version 1.0.0 of the contract, from its frozen WIT (`wit/1.0.0/transformer.wit`).
///
/// Its renderer world is not bound: a 1.0.0 renderer's `render` differs from the newest's in
/// its context and its files alone, so the host calls it with the newest bindings' resources
/// and options (which the component model types by their structure, not their names), this
/// version's context and [`renderer::FileBefore1_2`] ([`crate::call`]).
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

    transform_error_to_newest!();
}

/// Version 1.1.0 of the contract, from its frozen WIT (`wit/1.1.0/transformer.wit`).
///
/// Its renderer world is not bound, as 1.0.0's is not: its context is the newest's, its files
/// [`renderer::FileBefore1_2`].
pub mod v1_1 {
    wasmtime::component::bindgen!({
        path: "../../wit/1.1.0",
        world: "opm:transformer/transformer-world",
    });

    pub use exports::opm::transformer::transformer::TransformError;
    pub use opm::transformer::types::Context;

    // The context of version 1.1.0: every field the host has (1.2.0 added none).
    full_context_from_host!(Context);
    transform_error_to_newest!();
}
