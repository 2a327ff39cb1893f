//! The example ServiceTransformer of `transformers/examples/service/`, written in Rust,
//! JavaScript, Python and C and built from source with each language's own toolchain (the Rust
//! twin by the test build, the others on first use): each passes every case folder in the sandbox, all four pack into one provider
//! bundle that mixes languages, and every implementation renders the example module to the same
//! bytes.

use std::path::{Path, PathBuf};

use opm_tests::{guests, opm, repo_root};

/// The languages, the file name `provider.yaml` gives each one's component, and its bytes.
fn languages() -> [(&'static str, &'static str, &'static [u8]); 4] {
    [
        ("rust", "service-rust.wasm", guests::EXAMPLE_SERVICE_RUST),
        ("js", "service-js.wasm", guests::example_service_js()),
        (
            "python",
            "service-python.wasm",
            guests::example_service_python(),
        ),
        ("c", "service-c.wasm", guests::example_service_c()),
    ]
}

fn example() -> PathBuf {
    repo_root().join("transformers/examples/service")
}

/// Runs every case folder of the example against `component` with `opm transformer test`.
fn passes_every_case(component: &[u8]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("service.wasm");
    std::fs::write(&path, component).expect("write component");
    let cases = example().join("cases");
    let run = opm([
        "transformer",
        "test",
        &path.display().to_string(),
        "--cases",
        &cases.display().to_string(),
    ]);
    assert!(run.exited(0), "{}\n{}", run.stdout, run.stderr);
    let count = std::fs::read_dir(&cases).expect("cases").count();
    assert!(
        run.stdout
            .contains(&format!("{count} cases: {count} passed, 0 failed")),
        "{}",
        run.stdout
    );
}

#[test]
pub(crate) fn example_service_rust() {
    passes_every_case(guests::EXAMPLE_SERVICE_RUST);
}

#[test]
pub(crate) fn example_service_js() {
    passes_every_case(guests::example_service_js());
}

#[test]
pub(crate) fn example_service_python() {
    passes_every_case(guests::example_service_python());
}

#[test]
pub(crate) fn example_service_c() {
    passes_every_case(guests::example_service_c());
}

/// The example's provider directory with the four components beside `provider.yaml`.
fn provider_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::copy(
        example().join("provider.yaml"),
        dir.path().join("provider.yaml"),
    )
    .expect("copy provider.yaml");
    for (_, file, bytes) in languages() {
        std::fs::write(dir.path().join(file), bytes).expect("write component");
    }
    dir
}

/// Packs the example provider into a bundle in `dir`; returns its path.
fn pack(dir: &Path) -> String {
    let source = provider_dir();
    let bundle = dir.join("example-service.opmb").display().to_string();
    let run = opm([
        "provider",
        "pack",
        &source.path().display().to_string(),
        "-o",
        &bundle,
    ]);
    assert!(run.exited(0), "{}", run.stderr);
    bundle
}

#[test]
fn one_bundle_mixes_four_languages() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bundle = pack(dir.path());
    let run = opm(["provider", "inspect", &bundle, "-o", "json"]);
    assert!(run.exited(0), "{}", run.stderr);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let mut languages: Vec<String> = report["transformers"]
        .as_array()
        .expect("transformers")
        .iter()
        .map(|t| t["language"].as_str().unwrap_or("unknown").to_owned())
        .collect();
    languages.sort();
    assert_eq!(languages.len(), 4, "{languages:?}");
    assert_eq!(languages[0], "C");
    assert_eq!(languages[1], "JavaScript");
    assert!(languages[2].starts_with("Python 3."), "{languages:?}");
    assert_eq!(languages[3], "Rust");

    let text = opm(["provider", "inspect", &bundle]);
    assert!(text.exited(0), "{}", text.stderr);
    for built in [
        "built     C, with",
        "built     JavaScript, with",
        "built     Rust, with",
    ] {
        assert!(text.stdout.contains(built), "{built}: {}", text.stdout);
    }
    assert!(text.stdout.contains("ComponentizeJS"), "{}", text.stdout);
}

#[test]
fn every_language_renders_the_module_to_the_same_bytes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bundle = pack(dir.path());
    let module = std::fs::read_to_string(example().join("module.yaml")).expect("module");
    let render = |text: &str, name: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write module");
        let run = opm([
            "mod",
            "build",
            &path.display().to_string(),
            "-p",
            &bundle,
            "--verbose",
        ]);
        assert!(run.exited(0), "{name}: {}", run.stderr);
        run
    };
    // As written: each component rendered by another language.
    let mixed = render(&module, "mixed.yaml");
    assert_eq!(
        mixed.stdout.matches("\nkind: Service\n").count(),
        4,
        "{}",
        mixed.stdout
    );
    for (language, _, _) in languages() {
        let transformer = match language {
            "rust" => "RustServiceTransformer",
            "js" => "JavaScriptServiceTransformer",
            "python" => "PythonServiceTransformer",
            _ => "CServiceTransformer",
        };
        assert!(mixed.stderr.contains(transformer), "{}", mixed.stderr);
    }
    // Each language alone.
    for (language, _, _) in languages() {
        let mut text = module.clone();
        for other in ["rust", "js", "python", "c"] {
            text = text.replace(
                &format!("example.opm.dev/language: {other}}}"),
                &format!("example.opm.dev/language: {language}}}"),
            );
        }
        assert_eq!(
            text.matches(&format!("language: {language}}}")).count(),
            4,
            "every component of the module picks {language}"
        );
        let alone = render(&text, &format!("{language}.yaml"));
        assert_eq!(
            alone.stdout, mixed.stdout,
            "{language} renders the module differently"
        );
    }
    // The output is what the rules say, not merely the same four times.
    assert!(
        mixed.stdout.contains("  clusterIP: None\n"),
        "{}",
        mixed.stdout
    );
    assert!(
        mixed.stdout.contains("    nodePort: 30080\n"),
        "{}",
        mixed.stdout
    );
    assert!(
        mixed.stdout.contains("note: café ü ☃ 😀"),
        "{}",
        mixed.stdout
    );
}
