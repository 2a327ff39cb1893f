//! Renders delivered (docs/delivering.md): `opm mod push` to a real registry (Debian's
//! `docker-registry`) and as an OCI image layout that `skopeo` copies, the artifact as Flux and
//! Argo CD read it (one generic `tar+gzip` layer, checked with `skopeo inspect --raw` and
//! extracted with Python's `tarfile`), reproducible to the digest from two fresh homes a minute
//! apart; the provenance beside every render against `sha256sum`, and `opm mod verify-render`;
//! opm as an Argo CD plugin, run as `argocd-cmp-server` runs it (a copy of the application's
//! directory with file modes dropped, an unprivileged user, the Argo CD environment); and
//! `--flux` output through Flux's substitution rules (tests/tools/flux-substitute.py); and an
//! `--out-dir` render killed at ten points of its writing, which leaves the old directory whole.

use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

use common::exited;
use common::registry::Registry;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .to_owned()
}

/// `opm ARGS` in `dir` with `HOME` a fresh directory `home`, and of the caller's environment
/// only `PATH` and what `vars` add (no `SOURCE_DATE_EPOCH`, no Docker config, no cache).
fn opm_at(dir: &Path, home: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_opm"))
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .envs(vars.iter().copied())
        .output()
        .expect("opm runs")
}

fn run(program: &str, args: &[&str], dir: &Path) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program} runs (tests/setup.sh installs it): {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8")
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The manifest `skopeo inspect --raw` prints for `reference` (`docker://…` or `oci:…`).
fn raw_manifest(reference: &str) -> String {
    run(
        "skopeo",
        &["inspect", "--raw", "--tls-verify=false", reference],
        &repo(),
    )
}

fn sha256(bytes: &[u8]) -> String {
    opm_core::render::provenance::sha256_hex(bytes)
}

#[test]
fn a_pushed_render_has_the_same_digest_from_two_fresh_homes_a_minute_apart() {
    let registry = Registry::start("127.0.0.1");
    let target = registry.oci("deploy/shop:prod");
    let push = || {
        let home = tempfile::tempdir().expect("home");
        let (stdout, _) = exited(
            &opm_at(
                &repo(),
                home.path(),
                &[
                    "mod",
                    "push",
                    "examples/shop/module.yaml",
                    &target,
                    "-o",
                    "json",
                ],
                &[],
            ),
            0,
        );
        json(&stdout)
    };
    let first = push();
    // Anything that read a clock, to the second or the minute, would show in the second push.
    std::thread::sleep(std::time::Duration::from_secs(61));
    let second = push();
    assert_eq!(first, second);
    let digest = first["digest"].as_str().expect("digest");
    assert!(digest.starts_with("sha256:"), "{first}");
    assert_eq!(first["tag"], "prod");
    assert_eq!(
        first["repository"],
        format!("{}/deploy/shop", registry.address)
    );
    assert_eq!(
        first["url"],
        format!("oci://{}/deploy/shop@{digest}", registry.address)
    );

    let raw = raw_manifest(&format!("docker://{}/deploy/shop:prod", registry.address));
    assert_eq!(format!("sha256:{}", sha256(raw.as_bytes())), digest);
    let manifest = json(&raw);
    let layers = manifest["layers"].as_array().expect("layers");
    assert_eq!(layers.len(), 1, "{manifest:#}");
    assert_eq!(
        layers[0]["mediaType"],
        "application/vnd.oci.image.layer.v1.tar+gzip"
    );
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.cncf.flux.config.v1+json"
    );
    let annotations = &manifest["annotations"];
    assert_eq!(
        annotations["org.opencontainers.image.created"],
        "1970-01-01T00:00:00Z"
    );
    assert_eq!(annotations["dev.opmodel.render.module"], "shop");
    assert_eq!(annotations["dev.opmodel.render.instance"], "shop");
    let module_digest = format!(
        "blake3:{}",
        blake3::hash(&std::fs::read(repo().join("examples/shop/module.yaml")).unwrap()).to_hex()
    );
    assert_eq!(
        annotations["dev.opmodel.render.module-digest"],
        module_digest
    );
    assert!(
        annotations["dev.opmodel.render.provider.kubernetes"]
            .as_str()
            .is_some_and(|v| v.contains(" blake3:")),
        "{annotations:#}"
    );
}

/// Python's `tarfile` reads the layer `blob` into `dir`, and prints each member's name, mode,
/// uid, gid and mtime, a line each.
fn extract_with_tarfile(blob: &Path, dir: &Path) -> String {
    let script = r#"
import sys, tarfile
with tarfile.open(sys.argv[1], "r:gz") as tar:
    for member in tar.getmembers():
        print(member.name, oct(member.mode), member.uid, member.gid, member.mtime, member.type.decode())
    tar.extractall(sys.argv[2], filter="data")
"#;
    run(
        "python3",
        &["-c", script, blob.to_str().unwrap(), dir.to_str().unwrap()],
        dir,
    )
}

/// Everything under `dir`: each folder (its path ending in `/`, no bytes) and each file with its
/// bytes, by relative path.
fn entries(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut found = tree(dir);
    let mut stack = vec![dir.to_owned()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).expect("read dir") {
            let entry = entry.expect("entry");
            if entry.file_type().unwrap().is_dir() {
                let name = entry
                    .path()
                    .strip_prefix(dir)
                    .unwrap()
                    .display()
                    .to_string();
                found.push((format!("{name}/"), Vec::new()));
                stack.push(entry.path());
            }
        }
    }
    found.sort();
    found
}

/// Every regular file under `dir`, by relative path, with its bytes.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).expect("read dir") {
            let entry = entry.expect("entry");
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                let name = entry
                    .path()
                    .strip_prefix(dir)
                    .unwrap()
                    .display()
                    .to_string();
                files.push((name, std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn the_layer_is_the_out_dir_files_and_the_layout_copies_to_the_same_digest() {
    let registry = Registry::start("127.0.0.1");
    let work = tempfile::tempdir().expect("temp dir");
    let out = work.path().join("out");
    let layout = work.path().join("layout");
    let epoch = [("SOURCE_DATE_EPOCH", "1700000000")];
    for (platform, split) in [("kubernetes", true), ("docker-compose", false)] {
        let mut build = vec![
            "mod",
            "build",
            "examples/shop/module.yaml",
            "-p",
            platform,
            "--out-dir",
        ];
        build.push(out.to_str().unwrap());
        let target = registry.oci(&format!("deploy/shop-{platform}:1"));
        let mut push = vec![
            "mod",
            "push",
            "examples/shop/module.yaml",
            "-p",
            platform,
            &target,
            "--oci-layout",
        ];
        push.push(layout.to_str().unwrap());
        push.extend(["-o", "json"]);
        if split {
            build.push("--split");
            push.push("--split");
        }
        exited(&opm_at(&repo(), work.path(), &build, &epoch), 0);
        let (stdout, _) = exited(&opm_at(&repo(), work.path(), &push, &epoch), 0);
        let pushed = json(&stdout);
        let digest = pushed["digest"].as_str().unwrap().to_owned();

        let manifest = json(&raw_manifest(&format!(
            "docker://{}/deploy/shop-{platform}:1",
            registry.address
        )));
        let layer = manifest["layers"][0]["digest"].as_str().unwrap();
        let extracted = work.path().join(format!("extracted-{platform}"));
        std::fs::create_dir(&extracted).unwrap();
        let members = extract_with_tarfile(&registry.blob_file(layer), &extracted);
        for line in members.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            let mode = if fields[5] == "5" { "0o755" } else { "0o644" };
            assert_eq!(&fields[1..5], [mode, "0", "0", "1700000000"], "{line}");
        }
        let names: Vec<&str> = members
            .lines()
            .map(|l| l.split(' ').next().unwrap())
            .collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted, "the layer's entries are sorted");
        // Exactly what --out-dir wrote, its provenance included, but opm's local record.
        let mut written = tree(&out);
        written.retain(|(name, _)| name != ".opm-output");
        assert!(written.iter().any(|(name, _)| name == "opm.render"));
        assert_eq!(tree(&extracted), written, "{platform}");

        // The layout, copied by skopeo, is the same manifest, byte for byte.
        let copy = format!("docker://{}/copied/shop-{platform}:1", registry.address);
        run(
            "skopeo",
            &[
                "copy",
                "--dest-tls-verify=false",
                &format!("oci:{}:1", layout.display()),
                &copy,
            ],
            work.path(),
        );
        let copied = raw_manifest(&copy);
        assert_eq!(format!("sha256:{}", sha256(copied.as_bytes())), digest);
    }
}

#[test]
fn a_render_that_fails_pushes_nothing() {
    let registry = Registry::start("127.0.0.1");
    let work = tempfile::tempdir().expect("temp dir");
    let layout = work.path().join("layout");
    let target = registry.oci("deploy/grafana:1");
    let output = opm_at(
        &repo(),
        work.path(),
        &[
            "mod",
            "push",
            "examples/grafana/module.yaml",
            &target,
            "--oci-layout",
            layout.to_str().unwrap(),
            "--set",
            "probes.enabled=maybe",
        ],
        &[],
    );
    let (stdout, stderr) = exited(&output, 2);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("probes.enabled"), "{stderr}");
    assert!(!layout.exists(), "a layout was written");

    // A render that fails (compose has no Ingress, an error under --strict): exit 1, nothing.
    let output = opm_at(
        &repo(),
        work.path(),
        &[
            "mod",
            "push",
            "examples/shop/module.yaml",
            "-p",
            "docker-compose",
            "--strict",
            &target,
            "--oci-layout",
            layout.to_str().unwrap(),
        ],
        &[],
    );
    let (stdout, stderr) = exited(&output, 1);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("Ingress"), "{stderr}");
    assert!(!layout.exists(), "a layout was written");
    assert!(
        !registry
            .dir
            .path()
            .join("data/docker/registry/v2/repositories/deploy")
            .exists(),
        "something reached the registry"
    );
}

#[test]
fn the_provenance_lists_every_file_as_sha256sum_does_and_verify_render_names_an_edit() {
    let work = tempfile::tempdir().expect("temp dir");
    let module = work.path().join("shop.yaml");
    std::fs::copy(repo().join("examples/shop/module.yaml"), &module).unwrap();
    let values = work.path().join("prod.yaml");
    std::fs::write(&values, "{}\n").unwrap();
    let args = [
        "mod",
        "build",
        "shop.yaml",
        "-f",
        "prod.yaml",
        "--split",
        "--out-dir",
        "out",
    ];
    exited(&opm_at(work.path(), work.path(), &args, &[]), 0);
    let out = work.path().join("out");
    let first = std::fs::read(out.join("opm.render")).unwrap();
    let provenance = json(std::str::from_utf8(&first).unwrap());

    // `sha256sum` of every file but the provenance and opm's record, as it prints them.
    let mut names: Vec<String> = tree(&out)
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name != "opm.render" && name != ".opm-output")
        .collect();
    names.sort();
    let mut sha256sum = vec!["--"];
    sha256sum.extend(names.iter().map(String::as_str));
    let listed: Vec<String> = provenance["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{}  {}",
                f["sha256"].as_str().unwrap(),
                f["path"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        run("sha256sum", &sha256sum, &out)
            .lines()
            .collect::<Vec<_>>(),
        listed
    );
    assert_eq!(
        provenance["command"],
        "opm mod build shop.yaml -f prod.yaml --split --out-dir DIR"
    );
    assert_eq!(
        provenance["values"]["files"][0]["digest"],
        format!("blake3:{}", blake3::hash(b"{}\n").to_hex())
    );

    // The same inputs, the same provenance, byte for byte.
    exited(&opm_at(work.path(), work.path(), &args, &[]), 0);
    assert_eq!(std::fs::read(out.join("opm.render")).unwrap(), first);

    let verify = ["mod", "verify-render", "out"];
    let (stdout, _) = exited(&opm_at(work.path(), work.path(), &verify, &[]), 0);
    assert!(
        stdout.contains("exactly what its inputs render"),
        "{stdout}"
    );

    let edited = out.join("service-api.yaml");
    let mut text = std::fs::read_to_string(&edited).unwrap();
    text.push_str("# edited by hand\n");
    std::fs::write(&edited, text).unwrap();
    std::fs::write(out.join("extra.yaml"), "{}\n").unwrap();
    let (stdout, _) = exited(&opm_at(work.path(), work.path(), &verify, &[]), 1);
    std::fs::remove_file(out.join("extra.yaml")).unwrap();
    assert!(
        stdout.contains("service-api.yaml: changed since the render"),
        "{stdout}"
    );
    assert!(
        stdout.contains("extra.yaml: not written by the render"),
        "{stdout}"
    );

    // A sensitive value given by --set, however short, is never written; verify-render asks
    // for it again.
    let grafana = repo().join("examples/grafana/module.yaml");
    let secret_args = [
        "mod",
        "build",
        grafana.to_str().unwrap(),
        "--set",
        "adminPassword=abc123",
        "--out-dir",
        "secret",
    ];
    exited(&opm_at(work.path(), work.path(), &secret_args, &[]), 0);
    let recorded = std::fs::read_to_string(work.path().join("secret/opm.render")).unwrap();
    assert!(!recorded.contains("abc123"), "{recorded}");
    assert!(recorded.contains("adminPassword=[redacted]"), "{recorded}");
    let verify_secret = ["mod", "verify-render", "secret"];
    let (_, stderr) = exited(&opm_at(work.path(), work.path(), &verify_secret, &[]), 2);
    assert!(stderr.contains("--set adminPassword=VALUE"), "{stderr}");
    let again = [
        "mod",
        "verify-render",
        "secret",
        "--set",
        "adminPassword=abc123",
    ];
    exited(&opm_at(work.path(), work.path(), &again, &[]), 0);

    // An input that changed is named too.
    exited(&opm_at(work.path(), work.path(), &args, &[]), 0);
    std::fs::write(&values, "# a comment\n{}\n").unwrap();
    let (stdout, _) = exited(&opm_at(work.path(), work.path(), &verify, &[]), 1);
    assert!(stdout.contains("the values changed"), "{stdout}");
}

/// The uid and gid `argocd-cmp-server` runs plugins as.
const ARGOCD_UID: u32 = 999;

/// Whether this run may act as another user; outside CI, a test that needs to says so and
/// stops (as `opm_tests::tier::needs` does for the integration tests).
fn root_or_skip(test: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    assert!(
        std::env::var_os("OPM_CI").is_none(),
        "{test} needs root, and CI runs as root"
    );
    eprintln!("SKIPPED {test}: needs root (to run opm as Argo CD's uid {ARGOCD_UID})");
    false
}

/// What `argocd-cmp-server` makes of an application's directory: a copy with every file mode
/// 0644 and every folder 0755 (no `preserveFileMode`), without `.git`, in a folder the plugin's
/// user can read; and the opm binary beside it, where that user can run it. (application
/// directory, binary)
fn cmp_copy(work: &Path, files: &[(&str, &[u8])]) -> (PathBuf, PathBuf) {
    std::fs::set_permissions(work, std::fs::Permissions::from_mode(0o755)).unwrap();
    let app = work.join("repo/apps/grafana");
    std::fs::create_dir_all(&app).unwrap();
    for (name, bytes) in files {
        std::fs::write(app.join(name), bytes).unwrap();
        std::fs::set_permissions(app.join(name), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let bin = work.join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_opm"), bin.join("opm")).unwrap();
    std::fs::set_permissions(bin.join("opm"), std::fs::Permissions::from_mode(0o755)).unwrap();
    for dir in [
        work.join("repo"),
        work.join("repo/apps"),
        app.clone(),
        bin.clone(),
    ] {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // The copy is the plugin's own, as argocd-cmp-server's is: whatever it would write there, it
    // could.
    for path in [work.join("repo"), work.join("repo/apps"), app.clone()]
        .into_iter()
        .chain(files.iter().map(|(name, _)| app.join(name)))
    {
        std::os::unix::fs::chown(&path, Some(ARGOCD_UID), Some(ARGOCD_UID)).unwrap();
    }
    (app, bin)
}

/// Runs `command` (the plugin's, from its plugin.yaml) in `app` as `argocd-cmp-server` does:
/// as uid and gid 999, with the Argo CD environment `vars`, and a home and a `TMPDIR` of its
/// own beside `bin` (empty: whatever appears there was written by the plugin).
fn as_cmp_server(bin: &Path, app: &Path, command: &[String], vars: &[(&str, &str)]) -> Output {
    let home = bin.with_file_name("home");
    let tmp = bin.with_file_name("tmp");
    for dir in [&home, &tmp] {
        if !dir.exists() {
            std::fs::create_dir(dir).unwrap();
            std::os::unix::fs::chown(dir, Some(ARGOCD_UID), Some(ARGOCD_UID)).unwrap();
        }
    }
    Command::new(bin.join(&command[0]))
        .args(&command[1..])
        .current_dir(app)
        .env_clear()
        .env("PATH", bin)
        .env("HOME", &home)
        .env("TMPDIR", &tmp)
        .envs(vars.iter().copied())
        .uid(ARGOCD_UID)
        .gid(ARGOCD_UID)
        .output()
        .expect("the plugin runs")
}

/// The `command` list of the plugin.yaml section `section` (`generate`, `parameters.dynamic`).
fn plugin_command(plugin: &serde_json::Value, section: &[&str]) -> Vec<String> {
    let mut at = &plugin["spec"];
    for key in section {
        at = &at[key];
    }
    at["command"]
        .as_array()
        .unwrap_or_else(|| panic!("{section:?} in {plugin:#}"))
        .iter()
        .map(|word| word.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn as_an_argocd_plugin_generate_renders_what_mod_build_renders_and_the_ui_gets_the_parameters() {
    if !root_or_skip("as_an_argocd_plugin_generate_renders_what_mod_build_renders") {
        return;
    }
    let work = tempfile::tempdir().expect("temp dir");
    let module = std::fs::read(repo().join("examples/grafana/module.yaml")).unwrap();
    let values = b"persistence: {size: 20Gi}\nlogLevel: debug\n";
    let (app, bin) = cmp_copy(
        work.path(),
        &[("module.yaml", &module), ("prod.yaml", values)],
    );
    let plugin_text = run(
        env!("CARGO_BIN_EXE_opm"),
        &["argocd", "plugin"],
        work.path(),
    );
    let plugin: serde_json::Value = serde_saphyr::from_str(&plugin_text).expect("YAML");
    assert_eq!(plugin["kind"], "ConfigManagementPlugin");
    // `discover.fileName` is a glob in the application's directory.
    let discover = plugin["spec"]["discover"]["fileName"].as_str().unwrap();
    assert!(app.join(discover).exists(), "{discover}");

    fn argocd_env(parameters: &str) -> Vec<(&'static str, &str)> {
        vec![
            ("ARGOCD_APP_NAME", "argocd_grafana-prod"),
            ("ARGOCD_APP_NAMESPACE", "monitoring"),
            (
                "ARGOCD_APP_REVISION",
                "0123456789abcdef0123456789abcdef01234567",
            ),
            (
                "ARGOCD_APP_SOURCE_REPO_URL",
                "https://git.example.com/platform.git",
            ),
            ("ARGOCD_APP_SOURCE_PATH", "apps/grafana"),
            ("ARGOCD_ENV_VALUES", "prod.yaml"),
            ("ARGOCD_APP_PARAMETERS", parameters),
            ("KUBE_VERSION", "1.33.0"),
        ]
    }
    let generate = plugin_command(&plugin, &["generate"]);
    // The plugin's home made, and everything else there, before the plugin runs.
    exited(
        &as_cmp_server(&bin, &app, &["opm".into(), "--version".into()], &[]),
        0,
    );
    let before = entries(work.path());
    let parameters = r#"[{"name": "ingress.enabled", "string": "true"}, {"name": "image.tag", "string": "11.2.0"}, {"name": "adminUser", "string": "ops"}]"#;
    let (generated, stderr) = exited(
        &as_cmp_server(&bin, &app, &generate, &argocd_env(parameters)),
        0,
    );
    let expected = run(
        env!("CARGO_BIN_EXE_opm"),
        &[
            "mod",
            "build",
            app.join("module.yaml").to_str().unwrap(),
            "--instance",
            "grafana-prod",
            "-n",
            "monitoring",
            "-f",
            app.join("prod.yaml").to_str().unwrap(),
            "--set",
            "ingress.enabled=true",
            "--set",
            "image.tag=\"11.2.0\"",
            "--set",
            "adminUser=ops",
        ],
        work.path(),
    );
    assert_eq!(generated, expected, "stderr: {stderr}");
    assert!(generated.contains("namespace: monitoring"));
    assert!(generated.contains("kind: Ingress"));
    assert!(generated.contains("image: docker.io/grafana/grafana:11.2.0"));
    // Nothing written: not in the copy, not in its home or its TMPDIR, not in a cache.
    assert_eq!(entries(work.path()), before);

    // A bad parameter: named on stderr, nothing on stdout.
    let bad = r#"[{"name": "probes.enabled", "string": "maybe"}]"#;
    let output = as_cmp_server(&bin, &app, &generate, &argocd_env(bad));
    assert!(!output.status.success());
    assert!(output.stdout.is_empty(), "{:?}", output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("probes.enabled"), "{stderr}");

    // The announcement: valid against Argo CD's type, each default announced.
    let dynamic = plugin_command(&plugin, &["parameters", "dynamic"]);
    let (announced, _) = exited(&as_cmp_server(&bin, &app, &dynamic, &argocd_env("")), 0);
    let announcements = work.path().join("announcements.json");
    std::fs::write(&announcements, &announced).unwrap();
    run(
        "check-jsonschema",
        &[
            "--schemafile",
            repo()
                .join("tests/fixtures/argocd/parameter-announcements.schema.json")
                .to_str()
                .unwrap(),
            announcements.to_str().unwrap(),
        ],
        work.path(),
    );
    let announced = json(&announced);
    let find = |name: &str| {
        announced
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {announced:#}"))
    };
    assert_eq!(find("persistence.size")["string"], "10Gi");
    assert_eq!(find("ingress.enabled")["string"], "false");
    assert_eq!(find("ingress.enabled")["itemType"], "boolean");
    assert_eq!(
        find("image.tag")["tooltip"],
        "The image tag; empty for the module's version"
    );
    // Sent back unchanged, every announced value renders what no parameters render.
    let echoed: Vec<serde_json::Value> = announced
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let mut back = serde_json::Map::new();
            back.insert("name".into(), a["name"].clone());
            for field in ["string", "array", "map"] {
                if let Some(value) = a.get(field) {
                    back.insert(field.into(), value.clone());
                }
            }
            serde_json::Value::Object(back)
        })
        .filter(|p| p.as_object().unwrap().len() == 2)
        .collect();
    // (Without the values file, whose values the parameters would otherwise override.)
    let echoed = serde_json::to_string(&echoed).unwrap();
    let without_values = |parameters| {
        let mut vars = argocd_env(parameters);
        vars.retain(|(name, _)| *name != "ARGOCD_ENV_VALUES");
        exited(&as_cmp_server(&bin, &app, &generate, &vars), 0).0
    };
    let with_defaults = without_values(&echoed);
    assert!(with_defaults.contains("kind: Deployment"));
    assert_eq!(with_defaults, without_values(""));
}

/// `opm mod build --flux? -o json` of the fixture, through Flux's substitution (`strict` or
/// not) with a variable set (so that substitution runs); the substituted List, or why Flux
/// would fail.
fn through_flux(flux: bool, strict: bool) -> Result<serde_json::Value, String> {
    let work = tempfile::tempdir().expect("temp dir");
    let mut args = vec![
        "mod",
        "build",
        "tests/fixtures/flux/module.yaml",
        "-o",
        "json",
    ];
    if flux {
        args.push("--flux");
    }
    let (rendered, _) = exited(&opm_at(&repo(), work.path(), &args, &[]), 0);
    let mut child = Command::new("python3")
        .arg(repo().join("tests/tools/flux-substitute.py"))
        .args(strict.then_some("--strict"))
        .arg("cluster=prod")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), rendered.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    if output.status.success() {
        Ok(json(&String::from_utf8(output.stdout).unwrap()))
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

#[test]
fn a_shell_script_with_home_survives_flux_substitution_of_flux_output() {
    // Without --flux, Flux's substitution empties `${HOME}` and `$$`, or fails a strict apply.
    let error = through_flux(false, true).expect_err("Flux fails on ${HOME}");
    assert!(
        error.contains(r#"variable not set (strict mode): "HOME""#),
        "{error}"
    );
    let changed = through_flux(false, false).expect("Flux applies");
    let script = |list: &serde_json::Value| {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["kind"] == "ConfigMap")
            .unwrap()["data"]["run.sh"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(script(&changed), "#!/bin/sh\ncd \"\" && echo \"pid $\"\n");

    for strict in [true, false] {
        let applied = through_flux(true, strict).expect("Flux applies --flux output");
        assert_eq!(
            script(&applied),
            "#!/bin/sh\ncd \"${HOME}\" && echo \"pid $$\"\n"
        );
        let items = applied["items"].as_array().unwrap();
        let config_map = items.iter().find(|i| i["kind"] == "ConfigMap").unwrap();
        assert_eq!(
            config_map["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/substitute"],
            "disabled"
        );
        // An object with no `$` is written as without --flux: no mark.
        let deployment = items.iter().find(|i| i["kind"] == "Deployment").unwrap();
        assert!(
            deployment["metadata"]["annotations"]
                .get("kustomize.toolkit.fluxcd.io/substitute")
                .is_none(),
            "{deployment:#}"
        );
    }
}

/// A module of `n` components, each a Container with a Service: 2n files with `--split`.
fn many_components(n: usize) -> String {
    let mut text = String::from(
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: many, version: 0.1.0}\ncomponents:\n",
    );
    for i in 0..n {
        text.push_str(&format!(
            "  c{i}:\n    resources:\n      Container: {{image: nginxinc/nginx-unprivileged:1.27, ports: {{http: {{containerPort: 8080}}}}}}\n    traits:\n      Expose: {{type: ClusterIP}}\n"
        ));
    }
    text
}

#[test]
fn a_render_killed_at_ten_points_leaves_the_old_directory_and_the_next_sweeps_its_staging() {
    let work = tempfile::tempdir().expect("temp dir");
    std::fs::write(work.path().join("module.yaml"), many_components(2000)).unwrap();
    let deploy = work.path().join("deploy");
    std::fs::create_dir(&deploy).unwrap();
    let command = |namespace: &str, dir: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_opm"));
        command
            .args(["mod", "build", "module.yaml", "-n", namespace])
            .current_dir(work.path())
            .env("OPM_CACHE_DIR", "off")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if let Some(dir) = dir {
            command.args(["--split", "--out-dir", dir]);
        }
        command
    };
    let render = |namespace: &str, dir: &str| command(namespace, Some(dir));
    // The new render, whole, for reference; and how long one takes here.
    let started = std::time::Instant::now();
    assert!(render("two", "reference").status().unwrap().success());
    let took = started.elapsed();
    // And how long the render alone takes, to stdout: what comes after it is the writing.
    let started = std::time::Instant::now();
    assert!(command("two", None).status().unwrap().success());
    let rendered = started.elapsed();
    let new = tree(&work.path().join("reference"));
    assert_eq!(new.len(), 2 * 2000 + 2, "files, provenance, record");
    assert!(render("one", "deploy/out").status().unwrap().success());
    let old = tree(&deploy.join("out"));
    assert_ne!(old, new);

    // The staging directories of the render with process id `pid`.
    let staging = |pid: u32| {
        std::fs::read_dir(&deploy)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(&format!(".opm-out-{pid}-"))
            })
            .count()
    };
    // How long the writing takes, as measured: what a whole render takes beyond rendering.
    let writing = took
        .saturating_sub(rendered)
        .max(std::time::Duration::from_millis(20));
    let (mut finished, mut while_writing) = (0, 0);
    for point in 0..10u32 {
        let mut child = render("two", "deploy/out").spawn().expect("opm runs");
        let pid = child.id();
        // Ten points from the moment the render's staging directory appears (its writing has
        // begun: seen here, whatever else loads the machine) to past the writing's measured
        // length, while the files are written, synced, swapped in and the old ones removed.
        while staging(pid) == 0 && child.try_wait().unwrap().is_none() {
            std::thread::sleep(std::time::Duration::from_micros(500));
        }
        std::thread::sleep(writing.mul_f64(1.2) * point / 10);
        let _ = child.kill();
        child.wait().unwrap();
        // A staging directory left behind: the kill came while the files were written or
        // swapped in.
        if staging(pid) > 0 {
            while_writing += 1;
        }
        let now = tree(&deploy.join("out"));
        if now == new {
            // It finished before the kill: the old directory again, for the next point.
            finished += 1;
            assert!(render("one", "deploy/out").status().unwrap().success());
        } else {
            assert!(
                now == old,
                "killed at {point}/10 of a render: neither the old directory nor the new"
            );
        }
    }
    assert!(finished < 10, "no render was killed before it finished");
    eprintln!("{while_writing} of 10 kills came while writing, {finished} after the end");
    assert!(
        while_writing > 0,
        "no kill came while the files were written"
    );
    assert!(render("two", "deploy/out").status().unwrap().success());
    assert_eq!(tree(&deploy.join("out")), new);
    let left: Vec<String> = std::fs::read_dir(&deploy)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".opm-out-"))
        .collect();
    assert!(left.is_empty(), "staging directories left behind: {left:?}");
}

/// A file the render writes private (a Quadlet Secret's) and that someone opened up to others
/// since is a difference `opm mod verify-render` reports, though its bytes are unchanged: the
/// provenance's digests do not hold modes, the render does (review of issue 48).
#[test]
fn verify_render_reports_a_private_file_opened_to_others() {
    use std::os::unix::fs::PermissionsExt as _;
    let work = tempfile::tempdir().unwrap();
    let shop = repo().join("examples/shop/module.yaml");
    let shop = shop.to_str().unwrap();
    let build = ["mod", "build", shop, "-p", "quadlet", "--out-dir", "out"];
    exited(&opm_at(work.path(), work.path(), &build, &[]), 0);
    let out = work.path().join("out");
    let secret = out.join("secrets/api.env");
    let mode = std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let verify = ["mod", "verify-render", "out"];
    let (stdout, _) = exited(&opm_at(work.path(), work.path(), &verify, &[]), 0);
    assert!(
        stdout.contains("exactly what its inputs render"),
        "{stdout}"
    );
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (stdout, _) = exited(&opm_at(work.path(), work.path(), &verify, &[]), 1);
    assert!(
        stdout.contains(
            "secrets/api.env: mode 0644 lets others read it, and the render writes it 0600"
        ),
        "{stdout}"
    );
}
