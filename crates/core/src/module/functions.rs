//! The functions opm adds to CEL for building values as charts do: `merge`, `keys`, `values`,
//! `toJson`, `toYaml`, `fromJson`, `fromYaml`, `lower`, `upper`, `b64enc`, `b64dec`, `sha256`
//! (docs/expressions.md lists them with an example each). Each is deterministic — a map's keys
//! in sorted order, JSON and YAML written with sorted keys — and each is measured by the cost
//! bound before an expression runs (`super::cost`); what one makes is checked against
//! [`MAX_MADE`] as it is made too.
//!
//! Every function may be called as `f(x)` or `x.f()`.

use std::sync::Arc;

use cel::extractors::This;
use cel::{ExecutionError, Value};
use serde_json::Value as Json;

/// The most bytes a function here makes (a JSON or YAML text, a merged map): the cost bound's
/// limit on any value on the way.
const MAX_MADE: usize = super::cost::MAX_BYTES as usize;

/// Adds every function here to `context`.
pub(super) fn add(context: &mut cel::Context<'_, '_>) {
    let add = |name: &str, result: Result<(), cel::DeclarationError>| {
        result.unwrap_or_else(|e| panic!("{name} is not one of CEL's own: {e:?}"));
    };
    add("merge", context.add_function("merge", merge));
    add("keys", context.add_function("keys", keys));
    add("values", context.add_function("values", values));
    add("toJson", context.add_function("toJson", to_json));
    add("toYaml", context.add_function("toYaml", to_yaml));
    add("fromJson", context.add_function("fromJson", from_json));
    add("fromYaml", context.add_function("fromYaml", from_yaml));
    add("lower", context.add_function("lower", lower));
    add("upper", context.add_function("upper", upper));
    add("b64enc", context.add_function("b64enc", b64enc));
    add("b64dec", context.add_function("b64dec", b64dec));
    add("sha256", context.add_function("sha256", sha256));
}

fn error(function: &str, message: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, message)
}

/// The JSON of a CEL value, for a function called `function`.
fn json(function: &str, value: &Value) -> Result<Json, ExecutionError> {
    super::expr::from_cel(value).map_err(|e| error(function, e))
}

fn text<'a>(function: &str, value: &'a Value) -> Result<&'a str, ExecutionError> {
    match value {
        Value::String(s) => Ok(s.as_str()),
        other => Err(error(
            function,
            format!("takes a string, not a {:?}", other.type_of()),
        )),
    }
}

fn made(function: &str, bytes: usize) -> Result<(), ExecutionError> {
    if bytes > MAX_MADE {
        return Err(error(
            function,
            format!("its value would be {bytes} bytes, over the limit of {MAX_MADE}"),
        ));
    }
    Ok(())
}

/// `merge(a, b)`: `b` over `a`, maps merged key by key all the way down; anything else in `b`
/// (a list, a scalar) replaces what `a` has, and `null` in `b` removes the key — as values
/// merge over a parameter's default.
fn merge(This(base): This<Value>, over: Value) -> Result<Value, ExecutionError> {
    let mut base = json("merge", &base)?;
    let over = json("merge", &over)?;
    if !base.is_object() || !over.is_object() {
        return Err(error("merge", "takes two maps"));
    }
    merge_json(&mut base, over);
    made("merge", crate::json::compact(&base).len())?;
    Ok(super::expr::to_cel(&base))
}

fn merge_json(base: &mut Json, over: Json) {
    match (base, over) {
        (Json::Object(base), Json::Object(over)) => {
            for (key, value) in over {
                match (base.get_mut(&key), value) {
                    (_, Json::Null) => {
                        base.remove(&key);
                    }
                    (Some(existing @ Json::Object(_)), value @ Json::Object(_)) => {
                        merge_json(existing, value);
                    }
                    (_, value) => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, over) => *base = over,
    }
}

/// `keys(m)`: the map's keys, sorted.
fn keys(This(map): This<Value>) -> Result<Value, ExecutionError> {
    let Json::Object(map) = json("keys", &map)? else {
        return Err(error("keys", "takes a map"));
    };
    Ok(Value::List(Arc::new(
        map.keys().map(|k| Value::from(k.as_str())).collect(),
    )))
}

/// `values(m)`: the map's values, in the order of its sorted keys.
fn values(This(map): This<Value>) -> Result<Value, ExecutionError> {
    let Json::Object(map) = json("values", &map)? else {
        return Err(error("values", "takes a map"));
    };
    Ok(Value::List(Arc::new(
        map.values().map(super::expr::to_cel).collect(),
    )))
}

/// `toJson(v)`: compact JSON, keys sorted.
fn to_json(This(value): This<Value>) -> Result<Value, ExecutionError> {
    let text = crate::json::compact(&json("toJson", &value)?);
    made("toJson", text.len())?;
    Ok(Value::from(text))
}

/// `toYaml(v)`: a YAML document, keys sorted, ending in a line break.
fn to_yaml(This(value): This<Value>) -> Result<Value, ExecutionError> {
    let value = json("toYaml", &value)?;
    made("toYaml", crate::yaml::bound(&value))?;
    let mut text = serde_saphyr::to_string(&value).map_err(|e| error("toYaml", e))?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(Value::from(text))
}

/// `fromJson(s)`: the value of a JSON text.
fn from_json(This(value): This<Value>) -> Result<Value, ExecutionError> {
    let parsed: Json =
        serde_json::from_str(text("fromJson", &value)?).map_err(|e| error("fromJson", e))?;
    Ok(super::expr::to_cel(&parsed))
}

/// `fromYaml(s)`: the value of a YAML document, read as a module file is.
fn from_yaml(This(value): This<Value>) -> Result<Value, ExecutionError> {
    let source: Arc<str> = Arc::from("fromYaml");
    let parsed =
        super::tree::parse(text("fromYaml", &value)?, &source).map_err(|e| error("fromYaml", e))?;
    Ok(super::expr::to_cel(&parsed.to_json()))
}

/// `lower(s)`: lower case, all of Unicode (`lowerAscii` changes only A–Z).
fn lower(This(value): This<Value>) -> Result<Value, ExecutionError> {
    Ok(Value::from(text("lower", &value)?.to_lowercase()))
}

/// `upper(s)`: upper case, all of Unicode.
fn upper(This(value): This<Value>) -> Result<Value, ExecutionError> {
    Ok(Value::from(text("upper", &value)?.to_uppercase()))
}

/// `b64enc(s)`: the string's UTF-8 bytes in standard base64, padded.
fn b64enc(This(value): This<Value>) -> Result<Value, ExecutionError> {
    use base64::Engine as _;
    Ok(Value::from(
        base64::engine::general_purpose::STANDARD.encode(text("b64enc", &value)?),
    ))
}

/// `b64dec(s)`: the text whose standard base64 `s` is; bytes that are not UTF-8 are an error.
fn b64dec(This(value): This<Value>) -> Result<Value, ExecutionError> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text("b64dec", &value)?.trim())
        .map_err(|e| error("b64dec", e))?;
    String::from_utf8(bytes)
        .map(Value::from)
        .map_err(|_| error("b64dec", "the decoded bytes are not UTF-8 text"))
}

/// `sha256(s)`: the SHA-256 of the string's UTF-8 bytes, in lower-case hex (Helm's
/// `sha256sum`).
fn sha256(This(value): This<Value>) -> Result<Value, ExecutionError> {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(text("sha256", &value)?.as_bytes());
    Ok(Value::from(
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>(),
    ))
}
