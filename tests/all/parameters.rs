//! Modules with parameters, as a consumer meets them through `opm mod build` and `opm mod vet`:
//! a `config` that values files and `--set` fill, references and CEL expressions that carry the
//! parameters into the components, conditions that leave parts out, `${env:NAME}` anywhere,
//! and every mistake named where it was made.

use std::path::Path;

use opm_tests::{opm, opm_env, repo_root};

fn gitea() -> String {
    repo_root().join("examples/gitea").display().to_string()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.display().to_string()
}

#[test]
fn parameters_from_values_and_set_reach_the_objects_and_conditions_leave_parts_out() {
    let dir = tempfile::tempdir().expect("temp dir");
    let values = write(
        dir.path(),
        "prod.yaml",
        "domain: git.acme.io\nstorage: {size: 50Gi}\nroute: {enabled: false}\n",
    );
    let run = opm([
        "mod",
        "build",
        &gitea(),
        "-f",
        &values,
        "--set",
        "sshPort=2222",
    ]);
    assert!(run.exited(0), "{}", run.stderr);
    let yaml = &run.stdout;
    assert!(yaml.contains("value: https://git.acme.io/\n"), "{yaml}");
    assert!(yaml.contains("storage: 50Gi\n"), "{yaml}");
    assert!(yaml.contains("containerPort: 2222\n"), "{yaml}");
    assert!(
        !yaml.contains("kind: HTTPRoute"),
        "the route is left out: {yaml}"
    );

    let vet = opm(["mod", "vet", &gitea(), "-f", &values]);
    assert!(vet.exited(0), "{}", vet.stderr);
    assert!(vet.stdout.contains("  domain "), "{}", vet.stdout);
    assert!(vet.stdout.contains("= \"git.acme.io\""), "{}", vet.stdout);
    assert!(
        vet.stdout.contains(
            "left out:\n  component \"gitea\", HttpRoute: ${config.route.enabled} is false ("
        ),
        "{}",
        vet.stdout
    );
}

#[test]
fn the_defaults_render_what_the_example_always_rendered() {
    let run = opm(["mod", "build", &gitea()]);
    assert!(run.exited(0), "{}", run.stderr);
    let golden =
        std::fs::read_to_string(repo_root().join("examples/gitea/rendered.yaml")).expect("golden");
    assert_eq!(run.stdout, golden);
}

#[test]
fn a_wrong_type_an_unknown_key_and_a_bad_expression_name_file_and_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let wrong = write(dir.path(), "wrong.yaml", "domain: a\nsshPort: twenty-two\n");
    let run = opm(["mod", "build", &gitea(), "-f", &wrong]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("wrong.yaml:2:10: parameter sshPort: the value is not of type \"integer\""),
        "{}",
        run.stderr
    );

    let unknown = write(dir.path(), "unknown.yaml", "storage:\n  sise: 1Gi\n");
    let run = opm(["mod", "build", &gitea(), "-f", &unknown]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "unknown.yaml:2:3: config has no parameter storage.sise; did you mean \"size\"?"
        ),
        "{}",
        run.stderr
    );

    let module = write(
        dir.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: m, version: 1.0.0}\nconfig:\n  properties:\n    replicas: {type: integer, default: 2}\ncomponents:\n  api:\n    metadata: {labels: {core.opm.dev/workload-type: stateless}}\n    resources: {Container: {image: nginx}}\n    traits:\n      Replicas: '${ config.replicas >> 1 }'\n",
    );
    let run = opm(["mod", "build", &module]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("module.yaml:12:17: in ${config.replicas >> 1}: "),
        "{}",
        run.stderr
    );
}

#[test]
fn env_in_the_module_and_in_set_is_substituted_and_redacted_and_unset_is_an_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let module = write(
        dir.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: m, version: 1.0.0}\ncomponents:\n  api:\n    metadata: {labels: {core.opm.dev/workload-type: stateless}}\n    resources:\n      Container:\n        image: nginx\n        env: {TOKEN: {value: '${env:OPM_TEST_TOKEN}'}}\n    traits: {Replicas: 1}\n",
    );
    let home = dir.path().display().to_string();
    let run = opm_env(
        [
            "mod",
            "build",
            &module,
            "--set",
            "components.api.resources.Container.env.OTHER.value=${env:OPM_TEST_OTHER}",
            "--set",
            "components.api.traits.Replicas=oops",
        ],
        &[
            ("OPM_TEST_TOKEN", "tok-4f9a1c"),
            ("OPM_TEST_OTHER", "oth-77b2e0"),
            ("HOME", &home),
        ],
    );
    // The bad Replicas makes the render fail, and its error must not leak either value.
    assert!(run.exited(1), "{}", run.stderr);
    assert!(!run.stderr.contains("tok-4f9a1c"), "{}", run.stderr);
    assert!(
        run.stderr.contains("--set components.api.traits.Replicas"),
        "the bad value is blamed on its --set: {}",
        run.stderr
    );

    let run = opm_env(
        [
            "mod",
            "build",
            &module,
            "--set",
            "components.api.resources.Container.env.OTHER.value=${env:OPM_TEST_OTHER}",
        ],
        &[
            ("OPM_TEST_TOKEN", "tok-4f9a1c"),
            ("OPM_TEST_OTHER", "oth-77b2e0"),
            ("HOME", &home),
        ],
    );
    assert!(run.exited(0), "{}", run.stderr);
    assert!(run.stdout.contains("value: tok-4f9a1c\n"), "{}", run.stdout);
    assert!(run.stdout.contains("value: oth-77b2e0\n"), "{}", run.stdout);

    let unset = opm_env(["mod", "build", &module], &[("HOME", &home)]);
    assert!(unset.exited(2), "{}", unset.stderr);
    assert!(
        unset
            .stderr
            .contains("module.yaml:10:30: environment variable OPM_TEST_TOKEN is not set"),
        "{}",
        unset.stderr
    );
}

/// The directory of the example `name`.
fn example(name: &str) -> String {
    repo_root()
        .join("examples")
        .join(name)
        .display()
        .to_string()
}

/// Renders the example `name` with the values file `values` and `--set SET`, the environment
/// holding `env`; returns the YAML.
fn render_port(name: &str, values: &str, set: &str, env: (&str, &str)) -> String {
    let module = example(name);
    let dir = tempfile::tempdir().expect("temp dir");
    let values = write(dir.path(), "values.yaml", values);
    let run = opm_env(
        ["mod", "build", &module, "-f", &values, "--set", set],
        &[env],
    );
    assert!(run.exited(0), "{}", run.stderr);
    run.stdout
}

/// Panics unless `yaml` holds every one of `expected`.
pub(crate) fn assert_holds(yaml: &str, expected: &[&str]) {
    for expected in expected {
        assert!(
            yaml.contains(expected),
            "{expected:?} missing from:\n{yaml}"
        );
    }
}

/// Panics unless rendering `module` with `--set SET` is refused, naming the parameter.
pub(crate) fn refuses(module: &str, set: &str) {
    let run = opm(["mod", "build", module, "--set", set]);
    assert!(run.exited(2), "{}", run.stderr);
    let parameter = set.split('=').next().unwrap_or(set);
    assert!(
        run.stderr
            .contains(&format!("--set {parameter}: parameter {parameter}: ")),
        "{}",
        run.stderr
    );
}

/// The Vaultwarden port: the chart's values a user changes most reach the objects.
#[test]
fn vaultwarden_takes_the_charts_main_values() {
    let yaml = render_port(
        "vaultwarden",
        "domain: pw.acme.io\nsignupsAllowed: true\nsignupDomains: [acme.io, acme.dev]\nsmtp: {host: smtp.acme.io, port: 465, security: force_tls, from: vault@acme.io}\nstorage: {size: 2Gi, class: fast}\ningress: {className: traefik}\nimage: {tag: 1.33.0}\n",
        "adminToken=${env:VW_ADMIN_TOKEN}",
        ("VW_ADMIN_TOKEN", "admin-9d2f6b1e"),
    );
    assert_holds(
        &yaml,
        &[
            "image: docker.io/vaultwarden/server:1.33.0\n",
            "DOMAIN: https://pw.acme.io\n",
            "SIGNUPS_ALLOWED: \"true\"\n",
            "SIGNUPS_DOMAINS_WHITELIST: acme.io,acme.dev\n",
            "SMTP_PORT: \"465\"\n",
            "SMTP_SECURITY: force_tls\n",
            "storageClassName: fast\n",
            "storage: 2Gi\n",
            "ingressClassName: traefik\n",
            "- host: pw.acme.io\n",
            "secretName: pw-acme-io-tls\n",
            "ADMIN_TOKEN: admin-9d2f6b1e\n",
        ],
    );
    let without_ingress = opm([
        "mod",
        "build",
        &example("vaultwarden"),
        "--set",
        "ingress.enabled=false",
    ]);
    assert!(without_ingress.exited(0), "{}", without_ingress.stderr);
    assert!(!without_ingress.stdout.contains("kind: Ingress"));
    // Vaultwarden refuses to start with an empty SMTP_HOST: without a server, no SMTP settings.
    assert!(!without_ingress.stdout.contains("SMTP_HOST"));
    refuses(&example("vaultwarden"), "smtp.security=ssl");
}

/// The Plausible port: its `.env` settings reach the objects, and a database of one's own
/// leaves the bundled one out.
#[test]
fn plausible_takes_its_settings_and_external_databases() {
    let yaml = render_port(
        "plausible",
        "domain: stats.acme.io\nregistration: \"false\"\nsmtp: {host: smtp.acme.io, port: 465, ssl: true, from: stats@acme.io}\npostgres: {url: \"postgres://plausible:pw@db.acme.internal:5432/plausible\"}\nstorageClass: fast\nimage: {tag: v2.1.5}\n",
        "secretKeyBase=${env:PLAUSIBLE_SECRET_KEY_BASE}",
        ("PLAUSIBLE_SECRET_KEY_BASE", "k3y-base-7f1c"),
    );
    assert_holds(
        &yaml,
        &[
            "image: ghcr.io/plausible/community-edition:v2.1.5\n",
            "- name: BASE_URL\n          value: https://stats.acme.io\n",
            "- name: DISABLE_REGISTRATION\n          value: \"false\"\n",
            "- name: SMTP_HOST_PORT\n          value: \"465\"\n",
            "- name: SMTP_HOST_SSL_ENABLED\n          value: \"true\"\n",
            "database-url: postgres://plausible:pw@db.acme.internal:5432/plausible\n",
            "secret-key-base: k3y-base-7f1c\n",
            "storageClassName: fast\n",
            "- host: stats.acme.io\n",
            "image: clickhouse/clickhouse-server:",
        ],
    );
    assert!(
        !yaml.contains("image: postgres:"),
        "an external database leaves the bundled one out:\n{yaml}"
    );
    refuses(&example("plausible"), "registration=open");
}

/// Security review (2026-11): a module read any environment variable — a CI job's `GITHUB_TOKEN`
/// into an image name — and nothing said which. `mod vet` and `--verbose=json` list every
/// variable read, and `--allow-env` restricts them, naming the one a module may not read.
#[test]
fn the_environment_variables_a_module_reads_are_listed_and_can_be_restricted() {
    let dir = tempfile::tempdir().unwrap();
    let module = opm_tests::write_file(
        dir.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: envy, version: 0.1.0}
components:
  api:
    resources:
      Container: {image: 'nginx:${env:APP_TAG}'}
      ConfigMap: {data: {token: '${env:GITHUB_TOKEN}'}}
",
    );
    let vars = [
        ("APP_TAG", "1.27"),
        ("GITHUB_TOKEN", "ghp_aaaaaaaaaaaaaaaaaaaa"),
    ];
    let vet = opm_env(["mod", "vet", &module], &vars);
    assert!(vet.exited(0), "{}", vet.stderr);
    assert!(
        vet.stdout
            .contains("environment variables read: APP_TAG, GITHUB_TOKEN\n"),
        "{}",
        vet.stdout
    );
    let json = opm_env(["mod", "build", &module, "--verbose=json"], &vars);
    assert!(json.exited(0), "{}", json.stderr);
    let plan: serde_json::Value = json
        .stderr
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|event| event["event"] == "plan")
        .unwrap();
    assert_eq!(plan["env"], serde_json::json!(["APP_TAG", "GITHUB_TOKEN"]));
    for command in ["build", "vet"] {
        let refused = opm_env(["mod", command, &module, "--allow-env", "APP_*"], &vars);
        assert!(refused.exited(2), "{command}: {}", refused.stderr);
        assert!(
            refused
                .stderr
                .contains("environment variable GITHUB_TOKEN may not be read by this render"),
            "{command}: {}",
            refused.stderr
        );
        assert!(!refused.stderr.contains("ghp_"), "{}", refused.stderr);
    }
    let allowed = opm_env(
        [
            "mod",
            "build",
            &module,
            "--allow-env",
            "APP_*",
            "--allow-env",
            "GITHUB_TOKEN",
        ],
        &vars,
    );
    assert!(allowed.exited(0), "{}", allowed.stderr);
}

/// A module whose one component's ConfigMap value is `expression`, over a parameter `items`
/// (a list of `count` strings) and `text` (`text_bytes` bytes).
fn costly_module(dir: &Path, count: usize, text_bytes: usize, expression: &str) -> String {
    let items: Vec<String> = (0..count).map(|i| format!("item-{i}")).collect();
    opm_tests::write_file(
        dir,
        "module.yaml",
        &format!(
            "apiVersion: core.opm.dev/v1
kind: Module
metadata: {{name: costly, version: 0.1.0}}
config:
  properties:
    items: {{type: array, items: {{type: string}}, default: {}}}
    text: {{type: string, default: {}}}
components:
  api:
    resources:
      ConfigMap: {{data: {{value: '${{ {expression} }}'}}}}
",
            serde_json::to_string(&items).unwrap(),
            "a".repeat(text_bytes),
        ),
    )
}

/// Security review (2026-11): CEL had no budget — `replace` nested in a module of 49 KB asked for
/// 6 GB, and `all(i, exists(j, …))` over a default of 10,000 items took 10⁸ steps and 32 s.
/// Each expression's cost is bounded from its syntax and the values it reads, before it runs;
/// what a chart does with CEL stays well inside the bound.
#[test]
fn a_cel_expression_that_would_cost_without_bound_is_refused_before_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    for (count, text_bytes, expression, expected) in [
        (
            10,
            48_000,
            "config.text.replace(\"a\", \"aaaaaaaa\").replace(\"a\", \"aaaaaaaa\").replace(\"a\", \"aaaaaaaa\").replace(\"a\", \"aaaaaaaa\").replace(\"a\", \"aaaaaaaa\").replace(\"a\", \"aaaaaaaa\")",
            "its values could grow to about",
        ),
        (
            10_000,
            1,
            "config.items.all(i, config.items.exists(j, i == j))",
            "it could take about",
        ),
    ] {
        let module = costly_module(dir.path(), count, text_bytes, expression);
        let run = opm(["mod", "build", &module]);
        assert!(run.exited(2), "{expected}: {}", run.stderr);
        assert!(
            run.stderr.contains("refused before it runs"),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains(expected), "{expected}: {}", run.stderr);
    }
    // What modules do: a list of a few hundred items mapped, a string replaced once, a map of
    // maps written out as an INI file.
    for expression in [
        "config.items.map(i, i + \"-x\").join(\",\")",
        "config.text.replace(\"a\", \"bb\")",
        "config.items.filter(i, i.startsWith(\"item-1\")).size() > 0 ? \"yes\" : \"no\"",
    ] {
        let module = costly_module(dir.path(), 500, 10_000, expression);
        let run = opm(["mod", "build", &module]);
        assert!(run.exited(0), "{expression}: {}", run.stderr);
    }
}

/// Real charts (2026-12): an expression that iterates a map visited its keys in another order in
/// every render (CEL's maps are hash maps), so Grafana's `grafana.ini` and its checksum changed
/// on every deploy. Every comprehension over a map iterates its keys in order: fifty renders,
/// at -j 1 and -j 2, one output, the keys sorted.
#[test]
fn an_expression_that_iterates_a_map_renders_the_same_every_time() {
    let dir = tempfile::tempdir().unwrap();
    let module = opm_tests::write_file(
        dir.path(),
        "module.yaml",
        r#"apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: env, version: 0.1.0}
config:
  properties:
    env: {type: object, additionalProperties: {type: string}, default: {D: "4", B: "2", A: "1", C: "3"}}
components:
  web:
    resources:
      Container:
        image: nginx:1.27
        env: "${ config.env.map(k, {'name': k, 'value': config.env[k]}) }"
      ConfigMap:
        data:
          ini: "${ config.env.map(k, k + ' = ' + config.env[k]).join('\\n') }"
          any: "${ string(config.env.exists(k, k == 'C')) }"
"#,
    );
    let first = opm(["mod", "build", &module]);
    assert!(first.exited(0), "{}", first.stderr);
    // Fifty renders in a row, on one thread and on two: byte for byte the same.
    for round in 0..50 {
        let jobs = if round % 2 == 0 { "1" } else { "2" };
        let again = opm(["mod", "build", &module, "-j", jobs]);
        assert_eq!(
            again.stdout, first.stdout,
            "render {round} (-j {jobs}) differs from the first"
        );
    }
    let at = |needle: &str| {
        first
            .stdout
            .find(needle)
            .unwrap_or_else(|| panic!("{needle}"))
    };
    assert!(
        at("name: A") < at("name: B") && at("name: B") < at("name: C"),
        "{}",
        first.stdout
    );
    assert!(
        at("A = 1") < at("B = 2") && at("C = 3") < at("D = 4"),
        "{}",
        first.stdout
    );
}

/// Real charts (2026-12): one module for two platforms had no per-platform switch: a
/// Kubernetes-only trait broke `-p docker-compose --strict`. Expressions see the platform the
/// render is for, `instance.platform`, and a condition on it leaves the trait out where the
/// platform has no such thing.
#[test]
fn a_condition_on_the_platform_renders_one_module_strictly_for_both() {
    let dir = tempfile::tempdir().unwrap();
    let module = opm_tests::write_file(
        dir.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: both, version: 0.1.0}
components:
  web:
    resources:
      Container: {image: 'nginx:1.27', env: {PLATFORM: {value: '${instance.platform}'}}}
    traits:
      UpdateStrategy:
        $when: ${instance.platform == 'kubernetes'}
        type: Recreate
",
    );
    let kubernetes = opm(["mod", "build", &module, "--strict"]);
    assert!(kubernetes.exited(0), "{}", kubernetes.stderr);
    assert!(
        kubernetes.stdout.contains("type: Recreate"),
        "{}",
        kubernetes.stdout
    );
    assert!(
        kubernetes.stdout.contains("value: kubernetes"),
        "{}",
        kubernetes.stdout
    );
    let compose = opm(["mod", "build", &module, "-p", "docker-compose", "--strict"]);
    assert!(compose.exited(0), "{}", compose.stderr);
    assert!(
        compose.stdout.contains("PLATFORM: compose"),
        "{}",
        compose.stdout
    );
    let vet = opm(["mod", "vet", &module, "-p", "docker-compose"]);
    assert!(
        vet.stdout
            .contains("left out:\n  component \"web\", UpdateStrategy: "),
        "{}",
        vet.stdout
    );
}

/// Real charts (2026-12): nothing below an attachment could be left out by a condition — `null`
/// failed the schema, `$when` worked only on whole attachments. A `${…}` whose value is `null`
/// leaves out the field or list item it stands for, `$when` works on any map entry and list item
/// (what it leaves out is never evaluated, so it may use parameters that are not set), and `mod
/// vet` says what was left out and why.
#[test]
fn a_null_or_a_false_condition_leaves_out_any_field_or_item() {
    let dir = tempfile::tempdir().unwrap();
    let module = opm_tests::write_file(
        dir.path(),
        "module.yaml",
        r#"apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: optional, version: 0.1.0}
config:
  properties:
    probes: {type: boolean, default: false}
    smtp:
      type: object
      properties: {enabled: {type: boolean, default: false}, host: {type: string}}
    debug: {type: string}
components:
  web:
    resources:
      Container:
        image: nginx:1.27
        startupProbe: "${config.probes ? {'httpGet': {'path': '/', 'port': 80}} : null}"
        env:
          - {name: A, value: "1"}
          - {$when: "${config.smtp.enabled}", name: SMTP_HOST, value: "${config.smtp.host}"}
          - {$when: "${!config.smtp.enabled}", $value: {name: MAIL, value: "off"}}
          - "${has(config.debug) ? {'name': 'DEBUG_TOO', 'value': config.debug} : null}"
"#,
    );
    let off = opm(["mod", "build", &module, "--strict"]);
    assert!(off.exited(0), "{}", off.stderr);
    assert!(!off.stdout.contains("startupProbe"), "{}", off.stdout);
    assert!(!off.stdout.contains("SMTP_HOST"), "{}", off.stdout);
    assert!(!off.stdout.contains("DEBUG_TOO"), "{}", off.stdout);
    assert!(off.stdout.contains("name: MAIL\n"), "{}", off.stdout);

    let on = opm([
        "mod",
        "build",
        &module,
        "--strict",
        "--set",
        "probes=true",
        "--set",
        "smtp.enabled=true",
        "--set",
        "smtp.host=mail.acme.io",
        "--set",
        "debug=verbose",
    ]);
    assert!(on.exited(0), "{}", on.stderr);
    for present in ["startupProbe:", "value: mail.acme.io", "name: DEBUG_TOO"] {
        assert!(on.stdout.contains(present), "{present}: {}", on.stdout);
    }
    assert!(!on.stdout.contains("name: MAIL"), "{}", on.stdout);

    let vet = opm(["mod", "vet", &module]);
    assert!(vet.exited(0), "{}", vet.stderr);
    for line in [
        "  component \"web\", Container /env/1: ${config.smtp.enabled} is false (",
        "  component \"web\", Container /startupProbe: ${config.probes ? {'httpGet': {'path': '/', 'port': 80}} : null} is null (",
        "  component \"web\", Container /env/2: ${has(config.debug) ? {'name': 'DEBUG_TOO', 'value': config.debug} : null} is null (",
    ] {
        assert!(vet.stdout.contains(line), "{line}\n{}", vet.stdout);
    }
}

/// A module's `locals` are computed once, in order, and read as `local.NAME`;
/// with `merge`, `keys` and `sha256` a Grafana-style ini is written from a map whose default a
/// values file merges into, and its checksum follows it.
#[test]
fn locals_and_the_value_building_functions_write_an_ini_from_a_merged_map() {
    let dir = tempfile::tempdir().unwrap();
    let module = opm_tests::write_file(
        dir.path(),
        "module.yaml",
        r#"apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: grafana, version: 0.1.0}
config:
  properties:
    ini: {type: object, default: {server: {root_url: "http://localhost", http_port: 3000}, paths: {data: /var/lib/grafana}}}
    extraEnv: {type: object, additionalProperties: {type: string}, default: {}}
locals:
  sections: "${ config.ini.keys() }"
  ini: "${ local.sections.map(s, '[' + s + ']\\n' + config.ini[s].keys().map(k, k + ' = ' + string(config.ini[s][k])).join('\\n')).join('\\n\\n') }"
  env: "${ merge({'GF_PATHS_DATA': config.ini.paths.data}, config.extraEnv) }"
components:
  grafana:
    resources:
      Container:
        image: grafana/grafana:12.1.0
        env: "${ local.env.keys().map(k, {'name': k, 'value': local.env[k]}) }"
      ConfigMap:
        data:
          grafana.ini: "${local.ini}"
          checksum: "${sha256(local.ini)}"
"#,
    );
    let values = write(
        dir.path(),
        "prod.yaml",
        "ini: {server: {root_url: 'https://grafana.acme.io'}}\nextraEnv: {GF_LOG_MODE: console}\n",
    );
    let run = opm(["mod", "build", &module, "-f", &values, "--strict"]);
    assert!(run.exited(0), "{}", run.stderr);
    let yaml = &run.stdout;
    assert!(
        yaml.contains(
            "[paths]\n    data = /var/lib/grafana\n\n    [server]\n    http_port = 3000\n    root_url = https://grafana.acme.io"
        ),
        "the default's other sections stay: {yaml}"
    );
    for env in ["name: GF_LOG_MODE", "name: GF_PATHS_DATA"] {
        assert!(yaml.contains(env), "{env}: {yaml}");
    }
    let default = opm(["mod", "build", &module]);
    assert!(default.exited(0), "{}", default.stderr);
    let checksum = |yaml: &str| {
        yaml.lines()
            .find_map(|line| line.trim().strip_prefix("checksum: "))
            .map(str::to_owned)
            .expect("a checksum")
    };
    assert_eq!(checksum(yaml).len(), 64);
    assert_ne!(
        checksum(yaml),
        checksum(&default.stdout),
        "it follows the ini"
    );

    let typo = module.replace("module.yaml", "typo.yaml");
    std::fs::write(
        &typo,
        std::fs::read_to_string(&module)
            .unwrap()
            .replace("${local.ini}", "${local.inii}"),
    )
    .unwrap();
    let run = opm(["mod", "build", &typo]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("in ${local.inii}: local has no \"inii\""),
        "{}",
        run.stderr
    );
}

/// Found in the module language's security pass (December 2026): CEL's interpreter recurses into every operation of an expression,
/// tens of kilobytes of stack each, and `1+1+…+1` of 60 terms (239 bytes) in 40 components
/// overflowed a render thread's stack: opm aborted. The expression is refused by its depth, by
/// name and place, before it runs.
#[test]
fn a_chain_of_operations_deep_enough_to_overflow_the_stack_is_refused_before_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let chain = vec!["1"; 60].join("+");
    let components: String = (0..40)
        .map(|i| {
            format!("  c{i}:\n    resources:\n      Container: {{image: nginx, args: ['${{{chain}}}']}}\n")
        })
        .collect();
    let module = opm_tests::write_file(
        dir.path(),
        "module.yaml",
        &format!(
            "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {{name: deep, version: 0.1.0}}\ncomponents:\n{components}"
        ),
    );
    let run = opm(["mod", "build", &module, "-j", "2"]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "module.yaml:7:40: in ${1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1}: the expression is 60 operations deep, over the limit of 32"
        ),
        "{}",
        run.stderr
    );
}

/// Real charts (2026-12): a typo in a branch not taken shipped — `config.autoscaling.minReplica`
/// passed `mod vet` until `--set autoscaling.enabled=true`. Every expression's syntax, limits
/// and parameters are checked when the module is read, whichever branch a render takes.
#[test]
fn a_typo_in_a_branch_not_taken_is_an_error_when_the_module_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let module = |name: &str, text: &str| {
        opm_tests::write_file(
            dir.path(),
            name,
            &format!(
                "apiVersion: core.opm.dev/v1
kind: Module
metadata: {{name: typo, version: 0.1.0}}
config:
  properties:
    autoscaling:
      type: object
      properties: {{enabled: {{type: boolean, default: false}}, minReplicas: {{type: integer, default: 1}}}}
components:
  web:
    resources:
      Container: {{image: 'nginx:1.27'}}
    traits:
      Replicas:
        $when: ${{!config.autoscaling.enabled}}
        $value: 2
      Scaling:
        $when: ${{config.autoscaling.enabled}}
        {text}
"
            ),
        )
    };
    for (name, text) in [
        ("reference.yaml", "min: ${config.autoscaling.minReplica}"),
        (
            "expression.yaml",
            "min: ${config.autoscaling.minReplica + 1}",
        ),
        ("syntax.yaml", "min: ${config.autoscaling.minReplicas +}"),
    ] {
        let path = module(name, text);
        let vet = opm(["mod", "vet", &path]);
        assert!(vet.exited(2), "{name}: {}", vet.stdout);
        let expected = if name == "syntax.yaml" {
            format!("{name}:19:14: in ${{config.autoscaling.minReplicas +}}: ")
        } else {
            format!(
                "{name}:19:14: in ${{{}}}: config.autoscaling has no parameter \"minReplica\"; did you mean \"minReplicas\"?",
                text.trim_start_matches("min: ${").trim_end_matches('}')
            )
        };
        assert!(vet.stderr.contains(&expected), "{expected}\n{}", vet.stderr);
    }
}

/// Real charts (2026-12): upstream defaults put the app's own name in Secrets, and every message
/// read `[redacted]/module.yaml:…: component "[redacted]-mail"`. A value the module's own file
/// writes is public; the module's, components', namespace's and instance's names and the files'
/// paths are never redacted, and a secret that is one of them is warned about. What the
/// environment, a values file or `--set` supplies stays redacted.
#[test]
fn a_secret_that_is_the_modules_name_leaves_messages_readable_and_env_values_stay_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("nextcloud");
    std::fs::create_dir_all(&project).unwrap();
    let module = opm_tests::write_file(
        &project,
        "module.yaml",
        r#"apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: nextcloud, version: 0.1.0}
config:
  properties:
    db: {type: object, properties: {user: {type: string, default: nextcloud}, password: {type: string, default: changeme-literal}}}
    replicas: {type: integer, default: 1}
components:
  nextcloud-mail:
    resources:
      Container: {image: 'nextcloud:31', env: {TOKEN: {value: '${env:OPM_TEST_TOKEN}'}}}
    traits: {Replicas: '${config.replicas}'}
  nextcloud-db:
    resources:
      Secret:
        type: Opaque
        stringData: {user: '${config.db.user}', password: '${config.db.password}', token: '${env:OPM_TEST_TOKEN}'}
"#,
    );
    let home = dir.path().display().to_string();
    let env = [
        ("OPM_TEST_TOKEN", "tok-4f9a1c-secret"),
        ("HOME", home.as_str()),
    ];
    // A failing render: its error names the file and the component, readably.
    let run = opm_env(
        [
            "mod",
            "build",
            &module,
            "--set",
            "replicas=-3",
            "--verbose=json",
        ],
        &env,
    );
    assert!(run.exited(1), "{}", run.stderr);
    assert!(
        !run.stderr.contains("[redacted]/") && !run.stderr.contains("\"[redacted]"),
        "{}",
        run.stderr
    );
    for readable in [
        "nextcloud/module.yaml:12:14: component \\\"nextcloud-mail\\\"",
        "\"module\":\"nextcloud\"",
        "\"component\":\"nextcloud-db\"",
    ] {
        assert!(run.stderr.contains(readable), "{readable}\n{}", run.stderr);
    }
    assert!(!run.stderr.contains("tok-4f9a1c-secret"), "{}", run.stderr);
    assert!(!run.stderr.contains("warning: "), "{}", run.stderr);

    // A password supplied on the command line that is the module's name: still redacted
    // wherever it is not the name itself, and warned about.
    let vet = opm_env(
        ["mod", "vet", &module, "--set", "db.password=nextcloud-mail"],
        &env,
    );
    assert!(vet.exited(0), "{}", vet.stderr);
    assert!(
        vet.stderr.contains(
            "part of the module's, a component's, the namespace's or the instance's name"
        ),
        "{}",
        vet.stderr
    );
    for readable in [
        "module nextcloud with provider kubernetes",
        "db.user      string   = \"nextcloud\"",
        "component nextcloud-mail (",
    ] {
        assert!(vet.stdout.contains(readable), "{readable}\n{}", vet.stdout);
    }
    assert!(!vet.stdout.contains("tok-4f9a1c-secret"), "{}", vet.stdout);
}

/// The module with every part of the language (tests/fixtures/modules/language.yaml) renders
/// what each part says, valid for the API server (`kubernetes-validate --strict`).
#[test]
fn the_language_fixture_renders_what_each_part_says() {
    let module = repo_root()
        .join("tests/fixtures/modules/language.yaml")
        .display()
        .to_string();
    let run = opm(["mod", "build", &module, "--strict"]);
    assert!(run.exited(0), "{}", run.stderr);
    for present in [
        "example.com/tier: web",
        "- name: MAIL\n",
        "claimName: web-data",
        "[server]\n    http_port: 3000\n    root_url: http://localhost",
    ] {
        assert!(run.stdout.contains(present), "{present}: {}", run.stdout);
    }
    for absent in ["startupProbe", "SMTP_HOST", "SMTP_TOO"] {
        assert!(!run.stdout.contains(absent), "{absent}: {}", run.stdout);
    }
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<String> = crate::examples::documents(&run.stdout)
        .into_iter()
        .enumerate()
        .map(|(index, document)| {
            let file = format!("language-{index:02}.yaml");
            opm_tests::write_file(dir.path(), &file, &document);
            file
        })
        .collect();
    crate::examples::assert_strict_valid(dir.path(), &files);
    let without = opm(["mod", "build", &module, "--set", "storage=false"]);
    assert!(without.exited(0), "{}", without.stderr);
    assert!(
        !without.stdout.contains("PersistentVolumeClaim"),
        "{}",
        without.stdout
    );
}

/// Names are held to the platform's rules, instance prefix included, and a
/// name over them fails its call naming the component, the object and the rule — where a
/// Kubernetes API server would have refused the Service, and Helm would have cut the name.
#[test]
fn a_name_over_the_platforms_limit_fails_naming_the_component_the_object_and_the_rule() {
    let instance = "a-release-name-that-someone-made-rather-long-for-a-big-cluster";
    let run = opm(["mod", "build", &opm_tests::hello(), "--instance", instance]);
    assert!(run.exited(1), "{}", run.stderr);
    let name = format!("{instance}-api");
    assert!(
        run.stderr.contains(&format!(
            "Service {name:?} ({} characters): a Service's name is a DNS-1035 label: at most 63",
            name.len()
        )),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("component \"api\""), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "nothing is written: {}", run.stdout);
    // `mod vet` renders a sound plan too, and says the same.
    let vet = opm(["mod", "vet", &opm_tests::hello(), "--instance", instance]);
    assert!(vet.exited(1), "{}", vet.stderr);
    assert!(
        vet.stderr.contains("a Service's name is a DNS-1035 label")
            && vet
                .stderr
                .contains("the plan is sound, but rendering it fails"),
        "{}",
        vet.stderr
    );
    // Within the limit, the same instance renders.
    let run = opm([
        "mod",
        "build",
        &opm_tests::hello(),
        "--instance",
        &instance[..39],
    ]);
    assert!(run.exited(0), "{}", run.stderr);
}

/// The Grafana and Nextcloud shapes, written without patches or doubled
/// ternaries, take their production values — a generated ini merged from a map, env lists with
/// optional entries, seven subPath mounts of one claim, probes switched off, a pinned claim name
/// — and render strict-valid for Kubernetes and `docker compose config`-valid for compose
/// (`examples::every_rendered_resource_is_valid_kubernetes_in_strict_mode` and
/// `compose::every_example_is_valid_compose` check their defaults).
#[test]
fn the_grafana_and_nextcloud_examples_take_their_production_values() {
    let grafana = example("grafana");
    let values = format!("{grafana}/prod.yaml");
    let run = opm(["mod", "build", &grafana, "-f", &values, "--strict"]);
    assert!(run.exited(0), "{}", run.stderr);
    for present in [
        "[analytics]\n    check_for_updates = false\n",
        "[paths]\n    data = /var/lib/grafana\n",
        "root_url = https://grafana.acme.io/\n",
        "name: Prometheus\n",
        "- name: GF_SMTP_HOST\n          value: smtp.acme.io:587\n",
        "- name: GF_LOG_LEVEL\n          value: warn\n",
        "storage: 50Gi\n",
        "claimName: grafana\n",
        "kind: Ingress\n",
        "kind: PodDisruptionBudget\n",
    ] {
        assert!(run.stdout.contains(present), "{present}: {}", run.stdout);
    }
    let nextcloud = example("nextcloud");
    let values = format!("{nextcloud}/prod.yaml");
    let run = opm_env(
        ["mod", "build", &nextcloud, "-f", &values, "--strict"],
        &[("NC_DB_PASSWORD", "db-pass-from-env-1")],
    );
    assert!(run.exited(0), "{}", run.stderr);
    for present in [
        "- name: POSTGRES_HOST\n          value: postgres.db.svc\n",
        "- name: REDIS_HOST\n          value: redis-master.cache.svc\n",
        "- name: MAIL_DOMAIN\n          value: acme.io\n",
        "claimName: cloud-nextcloud\n",
        "storage: 100Gi\n",
        "db-password: db-pass-from-env-1\n",
    ] {
        assert!(run.stdout.contains(present), "{present}: {}", run.stdout);
    }
    for absent in ["SQLITE_DATABASE", "livenessProbe", "readinessProbe"] {
        assert!(!run.stdout.contains(absent), "{absent}: {}", run.stdout);
    }
    assert_eq!(run.stdout.matches("subPath: ").count(), 7, "{}", run.stdout);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    // The same values for compose.
    for (module, values) in [
        (&grafana, "grafana/prod.yaml"),
        (&nextcloud, "nextcloud/prod.yaml"),
    ] {
        let values = repo_root()
            .join("examples")
            .join(values)
            .display()
            .to_string();
        let run = opm_env(
            [
                "mod",
                "build",
                module,
                "-f",
                &values,
                "-p",
                "docker-compose",
                "--strict",
            ],
            &[("NC_DB_PASSWORD", "db-pass-from-env-1")],
        );
        assert!(run.exited(0), "{module}: {}", run.stderr);
    }
}

/// Real charts (2026-12): a module that adopts an existing install pins the names of its objects
/// — a claim, a ConfigMap, a Secret, a Service — and they stay so for any instance.
#[test]
fn pinned_names_are_kept_whatever_the_instance() {
    let dir = tempfile::tempdir().unwrap();
    let module = opm_tests::write_file(
        dir.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: app, version: 0.1.0}
components:
  web:
    resources:
      Container: {image: 'nginx:1.27', ports: {http: {containerPort: 80}}}
      ConfigMap: {name: legacy-config, data: {a: b}}
      Secret: {name: legacy-secret, stringData: {token: value-from-the-module}}
    traits:
      Expose: {name: legacy, ports: {http: {port: 80}}}
      PersistentStorage: {data: {size: 1Gi, mountPath: /data, claimName: legacy-data}}
",
    );
    let run = opm(["mod", "build", &module, "--instance", "eu", "--strict"]);
    assert!(run.exited(0), "{}", run.stderr);
    for name in ["legacy-config", "legacy-secret", "legacy", "legacy-data"] {
        assert!(
            run.stdout.contains(&format!("  name: {name}\n")),
            "{name}: {}",
            run.stdout
        );
    }
    assert!(
        run.stdout.contains("claimName: legacy-data\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("  name: eu-web\n"),
        "the Deployment: {}",
        run.stdout
    );
    // Compose reaches a service by its component's name: the pinned Service name is said.
    let compose = opm(["mod", "build", &module, "-p", "docker-compose"]);
    assert!(compose.exited(0), "{}", compose.stderr);
    assert!(
        compose.stderr.contains("expose.name \"legacy\""),
        "{}",
        compose.stderr
    );
}

/// Found in the review of the module language (December 2026): each local was resolved with a copy of every one
/// before it in scope, so 20,000 literal locals (a 418 KB module) took 15.8 s, growing with the
/// square of their number. A module has at most 256 locals, refused by file and line beyond;
/// each is added to the scope in place.
#[test]
fn more_locals_than_the_limit_are_refused_and_those_within_it_resolve_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let module = |count: usize| {
        let locals: String = (0..count)
            .map(|i| {
                if i == 0 {
                    "  l0: a\n".to_owned()
                } else {
                    format!("  l{i}: \"${{local.l{} + 'a'}}\"\n", i - 1)
                }
            })
            .collect();
        opm_tests::write_file(
            dir.path(),
            &format!("m{count}.yaml"),
            &format!(
                "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {{name: many, version: 0.1.0}}\nlocals:\n{locals}components:\n  web:\n    resources:\n      Container: {{image: nginx, args: ['${{local.l{}}}']}}\n",
                count - 1
            ),
        )
    };
    let run = opm(["mod", "build", &module(256)]);
    assert!(run.exited(0), "{}", run.stderr);
    // Each local saw the one before it: the last is 256 letters (folded as YAML writes it).
    assert!(
        run.stdout.contains(&format!(" {}\n", "a".repeat(256))),
        "{}",
        run.stdout
    );
    let run = opm(["mod", "build", &module(257)]);
    assert!(run.exited(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("m257.yaml:5:3: locals has 257 names, over the limit of 256"),
        "{}",
        run.stderr
    );
}

/// `opm mod vet` plans through the render's own entry with the flags that change the plan:
/// `-n` is the namespace `${instance.namespace}` reads in vet as in build (vet had no `-n`, so
/// a module that chose by namespace was vetted for another namespace than it was built for).
#[test]
fn vet_and_build_see_the_same_instance_namespace() {
    let dir = tempfile::tempdir().expect("temp dir");
    let module = write(
        dir.path(),
        "module.yaml",
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: ns, version: 0.1.0}\n\
         components:\n  api:\n    resources:\n      Container:\n        image: nginx:1.27\n\
         \x20       ports: {http: {containerPort: 8080}}\n    traits:\n      Expose:\n\
         \x20       $when: ${instance.namespace != 'staging'}\n        type: ClusterIP\n",
    );
    let expose_left_out = "component \"api\", Expose: ${instance.namespace != 'staging'} is false";

    let build = opm(["mod", "build", &module, "-n", "staging"]);
    assert!(build.exited(0), "{}", build.stderr);
    assert!(
        build.stdout.contains("namespace: staging\n"),
        "{}",
        build.stdout
    );
    assert!(
        !build.stdout.contains("kind: Service\n"),
        "{}",
        build.stdout
    );
    let vet = opm(["mod", "vet", &module, "-n", "staging"]);
    assert!(vet.exited(0), "{}", vet.stderr);
    assert!(vet.stdout.contains(expose_left_out), "{}", vet.stdout);

    let build = opm(["mod", "build", &module]);
    assert!(build.stdout.contains("kind: Service\n"), "{}", build.stdout);
    let vet = opm(["mod", "vet", &module]);
    assert!(vet.exited(0), "{}", vet.stderr);
    assert!(!vet.stdout.contains(expose_left_out), "{}", vet.stdout);
}
