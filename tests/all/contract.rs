//! The versions of the contract, served side by side (`docs/host-guest-contract.md#versions-of-the-contract`):
//! components built against the frozen 1.0.0 (`wit/1.0.0`) and 1.1.0 (`wit/1.1.0`) render
//! beside 1.2.0 ones, byte for byte as they did, and a transformer reads the fields 1.1.0 added.

use opm_tests::{
    SHOWS_CONTEXT, SHOWS_CONTEXT_ENTRY, guests, hello, opm, provider_with, repo_root, write_file,
};

/// `opm mod build MODULE` with the embedded provider, and with the provider directory `dir`.
fn both(module: &str, dir: &std::path::Path, extra: &[&str]) -> (String, String) {
    let mut embedded = vec!["mod", "build", module];
    embedded.extend_from_slice(extra);
    let embedded = opm(embedded);
    assert!(embedded.exited(0), "{}", embedded.stderr);
    let dir = dir.display().to_string();
    let mut with = vec!["mod", "build", module, "-p", &dir];
    with.extend_from_slice(extra);
    let with = opm(with);
    assert!(with.exited(0), "{}", with.stderr);
    (embedded.stdout, with.stdout)
}

/// The embedded provider as a source directory in which the component of each transformer of
/// `replaced` (the renderer's for `None`) is the bytes given instead.
fn provider_replacing(replaced: &[(Option<&str>, &[u8])]) -> tempfile::TempDir {
    provider_replacing_with(&[], replaced)
}

/// [`provider_replacing`] of the embedded provider with the transformers `extra` too (as
/// [`provider_with`] adds them).
fn provider_replacing_with(
    extra: &[(&str, &str, &[u8])],
    replaced: &[(Option<&str>, &[u8])],
) -> tempfile::TempDir {
    let dir = provider_with(extra);
    let manifest_path = dir.path().join("provider.yaml");
    let mut manifest: opm_core::provider::ProviderManifest =
        serde_saphyr::from_str(&std::fs::read_to_string(&manifest_path).unwrap())
            .expect("the manifest parses");
    for (index, (fqn, bytes)) in replaced.iter().enumerate() {
        // A file of its own: the provider's one component serves its other transformers too.
        let component = match fqn {
            Some(fqn) => &mut manifest.transformers.get_mut(*fqn).unwrap().component,
            None => &mut manifest.renderer.as_mut().unwrap().component,
        };
        let before = std::fs::read(dir.path().join(&*component))
            .expect("the embedded provider has the component");
        assert_ne!(
            before, *bytes,
            "{component} is built against another contract"
        );
        *component = format!("replaced-{index}.wasm");
        std::fs::write(dir.path().join(&*component), bytes).unwrap();
    }
    let text = serde_saphyr::to_string(&manifest).expect("manifest serializes");
    std::fs::write(&manifest_path, text).unwrap();
    dir
}

/// The contract version `opm provider inspect` shows for the transformer `fqn` of `dir`.
fn inspected_contract(dir: &std::path::Path, fqn: &str) -> String {
    let run = opm(["provider", "inspect", &dir.display().to_string()]);
    assert!(run.exited(0), "{}", run.stderr);
    let block = run
        .stdout
        .split(&format!("\n{fqn} "))
        .nth(1)
        .unwrap_or_else(|| panic!("{fqn} in\n{}", run.stdout));
    block
        .lines()
        .find_map(|line| line.trim().strip_prefix("contract  "))
        .unwrap_or_else(|| panic!("a contract line for {fqn} in\n{}", run.stdout))
        .to_owned()
}

const DEPLOYMENT: &str = "transformer.opm.dev/workload@v1#DeploymentTransformer";

/// The Deployment transformer built against 1.0.0 renders, among the provider's 1.2.0
/// transformers, exactly what the embedded 1.2.0 build renders: of every example that has
/// Deployments, with and without a second instance.
#[test]
pub(crate) fn contract_1_0_kubernetes_deployment() {
    deployment_renders_as_embedded(guests::CONTRACT_1_0_KUBERNETES_DEPLOYMENT, "1.0.0");
}

/// So does the Deployment transformer built against 1.1.0: what every JavaScript, Python and
/// Rust transformer built before 1.2.0 is.
#[test]
pub(crate) fn contract_1_1_kubernetes_deployment() {
    deployment_renders_as_embedded(guests::CONTRACT_1_1_KUBERNETES_DEPLOYMENT, "1.1.0");
}

/// The examples that have Deployments render with the Deployment transformer `component`,
/// built for `version`, exactly as with the embedded one, with and without a second instance.
fn deployment_renders_as_embedded(component: &[u8], version: &str) {
    let dir = provider_replacing(&[(Some(DEPLOYMENT), component)]);
    assert_eq!(inspected_contract(dir.path(), DEPLOYMENT), version);
    assert_eq!(
        inspected_contract(
            dir.path(),
            "transformer.opm.dev/workload@v1#StatefulSetTransformer"
        ),
        "1.2.0"
    );
    let mut rendered = 0;
    for example in [
        "hello",
        "shop",
        "grafana",
        "mattermost",
        "nextcloud",
        "gitea",
    ] {
        let module = repo_root().join(format!("examples/{example}/module.yaml"));
        let module = module.display().to_string();
        for extra in [&[][..], &["--instance", "eu"]] {
            let (embedded, with) = both(&module, dir.path(), extra);
            assert!(
                with == embedded,
                "examples/{example} {extra:?} renders otherwise with a {version} Deployment transformer"
            );
            rendered += with.matches("kind: Deployment\n").count();
        }
    }
    assert!(
        rendered >= 10,
        "the examples render Deployments: {rendered}"
    );
}

/// The shop example rendered with the provider `dir`, whose renderer is built for `version`,
/// is what the embedded provider renders, in each format and for a second instance; returns
/// the module's path.
fn renders_shop_as_embedded(dir: &std::path::Path, version: &str) -> String {
    let run = opm(["provider", "inspect", &dir.display().to_string()]);
    assert!(
        run.stdout.contains(&format!(", contract {version})\n")),
        "the renderer's contract in\n{}",
        run.stdout
    );
    let module = repo_root().join("examples/shop/module.yaml");
    let module = module.display().to_string();
    for extra in [&[][..], &["-o", "json"], &["--instance", "eu"]] {
        let (embedded, with) = both(&module, dir, extra);
        assert!(
            with == embedded,
            "{extra:?} renders otherwise with a {version} renderer"
        );
    }
    module
}

/// The renderer built against 1.0.0 (and the Deployment transformer with it) writes the same
/// stream as the embedded 1.2.0 renderer, in each format it writes.
#[test]
pub(crate) fn contract_1_0_kubernetes_renderer() {
    let dir = provider_replacing(&[
        (None, guests::CONTRACT_1_0_KUBERNETES_RENDERER),
        (Some(DEPLOYMENT), guests::CONTRACT_1_0_KUBERNETES_DEPLOYMENT),
    ]);
    renders_shop_as_embedded(dir.path(), "1.0.0");
}

/// The renderer built against 1.1.0, whose files have no mode, writes the same stream as the
/// embedded 1.2.0 renderer, in each format, and the same `--out-dir` (its files regular).
#[test]
pub(crate) fn contract_1_1_kubernetes_renderer() {
    let dir = provider_replacing(&[(None, guests::CONTRACT_1_1_KUBERNETES_RENDERER)]);
    let module = renders_shop_as_embedded(dir.path(), "1.1.0");
    let out = tempfile::tempdir().unwrap();
    let written = out.path().join("split");
    let run = opm([
        "mod",
        "build",
        &module,
        "-p",
        &dir.path().display().to_string(),
        "--split",
        "--out-dir",
        written.to_str().unwrap(),
    ]);
    assert!(run.exited(0), "{}", run.stderr);
    use std::os::unix::fs::MetadataExt as _;
    for name in opm_tests::file_names(&written) {
        let mode = std::fs::metadata(written.join(&name)).unwrap().mode();
        assert_eq!(mode & 0o133, 0, "{name} is {mode:o}");
    }
}

/// A 1.2.0 transformer reads the fields 1.1.0 added, in a render that also calls the 1.0.0
/// Deployment transformer: the module's name beside the instance's, the platform, its
/// provider's version and its own FQN.
#[test]
pub(crate) fn testing_context() {
    let manifest = opm_runtime::embedded::load().unwrap().manifest;
    let dir = provider_replacing_with(
        &[(SHOWS_CONTEXT, SHOWS_CONTEXT_ENTRY, guests::TESTING_CONTEXT)],
        &[(Some(DEPLOYMENT), guests::CONTRACT_1_0_KUBERNETES_DEPLOYMENT)],
    );
    assert_eq!(inspected_contract(dir.path(), SHOWS_CONTEXT), "1.2.0");
    let module = write_file(
        dir.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1\nkind: Module\n\
         metadata: {name: shop, version: 1.2.0, namespace: shops}\n\
         components:\n\
         \x20 shown:\n    metadata: {labels: {core.opm.dev/workload-type: context}}\n\
         \x20   resources:\n      Container: {image: busybox:1.36}\n\
         \x20 api:\n    metadata: {labels: {core.opm.dev/workload-type: stateless}}\n\
         \x20   resources:\n      Container: {image: busybox:1.36}\n",
    );
    let provider = dir.path().display().to_string();
    let run = opm([
        "mod",
        "build",
        &module,
        "-p",
        &provider,
        "--instance",
        "shop-eu",
        "-o",
        "json",
    ]);
    assert!(run.exited(0), "{}", run.stderr);
    let list: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let items = list["items"].as_array().expect("a v1 List");
    let kinds: Vec<&str> = items.iter().filter_map(|i| i["kind"].as_str()).collect();
    assert!(kinds.contains(&"Deployment"), "{kinds:?}");
    let shown = items
        .iter()
        .find(|item| item["kind"] == "ConfigMap")
        .expect("the context's ConfigMap");
    let version = &manifest.metadata.version;
    assert_eq!(
        shown["data"],
        serde_json::json!({
            "name": "shop-eu",
            "namespace": "shops",
            "version": "1.2.0",
            "provider": "kubernetes",
            "timestamp": "1970-01-01T00:00:00Z",
            "strict": "false",
            "module": "shop",
            "platform": "kubernetes",
            "providerVersion": version,
            "transformer": SHOWS_CONTEXT,
        })
    );
    assert_eq!(shown["metadata"]["name"], "shop-eu-shown");
    // Not a case of `hello()`'s: the example renders as always with this provider too.
    let (embedded, with) = both(&hello(), dir.path(), &[]);
    assert_eq!(embedded, with);
}

/// The frozen WITs are frozen: `wit/1.0.0/transformer.wit` is byte for byte what 1.0.0 was
/// released as, and `wit/1.1.0/transformer.wit` what 1.1.0 was (c30f74e) less the paragraph
/// that called it the newest version, so a provider built against either then links now.
#[test]
fn the_frozen_contracts_are_unchanged() {
    for (version, digest) in FROZEN {
        let path = format!("wit/{version}/transformer.wit");
        let frozen = std::fs::read(repo_root().join(&path)).unwrap();
        assert_eq!(
            blake3::hash(&frozen).to_hex().as_str(),
            digest,
            "{path} changed: a released version of the contract never does; add to the newest \
             version (wit/transformer.wit) instead"
        );
    }
}

/// Each frozen version and the BLAKE3 of its `wit/VERSION/transformer.wit`.
const FROZEN: [(&str, &str); 2] = [
    (
        "1.0.0",
        "4108d698c9017f332abdf2b3cf1f000aeb87241f0daa49af3ba2a213c1b5ec0c",
    ),
    (
        "1.1.0",
        "2ef1ef399edd04ec7d8a5c947e0f7987293311bb7f7203eb468123bfd39671c0",
    ),
];
