//! The renderer on resources as the transformers return them, and end to end from components.

use compose_config::ConfigTransformer;
use compose_secret::SecretTransformer;
use compose_workload::WorkloadTransformer;
use opm_compose_common::test_context;
use opm_guest::{
    Chunk, Component, Context, File, Options, RenderError, Rendered, Renderer, Transformer, Value,
    json,
};

use super::ComposeRenderer;

type Logs = Vec<(&'static str, String)>;

const WORKLOAD: &str = "transformer.opm.dev/compose@v1#StatelessTransformer";

/// The resources the provider's transformers render from `components` (name → component
/// document without its name), as the host would pass them, with the host's tracking label.
fn transform(context: &Context, components: Value) -> Vec<Rendered> {
    let mut out = Vec::new();
    for (name, component) in components.as_object().unwrap() {
        let mut document = component.clone();
        document["metadata"]["name"] = json!(name);
        let parsed = Component::from_value(document.clone()).unwrap();
        let spec = document["spec"].as_object().unwrap();
        let mut calls: Vec<(&str, Vec<Value>)> = Vec::new();
        if spec.contains_key("container") {
            calls.push((
                WORKLOAD,
                WorkloadTransformer::transform(&parsed, context).unwrap(),
            ));
        }
        if spec.contains_key("configMap") {
            let fqn = "transformer.opm.dev/compose@v1#ConfigTransformer";
            calls.push((fqn, ConfigTransformer::transform(&parsed, context).unwrap()));
        }
        if spec.contains_key("secret") {
            let fqn = "transformer.opm.dev/compose@v1#SecretTransformer";
            calls.push((fqn, SecretTransformer::transform(&parsed, context).unwrap()));
        }
        for (fqn, resources) in calls {
            for mut resource in resources {
                resource["metadata"]["labels"]["component.opmodel.dev/name"] = json!(name);
                out.push(Rendered::new(name, fqn, &resource));
            }
        }
    }
    out
}

/// Renders `resources`; a YAML render is also read back, and must be the JSON render's value.
fn render_with(
    resources: &[Rendered],
    context: &Context,
    options: &Options,
) -> (Result<Vec<File>, RenderError>, Logs) {
    let (result, logs) =
        opm_guest::log::capture(|| ComposeRenderer::render(resources, context, options));
    if let Ok(files) = &result
        && options.format == "yaml"
    {
        let json = Options {
            format: "json".into(),
            ..options.clone()
        };
        let (as_json, _) =
            opm_guest::log::capture(|| ComposeRenderer::render(resources, context, &json));
        let expected: Value = serde_json::from_str(&text(&as_json.unwrap()[0])).unwrap();
        let yaml = text(&files[0]);
        let read: Value = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(read, expected, "the YAML reads back otherwise:\n{yaml}");
    }
    (result, logs)
}

fn stdout() -> Options {
    Options {
        format: "yaml".into(),
        ..Options::default()
    }
}

fn directory() -> Options {
    Options {
        directory: true,
        ..stdout()
    }
}

fn text(file: &File) -> String {
    let mut bytes = Vec::new();
    for chunk in &file.content {
        match chunk {
            Chunk::Bytes(part) => bytes.extend_from_slice(part),
            Chunk::Yaml(_) => panic!("the compose renderer writes its own YAML"),
        }
    }
    String::from_utf8(bytes).unwrap()
}

/// The one compose document of a stdout render, as JSON, and the warnings.
fn document(components: Value) -> (Value, Vec<String>) {
    let context = test_context();
    let resources = transform(&context, components);
    let (result, logs) = render_with(
        &resources,
        &context,
        &Options {
            format: "json".into(),
            ..Options::default()
        },
    );
    let files = result.unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].path, "compose.json");
    (
        serde_json::from_str(&text(&files[0])).unwrap(),
        warns(&logs),
    )
}

fn warns(logs: &Logs) -> Vec<String> {
    logs.iter()
        .filter(|(level, _)| *level == "warn")
        .map(|(_, line)| line.clone())
        .collect()
}

fn service(name: &str, spec: Value) -> Rendered {
    Rendered::new(
        name,
        WORKLOAD,
        &json!({"apiVersion": "compose.opm.dev/v1", "kind": "Service",
                "metadata": {"name": name, "labels": {"team": "a"}}, "spec": spec}),
    )
}

#[test]
fn one_service_is_a_compose_file_named_after_the_instance() {
    let context = test_context();
    let resources = transform(
        &context,
        json!({
            "api": {"metadata": {}, "spec": {"container": {"image": "nginx:1.27",
                    "ports": {"http": {"containerPort": 8080}}}, "replicas": 2}},
        }),
    );
    let (result, logs) = render_with(&resources, &context, &stdout());
    let files = result.unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].path, "compose.yaml");
    assert_eq!(
        text(&files[0]),
        r#"name: shop
services:
  api:
    image: nginx:1.27
    deploy:
      replicas: 2
    restart: unless-stopped
    labels:
      component.opmodel.dev/name: api
      module.opmodel.dev/name: shop
      module.opmodel.dev/version: "1.2.0"
      team: payments
networks:
  default:
    labels:
      module.opmodel.dev/name: shop
      module.opmodel.dev/version: "1.2.0"
      team: payments
"#
    );
    assert!(warns(&logs).is_empty());
}

#[test]
fn two_resources_of_one_kind_and_name_are_refused_and_name_each_other() {
    let volume = Rendered::new(
        "b",
        "transformer.opm.dev/compose@v1#StatefulTransformer",
        &json!({"apiVersion": "compose.opm.dev/v1", "kind": "Volume",
                "metadata": {"name": "api"}, "spec": {}}),
    );
    let resources = [service("a", json!({"image": "x"})), volume.clone(), {
        let mut second = service("api", json!({"image": "y"}));
        second.component = "b".into();
        second.name = "a".into();
        second.json = second.json.replace("\"name\":\"api\"", "\"name\":\"a\"");
        second
    }];
    let (result, _) = render_with(&resources, &test_context(), &stdout());
    let RenderError::Refused(refused) = result.unwrap_err() else {
        panic!("refused");
    };
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert_eq!(refused[0].0, 0);
    assert!(
        refused[0].1.contains("also rendered by component \"b\""),
        "{refused:?}"
    );
    assert_eq!(refused[1].0, 2);
    assert!(
        refused[1].1.contains("also rendered by component \"a\""),
        "{refused:?}"
    );
    // A Service and a Volume of one name are two entries.
    let (result, _) = render_with(
        &[service("api", json!({"image": "x"})), volume],
        &test_context(),
        &stdout(),
    );
    assert!(result.is_ok());
}

#[test]
fn a_resource_that_is_not_compose_is_refused() {
    let deployment = Rendered::new(
        "api",
        "transformer.opm.dev/workload@v1#DeploymentTransformer",
        &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"}}),
    );
    let (result, _) = render_with(&[deployment], &test_context(), &stdout());
    let RenderError::Refused(refused) = result.unwrap_err() else {
        panic!("refused");
    };
    assert!(
        refused[0]
            .1
            .contains("Deployment \"api\" (apps/v1) is not a compose resource"),
        "{refused:?}"
    );
}

#[test]
fn split_and_other_formats_are_refused_and_json_is_written() {
    let resources = [service("api", json!({"image": "x"}))];
    let split = Options {
        split: true,
        ..directory()
    };
    let (result, _) = render_with(&resources, &test_context(), &split);
    assert!(matches!(result, Err(RenderError::Failed(m)) if m.contains("--split")));
    let toml = Options {
        format: "toml".into(),
        ..stdout()
    };
    let (result, _) = render_with(&resources, &test_context(), &toml);
    assert!(matches!(result, Err(RenderError::Failed(m)) if m.contains("not \"toml\"")));
    let json = Options {
        format: "json".into(),
        ..stdout()
    };
    let files = render_with(&resources, &test_context(), &json).0.unwrap();
    let value: Value = serde_json::from_str(&text(&files[0])).unwrap();
    assert_eq!(value["services"]["api"]["image"], "x");
    assert_eq!(value["name"], "shop");
}

#[test]
fn secret_and_config_keys_become_the_values_of_variables_escaped() {
    let (document, warnings) = document(json!({
        "api": {"metadata": {}, "spec": {"container": {"image": "x", "env": {
            "TOKEN": {"secretKeyRef": {"name": "credentials", "key": "token"}},
            "FLAGS": {"configMapKeyRef": {"name": "settings", "key": "flags"}},
            "MISSING": {"configMapKeyRef": {"name": "settings", "key": "nope", "optional": true}},
            "URL": {"value": "https://u:$(TOKEN)@host/"},
            "PLAIN": {"value": "$HOME"},
        }, "args": ["--token=$(TOKEN)", "$(UNKNOWN)"]}}},
        "credentials": {"metadata": {}, "spec": {"secret": {"stringData": {"token": "pa$$word"}}}},
        "settings": {"metadata": {}, "spec": {"configMap": {"data": {"flags": "a,b"}}}},
    }));
    let api = &document["services"]["api"];
    assert_eq!(
        api["environment"],
        json!({"FLAGS": "a,b", "PLAIN": "$$HOME", "TOKEN": "pa$$$$word", "URL": "https://u:pa$$$$word@host/"})
    );
    assert_eq!(api["command"], json!(["--token=pa$$$$word", "$$(UNKNOWN)"]));
    assert!(api.get("x-opm").is_none());
    // Nothing mounts them: no configs or secrets entries.
    assert!(document.get("configs").is_none() && document.get("secrets").is_none());
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn a_secret_the_module_does_not_render_comes_from_the_environment_of_compose() {
    let context = test_context();
    let resources = transform(
        &context,
        json!({
            "api": {"metadata": {}, "spec": {"container": {"image": "x", "env": {
                "ADMIN_TOKEN": {"secretKeyRef": {"name": "vault-admin", "key": "token"}}}}}},
        }),
    );
    let (result, logs) = render_with(&resources, &context, &stdout());
    let yaml = text(&result.unwrap()[0]);
    assert!(
        yaml.contains("ADMIN_TOKEN: \"${ADMIN_TOKEN:?set ADMIN_TOKEN: the module reads it from Secret vault-admin, which it does not render}\""),
        "{yaml}"
    );
    let warnings = warns(&logs);
    assert!(
        warnings[0].contains("environment of `docker compose"),
        "{warnings:?}"
    );
    let strict = Context {
        strict: true,
        ..context
    };
    let (result, _) = render_with(&resources, &strict, &stdout());
    assert!(matches!(result, Err(RenderError::Refused(r)) if r[0].1.contains("--strict")));
}

#[test]
fn a_missing_key_of_a_rendered_object_is_refused() {
    let context = test_context();
    let resources = transform(
        &context,
        json!({
            "api": {"metadata": {}, "spec": {"container": {"image": "x", "env": {
                "TOKEN": {"secretKeyRef": {"name": "credentials", "key": "nope"}}}}}},
            "credentials": {"metadata": {}, "spec": {"secret": {"stringData": {"token": "t"}}}},
        }),
    );
    let (result, _) = render_with(&resources, &context, &stdout());
    let RenderError::Refused(refused) = result.unwrap_err() else {
        panic!("refused");
    };
    assert!(
        refused[0]
            .1
            .contains("key \"nope\" of Secret \"credentials\", which has no such key"),
        "{refused:?}"
    );
    assert!(!refused[0].1.contains("\"t\""));
}

#[test]
fn env_from_defines_every_key_the_container_does_not() {
    let (document, _) = document(json!({
        "api": {"metadata": {}, "spec": {"container": {"image": "x",
            "envFrom": [{"configMapRef": {"name": "settings"}},
                        {"secretRef": {"name": "credentials"}, "prefix": "S_"},
                        {"secretRef": {"name": "absent", "optional": true}}],
            "env": {"MODE": {"value": "mine"}, "URL": {"value": "$(HOST):1"}}}}},
        "settings": {"metadata": {}, "spec": {"configMap": {"data": {"MODE": "theirs", "HOST": "db"}}}},
        "credentials": {"metadata": {}, "spec": {"secret": {"stringData": {"token": "t"}}}},
    }));
    assert_eq!(
        document["services"]["api"]["environment"],
        json!({"HOST": "db", "MODE": "mine", "S_token": "t", "URL": "db:1"})
    );
}

#[test]
fn config_map_volumes_mount_one_inline_config_per_key() {
    let (document, warnings) = document(json!({
        "web": {"metadata": {}, "spec": {
            "container": {"image": "x", "volumeMounts": {
                "site": {"mountPath": "/www", "readOnly": true},
                "picked": {"mountPath": "/etc/app"},
                "one": {"mountPath": "/etc/app.yaml", "subPath": "app.yaml"}}},
            "volumes": {
                "site": {"configMap": "site"},
                "picked": {"configMap": {"name": "site", "items": [{"key": "index.html", "path": "sub/page.html", "mode": 256}], "defaultMode": 292}},
                "one": {"configMap": "site"}}}},
        "site": {"metadata": {}, "spec": {"configMap": {
            "data": {"index.html": "<h1>${x}</h1>\n", "app.yaml": "a: 1\n"}, "labels": {"tier": "web"}}}},
    }));
    let web = &document["services"]["web"];
    assert_eq!(
        web["configs"],
        json!([{"source": "site_app.yaml", "target": "/etc/app.yaml"},
               {"source": "site_index.html", "target": "/etc/app/sub/page.html", "mode": 256},
               {"source": "site_app.yaml", "target": "/www/app.yaml"},
               {"source": "site_index.html", "target": "/www/index.html"}])
    );
    assert_eq!(
        document["configs"]["site_index.html"],
        json!({"content": "<h1>$${x}</h1>\n", "labels": {"component.opmodel.dev/name": "site",
               "module.opmodel.dev/name": "shop", "module.opmodel.dev/version": "1.2.0",
               "team": "payments", "tier": "web"}})
    );
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn secret_volumes_are_secrets_files_with_an_out_dir_and_inline_configs_on_stdout() {
    let context = test_context();
    let resources = transform(
        &context,
        json!({
            "web": {"metadata": {}, "spec": {
                "container": {"image": "x", "volumeMounts": {"tls": {"mountPath": "/etc/tls"}}},
                "volumes": {"tls": {"secret": "credentials"}}}},
            "credentials": {"metadata": {}, "spec": {"secret": {"stringData": {"tls.crt": "CERT", "tls.key": "KEY"},
                                                                "data": {"raw": "/w=="}}}},
        }),
    );
    let (result, logs) = render_with(&resources, &context, &directory());
    let files = result.unwrap();
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "compose.yaml",
            "secrets/credentials/raw",
            "secrets/credentials/tls.crt",
            "secrets/credentials/tls.key"
        ]
    );
    assert_eq!(files[1].content, [Chunk::Bytes(vec![0xff])]);
    assert_eq!(text(&files[2]), "CERT");
    let yaml = text(&files[0]);
    assert!(
        yaml.contains(
            "    secrets:\n      - source: credentials_raw\n        target: /etc/tls/raw\n"
        ),
        "{yaml}"
    );
    assert!(
        yaml.contains("secrets:\n  credentials_raw:\n    file: ./secrets/credentials/raw\n"),
        "{yaml}"
    );
    assert!(!yaml.contains("CERT"), "{yaml}");
    assert!(warns(&logs).is_empty());

    let (result, logs) = render_with(&resources, &context, &stdout());
    let files = result.unwrap();
    assert_eq!(files.len(), 1);
    let yaml = text(&files[0]);
    assert!(
        yaml.contains("configs:\n  credentials_tls.crt:\n    content: CERT\n"),
        "{yaml}"
    );
    assert!(!yaml.contains("credentials_raw"), "{yaml}");
    let warnings = warns(&logs);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("holds bytes that are not text"))
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("render with --out-dir to get compose secrets"))
    );
}

#[test]
fn a_required_object_the_module_does_not_render_is_refused_and_an_optional_one_skipped() {
    let context = test_context();
    let mount = |optional: bool| {
        transform(
            &context,
            json!({
                "web": {"metadata": {}, "spec": {
                    "container": {"image": "x", "volumeMounts": {"conf": {"mountPath": "/etc/conf"}}},
                    "volumes": {"conf": {"configMap": {"name": "elsewhere", "optional": optional}}}}},
            }),
        )
    };
    let (result, _) = render_with(&mount(false), &context, &stdout());
    assert!(
        matches!(result, Err(RenderError::Refused(r)) if r[0].1.contains("ConfigMap \"elsewhere\" at /etc/conf"))
    );
    let (result, _) = render_with(&mount(true), &context, &stdout());
    assert!(!text(&result.unwrap()[0]).contains("configs"));
}

#[test]
fn claims_no_component_renders_are_external_volumes() {
    let (document, warnings) = document(json!({
        "transform": {"metadata": {}, "spec": {
            "container": {"image": "x", "volumeMounts": {"staging": {"mountPath": "/staging"}, "old": {"mountPath": "/old"}}},
            "volumes": {"staging": {"persistentClaim": "extract-staging"}, "old": {"persistentClaim": "legacy-data"}}}},
        "extract": {"metadata": {"labels": {"core.opm.dev/workload-type": "job"}}, "spec": {
            "container": {"image": "x"},
            "persistentStorage": {"staging": {"size": "1Gi", "mountPath": "/staging"}}}},
    }));
    assert_eq!(
        document["volumes"],
        json!({"extract-staging": {"labels": {"component.opmodel.dev/name": "extract",
                   "module.opmodel.dev/name": "shop", "module.opmodel.dev/version": "1.2.0", "team": "payments"}},
               "legacy-data": {"name": "legacy-data", "external": true}})
    );
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("\"legacy-data\""), "{warnings:?}");
}

#[test]
fn a_dependency_on_a_service_the_render_does_not_have_is_dropped_with_a_warning() {
    let (document, warnings) = document(json!({
        "api": {"metadata": {"annotations": {"depends-on.opm.dev/cleanup": "completed",
                                             "depends-on.opm.dev/db": "healthy"}},
                "spec": {"container": {"image": "x"}}},
        "db": {"metadata": {}, "spec": {"container": {"image": "postgres",
               "readinessProbe": {"exec": {"command": ["pg_isready"]}}}}},
    }));
    assert_eq!(
        document["services"]["api"]["depends_on"],
        json!({"db": {"condition": "service_healthy"}})
    );
    assert!(
        warnings[0].contains("waits for \"cleanup\""),
        "{warnings:?}"
    );
}

#[test]
fn service_fields_are_written_in_one_order_whatever_order_a_patch_left() {
    let resources = [service(
        "api",
        json!({
            "x-custom": 1, "restart": "always", "ulimits": {"nofile": 1024}, "image": "x",
            "labels": {"own": "1", "team": "mine"},
        }),
    )];
    let files = render_with(&resources, &test_context(), &stdout())
        .0
        .unwrap();
    assert_eq!(
        text(&files[0]).split("networks:").next().unwrap(),
        "name: shop\nservices:\n  api:\n    image: x\n    restart: always\n    labels:\n      own: \"1\"\n      team: a\n    ulimits:\n      nofile: 1024\n    x-custom: 1\n"
    );
}

#[test]
fn the_run_test_module_renders_its_services_configs_and_job() {
    let context = Context {
        name: "compose-run".into(),
        labels: [("team".to_owned(), "opm-tests".to_owned())].into(),
        ..Context::default()
    };
    let resources = transform(
        &context,
        json!({
            "credentials": {"metadata": {}, "spec": {"secret": {"stringData": {"token": "s3cret-token-for-compose"}}}},
            "setup": {"metadata": {"labels": {"core.opm.dev/workload-type": "job"}}, "spec": {
                "container": {"image": "opm-test/busybox:1", "command": ["sh", "-c", "echo setup done"]},
                "restartPolicy": {"policy": "Never"}}},
            "site": {"metadata": {}, "spec": {"configMap": {"data": {"index.html": "<h1>opm on compose</h1>\n"}}}},
            "web": {"metadata": {}, "spec": {
                "container": {
                    "image": "opm-test/busybox:1",
                    "command": ["httpd", "-f", "-p", "8080", "-h", "/www"],
                    "ports": {"http": {"containerPort": 8080}},
                    "env": {"GREETING": {"value": "hello from opm"},
                            "API_TOKEN": {"secretKeyRef": {"name": "credentials", "key": "token"}}},
                    "resources": {"limits": {"memory": "64Mi"}},
                    "volumeMounts": {"www": {"mountPath": "/www", "readOnly": true}, "scratch": {"mountPath": "/scratch"}}},
                "volumes": {"www": {"configMap": "site"}, "scratch": {"emptyDir": {}}},
                "expose": {"type": "NodePort", "ports": {"http": {"port": 80, "targetPort": "http", "nodePort": 31847}}},
                "healthCheck": {"readiness": {"exec": {"command": ["wget", "-q", "-O", "/dev/null", "http://127.0.0.1:8080/index.html"]},
                                              "periodSeconds": 1, "timeoutSeconds": 2, "failureThreshold": 30}}}},
        }),
    );
    let (result, logs) = render_with(&resources, &context, &directory());
    let files = result.unwrap();
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["compose.yaml", "configs/site/index.html"]);
    assert_eq!(text(&files[1]), "<h1>opm on compose</h1>\n");
    assert_eq!(
        text(&files[0]),
        r#"name: compose-run
services:
  setup:
    image: opm-test/busybox:1
    entrypoint:
      - sh
      - "-c"
      - echo setup done
    deploy:
      replicas: 1
    restart: "no"
    labels:
      component.opmodel.dev/name: setup
      team: opm-tests
  web:
    image: opm-test/busybox:1
    entrypoint:
      - httpd
      - "-f"
      - "-p"
      - "8080"
      - "-h"
      - /www
    environment:
      API_TOKEN: s3cret-token-for-compose
      GREETING: hello from opm
    ports:
      - name: http
        target: 8080
        published: "31847"
        protocol: tcp
    volumes:
      - type: volume
        target: /scratch
    configs:
      - source: site_index.html
        target: /www/index.html
    healthcheck:
      test:
        - CMD
        - wget
        - "-q"
        - "-O"
        - /dev/null
        - http://127.0.0.1:8080/index.html
      interval: 1s
      timeout: 2s
      retries: 30
    deploy:
      replicas: 1
      resources:
        limits:
          memory: 64m
    restart: unless-stopped
    labels:
      component.opmodel.dev/name: web
      team: opm-tests
configs:
  site_index.html:
    file: ./configs/site/index.html
    labels:
      component.opmodel.dev/name: site
      team: opm-tests
networks:
  default:
    labels:
      team: opm-tests
"#
    );
    let warnings = warns(&logs);
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn env_from_leaves_out_config_bytes_as_kubernetes_does_and_warns_of_secret_bytes() {
    let (document, warnings) = document(json!({
        "api": {"metadata": {}, "spec": {"container": {"image": "x", "envFrom": [
            {"configMapRef": {"name": "settings"}}, {"secretRef": {"name": "credentials"}}]}}},
        "settings": {"metadata": {}, "spec": {"configMap": {"data": {"A": "a"}, "binaryData": {"LOGO": "/w=="}}}},
        "credentials": {"metadata": {}, "spec": {"secret": {"data": {"RAW": "/w==", "B": "Yg=="}}}},
    }));
    assert_eq!(
        document["services"]["api"]["environment"],
        json!({"A": "a", "B": "b"})
    );
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("key \"RAW\" holds bytes"),
        "{warnings:?}"
    );
}

#[test]
fn a_read_only_service_takes_configs_as_files_and_a_mode_is_the_files_own() {
    let context = test_context();
    let resources = transform(
        &context,
        json!({
            "web": {"metadata": {}, "spec": {
                "container": {"image": "x", "securityContext": {"readOnlyRootFilesystem": true},
                              "volumeMounts": {"conf": {"mountPath": "/etc/conf"}}},
                "volumes": {"conf": {"configMap": {"name": "settings", "defaultMode": 256}}}}},
            "settings": {"metadata": {}, "spec": {"configMap": {"data": {"a.yaml": "a: 1\n"}}}},
        }),
    );
    let (result, logs) = render_with(&resources, &context, &directory());
    let files = result.unwrap();
    assert_eq!(files[1].path, "configs/settings/a.yaml");
    let yaml = text(&files[0]);
    assert!(yaml.contains("    configs:\n      - source: settings_a.yaml\n        target: /etc/conf/a.yaml\n    read_only: true\n"), "{yaml}");
    let warnings = warns(&logs);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("mode 0o400"), "{warnings:?}");

    let (result, logs) = render_with(&resources, &context, &stdout());
    let yaml = text(&result.unwrap()[0]);
    assert!(yaml.contains("        mode: 256\n"), "{yaml}");
    let warnings = warns(&logs);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("cannot write an inline config into a read-only container"),
        "{warnings:?}"
    );
}

/// The JSON pointer of every string value of `value` (keys aside) in which compose would
/// interpolate something, with the string; and how many strings hold an escaped `$`.
fn interpolated(value: &Value, at: &str, found: &mut Vec<String>, escaped: &mut usize) {
    match value {
        Value::String(text) => {
            if opm_compose_common::expand::interpolates(text) {
                found.push(format!("{at}: {text:?}"));
            } else if text.contains("$$") {
                *escaped += 1;
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                interpolated(item, &format!("{at}/{index}"), found, escaped);
            }
        }
        Value::Object(fields) => {
            for (key, item) in fields {
                interpolated(item, &format!("{at}/{key}"), found, escaped);
            }
        }
        _ => {}
    }
}

/// What compose reads of `file`: its YAML, parsed.
fn parsed(file: &File) -> Value {
    serde_saphyr::from_str(&text(file)).unwrap()
}

/// Every string a component can give, `$X` and `${Y:-z}` in each: the host-access label lets
/// the host's fields through too.
const DOLLARS: &str = "$X and ${Y:-z}";

fn every_string_field() -> Value {
    let d = DOLLARS;
    json!({
        "web": {"metadata": {"labels": {"security.opm.dev/host-access": "true"},
                             "annotations": {"note": d}},
                "spec": {
            "container": {
                "name": "web",
                "image": {"repository": "registry.example/$X", "tag": "${Y:-z}"},
                "imagePullPolicy": "Always",
                "command": ["/bin/$X", "${Y:-z}"],
                "args": ["--a=$X", "--b=${Y:-z}", "--token=$(TOKEN)"],
                "workingDir": "/srv/$X",
                "env": {
                    "PLAIN": {"value": d},
                    "TOKEN": {"secretKeyRef": {"name": "credentials", "key": "token"}},
                    "URL": {"value": "https://$(TOKEN)@${Y:-z}/"},
                    "NOTE": {"fieldRef": {"fieldPath": "metadata.annotations['note']"}},
                    "TIER": {"fieldRef": {"fieldPath": "metadata.labels['tier']"}},
                },
                "envFrom": [{"configMapRef": {"name": "settings"}, "prefix": "S_"}],
                "ports": {"http": {"containerPort": 8080}},
                "volumeMounts": {
                    "host": {"mountPath": "/host/$X", "subPath": "${Y:-z}"},
                    "data": {"mountPath": "/data/$X", "subPath": "${Y:-z}"},
                    "nas": {"mountPath": "/nas/$X"},
                    "conf": {"mountPath": "/etc/$X"},
                    "fast": {"mountPath": "/fast/${Y:-z}"},
                    "scratch": {"mountPath": "/scratch/$X"},
                },
                "securityContext": {
                    "privileged": true, "capabilities": {"add": ["SYS_ADMIN"], "drop": ["NET_RAW"]},
                    "appArmorProfile": {"type": "Localhost", "localhostProfile": d},
                    "seLinuxOptions": {"user": "$X", "role": "${Y:-z}", "type": "$X", "level": d},
                },
                "readinessProbe": {"httpGet": {"path": "/$X", "host": "${Y:-z}", "port": "http",
                                               "httpHeaders": [{"name": "X-$X", "value": d}]}},
                "lifecycle": {"postStart": {"exec": {"command": ["$X", "${Y:-z}"]}},
                              "preStop": {"httpGet": {"path": "/${Y:-z}", "port": 8080}}},
            },
            "volumes": {
                "host": {"hostPath": {"path": "/var/$X"}},
                "data": {"persistentClaim": "claim-$X"},
                "nas": {"nfs": {"server": "$X.example", "path": "/${Y:-z}"}},
                "conf": {"configMap": {"name": "settings", "items": [{"key": "a", "path": "$X/a"}]}},
                "fast": {"emptyDir": {"medium": "Memory"}},
                "scratch": {"emptyDir": {}},
            },
            "persistentStorage": {"cache": {"size": "1Gi", "mountPath": "/cache/$X",
                                            "labels": {"l": d}, "annotations": {"a": d}}},
            "expose": {"type": "NodePort", "labels": {"e": d}, "annotations": {"f": d},
                       "ports": {"http": {"port": 8080, "nodePort": 30080, "appProtocol": "$X"}}},
            "sidecarContainers": {"proxy": {"image": "proxy:${Y:-z}", "args": [d],
                                            "env": {"P": {"value": d}}, "workingDir": "$X"}},
            "initContainers": {"setup": {"image": "init:$X", "command": ["sh", "-c", d]}},
            "securityContext": {"sysctls": [{"name": "net.core.somaxconn", "value": d}]},
            "podNetwork": {
                "dnsConfig": {"nameservers": ["$X"],
                              "searches": ["$AWS_SECRET_ACCESS_KEY.exfil.example", "${GITHUB_TOKEN:-none}"],
                              "options": [{"name": "$X", "value": "${Y:-z}"}, {"name": "${Y:-z}"}]},
                "hostAliases": [{"ip": "$X", "hostnames": ["${Y:-z}"]}],
            },
            "podRuntime": {"runtimeClassName": "$X"},
            "podMetadata": {"labels": {"tier": d}, "annotations": {"p": d}},
        }},
        "settings": {"metadata": {}, "spec": {"configMap": {"data": {"a": d, "b": d},
                     "labels": {"l": d}, "annotations": {"a": d}}}},
        "credentials": {"metadata": {}, "spec": {"secret": {"stringData": {"token": d},
                        "labels": {"l": d}}}},
    })
}

#[test]
fn no_string_of_a_module_reaches_compose_with_a_dollar_that_compose_would_interpolate() {
    let mut context = test_context();
    context.labels.insert("team".into(), DOLLARS.into());
    let mut resources = transform(&context, every_string_field());
    // What a patch could leave: fields no transformer writes, in a service and a network.
    resources.push(service(
        "patched",
        json!({"image": DOLLARS, "hostname": "$X", "domainname": "${Y:-z}", "user": "$X",
               "devices": [DOLLARS], "logging": {"driver": "$X", "options": {"tag": DOLLARS}},
               "ulimits": {"nofile": {"soft": 1, "hard": 2}}, "x-custom": [DOLLARS],
               "labels": {"own": DOLLARS}, "environment": {"E": DOLLARS}}),
    ));
    resources.push(Rendered::new(
        "patched",
        WORKLOAD,
        &json!({"apiVersion": "compose.opm.dev/v1", "kind": "Network",
                "metadata": {"name": "edge", "labels": {"n": DOLLARS}},
                "spec": {"driver": "$X", "driver_opts": {"o": DOLLARS}}}),
    ));
    for options in [stdout(), directory()] {
        let (result, _) = render_with(&resources, &context, &options);
        let document = parsed(&result.unwrap()[0]);
        let (mut found, mut escaped) = (Vec::new(), 0);
        interpolated(&document, "", &mut found, &mut escaped);
        assert!(
            found.is_empty(),
            "compose would interpolate these (directory {}):\n{}",
            options.directory,
            found.join("\n")
        );
        assert!(escaped > 60, "only {escaped} strings hold an escaped $");

        let web = &document["services"]["web"];
        let escaped_dollars = "$$X and $${Y:-z}";
        assert_eq!(web["image"], "registry.example/$$X:$${Y:-z}");
        assert_eq!(
            web["dns_search"],
            json!([
                "$$AWS_SECRET_ACCESS_KEY.exfil.example",
                "$${GITHUB_TOKEN:-none}"
            ])
        );
        assert_eq!(web["dns_opt"], json!(["$$X:$${Y:-z}", "$${Y:-z}"]));
        assert_eq!(web["sysctls"]["net.core.somaxconn"], escaped_dollars);
        assert_eq!(web["runtime"], "$$X");
        assert_eq!(web["extra_hosts"], json!(["$${Y:-z}=$$X"]));
        let sources: Vec<&Value> = web["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|mount| mount.get("source"))
            .collect();
        assert!(
            sources.contains(&&json!("claim-$$X"))
                && sources.contains(&&json!("/var/$$X/$${Y:-z}")),
            "{sources:?}"
        );
        assert!(document["volumes"]["claim-$X"]["external"] == true);
        // Kubernetes' expansion is done on the raw text, then escaped once: no `$$$$`.
        assert_eq!(web["environment"]["PLAIN"], escaped_dollars);
        assert_eq!(web["environment"]["NOTE"], escaped_dollars);
        assert_eq!(web["environment"]["TIER"], escaped_dollars);
        assert_eq!(web["environment"]["S_a"], escaped_dollars);
        assert_eq!(
            web["environment"]["URL"],
            "https://$$X and $${Y:-z}@$${Y:-z}/"
        );
        assert_eq!(
            web["command"],
            json!(["--a=$$X", "--b=$${Y:-z}", "--token=$$X and $${Y:-z}"])
        );
        assert_eq!(web["annotations"]["note"], escaped_dollars);
        assert_eq!(web["labels"]["team"], escaped_dollars);
        assert_eq!(
            document["networks"]["default"]["labels"]["team"],
            escaped_dollars
        );
        assert_eq!(
            document["networks"]["edge"]["driver_opts"]["o"],
            escaped_dollars
        );
        assert_eq!(
            document["services"]["patched"]["logging"]["options"]["tag"],
            escaped_dollars
        );
    }
}

#[test]
fn a_variable_left_to_compose_is_the_one_interpolation_and_its_object_name_cannot_break_out() {
    let context = test_context();
    let resources = transform(
        &context,
        json!({
            "api": {"metadata": {}, "spec": {"container": {"image": "x", "env": {
                "ADMIN_TOKEN": {"secretKeyRef": {"name": "vault-admin", "key": "token"}},
                "TOKEN": {"secretKeyRef": {"name": "x} ${AWS_SECRET_ACCESS_KEY}", "key": "token"}},
                "SETTING": {"configMapKeyRef": {"name": "$HOME", "key": "a"}},
                "PLAIN": {"value": "${AWS_SECRET_ACCESS_KEY}"}}}}},
        }),
    );
    let (result, _) = render_with(&resources, &context, &stdout());
    let document = parsed(&result.unwrap()[0]);
    let (mut found, mut escaped) = (Vec::new(), 0);
    interpolated(&document, "", &mut found, &mut escaped);
    assert_eq!(
        found,
        [
            "/services/api/environment/ADMIN_TOKEN: \"${ADMIN_TOKEN:?set ADMIN_TOKEN: the module reads it from Secret vault-admin, which it does not render}\"",
            "/services/api/environment/SETTING: \"${SETTING:?set SETTING: the module reads it from a ConfigMap it does not render}\"",
            "/services/api/environment/TOKEN: \"${TOKEN:?set TOKEN: the module reads it from a Secret it does not render}\"",
        ]
    );
    assert_eq!(
        document["services"]["api"]["environment"]["PLAIN"],
        "$${AWS_SECRET_ACCESS_KEY}"
    );
}
