//! Fuzz target `cel`: one `${…}` expression of a module, evaluated as `opm mod build` evaluates
//! it (`module::from_inputs`), over parameters with a string, a list and a map of maps.
//!
//! The input is the expression's text. Whatever it is, loading must not panic, and must not run
//! away with time or memory: the cost bound (`module::cost`) refuses what could, before it runs.

#![no_main]

use libfuzzer_sys::fuzz_target;
use opm_core::module::{self, Input};

/// The module the expression is written into: `EXPRESSION` is replaced by it.
const MODULE: &str = "apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: fuzz, version: 0.1.0}
config:
  properties:
    text: {type: string, default: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa}
    items: {type: array, items: {type: string}, default: [a, b, c, d, e, f, g, h, i, j, k, l]}
    ini:
      type: object
      default: {main: {a: '1', b: '2'}, extra: {c: '3'}}
components:
  api:
    resources:
      ConfigMap: {data: {value: 'EXPRESSION'}}
";

fuzz_target!(|data: &[u8]| {
    let Ok(expression) = std::str::from_utf8(data) else {
        return;
    };
    if expression.contains(['\n', '\r', '}']) {
        return;
    }
    // Inside a single-quoted YAML string: a quote is written twice.
    let text = MODULE.replace(
        "EXPRESSION",
        &format!("${{ {} }}", expression.replace('\'', "''")),
    );
    let env = |_: &str| None;
    let module = Input {
        name: "module.yaml",
        bytes: text.as_bytes(),
    };
    if let Ok(module) = module::from_inputs(module, &[], &[], &env) {
        let _ = format!("{module:?}");
    }
});
