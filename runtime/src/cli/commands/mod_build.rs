//! `opm mod build`: render a module into platform manifests.
//!
//! The flags become a [`Request`] for [`render::build`], which loads, plans, compiles and runs
//! everything (`docs/rendering.md#the-pipeline`); [`report::render`] reports the outcome, and a
//! render that succeeded is written here. Every component is attempted; all problems are
//! reported together at the end, and nothing is written to stdout unless the whole render
//! succeeded.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::module_args::{CacheArgs, CompileArgs, LimitArgs, ModuleArgs};
use crate::argocd::AppEnv;
use crate::cli::Output;
use crate::render::provenance::{Provenance, Source};
use crate::render::{self, OutputOptions, Render, Request, deliver};
use crate::report::{self, Verbose};
use opm_core::matching::Explain;

/// Arguments of `opm mod build`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm mod build examples/hello/module.yaml
  opm mod build shop/module.yaml -f prod.yaml --set components.api.traits.Replicas=5 -n shop-prod
  opm mod build module.yaml -o json -j 4 --fuel 50000000 --memory 32Mi --timeout 1s")]
pub struct BuildArgs {
    #[command(flatten)]
    pub module: ModuleArgs,

    /// Output format, as the provider's renderer writes it: for Kubernetes a multi-document
    /// YAML stream, or a JSON `v1` List.
    ///
    /// Example: -o json
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputArg::Yaml)]
    pub output: OutputArg,

    /// Write one file per resource into --out-dir instead of one stream, where the renderer
    /// has such a form.
    ///
    /// Kubernetes names the files `<lowercase-kind>-<name>.yaml`; when two resources would
    /// share a name, each gets `_<namespace>` (and, if still shared, `_<api-group>`) appended.
    ///
    /// Example: --split --out-dir manifests/
    #[arg(long, requires = "out_dir")]
    pub split: bool,

    /// Write the renderer's files into DIR instead of the one stream on stdout: the stream
    /// (`<instance>.yaml` for Kubernetes, `compose.yaml` with its side files for
    /// docker-compose), or with --split one file per resource, and beside them `opm.render`,
    /// the render's provenance (what `opm mod verify-render DIR` checks). The directory is
    /// replaced atomically and holds exactly these files and `.opm-output`, opm's record of
    /// them; a failed render leaves it as it was.
    ///
    /// Example: -p docker-compose --out-dir deploy/
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<std::path::PathBuf>,

    /// Mark every object that Flux's variable substitution (`postBuild.substitute`) would
    /// change — one holding `${` or `$$` — with `kustomize.toolkit.fluxcd.io/substitute:
    /// disabled`, so that Flux applies it as rendered (Kubernetes output).
    ///
    /// Example: --flux --out-dir deploy/
    #[arg(long)]
    pub flux: bool,

    /// Render as an Argo CD Config Management Plugin's `generate` does: the application's
    /// name (ARGOCD_APP_NAME, or ARGOCD_ENV_INSTANCE) as the instance, its destination
    /// namespace (ARGOCD_APP_NAMESPACE) as -n, ARGOCD_ENV_VALUES (comma-separated, inside the
    /// application's directory) as values files, and its parameters (ARGOCD_APP_PARAMETERS)
    /// as --set; no compile cache is written unless OPM_CACHE_DIR names one.
    ///
    /// Example: opm mod build --argocd .
    #[arg(long)]
    pub argocd: bool,

    #[command(flatten)]
    pub run: RunArgs,
}

/// How a render runs and reports: shared by `mod build` and `mod push`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Explain every decision on stderr: which transformers matched each component and why,
    /// which did not and what was missing, each call's fuel, time and guest log.
    /// `--verbose=json` writes the same as one JSON object per line.
    ///
    /// Example: --verbose=json 2> render.jsonl
    #[arg(
        short = 'v',
        long,
        value_enum,
        value_name = "FORMAT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "text"
    )]
    pub verbose: Option<VerboseArg>,

    /// Transform calls run at once (default: every core; one for a module under 32 KiB whose
    /// providers are all built in).
    ///
    /// Example: -j 1
    #[arg(short = 'j', long = "jobs", value_name = "JOBS")]
    pub jobs: Option<usize>,

    #[command(flatten)]
    pub limits: LimitArgs,

    #[command(flatten)]
    pub cache: CacheArgs,

    #[command(flatten)]
    pub compile: CompileArgs,
}

/// `-o`: the output formats a renderer is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputArg {
    /// YAML: for Kubernetes a multi-document stream, one document per resource.
    Yaml,
    /// JSON: for Kubernetes one `v1` `List` holding every resource.
    Json,
}

impl OutputArg {
    /// The name the renderer is given.
    pub fn name(self) -> &'static str {
        match self {
            Self::Yaml => "yaml",
            Self::Json => "json",
        }
    }
}

/// `--verbose`: the forms of [`Verbose`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VerboseArg {
    /// Sentences for a person.
    Text,
    /// One JSON object per line.
    Json,
}

impl From<VerboseArg> for Verbose {
    fn from(arg: VerboseArg) -> Self {
        match arg {
            VerboseArg::Text => Verbose::Text,
            VerboseArg::Json => Verbose::Json,
        }
    }
}

impl RunArgs {
    /// How `--verbose` reports, if it was given.
    pub fn verbose(&self) -> Option<Verbose> {
        self.verbose.map(Verbose::from)
    }

    /// The render of `module` with `output` these flags ask for; `env` names the compile cache.
    pub fn request(
        &self,
        module: &ModuleArgs,
        output: OutputOptions,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Request {
        self.apply(module.request(), output, env)
    }

    /// `base` run as these flags say, with `output`.
    pub fn apply(
        &self,
        base: Request,
        output: OutputOptions,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Request {
        let verbose = self.verbose();
        Request {
            jobs: self.jobs,
            caps: self.limits.caps(),
            cache: self.cache.cache(env),
            compiler: self.compile.compiler(),
            // Only --verbose prints why each transformer matched or not; without it, the plan
            // keeps only what its problems need.
            explain: match verbose {
                Some(_) => Explain::Everything,
                None => Explain::ProblemsOnly,
            },
            // A progress line would be the one line on stderr that is not JSON.
            progress: verbose != Some(Verbose::Json),
            output,
            ..base
        }
    }
}

impl BuildArgs {
    /// How `--verbose` reports, if it was given.
    pub fn verbose(&self) -> Option<Verbose> {
        self.run.verbose()
    }

    /// The render these flags ask for; `env` names the compile cache.
    pub fn request(&self, env: &dyn Fn(&str) -> Option<String>) -> Request {
        self.request_with(&self.run, env)
    }

    fn request_with(&self, run: &RunArgs, env: &dyn Fn(&str) -> Option<String>) -> Request {
        let output = OutputOptions {
            format: self.output.name().to_owned(),
            split: self.split,
            directory: self.out_dir.is_some(),
        };
        Request {
            flux: self.flux,
            ..run.request(&self.module, output, env)
        }
    }

    /// The render these flags ask for in the environment `env`, with `--argocd`'s reading of
    /// Argo CD's, and where the module's source is.
    pub fn request_in(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> anyhow::Result<(Request, Option<Source>)> {
        if !self.argocd {
            let request = self.request(env);
            let source = self
                .out_dir
                .as_ref()
                .and_then(|_| deliver::git_source(&request.module));
            return Ok((request, source));
        }
        // A plugin writes nothing outside its working directory: no compile cache is opened
        // (opening one creates it) unless OPM_CACHE_DIR names one.
        let mut run = self.run.clone();
        run.cache.no_cache |= env("OPM_CACHE_DIR").is_none();
        let mut request = self.request_with(&run, env);
        let app = AppEnv::read(env, &request.module)?;
        let source = app.source();
        app.apply(&mut request);
        request.progress = false;
        Ok((request, source))
    }
}

/// Runs `opm mod build`.
pub fn run(args: BuildArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let (request, source) = args.request_in(out.env)?;
    warn_stale(&request.providers, out.stderr)?;
    // A module in a registry (`oci://…`), fetched for as long as the render runs.
    let fetched = render::remote::Fetched::new(opm_registry::Options::default());
    let request = fetched.resolve(request)?;
    let built = render::build(&request, out.env);
    let Output {
        stdout,
        stderr,
        env,
        ..
    } = out;
    Ok(report::render(
        built,
        args.verbose(),
        &mut **stderr,
        &mut |render, redactor| {
            let provenance = match &args.out_dir {
                Some(_) => Some(deliver::provenance(
                    &request,
                    render,
                    redactor,
                    env,
                    source.clone(),
                )?),
                None => None,
            };
            write_output(&args, render, provenance.as_ref(), &mut **stdout)
        },
    )?)
}

/// Warns, for each provider source directory among `providers`, of every component older than
/// a source of the project that builds it, naming the newest: a render uses a directory's
/// components as built and never builds them (`authoring::sources::stale_components`).
pub(crate) fn warn_stale(providers: &[String], stderr: &mut dyn Write) -> std::io::Result<()> {
    for provider in providers {
        let dir = std::path::Path::new(provider);
        if !dir.join("provider.yaml").is_file() {
            continue;
        }
        for stale in crate::authoring::sources::stale_components(dir) {
            writeln!(
                stderr,
                "warning: provider {provider}: component {} is older than its source {}; this \
                 render uses it as built (`opm transformer build {}` builds it again)",
                stale.component,
                stale.newest.path.display(),
                stale.project.display()
            )?;
        }
    }
    Ok(())
}

/// Writes the files of a render that succeeded: the one stream on stdout, or every file the
/// renderer made into `--out-dir` with the render's `provenance`.
pub fn write_output(
    args: &BuildArgs,
    done: &Render,
    provenance: Option<&Provenance>,
    stdout: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let files = &done.rendered.files;
    match (&args.out_dir, provenance) {
        (Some(dir), Some(provenance)) => {
            render::write::replace_dir(dir, &deliver::files(done, provenance))?
        }
        (Some(dir), None) => render::write::replace_dir(dir, files)?,
        (None, _) => {
            render::write::print_files(files, stdout)?;
            stdout.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
