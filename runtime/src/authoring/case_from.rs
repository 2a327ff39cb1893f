//! A test case from a real module (`opm transformer case NEW --from MODULE --component NAME`):
//! the module is planned as `opm mod build` plans it, with the project's provider, and the call
//! of one of the project's transformers on the component is written as a case folder — its
//! `component.json` and `context.json` exactly what the render passes that call (the plan's
//! `Call::input`, the render context's `for_call`), not a re-derivation of them.
//!
//! [`find`] plans and picks the call; [`write_inputs`] writes the folder, which the command
//! completes with the `expected.json` of what the project's component returns
//! (`authoring::cases::verdict`, as `--bless` records it).

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use super::cases;
use super::project::{Kind, Loaded};
use crate::render::{self, Request};
use opm_core::matching::Call;
use opm_core::provider::ProviderManifest;

/// The call a case is made of, and where it came from.
#[derive(Debug)]
pub struct Found {
    /// The call: its component, transformer, provider and the JSON it receives.
    pub call: Call,
    /// The context it receives.
    pub context: opm_sandbox::Context,
    /// Whether what it receives holds a sensitive value of the module (a Secret's, an
    /// `${env:…}`'s): the case would hold it too.
    pub sensitive: bool,
    /// The manifest of the project's provider (where it was read from, and it): the limits the
    /// case runs under.
    pub manifest: (String, ProviderManifest),
}

/// Plans `request` with the project's provider added (unless `request.providers` names it
/// already) and finds the call of one of the project's transformers — those of its provider
/// whose `component` is the project's — on `component`: the one `transformer` names, or the
/// only one.
pub fn find(
    loaded: &Loaded,
    mut request: Request,
    component: &str,
    transformer: Option<&str>,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> anyhow::Result<Found> {
    if loaded.project.kind == Kind::Renderer {
        bail!(
            "{} is a renderer: a case made from a module is a transformer's (a renderer's case \
             holds resources: see `opm transformer test --help`)",
            loaded.project.name
        );
    }
    let provider_dir = loaded.provider_dir().with_context(|| {
        format!(
            "a case from a module is planned with the provider the transformer ships in: name \
             its source directory in {} (`provider: DIR`)",
            loaded.dir.join(super::project::MANIFEST).display()
        )
    })?;
    let manifest = opm_core::provider::read_manifest(&provider_dir)?;
    let ours = project_transformers(loaded, &provider_dir, &manifest.1);
    if ours.is_empty() {
        bail!(
            "{} names no transformer whose component is {} (the project's component)",
            manifest.0,
            loaded.project.component.display()
        );
    }
    if !request
        .providers
        .iter()
        .any(|p| same_dir(Path::new(p), &provider_dir))
    {
        request.providers.push(provider_dir.display().to_string());
    }
    let module = request.module.display().to_string();
    let planned = render::plan(&request, env);
    let planning = planned
        .planning
        .with_context(|| format!("cannot plan {module}"))?;
    let plan = &planning.plan;
    if !plan.components().iter().any(|c| c.name == component) {
        let names: Vec<&str> = plan.components().iter().map(|c| c.name.as_str()).collect();
        bail!(
            "{module} has no component {component:?} (it has: {})",
            names.join(", ")
        );
    }
    let calls: Vec<&Call> = plan.calls().filter(|c| c.component == component).collect();
    if calls.is_empty() {
        let problems: Vec<String> = plan
            .errors()
            .iter()
            .filter(|p| p.component() == Some(component))
            .map(|p| p.to_string())
            .collect();
        bail!(
            "component {component:?} of {module} gets no call: {}",
            if problems.is_empty() {
                "it matches no transformer".to_owned()
            } else {
                problems.join("; ")
            }
        );
    }
    let candidates: Vec<&&Call> = calls
        .iter()
        .filter(|c| ours.contains(&c.transformer))
        .filter(|c| transformer.is_none_or(|t| c.transformer == t))
        .collect();
    let call = match candidates.as_slice() {
        [one] => (**one).clone(),
        [] => {
            let called: Vec<&str> = calls.iter().map(|c| c.transformer.as_str()).collect();
            bail!(
                "component {component:?} of {module} is called by {}, {}",
                called.join(", "),
                match transformer {
                    Some(t) => format!("not by {t} of this project ({})", ours.join(", ")),
                    None => format!("none of them this project's ({})", ours.join(", ")),
                }
            );
        }
        several => {
            let names: Vec<&str> = several.iter().map(|c| c.transformer.as_str()).collect();
            bail!(
                "component {component:?} of {module} is called by several of this project's \
                 transformers ({}): name one with --transformer FQN",
                names.join(", ")
            );
        }
    };
    Ok(Found {
        context: planning.context.for_call(&call),
        sensitive: planned.redactor.holds_secret(&call.input),
        call,
        manifest,
    })
}

/// The FQNs of the transformers of `manifest` (read from `provider_dir`) whose component is the
/// project's, in name order.
fn project_transformers(
    loaded: &Loaded,
    provider_dir: &Path,
    manifest: &ProviderManifest,
) -> Vec<String> {
    let ours =
        std::fs::canonicalize(loaded.component_path()).unwrap_or_else(|_| loaded.component_path());
    manifest
        .transformers
        .iter()
        .filter(|(_, spec)| {
            let theirs = provider_dir.join(&spec.component);
            std::fs::canonicalize(&theirs).unwrap_or(theirs) == ours
        })
        .map(|(fqn, _)| fqn.clone())
        .collect()
}

/// Whether `a` and `b` are one directory.
fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Where a new case called `name` goes in `cases_dir`: a new folder, named as a folder of one
/// path component that is not hidden.
pub fn new_case_dir(cases_dir: &Path, name: &str) -> anyhow::Result<PathBuf> {
    if name.is_empty() || name.starts_with('.') || name.contains(['/', '\\']) {
        bail!("{name:?} is not a case name: a folder name of cases/, not hidden, without `/`");
    }
    let dir = cases_dir.join(name);
    if dir.exists() {
        bail!(
            "{} exists already: choose another name, or remove it first",
            dir.display()
        );
    }
    Ok(dir)
}

/// Writes `found`'s inputs into the new case folder `dir`: `component.json` and
/// `context.json`, pretty-printed with their keys in the order the call receives them.
pub fn write_inputs(dir: &Path, found: &Found) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (file, value) in [
        ("component.json", found.call.input_value()),
        ("context.json", cases::context_json(&found.context)),
    ] {
        let path = dir.join(file);
        opm_core::files::write_atomically(&path, cases::pretty(&value).as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}
