//! Compiling a component in a child process, under a memory limit and a deadline.
//!
//! wasmtime bounds what a guest's code may do when it runs, but not what compiling it costs:
//! Cranelift's and Winch's memory grows with the shape of each function, and a component of
//! many large functions can take a compile past any figure. The load check refuses a function
//! over 1 MiB (`bundle::component`), which is what stops a single pathological body; what is
//! left — many bodies just under it — is bounded here. Each compile runs in a child `opm`
//! (`opm __compile`, which no user types) whose data segment is limited with `RLIMIT_DATA`
//! to [`CompileProcess::memory`] and which is killed at [`CompileProcess::timeout`]; the child
//! reads the component on stdin and writes wasmtime's serialized code on stdout, which the
//! parent loads into its own engine. A compile that needs more fails that one component, naming
//! the limit, and the render goes on with the others.
//!
//! The `opm` binary turns this on for every sandbox it makes ([`use_children`]); a program
//! that links this library and makes its own sandboxes compiles in its own process unless it
//! gives one ([`Sandbox::with_compile_process`](super::Sandbox::with_compile_process)).

use std::io::{Read, Write as _};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The hidden first argument that makes `opm` a compiler child.
pub const SUBCOMMAND: &str = "__compile";

/// The most memory a compile may have by default: 3 GiB, several times what Cranelift's largest
/// compile of this project's own components needs (benches/RESULTS.md, "Compiling in a
/// child").
pub const DEFAULT_MEMORY: u64 = 3 << 30;

/// The longest a compile may take by default: ten minutes, ten times Cranelift's slowest compile
/// of an interpreted component on two cores.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// The environment variable that sets [`CompileProcess::memory`], in MiB.
pub const MEMORY_VAR: &str = "OPM_COMPILE_MEMORY";

/// The environment variable that sets [`CompileProcess::timeout`], in seconds.
pub const TIMEOUT_VAR: &str = "OPM_COMPILE_TIMEOUT";

/// The most a child may write on stderr that the parent keeps for its error.
const MAX_CHILD_STDERR: u64 = 4 << 10;

/// How often the parent looks whether the child has finished.
const POLL: Duration = Duration::from_millis(5);

/// A program that compiles components as `opm __compile` does, and its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileProcess {
    /// The program: an `opm` binary, or any that answers [`SUBCOMMAND`] with [`serve`].
    pub program: PathBuf,
    /// The child's `RLIMIT_DATA`, in bytes.
    pub memory: u64,
    /// How long the child may run before it is killed.
    pub timeout: Duration,
}

static DEFAULT: OnceLock<CompileProcess> = OnceLock::new();

/// Makes every sandbox made from now on in this process compile in children of `process`
/// (what the `opm` binary does first). Only the first call counts.
pub fn use_children(process: CompileProcess) {
    let _ = DEFAULT.set(process);
}

/// The compile process sandboxes are made with, if [`use_children`] gave one.
pub(super) fn default_process() -> Option<CompileProcess> {
    DEFAULT.get().cloned()
}

/// The compile process [`use_children`] gave this process, if any: in the `opm` binary, the
/// binary itself, which `opm provider init` also starts its background compile with.
pub fn children() -> Option<CompileProcess> {
    default_process()
}

impl CompileProcess {
    /// `program` with the limits `env` sets ([`MEMORY_VAR`], [`TIMEOUT_VAR`]), else the
    /// defaults; an error names a variable whose value is not a positive number.
    pub fn from_env(
        program: PathBuf,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let number = |name: &str| -> Result<Option<f64>, String> {
            let Some(text) = env(name) else {
                return Ok(None);
            };
            match text.trim().parse::<f64>() {
                Ok(value) if value > 0.0 && value.is_finite() => Ok(Some(value)),
                _ => Err(format!(
                    "{name}={}: not a positive number",
                    opm_core::printable::truncate(&text, 40)
                )),
            }
        };
        let memory = number(MEMORY_VAR)?.map_or(DEFAULT_MEMORY, |mib| (mib * 1048576.0) as u64);
        let timeout = number(TIMEOUT_VAR)?.map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64);
        Ok(Self {
            program,
            memory,
            timeout,
        })
    }

    /// The `opm` binary this process runs, as the kernel holds it (so that a binary replaced
    /// on disk during a run still compiles with the same code as the one running).
    pub fn this_program() -> PathBuf {
        let own = PathBuf::from("/proc/self/exe");
        if own.exists() {
            own
        } else {
            std::env::current_exe().unwrap_or(own)
        }
    }

    /// Compiles `bytes` in a child with Winch when `baseline`, else Cranelift, for an engine
    /// whose stack limit is `wasm_stack`: the serialized code, or why not in a sentence.
    pub(super) fn compile(
        &self,
        baseline: bool,
        wasm_stack: usize,
        bytes: &[u8],
    ) -> Result<Vec<u8>, String> {
        let mut command = Command::new(&self.program);
        command
            .arg(SUBCOMMAND)
            .arg(if baseline { "baseline" } else { "optimizing" })
            .arg(self.memory.to_string())
            .arg(wasm_stack.to_string())
            .env_clear()
            // mimalloc commits each arena it reserves (a gibibyte) up front where the kernel
            // overcommits; committed on use instead, the data segment is what the compiler uses.
            .env("MIMALLOC_ARENA_EAGER_COMMIT", "0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start the compiler {}: {e}", self.program.display()))?;
        let started = Instant::now();
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("the compiler's pipes were not opened".into());
        };
        let limit = self.memory;
        let (code, text, status) = std::thread::scope(|scope| {
            let writer = scope.spawn(move || stdin.write_all(bytes));
            let code = scope.spawn(move || read_bounded(stdout, limit));
            let text = scope.spawn(move || read_bounded(stderr, MAX_CHILD_STDERR));
            let status = loop {
                match child.try_wait() {
                    Ok(Some(status)) => break Ok(status),
                    Ok(None) if started.elapsed() >= self.timeout => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break Err(format!(
                            "compiling took longer than {} s, the limit ({TIMEOUT_VAR})",
                            self.timeout.as_secs_f64()
                        ));
                    }
                    Ok(None) => std::thread::sleep(POLL),
                    Err(e) => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break Err(format!("cannot wait for the compiler: {e}"));
                    }
                }
            };
            // The child is gone: its pipes are closed and every reader and the writer end.
            let _ = writer.join();
            let code = code.join().unwrap_or(Err(Overflow));
            let text = text.join().unwrap_or(Err(Overflow));
            (code, text, status)
        });
        let status = status?;
        let text = text.map_or_else(|Overflow| String::new(), |text| lossy(&text));
        if status.success() {
            return code.map_err(|Overflow| {
                format!(
                    "the compiler wrote more than {} MiB of code",
                    self.memory >> 20
                )
            });
        }
        use std::os::unix::process::ExitStatusExt as _;
        if status.signal().is_some()
            || text.contains("memory allocation")
            || text.contains("out of memory")
        {
            return Err(format!(
                "compiling needed more than {} MiB, the limit ({MEMORY_VAR})",
                self.memory >> 20
            ));
        }
        Err(format!(
            "the compiler failed ({status}): {}",
            if text.is_empty() {
                "it said nothing"
            } else {
                text.trim_end()
            }
        ))
    }
}

/// A stream that went on past its limit.
#[derive(Debug, Clone, Copy)]
struct Overflow;

/// Everything `stream` gives, if it is at most `limit` bytes.
fn read_bounded(stream: impl Read, limit: u64) -> Result<Vec<u8>, Overflow> {
    let mut bytes = Vec::new();
    let mut stream = stream.take(limit.saturating_add(1));
    stream.read_to_end(&mut bytes).map_err(|_| Overflow)?;
    if bytes.len() as u64 > limit {
        return Err(Overflow);
    }
    Ok(bytes)
}

/// The child's words, escaped for a terminal and cut to length.
fn lossy(bytes: &[u8]) -> String {
    opm_core::printable::escape(&String::from_utf8_lossy(bytes)).into_owned()
}

/// The child: `opm __compile COMPILER MEMORY WASM_STACK` limits its own data segment to
/// MEMORY bytes, reads a component on stdin, compiles it for the engine the sandbox makes with
/// COMPILER (`baseline` or `optimizing`) and WASM_STACK, and writes the serialized code on
/// stdout. `args` are the program's arguments after [`SUBCOMMAND`].
pub fn serve(args: &[String]) -> ExitCode {
    match serve_inner(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "opm {SUBCOMMAND}: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn serve_inner(args: &[String]) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let [compiler, memory, wasm_stack] = args else {
        anyhow::bail!(
            "expected COMPILER MEMORY WASM_STACK, got {} arguments",
            args.len()
        );
    };
    let baseline = match compiler.as_str() {
        "baseline" => true,
        "optimizing" => false,
        other => anyhow::bail!("unknown compiler {other:?}"),
    };
    let memory: u64 = memory.parse().context("MEMORY")?;
    let wasm_stack: usize = wasm_stack.parse().context("WASM_STACK")?;
    // wasmtime compiles on rayon's global threads: they are started before the limit, whose
    // count their stacks would join, so that a compile past it fails at an allocation, which
    // says so, rather than at starting a thread, which panics with no word of memory.
    let _ = rayon::ThreadPoolBuilder::new().build_global();
    rustix::process::setrlimit(
        rustix::process::Resource::Data,
        rustix::process::Rlimit {
            current: Some(memory),
            maximum: Some(memory),
        },
    )
    .context("cannot limit the compiler's memory")?;
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(opm_core::bundle::format::MAX_COMPONENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .context("cannot read the component")?;
    let mut config = opm_codegen::config(baseline);
    config.max_wasm_stack(wasm_stack);
    let engine = wasmtime::Engine::new(&config).map_err(|e| anyhow::anyhow!("{e:#}"))?;
    let code = engine
        .precompile_component(&bytes)
        .map_err(|e| anyhow::anyhow!("{e:#}"))?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&code)?;
    stdout.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limits_come_from_the_environment_or_are_the_defaults() {
        let program = PathBuf::from("opm");
        let none = CompileProcess::from_env(program.clone(), &|_| None).unwrap();
        assert_eq!(
            (none.memory, none.timeout),
            (DEFAULT_MEMORY, DEFAULT_TIMEOUT)
        );
        let set = CompileProcess::from_env(program.clone(), &|name| {
            Some(if name == MEMORY_VAR { "64" } else { "0.5" }.into())
        })
        .unwrap();
        assert_eq!(
            (set.memory, set.timeout),
            (64 << 20, Duration::from_millis(500))
        );
        for bad in ["0", "-1", "lots", "NaN", "inf"] {
            let error = CompileProcess::from_env(program.clone(), &|name| {
                (name == TIMEOUT_VAR).then(|| bad.to_owned())
            })
            .unwrap_err();
            assert_eq!(error, format!("{TIMEOUT_VAR}={bad}: not a positive number"));
        }
    }
}
