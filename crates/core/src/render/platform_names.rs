//! Object names within what the platform accepts: every name a render
//! produces, instance prefix and all, is checked against the platform's rules before anything
//! is written, and a name over them fails its call naming the object and the rule — never cut
//! short, which is how two of Helm's releases end up with one object.
//!
//! Kubernetes: a Service's name is a DNS-1035 label (at most 63 characters, starting with a
//! letter), a Namespace's a DNS-1123 label; a StatefulSet's and a CronJob's name at most 52 (the
//! controller adds `-` and up to ten characters of hash or time to make a pod's or a Job's name
//! and a label value of at most 63); other workloads, claims, ConfigMaps, Secrets and the like
//! DNS-1123 subdomains (at most 253). Every label value of an object, its pod template and its
//! selector is at most 63 characters of `[A-Za-z0-9._-]`, starting and ending alphanumeric.
//! Compose: service, volume, network, config and secret names are `[a-zA-Z0-9][a-zA-Z0-9_.-]*`.

use serde_json::Value;

/// The longest name of the kinds whose controller adds a suffix of up to eleven characters.
const SUFFIXED_NAME: usize = 52;

/// The longest DNS label: a Service's or a Namespace's name, a label value.
const LABEL: usize = 63;

/// The longest DNS subdomain.
const SUBDOMAIN: usize = 253;

/// Why the resource `value` has a name `platform` (`kubernetes`, `compose`) refuses, if it has.
pub fn check(value: &Value, platform: Option<&str>) -> Result<(), String> {
    let kind = value["kind"].as_str().unwrap_or_default();
    let name = value["metadata"]["name"].as_str().unwrap_or_default();
    // What a transformer writes is quoted by its first 80 characters, however long.
    let shown = |text: &str| crate::printable::truncate(text, 80);
    match platform {
        Some("kubernetes") => kubernetes(value, &shown(kind), name, &shown),
        Some("compose") => compose(&shown(kind), name, &shown),
        _ => Ok(()),
    }
}

fn kubernetes(
    value: &Value,
    kind: &str,
    name: &str,
    shown: &dyn Fn(&str) -> String,
) -> Result<(), String> {
    let core = value["apiVersion"]
        .as_str()
        .is_some_and(|v| v == "v1" || v.starts_with("apps/") || v.starts_with("batch/"));
    let refuse = |rule: &str| {
        Err(format!(
            "{kind} {:?} ({} characters): {rule}; shorten the component's or the \
             instance's name (opm never cuts a name short)",
            shown(name),
            name.chars().count()
        ))
    };
    if core {
        match kind {
            "Service"
                if !is_label(name, LABEL)
                    || !name.starts_with(|c: char| c.is_ascii_lowercase()) =>
            {
                return refuse(
                    "a Service's name is a DNS-1035 label: at most 63 lower-case letters, digits \
                     and '-', starting with a letter",
                );
            }
            "Namespace" if !is_label(name, LABEL) => {
                return refuse(
                    "a Namespace's name is a DNS-1123 label: at most 63 lower-case letters, \
                     digits and '-'",
                );
            }
            "StatefulSet" | "CronJob" if !is_label(name, SUFFIXED_NAME) => {
                return refuse(&format!(
                    "a {kind}'s name is at most {SUFFIXED_NAME} lower-case letters, digits and \
                     '-': its controller adds a suffix of up to eleven characters to name each \
                     {} and label it, within 63",
                    if kind == "CronJob" { "Job" } else { "pod" }
                ));
            }
            "Deployment"
            | "DaemonSet"
            | "Job"
            | "ConfigMap"
            | "Secret"
            | "PersistentVolumeClaim"
            | "ServiceAccount"
                if !is_subdomain(name) =>
            {
                return refuse(
                    "its name is a DNS-1123 subdomain: at most 253 lower-case letters, digits, \
                     '-' and '.'",
                );
            }
            _ => {}
        }
    }
    for (place, labels) in [
        ("metadata.labels", &value["metadata"]["labels"]),
        (
            "spec.template.metadata.labels",
            &value["spec"]["template"]["metadata"]["labels"],
        ),
        (
            "spec.selector.matchLabels",
            &value["spec"]["selector"]["matchLabels"],
        ),
    ] {
        let Some(labels) = labels.as_object() else {
            continue;
        };
        for (key, label) in labels {
            if let Some(text) = label.as_str()
                && !is_label_value(text)
            {
                return Err(format!(
                    "{kind} {:?}: the label {} of {place} is {} characters ({:?}): a label \
                     value is at most 63 letters, digits, '-', '_' and '.', starting and ending \
                     with a letter or digit",
                    shown(name),
                    shown(key),
                    text.chars().count(),
                    shown(text)
                ));
            }
        }
    }
    Ok(())
}

fn compose(kind: &str, name: &str, shown: &dyn Fn(&str) -> String) -> Result<(), String> {
    let valid = name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if valid {
        return Ok(());
    }
    Err(format!(
        "{kind} {:?}: a compose name is letters, digits, '_', '.' and '-', starting with a \
         letter or digit",
        shown(name)
    ))
}

/// A DNS-1123 label of at most `most` characters.
fn is_label(name: &str, most: usize) -> bool {
    !name.is_empty()
        && name.len() <= most
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// A DNS-1123 subdomain as Kubernetes checks one: at most 253 characters, dot-separated parts
/// of lower-case letters, digits and '-' (the parts are not held to 63 each).
fn is_subdomain(name: &str) -> bool {
    name.len() <= SUBDOMAIN && name.split('.').all(|part| is_label(part, SUBDOMAIN))
}

fn is_label_value(text: &str) -> bool {
    let edge = |c: Option<char>| c.is_none_or(|c| c.is_ascii_alphanumeric());
    text.len() <= LABEL
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && edge(text.chars().next())
        && edge(text.chars().last())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(api: &str, kind: &str, name: &str) -> Value {
        json!({"apiVersion": api, "kind": kind, "metadata": {"name": name}})
    }

    #[test]
    fn each_kind_is_held_to_its_own_rule() {
        let k = Some("kubernetes");
        let long = |n: usize| "a".repeat(n);
        assert!(check(&object("v1", "Service", &long(63)), k).is_ok());
        let error = check(&object("v1", "Service", &long(64)), k).unwrap_err();
        assert!(error.contains("DNS-1035 label"), "{error}");
        assert!(check(&object("v1", "Service", "1web"), k).is_err());
        assert!(check(&object("apps/v1", "StatefulSet", &long(52)), k).is_ok());
        let error = check(&object("apps/v1", "StatefulSet", &long(53)), k).unwrap_err();
        assert!(error.contains("at most 52"), "{error}");
        assert!(check(&object("batch/v1", "CronJob", &long(53)), k).is_err());
        assert!(check(&object("apps/v1", "Deployment", &long(200)), k).is_ok());
        assert!(check(&object("v1", "ConfigMap", "a.b-c"), k).is_ok());
        assert!(check(&object("v1", "ConfigMap", "A"), k).is_err());
        // Kinds of other groups keep their own rules, which the API server checks.
        assert!(
            check(
                &object("rbac.authorization.k8s.io/v1", "ClusterRole", "system:x"),
                k
            )
            .is_ok()
        );
        let mut labelled = object("apps/v1", "Deployment", "web");
        labelled["spec"] = json!({"template": {"metadata": {"labels": {"app": long(64)}}}});
        let error = check(&labelled, k).unwrap_err();
        assert!(error.contains("spec.template.metadata.labels"), "{error}");
        assert!(
            check(
                &object("compose.opm.dev/v1", "Service", "web_1.x"),
                Some("compose")
            )
            .is_ok()
        );
        assert!(
            check(
                &object("compose.opm.dev/v1", "Service", "-web"),
                Some("compose")
            )
            .is_err()
        );
        assert!(check(&object("v1", "Service", &long(300)), None).is_ok());
        // A transformer's name of a megabyte is quoted by its first 80 characters.
        let error = check(&object("v1", "Service", &long(1 << 20)), k).unwrap_err();
        assert!(
            error.len() < 600 && error.contains("(1048576 characters)"),
            "{}",
            error.len()
        );
        let mut labelled = object("v1", "ConfigMap", "web");
        labelled["metadata"]["labels"] = json!({long(1 << 20): long(1 << 20)});
        assert!(check(&labelled, k).unwrap_err().len() < 600);
    }
}
