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

/// The inputs of `request` as its command line gives them; a `--set` value the redactor
/// masks is written `[redacted]`.
pub fn inputs(
    request: &Request,
    render: &Render,
    redactor: &Redactor,
    source_date_epoch: Option<i64>,
) -> Inputs {
    let path = |p: &Path| p.display().to_string();
    Inputs {
        module: path(&request.module),
        values: request.values.iter().map(|p| path(p)).collect(),
        set: request
            .set
            .iter()
            .map(|set| redactor.redact(set).into_owned())
            .collect(),
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
    let source_date_epoch = match env("SOURCE_DATE_EPOCH") {
        Some(text) => Some(text.trim().parse::<i64>().map_err(|_| {
            anyhow::anyhow!(
                "SOURCE_DATE_EPOCH={text:?} is not a number of seconds since 1970-01-01"
            )
        })?),
        None => None,
    };
    let inputs = inputs(request, render, redactor, source_date_epoch);
    let module_file = opm_core::module::module_file(&request.module);
    let module_bytes = std::fs::read(&module_file)
        .with_context(|| format!("reading {} again for its digest", module_file.display()))?;
    let values_files = request
        .values
        .iter()
        .map(|p| {
            std::fs::read(p)
                .map(|bytes| (p.display().to_string(), bytes))
                .with_context(|| format!("reading {} again for its digest", p.display()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
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
        values: provenance::values(&values_files, &request.set),
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
    files.push(OutputFile {
        path: provenance::FILE.to_owned(),
        bytes: provenance.to_bytes(),
    });
    files
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
    let found = files_in(dir)?;
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
    let render = built.render?;
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

/// Every regular file under `dir` but the provenance and opm's record, with its SHA-256.
fn files_in(dir: &Path) -> anyhow::Result<Vec<provenance::FileDigest>> {
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
            } else if prefix.is_empty()
                && (name == provenance::FILE || name == super::write::MANIFEST)
            {
                continue;
            } else {
                let bytes = std::fs::read(entry.path())
                    .with_context(|| format!("reading {}", entry.path().display()))?;
                files.push(provenance::FileDigest {
                    path: relative,
                    sha256: provenance::sha256_hex(&bytes),
                });
            }
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
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
/// the remote `origin` (any user name and password in it left out) and the revision
/// `BRANCH@sha1:COMMIT` (`sha1:COMMIT` on a detached head), as Flux writes revisions. `None`
/// outside a checkout or without `git`.
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
    // The commit, then the branch (`--abbrev-ref` applies to the names after it).
    let heads = git(&["rev-parse", "HEAD", "--abbrev-ref", "HEAD"])?;
    let (commit, branch) = heads.split_once('\n')?;
    let revision = match branch.trim() {
        "HEAD" | "" => format!("sha1:{}", commit.trim()),
        branch => format!("{branch}@sha1:{}", commit.trim()),
    };
    let url = git(&["config", "--get", "remote.origin.url"])
        .filter(|url| !url.is_empty())
        .map(|url| without_credentials(&url));
    Some(Source {
        url,
        revision: Some(revision),
    })
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
