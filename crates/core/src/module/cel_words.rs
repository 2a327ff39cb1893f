//! What went wrong in a CEL expression, in CEL's own terms: the interpreter's errors name Rust
//! values (`Unsupported binary operator 'add': String("GF_PATHS_"), Int(1)`); these say which
//! operator met which types, show values as CEL writes them, and name what a misspelt
//! reference or function was likely meant to be.
//!
//! ```
//! use opm_core::module::cel_words::type_name;
//! assert_eq!(type_name(&cel::Value::Int(1)), "int");
//! ```

use std::collections::BTreeMap;

use cel::ExecutionError;
use serde_json::Value as Json;

/// The functions an expression may call — CEL's standard ones, the strings, lists and math
/// extensions' and opm's own — as a misspelt name is compared against.
const FUNCTIONS: &[&str] = &[
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "string",
    "int",
    "uint",
    "double",
    "bool",
    "bytes",
    "type",
    "dyn",
    "has",
    "all",
    "exists",
    "exists_one",
    "map",
    "filter",
    "charAt",
    "indexOf",
    "lastIndexOf",
    "join",
    "lowerAscii",
    "upperAscii",
    "trim",
    "replace",
    "split",
    "substring",
    "format",
    "reverse",
    "strings.quote",
    "sort",
    "sortBy",
    "distinct",
    "flatten",
    "slice",
    "lists.range",
    "math.ceil",
    "math.floor",
    "math.round",
    "math.abs",
    "math.greatest",
    "math.least",
    // opm's own (`super::functions`).
    "merge",
    "keys",
    "values",
    "toJson",
    "toYaml",
    "fromJson",
    "fromYaml",
    "lower",
    "upper",
    "b64enc",
    "b64dec",
    "sha256",
];

/// The CEL type of `value`, as CEL names it.
pub fn type_name(value: &cel::Value) -> &'static str {
    match value {
        cel::Value::List(_) => "list",
        cel::Value::Map(_) => "map",
        cel::Value::Function(..) => "function",
        cel::Value::Int(_) => "int",
        cel::Value::UInt(_) => "uint",
        cel::Value::Float(_) => "double",
        cel::Value::String(_) => "string",
        cel::Value::Bytes(_) => "bytes",
        cel::Value::Bool(_) => "bool",
        cel::Value::Null => "null",
        _ => "value",
    }
}

/// `value`'s type with its article: `a string`, `an int`.
fn a(value: &cel::Value) -> String {
    article(type_name(value))
}

/// `value` as CEL writes it, cut short.
fn literal(value: &cel::Value) -> String {
    let text = match value {
        cel::Value::String(s) => format!("{:?}", s.as_str()),
        cel::Value::Int(i) => i.to_string(),
        cel::Value::UInt(u) => format!("{u}u"),
        cel::Value::Float(f) => f.to_string(),
        cel::Value::Bool(b) => b.to_string(),
        cel::Value::Null => "null".to_owned(),
        cel::Value::List(items) => format!("a list of {}", items.len()),
        cel::Value::Map(map) => format!("a map of {}", map.map.len()),
        other => type_name(other).to_owned(),
    };
    crate::printable::truncate(&text, 40)
}

/// The operator `name` stands for in the interpreter's errors.
fn operator(name: &str) -> &str {
    match name {
        "add" => "+",
        "sub" => "-",
        "mul" => "*",
        "div" => "/",
        "rem" => "%",
        other => other,
    }
}

/// Every key of `value` at any depth, for a did-you-mean.
fn keys<'a>(value: &'a Json, out: &mut Vec<&'a str>) {
    match value {
        Json::Object(map) => {
            for (key, item) in map {
                out.push(key);
                keys(item, out);
            }
        }
        Json::Array(items) => items.iter().for_each(|item| keys(item, out)),
        _ => {}
    }
}

/// What `error` means, in words; `variables` are what the expression sees, for suggestions.
pub(crate) fn words(error: &ExecutionError, variables: &BTreeMap<&'static str, Json>) -> String {
    match error {
        ExecutionError::UnsupportedBinaryOperator(op, left, right) => {
            let hint = match (*op, left, right) {
                ("add", cel::Value::String(_), _) | ("add", _, cel::Value::String(_)) => {
                    "; write string(…) around the other to make text of it"
                }
                ("add", cel::Value::Map(_), cel::Value::Map(_)) => {
                    "; maps do not add: build the map you want with {…}"
                }
                _ => "",
            };
            format!(
                "`{}` cannot take {} ({}) and {} ({}){hint}",
                operator(op),
                a(left),
                literal(left),
                a(right),
                literal(right)
            )
        }
        ExecutionError::ValuesNotComparable(left, right) => format!(
            "{} ({}) cannot be compared with {} ({})",
            a(left),
            literal(left),
            a(right),
            literal(right)
        ),
        ExecutionError::UndeclaredReference(name) => {
            let mut known: Vec<&str> = variables.keys().copied().collect();
            known.extend_from_slice(FUNCTIONS);
            format!(
                "{name:?} is not defined: expressions see {} and CEL's functions{}",
                variables.keys().copied().collect::<Vec<_>>().join(", "),
                crate::names::did_you_mean(&crate::names::suggest(name, known))
            )
        }
        ExecutionError::NoSuchKey(key) => {
            let mut known = Vec::new();
            for value in variables.values() {
                keys(value, &mut known);
            }
            known.sort_unstable();
            known.dedup();
            format!(
                "there is no key {key:?}{} (has(…) tests for an optional one)",
                crate::names::did_you_mean(&crate::names::suggest(key, known))
            )
        }
        ExecutionError::UnsupportedIndex(index, value) => format!(
            "{} cannot be indexed with {} ({})",
            a(value),
            a(index),
            literal(index)
        ),
        ExecutionError::DivisionByZero(value) => format!("{} divided by zero", literal(value)),
        ExecutionError::RemainderByZero(value) => {
            format!("the remainder of {} by zero", literal(value))
        }
        ExecutionError::UnsupportedKeyType(value) => format!(
            "{} ({}) cannot be a map's key: keys are strings, ints, uints or bools",
            a(value),
            literal(value)
        ),
        ExecutionError::NotSupportedAsMethod { method, target } => {
            format!("{} has no method {method}", a(target))
        }
        ExecutionError::UnsupportedTargetType { target } => {
            format!("this function does not take {}", a(target))
        }
        ExecutionError::NoSuchOverload(overload) => {
            let function = overload.function();
            // Operators are `_<_`, `_+_`, `!_`, `-_` to the interpreter.
            let shown = function.trim_matches('_');
            let shown = if shown.len() < function.len() {
                format!("`{shown}`")
            } else {
                function.to_owned()
            };
            let types = overload.argument_types();
            let close = if overload.is_member_function() || shown == function {
                crate::names::did_you_mean(&crate::names::suggest(
                    function,
                    FUNCTIONS.iter().copied(),
                ))
            } else {
                String::new()
            };
            match types {
                [one, two] if shown != function => {
                    format!("{shown} cannot take {} and {}", article(one), article(two))
                }
                _ => format!("{shown} does not take ({}){close}", types.join(", ")),
            }
        }
        other => other.to_string(),
    }
}

/// A type's name with its article.
fn article(name: &str) -> String {
    let article = if name.starts_with(['a', 'e', 'i', 'o']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {name}")
}
