//! What `opm transformer test` runs, as values the command prints: the component under test
//! ([`read_component`], [`kind_of`]), the limits and checksum
//! kinds a transformer's cases run under ([`transformer_limits`], [`secret_kinds`]), the
//! renderer a renderer's cases run ([`renderer_under_test`]), the case loop with its verdicts
//! ([`run_cases`], each case judged by [`judge`]), and the render of a module with the project's provider beside others, or
//! with that provider alone (a whole provider's golden test), judged against its golden
//! ([`render_with`]); [`compile_transformer`] compiles what the cases call.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use serde_json::Value;

use super::cases::{self, Ran, Verdict};
use super::goldens::{self, Compared};
use super::project::{self, Kind};
use crate::render::{OutputOptions, Renderer};
use opm_core::provider::{LimitsSpec, ProviderManifest};
use opm_sandbox::{Caps, CompiledTransformer, Compiler, Limits, Sandbox};

/// The component at `path`, as a render would load it: a core module built with wit-bindgen is
/// made a component, as `opm provider pack` would ship it.
pub fn read_component(path: &Path) -> anyhow::Result<Vec<u8>> {
    let bytes = std::fs::read(path).with_context(|| {
        format!(
            "cannot read the component {} (run `opm transformer build` first)",
            path.display()
        )
    })?;
    if !wasmparser::Parser::is_core_wasm(&bytes) {
        return Ok(bytes);
    }
    opm_core::bundle::component::componentize(&bytes).with_context(|| {
        format!(
            "{} is a core module that cannot be made a component",
            path.display()
        )
    })
}

/// A sandbox with the transformer whose component is `bytes` (named `name` in messages)
/// compiled by `compiler`, its calls allowed `limits`; what the baseline compiler cannot
/// compile is compiled with Cranelift, as a render does, with a note on `notes`. An error only
/// when the sandbox cannot be made; a component that does not compile is the second value's.
pub fn compile_transformer(
    name: &str,
    bytes: &[u8],
    limits: &Limits,
    compiler: Compiler,
    cache: Option<opm_sandbox::CompileCache>,
    notes: &mut dyn std::io::Write,
) -> anyhow::Result<(Sandbox, anyhow::Result<CompiledTransformer>)> {
    let compile = |compiler| -> anyhow::Result<_> {
        let sandbox = Sandbox::with_compiler(limits, compiler)?.with_cache(cache.clone());
        let transformer = crate::render::build::compile_all(&sandbox, &[(name, bytes)], true)
            .remove(name)
            .expect("compile_all compiles every component it is given");
        Ok((sandbox, transformer))
    };
    Ok(match compile(compiler)? {
        (_, Err(error)) if compiler == Compiler::Baseline => {
            // Something the baseline compiler does not support: compile as a render does.
            writeln!(
                notes,
                "the baseline compiler cannot compile {name} ({error}); compiling it with \
                 Cranelift, as a render does"
            )?;
            let (sandbox, transformer) = compile(Compiler::Optimizing)?;
            (sandbox, transformer.map_err(anyhow::Error::from))
        }
        (sandbox, transformer) => (sandbox, transformer.map_err(anyhow::Error::from)),
    })
}

/// What a component file outside a project is: a renderer when it exports the renderer
/// interface, else a transformer.
pub fn kind_of(bytes: &[u8]) -> Kind {
    if opm_core::bundle::component::check_renderer(bytes).is_ok() {
        Kind::Renderer
    } else {
        Kind::Transformer
    }
}

/// The limits a transformer's cases run under: those of the provider it ships in (`manifest`,
/// with where it was read from), as a render applies them; else the host's, within `caps`.
pub fn transformer_limits(
    manifest: Option<&(String, ProviderManifest)>,
    caps: &Caps,
) -> anyhow::Result<Limits> {
    match manifest {
        Some((origin, manifest)) => manifest
            .limits
            .limits(caps)
            .map_err(|e| anyhow::anyhow!("{origin}: {e}")),
        None => LimitsSpec::default()
            .limits(caps)
            .map_err(anyhow::Error::msg),
    }
}

/// The kinds whose checksums are stretched in a transformer's cases: those of the renderer of
/// its provider (`manifest`), else the default provider's.
pub fn secret_kinds(manifest: Option<&ProviderManifest>) -> anyhow::Result<Vec<String>> {
    Ok(match manifest.and_then(|m| m.renderer.as_ref()) {
        Some(renderer) => renderer.secret_kinds.clone(),
        None => crate::embedded::load()?
            .manifest
            .renderer
            .map(|renderer| renderer.secret_kinds)
            .unwrap_or_default(),
    })
}

/// The renderer whose component is `bytes` (named `name` in messages), as the provider of
/// `manifest` ships it: its name, version and limits; without one, provider `example`.
pub fn renderer_under_test(
    name: &str,
    bytes: &[u8],
    manifest: Option<&ProviderManifest>,
) -> Renderer {
    let spec = manifest.and_then(|m| m.renderer.as_ref());
    Renderer {
        name: spec.map_or_else(
            || name.to_owned(),
            |spec| format!("{} {}", spec.name, spec.version),
        ),
        provider: manifest.map_or_else(|| "example".into(), |m| m.metadata.name.clone()),
        provider_version: manifest
            .map(|m| m.metadata.version.clone())
            .unwrap_or_default(),
        component: opm_core::bundle::Blob::from(bytes.to_vec()),
        limits: spec.map(|spec| spec.limits.clone()).unwrap_or_default(),
    }
}

/// A case folder, of a transformer or a renderer, as the report names and blesses it.
#[derive(Debug)]
pub struct Folder<'a> {
    /// Its name.
    pub name: &'a str,
    /// Where it is.
    pub dir: &'a Path,
    /// What it expects, if it says.
    pub expected: Option<&'a Value>,
}

/// One case as it ran: its verdict, its figures and, when it failed, the guest's log.
#[derive(Debug)]
pub struct CaseReport<'a> {
    /// Its folder's name.
    pub name: &'a str,
    /// Passed, blessed, or failed and why.
    pub verdict: Verdict,
    /// Fuel the call used.
    pub fuel: u64,
    /// Its wall-clock time.
    pub elapsed: Duration,
    /// What it logged, one line each.
    pub logs: Vec<String>,
}

/// How many cases passed, failed and were blessed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Passed.
    pub passed: usize,
    /// Failed.
    pub failed: usize,
    /// Recorded by `--bless`.
    pub blessed: usize,
}

/// Runs each of `folders` (`run` runs the one at an index) and judges it against what it
/// expects (or records it, with `bless`); a call whose output a render would refuse fails
/// with those reasons under `refused_header`. Each case is given to `report` as it finishes.
pub fn run_cases(
    folders: &[Folder<'_>],
    run: impl Fn(usize) -> Ran,
    refused_header: &str,
    bless: bool,
    report: &mut dyn FnMut(&CaseReport<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<Tally> {
    let mut tally = Tally::default();
    for (index, folder) in folders.iter().enumerate() {
        let ran = run(index);
        let verdict = judge(folder.dir, folder.expected, &ran, refused_header, bless)?;
        match verdict {
            Verdict::Pass => tally.passed += 1,
            Verdict::Blessed => tally.blessed += 1,
            Verdict::Fail(_) => tally.failed += 1,
        }
        report(&CaseReport {
            name: folder.name,
            verdict,
            fuel: ran.fuel,
            elapsed: ran.elapsed,
            logs: ran.logs,
        })?;
    }
    Ok(tally)
}

/// The verdict on the call `ran` of the case folder `dir` against what it expects (or its
/// record, with `bless`: [`cases::verdict`]); a call whose output a render would refuse fails
/// with those reasons, one `- ` line each under `refused_header`, and is never recorded.
pub fn judge(
    dir: &Path,
    expected: Option<&Value>,
    ran: &Ran,
    refused_header: &str,
    bless: bool,
) -> anyhow::Result<Verdict> {
    if ran.refused.is_empty() {
        return cases::verdict(dir, expected, &ran.outcome, bless);
    }
    Ok(Verdict::Fail(format!(
        "{refused_header}\n{}",
        ran.refused
            .iter()
            .map(|why| format!("- {why}"))
            .collect::<Vec<_>>()
            .join("\n")
    )))
}

/// What `--with` asks: a render of `module` with the providers `with` and the project's own
/// (its source directory `provider_dir`), compiled by `compiler` within `caps`, compared with
/// the golden beside the module.
#[derive(Debug)]
pub struct WithRender<'a> {
    /// The other providers (`--with`).
    pub with: &'a [String],
    /// The project's provider's source directory.
    pub provider_dir: Option<PathBuf>,
    /// The module to render.
    pub module: Option<PathBuf>,
    /// What is under test.
    pub kind: Kind,
    /// The compiler the render compiles with.
    pub compiler: Compiler,
    /// The host's caps on every limit.
    pub caps: Caps,
    /// The compile cache.
    pub cache: Option<opm_sandbox::CompileCache>,
    /// Whether to record the render as the golden.
    pub bless: bool,
}

/// How a `--with` render came out.
#[derive(Debug)]
pub enum WithOutcome {
    /// The render failed (the report said why).
    Failed {
        /// `module with providers`, as the report names it.
        what: String,
    },
    /// It rendered, and was compared with its golden.
    Compared {
        /// `render of MODULE with PROVIDERS: N resources`.
        summary: String,
        /// The golden's path.
        golden: PathBuf,
        /// How it compared.
        compared: Compared,
    },
}

impl WithOutcome {
    /// Whether it passed: rendered, and the same as its golden or blessed.
    pub fn passed(&self) -> bool {
        matches!(
            self,
            Self::Compared {
                compared: Compared::Same | Compared::Blessed,
                ..
            }
        )
    }
}

/// Renders as `opm mod build` does what `asked` says, the report of the render (its errors
/// and warnings) written to `stderr`, and compares the output with `rendered.yaml` beside the
/// module — for a renderer, every file it writes into `--out-dir` with `rendered/` — or writes
/// it, with `bless`. Without other providers (`--module` alone) the module is rendered with the
/// project's own provider, its transformers and its renderer, and every file it writes into
/// `--out-dir` is compared with `rendered/`. A `--with` naming the project's own provider is
/// left out, with a note: it is in the render anyway.
pub fn render_with(
    asked: WithRender<'_>,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    stderr: &mut dyn std::io::Write,
) -> anyhow::Result<WithOutcome> {
    let flag = if asked.with.is_empty() {
        "--module"
    } else {
        "--with"
    };
    let dir = asked.provider_dir.with_context(|| {
        format!(
            "{flag} renders with the {}'s own provider: name its source directory in \
             transformer.yaml (`provider: DIR`) or with --provider DIR",
            asked.kind.noun()
        )
    })?;
    let module = asked.module.context(
        "--with renders a module: name it in transformer.yaml (`module: PATH`) or with --module \
         PATH",
    )?;
    let module = module.as_path();
    let mut providers = Vec::new();
    for other in asked.with {
        if same_dir(Path::new(other), &dir) {
            writeln!(
                stderr,
                "note: --with {other} is the {}'s own provider ({}), which the render has \
                 anyway",
                asked.kind.noun(),
                dir.display()
            )?;
        } else {
            providers.push(other.clone());
        }
    }
    // The golden test of the whole provider: its own transformers and renderer, nothing beside.
    let whole = providers.is_empty();
    providers.push(dir.display().to_string());
    let names = providers.join(" + ");
    // A renderer under test is the one that writes the files: named, as a render beside other
    // providers must name a provider that ships only a renderer.
    let renderer = match asked.kind {
        Kind::Renderer => Some(opm_core::provider::read_manifest(&dir)?.1.metadata.name),
        _ => None,
    };
    let directory = whole || asked.kind == Kind::Renderer;
    let request = crate::render::Request {
        providers,
        renderer,
        compiler: asked.compiler,
        caps: asked.caps,
        cache: asked.cache,
        output: OutputOptions {
            directory,
            ..OutputOptions::default()
        },
        ..crate::render::Request::new(module)
    };
    if !whole {
        explain_a_clash(&request, &dir, env)?;
    }
    let built = crate::render::build(&request, env);
    let mut rendered = None;
    let status = crate::report::render(built, None, stderr, &mut |done, _| {
        rendered = Some((done.rendered.files.clone(), done.rendered.resources.len()));
        Ok(std::process::ExitCode::SUCCESS)
    })?;
    let Some((files, count)) = rendered.filter(|_| status == std::process::ExitCode::SUCCESS)
    else {
        return Ok(WithOutcome::Failed {
            what: format!("{} with {names}", module.display()),
        });
    };
    let golden = if whole {
        project::rendered_path(module, Kind::Renderer)
    } else {
        project::rendered_path(module, asked.kind)
    };
    let compared = if directory {
        goldens::compare_files(&files, &golden, asked.bless)?
    } else {
        goldens::compare_stream(&files, &golden, asked.bless)?
    };
    Ok(WithOutcome::Compared {
        summary: format!(
            "render of {} with {names}: {count} resource{}",
            module.display(),
            if count == 1 { "" } else { "s" }
        ),
        golden,
        compared,
    })
}

/// Refuses, saying what to do, the providers of `request` when the project's provider (`dir`)
/// cannot be used beside the others because each ships a renderer, or they target different
/// platforms: an author who writes `--with kubernetes` for a provider of another platform
/// means the golden test of their own provider, which `--module` alone runs. Any other
/// problem is left to the render to report.
fn explain_a_clash(
    request: &crate::render::Request,
    dir: &Path,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> anyhow::Result<()> {
    use opm_core::provider::SetError;
    use opm_core::provider::installed::InstallError;
    match crate::render::load_providers(request, env) {
        Err(InstallError::Set(
            error @ (SetError::Platform { .. } | SetError::Renderers { .. }),
        )) => anyhow::bail!(
            "{error}. The project's provider ({}) ships its own renderer: to render with it \
             alone, its transformers and its renderer, and compare every file with rendered/ \
             beside the module, give --module without --with; --with is for rendering beside \
             providers whose objects the same renderer writes",
            dir.display()
        ),
        _ => Ok(()),
    }
}

/// Whether `a` and `b` are one directory.
fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a.is_dir() && a == b,
        _ => false,
    }
}
