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
use rayon::prelude::*;

use super::module_args::{CacheArgs, LimitArgs, ModuleArgs};
use crate::cli::Output;
use crate::matching::Explain;
use crate::render::{self, Render, Request, write::Format};
use crate::report::{self, Verbose};

/// Arguments of `opm mod build`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm mod build examples/hello/module.yaml
  opm mod build shop/module.yaml -f prod.yaml --set components.api.traits.Replicas=5 -n shop-prod
  opm mod build module.yaml -o json -j 4 --fuel 50000000 --memory 32Mi --timeout 1s")]
pub struct BuildArgs {
    #[command(flatten)]
    pub module: ModuleArgs,

    /// Namespace of the rendered resources (default: the module's, else `default`).
    ///
    /// Example: -n shop-staging
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,

    /// Output format: a multi-document YAML stream, or a JSON `v1` List.
    ///
    /// Example: -o json
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputArg::Yaml)]
    pub output: OutputArg,

    /// Write one file per resource into --out-dir instead of one stream on stdout.
    ///
    /// Files are named `<lowercase-kind>-<name>.yaml`; when two resources would share a name,
    /// each gets `_<namespace>` (and, if still shared, `_<api-group>`) appended. The directory
    /// is replaced atomically and holds exactly the rendered files; a failed render leaves it
    /// as it was.
    ///
    /// Example: --split --out-dir manifests/
    #[arg(long, requires = "out_dir")]
    pub split: bool,

    /// The directory --split writes into.
    ///
    /// Example: --split --out-dir manifests/
    #[arg(long, value_name = "DIR", requires = "split")]
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
}

/// `-o`: the output formats of [`Format`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputArg {
    /// A multi-document YAML stream, one document per resource.
    Yaml,
    /// One JSON `v1` `List` holding every resource.
    Json,
}

impl From<OutputArg> for Format {
    fn from(arg: OutputArg) -> Self {
        match arg {
            OutputArg::Yaml => Format::Yaml,
            OutputArg::Json => Format::Json,
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
            namespace: self.namespace.clone(),
            jobs: self.jobs,
            caps: self.limits.caps(),
            cache: self.cache.cache(env),
            // Only --verbose prints why each transformer matched or not; without it, the plan
            // keeps only what its problems need.
            explain: match verbose {
                Some(_) => Explain::Everything,
                None => Explain::ProblemsOnly,
            },
            // A progress line would be the one line on stderr that is not JSON.
            progress: verbose != Some(Verbose::Json),
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

/// Writes the resources of a render that succeeded: one stream on stdout, or with `--split`
/// one file each in `--out-dir`.
pub fn write_output(
    args: &BuildArgs,
    done: &Render,
    stdout: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let Render { rendered, pool, .. } = done;
    match &args.out_dir {
        Some(dir) => {
            let names = render::write::split_names(&rendered.resources);
            // Serialised on the render threads, as many as -j allows.
            let files = pool.install(|| {
                names
                    .into_par_iter()
                    .zip(&rendered.resources)
                    .map(|(name, resource)| {
                        Ok((name, render::write::yaml_of(&resource.json)?.into_bytes()))
                    })
                    .collect::<anyhow::Result<Vec<_>>>()
            })?;
            render::write::replace_dir(dir, &files)?;
        }
        None => {
            let serialized =
                pool.install(|| render::write::serialize(&rendered.resources, args.output.into()))?;
            serialized.write(stdout)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
