//! The author's loop on real inputs, with nothing stale, and whole providers under golden
//! tests (issue 48, items 3–5): `opm transformer case --from` writes what a real module's call
//! receives as a case that passes; `opm mod vet -o json --inputs` shows exactly what a call
//! receives (a guest that echoes its context agrees); a declared shared source rebuilds the
//! project; `opm mod build -p DIR` warns of a component older than its sources; and `opm
//! transformer test --module` renders a provider of a transformer project and a renderer
//! project, both scaffolded in Rust and built with the real toolchain, against `rendered/`.

use std::path::Path;
use std::time::{Duration, SystemTime};

use opm_tests::{SHOWS_CONTEXT, guests, opm, repo_root};
use serde_json::Value;

const DEPLOYMENT: &str = "transformer.opm.dev/workload@v1#DeploymentTransformer";

fn path(p: &Path) -> String {
    p.display().to_string()
}

fn json_of(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Sets the modification time of `path` (a file it creates if missing) to `ago` before now.
fn touch(path: &Path, ago: Duration) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open");
    file.set_modified(SystemTime::now() - ago)
        .expect("set mtime");
}

/// The embedded Kubernetes provider as a source directory that is also the transformer project
/// of its Deployment transformer (`provider: .`), whose component is there already.
fn deployment_project() -> tempfile::TempDir {
    let dir = opm_tests::provider_with(&[]);
    let manifest = opm_runtime::embedded::load().expect("embedded").manifest;
    let component = &manifest.transformers[DEPLOYMENT].component;
    std::fs::write(
        dir.path().join("transformer.yaml"),
        format!("name: deployment\nbuild: \"true\"\ncomponent: {component}\nprovider: .\n"),
    )
    .expect("write transformer.yaml");
    dir
}

/// The call of `transformer` on `component` in the JSON of `opm mod vet -o json --inputs`.
fn vetted_call<'a>(plan: &'a Value, component: &str, transformer: &str) -> &'a Value {
    plan["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .find(|call| call["component"] == component && call["transformer"] == transformer)
        .unwrap_or_else(|| panic!("no call of {transformer} on {component} in {plan:#}"))
}

/// `case --from examples/shop` writes the inputs of the Deployment transformer's call on `api`
/// exactly as `mod vet --inputs` shows them, and the expectation of what the component returns,
/// which is what the render made of that call; `opm transformer test` passes it.
#[test]
fn a_case_from_a_real_module_passes_for_the_component_it_came_from() {
    let project = deployment_project();
    let dir = path(project.path());
    let shop = path(&repo_root().join("examples/shop/module.yaml"));
    let case = |name: &str, component: &str| {
        opm([
            "transformer",
            "case",
            name,
            "--from",
            &shop,
            "--component",
            component,
            // The provider's one component serves each of its transformers: say which.
            "--transformer",
            DEPLOYMENT,
            "--project",
            &dir,
            "--no-build",
        ])
    };
    let run = case("shop-api", "api");
    assert!(run.exited(0), "{}\n{}", run.stdout, run.stderr);
    let folder = project.path().join("cases/shop-api");
    assert!(
        run.stdout.contains(&format!(
            "wrote {}: component api of {shop} as {DEPLOYMENT} receives it",
            folder.display()
        )),
        "{}",
        run.stdout
    );
    assert_eq!(
        opm_tests::file_names(&folder),
        ["component.json", "context.json", "expected.json"]
    );
    let run = opm(["transformer", "test", &dir, "--no-build"]);
    assert!(run.exited(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("1 case: 1 passed, 0 failed"),
        "{}",
        run.stdout
    );

    // What vet shows the call receives is what the case holds.
    let vet = opm([
        "mod",
        "vet",
        &shop,
        "-p",
        &dir,
        "-o",
        "json",
        "--inputs",
        "--plan-only",
    ]);
    assert!(vet.exited(0), "{}", vet.stderr);
    let plan: Value = serde_json::from_str(&vet.stdout).expect("vet prints JSON");
    let call = vetted_call(&plan, "api", DEPLOYMENT);
    assert_eq!(
        call["receives"]["component"],
        json_of(&folder.join("component.json"))
    );
    assert_eq!(
        call["receives"]["context"],
        json_of(&folder.join("context.json"))
    );
    assert_eq!(call["receives"]["context"]["transformer"], DEPLOYMENT);

    // And what the case expects is what the render made of that call.
    let build = opm(["mod", "build", &shop, "-p", &dir, "-o", "json"]);
    assert!(build.exited(0), "{}", build.stderr);
    let list: Value = serde_json::from_str(&build.stdout).expect("a List");
    let rendered = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|item| item["kind"] == "Deployment" && item["metadata"]["name"] == "api")
        .expect("the api Deployment");
    let expected = json_of(&folder.join("expected.json"));
    assert_eq!(
        expected["resources"][0]["spec"]["template"]["spec"]["containers"],
        rendered["spec"]["template"]["spec"]["containers"]
    );

    // What cannot be a case says why.
    let run = case("shop-api", "api");
    assert!(run.exited(2), "{}", run.stderr);
    assert!(run.stderr.contains("exists already"), "{}", run.stderr);
    let run = case("nope", "nope");
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("has no component \"nope\" (it has: api, "),
        "{}",
        run.stderr
    );
    let run = case("credentials", "db-credentials");
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains(&format!("not by {DEPLOYMENT} of this project")),
        "{}",
        run.stderr
    );
    assert!(!project.path().join("cases/credentials").exists());
}

/// `mod vet -o json --inputs` shows the context a call receives: a guest that renders its
/// context as a ConfigMap says the same, field for field, labels included.
#[test]
fn vet_inputs_are_what_a_guest_that_echoes_its_context_receives() {
    let provider = opm_tests::provider_with(&[(
        SHOWS_CONTEXT,
        opm_tests::SHOWS_CONTEXT_ENTRY,
        guests::TESTING_CONTEXT,
    )]);
    let module = opm_tests::write_file(
        provider.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1\nkind: Module\n\
         metadata: {name: shop, version: 1.2.0, namespace: shops, labels: {team: web}}\n\
         components:\n\
         \x20 shown:\n    metadata: {labels: {core.opm.dev/workload-type: context}}\n\
         \x20   resources:\n      Container: {image: busybox:1.36}\n",
    );
    let dir = path(provider.path());
    let flags = ["-p", &dir, "--instance", "shop-eu", "-o", "json"];
    let build = opm(["mod", "build", &module].iter().chain(&flags));
    assert!(build.exited(0), "{}", build.stderr);
    let list: Value = serde_json::from_str(&build.stdout).expect("a List");
    let shown = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|item| item["kind"] == "ConfigMap")
        .expect("the context's ConfigMap")
        .clone();
    let vet = opm(["mod", "vet", &module, "--inputs"].iter().chain(&flags));
    assert!(vet.exited(0), "{}", vet.stderr);
    let plan: Value = serde_json::from_str(&vet.stdout).expect("vet prints JSON");
    let receives = &vetted_call(&plan, "shown", SHOWS_CONTEXT)["receives"];
    let context = receives["context"].as_object().expect("a context");
    for (field, value) in context {
        if field == "labels" {
            assert_eq!(*value, shown["metadata"]["labels"], "labels");
        } else {
            let echoed = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            assert_eq!(shown["data"][field], echoed.as_str(), "{field}");
        }
    }
    assert_eq!(context.len(), 11, "every field of the context: {context:?}");
    assert_eq!(receives["component"]["metadata"]["name"], "shown");

    let run = opm(["mod", "vet", &module, "-p", &dir, "--inputs"]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(run.stderr.contains("use it with -o json"), "{}", run.stderr);
}

/// A project whose build copies a prebuilt component and whose `sources:` name shared code
/// beside it: an edit there rebuilds before the cases run; untouched, it does not; an entry
/// that names nothing is an error naming it.
#[test]
fn an_edit_to_a_declared_shared_source_triggers_a_rebuild() {
    let work = tempfile::tempdir().expect("temp dir");
    std::fs::write(work.path().join("prebuilt.wasm"), guests::TESTING_CONTEXT).expect("write");
    let project = work.path().join("shows");
    let manifest = |sources: &str| {
        std::fs::create_dir_all(&project).expect("mkdir");
        std::fs::write(
            project.join("transformer.yaml"),
            format!(
                "name: shows\nbuild: cp ../prebuilt.wasm shows.wasm\ncomponent: shows.wasm\n\
                 sources: [{sources}]\n"
            ),
        )
        .expect("write transformer.yaml");
    };
    manifest("\"../common/*.py\"");
    std::fs::create_dir_all(project.join("cases/one")).expect("mkdir");
    std::fs::write(
        project.join("cases/one/component.json"),
        r#"{"metadata": {"name": "one", "labels": {}, "annotations": {}}, "resources": [],
            "traits": [], "policies": [], "spec": {}, "defaults": {}}"#,
    )
    .expect("write case");
    let hour = Duration::from_secs(3600);
    touch(&work.path().join("common/shared.py"), hour);
    let dir = path(&project);
    let run = opm(["transformer", "test", &dir, "--bless"]);
    assert!(run.exited(0), "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("building shows"), "{}", run.stderr);

    // Every source older than the component: tested as it is.
    for source in ["transformer.yaml", "cases/one/component.json"] {
        touch(&project.join(source), hour);
    }
    touch(&project.join("shows.wasm"), Duration::from_secs(60));
    let run = opm(["transformer", "test", &dir]);
    assert!(run.exited(0), "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("shows is up to date"), "{}", run.stderr);

    // An edit to the shared code beside the project: built again first.
    touch(&work.path().join("common/shared.py"), Duration::ZERO);
    let run = opm(["transformer", "test", &dir]);
    assert!(run.exited(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "{} changed since shows.wasm was built",
            std::fs::canonicalize(work.path().join("common/shared.py"))
                .expect("canonical")
                .display()
        )),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("building shows"), "{}", run.stderr);
    // A file of the shared folder the entry does not name is not a source.
    touch(&project.join("transformer.yaml"), hour);
    touch(&work.path().join("common/shared.py"), hour);
    touch(&project.join("shows.wasm"), Duration::from_secs(60));
    touch(&work.path().join("common/notes.txt"), Duration::ZERO);
    let run = opm(["transformer", "test", &dir]);
    assert!(run.stderr.contains("shows is up to date"), "{}", run.stderr);

    // A source entry that takes in the project itself (`..`, the folder above it) does not make
    // its own component and cases sources: an untouched project stays up to date (review of
    // issue 48: the paths were compared as named, so `..` made every build stale).
    manifest("\"..\"");
    touch(&project.join("transformer.yaml"), hour);
    touch(&work.path().join("common/notes.txt"), hour);
    touch(&work.path().join("prebuilt.wasm"), hour);
    touch(&project.join("shows.wasm"), Duration::from_secs(60));
    let run = opm(["transformer", "test", &dir]);
    assert!(run.stderr.contains("shows is up to date"), "{}", run.stderr);

    manifest("../commons/*.py");
    let run = opm(["transformer", "test", &dir]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("sources entry \"../commons/*.py\" names no file"),
        "{}",
        run.stderr
    );
}

/// `opm mod build -p DIR` renders a provider directory's components as built, and warns of one
/// older than a source of the project that builds it (a project of `provider: ..` below the
/// directory), naming the component and the newest source; a fresh one gets no warning.
#[test]
fn mod_build_warns_of_a_component_older_than_its_sources() {
    let provider = opm_tests::provider_with(&[(
        SHOWS_CONTEXT,
        "description: Renders its context as a ConfigMap\n\
         requiredLabels: {core.opm.dev/workload-type: context}\n\
         requiredResources: [opm.dev/resources/workload@v1#Container]\n\
         component: shows/shows.wasm\n",
        guests::TESTING_CONTEXT,
    )]);
    let project = provider.path().join("shows");
    std::fs::write(
        project.join("transformer.yaml"),
        "name: shows\nbuild: \"true\"\ncomponent: shows.wasm\nprovider: ..\n",
    )
    .expect("write transformer.yaml");
    let hour = Duration::from_secs(3600);
    touch(&project.join("transformer.yaml"), hour);
    touch(&project.join("src/lib.rs"), hour);
    touch(&project.join("shows.wasm"), Duration::from_secs(60));
    let module = opm_tests::write_file(
        provider.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: shop, version: 1.2.0}\n\
         components:\n\
         \x20 shown:\n    metadata: {labels: {core.opm.dev/workload-type: context}}\n\
         \x20   resources:\n      Container: {image: busybox:1.36}\n",
    );
    let dir = path(provider.path());
    let run = opm(["mod", "build", &module, "-p", &dir]);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);

    touch(&project.join("src/lib.rs"), Duration::ZERO);
    let run = opm(["mod", "build", &module, "-p", &dir]);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(run.stdout.contains("kind: ConfigMap"), "{}", run.stdout);
    let source = std::fs::canonicalize(&project)
        .expect("canonical")
        .join("src/lib.rs");
    assert!(
        run.stderr.contains(&format!(
            "warning: provider {dir}: component shows/shows.wasm is older than its source {}; \
             this render uses it as built",
            source.display()
        )),
        "{}",
        run.stderr
    );
}

/// A provider made of two projects `opm transformer new` scaffolds in Rust — a transformer and
/// a renderer, each `provider: ..` — is golden-tested whole: `opm transformer test --module`
/// renders with it alone and compares every file with `rendered/`; `--with ..` (its own
/// provider) is the same render, and `--with kubernetes` says what to do instead.
#[test]
fn a_provider_of_a_transformer_and_a_renderer_is_golden_tested_whole() {
    let work = tempfile::tempdir().expect("temp dir");
    let provider = work.path().join("acme");
    for (name, extra) in [("greeter", &[][..]), ("lines", &["--renderer"][..])] {
        let dir = path(&provider.join(name));
        let args = ["transformer", "new", name, "--lang", "rust", "--dir", &dir];
        let run = opm(args.iter().chain(extra));
        assert!(run.exited(0), "{}", run.stderr);
        // Each project ships in the provider of the folder above it.
        let manifest = provider.join(name).join("transformer.yaml");
        let text = std::fs::read_to_string(&manifest).expect("read");
        let text = if text.contains("\nprovider: .\n") {
            text.replace("\nprovider: .\n", "\nprovider: ..\n")
        } else {
            format!("{text}provider: ..\n")
        };
        std::fs::write(&manifest, text).expect("write");
        let run = opm(["transformer", "build", &dir]);
        assert!(run.exited(0), "{}", run.stderr);
    }
    // The provider: the transformer's definitions and transformer, the renderer's renderer.
    let greeter = std::fs::read_to_string(provider.join("greeter/provider.yaml")).expect("read");
    let lines = std::fs::read_to_string(provider.join("lines/provider.yaml")).expect("read");
    let mut manifest: serde_json::Map<String, Value> =
        serde_saphyr::from_str(&greeter).expect("greeter's provider.yaml");
    let renderer: serde_json::Map<String, Value> =
        serde_saphyr::from_str(&lines).expect("lines' provider.yaml");
    manifest.insert("metadata".into(), renderer["metadata"].clone());
    manifest["metadata"]["name"] = "acme".into();
    let mut renderer_entry = renderer["renderer"].clone();
    renderer_entry["component"] = "lines/lines.wasm".into();
    manifest.insert("renderer".into(), renderer_entry);
    for spec in manifest["transformers"]
        .as_object_mut()
        .expect("transformers")
        .values_mut()
    {
        spec["component"] = "greeter/greeter.wasm".into();
    }
    std::fs::write(
        provider.join("provider.yaml"),
        serde_json::to_string_pretty(&manifest).expect("JSON is YAML"),
    )
    .expect("write provider.yaml");

    let greeter_dir = path(&provider.join("greeter"));
    let module = path(&provider.join("greeter/module.yaml"));
    let test = |extra: &[&str]| {
        let args = [
            "transformer",
            "test",
            &greeter_dir,
            "--no-build",
            "--module",
            &module,
        ];
        opm(args.iter().chain(extra))
    };
    let run = test(&["--bless"]);
    assert!(run.exited(0), "{}\n{}", run.stdout, run.stderr);
    let golden = provider.join("greeter/rendered");
    assert!(
        run.stdout.contains(&format!(
            "blessed render of {module} with {}: 1 resource, written to {}",
            provider.join("greeter/..").display(),
            golden.display()
        )),
        "{}",
        run.stdout
    );
    let jsonl = std::fs::read_to_string(golden.join("resources.jsonl")).expect("the golden");
    let resource: Value = serde_json::from_str(jsonl.trim_end()).expect("one JSON line");
    assert_eq!(resource["kind"], "ConfigMap", "{jsonl}");
    assert_eq!(
        resource["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "open-platform-model"
    );
    // The same as a render of the provider directory writes into --out-dir.
    let out = work.path().join("out");
    let run = opm([
        "mod",
        "build",
        &module,
        "-p",
        &path(&provider),
        "--out-dir",
        &path(&out),
    ]);
    assert!(run.exited(0), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(out.join("resources.jsonl")).expect("rendered"),
        jsonl
    );

    let run = test(&[]);
    assert!(run.exited(0), "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("  ok      render of"), "{}", run.stdout);
    assert!(!run.stderr.contains("is older than"), "{}", run.stderr);
    // Another project of the provider edited since it was built is rendered as built, and said
    // (review of issue 48: it was rendered silently).
    touch(&provider.join("lines/lines.wasm"), Duration::from_secs(60));
    touch(&provider.join("lines/src/lib.rs"), Duration::ZERO);
    let run = test(&[]);
    assert!(run.exited(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("component lines/lines.wasm is older than its source"),
        "{}",
        run.stderr
    );
    // Its own provider named with --with is the same render, not a provider given twice.
    let run = test(&["--with", &path(&provider)]);
    assert!(run.exited(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("is the transformer's own provider"),
        "{}",
        run.stderr
    );
    // A changed golden fails, with a diff.
    std::fs::write(golden.join("resources.jsonl"), "{}\n").expect("write");
    let run = test(&[]);
    assert!(run.exited(1), "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("+{\"apiVersion\""), "{}", run.stdout);
    // The standard provider beside one with its own renderer for another platform: say what to do.
    let run = test(&["--with", "kubernetes"]);
    assert!(run.exited(2), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("give --module without --with"),
        "{}",
        run.stderr
    );
}
