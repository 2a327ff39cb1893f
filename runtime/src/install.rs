//! Compiling what `opm provider init` and `opm provider pull` install, so that no render of it
//! compiles: quick code now, Cranelift's behind it in the background.
//!
//! [`compile_into_cache`] compiles every component of a provider — each transformer's and the
//! renderer's — into the compile cache, in parallel. With [`Compiler::Tiered`], what both
//! commands use by default, it takes Cranelift's code wherever there is some already (built
//! into opm, or in the cache) and compiles the rest with Winch, several times faster (a 17 MiB
//! Python component in some 2 s rather than 15–30 s: `benches/RESULTS.md`, "Installing
//! interpreted providers"); those components are the [`Compiled::pending`] ones.
//! [`optimize_in_background`] then hands them to a detached `opm __optimize` ([`SUBCOMMAND`],
//! which no user types; [`serve`] is its work), which compiles them with Cranelift into the same
//! cache and exits. A render prefers Cranelift's code as soon as the cache holds it
//! (`opm_sandbox::Sandbox` loads its own engine's entry before it looks for Winch's), so renders
//! get the faster code without anyone waiting for it. With [`Compiler::Optimizing`]
//! (`--optimized`) every component is compiled with Cranelift before the command returns: what a
//! CI image that bakes the compile cache wants.
//!
//! The background compile:
//!
//! - is this same program (`/proc/self/exe`, the compile children's program:
//!   `opm_sandbox::isolated`), started with an environment of the cache's directory and key and
//!   the compiler's limits only, reading the components on stdin, all of them before it starts;
//! - is detached: it starts a session of its own (`setsid`), so neither a hangup of the terminal
//!   nor a Ctrl-C meant for the command that started it reaches it, and it outlives that
//!   command; its stdout and stderr are `/dev/null`, so it never prints to the terminal, and a
//!   component it cannot compile is left to renders, which keep Winch's code (`--verbose` says
//!   `cache-winch`);
//! - runs at the lowest priority (nice 19) and compiles one component at a time, each as every
//!   compile of `opm` is: in a child `opm __compile` under the memory limit and deadline of
//!   `opm_sandbox::isolated`;
//! - races safely: cache entries are written to a temporary file and renamed, never seen half
//!   written, and processes compiling the same component take turns through the cache's lock
//!   file beside its entry (`CompileCache::turn_to_compile`), so two background compiles, or one
//!   and an `init --optimized`, compile each component once and the other loads its entry.
//!
//! Without a cache nothing is kept, so nothing is started: the components are compiled as the
//! check that they can be. A program that runs the CLI in its own process (no compile children,
//! no `opm` to start) compiles with Cranelift at once instead.
//!
//! ```no_run
//! use opm_runtime::install;
//! let provider = opm_runtime::embedded::load()?;
//! let cache = opm_sandbox::CompileCache::from_env(&opm_runtime::cli::process_env);
//! let compiled = install::compile_into_cache(&provider, cache, opm_sandbox::Compiler::Tiered)?;
//! assert!(compiled.pending.is_empty(), "the embedded provider's code is built in");
//! # Ok::<(), anyhow::Error>(())
//! ```

use std::io::Read;
use std::process::{Command, ExitCode, Stdio};

use anyhow::Context as _;
use rayon::prelude::*;

use opm_core::bundle::Blob;
use opm_core::provider::{self, Provider};
use opm_sandbox::{CodeSource, CompileCache, Compiler, Sandbox};

/// The hidden first argument that makes `opm` a background compile ([`serve`]).
pub const SUBCOMMAND: &str = "__optimize";

/// The niceness the background compile runs at: the lowest priority.
const NICENESS: i32 = 19;

/// The most components one background compile takes.
const MAX_PENDING: usize = 4096;

/// A component whose code in the cache is Winch's, not yet Cranelift's.
#[derive(Clone)]
pub struct Pending {
    /// Whether it is a renderer's component (else a transformer's).
    pub renderer: bool,
    /// Its bytes.
    pub bytes: Blob,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("renderer", &self.renderer)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// What [`compile_into_cache`] did with a provider's components.
#[derive(Debug, Clone, Default)]
pub struct Compiled {
    /// Components compiled now (and stored in the cache, when there is one).
    pub compiled: usize,
    /// Components whose code was there already: in the cache, or built into opm.
    pub had: usize,
    /// The components whose code is Winch's, once each: what Cranelift should compile next.
    pub pending: Vec<Pending>,
}

/// Compiles every component of `provider` — each transformer's and the renderer's — into
/// `cache` with `compiler`, on the current rayon pool, with a progress line on a terminal. A
/// component that does not compile is an error that names it. Without a cache, each is compiled
/// all the same, as the check that it can be.
pub fn compile_into_cache(
    provider: &Provider,
    cache: Option<CompileCache>,
    compiler: Compiler,
) -> anyhow::Result<Compiled> {
    let sandbox = Sandbox::with_compiler(&opm_sandbox::Limits::default(), compiler)?
        .with_precompiled(&crate::embedded::CODE)
        .with_cache(cache);
    let mut components: Vec<(&str, &Blob, bool)> = provider
        .components
        .iter()
        .map(|(fqn, bytes)| (fqn.as_str(), bytes, false))
        .collect();
    if let Some(renderer) = &provider.renderer {
        components.push((provider::RENDERER, renderer, true));
    }
    // A component several transformers name is compiled, and counted, once.
    let components: Vec<(&str, &Blob, bool)> =
        crate::render::build::distinct_components(&components, |(_, bytes, _)| &bytes[..])
            .0
            .into_iter()
            .copied()
            .collect();
    let progress = opm_core::progress::compiling("into the compile cache", || {
        let mut seen = std::collections::HashSet::new();
        components
            .iter()
            .filter(|(_, bytes, _)| seen.insert(&bytes[..]))
            .filter(|(_, bytes, _)| !sandbox.is_cached(bytes))
            .map(|(_, bytes, _)| bytes.len())
            .collect()
    });
    let sources = components
        .par_iter()
        .map(|(name, bytes, renderer)| {
            let code = if *renderer {
                sandbox.compile_renderer(name, bytes).map(|c| c.code)
            } else {
                sandbox.compile(name, bytes).map(|c| c.code)
            };
            code.with_context(|| format!("provider {}", provider.origin))
        })
        .collect::<anyhow::Result<Vec<_>>>();
    drop(progress);
    let mut done = Compiled::default();
    let mut seen = std::collections::HashSet::new();
    for (code, (_, bytes, renderer)) in sources?.iter().zip(&components) {
        match code.source {
            CodeSource::Compiled | CodeSource::CompiledBaseline => done.compiled += 1,
            CodeSource::Embedded | CodeSource::Cache | CodeSource::CacheBaseline => done.had += 1,
        }
        let quick = matches!(
            code.source,
            CodeSource::CompiledBaseline | CodeSource::CacheBaseline
        );
        if quick && seen.insert(&bytes[..]) {
            done.pending.push(Pending {
                renderer: *renderer,
                bytes: (*bytes).clone(),
            });
        }
    }
    Ok(done)
}

/// Whether this process can start a background compile: it is the `opm` binary, whose compiles
/// run in children of itself ([`opm_sandbox::isolated::use_children`]), rather than a program
/// that runs the CLI in its own process.
pub fn can_optimize_in_background() -> bool {
    opm_sandbox::isolated::children().is_some()
}

/// Starts the background compile of `pending` into the cache `env` names (see the module's
/// guide) and returns its process id once it has all of them; it is not waited for. An error
/// says why it could not start: the components then keep Winch's code until a render with
/// `--optimized` or an `init --optimized` compiles them.
pub fn optimize_in_background(
    pending: &[Pending],
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<u32> {
    let process = opm_sandbox::isolated::children()
        .context("this program compiles in its own process, not in opm's children")?;
    let dir = CompileCache::default_dir(env).context("there is no compile cache")?;
    let key = CompileCache::default_key_file(env).context("there is no compile cache key")?;
    let mut command = Command::new(&process.program);
    // `ps` shows `opm __optimize`, not the `/proc/self/exe` it was started through.
    std::os::unix::process::CommandExt::arg0(&mut command, "opm");
    command
        .arg(SUBCOMMAND)
        .env_clear()
        .env("OPM_CACHE_DIR", dir)
        .env("OPM_CACHE_KEY", key)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for name in [
        opm_sandbox::isolated::MEMORY_VAR,
        opm_sandbox::isolated::TIMEOUT_VAR,
    ] {
        if let Some(value) = env(name) {
            command.env(name, value);
        }
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot start {} {SUBCOMMAND}", process.program.display()))?;
    let id = child.id();
    let mut stdin = child
        .stdin
        .take()
        .context("no pipe to the background compile")?;
    // The child reads every component before it compiles any, so this returns as soon as the
    // pipe has carried them.
    let written = write_pending(&mut stdin, pending);
    drop(stdin);
    if let Err(error) = written {
        let _ = child.kill();
        let _ = child.wait();
        return Err(error).context("cannot hand the components to the background compile");
    }
    Ok(id)
}

/// The background compile, `opm __optimize`: detaches from the terminal's session, lowers its
/// priority, reads the components [`optimize_in_background`] writes on stdin, and compiles each
/// with Cranelift into the cache `env` names, one at a time. It prints nothing (its stdout and
/// stderr are `/dev/null`); the exit status says whether every component was compiled.
pub fn serve(env: &dyn Fn(&str) -> Option<String>) -> ExitCode {
    // Not a session leader, having been started as a child: this cannot fail but for that.
    let _ = rustix::process::setsid();
    // Before any thread starts, so that every thread and child inherits it.
    let _ = rustix::process::setpriority_process(None, NICENESS);
    let Ok(pending) = read_pending(std::io::stdin().lock()) else {
        return ExitCode::FAILURE;
    };
    let Some(cache) = CompileCache::from_env(env) else {
        return ExitCode::FAILURE;
    };
    let Ok(sandbox) = Sandbox::with_compiler(&opm_sandbox::Limits::default(), Compiler::Optimizing)
    else {
        return ExitCode::FAILURE;
    };
    let sandbox = sandbox
        .with_precompiled(&crate::embedded::CODE)
        .with_cache(Some(cache));
    let mut failed = false;
    for component in &pending {
        let compiled = if component.renderer {
            sandbox
                .compile_renderer(SUBCOMMAND, &component.bytes)
                .map(drop)
        } else {
            sandbox.compile(SUBCOMMAND, &component.bytes).map(drop)
        };
        failed |= compiled.is_err();
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Writes `pending` as [`read_pending`] reads it.
fn write_pending(out: &mut impl std::io::Write, pending: &[Pending]) -> std::io::Result<()> {
    for component in pending {
        out.write_all(&[u8::from(component.renderer)])?;
        out.write_all(&(component.bytes.len() as u64).to_le_bytes())?;
        out.write_all(&component.bytes)?;
    }
    out.flush()
}

/// The components on `input`: each a byte (1 for a renderer's, 0 for a transformer's), its
/// length as eight bytes little-endian, and its bytes; at most [`MAX_PENDING`] of them, each at
/// most a bundle's largest component.
fn read_pending(mut input: impl Read) -> std::io::Result<Vec<Pending>> {
    let too_much = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
    let mut pending = Vec::new();
    loop {
        let mut role = [0u8; 1];
        if input.read(&mut role)? == 0 {
            return Ok(pending);
        }
        if pending.len() == MAX_PENDING {
            return Err(too_much("too many components"));
        }
        let mut length = [0u8; 8];
        input.read_exact(&mut length)?;
        let length = u64::from_le_bytes(length);
        if length > opm_core::bundle::format::MAX_COMPONENT_BYTES {
            return Err(too_much("a component larger than a bundle may hold"));
        }
        let mut bytes = vec![0; length as usize];
        input.read_exact(&mut bytes)?;
        pending.push(Pending {
            renderer: role[0] == 1,
            bytes: Blob::Shared(bytes.into()),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the parent writes, the child reads back whole, in order; a frame cut short or too
    /// large is refused.
    #[test]
    fn the_components_cross_the_pipe_whole() {
        let pending = [
            Pending {
                renderer: false,
                bytes: Blob::Static(b"\0asm one"),
            },
            Pending {
                renderer: true,
                bytes: Blob::Static(b""),
            },
        ];
        let mut wire = Vec::new();
        write_pending(&mut wire, &pending).expect("writes");
        let read = read_pending(&wire[..]).expect("reads");
        assert_eq!(read.len(), 2);
        assert!(!read[0].renderer && read[1].renderer);
        assert_eq!(&read[0].bytes[..], b"\0asm one");
        assert!(read[1].bytes.is_empty());
        assert!(read_pending(&wire[..wire.len() - 14]).is_err(), "cut short");
        let mut huge = vec![0];
        huge.extend(u64::MAX.to_le_bytes());
        assert!(read_pending(&huge[..]).is_err(), "too large");
    }
}
