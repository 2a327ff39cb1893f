//! The author's loop with the real `opm` binary and the real toolchains: `opm transformer new`
//! for each language, then `build` and `test` in the new project, its native tests, and the
//! walkthrough of the author guide (`transformers/README.md`), command by command.
//!
//! The toolchains are those `.ci/run` installs: Rust with wasm32-wasip2, Node.js with npm,
//! componentize-py, clang with wasi-libc, make.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

/// The `opm` binary cargo built for these tests.
fn opm() -> &'static str {
    env!("CARGO_BIN_EXE_opm")
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `PATH` with the directory of the `opm` under test first.
fn path_with_opm() -> std::ffi::OsString {
    let bin = Path::new(opm()).parent().expect("opm has a directory");
    let mut dirs = vec![bin.to_owned()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).expect("PATH joins")
}

/// Runs `program args` in `dir` with the `opm` under test first on `PATH`; panics, showing
/// everything it printed, unless it exits 0.
fn run(dir: &Path, program: &str, args: &[&str]) -> Output {
    run_with(dir, program, args, &[])
}

/// [`run`] with the environment variables `vars` set too.
fn run_with(dir: &Path, program: &str, args: &[&str], vars: &[(&str, &Path)]) -> Output {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("PATH", path_with_opm())
        .envs(vars.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        output.status.success(),
        "`{program} {}` in {} failed ({}):\n{}\n{}",
        args.join(" "),
        dir.display(),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `opm transformer new NAME --lang LANG`, then `build` and `test` in the project; then its
/// native tests, and a render of its module with it packed. Returns the project directory.
fn scaffold_build_and_test(lang: &str, native: &[&str]) -> tempfile::TempDir {
    let work = tempfile::tempdir().expect("temp dir");
    let name = format!("hello-{lang}");
    let created = run(
        work.path(),
        opm(),
        &["transformer", "new", &name, "--lang", lang],
    );
    assert!(stdout(&created).contains(&format!("created transformer {name}")));
    let project = work.path().join(&name);

    let built = run(&project, opm(), &["transformer", "build"]);
    let report = stdout(&built);
    assert!(report.contains(&format!("built ./{name}.wasm")), "{report}");
    assert!(
        report.contains("opm:transformer/transformer@1.2.0"),
        "{report}"
    );

    let tested = run(&project, opm(), &["transformer", "test", "--no-build"]);
    let report = stdout(&tested);
    // A JavaScript or Python scaffold's one component serves two transformers: a case more.
    let cases = if matches!(lang, "js" | "python") {
        3
    } else {
        2
    };
    assert!(
        report.contains(&format!("{cases} cases: {cases} passed, 0 failed")),
        "{report}"
    );
    assert!(report.contains("fuel"), "{report}");

    run(&project, native[0], &native[1..]);

    let bundle = format!("{name}.opmb");
    run(&project, opm(), &["provider", "pack", ".", "-o", &bundle]);
    let rendered = run(
        &project,
        opm(),
        &["mod", "build", "module.yaml", "-p", &bundle],
    );
    let yaml = stdout(&rendered);
    assert!(yaml.contains("kind: ConfigMap\n"), "{yaml}");
    assert!(yaml.contains("  mode: fast\n"), "{yaml}");
    work
}

#[test]
fn a_new_rust_project_builds_and_passes_its_tests() {
    scaffold_build_and_test("rust", &["cargo", "test", "--quiet"]);
}

#[test]
fn a_new_javascript_project_builds_and_passes_its_tests() {
    scaffold_build_and_test("js", &["npm", "test", "--silent"]);
}

/// The first render with a large component shows a progress line while it compiles on a
/// terminal (`script` gives the command one), and the second render, with the component in the
/// cache, shows none. (That a compile into a pipe shows nothing, the walkthrough checks.)
fn compiling_shows_progress_on_a_terminal(project: &Path, bundle: &str) {
    let command = format!("{} mod build module.yaml -p {bundle} > /dev/null", opm());
    let scratch = tempfile::tempdir().expect("temp dir");
    // A directory opm makes: it uses only a cache directory nobody else may read.
    let cache = scratch.path().join("cache");
    let render = || -> String {
        let output = Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .current_dir(project)
            .env("OPM_CACHE_DIR", &cache)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("the render runs");
        assert!(output.status.success(), "{output:?}");
        // What the terminal showed: script copies it to its stdout.
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let first = render();
    assert!(
        first.contains("compiling 1 transformer (17.") && first.contains("on first use"),
        "{first:?}"
    );
    assert!(
        first.ends_with("\r\x1b[K"),
        "the line is cleared: {first:?}"
    );
    let second = render();
    assert!(!second.contains("compiling"), "{second:?}");
}

#[test]
fn a_new_c_project_builds_and_passes_its_tests() {
    scaffold_build_and_test("c", &["make", "--no-print-directory", "test"]);
}

#[test]
fn a_changed_transformer_fails_its_case_with_a_diff_until_blessed() {
    let work = scaffold_build_and_test("c", &["true"]);
    let project = work.path().join("hello-c");
    let source = project.join("render.c");
    let text = std::fs::read_to_string(&source).expect("render.c");
    std::fs::write(
        &source,
        text.replace("\"ConfigMap\", 9", "\"Configmap\", 9"),
    )
    .expect("edit");

    let failed = Command::new(opm())
        .args(["transformer", "test"])
        .current_dir(&project)
        .output()
        .expect("opm runs");
    assert_eq!(failed.status.code(), Some(1));
    let report = stdout(&failed);
    assert!(report.contains("FAIL    renders-a-config-map"), "{report}");
    assert!(
        report.contains("-      \"kind\": \"ConfigMap\","),
        "{report}"
    );
    assert!(
        report.contains("+      \"kind\": \"Configmap\","),
        "{report}"
    );
    assert!(
        report.contains("log info: rendered 1 resource(s)"),
        "{report}"
    );
    assert!(report.contains("2 cases: 1 passed, 1 failed"), "{report}");

    let blessed = run(&project, opm(), &["transformer", "test", "--bless"]);
    assert!(
        stdout(&blessed).contains("1 blessed"),
        "{}",
        stdout(&blessed)
    );
    let expected =
        std::fs::read_to_string(project.join("cases/renders-a-config-map/expected.json"))
            .expect("expected.json");
    assert!(expected.contains("\"kind\": \"Configmap\""), "{expected}");
    run(&project, opm(), &["transformer", "test", "--no-build"]);
}

#[test]
fn a_missing_toolchain_is_named_with_how_to_install_it() {
    let work = tempfile::tempdir().expect("temp dir");
    run(
        work.path(),
        opm(),
        &["transformer", "new", "lonely", "--lang", "python"],
    );
    let output = Command::new(opm())
        .args(["transformer", "build"])
        .current_dir(work.path().join("lonely"))
        .env("PATH", "/nonexistent")
        .output()
        .expect("opm runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "error: building lonely needs `componentize-py`, which is not on PATH; pip install componentize-py==0.25.1"
        ),
        "{stderr}"
    );
}

/// The ```sh blocks of the guide's walkthrough, in order.
fn walkthrough_commands() -> String {
    section_commands("## Walkthrough")
}

/// The ```sh blocks of the guide's section whose heading starts with `heading`, in order.
fn section_commands(heading: &str) -> String {
    let guide = std::fs::read_to_string(repo().join("transformers/README.md")).expect("guide");
    let start = guide
        .find(heading)
        .unwrap_or_else(|| panic!("the guide has a section {heading:?}"));
    let section = &guide[start..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    let mut script = String::new();
    let mut in_block = false;
    for line in section[..end].lines() {
        match (in_block, line.trim_end()) {
            (false, "```sh") => in_block = true,
            (true, "```") => in_block = false,
            (true, command) => {
                let command = command.split("  #").next().unwrap_or(command);
                script.push_str(command);
                script.push('\n');
            }
            _ => {}
        }
    }
    script
}

/// The guide's walkthrough, which is also the new Python project's test: scaffold, build, test
/// (without building again: nothing changed), the native tests, bless, pack, sign, verify,
/// inspect, render; then the progress line of a compile on a terminal. Python's build bundles
/// an interpreter and gives new bytes each time, each a 17 MB compile: one project serves both.
#[test]
fn the_guide_walkthrough_runs_start_to_finish() {
    let script = walkthrough_commands();
    for step in [
        "opm transformer new",
        "opm transformer build",
        "opm transformer test",
        "python3 -m unittest",
        "opm transformer test --bless",
        "opm provider pack",
        "minisign -G",
        "opm provider sign",
        "opm provider verify",
        "opm mod build",
    ] {
        assert!(
            script.contains(step),
            "the walkthrough lost `{step}`:\n{script}"
        );
    }
    let work = tempfile::tempdir().expect("temp dir");
    // A cache of its own, so that the test compiles the new component, into a pipe.
    let cache = work.path().join("cache");
    let output = run_with(
        work.path(),
        "bash",
        &["-c", &format!("set -euxo pipefail\n{script}")],
        &[("OPM_CACHE_DIR", &cache)],
    );
    let (out, err) = (stdout(&output), String::from_utf8_lossy(&output.stderr));
    assert!(out.contains("created transformer greeter"), "{out}");
    assert!(out.contains("built ./greeter.wasm"), "{out}");
    assert!(out.contains("opm:transformer/transformer@1.2.0"), "{out}");
    assert!(
        err.contains("greeter is up to date: greeter.wasm is newer than every source"),
        "`opm transformer test` after `build` tests what it built: {err}"
    );
    assert_eq!(
        err.matches("building greeter: ").count(),
        1,
        "built once: {err}"
    );
    assert_eq!(
        out.matches("3 cases: 3 passed, 0 failed").count(),
        2,
        "{out}"
    );
    assert!(out.contains("fuel"), "{out}");
    assert!(out.contains("kind: ConfigMap\n"), "{out}");
    assert!(out.contains("  mode: fast\n"), "{out}");
    assert!(
        out.contains("verified"),
        "the walkthrough verifies the signature: {out}"
    );
    assert!(
        !err.contains("compiling 1 transformer"),
        "no progress line into a pipe: {err}"
    );
    compiling_shows_progress_on_a_terminal(&work.path().join("greeter"), "greeter.opmb");

    // A bug of the transformer's own is reported as the exception and where it was raised:
    // the scaffold maps it to the contract's `failed` error.
    let bug = work.path().join("greeter/cases/a-bug");
    std::fs::create_dir_all(&bug).expect("case dir");
    std::fs::write(
        bug.join("component.json"),
        r#"{"metadata": {"name": "settings"}, "spec": {"configMap": [1]}}"#,
    )
    .expect("write");
    std::fs::write(
        bug.join("context.json"),
        r#"{"transformer": "example.com/transformers/config@v1#GreeterTransformer"}"#,
    )
    .expect("write");
    let output = Command::new(opm())
        .args(["transformer", "test", "--no-build"])
        .current_dir(work.path().join("greeter"))
        .env("OPM_CACHE_DIR", &cache)
        .output()
        .expect("opm runs");
    let out = stdout(&output);
    assert!(
        out.contains(
            r#""failed": "AttributeError: 'list' object has no attribute 'get' (render.py, line "#
        ),
        "{out}"
    );
}

/// The guide's "Adding your transformers to the standard provider", run as written: a new
/// project tested with the standard provider beside it (`--with kubernetes`), packed, signed and
/// pushed to a real OCI registry; an application's project that locks the exported standard
/// provider and the team's signed one, and renders with both from another directory.
#[test]
fn the_guide_s_standard_plus_ours_walkthrough_runs_start_to_finish() {
    let script = section_commands("## Adding your transformers to the standard provider");
    for step in [
        "opm transformer new",
        "opm transformer test --with kubernetes --bless",
        "opm provider pack",
        "opm provider sign",
        "opm provider push",
        "opm provider export kubernetes",
        "opm provider init",
        "opm mod vet",
        "opm mod build",
    ] {
        assert!(
            script.contains(step),
            "the walkthrough lost `{step}`:\n{script}"
        );
    }
    let registry = common::registry::Registry::start("127.0.0.1");
    let work = tempfile::tempdir().expect("temp dir");
    let cache = work.path().join("cache");
    let output = Command::new("bash")
        .args(["-c", &format!("set -euxo pipefail\n{script}")])
        .current_dir(work.path())
        .env("PATH", path_with_opm())
        .env("OPM_CACHE_DIR", &cache)
        .env("REGISTRY", &registry.address)
        .output()
        .expect("bash runs");
    let (out, err) = (stdout(&output), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{out}\n{err}");
    for expected in [
        "created transformer team-config",
        "blessed render of module.yaml with kubernetes + .: 1 resource, written to rendered.yaml",
        "ok      render of module.yaml with kubernetes + .: 1 resource",
        "locked 2 providers",
        "module shop with providers kubernetes, team-config",
        "  team-config 0.1.0: 1 transformer, 1 definition",
        "kind: Deployment\n",
        "kind: ConfigMap\n",
        "  mode: fast\n",
    ] {
        assert!(out.contains(expected), "{expected:?}:\n{out}\n{err}");
    }
    assert!(
        work.path().join("team-config/rendered.yaml").is_file(),
        "--bless records the render"
    );
}
