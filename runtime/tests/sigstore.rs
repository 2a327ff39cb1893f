//! Sigstore signatures (SECURITY.md, "Sigstore signatures"): bundles opm signs checked by an
//! independent implementation (sigstore-js, `tests/tools/sigstore-js`) and the reverse; real
//! public-good keyless bundles with their trusted root verified with no network at all (`unshare
//! -n`), and each of Sigstore's negative bundles refused with its own reason; cosign's encrypted
//! keys read; and, against a real registry (Debian's `docker-registry`, which has no referrers
//! API), providers and renders pushed with `--sign`, their referrers kept in the tag schema,
//! `opm provider init` trusting a key, refusing another's signature and a missing one, a cosign
//! v2 `.sig` tag built here from the simple-signing spec, and the signed provenance of a render
//! against `sha256sum` and an edited file.
//!
//! The Sigstore test data (bundles, trusted roots, keys) comes from the crates.io packages
//! `tests/setup.sh` extracts into `$cache/sigstore`, pinned by digest.

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

/// Where tests/setup.sh put Sigstore's test data.
fn data() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"));
    let dir = cache.join("opm-ci/sigstore");
    assert!(
        dir.join("trusted_root.json").is_file(),
        "{} has no Sigstore test data: run tests/setup.sh",
        dir.display()
    );
    dir
}

fn bundles() -> PathBuf {
    data().join("sigstore-verify-0.15.1/test_data/bundles")
}

fn opm(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_opm"))
        .args(args)
        .current_dir(dir)
        .env_remove("OPM_REGISTRY")
        .env_remove("COSIGN_PASSWORD")
        .envs(vars.iter().copied())
        .output()
        .expect("opm runs")
}

fn run(program: &str, args: &[&str], dir: &Path) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program} runs (tests/setup.sh installs it): {e}"))
}

fn ok(program: &str, args: &[&str], dir: &Path) -> String {
    let output = run(program, args, dir);
    assert!(
        output.status.success(),
        "{program} {args:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// A fresh ECDSA P-256 key pair made by openssl: (PKCS#8 private key, public key).
fn p256(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let private = dir.join(format!("{name}.pem"));
    let public = dir.join(format!("{name}.pub"));
    ok(
        "openssl",
        &[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            private.to_str().unwrap(),
        ],
        dir,
    );
    ok(
        "openssl",
        &[
            "pkey",
            "-in",
            private.to_str().unwrap(),
            "-pubout",
            "-out",
            public.to_str().unwrap(),
        ],
        dir,
    );
    (private, public)
}

fn sigstore_js(script: &str, args: &[&str]) -> Output {
    let script = repo().join("tests/tools/sigstore-js").join(script);
    let mut all = vec![script.to_str().unwrap()];
    all.extend(args);
    run("node", &all, &repo())
}

/// Flips a bit of the byte in the middle of the file `path`.
fn flip_a_byte(path: &Path) {
    let mut bytes = std::fs::read(path).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(path, bytes).expect("write");
}

#[test]
fn a_bundle_opm_signs_verifies_in_sigstore_js_and_fails_there_with_one_flipped_byte() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let (private, public) = p256(dir, "release");
    let artifact = dir.join("provider.opmb");
    std::fs::write(&artifact, b"the bytes of a provider bundle\n").unwrap();
    let (stdout, _) = exited(
        &opm(
            dir,
            &["sign-blob", "provider.opmb", "--key", "release.pem"],
            &[],
        ),
        0,
    );
    assert!(stdout.contains("provider.opmb.sigstore.json"), "{stdout}");
    let bundle = dir.join("provider.opmb.sigstore.json");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&bundle).unwrap()).unwrap();
    assert_eq!(
        json["mediaType"],
        "application/vnd.dev.sigstore.bundle.v0.3+json"
    );
    assert!(json["verificationMaterial"]["publicKey"]["hint"].is_string());
    let paths = [
        artifact.to_str().unwrap(),
        bundle.to_str().unwrap(),
        public.to_str().unwrap(),
    ];
    let verified = sigstore_js("verify.mjs", &paths);
    assert!(
        verified.status.success(),
        "sigstore-js refused opm's bundle: {}",
        String::from_utf8_lossy(&verified.stderr)
    );
    // The same key and bytes sign to the same bundle (RFC 6979).
    exited(
        &opm(
            dir,
            &[
                "sign-blob",
                "provider.opmb",
                "--key",
                private.to_str().unwrap(),
                "--bundle",
                "again.json",
            ],
            &[],
        ),
        0,
    );
    assert_eq!(
        std::fs::read(&bundle).unwrap(),
        std::fs::read(dir.join("again.json")).unwrap()
    );
    flip_a_byte(&artifact);
    let refused = sigstore_js("verify.mjs", &paths);
    assert_eq!(
        refused.status.code(),
        Some(1),
        "sigstore-js accepted a flipped byte"
    );
    let (_, stderr) = exited(
        &opm(
            dir,
            &["verify-blob", "provider.opmb", "--key", "release.pub"],
            &[],
        ),
        1,
    );
    assert!(stderr.contains("artifact mismatch"), "{stderr}");
}

#[test]
fn a_bundle_sigstore_js_signs_with_a_local_key_verifies_in_opm() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let (private, _) = p256(dir, "theirs");
    let (_, other) = p256(dir, "other");
    let artifact = dir.join("notes.txt");
    std::fs::write(&artifact, b"signed by sigstore-js\n").unwrap();
    let bundle = dir.join("notes.txt.sigstore.json");
    let signed = sigstore_js(
        "sign.mjs",
        &[
            artifact.to_str().unwrap(),
            private.to_str().unwrap(),
            bundle.to_str().unwrap(),
        ],
    );
    assert!(
        signed.status.success(),
        "{}",
        String::from_utf8_lossy(&signed.stderr)
    );
    let (stdout, _) = exited(
        &opm(
            dir,
            &["verify-blob", "notes.txt", "--key", "theirs.pub"],
            &[],
        ),
        0,
    );
    assert!(stdout.contains("signed by key theirs.pub"), "{stdout}");
    let (_, stderr) = exited(
        &opm(
            dir,
            &["verify-blob", "notes.txt", "--key", other.to_str().unwrap()],
            &[],
        ),
        1,
    );
    assert!(stderr.contains("invalid signature"), "{stderr}");
    flip_a_byte(&artifact);
    exited(
        &opm(
            dir,
            &["verify-blob", "notes.txt", "--key", "theirs.pub"],
            &[],
        ),
        1,
    );
}

/// `opm verify-blob ARGS` with no network at all: in a new network namespace (`unshare -n`,
/// which needs root; CI runs as root), else as it is.
fn offline(args: &[&str]) -> Output {
    let dir = bundles();
    if rustix::process::geteuid().is_root() {
        let mut all = vec!["-n", "--", env!("CARGO_BIN_EXE_opm"), "verify-blob"];
        all.extend(args);
        return run("unshare", &all, &dir);
    }
    assert!(
        std::env::var_os("OPM_CI").is_none(),
        "the offline check needs root for `unshare -n`, and CI runs as root"
    );
    let mut all = vec!["verify-blob"];
    all.extend(args);
    opm(&dir, &all, &[])
}

/// The SHA-256 a bundle's message signature states, as `sha256:HEX`: the artifact of the
/// negative bundles, whose files Sigstore's test data does not carry.
fn stated_digest(bundle: &str) -> String {
    use base64::Engine as _;
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bundles().join(bundle)).unwrap()).unwrap();
    let digest = json["messageSignature"]["messageDigest"]["digest"]
        .as_str()
        .expect("a message digest");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(digest)
        .unwrap();
    format!(
        "sha256:{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

#[test]
fn public_good_keyless_bundles_verify_offline_and_each_negative_says_why() {
    let root = data().join("trusted_root.json");
    let staging = data().join("trusted_root_staging.json");
    let root = root.to_str().unwrap();
    let identity = [
        "--trusted-root",
        root,
        "--certificate-identity",
        "w.vollprecht@gmail.com",
        "--certificate-oidc-issuer",
        "https://github.com/login/oauth",
    ];
    let blob = [
        "cosign-v3-blob.txt",
        "--bundle",
        "cosign-v3-blob.sigstore.json",
    ];
    let mut args = blob.to_vec();
    args.extend(identity);
    let (stdout, _) = exited(&offline(&args), 0);
    assert!(
        stdout.contains("signed by w.vollprecht@gmail.com (issuer https://github.com/login/oauth)")
            && stdout.contains("its transparency-log entry verified"),
        "{stdout}"
    );
    let mut regexp = blob.to_vec();
    regexp.extend([
        "--trusted-root",
        root,
        "--certificate-identity-regexp",
        "^w\\.vollprecht@",
        "--certificate-oidc-issuer-regexp",
        "^https://github\\.com/",
    ]);
    exited(&offline(&regexp), 0);
    // Rekor v2 (sigstore-python's staging fixture): no integrated time, so the signing time is
    // its RFC 3161 timestamp, verified against the staging root's timestamp authority; and its
    // DSSE twin, by the subject digest (the fixture set holds no artifact for it).
    let staging_root = data().join("trusted_root_staging.json");
    let python = data().join("sigstore-verify-0.15.1/test_data/upstream/sigstore-python");
    let rekor_v2 = |artifact: &str, bundle: &str, identity: [&str; 4]| {
        let bundle = python.join(bundle);
        let mut args = vec![
            artifact,
            "--bundle",
            bundle.to_str().unwrap(),
            "--trusted-root",
            staging_root.to_str().unwrap(),
        ];
        args.extend(identity);
        exited(&offline(&args), 0).0
    };
    let artifact = python.join("staging-rekor-v2.txt");
    let stdout = rekor_v2(
        artifact.to_str().unwrap(),
        "staging-rekor-v2.txt.sigstore.json",
        [
            "--certificate-identity",
            "jku@goto.fi",
            "--certificate-oidc-issuer",
            "https://github.com/login/oauth",
        ],
    );
    assert!(
        stdout.contains("signed by jku@goto.fi") && stdout.contains("2025-06-09"),
        "{stdout}"
    );
    let dsse: serde_json::Value = serde_json::from_slice(
        &std::fs::read(python.join("a.dsse.staging-rekor-v2.txt.sigstore.json")).unwrap(),
    )
    .unwrap();
    assert!(dsse["dsseEnvelope"].is_object());
    let subject = {
        use base64::Engine as _;
        let payload = base64::engine::general_purpose::STANDARD
            .decode(dsse["dsseEnvelope"]["payload"].as_str().unwrap())
            .unwrap();
        let statement: serde_json::Value = serde_json::from_slice(&payload).unwrap();
        format!(
            "sha256:{}",
            statement["subject"][0]["digest"]["sha256"]
                .as_str()
                .unwrap()
        )
    };
    rekor_v2(
        &subject,
        "a.dsse.staging-rekor-v2.txt.sigstore.json",
        [
            "--certificate-identity-regexp",
            "^https://github\\.com/sigstore-conformance/",
            "--certificate-oidc-issuer",
            "https://token.actions.githubusercontent.com",
        ],
    );

    let any = [
        "--certificate-identity-regexp",
        ".*",
        "--certificate-oidc-issuer-regexp",
        ".*",
    ];
    let negative = |artifact: &str, bundle: &str, root: &str| {
        let mut args = vec![artifact, "--bundle", bundle, "--trusted-root", root];
        args.extend(any);
        let (_, stderr) = exited(&offline(&args), 1);
        stderr
    };
    let work = tempfile::tempdir().unwrap();
    let flipped = work.path().join("cosign-v3-blob.txt");
    std::fs::copy(bundles().join("cosign-v3-blob.txt"), &flipped).unwrap();
    flip_a_byte(&flipped);
    let cosign_bundle = bundles().join("cosign-v3-blob.sigstore.json");
    let mut reasons = vec![
        (
            "a flipped byte",
            negative(
                flipped.to_str().unwrap(),
                cosign_bundle.to_str().unwrap(),
                root,
            ),
            "artifact",
        ),
        (
            "no log entry",
            negative(
                &stated_digest("bundle_no_log_entry.txt.sigstore"),
                "bundle_no_log_entry.txt.sigstore",
                root,
            ),
            "inclusion promise",
        ),
        (
            "no checkpoint",
            negative(
                &stated_digest("bundle_no_checkpoint.txt.sigstore"),
                "bundle_no_checkpoint.txt.sigstore",
                root,
            ),
            "no checkpoint",
        ),
        (
            "CVE-2022-36056",
            negative(
                &stated_digest("bundle_cve_2022_36056.txt.sigstore"),
                "bundle_cve_2022_36056.txt.sigstore",
                staging.to_str().unwrap(),
            ),
            "does not match",
        ),
    ];
    let mut wrong = blob.to_vec();
    wrong.extend([
        "--trusted-root",
        root,
        "--certificate-identity-regexp",
        "^release@acme\\.example$",
        "--certificate-oidc-issuer",
        "https://github.com/login/oauth",
    ]);
    reasons.push((
        "a wrong identity",
        exited(&offline(&wrong), 1).1,
        "which no trusted identity matches",
    ));
    let (_, key) = p256(work.path(), "ours");
    let mut under_key = blob.to_vec();
    under_key.extend(["--key", key.to_str().unwrap()]);
    reasons.push((
        "keyless under a key policy",
        exited(&offline(&under_key), 1).1,
        "only keys are trusted",
    ));
    for (what, stderr, says) in &reasons {
        assert!(stderr.contains(says), "{what}: {stderr}");
    }
    let distinct: std::collections::BTreeSet<&String> = reasons.iter().map(|r| &r.1).collect();
    assert_eq!(distinct.len(), reasons.len(), "{reasons:#?}");

    // The reverse: a key bundle under a keyless policy.
    let (private, _) = p256(work.path(), "signer");
    let file = work.path().join("file.txt");
    std::fs::write(&file, b"x\n").unwrap();
    exited(
        &opm(
            work.path(),
            &["sign-blob", "file.txt", "--key", private.to_str().unwrap()],
            &[],
        ),
        0,
    );
    let bundle = work.path().join("file.txt.sigstore.json");
    let mut args = vec![file.to_str().unwrap(), "--bundle", bundle.to_str().unwrap()];
    args.extend(identity);
    let (_, stderr) = exited(&offline(&args), 1);
    assert!(
        stderr.contains("only keyless identities are trusted"),
        "{stderr}"
    );
}

#[test]
fn a_managed_key_bundle_with_its_log_entry_verifies_against_the_trusted_root() {
    let dir = data().join("sigstore-verify-0.15.1/test_data/managed-key");
    let root = data().join("trusted_root.json");
    let (stdout, _) = exited(
        &opm(
            &dir,
            &[
                "verify-blob",
                "artifact.txt",
                "--bundle",
                "bundle.sigstore.json",
                "--key",
                "key.pub",
                "--trusted-root",
                root.to_str().unwrap(),
            ],
            &[],
        ),
        0,
    );
    assert!(
        stdout.contains("its transparency-log entry verified"),
        "{stdout}"
    );
}

#[test]
fn cosign_encrypted_keys_sign_with_their_password_and_refuse_a_wrong_one() {
    let keys = data().join("keys");
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    std::fs::write(dir.join("file.txt"), b"signed with a cosign key\n").unwrap();
    for (key, password) in [
        ("cosign_generated_encrypted_empty_private.key", ""),
        ("ecdsa_encrypted_private.key", "123"),
    ] {
        let key = keys.join(key);
        let key = key.to_str().unwrap();
        exited(
            &opm(
                dir,
                &["sign-blob", "file.txt", "--key", key],
                &[("COSIGN_PASSWORD", password)],
            ),
            0,
        );
        let (_, stderr) = exited(
            &opm(
                dir,
                &["sign-blob", "file.txt", "--key", key],
                &[("COSIGN_PASSWORD", "wrong")],
            ),
            2,
        );
        assert!(stderr.contains("does not open it"), "{stderr}");
        let (_, stderr) = exited(&opm(dir, &["sign-blob", "file.txt", "--key", key], &[]), 2);
        assert!(stderr.contains("set COSIGN_PASSWORD"), "{stderr}");
    }
}

/// The tags of `repository` (`host:port/path`), as skopeo lists them.
fn tags(repository: &str) -> Vec<String> {
    let text = ok(
        "skopeo",
        &[
            "list-tags",
            "--tls-verify=false",
            &format!("docker://{repository}"),
        ],
        &repo(),
    );
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["Tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect()
}

fn raw(reference: &str) -> serde_json::Value {
    let text = ok(
        "skopeo",
        &["inspect", "--raw", "--tls-verify=false", reference],
        &repo(),
    );
    serde_json::from_str(&text).unwrap()
}

/// The manifest digest `opm provider push` printed.
fn pushed_digest(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("manifest "))
        .expect("a manifest line")
        .to_owned()
}

/// A new project `dir/name` whose `.opm/providers.yaml` requires `kubernetes` 0.2.0 from
/// `source`, trusting the key `public`.
fn project_trusting(dir: &Path, name: &str, source: &str, public: &Path) -> PathBuf {
    let project = dir.join(name);
    assert!(!project.exists(), "{name} is a new project");
    std::fs::create_dir_all(project.join(".opm")).unwrap();
    std::fs::copy(public, project.join(".opm/release.pub")).unwrap();
    std::fs::write(
        project.join(".opm/providers.yaml"),
        format!(
            "keys: [release.pub]\nproviders:\n  - name: kubernetes\n    version: 0.2.0\n    source: {source}\n"
        ),
    )
    .unwrap();
    project
}

#[test]
fn signed_providers_through_a_registry_without_the_referrers_api() {
    let registry = Registry::start("127.0.0.1");
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let (release, release_pub) = p256(dir, "release");
    let (other, _) = p256(dir, "other");
    exited(
        &opm(
            dir,
            &["provider", "export", "kubernetes", "-o", "k8s.opmb"],
            &[],
        ),
        0,
    );

    // Signed twice by the release key and once by another: two referrers, the repeat not added.
    let signed = registry.oci("opm/kubernetes");
    let mut digest = String::new();
    for key in [&release, &release, &other] {
        let (stdout, _) = exited(
            &opm(
                dir,
                &[
                    "provider",
                    "push",
                    "k8s.opmb",
                    &signed,
                    "--sign",
                    key.to_str().unwrap(),
                ],
                &[],
            ),
            0,
        );
        digest = pushed_digest(&stdout);
        assert!(
            stdout.contains("listed by the referrers tag sha256-"),
            "{stdout}"
        );
    }
    let fallback = digest.replacen(':', "-", 1);
    let repository = format!("{}/opm/kubernetes", registry.address);
    assert!(
        tags(&repository).contains(&fallback),
        "{:?}",
        tags(&repository)
    );
    let index = raw(&format!("docker://{repository}:{fallback}"));
    let listed = index["manifests"].as_array().unwrap();
    assert_eq!(listed.len(), 2, "{index:#}");
    for entry in listed {
        assert_eq!(
            entry["artifactType"],
            "application/vnd.dev.sigstore.bundle.v0.3+json"
        );
        let referrer = raw(&format!(
            "docker://{repository}@{}",
            entry["digest"].as_str().unwrap()
        ));
        assert_eq!(referrer["subject"]["digest"], digest.as_str());
    }

    let project = project_trusting(dir, "project-1", &signed, &release_pub);
    let (stdout, _) = exited(&opm(&project, &["provider", "init"], &[]), 0);
    assert!(
        stdout.contains("signature by key release.pub verified"),
        "{stdout}"
    );
    let lock: serde_json::Value =
        serde_json::from_slice(&std::fs::read(project.join(".opm/providers.lock.json")).unwrap())
            .unwrap();
    let locked = &lock["providers"][0];
    assert!(
        locked["signature"].as_str().unwrap().starts_with("sha256:"),
        "{lock:#}"
    );
    assert_eq!(locked["signer"], "key release.pub");
    // Every render checks the installed signature again, offline.
    let module = common::hello_in(&project);
    exited(&opm(&project, &["mod", "build", &module], &[]), 0);
    let installed =
        project.join(".opm/providers/kubernetes/0.2.0/kubernetes-0.2.0.opmb.sigstore.json");
    flip_a_byte(&installed);
    let (_, stderr) = exited(&opm(&project, &["mod", "build", &module], &[]), 2);
    assert!(
        stderr.contains("not signed by a signer the project trusts"),
        "{stderr}"
    );

    // The same bundle signed by another key only: refused.
    let theirs = registry.oci("opm/theirs");
    exited(
        &opm(
            dir,
            &[
                "provider",
                "push",
                "k8s.opmb",
                &theirs,
                "--sign",
                other.to_str().unwrap(),
            ],
            &[],
        ),
        0,
    );
    let project = project_trusting(dir, "project-2", &theirs, &release_pub);
    let (_, stderr) = exited(&opm(&project, &["provider", "init"], &[]), 2);
    assert!(
        stderr.contains("not signed by a signer the project trusts")
            && stderr.contains("invalid signature"),
        "{stderr}"
    );
    assert!(!project.join(".opm/providers.lock.json").exists());

    // Signed, then its signature removed (the referrers index emptied): refused.
    let removed = registry.oci("opm/removed");
    let (stdout, _) = exited(
        &opm(
            dir,
            &[
                "provider",
                "push",
                "k8s.opmb",
                &removed,
                "--sign",
                release.to_str().unwrap(),
            ],
            &[],
        ),
        0,
    );
    let removed_digest = pushed_digest(&stdout);
    let empty = dir.join("empty-index");
    write_layout(
        &empty,
        br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#,
        "application/vnd.oci.image.index.v1+json",
        &[],
    );
    copy_layout(
        &empty,
        &format!(
            "{}/opm/removed:{}",
            registry.address,
            removed_digest.replacen(':', "-", 1)
        ),
    );
    let project = project_trusting(dir, "project-3", &removed, &release_pub);
    let (_, stderr) = exited(&opm(&project, &["provider", "init"], &[]), 2);
    assert!(stderr.contains("has no Sigstore signature"), "{stderr}");

    // cosign v2's generation: a `.sig` tag with a simple-signing payload, signed by openssl.
    let legacy = registry.oci("opm/legacy");
    let (stdout, _) = exited(
        &opm(dir, &["provider", "push", "k8s.opmb", &legacy], &[]),
        0,
    );
    let legacy_digest = pushed_digest(&stdout);
    let payload = serde_json::to_vec(&serde_json::json!({
        "critical": {
            "identity": {"docker-reference": format!("{}/opm/legacy", registry.address)},
            "image": {"docker-manifest-digest": legacy_digest},
            "type": "cosign container image signature",
        },
        "optional": null,
    }))
    .unwrap();
    std::fs::write(dir.join("payload.json"), &payload).unwrap();
    let signature = run(
        "openssl",
        &[
            "dgst",
            "-sha256",
            "-sign",
            release.to_str().unwrap(),
            "payload.json",
        ],
        dir,
    );
    assert!(signature.status.success());
    use base64::Engine as _;
    let signature = base64::engine::general_purpose::STANDARD.encode(&signature.stdout);
    let config =
        br#"{"architecture":"","os":"","config":{},"rootfs":{"type":"layers","diff_ids":[]}}"#;
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": descriptor("application/vnd.oci.image.config.v1+json", config),
        "layers": [{
            "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
            "digest": format!("sha256:{}", opm_core::render::provenance::sha256_hex(&payload)),
            "size": payload.len(),
            "annotations": {"dev.cosignproject.cosign/signature": signature},
        }],
    });
    let sig = dir.join("sig-layout");
    write_layout(
        &sig,
        &serde_json::to_vec(&manifest).unwrap(),
        "application/vnd.oci.image.manifest.v1+json",
        &[config.as_slice(), &payload],
    );
    copy_layout(
        &sig,
        &format!(
            "{}/opm/legacy:{}.sig",
            registry.address,
            legacy_digest.replacen(':', "-", 1)
        ),
    );
    let project = project_trusting(dir, "project-4", &legacy, &release_pub);
    let (stdout, _) = exited(&opm(&project, &["provider", "init"], &[]), 0);
    assert!(
        stdout.contains("signature by key release.pub verified"),
        "{stdout}"
    );
}

fn descriptor(media_type: &str, bytes: &[u8]) -> serde_json::Value {
    serde_json::json!({
        "mediaType": media_type,
        "digest": format!("sha256:{}", opm_core::render::provenance::sha256_hex(bytes)),
        "size": bytes.len(),
    })
}

/// An OCI image layout at `dir` whose one tag `t` is the document `top` of `media_type`, with
/// `blobs`.
fn write_layout(dir: &Path, top: &[u8], media_type: &str, blobs: &[&[u8]]) {
    let store = dir.join("blobs/sha256");
    std::fs::create_dir_all(&store).unwrap();
    for blob in blobs.iter().chain([&top]) {
        let hex = opm_core::render::provenance::sha256_hex(blob);
        std::fs::write(store.join(hex), blob).unwrap();
    }
    std::fs::write(dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    let mut entry = descriptor(media_type, top);
    entry["annotations"] = serde_json::json!({"org.opencontainers.image.ref.name": "t"});
    let index = serde_json::json!({"schemaVersion": 2, "manifests": [entry]});
    std::fs::write(dir.join("index.json"), serde_json::to_vec(&index).unwrap()).unwrap();
}

/// `skopeo copy` of the layout `dir`'s tag `t` to `docker://target`, digests kept.
fn copy_layout(dir: &Path, target: &str) {
    ok(
        "skopeo",
        &[
            "copy",
            "--quiet",
            "--all",
            "--preserve-digests",
            "--dest-tls-verify=false",
            &format!("oci:{}:t", dir.display()),
            &format!("docker://{target}"),
        ],
        &repo(),
    );
}

#[test]
fn a_signed_render_carries_its_provenance_which_names_every_file_and_catches_an_edit() {
    let registry = Registry::start("127.0.0.1");
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let (release, release_pub) = p256(dir, "release");
    let (_, other_pub) = p256(dir, "other");
    // Two checkouts of the same module, as two machines would have them, pushing to the same
    // place.
    let mut pushed = Vec::new();
    for machine in ["a", "b"] {
        let checkout = dir.join(machine).join("shop");
        std::fs::create_dir_all(&checkout).unwrap();
        std::fs::copy(
            repo().join("examples/hello/module.yaml"),
            checkout.join("module.yaml"),
        )
        .unwrap();
        let home = dir.join(machine).join("home");
        std::fs::create_dir_all(&home).unwrap();
        let target = registry.oci("deploy/hello:prod");
        let (stdout, _) = exited(
            &opm(
                &checkout,
                &[
                    "mod",
                    "push",
                    "module.yaml",
                    &target,
                    "--sign",
                    release.to_str().unwrap(),
                    "-o",
                    "json",
                ],
                &[
                    ("HOME", home.to_str().unwrap()),
                    ("SOURCE_DATE_EPOCH", "1700000000"),
                ],
            ),
            0,
        );
        pushed.push(serde_json::from_str::<serde_json::Value>(&stdout).unwrap());
    }
    // The same inputs: the same artifact, and the same provenance to the byte (its referrer,
    // which holds the bundle, which holds the statement, has the same digest), listed once.
    assert_eq!(pushed[0]["digest"], pushed[1]["digest"]);
    assert_eq!(pushed[0]["provenance"], pushed[1]["provenance"]);
    assert_ne!(pushed[0]["signature"], pushed[0]["provenance"]);
    let fallback = pushed[0]["digest"].as_str().unwrap().replacen(':', "-", 1);
    let index = raw(&format!(
        "docker://{}/deploy/hello:{fallback}",
        registry.address
    ));
    assert_eq!(index["manifests"].as_array().unwrap().len(), 2, "{index:#}");
    let source = format!(
        "{}@{}",
        registry.oci("deploy/hello"),
        pushed[0]["digest"].as_str().unwrap()
    );

    // The statement's subjects are `sha256sum` of the files of the layer.
    let (statement, _) = exited(
        &opm(
            dir,
            &[
                "mod",
                "verify",
                &source,
                "--key",
                release_pub.to_str().unwrap(),
                "--provenance",
                "-o",
                "json",
            ],
            &[],
        ),
        0,
    );
    let statement: serde_json::Value = serde_json::from_str(&statement).unwrap();
    assert_eq!(statement["predicateType"], "https://slsa.dev/provenance/v1");
    let manifest = raw(&format!("docker://{}", source.trim_start_matches("oci://")));
    let layer = manifest["layers"][0]["digest"].as_str().unwrap();
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    ok(
        "tar",
        &[
            "-xzf",
            registry.blob_file(layer).to_str().unwrap(),
            "-C",
            files.to_str().unwrap(),
        ],
        dir,
    );
    let sums = ok(
        "sh",
        &[
            "-c",
            "find . -type f | sed 's|^\\./||' | sort | xargs sha256sum",
        ],
        &files,
    );
    let mut expected: Vec<String> = sums
        .lines()
        .map(|line| {
            let (sum, path) = line.split_once("  ").unwrap();
            format!("{path} {sum}")
        })
        .collect();
    expected.push(format!(
        "{} {}",
        registry.oci("deploy/hello"),
        pushed[0]["digest"]
            .as_str()
            .unwrap()
            .trim_start_matches("sha256:")
    ));
    expected.sort();
    let mut subjects: Vec<String> = statement["subject"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                s["name"].as_str().unwrap(),
                s["digest"]["sha256"].as_str().unwrap()
            )
        })
        .collect();
    subjects.sort();
    assert_eq!(subjects, expected);
    let definition = &statement["predicate"]["buildDefinition"];
    assert_eq!(definition["externalParameters"]["instance"], "hello");
    assert!(
        definition["resolvedDependencies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["name"] == "provider kubernetes 0.2.0" && d["digest"]["blake3"].is_string()),
        "{definition:#}"
    );

    // The files as a consumer unpacked them verify; one edit does not.
    let files_arg = files.to_str().unwrap();
    let verify = |key: &Path| {
        opm(
            dir,
            &[
                "mod",
                "verify",
                &source,
                "--key",
                key.to_str().unwrap(),
                "--provenance",
                "--files",
                files_arg,
            ],
            &[],
        )
    };
    let (stdout, _) = exited(&verify(&release_pub), 0);
    assert!(stdout.contains("each as its SHA-256 says"), "{stdout}");
    let edited = std::fs::read_dir(&files)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "yaml"))
        .expect("a rendered file");
    let mut text = std::fs::read_to_string(&edited).unwrap();
    text.push_str("# edited\n");
    std::fs::write(&edited, text).unwrap();
    let (_, stderr) = exited(&verify(&release_pub), 1);
    assert!(stderr.contains("is not what was signed"), "{stderr}");
    // Another key's trust: the signature does not verify.
    let (_, stderr) = exited(&verify(&other_pub), 1);
    assert!(stderr.contains("invalid signature"), "{stderr}");
}

#[test]
fn a_bundle_file_signed_with_sigstore_verifies_and_a_project_trusting_its_key_installs_it() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let (release, release_pub) = p256(dir, "release");
    let (_, other_pub) = p256(dir, "other");
    exited(
        &opm(
            dir,
            &["provider", "export", "kubernetes", "-o", "k8s.opmb"],
            &[],
        ),
        0,
    );
    let (stdout, _) = exited(
        &opm(
            dir,
            &[
                "provider",
                "sign",
                "k8s.opmb",
                "--sigstore",
                "--key",
                release.to_str().unwrap(),
            ],
            &[],
        ),
        0,
    );
    assert!(stdout.contains("k8s.opmb.sigstore.json"), "{stdout}");
    let (stdout, _) = exited(
        &opm(
            dir,
            &[
                "provider",
                "verify",
                "k8s.opmb",
                "--key",
                release_pub.to_str().unwrap(),
            ],
            &[],
        ),
        0,
    );
    assert!(
        stdout.contains("kubernetes 0.2.0") && stdout.contains("signed by key"),
        "{stdout}"
    );
    let (_, stderr) = exited(
        &opm(
            dir,
            &[
                "provider",
                "verify",
                "k8s.opmb",
                "--key",
                other_pub.to_str().unwrap(),
            ],
            &[],
        ),
        1,
    );
    assert!(stderr.contains("invalid signature"), "{stderr}");
    // The same file, checked by sigstore-js.
    let js = sigstore_js(
        "verify.mjs",
        &[
            dir.join("k8s.opmb").to_str().unwrap(),
            dir.join("k8s.opmb.sigstore.json").to_str().unwrap(),
            release_pub.to_str().unwrap(),
        ],
    );
    assert!(
        js.status.success(),
        "{}",
        String::from_utf8_lossy(&js.stderr)
    );

    let project = project_trusting(dir, "project-5", "../../k8s.opmb", &release_pub);
    let (stdout, _) = exited(&opm(&project, &["provider", "init"], &[]), 0);
    assert!(
        stdout.contains("signature by key release.pub verified"),
        "{stdout}"
    );
    let module = common::hello_in(&project);
    exited(&opm(&project, &["mod", "build", &module], &[]), 0);
    // Unsigned: refused.
    std::fs::remove_file(dir.join("k8s.opmb.sigstore.json")).unwrap();
    let project = project_trusting(dir, "project-6", "../../k8s.opmb", &release_pub);
    let (_, stderr) = exited(&opm(&project, &["provider", "init"], &[]), 2);
    assert!(stderr.contains("has no Sigstore signature"), "{stderr}");
}
