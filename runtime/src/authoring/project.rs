//! A transformer project: a directory with a `transformer.yaml` that says how to build its
//! component and where its test cases are (as `spin.toml` does for a Spin app), and
//! [`build`], which runs that build and checks what it produced. A project with `kind:
//! renderer` builds a provider's renderer instead (`wit/transformer.wit`, `renderer-world`).
//!
//! ```yaml
//! name: hello
//! kind: transformer       # optional: transformer (the default) or renderer
//! language: rust
//! build: cargo build --release --target wasm32-wasip2 && cp target/wasm32-wasip2/release/hello.wasm hello.wasm
//! component: hello.wasm
//! tools:
//!   - {name: cargo, install: "install Rust from https://rustup.rs"}
//! cases: cases
//! provider: ..            # optional: the provider source directory it ships in (its limits)
//! module: ../module.yaml  # optional: what `opm transformer test --with kubernetes` renders
//! sources: [../common/*.py]  # optional: files beside the project that its build reads
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde::Deserialize;

use opm_core::bundle::component::{self, ComponentInfo};

/// The project manifest's file name.
pub const MANIFEST: &str = "transformer.yaml";

/// A project manifest, `transformer.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Project {
    /// The transformer's name.
    pub name: String,
    /// What the project builds: a transformer, or a provider's renderer.
    #[serde(default)]
    pub kind: Kind,
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
    /// The provider source directory the transformer ships in (its `provider.yaml` names the
    /// component this project builds), relative to the project directory: its `limits` are
    /// the test's, and `opm transformer test --with` renders with it.
    #[serde(default)]
    pub provider: Option<PathBuf>,
    /// A module that `opm transformer test --with` renders, relative to the project directory.
    #[serde(default)]
    pub module: Option<PathBuf>,
    /// Files outside the project directory that its build reads (code several projects of a
    /// provider share, `../common/*.py`): paths or globs relative to the project directory,
    /// which count beside the directory's own files when `opm transformer test` decides
    /// whether to build again ([`super::sources`]).
    #[serde(default)]
    pub sources: Vec<String>,
}

/// What a project builds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A transformer: exports `opm:transformer/transformer@1.2.0`, tested with component cases.
    #[default]
    Transformer,
    /// A provider's renderer: exports `opm:transformer/renderer@1.2.0`, tested with resource
    /// cases (`authoring::cases`).
    Renderer,
}

impl Kind {
    /// The word for it in messages.
    pub fn noun(self) -> &'static str {
        match self {
            Self::Transformer => "transformer",
            Self::Renderer => "renderer",
        }
    }
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

    /// The path of the provider source directory the transformer ships in, if named.
    pub fn provider_dir(&self) -> Option<PathBuf> {
        self.project.provider.as_ref().map(|p| self.dir.join(p))
    }

    /// The path of the module `--with` renders, if named.
    pub fn module_path(&self) -> Option<PathBuf> {
        self.project.module.as_ref().map(|m| self.dir.join(m))
    }

    /// Where `--with` keeps the expected render of the project's module: `rendered.yaml` beside
    /// it, or for a renderer the directory `rendered/`.
    pub fn rendered_path(&self) -> Option<PathBuf> {
        self.module_path()
            .map(|module| rendered_path(&module, self.project.kind))
    }
}

/// What `opm transformer test --with` compares its render of `module` with: `rendered.yaml`
/// beside it, the one stream a transformer's render prints; for a renderer, the directory
/// `rendered/` beside it, every file the renderer writes into `--out-dir`.
pub fn rendered_path(module: &Path, kind: Kind) -> PathBuf {
    let dir = module.parent().unwrap_or(Path::new("."));
    match kind {
        Kind::Transformer => dir.join("rendered.yaml"),
        Kind::Renderer => dir.join("rendered"),
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
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), opm_core::yaml::message(&e)))?;
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
/// wit-bindgen is made one, in place) that exports `opm:transformer/transformer@1.2.0` (for a
/// renderer `opm:transformer/renderer@1.2.0`) with the contract's signature and imports nothing
/// the sandbox does not offer.
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
        opm_core::files::write_atomically(&path, &bytes)?;
    }
    let info = check(&bytes, project.kind).map_err(|reason| {
        anyhow::anyhow!(
            "{} is not a {}: {reason}",
            path.display(),
            project.kind.noun()
        )
    })?;
    Ok(Built {
        path,
        info,
        componentized,
        elapsed,
    })
}

/// Checks `bytes` as a component of a `kind` project, as `opm provider pack` will; a component
/// of the other kind is named as such, with the line of `transformer.yaml` that says so.
pub fn check(bytes: &[u8], kind: Kind) -> Result<ComponentInfo, String> {
    let (checked, other) = match kind {
        Kind::Transformer => (component::check(bytes), component::check_renderer(bytes)),
        Kind::Renderer => (component::check_renderer(bytes), component::check(bytes)),
    };
    checked.map_err(|reason| match (other, kind) {
        (Ok(_), Kind::Transformer) => {
            format!("{reason}; it is a renderer (say `kind: renderer` in {MANIFEST})")
        }
        (Ok(_), Kind::Renderer) => {
            format!("{reason}; it is a transformer (leave `kind: renderer` out of {MANIFEST})")
        }
        (Err(_), _) => reason.to_string(),
    })
}

/// Whether the project's component is newer than every one of its sources, as `make` decides
/// ([`super::sources::freshness`]): then `opm transformer test` tests it without building it
/// again. A JavaScript or Python build bundles an interpreter and gives different bytes each
/// time, so a needless rebuild also costs the compile of a new component. The sources are
/// every file of the project directory and of its `sources:`, except what builds and tests
/// leave behind or belong to other tools: the component itself, the case folders, hidden
/// entries (`.git`, `.venv`), `target/`, `node_modules/`, `__pycache__/`, packed bundles with
/// their signatures, and the `rendered.yaml` (for a renderer, `rendered/`) that `--bless`
/// records beside the project's module. `false` when the component is missing or a source
/// cannot be read.
pub fn up_to_date(loaded: &Loaded) -> bool {
    matches!(
        super::sources::freshness(loaded),
        Ok(super::sources::Freshness::Fresh)
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    /// A project in a temporary directory whose files all date from an hour ago.
    fn project(files: &[&str]) -> (tempfile::TempDir, Loaded) {
        let dir = tempfile::tempdir().expect("temp dir");
        let loaded = Loaded {
            dir: dir.path().to_owned(),
            project: Project {
                name: "hello".into(),
                kind: Kind::Transformer,
                language: None,
                build: "true".into(),
                component: "hello.wasm".into(),
                tools: Vec::new(),
                cases: "cases".into(),
                provider: None,
                module: None,
                sources: Vec::new(),
            },
        };
        for file in files {
            write_at(
                &dir.path().join(file),
                SystemTime::now() - Duration::from_secs(3600),
            );
        }
        (dir, loaded)
    }

    fn write_at(path: &Path, time: SystemTime) {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        let file = std::fs::File::create(path).expect("create");
        file.set_modified(time).expect("set mtime");
    }

    #[test]
    fn a_component_newer_than_every_source_is_up_to_date() {
        let (dir, loaded) = project(&["transformer.yaml", "app.py", "wit/world.wit"]);
        assert!(!up_to_date(&loaded), "no component yet");
        write_at(&dir.path().join("hello.wasm"), SystemTime::now());
        assert!(up_to_date(&loaded));
    }

    #[test]
    fn a_source_changed_after_the_build_makes_it_stale_at_any_depth() {
        for source in [
            "app.py",
            "transformer.yaml",
            "wit/deps/world.wit",
            "src/lib.rs",
        ] {
            let (dir, loaded) = project(&["transformer.yaml", "app.py"]);
            let built = SystemTime::now() - Duration::from_secs(60);
            write_at(&dir.path().join("hello.wasm"), built);
            write_at(&dir.path().join(source), SystemTime::now());
            assert!(!up_to_date(&loaded), "{source} changed");
        }
    }

    #[test]
    fn what_builds_tests_and_other_tools_leave_behind_is_not_a_source() {
        let (dir, loaded) = project(&["transformer.yaml", "app.py"]);
        write_at(
            &dir.path().join("hello.wasm"),
            SystemTime::now() - Duration::from_secs(60),
        );
        for left in [
            "__pycache__/render.cpython-311.pyc",
            "node_modules/x/index.js",
            "target/release/hello.wasm",
            ".venv/bin/python",
            ".git/index",
            "cases/one/expected.json",
            "hello.opmb",
            "hello.opmb.minisig",
        ] {
            write_at(&dir.path().join(left), SystemTime::now());
        }
        assert!(up_to_date(&loaded));
    }
}
