//! What the host knows of a resource's identity: API group, kind, the namespace it lands in
//! (its own, else the render's), name. It names resources in messages, finds what a checksum
//! reference or a patch target names, and finds two resources of one call that are one object.
//! Which resources are one object *on the platform*, and in what order they are written, is the
//! renderer's to say (`wit/transformer.wit`, `renderer`).

use std::fmt;

use serde_json::Value;

use super::Resource;

/// A resource's group, kind, namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Identity {
    /// The API group (the part of `apiVersion` before `/`; empty when it has none).
    pub group: String,
    /// The kind.
    pub kind: String,
    /// The namespace it lands in: its own `metadata.namespace`, else the render's.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl Identity {
    /// The identity of a checked resource rendered into `target_namespace`.
    pub fn of(resource: &Value, target_namespace: &str) -> Self {
        let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        let api_version = text(&resource["apiVersion"]);
        let group = api_version
            .rsplit_once('/')
            .map(|(group, _)| group.to_owned())
            .unwrap_or_default();
        let namespace = match resource["metadata"]["namespace"].as_str() {
            Some(own) if !own.is_empty() => own.to_owned(),
            _ => target_namespace.to_owned(),
        };
        Self {
            group,
            kind: text(&resource["kind"]),
            namespace,
            name: text(&resource["metadata"]["name"]),
        }
    }

    /// How a checksum reference names its kind: `KIND` when the group is empty, else
    /// `GROUP/KIND`.
    pub fn kind_reference(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}/{}", self.group, self.kind)
        }
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.group.is_empty() {
            write!(f, "{}/", self.group)?;
        }
        write!(f, "{} ", self.kind)?;
        if !self.namespace.is_empty() {
            write!(f, "{}/", self.namespace)?;
        }
        write!(f, "{}", self.name)
    }
}

/// Each resource whose identity an earlier one (in identity order) already has, by position.
pub fn duplicates(resources: &[Resource]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..resources.len()).collect();
    order.sort_by(|&a, &b| {
        resources[a]
            .identity
            .cmp(&resources[b].identity)
            .then(a.cmp(&b))
    });
    order
        .windows(2)
        .filter(|pair| resources[pair[0]].identity == resources[pair[1]].identity)
        .map(|pair| pair[1])
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn identity_is_the_namespace_a_resource_lands_in() {
        let of = |value: Value| Identity::of(&value, "shop").to_string();
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert_eq!(of(config.clone()), "ConfigMap shop/c");
        let mut elsewhere = config;
        elsewhere["metadata"]["namespace"] = json!("other");
        assert_eq!(of(elsewhere), "ConfigMap other/c");
        let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                            "metadata": {"name": "w"}});
        assert_eq!(of(widget.clone()), "example.com/Widget shop/w");
        assert_eq!(
            Identity::of(&widget, "").kind_reference(),
            "example.com/Widget"
        );
    }
}
