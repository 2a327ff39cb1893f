//! Module patches (`docs/module-format.md#patches`): the escape hatch that keeps the
//! traits. A patch changes what the transformers rendered, by merge patch or JSON Patch, before
//! the output checks; one that matches nothing or cannot apply fails the render naming its
//! file:line, and nothing is written; `opm mod vet` shows each patch and `--verbose` what it
//! changed; any provider's output can be patched, not only the Kubernetes provider's.

use opm_tests::{file_names, guests, opm, write_file};
use serde_json::Value;

/// A module named `shop` in namespace `shop`: a stateless `api` with Replicas and Expose, and a
/// Secret `creds`; then `patches`, the text of the module's `patches:` section.
fn module(patches: &str) -> String {
    format!(
        "apiVersion: core.opm.dev/v1
kind: Module
metadata: {{name: shop, version: 1.0.0, namespace: shop}}
components:
  api:
    metadata:
      labels: {{core.opm.dev/workload-type: stateless, tier: web}}
    resources:
      Container: {{image: nginx:1.27, ports: {{http: {{containerPort: 80}}}}}}
    traits:
      Replicas: 2
      Expose: {{type: ClusterIP}}
  creds:
    resources:
      Secret: {{stringData: {{password: correct-horse-battery}}}}
patches:
{patches}"
    )
}

/// The line of `module(patches)` on which the patch list starts.
const FIRST_PATCH_LINE: usize = 17;

/// `opm mod build` of `module(patches)` with `extra` arguments, in a fresh directory.
fn build(patches: &str, extra: &[&str]) -> (tempfile::TempDir, opm_tests::Run) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "module.yaml", &module(patches));
    let mut args = vec!["mod", "build", &path];
    args.extend_from_slice(extra);
    let run = opm(args);
    (dir, run)
}

fn items(run: &opm_tests::Run) -> Vec<Value> {
    assert!(run.exited(0), "{}", run.stderr);
    let list: Value = serde_json::from_str(&run.stdout).unwrap();
    list["items"].as_array().unwrap().clone()
}

fn object<'a>(items: &'a [Value], kind: &str) -> &'a Value {
    items
        .iter()
        .find(|item| item["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {items:#?}"))
}

#[test]
fn the_module_starts_its_patches_where_the_tests_say() {
    let text = module("  - MARK\n");
    let line = text.lines().position(|l| l.contains("MARK")).unwrap() + 1;
    assert_eq!(line, FIRST_PATCH_LINE);
}

#[test]
fn a_patch_annotates_the_deployment_and_service_that_traits_render_by_merge_and_json_patch() {
    let patches = "  - target: {kind: Deployment, component: api}
    merge: {metadata: {annotations: {example.com/owner: team-a}}, spec: {revisionHistoryLimit: 3}}
  - target: {kind: Service, name: api, labels: {app.kubernetes.io/name: api}}
    jsonPatch:
      - {op: add, path: /metadata/annotations, value: {}}
      - {op: add, path: /metadata/annotations/example.com~1owner, value: team-b}
      - {op: add, path: /spec/sessionAffinity, value: ClientIP}
";
    let (_dir, run) = build(patches, &["-o", "json"]);
    let rendered = items(&run);
    let deployment = object(&rendered, "Deployment");
    assert_eq!(
        deployment["metadata"]["annotations"]["example.com/owner"],
        "team-a"
    );
    assert_eq!(deployment["spec"]["revisionHistoryLimit"], 3);
    assert_eq!(
        deployment["spec"]["replicas"], 2,
        "the trait's work is kept"
    );
    let service = object(&rendered, "Service");
    assert_eq!(
        service["metadata"]["annotations"]["example.com/owner"],
        "team-b"
    );
    assert_eq!(service["spec"]["sessionAffinity"], "ClientIP");
    assert_eq!(
        service["spec"]["ports"][0]["port"], 80,
        "Expose's work is kept"
    );
    assert_eq!(
        service["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "open-platform-model"
    );

    // A second instance's objects carry its prefix: the target names them as rendered.
    let renamed = "  - target: {kind: Service, name: eu-api}\n    merge: {spec: {sessionAffinity: ClientIP}}\n";
    let (_dir, run) = build(renamed, &["-o", "json", "--instance", "eu"]);
    assert_eq!(
        object(&items(&run), "Service")["spec"]["sessionAffinity"],
        "ClientIP"
    );
    let (_dir, run) = build(renamed, &["-o", "json"]);
    assert!(run.exited(1), "eu-api is not rendered without the instance");
    // Or follow the instance, whichever it is.
    let following = "  - target: {kind: Service, name: '${instance.prefix}api'}\n    merge: {spec: {sessionAffinity: ClientIP}}\n";
    for extra in [&["-o", "json"][..], &["-o", "json", "--instance", "eu"]] {
        let (_dir, run) = build(following, extra);
        let rendered = items(&run);
        assert_eq!(
            object(&rendered, "Service")["spec"]["sessionAffinity"],
            "ClientIP"
        );
    }
}

#[test]
fn a_patch_that_targets_nothing_fails_with_its_file_line_and_target_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("manifests");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("service-api.yaml"), "previous render\n").unwrap();
    let path = write_file(
        dir.path(),
        "module.yaml",
        &module(
            "  - target: {kind: Service, component: api}\n    merge: {spec: {sessionAffinity: ClientIP}}\n\
             \x20 - target: {kind: Ingress, component: api}\n    merge: {metadata: {annotations: {a: b}}}\n",
        ),
    );
    let out_dir = out.display().to_string();
    let run = opm(["mod", "build", &path, "--split", "--out-dir", &out_dir]);
    assert!(run.exited(1), "{}", run.stderr);
    let expected = format!(
        "module.yaml:{}:5: patches[1] (target kind Ingress, component api) matches no rendered object",
        FIRST_PATCH_LINE + 2
    );
    assert!(
        run.stderr.contains(&expected),
        "{expected:?} missing from:\n{}",
        run.stderr
    );
    assert_eq!(file_names(&out), ["service-api.yaml"]);
    assert_eq!(
        std::fs::read_to_string(out.join("service-api.yaml")).unwrap(),
        "previous render\n"
    );

    // A component the module does not have is found before anything runs, by vet too.
    let typo = "  - target: {kind: Service, component: apo}\n    merge: {spec: {sessionAffinity: ClientIP}}\n";
    let (_dir, run) = build(typo, &[]);
    assert!(run.exited(1), "{}", run.stderr);
    assert!(
        !run.stderr.contains("matches no rendered object"),
        "said twice:\n{}",
        run.stderr
    );
    let expected = format!(
        "module.yaml:{FIRST_PATCH_LINE}:5: patches[0] targets component \"apo\", which the module does not have; did you mean \"api\"?"
    );
    assert!(
        run.stderr.contains(&expected),
        "{expected:?} missing from:\n{}",
        run.stderr
    );
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "module.yaml", &module(typo));
    let vet = opm(["mod", "vet", &path]);
    assert!(vet.exited(1), "{}", vet.stdout);
    assert!(vet.stdout.contains(&expected), "{}", vet.stdout);
}

#[test]
fn a_json_patch_operation_that_fails_names_its_file_line_index_and_object() {
    let patches = "  - target: {kind: Deployment}
    jsonPatch:
      - {op: add, path: /metadata/annotations, value: {}}
      - {op: test, path: /spec/replicas, value: 5}
  - target: {kind: Service}
    jsonPatch:
      - {op: replace, path: /spec/externalName, value: x.example.com}
";
    let (_dir, run) = build(patches, &[]);
    assert!(run.exited(1), "{}", run.stderr);
    assert_eq!(run.stdout, "");
    for expected in [
        format!(
            "module.yaml:{}:9: patches[0] (target kind Deployment) jsonPatch[1] (test \
             /spec/replicas) cannot be applied to apps/Deployment shop/api of component \"api\": \
             the value at /spec/replicas is not the one the test expects",
            FIRST_PATCH_LINE + 3
        ),
        format!(
            "module.yaml:{}:9: patches[1] (target kind Service) jsonPatch[0] (replace \
             /spec/externalName) cannot be applied to Service shop/api of component \"api\": \
             /spec/externalName does not exist",
            FIRST_PATCH_LINE + 6
        ),
    ] {
        assert!(
            run.stderr.contains(&expected),
            "{expected:?} missing from:\n{}",
            run.stderr
        );
    }
    assert!(
        run.stderr.contains("render failed with 2 problems"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_patch_that_breaks_an_object_is_refused_by_the_output_checks_and_never_echoes_a_secret() {
    let patches = "  - target: {kind: Deployment}
    merge: {metadata: {name: null}}
  - target: {kind: Secret, name: creds}
    jsonPatch:
      - {op: test, path: /stringData/password, value: a-wrong-guess-at-it}
  - target: {kind: Service}
    merge: {kind: Secret, metadata: {name: creds}}
";
    let (_dir, run) = build(patches, &["--verbose"]);
    assert!(run.exited(1), "{}", run.stderr);
    for expected in [
        "patches[0] (target kind Deployment) leaves apps/Deployment shop/api of component \"api\" \
         invalid: `metadata.name` is missing or not a non-empty string",
        "patches[1] (target kind Secret, name creds) jsonPatch[0] (test /stringData/password) \
         cannot be applied to Secret shop/creds of component \"creds\": the value at \
         /stringData/password is not the one the test expects",
        // A patch that makes one object of two is found by the duplicate check.
        "rendered Secret shop/creds, which component \"api\"",
    ] {
        assert!(
            run.stderr.contains(expected),
            "{expected:?} missing from:\n{}",
            run.stderr
        );
    }
    for secret in ["correct-horse-battery", "a-wrong-guess-at-it"] {
        assert!(
            !run.stderr.contains(secret),
            "{secret} on stderr:\n{}",
            run.stderr
        );
    }

    // Nor can a patch take away what opm tracks its objects by.
    let labels = "  - target: {kind: Service}\n    jsonPatch: [{op: replace, path: /metadata/labels, value: {a: b}}]\n";
    let (_dir, run) = build(labels, &[]);
    assert!(run.exited(1), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "changes label app.kubernetes.io/managed-by of Service shop/api of component \"api\", \
             which opm sets on every object"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn vet_shows_each_patch_and_verbose_what_each_changed() {
    let patches = "  - target: {kind: Deployment, component: api}
    merge: {metadata: {annotations: {example.com/owner: team-a}}}
  - target: {labels: {app.kubernetes.io/name: api}}
    jsonPatch:
      - {op: add, path: /metadata/labels/team, value: a}
  - target: {kind: Service}
    when: false
    merge: {spec: {sessionAffinity: ClientIP}}
  - target: {kind: Secret}
    merge: {metadata: {name: creds}}
";
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "module.yaml", &module(patches));
    let vet = opm(["mod", "vet", &path]);
    assert!(vet.exited(0), "{}{}", vet.stdout, vet.stderr);
    let expected = format!(
        "patches, applied in this order to what the calls render:
  patches[0] (module.yaml:{first}:5)
    target      kind Deployment, component api
    merge
    components  api
  patches[1] (module.yaml:{second}:5)
    target      labels app.kubernetes.io/name=api
    jsonPatch   [0] add /metadata/labels/team
    components  api, creds
  patches[3] (module.yaml:{fourth}:5)
    target      kind Secret
    merge
    components  api, creds
",
        first = FIRST_PATCH_LINE,
        second = FIRST_PATCH_LINE + 2,
        fourth = FIRST_PATCH_LINE + 8,
    );
    let stdout = vet
        .stdout
        .replace(&format!("{}/", dir.path().display()), "");
    assert!(
        stdout.contains(&expected),
        "{expected}\nmissing from:\n{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "  patches[2]: false is false (module.yaml:{}:11)",
            FIRST_PATCH_LINE + 6
        )),
        "{stdout}"
    );

    let vet = opm(["mod", "vet", &path, "-o", "json"]);
    assert!(vet.exited(0), "{}", vet.stderr);
    let plan: Value = serde_json::from_str(&vet.stdout).unwrap();
    let json_patches = plan["patches"].as_array().unwrap();
    assert_eq!(json_patches.len(), 3);
    assert_eq!(
        json_patches[1]["target"],
        serde_json::json!({"labels": {"app.kubernetes.io/name": "api"}})
    );
    assert_eq!(json_patches[1]["type"], "jsonPatch");
    assert_eq!(
        json_patches[1]["operations"],
        serde_json::json!(["add /metadata/labels/team"])
    );
    assert_eq!(json_patches[0]["components"], serde_json::json!(["api"]));
    assert!(
        plan["leftOut"]
            .as_array()
            .unwrap()
            .iter()
            .any(|left| left["patch"] == 2),
        "{}",
        vet.stdout
    );

    let build = opm(["mod", "build", &path, "--verbose"]);
    assert!(build.exited(0), "{}", build.stderr);
    let stderr = build
        .stderr
        .replace(&format!("{}/", dir.path().display()), "");
    for expected in [
        format!(
            "patch patches[0] (module.yaml:{FIRST_PATCH_LINE}:5) merge on kind Deployment, \
             component api:\n  changed apps/Deployment shop/api\n"
        ),
        format!(
            "patch patches[1] (module.yaml:{}:5) jsonPatch [add /metadata/labels/team] on labels \
             app.kubernetes.io/name=api:\n  changed Service shop/api\n  changed apps/Deployment shop/api\n",
            FIRST_PATCH_LINE + 2
        ),
        format!(
            "patch patches[3] (module.yaml:{}:5) merge on kind Secret:\n  matched, unchanged \
             Secret shop/creds\n",
            FIRST_PATCH_LINE + 8
        ),
    ] {
        assert!(
            stderr.contains(&expected),
            "{expected:?} missing from:\n{stderr}"
        );
    }

    let build = opm(["mod", "build", &path, "--verbose=json"]);
    assert!(build.exited(0), "{}", build.stderr);
    let events: Vec<Value> = build
        .stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .filter(|event: &Value| event["event"] == "patch")
        .collect();
    assert_eq!(events.len(), 3);
    assert_eq!(
        events[1]["changed"],
        serde_json::json!(["Service shop/api", "apps/Deployment shop/api"])
    );
}

/// A provider of its own, with no Kubernetes in it: a resource `Thing` and a transformer that
/// needs it, the misbehaving guest, which renders a ConfigMap-shaped object named `shared`.
fn thing_provider() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("misbehave.wasm"), guests::TESTING_MISBEHAVE).unwrap();
    write_file(
        dir.path(),
        "provider.yaml",
        "apiVersion: core.opm.dev/v1
kind: Provider
metadata: {name: things, version: 0.1.0}
definitions:
  acme.dev/resources/things@v1#Thing:
    kind: Resource
    description: A thing
    schema: {type: object}
transformers:
  acme.dev/things@v1#ThingTransformer:
    requiredResources: [acme.dev/resources/things@v1#Thing]
    component: misbehave.wasm
",
    );
    dir
}

#[test]
fn patches_work_for_a_provider_other_than_kubernetes() {
    let provider = thing_provider();
    let path = write_file(
        provider.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: shop, version: 1.0.0}
components:
  box:
    metadata: {labels: {misbehave.opm.dev/mode: shared}}
    resources: {Thing: {}}
patches:
  - target: {component: box, labels: {component.opmodel.dev/name: box}}
    jsonPatch:
      - {op: test, path: /data/from, value: box}
      - {op: add, path: /data/patched, value: 'yes'}
  - target: {name: shared}
    merge: {metadata: {annotations: {owner: team-a}}}
",
    );
    let provider_dir = provider.path().display().to_string();
    let run = opm(["mod", "build", &path, "-p", &provider_dir, "-o", "json"]);
    let rendered = items(&run);
    assert_eq!(rendered.len(), 1);
    assert_eq!(
        rendered[0]["data"],
        serde_json::json!({"from": "box", "patched": "yes"})
    );
    assert_eq!(rendered[0]["metadata"]["annotations"]["owner"], "team-a");
}

/// `opm mod schema` describes patches: the modules of these tests validate against it with an
/// independent validator, and a patch with both a merge patch and a JSON Patch, or an operation
/// that is not one, is refused.
#[test]
fn the_module_schema_describes_patches() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("module.schema.json").display().to_string();
    let run = opm(["mod", "schema", "-o", &schema]);
    assert!(run.exited(0), "{}", run.stderr);
    let good = "  - target: {kind: Deployment, component: api}\n    when: true\n    merge: {metadata: {annotations: {a: b}}}\n\
                \x20 - target: {labels: {app.kubernetes.io/name: api}}\n    jsonPatch:\n      - {op: add, path: /spec/x, value: 1}\n      - {op: move, from: /spec/x, path: /spec/y}\n";
    let check = |name: &str, patches: &str| {
        let file = write_file(dir.path(), name, &module(patches));
        let output = std::process::Command::new("check-jsonschema")
            .arg("--schemafile")
            .arg(&schema)
            .arg(&file)
            .output()
            .expect("check-jsonschema is not on PATH: `eval \"$(tests/setup.sh)\"` installs it");
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    let (ok, said) = check("good.yaml", good);
    assert!(ok, "{said}");
    for (name, bad) in [
        (
            "both.yaml",
            "  - target: {kind: Service}\n    merge: {}\n    jsonPatch: [{op: remove, path: /a}]\n",
        ),
        ("neither.yaml", "  - target: {kind: Service}\n"),
        ("untargeted.yaml", "  - target: {}\n    merge: {}\n"),
        (
            "bad-op.yaml",
            "  - target: {kind: Service}\n    jsonPatch: [{op: frobnicate, path: /a}]\n",
        ),
        (
            "bad-path.yaml",
            "  - target: {kind: Service}\n    jsonPatch: [{op: remove, path: a}]\n",
        ),
    ] {
        let (ok, said) = check(name, bad);
        assert!(!ok, "{name} passed:\n{said}");
    }
}

/// Found in review: a JSON Patch whose moves nest an object one level deeper each time crashed
/// the host past the 128 levels a JSON reader takes (exit 101, "recursion limit exceeded");
/// it is a patch failure naming the operation, and the render writes nothing.
#[test]
fn a_patch_cannot_nest_an_object_deeper_than_a_reader_takes() {
    let mut patches = String::from(
        "  - target: {kind: Deployment}\n    jsonPatch:\n      - {op: add, path: /d, value: {}}\n",
    );
    for _ in 0..130 {
        patches.push_str("      - {op: add, path: /w, value: {}}\n      - {op: move, from: /d, path: /w/k}\n      - {op: move, from: /w, path: /d}\n");
    }
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().join("out");
    let (_dir, run) = build(
        &patches,
        &["--split", "--out-dir", out_dir.to_str().unwrap()],
    );
    assert!(run.exited(1), "{:?}\n{}", run.status, run.stderr);
    assert!(
        run.stderr.contains(
            "would make apps/Deployment shop/api of component \"api\" nested deeper than 100 \
             levels at /w/k, the most a patch may nest an object"
        ),
        "{}",
        run.stderr
    );
    assert!(!out_dir.exists());
}

/// Found in review: a patch left out by its condition shifted the number of every later patch
/// in the errors of reading them; each patch is named by its place as written.
#[test]
fn a_patch_is_named_by_its_place_as_written_when_an_earlier_one_is_left_out() {
    let patches = "  - target: {kind: Service}\n    when: false\n    merge: {}\n  - target: {kind: Deployment, colour: blue}\n    merge: {}\n";
    let (_dir, run) = build(patches, &[]);
    assert!(run.exited(2), "{:?}\n{}", run.status, run.stderr);
    assert!(
        run.stderr
            .contains("unknown field `colour` in patches[1].target"),
        "{}",
        run.stderr
    );
}

/// Found in review: copies and one-line merge patches repeated over large objects made the host
/// work for minutes; all of a render's patches together share one bound of work.
#[test]
fn the_patches_of_a_render_share_one_bound_of_work() {
    let mut patches = String::from(
        "  - target: {kind: Deployment}\n    jsonPatch:\n      - {op: add, path: /x, value: [0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef]}\n",
    );
    // Each copy doubles /x: 17 of them make an object of 8 MiB.
    for step in 0..17 {
        patches.push_str(&format!(
            "      - {{op: copy, from: /x, path: /x{step}}}\n      - {{op: move, from: /x{step}, path: /x/-}}\n"
        ));
    }
    for _ in 0..40 {
        patches.push_str(
            "  - target: {kind: Deployment}\n    merge: {metadata: {annotations: {a: b}}}\n",
        );
    }
    let (_dir, run) = build(&patches, &[]);
    assert!(run.exited(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("would take the work of the module's patches past 256 MiB of objects"),
        "{}",
        run.stderr
    );
}

/// Security review (2026-11): one merge patch over many objects took 7.3 GB, as the work was counted
/// with the objects' sizes before the patch. A merge's own size counts for every object it
/// merges into, so the bound of all patches holds for merges too.
#[test]
fn a_merge_patch_counts_what_it_adds_to_every_object_against_the_bound() {
    let mut text = String::from(
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: big, version: 0.1.0}\ncomponents:\n",
    );
    for index in 0..100 {
        text.push_str(&format!(
            "  c{index}:\n    resources:\n      ConfigMap: {{data: {{a: b}}}}\n"
        ));
    }
    text.push_str(&format!(
        "patches:\n  - target: {{kind: ConfigMap}}\n    merge: {{data: {{big: {}}}}}\n",
        "x".repeat(1 << 20)
    ));
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "module.yaml", &text);
    let run = opm(["mod", "build", &path]);
    assert!(run.exited(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("would take the work of the module's patches past 256 MiB of objects"),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stderr.matches("would take the work").count(),
        1,
        "one failure, not one per object: {}",
        run.stderr
    );
}
