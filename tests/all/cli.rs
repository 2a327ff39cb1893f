//! `opm mod build` end to end, in-process: the hello example, fail on end with a hostile
//! transformer beside a healthy one, and exit statuses.

use opm_tests::{guests, hello, opm, opm_env, provider_not_embedded, provider_with, write_file};
use serde_json::Value;

#[test]
fn hello_renders_a_deployment_and_a_service() {
    let run = opm(["mod", "build", &hello(), "-o", "json"]);
    assert!(run.exited(0), "{}", run.stderr);
    let list: Value = serde_json::from_str(&run.stdout).expect("stdout is JSON");
    assert_eq!(list["kind"], "List");
    let items = list["items"].as_array().expect("items");
    let kinds: Vec<&str> = items
        .iter()
        .map(|i| i["kind"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(kinds, ["Service", "Deployment"]);
    let deployment = &items[1];
    assert_eq!(deployment["apiVersion"], "apps/v1");
    assert_eq!(deployment["metadata"]["namespace"], "hello");
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(
        deployment["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "open-platform-model"
    );
    assert_eq!(
        deployment["metadata"]["labels"]["component.opmodel.dev/name"],
        "api"
    );
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginxinc/nginx-unprivileged:1.27");
    assert_eq!(container["ports"][0]["containerPort"], 8080);
    let service = &items[0];
    assert_eq!(
        service["spec"]["selector"],
        deployment["spec"]["selector"]["matchLabels"]
    );
    assert_eq!(service["spec"]["ports"][0]["targetPort"], "http");
}

#[test]
fn yaml_output_is_a_multi_document_stream() {
    let run = opm(["mod", "build", &hello()]);
    assert!(run.exited(0), "{}", run.stderr);
    assert_eq!(run.stdout.matches("---\n").count(), 2, "{}", run.stdout);
    assert!(
        run.stdout
            .starts_with("---\napiVersion: v1\nkind: Service\nmetadata:\n  name: api\n"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("\nkind: Deployment\n"));
}

#[test]
fn namespace_flag_overrides_the_module() {
    let run = opm(["mod", "build", &hello(), "-o", "json", "-n", "staging"]);
    assert!(run.exited(0), "{}", run.stderr);
    let list: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert!(
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["metadata"]["namespace"] == "staging")
    );
}

const SPIN_ENTRY: &str = "
description: Never returns
requiredLabels: {core.opm.dev/workload-type: spin}
requiredResources: [opm.dev/resources/workload@v1#Container]
component: spin.wasm
";

const MODULE_WITH_A_SPINNING_COMPONENT: &str = "
apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: mixed, version: 1.0.0}
components:
  bad:
    metadata:
      labels: {core.opm.dev/workload-type: spin}
    resources:
      Container: {image: busybox:1.36}
  good:
    resources:
      Container: {image: nginx:1.27}
";

#[test]
fn a_hostile_transformer_fails_its_component_alone_and_nothing_is_written() {
    let provider = provider_with(&[(
        "test.opm.dev/hostile@v1#SpinTransformer",
        SPIN_ENTRY,
        guests::TESTING_SPIN,
    )]);
    let module = write_file(
        provider.path(),
        "module.yaml",
        MODULE_WITH_A_SPINNING_COMPONENT,
    );
    let provider_dir = provider.path().display().to_string();
    let run = opm([
        "mod",
        "build",
        &module,
        "-p",
        &provider_dir,
        "--fuel",
        "20000000",
    ]);
    assert!(run.exited(1), "status {:?}: {}", run.status, run.stderr);
    assert_eq!(run.stdout, "", "a failed render writes nothing to stdout");
    assert!(
        run.stderr
            .starts_with("error: render failed with 1 problem in 1 component\n"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("  component \"bad\":\n    - transformer test.opm.dev/hostile@v1#SpinTransformer (blake3:"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("ran out of fuel: used all 20000000 units"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("\"good\""), "{}", run.stderr);

    // The same provider renders the healthy component alone.
    let good_only = MODULE_WITH_A_SPINNING_COMPONENT
        .split("  bad:")
        .next()
        .unwrap()
        .to_owned()
        + "  good:\n    resources:\n      Container: {image: nginx:1.27}\n";
    let module = write_file(provider.path(), "good.yaml", &good_only);
    let run = opm(["mod", "build", &module, "-p", &provider_dir]);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(run.stdout.contains("kind: Deployment"));
}

#[test]
fn unreadable_input_exits_2() {
    let run = opm(["mod", "build", "/nonexistent/module.yaml"]);
    assert!(run.exited(2), "{:?}", run.status);
    assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
    assert!(
        run.stderr.contains("/nonexistent/module.yaml"),
        "{}",
        run.stderr
    );
}

#[test]
fn bad_usage_exits_2() {
    let run = opm(["mod", "build", "--output", "toml"]);
    assert!(run.exited(2), "{:?}", run.status);
    assert!(run.stderr.contains("toml"), "{}", run.stderr);
    let run = opm(["mod", "build", &hello(), "--memory", "lots"]);
    assert!(run.exited(2));
    assert!(run.stderr.contains("not a size"), "{}", run.stderr);
}

/// Usage errors are coloured only on a terminal, and never with `NO_COLOR` set: files and CI
/// logs get no ANSI escapes.
#[test]
fn usage_errors_are_coloured_only_on_a_terminal_without_no_color() {
    let run_with = |terminal: bool, no_color: Option<&str>| {
        let env = |name: &str| match name {
            "NO_COLOR" => no_color.map(str::to_owned),
            _ => None,
        };
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let status = opm_runtime::cli::run(
            ["opm", "mod", "build", "--output", "toml"],
            &mut opm_runtime::cli::Output {
                stdout: &mut stdout,
                stderr: &mut stderr,
                env: &env,
                stderr_is_terminal: terminal,
                stdout_is_terminal: false,
            },
        );
        assert_eq!(status, std::process::ExitCode::from(2));
        String::from_utf8(stderr).unwrap()
    };
    for (terminal, no_color) in [(false, None), (true, Some("1")), (false, Some("1"))] {
        let stderr = run_with(terminal, no_color);
        assert!(stderr.contains("toml"), "{stderr}");
        assert!(
            !stderr.contains('\x1b'),
            "terminal {terminal}, NO_COLOR {no_color:?}: {stderr:?}"
        );
    }
    assert!(
        run_with(true, None).contains("\x1b["),
        "a terminal gets colour"
    );
    assert!(
        run_with(true, Some("")).contains("\x1b["),
        "an empty NO_COLOR is unset"
    );
}

/// A missing module.yaml is said once, with what to do, not its cause twice (`…(os error 2):
/// No such file or directory (os error 2)`).
#[test]
fn a_missing_module_is_said_once_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().display().to_string();
    for command in ["build", "vet"] {
        let run = opm(["mod", command, &path]);
        assert!(run.exited(2), "{:?}", run.status);
        assert_eq!(
            run.stderr,
            format!(
                "error: there is no module at {path}/module.yaml: create one with `opm mod init \
                 {path}`, or give the path of an existing module (`opm mod build \
                 path/to/module.yaml`)\n"
            )
        );
    }
    let values = format!("{path}/values.yaml");
    let run = opm(["mod", "build", &hello(), "-f", &values]);
    assert!(run.exited(2));
    assert_eq!(
        run.stderr.matches("os error 2").count(),
        1,
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains(&format!("cannot read {values}: No such file")),
        "{}",
        run.stderr
    );
}

/// The audit's finding: `400000000000000000m` overflowed when turned into seconds, on the
/// command line and in a provider's manifest alike.
#[test]
fn a_timeout_too_large_is_refused_on_the_command_line_and_in_a_manifest() {
    let huge = "400000000000000000m";
    let run = opm(["mod", "build", &hello(), "--timeout", huge]);
    assert!(run.exited(2), "{:?} {}", run.status, run.stderr);
    assert!(run.stderr.contains("is too large"), "{}", run.stderr);

    let provider = provider_with(&[]);
    let manifest_path = provider.path().join("provider.yaml");
    let manifest = std::fs::read_to_string(&manifest_path).unwrap();
    let mut lines: Vec<String> = manifest.lines().map(str::to_owned).collect();
    let limits = lines
        .iter()
        .position(|line| line == "limits:")
        .expect("limits");
    let timeout = lines[limits..]
        .iter()
        .position(|line| line.trim_start().starts_with("timeout:"))
        .expect("a timeout")
        + limits;
    lines[timeout] = format!("  timeout: {huge}");
    std::fs::write(&manifest_path, lines.join("\n") + "\n").unwrap();
    let provider_dir = provider.path().display().to_string();
    let run = opm(["mod", "build", &hello(), "-p", &provider_dir]);
    assert!(run.exited(2), "{:?} {}", run.status, run.stderr);
    assert!(
        run.stderr.contains("limits.timeout") && run.stderr.contains("is too large"),
        "{}",
        run.stderr
    );
}

/// A compile cache and its key in a home of their own.
struct CacheHome {
    _home: tempfile::TempDir,
    cache: std::path::PathBuf,
    key: std::path::PathBuf,
    cache_dir: String,
    key_file: String,
}

impl CacheHome {
    fn new() -> Self {
        let home = tempfile::tempdir().expect("temp dir");
        let cache = home.path().join("cache");
        let key = home.path().join("config/key");
        Self {
            cache_dir: cache.display().to_string(),
            key_file: key.display().to_string(),
            _home: home,
            cache,
            key,
        }
    }

    /// How many files the cache directory holds.
    fn entries(&self) -> usize {
        std::fs::read_dir(&self.cache).map_or(0, |entries| entries.count())
    }

    /// The variables that name them.
    fn vars(&self) -> [(&str, &str); 2] {
        [
            ("OPM_CACHE_DIR", self.cache_dir.as_str()),
            ("OPM_CACHE_KEY", self.key_file.as_str()),
        ]
    }
}

/// Renders hello with `--verbose=json` and `extra` arguments under `vars`: where the code of
/// each component came from (`source` of the `code` events, repeats merged), and the output.
fn render_hello_code(extra: &[&str], vars: &[(&str, &str)]) -> (Vec<String>, String) {
    let mut args = vec!["mod", "build", "--verbose=json"];
    args.extend_from_slice(extra);
    let hello = hello();
    args.push(&hello);
    let run = opm_env(args, vars);
    assert!(run.exited(0), "{}", run.stderr);
    let mut sources: Vec<String> = run
        .stderr
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["event"] == "code")
        .map(|event| event["source"].as_str().unwrap_or_default().to_owned())
        .collect();
    sources.dedup();
    (sources, run.stdout)
}

/// The embedded provider's code is built into opm, compressed: the first render decompresses the
/// code of what it runs and stores it in the compile cache, and a later render reads it from
/// there, which is quicker than decompressing it again (benches/RESULTS.md); the output is the
/// same, and `--no-cache` takes the built-in code without writing anything.
#[test]
fn a_render_reads_the_embedded_provider_s_code_from_the_cache_after_the_first() {
    let home = CacheHome::new();
    let vars = home.vars();
    let render = |extra: &[&str]| render_hello_code(extra, &vars);

    let (first, output) = render(&["--no-cache"]);
    assert_eq!(first, ["embedded"]);
    assert_eq!(home.entries(), 0, "--no-cache wrote to the cache");
    let (first, first_output) = render(&[]);
    assert_eq!(first, ["embedded"]);
    assert_eq!(
        home.entries(),
        3,
        "the provider's one component of its transformers, the renderer, and what the render \
         found valid"
    );
    let (second, second_output) = render(&[]);
    assert_eq!(second, ["cache"]);
    assert_eq!(first_output, output);
    assert_eq!(second_output, output);
}

/// A Secret's stretched checksum (Argon2id, 19 MiB) is done once per machine: the render
/// remembers it in the compile cache, under the cache's key, and the next render recalls it.
/// Every render gives the same output as one without a cache; a remembered result that was
/// changed is not recalled; `opm cache clear` removes what was remembered.
#[test]
fn a_secret_s_stretched_checksum_is_remembered_in_the_cache() {
    let home = CacheHome::new();
    let vars = home.vars();
    let shop = opm_tests::repo_root().join("examples/shop/module.yaml");
    let shop = shop.to_str().unwrap();
    let render = |vars: &[(&str, &str)]| {
        let run = opm_env(["mod", "build", shop], vars);
        assert!(run.exited(0), "{}", run.stderr);
        assert!(
            run.stdout.contains("checksum.opm.dev/config: "),
            "{}",
            run.stdout
        );
        run.stdout
    };
    let memos = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&home.cache)
            .map(|entries| {
                entries
                    .map(|entry| entry.unwrap().path())
                    .filter(|path| path.extension().is_some_and(|ext| ext == "memo"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let without = render(&[("OPM_CACHE_DIR", "off")]);
    assert_eq!(render(&vars), without);
    let remembered = memos();
    assert!(!remembered.is_empty(), "nothing remembered");
    let kept: Vec<Vec<u8>> = remembered
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert_eq!(render(&vars), without, "recalled");
    assert_eq!(memos(), remembered, "recalled, not remembered again");
    for path in &remembered {
        let mut changed = std::fs::read(path).unwrap();
        let last = changed.len() - 40;
        changed[last] ^= 1;
        std::fs::write(path, changed).unwrap();
    }
    assert_eq!(render(&vars), without, "a changed result is not recalled");
    let rewritten: Vec<Vec<u8>> = remembered
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert_eq!(rewritten, kept, "and is remembered again");
    let run = opm_env(["cache", "clear"], &vars);
    assert!(run.exited(0), "{}", run.stderr);
    assert_eq!(memos(), Vec::<std::path::PathBuf>::new(), "cleared");
}

/// What a render found valid is remembered in the compile cache, as digests keyed with the
/// cache's key, and the next render of the module validates only what changed, compiling no
/// schema when nothing did (`opm_core::definitions::validated`). Every render gives the output
/// of a render without a cache; a value that no longer holds is refused although the one it
/// replaced was remembered, and that failed render leaves the entry as it was; an entry that
/// was changed is not recalled.
#[test]
fn the_values_a_render_found_valid_are_remembered_and_only_what_changed_is_validated() {
    let home = CacheHome::new();
    let vars = home.vars();
    let dir = tempfile::tempdir().expect("temp dir");
    let module = dir.path().join("module.yaml");
    let hello = std::fs::read_to_string(opm_tests::repo_root().join("examples/hello/module.yaml"))
        .expect("hello");
    std::fs::write(&module, &hello).unwrap();
    let render = |vars: &[(&str, &str)]| opm_env(["mod", "build", module.to_str().unwrap()], vars);
    let memos = || -> Vec<(std::path::PathBuf, Vec<u8>)> {
        let mut memos: Vec<_> = std::fs::read_dir(&home.cache)
            .map(|entries| {
                entries
                    .map(|entry| entry.unwrap().path())
                    .filter(|path| path.extension().is_some_and(|ext| ext == "memo"))
                    .map(|path| {
                        let bytes = std::fs::read(&path).unwrap();
                        (path, bytes)
                    })
                    .collect()
            })
            .unwrap_or_default();
        memos.sort();
        memos
    };
    let without = render(&[("OPM_CACHE_DIR", "off")]);
    assert!(without.exited(0), "{}", without.stderr);
    let first = render(&vars);
    assert_eq!(first.stdout, without.stdout);
    let remembered = memos();
    assert_eq!(remembered.len(), 1, "one entry for the module");
    // A magic line, whole digests (three values, two transformer inputs), a MAC; no value.
    let entry = &remembered[0].1;
    assert!(entry.starts_with(b"opm-memo-v1\n"));
    assert_eq!(entry.len(), 12 + 5 * 32 + 32, "{entry:?}");
    assert!(!entry.windows(5).any(|w| w == b"nginx"));
    let second = render(&vars);
    assert_eq!(second.stdout, without.stdout, "recalled");
    assert_eq!(memos(), remembered, "recalled, not remembered again");

    // A value that does not hold is refused, whatever was remembered.
    std::fs::write(&module, hello.replace("Replicas: 2", "Replicas: -2")).unwrap();
    let refused = render(&vars);
    assert!(refused.exited(1), "{}", refused.stdout);
    assert!(
        refused.stderr.contains("api") && refused.stderr.contains("Replicas"),
        "{}",
        refused.stderr
    );
    assert_eq!(memos(), remembered, "a plan with errors remembers nothing");

    // A changed entry is not recalled: everything is validated again, and remembered again.
    std::fs::write(&module, &hello).unwrap();
    let (path, bytes) = &remembered[0];
    let mut changed = bytes.clone();
    changed[12] ^= 1;
    std::fs::write(path, changed).unwrap();
    let again = render(&vars);
    assert_eq!(again.stdout, without.stdout);
    assert_eq!(memos(), remembered, "remembered again");
}

/// What a render must compile (neither built into opm nor cached: here a `-p` provider) is
/// compiled by Winch, several times quicker than by Cranelift (benches/RESULTS.md), and its code
/// cached for the next render; `--optimized` compiles it with Cranelift instead, whose code later
/// renders then take over Winch's. Whatever compiled it, the output is the same.
#[test]
fn what_a_render_must_compile_winch_compiles_unless_optimized() {
    let home = CacheHome::new();
    let vars = home.vars();
    let provider = provider_not_embedded();
    let provider = provider.path().to_str().unwrap();
    let render = |extra: &[&str]| {
        let mut args = vec!["-p", provider];
        args.extend_from_slice(extra);
        render_hello_code(&args, &vars)
    };

    let (sources, output) = render(&["--no-cache"]);
    assert_eq!(sources, ["compiled-winch"]);
    assert_eq!(home.entries(), 0, "--no-cache wrote to the cache");
    let (sources, first) = render(&[]);
    assert_eq!(sources, ["compiled-winch"]);
    assert_eq!(
        home.entries(),
        3,
        "the transformers' component, the renderer, and what the render found valid"
    );
    let (sources, second) = render(&[]);
    assert_eq!(sources, ["cache-winch"]);
    let (sources, optimized) = render(&["--optimized"]);
    assert_eq!(sources, ["compiled"]);
    assert_eq!(home.entries(), 5, "Cranelift's code beside Winch's");
    let (sources, after) = render(&[]);
    assert_eq!(sources, ["cache"]);
    for (name, other) in [
        ("first", &first),
        ("second", &second),
        ("optimized", &optimized),
        ("after", &after),
    ] {
        assert_eq!(other, &output, "the {name} render's output differs");
    }

    let run = opm_env(
        [
            "mod",
            "build",
            &hello(),
            "-p",
            provider,
            "--no-cache",
            "--verbose",
        ],
        &vars,
    );
    assert!(run.exited(0), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("compiled now with Winch, the quick compiler (--optimized: with Cranelift)"),
        "{}",
        run.stderr
    );
}

/// `opm cache dir` shows the compile cache and what it holds, `--no-cache` neither reads nor writes
/// it, and `opm cache clear` empties it without touching anything else there.
#[test]
fn the_compile_cache_is_shown_bypassed_and_cleared() {
    let home = CacheHome::new();
    // The embedded provider's code is built into opm: this one's is compiled and cached.
    let provider = provider_not_embedded();
    let provider = provider.path().to_str().unwrap();
    let (cache, key, vars) = (&home.cache, &home.key, home.vars());

    let run = opm_env(
        ["mod", "build", &hello(), "-p", provider, "--no-cache"],
        &vars,
    );
    assert!(run.exited(0), "{}", run.stderr);
    assert_eq!(home.entries(), 0, "--no-cache wrote to the cache");

    let run = opm_env(["mod", "build", &hello(), "-p", provider], &vars);
    assert!(run.exited(0), "{}", run.stderr);
    assert_eq!(
        home.entries(),
        3,
        "the provider's one component of its transformers, the renderer, and what the render \
         found valid"
    );
    std::fs::write(cache.join("notes.txt"), "mine").expect("write");

    let run = opm_env(["cache", "dir"], &vars);
    assert!(run.exited(0), "{}", run.stderr);
    assert_eq!(run.stdout, format!("{}\n", home.cache_dir));
    assert!(
        run.stderr
            .starts_with("2 compiled components and 1 remembered result, "),
        "{}",
        run.stderr
    );

    let run = opm_env(["cache", "clear"], &vars);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("removed 2 compiled components and 1 remembered result ("),
        "{}",
        run.stderr
    );
    assert_eq!(home.entries(), 1, "only opm's entries are removed");
    assert!(cache.join("notes.txt").exists());
    assert!(key.exists(), "the key is not the cache's to remove");

    let off = opm_env(["cache", "dir"], &[("OPM_CACHE_DIR", "off")]);
    assert!(off.exited(0), "{}", off.stderr);
    assert!(
        off.stderr.contains("the compile cache is off"),
        "{}",
        off.stderr
    );
}

/// Runs the independent validator `check-jsonschema` (PyPI, pinned in tests/setup.sh) with the
/// schema `schema` on `files`.
fn check_jsonschema(schema: &str, files: &[String]) -> std::process::Output {
    std::process::Command::new("check-jsonschema")
        .arg("--schemafile")
        .arg(schema)
        .args(files)
        .output()
        .expect("check-jsonschema is not on PATH: `eval \"$(tests/setup.sh)\"` installs it")
}

/// `opm mod schema` is a JSON Schema an independent validator uses: every example validates, and a
/// misspelt trait, a wrong type and an unknown field are refused by it.
#[test]
fn the_module_schema_validates_every_example_and_refuses_mistakes() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("module.schema.json").display().to_string();
    let run = opm(["mod", "schema", "-o", &schema]);
    assert!(run.exited(0), "{}", run.stderr);
    let root = opm_tests::repo_root();
    let mut examples: Vec<String> = std::fs::read_dir(root.join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path().join("module.yaml"))
        .filter(|p| p.is_file())
        .map(|p| p.display().to_string())
        .collect();
    assert!(examples.len() >= 5, "{examples:?}");
    // Real charts (2026-12): the modules of tests/fixtures too, among them one with every part
    // of the module language (`$when` on list items and beside a map-valued trait's entries,
    // a `${…}` jsonPatch, locals), which the schema refused.
    examples.extend(
        [
            "tests/fixtures/modules/language.yaml",
            "tests/fixtures/compose-run/module.yaml",
        ]
        .map(|path| root.join(path).display().to_string()),
    );
    use std::os::unix::fs::PermissionsExt as _;
    let metadata = std::fs::metadata(&schema).unwrap();
    assert_eq!(
        metadata.permissions().mode() & 0o777,
        0o644,
        "readable by all"
    );
    // Each definition once, the catalog's repeated parts shared by `$ref`: 7.7 MB before.
    assert!(metadata.len() < 1 << 20, "{} bytes", metadata.len());
    let output = check_jsonschema(&schema, &examples);
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let hello = std::fs::read_to_string(hello()).unwrap();
    for (mistake, from, to, said) in [
        (
            "a misspelt trait",
            "Replicas: 2",
            "Replica: 2",
            "'Replica' was unexpected",
        ),
        (
            "a wrong type",
            "Replicas: 2",
            "Replicas: two",
            "$.components.api.traits.Replicas",
        ),
        (
            "an unknown field",
            "image:",
            "imagee:",
            "'imagee' was unexpected",
        ),
    ] {
        assert!(
            hello.contains(from),
            "examples/hello no longer has {from:?}"
        );
        let file = write_file(dir.path(), "bad.yaml", &hello.replacen(from, to, 1));
        let output = check_jsonschema(&schema, &[file]);
        let said_all = String::from_utf8_lossy(&output.stdout);
        assert!(!output.status.success(), "{mistake} passed:\n{said_all}");
        assert!(
            said_all.contains(said),
            "{mistake}: {said:?} missing from:\n{said_all}"
        );
    }
    // Printed on stdout, it is the same schema.
    let printed = opm(["mod", "schema"]);
    assert_eq!(printed.stdout, std::fs::read_to_string(&schema).unwrap());
}

/// `opm mod schema MODULE --values` is the schema of the module's parameters, which an
/// independent validator checks a values file with: a right one passes, a misspelt key and a
/// wrong type are refused; a module without parameters has no such schema.
#[test]
fn the_values_schema_checks_a_values_file_as_opm_does() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("values.schema.json").display().to_string();
    let gitea = opm_tests::repo_root()
        .join("examples/gitea")
        .display()
        .to_string();
    let run = opm(["mod", "schema", &gitea, "--values", "-o", &schema]);
    assert!(run.exited(0), "{}", run.stderr);
    let good = write_file(
        dir.path(),
        "good.yaml",
        "domain: git.acme.io
storage: {size: 5Gi}
",
    );
    let output = check_jsonschema(&schema, &[good]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    for (mistake, text, said) in [
        (
            "a misspelt key",
            "storage: {sise: 5Gi}
",
            "'sise' was unexpected",
        ),
        (
            "a wrong type",
            "sshPort: twenty
",
            "$.sshPort",
        ),
    ] {
        let file = write_file(dir.path(), "bad.yaml", text);
        let output = check_jsonschema(&schema, &[file]);
        let said_all = String::from_utf8_lossy(&output.stdout);
        assert!(!output.status.success(), "{mistake} passed:\n{said_all}");
        assert!(
            said_all.contains(said),
            "{mistake}: {said:?} missing from:\n{said_all}"
        );
        // opm refuses it too.
        let file = dir.path().join("bad.yaml").display().to_string();
        assert!(
            opm(["mod", "vet", &gitea, "-f", &file]).exited(2),
            "{mistake}"
        );
    }
    let hello = opm(["mod", "schema", &hello(), "--values"]);
    assert!(hello.exited(2), "{}", hello.stderr);
    assert!(
        hello.stderr.contains("declares no parameters"),
        "{}",
        hello.stderr
    );
}

/// `opm mod init` writes a module that renders as written, takes its parameters, validates
/// against the schema beside it, and never overwrites a file.
#[test]
fn mod_init_writes_a_module_that_renders_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("Shop_App").display().to_string();
    let run = opm(["mod", "init", &project]);
    assert!(run.exited(0), "{}", run.stderr);
    let module = format!("{project}/module.yaml");
    let text = std::fs::read_to_string(&module).unwrap();
    assert!(text.starts_with("# yaml-language-server: $schema=module.schema.json\n"));
    assert!(text.contains("  name: shop-app\n"), "{text}");
    let build = opm(["mod", "build", &module]);
    assert!(build.exited(0), "{}", build.stderr);
    assert!(build.stdout.contains("kind: Deployment") && build.stdout.contains("kind: Service"));
    assert!(build.stdout.contains("  replicas: 2\n"), "{}", build.stdout);
    assert!(
        !build.stdout.contains("kind: Ingress"),
        "no host, no Ingress"
    );
    // Its parameters reach the objects, and are checked.
    let set = opm([
        "mod",
        "build",
        &module,
        "--set",
        "host=shop.example.com",
        "--set",
        "replicas=3",
        "--set",
        "image=nginx:1.29",
    ]);
    assert!(set.exited(0), "{}", set.stderr);
    crate::parameters::assert_holds(
        &set.stdout,
        &[
            "kind: Ingress\n",
            "  - host: shop.example.com\n",
            "  replicas: 3\n",
            "image: nginx:1.29\n",
        ],
    );
    crate::parameters::refuses(&module, "replicas=0");
    let output = check_jsonschema(
        &format!("{project}/module.schema.json"),
        std::slice::from_ref(&module),
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );

    let again = opm(["mod", "init", &project, "--name", "other"]);
    assert!(again.exited(2));
    assert!(again.stderr.contains("exists already"), "{}", again.stderr);
    assert_eq!(
        std::fs::read_to_string(&module).unwrap(),
        text,
        "left as it was"
    );
    let bad = opm([
        "mod",
        "init",
        &dir.path().join("x").display().to_string(),
        "--name",
        "Not Valid",
    ]);
    assert!(bad.exited(2));
    assert!(bad.stderr.contains("must be a DNS label"), "{}", bad.stderr);
}

/// The bash completion script loads in bash and completes `opm mod b` to `build`.
#[test]
fn bash_completion_completes_subcommands() {
    let run = opm(["completion", "bash"]);
    assert!(run.exited(0), "{}", run.stderr);
    let dir = tempfile::tempdir().unwrap();
    let script = write_file(dir.path(), "opm.bash", &run.stdout);
    let output = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {script} && COMP_WORDS=(opm mod b) COMP_CWORD=2 COMP_LINE='opm mod b' \
             COMP_POINT=9 && _opm opm b mod && printf '%s\\n' \"${{COMPREPLY[@]}}\""
        ))
        .output()
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(stdout.trim(), "build", "{stdout}");
    for shell in ["zsh", "fish", "powershell"] {
        let run = opm(["completion", shell]);
        assert!(
            run.exited(0) && run.stdout.contains("opm"),
            "{shell}: {}",
            run.stderr
        );
    }
    let help = opm(["completion", "--help"]);
    assert!(
        help.stdout.contains("bash-completion/completions/opm"),
        "{}",
        help.stdout
    );
}

/// The compile cache keeps under its size limit (`opm cache limit`, default 1 GiB): setting a
/// lower limit evicts the least recently used entries first, and a render that stores an entry
/// past the limit evicts others, never the one it stored.
#[test]
fn the_compile_cache_keeps_under_its_size_limit_least_recently_used_first() {
    let home = CacheHome::new();
    // The embedded provider's code is built into opm: this one's is compiled and cached.
    let provider = provider_not_embedded();
    let provider = provider.path().to_str().unwrap();
    let (cache, vars) = (&home.cache, home.vars());
    let entries = || {
        let mut entries: Vec<(std::path::PathBuf, u64)> = std::fs::read_dir(cache)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|ext| ext == "cwasm"))
            .map(|p| {
                let size = std::fs::metadata(&p).unwrap().len();
                (p, size)
            })
            .collect();
        entries.sort();
        entries
    };

    let run = opm_env(["cache", "limit"], &vars);
    assert!(run.exited(0), "{}", run.stderr);
    assert_eq!(run.stdout, "1 GiB\n");

    assert!(opm_env(["mod", "build", &hello(), "-p", provider], &vars).exited(0));
    let stored = entries();
    assert_eq!(
        stored.len(),
        2,
        "the transformers' one component and the renderer: {stored:?}"
    );
    // The first was used an hour ago, the second now.
    let then = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .append(true)
        .open(&stored[0].0)
        .unwrap()
        .set_modified(then)
        .unwrap();

    // Room for the second and for what the render remembered (what it found valid).
    let remembered: u64 = std::fs::read_dir(&home.cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "memo"))
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(remembered > 0, "nothing remembered");
    let limit = (stored[1].1 + remembered).to_string();
    let run = opm_env(["cache", "limit", &limit], &vars);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(
        run.stderr.contains("evicted 1 compiled component ("),
        "{}",
        run.stderr
    );
    assert_eq!(
        entries(),
        vec![stored[1].clone()],
        "the least recently used went first"
    );
    let run = opm_env(["cache", "dir"], &vars);
    assert!(
        run.stderr
            .starts_with("1 compiled component and 1 remembered result, "),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(" of at most "), "{}", run.stderr);

    // Under a limit smaller than any one entry, every store evicts all the others but never
    // itself. The render stores its transformers first (in parallel, in no fixed order) and its
    // renderer last, after the calls: the renderer's entry is the one left, just written.
    let run = opm_env(["cache", "limit", "1"], &vars);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(entries().is_empty(), "{:?}", entries());
    let before = std::time::SystemTime::now();
    let run = opm_env(["mod", "build", &hello(), "-p", provider], &vars);
    assert!(run.exited(0), "{}", run.stderr);
    let left = entries();
    assert_eq!(left.len(), 1, "{left:?}");
    let written = std::fs::metadata(&left[0].0).unwrap().modified().unwrap();
    assert!(
        written >= before,
        "the entry just stored is kept, the others go: {left:?}"
    );
}
