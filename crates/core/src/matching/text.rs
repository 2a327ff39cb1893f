//! A plan in words: one table per component, then warnings, errors and a summary line.
//!
//! ```text
//! component api (module.yaml:9:3)
//!   labels     core.opm.dev/workload-type=stateless (from the component)
//!   resources  opm.dev/resources/workload@v1#Container
//!   traits     opm.dev/traits/network@v1#Expose
//!   policies   -
//!   TRANSFORMER                                             RESULT    WHY
//!   transformer.opm.dev/network@v1#ServiceTransformer       matches   resource …; trait …
//!   transformer.opm.dev/workload@v1#StatefulSetTransformer  no match  label core.opm.dev/workload-type is "stateless", not "stateful"
//!   unhandled  -
//! ```

use std::io::{self, Write};

use super::{ComponentPlan, Plan, PlanConfig, PlanPatch, PlanProvider, PlanRenderer, Problem};

impl Plan {
    /// Writes the plan as text: what `opm mod vet` prints and what `--verbose` explains.
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        let several = self.providers.len() > 1;
        writeln!(
            out,
            "module {} with provider{} {}{}",
            self.module,
            if several { "s" } else { "" },
            self.provider,
            if self.strict { " (strict)" } else { "" }
        )?;
        if let Some(renderer) = &self.renderer {
            writeln!(out, "{}", renderer_line(renderer))?;
        }
        if !self.env.is_empty() {
            writeln!(out, "environment variables read: {}", self.env.join(", "))?;
        }
        if several {
            writeln!(out)?;
            write_providers(&self.providers, out)?;
        }
        if let Some(config) = &self.config {
            writeln!(out)?;
            write_config(config, out)?;
        }
        for component in &self.components {
            writeln!(out)?;
            write_component(component, several.then_some(self), out)?;
        }
        if !self.patches.is_empty() {
            writeln!(out)?;
            write_patches(&self.patches, out)?;
        }
        if !self.left_out.is_empty() {
            writeln!(out)?;
            writeln!(out, "left out:")?;
            for left in &self.left_out {
                let mut what = match (&left.definition, left.patch) {
                    (_, Some(patch)) => format!("patches[{patch}]"),
                    (Some(definition), None) => {
                        format!("component {:?}, {definition}", left.component)
                    }
                    (None, None) => format!("component {:?}", left.component),
                };
                if let Some(path) = &left.path {
                    what = format!("{what} {path}");
                }
                let why = if left.null { "null" } else { "false" };
                writeln!(out, "  {what}: {} is {why} ({})", left.condition, left.at)?;
            }
        }
        write_problems("warning", &self.warnings, out)?;
        write_problems("error", &self.errors, out)?;
        writeln!(out)?;
        writeln!(
            out,
            "{} component{}, {} call{}, {} error{}, {} warning{}",
            self.components.len(),
            plural(self.components.len()),
            self.calls.len(),
            plural(self.calls.len()),
            self.errors.len(),
            plural(self.errors.len()),
            self.warnings.len(),
            plural(self.warnings.len()),
        )
    }
}

/// The module's patches, in the order a render applies them: each one's target, what it does
/// (a JSON Patch's operations without their values) and the components it can change.
fn write_patches(patches: &[PlanPatch], out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "patches, applied in this order to what the calls render:"
    )?;
    for patch in patches {
        writeln!(out, "  {} ({})", patch.name(), patch.at)?;
        writeln!(out, "    target      {}", patch.target)?;
        if patch.operations.is_empty() {
            writeln!(out, "    {}", patch.kind)?;
        } else {
            for (index, operation) in patch.operations.iter().enumerate() {
                let kind = if index == 0 { patch.kind } else { "" };
                writeln!(out, "    {kind:10}  [{index}] {operation}")?;
            }
        }
        writeln!(out, "    components  {}", list(&patch.components))?;
    }
    Ok(())
}

/// The parameters, one line each (nested ones dotted): type, the value this render uses, and
/// the description.
fn write_config(config: &PlanConfig, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "config (set with -f VALUES and --set NAME=VALUE; a map merges over its default, null \
         removes a key):"
    )?;
    let mut rows = Vec::new();
    parameter_rows(&config.schema, Some(&config.parameters), "", &mut rows);
    let width = rows.iter().map(|(name, ..)| name.len()).max().unwrap_or(0);
    for (name, kind, value, description) in rows {
        let mut line = format!("  {name:width$}  {kind:8} = {value}");
        if !description.is_empty() {
            line.push_str(&format!("  # {description}"));
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

fn parameter_rows(
    schema: &serde_json::Value,
    value: Option<&serde_json::Value>,
    prefix: &str,
    rows: &mut Vec<(String, String, String, String)>,
) {
    let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) else {
        return;
    };
    for (key, property) in properties {
        let name = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        let value = value.and_then(|v| v.get(key));
        if property.get("properties").is_some() {
            parameter_rows(property, value, &name, rows);
            continue;
        }
        let kind = property.get("type").map_or_else(
            || "any".to_owned(),
            |t| t.as_str().map_or_else(|| t.to_string(), str::to_owned),
        );
        let shown = match value {
            Some(v) => v.to_string(),
            None => "(not set)".to_owned(),
        };
        let description = property
            .get("description")
            .and_then(|d| d.as_str())
            .unwrap_or_default()
            .to_owned();
        rows.push((name, kind, shown, description));
    }
}

/// Which renderer writes the files, whose it is and why it is the one.
pub fn renderer_line(renderer: &PlanRenderer) -> String {
    let why = match renderer.chosen {
        "named" => "named to write the files",
        "embedded" => "the embedded one for the platform: no provider of the render ships one",
        _ => "shipped by the providers with transformers",
    };
    format!(
        "renderer {} of provider {} ({why})",
        renderer.name, renderer.provider
    )
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "-".to_owned()
    } else {
        items.join(", ")
    }
}

/// What each of several providers brought: its transformers and definitions.
fn write_providers(providers: &[PlanProvider], out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "providers, in the order given:")?;
    for provider in providers {
        writeln!(
            out,
            "  {} {}: {} transformer{}, {} definition{}",
            provider.name,
            provider.version,
            provider.transformers.len(),
            plural(provider.transformers.len()),
            provider.definitions.len(),
            plural(provider.definitions.len()),
        )?;
        for transformer in &provider.transformers {
            writeln!(out, "    transformer  {transformer}")?;
        }
        for definition in &provider.definitions {
            writeln!(out, "    definition   {definition}")?;
        }
    }
    Ok(())
}

/// One component's table; with a column naming each transformer's provider when `providers`
/// (the plan) has several.
fn write_component(
    component: &ComponentPlan,
    providers: Option<&Plan>,
    out: &mut dyn Write,
) -> io::Result<()> {
    writeln!(out, "component {} ({})", component.name, component.origin)?;
    let labels: Vec<String> = component
        .labels
        .iter()
        .map(|(key, label)| format!("{key}={} (from {})", label.value, label.from))
        .collect();
    writeln!(out, "  labels     {}", list(&labels))?;
    writeln!(out, "  resources  {}", list(&component.resources))?;
    writeln!(out, "  traits     {}", list(&component.traits))?;
    writeln!(out, "  policies   {}", list(&component.policies))?;

    let mut rows: Vec<(&str, &str, String)> = Vec::new();
    for matched in &component.matched {
        let why: Vec<String> = matched.reasons.iter().map(ToString::to_string).collect();
        let why = if why.is_empty() {
            "no requirements".to_owned()
        } else {
            why.join("; ")
        };
        rows.push((&matched.transformer, "matches", why));
    }
    for unmatched in &component.unmatched {
        let why: Vec<String> = unmatched.missing.iter().map(ToString::to_string).collect();
        rows.push((&unmatched.transformer, "no match", why.join("; ")));
    }
    rows.sort_by(|a, b| a.0.cmp(b.0));
    let width = rows
        .iter()
        .map(|row| row.0.len())
        .max()
        .unwrap_or(0)
        .max("TRANSFORMER".len());
    let provider_of = |transformer: &str| {
        providers.map(|plan| plan.provider_of(transformer).unwrap_or("?").to_owned())
    };
    let provider_width = rows
        .iter()
        .filter_map(|row| provider_of(row.0))
        .map(|name| name.len())
        .max()
        .map(|width| width.max("PROVIDER".len()));
    match provider_width {
        Some(pw) => writeln!(
            out,
            "  {:width$}  {:pw$}  {:8}  WHY",
            "TRANSFORMER", "PROVIDER", "RESULT"
        )?,
        None => writeln!(out, "  {:width$}  {:8}  WHY", "TRANSFORMER", "RESULT")?,
    }
    for (transformer, result, why) in rows {
        match (provider_width, provider_of(transformer)) {
            (Some(pw), Some(provider)) => writeln!(
                out,
                "  {transformer:width$}  {provider:pw$}  {result:8}  {why}"
            )?,
            _ => writeln!(out, "  {transformer:width$}  {result:8}  {why}")?,
        }
    }
    writeln!(out, "  unhandled  {}", list(&component.unhandled))
}

fn write_problems(what: &str, problems: &[Problem], out: &mut dyn Write) -> io::Result<()> {
    if problems.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    for problem in problems {
        writeln!(out, "{what}: {problem}")?;
    }
    Ok(())
}
