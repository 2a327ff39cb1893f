//! The Container definition and what the module adds to the main container: its image
//! reference, the HealthCheck trait's probes, the PersistentStorage entries' mounts, and the
//! `restartPolicy` that only an init container may have; a container's [`SecurityContext`], its
//! own fields over the pod's.
//!
//! ```
//! use opm_guest::json;
//! use opm_module_common::container::{image_reference, mount_storage};
//!
//! let image = json!({"repository": "nginx", "tag": "1.27"});
//! assert_eq!(image_reference(&image, "container").unwrap(), "nginx:1.27");
//! let mut main = json!({"image": "nginx"});
//! mount_storage(&mut main, [("data", Some("/data")), ("tmp", None)]).unwrap();
//! assert_eq!(main["volumeMounts"], json!({"data": {"mountPath": "/data"}}));
//! ```

use opm_guest::{Component, Map, TransformError, Value, json};

/// The image reference of a container: `repo:tag[@digest]` as written, or assembled from
/// `{repository, tag, digest}`; `path` names the container in errors (`container`,
/// `sidecarContainers.proxy`).
pub fn image_reference(image: &Value, path: &str) -> Result<String, TransformError> {
    match image {
        Value::String(reference) if !reference.is_empty() => Ok(reference.clone()),
        Value::Object(parts) => {
            let repository = parts
                .get("repository")
                .and_then(Value::as_str)
                .filter(|repository| !repository.is_empty())
                .ok_or_else(|| {
                    TransformError::invalid(format!(
                        "{path}.image.repository must be a non-empty string"
                    ))
                })?;
            let mut reference = repository.to_owned();
            if let Some(tag) = parts.get("tag").and_then(Value::as_str) {
                reference.push(':');
                reference.push_str(tag);
            }
            if let Some(digest) = parts.get("digest").and_then(Value::as_str) {
                reference.push('@');
                reference.push_str(digest);
            }
            Ok(reference)
        }
        _ => Err(TransformError::invalid(format!(
            "{path}.image must be a string `repo:tag[@digest]` or {{repository, tag, digest}}"
        ))),
    }
}

/// The main container of `component`: its Container resource, with the HealthCheck trait's
/// probes ([`apply_health_check`]) and a mount of each PersistentStorage entry that has a
/// `mountPath`, given as its name and that path ([`mount_storage`]).
pub fn main_container<'a>(
    component: &Component,
    storage: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) -> Result<Value, TransformError> {
    let mut main: Value = component.require("container")?;
    apply_health_check(component, &mut main)?;
    mount_storage(&mut main, storage)?;
    Ok(main)
}

/// Replaces the main container's probes with the HealthCheck trait's.
pub fn apply_health_check(component: &Component, main: &mut Value) -> Result<(), TransformError> {
    let Some(check) = component.field::<Value>("healthCheck")? else {
        return Ok(());
    };
    let main = main
        .as_object_mut()
        .ok_or_else(|| TransformError::invalid("container must be an object"))?;
    for (from, to) in [
        ("liveness", "livenessProbe"),
        ("readiness", "readinessProbe"),
        ("startup", "startupProbe"),
    ] {
        if let Some(probe) = check.get(from) {
            main.insert(to.into(), probe.clone());
        }
    }
    Ok(())
}

/// Adds a mount of each storage entry with a `mountPath`, given as its name and that path, to
/// the main container, unless the container already mounts that volume itself.
pub fn mount_storage<'a>(
    main: &mut Value,
    entries: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) -> Result<(), TransformError> {
    let main = main
        .as_object_mut()
        .ok_or_else(|| TransformError::invalid("container must be an object"))?;
    let mounts = main
        .entry("volumeMounts")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| TransformError::invalid("container.volumeMounts must be a map"))?;
    for (name, path) in entries {
        let Some(path) = path else { continue };
        mounts
            .entry(name.to_owned())
            .or_insert_with(|| json!({"mountPath": path}));
    }
    Ok(())
}

/// Refuses a `restartPolicy` on the container `name` (`spec`), which is the main container or a
/// sidecar: only an init container may have one.
pub fn refuse_restart_policy(name: &str, spec: &Value) -> Result<(), TransformError> {
    if spec.get("restartPolicy").is_some() {
        return Err(TransformError::invalid(format!(
            "container {name:?} has restartPolicy, which only an init container may have (it \
             makes it a native sidecar); move it to initContainers"
        )));
    }
    Ok(())
}

/// The name of an entry of an InitContainers list, which must have one (the entries of a map
/// are named by their keys).
pub fn init_list_name(spec: &Value) -> Result<&str, TransformError> {
    spec.get("name").and_then(Value::as_str).ok_or_else(|| {
        TransformError::invalid("every entry of an initContainers list needs a name")
    })
}

/// A container's security settings as Kubernetes reads them: each field of its own
/// `securityContext`, else the pod's (the SecurityContext trait).
#[derive(Debug, Clone, PartialEq)]
pub struct SecurityContext<'a> {
    /// The pod's security context (the SecurityContext trait), or null.
    pub pod: Value,
    /// The container's own `securityContext`, or null.
    pub container: Value,
    /// The container in messages (`container`, `sidecarContainers.proxy`).
    path: &'a str,
}

impl<'a> SecurityContext<'a> {
    /// The security context of the container `spec` (`path` in messages) in a pod whose
    /// SecurityContext trait is `pod`.
    pub fn new(pod: Option<&Value>, spec: &Value, path: &'a str) -> Self {
        Self {
            pod: pod.cloned().unwrap_or(Value::Null),
            container: spec.get("securityContext").cloned().unwrap_or(Value::Null),
            path,
        }
    }

    /// The container's field `name`, else the pod's.
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.container.get(name).or_else(|| self.pod.get(name))
    }

    /// Where the field `name` that [`field`](Self::field) reads is written, for messages:
    /// `<path>.securityContext.<name>` when the container sets it, else the pod's
    /// `securityContext.<name>`.
    pub fn at(&self, name: &str) -> String {
        if self.container.get(name).is_some() {
            format!("{}.securityContext.{name}", self.path)
        } else {
            format!("securityContext.{name}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_containers_security_field_wins_over_the_pods() {
        let pod = json!({"runAsUser": 1000, "runAsGroup": 3000});
        let spec = json!({"securityContext": {"runAsUser": 0}});
        let security = SecurityContext::new(Some(&pod), &spec, "sidecarContainers.proxy");
        assert_eq!(security.field("runAsUser"), Some(&json!(0)));
        assert_eq!(security.field("runAsGroup"), Some(&json!(3000)));
        assert_eq!(security.field("privileged"), None);
        assert_eq!(
            security.at("runAsUser"),
            "sidecarContainers.proxy.securityContext.runAsUser"
        );
        assert_eq!(security.at("runAsGroup"), "securityContext.runAsGroup");
        let alone = SecurityContext::new(None, &json!({}), "container");
        assert_eq!((alone.pod, alone.container), (Value::Null, Value::Null));
    }

    #[test]
    fn image_from_parts() {
        let image =
            json!({"repository": "ghcr.io/acme/api", "tag": "1.4.0", "digest": "sha256:ab"});
        assert_eq!(
            image_reference(&image, "container").unwrap(),
            "ghcr.io/acme/api:1.4.0@sha256:ab"
        );
        assert_eq!(
            image_reference(&json!({"repository": "nginx"}), "container").unwrap(),
            "nginx"
        );
        assert!(image_reference(&json!(7), "container").is_err());
        assert!(image_reference(&json!({"repository": ""}), "container").is_err());
    }

    #[test]
    fn image_errors_name_the_container() {
        let error = image_reference(&json!({"repository": ""}), "sidecarContainers.proxy");
        assert_eq!(
            error.unwrap_err().to_string(),
            TransformError::invalid(
                "sidecarContainers.proxy.image.repository must be a non-empty string"
            )
            .to_string()
        );
        let error = image_reference(&json!(""), "container")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("container.image must be a string `repo:tag[@digest]`"),
            "{error}"
        );
    }

    #[test]
    fn the_health_check_replaces_the_main_containers_probes() {
        let component = Component::from_value(json!({"metadata": {"name": "api"}, "spec": {
            "healthCheck": {"liveness": {"tcpSocket": {"port": 80}},
                            "startup": {"exec": {"command": ["true"]}}}}}))
        .unwrap();
        let mut main = json!({"image": "x", "livenessProbe": {"tcpSocket": {"port": 1}},
                              "readinessProbe": {"tcpSocket": {"port": 2}}});
        apply_health_check(&component, &mut main).unwrap();
        assert_eq!(
            main,
            json!({"image": "x", "livenessProbe": {"tcpSocket": {"port": 80}},
                   "readinessProbe": {"tcpSocket": {"port": 2}},
                   "startupProbe": {"exec": {"command": ["true"]}}})
        );
        let without = Component::from_value(json!({"metadata": {"name": "api"}})).unwrap();
        let mut text = json!("not a container");
        assert!(apply_health_check(&without, &mut text).is_ok());
        assert!(apply_health_check(&component, &mut text).is_err());
    }

    #[test]
    fn the_main_container_gets_the_health_check_and_the_storage_mounts() {
        let component = Component::from_value(json!({"metadata": {"name": "api"}, "spec": {
            "container": {"image": "x"},
            "healthCheck": {"readiness": {"tcpSocket": {"port": 80}}}}}))
        .unwrap();
        assert_eq!(
            main_container(&component, [("data", Some("/data"))]).unwrap(),
            json!({"image": "x", "readinessProbe": {"tcpSocket": {"port": 80}},
                   "volumeMounts": {"data": {"mountPath": "/data"}}})
        );
        let without = Component::from_value(json!({"metadata": {"name": "api"}})).unwrap();
        assert!(main_container(&without, []).is_err());
    }

    #[test]
    fn storage_is_mounted_unless_the_container_mounts_it_itself() {
        let mut main = json!({"image": "x", "volumeMounts": {"data": {"mountPath": "/own"}}});
        let entries = [
            ("data", Some("/data")),
            ("tmp", None),
            ("wal", Some("/wal")),
        ];
        mount_storage(&mut main, entries).unwrap();
        assert_eq!(
            main["volumeMounts"],
            json!({"data": {"mountPath": "/own"}, "wal": {"mountPath": "/wal"}})
        );
        let mut list = json!({"image": "x", "volumeMounts": []});
        let error = mount_storage(&mut list, []).unwrap_err().to_string();
        assert!(
            error.contains("container.volumeMounts must be a map"),
            "{error}"
        );
    }

    #[test]
    fn an_init_container_of_a_list_needs_a_name() {
        assert_eq!(
            init_list_name(&json!({"name": "migrate"})).unwrap(),
            "migrate"
        );
        let error = init_list_name(&json!({"image": "x"}))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("every entry of an initContainers list needs a name"),
            "{error}"
        );
    }

    #[test]
    fn only_an_init_container_may_have_a_restart_policy() {
        assert!(refuse_restart_policy("api", &json!({"image": "x"})).is_ok());
        let error = refuse_restart_policy("log", &json!({"restartPolicy": "Always"}))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("container \"log\" has restartPolicy"),
            "{error}"
        );
    }
}
