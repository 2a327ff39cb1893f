//! The example ServiceTransformer of `transformers/examples/service/` in JavaScript, Python and C,
//! each built from source with its language's own toolchain, its WASI imports left as the
//! toolchain makes them. (The Rust twin is a crate of the guest workspace, built with the testing
//! crates.)
//!
//! - JavaScript: `node build.mjs OUT` in `js/`, which runs componentize-js from `js/node_modules`
//!   (`npm ci` there installs the version `package-lock.json` pins);
//! - Python: `componentize-py` (`$COMPONENTIZE_PY`, else on `PATH`; pinned by `tests/setup.sh`);
//! - C: clang and wasi-libc, like `transformers/testing/c-hello`.

use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, bail};

use crate::c_guest;

/// The example's directory, relative to the repository.
const DIR: &str = "transformers/examples/service";

/// Builds the JavaScript, Python and C twins; returns each language's component.
pub fn build(repo: &Path, out_dir: &Path) -> anyhow::Result<Vec<(&'static str, Vec<u8>)>> {
    let dir = repo.join(DIR);
    let work = out_dir.join("examples");
    std::fs::create_dir_all(&work)?;
    Ok(vec![
        ("js", javascript(&dir.join("js"), &work)?),
        (
            "python",
            python(&dir.join("python"), &repo.join("wit"), &work)?,
        ),
        (
            "c",
            c_guest::build(
                repo,
                out_dir,
                "example-service-c",
                &format!("{DIR}/c"),
                &["transformer.c", "service.c", "json.c"],
            )?,
        ),
    ])
}

fn javascript(dir: &Path, work: &Path) -> anyhow::Result<Vec<u8>> {
    let install = format!("npm ci --prefix {}", dir.display());
    if !dir
        .join("node_modules/@bytecodealliance/componentize-js")
        .is_dir()
    {
        bail!(
            "building the JavaScript example needs componentize-js in {}; run `{install}`",
            dir.join("node_modules").display()
        );
    }
    let output = work.join("service-js.wasm");
    let node = std::env::var_os("NODE").unwrap_or_else(|| "node".into());
    let mut command = Command::new(&node);
    command.current_dir(dir).arg("build.mjs").arg(&output);
    run(
        &mut command,
        "the JavaScript example",
        "install Node.js 20 or later",
    )?;
    std::fs::read(&output).with_context(|| format!("reading {}", output.display()))
}

fn python(dir: &Path, wit: &Path, work: &Path) -> anyhow::Result<Vec<u8>> {
    let output = work.join("service-python.wasm");
    let tool = std::env::var_os("COMPONENTIZE_PY").unwrap_or_else(|| "componentize-py".into());
    let mut command = Command::new(&tool);
    command
        .current_dir(dir)
        .arg("-d")
        .arg(wit)
        .args(["-w", "transformer-world", "componentize", "app", "-o"])
        .arg(&output);
    run(
        &mut command,
        "the Python example",
        "run `pip install componentize-py==0.25.1`, or set COMPONENTIZE_PY",
    )?;
    std::fs::read(&output).with_context(|| format!("reading {}", output.display()))
}

/// Runs `command`, naming `what` it builds and how to install its toolchain when it fails.
fn run(command: &mut Command, what: &str, install: &str) -> anyhow::Result<()> {
    let program = command.get_program().to_string_lossy().into_owned();
    let output = command
        .output()
        .with_context(|| format!("running {program} to build {what}; {install}"))?;
    if !output.status.success() {
        bail!(
            "{program} failed to build {what} ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}
