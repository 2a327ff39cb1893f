//! A guest that breaks the output contract, or the stack, in the way its component's
//! `misbehave.opm.dev/mode` label names:
//!
//! - `not-an-object`: returns a JSON array where a resource should be;
//! - `no-kind`: a resource without `kind`;
//! - `no-name`: a resource whose `metadata` has no `name`;
//! - `huge`: a ConfigMap of 1 MiB, for a host that allows less output;
//! - `nothing`: no resources at all, which is valid;
//! - `shared`: a ConfigMap named `shared` whatever the component, so two such components clash;
//! - `chatty`: 10,000 log lines of 100 bytes, then a ConfigMap;
//! - `recurse`: recursion without end, until the stack runs out.

use opm_guest::{Component, Context, TransformError, Transformer, Value, json, log};

pub struct Misbehave;

impl Transformer for Misbehave {
    fn transform(component: &Component, _: &Context) -> Result<Vec<Value>, TransformError> {
        let config_map = |name: &str, data: Value| {
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name},
                "data": data,
            })
        };
        let mode = component
            .label("misbehave.opm.dev/mode")
            .unwrap_or_default();
        Ok(match mode {
            "not-an-object" => vec![json!(["apiVersion", "v1"])],
            "no-kind" => vec![json!({"apiVersion": "v1", "metadata": {"name": component.name()}})],
            "no-name" => vec![json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})],
            "huge" => vec![config_map(
                component.name(),
                json!({"blob": "x".repeat(1 << 20)}),
            )],
            "nothing" => Vec::new(),
            "shared" => vec![config_map("shared", json!({"from": component.name()}))],
            "chatty" => {
                for line in 0..10_000 {
                    log::info(&format!("{line:05} {}", "-".repeat(94)));
                }
                vec![config_map(component.name(), json!({}))]
            }
            "recurse" => {
                let depth = descend(std::hint::black_box(u64::MAX));
                vec![config_map(component.name(), json!({"depth": depth}))]
            }
            other => {
                return Err(TransformError::invalid(format!(
                    "unknown misbehave.opm.dev/mode {other:?}"
                )));
            }
        })
    }
}

/// Recurses `n` times; the work after each call keeps it from becoming a loop.
#[inline(never)]
fn descend(n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let below = descend(std::hint::black_box(n - 1));
    below.rotate_left(7) ^ n
}

opm_guest::export!(Misbehave);
