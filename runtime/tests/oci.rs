//! Providers through a real OCI registry: Debian's `docker-registry` (the CNCF distribution
//! server), started per test on a free port. `opm provider push` and `pull` round-trip a signed
//! bundle; a project inits from an `oci://` source and renders with two commands; the ORAS
//! project's Python client reads what opm pushes and pushes what opm pulls; a registry that
//! serves other bytes than a digest names is refused; plain HTTP is used only for loopback
//! unless allowed.
//!
//! And a hostile registry (`hostile`): endless manifests, tag lists, tokens and error bodies are
//! cut at their limits while opm's memory stays bounded, and the escape sequences of its error
//! text reach the terminal escaped.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
mod hostile;

use common::registry::Registry;
use common::{exited, hello_in, keypair, opm};
use hostile::{Body, Hostile, Reply};

/// The embedded provider as a bundle file in `dir`, signed with a fresh minisign key; returns
/// the bundle's and the public key's paths.
fn signed_bundle(dir: &Path) -> (PathBuf, PathBuf) {
    let bundle = dir.join("kubernetes.opmb");
    std::fs::write(&bundle, opm_runtime::embedded::bundle()).expect("write");
    let (secret, public) = keypair(dir, "team");
    let signed = opm(
        dir,
        &[
            "provider",
            "sign",
            bundle.to_str().unwrap(),
            "--key",
            secret.to_str().unwrap(),
        ],
    );
    exited(&signed, 0);
    (bundle, public)
}

fn version() -> String {
    opm_runtime::embedded::load()
        .expect("embedded")
        .manifest
        .metadata
        .version
}

#[test]
fn push_then_pull_round_trips_a_signed_bundle_and_a_project_inits_from_the_registry() {
    let registry = Registry::start("127.0.0.1");
    let work = tempfile::tempdir().expect("temp dir");
    let (bundle, public) = signed_bundle(work.path());
    let repository = registry.oci("opm/kubernetes");

    let (stdout, _) = exited(
        &opm(
            work.path(),
            &["provider", "push", bundle.to_str().unwrap(), &repository],
        ),
        0,
    );
    let version = version();
    assert!(
        stdout.contains(&format!("to {repository}:{version}"))
            && stdout.contains("with its signature"),
        "{stdout}"
    );

    let pulled = work.path().join("pulled.opmb");
    let (stdout, _) = exited(
        &opm(
            work.path(),
            &[
                "provider",
                "pull",
                &format!("{repository}:{version}"),
                "-o",
                pulled.to_str().unwrap(),
            ],
        ),
        0,
    );
    assert!(stdout.contains("@sha256:"), "{stdout}");
    assert_eq!(
        std::fs::read(&pulled).unwrap(),
        std::fs::read(&bundle).unwrap()
    );
    let verified = opm(
        work.path(),
        &[
            "provider",
            "verify",
            pulled.to_str().unwrap(),
            "--key",
            public.to_str().unwrap(),
        ],
    );
    exited(&verified, 0);

    // A project: .opm/providers.yaml naming the OCI-hosted provider, then two commands.
    let app = work.path().join("app");
    std::fs::create_dir_all(app.join(".opm")).expect("mkdir");
    std::fs::copy(&public, app.join("team.pub")).expect("copy key");
    std::fs::write(
        app.join(".opm/providers.yaml"),
        format!("keys: [../team.pub]\nproviders:\n  - name: kubernetes\n    version: \"^{version}\"\n    source: {repository}\n"),
    )
    .expect("write");
    let (stdout, _) = exited(&opm(&app, &["provider", "init"]), 0);
    assert!(stdout.contains("signature by key"), "{stdout}");
    let (yaml, _) = exited(&opm(&app, &["mod", "build", &hello_in(&app)]), 0);
    assert!(yaml.contains("kind: Deployment"), "{yaml}");
    let lock: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(app.join(".opm/providers.lock.json")).expect("lock"),
    )
    .expect("JSON");
    let locked = &lock["providers"][0];
    assert!(
        locked["ociDigest"].as_str().unwrap().starts_with("sha256:"),
        "{lock}"
    );
    assert_eq!(locked["source"], format!("{repository}:{version}"));

    // OPM_REGISTRY as an oci:// base: the provider is the repository NAME under it.
    let based = work.path().join("based");
    std::fs::create_dir_all(based.join(".opm")).expect("mkdir");
    std::fs::write(
        based.join(".opm/providers.yaml"),
        format!("providers:\n  - name: kubernetes\n    version: {version}\n"),
    )
    .expect("write");
    let init = Command::new(env!("CARGO_BIN_EXE_opm"))
        .args(["provider", "init"])
        .current_dir(&based)
        .env("OPM_REGISTRY", registry.oci("opm"))
        .output()
        .expect("opm runs");
    let (stdout, _) = exited(&init, 0);
    assert!(
        stdout.contains(&format!(
            "installed kubernetes {version} from {repository}:{version}"
        )),
        "{stdout}"
    );

    // The air-gapped way: what `pull` wrote (bundle and signature) is a source of its own.
    let offline = work.path().join("offline");
    std::fs::create_dir_all(offline.join(".opm")).expect("mkdir");
    std::fs::copy(&public, offline.join("team.pub")).expect("copy key");
    std::fs::write(
        offline.join(".opm/providers.yaml"),
        format!(
            "keys: [../team.pub]\nproviders:\n  - name: kubernetes\n    version: {version}\n    source: {}\n",
            pulled.display()
        ),
    )
    .expect("write");
    drop(registry);
    let (stdout, _) = exited(&opm(&offline, &["provider", "init"]), 0);
    assert!(stdout.contains("signature by key"), "{stdout}");
    exited(&opm(&offline, &["mod", "build", &hello_in(&offline)]), 0);
}

#[test]
fn a_registry_serving_other_bytes_than_the_digest_names_is_refused() {
    let registry = Registry::start("127.0.0.1");
    let work = tempfile::tempdir().expect("temp dir");
    let (bundle, _) = signed_bundle(work.path());
    let repository = registry.oci("opm/kubernetes");
    exited(
        &opm(
            work.path(),
            &["provider", "push", bundle.to_str().unwrap(), &repository],
        ),
        0,
    );

    // The bundle layer's blob, changed on the registry's disk.
    let layer = opm_core::bundle::read_bytes(&bundle).unwrap();
    let digest = {
        use sha2::Digest as _;
        let hash = sha2::Sha256::digest(&layer);
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        format!("sha256:{hex}")
    };
    let blob = registry.blob_file(&digest);
    let mut bytes = std::fs::read(&blob).expect("the registry stores the blob");
    bytes[1000] ^= 1;
    std::fs::write(&blob, bytes).expect("tamper");

    let out = work.path().join("out.opmb");
    let (_, stderr) = exited(
        &opm(
            work.path(),
            &[
                "provider",
                "pull",
                &format!("{repository}:{}", version()),
                "-o",
                out.to_str().unwrap(),
            ],
        ),
        2,
    );
    assert!(
        stderr.contains("a registry that serves other bytes than the digest names is refused")
            && stderr.contains(&format!("expected {digest}: refused")),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing is written");
}

#[test]
fn a_registry_serving_another_manifest_than_its_digest_is_refused() {
    let registry = Registry::start("127.0.0.1");
    let work = tempfile::tempdir().expect("temp dir");
    let (bundle, _) = signed_bundle(work.path());
    let repository = registry.oci("opm/kubernetes");
    exited(
        &opm(
            work.path(),
            &["provider", "push", bundle.to_str().unwrap(), &repository],
        ),
        0,
    );

    // The tag's manifest, changed on the registry's disk (still valid JSON: one hex digit of
    // the config digest flipped), so the registry serves it under the digest the tag names.
    let link = registry.dir.path().join(format!(
        "data/docker/registry/v2/repositories/opm/kubernetes/_manifests/tags/{}/current/link",
        version()
    ));
    let manifest_digest = std::fs::read_to_string(&link).expect("the tag's link");
    let blob = registry.blob_file(manifest_digest.trim());
    let text = std::fs::read_to_string(&blob).expect("the registry stores the manifest");
    let at = text.find("sha256:").expect("a digest in the manifest") + "sha256:".len();
    let flipped = if &text[at..at + 1] == "0" { "1" } else { "0" };
    std::fs::write(
        &blob,
        format!("{}{flipped}{}", &text[..at], &text[at + 1..]),
    )
    .expect("tamper");

    let out = work.path().join("out.opmb");
    let (_, stderr) = exited(
        &opm(
            work.path(),
            &[
                "provider",
                "pull",
                &format!("{repository}:{}", version()),
                "-o",
                out.to_str().unwrap(),
            ],
        ),
        2,
    );
    assert!(
        stderr.contains("refused") || stderr.contains("digest"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing is written");
}

/// Python with the `oras` package (the ORAS project's client), as `.ci/run` installs it.
fn oras(script: &str, dir: &Path) {
    let output = Command::new("python3")
        .args(["-c", script])
        .current_dir(dir)
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "oras-py (pip install oras==0.2.43): {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn oras_reads_what_opm_pushes_and_opm_pulls_what_oras_pushes() {
    let registry = Registry::start("127.0.0.1");
    let work = tempfile::tempdir().expect("temp dir");
    let (bundle, _) = signed_bundle(work.path());
    let version = version();
    let repository = registry.oci("opm/kubernetes");
    exited(
        &opm(
            work.path(),
            &["provider", "push", bundle.to_str().unwrap(), &repository],
        ),
        0,
    );

    let address = &registry.address;
    oras(
        &format!(
            r#"
import json, oras.client
c = oras.client.OrasClient(hostname="{address}", insecure=True)
m = c.get_manifest("{address}/opm/kubernetes:{version}")
assert m["artifactType"] == "application/vnd.opmodel.provider.v1", m
assert m["config"]["mediaType"] == "application/vnd.opmodel.provider.config.v1+json", m
assert m["annotations"]["dev.opmodel.provider.name"] == "kubernetes", m
assert m["annotations"]["dev.opmodel.provider.version"] == "{version}", m
assert m["annotations"]["dev.opmodel.provider.digest"].startswith("blake3:"), m
files = c.pull(target="{address}/opm/kubernetes:{version}", outdir="by-oras")
names = sorted(f.split("/")[-1] for f in files)
assert names == ["kubernetes-{version}.opmb", "kubernetes-{version}.opmb.minisig"], files
"#
        ),
        work.path(),
    );
    assert_eq!(
        std::fs::read(
            work.path()
                .join(format!("by-oras/kubernetes-{version}.opmb"))
        )
        .unwrap(),
        std::fs::read(&bundle).unwrap()
    );

    std::fs::write(
        work.path().join("config.json"),
        format!(r#"{{"name": "kubernetes", "version": "{version}"}}"#),
    )
    .unwrap();
    oras(
        &format!(
            r#"
import oras.client
c = oras.client.OrasClient(hostname="{address}", insecure=True)
r = c.push(target="{address}/theirs/kubernetes:{version}",
           files=["kubernetes.opmb:application/vnd.opmodel.provider.bundle.v1.tar"],
           manifest_config="config.json:application/vnd.opmodel.provider.config.v1+json",
           quiet=True)
assert r.status_code == 201, r.status_code
"#
        ),
        work.path(),
    );
    let out = work.path().join("theirs.opmb");
    let pull = opm(
        work.path(),
        &[
            "provider",
            "pull",
            &registry.oci(&format!("theirs/kubernetes:{version}")),
            "-o",
            out.to_str().unwrap(),
        ],
    );
    exited(&pull, 0);
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(&bundle).unwrap()
    );
}

/// This machine's IPv4 address on its network (not loopback), as `hostname -I` lists it.
fn network_address() -> String {
    let output = Command::new("hostname")
        .arg("-I")
        .output()
        .expect("hostname runs");
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .filter_map(|text| text.parse::<std::net::Ipv4Addr>().ok())
        .find(|ip| !ip.is_loopback())
        .expect("this machine has an IPv4 address besides loopback")
        .to_string()
}

#[test]
fn plain_http_only_for_loopback_unless_allowed() {
    let registry = Registry::start(&network_address());
    let work = tempfile::tempdir().expect("temp dir");
    let (bundle, _) = signed_bundle(work.path());
    let repository = registry.oci("opm/kubernetes");
    let (_, stderr) = exited(
        &opm(
            work.path(),
            &["provider", "push", bundle.to_str().unwrap(), &repository],
        ),
        2,
    );
    assert!(
        stderr.contains(&format!("pushing to {repository}")),
        "{stderr}"
    );
    let (stdout, _) = exited(
        &opm(
            work.path(),
            &[
                "provider",
                "push",
                bundle.to_str().unwrap(),
                &repository,
                "--insecure-http",
            ],
        ),
        0,
    );
    assert!(stdout.contains("pushed kubernetes"), "{stdout}");
    let reference = format!("{repository}:{}", version());
    exited(&opm(work.path(), &["provider", "pull", &reference]), 2);
    exited(
        &opm(
            work.path(),
            &["provider", "pull", &reference, "--insecure-http"],
        ),
        0,
    );
}

#[test]
fn credentials_come_from_the_docker_config_and_are_never_printed() {
    const PASSWORD: &str = "s3cret-Pa55word";
    let hash = Command::new("python3")
        .args([
            "-W",
            "ignore",
            "-c",
            &format!("import crypt; print(crypt.crypt('{PASSWORD}', crypt.mksalt(crypt.METHOD_BLOWFISH)))"),
        ])
        .output()
        .expect("python3 runs");
    let hash = String::from_utf8_lossy(&hash.stdout).trim().to_owned();
    assert!(hash.starts_with("$2"), "a bcrypt hash: {hash}");
    let registry = Registry::start_with("127.0.0.1", Some(&format!("ci:{hash}\n")));
    let work = tempfile::tempdir().expect("temp dir");
    let (bundle, _) = signed_bundle(work.path());
    let repository = registry.oci("private/kubernetes");
    let push = |docker_config: Option<&Path>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_opm"));
        command
            .args(["provider", "push", bundle.to_str().unwrap(), &repository])
            .current_dir(work.path())
            .env("HOME", work.path());
        match docker_config {
            Some(dir) => command.env("DOCKER_CONFIG", dir),
            None => command.env_remove("DOCKER_CONFIG"),
        };
        command.output().expect("opm runs")
    };
    let (_, stderr) = exited(&push(None), 2);
    assert!(
        stderr.contains(&format!("pushing to {repository}")),
        "{stderr}"
    );

    let docker = work.path().join("docker");
    std::fs::create_dir_all(&docker).expect("mkdir");
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("ci:{PASSWORD}"));
    std::fs::write(
        docker.join("config.json"),
        format!(
            r#"{{"auths": {{"{}": {{"auth": "{auth}"}}}}}}"#,
            registry.address
        ),
    )
    .expect("write docker config");
    let pushed = push(Some(&docker));
    let (stdout, stderr) = exited(&pushed, 0);
    for text in [&stdout, &stderr] {
        assert!(!text.contains(PASSWORD) && !text.contains(&auth), "{text}");
    }
    let failed = push(None);
    let (stdout, stderr) = exited(&failed, 2);
    for text in [&stdout, &stderr] {
        assert!(!text.contains(PASSWORD) && !text.contains(&auth), "{text}");
    }
}

/// The most memory an `opm` run against a hostile registry may reach.
const BOUNDED_RSS: u64 = 100 << 20;

/// A digest a hostile registry names for anything.
const SOME_DIGEST: &str = "sha256:abababababababababababababababababababababababababababababababab";

/// Runs `opm args` in a fresh directory against a hostile registry and checks that it failed
/// with exit 2, within [`BOUNDED_RSS`], saying each of `expected`; returns its stderr.
fn refused_with_bounded_memory(dir: &Path, args: &[&str], expected: &[&str]) -> String {
    let run = hostile::run_measured(dir, args);
    eprintln!(
        "opm {}: peak RSS at most {} KiB (its own, sampled: {} KiB){}; {}",
        args.join(" "),
        run.peak_rss >> 10,
        run.sampled_peak >> 10,
        if run.killed { " (killed)" } else { "" },
        run.stderr
            .get(..run.stderr.len().min(600))
            .unwrap_or(&run.stderr)
    );
    assert!(!run.killed, "opm was killed: {run:?}");
    assert_eq!(run.code, Some(2), "{run:?}");
    for text in expected {
        assert!(run.stderr.contains(text), "{text:?} in {}", run.stderr);
    }
    assert!(
        run.peak_rss < BOUNDED_RSS,
        "peak RSS {} bytes, over {BOUNDED_RSS}",
        run.peak_rss
    );
    run.stderr
}

/// A manifest route: HEAD answers with `digest_header`'s digest (if any), GET streams forever.
fn endless_manifest(digest_header: bool) -> Hostile {
    Hostile::start(move |request, _| {
        if request.path.contains("/manifests/") && request.method == "HEAD" {
            let reply = Reply::new("200 OK", Body::Bytes(Vec::new()))
                .header("Content-Type", "application/vnd.oci.image.manifest.v1+json");
            return if digest_header {
                reply.header("Docker-Content-Digest", SOME_DIGEST)
            } else {
                reply
            };
        }
        if request.path.contains("/manifests/") {
            return Reply::new("200 OK", Body::Endless("{\"layers\": [\"a\", "))
                .header("Content-Type", "application/vnd.oci.image.manifest.v1+json");
        }
        Reply::new("404 Not Found", Body::Bytes(Vec::new()))
    })
}

#[test]
fn an_endless_manifest_is_cut_at_its_limit_with_bounded_memory() {
    let work = tempfile::tempdir().expect("temp dir");
    let registry = endless_manifest(true);
    refused_with_bounded_memory(
        work.path(),
        &["provider", "pull", &registry.oci("opm/kubernetes:1.0.0")],
        &["manifest", "limit of 1048576 bytes"],
    );
}

#[test]
fn an_endless_manifest_on_the_digest_resolving_get_is_cut_at_its_limit_with_bounded_memory() {
    let work = tempfile::tempdir().expect("temp dir");
    let registry = endless_manifest(false);
    refused_with_bounded_memory(
        work.path(),
        &["provider", "pull", &registry.oci("opm/kubernetes:1.0.0")],
        &["manifest", "limit of 1048576 bytes"],
    );
}

#[test]
fn an_endless_tag_list_is_cut_at_its_limit_with_bounded_memory() {
    let work = tempfile::tempdir().expect("temp dir");
    let registry = Hostile::start(|request, _| {
        if request.path.contains("/tags/list") {
            return Reply::new("200 OK", Body::Endless("\"1.0.0\", "))
                .header("Content-Type", "application/json");
        }
        Reply::new("404 Not Found", Body::Bytes(Vec::new()))
    });
    std::fs::create_dir_all(work.path().join(".opm")).expect("mkdir");
    std::fs::write(
        work.path().join(".opm/providers.yaml"),
        format!(
            "providers:\n  - name: kubernetes\n    version: \"^0.1.0\"\n    source: {}\n",
            registry.oci("opm/kubernetes")
        ),
    )
    .expect("write");
    refused_with_bounded_memory(
        work.path(),
        &["provider", "init"],
        &["tag list", "limit of 1048576 bytes"],
    );
}

#[test]
fn an_endless_token_is_cut_at_its_limit_with_bounded_memory() {
    let work = tempfile::tempdir().expect("temp dir");
    let registry = Hostile::start(|request, address| {
        if request.path.starts_with("/token") {
            return Reply::new("200 OK", Body::Endless("{\"token\": \"aaaa"))
                .header("Content-Type", "application/json");
        }
        Reply::new("401 Unauthorized", Body::Bytes(Vec::new())).header(
            "WWW-Authenticate",
            &format!(
                "Bearer realm=\"http://{address}/token\",service=\"hostile\",\
                 scope=\"repository:opm/kubernetes:pull\""
            ),
        )
    });
    refused_with_bounded_memory(
        work.path(),
        &["provider", "pull", &registry.oci("opm/kubernetes:1.0.0")],
        &["token", "limit of 65536 bytes"],
    );
}

#[test]
fn an_endless_error_body_is_cut_to_its_first_bytes_with_bounded_memory() {
    let work = tempfile::tempdir().expect("temp dir");
    let registry = Hostile::start(|_, _| {
        Reply::new(
            "500 Internal Server Error",
            Body::Endless("overloaded, try again later; "),
        )
    });
    let stderr = refused_with_bounded_memory(
        work.path(),
        &[
            "provider",
            "pull",
            &registry.oci(&format!("opm/kubernetes@{SOME_DIGEST}")),
        ],
        &["500", "overloaded, try again later", "first 4096 bytes"],
    );
    assert!(stderr.len() < 16 << 10, "{} bytes of stderr", stderr.len());
}

#[test]
fn escape_sequences_in_a_registry_error_reach_stderr_escaped() {
    let work = tempfile::tempdir().expect("temp dir");
    let registry = Hostile::start(|_, _| {
        Reply::new(
            "403 Forbidden",
            Body::Bytes(b"\x1b[2J\x1b[Hverified\r\n\x07".to_vec()),
        )
    });
    let run = hostile::run_measured(
        work.path(),
        &[
            "provider",
            "pull",
            &registry.oci(&format!("opm/kubernetes@{SOME_DIGEST}")),
        ],
    );
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr.contains(r"\u{1b}[2J\u{1b}[Hverified\r\n\u{7}"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.chars().any(|c| c.is_control() && c != '\n'),
        "{:?}",
        run.stderr
    );
}

/// A registry cannot choose where `pull` writes: a bundle whose manifest names the provider
/// `../../ESCAPED` (from which `pull` would make the file name `NAME-VERSION.opmb`) is refused as
/// it is read, and nothing is written anywhere.
#[test]
fn a_pulled_bundle_named_to_escape_the_directory_is_refused_and_nothing_is_written() {
    use opm_core::bundle::{self, format};
    let registry = Registry::start("127.0.0.1");
    let work = tempfile::tempdir().expect("temp dir");
    let embedded = bundle::read("embedded", opm_runtime::embedded::bundle()).unwrap();
    let mut manifest: serde_json::Value = serde_json::from_slice(&embedded.manifest).unwrap();
    manifest["metadata"]["name"] = serde_json::json!("../../ESCAPED");
    let components = embedded
        .components
        .iter()
        .map(|(path, bytes)| (path.clone(), bytes.to_vec()))
        .collect();
    let packed = format::pack(manifest, &components).expect("packs");
    // Pushed as a registry would serve it: the library's push does not check what it sends.
    let target = opm_core::provider::oci::OciRef::parse(&registry.oci("opm/evil:1.0.0")).unwrap();
    opm_registry::push(
        &target,
        &packed.bytes,
        None,
        ("evil", "1.0.0", &packed.digest),
        &opm_registry::Options::default(),
    )
    .expect("the registry takes it");

    let deep = work.path().join("a/b");
    std::fs::create_dir_all(&deep).unwrap();
    let (_, stderr) = exited(
        &opm(
            &deep,
            &["provider", "pull", &registry.oci("opm/evil:1.0.0")],
        ),
        2,
    );
    assert!(
        stderr.contains("metadata.name \"../../ESCAPED\" is not a provider name"),
        "{stderr}"
    );
    let mut written = Vec::new();
    for entry in walk(work.path()) {
        written.push(
            entry
                .strip_prefix(work.path())
                .unwrap()
                .display()
                .to_string(),
        );
    }
    assert_eq!(written, ["a", "a/b"], "nothing is written");
}

/// Every path under `dir`, sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        found.push(path.clone());
        if path.is_dir() {
            found.extend(walk(&path));
        }
    }
    found.sort();
    found
}

/// A registry serving one render (its manifest and a one-byte layer) whose referrers API
/// answers `referrers`; the reference to it by digest.
fn a_render_whose_referrers_answer(referrers: Reply) -> (Hostile, String) {
    let layer = b"x".to_vec();
    let layer_digest = format!("sha256:{}", hex_sha256(&layer));
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.cncf.flux.config.v1+json", "digest": format!("sha256:{}", hex_sha256(b"{}")), "size": 2},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer_digest, "size": 1}],
    }))
    .expect("JSON");
    let digest = format!("sha256:{}", hex_sha256(&manifest));
    let served = digest.clone();
    let registry = Hostile::start(move |request, _| {
        if request.path.ends_with(&format!("/manifests/{served}")) {
            return Reply::new("200 OK", Body::Bytes(manifest.clone()))
                .header("Content-Type", "application/vnd.oci.image.manifest.v1+json");
        }
        if request.path.ends_with(&format!("/blobs/{layer_digest}")) {
            return Reply::new("200 OK", Body::Bytes(layer.clone()));
        }
        if request.path.contains("/referrers/") {
            return referrers.clone();
        }
        Reply::new("404 Not Found", Body::Bytes(Vec::new()))
    });
    let reference = format!("{}@{digest}", registry.oci("deploy/shop"));
    (registry, reference)
}

/// A P-256 key pair made by openssl in `dir` (`k.pem`); its public key's path (`k.pub`).
fn a_public_key(dir: &Path) -> PathBuf {
    let made = Command::new("sh")
        .arg("-c")
        .arg("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out k.pem && openssl pkey -in k.pem -pubout -out k.pub")
        .current_dir(dir)
        .status()
        .expect("openssl runs");
    assert!(made.success());
    dir.join("k.pub")
}

#[test]
fn an_endless_referrers_index_is_cut_at_its_limit_with_bounded_memory() {
    let (_registry, reference) = a_render_whose_referrers_answer(
        Reply::new(
            "200 OK",
            Body::Endless("{\"mediaType\": \"application/vnd.oci.image.manifest.v1+json\", "),
        )
        .header("Content-Type", "application/vnd.oci.image.index.v1+json"),
    );
    let work = tempfile::tempdir().expect("temp dir");
    let key = a_public_key(work.path());
    refused_with_bounded_memory(
        work.path(),
        &[
            "mod",
            "verify",
            &reference,
            "--key",
            key.to_str().expect("UTF-8"),
        ],
        &["referrers index", "limit of 1048576 bytes"],
    );
}

#[test]
fn a_registry_older_than_the_referrers_api_is_read_through_the_tag_schema() {
    // 405 for the unknown route, as registries before OCI 1.1 answer it: no referrers API, so
    // the tag schema is asked (404 there: nothing attached), and the render is unsigned.
    let (_registry, reference) = a_render_whose_referrers_answer(Reply::new(
        "405 Method Not Allowed",
        Body::Bytes(Vec::new()),
    ));
    let work = tempfile::tempdir().expect("temp dir");
    let key = a_public_key(work.path());
    let (_, stderr) = exited(
        &opm(
            work.path(),
            &[
                "mod",
                "verify",
                &reference,
                "--key",
                key.to_str().expect("UTF-8"),
            ],
        ),
        1,
    );
    assert!(stderr.contains("has no signature"), "{stderr}");
}

fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn a_referrer_that_cannot_be_read_stops_no_other_and_at_most_64_are_read() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let work = tempfile::tempdir().expect("temp dir");
    let key = a_public_key(work.path());
    let private = work.path().join("k.pem");
    // The render's manifest, as a_render_whose_referrers_answer serves it, and a signature of
    // it made by opm: a message signature over the manifest's bytes is one of its digest.
    let layer = b"x".to_vec();
    let layer_digest = format!("sha256:{}", hex_sha256(&layer));
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.cncf.flux.config.v1+json", "digest": format!("sha256:{}", hex_sha256(b"{}")), "size": 2},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer_digest, "size": 1}],
    }))
    .expect("JSON");
    std::fs::write(work.path().join("manifest.json"), &manifest).expect("write");
    exited(
        &opm(
            work.path(),
            &[
                "sign-blob",
                "manifest.json",
                "--key",
                private.to_str().expect("UTF-8"),
            ],
        ),
        0,
    );
    let bundle = std::fs::read(work.path().join("manifest.json.sigstore.json")).expect("bundle");
    let digest = format!("sha256:{}", hex_sha256(&manifest));
    let attached = opm_core::provider::oci::attached::descriptor(
        "application/vnd.oci.image.manifest.v1+json",
        &manifest,
    );
    let referrer = opm_core::provider::oci::attached::referrer(attached, &bundle);
    let referrer_digest = format!("sha256:{}", hex_sha256(&referrer));
    let bundle_digest = format!("sha256:{}", hex_sha256(&bundle));
    // The referrers API lists 200 bundles: the first fails (500), the second is the
    // signature, the rest are not there (404).
    let listed: Vec<String> = (0..200)
        .map(|n| match n {
            1 => referrer_digest.clone(),
            n => format!("sha256:{n:064x}"),
        })
        .collect();
    let index = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": listed.iter().map(|d| serde_json::json!({
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": d,
            "size": 100,
            "artifactType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        })).collect::<Vec<_>>(),
    }))
    .expect("JSON");
    let asked = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&asked);
    let (served, failing) = (digest.clone(), listed[0].clone());
    let registry = Hostile::start(move |request, _| {
        let path = &request.path;
        if path.ends_with(&format!("/manifests/{served}")) {
            return Reply::new("200 OK", Body::Bytes(manifest.clone()))
                .header("Content-Type", "application/vnd.oci.image.manifest.v1+json");
        }
        if path.ends_with(&format!("/blobs/{layer_digest}")) {
            return Reply::new("200 OK", Body::Bytes(layer.clone()));
        }
        if path.contains("/referrers/") {
            return Reply::new("200 OK", Body::Bytes(index.clone()))
                .header("Content-Type", "application/vnd.oci.image.index.v1+json");
        }
        if path.ends_with(&format!("/blobs/{bundle_digest}")) {
            return Reply::new("200 OK", Body::Bytes(bundle.clone()));
        }
        if path.contains("/manifests/sha256:") {
            counted.fetch_add(1, Ordering::SeqCst);
            if path.ends_with(&referrer_digest) {
                return Reply::new("200 OK", Body::Bytes(referrer.clone()))
                    .header("Content-Type", "application/vnd.oci.image.manifest.v1+json");
            }
            if path.ends_with(&failing) {
                return Reply::new("500 Internal Server Error", Body::Bytes(b"down".to_vec()));
            }
        }
        Reply::new("404 Not Found", Body::Bytes(Vec::new()))
    });
    let reference = format!("{}@{digest}", registry.oci("deploy/shop"));
    let (stdout, _) = exited(
        &opm(
            work.path(),
            &[
                "mod",
                "verify",
                &reference,
                "--key",
                key.to_str().expect("UTF-8"),
            ],
        ),
        0,
    );
    assert!(stdout.contains("signed by key"), "{stdout}");
    let asked = asked.load(Ordering::SeqCst);
    assert!(asked <= 64, "{asked} referrers read, over 64");
    // Trusting another key: every reason is said, the unreadable one's too.
    let other = work.path().join("other");
    std::fs::create_dir_all(&other).expect("mkdir");
    let other_key = a_public_key(&other);
    let (_, stderr) = exited(
        &opm(
            work.path(),
            &[
                "mod",
                "verify",
                &reference,
                "--key",
                other_key.to_str().expect("UTF-8"),
            ],
        ),
        1,
    );
    assert!(
        stderr.contains("500") && stderr.contains("invalid signature"),
        "{stderr}"
    );
}
