//! The `opm` command line: argument parsing and dispatch to one file per subcommand.
//!
//! [`run`] is the whole CLI as a function of its arguments and output streams, so tests can drive
//! it in-process; `main.rs` only connects it to the process. Exit status: 0 success, 1 the render
//! or check failed (including a signature that does not verify), 2 bad usage, unreadable input,
//! or input that loading refuses, such as a tampered bundle (`docs/cli.md#exit-status`).

pub mod commands;

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use crate::report::{EXIT_FAILED, EXIT_USAGE, exit_status};

/// opm renders platform-agnostic modules into platform manifests (Kubernetes, docker-compose,
/// Podman Quadlet) through sandboxed WebAssembly transformers.
#[derive(Debug, Parser)]
#[command(name = "opm", version, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Work with modules: render them, check them.
    #[command(subcommand, name = "mod")]
    Module(ModuleCommand),
    /// Render a whole platform: every release of a releases file in an environment, in one
    /// process; and the difference a change makes to every environment.
    #[command(subcommand)]
    Platform(commands::platform::PlatformCommand),
    /// Work with providers: install and lock, list, pack, push, pull, export, inspect, sign,
    /// verify.
    #[command(subcommand)]
    Provider(ProviderCommand),
    /// Write transformers in any language: scaffold, build, test.
    #[command(subcommand)]
    Transformer(TransformerCommand),
    /// The cache of compiled components: where it is, clearing it, its size limit.
    #[command(subcommand)]
    Cache(commands::cache::CacheCommand),
    /// opm as an Argo CD Config Management Plugin: its plugin.yaml, a module's parameters.
    #[command(subcommand)]
    Argocd(commands::argocd::ArgocdCommand),
    /// Sign any file with a P-256 key into a Sigstore bundle (FILE.sigstore.json), as cosign
    /// sign-blob does, offline.
    SignBlob(commands::blob::SignBlobArgs),
    /// Verify any file's Sigstore bundle — key-pair or keyless, offline — as cosign
    /// verify-blob does.
    VerifyBlob(commands::blob::VerifyBlobArgs),
    /// Print the shell completion script for bash, zsh, fish or powershell.
    Completion(commands::completion::CompletionArgs),
}

#[derive(Debug, Subcommand)]
enum TransformerCommand {
    /// Create a transformer project in Rust, JavaScript, Python or C.
    New(commands::transformer_new::NewArgs),
    /// Run a project's build command and check the component it produces.
    Build(commands::transformer_build::BuildArgs),
    /// Run a transformer's test cases in the sandbox (building the project first).
    Test(commands::transformer_test::TestArgs),
    /// Write a test case of what a real module's render passes the project's transformer.
    Case(commands::transformer_case::CaseArgs),
}

#[derive(Debug, Subcommand)]
enum ProviderCommand {
    /// Install and lock the providers of .opm/providers.yaml.
    Init(commands::provider_init::InitArgs),
    /// List the project's providers: required, locked, installed, newest in their source.
    List(commands::provider_list::ListArgs),
    /// Pack a provider source directory into one bundle file (NAME-VERSION.opmb).
    Pack(commands::provider_pack::PackArgs),
    /// Store a bundle (and its signature) in an OCI registry as a provider artifact.
    Push(commands::provider_push::PushArgs),
    /// Fetch a provider artifact from an OCI registry into a bundle file, every byte checked.
    Pull(commands::provider_pull::PullArgs),
    /// Show what a provider holds: metadata, digests, signature, transformers, definitions.
    Inspect(commands::provider_inspect::InspectArgs),
    /// Write a provider (the embedded one, or one the project installed) as a bundle file.
    Export(commands::provider_export::ExportArgs),
    /// Write the catalog of definitions built into opm, with its version, for a provider's
    /// `definitionsFrom:`.
    ExportCatalog(commands::provider_export_catalog::ExportCatalogArgs),
    /// Check a provider: every example module renders with it, its catalog version, and which
    /// catalog fields each transformer reads.
    Check(commands::provider_check::CheckArgs),
    /// Sign a bundle file with a minisign secret key (writes BUNDLE.minisig).
    Sign(commands::provider_sign::SignArgs),
    /// Verify a bundle's minisign signature against trusted public keys, and its digests.
    Verify(commands::provider_verify::VerifyArgs),
}

#[derive(Debug, Subcommand)]
enum ModuleCommand {
    /// Render a module into platform manifests.
    Build(commands::mod_build::BuildArgs),
    /// Load, validate and match a module without running any transformer.
    Vet(commands::mod_vet::VetArgs),
    /// Render a module and compare it with committed manifests or another provider's render.
    Diff(commands::mod_diff::DiffArgs),
    /// Write a first module.yaml, and its schema for editors, that renders as written.
    Init(commands::mod_init::InitArgs),
    /// Print a JSON Schema of module.yaml with every definition of a provider, for editors.
    Schema(commands::mod_schema::SchemaArgs),
    /// Render a module and push the render to an OCI registry as one reproducible artifact
    /// that Flux and Argo CD read (or write it as an OCI image layout).
    Push(Box<commands::mod_push::PushArgs>),
    /// Push a module itself (its file, or its directory's files) to an OCI registry, for
    /// releases files and `mod build oci://…` to render from there.
    Publish(commands::mod_publish::PublishArgs),
    /// Check a pushed render's signature (Sigstore, key-pair or keyless, offline) and, with
    /// --provenance, its signed SLSA provenance against its files.
    Verify(commands::mod_verify::VerifyArgs),
    /// Render again the inputs a directory's provenance (opm.render) records, and say whether
    /// the directory is exactly what they give.
    VerifyRender(commands::mod_verify_render::VerifyRenderArgs),
}

/// Where a command writes, and where it reads environment variables (`${env:NAME}`,
/// `SOURCE_DATE_EPOCH`) — the process's, or a test's.
pub struct Output<'a> {
    /// Rendered output.
    pub stdout: &'a mut dyn Write,
    /// Diagnostics, verbose output, errors.
    pub stderr: &'a mut dyn Write,
    /// Looks up an environment variable; [`process_env`] in the binary.
    pub env: &'a (dyn Fn(&str) -> Option<String> + Sync),
    /// Whether `stderr` is a terminal, where messages may be coloured (unless `NO_COLOR` is
    /// set: see [`Output::colors`]).
    pub stderr_is_terminal: bool,
    /// Whether `stdout` is a terminal, where `opm mod diff` colours its diff (the same rules).
    pub stdout_is_terminal: bool,
}

impl Output<'_> {
    /// Whether messages on `stderr` are coloured: only on a terminal, and never when the
    /// `NO_COLOR` environment variable is set to anything (<https://no-color.org>).
    pub fn colors(&self) -> bool {
        self.stderr_is_terminal && self.no_color_unset()
    }

    /// Whether what is written on `stdout` may be coloured: the same, for stdout.
    pub fn stdout_colors(&self) -> bool {
        self.stdout_is_terminal && self.no_color_unset()
    }

    fn no_color_unset(&self) -> bool {
        (self.env)("NO_COLOR").is_none_or(|value| value.is_empty())
    }
}

/// The process's environment, for [`Output::env`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

impl std::fmt::Debug for Output<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Output").finish_non_exhaustive()
    }
}

/// Runs the CLI with `args` (the first is the program name) and returns the exit status.
pub fn run<I, T>(args: I, out: &mut Output<'_>) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let status = if e.use_stderr() { EXIT_USAGE } else { 0 };
            let rendered = if e.use_stderr() && out.colors() {
                e.render().ansi().to_string()
            } else {
                e.to_string()
            };
            let stream = if e.use_stderr() {
                &mut *out.stderr
            } else {
                &mut *out.stdout
            };
            let _ = write!(stream, "{rendered}");
            return ExitCode::from(status);
        }
    };
    let result = match cli.command {
        Command::Module(ModuleCommand::Build(args)) => commands::mod_build::run(args, out),
        Command::Cache(command) => commands::cache::run(command, out),
        Command::Platform(command) => commands::platform::run(command, out),
        Command::Module(ModuleCommand::Vet(args)) => commands::mod_vet::run(args, out),
        Command::Module(ModuleCommand::Diff(args)) => commands::mod_diff::run(args, out),
        Command::Module(ModuleCommand::Init(args)) => commands::mod_init::run(args, out),
        Command::Module(ModuleCommand::Schema(args)) => commands::mod_schema::run(args, out),
        Command::Module(ModuleCommand::Push(args)) => commands::mod_push::run(*args, out),
        Command::Module(ModuleCommand::Publish(args)) => commands::mod_publish::run(args, out),
        Command::Module(ModuleCommand::Verify(args)) => commands::mod_verify::run(args, out),
        Command::Module(ModuleCommand::VerifyRender(args)) => {
            commands::mod_verify_render::run(args, out)
        }
        Command::Argocd(command) => commands::argocd::run(command, out),
        Command::Completion(args) => commands::completion::run(args, out),
        Command::SignBlob(args) => commands::blob::sign(args, out),
        Command::VerifyBlob(args) => commands::blob::verify(args, out),
        Command::Provider(ProviderCommand::Init(args)) => commands::provider_init::run(args, out),
        Command::Provider(ProviderCommand::List(args)) => commands::provider_list::run(args, out),
        Command::Provider(ProviderCommand::Pack(args)) => commands::provider_pack::run(args, out),
        Command::Provider(ProviderCommand::Push(args)) => commands::provider_push::run(args, out),
        Command::Provider(ProviderCommand::Pull(args)) => commands::provider_pull::run(args, out),
        Command::Provider(ProviderCommand::Export(args)) => {
            commands::provider_export::run(args, out)
        }
        Command::Provider(ProviderCommand::ExportCatalog(args)) => {
            commands::provider_export_catalog::run(args, out)
        }
        Command::Provider(ProviderCommand::Check(args)) => commands::provider_check::run(args, out),
        Command::Provider(ProviderCommand::Inspect(args)) => {
            commands::provider_inspect::run(args, out)
        }
        Command::Provider(ProviderCommand::Sign(args)) => commands::provider_sign::run(args, out),
        Command::Provider(ProviderCommand::Verify(args)) => {
            commands::provider_verify::run(args, out)
        }
        Command::Transformer(TransformerCommand::New(args)) => {
            commands::transformer_new::run(args, out)
        }
        Command::Transformer(TransformerCommand::Build(args)) => {
            commands::transformer_build::run(args, out)
        }
        Command::Transformer(TransformerCommand::Test(args)) => {
            commands::transformer_test::run(args, out)
        }
        Command::Transformer(TransformerCommand::Case(args)) => {
            commands::transformer_case::run(args, out)
        }
    };
    exit_status(result, out.stderr)
}
