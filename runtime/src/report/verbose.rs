//! `--verbose` and `--verbose=json`: what the render decided and did, on stderr.
//!
//! Human form, per component: the transformers that matched and why, those that did not and
//! what the component lacks, unhandled attachments, then each call's resources, fuel and time
//! and what its guest logged. JSON form: the same as one object per line, each with an `event`
//! (`plan`, `component`, `call`, `log`), so a tool can follow a render with `jq`; `opm mod
//! build` adds `warning`, `error` and a closing `summary` ([`super::render`]), so that every line
//! on stderr is one JSON object.
//!
//! Both go through the command's redacting stderr, so no sensitive value appears here.

use std::io::{self, Write};

use serde_json::json;

use super::Verbose;
use crate::render::{CallReport, CodeLoad, PatchReport, RenderContext, Rendered};
use opm_core::matching::{ComponentPlan, Plan};
use opm_core::redact::Redactor;

/// Reports the plan, the calls, what each of the module's patches changed and the renderer's call.
pub fn report(
    format: Verbose,
    plan: &Plan,
    context: &RenderContext,
    rendered: &Rendered,
    redactor: &Redactor,
    out: &mut dyn Write,
) -> io::Result<()> {
    let (calls, patches, renderer) = (
        &rendered.calls,
        &rendered.patches,
        rendered.renderer.as_ref(),
    );
    match format {
        Verbose::Text => {
            code_text(&rendered.code, out)?;
            text(plan, context, calls, out)?;
            patches_text(patches, out)?;
            renderer.map_or(Ok(()), |renderer| renderer_text(renderer, out))
        }
        Verbose::Json => {
            json_lines(plan, context, calls, redactor, out)?;
            for code in &rendered.code {
                event(
                    json!({
                        "event": "code",
                        "name": code.name,
                        "digest": code.digest,
                        "source": code.source,
                        "micros": code.elapsed.as_micros() as u64,
                    }),
                    redactor,
                    out,
                )?;
            }
            for patch in patches {
                event(patch_event(patch), redactor, out)?;
            }
            if let Some(renderer) = renderer {
                event(
                    json!({
                        "event": "renderer",
                        "renderer": renderer.transformer,
                        "files": renderer.resources,
                        "fuel": renderer.fuel_used,
                        "micros": renderer.elapsed.as_micros() as u64,
                        "logsDropped": renderer.logs_dropped,
                    }),
                    redactor,
                    out,
                )?;
                for log in &renderer.logs {
                    event(
                        json!({"event": "log", "renderer": renderer.transformer,
                               "level": log.level, "message": log.message}),
                        redactor,
                        out,
                    )?;
                }
            }
            Ok(())
        }
    }
}

/// Where each component's code came from: the binary, the compile cache, or a compile now.
fn code_text(code: &[CodeLoad], out: &mut dyn Write) -> io::Result<()> {
    for code in code {
        let how = match code.source {
            "embedded" => "precompiled, built into opm",
            "cache" => "loaded from the compile cache",
            "cache-winch" => "Winch's code, loaded from the compile cache",
            "compiled-winch" => {
                "compiled now with Winch, the quick compiler (--optimized: with Cranelift)"
            }
            _ => "compiled now with Cranelift",
        };
        writeln!(
            out,
            "code of {}: {how} ({:.2} ms)",
            code.name,
            code.elapsed.as_secs_f64() * 1000.0
        )?;
    }
    Ok(())
}

/// The renderer's call: the files it laid out, its fuel and time, and what it logged.
fn renderer_text(renderer: &CallReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "{}: {} file{}, {} fuel, {:.2} ms",
        renderer.transformer,
        renderer.resources,
        if renderer.resources == 1 { "" } else { "s" },
        renderer.fuel_used,
        renderer.elapsed.as_secs_f64() * 1000.0
    )?;
    for line in &renderer.logs {
        writeln!(out, "  [{}] {}", line.level, line.message)?;
    }
    if renderer.logs_dropped > 0 {
        writeln!(
            out,
            "  ({} more log lines dropped at the log limit)",
            renderer.logs_dropped
        )?;
    }
    Ok(())
}

/// Each patch, in the order applied, with the objects it changed and those it targeted but
/// left as they were.
fn patches_text(patches: &[PatchReport], out: &mut dyn Write) -> io::Result<()> {
    for patch in patches {
        writeln!(
            out,
            "patch patches[{}] ({}) {} on {}:",
            patch.index, patch.at, patch.operation, patch.target
        )?;
        for object in &patch.changed {
            writeln!(out, "  changed {object}")?;
        }
        for object in &patch.unchanged {
            writeln!(out, "  matched, unchanged {object}")?;
        }
        if patch.changed.is_empty() && patch.unchanged.is_empty() {
            writeln!(out, "  matched nothing")?;
        }
    }
    Ok(())
}

fn patch_event(patch: &PatchReport) -> serde_json::Value {
    json!({
        "event": "patch",
        "patch": patch.index,
        "at": patch.at,
        "target": patch.target,
        "operation": patch.operation,
        "changed": patch.changed,
        "unchanged": patch.unchanged,
    })
}

fn text(
    plan: &Plan,
    context: &RenderContext,
    calls: &[CallReport],
    out: &mut dyn Write,
) -> io::Result<()> {
    let instance = if context.instance == context.name {
        String::new()
    } else {
        format!(" as instance {}", context.instance)
    };
    // With several providers, each transformer is named with its own.
    let several = plan.providers().len() > 1;
    let named = |transformer: &str| match plan.provider_of(transformer).filter(|_| several) {
        Some(provider) => format!("{transformer} (provider {provider})"),
        None => transformer.to_owned(),
    };
    writeln!(
        out,
        "render: module {} {}{instance} with provider{} {} into namespace {} ({} call{})",
        context.name,
        context.version,
        if several { "s" } else { "" },
        context.provider,
        context.namespace,
        calls.len(),
        if calls.len() == 1 { "" } else { "s" }
    )?;
    if let Some(renderer) = plan.renderer() {
        writeln!(out, "{}", opm_core::matching::text::renderer_line(renderer))?;
    }
    for component in plan.components() {
        writeln!(out, "component {:?}:", component.name)?;
        for matched in &component.matched {
            let reasons: Vec<String> = matched.reasons.iter().map(ToString::to_string).collect();
            let why = if reasons.is_empty() {
                "it requires nothing".to_owned()
            } else {
                reasons.join("; ")
            };
            writeln!(out, "  matched {}: {why}", named(&matched.transformer))?;
        }
        for unmatched in &component.unmatched {
            let missing: Vec<String> = unmatched.missing.iter().map(ToString::to_string).collect();
            writeln!(
                out,
                "  not matched {}: {}",
                named(&unmatched.transformer),
                missing.join("; ")
            )?;
        }
        if !component.unhandled.is_empty() {
            writeln!(
                out,
                "  unhandled (no matched transformer names them): {}",
                component.unhandled.join(", ")
            )?;
        }
        for call in calls.iter().filter(|c| c.component == component.name) {
            writeln!(
                out,
                "  called {}: {} resource{}, {} fuel, {:.2} ms",
                named(&call.transformer),
                call.resources,
                if call.resources == 1 { "" } else { "s" },
                call.fuel_used,
                call.elapsed.as_secs_f64() * 1000.0
            )?;
            for line in &call.logs {
                writeln!(out, "    [{}] {}", line.level, line.message)?;
            }
            if call.logs_dropped > 0 {
                writeln!(
                    out,
                    "    ({} more log lines dropped at the log limit)",
                    call.logs_dropped
                )?;
            }
        }
    }
    Ok(())
}

fn json_lines(
    plan: &Plan,
    context: &RenderContext,
    calls: &[CallReport],
    redactor: &Redactor,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut line = |value: serde_json::Value| event(value, redactor, &mut *out);
    line(json!({
        "event": "plan",
        "module": context.name,
        "instance": context.instance,
        "version": context.version,
        "provider": context.provider,
        "providers": plan.providers().iter().map(|p| &p.name).collect::<Vec<_>>(),
        "renderer": plan.renderer(),
        "env": plan.env_read(),
        "namespace": context.namespace,
        "strict": context.strict,
        "calls": calls.len(),
        "ok": plan.is_ok(),
    }))?;
    for component in plan.components() {
        line(component_event(component))?;
    }
    for call in calls {
        line(json!({
            "event": "call",
            "component": call.component,
            "transformer": call.transformer,
            "provider": plan.provider_of(&call.transformer),
            "resources": call.resources,
            "fuel": call.fuel_used,
            "micros": call.elapsed.as_micros() as u64,
            "logsDropped": call.logs_dropped,
        }))?;
        for log in &call.logs {
            line(json!({
                "event": "log",
                "component": call.component,
                "transformer": call.transformer,
                "provider": plan.provider_of(&call.transformer),
                "level": log.level,
                "message": log.message,
            }))?;
        }
    }
    Ok(())
}

/// Writes `value` as one line of JSON, every string in it redacted first: a value that holds
/// escapes of its own would otherwise be escaped twice and slip past the redacting writer.
pub fn event(
    mut value: serde_json::Value,
    redactor: &Redactor,
    out: &mut dyn Write,
) -> io::Result<()> {
    redactor.redact_value(&mut value);
    serde_json::to_writer(&mut *out, &value)?;
    out.write_all(b"\n")
}

fn component_event(component: &ComponentPlan) -> serde_json::Value {
    let mut event = serde_json::Map::new();
    event.insert("event".into(), json!("component"));
    event.insert("component".into(), json!(component.name));
    if let Ok(serde_json::Value::Object(plan)) = serde_json::to_value(component) {
        event.extend(plan.into_iter().filter(|(key, _)| key != "name"));
    }
    serde_json::Value::Object(event)
}
