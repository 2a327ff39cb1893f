//! `opm cache dir`, `opm cache clear` and `opm cache limit`: where compiled components are
//! kept, emptying it, and how large it may grow.
//!
//! The cache is only ever a speed-up (a render compiles what it does not find), so clearing it
//! is always safe; the next render of each provider compiles its components once more. It is
//! kept under a size limit (default 1 GiB): storing an entry that takes it over evicts the
//! least recently used entries first.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::Subcommand;

use crate::cli::Output;
use opm_sandbox::{Bytes, CompileCache, Tally};

/// The subcommands of `opm cache`.
#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Print the directory of compiled components, with how many there are and their size.
    Dir,
    /// Remove every compiled component from the cache.
    Clear,
    /// Show the cache's size limit, or set it (least recently used entries are evicted past it).
    Limit {
        /// The new limit: 2Gi, 500Mi, … (default 1Gi).
        #[arg(value_name = "SIZE", value_parser = opm_sandbox::limits::parse_size)]
        size: Option<u64>,
    },
}

/// Runs `opm cache dir` or `opm cache clear`.
pub fn run(command: CacheCommand, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let Some(dir) = CompileCache::default_dir(out.env) else {
        writeln!(
            out.stderr,
            "the compile cache is off (OPM_CACHE_DIR=off, or neither XDG_CACHE_HOME nor HOME is set)"
        )?;
        return Ok(ExitCode::SUCCESS);
    };
    match command {
        CacheCommand::Dir => {
            writeln!(out.stdout, "{}", dir.display())?;
            let entries = match CompileCache::entries(&dir) {
                Ok(entries) => entries,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                Err(error) => {
                    return Err(error).with_context(|| format!("reading {}", dir.display()));
                }
            };
            let tally = Tally::of(&entries);
            writeln!(
                out.stderr,
                "{tally}, {} of at most {} (`opm cache limit SIZE` sets it)",
                Bytes(tally.bytes),
                Bytes(CompileCache::size_limit(&dir))
            )?;
        }
        CacheCommand::Limit { size: None } => {
            writeln!(out.stdout, "{}", Bytes(CompileCache::size_limit(&dir)))?;
        }
        CacheCommand::Limit { size: Some(limit) } => {
            let evicted = CompileCache::set_size_limit(&dir, limit)
                .with_context(|| format!("setting the size limit of {}", dir.display()))?;
            writeln!(
                out.stderr,
                "the compile cache {} may now take {}; evicted {evicted} ({}), least recently \
                 used first",
                dir.display(),
                Bytes(limit),
                Bytes(evicted.bytes)
            )?;
        }
        CacheCommand::Clear => {
            let removed = CompileCache::clear(&dir)
                .with_context(|| format!("clearing the compile cache {}", dir.display()))?;
            writeln!(
                out.stderr,
                "removed {removed} ({}) from {}",
                Bytes(removed.bytes),
                dir.display()
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
