//! A container's environment as compose's `environment`, and what the renderer must resolve.
//!
//! Variables are defined in the order Kubernetes defines them — a list as written, a map in
//! name order except that a variable comes after those its value refers to — and each value is
//! expanded (`$(NAME)`) with the variables defined before it, as the kubelet does, so the
//! service gets the values the pod would have. A value read from a ConfigMap or Secret
//! (`configMapKeyRef`, `secretKeyRef`, `envFrom`), and a value that refers to one, is left to
//! the renderer ([`Extension`](opm_compose_common::extension::Extension)). A `fieldRef` is
//! given what compose can know before the container runs (its name, namespace, labels,
//! annotations, service account); a `resourceFieldRef` the container's own requests and limits.

use std::collections::{BTreeMap, BTreeSet};

use opm_compose_common::expand::{expand, protect, references};
use opm_compose_common::extension::{Deferred, EnvFrom, KeyRef, Source};
use opm_compose_common::quantity;
use opm_guest::{TransformError, Value};
use opm_module_common::notes::{caveat, unhonoured};

use crate::pod::Pod;

/// A container's environment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Environment {
    /// The variables whose values are known, raw (not escaped).
    pub values: BTreeMap<String, String>,
    /// The variables the renderer resolves, in order.
    pub deferred: Vec<Deferred>,
    /// `envFrom`.
    pub env_from: Vec<EnvFrom>,
    deferred_names: BTreeSet<String>,
}

impl Environment {
    /// Whether `text`, expanded, needs a value only the renderer knows.
    pub fn needs_renderer(&self, text: &str) -> bool {
        references(text).into_iter().any(|name| {
            self.deferred_names.contains(name)
                || (!self.env_from.is_empty() && !self.values.contains_key(name))
        })
    }

    /// `text` expanded with every known variable.
    pub fn expand(&self, text: &str) -> String {
        expand(text, |name| self.values.get(name).cloned())
    }
}

/// The environment of the container `spec` of `pod`; `path` names it in messages.
pub fn environment(pod: &Pod, spec: &Value, path: &str) -> Result<Environment, TransformError> {
    let mut env = Environment {
        env_from: env_from(spec.get("envFrom"), path)?,
        ..Environment::default()
    };
    let entries = ordered(spec.get("env"), path)?;
    let every_name: BTreeSet<&str> = entries.iter().map(|(name, _)| name.as_str()).collect();
    let mut defined: BTreeSet<&str> = BTreeSet::new();
    for (name, var) in &entries {
        let at = format!("{path}.env.{name}");
        if let Some(value) = var.get("value") {
            let text = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            if env.needs_renderer(&text) {
                // Kubernetes leaves a reference to a variable defined after this one as it is
                // written: keep it so for the renderer, which sees them all.
                let mut raw = text.clone();
                for reference in references(&text) {
                    if every_name.contains(reference) && !defined.contains(reference) {
                        raw = protect(&raw, reference);
                    }
                }
                env.defer(Deferred {
                    name: name.clone(),
                    value: Some(raw),
                    from: None,
                });
            } else {
                let expanded = env.expand(&text);
                env.values.insert(name.clone(), expanded);
            }
        } else if let Some((source, reference)) = key_ref(var) {
            let key = reference
                .get("key")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    TransformError::invalid(format!("{at}: the reference needs a key"))
                })?;
            env.defer(Deferred {
                name: name.clone(),
                value: None,
                from: Some(KeyRef {
                    source,
                    key: key.to_owned(),
                    optional: reference
                        .get("optional")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                }),
            });
        } else if let Some(field) = var.get("fieldRef") {
            let field_path = field
                .get("fieldPath")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match field_value(pod, field_path) {
                Ok(value) => {
                    env.values.insert(name.clone(), value);
                }
                Err(reason) => {
                    unhonoured(
                        pod.context,
                        &format!("{at}: fieldRef {field_path}: {reason}; the variable is left out"),
                    )?;
                }
            }
        } else if let Some(field) = var.get("resourceFieldRef") {
            match resource_value(pod, spec, field) {
                Ok(value) => {
                    env.values.insert(name.clone(), value);
                }
                Err(reason) => unhonoured(
                    pod.context,
                    &format!("{at}: resourceFieldRef: {reason}; the variable is left out"),
                )?,
            }
        } else {
            return Err(TransformError::invalid(format!(
                "{at} needs one of value, secretKeyRef, configMapKeyRef, fieldRef, resourceFieldRef"
            )));
        }
        defined.insert(name);
    }
    Ok(env)
}

impl Environment {
    fn defer(&mut self, var: Deferred) {
        self.values.remove(&var.name);
        self.deferred_names.insert(var.name.clone());
        self.deferred.push(var);
    }
}

/// The key a `configMapKeyRef` or `secretKeyRef` reads.
fn key_ref(var: &Value) -> Option<(Source, &Value)> {
    if let Some(reference) = var.get("configMapKeyRef") {
        let name = reference.get("name")?.as_str()?;
        return Some((Source::ConfigMap(name.to_owned()), reference));
    }
    let reference = var.get("secretKeyRef")?;
    let name = reference.get("name")?.as_str()?;
    Some((Source::Secret(name.to_owned()), reference))
}

/// `envFrom` entries, in order.
fn env_from(list: Option<&Value>, path: &str) -> Result<Vec<EnvFrom>, TransformError> {
    let mut out = Vec::new();
    for entry in list.and_then(Value::as_array).into_iter().flatten() {
        let (source, reference) = if let Some(reference) = entry.get("configMapRef") {
            (Source::ConfigMap(name_of(reference, path)?), reference)
        } else if let Some(reference) = entry.get("secretRef") {
            (Source::Secret(name_of(reference, path)?), reference)
        } else {
            return Err(TransformError::invalid(format!(
                "{path}.envFrom entries need configMapRef or secretRef"
            )));
        };
        out.push(EnvFrom {
            source,
            prefix: entry
                .get("prefix")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            optional: reference
                .get("optional")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        });
    }
    Ok(out)
}

fn name_of(reference: &Value, path: &str) -> Result<String, TransformError> {
    reference
        .get("name")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| TransformError::invalid(format!("{path}.envFrom: a reference needs a name")))
}

/// The variables in the order Kubernetes defines them: a list as written (each name once), a
/// map in name order except that a variable comes after those its value refers to
/// ([`opm_module_common::env::ordered`]).
fn ordered(env: Option<&Value>, path: &str) -> Result<Vec<(String, Value)>, TransformError> {
    let order = opm_module_common::env::ordered(
        env,
        path,
        "a reference expands only to a variable defined before it",
    )?;
    Ok(order
        .into_iter()
        .map(|(name, var)| (name.to_owned(), var.clone()))
        .collect())
}

/// The value of a `fieldRef`, or why compose cannot know it.
fn field_value(pod: &Pod, field_path: &str) -> Result<String, &'static str> {
    let quoted = |prefix: &str| {
        field_path
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix("']"))
    };
    match field_path {
        "metadata.name" => {
            if pod.copies > 1 {
                caveat(&format!(
                    "fieldRef metadata.name is the service's name, {}, the same in each of its \
                     {} copies (a pod's name is its own)",
                    pod.service, pod.copies
                ));
            }
            Ok(pod.service.clone())
        }
        "metadata.namespace" => Ok(pod.context.namespace.clone()),
        "spec.serviceAccountName" => {
            let account: Option<Value> = pod.component.field("serviceAccount").ok().flatten();
            Ok(account
                .map(|account| {
                    let create = account
                        .get("create")
                        .and_then(Value::as_bool)
                        .unwrap_or(true);
                    match account.get("name").and_then(Value::as_str) {
                        Some(name) if create => pod.context.object_name(name),
                        Some(name) => name.to_owned(),
                        None if create => pod.service.clone(),
                        None => "default".to_owned(),
                    }
                })
                .unwrap_or_else(|| "default".to_owned()))
        }
        "metadata.uid" => Err("a pod's UID does not exist on compose"),
        "spec.nodeName" | "status.hostIP" | "status.hostIPs" => {
            Err("compose cannot know the Docker host's name or address before the container runs")
        }
        "status.podIP" | "status.podIPs" => Err(
            "the container's address is known only once it runs (read it inside the container, e.g. `hostname -i`)",
        ),
        _ => {
            if let Some(key) = quoted("metadata.labels['") {
                let from_pod = pod.labels.get(key).and_then(Value::as_str);
                return Ok(from_pod
                    .or_else(|| pod.context.labels.get(key).map(String::as_str))
                    .unwrap_or_default()
                    .to_owned());
            }
            if let Some(key) = quoted("metadata.annotations['") {
                return Ok(pod
                    .annotations
                    .get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned());
            }
            Err("compose has no such field")
        }
    }
}

/// The value of a `resourceFieldRef`: the named container's (else this one's) request or limit
/// divided by the divisor, rounded up, as Kubernetes gives it.
fn resource_value(pod: &Pod, spec: &Value, field: &Value) -> Result<String, String> {
    let resource = field
        .get("resource")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let container = match field.get("containerName").and_then(Value::as_str) {
        Some(name) => pod
            .containers
            .get(name)
            .ok_or_else(|| format!("the pod has no container {name:?}"))?,
        None => spec,
    };
    let (kind, name) = resource
        .split_once('.')
        .ok_or_else(|| format!("{resource:?} is not limits.<resource> or requests.<resource>"))?;
    if !matches!(name, "cpu" | "memory") {
        return Err(format!("{resource}: compose gives a container no {name}"));
    }
    let resources = container.get("resources");
    let limit = resources.and_then(|r| r.pointer(&format!("/limits/{name}")));
    let quantity = match kind {
        "limits" => limit,
        // A request left out is the limit, as Kubernetes defaults it.
        "requests" => resources
            .and_then(|r| r.pointer(&format!("/requests/{name}")))
            .or(limit),
        _ => None,
    }
    .ok_or_else(|| {
        format!(
            "{resource} is not set, and Kubernetes would give the node's capacity, which compose \
             cannot know"
        )
    })?;
    let value = quantity::parse(quantity).ok_or_else(|| format!("{resource} is not a quantity"))?;
    let divisor = match field.get("divisor") {
        Some(divisor) => quantity::parse(divisor)
            .filter(|d| *d > 0.0)
            .ok_or_else(|| "the divisor is not a positive quantity".to_owned())?,
        None => 1.0,
    };
    Ok(quantity::divide(value, divisor))
}
