//! The host bindings of `wit/transformer.wit`: the one place the host calls `bindgen!`.
//! Everything else uses the generated types through this module.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "opm:transformer/transformer-world",
});

pub use exports::opm::transformer::transformer::TransformError;
pub use opm::transformer::log::Level;
pub use opm::transformer::types::Context;
