//! The docker-compose provider's renderer ("Compose Renderer"): merges every resource of a
//! render into one `compose.yaml` — the Compose Specification, with no `version:` key and the
//! instance's name as the project's `name:` — and, with `--out-dir`, the files it needs beside
//! it (secrets, and config bytes that are not text). [`project`] merges and resolves, [`yaml`]
//! writes.
//!
//! `-o json` writes the same document as `compose.json` (compose reads JSON too, with `-f`).
//! `--split` is refused: a compose project is one file.

pub mod project;
pub mod yaml;

use opm_guest::{Chunk, Context, File, Options, RenderError, Rendered, Renderer};

/// The file the project is written to, by format.
pub const YAML_FILE: &str = "compose.yaml";
/// The file of `-o json`.
pub const JSON_FILE: &str = "compose.json";

/// Renders compose resources as a compose project.
pub struct ComposeRenderer;

impl Renderer for ComposeRenderer {
    fn render(
        resources: &[Rendered],
        context: &Context,
        options: &Options,
    ) -> Result<Vec<File>, RenderError> {
        if options.split {
            return Err(RenderError::Failed(
                "--split: a compose project is one file, compose.yaml; leave out --split".into(),
            ));
        }
        let (path, json) = match options.format.as_str() {
            "" | "yaml" => (YAML_FILE, false),
            "json" => (JSON_FILE, true),
            other => {
                return Err(RenderError::Failed(format!(
                    "the docker-compose renderer writes yaml or json, not {other:?}"
                )));
            }
        };
        let project = project::build(resources, context, options.directory)?;
        let text = if json {
            let mut text = serde_json::to_string_pretty(&project.document)
                .map_err(|e| RenderError::Failed(format!("writing JSON: {e}")))?;
            text.push('\n');
            text
        } else {
            yaml::to_yaml(&project.document)
        };
        let mut files = vec![File::new(path, vec![Chunk::Bytes(text.into_bytes())])];
        files.extend(
            project
                .files
                .into_iter()
                .map(|(path, bytes)| File::new(path, vec![Chunk::Bytes(bytes)])),
        );
        Ok(files)
    }
}

opm_guest::export_renderer!(ComposeRenderer);

#[cfg(test)]
mod tests;
