//! The renderer on what the transformers return, natively.

use opm_guest::{
    Chunk, Component, Context, File, Mode, Options, Rendered, Renderer, Transformer, Value, json,
};
use opm_quadlet_common::test_context;
use quadlet_transformers::QuadletTransformers;

use crate::QuadletRenderer;

fn transform(transformer: &str, component: Value) -> Vec<Rendered> {
    let name = component["metadata"]["name"].as_str().unwrap().to_owned();
    let fqn = format!("transformer.opm.dev/quadlet@v1#{transformer}");
    let context = Context {
        transformer: fqn.clone(),
        ..test_context()
    };
    QuadletTransformers::transform(&Component::from_value(component).unwrap(), &context)
        .unwrap()
        .iter()
        .map(|value| Rendered::new(&name, &fqn, value))
        .collect()
}

fn shop() -> Vec<Rendered> {
    let mut resources = transform(
        "StatelessTransformer",
        json!({"metadata": {"name": "api"}, "spec": {
        "container": {"image": "ghcr.io/acme/api:1",
            "env": {"DB_PASSWORD": {"secretKeyRef": {"name": "db", "key": "password"}}},
            "envFrom": [{"configMapRef": {"name": "settings"}, "prefix": "APP_"}],
            "volumeMounts": {"conf": {"mountPath": "/etc/api"}}},
        "volumes": {"conf": {"configMap": "settings"}}}}),
    );
    resources.extend(transform(
        "SecretTransformer",
        json!({"metadata": {"name": "db"}, "spec": {
        "secret": {"stringData": {"password": "hunter2"}}}}),
    ));
    resources.extend(transform(
        "ConfigTransformer",
        json!({"metadata": {"name": "settings"}, "spec": {
        "configMap": {"data": {"mode": "fast", "web.yaml": "a: 1\n"}}}}),
    ));
    resources
}

fn text(file: &File) -> String {
    match &file.content[..] {
        [Chunk::Bytes(bytes)] => String::from_utf8(bytes.clone()).unwrap(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn units_then_files_in_name_order_secrets_private() {
    let files = QuadletRenderer::render(&shop(), &test_context(), &Options::default()).unwrap();
    let listing: Vec<(&str, Mode)> = files.iter().map(|f| (f.path.as_str(), f.mode)).collect();
    assert_eq!(
        listing,
        [
            ("api.container", Mode::Regular),
            ("shop.network", Mode::Regular),
            ("config/settings/mode", Mode::Regular),
            ("config/settings/web.yaml", Mode::Regular),
            ("secrets/db/password", Mode::Private),
            ("secrets/api.env", Mode::Private),
        ]
    );
    let unit = text(&files[0]);
    assert!(unit.starts_with("# api.container: component \"api\" of module \"shop\", instance \"shop\", rendered by opm\n[Unit]\n"), "{unit}");
    assert!(
        unit.contains("\nEnvironmentFile=./secrets/api.env\n"),
        "{unit}"
    );
    assert!(
        unit.contains("\nVolume=./config/settings:/etc/api:ro,z\n"),
        "{unit}"
    );
    assert!(!unit.contains("x-opm"), "{unit}");
    // envFrom first, env after it, so env wins.
    assert_eq!(text(&files[5]), "APP_mode=fast\nDB_PASSWORD=hunter2\n");
    assert!(text(&files[1]).starts_with("# shop.network: the network of module \"shop\""));
}

#[test]
fn a_missing_object_a_multi_line_variable_and_a_foreign_resource_fail_by_name() {
    let lonely = transform(
        "StatelessTransformer",
        json!({"metadata": {"name": "api"}, "spec": {
        "container": {"image": "x", "env": {"T": {"secretKeyRef": {"name": "gone", "key": "k"}}}}}}),
    );
    let error = QuadletRenderer::render(&lonely, &test_context(), &Options::default())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(
            "api.container: T reads key \"k\" of the Secret \"gone\", which no component"
        ),
        "{error}"
    );

    let mut multi = transform(
        "StatelessTransformer",
        json!({"metadata": {"name": "api"}, "spec": {
        "container": {"image": "x", "env": {"T": {"configMapKeyRef": {"name": "c", "key": "k"}}}}}}),
    );
    multi.extend(transform(
        "ConfigTransformer",
        json!({"metadata": {"name": "c"}, "spec": {"configMap": {"data": {"k": "a\nb"}}}}),
    ));
    let (result, warnings) = opm_guest::log::capture(|| {
        QuadletRenderer::render(&multi, &test_context(), &Options::default())
    });
    assert!(result.is_ok());
    assert!(
        warnings[0]
            .1
            .contains("api.container: T: the value holds a line break"),
        "{warnings:?}"
    );
    let strict = Context {
        strict: true,
        ..test_context()
    };
    let error = QuadletRenderer::render(&multi, &strict, &Options::default())
        .unwrap_err()
        .to_string();
    assert!(error.contains("(an error under --strict)"), "{error}");

    let foreign = Rendered::new(
        "web",
        "t",
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}}),
    );
    let error = QuadletRenderer::render(&[foreign], &test_context(), &Options::default())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(
            "resource #0: the quadlet renderer writes quadlet.opm.dev/v1 resources, not v1 Service"
        ),
        "{error}"
    );
}

#[test]
fn json_and_split_are_refused() {
    let json_out = Options {
        format: "json".into(),
        ..Options::default()
    };
    let error = QuadletRenderer::render(&shop(), &test_context(), &json_out)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("-o json: Quadlet units are systemd unit files"),
        "{error}"
    );
    let split = Options {
        split: true,
        ..Options::default()
    };
    assert!(QuadletRenderer::render(&shop(), &test_context(), &split).is_err());
}

#[test]
fn a_patched_value_with_a_line_break_fails_naming_the_unit_and_key() {
    let mut resources = shop();
    let mut value = resources[0].value().unwrap();
    value["spec"]["Container"]["Exec"] = json!("a\nb");
    resources[0] = Rendered::new("api", "t", &value);
    let error = QuadletRenderer::render(&resources, &test_context(), &Options::default())
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "api.container (component \"api\"): spec.Container.Exec holds a line break, which ends a unit's line"
    );
}
