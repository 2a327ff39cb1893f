//! Reporting: everything a command tells a person or a tool besides its output — what a render
//! decided and did ([`verbose`]), a plan in words (`Plan::write_text`, the core's), the warnings, the failures grouped
//! by component, the `--verbose=json` events that close a render, and the exit status
//! (`docs/cli.md#exit-status`). The progress line of slow work is [`opm_core::progress`], which the
//! pipeline itself shows.
//!
//! [`render`] is the one place a render's outcome becomes words and a status: `opm mod build`,
//! `mod diff`, `mod vet` and `transformer test` all hand it what [`crate::render::build`] (or
//! `Planning::render`) returned. Every line goes
//! through the redactor of the module's sensitive values.

pub mod verbose;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use serde_json::json;

use crate::render::{Built, Render};
use opm_core::redact::{RedactingWriter, Redactor};

/// Exit status of a render or check that failed (`docs/cli.md#exit-status`).
pub const EXIT_FAILED: u8 = 1;
/// Exit status of bad usage or unreadable input (`docs/cli.md#exit-status`).
pub const EXIT_USAGE: u8 = 2;

/// How `--verbose` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verbose {
    /// Sentences for a person.
    Text,
    /// One JSON object per line.
    Json,
}

/// The most warnings of guests (what transformers and the renderer logged at `warn` level)
/// shown without `--verbose`: each call's log is bounded already, and this bounds the lines a
/// render of many components prints.
pub const MAX_GUEST_WARNINGS: usize = 50;

/// The most problems a failed render prints (with text output); a count says how many more.
pub const MAX_PROBLEMS_SHOWN: usize = 100;

/// Reports `built` on `stderr` — with `verbose`, what the render decided and did; the warnings;
/// the failures, or a render that could not be attempted — and hands a render that succeeded to
/// `finish`, which writes or compares it. Returns the exit status. Under `--verbose=json`,
/// every line on stderr is one JSON object, the last a `summary`.
pub fn render(
    built: Built,
    verbose: Option<Verbose>,
    stderr: &mut dyn Write,
    finish: &mut dyn FnMut(&Render, &Redactor) -> anyhow::Result<ExitCode>,
) -> std::io::Result<ExitCode> {
    let Built { redactor, render } = built;
    // Everything on stderr goes through the redactor, the module's own load errors included:
    // they may quote a sensitive value.
    let mut stderr = RedactingWriter::new(stderr, &redactor);
    let result = render.and_then(|render| {
        let status = match outcome(&render, verbose, &redactor, &mut stderr)? {
            Some(failed) => Ok(failed),
            None => finish(&render, &redactor),
        };
        render.free();
        status
    });
    let status = if verbose == Some(Verbose::Json) {
        json_exit_status(result, &redactor, &mut stderr)
    } else {
        exit_status(result, &mut stderr)
    };
    stderr.flush()?;
    Ok(status)
}

/// Reports what `render` decided and what failed; the exit status when it failed.
fn outcome(
    render: &Render,
    verbose: Option<Verbose>,
    redactor: &Redactor,
    stderr: &mut dyn Write,
) -> std::io::Result<Option<ExitCode>> {
    let Render {
        plan,
        context,
        rendered,
        ..
    } = render;
    if let Some(format) = verbose {
        verbose::report(format, plan, context, rendered, redactor, stderr)?;
    }
    if verbose == Some(Verbose::Json) {
        events(render, redactor, stderr)?;
    } else {
        for warning in plan.warnings() {
            let warning = warning.to_string();
            writeln!(
                stderr,
                "warning: {}",
                opm_core::printable::escape_lines(&warning)
            )?;
        }
        let guest = rendered.guest_warnings();
        for warning in guest.iter().take(MAX_GUEST_WARNINGS) {
            writeln!(
                stderr,
                "warning: {}",
                opm_core::printable::escape_lines(warning)
            )?;
        }
        if guest.len() > MAX_GUEST_WARNINGS {
            writeln!(
                stderr,
                "warning: {} more warnings of transformers and the renderer (--verbose shows them)",
                guest.len() - MAX_GUEST_WARNINGS
            )?;
        }
        if let Some(warning) = redactor.warning() {
            writeln!(stderr, "warning: {warning}")?;
        }
        if render.failed() {
            failures(render, stderr)?;
        }
    }
    Ok(render.failed().then(|| ExitCode::from(EXIT_FAILED)))
}

/// The exit status of a command's `result`, after writing its error, if any, to `stderr` (with
/// control characters other than line feeds escaped, [`opm_core::printable::escape_lines`]): a
/// broken pipe is a quiet success, any other error exits with [`EXIT_USAGE`].
pub fn exit_status(result: anyhow::Result<ExitCode>, stderr: &mut dyn Write) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            // Errors quote what registries and files said: no escape sequence reaches the
            // terminal through them.
            let message = format!("{error:#}");
            let _ = writeln!(
                stderr,
                "error: {}",
                opm_core::printable::escape_lines(&message)
            );
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// Whether `error` is, at bottom, a write into a pipe whose reader has gone.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// [`exit_status`] under `--verbose=json`: an error that stopped the command before it could
/// report (a module or provider that does not load) is an `error` event and a `summary` with
/// status 2.
fn json_exit_status(
    result: anyhow::Result<ExitCode>,
    redactor: &Redactor,
    stderr: &mut dyn Write,
) -> ExitCode {
    match result {
        Err(error) if !is_broken_pipe(&error) => {
            let _ = verbose::event(
                json!({"event": "error", "message": format!("{error:#}")}),
                redactor,
                stderr,
            );
            let _ = verbose::event(
                json!({"event": "summary", "status": EXIT_USAGE, "errors": 1,
                       "warnings": 0, "resources": 0}),
                redactor,
                stderr,
            );
            ExitCode::from(EXIT_USAGE)
        }
        other => exit_status(other, stderr),
    }
}

/// The warnings and failures as `--verbose=json` events: a `warning` per warning, an `error`
/// per plan error and render failure (with its component, and transformer and digest when a
/// call failed), then a `summary` with the counts and the exit status.
fn events(render: &Render, redactor: &Redactor, stderr: &mut dyn Write) -> std::io::Result<()> {
    let Render { plan, rendered, .. } = render;
    let mut emit = |value| verbose::event(value, redactor, &mut *stderr);
    for warning in plan.warnings() {
        emit(json!({"event": "warning", "component": warning.component(),
                    "message": warning.to_string()}))?;
    }
    let guest = rendered.guest_warnings();
    for warning in &guest {
        emit(json!({"event": "warning", "message": warning}))?;
    }
    let unredacted = redactor.warning();
    if let Some(warning) = &unredacted {
        emit(json!({"event": "warning", "message": warning}))?;
    }
    for problem in plan.errors() {
        emit(json!({"event": "error", "component": problem.component(),
                    "message": problem.to_string()}))?;
    }
    for failure in &rendered.failures {
        emit(json!({"event": "error", "component": failure.component,
                    "transformer": failure.transformer, "provider": failure.provider,
                    "digest": failure.digest,
                    "message": failure.error.to_string()}))?;
    }
    for failure in &rendered.patch_failures {
        emit(
            json!({"event": "error", "patch": failure.index, "at": failure.at,
                    "message": failure.to_string()}),
        )?;
    }
    if let Some(failure) = &rendered.renderer_failure {
        emit(json!({"event": "error", "renderer": failure.renderer,
                    "provider": failure.provider, "digest": failure.digest,
                    "message": failure.to_string()}))?;
    }
    let errors = plan.errors().len()
        + rendered.failures.len()
        + rendered.patch_failures.len()
        + usize::from(rendered.renderer_failure.is_some());
    let status = if errors == 0 { 0 } else { EXIT_FAILED };
    emit(
        json!({"event": "summary", "status": status, "errors": errors,
                "warnings": plan.warnings().len() + guest.len() + usize::from(unredacted.is_some()),
                "resources": if errors == 0 { rendered.resources.len() } else { 0 }}),
    )
}

/// Writes every plan error and render failure, grouped by component.
fn failures(render: &Render, stderr: &mut dyn Write) -> std::io::Result<()> {
    let Render { plan, rendered, .. } = render;
    let mut by_component: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut general = Vec::new();
    for problem in plan.errors() {
        match problem.component() {
            Some(component) => by_component
                .entry(component.to_owned())
                .or_default()
                .push(problem.to_string()),
            None => general.push(problem.to_string()),
        }
    }
    general.extend(rendered.patch_failures.iter().map(ToString::to_string));
    general.extend(rendered.renderer_failure.iter().map(ToString::to_string));
    for failure in &rendered.failures {
        by_component
            .entry(failure.component.clone())
            .or_default()
            .push(format!(
                "transformer {} ({}, provider {}) {}",
                failure.transformer, failure.digest, failure.provider, failure.error
            ));
    }
    let count = general.len() + by_component.values().map(Vec::len).sum::<usize>();
    let components = match by_component.len() {
        // Only problems of the module as a whole, such as its patches'.
        0 => String::new(),
        1 => " in 1 component".to_owned(),
        n => format!(" in {n} components"),
    };
    writeln!(
        stderr,
        "error: render failed with {count} problem{}{components}",
        if count == 1 { "" } else { "s" },
    )?;
    // What a guest, a module or a file said is quoted in these lines: escaped, and no more of
    // them than a reader takes in (every one is in `--verbose=json`).
    let mut shown = 0;
    for problem in general {
        if shown == MAX_PROBLEMS_SHOWN {
            break;
        }
        shown += 1;
        writeln!(stderr, "  {}", opm_core::printable::escape_lines(&problem))?;
    }
    for (component, problems) in by_component {
        if shown == MAX_PROBLEMS_SHOWN {
            break;
        }
        writeln!(stderr, "  component {component:?}:")?;
        for problem in problems {
            if shown == MAX_PROBLEMS_SHOWN {
                break;
            }
            shown += 1;
            let problem = opm_core::printable::escape_lines(&problem);
            writeln!(stderr, "    - {}", problem.replace('\n', "\n      "))?;
        }
    }
    if count > shown {
        writeln!(
            stderr,
            "  … and {} more problems (--verbose=json lists every one)",
            count - shown
        )?;
    }
    Ok(())
}
