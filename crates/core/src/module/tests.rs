//! Loading modules: values, `--set`, environment, and every kind of bad input.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::*;

const MODULE: &str = "\
apiVersion: core.opm.dev/v1
kind: Module
metadata:
  name: shop
  version: 1.4.0
  namespace: shop
  labels: {team: payments}
components:
  api:
    metadata:
      labels: {core.opm.dev/workload-type: stateless}
    resources:
      opm.dev/resources/workload@v1#Container:
        image: ghcr.io/acme/api:1.4.0
        ports: {http: {containerPort: 8080}}
    traits:
      opm.dev/traits/network@v1#Expose: {type: ClusterIP}
      Replicas: 3
    policies: {}
";

struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

fn no_env(_: &str) -> Option<String> {
    None
}

fn load_with(module: &str, values: &[&str], sets: &[&str]) -> Result<Module, ModuleError> {
    let files = Files::new();
    let path = files.write("module.yaml", module);
    let values: Vec<PathBuf> = values
        .iter()
        .enumerate()
        .map(|(i, text)| files.write(&format!("values{i}.yaml"), text))
        .collect();
    let sets: Vec<String> = sets.iter().map(|s| (*s).to_owned()).collect();
    load(
        &path,
        &values,
        &sets,
        &Instance::default(),
        &no_env,
        &mut BTreeSet::new(),
    )
    .map_err(|error| relative(error, files.dir.path()))
}

/// Error text with the temporary directory removed, so tests can compare messages.
fn relative(error: ModuleError, dir: &Path) -> ModuleError {
    let text = error
        .to_string()
        .replace(&format!("{}/", dir.display()), "");
    ModuleError::Syntax {
        origin: Origin::whole("test"),
        message: text,
    }
}

fn error_text(module: &str) -> String {
    match load_with(module, &[], &[]).unwrap_err() {
        ModuleError::Syntax { message, .. } => message,
        other => other.to_string(),
    }
}

#[test]
fn loads_the_design_example() {
    let module = load_with(MODULE, &[], &[]).unwrap();
    assert_eq!(
        (module.name(), module.version(), module.namespace()),
        ("shop", "1.4.0", Some("shop"))
    );
    assert_eq!(module.labels()["team"], "payments");
    let api = module.component("api").unwrap();
    assert_eq!(api.labels["core.opm.dev/workload-type"], "stateless");
    assert_eq!(
        api.resources[0].name,
        "opm.dev/resources/workload@v1#Container"
    );
    assert_eq!(
        api.resources[0].value["ports"]["http"]["containerPort"],
        8080
    );
    let traits: Vec<&str> = api.traits.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(traits, ["opm.dev/traits/network@v1#Expose", "Replicas"]);
    assert_eq!(api.traits[1].value, json!(3));
    assert_eq!(api.traits[1].origin.line(), 18);
    assert!(api.policies.is_empty());
}

#[test]
fn json_modules_and_directories_load() {
    let files = Files::new();
    let json = r#"{"apiVersion": "core.opm.dev/v1", "kind": "Module",
        "metadata": {"name": "m", "version": "1"},
        "components": {"web": {"resources": {"Container": {"image": "nginx"}}}}}"#;
    files.write("module.json", json);
    let module = load(
        files.dir.path(),
        &[],
        &[],
        &Instance::default(),
        &no_env,
        &mut BTreeSet::new(),
    )
    .unwrap();
    assert_eq!(
        module.component("web").unwrap().resources[0].value,
        json!({"image": "nginx"})
    );
}

#[test]
fn values_files_merge_in_order_and_set_applies_last() {
    let module = load_with(
        MODULE,
        &[
            "components: {api: {traits: {Replicas: 5, Expose: {type: NodePort}}}}",
            "components: {api: {traits: {opm.dev/traits/scaling@v1#Replicas: 7}}}\nmetadata: {namespace: prod}",
        ],
        &["components.api.traits.Replicas=9", "components.api.resources.Container.ports.http.containerPort=9090"],
    )
    .unwrap();
    let api = module.component("api").unwrap();
    assert_eq!(module.namespace(), Some("prod"));
    assert_eq!(
        api.traits.len(),
        2,
        "short names and FQNs merged into one key: {:?}",
        api.traits
    );
    assert_eq!(api.traits[0].value, json!({"type": "NodePort"}));
    assert_eq!(api.traits[1].value, json!(9));
    assert_eq!(
        api.resources[0].value["ports"]["http"]["containerPort"],
        9090
    );
    assert_eq!(api.resources[0].value["image"], "ghcr.io/acme/api:1.4.0");
}

#[test]
fn a_null_in_a_values_file_removes_a_key() {
    let module = load_with(
        MODULE,
        &["components: {api: {traits: {Expose: null}}}"],
        &[],
    )
    .unwrap();
    let traits: Vec<&str> = module
        .component("api")
        .unwrap()
        .traits
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(traits, ["Replicas"]);
}

#[test]
fn errors_name_the_values_file_that_supplied_the_bad_part() {
    let error = load_with(MODULE, &["metadata:\n  labels:\n    team: 42\n"], &[]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "test: values0.yaml:3:11: the value of metadata.labels `team` must be a string, not a number; quote it"
    );
}

#[test]
fn env_values_are_substituted_and_sensitive() {
    let files = Files::new();
    let path = files.write("module.yaml", MODULE);
    let values = files.write(
        "secret.yaml",
        "components:\n  api:\n    resources:\n      Container: {image: postgres, env: {PASSWORD: {value: '${env:DB_PASSWORD}'}}}\n      opm.dev/resources/config@v1#Secret: {stringData: {token: literal-token}}\n",
    );
    let env = |name: &str| (name == "DB_PASSWORD").then(|| "hunter2".to_owned());
    let module = load(
        &path,
        &[values],
        &[],
        &Instance::default(),
        &env,
        &mut BTreeSet::new(),
    )
    .unwrap();
    let api = module.component("api").unwrap();
    assert_eq!(
        api.resources[0].value["env"]["PASSWORD"]["value"],
        "hunter2"
    );
    assert_eq!(module.sensitive_values(), ["hunter2", "literal-token"]);
    assert!(!format!("{module:?}").contains("hunter2"));
}

#[test]
fn unset_env_var_is_an_error_with_file_and_line() {
    let error = load_with(
        MODULE,
        &["metadata:\n  labels: {team: '${env:OPM_TEST_SURELY_UNSET}'}\n"],
        &[],
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "test: values0.yaml:2:18: environment variable OPM_TEST_SURELY_UNSET is not set"
    );
}

#[test]
fn a_values_file_that_is_not_a_map_is_an_error() {
    let error = load_with(MODULE, &["- a\n- b\n"], &[]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "test: values0.yaml:1:1: a values file must be a map, not a list"
    );
    // An empty values file (all commented out) changes nothing.
    assert!(load_with(MODULE, &["# nothing yet\n"], &[]).is_ok());
}

#[test]
fn set_on_a_list_where_a_map_is_expected_is_an_error() {
    let error = load_with(
        MODULE,
        &["metadata: {labels: [a]}"],
        &["metadata.labels.team=x"],
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "test: --set metadata.labels.team: `metadata.labels` (values0.yaml:1:20) is a list, not a map; index it with [N]"
    );
}

#[test]
fn unknown_top_level_field_is_an_error() {
    let text = error_text(&format!("{MODULE}extra: 1\n"));
    assert_eq!(
        text,
        "module.yaml:20:1: unknown field `extra` in the module; expected one of: apiVersion, kind, metadata, definitions, components, patches"
    );
}

#[test]
fn wrong_types_are_errors() {
    let text = error_text(&MODULE.replace("version: 1.4.0", "version: 1.4"));
    assert_eq!(
        text,
        "module.yaml:5:12: metadata.version must be a string, not a number; quote it"
    );
    let text = error_text(&MODULE.replace("    traits:\n", "    traits: [x]\n    unused:\n"));
    assert!(
        text.contains("component `api` traits must be a map, not a list"),
        "{text}"
    );
    assert!(
        text.contains("unknown field `unused` in component `api`"),
        "{text}"
    );
}

#[test]
fn wrong_api_version_and_kind_are_errors() {
    let text = error_text(
        &MODULE
            .replace("core.opm.dev/v1", "v2")
            .replace("kind: Module", "kind: Provider"),
    );
    assert!(
        text.contains("module.yaml:1:13: apiVersion is \"v2\"; expected \"core.opm.dev/v1\""),
        "{text}"
    );
    assert!(
        text.contains("module.yaml:2:7: kind is \"Provider\"; expected \"Module\""),
        "{text}"
    );
}

#[test]
fn duplicate_component_names_are_errors() {
    let text = error_text(&format!(
        "{MODULE}  api:\n    resources: {{Container: {{}}}}\n"
    ));
    assert_eq!(
        text,
        "module.yaml:20:3: duplicate key `api`: a key may appear only once in a map"
    );
}

#[test]
fn empty_module_is_an_error() {
    assert_eq!(error_text(""), "module.yaml: the module file is empty");
    assert_eq!(
        error_text("# only a comment\n"),
        "module.yaml: the module file is empty"
    );
    let text = error_text(
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: a, version: '1'}\ncomponents: {}\n",
    );
    assert_eq!(
        text,
        "module.yaml:4:13: the module has no components; add one under `components`"
    );
    let text = error_text("apiVersion: core.opm.dev/v1\nkind: Module\n");
    assert!(
        text.contains("missing required field `metadata`")
            && text.contains("missing required field `components`"),
        "{text}"
    );
}

#[test]
fn an_fqn_that_does_not_parse_is_an_error() {
    let text = error_text(&MODULE.replace(
        "opm.dev/traits/network@v1#Expose",
        "opm.dev/traits/network@1#Expose",
    ));
    assert!(text.starts_with("module.yaml:17:7: component `api` traits: \"opm.dev/traits/network@1#Expose\" is not an FQN"), "{text}");
    let text = error_text(&MODULE.replace("Replicas: 3", "replicas: 3"));
    assert!(
        text.contains("\"replicas\" is neither an FQN nor a definition name"),
        "{text}"
    );
}

#[test]
fn a_label_value_that_is_not_a_string_is_an_error() {
    let text = error_text(&MODULE.replace(
        "{core.opm.dev/workload-type: stateless}",
        "{replicas: 3, enabled: true}",
    ));
    assert!(text.contains("module.yaml:11:26: the value of component `api` metadata.labels `replicas` must be a string, not a number; quote it"), "{text}");
    assert!(
        text.contains("`enabled` must be a string, not a boolean"),
        "{text}"
    );
}

#[test]
fn names_must_be_dns_labels() {
    let text = error_text(
        &MODULE
            .replace("  api:", "  API_Server:")
            .replace("name: shop", "name: Shop"),
    );
    assert!(
        text.contains("module name \"Shop\" must be a DNS label"),
        "{text}"
    );
    assert!(
        text.contains("component name \"API_Server\" must be a DNS label"),
        "{text}"
    );
}

#[test]
fn module_definitions_are_read() {
    let module = format!(
        "{MODULE}definitions:\n  acme.io/traits@v1#Canary:\n    kind: Trait\n    schema: {{type: integer}}\n"
    );
    let module = load_with(&module, &[], &[]).unwrap();
    let canary = &module.definitions()["acme.io/traits@v1#Canary"];
    assert_eq!(
        canary.origin.to_string().rsplit('/').next(),
        Some("module.yaml:21:3")
    );
    let bad = format!("{MODULE}definitions:\n  acme.io/traits@v1#Canary:\n    kind: Gadget\n");
    let text = error_text(&bad);
    assert!(
        text.starts_with(
            "module.yaml:22:5: definition acme.io/traits@v1#Canary: unknown variant `Gadget`"
        ),
        "{text}"
    );
}

/// Values to redact are known even when the module fails to load: the error may quote them.
#[test]
fn sensitive_values_are_known_when_the_module_is_invalid() {
    let files = Files::new();
    let path = files.write(
        "module.yaml",
        &MODULE.replace(
            "    traits:\n",
            "      Secret: {stringData: {token: pasted-token, key: 'token-${env:KEY}'}}\n    traits:\n",
        ),
    );
    let values = files.write("values.yaml", "metadata: {namespace: '${env:NS}'}\n");
    let env = |name: &str| match name {
        "NS" => Some("Not_A_Label".to_owned()),
        "KEY" => Some("key-from-env".to_owned()),
        _ => None,
    };
    let mut sensitive = BTreeSet::new();
    let error = load(
        &path,
        &[values],
        &[],
        &Instance::default(),
        &env,
        &mut sensitive,
    )
    .unwrap_err();
    assert!(error.to_string().contains("\"Not_A_Label\""), "{error}");
    let sensitive: Vec<&str> = sensitive.iter().map(String::as_str).collect();
    // `pasted-token` is written in the module file itself: public (docs/module-format.md).
    assert_eq!(
        sensitive,
        ["Not_A_Label", "key-from-env", "token-key-from-env"]
    );
}

#[test]
fn unreadable_file_is_an_error() {
    let error = load(
        Path::new("/nonexistent/module.yaml"),
        &[],
        &[],
        &Instance::default(),
        &no_env,
        &mut BTreeSet::new(),
    )
    .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("there is no module at /nonexistent/module.yaml: create one with `opm mod init /nonexistent`"),
        "{error}"
    );
}

#[test]
fn a_typo_of_a_component_in_values_or_set_is_an_error_with_a_suggestion() {
    let error = load_with(MODULE, &[], &["components.aip.traits.Replicas=3"]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "test: --set components.aip.traits.Replicas: the module has no component \"aip\": values and --set change components, they do not add them; did you mean \"api\"?"
    );
    let error = load_with(
        MODULE,
        &["components:\n  apj:\n    traits: {Replicas: 2}\n"],
        &[],
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "test: values0.yaml:2:3: the module has no component \"apj\": values change components, they do not add them; did you mean \"api\"?"
    );
}

#[test]
fn null_removes_a_trait_in_set_as_in_a_values_file() {
    let from_set = load_with(MODULE, &[], &["components.api.traits.Replicas=null"]).unwrap();
    let from_file = load_with(
        MODULE,
        &["components:\n  api:\n    traits: {Replicas: null}\n"],
        &[],
    )
    .unwrap();
    for module in [from_set, from_file] {
        let traits = &module.component("api").unwrap().traits;
        assert_eq!(traits.len(), 1, "only Expose is left: {traits:?}");
    }
}

#[test]
fn a_value_from_set_is_located_at_the_set_not_at_the_module() {
    let module = load_with(MODULE, &[], &["components.api.traits.Replicas=abc"]).unwrap();
    let replicas = &module.component("api").unwrap().traits[1];
    assert_eq!(replicas.name, "Replicas");
    assert_eq!(
        replicas.origin_at("").to_string(),
        "--set components.api.traits.Replicas"
    );
    let module = load_with(
        MODULE,
        &["components:\n  api:\n    resources:\n      opm.dev/resources/workload@v1#Container:\n        ports: {http: {containerPort: web}}\n"],
        &[],
    )
    .unwrap();
    let container = &module.component("api").unwrap().resources[0];
    let origin = container.origin_at("/ports/http/containerPort").to_string();
    assert!(origin.ends_with("values0.yaml:5:39"), "{origin}");
}

#[test]
fn expressions_see_the_instance_and_the_namespace_the_render_names() {
    let files = Files::new();
    let path = files.write(
        "module.yaml",
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {name: shop, version: '1', namespace: web}\n\
         components:\n  api:\n    resources:\n      Container:\n        image: nginx\n        \
         env: {DB: {value: '${instance.prefix}db.${instance.namespace}'}, I: {value: '${instance.name}'}}\n",
    );
    let env_of = |target: Instance| {
        let module = load(&path, &[], &[], &target, &no_env, &mut BTreeSet::new()).unwrap();
        module.component("api").unwrap().resources[0].value["env"].clone()
    };
    assert_eq!(
        env_of(Instance::default()),
        json!({"DB": {"value": "db.web"}, "I": {"value": "shop"}})
    );
    let own_name = Instance {
        name: Some("shop".into()),
        ..Instance::default()
    };
    assert_eq!(env_of(own_name), env_of(Instance::default()));
    let second = Instance {
        name: Some("shop-eu".into()),
        namespace: Some("eu".into()),
        ..Instance::default()
    };
    assert_eq!(
        env_of(second),
        json!({"DB": {"value": "shop-eu-db.eu"}, "I": {"value": "shop-eu"}})
    );
}

#[test]
fn expressions_see_the_namespace_metadata_resolves_to() {
    let module = load_with(
        "apiVersion: core.opm.dev/v1\nkind: Module\n\
         metadata: {name: shop, version: '1', namespace: '${config.namespace}'}\n\
         config:\n  namespace: {type: string, default: web}\n\
         components:\n  api:\n    resources:\n      Container:\n        image: nginx\n        \
         env: {NS: {value: '${instance.namespace}'}, M: {value: '${module.namespace}'}}\n",
        &["namespace: prod\n"],
        &[],
    )
    .unwrap();
    assert_eq!(module.namespace(), Some("prod"));
    assert_eq!(
        module.component("api").unwrap().resources[0].value["env"],
        json!({"NS": {"value": "prod"}, "M": {"value": "prod"}})
    );
}

const PATCHED: &str = "\
apiVersion: core.opm.dev/v1
kind: Module
metadata: {name: shop, version: '1'}
config:
  properties:
    owner: {type: string, default: team-a}
    sticky: {type: boolean, default: false}
components:
  api:
    resources: {Container: {image: nginx}}
patches:
  - target: {kind: Deployment, component: api}
    merge: {metadata: {annotations: {example.com/owner: '${config.owner}'}}}
  - target: {kind: Service}
    when: ${config.sticky}
    jsonPatch: [{op: add, path: /spec/sessionAffinity, value: '${config.nothing.set}'}]
  - target: {kind: Service, labels: {tier: web}}
    when: true
    jsonPatch: [{op: add, path: /spec/sessionAffinity, value: ClientIP}]
";

#[test]
fn patches_use_parameters_and_conditions_and_keep_their_place_in_the_list() {
    let module = load_with(PATCHED, &["owner: team-b\n"], &[]).unwrap();
    let patches = module.patches();
    assert_eq!(patches.iter().map(|p| p.index).collect::<Vec<_>>(), [0, 2]);
    let patch::Operation::Merge(merge) = &patches[0].operation else {
        panic!("{:?}", patches[0]);
    };
    assert_eq!(
        merge,
        &json!({"metadata": {"annotations": {"example.com/owner": "team-b"}}})
    );
    assert_eq!(patches[1].target.labels["tier"], "web");
    let left_out = module.left_out_patches();
    assert_eq!(left_out.len(), 1);
    assert_eq!(
        (left_out[0].index, left_out[0].condition.as_str()),
        (1, "${config.sticky}")
    );
    let sticky = load_with(PATCHED, &[], &["sticky=true"])
        .unwrap_err()
        .to_string();
    assert!(sticky.contains("module.yaml:16:"), "{sticky}");
}

#[test]
fn values_and_set_cannot_add_or_change_patches() {
    let without_config = MODULE.to_owned()
        + "patches:\n  - target: {kind: Deployment}\n    merge: {metadata: {labels: {a: b}}}\n";
    for error in [
        load_with(
            &without_config,
            &["patches:\n  - target: {kind: Service}\n    merge: {}\n"],
            &[],
        ),
        load_with(&without_config, &["patches: null\n"], &[]),
        load_with(&without_config, &[], &["patches[0].merge.spec=x"]),
    ] {
        let text = error.unwrap_err().to_string();
        assert!(
            text.contains(
                "patches are the module's own: a values file or --set cannot add or change them"
            ),
            "{text}"
        );
    }
    let module = load_with(&without_config, &[], &["components.api.traits.Replicas=2"]).unwrap();
    assert_eq!(module.patches().len(), 1);
}

#[test]
fn a_patch_that_writes_into_a_secret_is_sensitive() {
    let module = load_with(
        &(MODULE.replace(
            "components:\n",
            "config:\n  properties: {password: {type: string, default: written-in-the-file}}\ncomponents:\n",
        ) + "patches:\n  - target: {kind: Secret}\n    merge: {stringData: {password: '${config.password}', user: shop-admin-user}}\n\
               \x20 - target: {kind: Service}\n    merge: {metadata: {annotations: {owner: platform-team}}}\n"),
        &["password: correct-horse\n"],
        &[],
    )
    .unwrap();
    let sensitive = module.sensitive_values();
    assert!(
        sensitive.contains(&"correct-horse".to_owned()),
        "{sensitive:?}"
    );
    // What the module file writes, it makes public.
    for public in ["platform-team", "shop-admin-user"] {
        assert!(!sensitive.contains(&public.to_owned()), "{sensitive:?}");
    }
}

/// A large module's components are read in parallel on a render's threads: the module, and the
/// problems of its components in the order of the file, are what reading them one by one gives.
#[test]
fn a_large_modules_components_read_in_parallel_read_as_one_by_one() {
    let component = |i: usize| {
        let name = if i % 7 == 3 {
            format!("Bad_{i}")
        } else {
            format!("c{i}")
        };
        let extra = if i % 11 == 5 {
            "    colour: blue\n"
        } else {
            ""
        };
        format!(
            "  {name}:\n{extra}    resources:\n      Container: {{image: app:{i}}}\n    traits:\n      Replicas: {i}\n"
        )
    };
    let body: String = (0..64).map(component).collect();
    let module = format!(
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {{name: big, version: 1.0.0}}\ncomponents:\n{body}"
    );
    let files = Files::new();
    let path = files.write("module.yaml", &module);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let read = |pool: Option<&rayon::ThreadPool>, module: &Path| {
        load_on(
            pool,
            module,
            &[],
            &[],
            &Instance::default(),
            &no_env,
            &mut BTreeSet::new(),
        )
    };
    let serial = read(None, &path).unwrap_err().to_string();
    let parallel = read(Some(&pool), &path).unwrap_err().to_string();
    assert_eq!(parallel, serial);
    let names = serial.match_indices("must be a DNS label").count();
    assert_eq!(names, 9, "{serial}");
    assert!(
        serial.find("\"Bad_3\"") < serial.find("\"Bad_10\"")
            && serial.find("\"Bad_10\"") < serial.find("\"Bad_59\""),
        "{serial}"
    );
    assert!(serial.contains("colour"), "{serial}");

    let good: String = (0..64)
        .map(|i| format!("  c{i}:\n    resources:\n      Container: {{image: app:{i}}}\n"))
        .collect();
    let path = files.write(
        "good.yaml",
        &format!(
            "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {{name: big, version: 1.0.0}}\ncomponents:\n{good}"
        ),
    );
    let serial = read(None, &path).unwrap();
    let parallel = read(Some(&pool), &path).unwrap();
    assert_eq!(parallel.components().count(), 64);
    assert_eq!(
        format!("{:?}", parallel.components().collect::<Vec<_>>()),
        format!("{:?}", serial.components().collect::<Vec<_>>())
    );
}

/// Every attachment value of `module`, in order, as JSON text: what a render reads of it.
fn values_of(module: &Module) -> String {
    module
        .components()
        .flat_map(|c| c.resources.iter().chain(&c.traits).chain(&c.policies))
        .map(|a| serde_json::to_string(&a.value).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

mod determinism {
    use proptest::prelude::*;

    use super::*;

    /// A module of `components` components whose Object holds `expression` over the map
    /// parameter `m`, whose default is `entries`.
    fn module_text(entries: &[(String, String)], components: usize, expression: &str) -> String {
        let default: serde_json::Map<String, serde_json::Value> = entries
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::from(v.clone())))
            .collect();
        let mut text = format!(
            "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {{name: m, version: 0.1.0}}\n\
             config:\n  properties:\n    m: {{type: object, additionalProperties: {{type: string}}, \
             default: {}}}\ncomponents:\n",
            serde_json::Value::Object(default)
        );
        for index in 0..components {
            text.push_str(&format!(
                "  c{index}:\n    resources:\n      Object: {{apiVersion: v1, kind: List, metadata: {{name: x}}, items: \"${{ {expression} }}\"}}\n"
            ));
        }
        text
    }

    const EXPRESSIONS: &[&str] = &[
        "config.m.map(k, k + '=' + config.m[k]).join(',')",
        "config.m.filter(k, config.m[k] > 'm').map(k, {'k': k})",
        "config.m.map(k, config.m.filter(j, j < k).size())",
        "config.m.exists_one(k, k == 'a') ? 'one' : 'not one'",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Real charts (2026-12): what an expression makes of a map is the same in every load of
        /// the module, on one thread or two, whatever the map's size and keys.
        #[test]
        fn an_expression_over_a_map_gives_one_value_whatever_the_run_and_the_threads(
            entries in proptest::collection::btree_map("[a-z]{1,6}", "[a-z]{0,4}", 0..40),
            expression in 0..EXPRESSIONS.len(),
            components in prop_oneof![Just(1usize), Just(PARALLEL_FROM + 3)],
        ) {
            let entries: Vec<(String, String)> = entries.into_iter().collect();
            let files = Files::new();
            let path = files.write(
                "module.yaml",
                &module_text(&entries, components, EXPRESSIONS[expression]),
            );
            let mut seen = None;
            for threads in [1, 2, 1, 2] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                let module = load_on(
                    Some(&pool),
                    &path,
                    &[],
                    &[],
                    &Instance::default(),
                    &no_env,
                    &mut BTreeSet::new(),
                )
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let values = values_of(&module);
                match &seen {
                    None => seen = Some(values),
                    Some(first) => prop_assert_eq!(first, &values, "{} threads", threads),
                }
            }
        }
    }
}
