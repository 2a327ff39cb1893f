//! SecretTransformer: renders the Secret resource of a component into a `v1` Secret named after
//! the component, its values as `stringData`.
//!
//! Every value is sensitive (`docs/module-format.md`): it goes into the rendered Secret alone.
//! This transformer never logs, and its errors name keys, never values.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::{object_metadata, sorted_entries};

/// Secret type when the resource names none.
pub const DEFAULT_TYPE: &str = "Opaque";

/// Renders secret resources into Secrets.
pub struct SecretTransformer;

impl Transformer for SecretTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let secret: Value = component.require("secret")?;
        let kind = secret
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_TYPE);
        let mut data = Map::new();
        for (key, value) in sorted_entries(secret.get("stringData")) {
            let Value::String(text) = value else {
                return Err(TransformError::invalid(format!(
                    "secret.stringData.{key} must be a string"
                )));
            };
            data.insert(key.clone(), Value::from(text.as_str()));
        }
        Ok(vec![json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": object_metadata(component, context, &context.object_name(component.name())),
            "type": kind,
            "stringData": data,
        })])
    }
}

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
    fn errors_name_the_key_never_the_value() {
        let err = render(json!({"stringData": {"token": 12345}})).unwrap_err();
        let message = err.to_string();
        assert!(message.contains("secret.stringData.token"), "{message}");
        assert!(!message.contains("12345"), "{message}");
    }
}
