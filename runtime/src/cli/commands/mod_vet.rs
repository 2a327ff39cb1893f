//! `opm mod vet`: load, validate and match a module, then render a sound plan writing nothing
//! (`--plan-only`: run no transformer).
//!
//! Prints the plan (`docs/matching.md#the-plan`): per component, which transformers match and why,
//! which do not and what is missing, and what no match handles (with `-o json --inputs`, each
//! call with the component and context JSON its transformer receives); then warnings and errors, and
//! what the render refuses (a name over the platform's limit, a failing call). Exits 1 when the
//! plan has errors or the render fails, 2 when the module or provider cannot be loaded.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::module_args::ModuleArgs;
use crate::authoring::cases;
use crate::cli::{EXIT_FAILED, Output};
use crate::render::{self, Built, Planned, RenderContext, Request};
use opm_core::matching;
use opm_core::redact::{RedactingWriter, Redactor};
use opm_sandbox::CompileCache;

/// Arguments of `opm mod vet`.
#[derive(Debug, Args)]
pub struct VetArgs {
    #[command(flatten)]
    pub module: ModuleArgs,

    /// How to print the plan.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = VetFormat::Text)]
    pub output: VetFormat,

    /// Check the plan only: run no transformer. Without it, a sound plan is rendered too,
    /// writing nothing, so that what only the output shows (a name over the platform's limit, a
    /// call that fails) is found here.
    #[arg(long)]
    pub plan_only: bool,

    /// With -o json: add to each call `receives`, the JSON its transformer is given — the
    /// `component` and the `context`, as a case folder of `opm transformer test` holds them
    /// (component.json, context.json) — with the module's sensitive values masked.
    #[arg(long)]
    pub inputs: bool,
}

/// The formats `opm mod vet` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VetFormat {
    /// A table per component, then warnings, errors and a summary.
    Text,
    /// The plan as one JSON object.
    Json,
}

/// Runs `opm mod vet`: the front half of the render `opm mod build` would run with the same
/// flags ([`render::plan`]), printed, and its back half when the plan is sound.
pub fn run(args: VetArgs, out: &mut Output<'_>) -> anyhow::Result<ExitCode> {
    if args.inputs && args.output != VetFormat::Json {
        anyhow::bail!(
            "--inputs adds what each call receives to the plan's JSON: use it with -o json"
        );
    }
    let request = Request {
        explain: matching::Explain::Everything,
        cache: CompileCache::from_env(out.env),
        ..args.module.request()
    };
    let Planned { redactor, planning } = render::plan(&request, out.env);
    // The plan is not rendered output: what vet prints on stdout goes through the redactor as
    // well as everything on stderr, the module's own load errors included.
    let mut stdout = RedactingWriter::new(&mut *out.stdout, &redactor);
    let mut stderr = RedactingWriter::new(&mut *out.stderr, &redactor);
    if let Some(warning) = redactor.warning() {
        writeln!(stderr, "warning: {warning}")?;
    }
    let result = planning.and_then(|planning| {
        let inputs = args.inputs.then_some((&planning.context, &redactor));
        let status = print(&args, &planning.plan, inputs, &mut stdout, &mut stderr)?;
        if status != ExitCode::SUCCESS || args.plan_only {
            return Ok(status);
        }
        // A sound plan is rendered too, writing nothing: what only the transformers' output
        // shows — a name over the platform's limit, a call that fails — is found here, not at
        // deploy.
        stdout.flush()?;
        let built = Built {
            render: planning.render(&request, &redactor, None),
            redactor: redactor.clone(),
        };
        let status =
            crate::report::render(built, None, &mut stderr, &mut |_, _| Ok(ExitCode::SUCCESS))?;
        if status != ExitCode::SUCCESS {
            writeln!(
                stderr,
                "error: the plan is sound, but rendering it fails as above (mod vet renders it \
                 too, writing nothing)"
            )?;
        }
        Ok(status)
    });
    let status = crate::report::exit_status(result, &mut stderr);
    stdout.flush()?;
    stderr.flush()?;
    Ok(status)
}

/// Prints `plan` as `args` ask — with `inputs`, each call with what it receives in the
/// render's context, masked by the redactor — and says on `stderr` how many errors it has.
fn print(
    args: &VetArgs,
    plan: &matching::Plan,
    inputs: Option<(&RenderContext, &Redactor)>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    match args.output {
        VetFormat::Text => plan.write_text(stdout)?,
        VetFormat::Json => {
            let mut json = serde_json::to_value(plan)?;
            if let Some((context, redactor)) = inputs {
                add_inputs(&mut json, plan, context, redactor);
            }
            serde_json::to_writer_pretty(&mut *stdout, &json)?;
            writeln!(stdout)?;
        }
    }
    if plan.is_ok() {
        Ok(ExitCode::SUCCESS)
    } else {
        let count = plan.errors().len();
        writeln!(
            stderr,
            "error: the plan has {count} error{}",
            if count == 1 { "" } else { "s" }
        )?;
        Ok(ExitCode::from(EXIT_FAILED))
    }
}

/// Adds to each call of `json` (the plan's JSON) `receives`: the component JSON and the
/// context the call is given — the very values the render passes it (`Call::input`,
/// `RenderContext::for_call`) — every string masked by `redactor` as a whole.
fn add_inputs(
    json: &mut serde_json::Value,
    plan: &matching::Plan,
    context: &RenderContext,
    redactor: &Redactor,
) {
    let Some(entries) = json.get_mut("calls").and_then(|c| c.as_array_mut()) else {
        return;
    };
    for (entry, call) in entries.iter_mut().zip(plan.calls()) {
        let mut receives = serde_json::json!({
            "component": call.input_value(),
            "context": cases::context_json(&context.for_call(call)),
        });
        redactor.redact_value(&mut receives);
        entry["receives"] = receives;
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    const PROVIDER_DIR: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../crates/core/src/matching/testdata/provider"
    );

    const MODULE: &str = "\
apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: shop, version: 1.4.0}
components:
  api:
    metadata:
      labels: {core.opm.dev/workload-type: stateless}
    resources:
      opm.dev/resources/workload@v1#Container: {image: ghcr.io/acme/api:1.4.0}
    traits:
      opm.dev/traits/network@v1#Expose: {type: ClusterIP}
";

    /// The test provider, with a real component in place of its placeholder: loading checks
    /// every component, even for `vet`, which runs none.
    fn provider_dir(dir: &Path) -> PathBuf {
        let provider = dir.join("provider");
        std::fs::create_dir_all(&provider).unwrap();
        std::fs::copy(
            Path::new(PROVIDER_DIR).join("provider.yaml"),
            provider.join("provider.yaml"),
        )
        .unwrap();
        let embedded = crate::embedded::load().unwrap();
        let component = embedded.components.values().next().unwrap();
        std::fs::write(provider.join("placeholder.component"), component).unwrap();
        provider
    }

    fn vet(dir: &Path, extra: &[&str]) -> (u8, String, String) {
        let module: PathBuf = dir.join("module.yaml");
        let mut args = vec![
            "opm".to_owned(),
            "mod".into(),
            "vet".into(),
            module.display().to_string(),
        ];
        args.extend(["-p".into(), provider_dir(dir).display().to_string()]);
        // The test provider's components are placeholders: the plan is what is tested.
        args.push("--plan-only".into());
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let code = crate::cli::run(
            args,
            &mut Output {
                stdout: &mut stdout,
                stderr: &mut stderr,
                env: &crate::cli::process_env,
                stderr_is_terminal: false,
                stdout_is_terminal: false,
            },
        );
        let code = if code == ExitCode::SUCCESS {
            0
        } else if code == ExitCode::from(EXIT_FAILED) {
            1
        } else {
            2
        };
        (
            code,
            String::from_utf8(stdout).unwrap(),
            String::from_utf8(stderr).unwrap(),
        )
    }

    fn with_module(text: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("module.yaml"), text).unwrap();
        dir
    }

    #[test]
    fn vet_explains_why_deployment_and_service_match_and_statefulset_does_not() {
        let dir = with_module(MODULE);
        let (code, stdout, stderr) = vet(dir.path(), &[]);
        assert_eq!(code, 0, "{stdout}{stderr}");
        let row = |name: &str| {
            stdout
                .lines()
                .find(|line| line.contains(&format!("@v1#{name} ")))
                .unwrap_or_else(|| panic!("{stdout}"))
        };
        assert!(
            row("DeploymentTransformer").contains(
                "matches   label core.opm.dev/workload-type=stateless (from the component)"
            )
        );
        assert!(row("ServiceTransformer").contains("matches   resource opm.dev/resources/workload@v1#Container; trait opm.dev/traits/network@v1#Expose"));
        assert!(row("StatefulSetTransformer").contains(
            "no match  label core.opm.dev/workload-type is \"stateless\", not \"stateful\""
        ));
        assert!(
            stdout.ends_with("1 component, 2 calls, 0 errors, 0 warnings\n"),
            "{stdout}"
        );
    }

    #[test]
    fn vet_exits_1_when_the_plan_has_errors_and_lists_every_transformer() {
        let dir = with_module(
            &MODULE
                .replace(
                    "opm.dev/resources/workload@v1#Container: {image: ghcr.io/acme/api:1.4.0}",
                    "Volumes: {}",
                )
                .replace(
                    "    traits:\n      opm.dev/traits/network@v1#Expose: {type: ClusterIP}\n",
                    "",
                ),
        );
        let (code, stdout, stderr) = vet(dir.path(), &[]);
        assert_eq!(code, 1, "{stdout}{stderr}");
        assert!(
            stdout.contains("component \"api\" matches no transformer"),
            "{stdout}"
        );
        assert!(
            stdout.contains(
                "transformer.opm.dev/workload@v1#StatefulSetTransformer\n      requires: "
            ),
            "{stdout}"
        );
        assert_eq!(stderr, "error: the plan has 1 error\n");
    }

    #[test]
    fn vet_prints_json_and_honours_values_set_and_strict() {
        let dir = with_module(MODULE);
        std::fs::write(
            dir.path().join("values.yaml"),
            "components: {api: {traits: {Schedule: {cron: '@daily'}}}}\n",
        )
        .unwrap();
        let values = dir.path().join("values.yaml").display().to_string();
        let (code, stdout, _) = vet(
            dir.path(),
            &[
                "-f",
                &values,
                "--set",
                "components.api.traits.Expose.type=NodePort",
                "-o",
                "json",
            ],
        );
        assert_eq!(code, 0);
        let plan: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(plan["warnings"][0]["kind"], "unhandled");
        let (code, _, _) = vet(dir.path(), &["-f", &values, "--strict"]);
        assert_eq!(code, 1);
        // --set reaches the validated values: a bad one is an error of the plan.
        let (code, stdout, _) = vet(
            dir.path(),
            &["--set", "components.api.traits.Expose.type=Sideways"],
        );
        assert_eq!(code, 1);
        assert!(
            stdout.contains("opm.dev/traits/network@v1#Expose: at /type: the value is not one of"),
            "{stdout}"
        );
    }

    #[test]
    fn unreadable_input_exits_2_with_location() {
        let dir = with_module(&format!("{MODULE}bogus: 1\n"));
        let (code, _, stderr) = vet(dir.path(), &[]);
        assert_eq!(code, 2);
        assert!(
            stderr.starts_with("error: ")
                && stderr.contains("module.yaml:12:1: unknown field `bogus`"),
            "{stderr}"
        );
    }
}
