//! References and expressions in the module document (`docs/expressions.md`): every string of
//! `module.yaml` may hold `${…}`.
//!
//! - `${env:NAME}` is the environment variable `NAME`, which must be set; what it supplies is
//!   sensitive (redacted everywhere but the rendered output).
//! - Anything else between `${` and `}` is an expression in the Common Expression Language
//!   (CEL, what Kubernetes uses for CRD rules) over `config` (the module's parameters),
//!   `module` (`name`, `version`, `namespace`) and `instance` (`name`, `prefix`, `namespace`):
//!   `${config.replicas}`, `${instance.prefix}settings`,
//!   `${ config.replicas > 1 ? "RollingUpdate" : "Recreate" }`.
//! - A string that is exactly one `${…}` takes the expression's value, type and all
//!   (`replicas: ${config.replicas}` is a number); elsewhere in a string the value is written
//!   as text (`"https://${config.host}/"`).
//! - `$${` is a literal `${`.
//!
//! Each string is read once, left to right: what an expression or a variable produces is never
//! read again, so a value cannot smuggle in an expression. Evaluation is bounded: an
//! expression is at most [`MAX_EXPRESSION`] bytes, nests brackets at most [`MAX_NESTING`]
//! deep and comprehensions (`map`, `filter`, `all`, `exists`) at most [`MAX_COMPREHENSIONS`]
//! deep; its steps and the sizes of its values are bounded before it runs
//! ([`super::cost`]), and a module's expressions together by [`MAX_CEL_TIME`]. Evaluation is
//! deterministic: maps come out with their keys sorted, and a comprehension over a map visits
//! its keys in order ([`IN_ORDER`]).
//!
//! A reference to a parameter (`config.a.b`, `config.items[0]`, `module.name`) is read
//! directly, without CEL; it is what most of a module's `${…}` are, and a large module has
//! thousands of them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value as Json;

use super::tree::{Entry, Node, Value};
use super::{ModuleError, Origin};

/// The module's section of named values that expressions read as `local.NAME`.
pub(crate) const LOCALS: &str = "locals";

/// The variable the locals are in.
const LOCAL: &str = "local";

/// The most locals a module may have. Each is resolved with those before it in scope, so their
/// work grows with their number: 20,000 literal locals (418 KB) took 15.8 s before this bound.
pub const MAX_LOCALS: usize = 256;

/// The longest expression, in bytes.
pub const MAX_EXPRESSION: usize = 2000;
/// The deepest nesting of brackets in an expression.
pub const MAX_NESTING: usize = 16;
/// The deepest syntax tree of an expression, in operations: CEL's interpreter recurses into
/// every level, 35–50 KiB of stack each, and 60 levels overflowed a thread of 2 MiB
/// (`1+1+…+1`, 239 bytes, aborted a render of 40 components). At this depth an expression needs
/// at most about 1.6 MiB, within a 2 MiB thread; render threads have [`THREAD_STACK`].
pub const MAX_DEPTH: usize = 32;

/// The stack of a thread that evaluates expressions: the render's threads (a thread's stack
/// is address space; only what is used is memory).
pub const THREAD_STACK: usize = 16 << 20;
/// The deepest nesting of comprehensions (`map`, `filter`, `all`, `exists`, `exists_one`).
pub const MAX_COMPREHENSIONS: usize = 2;

/// The most time the CEL expressions of one module may take together, on all threads: each is
/// bounded by [`super::cost`], and this bounds a module of very many.
pub const MAX_CEL_TIME: std::time::Duration = std::time::Duration::from_secs(10);

/// What expressions see.
pub(crate) struct Scope {
    variables: BTreeMap<&'static str, Json>,
    /// When the module's first scope was made: [`MAX_CEL_TIME`] counts from it.
    started: std::time::Instant,
    /// Compiled expressions by their text, and CEL's environment, made on first use.
    cel: Option<Cel>,
}

struct Cel {
    env: Arc<cel::Env>,
    variables: cel::Context<'static, 'static>,
    programs: HashMap<String, Result<cel::IdedExpr, String>>,
}

impl Scope {
    /// A scope with `config` (when the module has parameters), `module` and `instance`.
    pub(crate) fn new(parameters: Option<&Json>, module: Json, instance: Json) -> Self {
        let mut variables = BTreeMap::new();
        if let Some(parameters) = parameters {
            variables.insert("config", parameters.clone());
        }
        variables.insert("module", module);
        variables.insert("instance", instance);
        Self {
            variables,
            started: std::time::Instant::now(),
            cel: None,
        }
    }

    /// Adds `name` with `value` to `local`, the module's locals resolved so far, in the
    /// variables and, when it is made, in CEL's context, whose compiled programs are dropped:
    /// their cost was bounded against the locals as they were.
    fn add_local(&mut self, name: String, value: Json) {
        let locals = self
            .variables
            .entry(LOCAL)
            .or_insert_with(|| Json::Object(serde_json::Map::new()));
        if let Json::Object(map) = locals {
            map.insert(name, value);
        }
        if let Some(cel) = &mut self.cel {
            cel.variables.add_variable_from_value(LOCAL, to_cel(locals));
            cel.programs.clear();
        }
    }

    /// A scope with the variables of this one, and its start, for another thread: the
    /// compiled expressions stay with each scope.
    fn fork(&self) -> Self {
        Self {
            variables: self.variables.clone(),
            started: self.started,
            cel: None,
        }
    }

    /// The value of `expression`, or why it has none.
    fn evaluate(&mut self, expression: &str) -> Result<Json, String> {
        if let Some(path) = reference(expression) {
            return self.lookup(&path);
        }
        check_text(expression)?;
        if self.started.elapsed() > MAX_CEL_TIME {
            return Err(format!(
                "the module's expressions took over {} s together, the limit",
                MAX_CEL_TIME.as_secs()
            ));
        }
        let variables = &self.variables;
        let cel = self.cel.get_or_insert_with(|| Cel::new(variables));
        cel.evaluate(expression, variables)
    }

    /// The value at `path` (`config`, `a`, `0`…) of a variable.
    fn lookup(&self, path: &[Step]) -> Result<Json, String> {
        let Some(Step::Key(root)) = path.first() else {
            return Err("a reference starts with a name".to_owned());
        };
        let mut value = self
            .variables
            .get(root.as_str())
            .ok_or_else(|| self.undeclared(root))?;
        let mut walked = root.clone();
        for step in &path[1..] {
            let next = match (step, value) {
                (Step::Key(key), Json::Object(map)) => map.get(key),
                (Step::Index(index), Json::Array(items)) => items.get(*index),
                _ => None,
            };
            value = next.ok_or_else(|| match step {
                Step::Key(key) => format!("{walked} has no {key:?}"),
                Step::Index(index) => format!("{walked} has no item {index}"),
            })?;
            match step {
                Step::Key(key) => walked = format!("{walked}.{key}"),
                Step::Index(index) => walked = format!("{walked}[{index}]"),
            }
        }
        Ok(value.clone())
    }

    fn undeclared(&self, name: &str) -> String {
        let mut known: Vec<&str> = self.variables.keys().copied().collect();
        let last = known.pop().unwrap_or_default();
        let hint = if name == "config" {
            "; the module declares no config".to_owned()
        } else {
            format!(
                "; expressions see {} and {last} (write $${{ for a literal ${{)",
                known.join(", ")
            )
        };
        let close = crate::names::suggest(name, self.variables.keys().copied());
        format!(
            "{name:?} is not defined{}{hint}",
            crate::names::did_you_mean(&close)
        )
    }
}

impl Cel {
    /// CEL's standard environment and the extensions expressions may use: lowerAscii,
    /// upperAscii, split, join, replace, trim, substring, format and the like; sort, sortBy,
    /// distinct, flatten, reverse, slice, lists.range; math.
    fn env() -> cel::Env {
        let mut env = cel::Env::stdlib();
        let _ = env.add_extension(cel::extensions::strings);
        let _ = env.add_extension(cel::extensions::lists);
        let _ = env.add_extension(cel::extensions::math);
        env
    }

    fn new(variables: &BTreeMap<&'static str, Json>) -> Self {
        let env = Arc::new(Self::env());
        let mut context = cel::Context::with_env(Arc::clone(&env));
        super::functions::add(&mut context);
        // What every comprehension iterates (`in_order`): a map's keys in order, anything else
        // as it is.
        context
            .add_function(IN_ORDER, |range: cel::Value| match range {
                cel::Value::Map(map) => {
                    let mut keys: Vec<&cel::objects::Key> = map.map.keys().collect();
                    keys.sort();
                    cel::Value::List(Arc::new(keys.into_iter().map(cel::Value::from).collect()))
                }
                other => other,
            })
            .expect("the name is not one of CEL's");
        for (name, value) in variables {
            context.add_variable_from_value(*name, to_cel(value));
        }
        Self {
            env,
            variables: context,
            programs: HashMap::new(),
        }
    }

    fn evaluate(
        &mut self,
        expression: &str,
        variables: &BTreeMap<&'static str, Json>,
    ) -> Result<Json, String> {
        let env = &self.env;
        let program = self
            .programs
            .entry(expression.to_owned())
            .or_insert_with(|| {
                let program = compile(env, expression)?;
                let lookup = |name: &str| variables.get(name);
                let cost = super::cost::estimate(&program, &lookup);
                match cost.over_limit() {
                    Some(why) => Err(format!("refused before it runs: {why}")),
                    None => Ok(program),
                }
            })
            .as_ref()
            .map_err(Clone::clone)?;
        let value = cel::Value::resolve(program, &self.variables)
            .map_err(|e| super::cel_words::words(&e, variables))?;
        from_cel(&value)
    }
}

/// The limits an expression's text is held to before it is parsed: its length and how deep its
/// brackets nest.
fn check_text(expression: &str) -> Result<(), String> {
    if expression.len() > MAX_EXPRESSION {
        return Err(format!(
            "the expression is {} bytes long, over the limit of {MAX_EXPRESSION}",
            expression.len()
        ));
    }
    if nesting(expression) > MAX_NESTING {
        return Err(format!(
            "the expression nests brackets over {MAX_NESTING} deep"
        ));
    }
    Ok(())
}

fn compile(env: &cel::Env, expression: &str) -> Result<cel::IdedExpr, String> {
    let parsed = env
        .parser()
        .max_recursion_depth(32)
        .parse(expression)
        .map_err(|errors| {
            errors
                .errors
                .iter()
                .map(|e| format!("{} (at column {})", e.msg, e.pos.1 + 1))
                .collect::<Vec<_>>()
                .join("; ")
        })?;
    let depth = depths(&parsed);
    if depth.comprehensions > MAX_COMPREHENSIONS {
        return Err(format!(
            "the expression nests map, filter, all and exists over {MAX_COMPREHENSIONS} deep"
        ));
    }
    if depth.syntax > MAX_DEPTH {
        return Err(format!(
            "the expression is {} operations deep, over the limit of {MAX_DEPTH} (a long chain \
             of `+` or `&&` is one level per operand: build the parts in locals, or join a list)",
            depth.syntax
        ));
    }
    let mut parsed = parsed;
    in_order(&mut parsed);
    Ok(parsed)
}

/// The function every comprehension's range goes through ([`in_order`]).
const IN_ORDER: &str = "opmInOrder";

/// Makes every comprehension of `expr` that has one variable iterate a map's keys in order:
/// CEL's maps are hash maps, whose order changes from one run to the next, so
/// `config.env.map(k, …)` made a list in another order in every render. The range
/// becomes a call of [`IN_ORDER`], which gives a map's keys sorted and anything else as it is.
/// A comprehension with two variables (`m.all(k, v, …)`) is left as it is: over a list, the
/// first is the index.
fn in_order(expr: &mut cel::IdedExpr) {
    use cel::common::ast::{CallExpr, EntryExpr, Expr};
    match &mut expr.expr {
        Expr::Call(call) => {
            call.target.iter_mut().for_each(|t| in_order(t));
            call.args.iter_mut().for_each(in_order);
        }
        Expr::Comprehension(c) => {
            for part in [
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ] {
                in_order(part);
            }
            if c.iter_var2.is_none() {
                let range = std::mem::take(&mut c.iter_range);
                c.iter_range = cel::IdedExpr {
                    id: range.id,
                    expr: Expr::Call(CallExpr {
                        func_name: IN_ORDER.to_owned(),
                        target: None,
                        args: vec![range],
                    }),
                };
            }
        }
        Expr::List(list) => list.elements.iter_mut().for_each(in_order),
        Expr::Select(select) => in_order(&mut select.operand),
        Expr::Map(cel::common::ast::MapExpr { entries })
        | Expr::Struct(cel::common::ast::StructExpr { entries, .. }) => {
            for entry in entries {
                match &mut entry.expr {
                    EntryExpr::MapEntry(entry) => {
                        in_order(&mut entry.key);
                        in_order(&mut entry.value);
                    }
                    EntryExpr::StructField(field) => in_order(&mut field.value),
                }
            }
        }
        Expr::Unspecified | Expr::Ident(_) | Expr::Literal(_) => {}
    }
}

/// How deep `expr` is: in operations (every call, operator, selection, list or map is one
/// level over its deepest part) and in comprehensions.
fn depths(expr: &cel::IdedExpr) -> Depths {
    use cel::common::ast::{EntryExpr, Expr};
    let deepest = |exprs: &mut dyn Iterator<Item = &cel::IdedExpr>| {
        exprs.map(depths).fold(Depths::default(), |a, b| Depths {
            syntax: a.syntax.max(b.syntax),
            comprehensions: a.comprehensions.max(b.comprehensions),
        })
    };
    let below = match &expr.expr {
        Expr::Call(call) => deepest(&mut call.target.iter().map(|t| &**t).chain(&call.args)),
        Expr::Comprehension(c) => {
            let parts = deepest(
                &mut [
                    &c.iter_range,
                    &c.accu_init,
                    &c.loop_cond,
                    &c.loop_step,
                    &c.result,
                ]
                .into_iter(),
            );
            Depths {
                comprehensions: parts.comprehensions + 1,
                ..parts
            }
        }
        Expr::List(list) => deepest(&mut list.elements.iter()),
        Expr::Select(select) => depths(&select.operand),
        Expr::Map(cel::common::ast::MapExpr { entries })
        | Expr::Struct(cel::common::ast::StructExpr { entries, .. }) => {
            deepest(&mut entries.iter().flat_map(|e| match &e.expr {
                EntryExpr::MapEntry(entry) => vec![&entry.key, &entry.value],
                EntryExpr::StructField(field) => vec![&field.value],
            }))
        }
        Expr::Unspecified | Expr::Ident(_) | Expr::Literal(_) => Depths::default(),
    };
    Depths {
        syntax: below.syntax + 1,
        ..below
    }
}

/// What [`depths`] measures.
#[derive(Debug, Clone, Copy, Default)]
struct Depths {
    syntax: usize,
    comprehensions: usize,
}

/// The deepest nesting of `(`, `[` and `{` in `expression`, outside string literals.
fn nesting(expression: &str) -> usize {
    let mut deepest = 0;
    brackets(expression, |_, bracket, depth| {
        if matches!(bracket, '(' | '[' | '{') {
            deepest = deepest.max(depth + 1);
        }
        false
    });
    deepest
}

/// Walks `text` outside its string literals, calling `visit` with each bracket's byte index,
/// the bracket, and how deep the brackets before it nest; stops when `visit` returns true.
fn brackets(text: &str, mut visit: impl FnMut(usize, char, usize) -> bool) {
    let (mut depth, mut quote) = (0usize, None);
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match (quote, c) {
            (Some(_), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '(' | '[' | '{' | ')' | ']' | '}') => {
                if visit(at, c, depth) {
                    return;
                }
                depth = if matches!(c, '(' | '[' | '{') {
                    depth + 1
                } else {
                    depth.saturating_sub(1)
                };
            }
            _ => {}
        }
    }
}

/// One step of a reference.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// `expression` as a plain reference (`config.a.b`, `config.items[0]`), when it is one.
fn reference(expression: &str) -> Option<Vec<Step>> {
    let text = expression.trim();
    let mut steps = Vec::new();
    for part in text.split('.') {
        let (name, mut rest) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        if !is_identifier(name) || is_reserved(name) {
            return None;
        }
        steps.push(Step::Key(name.to_owned()));
        while !rest.is_empty() {
            let close = rest.find(']')?;
            let index: usize = rest[1..close].parse().ok()?;
            steps.push(Step::Index(index));
            rest = &rest[close + 1..];
            if !rest.is_empty() && !rest.starts_with('[') {
                return None;
            }
        }
    }
    Some(steps)
}

/// Whether `name` is an ASCII letter or `_` followed by letters, digits and `_`: a CEL
/// identifier, and an environment variable's name.
fn is_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// CEL's literals and reserved words, which are not references.
fn is_reserved(name: &str) -> bool {
    matches!(
        name,
        "true"
            | "false"
            | "null"
            | "in"
            | "as"
            | "break"
            | "const"
            | "continue"
            | "else"
            | "for"
            | "function"
            | "if"
            | "import"
            | "let"
            | "loop"
            | "package"
            | "namespace"
            | "return"
            | "var"
            | "void"
            | "while"
    )
}

/// A JSON value as a CEL value: whole numbers are `int` (as Kubernetes reads them), or `uint`
/// past `int`'s range.
pub(super) fn to_cel(value: &Json) -> cel::Value {
    match value {
        Json::Null => cel::Value::Null,
        Json::Bool(b) => cel::Value::Bool(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => cel::Value::Int(i),
            (None, Some(u)) => cel::Value::UInt(u),
            _ => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => cel::Value::String(Arc::new(s.clone())),
        Json::Array(items) => cel::Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Json::Object(map) => cel::Value::Map(cel::objects::Map::from(
            map.iter()
                .map(|(k, v)| (k.clone(), to_cel(v)))
                .collect::<HashMap<String, cel::Value>>(),
        )),
    }
}

/// A CEL value as JSON, map keys sorted; what JSON cannot hold is an error.
pub(super) fn from_cel(value: &cel::Value) -> Result<Json, String> {
    Ok(match value {
        cel::Value::Null => Json::Null,
        cel::Value::Bool(b) => Json::Bool(*b),
        cel::Value::Int(i) => Json::from(*i),
        cel::Value::UInt(u) => Json::from(*u),
        cel::Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(Json::Number)
            .ok_or_else(|| format!("the expression's value {f} is not a JSON number"))?,
        cel::Value::String(s) => Json::String(s.to_string()),
        cel::Value::List(items) => {
            Json::Array(items.iter().map(from_cel).collect::<Result<_, _>>()?)
        }
        cel::Value::Map(map) => {
            let mut entries = BTreeMap::new();
            for (key, value) in map.map.iter() {
                let key = match key {
                    cel::objects::Key::String(s) => s.to_string(),
                    cel::objects::Key::Int(i) => i.to_string(),
                    cel::objects::Key::Uint(u) => u.to_string(),
                    cel::objects::Key::Bool(b) => b.to_string(),
                };
                entries.insert(key, from_cel(value)?);
            }
            Json::Object(entries.into_iter().collect())
        }
        other => {
            return Err(format!(
                "the expression's value is a {:?}, which a module cannot hold",
                other.type_of()
            ));
        }
    })
}

/// One piece of a string with `${…}` in it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Env(&'a str),
    Expression(&'a str),
}

/// Splits `text` into literal text, `${env:…}` and `${…}`. The end of a `${` is the first `}`
/// outside brackets and string literals, so an expression may hold maps and `}` in strings.
fn pieces(text: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        if rest[..at].ends_with('$') {
            pieces.push(Piece::Text(&rest[..at - 1]));
            pieces.push(Piece::Text("${"));
            rest = &rest[at + 2..];
            continue;
        }
        if at > 0 {
            pieces.push(Piece::Text(&rest[..at]));
        }
        let body = &rest[at + 2..];
        let end = closing_brace(body).ok_or_else(|| {
            format!(
                "`${{` at byte {} is not closed by a `}}` (write $${{ for a literal ${{)",
                text.len() - rest.len() + at
            )
        })?;
        let inner = &body[..end];
        match inner.strip_prefix("env:") {
            Some(name) => pieces.push(Piece::Env(name)),
            None => {
                if inner.trim().is_empty() {
                    return Err("`${}` is empty".to_owned());
                }
                pieces.push(Piece::Expression(inner));
            }
        }
        rest = &body[end + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest));
    }
    Ok(pieces)
}

/// The index of the `}` that closes an expression starting at `body[0]`.
fn closing_brace(body: &str) -> Option<usize> {
    let mut found = None;
    brackets(body, |at, bracket, depth| {
        if bracket == '}' && depth == 0 {
            found = Some(at);
        }
        found.is_some()
    });
    found
}

/// Resolves every `${…}` in the strings of `node` (and its map keys' values), in place. A map
/// entry or list item whose whole value is one `${…}` that is `null` is left out.
pub(crate) fn resolve(
    node: &mut Node,
    scope: &mut Scope,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    sensitive: &mut BTreeSet<String>,
) -> Result<(), ModuleError> {
    resolve_at(node, &Path::Root, scope, env, sensitive, &mut Vec::new()).map(|_| ())
}

/// Resolves the module's `locals` (a map of names to values, each of which may hold `${…}`) in
/// the order written, each seeing those before it as `local.NAME`, and puts them in `scope`: a
/// value computed once and used by many expressions, as a chart's `define` or a `let`.
pub(crate) fn resolve_locals(
    mut locals: Entry,
    scope: &mut Scope,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    sensitive: &mut BTreeSet<String>,
) -> Result<(), ModuleError> {
    let Value::Map(entries) = &mut locals.value.value else {
        return Err(ModuleError::invalid(
            locals.value.origin.clone(),
            format!(
                "{LOCALS} is a map of names to values, not {}",
                locals.value.describe()
            ),
        ));
    };
    if entries.len() > MAX_LOCALS {
        return Err(ModuleError::invalid(
            locals.value.origin.clone(),
            format!(
                "{LOCALS} has {} names, over the limit of {MAX_LOCALS}: a local may be a map of \
                 values",
                entries.len()
            ),
        ));
    }
    // `local` is there, empty, for the first local's expressions.
    scope
        .variables
        .insert(LOCAL, Json::Object(serde_json::Map::new()));
    scope.cel = None;
    for entry in entries {
        if !is_identifier(&entry.key) || is_reserved(&entry.key) {
            return Err(ModuleError::invalid(
                entry.key_origin.clone(),
                format!(
                    "{LOCALS}: {:?} is not a name an expression can read as {LOCAL}.NAME (letters, \
                     digits and _, not starting with a digit, not a CEL keyword)",
                    entry.key
                ),
            ));
        }
        let mut value =
            std::mem::replace(&mut entry.value, Node::new(Value::Null, Origin::whole("")));
        resolve(&mut value, scope, env, sensitive)?;
        scope.add_local(entry.key.clone(), value.to_json());
    }
    Ok(())
}

/// Checks every `${…}` of `root` — in a part a condition will leave out as much as in one it
/// keeps — before any is evaluated: its syntax and limits, and that every parameter it reads
/// (`config.a.b`) is one the config schema declares, with the name it is likely a typo of. A
/// typo in a branch not taken would otherwise pass `mod vet` until the day it is taken.
pub(crate) fn check_all(
    root: &Node,
    config: Option<&super::config::Config>,
) -> Result<(), ModuleError> {
    let mut env = None;
    check_node(root, config, &mut env)
}

fn check_node(
    node: &Node,
    config: Option<&super::config::Config>,
    env: &mut Option<cel::Env>,
) -> Result<(), ModuleError> {
    match &node.value {
        Value::String(text) if text.contains("${") => {
            let fail = |message: String| ModuleError::invalid(node.origin.clone(), message);
            for piece in pieces(text).map_err(fail)? {
                let Piece::Expression(expression) = piece else {
                    continue;
                };
                let within =
                    |message: String| fail(format!("in ${{{}}}: {message}", expression.trim()));
                if let Some(path) = reference(expression) {
                    if let (Some(config), Some(Step::Key(root))) = (config, path.first())
                        && root == "config"
                    {
                        let steps: Vec<Option<&str>> = path[1..]
                            .iter()
                            .map(|step| match step {
                                Step::Key(key) => Some(key.as_str()),
                                Step::Index(_) => None,
                            })
                            .collect();
                        config.check_reference(&steps).map_err(within)?;
                    }
                    continue;
                }
                check_text(expression).map_err(within)?;
                let env = env.get_or_insert_with(Cel::env);
                let program = compile(env, expression).map_err(within)?;
                if let Some(config) = config {
                    let mut problem = None;
                    parameters_read(&program, &mut Vec::new(), &mut |path| {
                        if problem.is_none() {
                            problem = config.check_reference(path).err();
                        }
                    });
                    if let Some(problem) = problem {
                        return Err(within(problem));
                    }
                }
            }
        }
        Value::List(items) => {
            for item in items {
                check_node(item, config, env)?;
            }
        }
        Value::Map(entries) => {
            for entry in entries {
                check_node(&entry.value, config, env)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Calls `found` with the path of every parameter `expr` reads by name (`config.a.b`, as keys
/// after `config`), where no comprehension variable named `config` hides it.
fn parameters_read(
    expr: &cel::IdedExpr,
    shadowing: &mut Vec<String>,
    found: &mut dyn FnMut(&[Option<&str>]),
) {
    use cel::common::ast::{EntryExpr, Expr};
    // A chain of selections down to `config`: the keys, outermost last.
    fn chain<'a>(expr: &'a cel::IdedExpr, keys: &mut Vec<Option<&'a str>>) -> bool {
        match &expr.expr {
            Expr::Ident(name) => name == "config",
            Expr::Select(select) => {
                let rooted = chain(&select.operand, keys);
                keys.push(Some(select.field.as_str()));
                rooted
            }
            _ => false,
        }
    }
    if let Expr::Select(_) = &expr.expr
        && !shadowing.iter().any(|name| name == "config")
    {
        let mut keys = Vec::new();
        if chain(expr, &mut keys) {
            found(&keys);
            return;
        }
    }
    match &expr.expr {
        Expr::Call(call) => {
            for part in call.target.iter().map(|t| &**t).chain(&call.args) {
                parameters_read(part, shadowing, found);
            }
        }
        Expr::Comprehension(c) => {
            parameters_read(&c.iter_range, shadowing, found);
            parameters_read(&c.accu_init, shadowing, found);
            shadowing.push(c.iter_var.clone());
            shadowing.extend(c.iter_var2.clone());
            shadowing.push(c.accu_var.clone());
            for part in [&c.loop_cond, &c.loop_step, &c.result] {
                parameters_read(part, shadowing, found);
            }
            shadowing.truncate(shadowing.len() - 2 - usize::from(c.iter_var2.is_some()));
        }
        Expr::List(list) => {
            for item in &list.elements {
                parameters_read(item, shadowing, found);
            }
        }
        Expr::Select(select) => parameters_read(&select.operand, shadowing, found),
        Expr::Map(cel::common::ast::MapExpr { entries })
        | Expr::Struct(cel::common::ast::StructExpr { entries, .. }) => {
            for entry in entries {
                match &entry.expr {
                    EntryExpr::MapEntry(entry) => {
                        parameters_read(&entry.key, shadowing, found);
                        parameters_read(&entry.value, shadowing, found);
                    }
                    EntryExpr::StructField(field) => {
                        parameters_read(&field.value, shadowing, found)
                    }
                }
            }
        }
        Expr::Unspecified | Expr::Ident(_) | Expr::Literal(_) => {}
    }
}

/// Where a node is below the one a walk started at, made only when it is asked for.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    /// The JSON pointer (`/env/1/value`).
    fn pointer(&self) -> String {
        match self {
            Path::Root => String::new(),
            Path::Key(parent, key) => {
                format!(
                    "{}/{}",
                    parent.pointer(),
                    key.replace('~', "~0").replace('/', "~1")
                )
            }
            Path::Index(parent, index) => format!("{}/{index}", parent.pointer()),
        }
    }
}

/// A part a `${…}` whose value is `null` left out: where (a JSON pointer from where the walk
/// started), the expression as written, and its place in the file.
type Absent = (String, String, Origin);

/// [`resolve`] of `node` at `path`: whether `node` itself is to be left out (its whole value is
/// one `${…}` that is `null`), what was left out below it added to `absent`.
fn resolve_at(
    node: &mut Node,
    path: &Path<'_>,
    scope: &mut Scope,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    sensitive: &mut BTreeSet<String>,
    absent: &mut Vec<Absent>,
) -> Result<bool, ModuleError> {
    match &mut node.value {
        Value::String(text) if text.contains("${") => {
            let resolved = resolve_string(text, &node.origin, scope, env, sensitive)?;
            // Only a string that is one expression resolves to anything but a string.
            if matches!(resolved.value, Value::Null) {
                absent.push((path.pointer(), text.clone(), node.origin.clone()));
                return Ok(true);
            }
            *node = resolved;
        }
        Value::List(items) => {
            let mut left_out = Vec::new();
            for (index, item) in items.iter_mut().enumerate() {
                if resolve_at(
                    item,
                    &Path::Index(path, index),
                    scope,
                    env,
                    sensitive,
                    absent,
                )? {
                    left_out.push(index);
                }
            }
            remove_at(items, &left_out);
        }
        Value::Map(entries) => {
            let mut left_out = Vec::new();
            for (index, entry) in entries.iter_mut().enumerate() {
                let Entry { key, value, .. } = entry;
                if resolve_at(value, &Path::Key(path, key), scope, env, sensitive, absent)? {
                    left_out.push(index);
                }
            }
            remove_at(entries, &left_out);
        }
        _ => {}
    }
    Ok(false)
}

/// [`resolve`] of one component: what it takes from the environment, and what a `null` left
/// out of it, each attachment's parts named by the attachment and a pointer inside it.
fn resolve_component(
    component: &mut Entry,
    scope: &mut Scope,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<(BTreeSet<String>, Vec<Excluded>), ModuleError> {
    let mut found = BTreeSet::new();
    let mut excluded = Vec::new();
    let Entry {
        key: name, value, ..
    } = component;
    let Value::Map(sections) = &mut value.value else {
        resolve(value, scope, env, &mut found)?;
        return Ok((found, excluded));
    };
    let mut record = |definition: Option<&str>, absent: Vec<Absent>| {
        excluded.extend(
            absent
                .into_iter()
                .map(|(pointer, condition, origin)| Excluded {
                    component: name.clone(),
                    definition: definition.map(str::to_owned),
                    path: (!pointer.is_empty()).then_some(pointer),
                    condition,
                    reason: Reason::Null,
                    origin,
                }),
        );
    };
    let mut left_out = Vec::new();
    for (index, section) in sections.iter_mut().enumerate() {
        let Entry { key, value, .. } = section;
        match &mut value.value {
            Value::Map(attachments)
                if matches!(key.as_str(), "resources" | "traits" | "policies") =>
            {
                let mut gone = Vec::new();
                for (position, attachment) in attachments.iter_mut().enumerate() {
                    let mut absent = Vec::new();
                    let root = &Path::Root;
                    if resolve_at(
                        &mut attachment.value,
                        root,
                        scope,
                        env,
                        &mut found,
                        &mut absent,
                    )? {
                        gone.push(position);
                    }
                    record(Some(&attachment.key), absent);
                }
                remove_at(attachments, &gone);
            }
            _ => {
                let mut absent = Vec::new();
                let at = &Path::Key(&Path::Root, key);
                if resolve_at(value, at, scope, env, &mut found, &mut absent)? {
                    left_out.push(index);
                }
                record(None, absent);
            }
        }
    }
    remove_at(sections, &left_out);
    Ok((found, excluded))
}

/// [`resolve`] over the module document `root`: a large module's components in parallel on
/// `pool` (see `per_component`), what they take from the environment added to `sensitive`;
/// what a `null` left out of the components.
pub(crate) fn resolve_module(
    root: &mut Node,
    scope: &mut Scope,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    sensitive: &mut BTreeSet<String>,
    pool: Option<&rayon::ThreadPool>,
) -> Result<Vec<Excluded>, ModuleError> {
    let mut excluded = Vec::new();
    let Value::Map(entries) = &mut root.value else {
        resolve(root, scope, env, sensitive)?;
        return Ok(excluded);
    };
    for entry in entries {
        match &mut entry.value.value {
            Value::Map(components) if entry.key == "components" => {
                let resolved = per_component(
                    components.iter_mut().collect(),
                    scope,
                    pool,
                    |component: &mut Entry, scope| resolve_component(component, scope, env),
                );
                for outcome in resolved {
                    let (found, absent) = outcome?;
                    sensitive.extend(found);
                    excluded.extend(absent);
                }
            }
            _ => resolve(&mut entry.value, scope, env, sensitive)?,
        }
    }
    Ok(excluded)
}

fn resolve_string(
    text: &str,
    origin: &Origin,
    scope: &mut Scope,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    sensitive: &mut BTreeSet<String>,
) -> Result<Node, ModuleError> {
    let fail = |message: String| ModuleError::invalid(origin.clone(), message);
    let pieces = pieces(text).map_err(fail)?;
    let evaluate = |scope: &mut Scope, expression: &str| {
        scope
            .evaluate(expression)
            .map_err(|message| fail(format!("in ${{{}}}: {message}", expression.trim())))
    };
    if let [Piece::Expression(expression)] = pieces.as_slice() {
        let value = evaluate(scope, expression)?;
        return Ok(from_json(value, origin));
    }
    let mut out = String::new();
    let mut used_env = false;
    for piece in &pieces {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Env(name) => {
                let value = env_value(name, origin, env)?;
                if !value.is_empty() {
                    sensitive.insert(value.clone());
                }
                out.push_str(&value);
                used_env = true;
            }
            Piece::Expression(expression) => match evaluate(scope, expression)? {
                Json::String(s) => out.push_str(&s),
                Json::Null => {}
                value @ (Json::Number(_) | Json::Bool(_)) => out.push_str(&value.to_string()),
                other => {
                    return Err(fail(format!(
                        "in ${{{}}}: the value is a {}, which cannot be written inside a string",
                        expression.trim(),
                        if other.is_array() { "list" } else { "map" }
                    )));
                }
            },
        }
    }
    if used_env && !out.is_empty() {
        sensitive.insert(out.clone());
    }
    Ok(Node::new(Value::String(out), origin.clone()))
}

pub(crate) fn env_value(
    name: &str,
    origin: &Origin,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ModuleError> {
    if !is_identifier(name) {
        return Err(ModuleError::invalid(
            origin.clone(),
            format!("${{env:{name}}}: {name:?} is not an environment variable name"),
        ));
    }
    env(name).ok_or_else(|| ModuleError::Env {
        origin: origin.clone(),
        name: name.to_owned(),
    })
}

/// A JSON value as a node of the document, every part at `origin`.
fn from_json(value: Json, origin: &Origin) -> Node {
    let value = match value {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(b),
        Json::Number(n) => Value::Number(n),
        Json::String(s) => Value::String(s),
        Json::Array(items) => {
            Value::List(items.into_iter().map(|i| from_json(i, origin)).collect())
        }
        Json::Object(map) => Value::Map(
            map.into_iter()
                .map(|(key, value)| Entry {
                    key,
                    key_origin: origin.clone(),
                    value: from_json(value, origin),
                })
                .collect(),
        ),
    };
    Node::new(value, origin.clone())
}

/// A component, an attachment or a part of one that a condition or a `null` left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excluded {
    /// The component.
    pub component: String,
    /// The attachment's name as written, or `None` when the whole component is left out.
    pub definition: Option<String>,
    /// Where in the attachment (a JSON pointer, `/startupProbe`, `/env/2`) when only a part of
    /// it is left out.
    pub path: Option<String>,
    /// The condition or the expression as written (`${config.ingress.enabled}`).
    pub condition: String,
    /// Why it is left out.
    pub reason: Reason,
    /// Where the condition is written.
    pub origin: Origin,
}

/// Why a part of a module is left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Its condition (`when`, `$when`) is false.
    False,
    /// It is one `${…}` whose value is `null`.
    Null,
}

/// Evaluates the conditions of `root`'s components: a component's `when` and an attachment's
/// `$when` (with its value in `$value` when it is not a map). What a false condition names is
/// removed before anything else in it is evaluated, so a left-out part may use parameters that
/// are not set; the conditions themselves are removed from what stays.
pub(crate) fn apply_conditions(
    root: &mut Node,
    scope: &mut Scope,
    pool: Option<&rayon::ThreadPool>,
) -> Result<Vec<Excluded>, ModuleError> {
    let mut excluded = Vec::new();
    let Some(components) = child_mut(root, "components") else {
        return Ok(excluded);
    };
    let Value::Map(components) = &mut components.value else {
        return Ok(excluded);
    };
    // In place: the entries stay where the parse put them, and only what a condition leaves
    // out is removed afterwards. Moving every component out and back, and every section into a
    // new list, made this step at 10,000 components 9.8 ms at -j 1 and 9.6 ms at -j 2 (now 6.8
    // and 5.0): a list freed on the other thread than the one that made it costs more.
    let conditioned = per_component(components.iter_mut().collect(), scope, pool, condition);
    let mut left_out = Vec::new();
    for (index, outcome) in conditioned.into_iter().enumerate() {
        let (keep, parts) = outcome?;
        excluded.extend(parts);
        if !keep {
            left_out.push(index);
        }
    }
    remove_at(components, &left_out);
    Ok(excluded)
}

/// Removes the items at `positions` (ascending) from `items`; the others keep their order.
fn remove_at<T>(items: &mut Vec<T>, positions: &[usize]) {
    if positions.is_empty() {
        return;
    }
    let mut positions = positions.iter().peekable();
    let mut index = 0;
    items.retain(|_| {
        let remove = positions.next_if_eq(&&index).is_some();
        index += 1;
        !remove
    });
}

/// Evaluates the conditions of `component` in place: whether it stays (its `when` is not
/// false), and what was left out of it, which is removed from it unless the whole component is.
fn condition(
    component: &mut Entry,
    scope: &mut Scope,
) -> Result<(bool, Vec<Excluded>), ModuleError> {
    let mut excluded = Vec::new();
    if let Some(((text, false), origin)) = take_condition(&mut component.value, "when", scope)? {
        excluded.push(Excluded {
            component: component.key.clone(),
            definition: None,
            path: None,
            condition: text,
            reason: Reason::False,
            origin,
        });
        return Ok((false, excluded));
    }
    for section in ["resources", "traits", "policies"] {
        let Some(Node {
            value: Value::Map(attachments),
            ..
        }) = child_mut(&mut component.value, section)
        else {
            continue;
        };
        let mut left_out = Vec::new();
        for (index, attachment) in attachments.iter_mut().enumerate() {
            let condition = take_condition(&mut attachment.value, "$when", scope)?;
            unwrap_value(&mut attachment.value)?;
            if let Some(((text, false), origin)) = condition {
                excluded.push(Excluded {
                    component: component.key.clone(),
                    definition: Some(attachment.key.clone()),
                    path: None,
                    condition: text,
                    reason: Reason::False,
                    origin,
                });
                left_out.push(index);
                continue;
            }
            let mut parts = Vec::new();
            nested_conditions(&mut attachment.value, &Path::Root, scope, &mut parts)?;
            excluded.extend(parts.into_iter().map(|(pointer, text, origin)| Excluded {
                component: component.key.clone(),
                definition: Some(attachment.key.clone()),
                path: Some(pointer),
                condition: text,
                reason: Reason::False,
                origin,
            }));
        }
        remove_at(attachments, &left_out);
    }
    Ok((true, excluded))
}

/// The `$when` of every map entry and list item below an attachment (`{$when: …, …}`, or
/// `{$when: …, $value: V}` for a value that is not a map): a false one leaves its entry or item
/// out before anything in it is evaluated, a true one is removed from what stays. What was left
/// out is added to `out`, at its JSON pointer from `path`.
fn nested_conditions(
    node: &mut Node,
    path: &Path<'_>,
    scope: &mut Scope,
    out: &mut Vec<(String, String, Origin)>,
) -> Result<(), ModuleError> {
    let mut left_out = Vec::new();
    let mut visit = |value: &mut Node, at: &Path<'_>, scope: &mut Scope| {
        if let Some(((text, keep), origin)) = take_condition(value, "$when", scope)? {
            if !keep {
                out.push((at.pointer(), text, origin));
                return Ok(false);
            }
            unwrap_value(value)?;
        }
        nested_conditions(value, at, scope, out)?;
        Ok::<_, ModuleError>(true)
    };
    match &mut node.value {
        Value::Map(entries) => {
            for (index, entry) in entries.iter_mut().enumerate() {
                let Entry { key, value, .. } = entry;
                if !visit(value, &Path::Key(path, key), scope)? {
                    left_out.push(index);
                }
            }
            remove_at(entries, &left_out);
        }
        Value::List(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                if !visit(item, &Path::Index(path, index), scope)? {
                    left_out.push(index);
                }
            }
            remove_at(items, &left_out);
        }
        _ => {}
    }
    Ok(())
}

/// `work` done on each of `items` in order, with `scope`: a large module's components in
/// parallel on `pool`, each of the pool's jobs (runs of at least 64) with a scope of its own
/// with the same variables. Every item is worked on, so the first error in the results is the
/// first in the document, as when they are done one by one. (Conditions and expressions over
/// 10,000 components took about 18 ms of a render on one thread while the others waited.)
fn per_component<T: Send, R: Send>(
    items: Vec<T>,
    scope: &mut Scope,
    pool: Option<&rayon::ThreadPool>,
    work: impl Fn(T, &mut Scope) -> R + Sync + Send,
) -> Vec<R> {
    use rayon::prelude::*;
    match pool {
        Some(pool) if items.len() >= super::PARALLEL_FROM && pool.current_num_threads() > 1 => {
            let scope = &*scope;
            pool.install(|| {
                items
                    .into_par_iter()
                    .with_min_len(64)
                    .map_init(|| scope.fork(), |scope, item| work(item, scope))
                    .collect()
            })
        }
        _ => items.into_iter().map(|item| work(item, scope)).collect(),
    }
}

/// The map entry `key` of `node`, when `node` is a map that has it.
fn child_mut<'a>(node: &'a mut Node, key: &str) -> Option<&'a mut Node> {
    match &mut node.value {
        Value::Map(entries) => entries
            .iter_mut()
            .find(|e| e.key == key)
            .map(|e| &mut e.value),
        _ => None,
    }
}

/// Removes the condition `key` from the map `node` and evaluates it: its text, its value and
/// where it is written.
#[allow(clippy::type_complexity, reason = "a private helper's plain tuple")]
pub(crate) fn take_condition(
    node: &mut Node,
    key: &str,
    scope: &mut Scope,
) -> Result<Option<((String, bool), Origin)>, ModuleError> {
    let Value::Map(entries) = &mut node.value else {
        return Ok(None);
    };
    let Some(index) = entries.iter().position(|e| e.key == key) else {
        return Ok(None);
    };
    let entry = entries.remove(index);
    let origin = entry.value.origin.clone();
    let (text, value) = match &entry.value.value {
        Value::Bool(b) => (b.to_string(), *b),
        Value::String(text) => {
            let resolved = resolve_string(text, &origin, scope, &|_| None, &mut BTreeSet::new())?;
            match resolved.value {
                Value::Bool(b) => (text.clone(), b),
                _ => {
                    return Err(ModuleError::invalid(
                        origin,
                        format!(
                            "{key} must be true or false, and {text} is {}",
                            resolved.describe()
                        ),
                    ));
                }
            }
        }
        _ => {
            return Err(ModuleError::invalid(
                origin,
                format!(
                    "{key} must be a condition such as ${{config.ingress.enabled}}, not {}",
                    entry.value.describe()
                ),
            ));
        }
    };
    Ok(Some(((text, value), origin)))
}

/// An attachment written `{$when: …, $value: V}` becomes `V`.
fn unwrap_value(node: &mut Node) -> Result<(), ModuleError> {
    let Value::Map(entries) = &mut node.value else {
        return Ok(());
    };
    let Some(index) = entries.iter().position(|e| e.key == "$value") else {
        return Ok(());
    };
    if entries.len() > 1 {
        return Err(ModuleError::invalid(
            entries[index].key_origin.clone(),
            "$value is the whole value: write the other fields inside it".to_owned(),
        ));
    }
    let entry = entries.remove(index);
    *node = entry.value;
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::module::tree;

    fn scope() -> Scope {
        Scope::new(
            Some(
                &json!({"replicas": 3, "host": "git.example.com", "ingress": {"enabled": true}, "ports": [80, 443]}),
            ),
            json!({"name": "gitea", "version": "1.0.0"}),
            json!({"name": "gitea-2", "prefix": "gitea-2-", "namespace": "git"}),
        )
    }

    fn resolved(text: &str) -> Result<Json, String> {
        let mut node = tree::parse(text, &Arc::from("module.yaml")).unwrap();
        let env = |name: &str| (name == "TOKEN").then(|| "s3cret".to_owned());
        resolve(&mut node, &mut scope(), &env, &mut BTreeSet::new())
            .map(|()| node.to_json())
            .map_err(|e| e.to_string())
    }

    /// Real charts (2026-12): the interpreter's errors named Rust values
    /// (`Unsupported binary operator 'add': String("GF_PATHS_"), Int(1)`) and offered no
    /// did-you-mean. Each class in CEL's own terms, with its exact text.
    #[test]
    fn an_expression_error_is_in_cel_terms_with_a_suggestion() {
        for (text, expected) in [
            (
                "a: ${ 'GF_PATHS_' + 1 }",
                "`+` cannot take a string (\"GF_PATHS_\") and an int (1); write string(…) around \
                 the other to make text of it",
            ),
            (
                "a: ${ toLower(config.host) }",
                "\"toLower\" is not defined: expressions see config, instance, module and CEL's \
                 functions; did you mean \"lower\"?",
            ),
            (
                "a: ${ confg.host }",
                "\"confg\" is not defined; did you mean \"config\"?; expressions see config, \
                 instance and module (write $${ for a literal ${)",
            ),
            (
                "a: ${ config.ingress['enabeld'] }",
                "there is no key \"enabeld\"; did you mean \"enabled\"? (has(…) tests for an \
                 optional one)",
            ),
            (
                "a: ${ config.replicas < 'three' }",
                "`<` cannot take an int and a string",
            ),
        ] {
            let error = resolved(text).unwrap_err();
            assert!(error.ends_with(expected), "{text}:\n{error}\n{expected}");
            assert!(
                !error.contains("String(") && !error.contains("Int("),
                "{error}"
            );
        }
    }

    #[test]
    fn a_whole_reference_keeps_its_type() {
        assert_eq!(resolved("a: ${config.replicas}").unwrap(), json!({"a": 3}));
        assert_eq!(
            resolved("a: ${config.ingress}").unwrap(),
            json!({"a": {"enabled": true}})
        );
        assert_eq!(
            resolved("a: ${config.ports[1]}").unwrap(),
            json!({"a": 443})
        );
    }

    #[test]
    fn references_inside_strings_are_written_as_text() {
        assert_eq!(
            resolved("a: 'https://${config.host}/:${config.ports[0]}'").unwrap(),
            json!({"a": "https://git.example.com/:80"})
        );
    }

    #[test]
    fn expressions_are_cel() {
        assert_eq!(
            resolved("a: '${ config.replicas > 1 ? \"RollingUpdate\" : \"Recreate\" }'").unwrap(),
            json!({"a": "RollingUpdate"})
        );
        assert_eq!(
            resolved("a: '${ config.ports.map(p, p + 1) }'").unwrap(),
            json!({"a": [81, 444]})
        );
        assert_eq!(
            resolved("a: '${ {\"z\": 1, \"b\": module.name.upperAscii()} }'").unwrap(),
            json!({"a": {"b": "GITEA", "z": 1}})
        );
    }

    #[test]
    fn the_instance_names_objects_of_other_components() {
        assert_eq!(
            resolved(
                "a: '${instance.prefix}settings'\nb: ${instance.name}\nc: ${instance.namespace}"
            )
            .unwrap(),
            json!({"a": "gitea-2-settings", "b": "gitea-2", "c": "git"})
        );
    }

    #[test]
    fn env_and_escapes() {
        assert_eq!(
            resolved("a: 'x-${env:TOKEN}-$${HOME}'").unwrap(),
            json!({"a": "x-s3cret-${HOME}"})
        );
        assert!(
            resolved("a: ${env:UNSET}")
                .unwrap_err()
                .contains("UNSET is not set")
        );
    }

    #[test]
    fn errors_name_the_place_and_the_expression() {
        assert_eq!(
            resolved("a:\n  b: ${config.replicaz}\n").unwrap_err(),
            "module.yaml:2:6: in ${config.replicaz}: config has no \"replicaz\""
        );
        let error = resolved("a: '${HOME}'").unwrap_err();
        assert!(error.contains("\"HOME\" is not defined"), "{error}");
        assert!(error.contains("see config, instance and module"), "{error}");
        assert!(error.contains("$${"), "{error}");
        let error = resolved("a: '${ config.replicas + }'").unwrap_err();
        assert!(
            error.starts_with("module.yaml:1:4: in ${config.replicas +}:"),
            "{error}"
        );
        let error = resolved("a: '${ config.host'").unwrap_err();
        assert!(error.contains("is not closed"), "{error}");
    }

    /// What a condition leaves out in the middle of a map goes, and the rest keeps its order.
    #[test]
    fn a_left_out_part_between_others_leaves_them_in_order() {
        let text = "components:\n  a:\n    traits:\n      X: {$when: true, v: 1}\n      Y: {$when: false}\n      Z: {$when: '${config.replicas > 1}', $value: 3}\n      W: 4\n  b: {when: false}\n  c: {traits: {V: {$when: false}}}\n  d: {}\n";
        let mut node = tree::parse(text, &Arc::from("module.yaml")).unwrap();
        let excluded = apply_conditions(&mut node, &mut scope(), None).unwrap();
        let keys = |node: &Node| match &node.value {
            Value::Map(entries) => entries.iter().map(|e| e.key.clone()).collect::<Vec<_>>(),
            _ => Vec::new(),
        };
        let child = |node: &Node, key: &str| match &node.value {
            Value::Map(entries) => entries.iter().find(|e| e.key == key).unwrap().value.clone(),
            _ => panic!("{node:?} is not a map"),
        };
        let components = child(&node, "components");
        assert_eq!(keys(&components), ["a", "c", "d"]);
        let traits = child(&child(&components, "a"), "traits");
        assert_eq!(keys(&traits), ["X", "Z", "W"]);
        assert_eq!(traits.to_json(), json!({"X": {"v": 1}, "Z": 3, "W": 4}));
        assert!(keys(&child(&child(&components, "c"), "traits")).is_empty());
        let summary: Vec<(String, Option<String>)> = excluded
            .into_iter()
            .map(|e| (e.component, e.definition))
            .collect();
        assert_eq!(
            summary,
            [
                ("a".to_owned(), Some("Y".to_owned())),
                ("b".to_owned(), None),
                ("c".to_owned(), Some("V".to_owned())),
            ]
        );
    }

    #[test]
    fn false_conditions_leave_out_components_and_attachments_before_they_are_evaluated() {
        let text = "components:\n  web:\n    traits:\n      Ingress: {$when: '${config.ingress.enabled}', host: '${config.host}'}\n      Replicas: {$when: '${config.replicas > 5}', $value: '${config.missing}'}\n  worker:\n    when: '${!config.ingress.enabled}'\n    resources: {Container: {image: '${config.nothing}'}}\n";
        let mut node = tree::parse(text, &Arc::from("module.yaml")).unwrap();
        let excluded = apply_conditions(&mut node, &mut scope(), None).unwrap();
        assert_eq!(
            node.to_json(),
            json!({"components": {"web": {"traits": {"Ingress": {"host": "${config.host}"}}}}})
        );
        let summary: Vec<String> = excluded
            .iter()
            .map(|e| {
                format!(
                    "{} {:?} {} {}",
                    e.component, e.definition, e.condition, e.origin
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                "web Some(\"Replicas\") ${config.replicas > 5} module.yaml:5:25",
                "worker None ${!config.ingress.enabled} module.yaml:7:11",
            ]
        );
        let mut node = tree::parse(
            "components:\n  a: {when: yes-please}\n",
            &Arc::from("m.yaml"),
        )
        .unwrap();
        let error = apply_conditions(&mut node, &mut scope(), None)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("when must be a condition")
                || error.contains("when must be true or false"),
            "{error}"
        );
    }

    /// A large module's components are conditioned and resolved on several threads: the same
    /// document, the same left-out parts in order, the same sensitive values, and the first
    /// error in the document is the one reported, as on one thread.
    #[test]
    fn many_components_on_several_threads_come_out_as_on_one() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let env = |name: &str| (name == "TOKEN").then(|| "s3cret".to_owned());
        let module = |broken: &[usize]| {
            let mut text = String::from("components:\n");
            for i in 0..200 {
                text.push_str(&format!(
                    "  c{i}:\n    when: '${{config.replicas > {}}}'\n    traits:\n      T: {{$when: '${{{}}}', $value: 'x'}}\n    spec:\n      a: '${{config.host}}-{i}'\n      t: 'Bearer ${{env:TOKEN}}{}'\n",
                    i % 5,
                    i % 3 == 0,
                    if broken.contains(&i) { "${config.nope}" } else { "" },
                ));
            }
            tree::parse(&text, &Arc::from("module.yaml")).unwrap()
        };
        let run = |pool: Option<&rayon::ThreadPool>, broken: &[usize]| {
            let mut node = module(broken);
            let mut scope = scope();
            let mut sensitive = BTreeSet::new();
            let outcome = apply_conditions(&mut node, &mut scope, pool).and_then(|excluded| {
                resolve_module(&mut node, &mut scope, &env, &mut sensitive, pool)?;
                Ok(excluded
                    .iter()
                    .map(|e| format!("{} {:?} {}", e.component, e.definition, e.origin))
                    .collect::<Vec<_>>())
            });
            (
                outcome.map_err(|e| e.to_string()),
                node.to_json(),
                sensitive,
            )
        };
        let serial = run(None, &[]);
        assert!(serial.0.as_ref().unwrap().len() > 100, "{serial:?}");
        assert_eq!(serial.1["components"].as_object().unwrap().len(), 120);
        assert_eq!(
            serial.2,
            BTreeSet::from(["s3cret".to_owned(), "Bearer s3cret".to_owned()])
        );
        assert_eq!(run(Some(&pool), &[]), serial);
        let broken = &[151, 37, 190];
        let serial = run(None, broken);
        assert!(
            serial.0.as_ref().unwrap_err().contains("module.yaml:"),
            "{serial:?}"
        );
        assert_eq!(run(Some(&pool), broken).0, serial.0);
    }

    /// Every function and macro docs/expressions.md lists, once.
    /// Every row of docs/expressions.md's table of functions is an example that is `true`.
    #[test]
    fn every_function_in_the_docs_does_what_its_example_says() {
        let docs = include_str!("../../../../docs/expressions.md");
        let table = docs
            .split("<!-- functions: start -->")
            .nth(1)
            .and_then(|rest| rest.split("<!-- functions: end -->").next())
            .expect("the table of functions");
        let examples: Vec<&str> = table
            .lines()
            .filter(|line| line.starts_with("| `"))
            .filter_map(|line| line.trim_end_matches(" |").rsplit(" | ").next())
            .map(|cell| cell.trim_matches('`'))
            .collect();
        assert!(examples.len() >= 20, "{examples:?}");
        for example in examples {
            assert_eq!(scope().evaluate(example), Ok(Json::Bool(true)), "{example}");
        }
    }

    #[test]
    fn the_functions_that_build_values_give_what_the_docs_say() {
        let mut scope = Scope::new(
            Some(&json!({
                "ini": {"server": {"root_url": "https://g.acme.io", "port": 3000}, "paths": {"data": "/var/lib"}},
                "extra": {"server": {"port": 8080, "root_url": null}, "log": {"mode": "console"}},
                "env": {"B": "2", "A": "1"},
                "password": "s3cret",
            })),
            json!({"name": "grafana"}),
            json!({"name": "grafana"}),
        );
        let cases = [
            (
                "merge(config.ini, config.extra)",
                json!({"server": {"port": 8080}, "paths": {"data": "/var/lib"}, "log": {"mode": "console"}}),
            ),
            (
                "config.ini.merge({'paths': {'logs': '/log'}}).paths",
                json!({"data": "/var/lib", "logs": "/log"}),
            ),
            ("keys(config.env)", json!(["A", "B"])),
            ("config.env.values()", json!(["1", "2"])),
            ("toJson(config.env)", json!(r#"{"A":"1","B":"2"}"#)),
            (
                "toYaml({'b': [1, 2], 'a': 'x'})",
                json!("a: x\nb:\n- 1\n- 2\n"),
            ),
            ("fromJson('{\"a\": [1, true]}')", json!({"a": [1, true]})),
            ("fromYaml('a: 1\\nb: [x, z]').b", json!(["x", "z"])),
            ("lower('ÄB') + upper('äb')", json!("äbÄB")),
            ("b64enc(config.password)", json!("czNjcmV0")),
            ("b64dec('czNjcmV0')", json!("s3cret")),
            (
                "sha256('abc')",
                json!("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            ),
            ("[3, 1, 2].sort()", json!([1, 2, 3])),
            (
                "[{'n': 'b'}, {'n': 'a'}].sortBy(x, x.n)",
                json!([{"n": "a"}, {"n": "b"}]),
            ),
            (
                "[1, [2, 3]].flatten().distinct().reverse()",
                json!([3, 2, 1]),
            ),
            ("lists.range(3)", json!([0, 1, 2])),
            ("'%s:%d'.format(['port', 80])", json!("port:80")),
            ("math.greatest(1, 5, 3)", json!(5)),
        ];
        for (expression, expected) in cases {
            assert_eq!(scope.evaluate(expression), Ok(expected), "{expression}");
        }
        for (expression, error) in [
            ("merge(config.env, 1)", "takes two maps"),
            ("fromJson('{')", "fromJson"),
            ("b64dec('/w==')", "not UTF-8"),
            ("lists.range(config.env.size())", "refused before it runs"),
        ] {
            let found = scope.evaluate(expression).expect_err(expression);
            assert!(found.contains(error), "{expression}: {found}");
        }
    }

    #[test]
    fn evaluation_is_bounded() {
        let deep = format!("a: '${{{}1{}}}'", "(".repeat(20), ")".repeat(20));
        assert!(resolved(&deep).unwrap_err().contains("nests brackets"));
        let nested = "a: '${ [1].map(x, [1].map(y, [1].map(z, z))) }'";
        assert!(resolved(nested).unwrap_err().contains("nests map"));
        let long = format!("a: '${{ {} }}'", "1 + ".repeat(600) + "1");
        assert!(
            resolved(&long)
                .unwrap_err()
                .contains("over the limit of 2000")
        );
        // Found in the module language's security pass (December 2026): a chain of 60 `+` (239 bytes) overflowed a render thread's stack in
        // CEL's interpreter and aborted opm; it is refused by its depth before it runs, on a
        // thread with no more stack than a test's.
        let chain = format!("a: '${{ {} }}'", vec!["1"; 60].join("+"));
        let refused = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || resolved(&chain))
            .unwrap()
            .join()
            .expect("no overflow");
        assert!(
            refused
                .unwrap_err()
                .contains("60 operations deep, over the limit of 32"),
        );
        let within = format!("a: '${{ {} }}'", vec!["1"; 31].join("+"));
        let value = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || resolved(&within))
            .unwrap()
            .join()
            .expect("no overflow");
        assert_eq!(value, Ok(json!({"a": 31})));
    }
}
