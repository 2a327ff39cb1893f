//! Provider bundles (`providers/README.md`, "Bundles"): pack is deterministic, inspect shows what a
//! bundle holds, signatures interoperate with the real `minisign` both ways, and loading refuses
//! every kind of bad bundle with an error naming the entry — one test per refusal, each building
//! the bad bundle.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use opm_core::bundle::{self, format};
use opm_core::provider::{self, ProviderError};
use opm_tests::{Run, guests, opm, repo_root};
use serde_json::{Value, json};

const DEPLOYMENT: &str = "transformer.opm.dev/workload@v1#DeploymentTransformer";

fn hello() -> String {
    repo_root()
        .join("examples/hello/module.yaml")
        .display()
        .to_string()
}

/// The embedded provider's canonical manifest and components (keyed by entry path).
fn embedded_parts() -> (Value, BTreeMap<String, Vec<u8>>) {
    let bundle =
        bundle::read("embedded", opm_runtime::embedded::bundle()).expect("embedded bundle");
    let manifest = serde_json::from_slice(&bundle.manifest).expect("manifest is JSON");
    let components = bundle
        .components
        .iter()
        .map(|(path, bytes)| (path.clone(), bytes.to_vec()))
        .collect();
    (manifest, components)
}

/// A bundle holding the embedded provider with the Deployment transformer's component replaced
/// by `component` (a file of its own: the provider's one component serves the others too), and
/// the manifest changed by `edit`.
fn bundle_with(component: Option<&[u8]>, edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let (mut manifest, mut components) = embedded_parts();
    if let Some(bytes) = component {
        let path = format!("components/{}.wasm", blake3::hash(bytes).to_hex());
        let entry = manifest["transformers"][DEPLOYMENT]
            .as_object_mut()
            .unwrap();
        entry.remove("digest");
        entry.insert("component".into(), Value::from(path.clone()));
        components.insert(path, bytes.to_vec());
    }
    edit(&mut manifest);
    format::pack(manifest, &components).expect("packs").bytes
}

/// One raw archive entry: path, type, link target, data — written without the `tar` crate's
/// path checks, so tests can build what a hostile bundle would hold.
struct Raw<'a> {
    path: &'a str,
    kind: tar::EntryType,
    link: &'a str,
    data: &'a [u8],
    size: Option<u64>,
}

fn raw(path: &str, data: &[u8]) -> Raw<'static> {
    Raw {
        path: Box::leak(path.to_owned().into_boxed_str()),
        kind: tar::EntryType::Regular,
        link: "",
        data: Box::leak(data.to_vec().into_boxed_slice()),
        size: None,
    }
}

fn archive(entries: &[Raw<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in entries {
        let mut header = tar::Header::new_ustar();
        header.as_old_mut().name[..entry.path.len()].copy_from_slice(entry.path.as_bytes());
        header.as_old_mut().linkname[..entry.link.len()].copy_from_slice(entry.link.as_bytes());
        header.set_entry_type(entry.kind);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_size(entry.size.unwrap_or(entry.data.len() as u64));
        header.set_cksum();
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(entry.data);
        out.resize(out.len().next_multiple_of(512), 0);
    }
    out.resize(out.len() + 1024, 0);
    out
}

/// The entries of a valid bundle, as raw entries.
fn entries_of(bytes: &[u8]) -> Vec<Raw<'static>> {
    let mut archive = tar::Archive::new(bytes);
    archive
        .entries()
        .unwrap()
        .map(|entry| {
            let mut entry = entry.unwrap();
            let path = String::from_utf8(entry.path_bytes().to_vec()).unwrap();
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut data).unwrap();
            raw(&path, &data)
        })
        .collect()
}

fn refusal(bytes: &[u8]) -> String {
    let error = bundle::read("bad.opmb", bytes)
        .map_err(ProviderError::from)
        .and_then(|bundle| provider::from_bundle_checked("bad.opmb".into(), bundle))
        .expect_err("the bundle must be refused");
    error.to_string()
}

fn component_entry_of(bytes: &[u8]) -> String {
    entries_of(bytes)
        .iter()
        .find(|e| e.path.starts_with("components/"))
        .unwrap()
        .path
        .to_owned()
}

// --- pack, inspect, load ---

#[test]
fn the_embedded_provider_is_an_ordinary_bundle_that_pack_reproduces_byte_for_byte() {
    let embedded = opm_runtime::embedded::bundle();
    let dir = tempfile::tempdir().unwrap();
    for entry in entries_of(embedded) {
        let path = if entry.path.starts_with("manifest/") {
            dir.path().join("provider.yaml")
        } else {
            dir.path().join(entry.path)
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, entry.data).unwrap();
    }
    let out = dir.path().join("again.opmb");
    let run = opm([
        "provider",
        "pack",
        &dir.path().display().to_string(),
        "-o",
        &out.display().to_string(),
    ]);
    assert!(run.exited(0), "{}", run.stderr);
    assert_eq!(std::fs::read(&out).unwrap(), embedded);
    let loaded = opm_runtime::embedded::load().unwrap();
    assert!(
        run.stdout
            .contains(&format!("digest {}", loaded.digest.unwrap())),
        "{}",
        run.stdout
    );
}

#[test]
fn packing_twice_gives_identical_bytes_and_prints_the_digest() {
    let source = opm_tests::provider_with(&[]);
    let out = tempfile::tempdir().unwrap();
    let pack = |name: &str| {
        let file = out.path().join(name);
        let run = opm([
            "provider",
            "pack",
            &source.path().display().to_string(),
            "-o",
            &file.display().to_string(),
        ]);
        assert!(run.exited(0), "{}", run.stderr);
        (std::fs::read(file).unwrap(), run.stdout)
    };
    let (first, stdout) = pack("a.opmb");
    let (second, _) = pack("b.opmb");
    assert_eq!(first, second);
    let digest = format!(
        "blake3:{}",
        format::hex_digest(&bundle::read("a", &first).unwrap().manifest)
    );
    let manifest = opm_runtime::embedded::load().unwrap().manifest;
    assert!(
        stdout.contains(&format!(
            "packed kubernetes {} ({} transformers",
            manifest.metadata.version,
            manifest.transformers.len()
        )) && stdout.contains(&format!("digest {digest}")),
        "{stdout}"
    );
}

#[test]
fn pack_turns_a_core_module_into_a_component() {
    let core = std::fs::read(concat!(
        env!("OPM_TEST_CORE_MODULES"),
        "/testing_panic.wasm"
    ))
    .expect("the test guests' core modules are built by tests/build.rs");
    assert!(wasmparser_is_core(&core));
    let source = opm_tests::provider_with(&[(
        "test.opm.dev/hostile@v1#HostileTransformer",
        "requiredResources: [opm.dev/resources/storage@v1#Volumes]\ncomponent: core.wasm\n",
        &core,
    )]);
    let file = source.path().join("out.opmb");
    let run = opm([
        "provider",
        "pack",
        &source.path().display().to_string(),
        "-o",
        &file.display().to_string(),
    ]);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("HostileTransformer: core module turned into a component")
    );
    let loaded = provider::load_bundle_file(&file).expect("the packed bundle loads");
    assert!(!wasmparser_is_core(
        &loaded.components["test.opm.dev/hostile@v1#HostileTransformer"]
    ));
}

fn wasmparser_is_core(bytes: &[u8]) -> bool {
    bytes.get(4..8) == Some(&[1, 0, 0, 0])
}

#[test]
fn mod_build_renders_with_a_bundle_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kubernetes-0.1.0.opmb");
    std::fs::write(&file, opm_runtime::embedded::bundle()).unwrap();
    let run = opm(["mod", "build", &hello(), "-p", &file.display().to_string()]);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(run.stdout.contains("kind: Deployment"));
}

#[test]
fn inspect_shows_metadata_digest_signature_transformers_and_declared_sets() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kubernetes-0.1.0.opmb");
    std::fs::write(&file, opm_runtime::embedded::bundle()).unwrap();
    let embedded = opm_runtime::embedded::load().unwrap();
    let digest = embedded.digest.unwrap();
    let run = opm(["provider", "inspect", &file.display().to_string()]);
    assert!(run.exited(0), "{}", run.stderr);
    for expected in [
        &format!(
            "provider    kubernetes {}\n",
            embedded.manifest.metadata.version
        ),
        &format!("digest      {digest}\n"),
        "signature   unsigned\n",
        "limits      fuel 200000000, memory 64Mi, timeout 2s",
        "KiB  opm:transformer/log@1.2.0",
        "    requires  label core.opm.dev/workload-type=stateless; resource opm.dev/resources/workload@v1#Container\n",
        "declared traits    opm.dev/traits/",
    ] {
        assert!(
            run.stdout.contains(expected),
            "{expected:?} in\n{}",
            run.stdout
        );
    }
    let run = opm([
        "provider",
        "inspect",
        &file.display().to_string(),
        "-o",
        "json",
    ]);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["digest"], digest);
    assert_eq!(report["signature"]["status"], "unsigned");
    let deployment = report["transformers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["fqn"] == DEPLOYMENT)
        .unwrap();
    assert!(deployment["size"].as_u64().unwrap() > 1000);
    assert!(
        deployment["digest"]
            .as_str()
            .unwrap()
            .starts_with("blake3:")
    );
    assert!(
        report["declared"]["resources"]
            .as_array()
            .unwrap()
            .contains(&json!("opm.dev/resources/workload@v1#Container"))
    );
}

// --- signatures, with the real minisign ---

fn minisign(args: &[&str]) -> std::process::Output {
    Command::new("minisign")
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("minisign is installed (run tests/setup.sh)")
}

/// A key pair made by `minisign -G -W` (no password): (secret, public).
fn keypair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let secret = dir.join(format!("{name}.key"));
    let public = dir.join(format!("{name}.pub"));
    let out = minisign(&[
        "-G",
        "-W",
        "-s",
        secret.to_str().unwrap(),
        "-p",
        public.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    (secret, public)
}

fn bundle_file(dir: &Path) -> PathBuf {
    let file = dir.join("kubernetes-0.1.0.opmb");
    std::fs::write(&file, opm_runtime::embedded::bundle()).unwrap();
    file
}

#[test]
fn opm_signs_and_minisign_verifies_and_opm_verifies_too() {
    let dir = tempfile::tempdir().unwrap();
    let (secret, public) = keypair(dir.path(), "opm");
    let file = bundle_file(dir.path());
    let file_arg = file.display().to_string();
    let run = keyed("sign", &file_arg, &secret);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(dir.path().join("kubernetes-0.1.0.opmb.minisig").is_file());

    let out = minisign(&["-V", "-m", &file_arg, "-p", public.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let digest = opm_runtime::embedded::load().unwrap().digest.unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("bundle:{digest}")),
        "{out:?}"
    );

    let run = keyed("verify", &file_arg, &public);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(
        run.stdout.contains(&format!("digest {digest}")),
        "{}",
        run.stdout
    );

    let run = keyed("inspect", &file_arg, &public);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(
        run.stdout.contains("signature   verified, signed by key "),
        "{}",
        run.stdout
    );
}

#[test]
fn minisign_signs_and_opm_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let (secret, public) = keypair(dir.path(), "tool");
    let file = bundle_file(dir.path());
    let file_arg = file.display().to_string();
    let version = opm_runtime::embedded::load()
        .unwrap()
        .manifest
        .metadata
        .version;
    let comment = format!("provider:kubernetes\tversion:{version}");
    minisign_sign(&secret, &file_arg, &comment);
    let run = keyed("verify", &file_arg, &public);
    assert!(run.exited(0), "{}", run.stderr);
    let run = opm(["provider", "inspect", &file_arg]);
    assert!(
        run.stdout.contains("signature   signed by key ") && run.stdout.contains("not verified"),
        "{}",
        run.stdout
    );
}

#[test]
fn verify_fails_with_exit_1_for_a_modified_bundle_another_key_or_no_signature() {
    let dir = tempfile::tempdir().unwrap();
    let (secret, public) = keypair(dir.path(), "one");
    let (_, other) = keypair(dir.path(), "two");
    let file = bundle_file(dir.path());
    let file_arg = file.display().to_string();
    let run = keyed("verify", &file_arg, &public);
    assert!(run.exited(1), "{}", run.stderr);
    assert!(run.stderr.contains("is not signed"), "{}", run.stderr);

    assert!(keyed("sign", &file_arg, &secret).exited(0));
    let run = keyed("verify", &file_arg, &other);
    assert!(run.exited(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("which is not among the trusted keys"),
        "{}",
        run.stderr
    );

    // Re-pack with one more label: a valid bundle, but not the bytes that were signed.
    let changed = bundle_with(None, |m| {
        m["metadata"]["labels"]["extra"] = json!("x");
    });
    std::fs::write(&file, changed).unwrap();
    let run = keyed("verify", &file_arg, &public);
    assert!(run.exited(1), "{}", run.stderr);
    assert!(run.stderr.contains("does not verify"), "{}", run.stderr);
    let run = keyed("inspect", &file_arg, &public);
    assert!(
        run.exited(1) && run.stdout.contains("signature   INVALID: "),
        "{}",
        run.stdout
    );
}

/// Runs `opm provider SUBCOMMAND FILE --key KEY`.
fn keyed(subcommand: &str, file: &str, key: &Path) -> Run {
    opm(["provider", subcommand, file, "--key", key.to_str().unwrap()])
}

/// Signs `file` with minisign's own tool and the trusted comment `comment`.
fn minisign_sign(secret: &Path, file: &str, comment: &str) {
    let out = minisign(&[
        "-S",
        "-W",
        "-s",
        secret.to_str().unwrap(),
        "-m",
        file,
        "-t",
        comment,
    ]);
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn a_signature_for_another_provider_or_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (secret, public) = keypair(dir.path(), "team");
    let file = bundle_file(dir.path());
    let file_arg = file.display().to_string();
    let verify = || keyed("verify", &file_arg, &public);
    let version = opm_runtime::embedded::load()
        .unwrap()
        .manifest
        .metadata
        .version;

    // The same key vouching for another version (a release the bundle is passed off as).
    minisign_sign(&secret, &file_arg, "provider:kubernetes\tversion:9.9.9");
    let run = verify();
    assert!(run.exited(1), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "holds provider kubernetes {version}, but its signature by key"
        )) && run.stderr.contains("is for kubernetes 9.9.9"),
        "{}",
        run.stderr
    );
    // ... for another provider.
    minisign_sign(
        &secret,
        &file_arg,
        &format!("provider:other\tversion:{version}"),
    );
    let run = verify();
    assert!(run.exited(1), "{}", run.stderr);
    assert!(run.stderr.contains("is for other "), "{}", run.stderr);
    let run = keyed("inspect", &file_arg, &public);
    assert!(
        run.exited(1) && run.stdout.contains("signature   INVALID: "),
        "{}",
        run.stdout
    );

    // A signature that names no provider at all.
    minisign_sign(&secret, &file_arg, "signed by the release team");
    let run = verify();
    assert!(run.exited(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("does not name the provider and version it vouches for"),
        "{}",
        run.stderr
    );

    // What opm signs names both, and minisign shows them.
    assert!(keyed("sign", &file_arg, &secret).exited(0));
    assert!(verify().exited(0));
    let out = minisign(&["-V", "-p", public.to_str().unwrap(), "-m", &file_arg]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && shown.contains(&format!("provider:kubernetes\tversion:{version}")),
        "{shown}"
    );
}

// --- loading refuses, one test per kind of bad bundle ---

#[test]
fn a_flipped_byte_in_a_component_is_refused_naming_the_entry() {
    let mut entries = entries_of(opm_runtime::embedded::bundle());
    let component = entries
        .iter_mut()
        .find(|e| e.path.starts_with("components/"))
        .unwrap();
    let mut data = component.data.to_vec();
    let middle = data.len() / 2;
    data[middle] ^= 1;
    component.data = Box::leak(data.into_boxed_slice());
    let path = component.path;
    let error = refusal(&archive(&entries));
    assert!(
        error.contains(&format!("entry {path:?} has digest blake3:"))
            && error.contains("the bundle was modified or corrupted"),
        "{error}"
    );
}

#[test]
fn a_flipped_byte_in_the_manifest_is_refused() {
    let mut entries = entries_of(opm_runtime::embedded::bundle());
    let manifest = entries
        .iter_mut()
        .find(|e| e.path.starts_with("manifest/"))
        .unwrap();
    let text = String::from_utf8(manifest.data.to_vec()).unwrap();
    let tampered = text.replacen("200000000", "900000000", 1);
    assert_ne!(text, tampered);
    manifest.data = Box::leak(tampered.into_bytes().into_boxed_slice());
    let path = manifest.path;
    let error = refusal(&archive(&entries));
    assert!(
        error.contains(&format!("entry {path:?} has digest blake3:")),
        "{error}"
    );
}

#[test]
fn a_truncated_bundle_is_refused() {
    let bytes = opm_runtime::embedded::bundle();
    for cut in [bytes.len() / 2, bytes.len() - 512, 100] {
        let error = refusal(&bytes[..cut]);
        assert!(
            error.contains("is truncated or not a bundle"),
            "{cut}: {error}"
        );
    }
}

/// The audit's finding: bytes after the end-of-archive marker were accepted, so two different
/// bundle files had one bundle digest. A bundle ends with the two zero blocks of the marker.
#[test]
fn bytes_after_the_end_of_archive_marker_are_refused() {
    let packed = bundle_with(None, |_| {});
    assert!(
        bundle::read("bad.opmb", &packed).is_ok(),
        "the untouched bundle loads"
    );
    let zero_block = vec![0; 512];
    let mut text_then_marker = b"hidden".to_vec();
    text_then_marker.resize(512 + 1024, 0);
    let mut gnu_record = vec![0; packed.len().next_multiple_of(10240) - packed.len()];
    if gnu_record.is_empty() {
        gnu_record = vec![0; 10240];
    }
    for appended in [&zero_block, &text_then_marker, &gnu_record] {
        let bytes = [packed.as_slice(), appended].concat();
        let error = refusal(&bytes);
        assert!(
            error.contains(&format!(
                "bundle bad.opmb has {} bytes after the end-of-archive marker",
                appended.len()
            )),
            "{} bytes appended: {error}",
            appended.len()
        );
    }
}

#[test]
fn an_entry_path_with_dot_dot_is_refused() {
    let mut entries = entries_of(opm_runtime::embedded::bundle());
    entries.push(raw("components/../../etc/cron.d/x", b"boom"));
    let error = refusal(&archive(&entries));
    assert_eq!(
        error,
        "bundle bad.opmb: entry \"components/../../etc/cron.d/x\" has a path that leaves the bundle"
    );
}

#[test]
fn an_absolute_entry_path_is_refused() {
    let mut entries = entries_of(opm_runtime::embedded::bundle());
    entries.insert(0, raw("/etc/passwd", b"root"));
    let error = refusal(&archive(&entries));
    assert_eq!(
        error,
        "bundle bad.opmb: entry \"/etc/passwd\" has a path that leaves the bundle"
    );
}

#[test]
fn a_symlink_entry_is_refused() {
    let mut entries = entries_of(opm_runtime::embedded::bundle());
    let component = entries
        .iter_mut()
        .find(|e| e.path.starts_with("components/"))
        .unwrap();
    component.kind = tar::EntryType::Symlink;
    component.link = "/etc/passwd";
    component.data = b"";
    let path = component.path;
    let error = refusal(&archive(&entries));
    assert_eq!(
        error,
        format!(
            "bundle bad.opmb: entry {path:?} is a link (to \"/etc/passwd\"); a bundle holds only regular files"
        )
    );
}

#[test]
fn duplicate_entries_are_refused() {
    let mut entries = entries_of(opm_runtime::embedded::bundle());
    let component = entries
        .iter()
        .position(|e| e.path.starts_with("components/"))
        .unwrap();
    let copy = raw(entries[component].path, entries[component].data);
    let path = copy.path;
    entries.push(copy);
    let error = refusal(&archive(&entries));
    assert_eq!(
        error,
        format!("bundle bad.opmb: entry {path:?} appears more than once")
    );
}

#[test]
fn an_entry_over_the_size_limit_is_refused_before_it_is_read() {
    let mut entries = entries_of(opm_runtime::embedded::bundle());
    let path = component_entry_of(opm_runtime::embedded::bundle());
    let component = entries.iter_mut().find(|e| e.path == path).unwrap();
    // The header claims 100 MiB; the bytes are not there, and are never read.
    component.size = Some(100 << 20);
    component.data = b"";
    let error = refusal(&archive(&entries));
    assert_eq!(
        error,
        format!(
            "bundle bad.opmb: entry {path:?} is 104857600 bytes, over the limit of {} bytes",
            format::MAX_COMPONENT_BYTES
        )
    );
}

#[test]
fn a_bundle_file_over_the_total_limit_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("huge.opmb");
    // Sparse: no disk is used, and opm must not read it.
    std::fs::File::create(&file)
        .unwrap()
        .set_len(format::MAX_BUNDLE_BYTES + 1)
        .unwrap();
    let error = provider::load_bundle_file(&file).unwrap_err().to_string();
    assert!(
        error.ends_with(&format!(
            "huge.opmb is {} bytes, over the limit of {} bytes for a bundle",
            format::MAX_BUNDLE_BYTES + 1,
            format::MAX_BUNDLE_BYTES
        )),
        "{error}"
    );
}

#[test]
fn a_precompiled_artifact_instead_of_a_component_is_refused() {
    let engine = wasmtime::Engine::default();
    let precompiled = engine
        .precompile_component(guests::TESTING_PANIC)
        .expect("wasmtime precompiles the guest");
    let error = refusal(&bundle_with(Some(&precompiled), |_| {}));
    assert!(
        error.contains(&format!("transformer {DEPLOYMENT}: component components/"))
            && error.contains("it is a precompiled artifact (an ELF object")
            && error.contains("opm never loads compiled code from a bundle"),
        "{error}"
    );
}

#[test]
fn a_core_module_instead_of_a_component_is_refused() {
    let core = wat::parse_str("(module (func (export \"transform\")))").unwrap();
    let error = refusal(&bundle_with(Some(&core), |_| {}));
    assert!(
        error.contains(&format!("transformer {DEPLOYMENT}: component components/"))
            && error.contains("it is a core WebAssembly module, not a component"),
        "{error}"
    );
}

/// A component exporting `export` as an instance whose `transform` takes one string and
/// returns one, importing `imports` (empty instances).
fn component(export: &str, imports: &[&str]) -> Vec<u8> {
    let imports: String = imports
        .iter()
        .map(|name| format!("(import \"{name}\" (instance))\n"))
        .collect();
    wat::parse_str(format!(
        r#"(component
            {imports}
            (core module $m
                (memory (export "memory") 1)
                (func (export "f") (param i32 i32) (result i32) unreachable)
                (func (export "realloc") (param i32 i32 i32 i32) (result i32) unreachable))
            (core instance $i (instantiate $m))
            (func $f (param "component" string) (result string)
                (canon lift (core func $i "f") (memory (core memory $i "memory")) (realloc (core func $i "realloc"))))
            (instance $inst (export "transform" (func $f)))
            (export "{export}" (instance $inst)))"#
    ))
    .unwrap()
}

#[test]
fn a_component_exporting_another_version_of_the_interface_is_refused() {
    let wrong = component("opm:transformer/transformer@2.0.0", &[]);
    let error = refusal(&bundle_with(Some(&wrong), |_| {}));
    assert!(
        error.ends_with(
            "it exports opm:transformer/transformer@2.0.0, a version of the contract this opm does not serve (it serves 1.0.0, 1.1.0 and 1.2.0)"
        ),
        "{error}"
    );
    // A newer minor version is one a newer opm may serve.
    let newer = component("opm:transformer/transformer@1.3.0", &[]);
    let error = refusal(&bundle_with(Some(&newer), |_| {}));
    assert!(
        error.ends_with(
            "it exports opm:transformer/transformer@1.3.0, a version of the contract this opm does not serve (it serves 1.0.0, 1.1.0 and 1.2.0; a newer opm may)"
        ),
        "{error}"
    );
}

#[test]
fn a_component_exporting_another_interface_is_refused() {
    let wrong = component("acme:other/thing@1.0.0", &[]);
    let error = refusal(&bundle_with(Some(&wrong), |_| {}));
    assert!(
        error.ends_with(
            "it does not export opm:transformer/transformer (at a version this opm serves, 1.0.0, 1.1.0 and 1.2.0; it exports: acme:other/thing@1.0.0)"
        ),
        "{error}"
    );
}

#[test]
fn a_component_whose_transform_has_the_wrong_signature_is_refused() {
    let wrong = component("opm:transformer/transformer@1.0.0", &[]);
    let error = refusal(&bundle_with(Some(&wrong), |_| {}));
    assert!(
        error.contains(
            "its opm:transformer/transformer@1.0.0 export has transform: func(component: string) -> string, but version 1.0.0 of the contract says transform: func(component: string, context: record {"
        ),
        "{error}"
    );
}

#[test]
fn a_component_with_disallowed_imports_is_refused_listing_them() {
    let wrong = component(
        "opm:transformer/transformer@1.0.0",
        &[
            "opm:transformer/log@1.0.0",
            "wasi:http/outgoing-handler@0.2.0",
            "wasi:sockets/tcp@0.2.0",
        ],
    );
    let error = refusal(&bundle_with(Some(&wrong), |_| {}));
    assert!(
        error.contains(&format!("transformer {DEPLOYMENT}: component components/"))
            && error.ends_with(&format!(
                "it imports wasi:http/outgoing-handler@0.2.0, which the sandbox does not offer (allowed: {})",
                opm_core::contract::allowed_imports_summary()
            ))
            && error.contains("WASI 0.2.0–0.2.12 interfaces of wasi:cli"),
        "{error}"
    );
}

#[test]
fn an_unknown_field_in_the_manifest_is_refused_with_its_location() {
    let bytes = bundle_with(None, |m| {
        m["metadata"]["bogus"] = json!(1);
    });
    let error = refusal(&bytes);
    assert!(
        error.starts_with("invalid provider manifest bad.opmb: unknown field `bogus`")
            && error.contains(" at line "),
        "{error}"
    );
}

/// The name and version become file names (`opm provider pull` writes `NAME-VERSION.opmb`,
/// `init` installs under `.opm/providers/NAME/VERSION/`), so a manifest whose name is not a
/// DNS label, or whose version is not semver, is refused as it is read.
#[test]
fn a_provider_name_or_version_that_could_leave_a_directory_is_refused_at_read() {
    for (field, value) in [
        ("name", "../../ESCAPED"),
        ("name", "a/b"),
        ("name", "Kubernetes"),
        ("version", "1.0.0/../../x"),
    ] {
        let bytes = bundle_with(None, |m| {
            m["metadata"][field] = json!(value);
        });
        let error = refusal(&bytes);
        assert!(
            error.starts_with(&format!(
                "invalid provider manifest bad.opmb: metadata.{field} {value:?} is not"
            )),
            "{error}"
        );
    }
    // The CLI says so too.
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("evil.opmb");
    std::fs::write(
        &bundle,
        bundle_with(None, |m| m["metadata"]["name"] = json!("../../ESCAPED")),
    )
    .unwrap();
    let run = opm(["provider", "inspect", bundle.to_str().unwrap()]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("metadata.name \"../../ESCAPED\" is not a provider name"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_manifest_not_in_canonical_form_is_refused() {
    let mut entries = entries_of(opm_runtime::embedded::bundle());
    let manifest = entries
        .iter_mut()
        .find(|e| e.path.starts_with("manifest/"))
        .unwrap();
    let value: Value = serde_json::from_slice(manifest.data).unwrap();
    let compact = serde_json::to_vec(&value).unwrap();
    manifest.path =
        Box::leak(format::manifest_entry(&format::hex_digest(&compact)).into_boxed_str());
    manifest.data = Box::leak(compact.into_boxed_slice());
    let error = refusal(&archive(&entries));
    assert!(
        error.contains("the manifest is not in canonical form"),
        "{error}"
    );
}

#[test]
fn an_entry_no_transformer_names_is_refused() {
    let mut entries = entries_of(opm_runtime::embedded::bundle());
    let stray = b"\0asm\x0d\0\x01\0";
    entries.push(raw(
        &format::component_entry(&format::hex_digest(stray)),
        stray,
    ));
    let error = refusal(&archive(&entries));
    assert!(
        error.contains("is not the component of any transformer"),
        "{error}"
    );
}

#[test]
fn a_provider_needing_a_newer_opm_is_refused_saying_which_version() {
    let bytes = bundle_with(None, |m| {
        m["metadata"]["minVersion"] = json!("99.0.0");
    });
    assert_eq!(
        refusal(&bytes),
        format!(
            "provider bad.opmb needs opm 99.0.0 or newer (minVersion); this is opm {}",
            provider::OPM_VERSION
        )
    );
}

#[test]
fn a_transformer_key_that_is_not_an_fqn_is_refused() {
    let bytes = bundle_with(None, |m| {
        let transformers = m["transformers"].as_object_mut().unwrap();
        let deployment = transformers.remove(DEPLOYMENT).unwrap();
        transformers.insert("DeploymentTransformer".into(), deployment);
    });
    let error = refusal(&bytes);
    assert!(
        error.contains("transformers: \"DeploymentTransformer\" is not an FQN"),
        "{error}"
    );
}

#[test]
fn mod_build_with_a_tampered_bundle_runs_no_transform_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kubernetes-0.1.0.opmb");
    let mut bytes = opm_runtime::embedded::bundle().to_vec();
    let mut entries = entries_of(&bytes);
    let component = entries
        .iter_mut()
        .find(|e| e.path.starts_with("components/"))
        .unwrap();
    let mut data = component.data.to_vec();
    let last = data.len() - 1;
    data[last] ^= 0x80;
    component.data = Box::leak(data.into_boxed_slice());
    bytes = archive(&entries);
    std::fs::write(&file, &bytes).unwrap();
    let run = opm([
        "mod",
        "build",
        &hello(),
        "-p",
        &file.display().to_string(),
        "--verbose",
    ]);
    assert!(run.exited(2), "{}", run.stderr);
    assert_eq!(run.stdout, "", "nothing is rendered");
    assert!(
        run.stderr.contains("the bundle was modified or corrupted"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("fuel"),
        "no transform ran: {}",
        run.stderr
    );
}

/// `opm provider export kubernetes` writes the embedded provider as a bundle that is the same
/// provider in every way: its bytes and digest, a signature over it that verifies, `inspect`
/// with its definitions and their schemas, and a render byte-identical to the embedded one's.
#[test]
fn the_exported_embedded_provider_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("registry/kubernetes/0.2.0/kubernetes.opmb");
    let file_arg = file.display().to_string();
    let run = opm(["provider", "export", "kubernetes", "-o", &file_arg]);
    assert!(run.exited(0), "{}", run.stderr);
    let digest = opm_runtime::embedded::load().unwrap().digest.unwrap();
    assert!(
        run.stdout.contains(&format!(
            "exported kubernetes 0.2.0 ({digest}) from embedded:kubernetes"
        )),
        "{}",
        run.stdout
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        opm_runtime::embedded::bundle()
    );

    let (secret, public) = keypair(dir.path(), "platform");
    assert!(keyed("sign", &file_arg, &secret).exited(0));
    let run = keyed("verify", &file_arg, &public);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(
        run.stdout.contains(&format!("digest {digest}")),
        "{}",
        run.stdout
    );

    let run = opm(["provider", "inspect", &file_arg]);
    assert!(run.exited(0), "{}", run.stderr);
    for expected in [
        "definitions (schemas whole with -o json):\n",
        "  resource opm.dev/resources/workload@v1#Container  (field container)\n",
        "      image ",
        "string, required",
        "  trait opm.dev/traits/network@v1#Expose  (field expose)\n",
    ] {
        assert!(
            run.stdout.contains(expected),
            "{expected:?}:\n{}",
            run.stdout
        );
    }
    let run = opm(["provider", "inspect", &file_arg, "-o", "json"]);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        report["definitions"]["opm.dev/resources/workload@v1#Container"]["schema"]["required"],
        json!(["image"]),
        "{report:#}"
    );

    let hello = opm_tests::hello();
    let embedded = opm(["mod", "build", &hello]);
    let exported = opm(["mod", "build", &hello, "-p", &file_arg]);
    assert!(
        embedded.exited(0) && exported.exited(0),
        "{}",
        exported.stderr
    );
    assert_eq!(exported.stdout, embedded.stdout);

    // A source directory is packed, not exported.
    let run = opm(["provider", "export", &dir.path().display().to_string()]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(run.stderr.contains("opm provider pack"), "{}", run.stderr);
}

/// An embedded provider's bundle is part of the binary, so loading it checks nothing again and
/// copies nothing: what that reads is exactly what the checked read reads, its components are
/// borrowed from the binary, and each embedded manifest validates.
#[test]
fn an_embedded_bundle_reads_as_the_checked_read_reads_it() {
    for name in opm_runtime::embedded::PROVIDERS.names() {
        let bytes = opm_runtime::embedded::PROVIDERS.bundle_of(name).unwrap();
        let fast = bundle::read_embedded(name, bytes).unwrap();
        let checked = bundle::read(name, bytes).unwrap();
        assert_eq!(fast.digest, checked.digest, "{name}");
        assert_eq!(fast.manifest, checked.manifest, "{name}");
        let entries = |b: &bundle::Bundle| -> Vec<(String, Vec<u8>)> {
            b.components
                .iter()
                .map(|(path, bytes)| (path.clone(), bytes.to_vec()))
                .collect()
        };
        assert_eq!(entries(&fast), entries(&checked), "{name}");
        assert!(
            fast.components
                .values()
                .all(|blob| matches!(blob, bundle::Blob::Static(_))),
            "{name}: the components are borrowed"
        );
        let loaded = opm_runtime::embedded::PROVIDERS.load_named(name).unwrap();
        provider::validate(name, &loaded.manifest).unwrap();
        assert_eq!(loaded.digest, Some(checked.digest));
    }
}
