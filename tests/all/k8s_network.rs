//! The Kubernetes provider's Service, Ingress, HTTPRoute, ConfigMap, Secret and storage fields
//! that real charts use: `opm mod vet` refuses what the API server would refuse,
//! `opm mod build` renders what it accepts as strict-valid Kubernetes, a Secret's base64 `data`
//! stays out of every message, and a module switches between creating a Secret and using an
//! existing one with a parameter.

use opm_tests::{opm, write_file};
use serde_json::{Value, json};

use crate::examples::assert_strict_valid;
use crate::kubernetes::{build_json_with as build, module, refuses};

/// Runs `opm mod vet` on `components` and checks that it refuses them saying each of
/// `expected`, and never any of `hidden`.
fn vet_refuses(components: &str, expected: &[&str], hidden: &[&str]) {
    refuses("vet", components, expected, hidden);
}

/// Runs `opm mod build` on `components` and checks that it fails saying `expected`, and never
/// any of `hidden`.
fn build_refuses(components: &str, expected: &str, hidden: &[&str]) {
    refuses("build", components, &[expected], hidden);
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in {objects:#?}"))
}

/// A web component with two container ports, exposed with `expose` and given `traits` more.
fn web(expose: &str, traits: &str) -> String {
    format!(
        "  web:\n    resources: {{Container: {{image: web, ports: {{http: {{containerPort: 8080}}, ws: {{containerPort: 8081}}}}}}}}\n    traits:\n      Expose: {expose}\n{traits}"
    )
}

/// Every Service setting renders as the API spells it, with labels and annotations, and the
/// whole is strict-valid Kubernetes.
#[test]
fn service_settings_render_and_are_valid_kubernetes() {
    let objects = build(
        &web(
            "{type: LoadBalancer, labels: {tier: edge}, annotations: {service.beta.kubernetes.io/aws-load-balancer-scheme: internet-facing}, ports: {http: {port: 443, appProtocol: https}, ws: {port: 8081, appProtocol: kubernetes.io/ws}}, sessionAffinity: ClientIP, sessionAffinityConfig: {clientIP: {timeoutSeconds: 3600}}, externalTrafficPolicy: Local, internalTrafficPolicy: Cluster, loadBalancerClass: service.k8s.aws/nlb, loadBalancerSourceRanges: [10.0.0.0/8, '2001:db8::/32'], ipFamilyPolicy: PreferDualStack, ipFamilies: [IPv4, IPv6]}",
            "",
        ),
        &[],
    );
    let service = find(&objects, "Service", "web");
    assert_eq!(service["metadata"]["labels"]["tier"], "edge");
    assert_eq!(
        service["metadata"]["annotations"],
        json!({"service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing"})
    );
    assert_eq!(
        service["spec"]["ports"][1]["appProtocol"],
        "kubernetes.io/ws"
    );
    assert_eq!(
        service["spec"]["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"],
        3600
    );
    assert_eq!(service["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
    assert_valid(&objects);
}

/// The Service's shapes and combinations that the API server refuses are refused at vet.
#[test]
fn expose_refuses_at_vet_what_the_api_server_would() {
    vet_refuses(
        &web(
            "{ports: {http: {port: 80, appProtocol: 'not a protocol'}}, sessionAffinity: Sticky, sessionAffinityConfig: {clientIP: {timeoutSeconds: 86401}}, internalTrafficPolicy: Nearest, loadBalancerSourceRanges: [10.0.0.300/8], ipFamilyPolicy: DualStack, ipFamilies: [IPv4, IPv4], labels: {app.kubernetes.io/name: other}, annotations: {'bad key': x}}",
            "",
        ),
        &[
            "opm.dev/traits/network@v1#Expose: at /ports/http/appProtocol: ",
            "opm.dev/traits/network@v1#Expose: at /sessionAffinity: ",
            "opm.dev/traits/network@v1#Expose: at /sessionAffinityConfig/clientIP/timeoutSeconds: ",
            "opm.dev/traits/network@v1#Expose: at /internalTrafficPolicy: ",
            "opm.dev/traits/network@v1#Expose: at /loadBalancerSourceRanges/0: ",
            "opm.dev/traits/network@v1#Expose: at /ipFamilyPolicy: ",
            "opm.dev/traits/network@v1#Expose: at /ipFamilies: ",
            "opm.dev/traits/network@v1#Expose: at /labels: ",
            "opm.dev/traits/network@v1#Expose: at /annotations: ",
        ],
        &[],
    );
    for (expose, message) in [
        (
            "{sessionAffinityConfig: {clientIP: {timeoutSeconds: 60}}}",
            "expose.sessionAffinityConfig needs expose.sessionAffinity ClientIP",
        ),
        (
            "{type: Headless, externalTrafficPolicy: Local}",
            "expose.externalTrafficPolicy needs expose.type NodePort or LoadBalancer",
        ),
        (
            "{type: ClusterIP, externalTrafficPolicy: Cluster}",
            "expose.externalTrafficPolicy needs expose.type NodePort or LoadBalancer",
        ),
        (
            "{type: NodePort, loadBalancerSourceRanges: [10.0.0.0/8]}",
            "expose.loadBalancerClass and expose.loadBalancerSourceRanges need expose.type LoadBalancer",
        ),
        (
            "{loadBalancerClass: example.com/lb}",
            "expose.loadBalancerClass and expose.loadBalancerSourceRanges need expose.type LoadBalancer",
        ),
        (
            "{ipFamilyPolicy: SingleStack, ipFamilies: [IPv4, IPv6]}",
            "expose.ipFamilies names two families, which needs expose.ipFamilyPolicy",
        ),
    ] {
        vet_refuses(
            &web(expose, ""),
            &[&format!(
                "component \"web\": transformer transformer.opm.dev/network@v1#ServiceTransformer refuses it: {message}"
            )],
            &[],
        );
    }
}

/// An Ingress with several hosts and paths, a TLS list and a controller's annotations renders
/// strict-valid; the one-host form with a pathType too.
#[test]
fn ingress_rules_tls_and_annotations_render_and_are_valid_kubernetes() {
    let objects = build(
        &web(
            "{}",
            "      Ingress:\n        className: nginx\n        annotations: {cert-manager.io/cluster-issuer: letsencrypt, nginx.ingress.kubernetes.io/proxy-body-size: '0'}\n        labels: {exposure: public}\n        rules:\n          - host: shop.example.com\n            paths:\n              - {path: /, port: http}\n              - {path: /notifications/hub, pathType: Exact, port: ws}\n          - host: www.shop.example.com\n            paths: [{path: /, pathType: ImplementationSpecific, port: http}]\n        tls: [{secretName: shop-tls}, {secretName: www-tls, hosts: [www.shop.example.com]}]\n",
        ),
        &[],
    );
    let ingress = find(&objects, "Ingress", "web");
    assert_eq!(
        ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/proxy-body-size"],
        "0"
    );
    assert_eq!(
        ingress["spec"]["tls"][0]["hosts"],
        json!(["shop.example.com", "www.shop.example.com"])
    );
    assert_eq!(
        ingress["spec"]["rules"][0]["http"]["paths"][1],
        json!({"path": "/notifications/hub", "pathType": "Exact",
               "backend": {"service": {"name": "web", "port": {"name": "ws"}}}})
    );
    assert_valid(&objects);

    let short = build(
        &web(
            "{}",
            "      Ingress: {host: shop.example.com, path: /api, pathType: Exact, port: http, tls: {secretName: shop-tls}}\n",
        ),
        &[],
    );
    let ingress = find(&short, "Ingress", "web");
    assert_eq!(
        ingress["spec"]["rules"][0]["http"]["paths"][0]["pathType"],
        "Exact"
    );
    assert_eq!(
        ingress["spec"]["tls"],
        json!([{"hosts": ["shop.example.com"], "secretName": "shop-tls"}])
    );
}

/// The Ingress's bad shapes are refused at vet, and so are the one-host fields beside `rules`.
#[test]
fn ingress_refuses_at_vet_what_the_api_server_would() {
    vet_refuses(
        &web(
            "{}",
            "      Ingress:\n        rules:\n          - host: Shop.Example.com\n            paths: [{path: /a//b, port: http}, {path: api, pathType: Regex}]\n          - {paths: []}\n        tls: [{secretName: a, extra: b}]\n        labels: {module.opmodel.dev/name: x}\n",
        ),
        &[
            "opm.dev/traits/network@v1#Ingress: at /rules/0/host: ",
            "opm.dev/traits/network@v1#Ingress: at /rules/0/paths/0",
            "opm.dev/traits/network@v1#Ingress: at /rules/0/paths/1/path: ",
            "opm.dev/traits/network@v1#Ingress: at /rules/0/paths/1/pathType: ",
            "opm.dev/traits/network@v1#Ingress: at /rules/1/paths: ",
            "opm.dev/traits/network@v1#Ingress: at /tls",
            "opm.dev/traits/network@v1#Ingress: at /labels: ",
        ],
        &[],
    );
    vet_refuses(
        &web(
            "{}",
            "      Ingress: {path: /a/../b, pathType: Prefix, port: http}\n",
        ),
        &["opm.dev/traits/network@v1#Ingress: at "],
        &[],
    );
    vet_refuses(
        &web(
            "{}",
            "      Ingress: {host: a.example.com, rules: [{host: b.example.com, paths: [{port: http}]}]}\n",
        ),
        &[
            "component \"web\": transformer transformer.opm.dev/network@v1#IngressTransformer refuses it: ingress.rules replaces the one-host form",
        ],
        &[],
    );
}

/// HTTPRoute labels and annotations render; bad ones are refused at vet.
#[test]
fn http_route_labels_and_annotations() {
    let objects = build(
        &web(
            "{}",
            "      HttpRoute: {gateways: {public: {}}, rules: {web: {port: http}}, labels: {gateway: public}, annotations: {example.com/owner: shop}}\n",
        ),
        &[],
    );
    let route = find(&objects, "HTTPRoute", "web");
    assert_eq!(route["metadata"]["labels"]["gateway"], "public");
    assert_eq!(
        route["metadata"]["annotations"],
        json!({"example.com/owner": "shop"})
    );
    vet_refuses(
        &web(
            "{}",
            "      HttpRoute: {gateways: {public: {}}, labels: {app.kubernetes.io/instance: x, ok: 'not a value'}}\n",
        ),
        &[
            "opm.dev/traits/network@v1#HttpRoute: at /labels: ",
            "opm.dev/traits/network@v1#HttpRoute: at /labels/ok: ",
        ],
        &[],
    );
}

/// A ConfigMap's binaryData and immutable, and a Secret's base64 data, immutable, labels and
/// annotations, render strict-valid; claims and claim templates carry their entries' labels and
/// annotations.
#[test]
fn config_secret_and_storage_fields_render_and_are_valid_kubernetes() {
    let objects = build(
        "  settings:\n    resources:\n      ConfigMap: {data: {app.conf: x}, binaryData: {logo.png: iVBORw0KGgo=}, immutable: true, labels: {tier: web}, annotations: {example.com/owner: shop}}\n  credentials:\n    resources:\n      Secret: {type: kubernetes.io/tls, data: {tls.crt: Y2VydGlmaWNhdGU=, tls.key: cHJpdmF0ZS1rZXk=}, immutable: true, labels: {tier: web}, annotations: {reflector.v1.k8s.emberstack.com/reflection-allowed: 'true'}}\n  files:\n    resources: {Container: {image: files}}\n    traits:\n      PersistentStorage: {data: {size: 1Gi, mountPath: /data, labels: {backup: daily}, annotations: {helm.sh/resource-policy: keep}}}\n  db:\n    metadata: {labels: {core.opm.dev/workload-type: stateful}}\n    resources: {Container: {image: postgres, ports: {pg: {containerPort: 5432}}}}\n    traits:\n      PersistentStorage: {data: {size: 1Gi, mountPath: /var/lib/postgresql, annotations: {helm.sh/resource-policy: keep}}}\n",
        &[],
    );
    let config = find(&objects, "ConfigMap", "settings");
    assert_eq!(config["binaryData"], json!({"logo.png": "iVBORw0KGgo="}));
    assert_eq!(config["immutable"], true);
    let secret = find(&objects, "Secret", "credentials");
    assert_eq!(secret["data"]["tls.key"], "cHJpdmF0ZS1rZXk=");
    assert_eq!(secret["immutable"], true);
    assert_eq!(secret["metadata"]["labels"]["tier"], "web");
    let claim = find(&objects, "PersistentVolumeClaim", "files-data");
    assert_eq!(claim["metadata"]["labels"]["backup"], "daily");
    assert_eq!(
        claim["metadata"]["annotations"],
        json!({"helm.sh/resource-policy": "keep"})
    );
    let db = find(&objects, "StatefulSet", "db");
    assert_eq!(
        db["spec"]["volumeClaimTemplates"][0]["metadata"],
        json!({"name": "data", "annotations": {"helm.sh/resource-policy": "keep"}})
    );
    assert_valid(&objects);
}

/// What the API server refuses in a ConfigMap, a Secret or a storage entry is refused at vet,
/// and a key in both maps of one object at build; a Secret's values are never printed.
#[test]
fn config_secret_and_storage_refuse_what_the_api_server_would() {
    vet_refuses(
        "  settings:\n    resources:\n      ConfigMap: {data: {..hidden: x, .: y}, binaryData: {logo.png: not-base64!}, immutable: 'yes', labels: {component.opmodel.dev/name: x}}\n  files:\n    resources: {Container: {image: files}}\n    traits:\n      PersistentStorage: {data: {size: 1Gi, labels: {app.kubernetes.io/managed-by: me}, annotations: {'a b': c}}}\n",
        &[
            "opm.dev/resources/config@v1#ConfigMap: at /data: ",
            "opm.dev/resources/config@v1#ConfigMap: at /binaryData/logo.png: ",
            "opm.dev/resources/config@v1#ConfigMap: at /immutable: ",
            "opm.dev/resources/config@v1#ConfigMap: at /labels: ",
            "opm.dev/traits/storage@v1#PersistentStorage: at /data/labels: ",
            "opm.dev/traits/storage@v1#PersistentStorage: at /data/annotations: ",
        ],
        &[],
    );
    vet_refuses(
        "  credentials:\n    resources:\n      Secret: {data: {token: 'hunter2-hunter2!', other: 'pasted secret value'}, immutable: 1}\n",
        &[
            "opm.dev/resources/config@v1#Secret: at /data/token: ",
            "opm.dev/resources/config@v1#Secret: at /data/other: ",
            "opm.dev/resources/config@v1#Secret: at /immutable: ",
        ],
        &["hunter2", "pasted secret"],
    );
    for (secret, message) in [
        (
            "{type: kubernetes.io/tls, data: {tls.crt: Y2VydGlmaWNhdGUtYnl0ZXM=}}",
            "a Secret of type kubernetes.io/tls needs the keys tls.crt and tls.key",
        ),
        (
            "{type: kubernetes.io/basic-auth, stringData: {token: hunter2-hunter2}}",
            "a Secret of type kubernetes.io/basic-auth needs one of the keys username or password",
        ),
        (
            "{type: kubernetes.io/dockerconfigjson, data: {config.json: e30=}}",
            "a Secret of type kubernetes.io/dockerconfigjson needs the key .dockerconfigjson",
        ),
    ] {
        vet_refuses(
            &format!("  credentials:\n    resources:\n      Secret: {secret}\n"),
            &[&format!(
                "component \"credentials\": transformer transformer.opm.dev/config@v1#SecretTransformer refuses it: {message}"
            )],
            &["hunter2", "Y2VydGlm"],
        );
    }
    build_refuses(
        "  settings:\n    resources:\n      ConfigMap: {data: {a: x}, binaryData: {a: eA==}}\n",
        "key \"a\" is in both configMap.data and configMap.binaryData",
        &[],
    );
    build_refuses(
        "  credentials:\n    resources:\n      Secret: {data: {token: aHVudGVyMi1odW50ZXIy}, stringData: {token: hunter2-hunter2}}\n",
        "key \"token\" is in both secret.data and secret.stringData",
        &["hunter2", "aHVudGVy"],
    );
}

/// What a Secret's base64 `data` decodes to is as sensitive as the value itself: an error that
/// quotes it shows `[redacted]`.
#[test]
fn a_secrets_decoded_data_is_redacted_from_errors() {
    // "Not_A_Workload_7" in base64; a values file gives a component that workload type, which
    // the error quotes. (Had the module file itself written that text, it would be public.)
    let components = "  credentials:\n    resources:\n      Secret: {data: {token: Tm90X0FfV29ya2xvYWRfNw==}}\n  web:\n    resources:\n      Container: {image: nginx}\n";
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "module.yaml", &module(components));
    let values = write_file(
        dir.path(),
        "values.yaml",
        "components: {web: {metadata: {labels: {core.opm.dev/workload-type: Not_A_Workload_7}}}}\n",
    );
    let run = opm(["mod", "vet", &path, "-f", &values]);
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(!run.exited(0), "{said}");
    assert!(said.contains("\"[redacted]\""), "{said}");
    assert!(!said.contains("Not_A_Workload_7"), "{said}");
}

/// A chart's `existingSecret`: a parameter that, when set, leaves the module's own Secret out
/// (`when:`) and points the workload at the existing one, by a CEL expression.
#[test]
fn a_parameter_switches_between_creating_a_secret_and_using_an_existing_one() {
    let module_text = "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: shop, version: 1.0.0, namespace: shop}\nconfig:\n  properties:\n    existingSecret: {type: string, description: A Secret to use instead of creating one, default: ''}\n    adminToken: {type: string, default: change-me-please}\ncomponents:\n  credentials:\n    when: ${ config.existingSecret == '' }\n    resources:\n      Secret: {stringData: {admin-token: '${config.adminToken}'}}\n  api:\n    resources:\n      Container:\n        image: api\n        env:\n          ADMIN_TOKEN: {secretKeyRef: {name: \"${ config.existingSecret != '' ? config.existingSecret : instance.prefix + 'credentials' }\", key: admin-token}}\n";
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "module.yaml", module_text);
    let render = |args: &[&str]| -> Vec<Value> {
        let mut command = vec!["mod", "build", &path, "-o", "json"];
        command.extend(args);
        let run = opm(command);
        assert!(run.exited(0), "{}", run.stderr);
        let list: Value = serde_json::from_str(&run.stdout).unwrap();
        list["items"].as_array().unwrap().clone()
    };
    let env_ref = |objects: &[Value]| {
        let deployment = objects.iter().find(|o| o["kind"] == "Deployment").unwrap();
        deployment["spec"]["template"]["spec"]["containers"][0]["env"][0]
            ["valueFrom"]["secretKeyRef"]["name"]
            .clone()
    };

    let created = render(&[]);
    find(&created, "Secret", "credentials");
    assert_eq!(env_ref(&created), "credentials");

    let existing = render(&["--set", "existingSecret=vault-admin"]);
    assert!(
        !existing.iter().any(|o| o["kind"] == "Secret"),
        "{existing:#?}"
    );
    assert_eq!(env_ref(&existing), "vault-admin");

    let other = render(&["--instance", "eu"]);
    find(&other, "Secret", "eu-credentials");
    assert_eq!(env_ref(&other), "eu-credentials");
}

/// Panics unless every object of `objects` is strict-valid Kubernetes.
fn assert_valid(objects: &[Value]) {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<String> = objects
        .iter()
        .enumerate()
        .map(|(index, object)| {
            let file = format!("{index:02}.yaml");
            write_file(dir.path(), &file, &serde_json::to_string(object).unwrap());
            file
        })
        .collect();
    assert!(!files.is_empty());
    assert_strict_valid(dir.path(), &files);
}
