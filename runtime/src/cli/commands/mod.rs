//! One module per subcommand.

pub mod mod_build;
pub mod mod_vet;
pub mod module_args;
