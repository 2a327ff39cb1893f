//! The README's commands work as written: every line of its `sh` blocks that starts with `opm `
//! runs, in order, with bash, in a scratch directory that holds the repository's examples, with
//! this build's `opm` first on PATH, and exits 0. (The set-up commands, which build opm and run
//! this suite, are CI's own: `.ci/run` runs them.)

use std::path::Path;
use std::process::Command;

/// The `opm …` lines of the README's ```sh blocks, in order.
fn readme_commands() -> Vec<String> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .expect("read README.md");
    let mut commands = Vec::new();
    let mut in_sh = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_sh = !in_sh && line.trim_end() == "```sh";
            continue;
        }
        if in_sh && line.starts_with("opm ") {
            commands.push(line.to_owned());
        }
    }
    commands
}

#[test]
fn every_opm_command_of_the_readme_runs_as_written() {
    let commands = readme_commands();
    assert!(commands.len() >= 12, "{commands:#?}");
    for wanted in [
        "opm mod init",
        "opm mod diff",
        "opm mod schema",
        "--verbose=json",
        "opm completion",
    ] {
        assert!(
            commands.iter().any(|c| c.contains(wanted)),
            "the README shows no `{wanted}`"
        );
    }
    let scratch = tempfile::tempdir().expect("scratch dir");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    std::os::unix::fs::symlink(
        examples.canonicalize().unwrap(),
        scratch.path().join("examples"),
    )
    .expect("link the examples");
    let bin = Path::new(env!("CARGO_BIN_EXE_opm"))
        .parent()
        .unwrap()
        .to_owned();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for command in &commands {
        let output = Command::new("bash")
            .args(["-euo", "pipefail", "-c", command])
            .current_dir(scratch.path())
            .env("PATH", &path)
            .env("NO_COLOR", "1")
            .output()
            .expect("run bash");
        assert!(
            output.status.success(),
            "README command failed ({:?}): {command}\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    // What they wrote is what they say they write.
    for file in [
        "my-app/module.yaml",
        "my-app/module.schema.json",
        "deploy/hello",
        "render.jsonl",
        "opm.bash",
        "greeter",
    ] {
        assert!(scratch.path().join(file).exists(), "{file} was not written");
    }
    let last = std::fs::read_to_string(scratch.path().join("render.jsonl")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
    assert_eq!(summary["event"], "summary");
}
