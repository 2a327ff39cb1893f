//! The engine of the sandbox: [`Sandbox`] and [`CompiledTransformer`], over wasmtime, which this
//! crate alone of opm's runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

use crate::call::{self, CallState};
use crate::compiler::{Compiler, engine_config_for};
use crate::precompiled::Precompiled;
use crate::wit::renderer::RendererWorldPre;
use crate::wit::{TransformerWorld, TransformerWorldPre, v1_0, v1_1};
use crate::{CallOutcome, CompileCache, CompileError, Limits, isolated, pool, wasi};
use opm_core::contract::{self, Role, Version};
use opm_core::redact::Redactor;

/// How often the epoch advances: the resolution of wall-clock limits.
const EPOCH_TICK: Duration = Duration::from_millis(5);

/// The furthest a call's deadline may be, in ticks. wasmtime adds the deadline to the engine's
/// current epoch, so this leaves room for 2^63 ticks — over a billion years of them — before
/// that sum could overflow. A longer timeout is this one: no call lasts that long anyway.
const MAX_TICKS: u64 = u64::MAX / 2;

/// The WebAssembly engine and everything shared by all transform calls.
pub struct Sandbox {
    engine: Engine,
    linker: Linker<CallState>,
    ticker: Ticker,
    /// One permit per slot of the instance pool: a call waits for a slot rather than fail.
    slots: pool::Slots,
    /// The most memory a call may have: the size of one memory slot of the pool.
    memory_ceiling: u64,
    cache: Option<CompileCache>,
    redactor: Arc<Redactor>,
    /// Whether this engine's code is Cranelift's, as the embedded providers' precompiled code is.
    optimizing: bool,
    /// The limits the pool was sized from, which the quick sandbox is made with too.
    pool_limits: Limits,
    /// With [`Compiler::Tiered`]: the Winch sandbox that compiles and runs what has no
    /// code yet, made when the first such component comes (`None` inside when it cannot be).
    quick: Option<OnceLock<Option<Box<Sandbox>>>>,
    /// The child process each compile runs in, if any (see [`isolated`]).
    isolated: Option<isolated::CompileProcess>,
    /// Code precompiled into the binary, loaded instead of compiling (Cranelift's only).
    precompiled: Option<&'static Precompiled>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox").finish_non_exhaustive()
    }
}

/// Where the code of a compiled component came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeSource {
    /// Precompiled into the binary with its embedded provider.
    Embedded,
    /// Loaded from the compile cache.
    Cache,
    /// Compiled now.
    Compiled,
    /// Winch's code, loaded from the compile cache ([`Compiler::Tiered`]).
    CacheBaseline,
    /// Compiled now by Winch ([`Compiler::Tiered`]).
    CompiledBaseline,
}

impl CodeSource {
    /// How `--verbose` names it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Embedded => "embedded",
            Self::Cache => "cache",
            Self::Compiled => "compiled",
            Self::CacheBaseline => "cache-winch",
            Self::CompiledBaseline => "compiled-winch",
        }
    }
}

/// How a component's code was had: where from, and how long it took to have it linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeReport {
    /// Where the code came from.
    pub source: CodeSource,
    /// The time from the component's bytes to its pre-instantiated form.
    pub elapsed: Duration,
}

/// A transformer compiled and linked, ready for any number of calls.
#[derive(Clone)]
pub struct CompiledTransformer {
    /// The transformer's FQN.
    pub name: Arc<str>,
    /// `blake3:<hex>` of the component bytes.
    pub digest: Arc<str>,
    /// Where its code came from.
    pub code: CodeReport,
    /// The component's imports (interface names with versions).
    pub imports: Vec<String>,
    /// The component's exports.
    pub exports: Vec<String>,
    /// The version of the contract it was built for, whose context its calls are given.
    pub contract: Version,
    pub(super) pre: TransformerPre,
    /// Whether it imports `wasi:random`: only then is a call's input hashed for its seed.
    pub(super) random: bool,
    /// Whether its code is the quick sandbox's, whose engine runs it.
    quick: bool,
}

/// A transformer's component pre-instantiated and bound to the world of its version.
#[derive(Clone)]
pub(super) enum TransformerPre {
    V1_0(v1_0::TransformerWorldPre<CallState>),
    V1_1(v1_1::TransformerWorldPre<CallState>),
    V1_2(TransformerWorldPre<CallState>),
}

/// A renderer's component pre-instantiated, bound to the world of its version: one built
/// before 1.2.0 is called through its export's index (see [`crate::wit::v1_0`]).
#[derive(Clone)]
pub(super) enum RendererPre {
    Before1_2(
        Version,
        wasmtime::component::InstancePre<CallState>,
        wasmtime::component::ComponentExportIndex,
    ),
    V1_2(RendererWorldPre<CallState>),
}

/// A component compiled, checked and linked, before it is bound to its world.
struct Linked {
    digest: String,
    code: CodeReport,
    imports: Vec<String>,
    exports: Vec<String>,
    contract: Version,
    pre: wasmtime::component::InstancePre<CallState>,
    random: bool,
    quick: bool,
}

/// Why the component `name` with `digest` cannot be loaded.
fn invalid(name: &str, digest: &str, reason: impl std::fmt::Display) -> CompileError {
    CompileError::Component {
        transformer: name.to_owned(),
        digest: digest.to_owned(),
        reason: format!("{reason:#}"),
    }
}

/// A provider's renderer compiled and linked.
#[derive(Clone)]
pub struct CompiledRenderer {
    /// `blake3:<hex>` of the component bytes.
    pub digest: Arc<str>,
    /// Where its code came from.
    pub code: CodeReport,
    /// The version of the contract it was built for, whose context its call is given.
    pub contract: Version,
    pub(super) pre: RendererPre,
    /// Whether it imports `wasi:random`: only then is its input hashed for its seed.
    pub(super) random: bool,
    quick: bool,
}

impl std::fmt::Debug for CompiledRenderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledRenderer")
            .field("digest", &self.digest)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for CompiledTransformer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledTransformer")
            .field("name", &self.name)
            .field("digest", &self.digest)
            .finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Creates the engine, with a pool of instance slots for as many calls at once as the
    /// current rayon pool has threads. `limits.wasm_stack` is fixed here for every call of this
    /// sandbox, and `limits.memory` is the most any call of it may use (see [`pool`]).
    pub fn new(limits: &Limits) -> Result<Self, CompileError> {
        Self::with_compiler(limits, Compiler::Optimizing)
    }

    /// [`new`](Self::new), compiling with `compiler`.
    pub fn with_compiler(limits: &Limits, compiler: Compiler) -> Result<Self, CompileError> {
        let slots = rayon::current_num_threads().max(1);
        let mut config = engine_config_for(compiler);
        config
            .max_wasm_stack(limits.wasm_stack)
            .allocation_strategy(pool::config(limits, slots));
        let engine = Engine::new(&config).map_err(|e| CompileError::Engine(format!("{e:#}")))?;
        let mut linker = Linker::new(&engine);
        // Every version's `log` and `types`, each under its own name: a component is linked
        // to those of the version it imports.
        TransformerWorld::add_to_linker::<_, wasmtime::component::HasSelf<CallState>>(
            &mut linker,
            |state| state,
        )
        .and_then(|()| {
            v1_0::TransformerWorld::add_to_linker::<_, wasmtime::component::HasSelf<CallState>>(
                &mut linker,
                |state| state,
            )
        })
        .and_then(|()| {
            v1_1::TransformerWorld::add_to_linker::<_, wasmtime::component::HasSelf<CallState>>(
                &mut linker,
                |state| state,
            )
        })
        .map_err(|e| CompileError::Engine(format!("{e:#}")))?;
        wasi::add_to_linker(&mut linker).map_err(|e| CompileError::Engine(format!("{e:#}")))?;
        let ticker = Ticker::start(&engine)?;
        Ok(Self {
            engine,
            linker,
            ticker,
            slots: pool::Slots::new(slots),
            memory_ceiling: pool::memory_ceiling(limits),
            cache: None,
            redactor: Arc::default(),
            optimizing: compiler != Compiler::Baseline,
            pool_limits: *limits,
            quick: (compiler == Compiler::Tiered).then(OnceLock::new),
            isolated: isolated::default_process(),
            precompiled: None,
        })
    }

    /// Loads the code `precompiled` holds for a component instead of compiling it (an engine of
    /// Cranelift's code only: Winch's cannot load it).
    pub fn with_precompiled(mut self, precompiled: &'static Precompiled) -> Self {
        self.precompiled = Some(precompiled);
        self
    }

    /// Compiles in children of `process` (`None`: in this process) rather than as
    /// [`isolated::use_children`] said.
    pub fn with_compile_process(mut self, process: Option<isolated::CompileProcess>) -> Self {
        self.isolated = process;
        self
    }

    /// The Winch sandbox of a tiered one, made on first use with this one's limits, cache and
    /// redactor; `None` for any other sandbox, or when it cannot be made.
    fn quick(&self) -> Option<&Sandbox> {
        self.quick
            .as_ref()?
            .get_or_init(|| {
                let mut quick =
                    Sandbox::with_compiler(&self.pool_limits, Compiler::Baseline).ok()?;
                quick.cache.clone_from(&self.cache);
                quick.redactor = Arc::clone(&self.redactor);
                quick.isolated.clone_from(&self.isolated);
                Some(Box::new(quick))
            })
            .as_deref()
    }

    /// The sandbox whose engine runs code of the quick sandbox's (`quick`) or of this one's. A
    /// transformer is called through the sandbox that compiled it, as with any two engines.
    fn running(&self, quick: bool) -> &Sandbox {
        let made = self.quick.as_ref().and_then(OnceLock::get);
        match made.and_then(Option::as_deref) {
            Some(sandbox) if quick => sandbox,
            _ => self,
        }
    }

    /// Redacts `redactor`'s sensitive values from everything guests say (log lines, stdout and
    /// stderr, error text) before it is cut to length or kept.
    pub fn with_redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = Arc::new(redactor);
        self
    }

    /// Keeps compiled components in `cache` across runs.
    pub fn with_cache(mut self, cache: Option<CompileCache>) -> Self {
        self.cache = cache;
        self
    }

    /// The cache this sandbox keeps compiled components in, if any: also where a render
    /// remembers its Secrets' stretched checksums ([`opm_core::render::checksum::Memo`]).
    pub fn compile_cache(&self) -> Option<&CompileCache> {
        self.cache.as_ref()
    }

    /// Compiles `bytes`, a WebAssembly component, as the transformer `name`, and checks that it
    /// exports `opm:transformer/transformer` at a version the host serves and imports nothing
    /// the sandbox does not offer.
    pub fn compile(&self, name: &str, bytes: &[u8]) -> Result<CompiledTransformer, CompileError> {
        let Linked {
            digest,
            code,
            imports,
            exports,
            contract,
            pre,
            random,
            quick,
        } = self.link(name, bytes, Role::Transformer)?;
        let pre = match contract {
            Version::V1_0 => v1_0::TransformerWorldPre::new(pre).map(TransformerPre::V1_0),
            Version::V1_1 => v1_1::TransformerWorldPre::new(pre).map(TransformerPre::V1_1),
            _ => TransformerWorldPre::new(pre).map(TransformerPre::V1_2),
        }
        .map_err(|e| invalid(name, &digest, e))?;
        Ok(CompiledTransformer {
            name: name.into(),
            digest: digest.into(),
            code,
            imports,
            exports,
            contract,
            pre,
            random,
            quick,
        })
    }

    /// Compiles `bytes`, a provider's renderer, and checks that it exports
    /// `opm:transformer/renderer` at a version the host serves and imports nothing the sandbox
    /// does not offer; `name` names it in errors.
    pub fn compile_renderer(
        &self,
        name: &str,
        bytes: &[u8],
    ) -> Result<CompiledRenderer, CompileError> {
        let Linked {
            digest,
            code,
            contract,
            pre,
            random,
            quick,
            ..
        } = self.link(name, bytes, Role::Renderer)?;
        let pre = match contract {
            Version::V1_0 | Version::V1_1 => {
                let export = contract.export(Role::Renderer);
                let index = pre
                    .component()
                    .get_export_index(None, export)
                    .and_then(|interface| {
                        pre.component().get_export_index(Some(&interface), "render")
                    })
                    .ok_or_else(|| invalid(name, &digest, format!("{export} has no render")))?;
                Ok(RendererPre::Before1_2(contract, pre, index))
            }
            _ => RendererWorldPre::new(pre)
                .map(RendererPre::V1_2)
                .map_err(|e| invalid(name, &digest, e)),
        }?;
        Ok(CompiledRenderer {
            digest: digest.into(),
            code,
            contract,
            pre,
            random,
            quick,
        })
    }

    /// Compiles `bytes` (from the cache when it can), checks that it imports nothing the sandbox
    /// does not offer and exports the interface of `role` at a version the host serves, and
    /// links it.
    fn link(&self, name: &str, bytes: &[u8], role: Role) -> Result<Linked, CompileError> {
        let started = std::time::Instant::now();
        let hash = blake3::hash(bytes);
        let digest = format!("blake3:{}", hash.to_hex());
        let invalid = |reason: &dyn std::fmt::Display| invalid(name, &digest, reason);
        let (component, source, sandbox) = self
            .compile_component(&hash, bytes)
            .map_err(|e| invalid(&e))?;
        let component_type = component.component_type();
        let imports: Vec<String> = component_type
            .imports(&sandbox.engine)
            .map(|(name, _)| name.to_owned())
            .collect();
        let disallowed = contract::disallowed_imports(imports.iter().map(String::as_str));
        if !disallowed.is_empty() {
            return Err(invalid(&format!(
                "it imports {}, which the sandbox does not offer (allowed: {})",
                disallowed.join(", "),
                contract::allowed_imports_summary()
            )));
        }
        let exports: Vec<String> = component_type
            .exports(&sandbox.engine)
            .map(|(name, _)| name.to_owned())
            .collect();
        let Some(contract) = Version::exported(&exports, role) else {
            return Err(invalid(&contract::not_exported(role, &exports)));
        };
        let pre = sandbox
            .linker
            .instantiate_pre(&component)
            .map_err(|e| invalid(&e))?;
        Ok(Linked {
            digest,
            code: CodeReport {
                source,
                elapsed: started.elapsed(),
            },
            random: imports.iter().any(|name| name.starts_with("wasi:random/")),
            imports,
            exports,
            contract,
            pre,
            quick: !std::ptr::eq(sandbox, self),
        })
    }

    /// Runs `renderer` on `resources` under `limits`, in a fresh instance.
    pub fn render(
        &self,
        renderer: &CompiledRenderer,
        resources: &[crate::wit::renderer::Resource],
        context: &opm_core::calls::Context,
        options: &crate::wit::renderer::Options,
        limits: &Limits,
    ) -> opm_core::calls::outcome::Outcome<Vec<crate::wit::renderer::File>> {
        self.render_redacting(
            renderer,
            resources,
            context,
            options,
            limits,
            &self.redactor,
        )
    }

    /// [`render`](Self::render), what the guest says redacted by `redactor` rather than the
    /// sandbox's own: renders of several modules sharing one sandbox each redact their own
    /// sensitive values.
    pub fn render_redacting(
        &self,
        renderer: &CompiledRenderer,
        resources: &[crate::wit::renderer::Resource],
        context: &opm_core::calls::Context,
        options: &crate::wit::renderer::Options,
        limits: &Limits,
        redactor: &Arc<Redactor>,
    ) -> opm_core::calls::outcome::Outcome<Vec<crate::wit::renderer::File>> {
        let sandbox = self.running(renderer.quick);
        let limits = &Limits {
            memory: limits.memory.min(sandbox.memory_ceiling),
            ..*limits
        };
        let _slot = self.slots.acquire();
        call::render(
            &sandbox.engine,
            renderer,
            call::RenderInput {
                resources,
                context,
                options,
            },
            limits,
            sandbox.ticker.ticks(limits.timeout),
            redactor,
        )
    }

    /// Whether compiling `bytes` will be quick: their code is built into the binary or the
    /// cache has an entry for them — this engine's, or, when this sandbox is tiered, the quick
    /// sandbox's (Winch's code, which a render loads before it compiles anything). Without a
    /// cache, only the former.
    pub fn is_cached(&self, bytes: &[u8]) -> bool {
        let hash = blake3::hash(bytes);
        let has_entry = |sandbox: &Sandbox| {
            sandbox
                .cache
                .as_ref()
                .is_some_and(|cache| cache.has_entry(&sandbox.engine, &hash))
        };
        (self.optimizing && self.precompiled.is_some_and(|code| code.has_code(&hash)))
            || has_entry(self)
            || self.cache.is_some() && self.quick().is_some_and(has_entry)
    }

    /// The code precompiled into the binary of the embedded component with BLAKE3 `hash`, as
    /// decompressed, if it is one and this engine is of the compiler that made it.
    fn embedded_code(&self, hash: &blake3::Hash) -> Option<std::borrow::Cow<'static, [u8]>> {
        if !self.optimizing {
            return None;
        }
        self.precompiled?.code(hash)
    }

    /// The code of the embedded component with BLAKE3 `hash`, precompiled into the binary, if
    /// it is one and this engine can load it: the component, and its code as decompressed.
    fn embedded(
        &self,
        hash: &blake3::Hash,
    ) -> Option<(Component, std::borrow::Cow<'static, [u8]>)> {
        let code = self.embedded_code(hash)?;
        // SAFETY: `Component::deserialize` requires bytes that wasmtime's serialization made
        // for an engine compatible with this one. `code` is such bytes, as the caller of
        // `Precompiled::new` promised: made with `Engine::precompile_component`, from the
        // component whose BLAKE3 is `hash` (the key it is found by), with the configuration
        // `opm_codegen::config` gives this engine, and part of the program, which no one can
        // change without changing the program itself. wasmtime checks the compatibility again
        // from the code's own header (its version, settings and the host's CPU features) and
        // refuses a mismatch, in which case the component is compiled like any other.
        let component = unsafe { Component::deserialize(&self.engine, &code) }.ok()?;
        Some((component, code))
    }

    /// The compiled component, where its code came from, and the sandbox whose engine made it:
    /// from the cache when it holds a sound entry, else precompiled into the binary (and then
    /// cached), else compiled now (and then cached) — by the quick sandbox's Winch when this
    /// one is tiered and Winch can compile it, else by this one's compiler.
    ///
    /// The cache comes first because an entry is only read, where the binary's code is
    /// decompressed (with, the first time in a process, the dictionary it was compressed with):
    /// a few milliseconds per component against ten to thirty, most of a small warm render.
    fn compile_component(
        &self,
        hash: &blake3::Hash,
        bytes: &[u8],
    ) -> wasmtime::Result<(Component, CodeSource, &Sandbox)> {
        if let Some(component) = self
            .cache
            .as_ref()
            .and_then(|cache| cache.load(&self.engine, hash))
        {
            return Ok((component, CodeSource::Cache, self));
        }
        if let Some(cache) = &self.cache
            && let Some(code) = self.embedded_code(hash)
        {
            // Stored first, then mapped from the entry as any cached code is, rather than
            // copied into fresh memory: a first render takes less time and memory, and the
            // next finds it there.
            // SAFETY: `code` is the binary's precompiled code for the component `hash`, made
            // for this engine's configuration, as in `embedded` below, whose comment says why
            // `Component::deserialize` may load it; `store_and_load` asks the same of it.
            if let Some(component) = unsafe { cache.store_and_load(&self.engine, hash, code) } {
                return Ok((component, CodeSource::Embedded, self));
            }
        }
        if let Some((component, code)) = self.embedded(hash) {
            if let Some(cache) = &self.cache {
                cache.store_code(&self.engine, hash, &code);
            }
            return Ok((component, CodeSource::Embedded, self));
        }
        // A tiered sandbox has Winch compile what has no code yet (from its own entries in the
        // cache when it stored some before); what Winch cannot compile, Cranelift does below.
        if let Some(quick) = self.quick()
            && let Ok((component, source, _)) = quick.compile_component(hash, bytes)
        {
            let source = match source {
                CodeSource::Cache => CodeSource::CacheBaseline,
                _ => CodeSource::CompiledBaseline,
            };
            return Ok((component, source, quick));
        }
        // Held until the entry is stored, when the cache takes turns.
        let mut turn = None;
        if let Some(cache) = &self.cache {
            // Another opm compiling this component: its entry, once it is done.
            turn = cache.turn_to_compile(&self.engine, hash);
            if turn.is_some()
                && let Some(component) = cache.load(&self.engine, hash)
            {
                return Ok((component, CodeSource::Cache, self));
            }
        }
        let component = match &self.isolated {
            Some(process) => {
                let code = process
                    .compile(!self.optimizing, self.pool_limits.wasm_stack, bytes)
                    .map_err(wasmtime::Error::msg)?;
                // SAFETY: `Component::deserialize` requires bytes that wasmtime's serialization
                // made for an engine compatible with this one. `code` is such bytes: the child
                // is this very program (`/proc/self/exe`, the file this process runs even when
                // the one on disk has been replaced since), which made them with
                // `Engine::precompile_component` for an engine of `codegen::config` with this
                // engine's compiler, and wrote them whole on a pipe only it holds. Were the
                // component able to subvert the compiler, it could do so in this process just
                // as well; the child only bounds the compiler's memory and time. wasmtime checks
                // the code's header against this engine again and refuses a mismatch.
                let component = unsafe { Component::deserialize(&self.engine, &code) }?;
                if let Some(cache) = &self.cache {
                    cache.store_code(&self.engine, hash, &code);
                }
                component
            }
            None => {
                let component = Component::new(&self.engine, bytes)?;
                if let Some(cache) = &self.cache {
                    cache.store(&self.engine, hash, &component);
                }
                component
            }
        };
        drop(turn);
        Ok((component, CodeSource::Compiled, self))
    }

    /// Runs one transform of `input` (the flattened component JSON) in a fresh instance. Its
    /// memory limit is at most the one this sandbox was made with.
    pub fn call(
        &self,
        transformer: &CompiledTransformer,
        input: &String,
        context: opm_core::calls::Context,
        limits: &Limits,
    ) -> CallOutcome {
        self.call_redacting(transformer, input, context, limits, &self.redactor)
    }

    /// [`call`](Self::call), what the guest says redacted by `redactor` rather than the
    /// sandbox's own (see [`render_redacting`](Self::render_redacting)).
    pub fn call_redacting(
        &self,
        transformer: &CompiledTransformer,
        input: &String,
        context: opm_core::calls::Context,
        limits: &Limits,
        redactor: &Arc<Redactor>,
    ) -> CallOutcome {
        let mut context = context;
        // A context that names no transformer (a test's, a bench's) names the one called: a
        // component serving several transformers chooses by it.
        if context.transformer.is_empty() {
            context.transformer = transformer.name.to_string();
        }
        let sandbox = self.running(transformer.quick);
        let limits = &Limits {
            memory: limits.memory.min(sandbox.memory_ceiling),
            ..*limits
        };
        let _slot = self.slots.acquire();
        call::call(
            &sandbox.engine,
            transformer,
            input,
            context,
            limits,
            sandbox.ticker.ticks(limits.timeout),
            redactor,
        )
    }
}

/// Advances the engine's epoch every [`EPOCH_TICK`] until the sandbox is dropped, so a call
/// whose deadline is N ticks away is interrupted after about N × tick, whatever the guest does.
/// Dropping it wakes the thread rather than waiting for its next tick: a render waited for it
/// at its end, half a tick on average (benches/RESULTS.md).
struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    fn start(engine: &Engine) -> Result<Self, CompileError> {
        Self::start_every(engine, EPOCH_TICK)
    }

    fn start_every(engine: &Engine, tick: Duration) -> Result<Self, CompileError> {
        let stop = Arc::new(AtomicBool::new(false));
        let engine = engine.weak();
        let thread = std::thread::Builder::new()
            .name("opm-epoch".into())
            .spawn({
                let stop = Arc::clone(&stop);
                move || {
                    let mut next = std::time::Instant::now() + tick;
                    loop {
                        // Parked until the tick is due, or until woken to stop; a wake-up
                        // that is neither parks again.
                        let now = std::time::Instant::now();
                        if stop.load(Ordering::Acquire) {
                            break;
                        }
                        if now < next {
                            std::thread::park_timeout(next - now);
                            continue;
                        }
                        next += tick;
                        match engine.upgrade() {
                            Some(engine) => engine.increment_epoch(),
                            None => break,
                        }
                    }
                }
            })
            .map_err(|e| CompileError::Engine(format!("cannot start the epoch thread: {e}")))?;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }

    /// The number of ticks that covers `timeout` (at least one), plus one for the tick under
    /// way when the call starts; never more than [`MAX_TICKS`].
    fn ticks(&self, timeout: Duration) -> u64 {
        let ticks = (timeout.as_micros() / EPOCH_TICK.as_micros()).max(1);
        u64::try_from(ticks)
            .unwrap_or(u64::MAX)
            .saturating_add(1)
            .min(MAX_TICKS)
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dropping a sandbox wakes its epoch thread rather than waiting for the thread's next
    /// tick: with a tick of an hour, the drop returns (before, it waited for the hour).
    #[test]
    fn the_epoch_thread_stops_when_dropped_not_at_its_next_tick() {
        let engine = Engine::new(&wasmtime::Config::new()).expect("an engine");
        let ticker = Ticker::start_every(&engine, Duration::from_secs(3600)).expect("a ticker");
        drop(ticker);
    }

    /// The thread still ticks: the epoch advances while the ticker lives.
    #[test]
    fn the_epoch_thread_advances_the_epoch_every_tick() {
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        let engine = Engine::new(&config).expect("an engine");
        let ticker = Ticker::start_every(&engine, Duration::from_millis(1)).expect("a ticker");
        let mut store = wasmtime::Store::new(&engine, ());
        store.set_epoch_deadline(3);
        // (module (func (export "spin") (loop (br 0))))
        let spin_for_ever = [
            0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
            0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type: () -> ()
            0x03, 0x02, 0x01, 0x00, // one function of that type
            0x07, 0x08, 0x01, 0x04, b's', b'p', b'i', b'n', 0x00, 0x00, // export "spin"
            0x0a, 0x09, 0x01, 0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b, // loop (br 0)
        ];
        let module = wasmtime::Module::new(&engine, spin_for_ever).expect("a module");
        let instance = wasmtime::Instance::new(&mut store, &module, &[]).expect("an instance");
        let spin = instance
            .get_typed_func::<(), ()>(&mut store, "spin")
            .expect("spin");
        // Without ticks the loop would spin for ever; it is interrupted after three.
        let trap = spin.call(&mut store, ()).expect_err("interrupted");
        assert_eq!(
            trap.downcast_ref::<wasmtime::Trap>(),
            Some(&wasmtime::Trap::Interrupt)
        );
        drop(ticker);
    }

    /// The audit's finding: the tick count of a huge timeout was cast from `u128` and wrapped.
    /// It saturates instead, leaving room for the engine's current epoch to be added to it.
    #[test]
    fn the_ticks_of_a_huge_timeout_saturate() {
        let sandbox = Sandbox::new(&Limits::default()).expect("engine");
        let ticks = |timeout| sandbox.ticker.ticks(timeout);
        assert_eq!(ticks(Duration::ZERO), 2);
        assert_eq!(ticks(Duration::from_secs(2)), 401);
        let huge = [
            Duration::from_secs(1 << 40),
            Duration::from_secs(u64::MAX / 60 * 60),
            Duration::MAX,
        ];
        for pair in huge.windows(2) {
            assert!(ticks(pair[0]) <= ticks(pair[1]), "{pair:?}");
        }
        assert!(
            ticks(Duration::MAX) <= u64::MAX / 2,
            "{}",
            ticks(Duration::MAX)
        );
    }
}
