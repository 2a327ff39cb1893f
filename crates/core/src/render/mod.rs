//! Rendering's pure stages: what a render produces ([`Rendered`], [`Resource`], [`Failure`]),
//! the check of each returned document ([`check_resource`]), the labels and checksums put on
//! what came back (`docs/rendering.md`), the module's patches ([`patch`]), the platforms' name
//! rules, the output's layout ([`layout`]) and its writers ([`write`]); a render's provenance
//! ([`provenance`]), its form as an OCI artifact ([`artifact`]), and output Flux applies as
//! rendered ([`flux`]).
//!
//! Running the calls in the sandbox and handing what they returned to the provider's renderer
//! is the `opm-runtime` crate's (`runtime/src/render/`), which uses these: a failure of one call
//! never stops the others (fail on end), and neither does a transformer that could not be
//! compiled.

pub mod artifact;
pub mod attestation;
pub mod checksum;
pub mod context;
pub mod diff;
pub mod emit;
pub mod flux;
pub mod identity;
pub mod layout;
pub mod patch;
pub mod platform_names;
pub mod provenance;
pub mod write;

use std::time::Duration;

use serde_json::{Map, Value};

pub use context::RenderContext;
pub use patch::{PatchFailure, PatchReport};

use crate::calls::{CallError, LogLine};

/// A rendered platform resource and where it came from.
///
/// The resource is kept as its compact JSON text (checked, labelled, keys in output order) with
/// its identity beside it, not as a `serde_json::Value`: a large render holds every resource
/// until it is ordered and written, and the text takes a fifth of the memory of the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// The component it was rendered from.
    pub component: String,
    /// The transformer that rendered it.
    pub transformer: String,
    /// Its `apiVersion`.
    pub api_version: String,
    /// Its group, kind, namespace and name.
    pub identity: identity::Identity,
    /// The resource, a JSON object with `apiVersion`, `kind` and `metadata.name`, as compact
    /// JSON text.
    pub json: String,
}

impl Resource {
    /// `value`, a checked resource, rendered from `component` by `transformer` into
    /// `target_namespace`.
    pub fn new(component: &str, transformer: &str, value: &Value, target_namespace: &str) -> Self {
        Self {
            component: component.to_owned(),
            transformer: transformer.to_owned(),
            api_version: value["apiVersion"].as_str().unwrap_or_default().to_owned(),
            identity: identity::Identity::of(value, target_namespace),
            json: crate::json::compact(value),
        }
    }

    /// The resource as a JSON value.
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.json).expect("a resource is JSON text written by the host")
    }
}

/// What one call did, for `--verbose`.
#[derive(Debug, Clone)]
pub struct CallReport {
    /// The component.
    pub component: String,
    /// The transformer.
    pub transformer: String,
    /// Fuel the call used.
    pub fuel_used: u64,
    /// Wall-clock time of the call.
    pub elapsed: Duration,
    /// Resources it returned (0 when it failed).
    pub resources: usize,
    /// What the guest logged.
    pub logs: Vec<LogLine>,
    /// Log lines dropped at the log limit.
    pub logs_dropped: usize,
}

/// Why a component did not render completely.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "component {component:?}: transformer {transformer} ({digest}, provider {provider}) {error}"
)]
pub struct Failure {
    /// The component.
    pub component: String,
    /// The transformer FQN.
    pub transformer: String,
    /// The name of the provider that holds the transformer.
    pub provider: String,
    /// `blake3:<hex>` of the transformer's component.
    pub digest: String,
    /// What went wrong.
    pub error: FailureKind,
}

/// What went wrong in one call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FailureKind {
    /// The call failed in the sandbox or the transformer reported an error.
    #[error("{0}")]
    Call(#[from] CallError),
    /// A returned resource is not acceptable.
    #[error("returned an invalid resource #{index}: {reason}")]
    InvalidOutput {
        /// Its position in the returned list, from 0.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The transformer's component could not be compiled, so none of its calls ran.
    #[error("cannot be loaded: {0}")]
    Load(String),
    /// A resource's checksum reference (see [`checksum`]) does not parse.
    #[error("rendered {identity} with a bad checksum reference: {reason}")]
    Checksum {
        /// `group/kind namespace/name` of the resource.
        identity: String,
        /// What is wrong with the reference.
        reason: String,
    },
    /// The call's checksum references name more Secrets than the host stretches for one call
    /// (see [`checksum::MAX_SECRETS_PER_CALL`]).
    #[error(
        "references {0} Secrets in checksum annotations, over the limit of {max} Secrets per \
         call (each costs the host a memory-hard hash)",
        max = checksum::MAX_SECRETS_PER_CALL
    )]
    TooManySecrets(usize),
    /// More of the call's resources were invalid than are reported one by one.
    #[error("returned {0} more invalid resources")]
    MoreInvalid(usize),
    /// The renderer refused the resource (two that are one object on its platform, a kind it
    /// does not write).
    #[error("returned a resource that renderer {renderer} refuses: {reason}")]
    Refused {
        /// The renderer's name and version.
        renderer: String,
        /// Why, in the renderer's words.
        reason: String,
    },
    /// Two calls returned the same resource.
    #[error(
        "rendered {identity}, which component {other_component:?} (transformer \
         {other_transformer} of provider {other_provider}) also rendered"
    )]
    Duplicate {
        /// `group/kind namespace/name` of the resource.
        identity: String,
        /// The other producer's component.
        other_component: String,
        /// The other producer's transformer.
        other_transformer: String,
        /// The provider of the other producer's transformer.
        other_provider: String,
    },
}

/// The renderer's own failure: it could not be loaded, or its call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("renderer {renderer} ({digest}, provider {provider}) {error}")]
pub struct RendererFailure {
    /// The renderer's name and version.
    pub renderer: String,
    /// The provider that ships it.
    pub provider: String,
    /// `blake3:<hex>` of its component.
    pub digest: String,
    /// What went wrong.
    pub error: String,
}

/// A file of the render's output, as the renderer laid it out and the host filled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputFile {
    /// Relative, `/`-separated path under `--out-dir`.
    pub path: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Who may read it once written.
    pub mode: FileMode,
}

impl OutputFile {
    /// A [`FileMode::Regular`] file.
    pub fn regular(path: impl Into<String>, bytes: Vec<u8>) -> Self {
        Self {
            path: path.into(),
            bytes,
            mode: FileMode::Regular,
        }
    }
}

/// Who may read a file of the output: the contract's `mode` (since 1.2.0), and nothing else —
/// no owner, group, set-id or sticky bit comes from a renderer. `--out-dir` creates a file with
/// these bits (less the umask), and a render's OCI layer carries them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum FileMode {
    /// 0644, every file's before 1.2.0.
    #[default]
    Regular,
    /// 0600: a file that holds a Secret's data.
    Private,
    /// 0755: a script the platform runs.
    Executable,
}

impl FileMode {
    /// Its permission bits.
    pub fn bits(self) -> u32 {
        match self {
            Self::Regular => 0o644,
            Self::Private => 0o600,
            Self::Executable => 0o755,
        }
    }

    /// The mode of `bits`, one of the three's.
    pub fn from_bits(bits: u32) -> Option<Self> {
        [Self::Regular, Self::Private, Self::Executable]
            .into_iter()
            .find(|mode| mode.bits() == bits)
    }
}

/// The result of a render: resources in the order of the calls, the files the renderer made of
/// them, failures, and per-call reports.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// Resources in the order of the plan's calls, each call's in the order it returned them.
    pub resources: Vec<Resource>,
    /// The files of the output, when every call and the renderer succeeded.
    pub files: Vec<OutputFile>,
    /// The renderer's report, when it ran.
    pub renderer: Option<CallReport>,
    /// The renderer's own failure, if it failed.
    pub renderer_failure: Option<RendererFailure>,
    /// Every failure, ordered by component then transformer.
    pub failures: Vec<Failure>,
    /// One report per call, in plan order.
    pub calls: Vec<CallReport>,
    /// What each of the module's patches changed, in module order ([`patch`]).
    pub patches: Vec<PatchReport>,
    /// Every patch that failed, in module order.
    pub patch_failures: Vec<PatchFailure>,
    /// The module's patches for another platform's objects, which this render left out, each
    /// as its warning.
    pub left_out_patches: Vec<String>,
    /// Where the code of each component the render ran came from, transformers by name, then
    /// the renderer.
    pub code: Vec<CodeLoad>,
}

/// Where one component's code came from, for `--verbose`: precompiled into the binary
/// (`embedded`), loaded from the compile cache (`cache`), or compiled by this render
/// (`compiled`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeLoad {
    /// The transformer's FQN, or `renderer NAME`.
    pub name: String,
    /// `blake3:<hex>` of the component.
    pub digest: String,
    /// `embedded`, `cache` or `compiled` (Cranelift's code), `cache-winch` or `compiled-winch`.
    pub source: &'static str,
    /// The time from the component's bytes to code ready to run.
    pub elapsed: Duration,
}

impl Rendered {
    /// Whether anything failed: a call, its output, or a patch.
    pub fn failed(&self) -> bool {
        !self.failures.is_empty()
            || !self.patch_failures.is_empty()
            || self.renderer_failure.is_some()
    }

    /// The patches left out for another platform, then what the transformers and the renderer
    /// logged at `warn` level or above, each with who said it: what they could not honour,
    /// shown to the user without `--verbose`.
    pub fn guest_warnings(&self) -> Vec<String> {
        let mut warnings = self.left_out_patches.clone();
        for call in self.calls.iter().chain(&self.renderer) {
            for line in &call.logs {
                if line.level >= crate::calls::LogLevel::Warn {
                    warnings.push(if call.component.is_empty() {
                        format!("{}: {}", call.transformer, line.message)
                    } else {
                        format!(
                            "component {:?}: transformer {}: {}",
                            call.component, call.transformer, line.message
                        )
                    });
                }
            }
        }
        warnings
    }
}

/// Parses one returned document and checks it is a resource: a JSON object with string
/// `apiVersion`, `kind` and `metadata.name`. Returns it with its top-level keys in reading order.
///
/// This is everything the host assumes of a transformer's output before it labels, orders and
/// writes it; it is public so that the fuzz target `output` (`tests/fuzz/`) can call it.
///
/// ```
/// use opm_core::render::check_resource;
/// let document = r#"{"kind": "Service", "apiVersion": "v1", "metadata": {"name": "api"}}"#;
/// let value = check_resource(document).unwrap();
/// assert_eq!(value.as_object().unwrap().keys().next().unwrap(), "apiVersion");
/// assert!(check_resource("[]").is_err());
/// ```
pub fn check_resource(document: &str) -> Result<Value, String> {
    let value: Value = serde_json::from_str(document).map_err(|e| format!("not JSON: {e}"))?;
    check_value(value)
}

/// [`check_resource`] of a document already parsed: what a patched object must pass too.
pub fn check_value(value: Value) -> Result<Value, String> {
    let Value::Object(object) = value else {
        return Err(format!(
            "a JSON {} where an object was expected",
            json_type(&value)
        ));
    };
    for field in ["apiVersion", "kind"] {
        match object.get(field) {
            Some(Value::String(s)) if !s.is_empty() => {}
            _ => return Err(format!("`{field}` is missing or not a non-empty string")),
        }
    }
    match object.get("metadata").and_then(|m| m.get("name")) {
        Some(Value::String(s)) if !s.is_empty() => {}
        _ => return Err("`metadata.name` is missing or not a non-empty string".into()),
    }
    if !object["metadata"].is_object() {
        return Err("`metadata` is not an object".into());
    }
    Ok(Value::Object(reading_order(object)))
}

/// Every reason `opm mod build` would refuse the `documents` one call returned into
/// `namespace`, in words: a document that is not a resource ([`check_resource`]), a checksum
/// reference that does not parse or names too many secret objects ([`checksum`]; of the
/// `secret_kinds`), two documents that are one object ([`identity::Identity`]). What `opm
/// transformer test` checks each case with, so that a case cannot pass what a render refuses.
pub fn refusals(documents: &[String], namespace: &str, secret_kinds: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut resources = Vec::new();
    for (index, document) in documents.iter().enumerate() {
        match check_resource(document) {
            Ok(value) => resources.push(Resource::new("", "", &value, namespace)),
            Err(reason) => problems.push(FailureKind::InvalidOutput { index, reason }.to_string()),
        }
    }
    for problem in checksum::resolve(&mut resources, secret_kinds) {
        problems.push(checksum_failure(problem, &resources).1.to_string());
    }
    for index in identity::duplicates(&resources) {
        problems.push(format!(
            "returned {} twice: a render refuses two resources that are one object",
            resources[index].identity
        ));
    }
    problems
}

/// The failure of a checksum reference [`checksum::resolve`] found, and the position of the
/// resource that holds it.
pub fn checksum_failure(
    problem: checksum::Problem,
    resources: &[Resource],
) -> (usize, FailureKind) {
    match problem {
        checksum::Problem::BadReference { index, reason } => (
            index,
            FailureKind::Checksum {
                identity: resources[index].identity.to_string(),
                reason,
            },
        ),
        checksum::Problem::TooManySecrets { index, secrets } => {
            (index, FailureKind::TooManySecrets(secrets))
        }
    }
}

/// apiVersion, kind, metadata first; the rest in the order the transformer wrote them.
fn reading_order(mut object: Map<String, Value>) -> Map<String, Value> {
    let mut ordered = Map::new();
    for key in ["apiVersion", "kind", "metadata"] {
        if let Some(value) = object.remove(key) {
            ordered.insert(key.to_owned(), value);
        }
    }
    ordered.extend(object);
    ordered
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
