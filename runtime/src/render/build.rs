//! The whole pipeline as one call: [`build`] takes a plain [`Request`] and loads the module and
//! its values, loads the provider, plans on the render threads, compiles the transformers the
//! plan uses, runs every call and checks, labels and orders what came back
//! (`docs/rendering.md#the-pipeline`).
//!
//! Every command that renders goes through it — `opm mod build` writes the result, `opm mod
//! diff` compares it, the benchmarks time it — so that each renders exactly as the others do.
//! Its two halves are [`plan`] (load and plan, running nothing) and [`Planning::render`]: `opm
//! mod vet` prints the plan of the first and renders it with the second, so that what it checks
//! is exactly what `mod build` would render.
//! What runs the calls is the one seam: the sandbox, or (for the benchmark of what the sandbox
//! costs) any other [`Runner`].
//!
//! Nothing here writes to a terminal except the compile progress line, when asked for;
//! reporting what the render decided and what failed is [`crate::report`]'s.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use rayon::prelude::*;

use super::{RenderContext, Rendered, Runner, Sandboxed, Transformers};
use opm_core::background::drop_in_background;
use opm_core::definitions::validated::Validated;
use opm_core::matching::{self, Explain, Plan};
use opm_core::provider::{self, ProviderSet};
use opm_core::redact::Redactor;
use opm_core::render::provenance::ProviderId;
use opm_sandbox::{Caps, CompileCache, Sandbox};

/// What to render, and how: everything `opm mod build` reads from its flags.
#[derive(Debug, Clone)]
pub struct Request {
    /// The module file, or a directory holding `module.yaml` (for a module from a registry,
    /// where it was fetched: see [`super::remote`]).
    pub module: PathBuf,
    /// The module's reference as given, when it came from a registry (`oci://…`): what its
    /// provenance records instead of `module`'s temporary path.
    pub module_reference: Option<String>,
    /// Values files deep-merged onto the module, in order.
    pub values: Vec<PathBuf>,
    /// `PATH=VALUE` assignments applied after the values files.
    pub set: Vec<String>,
    /// Whether unhandled attachments are errors.
    pub strict: bool,
    /// The instance rendered (`--instance`; default: the module's name).
    pub instance: Option<String>,
    /// The providers, used together: each a bundle file, a provider source directory, a
    /// provider the module's project requires (`.opm/providers.yaml`), or the embedded
    /// `kubernetes`. None: every provider the project names, else the embedded one
    /// ([`provider::load_set`]).
    pub providers: Vec<String>,
    /// The provider whose renderer writes the files (`--renderer`); none: the project's choice,
    /// else the rule of [`provider::ProviderSet`].
    pub renderer: Option<String>,
    /// The environment variables `${env:…}` may read (`--allow-env`: names, and prefixes ending
    /// in `*`); none: any.
    pub allow_env: Option<Vec<String>>,
    /// The namespace of the rendered resources (default: the module's, else `default`).
    pub namespace: Option<String>,
    /// Render threads (default: every core).
    pub jobs: Option<usize>,
    /// The per-call limits asked for; a provider may lower them for its own calls.
    pub caps: Caps,
    /// Where compiled components are kept between renders; `None` compiles every one afresh.
    pub cache: Option<CompileCache>,
    /// How much of why each transformer matched or not the plan keeps.
    pub explain: Explain,
    /// Whether compiling shows a progress line on a terminal.
    pub progress: bool,
    /// Which compiler makes native code of the components: tiered (Cranelift's code where it is
    /// built in or cached, Winch for what must be compiled now), unless the caller asks for
    /// Cranelift (`--optimized`) or is the author's edit loop (`opm transformer test --with`).
    pub compiler: opm_sandbox::Compiler,
    /// What the renderer is asked to write (`-o`, `--split`, `--out-dir`).
    pub output: super::OutputOptions,
    /// Mark every object that Flux's variable substitution would change so that Flux leaves
    /// it as rendered (`--flux`, [`opm_core::render::flux`]); Kubernetes output only.
    pub flux: bool,
}

impl Request {
    /// A render of the module at `module` as `opm mod build MODULE` does it: no values, the
    /// project's providers (found from the module's directory) or else the embedded one, the default
    /// limits, every core, no compile cache, tiered compiles, the module's namespace, a plan that
    /// explains only its problems.
    pub fn new(module: impl Into<PathBuf>) -> Self {
        Self {
            module: module.into(),
            module_reference: None,
            values: Vec::new(),
            set: Vec::new(),
            strict: false,
            instance: None,
            providers: Vec::new(),
            renderer: None,
            allow_env: None,
            namespace: None,
            jobs: None,
            caps: Caps::default(),
            cache: None,
            explain: Explain::ProblemsOnly,
            progress: true,
            compiler: opm_sandbox::Compiler::Tiered,
            output: super::OutputOptions::default(),
            flux: false,
        }
    }
}

/// What [`build`] made of a [`Request`]: the redactor of the module's sensitive values (empty
/// when the module did not load), and the render, or why there is none.
#[derive(Debug)]
pub struct Built {
    /// Masks every sensitive value the module loaded, for everything but the rendered output.
    pub redactor: Redactor,
    /// The render, or why it could not be attempted (a module or provider that does not load,
    /// bad limits). Components that fail are in the render, not here.
    pub render: anyhow::Result<Render>,
}

/// A render attempted in full: the plan, the context, what every call returned, and the
/// threads it ran on, for whatever writes it next.
#[derive(Debug)]
pub struct Render {
    /// Which transformer ran on which component, and every problem planning found.
    pub plan: Plan,
    /// What every call was told about the render.
    pub context: RenderContext,
    /// Resources in the order of the calls, the renderer's files, and every failure.
    pub rendered: Rendered,
    /// The render threads, as many as the request asked for (shared by every render of a
    /// [`super::Shared`]).
    pub pool: std::sync::Arc<rayon::ThreadPool>,
    /// Every provider of the render, by name, version and bundle digest (its provenance).
    pub providers: Vec<ProviderId>,
}

impl Render {
    /// Whether the plan has an error or a call failed: then nothing may be written.
    pub fn failed(&self) -> bool {
        !self.plan.is_ok() || self.rendered.failed()
    }

    /// Frees the render on a thread of its own (see [`drop_in_background`]).
    pub fn free(self) {
        drop_in_background((self.plan, self.rendered));
    }
}

/// Renders `request`, running the calls in the sandbox. `env` is where `${env:NAME}` and
/// `SOURCE_DATE_EPOCH` are read.
pub fn build(request: &Request, env: &(dyn Fn(&str) -> Option<String> + Sync)) -> Built {
    build_with(request, env, None)
}

/// [`build`] with the calls run by `runner` instead of the sandbox.
pub fn build_with(
    request: &Request,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    runner: Option<&dyn Runner>,
) -> Built {
    let Planned { redactor, planning } = plan(request, env);
    let render = planning.and_then(|planning| planning.render(request, &redactor, runner));
    Built { redactor, render }
}

/// What [`plan`] made of a [`Request`]: the front half of a render, as [`Built`] is the whole.
#[derive(Debug)]
pub struct Planned {
    /// Masks every sensitive value the module loaded, for everything but the rendered output.
    pub redactor: Redactor,
    /// The plan and everything its render needs, or why there is none (a module or provider
    /// that does not load, bad limits).
    pub planning: anyhow::Result<Planning>,
}

/// A plan with everything its render needs: what `opm mod vet` prints, and then, when the plan
/// is sound, renders ([`Planning::render`]) — the very plan `opm mod build` renders for the same
/// request.
#[derive(Debug)]
pub struct Planning {
    /// Which transformer runs on which component, and every problem planning found.
    pub plan: Plan,
    /// What every call will be told about the render.
    pub context: RenderContext,
    providers: std::sync::Arc<ProviderSet>,
    pool: std::sync::Arc<rayon::ThreadPool>,
    limits: provider::CallLimits,
    renderer: super::Renderer,
}

/// Loads the module and its values and the providers `request` names, and plans on the render
/// threads: the front half of [`build`], which nothing of it runs or compiles. `env` is where
/// `${env:NAME}` and `SOURCE_DATE_EPOCH` are read.
pub fn plan(request: &Request, env: &(dyn Fn(&str) -> Option<String> + Sync)) -> Planned {
    plan_on(request, env, None, None)
}

/// [`plan`] on `pool`, the threads several renders share ([`super::Shared`]), rather than
/// threads of its own, with `providers` when the caller loaded them already (as
/// [`provider::load_set`] loads them for `request`).
pub fn plan_in(
    request: &Request,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    pool: std::sync::Arc<rayon::ThreadPool>,
    providers: Option<std::sync::Arc<ProviderSet>>,
) -> Planned {
    plan_on(request, env, Some(pool), providers)
}

fn plan_on(
    request: &Request,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    pool: Option<std::sync::Arc<rayon::ThreadPool>>,
    providers: Option<std::sync::Arc<ProviderSet>>,
) -> Planned {
    if let Some(Err(error)) = request
        .instance
        .as_deref()
        .map(opm_core::names::check_instance_name)
    {
        return Planned {
            redactor: Redactor::new(BTreeSet::new()),
            planning: Err(anyhow::anyhow!(error)),
        };
    }
    fewer_huge_pages_for(&request.module);
    // The providers first: the module's expressions see the platform they render for, and the
    // default number of threads depends on them.
    let providers =
        match providers.map_or_else(|| load_providers(request, env).map(std::sync::Arc::new), Ok) {
            Ok(providers) => providers,
            Err(error) => {
                return Planned {
                    redactor: Redactor::new(BTreeSet::new()),
                    planning: Err(error.into()),
                };
            }
        };
    // Parsing, planning, rendering and serialising all run on these threads.
    let jobs = request
        .jobs
        .or_else(|| one_thread_is_enough(request, &providers).then_some(1));
    let pool = match pool.map_or_else(|| render_threads(jobs).map(std::sync::Arc::new), Ok) {
        Ok(pool) => pool,
        Err(error) => {
            return Planned {
                redactor: Redactor::new(BTreeSet::new()),
                planning: Err(error),
            };
        }
    };
    let mut sensitive = BTreeSet::new();
    let reads = opm_core::module::env::EnvReads::new(env, request.allow_env.as_deref());
    let lookup = |name: &str| reads.lookup(name);
    let module = reads.explain(opm_core::module::load_on(
        Some(&pool),
        &request.module,
        &request.values,
        &request.set,
        &opm_core::module::Instance {
            name: request.instance.clone(),
            namespace: request.namespace.clone(),
            platform: providers.format().map(str::to_owned),
        },
        &lookup,
        &mut sensitive,
    ));
    let redactor = Redactor::keeping(
        sensitive,
        opm_core::module::public_names(
            module.as_ref().ok(),
            &request.module,
            &request.values,
            request.instance.as_deref(),
            request.namespace.as_deref(),
        ),
    );
    let env_read = reads.read();
    let planning = module
        .map_err(anyhow::Error::from)
        .and_then(|module| planning(request, module, providers, pool, env, env_read));
    Planned { redactor, planning }
}

/// The providers `request` names, as a render loads them ([`provider::load_set`]).
pub fn load_providers(
    request: &Request,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<ProviderSet, provider::installed::InstallError> {
    provider::load_set(
        &request.providers,
        &request.module,
        request.renderer.as_deref(),
        env,
        &crate::embedded::PROVIDERS,
    )
}

/// From this size on, a module file is rendered without transparent huge pages: about 700
/// components of one attachment each.
const LARGE_MODULE_BYTES: u64 = 128 << 10;

/// Turns transparent huge pages off for the rest of the process when the module at `path` is
/// large ([`LARGE_MODULE_BYTES`]), on Linux. mimalloc asks for huge pages for its heap, which
/// spares a small run page faults (`opm mod vet` of 5 components: 570 faults, without them
/// 1,750); a large render frees memory back to the kernel and faults it in again over and over,
/// and the kernel zeroes 2 MiB at each such fault: at 10,000 components, 10–13 % of the render
/// was that zeroing, and without huge pages the render takes a tenth less time and 10 MiB less
/// memory (benches/RESULTS.md). Nothing else changes: the flag only decides the page size of
/// memory faulted in later.
fn fewer_huge_pages_for(path: &Path) {
    #[cfg(target_os = "linux")]
    if std::fs::metadata(opm_core::module::module_file(path))
        .is_ok_and(|meta| meta.len() >= LARGE_MODULE_BYTES)
    {
        // A kernel without the flag (before 3.15) keeps huge pages: a little slower, no worse.
        let _ = rustix::thread::disable_transparent_huge_pages(true);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = path;
}

/// Below this size, a module and its values files render on one thread unless `-j` says
/// otherwise, when every provider is built in: a few dozen components, whose calls of the
/// built-in (compiled) transformers take a fraction of a millisecond each. A second thread
/// would save less time than starting it and waking it for each parallel step costs in CPU (a
/// fifth more for the examples, benches/RESULTS.md). A provider from elsewhere may be
/// interpreted, its calls milliseconds each: then every core is used.
const SMALL_MODULE_BYTES: u64 = 32 << 10;

/// Whether `request`'s module is small enough for one thread ([`SMALL_MODULE_BYTES`]) with
/// `providers`, all built in.
fn one_thread_is_enough(request: &Request, providers: &ProviderSet) -> bool {
    let size = |path: &Path| std::fs::metadata(path).map_or(u64::MAX, |meta| meta.len());
    let bytes = std::iter::once(opm_core::module::module_file(&request.module))
        .chain(request.values.iter().cloned())
        .map(|path| size(&path))
        .fold(0u64, u64::saturating_add);
    bytes < SMALL_MODULE_BYTES
        && providers
            .providers()
            .iter()
            .all(|provider| provider.origin.starts_with(provider::EMBEDDED_ORIGIN))
}

/// The render's threads: `jobs` of them, or one per core.
pub fn render_threads(jobs: Option<usize>) -> anyhow::Result<rayon::ThreadPool> {
    let mut pool = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("opm-render-{i}"))
        .stack_size(opm_core::module::expr::THREAD_STACK);
    if let Some(jobs) = jobs {
        anyhow::ensure!(jobs > 0, "-j/--jobs must be at least 1");
        pool = pool.num_threads(jobs);
    }
    pool.build().context("starting the render threads")
}

/// Up to this many components, a render recalls which of its values earlier renders of the
/// module found valid, and validates only the others
/// ([`opm_core::definitions::validated`]): compiling the schemas is a fixed cost that weighs on
/// a small render (2–9 ms of 20–35), and naming each value by a digest costs about what
/// validating it does, which is all a large render would save.
const RECALL_VALID_UP_TO: usize = 1024;

/// What tells one module's renders from another's for
/// [`Validated`]: the module's file, its values files, instance and namespace.
fn validation_scope(request: &Request) -> Vec<u8> {
    let module = opm_core::module::module_file(&request.module);
    let module = std::fs::canonicalize(&module).unwrap_or(module);
    let mut scope = Vec::new();
    for part in std::iter::once(module.as_os_str())
        .chain(request.values.iter().map(|path| path.as_os_str()))
        .chain(request.instance.as_deref().map(std::ffi::OsStr::new))
        .chain(std::iter::once(std::ffi::OsStr::new("\0namespace")))
        .chain(request.namespace.as_deref().map(std::ffi::OsStr::new))
    {
        scope.extend_from_slice(part.as_encoded_bytes());
        scope.push(0);
    }
    scope
}

/// The plan of `module` with `providers`, and the context and limits of its render.
fn planning(
    request: &Request,
    module: opm_core::module::Module,
    providers: std::sync::Arc<ProviderSet>,
    pool: std::sync::Arc<rayon::ThreadPool>,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    env_read: Vec<String>,
) -> anyhow::Result<Planning> {
    let validated = request
        .cache
        .as_ref()
        .filter(|_| module.components().len() <= RECALL_VALID_UP_TO)
        .map(|cache| Validated::recall(cache, &validation_scope(request)));
    let mut plan = pool.install(|| {
        matching::plan_providers_recalling(
            &module,
            &providers.manifests(),
            request.strict,
            request.explain,
            validated.as_ref(),
        )
    });
    let limits = providers
        .limits(&request.caps)
        .map_err(anyhow::Error::msg)?;
    let platform = providers
        .format()
        .unwrap_or(opm_core::module::patch::DEFAULT_PLATFORM);
    anyhow::ensure!(
        !request.flux || platform == "kubernetes",
        "--flux marks Kubernetes objects for Flux, and this render is for {platform}"
    );
    let renderer = renderer_of(&providers)?;
    plan.set_renderer(renderer.2.clone());
    plan.set_env_read(env_read);
    let context = RenderContext {
        name: module.name().to_owned(),
        instance: request
            .instance
            .clone()
            .unwrap_or_else(|| module.name().to_owned()),
        namespace: request
            .namespace
            .clone()
            .or_else(|| module.namespace().map(str::to_owned))
            .unwrap_or_else(|| "default".to_owned()),
        version: module.version().to_owned(),
        provider: providers.name(),
        timestamp: super::context::timestamp(env("SOURCE_DATE_EPOCH").as_deref())
            .map_err(anyhow::Error::msg)?,
        strict: request.strict,
        module_labels: module.labels().clone(),
        secret_kinds: renderer.1.clone(),
        platform: providers.format().map(str::to_owned),
        provider_versions: providers
            .providers()
            .iter()
            .map(|p| {
                (
                    p.manifest.metadata.name.clone(),
                    p.manifest.metadata.version.clone(),
                )
            })
            .collect(),
    };
    // The plan and the context hold all the render needs of the module.
    drop_in_background(module);
    Ok(Planning {
        plan,
        context,
        providers,
        pool,
        limits,
        renderer: renderer.0,
    })
}

impl Planning {
    /// What the sandbox must allow for this render's calls and its renderer: the most memory
    /// any of its providers asks, or its renderer.
    pub fn ceiling(&self) -> anyhow::Result<opm_sandbox::Limits> {
        let mut ceiling = self.limits.ceiling();
        ceiling.memory = ceiling.memory.max(
            super::renderer::limits(&self.renderer.limits, 0)
                .map_err(anyhow::Error::msg)?
                .memory,
        );
        Ok(ceiling)
    }

    /// Compiles the transformers the plan calls and runs every call (by `runner`, else in the
    /// sandbox, guests' words through `redactor`), then the renderer when the plan is sound: the
    /// back half of [`build`].
    pub fn render(
        self,
        request: &Request,
        redactor: &Redactor,
        runner: Option<&dyn Runner>,
    ) -> anyhow::Result<Render> {
        self.render_on(request, redactor, runner, None)
    }

    /// [`render`](Self::render) in `shared`'s sandbox, with the components it compiled for
    /// earlier renders (its ceiling must be at least this planning's [`ceiling`](Self::ceiling):
    /// a call is given no more memory than the sandbox allows).
    pub fn render_shared(
        self,
        request: &Request,
        redactor: &Redactor,
        shared: &super::Shared,
    ) -> anyhow::Result<Render> {
        self.render_on(request, redactor, None, Some(shared))
    }

    fn render_on(
        self,
        request: &Request,
        redactor: &Redactor,
        runner: Option<&dyn Runner>,
        shared: Option<&super::Shared>,
    ) -> anyhow::Result<Render> {
        let ceiling = self.ceiling()?;
        let Self {
            plan,
            context,
            providers,
            pool,
            limits,
            renderer,
        } = self;
        // Patches are written for one platform's objects: a render for another leaves them out.
        let platform = providers
            .format()
            .unwrap_or(opm_core::module::patch::DEFAULT_PLATFORM);
        let (patches, other_platforms): (Vec<&matching::PlanPatch>, Vec<&matching::PlanPatch>) =
            plan.patches()
                .iter()
                .partition(|patch| patch.target.applies_to(platform));
        let patches: Vec<matching::PlanPatch> = patches.into_iter().cloned().collect();
        let calls: Vec<&matching::Call> = plan.calls().collect();
        let owner_of = |transformer: &str| {
            let provider = providers.provider_of(transformer);
            (
                provider
                    .map(|p| p.manifest.metadata.name.clone())
                    .unwrap_or_default(),
                providers
                    .component(transformer)
                    .map(|bytes| format!("blake3:{}", blake3::hash(bytes).to_hex()))
                    .unwrap_or_default(),
            )
        };
        let shared_redactor = shared.map(|_| std::sync::Arc::new(redactor.clone()));
        let rendered = pool.install(|| {
            // The sandbox holds the renderer's memory too.
            let own;
            let code = match (shared, &shared_redactor) {
                (Some(shared), Some(redactor)) => shared.code(redactor),
                _ => {
                    own = Sandbox::with_compiler(&ceiling, request.compiler)?
                        .with_precompiled(&crate::embedded::CODE)
                        .with_cache(request.cache.clone())
                        .with_redactor(redactor.clone());
                    super::shared::Code::own(&own)
                }
            };
            let mut rendered = match runner {
                Some(runner) => super::execute_patched(runner, &calls, &context, &limits, &patches),
                None => {
                    let transformers = compile(code, &plan, &providers, request.progress)?;
                    let sandboxed = Sandboxed {
                        sandbox: code.sandbox,
                        transformers: &transformers,
                        redactor: code.redactor(),
                    };
                    let mut rendered =
                        super::execute_patched(&sandboxed, &calls, &context, &limits, &patches);
                    rendered.code = transformers
                        .values()
                        .filter_map(|compiled| compiled.as_ref().ok())
                        .map(|compiled| {
                            super::code_load(
                                compiled.name.to_string(),
                                compiled.digest.to_string(),
                                &compiled.code,
                            )
                        })
                        .collect();
                    rendered
                }
            };
            if request.flux {
                rendered.resources.par_iter_mut().for_each(|resource| {
                    opm_core::render::flux::mark(&mut resource.json);
                });
            }
            // The renderer runs even when a call failed, so that what it refuses (two resources
            // that are one object) is reported with the rest; nothing is written then anyway.
            if plan.is_ok() {
                super::renderer::run_in(
                    code,
                    &renderer,
                    &mut rendered,
                    &context,
                    &request.output,
                    &owner_of,
                );
            }
            rendered.left_out_patches = other_platforms
                .iter()
                .map(|patch| {
                    format!(
                        "{}: {} is for {} objects, and this render is for {platform}: left out",
                        patch.at,
                        patch.name(),
                        patch.target.platforms_text()
                    )
                })
                .collect();
            Ok::<_, anyhow::Error>(rendered)
        })?;
        drop(calls);
        let ids = providers
            .providers()
            .iter()
            .map(|p| ProviderId {
                name: p.manifest.metadata.name.clone(),
                version: p.manifest.metadata.version.clone(),
                digest: p.digest.clone(),
            })
            .collect();
        drop_in_background(providers);
        Ok(Render {
            plan,
            context,
            rendered,
            pool,
            providers: ids,
        })
    }
}

/// The renderer of a render with `providers`, the kinds its provider calls secret, and what the
/// plan says of it: the one named, else the one a provider of the set ships; when none does
/// (providers made before renderers, or a team's transformers alone), the renderer of the
/// embedded provider for the set's platform (its `core.opm.dev/format` label), else the
/// default provider's.
fn renderer_of(
    providers: &ProviderSet,
) -> anyhow::Result<(super::Renderer, Vec<String>, matching::PlanRenderer)> {
    let fallback;
    let (provider, chosen) = match providers.renderer() {
        Some(provider) if providers.renderer_named() => (provider, "named"),
        Some(provider) => (provider, "shipped"),
        None => {
            fallback = crate::embedded::PROVIDERS.load_for(providers.format())?;
            (&fallback, "embedded")
        }
    };
    let renderer = super::Renderer::of(provider)
        .with_context(|| format!("provider {} has no renderer", provider.origin))?;
    provider.check_component(provider::RENDERER)?;
    let secret_kinds = provider
        .manifest
        .renderer
        .as_ref()
        .map(|spec| spec.secret_kinds.clone())
        .unwrap_or_default();
    let described = matching::PlanRenderer {
        name: renderer.name.clone(),
        provider: renderer.provider.clone(),
        chosen,
    };
    Ok((renderer, secret_kinds, described))
}

/// Checks and compiles, on the current rayon pool, the transformers `plan` calls, and only
/// those. A component that is not a transformer's is refused before anything is compiled; a
/// transformer that does not compile fails its own calls, reported with the others.
fn compile(
    code: super::shared::Code<'_>,
    plan: &Plan,
    providers: &ProviderSet,
    progress: bool,
) -> anyhow::Result<Transformers> {
    let mut used: Vec<&str> = plan.calls().map(|call| call.transformer.as_str()).collect();
    used.sort_unstable();
    used.dedup();
    let components = used
        .into_iter()
        .map(|fqn| {
            let bytes = providers.component(fqn).with_context(|| {
                format!("providers {} have no component for {fqn}", providers.name())
            })?;
            Ok((fqn, &bytes[..]))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    // A component several transformers name is checked once.
    let (distinct, _) = distinct_components(&components, |&(_, bytes)| bytes);
    distinct.par_iter().try_for_each(|(fqn, _)| {
        providers
            .provider_of(fqn)
            .map_or(Ok(()), |provider| provider.check_component(fqn))
    })?;
    Ok(compile_all_in(code, &components, progress))
}

/// The first of each distinct component among `items` (by its `bytes`), and for each item the
/// position of its component among those. The bytes are usually the same memory (a bundle's
/// blob); a provider directory reads them once per transformer, so equal contents count too —
/// told by their BLAKE3, hashed only for a length two copies share, so that the work stays
/// linear in the bytes whatever a provider holds.
pub(crate) fn distinct_components<T>(
    items: &[T],
    bytes: impl Fn(&T) -> &[u8],
) -> (Vec<&T>, Vec<usize>) {
    use std::collections::{HashMap, HashSet};
    // Where the copies of each length lie: a set, so that counting them stays linear however
    // many transformers hold a copy of one length.
    let mut lengths: HashMap<usize, HashSet<*const u8>> = HashMap::new();
    for item in items {
        lengths
            .entry(bytes(item).len())
            .or_default()
            .insert(bytes(item).as_ptr());
    }
    let mut by_place: HashMap<(*const u8, usize), usize> = HashMap::new();
    let mut by_content: HashMap<blake3::Hash, usize> = HashMap::new();
    let mut distinct: Vec<&T> = Vec::new();
    let positions = items
        .iter()
        .map(|item| {
            let mine = bytes(item);
            if let Some(&at) = by_place.get(&(mine.as_ptr(), mine.len())) {
                return at;
            }
            let twin = (lengths[&mine.len()].len() > 1)
                .then(|| blake3::hash(mine))
                .and_then(|hash| match by_content.get(&hash) {
                    Some(&at) => Some(at),
                    None => {
                        by_content.insert(hash, distinct.len());
                        None
                    }
                });
            let at = twin.unwrap_or_else(|| {
                distinct.push(item);
                distinct.len() - 1
            });
            by_place.insert((mine.as_ptr(), mine.len()), at);
            at
        })
        .collect();
    (distinct, positions)
}

/// Compiles `components` (name, bytes) on the current rayon pool, showing a progress line on a
/// terminal while any is not in the cache, if `progress`. `opm transformer test` compiles the
/// component under test with this too, so that it meets the cache and the compiler exactly as a
/// render does.
pub fn compile_all(
    sandbox: &Sandbox,
    components: &[(&str, &[u8])],
    progress: bool,
) -> Transformers {
    compile_all_in(super::shared::Code::own(sandbox), components, progress)
}

fn compile_all_in(
    code: super::shared::Code<'_>,
    components: &[(&str, &[u8])],
    progress: bool,
) -> Transformers {
    let progress = progress
        .then(|| {
            opm_core::progress::compiling("on first use; later runs use the cache", || {
                // A component several transformers name is compiled once (the cache takes
                // turns), so it counts once.
                let mut seen = std::collections::HashSet::new();
                components
                    .iter()
                    .filter(|(_, bytes)| seen.insert(*bytes))
                    .filter(|(name, bytes)| !code.is_cached(name, bytes))
                    .map(|(_, bytes)| bytes.len())
                    .collect()
            })
        })
        .flatten();
    // A component several transformers name (one component serving a whole provider) is
    // loaded once: its code mapped once, its instances sharing their memory slots.
    let (distinct, served_by) = distinct_components(components, |&(_, bytes)| bytes);
    let loaded: Vec<_> = distinct
        .par_iter()
        .map(|(name, bytes)| code.compile(name, bytes))
        .collect();
    drop(progress);
    components
        .iter()
        .zip(served_by)
        .map(|(&(name, _), index)| {
            let compiled = match loaded[index].clone() {
                Ok(mut compiled) => {
                    compiled.name = name.into();
                    Ok(compiled)
                }
                Err(opm_sandbox::CompileError::Component { digest, reason, .. }) => {
                    Err(opm_sandbox::CompileError::Component {
                        transformer: name.to_owned(),
                        digest,
                        reason,
                    })
                }
                Err(other) => Err(other),
            };
            (name.to_owned(), compiled)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small module leaves transparent huge pages on; a large one turns them off for the
    /// process. The flag is the whole process's, so the test runs alone in one: under nextest
    /// each test does; under `cargo test` it runs itself again in a child.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_large_module_turns_huge_pages_off() {
        let alone = std::env::var("NEXTEST_EXECUTION_MODE").as_deref() == Ok("process-per-test")
            || std::env::var_os("OPM_OWN_PROCESS").is_some();
        if !alone {
            let status = std::process::Command::new(std::env::current_exe().expect("test binary"))
                .args([
                    "--exact",
                    "render::build::tests::a_large_module_turns_huge_pages_off",
                ])
                .env("OPM_OWN_PROCESS", "1")
                .status()
                .expect("the test binary runs again");
            assert!(status.success(), "the test failed in a process of its own");
            return;
        }
        let disabled = || rustix::thread::transparent_huge_pages_are_disabled().expect("prctl");
        assert!(!disabled(), "huge pages were off before the test");
        let dir = tempfile::tempdir().expect("temp dir");
        let small = dir.path().join("small.yaml");
        std::fs::write(&small, "components: {}\n").expect("write");
        fewer_huge_pages_for(&small);
        assert!(!disabled(), "a small module turned huge pages off");
        let large = dir.path().join("module.yaml");
        std::fs::write(&large, " ".repeat(LARGE_MODULE_BYTES as usize)).expect("write");
        fewer_huge_pages_for(dir.path());
        assert!(disabled(), "a large module left huge pages on");
    }

    /// Components are the same when their bytes are, wherever they lie.
    #[test]
    fn distinct_components_are_told_by_place_then_content() {
        let shared = vec![1u8; 64];
        let copy = shared.clone();
        let other = vec![2u8; 64];
        let shorter = vec![1u8; 8];
        let items = [&shared[..], &copy, &shared, &other, &shorter];
        let (distinct, positions) = distinct_components(&items, |bytes| bytes);
        assert_eq!(positions, [0, 0, 0, 1, 2]);
        assert_eq!(distinct.len(), 3);
        assert!(std::ptr::eq(distinct[0].as_ptr(), shared.as_ptr()));
    }

    /// The threads a plan was made on.
    fn threads(request: &Request) -> usize {
        let planned = plan(request, &|_| None);
        planned.planning.expect("plans").pool.current_num_threads()
    }

    /// By default a small module renders on one thread with the built-in providers, and on
    /// every core when it is large, when a provider is not built in (it may be interpreted), or
    /// when `-j` asks.
    #[test]
    fn a_small_module_of_built_in_providers_renders_on_one_thread_by_default() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let hello = root.join("examples/hello/module.yaml");
        assert_eq!(threads(&Request::new(&hello)), 1);
        let mut asked = Request::new(&hello);
        asked.jobs = Some(3);
        assert_eq!(threads(&asked), 3);

        let dir = tempfile::tempdir().expect("temp dir");
        let large = dir.path().join("module.yaml");
        let mut text = std::fs::read_to_string(&hello).expect("hello");
        text.push_str(&format!(
            "# {}\n",
            "padding ".repeat(SMALL_MODULE_BYTES as usize / 8)
        ));
        std::fs::write(&large, text).expect("write");
        assert_eq!(threads(&Request::new(&large)), cores);

        let built_in = crate::embedded::load().expect("the embedded provider");
        let request = Request::new(&hello);
        assert!(one_thread_is_enough(
            &request,
            &ProviderSet::single(built_in.clone())
        ));
        let mut installed = built_in;
        installed.origin = "/project/.opm/providers/kubernetes.opmb".into();
        assert!(
            !one_thread_is_enough(&request, &ProviderSet::single(installed)),
            "a provider not built in may be interpreted"
        );
    }
}
