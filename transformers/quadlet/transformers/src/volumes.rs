//! The pod's volumes as Quadlet mounts and `.volume` units.
//!
//! | the module's | unit |
//! |---|---|
//! | PersistentStorage entry | `NAME-<entry>.volume` (`VolumeName=` the claim's name, or `claimName`), mounted `Volume=NAME-<entry>.volume:PATH` |
//! | `persistentClaim` `{component, storage}` | that component's `.volume` |
//! | `persistentClaim` by name | the Podman volume of that name (created empty if missing) |
//! | `emptyDir` | an anonymous volume, removed with the container; shared by several containers of the pod, `NAME-<volume>.volume`; `medium: Memory`, `Tmpfs=` |
//! | `configMap`, `secret`, `projected` | the renderer's files, `config/<object>/` and `secrets/<object>/`, bind-mounted read-only (a directory, or each of `items`) |
//! | `hostPath` | a bind mount, with host access only, of a path without blanks (Quadlet writes it unquoted into `RequiresMountsFor=`) |
//! | `nfs` | `NAME-<volume>.volume` of type nfs |
//! | `ephemeral` | an anonymous volume |
//! | `csi` | not mounted: a warning |
//!
//! A mount's `subPath` in a named volume is `Mount=…,subpath=`; in the files of a ConfigMap or
//! Secret, the one file. Quadlet takes `Volume=` and `Tmpfs=` as they are written (a quote would
//! reach Podman), `Mount=` as one quoted word: each is written so.

use std::collections::BTreeMap;

use opm_guest::{Component, Context, TransformError, Value};
use opm_module_common::host;
use opm_module_common::notes::{caveat, unhonoured};
use opm_module_common::volumes::{Storage, shared_claim, source};
use opm_quadlet_common::unit::Unit;
use opm_quadlet_common::{
    CONFIG_DIR, SECRET_DIR, VOLUME, escape, mounts_of, quote, resource, sorted_entries,
};

use crate::workload::Pod;

/// Where one pod volume's data lives.
#[derive(Debug, Clone, PartialEq)]
enum Source {
    /// A `.volume` unit of this render (by name).
    Unit(String),
    /// A Podman volume by name, which no unit here creates.
    Named(String),
    /// An anonymous volume.
    Anonymous,
    /// A tmpfs of this many bytes (or unbounded).
    Tmpfs(Option<u64>),
    /// A host path.
    Bind(String),
    /// ConfigMap or Secret files: the directory under the units, each item (key, path), or the
    /// whole object.
    Files(Vec<Files>),
    /// Nothing Podman can mount (warned when read).
    Lost,
}

/// The files of one ConfigMap or Secret: its directory under the units, and the items (key,
/// path) to mount, or none for the whole directory.
type Files = (String, Option<Vec<(String, String)>>);

/// The pod's volumes, by name, and the `.volume` units they need.
#[derive(Debug, Default)]
pub struct PodVolumes {
    sources: BTreeMap<String, (Source, bool)>,
    units: Vec<(String, Unit)>,
}

impl PodVolumes {
    /// The volumes of `component` (named `name`, for the instance): its PersistentStorage
    /// entries and its Volumes resource, with the `.volume` units they need.
    pub fn new(
        component: &Component,
        context: &Context,
        name: &str,
        storage: Vec<Storage>,
        containers: &BTreeMap<String, Value>,
    ) -> Result<Self, TransformError> {
        let mut volumes = Self::default();
        let labels: Vec<String> = context
            .labels
            .iter()
            .map(|(k, v)| quote(&format!("{k}={v}")))
            .collect();
        for entry in storage {
            let mut unit = Unit::default();
            unit.set(
                "Unit",
                "Description",
                escape(&format!(
                    "the storage {} of component {} ({})",
                    entry.name,
                    component.name(),
                    context.name
                )),
            );
            unit.set("Volume", "VolumeName", entry.volume.clone());
            for label in &labels {
                unit.add("Volume", "Label", label.clone());
            }
            for field in ["annotations", "labels"] {
                for (key, value) in sorted_entries(entry.value.get(field)) {
                    unit.add(
                        "Volume",
                        "Label",
                        quote(&format!("{key}={}", value.as_str().unwrap_or_default())),
                    );
                }
            }
            if entry.value.get("storageClass").is_some() {
                unhonoured(
                    context,
                    &format!(
                        "persistentStorage.{}.storageClass: a Podman volume is local to the host",
                        entry.name
                    ),
                )?;
            }
            volumes.sources.insert(
                entry.name.clone(),
                (Source::Unit(entry.volume.clone()), false),
            );
            volumes.units.push((entry.volume, unit));
        }
        let declared: Option<Value> = component.field("volumes")?;
        for (volume, entry) in sorted_entries(declared.as_ref()) {
            let (kind, value) = source(volume, entry)?;
            let shared = containers
                .values()
                .filter(|spec| {
                    spec.get("volumeMounts")
                        .and_then(|m| m.get(volume))
                        .is_some()
                })
                .count()
                > 1;
            let read_only = value
                .get("readOnly")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let source = match kind.as_str() {
                "persistentClaim" => match value {
                    Value::String(claim) => Source::Named(claim.clone()),
                    Value::Object(reference) => {
                        Source::Unit(shared_claim(volume, reference, context)?)
                    }
                    _ => {
                        return Err(TransformError::invalid(format!(
                            "volumes.{volume}.persistentClaim must be a claim name or {{component, storage}}"
                        )));
                    }
                },
                "emptyDir" => {
                    let memory = value.get("medium").and_then(Value::as_str) == Some("Memory");
                    let size = value
                        .get("sizeLimit")
                        .and_then(opm_compose_common::quantity::parse);
                    if memory {
                        if shared {
                            unhonoured(
                                context,
                                &format!(
                                    "volumes.{volume}: a memory emptyDir shared by several containers \
                                 is a tmpfs of each, not one"
                                ),
                            )?;
                        }
                        Source::Tmpfs(size.map(|s| s.ceil() as u64))
                    } else {
                        if size.is_some() {
                            unhonoured(
                                context,
                                &format!(
                                    "volumes.{volume}.emptyDir.sizeLimit: a Podman volume has no size limit"
                                ),
                            )?;
                        }
                        if shared {
                            let unit_name = format!("{name}-{volume}");
                            let mut unit = Unit::default();
                            unit.set("Volume", "VolumeName", unit_name.clone());
                            for label in &labels {
                                unit.add("Volume", "Label", label.clone());
                            }
                            caveat(&format!(
                                "volumes.{volume}: an emptyDir shared by the pod's containers is the \
                                 volume {unit_name}, kept when they stop (podman volume rm to empty it)"
                            ));
                            volumes.units.push((unit_name.clone(), unit));
                            Source::Unit(unit_name)
                        } else {
                            Source::Anonymous
                        }
                    }
                }
                "configMap" | "secret" => {
                    let dir = if kind == "configMap" {
                        CONFIG_DIR
                    } else {
                        SECRET_DIR
                    };
                    Source::Files(vec![files(dir, value)])
                }
                "projected" => {
                    let mut all = Vec::new();
                    for item in value
                        .get("sources")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(config) = item.get("configMap") {
                            all.push(files(CONFIG_DIR, config));
                        } else if let Some(secret) = item.get("secret") {
                            all.push(files(SECRET_DIR, secret));
                        } else {
                            unhonoured(
                                context,
                                &format!(
                                    "volumes.{volume}.projected: downwardAPI and serviceAccountToken \
                                 sources are Kubernetes'; they are left out"
                                ),
                            )?;
                        }
                    }
                    if all.len() > 1 && all.iter().any(|(_, items)| items.is_none()) {
                        unhonoured(
                            context,
                            &format!(
                                "volumes.{volume}.projected: several sources without items cannot be \
                             one directory; each is mounted over the last (list the items)"
                            ),
                        )?;
                    }
                    Source::Files(all)
                }
                "hostPath" => {
                    let path = value
                        .get("path")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if !host::allowed(component) {
                        return Err(TransformError::invalid(format!(
                            "volumes.{volume}.hostPath {path:?} would give the container a path of the \
                             host; a Quadlet unit gets it on the machine that runs it, so host access \
                             is refused unless the component asks for it: label the component {}: \
                             \"true\" (in its metadata.labels) if it needs it",
                            host::HOST_ACCESS_LABEL
                        )));
                    }
                    if path.contains(char::is_whitespace) {
                        return Err(TransformError::invalid(format!(
                            "volumes.{volume}.hostPath {path:?} has a blank, which Podman's Quadlet \
                             writes unquoted into the service's RequiresMountsFor=, where systemd \
                             splits the path in two and waits for the wrong mount: mount a path \
                             without blanks (a symbolic link to it)"
                        )));
                    }
                    Source::Bind(path.to_owned())
                }
                "nfs" => {
                    let unit_name = format!("{name}-{volume}");
                    let server = value
                        .get("server")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let path = value
                        .get("path")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let mut unit = Unit::default();
                    unit.set("Volume", "VolumeName", unit_name.clone());
                    unit.set("Volume", "Type", "nfs");
                    unit.set("Volume", "Device", escape(&format!("{server}:{path}")));
                    let mut options = format!("addr={server}");
                    if read_only {
                        options.push_str(",ro");
                    }
                    unit.set("Volume", "Options", escape(&options));
                    for label in &labels {
                        unit.add("Volume", "Label", label.clone());
                    }
                    volumes.units.push((unit_name.clone(), unit));
                    Source::Unit(unit_name)
                }
                "ephemeral" => {
                    if value.get("storageClass").is_some() {
                        unhonoured(
                            context,
                            &format!(
                                "volumes.{volume}.ephemeral.storageClass: a Podman volume is local to the host"
                            ),
                        )?;
                    }
                    Source::Anonymous
                }
                other => {
                    unhonoured(
                        context,
                        &format!(
                            "volumes.{volume}: a {other} volume cannot be mounted by Podman; it is left out"
                        ),
                    )?;
                    Source::Lost
                }
            };
            volumes.sources.insert(volume.clone(), (source, read_only));
        }
        Ok(volumes)
    }

    /// Mounts the volumes of the container `spec` (`path` in messages) in its unit.
    pub fn mount(
        &self,
        pod: &Pod,
        spec: &Value,
        path: &str,
        unit: &mut Unit,
    ) -> Result<(), TransformError> {
        for (volume, mounts) in sorted_entries(spec.get("volumeMounts")) {
            let Some((source, source_ro)) = self.sources.get(volume) else {
                return Err(TransformError::invalid(format!(
                    "{path}.volumeMounts.{volume}: no volume {volume:?} in Volumes or PersistentStorage"
                )));
            };
            for mount in mounts_of(mounts) {
                let target = mount
                    .get("mountPath")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let read_only = *source_ro
                    || mount
                        .get("readOnly")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                let sub = mount
                    .get("subPath")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty());
                let ro = if read_only { ":ro" } else { "" };
                match source {
                    Source::Unit(name) | Source::Named(name) => {
                        let src = match source {
                            Source::Unit(_) => format!("{name}.volume"),
                            _ => name.clone(),
                        };
                        match sub {
                            Some(sub) => unit.add(
                                "Container",
                                "Mount",
                                quote(&format!(
                                    "type=volume,source={src},destination={target},subpath={sub}{}",
                                    if read_only { ",ro=true" } else { "" }
                                )),
                            ),
                            None => unit.add(
                                "Container",
                                "Volume",
                                escape(&format!("{src}:{target}{ro}")),
                            ),
                        }
                    }
                    Source::Anonymous => {
                        if sub.is_some() {
                            unhonoured(
                                pod.context,
                                &format!(
                                    "{path}.volumeMounts.{volume}.subPath: an anonymous volume is mounted whole"
                                ),
                            )?;
                        }
                        unit.add("Container", "Volume", escape(&format!("{target}{ro}")));
                    }
                    Source::Tmpfs(size) => {
                        let mut options = if read_only {
                            "ro".to_owned()
                        } else {
                            "rw".to_owned()
                        };
                        if let Some(size) = size {
                            options.push_str(&format!(",size={size}"));
                        }
                        unit.add("Container", "Tmpfs", escape(&format!("{target}:{options}")));
                    }
                    Source::Bind(host) => {
                        let host = match sub {
                            Some(sub) => format!("{}/{sub}", host.trim_end_matches('/')),
                            None => host.clone(),
                        };
                        unit.add(
                            "Container",
                            "Volume",
                            escape(&format!("{host}:{target}{ro}")),
                        );
                    }
                    Source::Files(objects) => {
                        for (dir, items) in objects {
                            match (items, sub) {
                                (_, Some(sub)) => unit.add(
                                    "Container",
                                    "Volume",
                                    escape(&format!("./{dir}/{sub}:{target}:ro,z")),
                                ),
                                (Some(items), None) => {
                                    for (key, file) in items {
                                        unit.add(
                                            "Container",
                                            "Volume",
                                            escape(&format!(
                                                "./{dir}/{key}:{}/{file}:ro,z",
                                                target.trim_end_matches('/')
                                            )),
                                        );
                                    }
                                }
                                (None, None) => unit.add(
                                    "Container",
                                    "Volume",
                                    escape(&format!("./{dir}:{target}:ro,z")),
                                ),
                            }
                        }
                    }
                    Source::Lost => {}
                }
            }
        }
        Ok(())
    }

    /// The `.volume` resources of the pod.
    pub fn resources(&self, context: &Context) -> Vec<Value> {
        self.units
            .iter()
            .map(|(name, unit)| resource(VOLUME, name, context, unit.clone().into_value()))
            .collect()
    }
}

/// The directory of a ConfigMap or Secret reference (`name`, or `{name, items}`) under `dir`,
/// with its items.
fn files(dir: &str, reference: &Value) -> Files {
    let name = match reference {
        Value::String(name) => name.as_str(),
        other => other
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    };
    let items = reference
        .get("items")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|item| {
                    let text = |field: &str| {
                        item.get(field)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned()
                    };
                    (text("key"), text("path"))
                })
                .collect()
        });
    (format!("{dir}/{name}"), items)
}
