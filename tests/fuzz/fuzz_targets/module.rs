//! Fuzz target `module`: loading a module with values files and `--set` arguments, from bytes
//! ([`opm_core::module::from_inputs`], what `opm mod build FILE -f VALUES --set …` runs).
//!
//! The input is split at NUL bytes: the first part is the module file; each later part is a
//! `--set` argument when it starts with `--set ` and a values file otherwise. An input without a
//! NUL is a module file alone, so any `module.yaml` is a seed as it is. `${env:NAME}` finds a
//! value for names of even length and none for the others, so both paths run.

#![no_main]

use libfuzzer_sys::fuzz_target;
use opm_core::module::{self, Input};

fuzz_target!(|data: &[u8]| {
    let mut parts = data.split(|byte| *byte == 0);
    let module_bytes = parts.next().unwrap_or_default();
    let mut values = Vec::new();
    let mut sets = Vec::new();
    for part in parts {
        match part.strip_prefix(b"--set ") {
            Some(arg) => sets.push(String::from_utf8_lossy(arg).into_owned()),
            None => values.push(part),
        }
    }
    let names: Vec<String> = (0..values.len())
        .map(|i| format!("values-{i}.yaml"))
        .collect();
    let values: Vec<Input<'_>> = values
        .iter()
        .zip(&names)
        .map(|(bytes, name)| Input { name, bytes })
        .collect();
    let env = |name: &str| (name.len() % 2 == 0).then(|| format!("value of {name}"));
    let module = Input {
        name: "module.yaml",
        bytes: module_bytes,
    };
    match module::from_inputs(module, &values, &sets, &env) {
        Ok(module) => {
            let _ = format!("{module:?}");
            let _ = module.sensitive_values();
        }
        Err(error) => {
            let _ = error.to_string();
        }
    }
});
