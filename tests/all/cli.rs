//! `opm mod build` end to end, in-process: the hello example, fail on end with a hostile
//! transformer beside a healthy one, and exit statuses.

use opm_tests::{guests, hello, opm, opm_env, provider_with, write_file};
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

/// Issue 12: `opm cache dir` shows the compile cache and what it holds, `--no-cache` neither
/// reads nor writes it, and `opm cache clear` empties it without touching anything else there.
#[test]
fn the_compile_cache_is_shown_bypassed_and_cleared() {
    let home = tempfile::tempdir().expect("temp dir");
    let cache = home.path().join("cache");
    let key = home.path().join("config/key");
    let (cache_dir, key_file) = (cache.display().to_string(), key.display().to_string());
    let vars = [
        ("OPM_CACHE_DIR", cache_dir.as_str()),
        ("OPM_CACHE_KEY", key_file.as_str()),
    ];
    let compiled = || std::fs::read_dir(&cache).map_or(0, |entries| entries.count());

    let run = opm_env(["mod", "build", &hello(), "--no-cache"], &vars);
    assert!(run.exited(0), "{}", run.stderr);
    assert_eq!(compiled(), 0, "--no-cache wrote to the cache");

    let run = opm_env(["mod", "build", &hello()], &vars);
    assert!(run.exited(0), "{}", run.stderr);
    assert_eq!(compiled(), 2, "a Deployment and a Service transformer");
    std::fs::write(cache.join("notes.txt"), "mine").expect("write");

    let run = opm_env(["cache", "dir"], &vars);
    assert!(run.exited(0), "{}", run.stderr);
    assert_eq!(run.stdout, format!("{cache_dir}\n"));
    assert!(
        run.stderr.starts_with("2 compiled components, "),
        "{}",
        run.stderr
    );

    let run = opm_env(["cache", "clear"], &vars);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(
        run.stderr.starts_with("removed 2 compiled components ("),
        "{}",
        run.stderr
    );
    assert_eq!(compiled(), 1, "only opm's entries are removed");
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
