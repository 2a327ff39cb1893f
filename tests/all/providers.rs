//! Several providers in one render (`-p kubernetes -p acme`): a team's provider that holds
//! only a trait and its transformer renders beside the standard one, and everything that
//! cannot go together is refused naming both providers: one definition defined two ways, one
//! transformer in two providers, one resource rendered by both, two platforms, a provider given
//! twice. Each provider's limits hold for its own calls only.

use opm_tests::{guests, opm, write_file};

/// A team's provider: the trait `acme.dev/traits/extra@v1#Extra` and a transformer that needs
/// it, the misbehaving guest (which renders what its component's `misbehave.opm.dev/mode` label
/// says). `extra` is more manifest text, at the top level.
fn team_provider(name: &str, domain: &str, extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("misbehave.wasm"), guests::TESTING_MISBEHAVE).expect("write");
    write_file(
        dir.path(),
        "provider.yaml",
        &format!(
            "apiVersion: core.opm.dev/v1
kind: Provider
metadata: {{name: {name}, version: 0.1.0}}
definitions:
  acme.dev/traits/extra@v1#Extra:
    kind: Trait
    description: Something extra the team renders
    schema: {{type: object}}
transformers:
  {domain}/extra@v1#ExtraTransformer:
    requiredTraits: [acme.dev/traits/extra@v1#Extra]
    component: misbehave.wasm
{extra}"
        ),
    );
    dir
}

/// A module of one stateless component that attaches the standard Container and Expose and
/// the team's Extra, and misbehaves in `mode` where the team's transformer runs.
fn module(dir: &std::path::Path, mode: &str) -> String {
    write_file(
        dir,
        "module.yaml",
        &format!(
            "apiVersion: core.opm.dev/v1
kind: Module
metadata: {{name: shop, version: 1.0.0}}
components:
  api:
    metadata:
      labels: {{core.opm.dev/workload-type: stateless, misbehave.opm.dev/mode: {mode}}}
    resources:
      Container: {{image: nginx:1.27, ports: {{http: {{containerPort: 80}}}}}}
    traits:
      Expose: {{type: ClusterIP}}
      Extra: {{}}
"
        ),
    )
}

/// `provider`'s transformer made to need the label `misbehave.opm.dev/mode` too, so that it and
/// another team's can both match one component (two matches with identical requirements are an
/// error of their own).
fn needing_the_mode(provider: &tempfile::TempDir, mode: &str) {
    let path = provider.path().join("provider.yaml");
    let manifest = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        manifest.replace(
            "    requiredTraits:",
            &format!("    requiredLabels: {{misbehave.opm.dev/mode: {mode}}}\n    requiredTraits:"),
        ),
    )
    .unwrap();
}

/// `opm mod COMMAND MODULE -p kubernetes -p DIR…` with `extra` arguments: the standard
/// provider and `teams`' own.
fn with_standard(
    command: &str,
    module: &str,
    teams: &[&tempfile::TempDir],
    extra: &[&str],
) -> opm_tests::Run {
    let mut args = vec!["mod".to_owned(), command.to_owned(), module.to_owned()];
    args.extend(["-p".to_owned(), "kubernetes".to_owned()]);
    for team in teams {
        args.extend(["-p".to_owned(), path(team)]);
    }
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    opm(args)
}

fn path(dir: &tempfile::TempDir) -> String {
    dir.path().display().to_string()
}

#[test]
fn a_trait_only_provider_renders_beside_the_standard_one_and_vet_names_each_provider() {
    let acme = team_provider("acme", "acme.dev", "");
    let module = module(acme.path(), "shared");
    let run = with_standard("build", &module, &[&acme], &[]);
    assert!(run.exited(0), "{}", run.stderr);
    for expected in [
        "kind: Deployment",
        "kind: Service",
        "kind: ConfigMap\nmetadata:\n  name: shared",
    ] {
        assert!(run.stdout.contains(expected), "{expected}:\n{}", run.stdout);
    }

    // Alone, the team's provider does not know the standard vocabulary.
    let alone = opm(["mod", "build", &module, "-p", &path(&acme)]);
    assert!(alone.exited(1), "{}", alone.stderr);
    assert!(alone.stderr.contains("Container"), "{}", alone.stderr);

    let vet = with_standard("vet", &module, &[&acme], &[]);
    assert!(vet.exited(0), "{}{}", vet.stdout, vet.stderr);
    for expected in [
        "module shop with providers kubernetes, acme\n",
        "providers, in the order given:\n",
        "  acme 0.1.0: 1 transformer, 1 definition\n",
        "    transformer  acme.dev/extra@v1#ExtraTransformer\n",
        "    definition   acme.dev/traits/extra@v1#Extra\n",
        "    definition   opm.dev/resources/workload@v1#Container\n",
    ] {
        assert!(vet.stdout.contains(expected), "{expected}:\n{}", vet.stdout);
    }
    let row = vet
        .stdout
        .lines()
        .find(|line| {
            line.contains("acme.dev/extra@v1#ExtraTransformer") && line.contains("matches")
        })
        .unwrap_or_else(|| panic!("no row for the team's transformer:\n{}", vet.stdout));
    assert!(row.contains(" acme "), "{row}");
    let row = vet
        .stdout
        .lines()
        .find(|line| line.contains("#DeploymentTransformer") && line.contains("matches"))
        .unwrap_or_else(|| panic!("no row for the Deployment transformer:\n{}", vet.stdout));
    assert!(row.contains(" kubernetes "), "{row}");

    let json = with_standard("vet", &module, &[&acme], &["-o", "json"]);
    let plan: serde_json::Value = serde_json::from_str(&json.stdout).expect("the plan is JSON");
    assert_eq!(plan["providers"][1]["name"], "acme");
    assert_eq!(
        plan["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|call| (
                call["transformer"].as_str().unwrap(),
                call["provider"].as_str().unwrap()
            ))
            .find(|(transformer, _)| transformer.starts_with("acme.dev/")),
        Some(("acme.dev/extra@v1#ExtraTransformer", "acme"))
    );

    let verbose = with_standard("build", &module, &[&acme], &["--verbose"]);
    assert!(
        verbose
            .stderr
            .contains("called acme.dev/extra@v1#ExtraTransformer (provider acme): 1 resource"),
        "{}",
        verbose.stderr
    );
}

#[test]
fn one_definition_defined_differently_by_two_providers_is_an_error_naming_both() {
    let acme = team_provider("acme", "acme.dev", "");
    // The same trait, defined again by another team with another schema.
    let beta = team_provider("beta", "beta.dev", "");
    let manifest = std::fs::read_to_string(beta.path().join("provider.yaml")).unwrap();
    std::fs::write(
        beta.path().join("provider.yaml"),
        manifest.replace(
            "schema: {type: object}",
            "schema: {type: object, required: [level]}",
        ),
    )
    .unwrap();
    let module = module(acme.path(), "nothing");
    let run = with_standard("vet", &module, &[&acme, &beta], &[]);
    assert!(run.exited(1), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(
            "definition acme.dev/traits/extra@v1#Extra is defined differently in provider acme \
             and in provider beta"
        ),
        "{}",
        run.stdout
    );

    // Defined the same way, it is one definition: both transformers match.
    let same = team_provider("beta", "beta.dev", "");
    needing_the_mode(&same, "nothing");
    let run = with_standard("vet", &module, &[&acme, &same], &[]);
    assert!(run.exited(0), "{}{}", run.stdout, run.stderr);
    for transformer in [
        "acme.dev/extra@v1#ExtraTransformer",
        "beta.dev/extra@v1#ExtraTransformer",
    ] {
        assert!(
            run.stdout
                .lines()
                .any(|line| line.contains(transformer) && line.contains("matches")),
            "{transformer}: {}",
            run.stdout
        );
    }
}

#[test]
fn one_resource_rendered_by_two_providers_is_an_error_naming_both() {
    let acme = team_provider("acme", "acme.dev", "");
    let beta = team_provider("beta", "beta.dev", "");
    needing_the_mode(&beta, "shared");
    let module = module(acme.path(), "shared");
    let run = with_standard("build", &module, &[&acme, &beta], &[]);
    assert!(run.exited(1), "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains(
            "transformer beta.dev/extra@v1#ExtraTransformer (blake3:"
        ) && run.stderr.contains(", provider beta) returned a resource that renderer Kubernetes List Renderer 1.0.0 refuses: rendered ConfigMap default/shared, which component \"api\" (transformer acme.dev/extra@v1#ExtraTransformer) also rendered"),
        "{}",
        run.stderr
    );
}

#[test]
fn what_cannot_render_together_is_refused_before_anything_runs() {
    let module_dir = tempfile::tempdir().unwrap();
    let module = module(module_dir.path(), "nothing");

    // One transformer FQN in two providers.
    let clash = team_provider(
        "acme",
        "transformer.opm.dev/workload@v1#DeploymentTransformer:\n    requiredTraits: [acme.dev/traits/extra@v1#Extra]\n    component: misbehave.wasm\n  acme.dev",
        "",
    );
    let run = with_standard("build", &module, &[&clash], &[]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "transformer transformer.opm.dev/workload@v1#DeploymentTransformer is in provider \
             kubernetes (embedded:kubernetes) and in provider acme ("
        ),
        "{}",
        run.stderr
    );

    // Two platforms.
    let compose = team_provider("acme", "acme.dev", "");
    let manifest = std::fs::read_to_string(compose.path().join("provider.yaml")).unwrap();
    std::fs::write(
        compose.path().join("provider.yaml"),
        manifest.replace(
            "metadata: {name: acme, version: 0.1.0}",
            "metadata: {name: acme, version: 0.1.0, labels: {core.opm.dev/format: compose}}",
        ),
    )
    .unwrap();
    let run = with_standard("build", &module, &[&compose], &[]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "provider kubernetes renders for kubernetes and provider acme for compose \
             (their core.opm.dev/format labels): one render targets one platform"
        ),
        "{}",
        run.stderr
    );

    // One provider twice.
    let run = opm([
        "mod",
        "vet",
        &module,
        "-p",
        "kubernetes",
        "-p",
        "kubernetes",
    ]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "provider kubernetes is given twice (embedded:kubernetes and embedded:kubernetes)"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn each_provider_s_limits_hold_for_its_own_calls_only() {
    // The team asks for little fuel: its own call runs out, the standard provider's calls, on
    // the same component, run under the standard provider's limits.
    let acme = team_provider("acme", "acme.dev", "limits: {fuel: 1000}\n");
    let module = module(acme.path(), "shared");
    let run = with_standard("build", &module, &[&acme], &[]);
    assert!(run.exited(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("transformer acme.dev/extra@v1#ExtraTransformer (blake3:")
            && run.stderr.contains(", provider acme)")
            && run.stderr.contains("all 1000 units of its fuel limit"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("DeploymentTransformer (blake3:")
            && !run.stderr.contains("ServiceTransformer (blake3:"),
        "the standard provider's calls succeed: {}",
        run.stderr
    );
}

/// The Certificate example (`transformers/examples/certificate/`): a team's trait-only provider
/// written in JavaScript, packed, renders together with the embedded Kubernetes provider in one
/// `opm mod build -p kubernetes -p BUNDLE` — exactly `rendered.yaml`, every Certificate valid
/// against cert-manager's own schema (the pinned @kubernetes-models/cert-manager, no field it
/// does not declare) and everything else `kubernetes-validate --strict`; its cases pass under
/// its provider's limits.
#[test]
fn the_certificate_example_renders_beside_the_embedded_provider_strictly_valid() {
    let example = opm_tests::repo_root().join("transformers/examples/certificate");
    let dir = tempfile::tempdir().unwrap();
    for file in ["provider.yaml", "module.yaml"] {
        std::fs::copy(example.join(file), dir.path().join(file)).unwrap();
    }
    std::fs::create_dir_all(dir.path().join("js")).unwrap();
    std::fs::write(
        dir.path().join("js/certificate.wasm"),
        guests::example_certificate_js(),
    )
    .unwrap();
    let bundle = dir
        .path()
        .join("cert-manager-0.1.0.opmb")
        .display()
        .to_string();
    let run = opm(["provider", "pack", &path(&dir), "-o", &bundle]);
    assert!(run.exited(0), "{}", run.stderr);

    let module = dir.path().join("module.yaml").display().to_string();
    let run = opm(["mod", "build", &module, "-p", "kubernetes", "-p", &bundle]);
    assert!(run.exited(0), "{}", run.stderr);
    assert_eq!(
        run.stdout,
        std::fs::read_to_string(example.join("rendered.yaml")).unwrap(),
        "the render is rendered.yaml (`opm transformer test --with kubernetes --bless` in js/ \
         records it)"
    );

    let json = opm([
        "mod",
        "build",
        &module,
        "-p",
        "kubernetes",
        "-p",
        &bundle,
        "-o",
        "json",
    ]);
    let mut validate = std::process::Command::new("node")
        .arg("validate.mjs")
        .current_dir(example.join("js"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("node runs (tests/setup.sh installs it)");
    use std::io::Write as _;
    validate
        .stdin
        .take()
        .unwrap()
        .write_all(json.stdout.as_bytes())
        .unwrap();
    let output = validate.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && said.contains("2 Certificates, 0 problems"),
        "{said}{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let mut files = Vec::new();
    for (index, document) in crate::examples::documents(&run.stdout).iter().enumerate() {
        if document.contains("\nkind: Certificate\n") {
            continue;
        }
        let name = format!("{index:02}.yaml");
        std::fs::write(dir.path().join(&name), document).unwrap();
        files.push(name);
    }
    assert_eq!(files.len(), 5, "{}", run.stdout);
    crate::examples::assert_strict_valid(dir.path(), &files);

    let run = opm([
        "transformer",
        "test",
        &dir.path().join("js/certificate.wasm").display().to_string(),
        "--cases",
        &example.join("js/cases").display().to_string(),
        "--provider",
        &path(&dir),
    ]);
    assert!(run.exited(0), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("5 cases: 5 passed, 0 failed"),
        "{}",
        run.stdout
    );
}

/// A project directory `shared/` holding `.opm/providers.yaml`, and a module below it in
/// `shared/pr-123/`, as a CI workspace or a shared `/tmp` holds another user's checkout.
fn shared_project() -> (tempfile::TempDir, std::path::PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir_all(shared.join(".opm")).unwrap();
    std::fs::write(shared.join(".opm/providers.yaml"), "providers: []\n").unwrap();
    std::fs::create_dir_all(shared.join("pr-123")).unwrap();
    let module = write_file(
        &shared.join("pr-123"),
        "module.yaml",
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: pr, version: 0.1.0}\ncomponents:\n  api: {resources: {ConfigMap: {data: {a: b}}}}\n",
    );
    (dir, shared, module)
}

/// Security review (2026-11): project discovery walked up into a parent `.opm/` that another user
/// owned, and rendered with the providers it planted. As git does since CVE-2022-24765, opm
/// refuses a project it does not own, or that others may write, saying how to trust it.
#[test]
fn a_project_directory_someone_else_owns_or_may_write_is_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let (_dir, shared, module) = shared_project();
    let opm_dir = shared.join(".opm");
    // Writable by others.
    std::fs::set_permissions(&opm_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let run = opm_tests::opm_env(["mod", "build", &module], &[]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("is writable by others"),
        "{}",
        run.stderr
    );
    std::fs::set_permissions(&opm_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Owned by someone else: only root can give it away (CI runs as root).
    let test = "providers::a_project_directory_someone_else_owns_or_may_write_is_refused";
    if opm_tests::tier::needs(test, opm_tests::tier::Need::Root) {
        std::os::unix::fs::chown(&opm_dir, Some(65534), Some(65534)).expect("root gives it away");
        let run = opm_tests::opm_env(["mod", "vet", &module], &[]);
        assert!(run.exited(2), "{}", run.stderr);
        for expected in ["is owned by user 65534", "OPM_SAFE_DIRECTORIES="] {
            assert!(run.stderr.contains(expected), "{expected}: {}", run.stderr);
        }
        // Trusted by name, it is used (and its empty list of providers is what fails).
        let trusted = shared.display().to_string();
        let run = opm_tests::opm_env(
            ["mod", "build", &module],
            &[("OPM_SAFE_DIRECTORIES", &trusted)],
        );
        assert!(run.exited(2), "{}", run.stderr);
        assert!(
            run.stderr.contains("no provider to render with"),
            "{}",
            run.stderr
        );
    }
}

/// Discovery stops at a repository's root: a `.opm/` above the directory holding `.git` is not
/// the module's project.
#[test]
fn project_discovery_stops_at_the_repository_root() {
    let (_dir, shared, module) = shared_project();
    std::fs::create_dir(shared.join("pr-123/.git")).unwrap();
    let run = opm_tests::opm_env(["mod", "vet", &module], &[]);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(
        run.stdout.contains("with provider kubernetes"),
        "{}",
        run.stdout
    );
}

/// Security review (2026-11): `definitionsFrom` read any file — `/proc/self/environ`, a credentials
/// file beside the provider, `/dev/zero` until the memory ran out — and its error quoted what
/// it read. A manifest reads only regular files inside its own directory, and no error quotes
/// what a file holds.
#[test]
fn a_provider_manifest_reads_only_files_of_its_own_directory_and_never_quotes_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("creds")).unwrap();
    std::fs::write(
        dir.path().join("creds/credentials"),
        "[default]\naws_secret_access_key = wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY\n",
    )
    .unwrap();
    let provider = dir.path().join("provider");
    std::fs::create_dir(&provider).unwrap();
    std::fs::write(
        provider.join("catalog.yaml"),
        "definitions: [wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY\n",
    )
    .unwrap();
    let module = write_file(
        dir.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: m, version: 0.1.0}\ncomponents:\n  api: {resources: {ConfigMap: {data: {a: b}}}}\n",
    );
    let provider_dir = provider.display().to_string();
    for (from, expected) in [
        (
            "/proc/self/environ",
            "must be relative and inside the provider's directory",
        ),
        (
            "../creds/credentials",
            "must be relative and inside the provider's directory",
        ),
        (
            "/dev/zero",
            "must be relative and inside the provider's directory",
        ),
        ("catalog.yaml", "not a YAML catalog of definitions (at line"),
    ] {
        write_file(
            &provider,
            "provider.yaml",
            &format!(
                "apiVersion: core.opm.dev/v1\nkind: Provider\nmetadata: {{name: p, version: 0.1.0}}\ndefinitionsFrom: {from}\ntransformers: {{}}\n"
            ),
        );
        let run = opm_tests::opm_env(
            ["mod", "vet", &module, "-p", &provider_dir],
            &[("MY_SECRET_TOKEN", "ghp_notarealtokenbutlongenough")],
        );
        assert!(run.exited(2), "{from}: {}", run.stderr);
        assert!(
            run.stderr.contains(expected),
            "{from}: {expected}: {}",
            run.stderr
        );
        for secret in [
            "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY",
            "ghp_notarealtoken",
        ] {
            assert!(!run.stderr.contains(secret), "{from}: {}", run.stderr);
        }
    }
    // A link inside the directory that leads out of it is refused too.
    std::os::unix::fs::symlink(
        dir.path().join("creds/credentials"),
        provider.join("linked.yaml"),
    )
    .unwrap();
    write_file(
        &provider,
        "provider.yaml",
        "apiVersion: core.opm.dev/v1\nkind: Provider\nmetadata: {name: p, version: 0.1.0}\ndefinitionsFrom: linked.yaml\ntransformers: {}\n",
    );
    let run = opm(["mod", "vet", &module, "-p", &provider_dir]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("leads out of the provider's directory"),
        "{}",
        run.stderr
    );
}
