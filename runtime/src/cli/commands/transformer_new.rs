//! `opm transformer new NAME --lang rust|js|python|c [--renderer] [--dir DIR]`: a transformer
//! project — with `--renderer`, a provider's renderer — that builds and passes its own tests out
//! of the box (see `authoring::templates`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::authoring::templates::{self, Kind, Language};
use crate::cli::Output;

/// Arguments of `opm transformer new`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm transformer new hello --lang rust
  opm transformer new greeter --lang python --dir transformers/greeter
  opm transformer new lines --renderer --lang rust")]
pub struct NewArgs {
    /// The transformer's (or renderer's) name: lowercase letters, digits and hyphens.
    #[arg(value_name = "NAME")]
    pub name: String,

    /// The language to write it in.
    #[arg(short = 'l', long = "lang", value_parser = language())]
    pub lang: Language,

    /// Scaffold a provider's renderer instead of a transformer: the component that writes a
    /// render's files (`renderer-world`), here every resource as one line of JSON in
    /// `resources.jsonl` (Rust, JavaScript or Python).
    #[arg(long)]
    pub renderer: bool,

    /// Where to create the project (default: ./NAME); it must not exist or be empty.
    #[arg(short = 'd', long = "dir", value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Runs `opm transformer new`.
pub fn run(args: NewArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let dir = args.dir.unwrap_or_else(|| PathBuf::from(&args.name));
    let kind = if args.renderer {
        Kind::Renderer
    } else {
        Kind::Transformer
    };
    let files = templates::write(&args.name, args.lang, kind, &dir)?;
    writeln!(
        out.stdout,
        "created {} {} ({}) in {}, {} files",
        kind.noun(),
        args.name,
        args.lang.display_name(),
        dir.display(),
        files.len()
    )?;
    writeln!(out.stdout, "next:")?;
    writeln!(out.stdout, "  cd {}", dir.display())?;
    writeln!(
        out.stdout,
        "  opm transformer build   # runs transformer.yaml's build command"
    )?;
    writeln!(
        out.stdout,
        "  opm transformer test    # runs cases/ in the sandbox"
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Parses `--lang`: one of [`Language::ALL`] by its id, each listed with its description.
fn language() -> impl clap::builder::TypedValueParser<Value = Language> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser as _};
    PossibleValuesParser::new(
        Language::ALL
            .map(|language| PossibleValue::new(language.id()).help(language.description())),
    )
    .map(|id| Language::from_id(&id).expect("clap accepts only the ids of Language::ALL"))
}
