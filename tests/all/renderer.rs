//! The renderer as the host meets it: a provider's renderer that misbehaves in every way the
//! contract allows a guest to (`transformers/testing/hostile-renderer`, told how by the module
//! label `renderer-mode`) fails the render with its name and nothing written, and never makes
//! the host write outside `--out-dir`, wait, allocate or print without bound; the shared
//! catalog is one vocabulary for both embedded providers; what a provider cannot honour is said,
//! with its reason.

use opm_tests::{guests, opm, write_file};

/// The embedded Kubernetes provider as a source directory, with the hostile renderer in place
/// of its own.
fn provider_with_hostile_renderer() -> tempfile::TempDir {
    let dir = opm_tests::provider_with(&[]);
    let manifest_path = dir.path().join("provider.yaml");
    let manifest = std::fs::read_to_string(&manifest_path).unwrap();
    let mut manifest: serde_json::Value = serde_saphyr::from_str(&manifest).unwrap();
    manifest["renderer"]["component"] = "hostile-renderer.wasm".into();
    manifest["renderer"]["name"] = "Hostile Renderer".into();
    manifest["renderer"]["limits"] =
        serde_json::json!({"fuel": 500_000_000, "memory": "256Mi", "timeout": "2s"});
    std::fs::write(&manifest_path, serde_saphyr::to_string(&manifest).unwrap()).unwrap();
    std::fs::write(
        dir.path().join("hostile-renderer.wasm"),
        guests::TESTING_HOSTILE_RENDERER,
    )
    .unwrap();
    dir
}

/// A module of one stateless component and one Secret, labelled with the renderer's `mode`.
fn module(dir: &std::path::Path, mode: &str) -> String {
    write_file(
        dir,
        "module.yaml",
        &format!(
            "apiVersion: core.opm.dev/v1
kind: Module
metadata:
  name: shop
  version: 1.0.0
  labels: {{renderer-mode: {mode}}}
components:
  api:
    resources:
      Container: {{image: nginx:1.27, ports: {{http: {{containerPort: 8080}}}}}}
    traits:
      Expose: {{type: ClusterIP}}
  creds:
    resources:
      Secret: {{type: Opaque, stringData: {{password: correct-horse-battery}}}}
"
        ),
    )
}

fn render(mode: &str, extra: &[&str]) -> (tempfile::TempDir, opm_tests::Run) {
    let provider = provider_with_hostile_renderer();
    let module = module(provider.path(), mode);
    let provider_dir = provider.path().display().to_string();
    let mut args = vec!["mod", "build", &module, "-p", &provider_dir];
    args.extend_from_slice(extra);
    let run = opm(args);
    (provider, run)
}

#[test]
fn a_renderer_lays_out_what_the_host_writes() {
    let (_dir, run) = render("list", &[]);
    assert!(run.exited(0), "{}", run.stderr);
    // The resources in the order of the plan's calls (by component, then transformer), each
    // call's as it returned them.
    assert_eq!(
        run.stdout,
        "Service api api\nDeployment api api\nSecret creds creds\n"
    );
    // --verbose reports the renderer's call like a transform call.
    let (_dir, run) = render("list", &["--verbose=json"]);
    assert!(run.exited(0), "{}", run.stderr);
    let event = run
        .stderr
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|event| event["event"] == "renderer")
        .unwrap_or_else(|| panic!("no renderer event in\n{}", run.stderr));
    assert_eq!(event["renderer"], "renderer Hostile Renderer 1.0.0");
    assert_eq!(event["files"], 1);
    assert!(event["fuel"].as_u64().unwrap() > 0, "{event}");
}

#[test]
fn a_renderer_that_misbehaves_fails_the_render_by_name_and_nothing_is_written() {
    for (mode, expected) in [
        ("spin", "ran out of fuel: used all 500000000 units"),
        ("hog", "hit the memory limit of 256 MiB"),
        ("panic", "panicked"),
        (
            "escape",
            "returned the file path \"../outside.txt\", which is absolute or has an empty, `.` or `..` segment",
        ),
        ("absolute", "returned the file path \"/etc/opm-was-here\""),
        ("twice", "returned the file \"a.yaml\" twice"),
        (
            "two-files",
            "returned 2 files where the output is one stream: give --out-dir DIR",
        ),
        (
            "no-such-resource",
            "asked for resource #4294967295 as YAML, but it was given 3",
        ),
        (
            "yaml-flood",
            "asked for 1048576 YAML documents of 3 resources, over the limit of 4 per resource",
        ),
        (
            "huge",
            "more data at once than its output limit of 64.0 MiB allows",
        ),
        (
            "refuse-nothing-there",
            "refused resource #4294967295, but it was given 3",
        ),
        ("fail", "failed: cannot write shop as yaml"),
    ] {
        let out = tempfile::tempdir().unwrap();
        let out_dir = out.path().join("deploy");
        std::fs::create_dir(&out_dir).unwrap();
        std::fs::write(out_dir.join("before.yaml"), "kept\n").unwrap();
        let target = out_dir.display().to_string();
        let with_dir = matches!(mode, "escape" | "absolute" | "twice");
        let extra: Vec<&str> = if with_dir {
            vec!["--out-dir", &target]
        } else {
            vec![]
        };
        let (_dir, run) = render(mode, &extra);
        assert!(run.exited(1), "{mode}: {:?}\n{}", run.status, run.stderr);
        assert_eq!(run.stdout, "", "{mode}");
        assert!(
            run.stderr
                .contains("renderer Hostile Renderer 1.0.0 (blake3:")
                && run.stderr.contains(expected),
            "{mode}: {expected:?} missing from\n{}",
            run.stderr
        );
        assert_eq!(
            std::fs::read_to_string(out_dir.join("before.yaml")).unwrap(),
            "kept\n",
            "{mode}: the output directory is as it was"
        );
        assert!(!out.path().join("outside.txt").exists(), "{mode}");
        assert!(
            !std::path::Path::new("/etc/opm-was-here").exists(),
            "{mode}"
        );
    }
}

#[test]
fn what_a_renderer_refuses_fails_the_transformers_that_returned_it() {
    let (_dir, run) = render("refuse-all", &[]);
    assert!(run.exited(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("render failed with 3 problems in 2 components"),
        "{}",
        run.stderr
    );
    for (component, kind) in [
        ("api", "Deployment"),
        ("api", "Service"),
        ("creds", "Secret"),
    ] {
        assert!(
            run.stderr.contains(&format!("component {component:?}:"))
                && run.stderr.contains(&format!(
                    "returned a resource that renderer Hostile Renderer 1.0.0 refuses: {kind} is \
                     not welcome here"
                )),
            "{component} {kind}:\n{}",
            run.stderr
        );
    }
}

/// What a renderer logs at `warn` level is a warning the user sees, redacted like any guest's
/// words: the Secret's value reaches the rendered output only.
#[test]
fn a_renderer_s_warnings_are_shown_and_never_hold_a_secret() {
    let (_dir, run) = render("log-secret", &[]);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("warning: renderer Hostile Renderer 1.0.0: {"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("correct-horse-battery"),
        "{}",
        run.stderr
    );
}

/// The definitions are the module's vocabulary, not one provider's: both embedded bundles hold
/// exactly the shared catalog's.
#[test]
fn both_embedded_providers_hold_the_shared_catalog_byte_for_byte() {
    let catalog = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../providers/catalog/definitions.yaml"),
    )
    .unwrap();
    let catalog: serde_json::Value = serde_saphyr::from_str(&catalog).unwrap();
    let canonical = |value: &serde_json::Value| opm_runtime::bundle::format::canonical_json(value);
    let expected = canonical(&catalog["definitions"]);
    for name in ["kubernetes", "docker-compose"] {
        let bundle = opm_runtime::bundle::read(
            name,
            opm_runtime::provider::embedded_bundle_of(name).expect("embedded"),
        )
        .unwrap();
        let manifest: serde_json::Value = serde_json::from_slice(&bundle.manifest).unwrap();
        assert!(
            canonical(&manifest["definitions"]) == expected,
            "{name}'s definitions differ from providers/catalog/definitions.yaml"
        );
    }
}

/// A module that vets on one provider vets on the other; what compose cannot honour is a
/// warning with the provider's reason, an error under --strict, and a component compose cannot
/// run is left out with its reason.
#[test]
fn what_a_provider_cannot_honour_is_said_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let module = write_file(
        dir.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: shop, version: 1.0.0}
components:
  web:
    resources:
      Container: {image: nginx:1.27, ports: {http: {containerPort: 8080}}}
    traits:
      Expose: {type: ClusterIP}
      Ingress: {host: shop.example.com}
  nightly:
    metadata: {labels: {core.opm.dev/workload-type: cronjob}}
    resources:
      Container: {image: busybox:1.36, command: ['true']}
    traits:
      Schedule: {cron: '0 3 * * *'}
",
    );
    for provider in ["kubernetes", "docker-compose"] {
        let run = opm(["mod", "vet", &module, "-p", provider]);
        assert!(run.exited(0), "{provider}: {}{}", run.stdout, run.stderr);
    }
    let run = opm(["mod", "build", &module, "-p", "docker-compose"]);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(
        run.stderr.contains("component \"web\": no matched transformer handles opm.dev/traits/network@v1#Ingress; opm.dev/traits/network@v1#Ingress: compose has no HTTP router"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("component \"nightly\" is left out: provider docker-compose cannot run it: compose has no scheduler"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("services:"), "{}", run.stdout);
    assert!(!run.stdout.contains("nightly"), "{}", run.stdout);
    let strict = opm(["mod", "build", &module, "-p", "docker-compose", "--strict"]);
    assert!(strict.exited(1), "{}", strict.stderr);
    assert_eq!(strict.stdout, "");
}

/// The guest `testing-hostile-renderer` is exercised by the tests above.
pub(crate) fn testing_hostile_renderer() {}

/// A provider that ships only a renderer writes the others' objects in its own form: a
/// third-party renderer for the standard transformers, whatever platform label it states.
#[test]
fn a_provider_that_ships_only_a_renderer_writes_the_standard_transformers_objects() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("hostile-renderer.wasm"),
        guests::TESTING_HOSTILE_RENDERER,
    )
    .unwrap();
    write_file(
        dir.path(),
        "provider.yaml",
        "apiVersion: core.opm.dev/v1
kind: Provider
metadata: {name: listing, version: 0.1.0, labels: {core.opm.dev/format: listing}}
renderer: {name: Listing, version: 0.1.0, component: hostile-renderer.wasm}
transformers: {}
",
    );
    let module = module(dir.path(), "list");
    let provider = dir.path().display().to_string();
    let run = opm(["mod", "build", &module, "-p", "kubernetes", "-p", &provider]);
    assert!(run.exited(0), "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "Service api api\nDeployment api api\nSecret creds creds\n"
    );
}

/// With docker-compose as with Kubernetes, a Secret's value reaches the rendered output and
/// nothing else: not the warnings, not `--verbose` (the calls' and the renderer's logs), not its
/// JSON form.
#[test]
fn a_secret_reaches_only_the_compose_file() {
    let module = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/compose-run/module.yaml")
        .display()
        .to_string();
    for verbose in [None, Some("--verbose"), Some("--verbose=json")] {
        let mut args = vec!["mod", "build", &module, "-p", "docker-compose"];
        args.extend(verbose);
        let run = opm(args);
        assert!(run.exited(0), "{verbose:?}: {}", run.stderr);
        assert!(
            run.stdout.contains("API_TOKEN: s3cret-token-for-compose"),
            "{}",
            run.stdout
        );
        assert!(
            !run.stderr.contains("s3cret-token-for-compose"),
            "{verbose:?}: {}",
            run.stderr
        );
    }
}
