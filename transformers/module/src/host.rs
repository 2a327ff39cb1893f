//! Host access: what lets a container reach past itself into the machine that runs it.
//!
//! On Kubernetes a cluster's admission (Pod Security) decides whether a pod may mount a host
//! path, run privileged or join the node's network. A platform with nothing in between — Docker
//! Compose, Podman's Quadlet — gives the module whatever it asks for, on the machine of whoever
//! runs it, so its provider refuses each of these unless the component asks for host access
//! with the label [`HOST_ACCESS_LABEL`] `"true"` in its `metadata.labels` ([`allowed`]). What
//! counts as host access is the same on both: a capability beyond [`DEFAULT_CAPABILITIES`], an
//! SELinux type not among [`CONTAINER_SELINUX_TYPES`], and the fields each provider names; how
//! it refuses, and why on its platform, is the provider's own.
//!
//! ```
//! use opm_module_common::host::{HOST_ACCESS_LABEL, beyond_default};
//! assert_eq!(HOST_ACCESS_LABEL, "security.opm.dev/host-access");
//! assert_eq!(beyond_default(["CHOWN", "SYS_ADMIN"]), ["SYS_ADMIN"]);
//! ```

use opm_guest::Component;

/// The component label by which a component asks for host access, with the value `"true"`.
pub const HOST_ACCESS_LABEL: &str = "security.opm.dev/host-access";

/// The capabilities a container may add without host access: Docker and Podman give every
/// container these unless they are dropped (the baseline profile's list, which leaves out
/// `NET_RAW`), so adding them back after `drop: [ALL]` gives nothing a default container lacks.
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn host_access_is_asked_for_by_the_label_true() {
        let asked = |labels: opm_guest::Value| {
            let component = Component::from_value(opm_guest::json!({
                "metadata": {"name": "api", "labels": labels}
            }))
            .unwrap();
            allowed(&component)
        };
        assert!(asked(opm_guest::json!({HOST_ACCESS_LABEL: "true"})));
        assert!(!asked(opm_guest::json!({HOST_ACCESS_LABEL: "yes"})));
        assert!(!asked(opm_guest::json!({})));
    }
}
