//! SecretTransformer: renders the Secret resource of a component for the docker-compose
//! provider as one `Secret` resource per key, named `<object>_<key>` (the object named after the
//! component, for the instance): its text (`stringData`, and `data` that decodes to UTF-8) as
//! `content`, other bytes as base64 (`opm_compose_common::data`). The Secret's `labels` and
//! `annotations` become the entries' labels.
//!
//! Compose reads a secret from a file (or from its own environment), never from the compose
//! file: the renderer writes each key that a service mounts as a file under `--out-dir`
//! (`secrets/<object>/<key>`), and gives a `secretKeyRef` its value. A Secret's `type` has no
//! meaning to compose and `immutable` needs none.
//!
//! Every value is sensitive: it reaches the rendered output alone. This transformer never logs,
//! and its errors name keys, never values.

use opm_compose_common::{SECRET, data};
use opm_guest::{Component, Context, TransformError, Transformer, Value};

/// Renders Secret resources as compose secrets.
pub struct SecretTransformer;

impl Transformer for SecretTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        data::resources(component, context, SECRET, "secret", ("stringData", "data"))
    }
}

opm_guest::export!(SecretTransformer);

#[cfg(test)]
mod tests {
    use super::*;
    use opm_compose_common::test_context;
    use opm_guest::json;

    #[test]
    fn each_key_is_a_secret_named_after_the_object_and_the_key() {
        let component = Component::from_value(json!({
            "metadata": {"name": "credentials"},
            "spec": {"secret": {
                "type": "kubernetes.io/basic-auth",
                "stringData": {"username": "shop", "password": "change-me"},
                "data": {"signing.key": "c2lnbmluZw==", "raw": "/w=="},
                "labels": {"tier": "frontend"},
            }},
        }))
        .unwrap();
        let out = SecretTransformer::transform(&component, &test_context()).unwrap();
        let names: Vec<&str> = out
            .iter()
            .map(|r| r["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "credentials_password",
                "credentials_raw",
                "credentials_signing.key",
                "credentials_username"
            ]
        );
        assert!(out.iter().all(|r| r["kind"] == "Secret"));
        assert_eq!(
            out[0]["spec"],
            json!({"content": "change-me", "labels": {"tier": "frontend"}})
        );
        assert_eq!(out[1]["spec"]["x-opm-base64"], "/w==");
        assert_eq!(out[2]["spec"]["content"], "signing");
    }

    #[test]
    fn errors_name_the_key_and_never_the_value() {
        let component = Component::from_value(json!({
            "metadata": {"name": "credentials"},
            "spec": {"secret": {"stringData": {"token": "s3cret"}, "data": {"token": "czNjcmV0"}}},
        }))
        .unwrap();
        let error = SecretTransformer::transform(&component, &test_context())
            .unwrap_err()
            .to_string();
        assert!(error.contains("\"token\""), "{error}");
        assert!(!error.contains("s3cret"), "{error}");
    }
}
