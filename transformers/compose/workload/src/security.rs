//! The pod's SecurityContext trait and a container's `securityContext` (which wins, field by
//! field, as in Kubernetes) as compose's `user`, `group_add`, `read_only`, `privileged`,
//! `cap_add`, `cap_drop`, `security_opt` and `sysctls`.
//!
//! | Kubernetes | compose |
//! |---|---|
//! | `runAsUser`, `runAsGroup` | `user: "uid:gid"` |
//! | `fsGroup`, `supplementalGroups` | `group_add` (volumes are not chowned to `fsGroup`: a warning) |
//! | `readOnlyRootFilesystem` | `read_only` |
//! | `privileged` | `privileged` |
//! | `capabilities.add`, `.drop` | `cap_add`, `cap_drop` |
//! | `allowPrivilegeEscalation: false` | `security_opt: [no-new-privileges:true]` |
//! | `seccompProfile` `Unconfined` | `security_opt: [seccomp=unconfined]` (`RuntimeDefault` is Docker's default) |
//! | `appArmorProfile` `Unconfined`, `Localhost` | `security_opt: [apparmor=unconfined]`, `[apparmor=<profile>]` |
//! | `seLinuxOptions` | `security_opt: [label=type:…, label=level:…, …]` |
//! | `procMount: Unmasked` | `security_opt: [systempaths=unconfined]` |
//! | `sysctls` | `sysctls` |
//!
//! `privileged`, a capability beyond a container's default set, an `Unconfined` seccomp or
//! AppArmor profile, `procMount: Unmasked` and an SELinux user, role or type that is not a
//! container's are host access: refused unless the component asks for it ([`crate::host`]).

use opm_guest::{Map, TransformError, Value, json};
use opm_module_common::container::SecurityContext;
use opm_module_common::notes::unhonoured;

use crate::host;
use crate::pod::Pod;

/// Writes the security settings of the container `spec` of `pod` into `out`; `path` names
/// the container in messages.
pub fn apply(
    pod: &Pod,
    spec: &Value,
    out: &mut Map<String, Value>,
    path: &str,
) -> Result<(), TransformError> {
    let security = SecurityContext::new(pod.security.as_ref(), spec, path);
    let (pod_level, container) = (&security.pod, &security.container);
    let context = pod.context;
    let host_access = pod.host_access;

    let user = security.field("runAsUser").and_then(Value::as_u64);
    let group = security.field("runAsGroup").and_then(Value::as_u64);
    match (user, group) {
        (Some(user), Some(group)) => {
            out.insert("user".into(), json!(format!("{user}:{group}")));
        }
        (Some(user), None) => {
            out.insert("user".into(), json!(user.to_string()));
        }
        (None, Some(group)) => unhonoured(
            context,
            &format!(
                "{path}: runAsGroup {group} without runAsUser: compose's user names a user first; \
                 set runAsUser too"
            ),
        )?,
        (None, None) => {}
    }
    if security.field("runAsNonRoot").and_then(Value::as_bool) == Some(true) {
        match user {
            Some(0) => {
                return Err(TransformError::invalid(format!(
                    "{path}: runAsNonRoot with runAsUser 0 can never start"
                )));
            }
            Some(_) => {}
            None => unhonoured(
                context,
                &format!(
                    "{path}: runAsNonRoot: Docker does not check that the image's user is not \
                     root; set runAsUser to be sure"
                ),
            )?,
        }
    }

    let mut groups: Vec<Value> = Vec::new();
    if let Some(fs_group) = pod_level.get("fsGroup").and_then(Value::as_u64) {
        groups.push(json!(fs_group.to_string()));
        // Said once, for the pod.
        if path == "container" {
            unhonoured(
                context,
                &format!(
                    "securityContext.fsGroup {fs_group}: the containers get the group, but Docker \
                 does not give the volumes to it; make their files readable by the container's \
                 user"
                ),
            )?;
        }
    }
    for group in pod_level
        .get("supplementalGroups")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_u64)
    {
        let group = json!(group.to_string());
        if !groups.contains(&group) {
            groups.push(group);
        }
    }
    if !groups.is_empty() {
        out.insert("group_add".into(), Value::Array(groups));
    }
    if container
        .get("readOnlyRootFilesystem")
        .and_then(Value::as_bool)
        == Some(true)
    {
        out.insert("read_only".into(), json!(true));
    }
    if container.get("privileged").and_then(Value::as_bool) == Some(true) {
        host::require(
            host_access,
            &format!("{path}.securityContext.privileged"),
            "every device and capability of the host, as root on it",
        )?;
        out.insert("privileged".into(), json!(true));
    }
    for (from, to) in [("add", "cap_add"), ("drop", "cap_drop")] {
        if let Some(capabilities) = container
            .pointer(&format!("/capabilities/{from}"))
            .and_then(Value::as_array)
            .filter(|list| !list.is_empty())
        {
            let beyond = host::beyond_default(capabilities.iter().filter_map(Value::as_str));
            if from == "add" && !beyond.is_empty() {
                host::require(
                    host_access,
                    &format!("{path}.securityContext.capabilities.add"),
                    &format!(
                        "the capabilities {}, beyond those every container has",
                        beyond.join(", ")
                    ),
                )?;
            }
            out.insert(to.into(), Value::Array(capabilities.clone()));
        }
    }

    let mut options: Vec<String> = Vec::new();
    if container
        .get("allowPrivilegeEscalation")
        .and_then(Value::as_bool)
        == Some(false)
    {
        options.push("no-new-privileges:true".into());
    }
    if let Some(profile) = security.field("seccompProfile") {
        match profile.get("type").and_then(Value::as_str) {
            Some("Unconfined") => {
                host::require(
                    host_access,
                    &format!("{} Unconfined", security.at("seccompProfile")),
                    "every system call of the host's kernel, without Docker's seccomp filter",
                )?;
                options.push("seccomp=unconfined".into());
            }
            Some("Localhost") => unhonoured(
                context,
                &format!(
                    "{path}: seccompProfile Localhost {}: Docker reads a seccomp profile from a \
                     file of the machine that runs compose; add security_opt seccomp=<file> with \
                     a patch",
                    profile.get("localhostProfile").unwrap_or(&Value::Null)
                ),
            )?,
            _ => {}
        }
    }
    if let Some(profile) = security.field("appArmorProfile") {
        match profile.get("type").and_then(Value::as_str) {
            Some("Unconfined") => {
                host::require(
                    host_access,
                    &format!("{} Unconfined", security.at("appArmorProfile")),
                    "the host without Docker's AppArmor profile",
                )?;
                options.push("apparmor=unconfined".into());
            }
            Some("Localhost") => {
                if let Some(name) = profile.get("localhostProfile").and_then(Value::as_str) {
                    options.push(format!("apparmor={name}"));
                }
            }
            _ => {}
        }
    }
    if let Some(selinux) = security.field("seLinuxOptions").and_then(Value::as_object) {
        let set = |key: &str| {
            selinux
                .get(key)
                .and_then(Value::as_str)
                .filter(|value| !value.is_empty())
        };
        for key in ["user", "role"] {
            if let Some(value) = set(key) {
                host::require(
                    host_access,
                    &format!("{}.{key} {value:?}", security.at("seLinuxOptions")),
                    "an SELinux user or role of the module's choosing",
                )?;
            }
        }
        if let Some(kind) = set("type").filter(|kind| !host::CONTAINER_SELINUX_TYPES.contains(kind))
        {
            host::require(
                host_access,
                &format!("{}.type {kind:?}", security.at("seLinuxOptions")),
                "an SELinux domain that is not a container's (spc_t, for one, is unconfined)",
            )?;
        }
        for key in ["user", "role", "type", "level"] {
            if let Some(value) = selinux.get(key).and_then(Value::as_str) {
                options.push(format!("label={key}:{value}"));
            }
        }
    }
    if container.get("procMount").and_then(Value::as_str) == Some("Unmasked") {
        host::require(
            host_access,
            &format!("{path}.securityContext.procMount Unmasked"),
            "the host kernel's files under /proc and /sys that Docker masks",
        )?;
        options.push("systempaths=unconfined".into());
    }
    if !options.is_empty() {
        out.insert("security_opt".into(), json!(options));
    }
    if path == "container" && security.field("windowsOptions").is_some() {
        unhonoured(
            context,
            &format!("{path}: windowsOptions: compose runs Linux containers here"),
        )?;
    }
    if let Some(sysctls) = pod_level.get("sysctls").and_then(Value::as_array) {
        let mut map = Map::new();
        for sysctl in sysctls {
            if let (Some(name), Some(value)) = (
                sysctl.get("name").and_then(Value::as_str),
                sysctl.get("value").and_then(Value::as_str),
            ) {
                map.insert(name.to_owned(), json!(value));
            }
        }
        if !map.is_empty() {
            out.insert("sysctls".into(), Value::Object(map));
        }
    }
    Ok(())
}
