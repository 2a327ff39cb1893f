//! Checking the merged module document and building the [`Module`].
//!
//! Every problem is collected (not just the first), each with the origin of the node at fault:
//! unknown fields, wrong types, a wrong `apiVersion` or `kind`, names that are not DNS labels,
//! label values that are not strings, attachment names that are neither an FQN nor a short name,
//! definitions that do not have the shape of `docs/module-format.md#definitions`, and a module
//! without components.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::tree::{Entry, Node, Value};
use super::{
    Attachment, Component, Diagnostic, Module, ModuleDefinition, ModuleError, Origin, SECRET_FQN,
};
use crate::definitions::DefinitionSpec;
use crate::definitions::fqn::{self, Fqn};

const API_VERSION: &str = "core.opm.dev/v1";

/// Adds every string under a Secret resource of the merged document `root` to `sensitive`
/// (attached by its FQN or as `Secret`), but for its `type`, `labels` and `annotations`, what
/// each value of its base64 `data` decodes to, and every string a patch that
/// targets the kind `Secret` writes. It reads the tree as it is, before anything is checked,
/// so that an error about the document can be redacted too.
pub(crate) fn collect_secrets(root: &Node, sensitive: &mut BTreeSet<String>) {
    fn map(node: &Node) -> Option<&[Entry]> {
        match &node.value {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }
    if let Some(Value::List(patches)) = map(root)
        .and_then(|top| field(top, super::patch::KEY))
        .map(|node| &node.value)
    {
        for patch in patches
            .iter()
            .filter(|patch| super::patch::targets_secrets(patch))
        {
            for value in super::patch::written_values(patch) {
                collect_strings(&value, sensitive);
            }
        }
    }
    let components = map(root)
        .and_then(|top| field(top, "components"))
        .and_then(map)
        .unwrap_or_default();
    for component in components {
        let resources = map(&component.value)
            .and_then(|sections| field(sections, "resources"))
            .and_then(map)
            .unwrap_or_default();
        for resource in resources {
            if resource.key == SECRET_FQN || resource.key == fqn::short_name(SECRET_FQN) {
                let mut value = resource.value.to_json();
                // Its `type` (`Opaque`, `kubernetes.io/tls`) says what it holds, not a secret;
                // its `labels` and `annotations` are metadata, which Kubernetes shows to anyone
                // who may list the Secret's name (`kubectl get`, events, audit logs).
                if let Some(fields) = value.as_object_mut() {
                    for metadata in ["type", "labels", "annotations"] {
                        fields.remove(metadata);
                    }
                }
                collect_decoded(value.get("data"), sensitive);
                collect_strings(&value, sensitive);
            }
        }
    }
}

/// Builds a [`Module`] from the merged document `root`, read from `origin`; `sensitive` holds
/// what [`collect_secrets`] and `${env:…}` substitution found; `patch_places` the place in the
/// module as written of each patch that conditions kept.
pub(crate) fn interpret(
    root: &Node,
    origin: Origin,
    mut sensitive: BTreeSet<String>,
    patch_places: &[usize],
    pool: Option<&rayon::ThreadPool>,
) -> Result<Module, ModuleError> {
    let mut reader = Reader::default();
    if matches!(root.value, Value::Null) {
        return Err(ModuleError::invalid(
            origin,
            "the module file is empty".to_owned(),
        ));
    }
    let Some(top) = reader.map(root, "the module") else {
        return Err(reader.into_error());
    };
    reader.known_fields(
        top,
        &[
            "apiVersion",
            "kind",
            "metadata",
            "definitions",
            "components",
            "patches",
        ],
        "the module",
    );
    match reader
        .required(top, "apiVersion", root)
        .and_then(|node| reader.string(node, "apiVersion"))
    {
        Some(version) if version != API_VERSION => reader.problem(
            &field(top, "apiVersion")
                .map_or(&root.origin, |n| &n.origin)
                .clone(),
            format!("apiVersion is {version:?}; expected {API_VERSION:?}"),
        ),
        _ => {}
    }
    match reader
        .required(top, "kind", root)
        .and_then(|node| reader.string(node, "kind"))
    {
        Some(kind) if kind != "Module" => reader.problem(
            &field(top, "kind")
                .map_or(&root.origin, |n| &n.origin)
                .clone(),
            format!("kind is {kind:?}; expected \"Module\""),
        ),
        _ => {}
    }

    let (name, version, namespace, labels) = reader.metadata(top, root);
    let definitions = field(top, "definitions")
        .map(|node| reader.definitions(node))
        .unwrap_or_default();
    let components = match reader.required(top, "components", root) {
        Some(node) => reader.components(node, pool),
        None => BTreeMap::new(),
    };

    let patches = field(top, super::patch::KEY)
        .map(|node| {
            super::patch::read(node, patch_places, &mut |origin, message| {
                reader.problem(origin, message)
            })
        })
        .unwrap_or_default();

    if !reader.problems.is_empty() {
        return Err(reader.into_error());
    }
    sensitive.remove("");
    Ok(Module {
        name: name.unwrap_or_default(),
        version: version.unwrap_or_default(),
        namespace,
        labels,
        definitions,
        components,
        sensitive,
        origin,
        config: None,
        parameters: None,
        excluded: Vec::new(),
        patches,
        left_out_patches: Vec::new(),
    })
}

/// Adds what each base64 value of a Secret's `data` decodes to, when it is text: the secret
/// itself, which a log line or an error may quote (the encoded form is collected as it is).
fn collect_decoded(data: Option<&serde_json::Value>, out: &mut BTreeSet<String>) {
    use base64::Engine as _;
    let encoded = data
        .and_then(serde_json::Value::as_object)
        .into_iter()
        .flat_map(|data| data.values())
        .filter_map(serde_json::Value::as_str);
    for encoded in encoded {
        if let Ok(text) = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map(String::from_utf8)
            && let Ok(text) = text
        {
            out.insert(text);
        }
    }
}

fn collect_strings(value: &serde_json::Value, out: &mut BTreeSet<String>) {
    match value {
        serde_json::Value::String(s) => {
            out.insert(s.clone());
        }
        serde_json::Value::Array(items) => items.iter().for_each(|item| collect_strings(item, out)),
        serde_json::Value::Object(map) => map.values().for_each(|item| collect_strings(item, out)),
        _ => {}
    }
}

fn field<'a>(entries: &'a [Entry], key: &str) -> Option<&'a Node> {
    entries
        .iter()
        .find(|entry| entry.key == key)
        .map(|entry| &entry.value)
}

/// Collects problems while reading the document.
#[derive(Default)]
struct Reader {
    problems: Vec<Diagnostic>,
}

impl Reader {
    fn problem(&mut self, origin: &Origin, message: String) {
        self.problems.push(Diagnostic {
            origin: origin.clone(),
            message,
        });
    }

    fn into_error(mut self) -> ModuleError {
        self.problems.sort();
        self.problems.dedup();
        ModuleError::Invalid {
            problems: self.problems,
        }
    }

    fn map<'a>(&mut self, node: &'a Node, what: &str) -> Option<&'a [Entry]> {
        match &node.value {
            Value::Map(entries) => Some(entries),
            _ => {
                self.problem(
                    &node.origin,
                    format!("{what} must be a map, not {}", node.describe()),
                );
                None
            }
        }
    }

    /// A map that may be written as null (`traits:` with nothing after it) for an empty one.
    fn optional_map<'a>(&mut self, node: &'a Node, what: &str) -> Option<&'a [Entry]> {
        if matches!(node.value, Value::Null) {
            Some(&[])
        } else {
            self.map(node, what)
        }
    }

    fn string(&mut self, node: &Node, what: &str) -> Option<String> {
        match &node.value {
            Value::String(s) => Some(s.clone()),
            Value::Number(_) | Value::Bool(_) => {
                self.problem(
                    &node.origin,
                    format!("{what} must be a string, not {}; quote it", node.describe()),
                );
                None
            }
            _ => {
                self.problem(
                    &node.origin,
                    format!("{what} must be a string, not {}", node.describe()),
                );
                None
            }
        }
    }

    fn required<'a>(&mut self, entries: &'a [Entry], key: &str, parent: &Node) -> Option<&'a Node> {
        let found = field(entries, key);
        if found.is_none() {
            self.problem(&parent.origin, format!("missing required field `{key}`"));
        }
        found
    }

    fn known_fields(&mut self, entries: &[Entry], allowed: &[&str], what: &str) {
        for entry in entries {
            if !allowed.contains(&entry.key.as_str()) {
                self.problem(
                    &entry.key_origin,
                    format!(
                        "unknown field `{}` in {what}; expected one of: {}",
                        entry.key,
                        allowed.join(", ")
                    ),
                );
            }
        }
    }

    fn string_map(&mut self, node: &Node, what: &str) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let Some(entries) = self.optional_map(node, what) else {
            return out;
        };
        for entry in entries {
            if entry.key.is_empty() {
                self.problem(&entry.key_origin, format!("a key in {what} is empty"));
                continue;
            }
            if let Some(value) = self.string(
                &entry.value,
                &format!("the value of {what} `{}`", entry.key),
            ) {
                out.insert(entry.key.clone(), value);
            }
        }
        out
    }

    fn metadata(
        &mut self,
        top: &[Entry],
        root: &Node,
    ) -> (
        Option<String>,
        Option<String>,
        Option<String>,
        BTreeMap<String, String>,
    ) {
        let Some(node) = self.required(top, "metadata", root) else {
            return (None, None, None, BTreeMap::new());
        };
        let Some(entries) = self.map(node, "metadata") else {
            return (None, None, None, BTreeMap::new());
        };
        self.known_fields(
            entries,
            &["name", "version", "namespace", "labels"],
            "metadata",
        );
        let name = self
            .required(entries, "name", node)
            .and_then(|n| self.string(n, "metadata.name"));
        if let Some(name) = &name
            && !crate::names::is_dns_label(name)
        {
            let origin = field(entries, "name")
                .map(|n| n.origin.clone())
                .unwrap_or_else(|| node.origin.clone());
            self.problem(&origin, format!("module name {name:?} must be a DNS label: lowercase letters, digits and '-', at most 63"));
        }
        let version = self
            .required(entries, "version", node)
            .and_then(|n| self.string(n, "metadata.version"));
        let namespace = field(entries, "namespace").and_then(|n| {
            let namespace = self.string(n, "metadata.namespace")?;
            if !crate::names::is_dns_label(&namespace) {
                self.problem(&n.origin, format!("namespace {namespace:?} must be a DNS label: lowercase letters, digits and '-', at most 63"));
            }
            Some(namespace)
        });
        let labels = field(entries, "labels")
            .map(|n| self.string_map(n, "metadata.labels"))
            .unwrap_or_default();
        (name, version, namespace, labels)
    }

    fn definitions(&mut self, node: &Node) -> BTreeMap<String, ModuleDefinition> {
        let mut out = BTreeMap::new();
        let Some(entries) = self.optional_map(node, "definitions") else {
            return out;
        };
        for entry in entries {
            if let Err(error) = Fqn::parse(&entry.key) {
                self.problem(&entry.key_origin, format!("definitions: {error}"));
                continue;
            }
            match serde_json::from_value::<DefinitionSpec>(entry.value.to_json()) {
                Ok(spec) => {
                    out.insert(
                        entry.key.clone(),
                        ModuleDefinition {
                            spec,
                            origin: entry.key_origin.clone(),
                        },
                    );
                }
                Err(error) => self.problem(
                    &entry.value.origin,
                    format!("definition {}: {error}", entry.key),
                ),
            }
        }
        out
    }

    /// The components under `node`, by name. A large module's are read in parallel on `pool`,
    /// each with problems of its own, which are then kept in the order of the file.
    fn components(
        &mut self,
        node: &Node,
        pool: Option<&rayon::ThreadPool>,
    ) -> BTreeMap<String, Component> {
        use rayon::prelude::*;
        let Some(entries) = self.optional_map(node, "components") else {
            return BTreeMap::new();
        };
        if entries.is_empty() {
            self.problem(
                &node.origin,
                "the module has no components; add one under `components`".to_owned(),
            );
        }
        let read = |entry: &Entry| {
            let mut reader = Reader::default();
            if !crate::names::is_dns_label(&entry.key) {
                reader.problem(
                    &entry.key_origin,
                    format!("component name {:?} must be a DNS label: lowercase letters, digits and '-', at most 63", entry.key),
                );
            }
            // Keyed here, on the reading thread.
            let component = reader
                .component(entry)
                .map(|component| (component.name.clone(), component));
            (component, reader.problems)
        };
        let read: Vec<_> = match pool {
            Some(pool) if entries.len() >= super::PARALLEL_FROM => {
                pool.install(|| entries.par_iter().with_max_len(32).map(read).collect())
            }
            _ => entries.iter().map(read).collect(),
        };
        let mut components = Vec::with_capacity(read.len());
        for (component, problems) in read {
            self.problems.extend(problems);
            components.extend(component);
        }
        // Built at once rather than by inserting each: inserting 10,000 took 5 ms while the
        // other threads waited. (Names are unique: they are the keys of one map.)
        components.into_iter().collect()
    }

    fn component(&mut self, entry: &Entry) -> Option<Component> {
        let what = format!("component `{}`", entry.key);
        let entries = self.optional_map(&entry.value, &what)?;
        self.known_fields(
            entries,
            &["metadata", "resources", "traits", "policies"],
            &what,
        );
        let (mut labels, mut annotations) = (BTreeMap::new(), BTreeMap::new());
        if let Some(metadata) = field(entries, "metadata")
            && let Some(meta) = self.optional_map(metadata, &format!("{what} metadata"))
        {
            self.known_fields(
                meta,
                &["labels", "annotations"],
                &format!("{what} metadata"),
            );
            if let Some(node) = field(meta, "labels") {
                labels = self.string_map(node, &format!("{what} metadata.labels"));
            }
            if let Some(node) = field(meta, "annotations") {
                annotations = self.string_map(node, &format!("{what} metadata.annotations"));
            }
        }
        let mut section = |key: &str| -> Vec<Attachment> {
            field(entries, key)
                .map(|node| self.attachments(node, &format!("{what} {key}")))
                .unwrap_or_default()
        };
        let resources = section("resources");
        let traits = section("traits");
        let policies = section("policies");
        Some(Component {
            name: entry.key.clone(),
            origin: entry.key_origin.clone(),
            labels,
            annotations,
            resources,
            traits,
            policies,
        })
    }

    fn attachments(&mut self, node: &Node, what: &str) -> Vec<Attachment> {
        let Some(entries) = self.optional_map(node, what) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for entry in entries {
            let valid = if entry.key.contains(['#', '@', '/']) {
                Fqn::parse(&entry.key)
                    .map(drop)
                    .map_err(|error| error.to_string())
            } else if fqn::is_name(&entry.key) {
                Ok(())
            } else {
                Err(format!(
                    "{:?} is neither an FQN nor a definition name (an UpperCamelCase identifier such as Container)",
                    entry.key
                ))
            };
            if let Err(message) = valid {
                self.problem(&entry.key_origin, format!("{what}: {message}"));
                continue;
            }
            out.push(Attachment {
                name: entry.key.clone(),
                origin: entry.key_origin.clone(),
                value: entry.value.to_json(),
                located: Arc::new(entry.value.clone()),
            });
        }
        out
    }
}
