//! Writes the seed corpora of the fuzz targets from the repository's own files, so that no seed
//! is committed twice and none goes stale: `seeds REPO CORPUS BUNDLE` fills `CORPUS/<target>/`,
//! where `BUNDLE` is the embedded Kubernetes provider's bundle file (`opm provider export
//! kubernetes`: the fuzz targets link the core alone, which embeds no provider).
//!
//! - `module`: every `examples/*/module.yaml`, and the first of them with a values file and
//!   `--set` arguments in the target's NUL-separated form;
//! - `manifest`: `providers/kubernetes/provider.yaml`, and a variant with `limits` and
//!   `minVersion`;
//! - `bundle`: that bundle cut down to one transformer at a time (each small
//!   enough to mutate quickly), and a bundle whose component is not WebAssembly;
//! - `component`: each of its components that is as small, and a core module;
//! - `output`: every resource of `examples/*/rendered.yaml`, as the JSON a transformer returns;
//! - `patch`: each example module with patches, a NUL and the resources it renders, one JSON
//!   document per line;
//! - `cel`: a few expressions of the shapes modules write, and one over the bounds;
//! - `layout`: a stream, a split directory and a compose project with a side file and a refusal;
//! - `registry`: a provider artifact's manifest as `opm provider push` writes it, an index
//!   listing it, a tag list, token responses and `WWW-Authenticate` challenges.
//!
//! Seed file names are the seeds' BLAKE3, as libFuzzer names what it adds to a corpus.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use opm_core::bundle::{self, format};
use opm_core::provider::oci;
use serde_json::{Map, Value};

/// Bundles and components over this size make slow seeds; the smaller ones cover the same code.
const MAX_SEED_BYTES: usize = 256 << 10;

// cargo fuzz instruments every binary of this crate for coverage, and the instrumentation calls
// into libFuzzer; an empty target links it in. The `main` below keeps libFuzzer's out.
libfuzzer_sys::fuzz_target!(|_data: &[u8]| {});

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [repo, corpus, bundle_file] = args.as_slice() else {
        return Err("usage: seeds REPO CORPUS BUNDLE".into());
    };
    let mut seeds = Seeds {
        corpus: corpus.clone(),
        written: BTreeMap::new(),
    };
    let examples = examples(repo)?;

    for dir in &examples {
        seeds.add("module", &std::fs::read(dir.join("module.yaml"))?)?;
    }
    if let Some(first) = examples.first() {
        let mut input = std::fs::read(first.join("module.yaml"))?;
        for part in [
            &b"metadata: {labels: {team: web}}\ncomponents: {api: {traits: {Replicas: 3}}}\n"[..],
            b"components:\n  api:\n    metadata: {annotations: {token: \"${env:TOKEN1}\"}}\n",
            b"--set components.api.traits.Replicas=5",
            b"--set components.api.traits.\"opm.dev/traits/scaling@v1#Replicas\"=[1, {a: b}]",
            b"--set metadata.namespace=staging",
        ] {
            input.push(0);
            input.extend_from_slice(part);
        }
        seeds.add("module", &input)?;
    }

    let manifest = std::fs::read(repo.join("providers/kubernetes/provider.yaml"))?;
    seeds.add("manifest", &manifest)?;
    let mut limited = manifest.clone();
    limited.extend_from_slice(b"limits: {fuel: 1000000, memory: 64Mi, timeout: 500ms}\n");
    let limited = String::from_utf8(limited)?.replacen(
        "metadata:\n",
        "metadata:\n  minVersion: 0.1.0\n  labels: {a: b}\n",
        1,
    );
    seeds.add("manifest", limited.as_bytes())?;

    let embedded = bundle::read_file(bundle_file)?;
    let embedded_manifest: Value = serde_json::from_slice(&embedded.manifest)?;
    // The source manifest takes its definitions from the shared catalog; the bundle's manifest
    // holds them all (JSON is YAML), without the digests of the bundle's components.
    let mut whole = embedded_manifest.clone();
    if let Some(all) = whole["transformers"].as_object_mut() {
        for transformer in all.values_mut() {
            transformer.as_object_mut().map(|t| t.remove("digest"));
        }
    }
    if let Some(renderer) = whole["renderer"].as_object_mut() {
        renderer.remove("digest");
    }
    seeds.add("manifest", serde_json::to_string(&whole)?.as_bytes())?;
    for (fqn, transformer) in embedded_manifest["transformers"]
        .as_object()
        .ok_or("the embedded manifest has no transformers")?
    {
        let entry = transformer["component"].as_str().unwrap_or_default();
        let bytes = &embedded.components[entry];
        if bytes.len() <= MAX_SEED_BYTES {
            seeds.add("component", bytes)?;
            let mut one = embedded_manifest.clone();
            // A bundle of that one transformer: its renderer is another component.
            one.as_object_mut().map(|m| m.remove("renderer"));
            one["transformers"] =
                Value::Object(Map::from_iter([(fqn.clone(), transformer.clone())]));
            let components = BTreeMap::from([(entry.to_owned(), bytes.to_vec())]);
            seeds.add("bundle", &format::pack(one, &components)?.bytes)?;
        }
    }
    if let Some(entry) = embedded_manifest["renderer"]["component"].as_str()
        && let Some(bytes) = embedded.components.get(entry)
        && bytes.len() <= MAX_SEED_BYTES
    {
        seeds.add("component", bytes)?;
    }
    let mut not_wasm = embedded_manifest.clone();
    not_wasm.as_object_mut().map(|m| m.remove("renderer"));
    if let Some((fqn, transformer)) = embedded_manifest["transformers"]
        .as_object()
        .and_then(|all| all.iter().next())
    {
        let mut transformer = transformer.clone();
        transformer["component"] = "not-wasm".into();
        transformer.as_object_mut().map(|t| t.remove("digest"));
        not_wasm["transformers"] = Value::Object(Map::from_iter([(fqn.clone(), transformer)]));
        let components = BTreeMap::from([("not-wasm".to_owned(), b"not wasm".to_vec())]);
        seeds.add("bundle", &format::pack(not_wasm, &components)?.bytes)?;
    }
    seeds.add("component", b"\0asm\x01\0\0\0")?;

    for dir in &examples {
        let text = std::fs::read_to_string(dir.join("rendered.yaml"))?;
        let mut objects = String::new();
        for document in text.split("\n---\n") {
            let document = document.trim_start_matches("---\n");
            if document.trim().is_empty() {
                continue;
            }
            let value: Value = serde_saphyr::from_str(document)?;
            let json = serde_json::to_string(&value)?;
            seeds.add("output", json.as_bytes())?;
            objects.push_str(&json);
            objects.push('\n');
        }
        // A module with patches, NUL, what it renders.
        let module = std::fs::read(dir.join("module.yaml"))?;
        if module.windows(9).any(|w| w == b"\npatches:") {
            let mut input = module;
            input.push(0);
            input.extend_from_slice(objects.as_bytes());
            seeds.add("patch", &input)?;
        }
    }

    for expression in [
        "config.text.replace('a', 'bb') + '-tls'",
        "config.items.map(i, i + '-x').join(',')",
        "config.items.all(i, config.items.exists(j, i == j))",
        "config.ini.map(s, '[' + s + ']' + config.ini[s].map(k, k + '=' + config.ini[s][k]).join(';'))",
        "size(config.items) > 3 ? 'many' : 'few'",
    ] {
        seeds.add("cel", expression.as_bytes())?;
    }
    for layout in [
        &b"\x03stream.yaml\tb4,y0,b4,y1,b4,y2"[..],
        b"\x02deployment-api.yaml\ty0\nservice-api.yaml\ty1",
        b"\x02compose.yaml\tb100\nsecrets/db/password\tb12\n!1",
    ] {
        seeds.add("layout", layout)?;
    }

    for seed in registry_seeds()? {
        seeds.add("registry", &seed)?;
    }

    for (target, count) in &seeds.written {
        println!("{target}: {count} seeds");
    }
    Ok(())
}

/// What a registry sends opm: a provider manifest as `opm provider push` writes it, an index
/// listing it, a tag list, token responses and challenges.
fn registry_seeds() -> Result<Vec<Vec<u8>>, Box<dyn std::error::Error>> {
    let descriptor = oci::attached::descriptor;
    let manifest = serde_json::to_vec(&oci::Manifest {
        schema_version: 2,
        media_type: Some(oci::MANIFEST_MEDIA_TYPE.to_owned()),
        artifact_type: Some(oci::ARTIFACT_TYPE.to_owned()),
        config: descriptor(oci::CONFIG_MEDIA_TYPE, b"{}"),
        layers: vec![
            descriptor(oci::BUNDLE_MEDIA_TYPE, b"bundle"),
            descriptor(oci::SIGNATURE_MEDIA_TYPE, b"signature"),
        ],
        annotations: Some(BTreeMap::from([
            (oci::NAME_ANNOTATION.to_owned(), "kubernetes".to_owned()),
            (oci::VERSION_ANNOTATION.to_owned(), "0.2.0".to_owned()),
        ])),
        subject: None,
    })?;
    // A signature attached to it: a referrer manifest, its `subject` the manifest.
    let referrer = oci::attached::referrer(
        descriptor(oci::MANIFEST_MEDIA_TYPE, &manifest),
        br#"{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"}"#,
    );
    let mut listed = descriptor(oci::MANIFEST_MEDIA_TYPE, &manifest);
    listed.artifact_type = Some(oci::ARTIFACT_TYPE.to_owned());
    let index = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": oci::INDEX_MEDIA_TYPE,
        "manifests": [listed],
    }))?;
    Ok(vec![
        manifest,
        referrer,
        index,
        br#"{"name": "opm/kubernetes", "tags": ["0.1.0", "0.2.0", "latest"]}"#.to_vec(),
        br#"{"token": "eyJhbGciOiJFUzI1NiJ9.e30.c2ln", "expires_in": 300}"#.to_vec(),
        br#"{"access_token": "abc", "token": ""}"#.to_vec(),
        br#"Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:opm/kubernetes:pull""#.to_vec(),
        br#"Basic realm="Registry Realm", Bearer realm="https://a/t", error="insufficient_scope""#.to_vec(),
    ])
}

/// The example directories, sorted.
fn examples(repo: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(repo.join("examples"))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    dirs.retain(|dir| dir.join("module.yaml").is_file());
    dirs.sort();
    Ok(dirs)
}

struct Seeds {
    corpus: PathBuf,
    written: BTreeMap<&'static str, usize>,
}

impl Seeds {
    fn add(&mut self, target: &'static str, bytes: &[u8]) -> std::io::Result<()> {
        let dir = self.corpus.join(target);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(format::hex_digest(bytes)), bytes)?;
        *self.written.entry(target).or_default() += 1;
        Ok(())
    }
}
