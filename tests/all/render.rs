//! The render pipeline end to end (`docs/rendering.md`): determinism whatever the thread count,
//! fail on end, redaction of sensitive values, atomic `--split --out-dir`, and `--verbose=json`.

use opm_tests::{file_names, guests, hello, opm, opm_env, provider_with, write_file};
use serde_json::{Value, json};

/// A module of many components, so that calls really interleave across threads.
fn many_components(count: usize) -> String {
    let mut module = String::from(
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: many, version: 2.0.0, namespace: many}\ncomponents:\n",
    );
    for i in 0..count {
        module.push_str(&format!(
            "  svc-{i:03}:\n    resources:\n      Container:\n        image: registry.example/svc:{i}\n        ports: {{http: {{containerPort: {}}}}}\n    traits:\n      Expose: {{}}\n      Replicas: {}\n",
            8000 + i,
            i % 5
        ));
    }
    module
}

#[test]
fn output_is_byte_identical_whatever_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let module = write_file(dir.path(), "module.yaml", &many_components(40));
    let reference = opm(["mod", "build", &module, "-j", "1"]);
    assert!(reference.exited(0), "{}", reference.stderr);
    assert_eq!(reference.stdout.matches("\nkind: Deployment\n").count(), 40);
    for jobs in ["1", "2", "8"] {
        for _ in 0..3 {
            let run = opm(["mod", "build", &module, "-j", jobs]);
            assert!(run.exited(0), "{}", run.stderr);
            assert!(
                run.stdout == reference.stdout,
                "output with -j {jobs} differs from -j 1"
            );
        }
    }
    let json = opm(["mod", "build", &module, "-o", "json", "-j", "8"]);
    let again = opm(["mod", "build", &module, "-o", "json", "-j", "2"]);
    assert_eq!(json.stdout, again.stdout);
}

/// A transformer that renders what the guest's clocks and randomness read: the same render of
/// the same inputs must read the same, however far apart the two renders run, with no
/// `SOURCE_DATE_EPOCH` to fix the time.
#[test]
fn two_renders_seconds_apart_without_source_date_epoch_are_byte_identical() {
    let provider = provider_with(&[(
        "test.opm.dev/wasi@v1#ClockTransformer",
        "
description: Renders what the clocks read
requiredLabels: {core.opm.dev/workload-type: clock}
requiredResources: [opm.dev/resources/workload@v1#Container]
component: clock.wasm
",
        guests::TESTING_WASI,
    )]);
    let module = write_file(
        provider.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: clock, version: 1.0.0}\ncomponents:\n  now:\n    metadata: {labels: {core.opm.dev/workload-type: clock, wasi.opm.dev/mode: clock-random}}\n    resources:\n      Container: {image: busybox:1.36}\n",
    );
    let provider_dir = provider.path().display().to_string();
    let render = |vars: &[(&str, &str)]| {
        let run = opm_env(
            ["mod", "build", &module, "-p", &provider_dir, "-o", "json"],
            vars,
        );
        assert!(run.exited(0), "{}", run.stderr);
        run.stdout
    };
    let seconds = |stdout: &str| {
        let list: Value = serde_json::from_str(stdout).unwrap();
        list["items"][0]["data"]["unixSeconds"].clone()
    };
    let first = render(&[]);
    assert_eq!(seconds(&first), "0", "{first}");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(render(&[]) == first, "a second render, later, differs");
    // SOURCE_DATE_EPOCH still sets the time when a pipeline wants it.
    let dated = render(&[("SOURCE_DATE_EPOCH", "1767225600")]);
    assert_eq!(seconds(&dated), "1767225600", "{dated}");
}

#[test]
fn resources_come_in_install_order_then_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let module = write_file(dir.path(), "module.yaml", &many_components(3));
    let run = opm(["mod", "build", &module, "-o", "json"]);
    let list: Value = serde_json::from_str(&run.stdout).unwrap();
    let order: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            format!(
                "{}/{}",
                i["kind"].as_str().unwrap(),
                i["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            "Service/svc-000",
            "Service/svc-001",
            "Service/svc-002",
            "Deployment/svc-000",
            "Deployment/svc-001",
            "Deployment/svc-002"
        ]
    );
}

const THREE_BROKEN: &str = "
apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: broken, version: 1.0.0}
components:
  no-match:
    metadata: {labels: {core.opm.dev/workload-type: quantum}}
    resources:
      Container: {image: nginx:1.27}
  bad-spec:
    resources:
      Container: {image: nginx:1.27, ports: {http: {containerPort: not-a-number}}}
  no-ports:
    resources:
      Container: {image: nginx:1.27}
    traits:
      Expose: {}
  fine:
    resources:
      Container: {image: nginx:1.27}
";

#[test]
fn every_broken_component_is_reported_together() {
    let dir = tempfile::tempdir().unwrap();
    let module = write_file(dir.path(), "module.yaml", THREE_BROKEN);
    let run = opm(["mod", "build", &module]);
    assert!(run.exited(1), "{:?}\n{}", run.status, run.stderr);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("in 3 components"), "{}", run.stderr);
    for component in ["no-match", "bad-spec", "no-ports"] {
        assert!(
            run.stderr.contains(&format!("component {component:?}:")),
            "{component} missing from:\n{}",
            run.stderr
        );
    }
    assert!(!run.stderr.contains("component \"fine\""), "{}", run.stderr);
    assert!(
        run.stderr.contains("names no ports"),
        "the guest's own error is reported:\n{}",
        run.stderr
    );
}

const LEAK_ENTRY: &str = "
description: Tries to leak its secret
requiredLabels: {core.opm.dev/workload-type: leaky}
requiredResources: [opm.dev/resources/workload@v1#Container]
component: leak.wasm
";

const LEAKY_MODULE: &str = "
apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: leaky, version: 1.0.0}
components:
  by-error:
    metadata: {labels: {core.opm.dev/workload-type: leaky, leak.opm.dev/mode: failed}}
    resources:
      Container: {image: busybox:1.36}
  by-invalid:
    metadata: {labels: {core.opm.dev/workload-type: leaky, leak.opm.dev/mode: invalid}}
    resources:
      Container: {image: busybox:1.36}
  by-panic:
    metadata: {labels: {core.opm.dev/workload-type: leaky, leak.opm.dev/mode: panic}}
    resources:
      Container: {image: busybox:1.36}
";

const LEAKY_VALUES: &str = "
components:
  by-error: {resources: {Container: {env: {TOKEN: {value: '${env:OPM_LEAK_TOKEN}'}}}}}
  by-invalid: {resources: {Container: {env: {TOKEN: {value: '${env:OPM_LEAK_TOKEN}'}}}}}
  by-panic: {resources: {Container: {env: {TOKEN: {value: '${env:OPM_LEAK_TOKEN}'}}}}}
";

const SECRET: &str = "s3cr3t-\"quoted\"-value";

fn assert_no_secret(stderr: &str) {
    let escaped = serde_json::to_string(SECRET).unwrap();
    for form in [
        SECRET,
        escaped.trim_matches('"'),
        "czNjcjN0LSJxdW90ZWQiLXZhbHVl",
        "s3cr3t",
    ] {
        assert!(!stderr.contains(form), "stderr leaks {form:?}:\n{stderr}");
    }
}

#[test]
fn a_malicious_transformer_cannot_leak_a_secret_to_stderr() {
    let provider = provider_with(&[(
        "test.opm.dev/hostile@v1#LeakTransformer",
        LEAK_ENTRY,
        guests::TESTING_LEAK,
    )]);
    let module = write_file(provider.path(), "module.yaml", LEAKY_MODULE);
    let values = write_file(provider.path(), "values.yaml", LEAKY_VALUES);
    let provider_dir = provider.path().display().to_string();
    let env = [("OPM_LEAK_TOKEN", SECRET)];
    for verbose in ["--verbose", "--verbose=json"] {
        let run = opm_env(
            [
                "mod",
                "build",
                &module,
                "-f",
                &values,
                "-p",
                &provider_dir,
                verbose,
            ],
            &env,
        );
        assert!(run.exited(1), "{}", run.stderr);
        assert_no_secret(&run.stderr);
        assert!(run.stderr.contains("[redacted]"), "{}", run.stderr);
        assert!(run.stderr.contains("panicked at "), "{}", run.stderr);
        if verbose == "--verbose" {
            assert!(
                run.stderr.contains("component \"by-panic\":"),
                "{}",
                run.stderr
            );
            assert!(run.stderr.contains("in 3 components"), "{}", run.stderr);
        } else {
            // The report is events: one error per component, then the summary.
            let events = json_lines(&run.stderr);
            let failed: Vec<&Value> = events
                .iter()
                .filter(|e| e["event"] == "error")
                .map(|e| &e["component"])
                .collect();
            assert_eq!(
                failed,
                ["by-error", "by-invalid", "by-panic"],
                "{}",
                run.stderr
            );
            assert_eq!(events.last().unwrap()["errors"], 3);
        }
    }
}

#[test]
fn a_secret_appears_in_the_rendered_output_only() {
    let provider = provider_with(&[(
        "test.opm.dev/hostile@v1#LeakTransformer",
        LEAK_ENTRY,
        guests::TESTING_LEAK,
    )]);
    let module = write_file(
        provider.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: leaky, version: 1.0.0}\ncomponents:\n  out:\n    metadata: {labels: {core.opm.dev/workload-type: leaky}}\n    resources:\n      Container: {image: busybox:1.36}\n",
    );
    let values = write_file(
        provider.path(),
        "values.yaml",
        "components: {out: {resources: {Container: {env: {TOKEN: {value: '${env:OPM_LEAK_TOKEN}'}}}}}}\n",
    );
    let provider_dir = provider.path().display().to_string();
    let run = opm_env(
        [
            "mod",
            "build",
            &module,
            "-f",
            &values,
            "-p",
            &provider_dir,
            "--verbose",
            "-o",
            "json",
        ],
        &[("OPM_LEAK_TOKEN", SECRET)],
    );
    assert!(run.exited(0), "{}", run.stderr);
    assert_no_secret(&run.stderr);
    let list: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(list["items"][0]["data"]["token"], SECRET);
}

/// A value too short to hide (here the Secret's `job`, which is also a workload type) is not
/// redacted — that would turn every "job" on stderr into `[redacted]` and tell the reader which
/// word the Secret holds — and `mod build` and `mod vet` say so; long values still are.
#[test]
fn a_short_secret_is_not_redacted_and_the_render_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let module = write_file(
        dir.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: short, version: 1.0.0}\ncomponents:\n  creds:\n    resources:\n      Secret: {stringData: {mode: x, token: x}}\n  batch:\n    metadata: {labels: {core.opm.dev/workload-type: job}}\n    resources:\n      Container: {image: busybox:1.36}\n",
    );
    // Supplied by a values file: what the module file writes itself is public.
    let values = write_file(
        dir.path(),
        "values.yaml",
        "components: {creds: {resources: {Secret: {stringData: {mode: job, token: long-enough-token-value}}}}}\n",
    );
    let warning = "warning: 1 sensitive value (from a Secret or ${env:…}) is shorter than 8 characters and is not redacted on stderr";
    let build = opm(["mod", "build", &module, "-f", &values, "--verbose"]);
    let vet = opm(["mod", "vet", &module, "-f", &values]);
    for run in [&build, &vet] {
        assert!(run.exited(0), "{}", run.stderr);
        assert!(run.stderr.contains(warning), "{}", run.stderr);
        assert!(
            !run.stderr.contains("long-enough-token-value"),
            "{}",
            run.stderr
        );
    }
    assert!(build.stderr.contains("\"job\""), "{}", build.stderr);
}

/// The audit's finding: an error raised while the module was loaded, before the redactor
/// existed, printed a sensitive value raw — here a `${env:…}` value used as the namespace, and a
/// Secret's value pasted where a name belongs.
#[test]
fn a_secret_in_a_module_that_fails_to_load_is_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let values = write_file(
        dir.path(),
        "values.yaml",
        "metadata: {namespace: '${env:OPM_LEAK_TOKEN}'}\n",
    );
    let pasted = write_file(
        dir.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1\nkind: Module\n\
         metadata: {name: leaky, version: 1.0.0, namespace: '${env:OPM_LEAK_TOKEN}'}\n\
         components:\n  api:\n    resources:\n      Container: {image: busybox:1.36}\n\
         \x20     Secret: {data: {token: '${env:OPM_LEAK_TOKEN}'}}\n",
    );
    let env = [("OPM_LEAK_TOKEN", SECRET)];
    let hello = hello();
    for command in ["build", "vet"] {
        for args in [
            vec!["mod", command, &hello, "-f", &values],
            vec!["mod", command, &pasted],
        ] {
            let run = opm_env(&args, &env);
            assert!(run.exited(2), "{args:?}: {:?} {}", run.status, run.stderr);
            assert_no_secret(&run.stderr);
            assert_no_secret(&run.stdout);
            assert!(
                run.stderr
                    .contains("namespace \"[redacted]\" must be a DNS label"),
                "{args:?}: {}",
                run.stderr
            );
        }
    }
}

#[test]
fn an_unset_environment_variable_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let values = write_file(
        dir.path(),
        "values.yaml",
        "metadata: {labels: {owner: '${env:OPM_SURELY_UNSET}'}}\n",
    );
    let run = opm_env(["mod", "build", &hello(), "-f", &values], &[]);
    assert!(run.exited(2), "{:?} {}", run.status, run.stderr);
    assert!(run.stderr.contains("OPM_SURELY_UNSET"), "{}", run.stderr);
}

#[test]
fn verbose_json_is_one_json_object_per_line() {
    let hello = hello();
    let run = opm(["mod", "build", &hello, "--verbose=json"]);
    assert!(run.exited(0), "{}", run.stderr);
    let events: Vec<Value> = run
        .stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds[0], "plan");
    assert!(
        kinds.contains(&"component") && kinds.contains(&"call"),
        "{kinds:?}"
    );
    let component = events.iter().find(|e| e["event"] == "component").unwrap();
    assert_eq!(component["component"], "api");
    let matched: Vec<&str> = component["matched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["transformer"].as_str().unwrap())
        .collect();
    assert!(
        matched
            .iter()
            .any(|t| t.ends_with("#DeploymentTransformer")),
        "{matched:?}"
    );
    let call = events.iter().find(|e| e["event"] == "call").unwrap();
    assert!(call["fuel"].as_u64().unwrap() > 0);
}

/// Every line of `stderr`, parsed as JSON; a line that is not JSON fails the test.
fn json_lines(stderr: &str) -> Vec<Value> {
    stderr
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
        })
        .collect()
}

/// Under `--verbose=json` the final error report is not text among the JSON lines: every line is
/// one JSON object: `error` and `warning` events with what the text says, and a closing `summary`
/// with the counts and the exit status.
#[test]
fn verbose_json_reports_errors_warnings_and_a_summary_as_json() {
    let run = build_misbehaving(
        &[
            ("kindless", "no-kind"),
            ("first", "shared"),
            ("second", "shared"),
        ],
        &["--verbose=json"],
    );
    assert!(run.exited(1), "{}", run.stderr);
    let events = json_lines(&run.stderr);
    let errors: Vec<&Value> = events.iter().filter(|e| e["event"] == "error").collect();
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(errors.iter().any(|e| e["component"] == "kindless"
        && e["transformer"] == "test.opm.dev/hostile@v1#MisbehaveTransformer"
        && e["message"].as_str().unwrap().contains("`kind` is missing")));
    assert!(
        errors.iter().any(|e| e["component"] == "second"
            && e["message"].as_str().unwrap().contains("also rendered"))
    );
    let summary = events.last().unwrap();
    assert_eq!(summary["event"], "summary", "{events:#?}");
    assert_eq!(summary["status"], 1);
    assert_eq!(summary["errors"], 2);

    // A warning, and a render that succeeds.
    let dir = tempfile::tempdir().unwrap();
    let module = write_file(
        dir.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: w, version: 1.0.0}\ncomponents:\n  api:\n    resources: {Container: {image: nginx}}\n    traits: {Schedule: {cron: '@daily'}}\n",
    );
    let run = opm(["mod", "build", &module, "--verbose=json"]);
    assert!(run.exited(0), "{}", run.stderr);
    let events = json_lines(&run.stderr);
    let warning = events
        .iter()
        .find(|e| e["event"] == "warning")
        .expect("a warning event");
    assert_eq!(warning["component"], "api");
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .contains("no matched transformer handles")
    );
    let summary = events.last().unwrap();
    assert_eq!(
        (
            &summary["event"],
            &summary["status"],
            &summary["warnings"],
            &summary["resources"]
        ),
        (&json!("summary"), &json!(0), &json!(1), &json!(1))
    );

    // An error before anything is planned: the module is missing.
    let run = opm([
        "mod",
        "build",
        &dir.path().join("nothing.yaml").display().to_string(),
        "--verbose=json",
    ]);
    assert!(run.exited(2), "{}", run.stderr);
    let events = json_lines(&run.stderr);
    assert_eq!(events.len(), 2, "{events:#?}");
    assert_eq!(events[0]["event"], "error");
    assert!(
        events[0]["message"]
            .as_str()
            .unwrap()
            .contains("there is no module at")
    );
    assert_eq!(
        (&events[1]["event"], &events[1]["status"]),
        (&json!("summary"), &json!(2))
    );
}

#[test]
fn verbose_text_explains_matches_and_calls() {
    let hello = hello();
    let run = opm(["mod", "build", &hello, "--verbose"]);
    assert!(run.exited(0), "{}", run.stderr);
    assert!(run.stderr.contains("component \"api\":"), "{}", run.stderr);
    assert!(
        run.stderr.contains("matched transformer.opm.dev/workload@v1#DeploymentTransformer: label core.opm.dev/workload-type=stateless"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "  called transformer.opm.dev/workload@v1#DeploymentTransformer: 1 resource, "
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn split_writes_one_file_per_resource_and_replaces_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("manifests");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("deployment-stale.yaml"), "stale").unwrap();
    let hello = hello();
    let run = opm([
        "mod",
        "build",
        &hello,
        "--split",
        "--out-dir",
        &out.display().to_string(),
    ]);
    assert!(run.exited(0), "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert_eq!(
        file_names(&out),
        [
            ".opm-output",
            "deployment-api.yaml",
            "opm.render",
            "service-api.yaml"
        ]
    );
    let deployment = std::fs::read_to_string(out.join("deployment-api.yaml")).unwrap();
    assert!(
        deployment.starts_with("apiVersion: apps/v1\nkind: Deployment\n"),
        "{deployment}"
    );
    let leftovers = file_names(dir.path());
    assert_eq!(
        leftovers,
        ["manifests"],
        "no staging directory is left behind"
    );
}

#[test]
fn a_failed_render_leaves_the_out_dir_exactly_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("manifests");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("deployment-api.yaml"), "previous render\n").unwrap();
    std::fs::write(out.join("service-api.yaml"), "previous service\n").unwrap();
    let module = write_file(dir.path(), "module.yaml", THREE_BROKEN);
    let run = opm([
        "mod",
        "build",
        &module,
        "--split",
        "--out-dir",
        &out.display().to_string(),
    ]);
    assert!(run.exited(1), "{}", run.stderr);
    assert_eq!(
        file_names(&out),
        ["deployment-api.yaml", "service-api.yaml"]
    );
    assert_eq!(
        std::fs::read_to_string(out.join("deployment-api.yaml")).unwrap(),
        "previous render\n"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("service-api.yaml")).unwrap(),
        "previous service\n"
    );
    let leftovers = file_names(dir.path());
    assert_eq!(
        leftovers.len(),
        2,
        "module.yaml and manifests only: {leftovers:?}"
    );
}

#[test]
fn an_out_dir_holding_other_files_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    let hello = hello();
    let run = opm([
        "mod",
        "build",
        &hello,
        "--split",
        "--out-dir",
        &dir.path().display().to_string(),
    ]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(run.stderr.contains("notes.txt"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn split_needs_an_out_dir() {
    let hello = hello();
    let run = opm(["mod", "build", &hello, "--split"]);
    assert!(run.exited(2), "{}", run.stderr);
}

#[test]
fn help_documents_every_flag_with_an_example() {
    let run = opm(["mod", "build", "--help"]);
    assert!(run.exited(0));
    for flag in [
        "--provider",
        "--values",
        "--set",
        "--namespace",
        "--output",
        "--split",
        "--out-dir",
        "--strict",
        "--verbose",
        "--jobs",
        "--fuel",
        "--memory",
        "--timeout",
    ] {
        // The flag's block: from its header line to the next option's.
        let mut lines = run.stdout.lines();
        let header = |line: &str| line.starts_with("  -") || line.starts_with("      --");
        lines
            .by_ref()
            .find(|line| {
                header(line)
                    && line.match_indices(flag).any(|(at, _)| {
                        let next = line[at + flag.len()..].chars().next();
                        !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
                    })
            })
            .unwrap_or_else(|| panic!("--help lacks {flag}:\n{}", run.stdout));
        let block: Vec<&str> = lines.take_while(|line| !header(line)).collect();
        assert!(
            block
                .iter()
                .any(|line| line.trim_start().starts_with("Example: ")),
            "{flag} has no example:\n{}",
            block.join("\n")
        );
    }
}

/// The guest `testing-leak` is exercised by the redaction tests above.
pub(crate) fn testing_leak() {}

const MISBEHAVE_ENTRY: &str = "
description: Breaks the output contract as its component's label says
requiredLabels: {core.opm.dev/workload-type: misbehaving}
requiredResources: [opm.dev/resources/workload@v1#Container]
component: misbehave.wasm
";

/// A module whose components each misbehave in the way their name says.
fn misbehaving_module(modes: &[(&str, &str)]) -> String {
    let mut module = String::from(
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: odd, version: 1.0.0}\ncomponents:\n",
    );
    for (name, mode) in modes {
        module.push_str(&format!(
            "  {name}:\n    metadata: {{labels: {{core.opm.dev/workload-type: misbehaving, misbehave.opm.dev/mode: {mode}}}}}\n    resources:\n      Container: {{image: busybox:1.36}}\n"
        ));
    }
    module
}

/// Runs `opm mod build` with `extra` arguments on [`misbehaving_module`]`(modes)`, with the
/// misbehaving transformer added to the embedded provider.
fn build_misbehaving(modes: &[(&str, &str)], extra: &[&str]) -> opm_tests::Run {
    let provider = provider_with(&[(
        "test.opm.dev/hostile@v1#MisbehaveTransformer",
        MISBEHAVE_ENTRY,
        guests::TESTING_MISBEHAVE,
    )]);
    let module = write_file(provider.path(), "module.yaml", &misbehaving_module(modes));
    let provider_dir = provider.path().display().to_string();
    let mut args = vec!["mod", "build", &module, "-p", &provider_dir];
    args.extend_from_slice(extra);
    opm(args)
}

#[test]
fn every_invalid_output_is_reported_with_its_component_and_reason() {
    let run = build_misbehaving(
        &[
            ("array", "not-an-object"),
            ("kindless", "no-kind"),
            ("nameless", "no-name"),
            ("quiet", "nothing"),
        ],
        &[],
    );
    assert!(run.exited(1), "{:?}\n{}", run.status, run.stderr);
    assert_eq!(run.stdout, "", "nothing is written when the render fails");
    for (component, reason) in [
        (
            "array",
            "returned an invalid resource #0: a JSON array where an object was expected",
        ),
        (
            "kindless",
            "returned an invalid resource #0: `kind` is missing or not a non-empty string",
        ),
        (
            "nameless",
            "returned an invalid resource #0: `metadata.name` is missing or not a non-empty string",
        ),
    ] {
        let heading = format!("component {component:?}:");
        let at = run
            .stderr
            .find(&heading)
            .unwrap_or_else(|| panic!("{component} missing from:\n{}", run.stderr));
        assert!(
            run.stderr[at..].contains(reason),
            "{component}: {reason:?} missing from:\n{}",
            run.stderr
        );
    }
    assert!(
        !run.stderr.contains("\"quiet\""),
        "zero resources is valid:\n{}",
        run.stderr
    );
    assert!(run.stderr.contains("in 3 components"), "{}", run.stderr);
}

#[test]
fn a_component_that_renders_nothing_is_valid() {
    let run = build_misbehaving(&[("quiet", "nothing")], &["-o", "json"]);
    assert!(run.exited(0), "{}", run.stderr);
    let list: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"], serde_json::json!([]));
}

#[test]
fn two_components_rendering_one_resource_is_an_error_naming_both() {
    let run = build_misbehaving(&[("first", "shared"), ("second", "shared")], &[]);
    assert!(run.exited(1), "{:?}\n{}", run.status, run.stderr);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains(
            "component \"second\":\n    - transformer test.opm.dev/hostile@v1#MisbehaveTransformer (blake3:"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "rendered ConfigMap default/shared, which component \"first\" (transformer test.opm.dev/hostile@v1#MisbehaveTransformer) also rendered"
        ),
        "{}",
        run.stderr
    );
}

/// Duplicates are found by the namespace a resource lands in. A resource without
/// `metadata.namespace` lands in the target namespace, so it is the same object as one that names
/// it; a cluster-scoped kind lands in no namespace, whatever it writes.
#[test]
fn duplicates_are_found_by_the_namespace_a_resource_lands_in() {
    for (first, second, identity) in [
        ("shared", "shared-here", "ConfigMap default/shared"),
        (
            "cluster-role",
            "cluster-role-in-a-namespace",
            "rbac.authorization.k8s.io/ClusterRole shared",
        ),
    ] {
        let run = build_misbehaving(&[("first", first), ("second", second)], &[]);
        assert!(
            run.exited(1),
            "{first} + {second}: {:?}\n{}",
            run.status,
            run.stderr
        );
        assert_eq!(run.stdout, "");
        assert!(
            run.stderr.contains(&format!(
                "rendered {identity}, which component \"first\" (transformer test.opm.dev/hostile@v1#MisbehaveTransformer) also rendered"
            )),
            "{first} + {second}:\n{}",
            run.stderr
        );
    }
}

/// Matching spec ac14: the outputs of every transformer matched to a component are
/// concatenated into the one resource list of the render.
#[test]
fn ac14_outputs_of_matched_transformers_are_concatenated() {
    let run = opm(["mod", "build", &hello(), "-o", "json"]);
    assert!(run.exited(0), "{}", run.stderr);
    let list: Value = serde_json::from_str(&run.stdout).unwrap();
    let from_api: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["metadata"]["labels"]["component.opmodel.dev/name"] == "api")
        .map(|item| item["kind"].as_str().unwrap())
        .collect();
    assert_eq!(from_api, ["Service", "Deployment"]);
}

/// Security review (2026-11): a guest's error text and `--verbose` log lines reached the terminal with
/// their escape sequences raw. Every message path writes them escaped.
#[test]
fn terminal_escapes_from_a_guest_reach_stderr_escaped_in_every_message_path() {
    for verbose in [None, Some("--verbose"), Some("--verbose=json")] {
        let run = build_misbehaving(&[("shady", "escapes")], verbose.as_slice());
        assert!(run.exited(1), "{verbose:?}: {}", run.stderr);
        assert!(
            !run.stderr.contains(['\u{1b}', '\u{7}', '\u{61c}']),
            "{verbose:?}: a raw escape reached stderr:\n{:?}",
            run.stderr
        );
        let escaped = if verbose == Some("--verbose=json") {
            r"\\u{1b}[32mverified"
        } else {
            r"\u{1b}[32mverified"
        };
        assert!(
            run.stderr.contains(escaped),
            "{verbose:?}: {escaped} missing from:\n{}",
            run.stderr
        );
    }
}
