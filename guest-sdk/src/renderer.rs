//! [`Renderer`]: a provider's renderer, which writes every resource of a render as the files of
//! its platform's format. Built with the `renderer` feature, a crate that calls
//! [`export_renderer!`](crate::export_renderer) becomes a component of `renderer-world`
//! (`wit/transformer.wit`).

use serde_json::Value;

use crate::Context;

/// A provider's renderer. The host calls `render` once per render, after every transform call,
/// in a fresh sandbox.
pub trait Renderer {
    /// Writes `resources` (in the host's deterministic order: the plan's calls, then the order
    /// each call returned them) as files.
    fn render(
        resources: &[Rendered],
        context: &Context,
        options: &Options,
    ) -> Result<Vec<File>, RenderError>;
}

/// A resource a transform call returned, checked, labelled and patched by the host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rendered {
    /// The component it was rendered from.
    pub component: String,
    /// The FQN of the transformer that rendered it.
    pub transformer: String,
    /// Its `apiVersion`.
    pub api_version: String,
    /// Its `kind`.
    pub kind: String,
    /// Its `metadata.name`.
    pub name: String,
    /// Its `metadata.namespace`, empty when it has none.
    pub namespace: String,
    /// The resource as compact JSON text: parsed only by [`Rendered::value`], since a renderer
    /// that orders or names resources needs only the fields above.
    pub json: String,
}

impl Rendered {
    /// A resource from its value, as the host would pass it: for unit tests of a renderer.
    pub fn new(component: &str, transformer: &str, value: &Value) -> Self {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        Self {
            component: component.to_owned(),
            transformer: transformer.to_owned(),
            api_version: text(&value["apiVersion"]),
            kind: text(&value["kind"]),
            name: text(&value["metadata"]["name"]),
            namespace: text(&value["metadata"]["namespace"]),
            json: value.to_string(),
        }
    }

    /// The resource as a JSON value, keys in the order the host wrote them.
    pub fn value(&self) -> Result<Value, RenderError> {
        serde_json::from_str(&self.json).map_err(|e| {
            RenderError::Failed(format!(
                "{} {} of component {:?} is not JSON: {e}",
                self.kind, self.name, self.component
            ))
        })
    }
}

/// What the command line asks of the output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `-o`: the format asked for (`yaml` unless the user said otherwise).
    pub format: String,
    /// `--split`: one file per resource rather than one stream.
    pub split: bool,
    /// Whether the files go into a directory (`--out-dir`); otherwise the host prints them on
    /// stdout, one file as it is and several in its multi-file form.
    pub directory: bool,
}

/// One output file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// Where it goes under `--out-dir`: relative, `/`-separated.
    pub path: String,
    /// Its content, chunk after chunk.
    pub content: Vec<Chunk>,
    /// Who may read it once written. Since contract 1.2.0: a component built with the
    /// `contract-1-0` or `contract-1-1` feature cannot say, and its files are written
    /// [`Mode::Regular`].
    pub mode: Mode,
}

impl File {
    /// A file of `content` at `path`, [`Mode::Regular`].
    pub fn new(path: impl Into<String>, content: Vec<Chunk>) -> Self {
        Self {
            path: path.into(),
            content,
            mode: Mode::Regular,
        }
    }

    /// This file with `mode`.
    pub fn with_mode(self, mode: Mode) -> Self {
        Self { mode, ..self }
    }
}

/// Who may read an output file the host writes (the WIT `mode`): nothing but these three.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// 0644: anyone may read it.
    #[default]
    Regular,
    /// 0600: only its owner may read it, for a file that holds a Secret's data.
    Private,
    /// 0755: a script the platform runs.
    Executable,
}

/// A piece of an output file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunk {
    /// Bytes, written as they are.
    Bytes(Vec<u8>),
    /// The resource at this position of the list as one YAML document ending in a newline,
    /// converted by the host on its render threads.
    Yaml(u32),
}

/// Why the resources cannot be rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenderError {
    /// Resources this renderer will not write, each by its position and why; the host reports
    /// each as a failure of the transformer that returned it.
    Refused(Vec<(u32, String)>),
    /// Anything else.
    Failed(String),
}

impl std::fmt::Display for RenderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused(refused) => {
                let reasons: Vec<String> = refused
                    .iter()
                    .map(|(index, reason)| format!("resource #{index}: {reason}"))
                    .collect();
                write!(f, "{}", reasons.join("; "))
            }
            Self::Failed(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for RenderError {}

/// Exports a [`Renderer`] as this crate's WebAssembly component. The crate must enable the
/// `renderer` feature of `opm-guest` (the SDK then binds `renderer-world` instead of
/// `transformer-world`). Expands to nothing natively.
#[macro_export]
macro_rules! export_renderer {
    ($renderer:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            use $crate::__private::bindings::exports::opm::transformer::renderer as wit;
            struct OpmGuestExport;

            impl wit::Guest for OpmGuestExport {
                fn render(
                    resources: ::std::vec::Vec<wit::Resource>,
                    context: $crate::__private::bindings::opm::transformer::types::Context,
                    options: wit::Options,
                ) -> ::std::result::Result<::std::vec::Vec<wit::File>, wit::RenderError> {
                    $crate::__private::render::<$renderer>(resources, context, options)
                }
            }

            $crate::__private::bindings::export!(OpmGuestExport with_types_in $crate::__private::bindings);
        };
    };
}
