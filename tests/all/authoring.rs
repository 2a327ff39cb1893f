//! `opm transformer new|build|test` in-process, where no toolchain is needed: what `new` writes
//! and refuses, what `build` checks of what a build produced, and how `test` reports a case it
//! cannot pass. (`runtime/tests/authoring.rs` runs each language's real toolchain.)

use std::path::Path;

use opm_tests::{guests, opm, repo_root};

fn path(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn new_refuses_a_bad_name_and_a_directory_that_is_not_empty() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = opm([
        "transformer",
        "new",
        "Hello_World",
        "--lang",
        "c",
        "--dir",
        &path(dir.path()),
    ]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("\"Hello_World\" is not a transformer name: use lowercase letters"),
        "{}",
        run.stderr
    );

    std::fs::write(dir.path().join("keep.txt"), "mine").expect("write");
    let run = opm([
        "transformer",
        "new",
        "hello",
        "--lang",
        "c",
        "--dir",
        &path(dir.path()),
    ]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("already exists and is not empty"),
        "{}",
        run.stderr
    );
    assert_eq!(opm_tests::file_names(dir.path()), ["keep.txt"]);
}

#[test]
fn new_writes_the_contract_of_this_opm_and_for_c_its_bindings() {
    let dir = tempfile::tempdir().expect("temp dir");
    for lang in ["rust", "js", "python", "c"] {
        let project = dir.path().join(lang);
        let run = opm([
            "transformer",
            "new",
            "greeter",
            "--lang",
            lang,
            "--dir",
            &path(&project),
        ]);
        assert!(run.exited(0), "{}", run.stderr);
        let wit = std::fs::read_to_string(project.join("wit/transformer.wit")).expect("wit");
        let ours = std::fs::read_to_string(repo_root().join("wit/transformer.wit")).expect("wit");
        assert_eq!(wit, ours, "{lang}");
        let manifest = std::fs::read_to_string(project.join("transformer.yaml")).expect("yaml");
        assert!(
            manifest.contains(&format!("language: {lang}\n")),
            "{manifest}"
        );
        assert!(manifest.contains("component: greeter.wasm\n"), "{manifest}");
        let provider = std::fs::read_to_string(project.join("provider.yaml")).expect("provider");
        assert!(provider.contains("#GreeterTransformer:"), "{provider}");
        let readme = std::fs::read_to_string(project.join("README.md")).expect("readme");
        for step in [
            "opm transformer build",
            "opm transformer test",
            "opm provider pack",
            "opm provider sign",
        ] {
            assert!(readme.contains(step), "{lang} README lacks {step}");
        }
        assert!(
            !readme.contains("{{"),
            "unfilled placeholder in the {lang} README"
        );
        for line in readme.lines().filter(|line| line.starts_with('|')) {
            assert_eq!(line.matches('|').count(), 3, "a two-column row: {line}");
        }
    }
    let bindings = opm_tests::file_names(&dir.path().join("c/bindings"));
    assert_eq!(
        bindings,
        [
            "transformer_world.c",
            "transformer_world.h",
            "transformer_world_component_type.o"
        ]
    );
}

/// A project whose build command is `command` and whose component is `x.wasm`, holding `bytes`
/// before the build runs.
fn project(command: &str, bytes: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("transformer.yaml"),
        format!("name: x\nbuild: {command}\ncomponent: x.wasm\n"),
    )
    .expect("write manifest");
    std::fs::write(dir.path().join("x.wasm"), bytes).expect("write component");
    dir
}

/// Runs `opm transformer build` on `dir`, which must exit 2 with each of `needles` in its
/// error.
fn build_refuses(dir: &Path, needles: &[&str]) {
    let run = opm(["transformer", "build", &path(dir)]);
    assert!(run.exited(2), "{}", run.stderr);
    for needle in needles {
        assert!(run.stderr.contains(needle), "{needle}: {}", run.stderr);
    }
}

#[test]
fn build_refuses_what_is_not_a_transformer_naming_the_file_and_why() {
    let dir = project("true", guests::UNKNOWN_IMPORT);
    build_refuses(
        dir.path(),
        &[
            "x.wasm is not a transformer: it imports",
            "which the sandbox does not offer",
        ],
    );
    let dir = project("true", guests::WRONG_VERSION);
    build_refuses(
        dir.path(),
        &["it imports opm:transformer/log@2.0.0, opm:transformer/types@2.0.0"],
    );
}

#[test]
fn build_names_a_failed_command_and_a_missing_one() {
    let dir = project("exit 3", guests::testing_c_hello());
    build_refuses(
        dir.path(),
        &["the build command of x failed (exit status: 3): exit 3"],
    );
    let dir = project("no-such-compiler --release", guests::testing_c_hello());
    build_refuses(
        dir.path(),
        &["a command of it was not found: is its toolchain installed and on PATH?"],
    );
    let dir = project("true", guests::testing_c_hello());
    std::fs::write(
        dir.path().join("transformer.yaml"),
        "name: x\nbuild: true\ncomponent: x.wasm\ntools: [{name: no-such-compiler, install: get it from example.com}]\n",
    )
    .expect("write manifest");
    build_refuses(
        dir.path(),
        &["building x needs `no-such-compiler`, which is not on PATH; get it from example.com"],
    );
}

/// (That a C guest's core module is made a component in place, `runtime/tests/authoring.rs`
/// shows with clang's real output.)
#[test]
fn a_core_module_without_the_contract_is_refused_once_made_a_component() {
    let dir = project("true", guests::CORE_MODULE);
    build_refuses(
        dir.path(),
        &[
            "x.wasm is not a transformer: it does not export opm:transformer/transformer@1.0.0 (it exports: nothing)",
        ],
    );
}

/// A case folder `name` in `cases` with `component` and, if given, `expected`.
fn case(cases: &Path, name: &str, component: &str, expected: Option<&str>) {
    let dir = cases.join(name);
    std::fs::create_dir_all(&dir).expect("case dir");
    std::fs::write(dir.join("component.json"), component).expect("component");
    if let Some(expected) = expected {
        std::fs::write(dir.join("expected.json"), expected).expect("expected");
    }
}

const HEADLESS: &str = r#"{"metadata": {"name": "db"}, "spec": {"expose": {"type": "Headless", "ports": {"pg": {"port": 5432}}}}}"#;

#[test]
fn test_fails_a_case_without_expectations_or_over_a_limit_and_blesses_only_what_returned() {
    let dir = tempfile::tempdir().expect("temp dir");
    let component = dir.path().join("service.wasm");
    std::fs::write(&component, guests::example_service_c()).expect("write");
    let cases = dir.path().join("cases");
    case(&cases, "new", HEADLESS, None);
    let args = |extra: &[&str]| {
        let mut args = vec!["transformer".to_owned(), "test".into(), path(&component)];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args
    };

    let run = opm(args(&[]));
    assert!(run.exited(1), "{}", run.stdout);
    assert!(run.stdout.contains("FAIL    new"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("no expected.json (run with --bless to record what it returns)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("\"clusterIP\": \"None\""),
        "{}",
        run.stdout
    );

    let run = opm(args(&["--fuel", "1000"]));
    assert!(run.exited(1), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("the call did not return: ran out of fuel: used all 1000 units"),
        "{}",
        run.stdout
    );
    let run = opm(args(&["--fuel", "1000", "--bless"]));
    assert!(run.exited(1), "{}", run.stdout);
    assert!(
        !cases.join("new/expected.json").exists(),
        "a trap is never blessed"
    );

    let run = opm(args(&["--bless"]));
    assert!(run.exited(0), "{}", run.stdout);
    assert!(
        run.stdout.contains("1 case: 0 passed, 0 failed, 1 blessed"),
        "{}",
        run.stdout
    );
    let run = opm(args(&[]));
    assert!(run.exited(0), "{}", run.stdout);
    assert!(
        run.stdout.contains("1 case: 1 passed, 0 failed"),
        "{}",
        run.stdout
    );
}

#[test]
fn test_refuses_a_malformed_case_naming_its_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let component = dir.path().join("service.wasm");
    std::fs::write(&component, guests::example_service_c()).expect("write");
    let cases = dir.path().join("cases");
    case(&cases, "odd", HEADLESS, Some("{\"resources\": []}"));
    std::fs::write(cases.join("odd/context.json"), r#"{"namespaec": "x"}"#).expect("write");
    let run = opm(["transformer", "test", &path(&component)]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(run.stderr.contains("odd/context.json"), "{}", run.stderr);
    assert!(
        run.stderr.contains("unknown context field \"namespaec\""),
        "{}",
        run.stderr
    );
}

/// What `opm mod build` refuses, `opm transformer test` refuses too, and `--bless` does not
/// record: a resource without `kind`, a `metadata.name` that is not a string, one object
/// returned twice. A case that returns a resource a render accepts passes as before.
#[test]
fn test_refuses_what_a_render_refuses_and_never_blesses_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let component = dir.path().join("misbehave.wasm");
    std::fs::write(&component, guests::TESTING_MISBEHAVE).expect("write");
    let cases = dir.path().join("cases");
    let returning = |mode: &str| {
        format!(
            r#"{{"metadata": {{"name": "api", "labels": {{"misbehave.opm.dev/mode": "{mode}"}}}}}}"#
        )
    };
    for mode in ["no-kind", "name-number", "twice"] {
        case(&cases, mode, &returning(mode), Some(r#"{"resources": []}"#));
    }
    let run = opm(["transformer", "test", &path(&component), "--bless"]);
    assert!(run.exited(1), "{}", run.stdout);
    for (mode, why) in [
        (
            "no-kind",
            "returned an invalid resource #0: `kind` is missing or not a non-empty string",
        ),
        (
            "name-number",
            "returned an invalid resource #0: `metadata.name` is missing or not a non-empty string",
        ),
        (
            "twice",
            "returned ConfigMap default/api twice: a render refuses two resources that are one object",
        ),
    ] {
        assert!(
            run.stdout.contains(&format!("FAIL    {mode}")),
            "{mode}: {}",
            run.stdout
        );
        assert!(
            run.stdout.contains(&format!("      - {why}")),
            "{mode}: {}",
            run.stdout
        );
        assert_eq!(
            std::fs::read_to_string(cases.join(mode).join("expected.json")).unwrap(),
            r#"{"resources": []}"#,
            "{mode} was blessed"
        );
    }
    assert!(
        run.stdout
            .contains("`opm mod build` would refuse what it returned:"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("3 cases: 0 passed, 3 failed, 0 blessed"),
        "{}",
        run.stdout
    );
}

/// A project that names the provider it ships in is tested under that provider's limits, as
/// a render runs it, not the host's defaults.
#[test]
fn test_uses_the_limits_of_the_provider_the_transformer_ships_in() {
    let dir = tempfile::tempdir().expect("temp dir");
    let project = dir.path().join("service");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("x.wasm"), guests::example_service_c()).unwrap();
    std::fs::write(
        project.join("transformer.yaml"),
        "name: x\nbuild: \"true\"\ncomponent: x.wasm\nprovider: ..\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("provider.yaml"),
        "apiVersion: core.opm.dev/v1\nkind: Provider\nmetadata: {name: team, version: 0.1.0}\n\
         limits: {fuel: 1000}\ntransformers:\n  team.dev/x@v1#X:\n    component: service/x.wasm\n",
    )
    .unwrap();
    case(&project.join("cases"), "headless", HEADLESS, None);
    let run = opm(["transformer", "test", &path(&project), "--no-build"]);
    assert!(run.exited(1), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("the call did not return: ran out of fuel: used all 1000 units"),
        "{}",
        run.stdout
    );
}
