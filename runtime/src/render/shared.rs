//! What several renders in one process share (`opm platform build`): the render threads, one
//! sandbox, and each component compiled once for all of them ([`Shared`]).
//!
//! One render alone makes its own sandbox, sized for its calls. Five hundred renders each with
//! their own would each set up an engine, an instance pool and a ticker thread, and load the
//! code of the same components five hundred times; with one [`Shared`], a component is loaded
//! (from the binary, the compile cache, or a compile) the first time any render calls it, and
//! every later render calls the same code. What a guest says is still redacted by the
//! sensitive values of the render that called it ([`Code::redactor`]), never another's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use opm_core::redact::Redactor;
use opm_sandbox::{CompileError, CompiledRenderer, CompiledTransformer, Limits, Sandbox};

/// Each component compiled once: by name and BLAKE3 of its bytes, the compile (or why it
/// failed), made by the first render that asks while the others wait for it.
type Memo<T> = Mutex<HashMap<(String, blake3::Hash), Arc<OnceLock<Result<T, CompileError>>>>>;

/// The threads, the sandbox and the compiled components several renders share.
pub struct Shared {
    pub(super) pool: Arc<rayon::ThreadPool>,
    sandbox: Sandbox,
    transformers: Memo<CompiledTransformer>,
    renderers: Memo<CompiledRenderer>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

impl Shared {
    /// One sandbox on `pool`'s threads whose calls may use up to `ceiling` (the most any of the
    /// renders' calls and renderers may: see [`super::Planning::ceiling`]), compiling with
    /// `request`'s compiler into its cache.
    pub fn new(
        pool: Arc<rayon::ThreadPool>,
        ceiling: &Limits,
        request: &super::Request,
    ) -> anyhow::Result<Self> {
        let sandbox = pool.install(|| {
            Sandbox::with_compiler(ceiling, request.compiler).map(|sandbox| {
                sandbox
                    .with_precompiled(&crate::embedded::CODE)
                    .with_cache(request.cache.clone())
            })
        })?;
        Ok(Self {
            pool,
            sandbox,
            transformers: Mutex::default(),
            renderers: Mutex::default(),
        })
    }

    /// The render threads.
    pub fn pool(&self) -> &Arc<rayon::ThreadPool> {
        &self.pool
    }

    /// The sandbox, for a render whose sensitive values `redactor` holds.
    pub(super) fn code<'a>(&'a self, redactor: &'a Arc<Redactor>) -> Code<'a> {
        Code {
            sandbox: &self.sandbox,
            shared: Some((self, redactor)),
        }
    }
}

/// The memoized compile of `name` with `bytes` in `memo`, made by `compile` if none has been.
fn once<T: Clone>(
    memo: &Memo<T>,
    name: &str,
    bytes: &[u8],
    compile: impl FnOnce() -> Result<T, CompileError>,
) -> Result<T, CompileError> {
    let slot = {
        let mut memo = memo
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(
            memo.entry((name.to_owned(), blake3::hash(bytes)))
                .or_default(),
        )
    };
    slot.get_or_init(compile).clone()
}

/// Where a render compiles and runs its components: a sandbox of its own, or the one of a
/// [`Shared`] with the render's redactor.
#[derive(Clone, Copy)]
pub(crate) struct Code<'a> {
    pub(crate) sandbox: &'a Sandbox,
    shared: Option<(&'a Shared, &'a Arc<Redactor>)>,
}

impl<'a> Code<'a> {
    /// A render's own sandbox (which redacts with its own redactor).
    pub(crate) fn own(sandbox: &'a Sandbox) -> Self {
        Self {
            sandbox,
            shared: None,
        }
    }

    /// The redactor the render's calls are redacted with when the sandbox is shared.
    pub(crate) fn redactor(&self) -> Option<&'a Arc<Redactor>> {
        self.shared.map(|(_, redactor)| redactor)
    }

    /// The transformer `name`, compiled (once, when the sandbox is shared).
    pub(crate) fn compile(
        &self,
        name: &str,
        bytes: &[u8],
    ) -> Result<CompiledTransformer, CompileError> {
        match self.shared {
            Some((shared, _)) => once(&shared.transformers, name, bytes, || {
                self.sandbox.compile(name, bytes)
            }),
            None => self.sandbox.compile(name, bytes),
        }
    }

    /// The renderer `name`, compiled (once, when the sandbox is shared).
    pub(crate) fn compile_renderer(
        &self,
        name: &str,
        bytes: &[u8],
    ) -> Result<CompiledRenderer, CompileError> {
        match self.shared {
            Some((shared, _)) => once(&shared.renderers, name, bytes, || {
                self.sandbox.compile_renderer(name, bytes)
            }),
            None => self.sandbox.compile_renderer(name, bytes),
        }
    }

    /// Whether `bytes` compile quickly (see [`Sandbox::is_cached`]); a component a shared
    /// sandbox compiled already does.
    pub(crate) fn is_cached(&self, name: &str, bytes: &[u8]) -> bool {
        let memoized = self.shared.is_some_and(|(shared, _)| {
            shared
                .transformers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(&(name.to_owned(), blake3::hash(bytes)))
                .is_some_and(|slot| slot.get().is_some())
        });
        memoized || self.sandbox.is_cached(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two renders of one [`Shared`] that call the same component get the one compile: the
    /// same compiled transformer (its name is one allocation), each with its own redactor.
    #[test]
    fn a_component_is_compiled_once_for_every_render_of_a_shared_sandbox() {
        let provider = crate::embedded::PROVIDERS
            .load()
            .expect("the embedded provider");
        let (fqn, bytes) = provider.components.iter().next().expect("a transformer");
        let pool = Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(2)
                .build()
                .expect("threads"),
        );
        let request = super::super::Request::new("");
        let shared = Shared::new(pool, &Limits::default(), &request).expect("a sandbox");
        let (first, second) = (
            Arc::new(Redactor::new(["first-render-secret".to_owned()])),
            Arc::new(Redactor::new(["second-render-secret".to_owned()])),
        );
        let a = shared.code(&first).compile(fqn, bytes).expect("compiles");
        let b = shared.code(&second).compile(fqn, bytes).expect("compiles");
        assert!(Arc::ptr_eq(&a.name, &b.name), "compiled twice");
        assert!(shared.code(&second).is_cached(fqn, bytes));
        assert!(Arc::ptr_eq(
            shared.code(&second).redactor().unwrap(),
            &second
        ));
        // Another name for the same bytes is a transformer of its own.
        let c = shared
            .code(&first)
            .compile("other.example/x@v1#X", bytes)
            .expect("compiles");
        assert!(!Arc::ptr_eq(&a.name, &c.name));
    }
}
