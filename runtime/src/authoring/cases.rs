//! Test cases of a transformer: folders of `component.json` (the component as the host
//! flattens it), an optional `context.json` (fields of the render context, labels as a map) and
//! `expected.json` — `{"resources": [...]}` or `{"error": {"invalid-component": "..."}}` (or
//! `"failed"`). [`run`] runs one in the sandbox with the limits a render uses; [`compare`] says
//! whether it passed and shows a diff when it did not.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use opm_sandbox::{CallError, CompiledTransformer, Limits, Sandbox};

/// The file of a case's expected outcome.
pub const EXPECTED: &str = "expected.json";

/// One case folder, read.
#[derive(Debug, Clone)]
pub struct Case {
    /// The folder's name.
    pub name: String,
    /// The folder.
    pub dir: PathBuf,
    /// `component.json`, re-serialized compactly.
    pub component: String,
    /// The render context.
    pub context: opm_sandbox::Context,
    /// `expected.json`, if there is one.
    pub expected: Option<Value>,
}

/// Reads every case folder of `dir`, in name order.
pub fn load_all(dir: &Path) -> anyhow::Result<Vec<Case>> {
    case_dirs(dir, "component.json")?
        .iter()
        .map(|dir| load(dir))
        .collect()
}

/// The case folders of `dir`, in name order; none is an error, which says that each folder
/// holds `input` and [`EXPECTED`]. Transformer and renderer cases are laid out alike.
pub(crate) fn case_dirs(dir: &Path, input: &str) -> anyhow::Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the case directory {}", dir.display()))?;
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            dirs.push(entry.path());
        }
    }
    dirs.sort();
    if dirs.is_empty() {
        bail!(
            "{} holds no case folders (each a folder with {input} and {EXPECTED})",
            dir.display()
        );
    }
    Ok(dirs)
}

/// Reads the case folder `dir`.
pub fn load(dir: &Path) -> anyhow::Result<Case> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let component = read_json(&dir.join("component.json"))?
        .with_context(|| format!("case {name}: no component.json in {}", dir.display()))?;
    if !component.is_object() {
        bail!(
            "{}: the component must be a JSON object",
            dir.join("component.json").display()
        );
    }
    let context = match read_json(&dir.join("context.json"))? {
        Some(value) => context_from(&value)
            .with_context(|| format!("{}", dir.join("context.json").display()))?,
        None => context_from(&json!({}))?,
    };
    Ok(Case {
        name,
        dir: dir.to_owned(),
        component: component.to_string(),
        context,
        expected: read_json(&dir.join(EXPECTED))?,
    })
}

/// The JSON in `path`, or `None` when there is no such file.
pub(crate) fn read_json(path: &Path) -> anyhow::Result<Option<Value>> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .with_context(|| format!("{} is not JSON", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// The render context of a case: `value`'s fields over the defaults (module `example` 0.1.0 in
/// namespace `default`, provider `example`, the Unix epoch, not strict, no labels; since
/// contract 1.1.0 the module's name, which is the instance's unless `module` says otherwise,
/// and an empty platform, provider version and transformer).
pub fn context_from(value: &Value) -> anyhow::Result<opm_sandbox::Context> {
    const FIELDS: [&str; 11] = [
        "name",
        "namespace",
        "version",
        "provider",
        "timestamp",
        "strict",
        "labels",
        "module",
        "platform",
        "providerVersion",
        "transformer",
    ];
    let map = value
        .as_object()
        .context("the context must be a JSON object")?;
    if let Some(unknown) = map.keys().find(|key| !FIELDS.contains(&key.as_str())) {
        bail!(
            "unknown context field {unknown:?} (known: {})",
            FIELDS.join(", ")
        );
    }
    let text = |key: &str, default: &str| -> anyhow::Result<String> {
        match map.get(key) {
            None => Ok(default.to_owned()),
            Some(Value::String(text)) => Ok(text.clone()),
            Some(other) => bail!("context field {key} must be a string, not {other}"),
        }
    };
    let strict = match map.get("strict") {
        None => false,
        Some(Value::Bool(strict)) => *strict,
        Some(other) => bail!("context field strict must be true or false, not {other}"),
    };
    let mut labels = Vec::new();
    if let Some(value) = map.get("labels") {
        let object = value
            .as_object()
            .context("context field labels must be a map of strings")?;
        for (key, value) in object {
            let value = value
                .as_str()
                .with_context(|| format!("context label {key:?} must be a string"))?;
            labels.push((key.clone(), value.to_owned()));
        }
        labels.sort();
    }
    let name = text("name", "example")?;
    Ok(opm_sandbox::Context {
        module: text("module", &name)?,
        name,
        namespace: text("namespace", "default")?,
        version: text("version", "0.1.0")?,
        provider: text("provider", "example")?,
        timestamp: text("timestamp", "1970-01-01T00:00:00Z")?,
        strict,
        labels,
        platform: text("platform", "")?,
        provider_version: text("providerVersion", "")?,
        transformer: text("transformer", "")?,
    })
}

/// `context` as a case's `context.json` holds it: every field, `labels` as a map — what
/// [`context_from`] reads back into the same context, and what `opm mod vet --inputs` shows a
/// call receives.
pub fn context_json(context: &opm_sandbox::Context) -> Value {
    let labels: serde_json::Map<String, Value> = context
        .labels
        .iter()
        .map(|(key, value)| (key.clone(), Value::String(value.clone())))
        .collect();
    json!({
        "name": context.name,
        "namespace": context.namespace,
        "version": context.version,
        "provider": context.provider,
        "timestamp": context.timestamp,
        "strict": context.strict,
        "labels": labels,
        "module": context.module,
        "platform": context.platform,
        "providerVersion": context.provider_version,
        "transformer": context.transformer,
    })
}

/// What one case's call did.
#[derive(Debug, Clone)]
pub struct Ran {
    /// The outcome in the shape of `expected.json`, or the sandbox's error when the call did
    /// not return (a limit, a trap), which no case can expect.
    pub outcome: Result<Value, String>,
    /// Fuel the call used.
    pub fuel: u64,
    /// Its wall-clock time.
    pub elapsed: Duration,
    /// What it logged, one line each, `LEVEL: text`.
    pub logs: Vec<String>,
    /// Why `opm mod build` would refuse what it returned ([`crate::render::refusals`]): a case
    /// that returns it fails, and `--bless` does not record it.
    pub refused: Vec<String>,
}

/// Runs `case` against `transformer` in a fresh instance of `sandbox`; `secret_kinds` are the
/// kinds whose checksums a render would stretch.
pub fn run(
    sandbox: &Sandbox,
    transformer: &CompiledTransformer,
    case: &Case,
    limits: &Limits,
    secret_kinds: &[String],
) -> Ran {
    let call = sandbox.call(transformer, &case.component, case.context.clone(), limits);
    let refused = match &call.result {
        Ok(documents) => crate::render::refusals(documents, &case.context.namespace, secret_kinds),
        Err(_) => Vec::new(),
    };
    let outcome = match call.result {
        Ok(documents) => documents
            .iter()
            .enumerate()
            .map(|(index, text)| {
                serde_json::from_str::<Value>(text)
                    .map_err(|e| format!("resource {index} it returned is not JSON: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|resources| json!({"resources": resources})),
        Err(CallError::InvalidComponent(message)) => {
            Ok(json!({"error": {"invalid-component": message}}))
        }
        Err(CallError::Failed(message)) => Ok(json!({"error": {"failed": message}})),
        Err(other) => Err(other.to_string()),
    };
    Ran {
        outcome,
        fuel: call.fuel_used,
        elapsed: call.elapsed,
        logs: call
            .logs
            .iter()
            .map(|line| format!("{}: {}", line.level, line.message))
            .collect(),
        refused,
    }
}

/// Whether `got` is what `expected` says — the same JSON, whatever the order of keys — and
/// if not, a unified diff of the two, pretty-printed with keys in the order each was written.
pub fn compare(expected: &Value, got: &Value) -> Option<String> {
    if expected == got {
        return None;
    }
    Some(diff(&pretty(expected), &pretty(got), "expected", "got"))
}

/// A unified diff of two texts, three lines of context, headed by their names.
pub fn diff(expected: &str, got: &str, expected_name: &str, got_name: &str) -> String {
    similar::TextDiff::from_lines(expected, got)
        .unified_diff()
        .context_radius(3)
        .header(expected_name, got_name)
        .to_string()
}

/// `value` as `expected.json` holds it: pretty JSON and a final newline.
pub fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// How one case went.
#[derive(Debug)]
pub enum Verdict {
    /// It returned what was expected.
    Pass,
    /// `--bless` recorded what it returned.
    Blessed,
    /// Why it failed: a diff, or what the sandbox said.
    Fail(String),
}

/// Compares the outcome of the case in `dir` with its `expected` value, or records it there
/// with `bless`.
pub fn verdict(
    dir: &Path,
    expected: Option<&Value>,
    outcome: &Result<Value, String>,
    bless: bool,
) -> anyhow::Result<Verdict> {
    let got = match outcome {
        Ok(got) => got,
        Err(error) => return Ok(Verdict::Fail(format!("the call did not return: {error}"))),
    };
    if bless {
        if expected == Some(got) {
            return Ok(Verdict::Pass);
        }
        let path = dir.join(EXPECTED);
        opm_core::files::write_atomically(&path, pretty(got).as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        return Ok(Verdict::Blessed);
    }
    let Some(expected) = expected else {
        return Ok(Verdict::Fail(format!(
            "no {} (run with --bless to record what it returns); it returned:\n{}",
            EXPECTED,
            pretty(got)
        )));
    };
    Ok(match compare(expected, got) {
        None => Verdict::Pass,
        Some(diff) => Verdict::Fail(diff),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_written_as_json_reads_back_the_same() {
        let context = opm_sandbox::Context {
            name: "shop-eu".into(),
            namespace: "shops".into(),
            version: "1.2.0".into(),
            provider: "kubernetes".into(),
            timestamp: "2025-01-01T00:00:00Z".into(),
            strict: true,
            labels: vec![
                ("a".into(), "1".into()),
                ("component.opmodel.dev/name".into(), "api".into()),
            ],
            module: "shop".into(),
            platform: "kubernetes".into(),
            provider_version: "0.2.0".into(),
            transformer: "opm.dev/x@v1#XTransformer".into(),
        };
        assert_eq!(context_from(&context_json(&context)).unwrap(), context);
    }
}
