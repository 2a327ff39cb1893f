//! What the quadlet provider's transformers and its renderer share.
//!
//! A transformer returns *quadlet resources*: opm's envelope around one Podman Quadlet unit
//! (podman-systemd.unit(5)) or one file the units read.
//!
//! ```yaml
//! apiVersion: quadlet.opm.dev/v1
//! kind: Container           # Container, Pod, Volume, Timer; ConfigMap or Secret
//! metadata:
//!   name: api               # the unit's name: api.container
//!   labels: {...}           # the module's and opm's labels
//! spec:                     # the unit's sections, each a map of key → value
//!   Container:
//!     Image: nginx:1.27
//!     PublishPort: [8080:80]  # a repeated key: a list, one line each
//!   Service: {Restart: always}
//! ```
//!
//! A value is the unit's text after `=`, as systemd and Quadlet read it: quoted and escaped
//! already (`$$` for a `$`, `%%` for a `%`: [`escape`]), so a module's patch writes a key
//! exactly as it would in the file (`spec.Container.PublishPort`). A `ConfigMap` or `Secret`
//! resource is not a unit: it keeps the Kubernetes object's shape (`data`, `binaryData`;
//! `stringData`, `data`: [`data`]), and the renderer writes its keys as files under `config/`
//! and `secrets/` for the units to mount.
//!
//! - [`resource`], [`object_labels`], [`UNIT_KINDS`]: the envelope and the unit kinds;
//! - [`unit`]: a unit's sections, and its text;
//! - [`escape`], [`quote`], [`words`]: values as systemd reads them;
//! - [`data`]: ConfigMap and Secret files.
//!
//! What every provider reads the same way from the module (image, `env` order, probes,
//! mounts), and what cannot be honoured (a warning, or with `--strict` an error:
//! `opm_module_common::notes`), is `opm_module_common`'s.

pub mod data;
pub mod unit;

use opm_guest::{Context, Value};
pub use opm_module_common::{WORKLOAD_TYPE_LABEL, mounts_of, object_labels, sorted_entries};

/// The `apiVersion` of every quadlet resource.
pub const API_VERSION: &str = "quadlet.opm.dev/v1";

/// A container: `NAME.container`.
pub const CONTAINER: &str = "Container";
/// A pod, for a component with sidecars or init containers: `NAME.pod`.
pub const POD: &str = "Pod";
/// A named volume: `NAME.volume`.
pub const VOLUME: &str = "Volume";
/// A network: `NAME.network`.
pub const NETWORK: &str = "Network";
/// A systemd timer, for a cronjob: `NAME.timer`, which starts `NAME.service`.
pub const TIMER: &str = "Timer";
/// A ConfigMap's keys, written as files under `config/NAME/`.
pub const CONFIG_MAP: &str = "ConfigMap";
/// A Secret's keys, written as files under `secrets/NAME/`, mode 0600.
pub const SECRET: &str = "Secret";

/// The kinds that are units, with the file extension of each and the section that is the
/// unit's own (written after `[Unit]`).
pub const UNIT_KINDS: &[(&str, &str, &str)] = &[
    (CONTAINER, "container", "Container"),
    (POD, "pod", "Pod"),
    (VOLUME, "volume", "Volume"),
    (NETWORK, "network", "Network"),
    (TIMER, "timer", "Timer"),
];

/// The directory beside the units that holds the ConfigMaps' files.
pub const CONFIG_DIR: &str = "config";
/// The directory beside the units that holds the Secrets' files.
pub const SECRET_DIR: &str = "secrets";

/// A quadlet resource of `kind` named `name` with `spec`, labelled with the context's labels.
pub fn resource(kind: &str, name: &str, context: &Context, spec: Value) -> Value {
    opm_module_common::envelope(API_VERSION, kind, name, context, spec)
}

/// The name of the module's network unit: the instance's name (`shop.network`), which every
/// container joins so that each reaches the others by name.
pub fn network_name(context: &Context) -> String {
    context.name.clone()
}

/// `text` as a systemd value that Quadlet passes to `podman run` unexpanded: each `%` (a
/// systemd specifier) as `%%`, each `$` (a variable of the service) as `$$`.
///
/// ```
/// assert_eq!(opm_quadlet_common::escape("50% of $HOME"), "50%% of $$HOME");
/// ```
pub fn escape(text: &str) -> String {
    text.replace('%', "%%").replace('$', "$$")
}

/// `word` as one word of a systemd command line or list ([`escape`]d), in double quotes when it
/// is empty or holds a blank, a quote or a backslash.
///
/// ```
/// use opm_quadlet_common::quote;
/// assert_eq!(quote("plain"), "plain");
/// assert_eq!(quote("two words"), "\"two words\"");
/// assert_eq!(quote("say \"hi\"\\"), "\"say \\\"hi\\\"\\\\\"");
/// ```
pub fn quote(word: &str) -> String {
    let escaped = escape(word);
    if !escaped.is_empty()
        && !escaped
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '\\' | ';'))
    {
        return escaped;
    }
    let mut quoted = String::from("\"");
    for c in escaped.chars() {
        match c {
            '"' | '\\' => {
                quoted.push('\\');
                quoted.push(c);
            }
            '\t' => quoted.push_str("\\t"),
            _ => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// Several words as one systemd value, each [`quote`]d.
pub fn words<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    items.into_iter().map(quote).collect::<Vec<_>>().join(" ")
}

/// The context of the unit tests: module `shop` at version 1.2.0, its own instance, rendered by
/// `quadlet`.
#[doc(hidden)]
pub fn test_context() -> Context {
    opm_module_common::test_context("quadlet")
}

/// [`test_context`] rendering a second instance, `shop-eu`.
#[doc(hidden)]
pub fn test_instance_context() -> Context {
    opm_module_common::test_second_instance(test_context())
}

#[cfg(test)]
mod tests {
    use opm_guest::json;

    use super::*;

    #[test]
    fn a_resource_is_the_envelope_around_a_unit() {
        let unit = resource(
            CONTAINER,
            "api",
            &test_context(),
            json!({"Container": {"Image": "nginx"}}),
        );
        assert_eq!(unit["apiVersion"], "quadlet.opm.dev/v1");
        assert_eq!(unit["kind"], "Container");
        assert_eq!(unit["metadata"]["name"], "api");
        assert_eq!(unit["metadata"]["labels"]["team"], "payments");
        assert_eq!(unit["spec"]["Container"]["Image"], "nginx");
    }

    #[test]
    fn words_are_quoted_only_when_they_must_be() {
        assert_eq!(words(["sh", "-c", "echo $HOME"]), "sh -c \"echo $$HOME\"");
        assert_eq!(words(["", "a'b"]), "\"\" \"a'b\"");
        assert_eq!(quote("100%"), "100%%");
    }

    #[test]
    fn the_network_is_named_after_the_instance() {
        assert_eq!(network_name(&test_context()), "shop");
        assert_eq!(network_name(&test_instance_context()), "shop-eu");
    }
}
