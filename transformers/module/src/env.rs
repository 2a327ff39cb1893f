//! A container's `env`: the order its variables are defined in, the `$(NAME)` references of a
//! value, and their expansion as the kubelet expands them ([`expand`]).
//!
//! A list is kept in the order written. A map (name → source) is defined in name order, except
//! that a variable whose value refers to others with `$(NAME)` comes after them: Kubernetes
//! expands a reference only to a variable defined earlier, so name order alone could leave
//! `$(DB_HOST)` unexpanded in `DATABASE_URL`; a provider that expands the references itself
//! does so in the same order, so the container gets the values the pod would have.
//!
//! ```
//! use opm_guest::json;
//! use opm_module_common::env::ordered;
//!
//! let env = json!({"URL": {"value": "http://$(HOST)"}, "HOST": {"value": "db"}});
//! let names: Vec<&str> = ordered(Some(&env), "container", "a reference expands only to a variable defined before it")
//!     .unwrap()
//!     .into_iter()
//!     .map(|(name, _)| name)
//!     .collect();
//! assert_eq!(names, ["HOST", "URL"]);
//! ```

use std::collections::BTreeSet;

use opm_guest::{TransformError, Value};

use crate::sorted_entries;

/// The variables of the `env` of the container `path` names (`container`,
/// `initContainers.migrate`) in the order they are defined, each with its source: a list as
/// written (each name once), a map in name order except that a variable comes after those its
/// literal value refers to ([`dependency_order`]). References that form a cycle are an error,
/// as no order expands them all; `rule` says, in the platform's words, why.
pub fn ordered<'a>(
    env: Option<&'a Value>,
    path: &str,
    rule: &str,
) -> Result<Vec<(&'a str, &'a Value)>, TransformError> {
    match env {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(entries)) => {
            let mut seen = BTreeSet::new();
            entries
                .iter()
                .map(|entry| {
                    let name = entry.get("name").and_then(Value::as_str).ok_or_else(|| {
                        TransformError::invalid(format!(
                            "every {path}.env entry of a list needs a name"
                        ))
                    })?;
                    if !seen.insert(name) {
                        return Err(TransformError::invalid(format!(
                            "{path}.env sets {name:?} twice"
                        )));
                    }
                    Ok((name, entry))
                })
                .collect()
        }
        Some(Value::Object(_)) => {
            let entries = sorted_entries(env);
            let order = dependency_order(&entries).map_err(|cycle| {
                TransformError::invalid(format!(
                    "{path}.env: {} refer to each other through $(NAME), and {rule}; break the \
                     cycle, or write env as a list, which keeps the order written",
                    cycle.join(", ")
                ))
            })?;
            Ok(order
                .into_iter()
                .map(|index| (entries[index].0.as_str(), entries[index].1))
                .collect())
        }
        Some(_) => Err(TransformError::invalid(format!(
            "{path}.env must be a map of name to value, or a list of {{name, ...}}"
        ))),
    }
}

/// The indices of `entries` (in name order) in an order where each variable follows the
/// variables of `entries` that its literal value refers to with `$(NAME)` (`$$(NAME)` is an
/// escape, not a reference); among variables free to go next, the first by name goes. When
/// references form a cycle, the names of the variables left unplaced, in name order.
pub fn dependency_order<'a>(entries: &[(&'a String, &Value)]) -> Result<Vec<usize>, Vec<&'a str>> {
    let index_of = |name: &str| entries.iter().position(|(key, _)| key.as_str() == name);
    let needs: Vec<Vec<usize>> = entries
        .iter()
        .enumerate()
        .map(|(index, (_, var))| {
            let text = var.get("value").and_then(Value::as_str).unwrap_or_default();
            let mut needed: Vec<usize> = references(text)
                .into_iter()
                .filter_map(index_of)
                .filter(|needed| *needed != index)
                .collect();
            needed.sort_unstable();
            needed.dedup();
            needed
        })
        .collect();
    let mut placed = vec![false; entries.len()];
    let mut order = Vec::with_capacity(entries.len());
    while order.len() < entries.len() {
        let next = (0..entries.len())
            .find(|&index| !placed[index] && needs[index].iter().all(|&needed| placed[needed]));
        let Some(next) = next else {
            return Err((0..entries.len())
                .filter(|&index| !placed[index])
                .map(|index| entries[index].0.as_str())
                .collect());
        };
        placed[next] = true;
        order.push(next);
    }
    Ok(order)
}

/// The names `text` refers to as `$(NAME)`, leaving out escaped `$$(NAME)`.
pub fn references(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        let after = &rest[at + 1..];
        if let Some(escaped) = after.strip_prefix('$') {
            rest = escaped;
        } else if let Some(open) = after.strip_prefix('(')
            && let Some(close) = open.find(')')
        {
            found.push(&open[..close]);
            rest = &open[close + 1..];
        } else {
            rest = after;
        }
    }
    found
}

/// `text` with every `$(NAME)` that `lookup` knows replaced by its value, `$$` reduced to `$`,
/// and everything else as written, as Kubernetes expands a container's variables, command and
/// arguments: a reference to a variable it does not know stays as written, and a value is
/// substituted as it is, not expanded again.
///
/// ```
/// use opm_module_common::env::expand;
/// let root = |name: &str| (name == "ROOT").then(|| "/media".to_owned());
/// assert_eq!(expand("$(ROOT)/library, $$(ROOT), $(OTHER), $$HOME", root),
///            "/media/library, $(ROOT), $(OTHER), $HOME");
/// ```
pub fn expand(text: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(escaped) = after.strip_prefix('$') {
            out.push('$');
            rest = escaped;
        } else if let Some(open) = after.strip_prefix('(')
            && let Some(close) = open.find(')')
        {
            let name = &open[..close];
            match lookup(name) {
                Some(value) => out.push_str(&value),
                None => {
                    out.push_str("$(");
                    out.push_str(name);
                    out.push(')');
                }
            }
            rest = &open[close + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use opm_guest::json;

    use super::*;

    const RULE: &str = "a reference expands only to a variable defined before it";

    fn names(env: &Value) -> Vec<&str> {
        ordered(Some(env), "container", RULE)
            .unwrap()
            .into_iter()
            .map(|(name, _)| name)
            .collect()
    }

    fn known(name: &str) -> Option<String> {
        match name {
            "A" => Some("1".into()),
            "B" => Some("$(A)".into()),
            _ => None,
        }
    }

    #[test]
    fn expansion_follows_kubernetes() {
        assert_eq!(expand("x$(A)y", known), "x1y");
        // A value is substituted as it is, not expanded again.
        assert_eq!(expand("$(B)", known), "$(A)");
        assert_eq!(expand("$$(A) $$ $x $( $(A", known), "$(A) $ $x $( $(A");
        assert_eq!(expand("$(UNKNOWN)-$", known), "$(UNKNOWN)-$");
        assert_eq!(expand("", known), "");
    }

    #[test]
    fn references_leave_out_escapes() {
        assert_eq!(references("$(A)$$(B)$(C) $(D"), ["A", "C"]);
        assert!(references("no reference, $ $( $$").is_empty());
    }

    #[test]
    fn env_maps_put_a_variable_after_those_it_refers_to() {
        let env = json!({
            "DATABASE_URL": {"value": "postgres://$(DB_USER)@$(DB_HOST)/app"},
            "DB_HOST": {"value": "db"},
            "DB_USER": {"secretKeyRef": {"name": "db", "key": "user"}},
            "ALPHA": {"value": "$$(DB_HOST) is escaped, $(UNKNOWN) is not ours"},
        });
        assert_eq!(names(&env), ["ALPHA", "DB_HOST", "DB_USER", "DATABASE_URL"]);
        let cycle = json!({"A": {"value": "$(B)"}, "B": {"value": "$(A)"}, "C": {"value": "$(C)"}});
        let error = ordered(Some(&cycle), "sidecarContainers.log", RULE)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(&format!(
                "sidecarContainers.log.env: A, B refer to each other through $(NAME), and {RULE}; \
                 break the cycle"
            )),
            "{error}"
        );
    }

    #[test]
    fn env_lists_keep_the_written_order_and_refuse_a_name_twice() {
        let env = json!([{"name": "Z", "value": 1}, {"name": "A", "value": "$(Z)"}]);
        assert_eq!(names(&env), ["Z", "A"]);
        let twice = json!([{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]);
        let error = ordered(Some(&twice), "container", RULE)
            .unwrap_err()
            .to_string();
        assert!(error.contains("container.env sets \"A\" twice"), "{error}");
        let nameless = json!([{"value": "1"}]);
        let error = ordered(Some(&nameless), "container", RULE)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("every container.env entry of a list needs a name"),
            "{error}"
        );
    }

    #[test]
    fn no_env_is_empty_and_anything_else_is_refused() {
        assert!(ordered(None, "container", RULE).unwrap().is_empty());
        assert!(
            ordered(Some(&Value::Null), "container", RULE)
                .unwrap()
                .is_empty()
        );
        let error = ordered(Some(&json!("A=1")), "container", RULE)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("container.env must be a map of name to value"),
            "{error}"
        );
    }
}
