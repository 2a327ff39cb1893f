//! `opm mod init`: a first module that renders as written.
//!
//! Writes `module.yaml` (one stateless component, exposed through a Service, with parameters
//! for its image, replicas and an optional Ingress; every line explained) and `module.schema.json` (what `opm mod schema` prints), which the module's first
//! line names so that an editor with the YAML language server checks and completes it. Refuses
//! to overwrite either file.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use super::mod_schema;
use crate::cli::Output;
use opm_core::names::is_dns_label;
use opm_core::provider;

/// Arguments of `opm mod init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The directory to write `module.yaml` and `module.schema.json` in (created if missing).
    ///
    /// Example: opm mod init shop
    #[arg(default_value = ".", value_name = "DIR")]
    pub dir: PathBuf,

    /// The module's name (a DNS label); default: the directory's name.
    ///
    /// Example: --name shop
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

/// Runs `opm mod init`.
pub fn run(args: InitArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    let dir = &args.dir;
    let name = match &args.name {
        Some(name) => name.clone(),
        None => {
            let absolute = std::path::absolute(dir)?;
            let base = absolute
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("app")
                .to_lowercase();
            let cleaned: String = base
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect();
            let cleaned = cleaned.trim_matches('-');
            if cleaned.is_empty() {
                "app".to_owned()
            } else {
                cleaned.chars().take(63).collect()
            }
        }
    };
    anyhow::ensure!(
        is_dns_label(&name),
        "module name {name:?} must be a DNS label: lowercase letters, digits and '-', at most 63; \
         choose one with --name"
    );
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let module = dir.join("module.yaml");
    let schema = dir.join("module.schema.json");
    for path in [&module, &schema] {
        anyhow::ensure!(
            !path.exists(),
            "{} exists already; opm mod init does not overwrite files",
            path.display()
        );
    }
    let provider = crate::embedded::load()?;
    write_new(
        &schema,
        mod_schema::text(&provider::ProviderSet::single(provider), None)?.as_bytes(),
    )?;
    write_new(&module, template(&name).as_bytes())?;
    writeln!(
        out.stderr,
        "wrote {} and {}; render it with: opm mod build {}",
        module.display(),
        schema.display(),
        module.display()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Creates `path` with `bytes`; an existing file is an error, even one that appeared since the
/// check above.
fn write_new(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    file.write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))
}

/// The module `opm mod init` writes, named `name`.
fn template(name: &str) -> String {
    format!(
        r#"# yaml-language-server: $schema=module.schema.json
#
# A module: components, each made of resources (what it is), traits (how it behaves) and
# policies (rules it follows). Render it with `opm mod build`, check it with `opm mod vet`,
# and see every definition you can attach in module.schema.json (`opm mod schema`).
apiVersion: core.opm.dev/v1
kind: Module
metadata:
  name: {name}
  version: 0.1.0
  # Where the rendered resources go; `opm mod build --namespace` overrides it.
  namespace: {name}
# The module's parameters: what its users may set with a values file (`-f values.yaml`) or
# `--set replicas=3`, as a JSON Schema with defaults. `opm mod vet` lists them with the values
# a render would use; `opm mod schema {name} --values` writes a schema for values files.
config:
  properties:
    image: {{type: string, default: "nginx:1.27", description: The container image}}
    replicas: {{type: integer, minimum: 1, default: 2, description: How many pods run}}
    host:
      type: string
      description: A public host name for an Ingress; without one, no Ingress is rendered
components:
  # One stateless component (a Deployment), reachable through a Service named after it. A
  # ${{…}} uses a parameter: alone it keeps the parameter's type, and anything more is a CEL
  # expression (docs/expressions.md in the opm repository).
  web:
    resources:
      Container:
        image: ${{config.image}}
        ports:
          http: {{containerPort: 80}}
    traits:
      # How many pods run.
      Replicas: ${{config.replicas}}
      # A ClusterIP Service on the container's ports.
      Expose: {{type: ClusterIP}}
      # Attached only when its `$when` holds: here, when a host name is set.
      Ingress:
        $when: ${{has(config.host)}}
        host: ${{config.host}}
        port: http
"#
    )
}
