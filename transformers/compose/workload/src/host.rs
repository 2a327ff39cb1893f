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
//! message names the field and the label. The label, the default capabilities and a
//! container's SELinux types are the same for every platform: `opm_module_common::host`'s.
//!
//! ```
//! use compose_workload::host::{HOST_ACCESS_LABEL, require};
//! assert_eq!(HOST_ACCESS_LABEL, "security.opm.dev/host-access");
//! assert!(require(true, "securityContext.privileged", "every device of the host").is_ok());
//! let error = require(false, "securityContext.privileged", "every device of the host");
//! assert!(error.unwrap_err().to_string().contains("security.opm.dev/host-access: \"true\""));
//! ```

use opm_guest::TransformError;
pub use opm_module_common::host::{
    CONTAINER_SELINUX_TYPES, DEFAULT_CAPABILITIES, HOST_ACCESS_LABEL, allowed, beyond_default,
};

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
