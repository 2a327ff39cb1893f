//! The Quadlet checker, `opm_tests::quadlet::check`, on units written by hand
//! (`tests/fixtures/quadlet/valid/`): the valid set passes Podman's real `quadlet` and
//! `systemd-analyze verify`, and each negative control, the same set with one mistake, fails
//! naming the mistake and its file, so the checker the provider's tests lean on demonstrably
//! can fail. Then the quadlet provider (`providers/quadlet`) on it: every example's render
//! passes, Secret files are 0600, `--strict` fails exactly on what `unhandled:` names, a patch
//! edits a unit's key, and one patch for Kubernetes and Quadlet edits a ConfigMap on both.
//!
//! Needs, installed by `eval "$(tests/setup.sh)"`: `quadlet` (Podman 5.4.2's, from Debian
//! trixie's podman package) and `systemd-analyze` (Debian's systemd) on PATH. Never skipped: a
//! missing tool fails the test, naming what installs it; the quick tier leaves these tests out
//! by name (`.config/nextest.toml`).

use std::fs;
use std::path::Path;

use opm_tests::quadlet::{check, exec_start, services};
use opm_tests::repo_root;

/// A copy of the valid fixture in a temporary directory, where a test may break it.
fn valid_units() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(
        &repo_root().join("tests/fixtures/quadlet/valid"),
        dir.path(),
    );
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in fs::read_dir(from).expect("read fixture") {
        let path = entry.expect("fixture entry").path();
        let target = to.join(path.file_name().expect("file name"));
        if path.is_dir() {
            fs::create_dir(&target).expect("create folder");
            copy_dir(&path, &target);
        } else {
            fs::copy(&path, &target).expect("copy fixture file");
        }
    }
}

/// Replaces the one `old` in `dir/file` with `new`.
fn edit(dir: &Path, file: &str, old: &str, new: &str) {
    let path = dir.join(file);
    let text = fs::read_to_string(&path).expect("read unit");
    assert_eq!(text.matches(old).count(), 1, "{file} holds {old:?} once");
    fs::write(&path, text.replace(old, new)).expect("write unit");
}

/// The checker's error on `dir`, which must fail, holding every one of `expected`.
fn fails_with(dir: &Path, expected: &[&str]) -> String {
    let error = check(dir).expect_err("the checker refuses the broken units");
    for part in expected {
        assert!(
            error.contains(part),
            "{part:?} is not in the error:\n{error}"
        );
    }
    error
}

#[test]
fn the_checker_passes_a_valid_set_of_units() {
    // A container with a volume, a bind-mounted file, an environment file, a published port
    // and a health check systemd waits for; a volume; a network; a pod of two containers; a
    // timer and the oneshot container it starts.
    let started = std::time::Instant::now();
    let dir = valid_units();
    if let Err(diagnostics) = check(dir.path()) {
        panic!("the valid units fail:\n{diagnostics}");
    }
    eprintln!("checked in {:?}", started.elapsed());
}

#[test]
fn the_checker_fails_an_unknown_container_key_in_quadlet() {
    let dir = valid_units();
    edit(
        dir.path(),
        "web.container",
        "[Container]\n",
        "[Container]\nFrobnicate=yes\n",
    );
    fails_with(
        dir.path(),
        &["quadlet", "web.container", "unsupported key 'Frobnicate'"],
    );
}

#[test]
fn the_checker_fails_a_quadlet_warning_though_quadlet_exits_0() {
    // An image name that is not fully qualified: Quadlet warns, converts, and exits 0.
    let dir = valid_units();
    edit(
        dir.path(),
        "app-api.container",
        "Image=docker.io/library/python:3.12-slim",
        "Image=python:3.12-slim",
    );
    fails_with(
        dir.path(),
        &[
            "quadlet",
            "app-api.container",
            "not a fully qualified image name",
        ],
    );
}

#[test]
fn the_checker_fails_a_service_value_systemd_rejects() {
    // Quadlet passes [Service] through; systemd-analyze warns, and exits 0.
    let dir = valid_units();
    edit(
        dir.path(),
        "web.container",
        "MemoryMax=256M",
        "MemoryMax=lots",
    );
    fails_with(
        dir.path(),
        &[
            "systemd-analyze verify",
            "web.service",
            "Invalid memory limit 'lots'",
            "MemoryMax=lots",
            "web.service ← web.container",
        ],
    );
}

#[test]
fn the_checker_fails_an_unknown_service_key_in_systemd() {
    let dir = valid_units();
    edit(
        dir.path(),
        "backup.container",
        "Restart=no\n",
        "Restart=no\nFrobnicate=yes\n",
    );
    fails_with(
        dir.path(),
        &[
            "systemd-analyze verify",
            "Unknown key 'Frobnicate' in section [Service]",
            "backup.service ← backup.container",
        ],
    );
}

#[test]
fn the_checker_fails_a_bad_timer() {
    let dir = valid_units();
    edit(dir.path(), "backup.timer", "*-*-* 03:00:00", "every night");
    fails_with(
        dir.path(),
        &["systemd-analyze verify", "backup.timer", "every night"],
    );
}

#[test]
fn the_checker_fails_a_timer_without_its_service() {
    // systemd-analyze verify says nothing of a timer whose service is missing: the checker does.
    let dir = valid_units();
    fs::remove_file(dir.path().join("backup.container")).expect("remove the timer's container");
    fails_with(
        dir.path(),
        &["backup.timer activates backup.service", "backup.container"],
    );
}

#[test]
fn the_checker_fails_a_file_a_unit_names_that_is_missing() {
    let dir = valid_units();
    fs::remove_file(dir.path().join("secrets/web.env")).expect("remove the environment file");
    fails_with(dir.path(), &["web.container", "secrets/web.env"]);
}

#[test]
fn the_checker_fails_a_directory_without_units_and_two_units_of_one_name() {
    let empty = tempfile::tempdir().expect("temp dir");
    fails_with(empty.path(), &["holds no Quadlet unit"]);

    let dir = valid_units();
    fs::copy(
        dir.path().join("data.volume"),
        dir.path().join("config/data.volume"),
    )
    .expect("copy a unit into a subfolder");
    fails_with(dir.path(), &["config/data.volume", "share a unit name"]);
}

/// `opm mod build MODULE -p quadlet --out-dir OUT EXTRA…`, which must succeed; its stderr.
fn render_quadlet(module: &Path, out: &Path, extra: &[&str]) -> String {
    let module = module.display().to_string();
    let out_dir = out.display().to_string();
    let mut args = vec![
        "mod",
        "build",
        &module,
        "-p",
        "quadlet",
        "--out-dir",
        &out_dir,
    ];
    args.extend_from_slice(extra);
    let run = opm_tests::opm(&args);
    assert!(
        run.exited(0),
        "opm {} failed ({:?}):\n{}",
        args.join(" "),
        run.status,
        run.stderr
    );
    run.stderr
}

/// Every file under `dir` with its permission bits, by path relative to `dir`.
fn modes(dir: &Path) -> Vec<(String, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in fs::read_dir(&folder).expect("read the render") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let mode = fs::metadata(&path).expect("metadata").permissions().mode() & 0o777;
            let relative = path.strip_prefix(dir).expect("under the render");
            found.push((relative.display().to_string(), mode));
        }
    }
    found.sort();
    found
}

#[test]
fn every_example_renders_with_quadlet_and_passes_quadlet_and_systemd_analyze() {
    for (name, module) in crate::examples::examples() {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = dir.path().join(&name);
        render_quadlet(&module, &out, &[]);
        if let Err(diagnostics) = check(&out) {
            panic!("examples/{name} rendered with -p quadlet is not valid Quadlet:\n{diagnostics}");
        }
    }
}

#[test]
fn quadlet_secret_files_are_0600_and_the_others_0644() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("shop");
    render_quadlet(&repo_root().join("examples/shop/module.yaml"), &out, &[]);
    let files = modes(&out);
    let secret: Vec<_> = files
        .iter()
        .filter(|(path, _)| path.starts_with("secrets/"))
        .collect();
    // The Secret's two keys, and the environment files of the three containers that read it.
    assert_eq!(secret.len(), 5, "{files:?}");
    for (path, mode) in &files {
        let expected = if path.starts_with("secrets/") {
            0o600
        } else {
            0o644
        };
        assert_eq!(*mode, expected, "{path} is {mode:o}: {files:?}");
    }
    let key = fs::read_to_string(out.join("secrets/db-credentials/username")).expect("a key");
    assert_eq!(key, "shop-app");
}

/// The FQNs `opm mod build` reports as handled by no transformer, or as the reason a component
/// is left out, in `stderr`.
fn reported_unhandled(stderr: &str) -> std::collections::BTreeSet<String> {
    let mut found = std::collections::BTreeSet::new();
    for line in stderr.lines() {
        if let Some((_, rest)) = line.split_once("no matched transformer handles ") {
            let list = rest.split(';').next().unwrap_or_default();
            found.extend(list.split(", ").map(str::to_owned));
        }
        if let Some((_, rest)) = line.split_once("provider quadlet cannot run it: ") {
            found.extend(rest.split(':').next().map(str::to_owned));
        }
    }
    found
}

#[test]
fn quadlet_strict_fails_exactly_on_what_unhandled_names() {
    let manifest = fs::read_to_string(repo_root().join("providers/quadlet/provider.yaml"))
        .expect("read the manifest");
    let manifest: serde_json::Value = serde_saphyr::from_str(&manifest).expect("YAML");
    let unhandled: std::collections::BTreeSet<String> = manifest["unhandled"]
        .as_array()
        .expect("unhandled")
        .iter()
        .flat_map(|entry| entry["definitions"].as_array().cloned().unwrap_or_default())
        .map(|fqn| fqn.as_str().expect("an FQN").to_owned())
        .collect();

    // The everything example attaches every definition: exactly the unhandled ones are
    // reported so, each with its reason, and --strict refuses the render.
    let everything = repo_root().join("examples/everything/module.yaml");
    let dir = tempfile::tempdir().expect("temp dir");
    let stderr = render_quadlet(&everything, &dir.path().join("out"), &[]);
    assert_eq!(reported_unhandled(&stderr), unhandled, "{stderr}");
    assert!(
        stderr.contains("opm.dev/traits/network@v1#Ingress: Podman has no HTTP router"),
        "{stderr}"
    );

    // A module of what the provider handles renders under --strict, a patch of its units
    // applied, and passes the real tools; with one unhandled trait more, --strict fails naming
    // it, and writes nothing.
    let module = r#"apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: strict, version: 0.1.0}
components:
  web:
    resources:
      Container:
        image: nginx:1.27
        ports: {http: {containerPort: 8080}}
        env:
          TOKEN: {secretKeyRef: {name: creds, key: token}}
        volumeMounts: {site: {mountPath: /usr/share/nginx/html}}
        readinessProbe: {exec: {command: ["true"]}}
      Volumes: {site: {configMap: site}}
    traits:
      Expose: {type: NodePort, ports: {http: {port: 80, targetPort: http, nodePort: 30080}}}
  db:
    metadata: {labels: {core.opm.dev/workload-type: stateful}}
    resources: {Container: {image: postgres:17.2}}
    traits: {PersistentStorage: {data: {size: 1Gi, mountPath: /var/lib/postgresql/data}}}
  site:
    resources: {ConfigMap: {data: {index.html: "<h1>hi</h1>", draft.html: "<h1>soon</h1>"}}}
  creds:
    resources: {Secret: {stringData: {token: s3cret}}}
  nightly:
    metadata: {labels: {core.opm.dev/workload-type: cronjob}}
    resources: {Container: {image: busybox:1.36, command: ["true"]}}
    traits: {Schedule: {cron: "30 2 * * 1-5", timeZone: Etc/UTC}}
patches:
  - target: {platform: quadlet, kind: Container, name: web}
    jsonPatch:
      - {op: add, path: /spec/Service/TimeoutStartSec, value: "300"}
  # A ConfigMap keeps the Kubernetes object's shape on Quadlet: one patch for both.
  - target: {platform: [kubernetes, quadlet], kind: ConfigMap, component: site}
    merge: {data: {draft.html: null}}
"#;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = opm_tests::write_file(dir.path(), "module.yaml", module);
    let out = dir.path().join("out");
    let stderr = render_quadlet(Path::new(&path), &out, &["--strict"]);
    assert!(reported_unhandled(&stderr).is_empty(), "{stderr}");
    if let Err(diagnostics) = check(&out) {
        panic!("the strict module is not valid Quadlet:\n{diagnostics}");
    }
    let web = fs::read_to_string(out.join("web.container")).expect("web.container");
    assert!(
        web.contains("\n[Service]\n") && web.contains("\nTimeoutStartSec=300\n"),
        "{web}"
    );
    assert!(web.contains("\nPublishPort=30080:8080\n"), "{web}");
    assert!(out.join("config/site/index.html").is_file());
    assert!(
        !out.join("config/site/draft.html").exists(),
        "the patch removed the key"
    );
    let timer = fs::read_to_string(out.join("nightly.timer")).expect("nightly.timer");
    assert!(
        timer.contains("\nOnCalendar=Mon..Fri *-*-* 02:30:00 Etc/UTC\n"),
        "{timer}"
    );

    let with_ingress = module.replace(
        "      Expose: {type: NodePort",
        "      Ingress: {host: shop.example.com}\n      Expose: {type: NodePort",
    );
    let path = opm_tests::write_file(dir.path(), "module.yaml", &with_ingress);
    let refused = dir.path().join("refused");
    let run = opm_tests::opm([
        "mod",
        "build",
        &path,
        "-p",
        "quadlet",
        "--strict",
        "--out-dir",
        &refused.display().to_string(),
    ]);
    assert!(run.exited(1), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "no matched transformer handles opm.dev/traits/network@v1#Ingress; \
             opm.dev/traits/network@v1#Ingress: Podman has no HTTP router"
        ),
        "{}",
        run.stderr
    );
    assert!(
        !refused.exists(),
        "a refused render wrote {}",
        refused.display()
    );
}

#[test]
fn podman_receives_the_probe_the_mount_and_the_variables_the_container_should_get() {
    // What the real generator writes into ExecStart=, read back as the words systemd passes to
    // podman: the HTTP probe's shell command, a bind mount whose path has a space, and a
    // variable with `%` (a systemd specifier) and `$` (a systemd variable; `$$` the kubelet's
    // escape for `$`), each exactly what the container should get.
    let module = r#"apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: argv, version: 0.1.0}
components:
  web:
    resources:
      Container:
        image: nginx:1.27
        ports: {http: {containerPort: 8080}}
        env:
          PRICE: {value: "100% of $5, not $$HOME"}
        volumeMounts: {site: {mountPath: /usr/share/my site}}
        readinessProbe:
          httpGet:
            path: /ready
            port: http
            httpHeaders: [{name: X-Probe, value: "it's 100%"}]
      Volumes: {site: {configMap: site}}
  site:
    resources: {ConfigMap: {data: {index.html: "<h1>hi</h1>"}}}
"#;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = opm_tests::write_file(dir.path(), "module.yaml", module);
    let out = dir.path().join("out");
    render_quadlet(Path::new(&path), &out, &[]);
    if let Err(diagnostics) = check(&out) {
        panic!("the module is not valid Quadlet:\n{diagnostics}");
    }
    let services = services(&out).unwrap_or_else(|e| panic!("{e}"));
    let web = services.get("web.service").expect("web.service generated");
    let words = exec_start(web).unwrap_or_else(|e| panic!("{e}"));
    let after = |flag: &str| -> Vec<&str> {
        words
            .windows(2)
            .filter(|pair| pair[0] == flag)
            .map(|pair| pair[1].as_str())
            .collect()
    };
    assert_eq!(words[..2], ["/usr/bin/podman", "run"], "{words:?}");
    assert_eq!(
        after("--health-cmd"),
        [
            "wget -q -O /dev/null --header 'X-Probe: it'\\''s 100%' 'http://127.0.0.1:8080/ready' \
          || curl -fsS -o /dev/null -H 'X-Probe: it'\\''s 100%' 'http://127.0.0.1:8080/ready'"
        ],
        "{words:?}"
    );
    let site = fs::canonicalize(out.join("config/site")).expect("the ConfigMap's directory");
    assert_eq!(
        after("-v"),
        [format!("{}:/usr/share/my site:ro,z", site.display())],
        "{words:?}"
    );
    assert_eq!(after("--env"), ["PRICE=100% of $5, not $HOME"], "{words:?}");
    assert!(words.iter().any(|w| w == "--sdnotify=healthy"), "{words:?}");
    // Started once healthy, with the time the probe allows (0 + 10 × 3 s) and the pull's 300 s.
    assert!(web.contains("\nTimeoutStartSec=330\n"), "{web}");
}

#[test]
fn the_checker_reports_every_mistake_at_once() {
    // One unit quadlet refuses, a service systemd warns of, a missing file: all three are told,
    // and the units quadlet did convert are still verified.
    let dir = valid_units();
    edit(
        dir.path(),
        "app-api.container",
        "[Container]\n",
        "[Container]\nFrobnicate=yes\n",
    );
    edit(
        dir.path(),
        "backup.container",
        "Restart=no\n",
        "Restart=no\nMemoryMax=lots\n",
    );
    fs::remove_file(dir.path().join("config/site.conf")).expect("remove the config file");
    fails_with(
        dir.path(),
        &[
            "app-api.container\": unsupported key 'Frobnicate'",
            "Invalid memory limit 'lots'",
            "backup.service ← backup.container",
            "config/site.conf",
        ],
    );
}

#[test]
fn vaultwardens_patches_apply_on_quadlet_as_on_kubernetes() {
    // Vaultwarden will not start with an empty SMTP_HOST: the example's patches, for
    // [kubernetes, quadlet], drop the empty SMTP settings from the ConfigMap on both.
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("vaultwarden");
    let stderr = render_quadlet(
        &repo_root().join("examples/vaultwarden/module.yaml"),
        &out,
        &[],
    );
    assert!(
        !stderr.contains("patches["),
        "a patch was left out:\n{stderr}"
    );
    let config = out.join("config/vaultwarden");
    assert!(config.join("DOMAIN").is_file(), "{}", config.display());
    assert!(!config.join("SMTP_HOST").exists());
    let env = fs::read_to_string(out.join("secrets/vaultwarden.env")).expect("the env file");
    assert!(env.lines().any(|line| line.starts_with("DOMAIN=")));
    assert!(
        !env.lines().any(|line| line.starts_with("SMTP_")),
        "SMTP_ left in"
    );
}
