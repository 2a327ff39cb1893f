//! Test cases of a renderer (a project with `kind: renderer`): folders of
//!
//! - `resources.json`: what the transform calls returned, in the order the host gives them — a
//!   list of `{"component": ..., "transformer": ..., "value": {...}}`, `component` and
//!   `transformer` optional, each `value` a resource as a transformer returns it;
//! - an optional `context.json`: the render context, as a transformer's case has it
//!   ([`cases::context_from`]); its `labels` are the module's, and the renderer gets opm's
//!   tracking labels beside them, as in a render;
//! - an optional `options.json`: `format` (`-o`, default `yaml`), `split` (`--split`) and
//!   `directory` (whether `--out-dir` was given), each defaulting as `opm mod build` does;
//! - `expected.json`: `{"files": {"PATH": "content", ...}}` (content that is not UTF-8 as
//!   `{"base64": "..."}`; a file that is not regular as `{"text" or "base64": ..., "mode":
//!   "0600"}`), or `{"error": {"failed": "..."}}`, or `{"error": {"refused":
//!   [{"component": ..., "transformer": ..., "reason": ...}]}}`.
//!
//! [`run`] runs a case through the render's own last step ([`crate::render::run_renderer`]):
//! the renderer's limits, and the host's checks of what it returned (paths inside `--out-dir`,
//! one file without it, YAML chunks that name a resource), so that a case passes only what a
//! render accepts.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::cases::{self, EXPECTED, Ran, read_json};
use crate::render::{
    FailureKind, FileMode, OutputOptions, RenderContext, Rendered, Renderer, Resource,
};
use opm_sandbox::{CallError, Sandbox};

/// The file of a case's resources.
pub const RESOURCES: &str = "resources.json";

/// The component and transformer a resource of `resources.json` names when it names none.
const DEFAULT_COMPONENT: &str = "example";
const DEFAULT_TRANSFORMER: &str = "example.com/transformers@v1#Example";

/// One case folder of a renderer, read.
#[derive(Debug, Clone)]
pub struct Case {
    /// The folder's name.
    pub name: String,
    /// The folder.
    pub dir: PathBuf,
    /// The resources, in the order the renderer is given them.
    pub resources: Vec<Resource>,
    /// The render context.
    pub context: RenderContext,
    /// What the command line asks of the output.
    pub options: OutputOptions,
    /// `expected.json`, if there is one.
    pub expected: Option<Value>,
}

/// Reads every case folder of `dir`, in name order.
pub fn load_all(dir: &Path) -> anyhow::Result<Vec<Case>> {
    cases::case_dirs(dir, RESOURCES)?
        .iter()
        .map(|dir| load(dir))
        .collect()
}

/// Reads the renderer case folder `dir`.
pub fn load(dir: &Path) -> anyhow::Result<Case> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let path = dir.join(RESOURCES);
    let resources = read_json(&path)?
        .with_context(|| format!("case {name}: no {RESOURCES} in {}", dir.display()))?;
    let context = match read_json(&dir.join("context.json"))? {
        Some(value) => cases::context_from(&value)
            .with_context(|| format!("{}", dir.join("context.json").display()))?,
        None => cases::context_from(&json!({}))?,
    };
    let context = RenderContext {
        name: context.name.clone(),
        instance: context.name,
        namespace: context.namespace,
        version: context.version,
        provider: context.provider,
        timestamp: context.timestamp,
        strict: context.strict,
        module_labels: context.labels.into_iter().collect(),
        secret_kinds: Vec::new(),
        platform: None,
        provider_versions: Default::default(),
    };
    let resources = resources_from(&resources, &context.namespace)
        .with_context(|| format!("{}", path.display()))?;
    let options = match read_json(&dir.join("options.json"))? {
        Some(value) => options_from(&value)
            .with_context(|| format!("{}", dir.join("options.json").display()))?,
        None => OutputOptions::default(),
    };
    Ok(Case {
        name,
        dir: dir.to_owned(),
        resources,
        context,
        options,
        expected: read_json(&dir.join(EXPECTED))?,
    })
}

/// The resources of `resources.json`, each checked as a render checks what a transformer
/// returned, landing in `namespace`.
fn resources_from(value: &Value, namespace: &str) -> anyhow::Result<Vec<Resource>> {
    let list = value.as_array().context(
        "the resources must be a JSON list of {\"component\", \"transformer\", \"value\"}",
    )?;
    let mut resources = Vec::with_capacity(list.len());
    for (index, entry) in list.iter().enumerate() {
        let object = entry
            .as_object()
            .with_context(|| format!("resource #{index} is not a JSON object"))?;
        if let Some(unknown) = object
            .keys()
            .find(|key| !["component", "transformer", "value"].contains(&key.as_str()))
        {
            bail!(
                "resource #{index} has the unknown field {unknown:?} (known: component, \
                 transformer, value)"
            );
        }
        let text = |key: &str, default: &str| -> anyhow::Result<String> {
            match object.get(key) {
                None => Ok(default.to_owned()),
                Some(Value::String(text)) => Ok(text.clone()),
                Some(other) => bail!("resource #{index}: {key} must be a string, not {other}"),
            }
        };
        let component = text("component", DEFAULT_COMPONENT)?;
        let transformer = text("transformer", DEFAULT_TRANSFORMER)?;
        let value = object
            .get("value")
            .with_context(|| format!("resource #{index} has no value"))?;
        let value = crate::render::check_value(value.clone()).map_err(|reason| {
            anyhow::anyhow!("resource #{index} is not what a transformer may return: {reason}")
        })?;
        resources.push(Resource::new(&component, &transformer, &value, namespace));
    }
    Ok(resources)
}

/// The options of `options.json` over `opm mod build`'s defaults.
fn options_from(value: &Value) -> anyhow::Result<OutputOptions> {
    let map = value
        .as_object()
        .context("the options must be a JSON object")?;
    let mut options = OutputOptions::default();
    for (key, value) in map {
        match (key.as_str(), value) {
            ("format", Value::String(format)) => options.format = format.clone(),
            ("split", Value::Bool(split)) => options.split = *split,
            ("directory", Value::Bool(directory)) => options.directory = *directory,
            ("format", other) => bail!("option format must be a string, not {other}"),
            ("split" | "directory", other) => {
                bail!("option {key} must be true or false, not {other}")
            }
            (unknown, _) => {
                bail!("unknown option {unknown:?} (known: format, split, directory)")
            }
        }
    }
    Ok(options)
}

/// Runs `case` against `renderer` in a fresh instance of `sandbox`, as the last step of a
/// render runs it. What a render would fail for other than the renderer's own `failed` error
/// — a limit, a trap, a file path outside `--out-dir` — is in [`Ran::refused`], as the render
/// would report it: a case fails with it, and `--bless` never records it.
pub fn run(sandbox: &Sandbox, renderer: &Renderer, case: &Case) -> Ran {
    let mut rendered = Rendered {
        resources: case.resources.clone(),
        ..Rendered::default()
    };
    crate::render::run_renderer(
        sandbox,
        renderer,
        &mut rendered,
        &case.context,
        &case.options,
        &|_| (renderer.provider.clone(), String::new()),
    );
    let failed_prefix = CallError::Failed(String::new()).to_string();
    let (outcome, refused) = match &rendered.renderer_failure {
        Some(failure) => match failure.error.strip_prefix(&failed_prefix) {
            Some(message) => (Ok(json!({"error": {"failed": message}})), Vec::new()),
            None => (Err(failure.error.clone()), vec![failure.to_string()]),
        },
        None if !rendered.failures.is_empty() => {
            let refused: Vec<Value> = rendered
                .failures
                .iter()
                .map(|failure| {
                    let reason = match &failure.error {
                        FailureKind::Refused { reason, .. } => reason.clone(),
                        other => other.to_string(),
                    };
                    json!({"component": failure.component, "transformer": failure.transformer,
                           "reason": reason})
                })
                .collect();
            (Ok(json!({"error": {"refused": refused}})), Vec::new())
        }
        None => (Ok(files_value(&rendered)), Vec::new()),
    };
    let report = rendered.renderer.as_ref();
    Ran {
        outcome,
        fuel: report.map_or(0, |r| r.fuel_used),
        elapsed: report.map(|r| r.elapsed).unwrap_or_default(),
        logs: report.map_or_else(Vec::new, |r| {
            r.logs
                .iter()
                .map(|line| format!("{}: {}", line.level, line.message))
                .collect()
        }),
        refused,
    }
}

/// The files of `rendered` as `expected.json` holds them: path → text, or `{"base64": ...}`
/// for content that is not UTF-8; a file that is not regular (contract 1.2.0) as
/// `{"text": ..., "mode": "0600"}` (or `base64` and `mode`), so that a case holds its mode too.
fn files_value(rendered: &Rendered) -> Value {
    let mut files = Map::new();
    for file in &rendered.files {
        let mut content = match std::str::from_utf8(&file.bytes) {
            Ok(text) => json!(text),
            Err(_) => {
                json!({"base64": base64::engine::general_purpose::STANDARD.encode(&file.bytes)})
            }
        };
        if file.mode != FileMode::Regular {
            let mode = json!(format!("{:04o}", file.mode.bits()));
            content = match content {
                Value::String(text) => json!({"text": text, "mode": mode}),
                Value::Object(mut base64) => {
                    base64.insert("mode".into(), mode);
                    Value::Object(base64)
                }
                other => other,
            };
        }
        files.insert(file.path.clone(), content);
    }
    json!({ "files": files })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A case holds each file's mode where it is not regular, so that a renderer that stops
    /// writing its Secret files private fails its case.
    #[test]
    fn a_file_that_is_not_regular_is_expected_with_its_mode() {
        let file = |path: &str, bytes: &[u8], mode| crate::render::OutputFile {
            path: path.into(),
            bytes: bytes.to_vec(),
            mode,
        };
        let rendered = Rendered {
            files: vec![
                file("a.container", b"[Container]\n", FileMode::Regular),
                file("secrets/db/password", b"hunter2", FileMode::Private),
                file("bin/run", &[0xff], FileMode::Executable),
            ],
            ..Rendered::default()
        };
        assert_eq!(
            files_value(&rendered),
            json!({"files": {
                "a.container": "[Container]\n",
                "secrets/db/password": {"text": "hunter2", "mode": "0600"},
                "bin/run": {"base64": "/w==", "mode": "0755"},
            }})
        );
    }

    #[test]
    fn resources_are_checked_as_a_render_checks_them() {
        let good = json!([{"component": "web", "value":
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}}]);
        let resources = resources_from(&good, "shop").unwrap();
        assert_eq!(resources[0].component, "web");
        assert_eq!(resources[0].transformer, DEFAULT_TRANSFORMER);
        let no_kind = json!([{"value": {"apiVersion": "v1", "metadata": {"name": "c"}}}]);
        let error = resources_from(&no_kind, "shop").unwrap_err().to_string();
        assert!(
            error.contains("resource #0 is not what a transformer may return"),
            "{error}"
        );
        let unknown = json!([{"valeu": {}}]);
        let error = resources_from(&unknown, "shop").unwrap_err().to_string();
        assert!(error.contains("unknown field \"valeu\""), "{error}");
    }

    #[test]
    fn options_default_as_mod_build_does() {
        assert_eq!(options_from(&json!({})).unwrap(), OutputOptions::default());
        let split = options_from(&json!({"split": true, "directory": true})).unwrap();
        assert!(split.split && split.directory);
        assert_eq!(split.format, "yaml");
        assert!(options_from(&json!({"out": "x"})).is_err());
        assert!(options_from(&json!({"split": "yes"})).is_err());
    }
}
