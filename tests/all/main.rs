//! opm's integration tests: one test binary, a module per area.

mod author_loop;
mod authoring;
mod bundles;
mod cli;
mod compose;
mod container;
mod contract;
mod diff;
mod examples;
mod fixtures;
mod hostile;
mod k8s_addons;
mod k8s_network;
mod k8s_pod;
mod kubernetes;
mod parameters;
mod parity;
mod patches;
mod polyglot;
mod provider_check;
mod providers;
mod quadlet;
mod render;
mod renderer;
mod sandbox;
mod wasi;
