//! A bound on what a CEL expression may cost, worked out before it runs.
//!
//! The CEL interpreter has no budget of its own: `replace` nested a few deep in a module of
//! 49 KB asked for 6 GB, and `all(i, exists(j, …))` over a default of 10,000 items took 10⁸
//! steps. So each expression is measured on its syntax tree against the values it reads
//! ([`estimate`]): how many steps it can take (every comprehension's iterations times its body,
//! every string function's scan) and how many bytes its value and the values on the way can
//! hold (a `replace` can multiply its string by the length of what it puts in, a `map` its list
//! by what each item becomes). Sizes of what the expression reads come from the values
//! themselves (`config`, `module`, `instance`), so a reference to a small map is measured as
//! small whatever else the parameters hold; what an expression computes is measured from what
//! it computes it from. The bound is an over-estimate, never an under-estimate: an expression
//! over [`MAX_STEPS`] or [`MAX_BYTES`] is refused before it is evaluated.
//!
//! ```
//! use opm_core::module::cost::{estimate, MAX_BYTES};
//!
//! let variables = serde_json::json!({"config": {"name": "x".repeat(1000)}});
//! let lookup = |name: &str| variables.get(name);
//! let parse = |text: &str| cel::Env::stdlib().parser().parse(text).unwrap();
//! let small = estimate(&parse("config.name.replace('x', 'yy')"), &lookup);
//! assert!(small.bytes < 4_000.0);
//! let nested = "config.name.replace('x', 'xxxxxxxx').replace('x', 'xxxxxxxx')\
//!     .replace('x', 'xxxxxxxx').replace('x', 'xxxxxxxx').replace('x', 'xxxxxxxx')";
//! assert!(estimate(&parse(nested), &lookup).bytes > MAX_BYTES);
//! ```

use cel::IdedExpr;
use cel::common::ast::{EntryExpr, Expr, LiteralValue};
use serde_json::Value as Json;

/// The most steps an expression may take, as [`estimate`] counts them: a few seconds of the
/// interpreter's work at most (10⁸ steps took 32 s).
pub const MAX_STEPS: f64 = 10_000_000.0;

/// The bytes a string function scans or copies in the time of one step of the interpreter
/// (a step walks a node of the syntax tree, hundreds of nanoseconds; a byte takes about one).
const BYTES_PER_STEP: f64 = 64.0;

/// The most bytes an expression's value, or a value on the way to it, may hold, as [`estimate`]
/// counts them.
pub const MAX_BYTES: f64 = (4 << 20) as f64;

/// What an expression may cost: an upper bound on each.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    /// Steps of the interpreter.
    pub steps: f64,
    /// Bytes of the value (a string's length; a list's or map's items together).
    pub bytes: f64,
    /// Bytes of the largest value on the way to it, itself included.
    pub peak: f64,
    /// Items of the value, when it is iterated (a list's or map's; a string's characters).
    pub items: f64,
    /// Bytes of the largest item.
    pub item_bytes: f64,
    /// Items of the item with the most.
    pub item_items: f64,
}

impl Cost {
    /// A scalar: a number, a boolean, null.
    const SCALAR: Self = Self {
        steps: 1.0,
        bytes: 8.0,
        peak: 8.0,
        items: 0.0,
        item_bytes: 0.0,
        item_items: 0.0,
    };

    /// A value measured as it is.
    pub fn of(value: &Json) -> Self {
        let measured = measure(value);
        Self {
            steps: 1.0,
            ..measured
        }
    }

    /// A string of `bytes` bytes.
    fn string(bytes: f64, steps: f64) -> Self {
        Self {
            steps,
            bytes,
            peak: bytes,
            items: bytes,
            item_bytes: 1.0,
            item_items: 1.0,
        }
    }

    /// The larger of each of two bounds (a value that is one or the other).
    fn or(self, other: Self) -> Self {
        Self {
            steps: self.steps.max(other.steps),
            bytes: self.bytes.max(other.bytes),
            peak: self.peak.max(other.peak),
            items: self.items.max(other.items),
            item_bytes: self.item_bytes.max(other.item_bytes),
            item_items: self.item_items.max(other.item_items),
        }
    }

    /// What the expression exceeds, if anything.
    pub fn over_limit(&self) -> Option<String> {
        if self.peak > MAX_BYTES {
            Some(format!(
                "its values could grow to about {}, over the limit of {} (a `replace` or `map` \
                 that multiplies a value, nested or over a large one)",
                size_words(self.peak),
                size_words(MAX_BYTES)
            ))
        } else if self.steps > MAX_STEPS {
            Some(format!(
                "it could take about {:.0e} steps, over the limit of {MAX_STEPS:.0e} (a \
                 comprehension over a large list or map, or comprehensions nested over two)",
                self.steps
            ))
        } else {
            None
        }
    }
}

fn size_words(bytes: f64) -> String {
    if bytes >= (1u64 << 60) as f64 {
        format!("{bytes:.1e} bytes")
    } else {
        crate::calls::limits::Bytes(bytes as u64).to_string()
    }
}

/// What `value` holds: its bytes (a string's length, a number's 8, a list's or map's items and
/// keys together), how many items it has, and the bytes and items of its largest.
fn measure(value: &Json) -> Cost {
    let mut cost = Cost {
        steps: 0.0,
        bytes: 8.0,
        peak: 0.0,
        items: 0.0,
        item_bytes: 0.0,
        item_items: 0.0,
    };
    let mut add = |key: Option<&str>, item: &Json| {
        let inner = measure(item);
        let key_bytes = key.map_or(0.0, |k| k.len() as f64);
        cost.bytes += inner.bytes + key_bytes + 8.0;
        cost.items += 1.0;
        cost.item_bytes = cost.item_bytes.max(inner.bytes).max(key_bytes);
        cost.item_items = cost.item_items.max(inner.items).max(key_bytes);
    };
    match value {
        Json::String(s) => return Cost::string(s.len() as f64, 0.0),
        Json::Array(items) => items.iter().for_each(|item| add(None, item)),
        Json::Object(map) => map.iter().for_each(|(key, item)| add(Some(key), item)),
        _ => {}
    }
    cost.peak = cost.bytes;
    cost
}

/// The bound on what `expr` may cost, the variables it reads found with `lookup`.
pub fn estimate<'a>(expr: &IdedExpr, lookup: &'a dyn Fn(&str) -> Option<&'a Json>) -> Cost {
    let mut locals = Vec::new();
    Estimator { lookup }.cost(expr, &mut locals)
}

struct Estimator<'a> {
    lookup: &'a dyn Fn(&str) -> Option<&'a Json>,
}

/// A comprehension's variables in scope, innermost last.
type Locals = Vec<(String, Cost)>;

impl Estimator<'_> {
    fn cost(&self, expr: &IdedExpr, locals: &mut Locals) -> Cost {
        match &expr.expr {
            Expr::Literal(LiteralValue::String(s)) => Cost::string(s.len() as f64, 1.0),
            Expr::Literal(LiteralValue::Bytes(b)) => Cost::string(b.len() as f64, 1.0),
            Expr::Literal(_) | Expr::Unspecified => Cost::SCALAR,
            Expr::Ident(name) => self.variable(name, locals),
            Expr::Select(select) => match self.path(expr, locals) {
                Some(value) => Cost::of(value),
                None => {
                    let operand = self.cost(&select.operand, locals);
                    Cost {
                        steps: operand.steps + 1.0,
                        ..item_of(operand)
                    }
                }
            },
            Expr::List(list) => {
                let parts: Vec<Cost> = list.elements.iter().map(|e| self.cost(e, locals)).collect();
                collection(list.elements.len(), &parts)
            }
            Expr::Map(cel::common::ast::MapExpr { entries })
            | Expr::Struct(cel::common::ast::StructExpr { entries, .. }) => {
                let parts: Vec<Cost> = entries
                    .iter()
                    .flat_map(|entry| match &entry.expr {
                        EntryExpr::MapEntry(entry) => vec![&entry.key, &entry.value],
                        EntryExpr::StructField(field) => vec![&field.value],
                    })
                    .map(|part| self.cost(part, locals))
                    .collect();
                collection(entries.len(), &parts)
            }
            // `lists.range(n)` makes n ints: known when n is written, else the most it makes.
            Expr::Call(call)
                if call.func_name == "lists.range"
                    || call.func_name == "range"
                        && matches!(call.target.as_deref().map(|t| &t.expr),
                            Some(Expr::Ident(name)) if name == "lists") =>
            {
                let n = match call.args.first().map(|a| &a.expr) {
                    Some(Expr::Literal(LiteralValue::Int(n))) => (*n.inner()).max(0) as f64,
                    _ => 1_000_000.0,
                };
                Cost {
                    steps: 1.0 + n,
                    bytes: 16.0 * n + 8.0,
                    peak: 16.0 * n + 8.0,
                    items: n,
                    item_bytes: 8.0,
                    item_items: 0.0,
                }
            }
            Expr::Call(call) => {
                let target = call.target.as_deref().map(|t| self.cost(t, locals));
                let args: Vec<Cost> = call.args.iter().map(|a| self.cost(a, locals)).collect();
                call_cost(&call.func_name, target, &args)
            }
            Expr::Comprehension(c) => {
                let range = self.cost(&c.iter_range, locals);
                let init = self.cost(&c.accu_init, locals);
                let element = item_of(range);
                let vars = 1 + usize::from(c.iter_var2.is_some());
                locals.push((c.iter_var.clone(), element));
                if let Some(second) = &c.iter_var2 {
                    locals.push((second.clone(), element));
                }
                // One step of the loop with the accumulator as it starts: what it adds each
                // time, taken as many times as the range has items.
                locals.push((c.accu_var.clone(), init));
                let condition = self.cost(&c.loop_cond, locals);
                let step = self.cost(&c.loop_step, locals);
                locals.pop();
                let n = range.items;
                let grown = init.bytes + n * (step.bytes - init.bytes).max(0.0);
                let accumulated = Cost {
                    steps: 1.0,
                    bytes: grown,
                    peak: grown,
                    items: init.items + n * (step.items - init.items).max(0.0),
                    item_bytes: init.item_bytes.max(step.item_bytes),
                    item_items: init.item_items.max(step.item_items),
                };
                locals.push((c.accu_var.clone(), accumulated));
                let result = self.cost(&c.result, locals);
                locals.pop();
                locals.truncate(locals.len() - vars);
                Cost {
                    steps: range.steps
                        + init.steps
                        + n * (condition.steps + step.steps)
                        + result.steps,
                    bytes: result.bytes,
                    peak: result
                        .peak
                        .max(accumulated.bytes)
                        .max(range.peak)
                        .max(init.peak)
                        .max(condition.peak)
                        .max(step.peak),
                    items: result.items,
                    item_bytes: result.item_bytes,
                    item_items: result.item_items,
                }
            }
        }
    }

    /// A variable: the innermost comprehension variable of that name, else a value of the
    /// scope, else (a name the expression will fail on) nothing.
    fn variable(&self, name: &str, locals: &Locals) -> Cost {
        if let Some((_, cost)) = locals.iter().rev().find(|(local, _)| local == name) {
            return Cost {
                steps: 1.0,
                ..*cost
            };
        }
        (self.lookup)(name).map_or(Cost::SCALAR, Cost::of)
    }

    /// The value a chain of field selections on a variable of the scope reads, when it reads
    /// one (`config.env`), so that it is measured as it is.
    fn path<'v>(&'v self, expr: &IdedExpr, locals: &Locals) -> Option<&'v Json> {
        match &expr.expr {
            Expr::Ident(name) if !locals.iter().any(|(local, _)| local == name) => {
                (self.lookup)(name)
            }
            Expr::Select(select) if !select.test => {
                self.path(&select.operand, locals)?.get(&select.field)
            }
            _ => None,
        }
    }
}

/// A list or map literal of `items` items, made of `parts` (its items, or its keys and values).
fn collection(items: usize, parts: &[Cost]) -> Cost {
    let mut cost = Cost {
        steps: 1.0,
        bytes: 8.0,
        peak: 0.0,
        items: items as f64,
        item_bytes: 0.0,
        item_items: 0.0,
    };
    for part in parts {
        cost.steps += part.steps;
        cost.bytes += part.bytes + 8.0;
        cost.peak = cost.peak.max(part.peak);
        cost.item_bytes = cost.item_bytes.max(part.bytes);
        cost.item_items = cost.item_items.max(part.items);
    }
    cost.peak = cost.peak.max(cost.bytes);
    cost
}

/// An item of what `container` costs: its largest item, whatever the key. What the item holds
/// is known only as far as the container's measure goes: its items are each no larger than it.
fn item_of(container: Cost) -> Cost {
    Cost {
        steps: 1.0,
        bytes: container.item_bytes,
        peak: container.peak,
        items: container.item_items,
        item_bytes: container.item_bytes,
        item_items: container.item_items,
    }
}

/// What calling `function` costs, given what its target and arguments cost.
fn call_cost(function: &str, target: Option<Cost>, args: &[Cost]) -> Cost {
    let inputs: Vec<Cost> = target.into_iter().chain(args.iter().copied()).collect();
    let steps: f64 = 1.0 + inputs.iter().map(|c| c.steps).sum::<f64>();
    let bytes_in: f64 = inputs.iter().map(|c| c.bytes).sum();
    let peak_in = inputs.iter().map(|c| c.peak).fold(0.0, f64::max);
    let first = inputs.first().copied().unwrap_or(Cost::SCALAR);
    let arg = |i: usize| inputs.get(i).copied().unwrap_or(Cost::SCALAR);
    let grown = |bytes: f64| Cost {
        steps: steps + bytes / BYTES_PER_STEP,
        bytes,
        peak: peak_in.max(bytes),
        items: bytes,
        item_bytes: first.item_bytes.max(1.0),
        item_items: first.item_items.max(1.0),
    };
    match function {
        // Concatenation of strings or lists; a merge of two maps.
        "_+_" | "merge" => Cost {
            steps: steps + bytes_in / BYTES_PER_STEP,
            bytes: bytes_in,
            peak: peak_in.max(bytes_in),
            items: inputs.iter().map(|c| c.items).sum(),
            item_bytes: inputs.iter().map(|c| c.item_bytes).fold(0.0, f64::max),
            item_items: inputs.iter().map(|c| c.item_items).fold(0.0, f64::max),
        },
        // A value that is one branch or the other.
        "_?_:_" => {
            let (condition, yes, no) = (arg(0), arg(1), arg(2));
            let mut cost = yes.or(no);
            cost.steps = condition.steps + yes.steps + no.steps;
            cost.peak = cost.peak.max(condition.peak);
            cost
        }
        "_[_]" => Cost {
            steps,
            peak: peak_in,
            ..item_of(first)
        },
        // Each character may become what it is replaced with (an empty `from` matches
        // between every two).
        "replace" => {
            let (text, with) = (arg(0), arg(2));
            grown(text.bytes * (1.0 + with.bytes) + with.bytes)
        }
        "join" => {
            let (list, separator) = (arg(0), arg(1));
            grown(list.bytes + list.items * separator.bytes)
        }
        // `\u0000` for each character, and the quotes.
        "strings.quote" => grown(first.bytes * 6.0 + 2.0),
        "split" => {
            let text = arg(0);
            Cost {
                steps: steps + text.bytes / BYTES_PER_STEP,
                bytes: text.bytes * 9.0 + 8.0,
                peak: peak_in.max(text.bytes * 9.0 + 8.0),
                items: text.bytes + 1.0,
                item_bytes: text.bytes,
                item_items: text.bytes,
            }
        }
        "string" | "format" => grown(bytes_in * 2.0 + 32.0),
        // JSON escapes a control character in six bytes; YAML indents every line by its depth.
        "toJson" => grown(first.bytes * 6.0 + 32.0),
        "toYaml" => grown(first.bytes * 8.0 + 32.0),
        // A text's value: each byte may start an item (`[1,1,1]`), measured at 16 bytes.
        "fromJson" | "fromYaml" => grown(first.bytes * 16.0 + 8.0),
        // A character's case may take three bytes where it took one.
        "lower" | "upper" => grown(first.bytes * 3.0),
        "b64enc" => grown(first.bytes * 4.0 / 3.0 + 4.0),
        "sha256" => Cost {
            steps: steps + bytes_in / BYTES_PER_STEP,
            ..Cost::string(64.0, 0.0)
        },
        // A comparison sort: n log n comparisons of items.
        "sort" | "@sortByAssociatedKeys" => {
            let n = first.items.max(1.0);
            Cost {
                steps: steps + n * n.log2().max(1.0) * (1.0 + first.item_bytes / BYTES_PER_STEP),
                ..first
            }
        }
        // Functions whose value is no larger than the first thing they are given
        // (`lowerAscii`, `trim`, `substring`, `reverse`, `charAt`), or a scalar (comparisons,
        // `size`, `contains`, `matches`, conversions): scanning what they are given is their
        // work.
        _ => Cost {
            steps: steps + bytes_in / BYTES_PER_STEP,
            bytes: first.bytes.max(8.0),
            peak: peak_in.max(first.bytes).max(8.0),
            items: first.items,
            item_bytes: first.item_bytes,
            item_items: first.item_items,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(expression: &str, variables: &Json) -> Cost {
        let program = cel::Env::stdlib()
            .parser()
            .parse(expression)
            .expect("parses");
        let lookup = |name: &str| variables.get(name);
        estimate(&program, &lookup)
    }

    /// What charts write stays far inside the bounds: a map of environment variables made a
    /// list, an INI file written from a map of maps, a host name made a Secret's name.
    #[test]
    fn what_charts_write_is_within_the_bounds() {
        let sections: serde_json::Map<String, Json> = (0..20)
            .map(|s| {
                let keys: serde_json::Map<String, Json> = (0..30)
                    .map(|k| (format!("key_{k}"), Json::from(format!("value number {k}"))))
                    .collect();
                (format!("section_{s}"), Json::Object(keys))
            })
            .collect();
        let env: serde_json::Map<String, Json> = (0..200)
            .map(|i| (format!("VAR_{i}"), Json::from("x".repeat(40))))
            .collect();
        let variables = serde_json::json!({"config": {
            "ini": sections, "env": env, "domain": "git.example.com",
            "padding": "p".repeat(200_000),
        }});
        for expression in [
            "config.env.map(k, {'name': k, 'value': config.env[k]})",
            "config.ini.map(s, '[' + s + ']\\n' + config.ini[s].map(k, k + ' = ' + \
             string(config.ini[s][k])).join('\\n')).join('\\n\\n')",
            "config.domain.replace('.', '-') + '-tls'",
        ] {
            let cost = cost(expression, &variables);
            assert!(cost.over_limit().is_none(), "{expression}: {cost:?}");
        }
    }

    #[test]
    fn nested_comprehensions_over_a_large_list_are_over_the_step_bound() {
        let items: Vec<Json> = (0..10_000).map(|i| Json::from(format!("i{i}"))).collect();
        let variables = serde_json::json!({"config": {"items": items}});
        let cost = cost(
            "config.items.all(i, config.items.exists(j, i == j))",
            &variables,
        );
        assert!(cost.steps > MAX_STEPS, "{cost:?}");
        assert!(cost.peak < MAX_BYTES, "{cost:?}");
        let single = self::cost("config.items.exists(i, i == 'i9')", &variables);
        assert!(single.over_limit().is_none(), "{single:?}");
    }
}
