//! {{name}}: an opm renderer. It writes every resource of a render as one JSON-lines file,
//! `resources.jsonl`: one compact JSON object per line, in the order the host gives them.
//! `render` is the renderer itself, plain Rust that `cargo test` runs natively; the `guest`
//! module connects it to the WIT contract.

use serde_json::Value;

/// The file this renderer writes.
pub const FILE: &str = "resources.jsonl";

/// Writes `resources` (each one resource's JSON text, as the host passes it) as files, each a
/// path and its bytes, or says why it cannot. `format` is what `-o` asks for and `split` is
/// `--split`.
pub fn render(
    resources: &[&str],
    format: &str,
    split: bool,
) -> Result<Vec<(String, Vec<u8>)>, String> {
    // `yaml` is what the host asks for when the user asked for nothing in particular.
    if format != "yaml" && format != "json" {
        return Err(format!("{{name}} writes JSON lines, not {format:?}"));
    }
    if split {
        return Err(format!("{{name}} writes one file, {FILE}: leave out --split"));
    }
    let mut content = Vec::new();
    for (index, text) in resources.iter().enumerate() {
        // Parsed and written again, so that each resource is one line whatever its layout.
        let value: Value = serde_json::from_str(text)
            .map_err(|e| format!("resource #{index} is not JSON: {e}"))?;
        serde_json::to_writer(&mut content, &value).map_err(|e| e.to_string())?;
        content.push(b'\n');
    }
    Ok(vec![(FILE.to_owned(), content)])
}

/// The component's side: bindings of wit/transformer.wit and the `Guest` implementation. Only
/// a wasm32 build has the host's imports to link against, so native `cargo test` leaves it out.
#[cfg(target_arch = "wasm32")]
mod guest {
    wit_bindgen::generate!({ path: "wit", world: "renderer-world" });

    use exports::opm::transformer::renderer::{
        Chunk, File, Guest, Mode, Options, RenderError, Resource,
    };
    use opm::transformer::log::{Level, log};
    use opm::transformer::types::Context;

    struct Component;

    impl Guest for Component {
        fn render(
            resources: Vec<Resource>,
            context: Context,
            options: Options,
        ) -> Result<Vec<File>, RenderError> {
            let texts: Vec<&str> = resources.iter().map(|r| r.value.as_str()).collect();
            let files = super::render(&texts, &options.format, options.split)
                .map_err(RenderError::Failed)?;
            log(
                Level::Info,
                &format!("wrote {} resource(s) of module {}", resources.len(), context.name),
            );
            Ok(files
                .into_iter()
                .map(|(path, bytes)| File {
                    path,
                    content: vec![Chunk::Bytes(bytes)],
                    // Private (0600) for a file that holds a Secret's data, Executable (0755)
                    // for a script.
                    mode: Mode::Regular,
                })
                .collect())
        }
    }

    export!(Component);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_one_compact_line_per_resource_in_order() {
        let resources = [
            "{\"kind\": \"Service\",\n \"metadata\": {\"name\": \"api\"}}",
            r#"{"kind":"ConfigMap","metadata":{"name":"settings"}}"#,
        ];
        let files = render(&resources, "yaml", false).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].0, "resources.jsonl");
        assert_eq!(
            String::from_utf8(files[0].1.clone()).unwrap(),
            "{\"kind\":\"Service\",\"metadata\":{\"name\":\"api\"}}\n\
             {\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"settings\"}}\n"
        );
    }

    #[test]
    fn split_and_other_formats_are_refused() {
        assert!(render(&[], "yaml", true).unwrap_err().contains("leave out --split"));
        assert!(render(&[], "toml", false).unwrap_err().contains("not \"toml\""));
    }
}
