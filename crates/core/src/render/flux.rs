//! Output that Flux applies as it was rendered (`--flux`). Flux's `postBuild.substitute`
//! rewrites every `${…}` in what a Kustomization applies, and every `$$` into `$` — a shell
//! script's `${HOME}` in a ConfigMap would become the empty string, or fail the apply in
//! Flux's strict substitution. Flux leaves an object alone when it carries [`SUBSTITUTE`]` = disabled`
//! among its labels or annotations, so [`mark`] puts that annotation on every object that holds
//! either sequence anywhere.
//!
//! Marking rather than escaping (`$${HOME}`): the marked output means the same to every other
//! reader — `kubectl apply`, Argo CD, a person — where escaped output would be wrong for all of
//! them, and an object that holds no `$` is written exactly as without `--flux`.
//!
//! ```
//! use opm_core::render::flux;
//! let mut json = r#"{"kind":"ConfigMap","metadata":{"name":"s"},"data":{"run.sh":"echo ${HOME}"}}"#.to_owned();
//! assert!(flux::mark(&mut json));
//! assert!(json.contains(r#""kustomize.toolkit.fluxcd.io/substitute":"disabled""#));
//! ```

use serde_json::Value;

/// The label or annotation that turns Flux's variable substitution off for one object.
pub const SUBSTITUTE: &str = "kustomize.toolkit.fluxcd.io/substitute";

/// Whether Flux's substitution would change `text`: it holds `${` (a variable) or `$$` (an
/// escaped `$`).
pub fn would_substitute(text: &str) -> bool {
    text.contains("${") || text.contains("$$")
}

/// Marks the resource `json` (compact JSON text of an object) with [`SUBSTITUTE`]` = disabled`
/// when Flux's substitution would change it; whether it did. An object that already says
/// `disabled` is left as it is.
pub fn mark(json: &mut String) -> bool {
    if !would_substitute(json) {
        return false;
    }
    let Ok(mut value) = serde_json::from_str::<Value>(json) else {
        return false;
    };
    let Some(metadata) = value
        .as_object_mut()
        .and_then(|object| object.get_mut("metadata"))
        .and_then(Value::as_object_mut)
    else {
        return false;
    };
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Some(annotations) = annotations.as_object_mut() else {
        return false;
    };
    if annotations.get(SUBSTITUTE).and_then(Value::as_str) == Some("disabled") {
        return false;
    }
    annotations.insert(SUBSTITUTE.to_owned(), Value::String("disabled".to_owned()));
    *json = crate::json::compact(&value);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_objects_flux_would_change_are_marked() {
        let mut plain =
            r#"{"kind":"ConfigMap","metadata":{"name":"a"},"data":{"x":"$HOME costs $5"}}"#
                .to_owned();
        let before = plain.clone();
        assert!(!mark(&mut plain));
        assert_eq!(plain, before);
        let mut dollars = r#"{"kind":"ConfigMap","metadata":{"name":"a","annotations":{"a":"b"}},"data":{"x":"echo $$"}}"#.to_owned();
        assert!(mark(&mut dollars));
        assert_eq!(
            dollars,
            r#"{"kind":"ConfigMap","metadata":{"name":"a","annotations":{"a":"b","kustomize.toolkit.fluxcd.io/substitute":"disabled"}},"data":{"x":"echo $$"}}"#
        );
        assert!(!mark(&mut dollars), "marked once");
    }
}
