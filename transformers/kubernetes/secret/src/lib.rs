//! SecretTransformer: renders the Secret resource of a component into a `v1` Secret named after
//! the component: its text values as `stringData`, its base64 values as `data` (never the same
//! key in both), `immutable` when set, and the resource's `labels` and `annotations` merged over
//! the component's. A Secret of a built-in type (`kubernetes.io/tls`, `basic-auth`, `ssh-auth`,
//! `dockerconfigjson`, `dockercfg`) must have the keys the API server wants of it.
//!
//! Every value is sensitive (`docs/module-format.md`): it goes into the rendered Secret alone.
//! This transformer never logs, and its errors name keys, never values.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::data::{base64_map, disjoint, text_map};
use opm_k8s_common::meta::merge_metadata;
use opm_k8s_common::object_metadata;

/// Secret type when the resource names none.
pub const DEFAULT_TYPE: &str = "Opaque";

/// Renders secret resources into Secrets.
pub struct SecretTransformer;

/// The keys the API server wants in a Secret of a built-in type, in `data` or `stringData`:
/// each of them, or (when the flag is false) one of them at least.
const REQUIRED_KEYS: &[(&str, &[&str], bool)] = &[
    ("kubernetes.io/basic-auth", &["username", "password"], false),
    ("kubernetes.io/dockercfg", &[".dockercfg"], true),
    (
        "kubernetes.io/dockerconfigjson",
        &[".dockerconfigjson"],
        true,
    ),
    ("kubernetes.io/ssh-auth", &["ssh-privatekey"], true),
    ("kubernetes.io/tls", &["tls.crt", "tls.key"], true),
];

impl Transformer for SecretTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let secret: Value = component.require("secret")?;
        let kind = secret
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_TYPE);
        let text = text_map(secret.get("stringData"), "secret.stringData")?;
        let encoded = base64_map(secret.get("data"), "secret.data")?;
        disjoint((&encoded, "secret.data"), (&text, "secret.stringData"))?;
        if let Some((_, keys, every)) = REQUIRED_KEYS.iter().find(|(name, ..)| *name == kind) {
            let has = |key: &&str| encoded.contains_key(*key) || text.contains_key(*key);
            let found = if *every {
                keys.iter().all(has)
            } else {
                keys.iter().any(has)
            };
            if !found {
                return Err(TransformError::invalid(format!(
                    "a Secret of type {kind} needs {} {} in data or stringData",
                    if *every {
                        "the keys"
                    } else {
                        "one of the keys"
                    },
                    keys.join(if *every { " and " } else { " or " }),
                )));
            }
        }
        let mut metadata = object_metadata(
            component,
            context,
            &opm_k8s_common::pinned_name(component, context, &secret),
        );
        merge_metadata(&mut metadata, &secret, "secret")?;
        let mut object = Map::new();
        object.insert("apiVersion".into(), json!("v1"));
        object.insert("kind".into(), json!("Secret"));
        object.insert("metadata".into(), metadata);
        object.insert("type".into(), json!(kind));
        if !encoded.is_empty() {
            object.insert("data".into(), Value::Object(encoded));
        }
        object.insert("stringData".into(), Value::Object(text));
        if let Some(immutable) = secret.get("immutable").filter(|v| v.is_boolean()) {
            object.insert("immutable".into(), immutable.clone());
        }
        Ok(vec![Value::Object(object)])
    }
}

#[cfg(not(feature = "library"))]
opm_guest::export!(SecretTransformer);

#[cfg(test)]
mod tests {
    use super::*;

    fn render(secret: Value) -> Result<Vec<Value>, TransformError> {
        let component =
            Component::from_value(json!({"metadata": {"name": "db"}, "spec": {"secret": secret}}))?;
        SecretTransformer::transform(&component, &Context::default())
    }

    #[test]
    fn minimal_secret_is_opaque_and_empty() {
        let out = render(json!({})).unwrap();
        assert_eq!(out[0]["kind"], "Secret");
        assert_eq!(out[0]["type"], "Opaque");
        assert_eq!(out[0]["stringData"], json!({}));
        assert!(out[0].get("data").is_none() && out[0].get("immutable").is_none());
    }

    #[test]
    fn maximal_secret_keeps_type_and_values_in_key_order() {
        let out = render(json!({"type": "kubernetes.io/basic-auth",
                                 "stringData": {"username": "app", "password": "s3cret"}}))
        .unwrap();
        assert_eq!(out[0]["type"], "kubernetes.io/basic-auth");
        let keys: Vec<&String> = out[0]["stringData"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["password", "username"]);
        assert_eq!(out[0]["stringData"]["password"], "s3cret");
    }

    #[test]
    fn base64_data_immutable_labels_and_annotations() {
        let out = render(json!({
            "type": "kubernetes.io/tls",
            "data": {"tls.key": "a2V5LWJ5dGVz", "tls.crt": "Y2VydC1ieXRlcw=="},
            "stringData": {"ca.crt": "text"},
            "immutable": true,
            "labels": {"tier": "db"},
            "annotations": {"reflector.v1.k8s.emberstack.com/reflection-allowed": "true"},
        }))
        .unwrap();
        assert_eq!(
            out[0],
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "db",
                                "labels": {"app.kubernetes.io/instance": "",
                                           "app.kubernetes.io/name": "db", "tier": "db"},
                                "annotations": {"reflector.v1.k8s.emberstack.com/reflection-allowed": "true"}},
                   "type": "kubernetes.io/tls",
                   "data": {"tls.crt": "Y2VydC1ieXRlcw==", "tls.key": "a2V5LWJ5dGVz"},
                   "stringData": {"ca.crt": "text"},
                   "immutable": true})
        );
        let keys: Vec<&String> = out[0].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "apiVersion",
                "kind",
                "metadata",
                "type",
                "data",
                "stringData",
                "immutable"
            ]
        );
    }

    #[test]
    fn a_built_in_type_needs_its_keys_in_either_map() {
        let err = render(json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "Y2VydA=="}}))
            .unwrap_err();
        assert!(
            err.to_string().contains(
                "a Secret of type kubernetes.io/tls needs the keys tls.crt and tls.key in data or \
                 stringData"
            ),
            "{err}"
        );
        assert!(
            render(
                json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "Y2VydA=="},
                          "stringData": {"tls.key": "key"}})
            )
            .is_ok()
        );
        let err = render(json!({"type": "kubernetes.io/basic-auth"})).unwrap_err();
        assert!(
            err.to_string()
                .contains("needs one of the keys username or password"),
            "{err}"
        );
        assert!(
            render(json!({"type": "kubernetes.io/basic-auth", "stringData": {"password": "p"}}))
                .is_ok()
        );
        assert!(render(json!({"type": "example.com/custom"})).is_ok());
    }

    #[test]
    fn errors_name_the_key_never_the_value() {
        let err = render(json!({"stringData": {"token": 12345}})).unwrap_err();
        let message = err.to_string();
        assert!(message.contains("secret.stringData.token"), "{message}");
        assert!(!message.contains("12345"), "{message}");
        let err = render(json!({"data": {"token": "hunter2-not-base64!"}})).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("secret.data.token must be base64"),
            "{message}"
        );
        assert!(!message.contains("hunter2"), "{message}");
        let err = render(json!({"data": {"token": "aHVudGVyMi1odW50ZXIy"},
                                "stringData": {"token": "hunter2-hunter2"}}))
        .unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("key \"token\" is in both secret.data and secret.stringData"),
            "{message}"
        );
        assert!(
            !message.contains("hunter2") && !message.contains("aHVudGVy"),
            "{message}"
        );
    }
}
