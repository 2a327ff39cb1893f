//! opm's integration tests: one test binary, a module per area.

mod authoring;
mod bundles;
mod cli;
mod examples;
mod fixtures;
mod guest_sdk;
mod hostile;
mod kubernetes;
mod polyglot;
mod render;
mod sandbox;
mod wasi;
