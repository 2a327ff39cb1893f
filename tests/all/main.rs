//! opm's integration tests: one test binary, a module per area.

mod sandbox;
