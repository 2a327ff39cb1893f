//! Label selectors as a trait writes them (a NetworkPolicy peer, an autoscaling metric), in the
//! shape the API server accepts: `matchLabels` in key order, then `matchExpressions` in the order
//! written, each `{key, operator, values}`. An `In` or `NotIn` requirement needs values and an
//! `Exists` or `DoesNotExist` one may have none, as the API server wants; the trait schemas
//! refuse the same at `opm mod vet`.
//!
//! ```
//! use opm_guest::json;
//! use opm_k8s_common::selector::label_selector;
//! let written = json!({"matchExpressions": [{"values": ["a"], "operator": "In", "key": "tier"}],
//!                      "matchLabels": {"team": "b", "app": "c"}});
//! assert_eq!(
//!     label_selector(&written, "allowFrom[0].podSelector").unwrap(),
//!     json!({"matchLabels": {"app": "c", "team": "b"},
//!            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]})
//! );
//! ```

use opm_guest::{Map, TransformError, Value};

/// The operators of a label selector requirement.
pub const OPERATORS: &[&str] = &["In", "NotIn", "Exists", "DoesNotExist"];

/// `written` (a LabelSelector) in the API's field order, checked as the API server checks it.
/// `field` names it in errors. An empty selector stays empty: it selects everything.
pub fn label_selector(written: &Value, field: &str) -> Result<Value, TransformError> {
    let Some(written) = written.as_object() else {
        return Err(TransformError::invalid(format!("{field} must be a map")));
    };
    if let Some(unknown) = written
        .keys()
        .find(|key| !matches!(key.as_str(), "matchLabels" | "matchExpressions"))
    {
        return Err(TransformError::invalid(format!(
            "{field}.{unknown} is not a field of a label selector (matchLabels, matchExpressions)"
        )));
    }
    let mut selector = Map::new();
    if let Some(labels) = written.get("matchLabels") {
        let mut labels = labels
            .as_object()
            .cloned()
            .ok_or_else(|| TransformError::invalid(format!("{field}.matchLabels must be a map")))?;
        if let Some((key, _)) = labels.iter().find(|(_, value)| !value.is_string()) {
            return Err(TransformError::invalid(format!(
                "{field}.matchLabels.{key} must be a string"
            )));
        }
        labels.sort_keys();
        selector.insert("matchLabels".into(), Value::Object(labels));
    }
    if let Some(expressions) = written.get("matchExpressions") {
        let expressions = expressions.as_array().ok_or_else(|| {
            TransformError::invalid(format!("{field}.matchExpressions must be a list"))
        })?;
        let expressions = expressions
            .iter()
            .enumerate()
            .map(|(index, expression)| {
                requirement(expression, &format!("{field}.matchExpressions[{index}]"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        selector.insert("matchExpressions".into(), Value::Array(expressions));
    }
    Ok(Value::Object(selector))
}

/// One requirement of `matchExpressions`.
fn requirement(written: &Value, field: &str) -> Result<Value, TransformError> {
    let key = written
        .get("key")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if key.is_empty() {
        return Err(TransformError::invalid(format!("{field}.key is required")));
    }
    let operator = written
        .get("operator")
        .and_then(Value::as_str)
        .filter(|operator| OPERATORS.contains(operator))
        .ok_or_else(|| {
            TransformError::invalid(format!(
                "{field}.operator must be one of {}",
                OPERATORS.join(", ")
            ))
        })?;
    let values = written
        .get("values")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let wants_values = matches!(operator, "In" | "NotIn");
    if wants_values && values.is_empty() {
        return Err(TransformError::invalid(format!(
            "{field}.values must not be empty when the operator is {operator}"
        )));
    }
    if !wants_values && !values.is_empty() {
        return Err(TransformError::invalid(format!(
            "{field}.values must be empty when the operator is {operator}"
        )));
    }
    let mut out = Map::new();
    out.insert("key".into(), Value::from(key));
    out.insert("operator".into(), Value::from(operator));
    if wants_values {
        out.insert("values".into(), Value::Array(values.to_vec()));
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use opm_guest::json;

    #[test]
    fn an_empty_selector_selects_everything_and_stays_empty() {
        assert_eq!(label_selector(&json!({}), "s").unwrap(), json!({}));
    }

    #[test]
    fn exists_takes_no_values_and_in_needs_some() {
        let exists = json!({"matchExpressions": [{"key": "a", "operator": "Exists"}]});
        assert_eq!(label_selector(&exists, "s").unwrap(), exists);
        let err = label_selector(
            &json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
            "peer",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("peer.matchExpressions[0].values must not be empty"),
            "{err}"
        );
        let err = label_selector(
            &json!({"matchExpressions": [{"key": "a", "operator": "DoesNotExist", "values": ["x"]}]}),
            "peer",
        )
        .unwrap_err();
        assert!(err.to_string().contains("must be empty"), "{err}");
    }

    #[test]
    fn unknown_fields_and_operators_are_refused() {
        let err = label_selector(&json!({"matchLabel": {}}), "s").unwrap_err();
        assert!(
            err.to_string().contains("s.matchLabel is not a field"),
            "{err}"
        );
        let err = label_selector(
            &json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
            "s",
        )
        .unwrap_err();
        assert!(err.to_string().contains("operator must be one of"), "{err}");
    }
}
