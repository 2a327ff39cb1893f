//! The host bindings of `wit/transformer.wit`: the one place the host calls `bindgen!`.
