//! The host bindings of `wit/transformer.wit`: the one place the host calls `bindgen!`.
//! Everything else uses the generated types through this module.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "opm:transformer/transformer-world",
});

pub use exports::opm::transformer::transformer::TransformError;
pub use opm::transformer::log::Level;
pub use opm::transformer::types::Context;

/// The WIT package, interface and version a transformer component must export.
pub const TRANSFORMER_EXPORT: &str = "opm:transformer/transformer@1.0.0";
/// The interface a transformer may import to log.
pub const LOG_IMPORT: &str = "opm:transformer/log@1.0.0";
