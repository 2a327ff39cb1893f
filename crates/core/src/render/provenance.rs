//! The provenance of a render: the small file ([`FILE`]) that `--out-dir` and `opm mod push`
//! write beside the rendered files, saying what they were rendered from — the command that
//! reproduces them and its inputs, the source revision, the BLAKE3 digests of the module file
//! and the values, every provider's name, version and digest, opm's version — and the SHA-256 of
//! every file written, as `sha256sum` prints it. The same inputs give it byte for byte: nothing
//! in it depends on the machine, the clock or the order of anything.
//!
//! `opm mod verify-render DIR` reads it back ([`read`]), renders those inputs again and compares
//! ([`compare`]).
//!
//! Its name has no `.yaml`, `.yml` or `.json` extension, so that what reads a directory of
//! manifests — `kubectl apply -f`, Flux's generated kustomization, an Argo CD directory source —
//! passes it by (each of them fails on a JSON file that is not a Kubernetes object).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::Digest as _;

/// The provenance file's name, in `--out-dir` and at the root of a pushed artifact's layer.
pub const FILE: &str = "opm.render";

/// The `apiVersion` of the format.
pub const API_VERSION: &str = "opm.dev/render/v1";

/// The largest provenance file opm reads.
pub const MAX_BYTES: u64 = 16 << 20;

/// What a render was made from and what it wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Provenance {
    /// [`API_VERSION`].
    pub api_version: String,
    /// The command that renders these files again, run where this one ran (paths as given).
    pub command: String,
    /// The render's inputs, as the command gives them.
    pub inputs: Inputs,
    /// Where the module's source is, when it is a git checkout (or a flag said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// The module rendered.
    pub module: ModuleId,
    /// The digests of the values: each file's and the `--set` assignments'.
    pub values: Values,
    /// Every provider of the render.
    pub providers: Vec<ProviderId>,
    /// The version of opm that rendered.
    pub opm: String,
    /// Every file written but this one, by path, with its SHA-256 (hex).
    pub files: Vec<FileDigest>,
}

/// The flags of a render that change what it writes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Inputs {
    /// The module file, as given.
    pub module: String,
    /// Values files (`-f`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
    /// `--set` assignments, in order; a sensitive value is written `[redacted]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<String>,
    /// Providers (`-p`), as given; none: the project's, else the embedded one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<String>,
    /// `--renderer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renderer: Option<String>,
    /// `-n`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `--instance`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// `--strict`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub strict: bool,
    /// `-o`.
    pub output: String,
    /// `--split`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub split: bool,
    /// `--flux`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub flux: bool,
    /// `--allow-env`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_env: Vec<String>,
    /// The environment variables `${env:…}` read, by name (never their values).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_read: Vec<String>,
    /// `SOURCE_DATE_EPOCH`, when it was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_date_epoch: Option<i64>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// Where the module's source is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Source {
    /// The repository's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The revision: `sha1:COMMIT` from a git checkout, or as a flag or Argo CD gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

/// The module rendered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModuleId {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The instance rendered.
    pub instance: String,
    /// The namespace rendered into.
    pub namespace: String,
    /// `blake3:` of the module file's bytes.
    pub digest: String,
}

/// The digests of the values a render was given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Values {
    /// `blake3:` of everything below together: what changes when any value does.
    pub digest: String,
    /// Each values file, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileId>,
    /// `blake3:` of the `--set` assignments as recorded (a sensitive value redacted), one per
    /// line; absent without any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<String>,
}

/// A values file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileId {
    /// As given.
    pub path: String,
    /// `blake3:` of its bytes; none for what is not a regular file (a pipe, read once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// A provider of the render.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderId {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its bundle digest (`blake3:` of the canonical manifest); a provider rendered from a
    /// source directory has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// A file written, with its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileDigest {
    /// Relative, `/`-separated.
    pub path: String,
    /// Lowercase hex, as `sha256sum` prints it.
    pub sha256: String,
}

/// `blake3:<hex>` of `bytes`.
pub fn blake3_digest(bytes: &[u8]) -> String {
    format!("blake3:{}", blake3::hash(bytes).to_hex())
}

/// The lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    crate::provider::oci::documents::hex(&sha2::Sha256::digest(bytes))
}

/// The lowercase hex SHA-256 of what `reader` holds, read in chunks.
pub fn sha256_hex_of(mut reader: impl std::io::Read) -> std::io::Result<String> {
    let mut hasher = sha2::Sha256::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        match reader.read(&mut chunk)? {
            0 => break,
            read => hasher.update(&chunk[..read]),
        }
    }
    Ok(crate::provider::oci::documents::hex(&hasher.finalize()))
}

/// The digests of the values files (path and bytes, in order; no bytes for one that could not
/// be read again) and the `--set` assignments.
pub fn values(files: &[(String, Option<Vec<u8>>)], set: &[String]) -> Values {
    let files: Vec<FileId> = files
        .iter()
        .map(|(path, bytes)| FileId {
            path: path.clone(),
            digest: bytes.as_deref().map(blake3_digest),
        })
        .collect();
    let set = (!set.is_empty()).then(|| blake3_digest(set.join("\n").as_bytes()));
    let mut all = String::new();
    for file in &files {
        all.push_str(file.digest.as_deref().unwrap_or("-"));
        all.push('\n');
    }
    all.push_str(set.as_deref().unwrap_or_default());
    Values {
        digest: blake3_digest(all.as_bytes()),
        files,
        set,
    }
}

/// The SHA-256 of each file, sorted by path.
pub fn file_digests<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Vec<FileDigest> {
    let mut digests: Vec<FileDigest> = files
        .into_iter()
        .map(|(path, bytes)| FileDigest {
            path: path.to_owned(),
            sha256: sha256_hex(bytes),
        })
        .collect();
    digests.sort_by(|a, b| a.path.cmp(&b.path));
    digests
}

/// One argument of a command line, quoted for a POSIX shell when it needs to be.
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@,+%".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

impl Inputs {
    /// The `opm mod build` command line of these inputs, each argument quoted for a shell;
    /// `--out-dir DIR` when the render wrote a directory.
    pub fn command(&self, out_dir: bool) -> String {
        let mut words: Vec<String> = vec!["opm".into(), "mod".into(), "build".into()];
        words.push(self.module.clone());
        let mut flag = |name: &str, value: &str| {
            words.push(name.to_owned());
            words.push(value.to_owned());
        };
        for values in &self.values {
            flag("-f", values);
        }
        for set in &self.set {
            flag("--set", set);
        }
        for provider in &self.providers {
            flag("-p", provider);
        }
        if let Some(renderer) = &self.renderer {
            flag("--renderer", renderer);
        }
        if let Some(namespace) = &self.namespace {
            flag("-n", namespace);
        }
        if let Some(instance) = &self.instance {
            flag("--instance", instance);
        }
        for allow in &self.allow_env {
            flag("--allow-env", allow);
        }
        if self.output != "yaml" {
            flag("-o", &self.output.clone());
        }
        if self.strict {
            words.push("--strict".into());
        }
        if self.flux {
            words.push("--flux".into());
        }
        if self.split {
            words.push("--split".into());
        }
        if out_dir {
            words.push("--out-dir".into());
            words.push("DIR".into());
        }
        let command = words
            .iter()
            .map(|w| shell_word(w))
            .collect::<Vec<_>>()
            .join(" ");
        match self.source_date_epoch {
            Some(seconds) => format!("SOURCE_DATE_EPOCH={seconds} {command}"),
            None => command,
        }
    }
}

impl Provenance {
    /// The file's bytes: indented JSON, keys in a fixed order, ending in a newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("a provenance serialises");
        bytes.push(b'\n');
        bytes
    }

    /// The annotations of a pushed artifact that say the same (opm's own, under
    /// `dev.opmodel.render.`).
    pub fn annotations(&self) -> BTreeMap<String, String> {
        let key = |name: &str| format!("{}{name}", super::artifact::RENDER_ANNOTATION_PREFIX);
        let mut annotations = BTreeMap::from([
            (key("module"), self.module.name.clone()),
            (key("module-version"), self.module.version.clone()),
            (key("instance"), self.module.instance.clone()),
            (key("namespace"), self.module.namespace.clone()),
            (key("module-digest"), self.module.digest.clone()),
            (key("values-digest"), self.values.digest.clone()),
            (key("opm-version"), self.opm.clone()),
        ]);
        for provider in &self.providers {
            let mut value = provider.version.clone();
            if let Some(digest) = &provider.digest {
                value.push(' ');
                value.push_str(digest);
            }
            annotations.insert(key(&format!("provider.{}", provider.name)), value);
        }
        annotations
    }
}

/// Reads a provenance file's bytes (at most [`MAX_BYTES`]: the caller bounds the read).
pub fn read(bytes: &[u8]) -> Result<Provenance, String> {
    let provenance: Provenance =
        serde_json::from_slice(bytes).map_err(|e| format!("it is not opm's provenance: {e}"))?;
    if provenance.api_version != API_VERSION {
        return Err(format!(
            "its apiVersion is {:?}; this opm reads {API_VERSION}",
            crate::printable::escape(&provenance.api_version)
        ));
    }
    Ok(provenance)
}

/// How a directory differs from what its inputs render.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Differences {
    /// Files whose bytes differ from the render's.
    pub changed: Vec<String>,
    /// Files the render writes that the directory lacks.
    pub missing: Vec<String>,
    /// Files in the directory that the render does not write.
    pub extra: Vec<String>,
}

impl Differences {
    /// Whether the directory is exactly the render.
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.missing.is_empty() && self.extra.is_empty()
    }
}

/// How the files `found` (path and SHA-256) differ from those `rendered` (path and SHA-256),
/// each list in any order.
pub fn compare(found: &[FileDigest], rendered: &[FileDigest]) -> Differences {
    let found: BTreeMap<&str, &str> = found
        .iter()
        .map(|f| (f.path.as_str(), f.sha256.as_str()))
        .collect();
    let rendered: BTreeMap<&str, &str> = rendered
        .iter()
        .map(|f| (f.path.as_str(), f.sha256.as_str()))
        .collect();
    let mut differences = Differences::default();
    for (path, digest) in &rendered {
        match found.get(path) {
            None => differences.missing.push((*path).to_owned()),
            Some(other) if other != digest => differences.changed.push((*path).to_owned()),
            Some(_) => {}
        }
    }
    differences.extra = found
        .keys()
        .filter(|path| !rendered.contains_key(*path))
        .map(|path| (*path).to_owned())
        .collect();
    differences
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Provenance {
        let inputs = Inputs {
            module: "examples/shop/module.yaml".into(),
            values: vec!["prod values.yaml".into()],
            set: vec!["replicas=3".into()],
            output: "yaml".into(),
            split: true,
            source_date_epoch: Some(1_700_000_000),
            ..Inputs::default()
        };
        Provenance {
            api_version: API_VERSION.into(),
            command: inputs.command(true),
            inputs,
            source: None,
            module: ModuleId {
                name: "shop".into(),
                version: "1.2.0".into(),
                instance: "shop".into(),
                namespace: "shops".into(),
                digest: blake3_digest(b"module"),
            },
            values: values(&[("prod values.yaml".into(), Some(b"a: 1".to_vec()))], &[]),
            providers: vec![ProviderId {
                name: "kubernetes".into(),
                version: "0.2.0".into(),
                digest: Some("blake3:00".into()),
            }],
            opm: "0.1.0".into(),
            files: file_digests([("b.yaml", &b"b"[..]), ("a.yaml", &b"a"[..])]),
        }
    }

    #[test]
    fn it_reads_back_what_it_writes_and_names_the_command() {
        let provenance = sample();
        assert_eq!(read(&provenance.to_bytes()).unwrap(), provenance);
        assert_eq!(
            provenance.command,
            "SOURCE_DATE_EPOCH=1700000000 opm mod build examples/shop/module.yaml \
             -f 'prod values.yaml' --set replicas=3 --split --out-dir DIR"
        );
        assert_eq!(provenance.files[0].path, "a.yaml");
        // `sha256sum` of "a".
        assert_eq!(
            provenance.files[0].sha256,
            "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
        );
        assert!(read(br#"{"apiVersion": "opm.dev/render/v9"}"#).is_err());
    }

    #[test]
    fn the_values_digest_changes_with_any_value() {
        let one = values(&[("v.yaml".into(), Some(b"a: 1".to_vec()))], &[]);
        let two = values(&[("v.yaml".into(), Some(b"a: 2".to_vec()))], &[]);
        let three = values(
            &[("v.yaml".into(), Some(b"a: 1".to_vec()))],
            &["b=1".into()],
        );
        assert_ne!(one.digest, two.digest);
        assert_ne!(one.digest, three.digest);
    }

    #[test]
    fn compare_names_changed_missing_and_extra_files() {
        let rendered = file_digests([("a", &b"1"[..]), ("b", &b"2"[..]), ("c", &b"3"[..])]);
        let found = file_digests([("a", &b"1"[..]), ("b", &b"x"[..]), ("d", &b"4"[..])]);
        let differences = compare(&found, &rendered);
        assert_eq!(differences.changed, ["b"]);
        assert_eq!(differences.missing, ["c"]);
        assert_eq!(differences.extra, ["d"]);
        assert!(compare(&rendered, &rendered).is_empty());
    }
}
