//! `opm mod diff`: render a module and compare it with manifests already committed, or with the
//! same module rendered by another provider.
//!
//! The comparison is the core's (`opm_core::render::diff`): resources paired by identity and
//! compared as values, each changed one printed as a unified diff of its YAML (keys sorted),
//! then the added and removed ones listed, sensitive values masked unless `--show-secrets`;
//! then the whole diff goes through the redactor once more. A summary goes to stderr. Exit
//! status as `diff`'s: 0 when equal, 1 when different, 2 on error (a render that fails
//! included).

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use serde_json::Value;

use super::module_args::{CacheArgs, CompileArgs, LimitArgs, ModuleArgs};
use crate::cli::{EXIT_FAILED, EXIT_USAGE, Output};
use crate::render;
use opm_core::redact::Redactor;
use opm_core::render::diff::{changes_text, compare, data_not_moved, manifests};

/// Arguments of `opm mod diff`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  opm mod diff shop/module.yaml --against deploy/shop/          # a --split directory
  opm mod build shop/module.yaml -f prod.yaml | opm mod diff shop/module.yaml -f prod.yaml --against -
  opm mod diff shop/module.yaml --against-provider ./kubernetes-0.3.0.opmb")]
pub struct DiffArgs {
    #[command(flatten)]
    pub module: ModuleArgs,

    /// What to compare with: a directory of manifests (as `--split` writes them), a
    /// multi-document YAML or JSON file, or `-` for stdin.
    ///
    /// Example: --against deploy/shop/
    #[arg(
        long,
        value_name = "DIR|FILE|-",
        required_unless_present = "against_provider",
        conflicts_with = "against_provider"
    )]
    pub against: Option<String>,

    /// Compare with the same module rendered by other providers (or other versions of these):
    /// what upgrading a provider changes. Changes are shown from them to `-p` (repeatable, as
    /// `-p` is).
    ///
    /// Example: --against-provider ./kubernetes-0.2.0.opmb
    #[arg(long, value_name = "PROVIDER")]
    pub against_provider: Vec<String>,

    /// Show Secret data in the diff instead of masking it.
    #[arg(long)]
    pub show_secrets: bool,

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

/// Runs `opm mod diff`.
pub fn run(args: DiffArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let result = diff(&args, out);
    Ok(crate::report::exit_status(result, out.stderr))
}

fn diff(args: &DiffArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let Some((new, redactor, new_name)) = render(args, &args.module.provider, out)? else {
        return Ok(ExitCode::from(EXIT_USAGE));
    };
    let (old, old_name) = match (&args.against, &args.against_provider[..]) {
        (Some(against), _) => (read_against(against)?, against.clone()),
        (None, []) => anyhow::bail!("say what to compare with: --against or --against-provider"),
        (None, providers) => match render(args, providers, out)? {
            Some((old, _, name)) => (old, name),
            None => return Ok(ExitCode::from(EXIT_USAGE)),
        },
    };
    let mask = (!args.show_secrets).then_some(&redactor);
    let changes = compare(&old, &new, mask);
    let colors = out.stdout_colors();
    let text = changes_text(&changes, &old_name, &new_name, colors);
    let text = match mask {
        Some(redactor) => redactor.redact(&text),
        None => text.into(),
    };
    out.stdout.write_all(text.as_bytes())?;
    let warnings = data_not_moved(&changes);
    for warning in &warnings {
        let warning = match mask {
            Some(redactor) => redactor.redact(warning).into_owned(),
            None => warning.clone(),
        };
        writeln!(out.stderr, "warning: {warning}")?;
    }
    let different = changes.changed.len() + changes.added.len() + changes.removed.len();
    writeln!(
        out.stderr,
        "{}",
        if different == 0 {
            format!("no difference: {} resources are the same", new.len())
        } else {
            format!(
                "{different} resource{} differ: {} changed, {} added, {} removed",
                if different == 1 { "" } else { "s" },
                changes.changed.len(),
                changes.added.len(),
                changes.removed.len()
            )
        }
    )?;
    Ok(if different == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILED)
    })
}

/// Renders the module with `providers` as `opm mod build` does, reporting problems on stderr;
/// the resources, the redactor of the module's sensitive values and how the diff names the
/// providers (as given, else `provider kubernetes 0.2.0`), or `None` when the render failed.
fn render(
    args: &DiffArgs,
    providers: &[String],
    out: &mut Output<'_>,
) -> anyhow::Result<Option<(Vec<Value>, Redactor, String)>> {
    let request = render::Request {
        providers: providers.to_vec(),
        jobs: args.jobs,
        caps: args.limits.caps(),
        cache: args.cache.cache(out.env),
        compiler: args.compile.compiler(),
        ..args.module.request()
    };
    let built = render::build(&request, out.env);
    let mut rendered = None;
    let status = crate::report::render(built, None, &mut *out.stderr, &mut |done, redactor| {
        // What the renderer wrote, not what the transformers returned: the files are what
        // reaches the platform, so nothing a renderer adds escapes the diff.
        let texts = done
            .rendered
            .files
            .iter()
            .map(|file| {
                (
                    file.path.clone(),
                    String::from_utf8_lossy(&file.bytes).into_owned(),
                )
            })
            .collect();
        let resources = manifests(texts)?;
        // As the user named them; the defaults by name and version.
        let providers: Vec<String> = if providers.is_empty() {
            done.plan
                .providers()
                .iter()
                .map(|p| format!("{} {}", p.name, p.version))
                .collect()
        } else {
            providers.to_vec()
        };
        let name = format!(
            "provider{} {}",
            if providers.len() > 1 { "s" } else { "" },
            providers.join(", ")
        );
        rendered = Some((resources, redactor.clone(), name));
        Ok(ExitCode::SUCCESS)
    })?;
    Ok(rendered.filter(|_| status == ExitCode::SUCCESS))
}

/// The resources of `against`: every `.yaml`, `.yml` and `.json` file of a directory (in name
/// order), one file, or stdin; each a stream of documents, a `List` standing for its items
/// ([`manifests`]).
fn read_against(against: &str) -> anyhow::Result<Vec<Value>> {
    let mut texts = Vec::new();
    if against == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the manifests to compare with from stdin")?;
        texts.push(("stdin".to_owned(), text));
    } else {
        let path = Path::new(against);
        let files = if path.is_dir() {
            let mut files: Vec<_> = std::fs::read_dir(path)
                .with_context(|| format!("cannot read {}", path.display()))?
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| {
                    p.is_file()
                        && p.extension()
                            .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
                })
                .collect();
            files.sort();
            files
        } else {
            vec![path.to_owned()]
        };
        for file in files {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            texts.push((file.display().to_string(), text));
        }
    }
    manifests(texts)
}
