//! `opm platform build FILE --env ENV --out-dir DIR`: every release of a releases file
//! (`opm_core::platform`) in one environment, rendered in one process into `DIR/ENV/RELEASE/`,
//! each directory exactly what `opm mod build --out-dir` writes for the release.
//!
//! The run, in order:
//!
//! 1. **Keys.** Each release's input key ([`input_key`]): BLAKE3 of opm's version, the release's
//!    `mod build` command with the output flags, the module file's and each values file's bytes,
//!    the providers by name, version and bundle digest, and every environment variable a
//!    `${env:NAME}` of those files or the inline values names (with `SOURCE_DATE_EPOCH`). A
//!    release whose key is the one recorded for its directory (`DIR/ENV/.opm-platform.json`) is
//!    *unchanged* and not rendered (unless `--force`); one whose provider is a source
//!    directory has no key and is always rendered. The module's git commit is left out of the
//!    key on purpose — every commit would change every key — so an unchanged release keeps the
//!    provenance (`opm.render`) of the commit it was rendered at, whose inputs were the same.
//! 2. **Plans**, in parallel on the `-j` threads, each provider set loaded once for every
//!    release that names it.
//! 3. **Renders**, in parallel, in one sandbox ([`crate::render::Shared`]): each component is
//!    loaded once for all releases. Each release is staged beside its directory as it
//!    finishes.
//! 4. **Writes**: one sync of the file system for every staged release, then each swapped in
//!    ([`opm_core::render::write`]). A release that failed stages nothing: its directory keeps
//!    its last good render. The keys of what was written are recorded last, so a run killed
//!    before that renders those releases again, never skips a release it did not write.
//!    Directories of releases the file no longer has in the environment are removed (only
//!    while they hold nothing but what opm wrote).
//!
//! What each release's render reported is kept apart and handed back in release order
//! ([`ReleaseOutcome::report`]), for the command to print with the release's name on it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use rayon::prelude::*;
use serde_json::{Value, json};

use crate::render::remote::Fetched;
use crate::render::{self, Built, Planned, Request, Shared, deliver};
use crate::report::{self, Verbose};
use opm_core::platform::{Platform, Release};
use opm_core::provider::ProviderSet;
use opm_core::render::provenance::Source;
use opm_core::render::write;

/// The file in `DIR/ENV/` that records each release's input key.
pub const STATE_FILE: &str = ".opm-platform.json";

/// The most of a state file opm reads.
const MAX_STATE_BYTES: u64 = 16 << 20;

/// What `opm platform build` is asked.
#[derive(Debug)]
pub struct Build {
    /// The releases file.
    pub file: PathBuf,
    /// The environment rendered.
    pub environment: String,
    /// Only these releases (`--release`); none: every one.
    pub only: Vec<String>,
    /// The output root: each release goes to `out_dir/ENV/RELEASE`.
    pub out_dir: PathBuf,
    /// Render every release, unchanged or not.
    pub force: bool,
    /// What every release's render shares: threads, limits, cache, compiler, output options,
    /// `--flux`. Its module, values and release settings are each release's own.
    pub base: Request,
    /// How each release's render reports.
    pub verbose: Option<Verbose>,
    /// How registries are reached: modules fetched (`module: oci://…`).
    pub registry: opm_registry::Options,
}

/// What became of one release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Rendered and written: this many files (with `opm.render`).
    Rendered(usize),
    /// Its input key is the one its directory was rendered with: not rendered again.
    Unchanged,
    /// Its render failed (or could not be written): its directory is as it was.
    Failed,
}

/// One release's outcome.
#[derive(Debug)]
pub struct ReleaseOutcome {
    /// The release.
    pub release: Release,
    /// What became of it.
    pub status: Status,
    /// Its input key, when it has one.
    pub key: Option<String>,
    /// Its directory.
    pub dir: PathBuf,
    /// What its render reported (redacted), one line each: under `--verbose=json` each a JSON
    /// object.
    pub report: Vec<u8>,
}

/// What a platform build did.
#[derive(Debug)]
pub struct Outcome {
    /// The environment's directory.
    pub dir: PathBuf,
    /// Every release, in name order.
    pub releases: Vec<ReleaseOutcome>,
    /// Directories of releases no longer in the file, removed.
    pub removed: Vec<String>,
}

/// What a set of providers depends on: the references, the renderer, the module's project.
type ProvidersKey = (Vec<String>, Option<String>, Option<PathBuf>);

/// Renders every release of `build` (see the module's documentation). `env` is where
/// `${env:NAME}` and `SOURCE_DATE_EPOCH` are read. An error is one that stops the whole run (an
/// unreadable releases file, an unknown environment); a release's own failure is its
/// [`Status::Failed`].
pub fn build(
    build: &Build,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> anyhow::Result<Outcome> {
    let platform = Platform::load(&build.file)?;
    let mut releases = platform.releases(&build.environment)?;
    for name in &build.only {
        platform.check_release(name)?;
    }
    if !build.only.is_empty() {
        releases.retain(|release| build.only.contains(&release.name));
        if let Some(missing) = build
            .only
            .iter()
            .find(|name| !releases.iter().any(|release| release.name == **name))
        {
            anyhow::bail!(
                "{}: release {missing:?} is not rendered in {} (its `only` leaves it out)",
                build.file.display(),
                build.environment
            );
        }
    }
    let root = build.out_dir.join(&build.environment);
    // One build of an environment's directory at a time: the keys recorded must be those of
    // what its directories hold.
    let _lock = lock(&root)?;
    let state = State::read(&root);
    let pool = Arc::new(render::render_threads(build.base.jobs)?);
    // Modules in registries fetched first, each once: their files are the key's inputs.
    let fetched = Fetched::new(build.registry.clone());
    let (requests, fetching): (Vec<Request>, Vec<Result<(), String>>) = releases
        .iter()
        .map(|release| fetched.request_of(release, &build.base))
        .unzip();
    let providers = ProviderSets::default();
    let loaded: Vec<Result<Arc<ProviderSet>, String>> = requests
        .iter()
        .zip(fetching)
        .map(|(request, fetching)| fetching.and_then(|()| providers.load(request, env)))
        .collect();
    let keys: Vec<Option<String>> = pool.install(|| {
        releases
            .par_iter()
            .zip(&requests)
            .zip(&loaded)
            .map(|((release, request), providers)| {
                input_key(release, request, providers.as_ref().ok()?, env)
            })
            .collect()
    });
    let dirs: Vec<PathBuf> = releases.iter().map(|r| root.join(&r.name)).collect();
    let unchanged: Vec<bool> = releases
        .iter()
        .zip(&keys)
        .zip(&dirs)
        .map(|((release, key), dir)| {
            !build.force
                && key.is_some()
                && state.releases.get(&release.name) == key.as_ref()
                && dir.join(write::MANIFEST).is_file()
        })
        .collect();
    let total = releases
        .iter()
        .zip(&unchanged)
        .filter(|(_, u)| !**u)
        .count();
    let done = Arc::new(AtomicUsize::new(0));
    let progress = (total > 0 && build.base.progress)
        .then(|| {
            let done = Arc::clone(&done);
            let environment = build.environment.clone();
            opm_core::progress::Progress::start_with(move || {
                format!(
                    "rendering {environment}: {} of {total} releases",
                    done.load(Ordering::Relaxed)
                )
            })
        })
        .flatten();
    let sources = GitSources::default();
    let jobs: Vec<(usize, Job)> = requests
        .into_iter()
        .zip(loaded)
        .enumerate()
        .filter(|(index, _)| !unchanged[*index])
        .map(|(index, (request, providers))| {
            let source = sources.of(&request.module);
            (
                index,
                Job {
                    request,
                    providers,
                    source,
                },
            )
        })
        .collect();
    let swept = std::sync::Once::new();
    let rendered = render_all(
        jobs,
        &build.base,
        env,
        &pool,
        build.verbose,
        &done,
        &|index, job, render, redactor| {
            let provenance =
                deliver::provenance(&job.request, render, redactor, env, job.source.clone())?;
            let files = deliver::files(render, &provenance);
            swept.call_once(|| write::sweep_stale_staging(&root));
            Ok((write::stage(&dirs[index], &files, false)?, files.len()))
        },
    )?;
    drop(progress);
    // Written: one sync for them all, then each swapped in, in release order.
    let mut reports: HashMap<usize, (Vec<u8>, Status)> = HashMap::new();
    let mut staged_all = Vec::new();
    for (index, report, staged) in rendered {
        match staged {
            Some((staged, files)) => {
                staged_all.push((index, staged, files));
                reports.insert(index, (report, Status::Rendered(0)));
            }
            None => {
                reports.insert(index, (report, Status::Failed));
            }
        }
    }
    staged_all.sort_by_key(|(index, ..)| *index);
    let synced = write::sync_all(staged_all.iter().map(|(_, staged, _)| staged));
    let mut new_state = state.clone();
    for (index, staged, files) in staged_all {
        let entry = reports.get_mut(&index).expect("a report for every render");
        let committed = match &synced {
            Ok(()) => staged.commit(),
            Err(error) => Err(anyhow::anyhow!("{error:#}")),
        };
        match committed {
            Ok(()) => {
                entry.1 = Status::Rendered(files);
                match &keys[index] {
                    Some(key) => new_state
                        .releases
                        .insert(releases[index].name.clone(), key.clone()),
                    None => new_state.releases.remove(&releases[index].name),
                };
            }
            Err(error) => {
                entry.1 = Status::Failed;
                writeln_error(&mut entry.0, build.verbose, &format!("{error:#}"));
            }
        }
    }
    // Releases the file no longer renders in this environment.
    let mut removed = Vec::new();
    if build.only.is_empty() {
        let current: std::collections::BTreeSet<&str> =
            releases.iter().map(|r| r.name.as_str()).collect();
        let gone: Vec<String> = new_state
            .releases
            .keys()
            .filter(|name| !current.contains(name.as_str()))
            .cloned()
            .collect();
        for name in gone {
            let dir = root.join(&name);
            if write::remove_dir(&dir).is_ok() {
                new_state.releases.remove(&name);
                removed.push(name);
            }
        }
    }
    if new_state != state || !root.join(STATE_FILE).exists() && !new_state.releases.is_empty() {
        new_state.write(&root)?;
    }
    let releases = releases
        .into_iter()
        .enumerate()
        .map(|(index, release)| {
            let (report, status) = reports
                .remove(&index)
                .unwrap_or((Vec::new(), Status::Unchanged));
            ReleaseOutcome {
                release,
                status,
                key: keys[index].clone(),
                dir: dirs[index].clone(),
                report,
            }
        })
        .collect();
    Ok(Outcome {
        dir: root,
        releases,
        removed,
    })
}

/// Checks every release of `environments` (every environment of the file when empty) as `opm
/// platform build` would render it — the module and values loaded and validated, the plan
/// made, every call run and the renderer's output checked — and writes nothing: `opm mod vet`
/// for a whole platform. Each environment's releases in name order, each [`Status::Rendered`]
/// with its count of files, or [`Status::Failed`] with what its render reported.
pub fn vet(
    file: &Path,
    environments: &[String],
    base: &Request,
    registry: &opm_registry::Options,
    verbose: Option<Verbose>,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> anyhow::Result<Vec<(String, Vec<ReleaseOutcome>)>> {
    let platform = Platform::load(file)?;
    let environments = if environments.is_empty() {
        platform.environments.clone()
    } else {
        environments.to_vec()
    };
    let mut releases = Vec::new();
    for environment in &environments {
        releases.extend(platform.releases(environment)?);
    }
    let pool = Arc::new(render::render_threads(base.jobs)?);
    let fetched = Fetched::new(registry.clone());
    let jobs = jobs_of(releases.iter(), base, &fetched, env);
    let done = AtomicUsize::new(0);
    let mut checked = render_all(
        jobs,
        base,
        env,
        &pool,
        verbose,
        &done,
        &|_, _, render, _| Ok(render.rendered.files.len()),
    )?;
    checked.sort_by_key(|(index, ..)| *index);
    let mut outcomes: Vec<(String, Vec<ReleaseOutcome>)> = environments
        .iter()
        .map(|environment| (environment.clone(), Vec::new()))
        .collect();
    for ((_, report, files), release) in checked.into_iter().zip(releases) {
        let at = outcomes
            .iter()
            .position(|(environment, _)| *environment == release.environment)
            .expect("an environment of the list");
        outcomes[at].1.push(ReleaseOutcome {
            status: files.map_or(Status::Failed, Status::Rendered),
            key: None,
            dir: PathBuf::new(),
            report,
            release,
        });
    }
    Ok(outcomes)
}

/// A render to make: its request, its providers as loaded, and where its module comes from.
pub(crate) struct Job {
    pub(crate) request: Request,
    pub(crate) providers: Result<Arc<ProviderSet>, String>,
    pub(crate) source: Option<Source>,
}

/// A job for each of `releases`, numbered in order, rendered as `base` says, each set of
/// providers loaded once; no source (what does not write has no provenance).
pub(crate) fn jobs_of<'a>(
    releases: impl Iterator<Item = &'a Release>,
    base: &Request,
    fetched: &Fetched,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Vec<(usize, Job)> {
    let providers = ProviderSets::default();
    releases
        .enumerate()
        .map(|(index, release)| {
            let (request, fetching) = fetched.request_of(release, base);
            let providers = fetching.and_then(|()| providers.load(&request, env));
            let job = Job {
                request,
                providers,
                source: None,
            };
            (index, job)
        })
        .collect()
}

/// What [`render_all`] made of one job: its index, what its render reported, and what
/// `finish` made of it when it succeeded.
pub(crate) type Done<T> = (usize, Vec<u8>, Option<T>);

/// Plans every job in parallel on `pool`, then renders them in parallel in one sandbox
/// ([`Shared`]: each component loaded once for all), each reported by [`report::render`] into
/// its own buffer, with `finish` run on each that succeeded (an error of `finish` is that
/// job's failure). `done` counts the jobs finished, for a progress line.
pub(crate) fn render_all<T: Send>(
    jobs: Vec<(usize, Job)>,
    base: &Request,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    pool: &Arc<rayon::ThreadPool>,
    verbose: Option<Verbose>,
    done: &AtomicUsize,
    finish: &(
         dyn Fn(usize, &Job, &render::Render, &opm_core::redact::Redactor) -> anyhow::Result<T>
             + Sync
     ),
) -> anyhow::Result<Vec<Done<T>>> {
    let mut pending: Vec<(usize, Job, Planned)> = pool.install(|| {
        jobs.into_par_iter()
            .map(|(index, mut job)| {
                let providers = std::mem::replace(&mut job.providers, Err(String::new()));
                let planned = match providers {
                    Ok(providers) => {
                        render::plan_in(&job.request, env, Arc::clone(pool), Some(providers))
                    }
                    Err(error) => Planned {
                        redactor: opm_core::redact::Redactor::default(),
                        planning: Err(anyhow::anyhow!(error)),
                    },
                };
                (index, job, planned)
            })
            .collect()
    });
    pending.sort_by_key(|(index, ..)| *index);
    // One sandbox that allows what the most demanding render asks.
    let ceiling = pending
        .iter()
        .filter_map(|(_, _, planned)| planned.planning.as_ref().ok())
        .map(render::Planning::ceiling)
        .collect::<anyhow::Result<Vec<_>>>()?
        .into_iter()
        .reduce(|mut a, b| {
            a.memory = a.memory.max(b.memory);
            a
        });
    let shared = match ceiling {
        Some(ceiling) => Some(Shared::new(Arc::clone(pool), &ceiling, base)?),
        None => None,
    };
    Ok(pool.install(|| {
        pending
            .into_par_iter()
            .map(|(index, job, Planned { redactor, planning })| {
                let render = match (&shared, planning) {
                    (Some(shared), Ok(planning)) => {
                        planning.render_shared(&job.request, &redactor, shared)
                    }
                    (_, Err(error)) => Err(error),
                    (None, Ok(_)) => unreachable!("a planning makes the shared sandbox"),
                };
                let mut report = Vec::new();
                let mut made = None;
                let _ = report::render(
                    Built { redactor, render },
                    verbose,
                    &mut report,
                    &mut |render, redactor| {
                        made = Some(finish(index, &job, render, redactor)?);
                        Ok(ExitCode::SUCCESS)
                    },
                );
                done.fetch_add(1, Ordering::Relaxed);
                (index, report, made)
            })
            .collect()
    }))
}

/// The lock of the environment's directory `root` (`.opm-platform.lock` in it), held until
/// dropped; another build into it waits for it.
fn lock(root: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    let path = root.join(".opm-platform.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    file.lock()
        .with_context(|| format!("locking {}", path.display()))?;
    Ok(file)
}

/// Adds an error line to a release's `report`, in its form.
fn writeln_error(report: &mut Vec<u8>, verbose: Option<Verbose>, message: &str) {
    use std::io::Write as _;
    let _ = if verbose == Some(Verbose::Json) {
        writeln!(report, "{}", json!({"event": "error", "message": message}))
    } else {
        writeln!(report, "error: {message}")
    };
}

/// The render of `release` as `opm mod build` makes it with `base`'s flags.
pub fn request_of(release: &Release, base: &Request) -> Request {
    Request {
        module: release.module.clone(),
        values: release.values.clone(),
        set: release.set.clone(),
        strict: release.strict,
        instance: Some(release.instance.clone()),
        providers: release.providers.clone(),
        renderer: release.renderer.clone(),
        allow_env: release.allow_env.clone(),
        namespace: release.namespace.clone(),
        progress: false,
        ..base.clone()
    }
}

impl Fetched {
    /// The request of `release` ([`request_of`]) with its module fetched when it is in a
    /// registry; why it could not be, if so (the request then names the reference).
    pub(crate) fn request_of(
        &self,
        release: &Release,
        base: &Request,
    ) -> (Request, Result<(), String>) {
        let request = request_of(release, base);
        if !render::remote::is_remote(&request.module) {
            return (request, Ok(()));
        }
        match self.resolve(request.clone()) {
            Ok(resolved) => (resolved, Ok(())),
            Err(error) => (request, Err(format!("{error:#}"))),
        }
    }
}

/// The `opm mod build` command of `release` with `base`'s output flags.
pub fn command_of(release: &Release, base: &Request) -> Vec<String> {
    let mut command = release.command();
    if base.output.format != "yaml" {
        command.extend(["-o".to_owned(), base.output.format.clone()]);
    }
    if base.output.split {
        command.push("--split".to_owned());
    }
    if base.flux {
        command.push("--flux".to_owned());
    }
    command
}

/// The input key of `release` (see the module's documentation): `blake3:HEX`, or `None` when
/// an input cannot be read (the render will say why) or a provider has no digest.
pub fn input_key(
    release: &Release,
    request: &Request,
    providers: &ProviderSet,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Option<String> {
    let mut names = std::collections::BTreeSet::new();
    let mut digest_of = |path: &Path| -> Option<String> {
        let bytes = std::fs::read(path).ok()?;
        env_names(&String::from_utf8_lossy(&bytes), &mut names);
        Some(blake3::hash(&bytes).to_hex().to_string())
    };
    let module = digest_of(&opm_core::module::module_file(&request.module))?;
    let values = release
        .values
        .iter()
        .map(|path| digest_of(path))
        .collect::<Option<Vec<_>>>()?;
    for set in &release.set {
        env_names(set, &mut names);
    }
    names.insert("SOURCE_DATE_EPOCH".to_owned());
    let providers = providers
        .providers()
        .iter()
        .map(|p| {
            Some(json!({
                "name": p.manifest.metadata.name,
                "version": p.manifest.metadata.version,
                "digest": p.digest.clone()?,
            }))
        })
        .collect::<Option<Vec<_>>>()?;
    let variables: serde_json::Map<String, Value> = names
        .into_iter()
        .map(|name| {
            let value = env(&name).map_or(Value::Null, Value::from);
            (name, value)
        })
        .collect();
    let inputs = json!({
        "opm": opm_core::provider::OPM_VERSION,
        "command": command_of(release, request),
        "module": module,
        "values": values,
        "providers": providers,
        "env": variables,
    });
    let text = serde_json::to_vec(&inputs).ok()?;
    Some(format!("blake3:{}", blake3::hash(&text).to_hex()))
}

/// Adds to `names` every NAME of a `${env:NAME}` in `text`.
fn env_names(text: &str, names: &mut std::collections::BTreeSet<String>) {
    let mut rest = text;
    while let Some(at) = rest.find("${env:") {
        let after = &rest[at + 6..];
        match after.find('}') {
            Some(end) => {
                names.insert(after[..end].to_owned());
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
}

/// Each set of providers loaded once: by the references, the renderer and the project the
/// module is in, which are all a set depends on.
#[derive(Default)]
pub(crate) struct ProviderSets {
    loaded: Mutex<HashMap<ProvidersKey, Result<Arc<ProviderSet>, String>>>,
}

impl ProviderSets {
    pub(crate) fn load(
        &self,
        request: &Request,
        env: &(dyn Fn(&str) -> Option<String> + Sync),
    ) -> Result<Arc<ProviderSet>, String> {
        let project = opm_core::provider::installed::find(
            &opm_core::provider::project_start(&request.module),
            env,
        )
        .map_err(|e| e.to_string())?;
        let key = (request.providers.clone(), request.renderer.clone(), project);
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        loaded
            .entry(key)
            .or_insert_with(|| {
                render::load_providers(request, env)
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .clone()
    }
}

/// Where each module comes from, asked of git once per checkout: the checkout a module is in is
/// the nearest directory upward holding `.git`, as git finds it.
#[derive(Default)]
struct GitSources {
    found: Mutex<HashMap<Option<PathBuf>, Option<Source>>>,
}

impl GitSources {
    fn of(&self, module: &Path) -> Option<Source> {
        let file = opm_core::module::module_file(module);
        let dir = match file.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
            _ => PathBuf::from("."),
        };
        let checkout = std::fs::canonicalize(&dir).ok().and_then(|dir| {
            dir.ancestors()
                .find(|d| d.join(".git").exists())
                .map(Path::to_owned)
        });
        let mut found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        found
            .entry(checkout)
            .or_insert_with(|| deliver::git_source(module))
            .clone()
    }
}

/// `DIR/ENV/.opm-platform.json`: each release's input key, as last written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct State {
    releases: BTreeMap<String, String>,
}

impl State {
    /// The state in `root`; empty when there is none or it cannot be read (everything is then
    /// rendered).
    fn read(root: &Path) -> Self {
        let releases = opm_core::files::read_bounded(&root.join(STATE_FILE), MAX_STATE_BYTES)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
            .and_then(|value| {
                value["releases"].as_object().map(|releases| {
                    releases
                        .iter()
                        .filter_map(|(name, entry)| {
                            Some((name.clone(), entry["key"].as_str()?.to_owned()))
                        })
                        .collect()
                })
            })
            .unwrap_or_default();
        Self { releases }
    }

    fn write(&self, root: &Path) -> anyhow::Result<()> {
        let releases: serde_json::Map<String, Value> = self
            .releases
            .iter()
            .map(|(name, key)| (name.clone(), json!({"key": key})))
            .collect();
        let mut text = serde_json::to_vec_pretty(&json!({
            "opm": opm_core::provider::OPM_VERSION,
            "releases": releases,
        }))?;
        text.push(b'\n');
        std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
        let path = root.join(STATE_FILE);
        opm_core::files::write_atomically_readable(&path, &text)
            .with_context(|| format!("writing {}", path.display()))
    }
}
