//! `x-opm`: what a service asks the renderer to resolve.
//!
//! A transformer sees one component, and a container may read another component's ConfigMap or
//! Secret: a variable (`configMapKeyRef`, `secretKeyRef`, `envFrom`) or files (a `configMap`,
//! `secret` or `projected` volume). Compose has no ConfigMaps: the variable needs the value
//! itself, and the files need a `configs:` or `secrets:` entry per key. So the workload
//! transformer writes such reads into the service's extension field `x-opm` (compose allows
//! `x-` fields, and ignores them), and the renderer, which sees every resource, resolves them
//! from the `Config` and `Secret` resources of the render and removes the field:
//!
//! ```yaml
//! x-opm:
//!   envFrom:                       # whole maps as variables, before `environment`
//!     - {configMap: settings, prefix: APP_}
//!   environment:                   # in the order Kubernetes defines them
//!     - {name: API_TOKEN, secret: credentials, key: token}
//!     - {name: URL, value: "http://$(API_HOST)/"}   # refers to a variable resolved here
//!   command: [--token=$(API_TOKEN)] # raw, expanded once the environment is known
//!   files:                         # ConfigMap and Secret volumes
//!     - {configMap: settings, target: /etc/web, mode: 420}
//! ```
//!
//! Values are written raw (not [escaped](crate::expand::escape)); the renderer expands
//! `$(NAME)` as Kubernetes would and escapes the result.

use serde::{Deserialize, Serialize};

/// The name of the extension field of a service.
pub const FIELD: &str = "x-opm";

/// What a service asks the renderer to resolve; empty fields are left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Extension {
    /// Whole ConfigMaps and Secrets read as variables, in order; a variable of `environment`
    /// or of the service's own `environment` wins over them, as in Kubernetes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_from: Vec<EnvFrom>,
    /// Variables whose value the renderer finds, in the order Kubernetes defines them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub environment: Vec<Deferred>,
    /// The raw `entrypoint`, when it refers to a variable resolved here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entrypoint: Option<Vec<String>>,
    /// The raw `command`, when it refers to a variable resolved here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// ConfigMap and Secret files to mount.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<Files>,
}

impl Extension {
    /// Whether it asks for nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A ConfigMap or a Secret of the module, by its name (the object name, as the module writes
/// it in a `secretKeyRef`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    /// A ConfigMap: `Config` resources.
    ConfigMap(String),
    /// A Secret: `Secret` resources.
    Secret(String),
}

impl Source {
    /// The object's name.
    pub fn name(&self) -> &str {
        match self {
            Self::ConfigMap(name) | Self::Secret(name) => name,
        }
    }

    /// The kind of the compose resources that hold its keys.
    pub fn resource_kind(&self) -> &'static str {
        match self {
            Self::ConfigMap(_) => crate::CONFIG,
            Self::Secret(_) => crate::SECRET,
        }
    }

    /// How the module calls it: `ConfigMap "settings"`.
    pub fn describe(&self) -> String {
        match self {
            Self::ConfigMap(name) => format!("ConfigMap {name:?}"),
            Self::Secret(name) => format!("Secret {name:?}"),
        }
    }
}

/// Every key of a ConfigMap or Secret as a variable (`envFrom`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvFrom {
    /// The object.
    #[serde(flatten)]
    pub source: Source,
    /// Put before each key to name its variable.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
    /// Whether the object may be missing.
    #[serde(default, skip_serializing_if = "is_false")]
    pub optional: bool,
}

/// A variable the renderer resolves: one key of a ConfigMap or Secret, or a value that refers
/// to such a variable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Deferred {
    /// The variable's name.
    pub name: String,
    /// Its value, raw, to expand with the variables defined before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The key it reads.
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub from: Option<KeyRef>,
}

/// One key of a ConfigMap or a Secret (`configMapKeyRef`, `secretKeyRef`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyRef {
    /// The object.
    #[serde(flatten)]
    pub source: Source,
    /// The key.
    pub key: String,
    /// Whether the object or the key may be missing (the variable is then left out).
    #[serde(default, skip_serializing_if = "is_false")]
    pub optional: bool,
}

/// The keys of a ConfigMap or Secret mounted as files: `configMap`, `secret` and `projected`
/// volumes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Files {
    /// The object.
    #[serde(flatten)]
    pub source: Source,
    /// The directory the files go in (the mount's `mountPath`), or with `subPath` the file.
    pub target: String,
    /// The keys to mount and the path of each under `target`; every key at its own name when
    /// left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<Item>>,
    /// The mode of every file but those whose item gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    /// Mount only the file at this path (of `items`, or a key), at `target` itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_path: Option<String>,
    /// Whether the object (or a key of `items`) may be missing.
    #[serde(default, skip_serializing_if = "is_false")]
    pub optional: bool,
}

/// A key mounted at a path of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Item {
    /// The key.
    pub key: String,
    /// Its path, relative to the mount's directory.
    pub path: String,
    /// Its mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

#[cfg(test)]
mod tests {
    use super::*;
    use opm_guest::json;

    #[test]
    fn the_extension_is_compact_json() {
        let extension = Extension {
            env_from: vec![EnvFrom {
                source: Source::ConfigMap("settings".into()),
                prefix: String::new(),
                optional: false,
            }],
            environment: vec![
                Deferred {
                    name: "TOKEN".into(),
                    value: None,
                    from: Some(KeyRef {
                        source: Source::Secret("credentials".into()),
                        key: "token".into(),
                        optional: true,
                    }),
                },
                Deferred {
                    name: "URL".into(),
                    value: Some("http://$(HOST)".into()),
                    from: None,
                },
            ],
            files: vec![Files {
                source: Source::ConfigMap("settings".into()),
                target: "/etc/web".into(),
                items: Some(vec![Item {
                    key: "a".into(),
                    path: "b".into(),
                    mode: None,
                }]),
                mode: Some(0o444),
                sub_path: None,
                optional: false,
            }],
            ..Extension::default()
        };
        let value = serde_json::to_value(&extension).unwrap();
        assert_eq!(
            value,
            json!({
                "envFrom": [{"configMap": "settings"}],
                "environment": [
                    {"name": "TOKEN", "secret": "credentials", "key": "token", "optional": true},
                    {"name": "URL", "value": "http://$(HOST)"},
                ],
                "files": [{"configMap": "settings", "target": "/etc/web",
                           "items": [{"key": "a", "path": "b"}], "mode": 292}],
            })
        );
        let back: Extension = serde_json::from_value(value).unwrap();
        assert_eq!(back, extension);
        assert!(Extension::default().is_empty());
    }
}
