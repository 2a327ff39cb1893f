//! Installed providers with the real `opm` binary, run in a project directory: `.opm/
//! providers.yaml` → `opm provider init` → `opm mod build` on exactly the locked bytes, and every
//! refusal on the way (not locked, not installed, bytes that differ from the lock, a bundle that
//! is not the version it is filed as, a signature missing or for another version, a lock that
//! would move without `--upgrade`), with the real `minisign`; and what `init` compiles: Winch's
//! code at once, Cranelift's by the background compile it starts, or at once with `--optimized`.

use std::path::PathBuf;
use std::process::{Command, Output};

use opm_core::bundle;
use serde_json::Value;

mod common;

use common::{exited, hello_in, keypair, minisign, opm, repacked, repacked_with};

/// The embedded provider packed again as `version`, with `label` set so each version's bytes
/// differ.
fn kubernetes(version: &str) -> Vec<u8> {
    repacked(opm_runtime::embedded::bundle(), |manifest| {
        manifest["metadata"]["version"] = Value::from(version);
        manifest["metadata"]["labels"]["build"] = Value::from(format!("v{version}"));
    })
}

/// A project directory `app` with `.opm/providers.yaml` as given, beside a directory registry
/// `registry` holding the kubernetes provider at `versions`.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new(config: &str, versions: &[&str]) -> Self {
        let fixture = Self {
            dir: tempfile::tempdir().expect("temp dir"),
        };
        std::fs::create_dir_all(fixture.app().join(".opm")).expect("mkdir");
        std::fs::write(fixture.app().join(".opm/providers.yaml"), config).expect("write");
        for version in versions {
            fixture.publish(version, &kubernetes(version));
        }
        fixture
    }

    fn app(&self) -> PathBuf {
        self.dir.path().join("app")
    }

    /// Where the registry keeps `version`'s bundle.
    fn registry_bundle(&self, version: &str) -> PathBuf {
        self.dir.path().join(format!(
            "registry/kubernetes/{version}/kubernetes-{version}.opmb"
        ))
    }

    fn publish(&self, version: &str, bytes: &[u8]) {
        let path = self.registry_bundle(version);
        std::fs::create_dir_all(path.parent().unwrap()).expect("mkdir");
        std::fs::write(path, bytes).expect("write");
    }

    fn opm(&self, args: &[&str]) -> Output {
        opm(&self.app(), args)
    }

    /// The hello module, inside the project.
    fn hello(&self) -> String {
        hello_in(&self.app())
    }

    fn lock(&self) -> Value {
        let text = std::fs::read_to_string(self.app().join(".opm/providers.lock.json"))
            .expect("lock file");
        serde_json::from_str(&text).expect("lock is JSON")
    }
}

const CONFIG: &str =
    "providers:\n  - name: kubernetes\n    version: ^0.2\n    source: ../../registry\n";

/// The embedded provider as 0.2.0 with a custom section more in each component, so that their
/// code is not the one built into opm and must be compiled.
fn kubernetes_to_compile() -> Vec<u8> {
    repacked_with(
        opm_runtime::embedded::bundle(),
        |manifest| manifest["metadata"]["version"] = Value::from("0.2.0"),
        |component| {
            let mut bytes = component.to_vec();
            bytes.extend([0, 9, 8]);
            bytes.extend(b"opm-test");
            bytes
        },
    )
}

impl Fixture {
    /// Runs `opm args` in the project with its own compile cache and the environment `vars`.
    fn opm_cached(&self, args: &[&str], vars: &[(&str, &str)]) -> Output {
        let cache = self.dir.path().join("cache");
        Command::new(env!("CARGO_BIN_EXE_opm"))
            .args(args)
            .current_dir(self.app())
            .env_remove("OPM_REGISTRY")
            .env_remove("OPM_COMPILE_MEMORY")
            .env_remove("OPM_COMPILE_TIMEOUT")
            .env("OPM_CACHE_DIR", cache.join("dir"))
            .env("OPM_CACHE_KEY", cache.join("key/key"))
            .envs(vars.iter().copied())
            .output()
            .expect("opm runs")
    }
}

/// Where each component's code came from in a render, as `--verbose=json` says: `NAME SOURCE`.
fn code_sources(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["event"] == "code")
        .map(|event| format!("{} {}", event["name"], event["source"]))
        .collect()
}

/// Waits until the background compile that `init`'s or `pull`'s `stdout` names has ended (gone,
/// or a zombie that nobody reaps); panics if `stdout` names none.
fn background_compile_ends(stdout: &str) {
    let id = stdout
        .split(" in the background (process ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("no background compile: {stdout}"));
    let stat = format!("/proc/{id}/stat");
    let started = std::time::Instant::now();
    while let Ok(text) = std::fs::read_to_string(&stat) {
        if text
            .rsplit_once(") ")
            .is_some_and(|(_, state)| state.starts_with('Z'))
        {
            return;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(1200),
            "the background compile {id} still runs"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// `opm provider init` compiles every component of what it installs into the compile cache, so
/// that the first render of the project compiles nothing: `--verbose=json` says where each
/// component's code came from — Winch's code from the cache, or Cranelift's once the background
/// compile that `init` starts has put it there; after that compile, Cranelift's.
#[test]
fn init_compiles_what_it_installs_and_the_first_render_compiles_nothing() {
    let fixture = Fixture::new(CONFIG, &[]);
    let bundle = kubernetes_to_compile();
    fixture.publish("0.2.0", &bundle);
    let components = bundle::read("test", &bundle).unwrap().components.len();
    let with_cache = |args: &[&str]| fixture.opm_cached(args, &[]);

    let (init, _) = exited(&with_cache(&["provider", "init"]), 0);
    assert!(
        init.contains(&format!(
            "kubernetes 0.2.0: {components} components compiled into the compile cache in "
        )) && init.contains(" s, 0 there already")
            && init.contains(&format!(
                "compiling {components} components with Cranelift in the background (process "
            )),
        "{init}"
    );
    let build = ["mod", "build", &fixture.hello(), "--verbose=json"];
    let (yaml, stderr) = exited(&with_cache(&build), 0);
    assert!(yaml.contains("kind: Deployment"), "{yaml}");
    let sources = code_sources(&stderr);
    assert_eq!(
        sources.len(),
        3,
        "two transformers and the renderer: {stderr}"
    );
    assert!(
        sources
            .iter()
            .all(|source| source.ends_with(" \"cache-winch\"") || source.ends_with(" \"cache\"")),
        "{sources:?}"
    );

    background_compile_ends(&init);
    let (again, stderr) = exited(&with_cache(&build), 0);
    assert_eq!(again, yaml);
    let sources = code_sources(&stderr);
    assert!(
        sources.len() == 3 && sources.iter().all(|source| source.ends_with(" \"cache\"")),
        "Cranelift's code once the background compile is done: {sources:?}"
    );

    // Installed again, nothing is compiled, and nothing is left for the background.
    let (stdout, _) = exited(&with_cache(&["provider", "init", "--force"]), 0);
    assert!(
        stdout.contains("kubernetes 0.2.0: 0 components compiled into the compile cache in ")
            && stdout.contains(&format!(" s, {components} there already"))
            && !stdout.contains("background"),
        "{stdout}"
    );
}

/// A provider of one Python transformer, built from source as `opm transformer new --lang
/// python` scaffolds it, with componentize-py, and packed: its bundle's bytes.
fn python_provider(dir: &std::path::Path) -> Vec<u8> {
    let run = |dir: &std::path::Path, args: &[&str]| exited(&opm(dir, args), 0);
    run(dir, &["transformer", "new", "pyconf", "--lang", "python"]);
    let project = dir.join("pyconf");
    run(&project, &["transformer", "build"]);
    run(&project, &["provider", "pack", ".", "-o", "pyconf.opmb"]);
    std::fs::read(project.join("pyconf.opmb")).expect("bundle")
}

/// Issue 49: `opm provider init` of a provider with a Python component does not wait for
/// Cranelift (34–68 s for such a component on two cores): it compiles with Winch, and the first
/// render compiles nothing; the background compile it starts, waited for, leaves Cranelift's
/// code, which the next render uses; and `init --optimized` gives Cranelift's code at once.
#[test]
fn init_of_a_python_provider_is_ready_at_once_and_cranelift_s_code_follows() {
    let fixture = Fixture::new(
        "providers:\n  - name: pyconf\n    version: ^0.1\n    source: ../../registry\n",
        &[],
    );
    let bundle = python_provider(fixture.dir.path());
    let path = fixture
        .dir
        .path()
        .join("registry/pyconf/0.1.0/pyconf-0.1.0.opmb");
    std::fs::create_dir_all(path.parent().unwrap()).expect("mkdir");
    std::fs::write(&path, &bundle).expect("write");
    std::fs::copy(
        fixture.dir.path().join("pyconf/module.yaml"),
        fixture.app().join("module.yaml"),
    )
    .expect("copy the module");
    let python = |sources: &[String]| -> Vec<String> {
        sources
            .iter()
            .filter(|source| source.contains("Pyconf"))
            .map(|source| source.rsplit(' ').next().unwrap_or_default().to_owned())
            .collect()
    };
    let build = ["mod", "build", "module.yaml", "--verbose=json"];

    let (init, _) = exited(&fixture.opm_cached(&["provider", "init"], &[]), 0);
    assert!(
        init.contains("pyconf 0.1.0: 1 component compiled into the compile cache in ")
            && init.contains("compiling 1 component with Cranelift in the background (process "),
        "{init}"
    );
    let (yaml, stderr) = exited(&fixture.opm_cached(&build, &[]), 0);
    assert!(yaml.contains("kind: ConfigMap"), "{yaml}");
    let first = python(&code_sources(&stderr));
    assert!(
        !first.is_empty()
            && first
                .iter()
                .all(|source| source == "\"cache-winch\"" || source == "\"cache\""),
        "the first render compiles nothing: {stderr}"
    );

    background_compile_ends(&init);
    let (again, stderr) = exited(&fixture.opm_cached(&build, &[]), 0);
    assert_eq!(again, yaml);
    let after = python(&code_sources(&stderr));
    assert!(
        !after.is_empty() && after.iter().all(|source| source == "\"cache\""),
        "Cranelift's code, from the background compile: {stderr}"
    );

    // With a cache of its own, --optimized compiles with Cranelift before it returns.
    let other = fixture.dir.path().join("other-cache");
    let other = other.to_str().expect("a UTF-8 path");
    let (init, _) = exited(
        &fixture.opm_cached(
            &["provider", "init", "--force", "--optimized"],
            &[("OPM_CACHE_DIR", other)],
        ),
        0,
    );
    assert!(
        init.contains("pyconf 0.1.0: 1 component compiled into the compile cache in ")
            && !init.contains("background"),
        "{init}"
    );
    let (optimized, stderr) = exited(&fixture.opm_cached(&build, &[("OPM_CACHE_DIR", other)]), 0);
    assert_eq!(optimized, yaml);
    let at_once = python(&code_sources(&stderr));
    assert!(
        !at_once.is_empty() && at_once.iter().all(|source| source == "\"cache\""),
        "Cranelift's code at once: {stderr}"
    );
}

/// The fourth security pass: a compiler's memory and time were bounded by nothing. Every
/// compile runs in a child `opm` under a data-segment limit and a deadline
/// (`OPM_COMPILE_MEMORY` in MiB, `OPM_COMPILE_TIMEOUT` in seconds; `opm_sandbox::isolated`): past
/// either, that component fails by name, a render goes on to report the others, and `provider
/// init` — which compiles before it locks — leaves the lock as it was.
#[test]
fn a_compile_past_its_memory_or_time_fails_by_name_and_init_locks_nothing() {
    let fixture = Fixture::new(CONFIG, &[]);
    let bundle = kubernetes_to_compile();
    fixture.publish("0.2.0", &bundle);
    let lock = fixture.app().join(".opm/providers.lock.json");

    let (_, stderr) = exited(
        &fixture.opm_cached(&["provider", "init"], &[("OPM_COMPILE_MEMORY", "24")]),
        2,
    );
    assert!(
        stderr.contains("compiling needed more than 24 MiB, the limit (OPM_COMPILE_MEMORY)")
            && stderr.contains("kubernetes 0.2.0 was not locked"),
        "{stderr}"
    );
    assert!(!lock.exists(), "nothing is locked");
    let (_, stderr) = exited(
        &fixture.opm_cached(&["provider", "init"], &[("OPM_COMPILE_TIMEOUT", "0.001")]),
        2,
    );
    assert!(
        stderr.contains("compiling took longer than 0.001 s, the limit (OPM_COMPILE_TIMEOUT)"),
        "{stderr}"
    );
    assert!(!lock.exists(), "nothing is locked");

    // A render of the bundle compiles in children too: every transformer it calls fails by name.
    let path = fixture.dir.path().join("kubernetes-0.2.0.opmb");
    std::fs::write(&path, &bundle).expect("write");
    // Outside the project, which names the provider but has not locked it.
    let hello = hello_in(&fixture.dir.path().join("outside"));
    let path = path.display().to_string();
    let build = ["mod", "build", hello.as_str(), "-p", path.as_str()];
    let (stdout, stderr) = exited(
        &fixture.opm_cached(&build, &[("OPM_COMPILE_MEMORY", "24")]),
        1,
    );
    assert!(stdout.is_empty(), "{stdout}");
    for transformer in ["DeploymentTransformer", "ServiceTransformer"] {
        assert!(
            stderr.lines().any(|line| line.contains(transformer)
                && line.contains("more than 24 MiB, the limit (OPM_COMPILE_MEMORY)")),
            "{transformer}: {stderr}"
        );
    }
    let (_, stderr) = exited(
        &fixture.opm_cached(&build, &[("OPM_COMPILE_MEMORY", "none")]),
        2,
    );
    assert!(
        stderr.contains("OPM_COMPILE_MEMORY=none: not a positive number"),
        "{stderr}"
    );

    // Within the default limits the same code renders what the embedded provider renders, and
    // init locks.
    let (compiled, _) = exited(&fixture.opm_cached(&build, &[]), 0);
    let (embedded, _) = exited(&fixture.opm(&["mod", "build", &hello]), 0);
    assert_eq!(compiled, embedded);
    exited(&fixture.opm_cached(&["provider", "init"], &[]), 0);
    assert!(lock.exists(), "locked");
}

#[test]
fn init_installs_and_locks_and_mod_build_uses_exactly_the_locked_bytes() {
    let fixture = Fixture::new(CONFIG, &["0.2.0", "0.2.1", "0.3.0"]);
    // Configured but not initialized: refused, saying what to do.
    let (_, stderr) = exited(&fixture.opm(&["mod", "build", &fixture.hello()]), 2);
    assert!(
        stderr.contains("provider kubernetes:")
            && stderr.contains("it is not locked; run `opm provider init`"),
        "{stderr}"
    );

    let (stdout, _) = exited(&fixture.opm(&["provider", "init", "--dry-run"]), 0);
    assert!(
        stdout.contains("would install kubernetes 0.2.1 from"),
        "{stdout}"
    );
    assert!(
        !fixture.app().join(".opm/providers.lock.json").exists(),
        "a dry run writes nothing"
    );

    let (stdout, _) = exited(&fixture.opm(&["provider", "init"]), 0);
    assert!(
        stdout.contains("installed kubernetes 0.2.1 from"),
        "{stdout}"
    );
    let lock = fixture.lock();
    let locked = &lock["providers"][0];
    assert_eq!(locked["name"], "kubernetes");
    assert_eq!(locked["version"], "0.2.1");
    let digest = format!("blake3:{}", blake3_of_manifest(&kubernetes("0.2.1")));
    assert_eq!(locked["digest"], digest.as_str());
    assert!(
        fixture
            .app()
            .join(".opm/providers/kubernetes/0.2.1/kubernetes-0.2.1.opmb")
            .is_file()
    );

    let (stdout, _) = exited(&fixture.opm(&["provider", "inspect", "kubernetes"]), 0);
    assert!(stdout.contains("kubernetes 0.2.1"), "{stdout}");
    assert!(stdout.contains(&digest), "{stdout}");
    let (yaml, _) = exited(&fixture.opm(&["mod", "build", &fixture.hello()]), 0);
    assert!(yaml.contains("kind: Deployment"), "{yaml}");

    // A newer version in the registry does not move the lock; --upgrade does.
    fixture.publish("0.2.5", &kubernetes("0.2.5"));
    let (listed, _) = exited(&fixture.opm(&["provider", "list"]), 0);
    let row = listed.lines().nth(1).unwrap_or_default();
    for cell in [
        "kubernetes",
        "^0.2",
        "0.2.1",
        "yes",
        &digest[..19],
        "0.2.5 (0.3.0 beyond ^0.2)",
    ] {
        assert!(row.contains(cell), "{cell}: {listed}");
    }
    let (stdout, _) = exited(&fixture.opm(&["provider", "init"]), 0);
    assert!(
        stdout.contains("kept kubernetes 0.2.1 (locked, installed)"),
        "{stdout}"
    );
    assert_eq!(fixture.lock()["providers"][0]["version"], "0.2.1");
    let (stdout, _) = exited(&fixture.opm(&["provider", "init", "--upgrade"]), 0);
    assert!(
        stdout.contains("installed kubernetes 0.2.5 from"),
        "{stdout}"
    );
    assert!(stdout.contains("(upgraded from 0.2.1)"), "{stdout}");
    assert_eq!(fixture.lock()["providers"][0]["version"], "0.2.5");

    // 0.2.5 withdrawn from the registry: the lock does not move back on its own...
    std::fs::remove_dir_all(fixture.registry_bundle("0.2.5").parent().unwrap()).expect("rm");
    let (_, stderr) = exited(&fixture.opm(&["provider", "init", "--force"]), 2);
    assert!(
        stderr.contains("the locked 0.2.5 is not in") && stderr.contains("--upgrade"),
        "{stderr}"
    );
    assert_eq!(fixture.lock()["providers"][0]["version"], "0.2.5");
    // ... and --upgrade says it moves to an older version.
    let (stdout, _) = exited(&fixture.opm(&["provider", "init", "--upgrade"]), 0);
    assert!(stdout.contains("(DOWNGRADED from 0.2.5)"), "{stdout}");
    assert_eq!(fixture.lock()["providers"][0]["version"], "0.2.1");
}

/// The bundle digest of `bytes`, as the lock holds it (without `blake3:`).
fn blake3_of_manifest(bytes: &[u8]) -> String {
    let bundle = bundle::read("test", bytes).expect("bundle");
    blake3::hash(&bundle.manifest).to_hex().to_string()
}

#[test]
fn installed_bytes_that_differ_from_the_lock_or_are_missing_are_refused() {
    let fixture = Fixture::new(CONFIG, &["0.2.0"]);
    exited(&fixture.opm(&["provider", "init"]), 0);
    let installed = fixture
        .app()
        .join(".opm/providers/kubernetes/0.2.0/kubernetes-0.2.0.opmb");

    // Another valid bundle of the same name and version in its place.
    let other = repacked(&kubernetes("0.2.0"), |manifest| {
        manifest["metadata"]["labels"]["swapped"] = Value::from("yes");
    });
    std::fs::write(&installed, &other).expect("swap");
    for command in ["build", "vet"] {
        let (_, stderr) = exited(&fixture.opm(&["mod", command, &fixture.hello()]), 2);
        assert!(
            stderr.contains("not the locked blake3:")
                && stderr.contains("run `opm provider init` --force"),
            "mod {command}: {stderr}"
        );
    }
    // init notices too, and --force puts the locked bytes back.
    let (stdout, _) = exited(&fixture.opm(&["provider", "init", "--force"]), 0);
    assert!(stdout.contains("installed kubernetes 0.2.0"), "{stdout}");
    exited(&fixture.opm(&["mod", "build", &fixture.hello()]), 0);

    std::fs::remove_file(&installed).expect("remove");
    for command in ["build", "vet"] {
        let (_, stderr) = exited(&fixture.opm(&["mod", command, &fixture.hello()]), 2);
        assert!(
            stderr.contains("kubernetes 0.2.0 is locked but not installed"),
            "mod {command}: {stderr}"
        );
    }
    exited(&fixture.opm(&["provider", "init"]), 0);
    exited(&fixture.opm(&["mod", "build", &fixture.hello()]), 0);
}

#[test]
fn a_bundle_filed_under_another_version_or_changed_since_it_was_locked_is_refused() {
    let fixture = Fixture::new(CONFIG, &["0.2.0"]);
    // An old release renamed to look like a newer one.
    fixture.publish("0.2.9", &kubernetes("0.2.0"));
    let (_, stderr) = exited(&fixture.opm(&["provider", "init"]), 2);
    assert!(
        stderr.contains("holds kubernetes 0.2.0, not kubernetes 0.2.9"),
        "{stderr}"
    );
    std::fs::remove_dir_all(fixture.registry_bundle("0.2.9").parent().unwrap()).expect("rm");
    exited(&fixture.opm(&["provider", "init"]), 0);

    // The registry's 0.2.0 replaced by other bytes, then a reinstall: refused.
    let changed = repacked(&kubernetes("0.2.0"), |manifest| {
        manifest["metadata"]["description"] = Value::from("not what was locked");
    });
    fixture.publish("0.2.0", &changed);
    let (_, stderr) = exited(&fixture.opm(&["provider", "init", "--force"]), 2);
    assert!(
        stderr.contains("the bundle changed since it was locked"),
        "{stderr}"
    );

    // A requirement the lock no longer satisfies is not moved silently.
    std::fs::write(
        fixture.app().join(".opm/providers.yaml"),
        CONFIG.replace("^0.2", "^0.3"),
    )
    .expect("write");
    let (_, stderr) = exited(&fixture.opm(&["provider", "init"]), 2);
    assert!(
        stderr.contains("the locked 0.2.0 does not satisfy \"^0.3\" any more"),
        "{stderr}"
    );
}

#[test]
fn where_keys_are_configured_only_a_bundle_signed_for_its_version_installs_and_renders() {
    let config = format!("keys: [../../team.pub]\n{CONFIG}");
    let fixture = Fixture::new(&config, &["0.2.0"]);
    let root = fixture.dir.path();
    let (secret, _) = keypair(root, "team");
    let bundle = fixture.registry_bundle("0.2.0").display().to_string();

    let (_, stderr) = exited(&fixture.opm(&["provider", "init"]), 2);
    assert!(stderr.contains("is not signed"), "{stderr}");

    // Signed, but for another version: a signature of one release never vouches for another.
    let comment = "provider:kubernetes\tversion:0.1.0";
    minisign(&[
        "-S",
        "-W",
        "-s",
        secret.to_str().unwrap(),
        "-m",
        &bundle,
        "-t",
        comment,
    ]);
    let (_, stderr) = exited(&fixture.opm(&["provider", "init"]), 2);
    assert!(
        stderr.contains("holds provider kubernetes 0.2.0, but its signature by key")
            && stderr.contains("is for kubernetes 0.1.0"),
        "{stderr}"
    );

    let signed = opm(
        root,
        &[
            "provider",
            "sign",
            &bundle,
            "--key",
            secret.to_str().unwrap(),
        ],
    );
    exited(&signed, 0);
    let (stdout, _) = exited(&fixture.opm(&["provider", "init"]), 0);
    assert!(stdout.contains("signature by key"), "{stdout}");
    assert!(fixture.lock()["providers"][0]["keyId"].is_string());
    exited(&fixture.opm(&["mod", "build", &fixture.hello()]), 0);

    // The installed signature removed: every render checks it.
    let installed = fixture
        .app()
        .join(".opm/providers/kubernetes/0.2.0/kubernetes-0.2.0.opmb.minisig");
    std::fs::remove_file(&installed).expect("rm");
    let (_, stderr) = exited(&fixture.opm(&["mod", "build", &fixture.hello()]), 2);
    assert!(stderr.contains("is not signed"), "{stderr}");

    // Signed again, but for another version: refused at render time too.
    let installed_bundle = installed.with_extension("");
    minisign(&[
        "-S",
        "-W",
        "-s",
        secret.to_str().unwrap(),
        "-m",
        installed_bundle.to_str().unwrap(),
        "-t",
        comment,
    ]);
    assert!(installed.exists(), "minisign wrote {}", installed.display());
    for command in ["build", "vet"] {
        let (_, stderr) = exited(&fixture.opm(&["mod", command, &fixture.hello()]), 2);
        assert!(
            stderr.contains("is for kubernetes 0.1.0"),
            "mod {command}: {stderr}"
        );
    }
}

#[test]
fn the_embedded_provider_serves_only_where_no_project_configures_its_name() {
    let fixture = Fixture::new(CONFIG, &["0.2.0"]);
    let elsewhere = fixture.dir.path();
    let (stdout, _) = exited(&opm(elsewhere, &["provider", "inspect", "kubernetes"]), 0);
    assert!(stdout.contains("embedded:kubernetes"), "{stdout}");
    exited(&fixture.opm(&["provider", "init"]), 0);
    let (stdout, _) = exited(&fixture.opm(&["provider", "inspect", "kubernetes"]), 0);
    assert!(
        stdout.contains(".opm/providers/kubernetes/0.2.0/"),
        "{stdout}"
    );
    // A subdirectory of the project is in the project.
    std::fs::create_dir_all(fixture.app().join("deploy/prod")).expect("mkdir");
    let (stdout, _) = exited(
        &opm(
            &fixture.app().join("deploy/prod"),
            &["provider", "inspect", "kubernetes"],
        ),
        0,
    );
    assert!(
        stdout.contains(".opm/providers/kubernetes/0.2.0/"),
        "{stdout}"
    );
}

#[test]
fn concurrent_inits_leave_one_whole_lock_and_install() {
    let fixture = Fixture::new(CONFIG, &["0.2.0", "0.2.1"]);
    let children: Vec<_> = (0..6)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_opm"))
                .args(["provider", "init", "--force"])
                .current_dir(fixture.app())
                .env_remove("OPM_REGISTRY")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("opm starts")
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().expect("opm ends");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    assert_eq!(fixture.lock()["providers"][0]["version"], "0.2.1");
    exited(&fixture.opm(&["mod", "build", &fixture.hello()]), 0);
}

/// A team's provider that holds one trait and one transformer and nothing of the standard
/// vocabulary: `acme.dev/traits/availability@v1#Budget`, rendered by the embedded provider's
/// PodDisruptionBudget component under acme's own FQN, for components with the standard
/// Container. (That component serves every Kubernetes transformer, by the name after `#`, so
/// acme's keeps the name `PodDisruptionBudgetTransformer` in its own group.)
fn acme() -> Vec<u8> {
    let embedded = bundle::read("embedded", opm_runtime::embedded::bundle()).expect("bundle");
    let standard: Value = serde_json::from_slice(&embedded.manifest).expect("JSON");
    let pdb = &standard["transformers"]["transformer.opm.dev/availability@v1#PodDisruptionBudgetTransformer"];
    let component = pdb["component"].as_str().expect("component").to_owned();
    let mut budget =
        standard["definitions"]["opm.dev/traits/availability@v1#DisruptionBudget"].clone();
    budget["field"] = Value::from("disruptionBudget");
    let manifest = serde_json::json!({
        "apiVersion": "core.opm.dev/v1",
        "kind": "Provider",
        "metadata": {"name": "acme", "version": "0.1.0", "labels": {"core.opm.dev/format": "kubernetes"}},
        "definitions": {"acme.dev/traits/availability@v1#Budget": budget},
        "transformers": {"acme.dev/availability@v1#PodDisruptionBudgetTransformer": {
            "requiredResources": ["opm.dev/resources/workload@v1#Container"],
            "requiredTraits": ["acme.dev/traits/availability@v1#Budget"],
            "component": component,
        }},
    });
    let bytes = embedded.components[&component].to_vec();
    bundle::format::pack(manifest, &[(component, bytes)].into())
        .expect("packs")
        .bytes
}

#[test]
fn a_project_locking_two_providers_renders_from_both_from_any_working_directory() {
    let config =
        format!("{CONFIG}  - name: acme\n    version: 0.1.0\n    source: ../../acme-0.1.0.opmb\n");
    let fixture = Fixture::new(&config, &["0.2.1"]);
    let root = fixture.dir.path();
    std::fs::write(root.join("acme-0.1.0.opmb"), acme()).expect("write");
    let (stdout, _) = exited(&fixture.opm(&["provider", "init"]), 0);
    assert!(stdout.contains("locked 2 providers"), "{stdout}");

    let module = fixture.app().join("shop/module.yaml");
    std::fs::create_dir_all(module.parent().unwrap()).expect("mkdir");
    std::fs::write(
        &module,
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: shop, version: 1.0.0}\n\
         components:\n  api:\n    metadata: {labels: {core.opm.dev/workload-type: stateless}}\n\
         \x20   resources:\n      Container: {image: nginx:1.27}\n\
         \x20   traits:\n      Budget: {minAvailable: 1}\n",
    )
    .expect("write");
    let module = module.display().to_string();

    // From the project, from outside it, and from inside another project: the module's own
    // project decides, not the working directory.
    let other = root.join("other");
    std::fs::create_dir_all(other.join(".opm")).expect("mkdir");
    std::fs::write(other.join(".opm/providers.yaml"), "providers: []\n").expect("write");
    let renders: Vec<String> = [fixture.app(), root.to_owned(), other]
        .iter()
        .map(|cwd| exited(&opm(cwd, &["mod", "build", &module]), 0).0)
        .collect();
    assert!(renders[0].contains("kind: Deployment"), "{}", renders[0]);
    assert!(
        renders[0].contains("kind: PodDisruptionBudget"),
        "{}",
        renders[0]
    );
    assert!(renders.iter().all(|r| *r == renders[0]), "{renders:#?}");

    let (vet, _) = exited(&opm(root, &["mod", "vet", &module]), 0);
    assert!(
        vet.contains("module shop with providers kubernetes, acme"),
        "{vet}"
    );
    assert!(
        vet.contains("  kubernetes 0.2.1: "),
        "the locked version: {vet}"
    );
    assert!(
        vet.contains("  acme 0.1.0: 1 transformer, 1 definition"),
        "{vet}"
    );

    // Exactly the locked bytes of both: the team's installed bundle changed is refused.
    let installed = fixture
        .app()
        .join(".opm/providers/acme/0.1.0/acme-0.1.0.opmb");
    let changed = repacked(&std::fs::read(&installed).unwrap(), |manifest| {
        manifest["metadata"]["description"] = Value::from("changed");
    });
    std::fs::write(&installed, changed).expect("write");
    let (_, stderr) = exited(&opm(root, &["mod", "build", &module]), 2);
    assert!(
        stderr.contains("provider acme:") && stderr.contains("not the locked"),
        "{stderr}"
    );
}

#[test]
fn a_relative_source_is_relative_to_the_file_that_writes_it() {
    // Written as if relative to the project directory, the registry is not found: the path is
    // relative to .opm/providers.yaml, and the error says where it looked.
    let fixture = Fixture::new(&CONFIG.replace("../../registry", "../registry"), &["0.2.0"]);
    let (_, stderr) = exited(&fixture.opm(&["provider", "init"]), 2);
    let looked = fixture.app().join(".opm/../registry");
    assert!(
        stderr.contains(&format!("its source {} does not exist", looked.display())),
        "{stderr}"
    );
}
