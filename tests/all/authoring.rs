//! `opm transformer new|build|test` in-process: what `new` writes and refuses, what `build`
//! checks of what a build produced, and how `test` reports a case it cannot pass, where no
//! toolchain is needed; and the renderer projects of `new --renderer`, built with the real
//! toolchains (Rust with wasm32-wasip2, Node.js with npm, componentize-py), tested, packed and
//! rendered with. (`runtime/tests/authoring.rs` runs each language's transformer project.)

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
            "x.wasm is not a transformer: it does not export opm:transformer/transformer (at a version this opm serves, 1.0.0, 1.1.0 and 1.2.0; it exports: nothing)",
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

#[test]
fn new_renderer_writes_a_renderer_project_its_provider_ships() {
    let dir = tempfile::tempdir().expect("temp dir");
    for lang in ["rust", "js", "python"] {
        let project = dir.path().join(lang);
        let run = opm([
            "transformer",
            "new",
            "lines",
            "--renderer",
            "--lang",
            lang,
            "--dir",
            &path(&project),
        ]);
        assert!(run.exited(0), "{}", run.stderr);
        assert!(
            run.stdout.starts_with("created renderer lines"),
            "{}",
            run.stdout
        );
        let wit = std::fs::read_to_string(project.join("wit/transformer.wit")).expect("wit");
        let ours = std::fs::read_to_string(repo_root().join("wit/transformer.wit")).expect("wit");
        assert_eq!(wit, ours, "{lang}");
        let manifest = std::fs::read_to_string(project.join("transformer.yaml")).expect("yaml");
        for line in [
            "kind: renderer\n",
            &format!("language: {lang}\n"),
            "component: lines.wasm\n",
        ] {
            assert!(manifest.contains(line), "{lang} lacks {line:?}: {manifest}");
        }
        let provider: serde_json::Value = serde_saphyr::from_str(
            &std::fs::read_to_string(project.join("provider.yaml")).expect("provider"),
        )
        .expect("provider.yaml parses");
        assert_eq!(provider["renderer"]["component"], "lines.wasm", "{lang}");
        assert_eq!(
            provider["metadata"]["labels"]["core.opm.dev/format"], "lines",
            "{lang}"
        );
        let cases = opm_tests::file_names(&project.join("cases"));
        let mut expected = vec!["split-is-refused", "writes-one-line-per-resource"];
        if lang != "rust" {
            // The JavaScript and Python renderers show how to refuse a resource.
            expected.insert(0, "refuses-one-object-twice");
        }
        assert_eq!(cases, expected, "{lang}");
        let readme = std::fs::read_to_string(project.join("README.md")).expect("readme");
        for step in [
            "opm transformer build",
            "opm transformer test",
            "opm provider pack",
            "opm provider sign",
        ] {
            assert!(readme.contains(step), "{lang} README lacks {step}");
        }
        for file in ["README.md", "transformer.yaml", "provider.yaml"] {
            let text = std::fs::read_to_string(project.join(file)).expect("read");
            assert!(
                !text.contains("{{"),
                "unfilled placeholder in the {lang} {file}"
            );
        }
        for line in readme.lines().filter(|line| line.starts_with('|')) {
            assert_eq!(line.matches('|').count(), 3, "a two-column row: {line}");
        }
    }

    let project = dir.path().join("c");
    let run = opm([
        "transformer",
        "new",
        "lines",
        "--renderer",
        "--lang",
        "c",
        "--dir",
        &path(&project),
    ]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("--renderer scaffolds rust, js, python, not c: in C, generate the bindings of renderer-world"),
        "{}",
        run.stderr
    );
    assert!(!project.exists(), "nothing written");
}

/// A transformer project whose build produced a renderer is told so, and the other way round.
#[test]
fn build_names_a_renderer_where_a_transformer_was_expected_and_the_reverse() {
    let renderer = opm_runtime::embedded::load()
        .expect("embedded provider")
        .renderer
        .expect("the Kubernetes provider ships a renderer");
    let dir = project("true", &renderer);
    build_refuses(
        dir.path(),
        &[
            "x.wasm is not a transformer: it does not export opm:transformer/transformer (at a version this opm serves",
            "it is a renderer (say `kind: renderer` in transformer.yaml)",
        ],
    );
    let dir = project("true", guests::testing_c_hello());
    std::fs::write(
        dir.path().join("transformer.yaml"),
        "name: x\nkind: renderer\nbuild: \"true\"\ncomponent: x.wasm\n",
    )
    .expect("write manifest");
    build_refuses(
        dir.path(),
        &[
            "x.wasm is not a renderer: it does not export opm:transformer/renderer (at a version this opm serves",
            "it is a transformer (leave `kind: renderer` out of transformer.yaml)",
        ],
    );
}

/// A renderer is tested with renderer cases (resources in, files out), each run as the last
/// step of a render runs it: here the embedded Kubernetes renderer, a component file known by
/// its export. Its output, its `failed` error and the resources it refuses are recorded and
/// compared; a limit of its provider's `renderer.limits` fails a case and is never blessed.
#[test]
fn test_runs_a_renderer_s_cases_as_the_render_runs_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let renderer = opm_runtime::embedded::load()
        .expect("embedded provider")
        .renderer
        .expect("the Kubernetes provider ships a renderer");
    let component = dir.path().join("x.wasm");
    std::fs::write(&component, &renderer).expect("write");
    let cases = dir.path().join("cases");
    let config = |name: &str| {
        format!(
            r#"{{"component": "{name}", "value": {{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {{"name": "settings"}}}}}}"#
        )
    };
    let case = |name: &str, resources: &str, options: Option<&str>| {
        let case = cases.join(name);
        std::fs::create_dir_all(&case).expect("case dir");
        std::fs::write(case.join("resources.json"), resources).expect("resources");
        if let Some(options) = options {
            std::fs::write(case.join("options.json"), options).expect("options");
        }
    };
    case("stream", &format!("[{}]", config("web")), None);
    case(
        "twice",
        &format!("[{}, {}]", config("web"), config("db")),
        None,
    );
    case(
        "split-to-stdout",
        &format!("[{}]", config("web")),
        Some(r#"{"split": true}"#),
    );
    let test = |extra: &[&str]| {
        let mut args = vec!["transformer".to_owned(), "test".into(), path(&component)];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        opm(args)
    };
    let run = test(&["--bless"]);
    assert!(run.exited(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("testing renderer"),
        "a component file exporting the renderer interface is a renderer: {}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("3 cases: 0 passed, 0 failed, 3 blessed"),
        "{}",
        run.stdout
    );
    let expected = |name: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(cases.join(name).join("expected.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    assert_eq!(
        expected("stream"),
        serde_json::json!({"files": {"example.yaml": "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"}})
    );
    assert_eq!(
        expected("twice"),
        serde_json::json!({"error": {"refused": [{"component": "web",
            "transformer": "example.com/transformers@v1#Example",
            "reason": "rendered ConfigMap default/settings, which component \"db\" (transformer example.com/transformers@v1#Example) also rendered"}]}})
    );
    assert_eq!(
        expected("split-to-stdout"),
        serde_json::json!({"error": {"failed": "--split writes one file per resource: give it --out-dir"}})
    );
    let run = test(&[]);
    assert!(run.exited(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("3 cases: 3 passed, 0 failed"),
        "{}",
        run.stdout
    );

    // Under its provider's renderer limits.
    std::fs::write(
        dir.path().join("provider.yaml"),
        "apiVersion: core.opm.dev/v1\nkind: Provider\nmetadata: {name: team, version: 0.1.0}\n\
         renderer: {name: Team Renderer, version: 1.0.0, component: x.wasm, limits: {fuel: 1000}}\n\
         transformers: {}\n",
    )
    .expect("write manifest");
    let run = test(&["--provider", &path(dir.path()), "--bless"]);
    assert!(run.exited(1), "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("FAIL    stream"), "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "      `opm mod build` would fail:\n      - renderer Team Renderer 1.0.0 (blake3:"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("provider team) ran out of fuel: used all 1000 units"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("3 cases: 0 passed, 3 failed, 0 blessed"),
        "{}",
        run.stdout
    );
    assert_eq!(
        expected("split-to-stdout")["error"]["failed"],
        "--split writes one file per resource: give it --out-dir",
        "a limit is never blessed"
    );
}

/// A provider source directory holding the embedded Kubernetes provider's transformers and
/// definitions, without its renderer and its platform label: transformers whose resources a
/// renderer of another provider writes out.
fn kubernetes_transformers() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut provider = opm_runtime::embedded::load().expect("embedded provider loads");
    provider.manifest.metadata.name = "k8s-transformers".into();
    provider.manifest.metadata.labels.clear();
    provider.manifest.renderer = None;
    for (fqn, spec) in &provider.manifest.transformers {
        let file = dir.path().join(&spec.component);
        std::fs::create_dir_all(file.parent().expect("a folder")).expect("create folder");
        std::fs::write(file, &provider.components[fqn]).expect("write component");
    }
    let manifest = serde_saphyr::to_string(&provider.manifest).expect("manifest serializes");
    std::fs::write(dir.path().join("provider.yaml"), manifest).expect("write manifest");
    dir
}

/// `opm transformer new --renderer --lang rust`, built with the real toolchain, passes its
/// cases; packed, it is the renderer of a render of examples/hello with the Kubernetes
/// transformers, on stdout and into --out-dir: every resource the Kubernetes renderer writes
/// (as its JSON List), one compact JSON object per line; and `opm transformer test --with`
/// records and compares that render.
#[test]
fn a_new_rust_renderer_builds_passes_its_cases_and_renders_a_module() {
    let work = tempfile::tempdir().expect("temp dir");
    let project = work.path().join("lines");
    let run = opm([
        "transformer",
        "new",
        "lines",
        "--renderer",
        "--lang",
        "rust",
        "--dir",
        &path(&project),
    ]);
    assert!(run.exited(0), "{}", run.stderr);
    let run = opm(["transformer", "build", &path(&project)]);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(
        run.stdout.contains("opm:transformer/renderer@1.2.0"),
        "{}",
        run.stdout
    );
    let run = opm(["transformer", "test", &path(&project), "--no-build"]);
    assert!(run.exited(0), "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("testing renderer"), "{}", run.stdout);
    assert!(
        run.stdout.contains("2 cases: 2 passed, 0 failed"),
        "{}",
        run.stdout
    );
    let native = std::process::Command::new("cargo")
        .args(["test", "--quiet"])
        .current_dir(&project)
        .output()
        .expect("cargo runs");
    assert!(native.status.success(), "cargo test: {native:?}");

    let bundle = path(&work.path().join("lines.opmb"));
    let run = opm(["provider", "pack", &path(&project), "-o", &bundle]);
    assert!(run.exited(0), "{}", run.stderr);
    let transformers = kubernetes_transformers();
    let providers = [
        "-p",
        &path(transformers.path()),
        "-p",
        &bundle,
        "--renderer",
        "lines",
    ];
    let hello = opm_tests::hello();
    let run = opm(["mod", "build", hello.as_str()].iter().chain(&providers));
    assert!(run.exited(0), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(run.stdout.ends_with('\n'), "{}", run.stdout);
    let values: Vec<serde_json::Value> = lines
        .iter()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect();
    for (line, value) in lines.iter().zip(&values) {
        assert_eq!(*line, value.to_string(), "compact, keys as written");
        assert_eq!(
            value["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "open-platform-model"
        );
    }
    let kinds: Vec<&str> = values.iter().map(|v| v["kind"].as_str().unwrap()).collect();
    // In the order of the plan's calls: the transformers' FQNs, network@v1 before workload@v1.
    assert_eq!(kinds, ["Service", "Deployment"], "{}", run.stdout);
    let list = opm(["mod", "build", &hello, "-o", "json"]);
    assert!(list.exited(0), "{}", list.stderr);
    let list: serde_json::Value = serde_json::from_str(&list.stdout).expect("a JSON List");
    let mut items = list["items"].as_array().expect("items").clone();
    let mut ours = values.clone();
    let key = |v: &serde_json::Value| v["kind"].to_string();
    items.sort_by_key(key);
    ours.sort_by_key(key);
    assert_eq!(ours, items, "the resources the Kubernetes renderer writes");

    let out = work.path().join("out");
    let out_dir = path(&out);
    let run = opm(["mod", "build", hello.as_str(), "--out-dir", &out_dir]
        .iter()
        .chain(&providers));
    assert!(run.exited(0), "{}", run.stderr);
    assert_eq!(
        opm_tests::file_names(&out),
        [".opm-output", "opm.render", "resources.jsonl"]
    );
    assert_eq!(
        std::fs::read_to_string(out.join("resources.jsonl")).unwrap(),
        lines.iter().map(|l| format!("{l}\n")).collect::<String>()
    );

    // The render of a module with the renderer's provider, recorded and compared.
    let module = work.path().join("app/module.yaml");
    std::fs::create_dir_all(module.parent().unwrap()).unwrap();
    std::fs::copy(&hello, &module).unwrap();
    let test_with = |extra: &[&str]| {
        let mut args = vec![
            "transformer".to_owned(),
            "test".into(),
            path(&project),
            "--no-build".into(),
            "--with".into(),
            path(transformers.path()),
            "--module".into(),
            path(&module),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        opm(args)
    };
    let run = test_with(&["--bless"]);
    assert!(run.exited(0), "{}\n{}", run.stdout, run.stderr);
    let golden = work.path().join("app/rendered");
    assert!(
        run.stdout.contains(&format!(
            "blessed render of {} with {} + {}: 2 resources, written to {}",
            module.display(),
            transformers.path().display(),
            project.display(),
            golden.display()
        )),
        "{}",
        run.stdout
    );
    assert_eq!(
        std::fs::read_to_string(golden.join("resources.jsonl")).unwrap(),
        std::fs::read_to_string(out.join("resources.jsonl")).unwrap()
    );
    let run = test_with(&[]);
    assert!(run.exited(0), "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("  ok      render of"), "{}", run.stdout);
    std::fs::write(golden.join("stale.txt"), "old").unwrap();
    let run = test_with(&[]);
    assert!(run.exited(1), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("      stale.txt: recorded, not rendered"),
        "{}",
        run.stdout
    );
}

/// `opm transformer new NAME --renderer --lang LANG`, then `build`, `test` and the native tests
/// (`native`) in the project, with the real toolchain.
fn scaffold_renderer(lang: &str, native: &[&str]) {
    let work = tempfile::tempdir().expect("temp dir");
    let project = work.path().join("lines");
    let run = opm([
        "transformer",
        "new",
        "lines",
        "--renderer",
        "--lang",
        lang,
        "--dir",
        &path(&project),
    ]);
    assert!(run.exited(0), "{}", run.stderr);
    let run = opm(["transformer", "build", &path(&project)]);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(
        run.stdout.contains("opm:transformer/renderer@1.2.0"),
        "{}",
        run.stdout
    );
    let run = opm(["transformer", "test", &path(&project), "--no-build"]);
    assert!(run.exited(0), "{}\n{}", run.stdout, run.stderr);
    // The third case refuses a resource, as the contract's `refused`, by its position.
    assert!(
        run.stdout.contains("3 cases: 3 passed, 0 failed")
            && run.stdout.contains("ok      refuses-one-object-twice"),
        "{}",
        run.stdout
    );
    let output = std::process::Command::new(native[0])
        .args(&native[1..])
        .current_dir(&project)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", native[0]));
    assert!(output.status.success(), "{native:?}: {output:?}");
}

#[test]
fn a_new_javascript_renderer_builds_and_passes_its_tests() {
    scaffold_renderer("js", &["npm", "test", "--silent"]);
}

#[test]
fn a_new_python_renderer_builds_and_passes_its_tests() {
    scaffold_renderer("python", &["python3", "-m", "unittest"]);
}

/// `opm transformer new NAME --lang LANG`, `edit` applied to the project's file `file`, then
/// `build` and `test` with the real toolchain: the report of its failing cases.
fn scaffold_with_a_bug(lang: &str, file: &str, edit: impl Fn(&str) -> String) -> String {
    let work = tempfile::tempdir().expect("temp dir");
    let project = work.path().join("buggy");
    let run = opm([
        "transformer",
        "new",
        "buggy",
        "--lang",
        lang,
        "--dir",
        &path(&project),
    ]);
    assert!(run.exited(0), "{}", run.stderr);
    let source = project.join(file);
    let text = std::fs::read_to_string(&source).expect("source");
    let edited = edit(&text);
    assert_ne!(edited, text, "the edit applies to {file}");
    std::fs::write(&source, edited).expect("edit");
    let run = opm(["transformer", "build", &path(&project)]);
    assert!(run.exited(0), "{}", run.stderr);
    let run = opm(["transformer", "test", &path(&project), "--no-build"]);
    assert!(run.exited(1), "{}\n{}", run.stdout, run.stderr);
    run.stdout
}

/// Statement 10 of issue 48: an exception raised inside the standard library named the library's
/// frame (`encoder.py, line 180, in default`), not the author's. The Python scaffold's error
/// names the innermost frame in the author's own files first, then where it was raised.
#[test]
fn a_python_transformer_s_error_names_the_author_s_frame_then_the_library_s() {
    let report = scaffold_with_a_bug("python", "render.py", |text| {
        text.replace(
            "    return value\n",
            "    return json.loads(json.dumps({**value, \"set\": {1}}))\n",
        )
    });
    assert!(
        report.contains(
            "TypeError: Object of type set is not JSON serializable (render.py, line 64, in \
             data; raised in json/encoder.py, line "
        ),
        "{report}"
    );
}

/// The JavaScript scaffold's error names the innermost frame in the author's own files first,
/// then where it was raised when that is elsewhere (here inside the helpers of opm.js, which the
/// author's code called wrongly).
#[test]
fn a_javascript_transformer_s_error_names_the_author_s_frame_then_the_helper_s() {
    let report = scaffold_with_a_bug("js", "render.js", |text| {
        text.replace(
            "context.objectName(component.name)",
            "context.objectName.call(undefined, component.name)",
        )
    });
    assert!(
        report.contains("(at metadata@render.js:52:")
            && report.contains("; raised at objectName@opm.js:"),
        "{report}"
    );
}
