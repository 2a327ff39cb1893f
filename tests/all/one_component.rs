//! One component, many roles (`transformers/examples/one-component/`): a JavaScript provider
//! whose four transformers — workloads, Services, Secrets, Ingresses — all name one component,
//! built from source with componentize-js, which tells them apart by the context's
//! `transformer` (contract 1.1.0 and later). It renders `examples/shop` as its golden
//! `rendered.yaml` says, every object valid for `kubernetes-validate --strict`, with a second
//! instance's names prefixed by the scaffold's `objectName`; the bundle holds the component once.
//!
//! Rewrite the golden after an intended change with `BLESS=1 cargo nextest run -p opm-tests
//! --test all -E 'test(one_component)'`, and review it with `git diff`.

use std::path::{Path, PathBuf};

use opm_tests::{guests, opm, repo_root};

const WORKLOAD: &str = "example.opm.dev/transformers/one@v1#WorkloadTransformer";
const SERVICE: &str = "example.opm.dev/transformers/one@v1#ServiceTransformer";
const SECRET: &str = "example.opm.dev/transformers/one@v1#SecretTransformer";
const INGRESS: &str = "example.opm.dev/transformers/one@v1#IngressTransformer";

fn example() -> PathBuf {
    repo_root().join("transformers/examples/one-component")
}

/// The example's provider packed into a bundle in `dir`, as its `provider.yaml` says to
/// assemble it: the catalog `opm provider export-catalog` writes beside it, the component at
/// `js/kubernetes.wasm`.
fn pack(dir: &Path) -> String {
    let source = dir.join("provider");
    std::fs::create_dir_all(source.join("js")).unwrap();
    std::fs::copy(
        example().join("provider.yaml"),
        source.join("provider.yaml"),
    )
    .unwrap();
    let run = opm([
        "provider",
        "export-catalog",
        "--out",
        &source.display().to_string(),
    ]);
    assert!(run.exited(0), "{}", run.stderr);
    std::fs::write(
        source.join("js/kubernetes.wasm"),
        guests::example_one_component_js(),
    )
    .unwrap();
    let bundle = dir.join("one-component.opmb").display().to_string();
    let run = opm([
        "provider",
        "pack",
        &source.display().to_string(),
        "-o",
        &bundle,
    ]);
    assert!(run.exited(0), "{}", run.stderr);
    bundle
}

#[test]
fn one_javascript_component_serves_four_transformers_and_renders_the_shop_strictly_valid() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = pack(dir.path());

    // Four transformers, one component: one digest, one file in the bundle.
    let run = opm(["provider", "inspect", &bundle, "-o", "json"]);
    assert!(run.exited(0), "{}", run.stderr);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let transformers = report["transformers"].as_array().unwrap();
    let mut fqns: Vec<&str> = transformers
        .iter()
        .map(|t| t["fqn"].as_str().unwrap())
        .collect();
    fqns.sort_unstable();
    assert_eq!(fqns, [INGRESS, SECRET, SERVICE, WORKLOAD]);
    let digests: std::collections::BTreeSet<&str> = transformers
        .iter()
        .map(|t| t["digest"].as_str().unwrap())
        .collect();
    assert_eq!(digests.len(), 1, "{digests:?}");

    let module = repo_root().join("examples/shop/module.yaml");
    let module = module.display().to_string();
    let run = opm(["mod", "build", &module, "-p", &bundle, "--verbose"]);
    assert!(run.exited(0), "{}", run.stderr);
    for fqn in [WORKLOAD, SERVICE, SECRET, INGRESS] {
        assert!(run.stderr.contains(fqn), "{fqn} was called: {}", run.stderr);
    }
    // What the example leaves out is unhandled, by name: a warning each, nothing else.
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.starts_with("warning: "))
        .collect();
    assert_eq!(warnings.len(), 3, "{}", run.stderr);
    for unhandled in [
        "component \"api\": no matched transformer handles opm.dev/traits/availability@v1#DisruptionBudget",
        "component \"db\": no matched transformer handles opm.dev/policies/network@v1#NetworkPolicy",
        "component \"log-agent\": no matched transformer handles opm.dev/traits/security@v1#ServiceAccount",
    ] {
        assert!(
            warnings.iter().any(|w| w.ends_with(unhandled)),
            "{unhandled}: {warnings:?}"
        );
    }

    let golden = example().join("rendered.yaml");
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&golden, &run.stdout).unwrap();
    }
    assert_eq!(
        run.stdout,
        std::fs::read_to_string(&golden).unwrap_or_default(),
        "examples/shop renders otherwise with the one component; if the change is intended, \
         rewrite {} with BLESS=1 and review it",
        golden.display()
    );

    let mut kinds = Vec::new();
    let mut files = Vec::new();
    for (index, document) in crate::examples::documents(&run.stdout).iter().enumerate() {
        let kind = document
            .lines()
            .find_map(|line| line.strip_prefix("kind: "))
            .unwrap();
        kinds.push(kind.to_owned());
        let name = format!("{index:02}.yaml");
        std::fs::write(dir.path().join(&name), document).unwrap();
        files.push(name);
    }
    kinds.sort();
    assert_eq!(
        kinds,
        [
            "CronJob",
            "DaemonSet",
            "Deployment",
            "Ingress",
            "Secret",
            "Service",
            "Service",
            "StatefulSet"
        ]
    );
    crate::examples::assert_strict_valid(dir.path(), &files);

    // A second instance: every name the component writes, and every reference to one, gets
    // the instance's prefix (the scaffold's `Context.objectName`), the selectors its name.
    let run = opm([
        "mod",
        "build",
        &module,
        "-p",
        &bundle,
        "--instance",
        "shop-eu",
    ]);
    assert!(run.exited(0), "{}", run.stderr);
    for name in [
        "  name: shop-eu-api\n",
        "  name: shop-eu-db\n",
        "  serviceName: shop-eu-db\n",
        "            name: shop-eu-api\n",
        "    app.kubernetes.io/instance: shop-eu\n",
    ] {
        assert!(run.stdout.contains(name), "{name:?} in\n{}", run.stdout);
    }
    assert!(
        !run.stdout.contains("  name: api\n"),
        "no unprefixed object: {}",
        run.stdout
    );
}

/// The example's helpers are the JavaScript scaffold's, byte for byte: what `opm transformer new
/// --lang js` gives an author is what this provider is built on.
#[test]
fn the_one_component_example_uses_the_scaffold_s_helpers() {
    let ours = std::fs::read_to_string(example().join("js/opm.js")).unwrap();
    let scaffold =
        std::fs::read_to_string(repo_root().join("runtime/src/authoring/templates/js/opm.js"))
            .unwrap();
    assert!(
        ours == scaffold,
        "transformers/examples/one-component/js/opm.js differs from the scaffold's; copy it again"
    );
}
