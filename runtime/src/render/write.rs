//! Writers of rendered resources: a multi-document YAML stream, or a `v1` `List` as JSON.

use std::io::Write;

use serde_json::{Value, json};

use super::Resource;

/// The output formats of `opm mod build -o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A multi-document YAML stream, one document per resource.
    Yaml,
    /// One JSON `v1` `List` holding every resource.
    Json,
}

/// Serialises `resources` in `format` into bytes.
pub fn to_bytes(resources: &[Resource], format: Format) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    match format {
        Format::Yaml => {
            for resource in resources {
                out.extend_from_slice(b"---\n");
                out.extend_from_slice(yaml(&resource.value)?.as_bytes());
            }
        }
        Format::Json => {
            let items: Vec<&Value> = resources.iter().map(|r| &r.value).collect();
            let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
            serde_json::to_writer_pretty(&mut out, &list)?;
            out.push(b'\n');
        }
    }
    Ok(out)
}

/// One YAML document, ending in a newline.
pub fn yaml(value: &Value) -> anyhow::Result<String> {
    let mut text = serde_saphyr::to_string(value)?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// Writes `bytes` to `out` and flushes.
pub fn write_all(out: &mut dyn Write, bytes: &[u8]) -> std::io::Result<()> {
    out.write_all(bytes)?;
    out.flush()
}
