//! Arguments shared by the commands that load a module (`mod build`, `mod vet`).

use std::path::PathBuf;

use clap::Args;

use crate::provider::DEFAULT_PROVIDER;

/// Which module to load, with which values, against which provider.
#[derive(Debug, Clone, Args)]
pub struct ModuleArgs {
    /// The module file (YAML or JSON).
    #[arg(default_value = "module.yaml", value_name = "MODULE")]
    pub module: PathBuf,

    /// The provider: the embedded `kubernetes`, or a provider source directory.
    #[arg(short = 'p', long = "provider", default_value = DEFAULT_PROVIDER, value_name = "PROVIDER")]
    pub provider: String,

    /// A values file deep-merged onto the module, in order (repeatable).
    ///
    /// Example: -f values.yaml -f prod.yaml
    #[arg(short = 'f', long = "values", value_name = "VALUES")]
    pub values: Vec<PathBuf>,

    /// Set one value after the values files (repeatable).
    ///
    /// Example: --set components.api.traits.Replicas=3
    #[arg(long = "set", value_name = "K=V")]
    pub set: Vec<String>,

    /// Treat unhandled traits and resources as errors.
    #[arg(long)]
    pub strict: bool,
}
