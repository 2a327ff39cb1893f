//! `opm provider check`'s conformance run: does a provider render every example module, does
//! it follow this opm's catalog of definitions, and which catalog fields does each of its
//! transformers read.
//!
//! [`check`] loads the provider as a render does (a source directory, a bundle, an installed or
//! a built-in name), then, for every example module — the ones built into opm
//! ([`examples::EXAMPLES`]), or every folder of `--examples DIR` with a `module.yaml` — plans
//! and renders it with that provider alone, exactly as `opm mod build -p PROVIDER` would, and
//! writes nothing: a plan error (a workload no transformer matches, a value its validations
//! refuse), a failed call, a renderer's refusal fails the example, named with its component and
//! transformer. Every call that succeeded is then run again field by field ([`coverage`]) for
//! the table of what each transformer reads. Beside it, the provider's definitions are compared
//! with the catalog built into opm ([`crate::catalog`]) and its `catalog.version` with the
//! catalog's.
//!
//! One sandbox serves every example: each transformer is compiled once (or loaded from the
//! binary or the compile cache), and calls run on the render threads.

pub mod coverage;
pub mod examples;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use serde::Serialize;

use crate::catalog::{self, Comparison};
use crate::render::{self, Request, Runner, Transformers};
use coverage::{Coverage, Probe};
use opm_core::calls::CallOutcome;
use opm_core::matching::Call;
use opm_core::provider::{self, ProviderSet};
use opm_core::redact::Redactor;
use opm_sandbox::{CompileCache, Sandbox};

/// What to check, and with what.
#[derive(Debug, Clone)]
pub struct Options {
    /// The provider: a source directory, a bundle file, or a name (`kubernetes`,
    /// `docker-compose`, a provider the project installed).
    pub provider: String,
    /// A folder of example modules (each subfolder with a `module.yaml`, or a `module.yaml` of
    /// its own); none: the examples built into opm.
    pub examples: Option<PathBuf>,
    /// Render threads (default: every core).
    pub jobs: Option<usize>,
    /// The compiled-component cache.
    pub cache: Option<CompileCache>,
}

/// Everything the run found.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The provider checked.
    pub provider: Checked,
    /// Its definitions beside this opm's catalog.
    pub catalog: CatalogReport,
    /// Where the examples came from: `built into opm VERSION`, or the folder.
    pub examples_from: String,
    /// Each example's render, by name.
    pub examples: Vec<Example>,
    /// What each transformer reads.
    pub coverage: Coverage,
}

impl Report {
    /// Whether every example rendered.
    pub fn passed(&self) -> bool {
        self.examples
            .iter()
            .all(|example| example.problems.is_empty())
    }
}

/// The provider a run checked.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Where it was loaded from.
    pub origin: String,
}

/// A provider's definitions beside this opm's catalog.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogReport {
    /// The version of the catalog built into this opm.
    pub version: String,
    /// Its digest.
    pub digest: String,
    /// The `catalog.version` the provider follows, if it states one.
    pub follows: Option<String>,
    /// What that means, for its author; none when it follows this catalog.
    pub advice: Option<String>,
    /// Which of the catalog's definitions it holds as they are, changed, or not at all.
    pub definitions: Comparison,
}

/// One example's render with the provider.
#[derive(Debug, Clone, Serialize)]
pub struct Example {
    /// Its folder's name.
    pub name: String,
    /// Its components.
    pub components: usize,
    /// The calls its plan made.
    pub calls: usize,
    /// The plan's warnings: what the provider leaves unhandled, and why.
    pub warnings: Vec<String>,
    /// Why it did not render, each naming its component and transformer; empty when it did.
    pub problems: Vec<String>,
}

/// Runs the check `options` describes; `env` is where the modules' `${env:…}` are read.
pub fn check(
    options: &Options,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> anyhow::Result<Report> {
    let loaded = provider::load_in(
        &options.provider,
        &std::env::current_dir()?,
        env,
        &crate::embedded::PROVIDERS,
    )?;
    let checked = Checked {
        name: loaded.manifest.metadata.name.clone(),
        version: loaded.manifest.metadata.version.clone(),
        origin: loaded.origin.clone(),
    };
    let catalog = catalog_report(&loaded.manifest);
    let definitions = loaded.manifest.definitions.clone();
    let transformer_names: Vec<String> = loaded.manifest.transformers.keys().cloned().collect();
    let declared: BTreeMap<String, BTreeSet<String>> = loaded
        .manifest
        .transformers
        .iter()
        .map(|(fqn, spec)| {
            let needs = spec.requirements();
            let names = [
                needs.required_resources,
                needs.optional_resources,
                needs.required_traits,
                needs.optional_traits,
                needs.required_policies,
                needs.optional_policies,
            ];
            (fqn.clone(), names.into_iter().flatten().collect())
        })
        .collect();
    let providers = Arc::new(ProviderSet::with_renderer(vec![loaded], None)?);
    let pool = Arc::new(render::render_threads(options.jobs)?);

    let staged;
    let (folder, examples_from) = match &options.examples {
        Some(dir) => (dir.clone(), dir.display().to_string()),
        None => {
            staged = tempfile::tempdir().context("a folder for the built-in examples")?;
            let root = staged.path().join("examples");
            for (name, text) in examples::EXAMPLES {
                let dir = root.join(name);
                std::fs::create_dir_all(&dir)?;
                std::fs::write(dir.join("module.yaml"), text)?;
            }
            (root, format!("built into opm {}", provider::OPM_VERSION))
        }
    };
    let modules = modules_in(&folder)?;
    // Messages name a built-in example as `examples/NAME/module.yaml`, not the temporary
    // folder it was written to.
    let shown = |text: String| match &options.examples {
        None => text.replace(
            &format!("{}/", folder.parent().unwrap_or(&folder).display()),
            "",
        ),
        Some(_) => text,
    };

    let mut sandbox: Option<(Sandbox, Transformers)> = None;
    let mut probes = Vec::new();
    let mut reports = Vec::new();
    for (name, module) in modules {
        let request = Request {
            providers: vec![options.provider.clone()],
            jobs: options.jobs,
            cache: options.cache.clone(),
            progress: false,
            ..Request::new(&module)
        };
        let planned = render::plan_in(&request, env, pool.clone(), Some(providers.clone()));
        let mut example = Example {
            name: name.clone(),
            components: 0,
            calls: 0,
            warnings: Vec::new(),
            problems: Vec::new(),
        };
        let redactor = Arc::new(planned.redactor);
        let planning = match planned.planning {
            Ok(planning) => planning,
            Err(error) => {
                example
                    .problems
                    .push(shown(redactor.redact(&format!("{error:#}")).into_owned()));
                reports.push(example);
                continue;
            }
        };
        example.components = planning.plan.components().len();
        example.calls = planning.plan.calls().len();
        example.warnings = planning
            .plan
            .warnings()
            .iter()
            .map(|warning| shown(redactor.redact(&warning.to_string()).into_owned()))
            .collect();
        if !planning.plan.is_ok() {
            example.problems = planning
                .plan
                .errors()
                .iter()
                .map(|problem| shown(redactor.redact(&problem.to_string()).into_owned()))
                .collect();
            reports.push(example);
            continue;
        }
        if sandbox.is_none() {
            let made = Sandbox::new(&planning.ceiling()?)?
                .with_precompiled(&crate::embedded::CODE)
                .with_cache(options.cache.clone());
            let components: Vec<(&str, &[u8])> = transformer_names
                .iter()
                .filter_map(|fqn| Some((fqn.as_str(), &providers.component(fqn)?[..])))
                .collect();
            let compiled = pool.install(|| render::build::compile_all(&made, &components, true));
            sandbox = Some((made, compiled));
        }
        let (made, compiled) = sandbox.as_ref().expect("made above");
        let recording = Recording {
            sandbox: made,
            transformers: compiled,
            redactor: redactor.clone(),
            probes: Mutex::new(Vec::new()),
        };
        let render = planning.render(&request, &redactor, Some(&recording))?;
        let rendered = &render.rendered;
        for failure in &rendered.failures {
            example.problems.push(shown(
                redactor
                    .redact(&format!(
                        "component {:?}: transformer {}: {}",
                        failure.component, failure.transformer, failure.error
                    ))
                    .into_owned(),
            ));
        }
        example.problems.extend(
            rendered
                .patch_failures
                .iter()
                .map(|failure| shown(redactor.redact(&failure.to_string()).into_owned())),
        );
        example.problems.extend(
            rendered
                .renderer_failure
                .iter()
                .map(|failure| shown(redactor.redact(&failure.to_string()).into_owned())),
        );
        render.free();
        probes.extend(recording.probes.into_inner().expect("not poisoned"));
        reports.push(example);
    }

    // In one order whatever the threads did, so that of two calls with one input the same is
    // measured.
    probes.sort_by(|a, b| {
        (&a.transformer, &a.input, &a.context.name).cmp(&(
            &b.transformer,
            &b.input,
            &b.context.name,
        ))
    });
    let mut coverage = match &sandbox {
        Some((made, compiled)) => pool.install(|| {
            coverage::measure(made, compiled, &definitions, transformer_names, &probes)
        }),
        // No example rendered far enough to call anything.
        None => Coverage {
            transformers: transformer_names
                .into_iter()
                .map(|name| (name, Default::default()))
                .collect(),
        },
    };
    coverage.keep_declared(&declared);
    Ok(Report {
        provider: checked,
        catalog,
        examples_from,
        examples: reports,
        coverage,
    })
}

/// The example modules of `dir`, by name: `dir/module.yaml` itself, else each subfolder's.
fn modules_in(dir: &Path) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let own = dir.join("module.yaml");
    if own.is_file() {
        let name = dir
            .file_name()
            .map_or_else(|| ".".to_owned(), |n| n.to_string_lossy().into_owned());
        return Ok(vec![(name, own)]);
    }
    let mut modules = Vec::new();
    for entry in std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the examples folder {}", dir.display()))?
    {
        let path = entry?.path().join("module.yaml");
        if path.is_file() {
            let name = path
                .parent()
                .and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            modules.push((name, path));
        }
    }
    anyhow::ensure!(
        !modules.is_empty(),
        "{} holds no example module: neither a module.yaml nor a folder with one",
        dir.display()
    );
    modules.sort();
    Ok(modules)
}

/// The provider's definitions and `catalog.version` beside the catalog built into opm.
fn catalog_report(manifest: &provider::ProviderManifest) -> CatalogReport {
    let embedded = catalog::embedded();
    let definitions = embedded.compare(&manifest.definitions);
    let follows = manifest.catalog.as_ref().map(|c| c.version.clone());
    let export = "`opm provider export-catalog` writes this opm's";
    let advice = match follows.as_deref() {
        None => Some(format!(
            "the provider states no catalog version: take the catalog with `definitionsFrom:` \
             ({export}), or state `catalog: {{version: {}}}` in provider.yaml",
            embedded.version
        )),
        Some(version) if version == embedded.version => None,
        Some(version) => Some(match (semver_of(version), semver_of(&embedded.version)) {
            (Some(theirs), Some(ours)) if theirs > ours => format!(
                "the provider follows catalog {version}, newer than this opm's {}: check it \
                 with a newer opm",
                embedded.version
            ),
            (Some(theirs), Some(ours)) if theirs.0 < ours.0 => format!(
                "the provider follows catalog {version}, and this opm's is {}, a new major \
                 version: modules written for it may not vet with this provider; {export}",
                embedded.version
            ),
            _ => format!(
                "the provider follows catalog {version}, and this opm's is {}: its new \
                 definitions and fields are not the provider's yet; {export}",
                embedded.version
            ),
        }),
    };
    CatalogReport {
        version: embedded.version.clone(),
        digest: embedded.digest.clone(),
        follows,
        advice,
        definitions,
    }
}

/// `MAJOR.MINOR.PATCH` of a version, for ordering.
fn semver_of(version: &str) -> Option<(u64, u64, u64)> {
    let mut parts = version
        .split(['-', '+'])
        .next()?
        .split('.')
        .map(|part| part.parse::<u64>().ok());
    Some((parts.next()??, parts.next()??, parts.next()??))
}

/// The sandbox with the provider's transformers compiled, keeping every call it runs as a
/// [`Probe`].
struct Recording<'a> {
    sandbox: &'a Sandbox,
    transformers: &'a Transformers,
    redactor: Arc<Redactor>,
    probes: Mutex<Vec<Probe>>,
}

impl Runner for Recording<'_> {
    fn call(
        &self,
        call: &Call,
        context: opm_sandbox::Context,
        limits: &opm_sandbox::Limits,
    ) -> Result<CallOutcome, String> {
        let compiled = match self.transformers.get(&call.transformer) {
            Some(Ok(compiled)) => compiled,
            Some(Err(error)) => return Err(error.to_string()),
            None => return Err(format!("{} was not compiled", call.transformer)),
        };
        let outcome = self.sandbox.call_redacting(
            compiled,
            &call.input,
            context.clone(),
            limits,
            &self.redactor,
        );
        if outcome.result.is_ok() {
            self.probes.lock().expect("not poisoned").push(Probe {
                transformer: call.transformer.clone(),
                input: call.input.clone(),
                context,
                limits: *limits,
                redactor: self.redactor.clone(),
            });
        }
        Ok(outcome)
    }

    fn digest(&self, transformer: &str) -> String {
        match self.transformers.get(transformer) {
            Some(Ok(compiled)) => compiled.digest.to_string(),
            _ => String::new(),
        }
    }
}
