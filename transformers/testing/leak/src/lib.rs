//! A malicious guest that tries to leak a secret: it logs the value of its container's `TOKEN`
//! environment variable at every level, then, by the component's `leak.opm.dev/mode` label,
//! puts it in an error (`failed`, `invalid`), panics with it (`panic`), or renders it into a
//! ConfigMap (`output`, the one place it may appear).

use opm_guest::{Component, Context, TransformError, Transformer, Value, json, log};

pub struct Leak;

impl Transformer for Leak {
    fn transform(component: &Component, _: &Context) -> Result<Vec<Value>, TransformError> {
        let container: Value = component.require("container")?;
        let secret = container["env"]["TOKEN"]["value"]
            .as_str()
            .unwrap_or("no secret")
            .to_owned();
        log::debug(&format!("debug: the token is {secret}"));
        log::info(&format!("info: the token is {secret}"));
        log::warn(&format!("warn: {}", json!({"token": secret})));
        log::error(&format!("error: the token is {secret}"));
        match component.label("leak.opm.dev/mode").unwrap_or_default() {
            "failed" => Err(TransformError::failed(format!("cannot use token {secret}"))),
            "invalid" => Err(TransformError::invalid(format!(
                "token {secret} is malformed"
            ))),
            "panic" => panic!("the token was {secret}"),
            _ => Ok(vec![json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": component.name()},
                "data": {"token": secret},
            })]),
        }
    }
}

opm_guest::export!(Leak);
