//! Host access: what lets a container reach past itself into the Docker host.
//!
//! On Kubernetes a cluster's admission (Pod Security) decides whether a pod may mount a host
//! path, run privileged or join the node's network. Compose has nothing in between: `docker
//! compose up` gives the module whatever it asks for, on the machine of whoever runs it. So the
//! workload transformer refuses each of these unless the component asks for host access with
//! the label [`HOST_ACCESS_LABEL`] `"true"` in its `metadata.labels`, where `opm mod vet`
//! shows it among the component's labels:
//!
//! | the module's field | compose | what it gives |
//! |---|---|---|
//! | Volumes `hostPath` | a bind mount | a host path; `/` the host's whole file system, the Docker socket (or `/run`) the Docker engine, and with it the host |
//! | `securityContext.privileged` | `privileged: true` | every device and capability of the host |
//! | `securityContext.capabilities.add` | `cap_add` | a capability beyond [`DEFAULT_CAPABILITIES`] (`SYS_ADMIN`, `NET_ADMIN`, `ALL`, …) |
//! | PodNetwork `hostNetwork` | `network_mode: host` | the host's network stack and every port it listens on |
//! | `seccompProfile`, `appArmorProfile` `Unconfined` | `security_opt: [seccomp=unconfined]`, `[apparmor=unconfined]` | the container without the kernel's confinement |
//! | `procMount: Unmasked` | `security_opt: [systempaths=unconfined]` | the host's kernel files under `/proc` and `/sys` |
//! | `seLinuxOptions` `user`, `role`, or a `type` other than a container's | `security_opt: [label=…]` | another SELinux domain, such as `spc_t`, which is unconfined |
//!
//! These are what the Pod Security Standards' baseline profile forbids, as far as compose maps
//! them (it has no host PID or IPC namespace to map). A refusal is an invalid component whose
//! message names the field and the label.
//!
//! ```
//! use compose_workload::host::{HOST_ACCESS_LABEL, require};
//! assert_eq!(HOST_ACCESS_LABEL, "security.opm.dev/host-access");
//! assert!(require(true, "securityContext.privileged", "every device of the host").is_ok());
//! let error = require(false, "securityContext.privileged", "every device of the host");
//! assert!(error.unwrap_err().to_string().contains("security.opm.dev/host-access: \"true\""));
//! ```

use opm_guest::{Component, TransformError};

/// The component label by which a component asks for host access, with the value `"true"`.
pub const HOST_ACCESS_LABEL: &str = "security.opm.dev/host-access";

/// The capabilities a container may add without host access: Docker gives every container
/// these unless they are dropped (the baseline profile's list, which leaves out `NET_RAW`), so
/// adding them back after `drop: [ALL]` gives nothing a default container lacks.
pub const DEFAULT_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// The SELinux types a container may run as without host access.
pub const CONTAINER_SELINUX_TYPES: &[&str] = &[
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// Whether `component` asks for host access: its label [`HOST_ACCESS_LABEL`] is `"true"`.
pub fn allowed(component: &Component) -> bool {
    component.label(HOST_ACCESS_LABEL) == Some("true")
}

/// Nothing when host access is `allowed`; otherwise the invalid-component error for `field`
/// (the module's, as `volumes.root.hostPath`), which would give the container `grants`.
pub fn require(allowed: bool, field: &str, grants: &str) -> Result<(), TransformError> {
    if allowed {
        return Ok(());
    }
    Err(TransformError::invalid(format!(
        "{field} would give the container {grants}; compose grants it on the machine that runs \
         `docker compose up`, with no Pod Security admission in between, so host access is \
         refused unless the component asks for it: label the component {HOST_ACCESS_LABEL}: \
         \"true\" (in its metadata.labels) if it needs it"
    )))
}

/// What a bind mount of the host path `path` gives a container.
pub fn bind_grants(path: &str) -> String {
    match normalized(path).as_str() {
        "/" => "the host's whole file system".to_owned(),
        "/var/run/docker.sock" | "/run/docker.sock" => {
            "the Docker engine's socket, and with it every container and the host itself".to_owned()
        }
        "/run" | "/var/run" => format!(
            "the host's {path:?}, which holds the Docker engine's socket, and with it every \
             container and the host itself"
        ),
        _ => format!("the host's {path:?}"),
    }
}

/// The capabilities of `added` beyond [`DEFAULT_CAPABILITIES`], as written (a `CAP_` prefix
/// and the case do not matter to Docker, nor here).
pub fn beyond_default<'a>(added: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    added
        .into_iter()
        .filter(|capability| {
            let upper = capability.to_ascii_uppercase();
            let name = upper.strip_prefix("CAP_").unwrap_or(&upper);
            !DEFAULT_CAPABILITIES.contains(&name)
        })
        .collect()
}

/// `path` with empty and `.` segments left out and `..` taking the one before it, as the
/// kernel reads an absolute path without links: `//var/./run/../run/` is `/var/run`.
fn normalized(path: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            other => segments.push(other),
        }
    }
    format!("/{}", segments.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_and_the_docker_socket_are_named_however_the_path_is_written() {
        for path in ["/", "//", "/./", "/var/..", "/var/log/../../"] {
            assert_eq!(bind_grants(path), "the host's whole file system", "{path}");
        }
        for path in [
            "/var/run/docker.sock",
            "/run/docker.sock",
            "//run/./docker.sock",
            "/var/lib/../run/docker.sock",
        ] {
            assert!(bind_grants(path).contains("socket"), "{path}");
        }
        assert!(bind_grants("/run/").contains("socket"));
        assert_eq!(bind_grants("/var/log"), "the host's \"/var/log\"");
    }

    #[test]
    fn only_capabilities_beyond_a_containers_default_set_need_host_access() {
        assert_eq!(
            beyond_default([
                "NET_BIND_SERVICE",
                "cap_chown",
                "SYS_ADMIN",
                "ALL",
                "NET_RAW"
            ]),
            ["SYS_ADMIN", "ALL", "NET_RAW"]
        );
        assert!(beyond_default([]).is_empty());
    }

    #[test]
    fn the_refusal_names_the_field_and_the_label() {
        let error = require(false, "podNetwork.hostNetwork", "the host's network")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("podNetwork.hostNetwork would give the container the host's network;"),
            "{error}"
        );
        assert!(
            error.contains("label the component security.opm.dev/host-access: \"true\""),
            "{error}"
        );
        assert!(require(true, "podNetwork.hostNetwork", "the host's network").is_ok());
    }
}
