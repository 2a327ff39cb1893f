//! The host bindings of `wit/transformer.wit`: the one place the host calls `bindgen!`.
//! Everything else uses the generated types through this module.

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
