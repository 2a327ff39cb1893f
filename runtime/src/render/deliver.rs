//! What a render delivers beside its files: its provenance
//! ([`opm_core::render::provenance`]), made here from the request, the render and the files the
//! request read (the module file, the values files), with the module's source from its git
//! checkout ([`git_source`]); and the files `--out-dir` and `opm mod push` write, the
//! renderer's and the provenance ([`files`]).

use std::path::Path;

use anyhow::Context as _;

use super::{OutputFile, Render, Request};
use opm_core::redact::Redactor;
use opm_core::render::provenance::{self, Inputs, ModuleId, Provenance, Source};

/// The inputs of `request` as its command line gives them; a `--set` whose value holds a
/// sensitive value (of any length) is written `PATH=[redacted]`.
pub fn inputs(
    request: &Request,
    render: &Render,
    redactor: &Redactor,
    source_date_epoch: Option<i64>,
) -> Inputs {
    let path = |p: &Path| p.display().to_string();
    Inputs {
        module: request
            .module_reference
            .clone()
            .unwrap_or_else(|| path(&request.module)),
        values: request.values.iter().map(|p| path(p)).collect(),
        set: recorded_set(&request.set, redactor),
        providers: request.providers.clone(),
        renderer: request.renderer.clone(),
        namespace: request.namespace.clone(),
        instance: request.instance.clone(),
        strict: request.strict,
        output: request.output.format.clone(),
        split: request.output.split,
        flux: request.flux,
        allow_env: request.allow_env.clone().unwrap_or_default(),
        env_read: render.plan.env_read().to_vec(),
        source_date_epoch,
    }
}

/// The `--set` assignments as a provenance keeps them: one whose value holds a sensitive value
/// as `PATH=[redacted]`.
fn recorded_set(set: &[String], redactor: &Redactor) -> Vec<String> {
    set.iter()
        .map(|assignment| match assignment.split_once('=') {
            Some((path, value))
                if redactor.holds_secret(value) || redactor.holds_secret(assignment) =>
            {
                format!("{path}={}", opm_core::redact::REDACTED)
            }
            _ => assignment.clone(),
        })
        .collect()
}

/// The provenance of `render`, a render of `request` that succeeded, whose files are `files`:
/// the module file and the values files are read again for their digests. `source` is where
/// the module's source is, if known.
pub fn provenance(
    request: &Request,
    render: &Render,
    redactor: &Redactor,
    env: &dyn Fn(&str) -> Option<String>,
    source: Option<Source>,
) -> anyhow::Result<Provenance> {
    let source_date_epoch = super::context::epoch_seconds(env("SOURCE_DATE_EPOCH").as_deref())
        .map_err(anyhow::Error::msg)?;
    let inputs = inputs(request, render, redactor, source_date_epoch);
    let module_file = opm_core::module::module_file(&request.module);
    let module_bytes = std::fs::read(&module_file)
        .with_context(|| format!("reading {} again for its digest", module_file.display()))?;
    // Read again for their digests: only regular files, for what the render read from a pipe
    // (`-f <(sops -d …)`) cannot be read twice; such a file is recorded without a digest.
    let values_files = request
        .values
        .iter()
        .map(|p| {
            let regular = std::fs::metadata(p).is_ok_and(|m| m.is_file());
            let bytes = regular
                .then(|| std::fs::read(p))
                .transpose()
                .with_context(|| format!("reading {} again for its digest", p.display()))?;
            Ok((p.display().to_string(), bytes))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let values = provenance::values(&values_files, &inputs.set);
    let context = &render.context;
    let mut providers = render.providers.clone();
    providers.sort();
    Ok(Provenance {
        api_version: provenance::API_VERSION.to_owned(),
        command: inputs.command(request.output.directory),
        inputs,
        source,
        module: ModuleId {
            name: context.name.clone(),
            version: context.version.clone(),
            instance: context.instance.clone(),
            namespace: context.namespace.clone(),
            digest: provenance::blake3_digest(&module_bytes),
        },
        // The digest of the assignments as recorded: a sensitive value's digest would let a
        // weak one be guessed offline.
        values,
        providers,
        opm: opm_core::provider::OPM_VERSION.to_owned(),
        files: provenance::file_digests(
            render
                .rendered
                .files
                .iter()
                .map(|f| (f.path.as_str(), &f.bytes[..])),
        ),
    })
}

/// The files of a render as `--out-dir` writes them and `opm mod push` packs them: the
/// renderer's, then the provenance.
pub fn files(render: &Render, provenance: &Provenance) -> Vec<OutputFile> {
    let mut files = render.rendered.files.clone();
    files.push(OutputFile::regular(provenance::FILE, provenance.to_bytes()));
    files
}

/// The OCI artifact of a render's `files` (as [`files`] gives them) with its `provenance`:
/// what `opm mod push` pushes, and `opm platform build --push` for each release. The layer's
/// files carry `SOURCE_DATE_EPOCH` (else 0) as their time, and the manifest the provenance's
/// annotations, the render's time, and its source.
pub fn artifact(
    files: &[OutputFile],
    provenance: &Provenance,
) -> anyhow::Result<opm_core::render::artifact::Artifact> {
    use opm_core::render::artifact::{self, LayerFile};
    let layer_files: Vec<LayerFile<'_>> = files
        .iter()
        .map(|f| LayerFile {
            path: &f.path,
            bytes: &f.bytes,
            mode: f.mode,
        })
        .collect();
    let epoch = provenance.inputs.source_date_epoch;
    let mtime = epoch.unwrap_or(0).max(0).unsigned_abs();
    let mut annotations = provenance.annotations();
    annotations.insert(
        artifact::CREATED_ANNOTATION.to_owned(),
        super::context::timestamp(epoch.map(|seconds| seconds.to_string()).as_deref())
            .map_err(anyhow::Error::msg)?,
    );
    if let Some(source) = &provenance.source {
        let mut put = |key: &str, value: &Option<String>| {
            if let Some(value) = value {
                annotations.insert(key.to_owned(), value.clone());
            }
        };
        put(artifact::SOURCE_ANNOTATION, &source.url);
        put(artifact::REVISION_ANNOTATION, &source.revision);
    }
    artifact::build(&layer_files, mtime, annotations)
}

/// Pushes `artifact` to `target`: its config blob and layer, then its manifest.
pub fn push_artifact(
    target: &opm_core::provider::oci::OciRef,
    artifact: &opm_core::render::artifact::Artifact,
    options: &opm_registry::Options,
) -> anyhow::Result<()> {
    let blobs = artifact
        .blobs()
        .into_iter()
        .zip(["the config blob", "the layer"])
        .map(|((_, bytes), what)| (what.to_owned(), bytes.to_vec()))
        .collect();
    let pushed = opm_registry::push_artifact(target, blobs, artifact.manifest.clone(), options)?;
    debug_assert_eq!(pushed.manifest_digest, artifact.digest);
    Ok(())
}

/// The files of the `--out-dir` directory `dir`, as its record lists them (so in the order
/// they were written: the renderer's, then the provenance), with the provenance: what
/// [`artifact`] makes the artifact of, read back from disk.
pub fn read_out_dir(dir: &Path) -> anyhow::Result<(Vec<OutputFile>, Provenance)> {
    let listed = opm_core::render::write::recorded(dir)?;
    let files = listed
        .into_iter()
        .map(|(path, mode)| {
            let full = dir.join(&path);
            let bytes =
                std::fs::read(&full).with_context(|| format!("reading {}", full.display()))?;
            Ok(OutputFile { path, bytes, mode })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok((files, read_provenance(dir)?))
}

/// What `opm mod verify-render` found.
#[derive(Debug)]
pub enum Verdict {
    /// The directory holds exactly what its recorded inputs render: this many files.
    Same(usize),
    /// It does not: what differs, a line each.
    Different(Vec<String>),
}

/// Renders the inputs `dir`'s provenance records again and compares every file `dir` holds
/// with that render (`opm mod verify-render DIR`): a file edited since the render, one missing,
/// one added, a render that differs because an input changed (the module file, a values file,
/// a provider, opm) — each is a line of [`Verdict::Different`] naming it. `set` gives again the
/// `--set` assignments the provenance holds redacted (`PATH=VALUE`, by path). The render is run
/// as `mod build` runs it (`base` for jobs, limits and cache), with the recorded
/// `SOURCE_DATE_EPOCH`.
pub fn verify(
    dir: &Path,
    set: &[String],
    base: Request,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> anyhow::Result<Verdict> {
    let recorded = read_provenance(dir)?;
    let found = files_in(dir, &[provenance::FILE, super::write::MANIFEST])?;
    let mut lines = Vec::new();
    let recorded_differences = provenance::compare(&found, &recorded.files);
    for path in &recorded_differences.changed {
        lines.push(format!(
            "{path}: changed since the render (its SHA-256 is not the one {} records)",
            provenance::FILE
        ));
    }
    for path in &recorded_differences.missing {
        lines.push(format!("{path}: missing (the render wrote it)"));
    }
    for path in &recorded_differences.extra {
        lines.push(format!("{path}: not written by the render"));
    }

    let request = request_of(&recorded.inputs, set, base)?;
    let epoch = recorded.inputs.source_date_epoch.map(|s| s.to_string());
    let render_env = |name: &str| match name {
        "SOURCE_DATE_EPOCH" => epoch.clone(),
        _ => env(name),
    };
    let built = super::build(&request, &render_env);
    // Its errors may quote a sensitive value given again with --set: redacted, as a render's are.
    let render = built
        .render
        .map_err(|e| anyhow::anyhow!("{}", built.redactor.redact(&format!("{e:#}"))))?;
    if render.failed() {
        anyhow::bail!(
            "the inputs {} records do not render now (run `{}` to see why)",
            provenance::FILE,
            recorded.command
        );
    }
    let fresh = provenance(
        &request,
        &render,
        &built.redactor,
        &render_env,
        recorded.source.clone(),
    )?;
    lines.extend(widened_modes(dir, &render.rendered.files));
    render.free();
    if fresh.module.digest != recorded.module.digest {
        lines.push(format!(
            "the module file {} changed since the render ({} recorded, {} now)",
            recorded.inputs.module, recorded.module.digest, fresh.module.digest
        ));
    }
    if fresh.values.digest != recorded.values.digest {
        lines.push("the values changed since the render (their digest differs)".to_owned());
    }
    if fresh.providers != recorded.providers {
        let names = |ids: &[provenance::ProviderId]| {
            ids.iter()
                .map(|p| format!("{} {}", p.name, p.version))
                .collect::<Vec<_>>()
                .join(", ")
        };
        lines.push(format!(
            "the providers changed since the render ({} recorded, {} now, or their digests)",
            names(&recorded.providers),
            names(&fresh.providers)
        ));
    }
    if fresh.opm != recorded.opm {
        lines.push(format!(
            "opm {} rendered it, and this is opm {}",
            recorded.opm, fresh.opm
        ));
    }
    let rendered_differences = provenance::compare(&found, &fresh.files);
    for path in &rendered_differences.changed {
        if !recorded_differences.changed.contains(path) {
            lines.push(format!("{path}: differs from what the inputs render now"));
        }
    }
    for path in &rendered_differences.missing {
        if !recorded_differences.missing.contains(path) {
            lines.push(format!("{path}: missing (the inputs render it now)"));
        }
    }
    for path in &rendered_differences.extra {
        if !recorded_differences.extra.contains(path) {
            lines.push(format!("{path}: not rendered by the inputs now"));
        }
    }
    Ok(if lines.is_empty() {
        Verdict::Same(found.len())
    } else {
        Verdict::Different(lines)
    })
}

/// The provenance in `dir`, read with its size bounded.
fn read_provenance(dir: &Path) -> anyhow::Result<Provenance> {
    use std::io::Read as _;
    let path = dir.join(provenance::FILE);
    let file = std::fs::File::open(&path).with_context(|| {
        format!(
            "{} has no {} (an --out-dir of this opm writes one)",
            dir.display(),
            provenance::FILE
        )
    })?;
    let mut bytes = Vec::new();
    file.take(provenance::MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {}", path.display()))?;
    anyhow::ensure!(
        bytes.len() as u64 <= provenance::MAX_BYTES,
        "{} is over {} bytes, the most opm reads",
        path.display(),
        provenance::MAX_BYTES
    );
    provenance::read(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// A line for each file of `rendered` that the render writes private (0600) and that `dir`
/// holds readable or writable by others: a mode is not in the provenance's digests, and a
/// Secret's file opened up since the render is what a review of the directory must hear of.
fn widened_modes(dir: &Path, rendered: &[OutputFile]) -> Vec<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        rendered
            .iter()
            .filter(|file| file.mode == opm_core::render::FileMode::Private)
            .filter_map(|file| {
                let mode = std::fs::symlink_metadata(dir.join(&file.path))
                    .ok()?
                    .permissions()
                    .mode()
                    & 0o777;
                (mode & 0o077 != 0).then(|| {
                    format!(
                        "{}: mode {mode:04o} lets others read it, and the render writes it 0600",
                        file.path
                    )
                })
            })
            .collect()
    }
    #[cfg(not(unix))]
    {
        let _ = (dir, rendered);
        Vec::new()
    }
}

/// Everything under `dir` but the files of its root named in `skip`, with its SHA-256: each
/// regular file read in chunks, anything else (a link, which is not followed, a pipe) as not
/// one. By path.
pub fn files_in(dir: &Path, skip: &[&str]) -> anyhow::Result<Vec<provenance::FileDigest>> {
    let mut files = Vec::new();
    let mut folders = vec![(dir.to_owned(), String::new())];
    while let Some((folder, prefix)) = folders.pop() {
        for entry in
            std::fs::read_dir(&folder).with_context(|| format!("reading {}", folder.display()))?
        {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = format!("{prefix}{name}");
            let kind = entry.file_type()?;
            if kind.is_dir() {
                folders.push((entry.path(), format!("{relative}/")));
            } else if prefix.is_empty() && skip.contains(&name.as_str()) {
                continue;
            } else if kind.is_file() {
                files.push(provenance::FileDigest {
                    path: relative,
                    sha256: sha256_of_file(&entry.path())?,
                });
            } else {
                // A link, a pipe or a device: not what a render writes, and not followed.
                files.push(provenance::FileDigest {
                    path: relative,
                    sha256: "not a regular file".to_owned(),
                });
            }
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// The SHA-256 (hex) of the file at `path`, read in chunks.
fn sha256_of_file(path: &Path) -> anyhow::Result<String> {
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    provenance::sha256_hex_of(file).with_context(|| format!("reading {}", path.display()))
}

/// The request of recorded `inputs`, `set` giving redacted assignments again, otherwise as
/// `base` (jobs, limits, cache).
fn request_of(inputs: &Inputs, set: &[String], base: Request) -> anyhow::Result<Request> {
    let path_of = |assignment: &str| assignment.split_once('=').map(|(p, _)| p.to_owned());
    let mut assignments = Vec::new();
    for recorded in &inputs.set {
        if !recorded.contains(opm_core::redact::REDACTED) {
            assignments.push(recorded.clone());
            continue;
        }
        let path = path_of(recorded).unwrap_or_default();
        let given = set
            .iter()
            .find(|s| path_of(s).as_deref() == Some(path.as_str()))
            .with_context(|| {
                format!(
                    "the render was given a sensitive value by --set {path}=…, which {}                      does not record: give it again with --set {path}=VALUE",
                    provenance::FILE
                )
            })?;
        assignments.push(given.clone());
    }
    Ok(Request {
        module: inputs.module.clone().into(),
        values: inputs.values.iter().map(Into::into).collect(),
        set: assignments,
        strict: inputs.strict,
        instance: inputs.instance.clone(),
        providers: inputs.providers.clone(),
        renderer: inputs.renderer.clone(),
        allow_env: (!inputs.allow_env.is_empty()).then(|| inputs.allow_env.clone()),
        namespace: inputs.namespace.clone(),
        output: super::OutputOptions {
            format: inputs.output.clone(),
            split: inputs.split,
            directory: true,
        },
        flux: inputs.flux,
        ..base
    })
}

/// Where the module at `module` comes from, read from the git checkout it is in: the URL of
/// the remote `origin`, normalized ([`normalized_url`]), and the revision `sha1:COMMIT` — the
/// commit alone, not the branch, so that the same commit gives the same bytes whichever way it
/// was cloned and checked out (CI checks out a detached head). `None` outside a checkout or
/// without `git`.
pub fn git_source(module: &Path) -> Option<Source> {
    let file = opm_core::module::module_file(module);
    let dir = match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => std::path::PathBuf::from("."),
    };
    let git = |args: &[&str]| {
        let output = std::process::Command::new("git")
            .arg("-C")
            .arg(&dir)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        let text = String::from_utf8(output.stdout).ok()?;
        output.status.success().then(|| text.trim().to_owned())
    };
    let commit = git(&["rev-parse", "HEAD"]).filter(|c| !c.is_empty())?;
    let revision = format!("sha1:{commit}");
    let url = git(&["config", "--get", "remote.origin.url"])
        .filter(|url| !url.is_empty())
        .map(|url| normalized_url(&url));
    Some(Source {
        url,
        revision: Some(revision),
    })
}

/// A repository URL as the same for every way of cloning it: scp-like and `ssh://` URLs as
/// `https://HOST/PATH`, no user name or password, no trailing `.git` or `/`
/// (`git@github.com:team/app.git` and `https://ci:token@github.com/team/app` are both
/// `https://github.com/team/app`).
fn normalized_url(url: &str) -> String {
    let url = url.trim();
    let https = match url.split_once("://") {
        Some(("ssh" | "git" | "git+ssh" | "http" | "https", rest)) => {
            without_credentials(&format!("https://{rest}"))
        }
        Some(_) => without_credentials(url),
        // scp-like: [user@]host:path
        None => match url.split_once(':') {
            Some((host, path)) if !host.contains('/') => {
                let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
                format!("https://{host}/{}", path.trim_start_matches('/'))
            }
            _ => url.to_owned(),
        },
    };
    let https = https.trim_end_matches('/');
    https.strip_suffix(".git").unwrap_or(https).to_owned()
}

/// `url` without a user name and password (`https://user:token@host/…` → `https://host/…`).
fn without_credentials(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
            let host = authority
                .rsplit_once('@')
                .map_or(authority, |(_, host)| host);
            if path.is_empty() && !rest.contains('/') {
                format!("{scheme}://{host}")
            } else {
                format!("{scheme}://{host}/{path}")
            }
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whoever can write the directory `verify-render` checks writes its provenance: one over
    /// its limit is refused after reading the limit and one byte, whatever its size.
    #[test]
    fn a_provenance_over_its_limit_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        // Sparse: as large as it says, without the bytes on disk.
        std::fs::File::create(dir.path().join(provenance::FILE))
            .unwrap()
            .set_len(provenance::MAX_BYTES * 4)
            .unwrap();
        let error = read_provenance(dir.path()).unwrap_err().to_string();
        assert!(error.contains("the most opm reads"), "{error}");
    }

    #[test]
    fn every_way_of_cloning_a_repository_gives_one_url() {
        for url in [
            "git@github.com:team/app.git",
            "ssh://git@github.com/team/app.git",
            "https://ci:token@github.com/team/app",
            "https://github.com/team/app.git/",
        ] {
            assert_eq!(normalized_url(url), "https://github.com/team/app", "{url}");
        }
    }

    #[test]
    fn credentials_are_left_out_of_a_source_url() {
        assert_eq!(
            without_credentials("https://ci:s3cret@git.example.com/team/app.git"),
            "https://git.example.com/team/app.git"
        );
        assert_eq!(
            without_credentials("git@github.com:team/app.git"),
            "git@github.com:team/app.git"
        );
        assert_eq!(without_credentials("https://h"), "https://h");
    }
}
