//! A transformer project: a directory with a `transformer.yaml` that says how to build its
//! component and where its test cases are (as `spin.toml` does for a Spin app), and
//! [`build`], which runs that build and checks what it produced.
//!
//! ```yaml
//! name: hello
//! language: rust
//! build: cargo build --release --target wasm32-wasip2 && cp target/wasm32-wasip2/release/hello.wasm hello.wasm
//! component: hello.wasm
//! tools:
//!   - {name: cargo, install: "install Rust from https://rustup.rs"}
//! cases: cases
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde::Deserialize;

use crate::bundle::component::{self, ComponentInfo};

/// The project manifest's file name.
pub const MANIFEST: &str = "transformer.yaml";

/// A project manifest, `transformer.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Project {
    /// The transformer's name.
    pub name: String,
    /// The language it is written in (informational: the build command is what counts).
    #[serde(default)]
    pub language: Option<String>,
    /// The build command, run with `sh -c` in the project directory.
    pub build: String,
    /// Where the build leaves the component (or a core module, which `build` makes a
    /// component), relative to the project directory.
    pub component: PathBuf,
    /// Commands the build needs on `PATH`, checked before it runs.
    #[serde(default)]
    pub tools: Vec<Tool>,
    /// The directory of test cases, relative to the project directory.
    #[serde(default = "default_cases")]
    pub cases: PathBuf,
}

/// A command a build needs, and how to get it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    /// The command's name, looked up on `PATH`.
    pub name: String,
    /// How to install it, shown when it is missing.
    pub install: String,
}

fn default_cases() -> PathBuf {
    PathBuf::from("cases")
}

/// A project directory and its manifest.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The project directory.
    pub dir: PathBuf,
    /// Its manifest.
    pub project: Project,
}

impl Loaded {
    /// The path of the built component.
    pub fn component_path(&self) -> PathBuf {
        self.dir.join(&self.project.component)
    }

    /// The path of the case directory.
    pub fn cases_dir(&self) -> PathBuf {
        self.dir.join(&self.project.cases)
    }
}

/// Reads the project in `dir`.
pub fn load(dir: &Path) -> anyhow::Result<Loaded> {
    let path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read {}: not a transformer project (create one with `opm transformer new`)",
            path.display()
        )
    })?;
    let project: Project = serde_saphyr::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), crate::yaml::message(&e)))?;
    if project.build.trim().is_empty() {
        bail!("{}: build is empty", path.display());
    }
    Ok(Loaded {
        dir: dir.to_owned(),
        project,
    })
}

/// What [`build`] produced.
#[derive(Debug, Clone)]
pub struct Built {
    /// The component's path.
    pub path: PathBuf,
    /// What it imports, exports and was made with.
    pub info: ComponentInfo,
    /// Whether the build produced a core module that `build` made a component.
    pub componentized: bool,
    /// How long the build command took.
    pub elapsed: Duration,
}

/// Runs the project's build command — its output and errors go to this process's stderr — then
/// checks the result as `opm provider pack` will: a component (a core module built with
/// wit-bindgen is made one, in place) that exports `opm:transformer/transformer@1.0.0` with the
/// contract's signature and imports nothing the sandbox does not offer.
pub fn build(loaded: &Loaded, stderr: &mut dyn Write) -> anyhow::Result<Built> {
    let project = &loaded.project;
    for tool in &project.tools {
        if find_on_path(&tool.name).is_none() {
            bail!(
                "building {} needs `{}`, which is not on PATH; {}",
                project.name,
                tool.name,
                tool.install
            );
        }
    }
    writeln!(stderr, "building {}: {}", project.name, project.build)?;
    stderr.flush()?;
    let started = Instant::now();
    let status = Command::new("sh")
        .arg("-c")
        .arg(&project.build)
        .current_dir(&loaded.dir)
        .stdin(Stdio::null())
        .stdout(child_stderr()?)
        .stderr(Stdio::inherit())
        .status()
        .context("cannot run sh for the build command")?;
    let elapsed = started.elapsed();
    if !status.success() {
        let hint = if status.code() == Some(127) {
            " (a command of it was not found: is its toolchain installed and on PATH?)"
        } else {
            ""
        };
        bail!(
            "the build command of {} failed ({status}){hint}: {}",
            project.name,
            project.build
        );
    }
    let path = loaded.component_path();
    let mut bytes = std::fs::read(&path).with_context(|| {
        format!(
            "the build command succeeded but left no component at {} (the project's `component`)",
            path.display()
        )
    })?;
    let componentized = wasmparser::Parser::is_core_wasm(&bytes);
    if componentized {
        bytes = component::componentize(&bytes).with_context(|| {
            format!(
                "{} is a core module that cannot be made a component (was it built with \
                 wit-bindgen bindings of wit/?)",
                path.display()
            )
        })?;
        crate::files::write_atomically(&path, &bytes)?;
    }
    let info = component::check(&bytes)
        .map_err(|reason| anyhow::anyhow!("{} is not a transformer: {reason}", path.display()))?;
    Ok(Built {
        path,
        info,
        componentized,
        elapsed,
    })
}

/// This process's stderr, for a child's stdout: a build's chatter is diagnostics, and opm's
/// own stdout stays clean.
fn child_stderr() -> anyhow::Result<Stdio> {
    use std::os::fd::AsFd;
    let fd = std::io::stderr().as_fd().try_clone_to_owned()?;
    Ok(Stdio::from(fd))
}

/// The first executable file called `name` in a directory of `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| {
            candidate
                .metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}
