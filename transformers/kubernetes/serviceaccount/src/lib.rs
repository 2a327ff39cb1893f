//! ServiceAccountTransformer: renders the ServiceAccount trait into a `v1` ServiceAccount named
//! `name` (default: the component's name; prefixed with a second instance's name), unless `create` is false: then the pods run as an
//! account that exists already, and nothing is rendered. The workload transformers set the pods'
//! `serviceAccountName` from the same trait.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::object_metadata;
use opm_k8s_common::pod::service_account;

/// Renders the ServiceAccount trait into ServiceAccounts.
pub struct ServiceAccountTransformer;

impl Transformer for ServiceAccountTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let account: Value = component.require("serviceAccount")?;
        if account.get("create").and_then(Value::as_bool) == Some(false) {
            return Ok(Vec::new());
        }
        let (Some(name), _) = service_account(component, context)? else {
            return Ok(Vec::new());
        };
        let mut metadata = object_metadata(component, context, &name);
        if let Some(annotations) = account.get("annotations").and_then(Value::as_object) {
            let target = metadata
                .as_object_mut()
                .expect("object_metadata returns an object")
                .entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(target) = target.as_object_mut() {
                let mut keys: Vec<&String> = annotations.keys().collect();
                keys.sort();
                for key in keys {
                    target.insert(key.clone(), annotations[key].clone());
                }
            }
        }
        let mut out = json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": metadata,
        });
        if let Some(automount) = account.get("automountToken") {
            out["automountServiceAccountToken"] = automount.clone();
        }
        Ok(vec![out])
    }
}

#[cfg(not(feature = "library"))]
opm_guest::export!(ServiceAccountTransformer);

#[cfg(test)]
mod tests {
    use super::*;

    fn render(account: Value) -> Result<Vec<Value>, TransformError> {
        let component = Component::from_value(json!({
            "metadata": {"name": "api"},
            "spec": {"container": {"image": "x"}, "serviceAccount": account},
        }))?;
        let context = Context {
            name: "shop".into(),
            ..Context::default()
        };
        ServiceAccountTransformer::transform(&component, &context)
    }

    #[test]
    fn minimal_account_is_named_after_the_component() {
        let out = render(json!({"create": true})).unwrap();
        assert_eq!(
            out,
            [json!({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": "api", "labels": {
                        "app.kubernetes.io/instance": "shop", "app.kubernetes.io/name": "api"}}})]
        );
    }

    #[test]
    fn maximal_account_has_name_annotations_and_token_setting() {
        let out = render(json!({"name": "api-runner", "create": true, "automountToken": false,
                                 "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/api"}}))
        .unwrap();
        assert_eq!(out[0]["metadata"]["name"], "api-runner");
        assert_eq!(
            out[0]["metadata"]["annotations"]["eks.amazonaws.com/role-arn"],
            "arn:aws:iam::1:role/api"
        );
        assert_eq!(out[0]["automountServiceAccountToken"], false);
    }

    #[test]
    fn an_account_that_exists_already_is_not_rendered() {
        assert!(
            render(json!({"name": "shared", "create": false}))
                .unwrap()
                .is_empty()
        );
    }
}
