//! The compose project of a render: every resource merged into one document, with what the
//! services ask of the render resolved ([`opm_compose_common::extension`]).
//!
//! - **Identity.** A resource is its kind and name: two Services named `api` are refused,
//!   each naming the other's component, while a Service and a Volume named `api` are two
//!   entries of two sections.
//! - **Variables.** `envFrom`, `configMapKeyRef` and `secretKeyRef` get the values of the
//!   render's `Config` and `Secret` resources, and values and commands that refer to them are
//!   expanded as Kubernetes would. A key of an object the module does not render (an existing
//!   Secret, named by a parameter) is left to the environment of `docker compose`:
//!   `${NAME:?…}`, an error at `up` when it is unset, and a warning now.
//! - **Files.** A ConfigMap or Secret volume mounts one `configs:` or `secrets:` entry per key.
//!   With `--out-dir` each key is written as a file beside `compose.yaml` (`configs/<object>/
//!   <key>`, `secrets/<object>/<key>`) that compose bind-mounts: it works in a read-only
//!   container, and holds bytes as well as text, but has the mode it is written with (a mode the
//!   module asks for is a warning). On stdout there is no file to write: a key is an inline
//!   `content` config (mode honoured; a Secret's too, with a warning), bytes cannot be mounted,
//!   and a read-only container cannot take an inline config (both warnings, errors with
//!   `--strict`).
//! - **Volumes.** A named volume that no component renders (a claim named by hand) is declared
//!   `external`: Docker must have it already (a warning).
//! - **Interpolation.** Compose fills `$NAME` and `${NAME}` in every value of the file from the
//!   environment of `docker compose up`: the deployer's, credentials and all. Every string the
//!   resources hold is raw text, and once the document is complete every string value in it —
//!   a transformer's or a patch's, in any section — is escaped (`$` as `$$`,
//!   [`escape_values`]), keys left alone. The one interpolation compose is left is the renderer's
//!   own `${NAME:?…}` for a key of an object the module does not render (above), put in after
//!   the escape.
//! - **Order.** Sections are written `services`, `volumes`, `configs`, `secrets`, `networks`,
//!   entries in name order and a service's fields in one fixed order, so the same module
//!   renders the same bytes.

use std::collections::{BTreeMap, BTreeSet};

use opm_compose_common::data::Content;
use opm_compose_common::expand::{escape, escape_values, expand};
use opm_compose_common::extension::{self, Extension, Files, Source};
use opm_compose_common::{
    API_VERSION, CONFIG, NETWORK, SECRET, SECTIONS, SERVICE, VOLUME, split_data_name,
};
use opm_guest::{Context, Map, RenderError, Rendered, Value, json};

/// A service's fields in the order they are written; others (a patch may add any) follow in
/// name order.
const SERVICE_FIELDS: &[&str] = &[
    "image",
    "pull_policy",
    "entrypoint",
    "command",
    "working_dir",
    "user",
    "group_add",
    "environment",
    "ports",
    "volumes",
    "configs",
    "secrets",
    "healthcheck",
    "depends_on",
    "network_mode",
    "pid",
    "dns",
    "dns_search",
    "dns_opt",
    "extra_hosts",
    "read_only",
    "privileged",
    "cap_add",
    "cap_drop",
    "security_opt",
    "sysctls",
    "stdin_open",
    "tty",
    "runtime",
    "cpu_shares",
    "post_start",
    "pre_stop",
    "stop_grace_period",
    "deploy",
    "restart",
    "labels",
    "annotations",
];

/// The project: `compose.yaml`'s document and the files beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Project {
    /// The compose document.
    pub document: Value,
    /// Files to write beside it (relative path, bytes), in path order.
    pub files: BTreeMap<String, Vec<u8>>,
}

/// One resource, parsed.
struct Entry<'a> {
    index: usize,
    rendered: &'a Rendered,
    labels: Map<String, Value>,
    spec: Map<String, Value>,
}

/// The keys of one ConfigMap or Secret: each key's entry name, value and labels.
#[derive(Default)]
struct Object {
    keys: BTreeMap<String, (String, Content, Map<String, Value>)>,
}

/// What the renderer is building.
struct Builder<'a> {
    context: &'a Context,
    directory: bool,
    refused: Vec<(u32, String)>,
    configs: BTreeMap<String, Value>,
    secrets: BTreeMap<String, Value>,
    files: BTreeMap<String, Vec<u8>>,
    /// Secrets written as configs (stdout), warned once each.
    inlined_secrets: BTreeSet<String>,
    /// Read-only services with inline configs, warned once each.
    read_only_warned: BTreeSet<String>,
    /// The variables compose takes from its own environment: by service and variable, the
    /// `${NAME:?…}` value, put back as it is after the escape of the document.
    from_compose: BTreeMap<(String, String), String>,
}

/// The mode of the files written beside `compose.yaml`.
const WRITTEN_MODE: u32 = 0o644;

/// The project of `resources` rendered in `context`; `directory` when the files go into one
/// (`--out-dir`), so that secrets and bytes can be written as files.
pub fn build(
    resources: &[Rendered],
    context: &Context,
    directory: bool,
) -> Result<Project, RenderError> {
    let mut builder = Builder {
        context,
        directory,
        refused: Vec::new(),
        configs: BTreeMap::new(),
        secrets: BTreeMap::new(),
        files: BTreeMap::new(),
        inlined_secrets: BTreeSet::new(),
        read_only_warned: BTreeSet::new(),
        from_compose: BTreeMap::new(),
    };
    let entries = builder.parse(resources)?;
    let mut by_kind: BTreeMap<&str, BTreeMap<&str, &Entry>> = BTreeMap::new();
    for entry in &entries {
        let first = by_kind
            .entry(entry.rendered.kind.as_str())
            .or_default()
            .insert(entry.rendered.name.as_str(), entry);
        if let Some(first) = first {
            builder.refuse_duplicate(first, entry);
        }
    }
    if !builder.refused.is_empty() {
        return Err(RenderError::Refused(builder.refused));
    }
    let objects = data_objects(&by_kind);
    let empty = BTreeMap::new();
    let services_in = by_kind.get(SERVICE).unwrap_or(&empty);
    let service_names: BTreeSet<&str> = services_in.keys().copied().collect();

    let mut services = Map::new();
    for (name, entry) in services_in {
        let mut spec = entry.spec.clone();
        builder.resolve(entry, &mut spec, &objects, &service_names);
        services.insert(
            (*name).to_owned(),
            Value::Object(ordered(with_labels(spec, entry))),
        );
    }

    let mut volumes = Map::new();
    for (name, entry) in by_kind.get(VOLUME).unwrap_or(&empty) {
        volumes.insert((*name).to_owned(), labelled(entry));
    }
    let mut external = BTreeSet::new();
    for service in services.values() {
        for mount in service
            .get("volumes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if mount.get("type").and_then(Value::as_str) == Some("volume")
                && let Some(source) = mount.get("source").and_then(Value::as_str)
                && !volumes.contains_key(source)
            {
                external.insert(source.to_owned());
            }
        }
    }
    for name in external {
        opm_guest::log::warn(&format!(
            "volume {name:?} is mounted but no component of the module renders it: it is \
             declared external, and Docker must have a volume of that name before `docker \
             compose up`"
        ));
        volumes.insert(name.clone(), json!({"name": name, "external": true}));
    }
    volumes.sort_keys();

    let mut networks = Map::new();
    networks.insert(
        "default".into(),
        json!({"labels": opm_compose_common::object_labels(context)}),
    );
    for (name, entry) in by_kind.get(NETWORK).unwrap_or(&empty) {
        networks.insert((*name).to_owned(), labelled(entry));
    }
    networks.sort_keys();

    if !builder.refused.is_empty() {
        return Err(RenderError::Refused(builder.refused));
    }
    let mut document = Map::new();
    document.insert("name".into(), json!(context.name));
    for (section, content) in [
        ("services", services),
        ("volumes", volumes),
        ("configs", builder.configs.into_iter().collect()),
        ("secrets", builder.secrets.into_iter().collect()),
        ("networks", networks),
    ] {
        if !content.is_empty() {
            document.insert(section.into(), Value::Object(content));
        }
    }
    let mut document = Value::Object(document);
    escape_values(&mut document);
    for ((service, name), value) in builder.from_compose {
        if let Some(slot) = document
            .get_mut("services")
            .and_then(|services| services.get_mut(&service))
            .and_then(|service| service.get_mut("environment"))
            .and_then(|environment| environment.get_mut(&name))
            && *slot == json!(escape(&value))
        {
            *slot = json!(value);
        }
    }
    Ok(Project {
        document,
        files: builder.files,
    })
}

/// An entry's spec with its labels (the spec's own, then the envelope's).
fn labelled(entry: &Entry) -> Value {
    Value::Object(with_labels(entry.spec.clone(), entry))
}

/// `spec` with the labels of `entry`'s envelope over its own, in key order: opm's tracking
/// labels win.
fn with_labels(mut spec: Map<String, Value>, entry: &Entry) -> Map<String, Value> {
    let mut labels = match spec.remove("labels") {
        Some(Value::Object(own)) => own,
        _ => Map::new(),
    };
    labels.extend(entry.labels.clone());
    labels.sort_keys();
    if !labels.is_empty() {
        spec.insert("labels".into(), Value::Object(labels));
    }
    spec
}

/// A service's fields in [`SERVICE_FIELDS`] order.
fn ordered(mut spec: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for field in SERVICE_FIELDS {
        if let Some(value) = spec.remove(*field) {
            out.insert((*field).to_owned(), value);
        }
    }
    spec.sort_keys();
    out.extend(spec);
    out
}

/// The ConfigMaps and Secrets of the render, from their `Config` and `Secret` resources.
fn data_objects(
    by_kind: &BTreeMap<&str, BTreeMap<&str, &Entry>>,
) -> BTreeMap<(bool, String), Object> {
    let mut objects: BTreeMap<(bool, String), Object> = BTreeMap::new();
    for (kind, secret) in [(CONFIG, false), (SECRET, true)] {
        for (name, entry) in by_kind.get(kind).into_iter().flatten() {
            let (Some((object, key)), Some(content)) = (
                split_data_name(name),
                Content::of_spec(&Value::Object(entry.spec.clone())),
            ) else {
                continue;
            };
            let mut labels = match entry.spec.get("labels") {
                Some(Value::Object(own)) => own.clone(),
                _ => Map::new(),
            };
            labels.extend(entry.labels.clone());
            labels.sort_keys();
            objects
                .entry((secret, object.to_owned()))
                .or_default()
                .keys
                .insert(key.to_owned(), ((*name).to_owned(), content, labels));
        }
    }
    objects
}

fn key_of(source: &Source) -> (bool, String) {
    (
        matches!(source, Source::Secret(_)),
        source.name().to_owned(),
    )
}

/// Whether compose can interpolate `${name}`.
fn interpolable(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

impl<'a> Builder<'a> {
    /// Every resource parsed; a resource that is not a compose resource is refused.
    fn parse<'r>(&mut self, resources: &'r [Rendered]) -> Result<Vec<Entry<'r>>, RenderError> {
        let mut entries = Vec::new();
        for (index, rendered) in resources.iter().enumerate() {
            let known = SECTIONS.iter().any(|(kind, _)| *kind == rendered.kind);
            if rendered.api_version != API_VERSION || !known {
                self.refused.push((
                    index as u32,
                    format!(
                        "{} {:?} ({}) is not a compose resource: the docker-compose renderer \
                         writes {API_VERSION} Service, Volume, Config, Secret and Network",
                        rendered.kind, rendered.name, rendered.api_version
                    ),
                ));
                continue;
            }
            let value = rendered.value()?;
            let labels = match value.pointer("/metadata/labels") {
                Some(Value::Object(labels)) => labels.clone(),
                _ => Map::new(),
            };
            let spec = match value.get("spec") {
                Some(Value::Object(spec)) => spec.clone(),
                None | Some(Value::Null) => Map::new(),
                Some(_) => {
                    self.refused.push((
                        index as u32,
                        format!(
                            "{} {:?}: spec must be an object",
                            rendered.kind, rendered.name
                        ),
                    ));
                    continue;
                }
            };
            entries.push(Entry {
                index,
                rendered,
                labels,
                spec,
            });
        }
        if self.refused.is_empty() {
            Ok(entries)
        } else {
            Err(RenderError::Refused(std::mem::take(&mut self.refused)))
        }
    }

    fn refuse_duplicate(&mut self, first: &Entry, second: &Entry) {
        let (kind, name) = (&second.rendered.kind, &second.rendered.name);
        for (this, other) in [(first, second), (second, first)] {
            self.refused.push((
                this.index as u32,
                format!(
                    "{kind} {name:?} is also rendered by component {:?} ({}): a compose file has \
                     one {kind} of a name; rename one of the components",
                    other.rendered.component, other.rendered.transformer
                ),
            ));
        }
    }

    /// Refuses the service `entry` with `reason`.
    fn refuse(&mut self, entry: &Entry, reason: String) {
        self.refused.push((
            entry.index as u32,
            format!("service {:?}: {reason}", entry.rendered.name),
        ));
    }

    /// A warning about the service `entry`, or under `--strict` a refusal.
    fn unhonoured(&mut self, entry: &Entry, reason: String) {
        if self.context.strict {
            self.refuse(entry, format!("{reason} (an error under --strict)"));
        } else {
            opm_guest::log::warn(&format!(
                "component {:?}, service {:?}: {reason}",
                entry.rendered.component, entry.rendered.name
            ));
        }
    }

    /// Resolves what the service `spec` asks of the render (`x-opm`), and checks the services
    /// it waits for.
    fn resolve(
        &mut self,
        entry: &Entry,
        spec: &mut Map<String, Value>,
        objects: &BTreeMap<(bool, String), Object>,
        services: &BTreeSet<&str>,
    ) {
        self.check_dependencies(entry, spec, services);
        let Some(raw) = spec.remove(extension::FIELD) else {
            return;
        };
        let extension: Extension = match serde_json::from_value(raw) {
            Ok(extension) => extension,
            Err(error) => {
                self.refuse(
                    entry,
                    format!("its {} field is malformed: {error}", extension::FIELD),
                );
                return;
            }
        };
        let mut environment = match spec.remove("environment") {
            Some(Value::Object(environment)) => environment,
            _ => Map::new(),
        };
        self.environment(entry, &extension, &mut environment, objects);
        for (raw, field) in [
            (&extension.entrypoint, "entrypoint"),
            (&extension.command, "command"),
        ] {
            if let Some(raw) = raw {
                let expanded: Vec<Value> = raw
                    .iter()
                    .map(|arg| json!(lookup_expand(arg, &environment)))
                    .collect();
                spec.insert(field.into(), Value::Array(expanded));
            }
        }
        environment.sort_keys();
        if !environment.is_empty() {
            spec.insert("environment".into(), Value::Object(environment));
        }
        for files in &extension.files {
            self.files(entry, spec, files, objects);
        }
    }

    /// Removes (with a warning) the services `spec` waits for that the render does not have.
    fn check_dependencies(
        &mut self,
        entry: &Entry,
        spec: &mut Map<String, Value>,
        services: &BTreeSet<&str>,
    ) {
        let Some(Value::Object(depends_on)) = spec.get_mut("depends_on") else {
            return;
        };
        let missing: Vec<String> = depends_on
            .keys()
            .filter(|name| !services.contains(name.as_str()))
            .cloned()
            .collect();
        for name in &missing {
            depends_on.remove(name);
        }
        if depends_on.is_empty() {
            spec.remove("depends_on");
        }
        for name in missing {
            self.unhonoured(
                entry,
                format!(
                    "it waits for {name:?}, which is not a service of this render (a cronjob, a \
                     component left out, or a misspelt depends-on.opm.dev annotation); it \
                     starts without waiting"
                ),
            );
        }
    }

    /// The variables of `envFrom` (where the service does not define them), then the deferred
    /// ones in order.
    fn environment(
        &mut self,
        entry: &Entry,
        extension: &Extension,
        environment: &mut Map<String, Value>,
        objects: &BTreeMap<(bool, String), Object>,
    ) {
        let defined: BTreeSet<String> = environment
            .keys()
            .cloned()
            .chain(extension.environment.iter().map(|var| var.name.clone()))
            .collect();
        for from in &extension.env_from {
            let Some(object) = objects.get(&key_of(&from.source)) else {
                if !from.optional {
                    self.refuse(
                        entry,
                        format!(
                            "envFrom reads every key of {}, which no component of this module \
                             renders; compose has no objects outside the compose file (mark it \
                             optional, or render it)",
                            from.source.describe()
                        ),
                    );
                }
                continue;
            };
            for (key, (_, content, _)) in &object.keys {
                let name = format!("{}{key}", from.prefix);
                if defined.contains(&name) || environment.contains_key(&name) {
                    continue;
                }
                match content.text() {
                    Some(text) => {
                        environment.insert(name, json!(text));
                    }
                    // Kubernetes leaves a ConfigMap's binaryData out of envFrom too.
                    None if matches!(from.source, Source::ConfigMap(_)) => {}
                    None => self.unhonoured(
                        entry,
                        format!(
                            "envFrom {}: key {key:?} holds bytes that are not text, which a \
                             variable cannot; it is left out",
                            from.source.describe()
                        ),
                    ),
                }
            }
        }
        for var in &extension.environment {
            if let Some(template) = &var.value {
                let value = lookup_expand(template, environment);
                environment.insert(var.name.clone(), json!(value));
                continue;
            }
            let Some(from) = &var.from else {
                continue;
            };
            let object = objects.get(&key_of(&from.source));
            match object.and_then(|object| object.keys.get(&from.key)) {
                Some((_, content, _)) => match content.text() {
                    Some(text) => {
                        environment.insert(var.name.clone(), json!(text));
                    }
                    None => self.refuse(
                        entry,
                        format!(
                            "variable {}: key {:?} of {} holds bytes that are not text",
                            var.name,
                            from.key,
                            from.source.describe()
                        ),
                    ),
                },
                None if from.optional => {}
                None if object.is_some() => self.refuse(
                    entry,
                    format!(
                        "variable {} reads key {:?} of {}, which has no such key",
                        var.name,
                        from.key,
                        from.source.describe()
                    ),
                ),
                None if interpolable(&var.name) => {
                    self.unhonoured(
                        entry,
                        format!(
                            "variable {name} reads {}, which no component of this module \
                             renders: compose takes it from the environment of `docker compose \
                             up` (or .env), and refuses to start without it",
                            from.source.describe(),
                            name = var.name
                        ),
                    );
                    let value = from_compose(&var.name, &from.source);
                    environment.insert(var.name.clone(), json!(value));
                    self.from_compose
                        .insert((entry.rendered.name.clone(), var.name.clone()), value);
                }
                None => self.refuse(
                    entry,
                    format!(
                        "variable {} reads {}, which no component of this module renders",
                        var.name,
                        from.source.describe()
                    ),
                ),
            }
        }
    }

    /// The `configs:` or `secrets:` mounts of one ConfigMap or Secret volume.
    fn files(
        &mut self,
        entry: &Entry,
        spec: &mut Map<String, Value>,
        files: &Files,
        objects: &BTreeMap<(bool, String), Object>,
    ) {
        let Some(object) = objects.get(&key_of(&files.source)) else {
            if !files.optional {
                self.refuse(
                    entry,
                    format!(
                        "it mounts {} at {}, which no component of this module renders (mark the \
                         volume optional, or render it)",
                        files.source.describe(),
                        files.target
                    ),
                );
            }
            return;
        };
        let mut selected: Vec<(&str, String, Option<u32>)> = Vec::new();
        match &files.items {
            Some(items) => {
                for item in items {
                    if object.keys.contains_key(&item.key) {
                        selected.push((&item.key, item.path.clone(), item.mode.or(files.mode)));
                    } else if !files.optional {
                        self.refuse(
                            entry,
                            format!(
                                "it mounts key {:?} of {}, which has no such key",
                                item.key,
                                files.source.describe()
                            ),
                        );
                    }
                }
            }
            None => {
                for key in object.keys.keys() {
                    selected.push((key, key.clone(), files.mode));
                }
            }
        }
        let targets: Vec<(&str, String, Option<u32>)> = match &files.sub_path {
            Some(sub_path) => selected
                .into_iter()
                .filter(|(_, path, _)| path == sub_path)
                .map(|(key, _, mode)| (key, files.target.clone(), mode))
                .collect(),
            None => selected
                .into_iter()
                .map(|(key, path, mode)| {
                    (
                        key,
                        format!("{}/{path}", files.target.trim_end_matches('/')),
                        mode,
                    )
                })
                .collect(),
        };
        if targets.is_empty() && files.sub_path.is_some() {
            self.unhonoured(
                entry,
                format!(
                    "subPath {:?} of {} is not one of its files; nothing is mounted at {}",
                    files.sub_path.as_deref().unwrap_or_default(),
                    files.source.describe(),
                    files.target
                ),
            );
        }
        for (key, target, mode) in targets {
            let (name, content, labels) = &object.keys[key];
            self.mount(
                entry,
                spec,
                &files.source,
                key,
                name,
                content,
                labels,
                target,
                mode,
            );
        }
    }

    /// Mounts one key at `target`: declares its `configs:` or `secrets:` entry (and its file)
    /// and adds the mount to the service.
    #[expect(clippy::too_many_arguments, reason = "one mount's every part, named")]
    fn mount(
        &mut self,
        entry: &Entry,
        spec: &mut Map<String, Value>,
        source: &Source,
        key: &str,
        name: &str,
        content: &Content,
        labels: &Map<String, Value>,
        target: String,
        mode: Option<u32>,
    ) {
        let object = source.name();
        let secret = matches!(source, Source::Secret(_));
        let mut declared = Map::new();
        let mut mount = Map::new();
        mount.insert("source".into(), json!(name));
        mount.insert("target".into(), json!(target));
        let section = if self.directory {
            // A file beside compose.yaml, which compose bind-mounts: it works in a read-only
            // container too, but the file keeps the mode it is written with.
            let section = if secret { "secrets" } else { "configs" };
            let path = format!("{section}/{object}/{key}");
            self.files.insert(path.clone(), content.bytes());
            declared.insert("file".into(), json!(format!("./{path}")));
            // The mount is read-only: only who may read (and run) the file matters.
            if let Some(mode) = mode.filter(|mode| mode & 0o555 != WRITTEN_MODE & 0o555) {
                self.unhonoured(
                    entry,
                    format!(
                        "{target}: mode {mode:#o} of {}: compose bind-mounts the file as opm \
                         writes it ({WRITTEN_MODE:#o}); change it with chmod before `docker \
                         compose up` if it matters",
                        source.describe()
                    ),
                );
            }
            section
        } else {
            match content {
                Content::Text(text) => {
                    declared.insert("content".into(), json!(text));
                }
                Content::Base64(_) => {
                    self.unhonoured(
                        entry,
                        format!(
                            "key {key:?} of {} holds bytes that are not text, which compose \
                             cannot write inline; render with --out-dir to mount it as a file \
                             ({target} is left out)",
                            source.describe()
                        ),
                    );
                    return;
                }
            }
            if spec.get("read_only") == Some(&Value::Bool(true))
                && self.read_only_warned.insert(entry.rendered.name.clone())
            {
                self.unhonoured(
                    entry,
                    "it is read-only, and compose cannot write an inline config into a read-only \
                     container (`docker compose up` refuses it); render with --out-dir, which \
                     writes the configs as files compose mounts"
                        .to_owned(),
                );
            }
            if secret && self.inlined_secrets.insert(object.to_owned()) {
                opm_guest::log::warn(&format!(
                    "{} is mounted as compose configs with inline content, since compose reads \
                     a secret from a file and the render goes to stdout; render with --out-dir \
                     to get compose secrets, written under secrets/",
                    source.describe()
                ));
            }
            if let Some(mode) = mode {
                mount.insert("mode".into(), json!(mode));
            }
            "configs"
        };
        if !labels.is_empty() {
            declared.insert("labels".into(), Value::Object(labels.clone()));
        }
        let entries = if section == "secrets" {
            &mut self.secrets
        } else {
            &mut self.configs
        };
        entries.insert(name.to_owned(), Value::Object(declared));
        spec.entry(section)
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .expect("configs and secrets are lists")
            .push(Value::Object(mount));
    }
}

/// `text` expanded (`$(NAME)`) with the variables of `environment`.
fn lookup_expand(text: &str, environment: &Map<String, Value>) -> String {
    expand(text, |name| {
        environment
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
    })
}

/// The value of the variable `name` that compose takes from its own environment, `source`
/// being an object no component renders: `${NAME:?message}`, which makes `docker compose up`
/// refuse to start while it is unset. `name` is [`interpolable`]; the message names the
/// object only when its name is plain (`[A-Za-z0-9._-]`), so that no `}` or `$` of it can end
/// the expression and start another.
fn from_compose(name: &str, source: &Source) -> String {
    let object = source.name();
    let plain = !object.is_empty()
        && object
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    let kind = match source {
        Source::ConfigMap(_) => "ConfigMap",
        Source::Secret(_) => "Secret",
    };
    let what = if plain {
        format!("{kind} {object}, which it does not render")
    } else {
        format!("a {kind} it does not render")
    };
    format!("${{{name}:?set {name}: the module reads it from {what}}}")
}
