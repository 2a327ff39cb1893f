//! `opm platform build` and `opm platform diff`, run as a user runs them: a releases file over
//! copies of the repository's examples, each release's directory compared byte for byte with
//! what `opm mod build --out-dir` writes for it, unchanged releases skipped, a failing release
//! keeping its last good output, and the pull request's diff from a real git repository.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::exited;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs opm in `dir` with only the environment variables `vars` (and PATH, HOME).
fn opm_with(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_opm"));
    command
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.join(".home"))
        .env("OPM_CACHE_DIR", dir.join(".cache"));
    for (name, value) in vars {
        command.env(name, value);
    }
    command.output().expect("opm runs")
}

/// Every file under `dir`, by `/`-separated relative path, with its bytes.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let relative = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push((relative, std::fs::read(&path).expect("read")));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// A platform of three releases over copies of hello and shop, in `dir`.
fn platform_in(dir: &Path) {
    for example in ["hello", "shop"] {
        let to = dir.join("modules").join(example);
        std::fs::create_dir_all(&to).unwrap();
        for file in ["module.yaml", "values-prod.yaml"] {
            let from = repo().join("examples").join(example).join(file);
            if from.exists() {
                std::fs::copy(from, to.join(file)).unwrap();
            }
        }
    }
    std::fs::create_dir_all(dir.join("platform/values")).unwrap();
    std::fs::write(
        dir.join("platform/values/shop-prod.yaml"),
        "domain: shop.acme.example\ncleanup: {schedule: \"30 2 * * *\"}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("platform/platform.yaml"),
        "apiVersion: core.opm.dev/v1
kind: Platform
metadata: {name: acme}
environments: [dev, prod]
releases:
  hello:
    module: ../modules/hello
  hello-eu:
    module: ../modules/hello/module.yaml
    only: [prod]
    namespace: eu
  shop:
    module: ../modules/shop
    namespace: shop
    values: {replicas: 3}
    environments:
      prod:
        namespace: shop-prod
        valuesFiles: [../modules/shop/values-prod.yaml, values/shop-prod.yaml]
        values: {replicas: 6, database: {password: '${env:SHOP_DB_PASSWORD}'}}
",
    )
    .unwrap();
}

const PASSWORD: &str = "correct-horse-battery-staple";

#[test]
fn each_release_is_what_mod_build_writes_for_it_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    platform_in(dir);
    let vars = [("SHOP_DB_PASSWORD", PASSWORD)];
    let output = opm_with(
        dir,
        &[
            "platform",
            "build",
            "platform/platform.yaml",
            "--env",
            "prod",
            "--out-dir",
            "out",
        ],
        &vars,
    );
    let (_, stderr) = exited(&output, 0);
    assert!(
        stderr.contains("prod: 3 releases: 3 rendered, 0 unchanged, 0 failed"),
        "{stderr}"
    );
    // The same releases, one `opm mod build` each, written out by hand.
    let singles: [(&str, &[&str]); 3] = [
        (
            "hello",
            &[
                "mod",
                "build",
                "platform/../modules/hello",
                "--instance",
                "hello",
            ],
        ),
        (
            "hello-eu",
            &[
                "mod",
                "build",
                "platform/../modules/hello/module.yaml",
                "--instance",
                "hello-eu",
                "-n",
                "eu",
            ],
        ),
        (
            "shop",
            &[
                "mod",
                "build",
                "platform/../modules/shop",
                "-f",
                "platform/../modules/shop/values-prod.yaml",
                "-f",
                "platform/values/shop-prod.yaml",
                "--set",
                "replicas=6",
                "--set",
                "database.password=\"${env:SHOP_DB_PASSWORD}\"",
                "--instance",
                "shop",
                "-n",
                "shop-prod",
            ],
        ),
    ];
    for (release, args) in singles {
        let single = format!("single/{release}");
        let mut args = args.to_vec();
        args.extend(["--out-dir", &single]);
        exited(&opm_with(dir, &args, &vars), 0);
        let platform = tree(&dir.join("out/prod").join(release));
        assert!(platform.len() >= 3, "{release}: {platform:?}");
        assert!(
            platform == tree(&dir.join(&single)),
            "{release}: the platform's directory is not what mod build wrote"
        );
    }
    let shop = std::fs::read_to_string(dir.join("out/prod/shop/shop.yaml")).unwrap();
    assert!(
        shop.contains("replicas: 6") && shop.contains("shop.acme.example"),
        "{shop}"
    );
    // dev: hello-eu is prod's only, shop has its own namespace and replicas.
    let output = opm_with(
        dir,
        &[
            "platform",
            "build",
            "platform/platform.yaml",
            "--env",
            "dev",
            "--out-dir",
            "out",
        ],
        &vars,
    );
    let (_, stderr) = exited(&output, 0);
    assert!(stderr.contains("dev: 2 releases: 2 rendered"), "{stderr}");
    let shop = std::fs::read_to_string(dir.join("out/dev/shop/shop.yaml")).unwrap();
    assert!(
        shop.contains("namespace: shop\n") && shop.contains("replicas: 3"),
        "{shop}"
    );
    assert!(!dir.join("out/dev/hello-eu").exists());
}

/// The `release` events of a `--verbose=json` run: release → status.
fn statuses(stderr: &str) -> std::collections::BTreeMap<String, String> {
    stderr
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect(line))
        .filter(|event| event["event"] == "release")
        .map(|event| {
            (
                event["release"].as_str().unwrap().to_owned(),
                event["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn unchanged_releases_are_skipped_and_cached_output_is_fresh_output() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    platform_in(dir);
    let vars = [("SHOP_DB_PASSWORD", PASSWORD)];
    let build = |extra: &[&str], vars: &[(&str, &str)]| {
        let mut args = vec![
            "platform",
            "build",
            "platform/platform.yaml",
            "--env",
            "prod",
            "--out-dir",
            "out",
            "--verbose=json",
        ];
        args.extend(extra);
        let (_, stderr) = exited(&opm_with(dir, &args, vars), 0);
        statuses(&stderr)
    };
    let all = |status: &str| {
        ["hello", "hello-eu", "shop"]
            .map(|r| (r.to_owned(), status.to_owned()))
            .into_iter()
            .collect()
    };
    assert_eq!(build(&[], &vars), all("rendered"));
    let first = tree(&dir.join("out"));
    assert_eq!(build(&[], &vars), all("unchanged"));
    assert!(
        tree(&dir.join("out")) == first,
        "a run with nothing changed wrote something"
    );
    // Rendered afresh, everything is byte for byte what the cache kept.
    assert_eq!(build(&["--force"], &vars), all("rendered"));
    assert!(
        tree(&dir.join("out")) == first,
        "fresh output differs from cached output"
    );
    // One input of one release changed: that release alone.
    std::fs::write(
        dir.join("platform/values/shop-prod.yaml"),
        "domain: shop2.acme.example\n",
    )
    .unwrap();
    let changed = build(&[], &vars);
    assert_eq!(changed["shop"], "rendered");
    assert_eq!(changed["hello"], "unchanged");
    assert_eq!(changed["hello-eu"], "unchanged");
    // A variable a `${env:…}` reads is an input too.
    let changed = build(&[], &[("SHOP_DB_PASSWORD", "another-long-password")]);
    assert_eq!(changed["shop"], "rendered");
    assert_eq!(changed["hello"], "unchanged");
    // The module file of two releases.
    let module = dir.join("modules/hello/module.yaml");
    let text = std::fs::read_to_string(&module).unwrap();
    std::fs::write(&module, format!("{text}\n# edited\n")).unwrap();
    let changed = build(&[], &vars);
    assert_eq!(changed["hello"], "rendered");
    assert_eq!(changed["hello-eu"], "rendered");
    assert_eq!(changed["shop"], "rendered", "the variable changed back");
    // -o json changes the output: every release again.
    assert_eq!(build(&["-o", "json"], &vars), all("rendered"));
    // A release the file no longer has is removed with its directory.
    let file = dir.join("platform/platform.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace("    only: [prod]\n", "    only: [dev]\n"),
    )
    .unwrap();
    let (_, stderr) = exited(
        &opm_with(
            dir,
            &[
                "platform",
                "build",
                "platform/platform.yaml",
                "--env",
                "prod",
                "--out-dir",
                "out",
                "-o",
                "json",
            ],
            &vars,
        ),
        0,
    );
    assert!(
        stderr.contains("prod/hello-eu: removed (no longer in platform/platform.yaml)"),
        "{stderr}"
    );
    assert!(!dir.join("out/prod/hello-eu").exists());
    assert!(dir.join("out/prod/hello").exists());
}

#[test]
fn a_failing_release_fails_the_run_keeps_its_last_output_and_every_release_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    platform_in(dir);
    let vars = [("SHOP_DB_PASSWORD", PASSWORD)];
    let args = [
        "platform",
        "build",
        "platform/platform.yaml",
        "--env",
        "prod",
        "--out-dir",
        "out",
    ];
    exited(&opm_with(dir, &args, &vars), 0);
    let before = tree(&dir.join("out/prod/shop"));
    // Too short for the module's minLength, and a change of hello's module.
    let module = dir.join("modules/hello/module.yaml");
    let text = std::fs::read_to_string(&module).unwrap();
    std::fs::write(&module, format!("{text}\n# edited\n")).unwrap();
    let output = opm_with(dir, &args, &[("SHOP_DB_PASSWORD", "Zq9-xv")]);
    let (_, stderr) = exited(&output, 1);
    assert!(
        stderr.contains("prod/shop: error: --set database.password: parameter database.password: the value is shorter than 12 characters"),
        "{stderr}"
    );
    assert!(stderr.contains("prod/shop: failed"), "{stderr}");
    assert!(stderr.contains("prod/hello: rendered"), "{stderr}");
    assert!(
        stderr.contains("prod: 3 releases: 2 rendered, 0 unchanged, 1 failed"),
        "{stderr}"
    );
    assert!(!stderr.contains("Zq9-xv"), "the value itself: {stderr}");
    assert!(
        tree(&dir.join("out/prod/shop")) == before,
        "the failed release's output changed"
    );
    // Under --verbose=json every line is an object; those of the render name the release.
    let mut json_args = args.to_vec();
    json_args.push("--verbose=json");
    let output = opm_with(dir, &json_args, &[("SHOP_DB_PASSWORD", "Zq9-xv")]);
    let (_, stderr) = exited(&output, 1);
    let events: Vec<serde_json::Value> = stderr
        .lines()
        .map(|line| serde_json::from_str(line).expect(line))
        .collect();
    let error = events
        .iter()
        .find(|e| e["event"] == "error")
        .expect("an error event");
    assert_eq!(error["release"], "shop");
    assert_eq!(error["environment"], "prod");
    let last = events.last().unwrap();
    assert_eq!(last["event"], "summary");
    assert_eq!(last["failed"], 1);
    assert_eq!(last["status"], 1);
    // The failed render recorded no key: with the password back, shop's inputs are those of
    // the output its directory kept, which is not rendered again.
    let (_, stderr) = exited(&opm_with(dir, &json_args, &vars), 0);
    assert_eq!(statuses(&stderr)["shop"], "unchanged");
    assert!(tree(&dir.join("out/prod/shop")) == before);
}

#[test]
fn a_typo_in_the_command_or_the_file_gets_a_did_you_mean() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    platform_in(dir);
    let output = opm_with(
        dir,
        &[
            "platform",
            "build",
            "platform/platform.yaml",
            "--env",
            "prd",
            "--out-dir",
            "out",
        ],
        &[],
    );
    let (_, stderr) = exited(&output, 2);
    assert!(
        stderr.contains("platform/platform.yaml: --env: \"prd\" is not one of the file's environments (dev, prod); did you mean \"prod\"?"),
        "{stderr}"
    );
    let output = opm_with(
        dir,
        &[
            "platform",
            "build",
            "platform/platform.yaml",
            "--env",
            "prod",
            "--out-dir",
            "out",
            "--release",
            "shpo",
        ],
        &[],
    );
    let (_, stderr) = exited(&output, 2);
    assert!(
        stderr.contains("has no release \"shpo\"; did you mean \"shop\"?"),
        "{stderr}"
    );
    let file = dir.join("platform/platform.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("valuesFiles:", "valueFiles:")).unwrap();
    let output = opm_with(
        dir,
        &[
            "platform",
            "build",
            "platform/platform.yaml",
            "--env",
            "prod",
            "--out-dir",
            "out",
        ],
        &[],
    );
    let (_, stderr) = exited(&output, 2);
    assert!(
        stderr.contains(
            "releases.shop.environments.prod.valueFiles: unknown key; did you mean \"valuesFiles\"?"
        ),
        "{stderr}"
    );
    assert!(!dir.join("out").exists());
}

/// Runs git in `dir`, which must succeed; its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "opm")
        .env("GIT_AUTHOR_EMAIL", "opm@example.com")
        .env("GIT_COMMITTER_NAME", "opm")
        .env("GIT_COMMITTER_EMAIL", "opm@example.com")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The secret planted in a values file at the first commit, and the one that replaces it.
const PLANTED: &str = "planted-Value+of/the=first&commit";
const ROTATED: &str = "rotated-Value+of/the=second&commit";

/// A git repository of two commits: the platform of [`platform_in`] with shop's production
/// password in a values file, and then that password rotated and production's replicas raised.
fn two_commits(dir: &Path) {
    platform_in(dir);
    let file = dir.join("platform/platform.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace(", database: {password: '${env:SHOP_DB_PASSWORD}'}", ""),
    )
    .unwrap();
    let values = dir.join("platform/values/shop-prod.yaml");
    std::fs::write(
        &values,
        format!("domain: shop.acme.example\ndatabase: {{password: \"{PLANTED}\"}}\n"),
    )
    .unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "first"]);
    std::fs::write(
        &values,
        format!("domain: shop.acme.example\ndatabase: {{password: \"{ROTATED}\"}}\n"),
    )
    .unwrap();
    std::fs::write(
        &file,
        std::fs::read_to_string(&file)
            .unwrap()
            .replace("replicas: 6", "replicas: 7"),
    )
    .unwrap();
    git(dir, &["commit", "-q", "-a", "-m", "second"]);
}

/// Every form of `secret` a diff could leak it in.
fn leaked(text: &str, secret: &str) -> Vec<String> {
    use base64::Engine as _;
    let forms = [
        secret.to_owned(),
        base64::engine::general_purpose::STANDARD.encode(secret),
        base64::engine::general_purpose::URL_SAFE.encode(secret),
        secret
            .replace('+', "%2B")
            .replace('/', "%2F")
            .replace('=', "%3D")
            .replace('&', "%26"),
        secret.replace('/', "\\/"),
    ];
    forms
        .into_iter()
        .filter(|form| text.contains(form.as_str()))
        .collect()
}

#[test]
fn the_diff_against_a_revision_shows_exactly_the_changed_objects_and_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    two_commits(dir);
    // What opm_with's HOME and compile cache add is left out.
    std::fs::write(dir.join(".git/info/exclude"), ".cache/\n.home/\n").unwrap();
    let tree_status = || git(dir, &["status", "--porcelain"]);
    let status_before = tree_status();
    let diff = |extra: &[&str]| {
        let mut args = vec![
            "platform",
            "diff",
            "platform/platform.yaml",
            "--against-ref",
            "HEAD~1",
        ];
        args.extend(extra);
        opm_with(dir, &args, &[])
    };
    let output = diff(&["-o", "json"]);
    let (stdout, stderr) = exited(&output, 1);
    assert!(
        stderr.contains("dev: no difference (2 releases)"),
        "{stderr}"
    );
    assert!(stderr.contains("prod: 1 of 3 releases differ"), "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let prod = &json["environments"][1];
    assert_eq!(prod["name"], "prod");
    let releases = prod["releases"].as_array().unwrap();
    let status: Vec<(&str, &str)> = releases
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        status,
        [("hello", "same"), ("hello-eu", "same"), ("shop", "changed")]
    );
    let shop = &releases[2];
    let changed: Vec<String> = shop["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}/{}",
                c["object"]["kind"].as_str().unwrap(),
                c["object"]["name"].as_str().unwrap()
            )
        })
        .collect();
    // The rotated password changes the Secret and the checksum of every pod that reads it.
    assert_eq!(
        changed,
        [
            "Secret/db-credentials",
            "Deployment/api",
            "StatefulSet/db",
            "CronJob/cleanup"
        ]
    );
    assert_eq!(shop["added"], serde_json::json!([]));
    assert_eq!(shop["removed"], serde_json::json!([]));
    let deployment = &shop["changed"][1]["diff"];
    assert!(
        deployment
            .as_str()
            .unwrap()
            .contains("-  replicas: 6\n+  replicas: 7\n"),
        "{deployment}"
    );
    assert_eq!(
        shop["old"].as_array().unwrap().len(),
        shop["new"].as_array().unwrap().len()
    );
    // Neither password, in any form, in any output.
    for output in ["text", "markdown", "json"] {
        let (stdout, stderr) = exited(&diff(&["-o", output]), 1);
        for secret in [PLANTED, ROTATED] {
            let found = leaked(&format!("{stdout}{stderr}"), secret);
            assert!(found.is_empty(), "-o {output} leaks {found:?}:\n{stdout}");
        }
        assert!(
            stdout.contains("[redacted"),
            "-o {output} masks nothing:\n{stdout}"
        );
    }
    // The search finds them where they are shown.
    let (stdout, _) = exited(&diff(&["--show-secrets"]), 1);
    assert!(!leaked(&stdout, ROTATED).is_empty(), "{stdout}");
    // The working tree, the index and the repository's worktrees are as they were.
    assert_eq!(tree_status(), status_before);
    assert_eq!(git(dir, &["worktree", "list"]).lines().count(), 1);
    // Against itself: no difference, exit 0. A revision that is not one: exit 2.
    let (_, stderr) = exited(
        &opm_with(
            dir,
            &[
                "platform",
                "diff",
                "platform/platform.yaml",
                "--against-ref",
                "HEAD",
            ],
            &[],
        ),
        0,
    );
    assert!(
        stderr.contains("prod: no difference (3 releases)"),
        "{stderr}"
    );
    let (_, stderr) = exited(
        &opm_with(
            dir,
            &[
                "platform",
                "diff",
                "platform/platform.yaml",
                "--against-ref",
                "no-such-ref",
            ],
            &[],
        ),
        2,
    );
    assert!(
        stderr.contains("--against-ref no-such-ref: no such commit"),
        "{stderr}"
    );
}

/// `actual` against the snapshot `name` in tests/fixtures/platform/ (written afresh with
/// OPM_UPDATE_SNAPSHOTS=1).
fn snapshot(name: &str, actual: &str) {
    let path = repo().join("tests/fixtures/platform").join(name);
    if std::env::var_os("OPM_UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (OPM_UPDATE_SNAPSHOTS=1 writes it)", path.display()));
    assert!(
        expected == actual,
        "{} differs (OPM_UPDATE_SNAPSHOTS=1 writes it anew):\n{actual}",
        path.display()
    );
}

#[test]
fn the_markdown_and_json_of_a_diff_are_as_their_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    two_commits(dir);
    for (output, file) in [("markdown", "diff.md"), ("json", "diff.json")] {
        let (stdout, _) = exited(
            &opm_with(
                dir,
                &[
                    "platform",
                    "diff",
                    "platform/platform.yaml",
                    "--against-ref",
                    "HEAD~1",
                    "--env",
                    "prod",
                    "-o",
                    output,
                ],
                &[],
            ),
            1,
        );
        snapshot(file, &stdout);
    }
}

#[test]
fn every_release_is_pushed_as_mod_push_pushes_it() {
    let registry = common::registry::Registry::start("127.0.0.1");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    platform_in(dir);
    let vars = [("SHOP_DB_PASSWORD", PASSWORD)];
    let prefix = registry.oci("acme/deploy");
    let build = || {
        opm_with(
            dir,
            &[
                "platform",
                "build",
                "platform/platform.yaml",
                "--env",
                "prod",
                "--out-dir",
                "out",
                "--push",
                &prefix,
                "--insecure-http",
                "--verbose=json",
            ],
            &vars,
        )
    };
    let pushed = |stderr: &str| -> std::collections::BTreeMap<String, String> {
        stderr
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).expect(line))
            .filter(|event| event["event"] == "push")
            .map(|event| {
                (
                    event["release"].as_str().unwrap().to_owned(),
                    event["url"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let (_, stderr) = exited(&build(), 0);
    let first = pushed(&stderr);
    assert_eq!(first.len(), 3, "{stderr}");
    let hello = &first["hello"];
    assert!(
        hello.starts_with(&format!("{prefix}/hello:prod@sha256:")),
        "{hello}"
    );
    // `opm mod push` of the same release pushes the same artifact, to the digest.
    let single = registry.oci("single/hello:prod");
    let (stdout, _) = exited(
        &opm_with(
            dir,
            &[
                "mod",
                "push",
                "platform/../modules/hello",
                "--instance",
                "hello",
                &single,
                "--insecure-http",
                "-o",
                "json",
            ],
            &vars,
        ),
        0,
    );
    let single: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let digest = single["digest"].as_str().unwrap();
    assert!(
        hello.ends_with(&format!("@{digest}")),
        "{hello} against {digest}"
    );
    // Unchanged releases are pushed again (to the same digests): the tag follows the
    // directory, whatever rendered it.
    let (_, stderr) = exited(&build(), 0);
    assert!(
        statuses(&stderr).values().all(|s| s == "unchanged"),
        "{stderr}"
    );
    assert_eq!(pushed(&stderr), first);
}

#[test]
fn vet_checks_every_release_of_every_environment_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    platform_in(dir);
    let vars = [("SHOP_DB_PASSWORD", PASSWORD)];
    let (_, stderr) = exited(
        &opm_with(dir, &["platform", "vet", "platform/platform.yaml"], &vars),
        0,
    );
    assert!(stderr.contains("dev: 2 checked, 0 failed"), "{stderr}");
    assert!(stderr.contains("prod: 3 checked, 0 failed"), "{stderr}");
    // A typo of a parameter in one environment's inline values: mod vet's error, with its
    // did-you-mean, named by release and environment.
    let file = dir.join("platform/platform.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace("values: {replicas: 3}", "values: {replicaz: 3}"),
    )
    .unwrap();
    let (_, stderr) = exited(
        &opm_with(dir, &["platform", "vet", "platform/platform.yaml"], &vars),
        1,
    );
    let error = stderr
        .lines()
        .find(|line| line.starts_with("dev/shop: error"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        error.contains("replicaz") && error.contains("did you mean \"replicas\"?"),
        "{error}"
    );
    assert!(stderr.contains("prod/shop: error"), "{stderr}");
    assert!(stderr.contains("dev/hello: checked"), "{stderr}");
    assert!(!dir.join("out").exists());
}

#[test]
fn a_release_renders_a_module_from_a_registry_as_mod_build_does() {
    let registry = common::registry::Registry::start("127.0.0.1");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    platform_in(dir);
    let reference = registry.oci("modules/hello:v1");
    let (stdout, _) = exited(
        &opm_with(dir, &["mod", "publish", "modules/hello", &reference], &[]),
        0,
    );
    assert!(
        stdout.starts_with(&format!("published 1 file as {reference}@sha256:")),
        "{stdout}"
    );
    // Published again unchanged: the same digest.
    let (again, _) = exited(
        &opm_with(dir, &["mod", "publish", "modules/hello", &reference], &[]),
        0,
    );
    assert_eq!(again, stdout);
    std::fs::write(
        dir.join("platform/remote.yaml"),
        format!(
            "apiVersion: core.opm.dev/v1\nkind: Platform\nmetadata: {{name: r}}\n\
             environments: [prod]\nreleases:\n  hello:\n    module: {reference}\n    namespace: edge\n"
        ),
    )
    .unwrap();
    let build = || {
        let (_, stderr) = exited(
            &opm_with(
                dir,
                &[
                    "platform",
                    "build",
                    "platform/remote.yaml",
                    "--out-dir",
                    "out",
                    "--verbose=json",
                ],
                &[],
            ),
            0,
        );
        statuses(&stderr)["hello"].clone()
    };
    assert_eq!(build(), "rendered");
    exited(
        &opm_with(
            dir,
            &[
                "mod",
                "build",
                &reference,
                "--instance",
                "hello",
                "-n",
                "edge",
                "--out-dir",
                "single",
            ],
            &[],
        ),
        0,
    );
    assert!(
        tree(&dir.join("out/prod/hello")) == tree(&dir.join("single")),
        "the release is not what mod build of the reference writes"
    );
    let provenance: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("out/prod/hello/opm.render")).unwrap())
            .unwrap();
    assert_eq!(provenance["inputs"]["module"], reference.as_str());
    assert_eq!(build(), "unchanged");
    // The tag moved to another module: rendered again.
    let module = dir.join("modules/hello/module.yaml");
    let text = std::fs::read_to_string(&module).unwrap();
    std::fs::write(&module, format!("{text}\n# moved\n")).unwrap();
    exited(
        &opm_with(dir, &["mod", "publish", "modules/hello", &reference], &[]),
        0,
    );
    assert_eq!(build(), "rendered");
    // A reference that is no module is that release's failure, named.
    std::fs::write(
        dir.join("platform/remote.yaml"),
        std::fs::read_to_string(dir.join("platform/remote.yaml"))
            .unwrap()
            .replace("modules/hello:v1", "modules/nothing:v1"),
    )
    .unwrap();
    let (_, stderr) = exited(
        &opm_with(
            dir,
            &[
                "platform",
                "build",
                "platform/remote.yaml",
                "--out-dir",
                "out",
            ],
            &[],
        ),
        1,
    );
    assert!(
        stderr.contains("prod/hello: error: fetching the module")
            && stderr.contains("modules/nothing:v1"),
        "{stderr}"
    );
}

#[test]
fn a_second_build_of_an_environment_waits_for_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    platform_in(dir);
    std::fs::create_dir_all(dir.join("out/dev")).unwrap();
    // The first build's lock, held here.
    let held = std::fs::File::create(dir.join("out/dev/.opm-platform.lock")).unwrap();
    held.lock().unwrap();
    let mut second = Command::new(env!("CARGO_BIN_EXE_opm"))
        .args([
            "platform",
            "build",
            "platform/platform.yaml",
            "--env",
            "dev",
            "--out-dir",
            "out",
        ])
        .current_dir(dir)
        .env("OPM_CACHE_DIR", dir.join(".cache"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("opm runs");
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(second.try_wait().unwrap().is_none(), "it did not wait");
    assert!(
        !dir.join("out/dev/hello").exists(),
        "it wrote while the lock was held"
    );
    drop(held);
    let output = second.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(dir.join("out/dev/hello/.opm-output").is_file());
}

/// A registry controls a fetched module's layer: a small gzip of endless empty entries (here
/// 40,000, 20 MB of tar headers in a layer of a few hundred KB) is cut at the module limit
/// (16 MiB, each entry counted with its header), writing none of them, rather than unpacked
/// into as many files.
#[test]
fn a_module_layer_of_endless_empty_entries_is_cut_at_its_limit() {
    use opm_core::render::artifact::{self, LayerFile};
    let registry = common::registry::Registry::start("127.0.0.1");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let module = std::fs::read(repo().join("examples/hello/module.yaml")).unwrap();
    let names: Vec<String> = (0..40_000).map(|i| format!("e{i}")).collect();
    let mut files = vec![LayerFile {
        path: "module.yaml",
        bytes: &module,
        mode: opm_core::render::FileMode::Regular,
    }];
    files.extend(names.iter().map(|name| LayerFile {
        path: name,
        bytes: &[],
        mode: opm_core::render::FileMode::Regular,
    }));
    let built = artifact::build(&files, 0, Default::default()).unwrap();
    assert!(built.layer.len() < 2 << 20, "{} bytes", built.layer.len());
    let reference = registry.oci("modules/bomb:v1");
    let target = opm_core::provider::oci::OciRef::parse(&reference).unwrap();
    opm_runtime::render::deliver::push_artifact(&target, &built, &Default::default()).unwrap();
    let output = opm_with(dir, &["mod", "build", &reference], &[]);
    let (_, stderr) = exited(&output, 2);
    assert!(
        stderr.contains("modules/bomb:v1") && stderr.contains("over 16777216 bytes"),
        "{stderr}"
    );
}
