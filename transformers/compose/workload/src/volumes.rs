//! The pod's volumes as compose mounts and named volumes.
//!
//! | Kubernetes | compose |
//! |---|---|
//! | PersistentStorage entry | named volume `<service>-<entry>` (the claim's name) |
//! | `persistentClaim` by name, or `{component, storage}` | that named volume; one no component renders is declared `external` by the renderer |
//! | `emptyDir` mounted by one container | an anonymous volume, or with `medium: Memory` a tmpfs mount |
//! | `emptyDir` shared by containers (or mounted with `subPath`) | named volume `<service>-<volume>` (tmpfs-backed for `Memory`) |
//! | `configMap`, `secret`, `projected` | files the renderer mounts from `configs:` and `secrets:` ([`Files`]) |
//! | `hostPath` | a bind mount (`create_host_path` for `DirectoryOrCreate`), with the component's host access only ([`crate::host`]) |
//! | `nfs` | named volume `<service>-<volume>` of the local driver, type nfs |
//! | `ephemeral` | an anonymous volume |
//! | `csi` | not mounted: a warning |

use std::collections::BTreeMap;

use opm_compose_common::extension::{Files, Item, Source as DataSource};
use opm_compose_common::{VOLUME, entry_labels, quantity, resource, sorted_entries};
use opm_guest::{Component, Context, Map, TransformError, Value, json};
use opm_module_common::notes::unhonoured;
use opm_module_common::volumes::Storage;

use crate::host;

/// Where a pod volume's data lives.
#[derive(Debug, Clone, PartialEq)]
enum Source {
    /// An emptyDir that one container mounts: its own anonymous volume or tmpfs.
    EmptyDir { memory: bool, size: Option<String> },
    /// A named volume.
    Named { name: String, read_only: bool },
    /// A host path.
    Bind { path: String, create: bool },
    /// An anonymous volume.
    Anonymous,
    /// ConfigMap and Secret keys.
    Files(Vec<FileSource>),
    /// Nothing compose can mount (warned when the pod is read).
    Lost,
}

/// One ConfigMap or Secret of a `configMap`, `secret` or `projected` volume.
#[derive(Debug, Clone, PartialEq)]
struct FileSource {
    source: DataSource,
    items: Option<Vec<Item>>,
    mode: Option<u32>,
    optional: bool,
}

/// A mount of one container.
#[derive(Debug, Clone, PartialEq)]
pub enum Mount {
    /// An entry of the service's `volumes:` (long syntax).
    Volume(Value),
    /// Files the renderer mounts.
    Files(Vec<Files>),
    /// Nothing.
    Nothing,
}

/// The pod's volumes by name, and the named volumes they need.
#[derive(Debug, Clone, Default)]
pub struct PodVolumes {
    sources: BTreeMap<String, Source>,
    named: Vec<(String, Value)>,
    /// Whether the component asks for host access, which a `hostPath` needs.
    host_access: bool,
}

impl PodVolumes {
    /// The volumes of `component` (the Volumes resource and the PersistentStorage entries) for
    /// the main service `service`, whose `containers` mount them and which runs `copies`
    /// copies.
    pub fn new(
        component: &Component,
        context: &Context,
        service: &str,
        storage: &[Storage],
        containers: &BTreeMap<String, Value>,
        copies: u64,
    ) -> Result<Self, TransformError> {
        let mut volumes = Self {
            host_access: host::allowed(component),
            ..Self::default()
        };
        let declared: Option<Value> = component.field("volumes")?;
        /// The mounts of the volume `name` in the container `spec`.
        fn mounts<'a>(spec: &'a Value, name: &str) -> Vec<&'a Value> {
            spec.pointer(&format!("/volumeMounts/{name}"))
                .map(opm_compose_common::mounts_of)
                .unwrap_or_default()
        }
        for (name, source) in sorted_entries(declared.as_ref()) {
            let users: usize = containers
                .values()
                .map(|spec| mounts(spec, name).len())
                .sum();
            let sub_path = containers.values().any(|spec| {
                mounts(spec, name)
                    .iter()
                    .any(|mount| mount.get("subPath").is_some())
            });
            let source = volumes.declared(
                context,
                service,
                name,
                source,
                users > 1 || sub_path,
                copies,
            )?;
            volumes.sources.insert(name.clone(), source);
        }
        for entry in storage {
            if volumes.sources.contains_key(&entry.name) {
                return Err(TransformError::invalid(format!(
                    "volume {:?} is declared both in volumes and in persistentStorage",
                    entry.name
                )));
            }
            if let Some(class) = entry.value.get("storageClass").and_then(Value::as_str) {
                unhonoured(
                    context,
                    &format!(
                        "persistentStorage.{}.storageClass {class:?}: the named volume {} uses \
                         Docker's local driver",
                        entry.name, entry.volume
                    ),
                )?;
            }
            volumes.sources.insert(
                entry.name.clone(),
                Source::Named {
                    name: entry.volume.clone(),
                    read_only: false,
                },
            );
            volumes.named.push((
                entry.volume.clone(),
                spec_with_labels(Map::new(), &entry.value),
            ));
        }
        Ok(volumes)
    }

    /// The Volume resources of the named volumes the pod declares.
    pub fn resources(&self, context: &Context) -> Vec<Value> {
        self.named
            .iter()
            .map(|(name, spec)| resource(VOLUME, name, context, spec.clone()))
            .collect()
    }

    /// The mount of the volume `name` described by `mount` (a `volumeMounts` entry) in a
    /// container; `path` names the mount in errors.
    pub fn mount(&self, name: &str, mount: &Value, path: &str) -> Result<Mount, TransformError> {
        let source = self.sources.get(name).ok_or_else(|| {
            TransformError::invalid(format!(
                "{path} mounts volume {name:?}, which is neither in volumes nor in \
                 persistentStorage"
            ))
        })?;
        let target = mount
            .get("mountPath")
            .and_then(Value::as_str)
            .ok_or_else(|| TransformError::invalid(format!("{path}.mountPath is required")))?;
        let read_only = mount
            .get("readOnly")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let sub_path = mount
            .get("subPath")
            .and_then(Value::as_str)
            .filter(|sub_path| !sub_path.is_empty());
        let mut entry = Map::new();
        match source {
            Source::Named {
                name,
                read_only: always,
            } => {
                entry.insert("type".into(), json!("volume"));
                entry.insert("source".into(), json!(name));
                entry.insert("target".into(), json!(target));
                if read_only || *always {
                    entry.insert("read_only".into(), json!(true));
                }
                if let Some(sub_path) = sub_path {
                    entry.insert("volume".into(), json!({"subpath": sub_path}));
                }
            }
            Source::EmptyDir { memory: true, size } => {
                entry.insert("type".into(), json!("tmpfs"));
                entry.insert("target".into(), json!(target));
                if let Some(size) = size {
                    entry.insert("tmpfs".into(), json!({"size": size}));
                }
            }
            Source::EmptyDir { memory: false, .. } | Source::Anonymous => {
                entry.insert("type".into(), json!("volume"));
                entry.insert("target".into(), json!(target));
                if read_only {
                    entry.insert("read_only".into(), json!(true));
                }
            }
            Source::Bind { path: host, create } => {
                let host = match sub_path {
                    Some(sub_path) => format!("{}/{sub_path}", host.trim_end_matches('/')),
                    None => host.clone(),
                };
                entry.insert("type".into(), json!("bind"));
                entry.insert("source".into(), json!(host));
                entry.insert("target".into(), json!(target));
                if read_only {
                    entry.insert("read_only".into(), json!(true));
                }
                entry.insert("bind".into(), json!({"create_host_path": create}));
            }
            Source::Files(sources) => {
                return Ok(Mount::Files(
                    sources
                        .iter()
                        .map(|file| Files {
                            source: file.source.clone(),
                            target: target.to_owned(),
                            items: file.items.clone(),
                            mode: file.mode,
                            sub_path: sub_path.map(str::to_owned),
                            optional: file.optional,
                        })
                        .collect(),
                ));
            }
            Source::Lost => return Ok(Mount::Nothing),
        }
        Ok(Mount::Volume(Value::Object(entry)))
    }

    /// The source of the declared volume `name`; `shared` when several containers mount it or
    /// a mount takes a sub-path of it.
    fn declared(
        &mut self,
        context: &Context,
        service: &str,
        name: &str,
        source: &Value,
        shared: bool,
        copies: u64,
    ) -> Result<Source, TransformError> {
        let (kind, value) = opm_module_common::volumes::source(name, source)?;
        let field = format!("volumes.{name}");
        Ok(match kind.as_str() {
            "emptyDir" => {
                let memory = value.get("medium").and_then(Value::as_str) == Some("Memory");
                let size = value.get("sizeLimit").and_then(quantity::bytes);
                if !memory && let Some(limit) = value.get("sizeLimit") {
                    unhonoured(
                        context,
                        &format!(
                            "{field}.emptyDir.sizeLimit {limit}: a Docker volume has no size \
                             limit (medium: Memory makes it a tmpfs of that size)"
                        ),
                    )?;
                }
                if !shared {
                    return Ok(Source::EmptyDir { memory, size });
                }
                if copies > 1 {
                    unhonoured(
                        context,
                        &format!(
                            "{field}: an emptyDir that several containers share is the named \
                             volume {service}-{name}, which all {copies} copies share too"
                        ),
                    )?;
                }
                let volume = format!("{service}-{name}");
                let spec = if memory {
                    let mut options = json!({"type": "tmpfs", "device": "tmpfs"});
                    if let Some(size) = &size {
                        options["o"] = json!(format!("size={size}"));
                    }
                    json!({"driver": "local", "driver_opts": options})
                } else {
                    json!({})
                };
                self.named.push((volume.clone(), spec));
                Source::Named {
                    name: volume,
                    read_only: false,
                }
            }
            "configMap" | "secret" => Source::Files(vec![file_source(kind, value, None, &field)?]),
            "projected" => {
                let mode = mode(value.get("defaultMode"));
                let mut files = Vec::new();
                for (index, entry) in value
                    .get("sources")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let at = format!("{field}.projected.sources[{index}]");
                    let Some((kind, value)) = entry.as_object().and_then(|e| e.iter().next())
                    else {
                        continue;
                    };
                    match kind.as_str() {
                        "configMap" | "secret" => {
                            files.push(file_source(kind, value, mode, &at)?);
                        }
                        other => unhonoured(
                            context,
                            &format!(
                                "{at}.{other}: compose has no {} to mount; the volume's other \
                                 sources are mounted",
                                if other == "serviceAccountToken" {
                                    "service account token"
                                } else {
                                    "downward API"
                                }
                            ),
                        )?,
                    }
                }
                Source::Files(files)
            }
            "persistentClaim" => match value {
                Value::String(claim) => Source::Named {
                    name: claim.clone(),
                    read_only: false,
                },
                Value::Object(shared) => Source::Named {
                    name: opm_module_common::volumes::shared_claim(name, shared, context)?,
                    read_only: shared
                        .get("readOnly")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                },
                _ => {
                    return Err(TransformError::invalid(format!(
                        "{field}.persistentClaim must be a claim name or {{component, storage}}"
                    )));
                }
            },
            "hostPath" => {
                let path = value.get("path").and_then(Value::as_str).ok_or_else(|| {
                    TransformError::invalid(format!("{field}.hostPath.path is required"))
                })?;
                if path.starts_with("./") {
                    // The project's own directory, the compose file's: no host access, and
                    // never above it.
                    relative_inside(path).map_err(|why| {
                        TransformError::invalid(format!("{field}.hostPath {path:?}: {why}"))
                    })?;
                } else {
                    host::require(
                        self.host_access,
                        &format!("{field}.hostPath {path:?}"),
                        &host::bind_grants(path),
                    )?;
                }
                let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
                if kind == "FileOrCreate" {
                    unhonoured(
                        context,
                        &format!(
                            "{field}.hostPath.type FileOrCreate: compose creates a missing bind \
                             source as a directory, not a file; create {path} on the host first"
                        ),
                    )?;
                }
                Source::Bind {
                    path: path.to_owned(),
                    create: matches!(kind, "" | "DirectoryOrCreate"),
                }
            }
            "nfs" => {
                let server = value
                    .get("server")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let path = value
                    .get("path")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let read_only = value
                    .get("readOnly")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let mut options = format!("addr={server}");
                if read_only {
                    options.push_str(",ro");
                }
                let volume = format!("{service}-{name}");
                self.named.push((
                    volume.clone(),
                    json!({"driver": "local", "driver_opts":
                           {"type": "nfs", "o": options, "device": format!(":{path}")}}),
                ));
                Source::Named {
                    name: volume,
                    read_only,
                }
            }
            "ephemeral" => {
                if let Some(class) = value.get("storageClass").and_then(Value::as_str) {
                    unhonoured(
                        context,
                        &format!(
                            "{field}.ephemeral.storageClass {class:?}: an ephemeral volume is an \
                             anonymous Docker volume of the local driver"
                        ),
                    )?;
                }
                Source::Anonymous
            }
            "csi" => {
                let driver = value
                    .get("driver")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                unhonoured(
                    context,
                    &format!(
                        "{field}.csi: Docker has no CSI driver {driver:?}; the volume is not \
                         mounted (a Docker volume plugin may provide the data: patch the \
                         service's volumes)"
                    ),
                )?;
                Source::Lost
            }
            other => {
                return Err(TransformError::invalid(format!(
                    "{field}.{other} is not a volume source this provider knows"
                )));
            }
        })
    }
}

/// A Volume spec: `spec` with the `labels` of a PersistentStorage entry (its labels and
/// annotations).
fn spec_with_labels(mut spec: Map<String, Value>, entry: &Value) -> Value {
    let labels = entry_labels(entry);
    if !labels.is_empty() {
        spec.insert("labels".into(), Value::Object(labels));
    }
    Value::Object(spec)
}

/// A `configMap` or `secret` volume (or projected source) `value`: a name, or `{name, items,
/// defaultMode, optional}`.
fn file_source(
    kind: &str,
    value: &Value,
    default_mode: Option<u32>,
    field: &str,
) -> Result<FileSource, TransformError> {
    let (name, options) = match value {
        Value::String(name) => (name.clone(), &Value::Null),
        Value::Object(object) => (
            object
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| TransformError::invalid(format!("{field}.{kind}.name is required")))?
                .to_owned(),
            value,
        ),
        _ => {
            return Err(TransformError::invalid(format!(
                "{field}.{kind} must be a name or {{name, items, defaultMode, optional}}"
            )));
        }
    };
    let items = options.get("items").and_then(Value::as_array).map(|items| {
        items
            .iter()
            .map(|item| Item {
                key: item["key"].as_str().unwrap_or_default().to_owned(),
                path: item["path"].as_str().unwrap_or_default().to_owned(),
                mode: mode(item.get("mode")),
            })
            .collect()
    });
    Ok(FileSource {
        source: if kind == "secret" {
            DataSource::Secret(name)
        } else {
            DataSource::ConfigMap(name)
        },
        items,
        mode: mode(options.get("defaultMode")).or(default_mode),
        optional: options
            .get("optional")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

fn mode(value: Option<&Value>) -> Option<u32> {
    value
        .and_then(Value::as_u64)
        .and_then(|mode| u32::try_from(mode).ok())
}

/// Whether the relative bind source `path` (`./data`) stays inside the directory the compose
/// file is in (the output directory): no `..` that leaves it.
fn relative_inside(path: &str) -> Result<(), String> {
    let mut depth = 0usize;
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                depth = depth.checked_sub(1).ok_or_else(|| {
                    "a relative bind mount is resolved from the output directory and may not \
                     leave it"
                        .to_owned()
                })?;
            }
            _ => depth += 1,
        }
    }
    Ok(())
}
