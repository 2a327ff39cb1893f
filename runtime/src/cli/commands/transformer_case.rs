//! `opm transformer case NEW --from MODULE --component NAME`: writes a case folder of a
//! transformer project from a real module — `component.json` and `context.json` exactly as the
//! render passes them to the project's transformer for that component
//! (`authoring::case_from`), and `expected.json`, what the project's component returns for
//! them now (recorded as `opm transformer test --bless` records it: never a call that failed or
//! output a render would refuse). The project is built first unless its component is newer
//! than every source, as `opm transformer test` does.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::module_args::{CacheArgs, LimitArgs};
use crate::authoring::cases::{self, Verdict};
use crate::authoring::{case_from, project, suite};
use crate::cli::{EXIT_FAILED, Output};
use crate::render::Request;
use opm_sandbox::Compiler;

/// Arguments of `opm transformer case`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm transformer case shop-api --from ../shop/module.yaml --component api
  opm transformer case eu --from ../shop --component api --instance shop-eu -f eu.yaml
  opm transformer case api-svc --from ../shop --component api -p kubernetes \\
      --transformer acme.com/transformers@v1#ServiceTransformer")]
pub struct CaseArgs {
    /// The new case folder's name, under the project's cases directory.
    #[arg(value_name = "NEW")]
    pub name: String,

    /// The module to take the inputs from (a file, or a directory holding module.yaml).
    #[arg(long, value_name = "MODULE")]
    pub from: PathBuf,

    /// The component of the module whose call the case is.
    #[arg(long, value_name = "NAME")]
    pub component: String,

    /// The project's transformer whose call on the component the case is, when several of the
    /// project's transformers are called on it.
    #[arg(long, value_name = "FQN")]
    pub transformer: Option<String>,

    /// The project directory (holding transformer.yaml).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub project: PathBuf,

    /// Another provider to plan with, beside the project's own (repeatable), as `opm mod build
    /// -p` takes it.
    ///
    /// Example: -p kubernetes
    #[arg(short = 'p', long = "provider", value_name = "PROVIDER")]
    pub provider: Vec<String>,

    /// A values file deep-merged onto the module, in order (repeatable).
    #[arg(short = 'f', long = "values", value_name = "VALUES")]
    pub values: Vec<PathBuf>,

    /// Set one value after the values files (repeatable), as `opm mod build --set`.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,

    /// The instance rendered (default: the module's name).
    #[arg(long, value_name = "NAME")]
    pub instance: Option<String>,

    /// Namespace of the render (default: the module's, else `default`).
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,

    /// Plan as `opm mod build --strict` does: the context says the render is strict.
    #[arg(long)]
    pub strict: bool,

    /// Use the component as it is, without running the project's build first.
    #[arg(long)]
    pub no_build: bool,

    /// Compile with Cranelift rather than the baseline compiler (see `opm transformer test`).
    #[arg(long)]
    pub optimized: bool,

    #[command(flatten)]
    pub limits: LimitArgs,

    #[command(flatten)]
    pub cache: CacheArgs,
}

/// Runs `opm transformer case`.
pub fn run(args: CaseArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let loaded = project::load(&args.project)?;
    let dir = case_from::new_case_dir(&loaded.cases_dir(), &args.name)?;
    if !args.no_build {
        super::transformer_test::build_unless_fresh(&loaded, out)?;
    }
    let request = Request {
        values: args.values.clone(),
        set: args.set.clone(),
        strict: args.strict,
        instance: args.instance.clone(),
        namespace: args.namespace.clone(),
        providers: args.provider.clone(),
        ..Request::new(&args.from)
    };
    let found = case_from::find(
        &loaded,
        request,
        &args.component,
        args.transformer.as_deref(),
        out.env,
    )?;
    case_from::write_inputs(&dir, &found)?;
    writeln!(
        out.stdout,
        "wrote {}: component {} of {} as {} receives it",
        dir.display(),
        found.call.component,
        args.from.display(),
        found.call.transformer
    )?;
    if found.sensitive {
        writeln!(
            out.stderr,
            "warning: {} holds sensitive values of the module (a Secret's, an ${{env:…}}'s), as \
             the call receives them: commit it only if they are test values",
            dir.join("component.json").display()
        )?;
    }

    // What the project's component returns for them, recorded as --bless records it.
    let component_path = loaded.component_path();
    let name = component_path.display().to_string();
    let bytes = suite::read_component(&component_path)?;
    let limits = suite::transformer_limits(Some(&found.manifest), &args.limits.caps())?;
    let secret_kinds = suite::secret_kinds(Some(&found.manifest.1))?;
    let compiler = if args.optimized {
        Compiler::Optimizing
    } else {
        Compiler::Baseline
    };
    let (sandbox, transformer) = suite::compile_transformer(
        &name,
        &bytes,
        &limits,
        compiler,
        args.cache.cache(out.env),
        out.stderr,
    )?;
    let case = cases::load(&dir)?;
    let ran = cases::run(&sandbox, &transformer?, &case, &limits, &secret_kinds);
    let verdict = suite::judge(
        &dir,
        None,
        &ran,
        "`opm mod build` would refuse what it returned:",
        true,
    )?;
    match verdict {
        Verdict::Fail(why) => {
            writeln!(
                out.stdout,
                "no {} recorded: {name} did not return what a case can expect",
                cases::EXPECTED
            )?;
            for line in why.lines().chain(ran.logs.iter().map(String::as_str)) {
                writeln!(out.stdout, "      {line}")?;
            }
            Ok(ExitCode::from(EXIT_FAILED))
        }
        Verdict::Pass | Verdict::Blessed => {
            writeln!(
                out.stdout,
                "recorded {}: what {name} returns now (review it: `opm transformer test` holds \
                 the transformer to it)",
                dir.join(cases::EXPECTED).display()
            )?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
