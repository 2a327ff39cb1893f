//! `opm provider list`: the providers the project's `.opm/providers.yaml` uses — each one's
//! requirement, locked version and digest, whether its locked bytes are installed, and the
//! newest version its source offers (within the requirement, which `init --upgrade` would take,
//! and beyond it).

use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::cli::Output;
use opm_core::provider::installed::{self, Project};

/// Arguments of `opm provider list`.
#[derive(Debug, Args)]
pub struct ListArgs {}

/// Runs `opm provider list`.
pub fn run(_args: ListArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir()?;
    let root = installed::find(&cwd, out.env)?.with_context(|| {
        format!(
            "no {}/{} in {} or above: this is not a project that installs providers",
            installed::DIR,
            installed::CONFIG,
            cwd.display()
        )
    })?;
    let project = Project::load(&root)?;
    let lock = project.lock()?;
    let mut rows = vec![[
        "NAME".to_owned(),
        "REQUIRES".into(),
        "LOCKED".into(),
        "INSTALLED".into(),
        "DIGEST".into(),
        "NEWEST IN SOURCE".into(),
    ]];
    for requirement in &project.config.providers {
        let name = &requirement.name;
        let locked = lock.get(name);
        let installed = match locked {
            None => "-".to_owned(),
            Some(_) => match installed::load_locked(&project, &lock, name) {
                Ok(_) => "yes".into(),
                Err(e) => format!("NO ({})", short_reason(&e.to_string())),
            },
        };
        let wanted = installed::version_req(requirement).map_err(anyhow::Error::msg)?;
        let newest =
            match installed::source_of(&project, requirement, &(out.env)).and_then(|source| {
                installed::offered(&source, name, Some(&opm_registry::Registry::default()))
            }) {
                Ok(offered) => {
                    let allowed = offered.keys().rev().find(|v| wanted.matches(v));
                    let any = offered.keys().next_back();
                    match (allowed, any) {
                        (None, None) => "none".to_owned(),
                        (Some(a), Some(b)) if a == b => a.to_string(),
                        (Some(a), Some(b)) => format!("{a} ({b} beyond {})", requirement.version),
                        (None, Some(b)) => {
                            format!("none allowed ({b} beyond {})", requirement.version)
                        }
                        (Some(a), None) => a.to_string(),
                    }
                }
                Err(e) => format!("? ({})", short_reason(&e.to_string())),
            };
        rows.push([
            name.clone(),
            requirement.version.clone(),
            locked.map_or("-".to_owned(), |l| l.version.clone()),
            installed,
            locked.map_or("-".to_owned(), |l| {
                l.digest.get(..19).unwrap_or(&l.digest).to_owned() + "…"
            }),
            newest,
        ]);
    }
    // Cells quote registries' errors and what bundles say: escaped before they are measured.
    let rows: Vec<[String; 6]> = rows
        .into_iter()
        .map(|row| row.map(|cell| opm_core::printable::escape(&cell).into_owned()))
        .collect();
    let widths: Vec<usize> = (0..6)
        .map(|i| {
            rows.iter()
                .map(|row| row[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        writeln!(out.stdout, "{}", cells.join("  ").trim_end())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The first clause of an error, for a table cell.
fn short_reason(message: &str) -> String {
    let message = message.split_once(": ").map_or(message, |(_, rest)| rest);
    message
        .split(';')
        .next()
        .unwrap_or(message)
        .trim()
        .to_owned()
}
