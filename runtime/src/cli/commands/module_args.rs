//! Arguments shared by several commands: which module to load (`mod build`, `mod vet`), and the
//! per-call limits a caller may set (`mod build`, `transformer test`).

use std::path::PathBuf;

use clap::Args;

use crate::render::Request;
use opm_sandbox::limits::{parse_duration, parse_size};
use opm_sandbox::{Caps, CompileCache};

/// Which module to load, with which values, against which provider.
#[derive(Debug, Clone, Args)]
pub struct ModuleArgs {
    /// The module file (YAML or JSON), or a directory holding `module.yaml`.
    ///
    /// Example: opm mod build shop/module.yaml
    #[arg(default_value = "module.yaml", value_name = "MODULE")]
    pub module: PathBuf,

    /// A provider to render with (repeatable: the providers are used together, their
    /// definitions merged and every one's transformers matched): a bundle file (.opmb), a
    /// provider source directory, a provider the module's project names, or the embedded
    /// `kubernetes`. Default: every provider of the project found from the module's directory
    /// upward (.opm/providers.yaml), else the embedded `kubernetes`.
    ///
    /// Example: -p kubernetes -p ./acme-0.1.0.opmb
    #[arg(short = 'p', long = "provider", value_name = "PROVIDER")]
    pub provider: Vec<String>,

    /// A values file deep-merged onto the module, in order (repeatable).
    ///
    /// Example: -f values.yaml -f prod.yaml
    #[arg(short = 'f', long = "values", value_name = "VALUES")]
    pub values: Vec<PathBuf>,

    /// Set one value after the values files (repeatable): --set PATH=VALUE.
    ///
    /// PATH is keys separated by '.', with [N] after a key to index a list (a.b[0].c). Write a
    /// key that holds dots in double quotes or escape each dot as '\.':
    /// components.api.traits."opm.dev/traits/scaling@v1#Replicas"=3. Under a component's
    /// resources, traits and policies a short name finds its FQN: components.api.traits.Replicas=3.
    ///
    /// VALUE is read as one YAML value: 3 is a number, true a boolean, null null, [a, b] a list,
    /// {k: v} a map, "3" (quoted) the string 3, an empty VALUE the empty string; anything else is
    /// a string. Missing keys are created; [N] may name an item or the one just past the end.
    ///
    /// Example: --set components.api.traits.Replicas=3
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,

    /// Treat unhandled traits, resources and policies (attached, but named by no matched
    /// transformer) as errors.
    ///
    /// Example: --strict
    #[arg(long)]
    pub strict: bool,

    /// The name of this copy of the module (default: the module's name). Another instance of
    /// a module renders into the same namespace as the first without colliding: the provider
    /// prefixes its objects' names with it, and its selectors and labels carry it.
    ///
    /// Example: --instance vaultwarden-staging
    #[arg(long, value_name = "NAME", value_parser = parse_instance)]
    pub instance: Option<String>,

    /// The provider whose renderer writes the files (default: the one the providers with
    /// transformers ship). A provider that ships only a renderer sees every resource, Secrets
    /// included, so beside other providers it is used only when named here (or as `renderer:`
    /// in .opm/providers.yaml).
    ///
    /// Example: -p kubernetes -p ./lines.opmb --renderer lines
    #[arg(long, value_name = "PROVIDER")]
    pub renderer: Option<String>,

    /// Namespace of the rendered resources (default: the module's, else `default`).
    ///
    /// Example: -n shop-staging
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,

    /// An environment variable `${env:NAME}` may read (repeatable; NAME may end in `*` for
    /// every name with that prefix). Given once, it makes the list: a module that reads any
    /// other fails, naming it. Default: any variable (`opm mod vet` lists those read).
    ///
    /// Example: --allow-env 'APP_*' --allow-env DB_PASSWORD
    #[arg(long = "allow-env", value_name = "NAME")]
    pub allow_env: Vec<String>,
}

/// An instance name: see [`opm_core::names::check_instance_name`].
fn parse_instance(name: &str) -> Result<String, String> {
    opm_core::names::check_instance_name(name).map(|()| name.to_owned())
}

/// The per-call limits given on the command line; a provider may lower them for its own calls.
#[derive(Debug, Clone, Args)]
pub struct LimitArgs {
    /// Most fuel (WebAssembly instructions, roughly) any one transform call may use.
    ///
    /// Example: --fuel 50000000
    #[arg(long, value_name = "N")]
    pub fuel: Option<u64>,

    /// Most linear memory any one transform call may use.
    ///
    /// Example: --memory 32Mi
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory: Option<u64>,

    /// Longest wall-clock time any one transform call may take.
    ///
    /// Example: --timeout 500ms
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<std::time::Duration>,
}

impl ModuleArgs {
    /// The allow-list of environment variables, when `--allow-env` was given.
    pub fn allow_env(&self) -> Option<Vec<String>> {
        (!self.allow_env.is_empty()).then(|| self.allow_env.clone())
    }

    /// A render of this module with these values and provider, otherwise as
    /// [`Request::new`] makes it.
    pub fn request(&self) -> Request {
        Request {
            values: self.values.clone(),
            set: self.set.clone(),
            strict: self.strict,
            instance: self.instance.clone(),
            providers: self.provider.clone(),
            renderer: self.renderer.clone(),
            allow_env: self.allow_env(),
            namespace: self.namespace.clone(),
            ..Request::new(&self.module)
        }
    }
}

impl LimitArgs {
    /// The caps these arguments set, the defaults where they set none.
    pub fn caps(&self) -> Caps {
        let defaults = Caps::default();
        Caps {
            fuel: self.fuel.unwrap_or(defaults.fuel),
            memory: self.memory.unwrap_or(defaults.memory),
            timeout: self.timeout.unwrap_or(defaults.timeout),
        }
    }
}

/// Which compiler compiles what a render must compile.
#[derive(Debug, Clone, Args)]
pub struct CompileArgs {
    /// Compile a component that is neither built into opm nor in the compile cache (a -p bundle
    /// or directory, an installed provider whose code is not cached) with Cranelift, whose code
    /// runs faster, rather than with Winch, which compiles it several times faster; the code
    /// is cached either way. `opm provider init` and `pull` compile with Winch, then with
    /// Cranelift in the background (`--optimized` there: with Cranelift at once).
    #[arg(long)]
    pub optimized: bool,
}

impl CompileArgs {
    /// The compiler a render with these arguments uses.
    pub fn compiler(&self) -> opm_sandbox::Compiler {
        if self.optimized {
            opm_sandbox::Compiler::Optimizing
        } else {
            opm_sandbox::Compiler::Tiered
        }
    }
}

/// Whether to use the compiled-component cache.
#[derive(Debug, Clone, Args)]
pub struct CacheArgs {
    /// Compile every component afresh: neither read nor write the compiled-component cache
    /// (`opm cache dir` shows where it is).
    #[arg(long)]
    pub no_cache: bool,
}

impl CacheArgs {
    /// The cache the environment names, unless `--no-cache`.
    pub fn cache(&self, env: &dyn Fn(&str) -> Option<String>) -> Option<CompileCache> {
        if self.no_cache {
            None
        } else {
            CompileCache::from_env(env)
        }
    }
}
