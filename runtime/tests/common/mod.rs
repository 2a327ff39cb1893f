//! What the tests that run the real `opm` binary share.

#![allow(dead_code, reason = "each test binary uses what it needs")]

pub mod registry;

use std::path::Path;
use std::process::{Command, Output};

use opm_core::bundle::{self, format};
use serde_json::Value;

/// Runs the `opm` under test in `dir`, with no `OPM_REGISTRY` from the caller's environment.
pub fn opm(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_opm"))
        .args(args)
        .current_dir(dir)
        .env_remove("OPM_REGISTRY")
        .output()
        .expect("opm runs")
}

/// Asserts `output` exited with `code`, and returns its stdout and stderr.
pub fn exited(output: &Output, code: i32) -> (String, String) {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(code), "{stdout}\n{stderr}");
    (stdout, stderr)
}

/// `examples/hello/module.yaml` copied into the project directory `project` (as
/// `hello/module.yaml`), where a render finds the project's providers; its path.
pub fn hello_in(project: &Path) -> String {
    let module = project.join("hello/module.yaml");
    std::fs::create_dir_all(project.join("hello")).expect("mkdir");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/hello/module.yaml"),
        &module,
    )
    .expect("copy the hello module");
    module.display().to_string()
}

/// The bundle `bytes` packed again with its manifest changed by `edit`.
pub fn repacked(bytes: &[u8], edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    repacked_with(bytes, edit, <[u8]>::to_vec)
}

/// The bundle `bytes` packed again with its manifest changed by `edit` and each component's
/// bytes made by `component` from its own.
pub fn repacked_with(
    bytes: &[u8],
    edit: impl FnOnce(&mut Value),
    component: impl Fn(&[u8]) -> Vec<u8>,
) -> Vec<u8> {
    let bundle = bundle::read("test", bytes).expect("bundle");
    let mut manifest: Value = serde_json::from_slice(&bundle.manifest).expect("JSON");
    edit(&mut manifest);
    // Packing writes each component's digest again, from the bytes it is given.
    let holders = manifest["transformers"]
        .as_object_mut()
        .into_iter()
        .flat_map(|transformers| transformers.values_mut());
    for holder in holders {
        holder.as_object_mut().map(|holder| holder.remove("digest"));
    }
    if let Some(renderer) = manifest.get_mut("renderer").and_then(Value::as_object_mut) {
        renderer.remove("digest");
    }
    let components = bundle
        .components
        .iter()
        .map(|(path, bytes)| (path.clone(), component(bytes)))
        .collect();
    format::pack(manifest, &components).expect("packs").bytes
}

/// A minisign key pair made by `minisign -G -W` (no password) in `dir`: (secret, public).
pub fn keypair(dir: &Path, name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let (secret, public) = (
        dir.join(format!("{name}.key")),
        dir.join(format!("{name}.pub")),
    );
    minisign(&[
        "-G",
        "-W",
        "-s",
        secret.to_str().unwrap(),
        "-p",
        public.to_str().unwrap(),
    ]);
    (secret, public)
}

/// Runs the real `minisign`, which must succeed.
pub fn minisign(args: &[&str]) {
    let output = Command::new("minisign")
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("minisign is installed (tests/setup.sh)");
    assert!(output.status.success(), "{output:?}");
}
