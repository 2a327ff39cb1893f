//! The sandbox: one wasmtime engine, a fresh limited instance per transform call (DESIGN §6).
