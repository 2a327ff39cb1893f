//! Module files (`docs/module-format.md`): loading `module.yaml` (or JSON) with its values into a
//! [`Module`].
//!
//! [`load`] reads the module file, deep-merges each values file onto it in order (with
//! `${env:NAME}` substituted in values files), applies each `--set`, and only then interprets
//! the merged document; [`from_inputs`] does the same with contents instead of paths. Every node
//! remembers the file, line and column it came from, so an error about the merged document
//! points at whichever input supplied the offending part.
//!
//! - [`tree`] parses YAML/JSON into that located tree;
//! - [`values`] merges values files and substitutes `${env:NAME}`;
//! - [`set`] parses and applies `--set PATH=VALUE` (its rule is documented there);
//! - [`document`] checks the shape of the merged document and builds the [`Module`];
//! - `config` reads the parameters' schema and fills the defaults; [`expr`] resolves `${…}`,
//!   conditions and locals; `functions` and [`cost`] are the CEL opm adds and its bound;
//!   [`patch`] reads the module's patches; `simple` reads a module of the usual shape fast.
//!
//! Names of definitions in `resources`, `traits` and `policies` are kept as written (an FQN or a
//! short name): they are resolved against the provider's and the module's definitions by
//! [`crate::matching::plan`], which knows both.
//!
//! ```
//! let module = opm_core::module::from_str(
//!     "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: shop, version: 1.4.0}\n\
//!      components:\n  api:\n    resources: {Container: {image: nginx}}\n",
//!     "module.yaml",
//! )
//! .unwrap();
//! assert_eq!((module.name(), module.version()), ("shop", "1.4.0"));
//! assert_eq!(module.components().next().unwrap().resources[0].name, "Container");
//! ```

pub mod cel_words;
mod config;
pub mod cost;
mod document;
pub mod env;
pub mod expr;
mod functions;
pub mod patch;
mod set;
mod simple;
pub(crate) mod tree;
mod values;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::origin::Origin;
pub use expr::{Excluded, Reason};
pub use patch::{LeftOutPatch, Patch};

use crate::definitions::{DefinitionKind, DefinitionSpec};
use tree::{Entry, Node};

/// The FQN of the Secret resource, every string value under which is sensitive.
pub const SECRET_FQN: &str = "opm.dev/resources/config@v1#Secret";

/// A loaded module: metadata, module-local definitions and components, in name order.
#[derive(Clone)]
pub struct Module {
    name: String,
    version: String,
    namespace: Option<String>,
    labels: BTreeMap<String, String>,
    definitions: BTreeMap<String, ModuleDefinition>,
    components: BTreeMap<String, Component>,
    sensitive: BTreeSet<String>,
    origin: Origin,
    /// The `config` schema, when the module declares parameters.
    config: Option<serde_json::Value>,
    /// The parameters the values set, over the config's defaults.
    parameters: Option<serde_json::Value>,
    /// What conditions left out.
    excluded: Vec<Excluded>,
    /// `patches`, in module order, but for those a condition left out.
    patches: Vec<Patch>,
    /// The patches a condition left out.
    left_out_patches: Vec<LeftOutPatch>,
}

/// A definition declared in the module's `definitions`.
#[derive(Debug, Clone, PartialEq)]
pub struct ModuleDefinition {
    /// The definition as written.
    pub spec: DefinitionSpec,
    /// Where it is declared.
    pub origin: Origin,
}

/// One component of a module.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    /// The component's name (its key under `components`).
    pub name: String,
    /// Where the component is declared.
    pub origin: Origin,
    /// The component's own `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// The component's `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
    /// `resources`, in document order.
    pub resources: Vec<Attachment>,
    /// `traits`, in document order.
    pub traits: Vec<Attachment>,
    /// `policies`, in document order.
    pub policies: Vec<Attachment>,
}

impl Component {
    /// The attachments of one kind.
    pub fn attachments(&self, kind: DefinitionKind) -> &[Attachment] {
        match kind {
            DefinitionKind::Resource => &self.resources,
            DefinitionKind::Trait => &self.traits,
            DefinitionKind::Policy => &self.policies,
        }
    }
}

/// A definition attached to a component, with the user's value.
#[derive(Clone, PartialEq)]
pub struct Attachment {
    /// The definition's name as written: an FQN or a short name.
    pub name: String,
    /// Where the key is written.
    pub origin: Origin,
    /// The value, as JSON. May be secret: never printed by `Debug`.
    pub value: serde_json::Value,
    /// The value as read, each part with the file, line and column it came from (the module,
    /// a values file, a `--set`).
    located: Arc<Node>,
}

impl Attachment {
    /// Where the part of the value at `pointer` (a JSON pointer, `""` for the whole value) was
    /// written: the deepest part of it that exists, so that a problem with a field a values
    /// file or `--set` supplied names that file or argument, not the module.
    pub fn origin_at(&self, pointer: &str) -> Origin {
        let origin = self.located.origin_at(pointer);
        if std::ptr::eq(origin, &self.located.origin) && origin.source() == self.origin.source() {
            // The value as a whole, written where its key is: name the key, as a reader looks
            // for the definition's name.
            self.origin.clone()
        } else {
            origin.clone()
        }
    }
}

impl fmt::Debug for Attachment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Attachment")
            .field("name", &self.name)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Module")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("namespace", &self.namespace)
            .field("labels", &self.labels)
            .field("definitions", &self.definitions.keys().collect::<Vec<_>>())
            .field("components", &self.components)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl Module {
    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `metadata.version`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// `metadata.namespace`, when set.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// `metadata.labels`.
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }

    /// The module-local definitions, by FQN.
    pub fn definitions(&self) -> &BTreeMap<String, ModuleDefinition> {
        &self.definitions
    }

    /// The components, in name order.
    pub fn components(&self) -> impl ExactSizeIterator<Item = &Component> {
        self.components.values()
    }

    /// The component called `name`.
    pub fn component(&self, name: &str) -> Option<&Component> {
        self.components.get(name)
    }

    /// Where the module was read from.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The `config` section: the JSON Schema of the module's parameters, when it has one.
    pub fn config(&self) -> Option<&serde_json::Value> {
        self.config.as_ref()
    }

    /// The components and attachments that a false condition left out, in document order.
    pub fn excluded(&self) -> &[Excluded] {
        &self.excluded
    }

    /// The module's `patches` a render applies, in module order (`docs/module-format.md#patches`).
    pub fn patches(&self) -> &[Patch] {
        &self.patches
    }

    /// The patches that a false `when` left out, in module order.
    pub fn left_out_patches(&self) -> &[LeftOutPatch] {
        &self.left_out_patches
    }

    /// The parameters this render uses: what the values set, over the config's defaults.
    /// `None` when the module has no `config`.
    pub fn parameters(&self) -> Option<&serde_json::Value> {
        self.parameters.as_ref()
    }

    /// Every string that must be redacted outside rendered output, sorted and without empty
    /// strings: what `${env:…}` substituted (and each variable's value), and every string value
    /// under a Secret resource (attached by its FQN or as `Secret`).
    pub fn sensitive_values(&self) -> Vec<String> {
        self.sensitive.iter().cloned().collect()
    }
}

/// A problem found in a module, at a place.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Diagnostic {
    /// Where.
    pub origin: Origin,
    /// What is wrong and, where it helps, what to write instead.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}

/// Why a module could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModuleError {
    /// The module or a values file could not be read. (What the OS said is part of the
    /// message, not a separate cause, so that `{:#}` does not say it twice.)
    #[error("cannot read {path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        error: std::io::Error,
    },
    /// There is no module file where one was looked for.
    #[error(
        "there is no module at {path}: create one with `opm mod init{}`, or give the path of \
         an existing module (`opm mod build path/to/module.yaml`)",
        init_dir(path)
    )]
    NoModule {
        /// The module file that does not exist.
        path: PathBuf,
    },
    /// A file is not valid YAML or JSON (a duplicate key is a syntax error too).
    #[error("{origin}: {message}")]
    Syntax {
        /// Where the parser stopped.
        origin: Origin,
        /// What the parser said.
        message: String,
    },
    /// A values file names an environment variable that is not set.
    #[error("{origin}: environment variable {name} is not set")]
    Env {
        /// Where `${env:NAME}` is written.
        origin: Origin,
        /// The variable.
        name: String,
    },
    /// A module reads an environment variable the allow-list (`--allow-env`) leaves out.
    #[error(
        "{origin}: environment variable {name} may not be read by this render: --allow-env \
         allows {allowed}; allow it too if the module should read it"
    )]
    EnvNotAllowed {
        /// Where `${env:NAME}` is written.
        origin: Origin,
        /// The variable.
        name: String,
        /// What is allowed.
        allowed: String,
    },
    /// A `--set` argument is malformed or cannot be applied.
    #[error("--set {path}: {message}")]
    Set {
        /// The argument's path (never its value).
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The merged document is not a valid module; every problem found is listed.
    #[error("{}", render_problems(problems))]
    Invalid {
        /// The problems, in document order.
        problems: Vec<Diagnostic>,
    },
}

fn render_problems(problems: &[Diagnostic]) -> String {
    match problems {
        [one] => one.to_string(),
        many => {
            let mut text = format!("{} problems in the module:", many.len());
            for problem in many {
                text.push_str("\n  ");
                text.push_str(&problem.to_string());
            }
            text
        }
    }
}

impl ModuleError {
    pub(crate) fn invalid(origin: Origin, message: String) -> Self {
        Self::Invalid {
            problems: vec![Diagnostic { origin, message }],
        }
    }
}

/// Loads the module at `path` (a file, or a directory holding `module.yaml` or `module.json`),
/// merges the `values` files onto it in order, applies `sets` (`PATH=VALUE`, see [`set`]) and
/// interprets the result. `env` looks up environment variables for `${env:NAME}`.
///
/// `instance` is the instance being rendered and its namespace, which expressions see as
/// `instance` (see [`Instance`]).
///
/// `sensitive` receives every value that must be redacted (see [`Module::sensitive_values`]) as
/// soon as it is known, and before anything about the merged document is checked: whoever
/// prints this function's error, which may quote such a value (a `${env:…}` value used as the
/// namespace, say), redacts it with them.
pub fn load(
    path: &Path,
    values: &[PathBuf],
    sets: &[String],
    instance: &Instance,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    sensitive: &mut BTreeSet<String>,
) -> Result<Module, ModuleError> {
    load_on(None, path, values, sets, instance, env, sensitive)
}

/// [`load`], a large module's components parsed in parallel on `pool` (a render's threads);
/// without one, on the current rayon pool.
pub fn load_on(
    pool: Option<&rayon::ThreadPool>,
    path: &Path,
    values: &[PathBuf],
    sets: &[String],
    instance: &Instance,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    sensitive: &mut BTreeSet<String>,
) -> Result<Module, ModuleError> {
    let path = module_file(path);
    let root = read_tree(&path, pool).map_err(|error| match error {
        ModuleError::Read { path, error } if error.kind() == std::io::ErrorKind::NotFound => {
            ModuleError::NoModule { path }
        }
        other => other,
    })?;
    assemble(
        root,
        values
            .iter()
            .map(|values_path| read_tree(values_path, pool)),
        sets,
        &Surroundings {
            instance,
            env,
            pool,
        },
        Origin::whole(path.display().to_string()),
        sensitive,
    )
}

/// A module or values file given by its contents rather than its path.
#[derive(Clone, Copy)]
pub struct Input<'a> {
    /// What errors call the file (`module.yaml`, a path).
    pub name: &'a str,
    /// Its contents, YAML or JSON; anything but UTF-8 is a syntax error.
    pub bytes: &'a [u8],
}

impl fmt::Debug for Input<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The contents may hold secrets.
        f.debug_struct("Input")
            .field("name", &self.name)
            .field("len", &self.bytes.len())
            .finish_non_exhaustive()
    }
}

/// [`load`] from contents: interprets `module` with the `values` merged onto it in order and
/// `sets` applied, exactly as [`load`] does with files.
///
/// ```
/// use opm_core::module::{self, Input};
/// let text = b"apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: shop, version: 1.0.0}\n\
///     components:\n  api:\n    resources: {Container: {image: nginx}}\n    traits: {Replicas: 1}\n";
/// let module = module::from_inputs(
///     Input { name: "module.yaml", bytes: text },
///     &[Input { name: "prod.yaml", bytes: b"components: {api: {traits: {Replicas: 3}}}" }],
///     &["metadata.namespace=prod".to_owned()],
///     &|_| None,
/// )
/// .unwrap();
/// assert_eq!(module.namespace(), Some("prod"));
/// assert_eq!(module.component("api").unwrap().traits[0].value, 3);
/// ```
pub fn from_inputs(
    module: Input<'_>,
    values: &[Input<'_>],
    sets: &[String],
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<Module, ModuleError> {
    let root = parse_input(module, None)?;
    assemble(
        root,
        values.iter().map(|input| parse_input(*input, None)),
        sets,
        &Surroundings {
            instance: &Instance::default(),
            env,
            pool: None,
        },
        Origin::whole(module.name),
        &mut BTreeSet::new(),
    )
}

/// From how many components a module's are read, and planned, in parallel on the render's
/// threads: below it, handing them to the threads (and starting them, for `mod vet`) costs more
/// than the work.
pub(crate) const PARALLEL_FROM: usize = 32;

/// What a module is read in: the instance rendered, the environment `${env:…}` reads, and the
/// threads a large module's components are read on (else the calling thread).
#[derive(Clone, Copy)]
struct Surroundings<'a> {
    instance: &'a Instance,
    env: &'a (dyn Fn(&str) -> Option<String> + Sync),
    pool: Option<&'a rayon::ThreadPool>,
}

/// Merges each values tree onto `root` in order (each read or parsed only when its turn
/// comes), applies `sets`, and interprets the result as the module at `origin`.
fn assemble(
    mut root: Node,
    values: impl Iterator<Item = Result<Node, ModuleError>>,
    sets: &[String],
    surroundings: &Surroundings<'_>,
    origin: Origin,
    sensitive: &mut BTreeSet<String>,
) -> Result<Module, ModuleError> {
    let Surroundings { instance, env, .. } = *surroundings;
    // What the module's own file writes literally is public: a Secret value that is one of these
    // is not redacted, unless a values file, a `--set` or the environment supplies it too.
    let mut literal = BTreeSet::new();
    literal_strings(&root, &mut literal);
    let mut supplied = BTreeSet::new();
    let config = take_config(&mut root)?;
    // Patches are the module file's own: taken out before values merge, so that no values file
    // or --set can add or change one (with a config, they set parameters the patches may use).
    let patches = take_entry(&mut root, patch::KEY);
    // So are the locals, for the same reason.
    let locals = take_entry(&mut root, expr::LOCALS);
    // With a config, values and --set set parameters; without one, they change the document.
    let mut parameters = Node::new(tree::Value::Map(Vec::new()), Origin::whole("values"));
    let (target, base, path) = match &config {
        Some(_) => (set::Target::Parameters, &mut parameters, "config"),
        None => (set::Target::Document, &mut root, ""),
    };
    for overlay in values {
        let mut overlay = overlay?;
        match overlay.value {
            tree::Value::Null => continue,
            tree::Value::Map(_) => {}
            _ => {
                return Err(ModuleError::invalid(
                    overlay.origin.clone(),
                    format!("a values file must be a map, not {}", overlay.describe()),
                ));
            }
        }
        if config.is_none()
            && let tree::Value::Map(entries) = &overlay.value
            && let Some(entry) = entries.iter().find(|entry| entry.key == patch::KEY)
        {
            return Err(ModuleError::invalid(
                entry.key_origin.clone(),
                patches_are_the_modules().to_owned(),
            ));
        }
        values::substitute_env(&mut overlay, env, sensitive)?;
        literal_strings(&overlay, &mut supplied);
        // Under `config`, no key is taken for a component or a definition.
        let mut at = if path.is_empty() {
            Vec::new()
        } else {
            vec![path.to_owned()]
        };
        values::merge(base, overlay, &mut at)?;
    }
    for arg in sets {
        let mut parsed = set::parse(arg)?;
        if target == set::Target::Document
            && matches!(parsed.path.first(), Some(set::Segment::Key(key)) if key == patch::KEY)
        {
            return Err(ModuleError::Set {
                path: parsed.path_text,
                message: patches_are_the_modules().to_owned(),
            });
        }
        values::substitute_env(&mut parsed.value, env, sensitive)?;
        literal_strings(&parsed.value, &mut supplied);
        set::apply(base, parsed, target)?;
    }
    let parameters = match &config {
        Some(config) => Some(config.parameters(&parameters)?),
        None => None,
    };
    // `metadata` first, seeing its own fields as written, so that everything else sees the
    // name and namespace it resolves to (`namespace: ${config.namespace}`); then the rest,
    // without `metadata`, which must not be read twice.
    let mut metadata = take_entry(&mut root, "metadata");
    if let Some((_, entry)) = &mut metadata {
        let written = metadata_fields(&entry.value);
        let mut scope = expr::Scope::new(
            parameters.as_ref(),
            written.clone(),
            instance.scope(&written),
        );
        expr::resolve(&mut entry.value, &mut scope, env, sensitive)?;
    }
    let module_scope = metadata
        .as_ref()
        .map_or_else(|| serde_json::json!({}), |(_, e)| metadata_fields(&e.value));
    let instance = instance.scope(&module_scope);
    let mut scope = expr::Scope::new(parameters.as_ref(), module_scope, instance);
    if let Some((_, entry)) = locals {
        expr::resolve_locals(entry, &mut scope, env, sensitive)?;
    }
    expr::check_all(&root, config.as_ref())?;
    let mut excluded = expr::apply_conditions(&mut root, &mut scope, surroundings.pool)?;
    let (kept_patches, left_out_patches) = match patches {
        Some((_, mut entry)) => {
            let conditions = patch::apply_conditions(&mut entry.value, &mut scope)?;
            if let tree::Value::Map(entries) = &mut root.value {
                entries.push(entry);
            }
            conditions
        }
        None => (Vec::new(), Vec::new()),
    };
    excluded.extend(expr::resolve_module(
        &mut root,
        &mut scope,
        env,
        sensitive,
        surroundings.pool,
    )?);
    if let (Some((index, entry)), tree::Value::Map(entries)) = (metadata, &mut root.value) {
        entries.insert(index, entry);
    }
    // Everything so far came from the environment.
    supplied.extend(sensitive.iter().cloned());
    let mut secrets = BTreeSet::new();
    document::collect_secrets(&root, &mut secrets);
    sensitive.extend(
        secrets
            .into_iter()
            .filter(|secret| !literal.contains(secret) || supplied.contains(secret)),
    );
    sensitive.remove("");
    let mut module = document::interpret(
        &root,
        origin,
        sensitive.clone(),
        &kept_patches,
        surroundings.pool,
    )?;
    // A large module's tree, read now, is freed on a thread of its own: freeing it took 15 ms
    // of a 10,000-component render.
    if module.components.len() >= PARALLEL_FROM {
        crate::background::drop_in_background(root);
    }
    module.config = config.map(|c| c.schema);
    module.parameters = parameters;
    module.excluded = excluded;
    module.left_out_patches = left_out_patches;
    Ok(module)
}

/// The `config` schema of the module at `path` (a file or a directory), read without any values:
/// the schema a values file for it must follow. `None` when the module declares no parameters.
pub fn config_schema(path: &Path) -> Result<Option<serde_json::Value>, ModuleError> {
    let path = module_file(path);
    let mut root = read_tree(&path, None)?;
    Ok(take_config(&mut root)?.map(|config| config.schema))
}

/// Why a values file or `--set` cannot name `patches`.
fn patches_are_the_modules() -> &'static str {
    "patches are the module's own: a values file or --set cannot add or change them; declare \
     a parameter in the module's `config` and use it in the module's patches \
     (docs/module-format.md#patches)"
}

/// `module` as expressions see it: the name, version and namespace of `metadata`, those that
/// are strings with no `${…}` left in them.
fn metadata_fields(metadata: &Node) -> serde_json::Value {
    let mut scope = serde_json::Map::new();
    if let tree::Value::Map(fields) = &metadata.value {
        for field in fields {
            if let ("name" | "version" | "namespace", tree::Value::String(text)) =
                (field.key.as_str(), &field.value.value)
                && !text.contains("${")
            {
                scope.insert(field.key.clone(), text.clone().into());
            }
        }
    }
    serde_json::Value::Object(scope)
}

/// Removes the entry `key` from the map `root`, with the index it had.
fn take_entry(root: &mut Node, key: &str) -> Option<(usize, Entry)> {
    let tree::Value::Map(entries) = &mut root.value else {
        return None;
    };
    let index = entries.iter().position(|entry| entry.key == key)?;
    Some((index, entries.remove(index)))
}

/// Where a module is rendered, as far as its expressions can see: the instance and the
/// namespace the render names (`--instance`, `-n`); `None` for the module's own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Instance {
    /// The instance's name; `None` for the module's name.
    pub name: Option<String>,
    /// The namespace; `None` for the module's `metadata.namespace`, else `default`.
    pub namespace: Option<String>,
    /// The platform the render is for (its providers' `core.opm.dev/format`: `kubernetes`,
    /// `compose`); `None` for `kubernetes`.
    pub platform: Option<String>,
}

impl Instance {
    /// `instance` as expressions see it, given `module` (the module's metadata scope):
    /// - `name`: the instance's (the module's, unless the render names another);
    /// - `prefix`: what a provider puts before the names of the objects it renders, so that two
    ///   instances of a module in one namespace do not collide: `""` for the module's own name,
    ///   else the instance's name and `-` (`docs/rendering.md#instances`). A component refers
    ///   to an object another component renders as `${instance.prefix}NAME`;
    /// - `namespace`: the namespace the resources land in;
    /// - `platform`: the platform the render is for (`kubernetes`, `compose`), so that one
    ///   module can leave out what a platform does not have (`$when: ${instance.platform ==
    ///   'kubernetes'}`).
    fn scope(&self, module: &serde_json::Value) -> serde_json::Value {
        let field = |key: &str| module.get(key).and_then(serde_json::Value::as_str);
        let module_name = field("name");
        let instance = self.name.as_deref();
        let name = instance.or(module_name).unwrap_or_default();
        let prefix = match instance {
            Some(instance) if Some(instance) != module_name => format!("{instance}-"),
            _ => String::new(),
        };
        let namespace = self
            .namespace
            .as_deref()
            .or(field("namespace"))
            .unwrap_or("default");
        let platform = self.platform.as_deref().unwrap_or(patch::DEFAULT_PLATFORM);
        serde_json::json!({"name": name, "prefix": prefix, "namespace": namespace, "platform": platform})
    }
}

/// The texts opm prints as they are, whatever is sensitive ([`crate::redact::Redactor::keeping`]):
/// the module's, its components' and its namespace's names when it was read, the instance's and
/// namespace's given, and the paths of the module and its values files as given and absolute.
pub fn public_names(
    module: Option<&Module>,
    path: &Path,
    values: &[PathBuf],
    instance: Option<&str>,
    namespace: Option<&str>,
) -> Vec<String> {
    let mut names: Vec<String> = std::iter::once(path)
        .chain(values.iter().map(PathBuf::as_path))
        .flat_map(|path| {
            let absolute = std::path::absolute(path)
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            [path.display().to_string(), absolute]
        })
        .chain(instance.map(str::to_owned))
        .chain(namespace.map(str::to_owned))
        .collect();
    if let Some(module) = module {
        names.push(module.name().to_owned());
        names.extend(module.namespace().map(str::to_owned));
        names.extend(module.components().map(|c| c.name.clone()));
    }
    names.sort();
    names.dedup();
    names
}

/// Adds every string `node` holds that is not an expression (`${…}`) to `out`.
fn literal_strings(node: &Node, out: &mut BTreeSet<String>) {
    match &node.value {
        tree::Value::String(text) if !text.contains("${") => {
            out.insert(text.clone());
        }
        tree::Value::List(items) => items.iter().for_each(|item| literal_strings(item, out)),
        tree::Value::Map(entries) => entries
            .iter()
            .for_each(|entry| literal_strings(&entry.value, out)),
        _ => {}
    }
}

/// Removes the `config` section from the module document and reads it.
fn take_config(root: &mut Node) -> Result<Option<config::Config>, ModuleError> {
    match take_entry(root, "config") {
        Some((_, entry)) => config::Config::read(&entry.value).map(Some),
        None => Ok(None),
    }
}

/// Interprets `text` as a module file called `source`, with no values and no environment:
/// for tests and tools.
pub fn from_str(text: &str, source: &str) -> Result<Module, ModuleError> {
    let source: Arc<str> = Arc::from(source);
    let root = tree::parse(text, &source)?;
    assemble(
        root,
        std::iter::empty(),
        &[],
        &Surroundings {
            instance: &Instance::default(),
            env: &|_| None,
            pool: None,
        },
        Origin::whole(source),
        &mut BTreeSet::new(),
    )
}

/// The directory argument `opm mod init` needs to create `module` (none for the current one).
fn init_dir(module: &Path) -> String {
    match module.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && dir != Path::new(".") => {
            format!(" {}", dir.display())
        }
        _ => String::new(),
    }
}

/// The module file at `path`: `path` itself, or the `module.yaml` (else `module.json`) of the
/// directory it names.
pub fn module_file(path: &Path) -> PathBuf {
    if path.is_dir() {
        let json = path.join("module.json");
        let yaml = path.join("module.yaml");
        if !yaml.exists() && json.exists() {
            json
        } else {
            yaml
        }
    } else {
        path.to_owned()
    }
}

fn read_tree(path: &Path, pool: Option<&rayon::ThreadPool>) -> Result<Node, ModuleError> {
    let bytes = std::fs::read(path).map_err(|error| ModuleError::Read {
        path: path.to_owned(),
        error,
    })?;
    parse_input(
        Input {
            name: &path.display().to_string(),
            bytes: &bytes,
        },
        pool,
    )
}

fn parse_input(input: Input<'_>, pool: Option<&rayon::ThreadPool>) -> Result<Node, ModuleError> {
    let source: Arc<str> = Arc::from(input.name);
    let text = std::str::from_utf8(input.bytes).map_err(|e| ModuleError::Syntax {
        origin: Origin::whole(source.clone()),
        message: format!("not UTF-8 (byte {})", e.valid_up_to()),
    })?;
    tree::parse_on(pool, text, &source)
}

#[cfg(test)]
mod tests;
