//! The catalog outside the repository and the conformance run (issue 48, item 8): `opm provider
//! export-catalog` writes the catalog the built-in providers take, which a provider directory
//! takes with `definitionsFrom:` and renders with exactly as the built-in provider does; `opm
//! provider check` renders every example with a provider and prints the coverage table, fails
//! naming the example a provider cannot render, and says when a provider follows another
//! catalog version.

use std::path::Path;

use opm_tests::{hello, opm};
use serde_json::Value;

/// The built-in docker-compose provider as a source directory whose definitions are the
/// catalog `opm provider export-catalog` wrote beside it (`definitionsFrom: catalog.yaml`), with
/// the transformers `keep` accepts.
fn compose_from_exported_catalog(keep: impl Fn(&str) -> bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = opm([
        "provider",
        "export-catalog",
        "--out",
        &dir.path().display().to_string(),
    ]);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(
        run.stdout.starts_with("exported catalog 1.") && run.stdout.contains("catalog.yaml"),
        "{}",
        run.stdout
    );
    let mut provider = opm_runtime::embedded::PROVIDERS
        .load_named("docker-compose")
        .expect("the built-in provider loads");
    provider.manifest.transformers.retain(|fqn, _| keep(fqn));
    provider.manifest.definitions.clear();
    provider.manifest.catalog = None;
    let components = provider
        .manifest
        .transformers
        .iter()
        .map(|(fqn, spec)| (&spec.component, &provider.components[fqn]))
        .chain(
            provider
                .manifest
                .renderer
                .as_ref()
                .map(|spec| &spec.component)
                .zip(provider.renderer.as_ref()),
        );
    for (path, bytes) in components {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, &bytes[..]).unwrap();
    }
    let manifest = serde_saphyr::to_string(&provider.manifest).expect("serializes");
    std::fs::write(
        dir.path().join("provider.yaml"),
        format!("definitionsFrom: catalog.yaml\n{manifest}"),
    )
    .unwrap();
    dir
}

fn path(dir: &Path) -> String {
    dir.display().to_string()
}

/// What `export-catalog` writes is the catalog the built-in providers hold: a provider
/// directory that takes it renders `examples/hello` byte for byte as the built-in provider does,
/// and records the catalog's version.
#[test]
fn the_exported_catalog_is_a_provider_directory_s_definitions_and_renders() {
    let dir = compose_from_exported_catalog(|_| true);
    let built_in = opm(["mod", "build", &hello(), "-p", "docker-compose"]);
    let outside = opm(["mod", "build", &hello(), "-p", &path(dir.path())]);
    assert!(outside.exited(0), "{}", outside.stderr);
    assert_eq!(outside.stdout, built_in.stdout);
    let inspect = opm(["provider", "inspect", &path(dir.path()), "-o", "json"]);
    assert!(inspect.exited(0), "{}", inspect.stderr);
    let catalog = opm_runtime::catalog::embedded();
    let loaded = opm_core::provider::load_dir(dir.path()).expect("loads");
    assert_eq!(
        loaded.manifest.catalog.map(|c| c.version),
        Some(catalog.version.clone())
    );
    assert_eq!(
        catalog.compare(&loaded.manifest.definitions).same.len(),
        catalog.definitions.len()
    );
    // On stdout, the same text.
    let stdout = opm(["provider", "export-catalog"]);
    assert_eq!(
        stdout.stdout,
        std::fs::read_to_string(dir.path().join("catalog.yaml")).unwrap()
    );
}

/// `opm provider check` of each built-in provider (docker-compose, kubernetes, and quadlet
/// when it is built in) renders every example and prints the coverage table: the workload
/// transformer reads the container's image, and compose's job service does not read a claim's
/// size (compose volumes have none).
#[test]
fn check_of_the_built_in_providers_prints_the_coverage_table() {
    for name in opm_runtime::embedded::PROVIDERS.names() {
        let run = opm(["provider", "check", name]);
        assert!(run.exited(0), "{name}: {}\n{}", run.stderr, run.stdout);
        for expected in [
            format!("provider {name} "),
            "catalog: this opm's is 1.".to_owned(),
            "  ok      hello ".to_owned(),
            "  ok      shop ".to_owned(),
            "TRANSFORMER".to_owned(),
            "DEFINITION".to_owned(),
        ] {
            assert!(
                run.stdout.contains(&expected),
                "{name}: {expected}:\n{}",
                run.stdout
            );
        }
        assert_eq!(run.stderr, "", "{name}: it follows this opm's catalog");
    }
    let run = opm(["provider", "check", "docker-compose", "-o", "json"]);
    assert!(run.exited(0), "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let fields = |transformer: &str, definition: &str| {
        report["coverage"]["transformers"][format!("transformer.opm.dev/compose@v1#{transformer}")]
            ["fields"][format!("opm.dev/{definition}")]
        .clone()
    };
    assert_eq!(
        fields(
            "StatelessServiceTransformer",
            "resources/workload@v1#Container"
        )["image"],
        true,
        "{report:#}"
    );
    assert_eq!(
        fields(
            "JobServiceTransformer",
            "traits/storage@v1#PersistentStorage"
        )["*.size"],
        false,
        "{report:#}"
    );
    assert_eq!(report["catalog"]["follows"], report["catalog"]["version"]);
    assert!(
        report["examples"]
            .as_array()
            .unwrap()
            .iter()
            .all(|example| example["problems"] == serde_json::json!([])),
        "{report:#}"
    );
}

/// A provider without its Container transformers renders no example with a workload: the
/// check fails, naming each such example, its component and why.
#[test]
fn a_provider_missing_the_container_transformer_fails_naming_the_example() {
    let dir = compose_from_exported_catalog(|fqn| !fqn.ends_with("ServiceTransformer"));
    let run = opm(["provider", "check", &path(dir.path())]);
    assert!(run.exited(1), "{}\n{}", run.stderr, run.stdout);
    assert!(
        run.stderr
            .contains("error: provider docker-compose does not render"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("hello"), "{}", run.stderr);
    assert!(
        run.stdout.contains("  FAILED  hello ")
            && run.stdout.contains(
                "examples/hello/module.yaml:12:3: component \"api\" matches no transformer"
            ),
        "{}",
        run.stdout
    );
}

/// A provider that follows an older catalog, or states none, renders as before and is told so;
/// a catalog file whose version the manifest contradicts is refused naming both.
#[test]
fn a_provider_of_another_catalog_version_is_told_so() {
    let dir = compose_from_exported_catalog(|_| true);
    let catalog = dir.path().join("catalog.yaml");
    let text = std::fs::read_to_string(&catalog).unwrap();
    let current = &opm_runtime::catalog::embedded().version;
    std::fs::write(
        &catalog,
        text.replace(&format!("\nversion: {current}\n"), "\nversion: 0.9.0\n"),
    )
    .unwrap();
    let examples = opm_tests::repo_root().join("examples/hello");
    let run = opm([
        "provider",
        "check",
        &path(dir.path()),
        "--examples",
        &path(&examples),
    ]);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "warning: the provider follows catalog 0.9.0, and this opm's is {current}, a new \
             major version: modules written for it may not vet with this provider; `opm provider \
             export-catalog` writes this opm's"
        )),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("  ok      hello "), "{}", run.stdout);

    let manifest = dir.path().join("provider.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, format!("catalog: {{version: 0.8.0}}\n{text}")).unwrap();
    let run = opm(["mod", "vet", &hello(), "-p", &path(dir.path())]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "definitionsFrom catalog.yaml: the manifest says catalog.version 0.8.0, which is not \
             the catalog's version"
        ),
        "{}",
        run.stderr
    );
}
