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
use crate::cli::Output;
use crate::render::{self, OutputOptions, Render, Request};
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
    /// docker-compose), or with --split one file per resource. The directory is replaced
    /// atomically and holds exactly the rendered files; a failed render leaves it as it was.
    ///
    /// Example: -p docker-compose --out-dir deploy/
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<std::path::PathBuf>,

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

    /// Transform calls run at once (default: every core).
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

impl BuildArgs {
    /// How `--verbose` reports, if it was given.
    pub fn verbose(&self) -> Option<Verbose> {
        self.verbose.map(Verbose::from)
    }

    /// The render these flags ask for; `env` names the compile cache.
    pub fn request(&self, env: &dyn Fn(&str) -> Option<String>) -> Request {
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
            output: OutputOptions {
                format: self.output.name().to_owned(),
                split: self.split,
                directory: self.out_dir.is_some(),
            },
            ..self.module.request()
        }
    }
}

/// Runs `opm mod build`.
pub fn run(args: BuildArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let built = render::build(&args.request(out.env), out.env);
    let Output { stdout, stderr, .. } = out;
    Ok(report::render(
        built,
        args.verbose(),
        &mut **stderr,
        &mut |render, _| write_output(&args, render, &mut **stdout),
    )?)
}

/// Writes the files of a render that succeeded: the one stream on stdout, or every file the
/// renderer made into `--out-dir`.
pub fn write_output(
    args: &BuildArgs,
    done: &Render,
    stdout: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let files = &done.rendered.files;
    match &args.out_dir {
        Some(dir) => render::write::replace_dir(dir, files)?,
        None => {
            // The renderer was told the output is one stream; the host checked it made one.
            for file in files {
                stdout.write_all(&file.bytes)?;
            }
            stdout.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
