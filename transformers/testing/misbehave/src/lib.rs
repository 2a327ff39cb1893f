//! A guest that breaks the output contract, or the stack, in the way its component's
//! `misbehave.opm.dev/mode` label names:
//!
//! - `not-an-object`: returns a JSON array where a resource should be;
//! - `no-kind`: a resource without `kind`;
//! - `no-name`: a resource whose `metadata` has no `name`;
//! - `name-number`: a resource whose `metadata.name` is the number 42;
//! - `twice`: the same ConfigMap twice;
//! - `huge`: a ConfigMap of 1 MiB, for a host that allows less output;
//! - `nothing`: no resources at all, which is valid;
//! - `shared`: a ConfigMap named `shared` whatever the component, so two such components clash;
//! - `shared-here`: that ConfigMap with `metadata.namespace` set to the target namespace, the
//!   same object in a cluster as `shared`'s;
//! - `cluster-role` / `cluster-role-in-a-namespace`: a ClusterRole named `shared`, without and
//!   with a `metadata.namespace` (which a cluster-scoped kind ignores), again one object;
//! - `chatty`: 10,000 log lines of 100 bytes, then a ConfigMap;
//! - `recurse`: recursion without end, until the stack runs out;
//! - `empty-log-spam`: 2 million empty debug lines, then a ConfigMap;
//! - `huge-error`: fails with an error text of 60 MiB;
//! - `big-copy`: returns 30 resources of 1 MiB each, for a host whose output limit is smaller
//!   (the copy out of the guest, not only the check after it, must stop at the limit);
//! - `many-resources`: returns tiny resources, as many as its `misbehave.opm.dev/count` label
//!   says (a million when it has none);
//! - `secret-checksums`: returns as many tiny Secrets as its `misbehave.opm.dev/count` label
//!   says (9,999 when it has none) and a ConfigMap whose checksum annotation references them
//!   all, so that the host would stretch every one;
//! - `fake-panic`: logs a line that looks like a panic, then traps on an out-of-bounds read;
//! - `grow-then-spin`: asks for far more memory than any limit, ignores the refusal, then
//!   loops forever;
//! - `escapes`: logs a line, and then fails with a text, that hold terminal escape sequences
//!   (clear the screen, set the window title, a green "verified");
//! - `say-secret`: logs, and then fails with, a long line whose end holds the component's
//!   `spec.container.image` — a value the tests make sensitive — straddling the 4,096-byte cut.

use opm_guest::{Component, Context, TransformError, Transformer, Value, json, log};

pub struct Misbehave;

impl Transformer for Misbehave {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
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
            "name-number" => {
                vec![json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 42}})]
            }
            "twice" => vec![
                config_map(component.name(), json!({})),
                config_map(component.name(), json!({})),
            ],
            "huge" => vec![config_map(
                component.name(),
                json!({"blob": "x".repeat(1 << 20)}),
            )],
            "nothing" => Vec::new(),
            "shared" => vec![config_map("shared", json!({"from": component.name()}))],
            "shared-here" => {
                let mut shared = config_map("shared", json!({"from": component.name()}));
                shared["metadata"]["namespace"] = json!(context.namespace);
                vec![shared]
            }
            "cluster-role" => vec![json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "shared"},
            })],
            "cluster-role-in-a-namespace" => vec![json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "shared", "namespace": "elsewhere"},
            })],
            "chatty" => {
                for line in 0..10_000 {
                    log::info(&format!("{line:05} {}", "-".repeat(94)));
                }
                vec![config_map(component.name(), json!({}))]
            }
            "empty-log-spam" => {
                for _ in 0..2_000_000 {
                    log::debug("");
                }
                vec![config_map(component.name(), json!({}))]
            }
            "huge-error" => return Err(TransformError::failed("e".repeat(60 << 20))),
            "big-copy" => (0..30)
                .map(|i| config_map(&format!("big-{i}"), json!({"blob": "x".repeat(1 << 20)})))
                .collect(),
            "many-resources" => {
                let count = component
                    .label("misbehave.opm.dev/count")
                    .and_then(|count| count.parse().ok())
                    .unwrap_or(1_000_000);
                (0..count).map(|_| json!({})).collect()
            }
            "secret-checksums" => {
                let count = component
                    .label("misbehave.opm.dev/count")
                    .and_then(|count| count.parse().ok())
                    .unwrap_or(9_999);
                let names: Vec<String> = (0..count).map(|i| format!("Secret/s{i}")).collect();
                let mut resources = vec![json!({
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": component.name(),
                        "annotations": {"checksum.opm.dev/config":
                                        format!("opm:checksum {}", names.join(" "))},
                    },
                })];
                resources.extend((0..count).map(|i| {
                    json!({
                        "apiVersion": "v1",
                        "kind": "Secret",
                        "metadata": {"name": format!("s{i}")},
                        "stringData": {"v": i.to_string()},
                    })
                }));
                resources
            }
            "fake-panic" => {
                log::error("panicked at src/lib.rs:1:1: not really");
                out_of_bounds_read();
                Vec::new()
            }
            "grow-then-spin" => {
                ask_for_memory_and_ignore_the_answer();
                loop {
                    std::hint::black_box(());
                }
            }
            "escapes" => {
                log::warn("\u{1b}[2J\u{1b}]0;owned\u{7}log line");
                return Err(TransformError::failed(
                    "\u{1b}[32mverified\u{1b}[0m \u{61c}error text",
                ));
            }
            "say-secret" => {
                let image = component.spec()["container"]["image"]
                    .as_str()
                    .unwrap_or_default();
                let line = format!("{}{image}", "x".repeat(4090));
                log::info(&line);
                return Err(TransformError::failed(line));
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

/// Reads far past the end of linear memory, which traps.
fn out_of_bounds_read() {
    let address = std::hint::black_box(usize::MAX - 16) as *const u8;
    // SAFETY: it is not safe, and that is the point: the guest must trap, and on wasm32 an
    // out-of-bounds read traps instead of being undefined behaviour.
    let _ = unsafe { address.read_volatile() };
}

/// Asks to grow memory by 60,000 pages (3.7 GiB) and ignores the refusal.
#[cfg(target_arch = "wasm32")]
fn ask_for_memory_and_ignore_the_answer() {
    let _ = core::arch::wasm32::memory_grow(0, std::hint::black_box(60_000));
}

#[cfg(not(target_arch = "wasm32"))]
fn ask_for_memory_and_ignore_the_answer() {}

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
