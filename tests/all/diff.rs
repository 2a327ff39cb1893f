//! `opm mod diff`: a render compared with committed manifests or with another provider's render,
//! resource by resource, as values; exit 0 equal, 1 different, 2 error.

use opm_tests::{opm, opm_env, provider_with, repo_root, write_file};

fn shop() -> String {
    repo_root()
        .join("examples/shop/module.yaml")
        .display()
        .to_string()
}

/// A `--split` directory of the shop example as committed.
fn committed() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("deploy").display().to_string();
    let run = opm(["mod", "build", &shop(), "--split", "--out-dir", &out]);
    assert!(run.exited(0), "{}", run.stderr);
    dir
}

#[test]
fn against_a_split_directory_only_the_changed_resources_are_reported() {
    let dir = committed();
    let deploy = dir.path().join("deploy").display().to_string();
    let same = opm(["mod", "diff", &shop(), "--against", &deploy]);
    assert!(same.exited(0), "{}{}", same.stdout, same.stderr);
    assert_eq!(same.stdout, "");
    assert!(
        same.stderr.starts_with("no difference: "),
        "{}",
        same.stderr
    );

    // Values changed: more replicas for api; the rest of the module is as committed.
    let values = write_file(dir.path(), "values.yaml", "replicas: 5\n");
    let run = opm(["mod", "diff", &shop(), "-f", &values, "--against", &deploy]);
    assert!(run.exited(1), "{}{}", run.stdout, run.stderr);
    let headers: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("+++ "))
        .collect();
    assert_eq!(
        headers,
        ["+++ apps/Deployment shop/api (provider kubernetes 0.2.0)"],
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("\n-  replicas: 3\n+  replicas: 5\n"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains('\x1b'), "no colour into a pipe");
    assert_eq!(
        run.stderr,
        "1 resource differ: 1 changed, 0 added, 0 removed\n"
    );
}

#[test]
fn added_and_removed_resources_are_listed_and_key_order_does_not_count() {
    let dir = committed();
    let deploy = dir.path().join("deploy");
    // Rewrite one committed file with its keys in another order and in flow style: no change.
    let file = deploy.join("poddisruptionbudget-api.yaml");
    assert!(
        file.exists(),
        "the shop example renders a PodDisruptionBudget for api"
    );
    {
        let value: serde_json::Value =
            serde_saphyr::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let mut keys: Vec<(String, serde_json::Value)> =
            value.as_object().unwrap().clone().into_iter().collect();
        keys.reverse();
        let flipped: serde_json::Map<String, serde_json::Value> = keys.into_iter().collect();
        std::fs::write(&file, serde_json::to_string(&flipped).unwrap()).unwrap();
    }
    // One resource that the module no longer renders, and one it renders that is missing.
    std::fs::write(
        deploy.join("configmap-stale.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stale, namespace: shop}\n",
    )
    .unwrap();
    let service = std::fs::read_dir(&deploy)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("service-api")
        })
        .expect("a committed Service of api");
    std::fs::remove_file(service).unwrap();
    let run = opm([
        "mod",
        "diff",
        &shop(),
        "--against",
        &deploy.display().to_string(),
    ]);
    assert!(run.exited(1), "{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout,
        "added: Service shop/api\nremoved: ConfigMap shop/stale\n"
    );
}

#[test]
fn secret_data_is_masked_unless_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let committed = dir.path().join("all.yaml").display().to_string();
    let run = opm(["mod", "build", &shop(), "-o", "json"]);
    assert!(run.exited(0));
    std::fs::write(&committed, &run.stdout).unwrap();
    let set = "database.password=hunter2-new-password";
    let run = opm([
        "mod",
        "diff",
        &shop(),
        "--set",
        set,
        "--against",
        &committed,
    ]);
    assert!(run.exited(1), "{}", run.stderr);
    assert!(!run.stdout.contains("hunter2-new"), "{}", run.stdout);
    assert!(
        !run.stdout.contains("change-me-with-a-values-file"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "-  password: \"[redacted: value before]\"\n+  password: \"[redacted: value after]\""
        ),
        "{}",
        run.stdout
    );
    let shown = opm([
        "mod",
        "diff",
        &shop(),
        "--set",
        set,
        "--against",
        &committed,
        "--show-secrets",
    ]);
    assert!(shown.exited(1));
    assert!(
        shown.stdout.contains("+  password: hunter2-new"),
        "{}",
        shown.stdout
    );
}

#[test]
fn against_another_provider_shows_what_upgrading_it_changes() {
    let provider = provider_with(&[]);
    let path = provider.path().join("provider.yaml");
    let mut manifest: opm_core::provider::ProviderManifest =
        serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    manifest
        .definitions
        .get_mut("opm.dev/traits/scaling@v1#Replicas")
        .unwrap()
        .defaults = Some(serde_json::json!(2));
    std::fs::write(&path, serde_saphyr::to_string(&manifest).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let module = write_file(
        dir.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: up, version: 1.0.0, namespace: up}\ncomponents:\n  web:\n    resources: {Container: {image: nginx}}\n",
    );
    let newer = provider.path().display().to_string();
    let run = opm([
        "mod",
        "diff",
        &module,
        "-p",
        &newer,
        "--against-provider",
        "kubernetes",
    ]);
    assert!(run.exited(1), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("--- apps/Deployment up/web (provider kubernetes)\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("\n-  replicas: 1\n+  replicas: 2\n"),
        "{}",
        run.stdout
    );
    let same = opm(["mod", "diff", &module, "--against-provider", "kubernetes"]);
    assert!(same.exited(0), "{}", same.stderr);
}

#[test]
fn errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing.yaml").display().to_string();
    let run = opm(["mod", "diff", &shop(), "--against", &missing]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(run.stderr.contains("cannot read"), "{}", run.stderr);
    let run = opm(["mod", "diff", &shop()]);
    assert!(run.exited(2), "needs --against: {}", run.stderr);
    let broken = write_file(
        dir.path(),
        "broken.yaml",
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: b, version: 1.0.0}\ncomponents:\n  x:\n    resources: {Container: {image: nginx}}\n    traits: {Ingress: {}}\n",
    );
    let run = opm(["mod", "diff", &broken, "--against", &missing]);
    assert!(
        run.exited(2),
        "a render that fails is an error: {}",
        run.stderr
    );
}

/// A module whose values put an `${env:API_TOKEN}` into a container's env, a ConfigMap and a
/// pod annotation.
const TOKEN_MODULE: &str = "
apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: tokens, version: 1.0.0, namespace: tokens}
components:
  api:
    resources:
      Container:
        image: registry.example/api:1
        env: {MODE: {value: fast}, API_TOKEN: {value: unset}}
    traits:
      PodMetadata: {annotations: {example.com/auth: unset}}
  settings:
    resources:
      ConfigMap: {data: {token: unset, mode: fast}}
";

const TOKEN_VALUES: &str = "
components:
  api:
    resources:
      Container: {env: {API_TOKEN: {value: '${env:API_TOKEN}'}}}
    traits:
      PodMetadata: {annotations: {example.com/auth: 'Bearer ${env:API_TOKEN}'}}
  settings:
    resources:
      ConfigMap: {data: {token: '${env:API_TOKEN}'}}
";

#[test]
fn values_from_the_environment_are_masked_in_every_resource_unless_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let module = write_file(dir.path(), "module.yaml", TOKEN_MODULE);
    let values = write_file(dir.path(), "values.yaml", TOKEN_VALUES);
    let deploy = dir.path().join("deploy").display().to_string();
    let (old, new) = ("old-token-4f9a1c", "new-token-7b2e0d");
    let committed = opm_env(
        [
            "mod",
            "build",
            &module,
            "-f",
            &values,
            "--split",
            "--out-dir",
            &deploy,
        ],
        &[("API_TOKEN", old)],
    );
    assert!(committed.exited(0), "{}", committed.stderr);

    let diff = |extra: &[&str]| {
        let mut args = vec!["mod", "diff", &module, "-f", &values, "--against", &deploy];
        args.extend_from_slice(extra);
        opm_env(args, &[("API_TOKEN", new)])
    };
    let run = diff(&[]);
    assert!(run.exited(1), "{}{}", run.stdout, run.stderr);
    for token in [old, new] {
        assert!(
            !run.stdout.contains(token),
            "{token} shown:\n{}",
            run.stdout
        );
        assert!(
            !run.stderr.contains(token),
            "{token} shown:\n{}",
            run.stderr
        );
    }
    for changed in ["apps/Deployment tokens/api", "ConfigMap tokens/settings"] {
        assert!(run.stdout.contains(changed), "{changed}:\n{}", run.stdout);
    }
    // Each of the three places shows that it changed, not what to.
    assert_eq!(
        run.stdout.matches("[redacted: value after]").count(),
        3,
        "{}",
        run.stdout
    );

    let shown = diff(&["--show-secrets"]);
    assert!(shown.exited(1), "{}", shown.stderr);
    assert!(
        shown.stdout.contains(old) && shown.stdout.contains(new),
        "{}",
        shown.stdout
    );
}

/// Real charts (2026-12): a migration from a chart renamed its claim (`grafana` became
/// `grafana-grafana`) and an existing install started on empty volumes, silently. Against an
/// existing render, `mod diff` warns of each claim (or StatefulSet) it would replace, and
/// `claimName` keeps the name.
#[test]
fn a_claim_the_render_would_rename_is_a_warning_that_its_data_is_not_moved() {
    let dir = tempfile::tempdir().unwrap();
    let grafana = repo_root().join("examples/grafana").display().to_string();
    let existing = dir.path().join("existing").display().to_string();
    let run = opm(["mod", "build", &grafana, "--split", "--out-dir", &existing]);
    assert!(run.exited(0), "{}", run.stderr);
    // Without the pinned name, the claim would be the component's and its entry's.
    let renamed = opm([
        "mod",
        "diff",
        &grafana,
        "--set",
        "persistence.claimName=grafana-storage",
        "--against",
        &existing,
    ]);
    assert!(renamed.exited(1), "{}", renamed.stderr);
    assert!(
        renamed.stderr.contains(
            "warning: PersistentVolumeClaim default/grafana would be replaced by \
             PersistentVolumeClaim default/grafana-storage: its data is not moved; pin the name"
        ),
        "{}",
        renamed.stderr
    );
    let kept = opm(["mod", "diff", &grafana, "--against", &existing]);
    assert!(kept.exited(0), "{}", kept.stderr);
    assert!(!kept.stderr.contains("warning"), "{}", kept.stderr);
}
