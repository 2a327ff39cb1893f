//! Support for opm's integration tests: the guests built from `transformers/`, and
//! helpers that run the `opm` CLI in-process in a fresh temporary directory.

pub mod guests {
    //! Component bytes of every test guest, and `foreach_guest!`: constants for those
    //! `build.rs` builds, functions for those other toolchains build on first use.
    include!(concat!(env!("OUT_DIR"), "/guests.rs"));
    pub use crate::toolchain::{
        example_certificate_js, example_one_component_js, example_service_c, example_service_js,
        example_service_python, testing_c_hello,
    };
}

pub mod docker;
pub mod quadlet;
pub mod tier;
mod toolchain;

use std::path::{Path, PathBuf};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The path of `examples/hello/module.yaml`.
pub fn hello() -> String {
    repo_root()
        .join("examples/hello/module.yaml")
        .display()
        .to_string()
}

/// The names of the entries of `dir`, sorted.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("directory reads")
        .map(|entry| {
            entry
                .expect("entry reads")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// What one in-process run of the CLI printed, and its exit status.
#[derive(Debug)]
pub struct Run {
    /// Exit status.
    pub status: std::process::ExitCode,
    /// Everything written to stdout.
    pub stdout: String,
    /// Everything written to stderr.
    pub stderr: String,
}

impl Run {
    /// Whether the run exited with `code`.
    pub fn exited(&self, code: u8) -> bool {
        self.status == std::process::ExitCode::from(code)
    }
}

/// A sandbox with `limits` that loads the embedded components' precompiled code and keeps
/// what else it compiles in the compile cache the CLI would use (`opm cache dir`), so that the
/// test processes that need a component compile it once between them instead of once each.
pub fn shared_cache_sandbox(limits: &opm_sandbox::Limits) -> opm_sandbox::Sandbox {
    opm_runtime::embedded::sandbox(limits)
        .expect("engine")
        .with_cache(opm_sandbox::CompileCache::from_env(
            &opm_runtime::cli::process_env,
        ))
}

/// Runs `opm ARGS…` in-process with the process's environment.
pub fn opm<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    opm_in(args, &opm_runtime::cli::process_env)
}

/// Runs `opm ARGS…` in-process with exactly the environment variables `vars`.
pub fn opm_env<I, S>(args: I, vars: &[(&str, &str)]) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let env = |name: &str| {
        vars.iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| (*value).to_owned())
    };
    opm_in(args, &env)
}

fn opm_in<I, S>(args: I, env: &(dyn Fn(&str) -> Option<String> + Sync)) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let argv: Vec<String> = std::iter::once("opm".to_owned())
        .chain(args.into_iter().map(|a| a.as_ref().to_owned()))
        .collect();
    let status = {
        let mut out = opm_runtime::cli::Output {
            stdout: &mut stdout,
            stderr: &mut stderr,
            env,
            stderr_is_terminal: false,
            stdout_is_terminal: false,
        };
        opm_runtime::cli::run(argv, &mut out)
    };
    Run {
        status,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// The transformer of the hostile guest `testing_context`, which renders its context as a
/// ConfigMap, for the tests that add it to a provider ([`provider_with`]).
pub const SHOWS_CONTEXT: &str = "test.opm.dev/contract@v1#ContextTransformer";

/// The provider entry of [`SHOWS_CONTEXT`] whose component is `testing_context.wasm`.
pub const SHOWS_CONTEXT_ENTRY: &str = "description: Renders its context as a ConfigMap\n\
     requiredLabels: {core.opm.dev/workload-type: context}\n\
     requiredResources: [opm.dev/resources/workload@v1#Container]\n\
     component: testing_context.wasm\n";

/// A provider source directory: the embedded Kubernetes provider (its renderer too) plus
/// `extra` transformers, each given as its `provider.yaml` entry (YAML) and its component bytes.
pub fn provider_with(extra: &[(&str, &str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut provider = opm_runtime::embedded::load().expect("embedded provider loads");
    for (fqn, entry, bytes) in extra {
        let spec: opm_core::provider::TransformerSpec =
            serde_saphyr::from_str(entry).expect("extra transformer entry parses");
        write_creating_dirs(&dir.path().join(&spec.component), bytes);
        provider
            .manifest
            .transformers
            .insert((*fqn).to_owned(), spec);
    }
    for (fqn, spec) in &provider.manifest.transformers {
        let path = dir.path().join(&spec.component);
        if !path.exists() {
            write_creating_dirs(&path, &provider.components[fqn]);
        }
    }
    if let Some((spec, bytes)) = provider
        .manifest
        .renderer
        .as_ref()
        .zip(provider.renderer.as_ref())
    {
        write_creating_dirs(&dir.path().join(&spec.component), bytes);
    }
    let manifest = serde_saphyr::to_string(&provider.manifest).expect("manifest serializes");
    std::fs::write(dir.path().join("provider.yaml"), manifest).expect("write manifest");
    dir
}

/// A provider source directory of the embedded Kubernetes provider whose every component carries
/// one more custom section: the same transformers, but components whose code is not built into
/// opm, so that a render with it compiles them (or loads them from the compile cache), as it
/// would an installed provider's.
pub fn provider_not_embedded() -> tempfile::TempDir {
    let dir = provider_with(&[]);
    let mut found = 0;
    for entry in walk(dir.path()) {
        if entry.extension().is_some_and(|ext| ext == "wasm") {
            let bytes = std::fs::read(&entry).expect("read component");
            std::fs::write(&entry, with_custom_section(&bytes)).expect("write component");
            found += 1;
        }
    }
    assert!(found >= 2, "the provider has components");
    dir
}

/// `component` with a custom section `opm-test` appended: the same component to every engine,
/// with another digest.
pub fn with_custom_section(component: &[u8]) -> Vec<u8> {
    with_custom_section_named(component, "opm-test")
}

/// `component` with an empty custom section `name` (under 100 bytes) appended.
pub fn with_custom_section_named(component: &[u8], name: &str) -> Vec<u8> {
    let name = name.as_bytes();
    assert!(name.len() < 100, "a short name");
    let mut bytes = component.to_vec();
    // Section id 0 (custom), its size, then the name with its length: all under 128 bytes.
    bytes.extend([0, name.len() as u8 + 1, name.len() as u8]);
    bytes.extend(name);
    bytes
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// Writes `text` to `name` in `dir` and returns its path as a string.
pub fn write_file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write file");
    path.display().to_string()
}

fn write_creating_dirs(path: &Path, bytes: &[u8]) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create component folder");
    }
    std::fs::write(path, bytes).expect("write component");
}

/// Whether the caller, the test `name` of this test binary, is alone in its process and should
/// run: under nextest (a process per test) it is; under a runner that puts tests side by side
/// in one process (`cargo test`), this runs `name` again in a child process of its own, checks
/// that it passed, and returns false. For a test that measures or sets something of its whole
/// process (its peak memory, a `prctl` flag).
pub fn in_own_process(name: &str) -> bool {
    let own = std::env::var("NEXTEST_EXECUTION_MODE").as_deref() == Ok("process-per-test")
        || std::env::var_os("OPM_OWN_PROCESS").is_some();
    if own {
        return true;
    }
    let status = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", name, "--test-threads=1", "--nocapture"])
        .env("OPM_OWN_PROCESS", "1")
        .status()
        .expect("the test binary runs again");
    assert!(status.success(), "{name} failed in a process of its own");
    false
}
