//! A platform: every release of a team's modules in every environment, in one file
//! (`docs/platforms.md`), which `opm platform build` renders in one process and `opm platform
//! diff` compares between two revisions.
//!
//! ```yaml
//! apiVersion: core.opm.dev/v1
//! kind: Platform
//! metadata: {name: acme}
//! environments: [dev, prod]
//! defaults: {providers: [kubernetes]}      # every release, before its own settings
//! releases:
//!   shop:                                   # the release's name: its directory, its instance
//!     module: ../examples/shop              # relative to this file
//!     namespace: shop
//!     valuesFiles: [values/shop.yaml]
//!     values: {replicas: 3}
//!     environments:
//!       prod:
//!         namespace: shop-prod
//!         values: {replicas: 5, database: {password: "${env:SHOP_DB_PASSWORD}"}}
//! ```
//!
//! A release in an environment ([`Release`]) is exactly one `opm mod build`: its settings are the
//! defaults', then the release's, then those of its entry for the environment — a later one
//! replacing an earlier one, values files added in that order, inline values deep-merged in that
//! order and passed as one `--set` per leaf after every file ([`Release::command`] is the
//! command). Each key of the file is checked: an unknown one, a release or an environment that
//! is not there, gets a "did you mean".

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::names::{did_you_mean, suggest};

/// The `apiVersion` of a releases file.
pub const API_VERSION: &str = "core.opm.dev/v1";
/// Its `kind`.
pub const KIND: &str = "Platform";
/// The most of a releases file opm reads.
pub const MAX_BYTES: u64 = 8 << 20;

/// A releases file, checked.
#[derive(Debug, Clone)]
pub struct Platform {
    /// The file, as given.
    pub path: PathBuf,
    /// `metadata.name`.
    pub name: String,
    /// The environments, in the file's order.
    pub environments: Vec<String>,
    defaults: Settings,
    releases: BTreeMap<String, ReleaseSpec>,
}

/// What the defaults, a release or a release's environment may set.
#[derive(Debug, Clone, Default)]
struct Settings {
    module: Option<String>,
    instance: Option<String>,
    namespace: Option<String>,
    providers: Option<Vec<String>>,
    renderer: Option<String>,
    strict: Option<bool>,
    allow_env: Option<Vec<String>>,
    values_files: Vec<String>,
    values: Map<String, Value>,
}

#[derive(Debug, Clone)]
struct ReleaseSpec {
    settings: Settings,
    only: Option<Vec<String>>,
    environments: BTreeMap<String, Settings>,
}

/// One release in one environment: what `opm mod build` is given for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    /// The release's name: its directory under the environment's, and its default instance.
    pub name: String,
    /// The environment.
    pub environment: String,
    /// The module file or directory (relative to the releases file's directory, joined to it),
    /// or a module in a registry, `oci://HOST/REPO[:TAG|@DIGEST]`, as written.
    pub module: PathBuf,
    /// Values files, in order (as `module` is).
    pub values: Vec<PathBuf>,
    /// The inline values, one `PATH=VALUE` per leaf, applied after the files.
    pub set: Vec<String>,
    /// The instance (the release's name unless set).
    pub instance: String,
    /// The namespace, if set.
    pub namespace: Option<String>,
    /// The providers (`-p`), paths joined to the file's directory.
    pub providers: Vec<String>,
    /// `--renderer`.
    pub renderer: Option<String>,
    /// `--strict`.
    pub strict: bool,
    /// `--allow-env`, when set.
    pub allow_env: Option<Vec<String>>,
}

/// Why a releases file cannot be used: its path and what is wrong, with the key at fault.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct PlatformError {
    /// The file.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

const TOP: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "environments",
    "defaults",
    "releases",
];
const METADATA: &[&str] = &["name", "description"];
const DEFAULTS: &[&str] = &["providers", "renderer", "strict", "allowEnv"];
const ENVIRONMENT: &[&str] = &[
    "module",
    "instance",
    "namespace",
    "providers",
    "renderer",
    "strict",
    "allowEnv",
    "valuesFiles",
    "values",
];
const RELEASE: &[&str] = &[
    "module",
    "instance",
    "namespace",
    "providers",
    "renderer",
    "strict",
    "allowEnv",
    "valuesFiles",
    "values",
    "environments",
    "only",
];

impl Platform {
    /// Reads and checks the releases file at `path`.
    pub fn load(path: &Path) -> Result<Self, PlatformError> {
        let fail = |message: String| PlatformError {
            path: path.display().to_string(),
            message,
        };
        let text = crate::files::read_bounded(path, MAX_BYTES)
            .map_err(|e| fail(format!("cannot read it: {e}")))?;
        let text = String::from_utf8(text).map_err(|_| fail("is not UTF-8 text".to_owned()))?;
        Self::parse(path, &text)
    }

    /// Checks `text`, the releases file at `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Self, PlatformError> {
        let fail = |message: String| PlatformError {
            path: path.display().to_string(),
            message,
        };
        let document: Value = serde_saphyr::from_str(text)
            .map_err(|e| fail(format!("not a YAML or JSON document: {e}")))?;
        let top = object(&document, "the file").map_err(fail)?;
        keys(top, TOP, "").map_err(fail)?;
        let api_version = string(top.get("apiVersion"), "apiVersion").map_err(fail)?;
        let kind = string(top.get("kind"), "kind").map_err(fail)?;
        if api_version.as_deref() != Some(API_VERSION) || kind.as_deref() != Some(KIND) {
            return Err(fail(format!(
                "is not a releases file: it needs apiVersion: {API_VERSION} and kind: {KIND}"
            )));
        }
        let metadata =
            object(top.get("metadata").unwrap_or(&Value::Null), "metadata").map_err(fail)?;
        keys(metadata, METADATA, "metadata.").map_err(fail)?;
        let name = string(metadata.get("name"), "metadata.name")
            .map_err(fail)?
            .ok_or_else(|| fail("metadata.name is missing".to_owned()))?;
        let environments = strings(top.get("environments"), "environments")
            .map_err(fail)?
            .unwrap_or_default();
        if environments.is_empty() {
            return Err(fail(
                "environments is missing: list the environments the releases render in \
                 (environments: [dev, prod])"
                    .to_owned(),
            ));
        }
        for (index, environment) in environments.iter().enumerate() {
            check_name(environment, "an environment").map_err(fail)?;
            if environments[..index].contains(environment) {
                return Err(fail(format!("environment {environment:?} is listed twice")));
            }
        }
        let defaults = match top.get("defaults") {
            None | Some(Value::Null) => Settings::default(),
            Some(value) => {
                let map = object(value, "defaults").map_err(fail)?;
                keys(map, DEFAULTS, "defaults.").map_err(fail)?;
                settings(map, "defaults").map_err(fail)?
            }
        };
        let releases_map =
            object(top.get("releases").unwrap_or(&Value::Null), "releases").map_err(fail)?;
        let mut releases = BTreeMap::new();
        for (release, value) in releases_map {
            let at = format!("releases.{release}");
            check_name(release, "a release").map_err(|e| fail(format!("{at}: {e}")))?;
            let map = object(value, &at).map_err(fail)?;
            keys(map, RELEASE, &format!("{at}.")).map_err(fail)?;
            let own = settings(map, &at).map_err(fail)?;
            if own.module.is_none() {
                return Err(fail(format!(
                    "{at}.module is missing: the module file or directory it renders"
                )));
            }
            let only = strings(map.get("only"), &format!("{at}.only")).map_err(fail)?;
            for environment in only.iter().flatten() {
                known_environment(environment, &environments, &format!("{at}.only"))
                    .map_err(fail)?;
            }
            let mut per_environment = BTreeMap::new();
            let env_map = match map.get("environments") {
                None | Some(Value::Null) => Map::new(),
                Some(value) => object(value, &format!("{at}.environments"))
                    .map_err(fail)?
                    .clone(),
            };
            for (environment, value) in &env_map {
                let env_at = format!("{at}.environments.{environment}");
                known_environment(environment, &environments, &format!("{at}.environments"))
                    .map_err(fail)?;
                if let Some(only) = &only
                    && !only.contains(environment)
                {
                    return Err(fail(format!(
                        "{env_at}: the release renders only in {} (its `only`)",
                        only.join(", ")
                    )));
                }
                let settings_map = match value {
                    Value::Null => Map::new(),
                    value => object(value, &env_at).map_err(fail)?.clone(),
                };
                keys(&settings_map, ENVIRONMENT, &format!("{env_at}.")).map_err(fail)?;
                per_environment.insert(
                    environment.clone(),
                    settings(&settings_map, &env_at).map_err(fail)?,
                );
            }
            releases.insert(
                release.clone(),
                ReleaseSpec {
                    settings: own,
                    only,
                    environments: per_environment,
                },
            );
        }
        Ok(Self {
            path: path.to_owned(),
            name,
            environments,
            defaults,
            releases,
        })
    }

    /// The releases' names, in order.
    pub fn release_names(&self) -> impl Iterator<Item = &str> {
        self.releases.keys().map(String::as_str)
    }

    /// Checks that `environment` is one of the file's, with a "did you mean" when not.
    pub fn check_environment(&self, environment: &str) -> Result<(), PlatformError> {
        known_environment(environment, &self.environments, "--env").map_err(|message| {
            PlatformError {
                path: self.path.display().to_string(),
                message,
            }
        })
    }

    /// Checks that `release` is one of the file's, with a "did you mean" when not.
    pub fn check_release(&self, release: &str) -> Result<(), PlatformError> {
        if self.releases.contains_key(release) {
            return Ok(());
        }
        Err(PlatformError {
            path: self.path.display().to_string(),
            message: format!(
                "has no release {release:?}{}",
                did_you_mean(&suggest(release, self.release_names()))
            ),
        })
    }

    /// Every release rendered in `environment` (those whose `only` leaves it out are not), in
    /// name order, with paths joined to the file's directory.
    pub fn releases(&self, environment: &str) -> Result<Vec<Release>, PlatformError> {
        self.check_environment(environment)?;
        let base = match self.path.parent() {
            Some(dir) => dir.to_owned(),
            None => PathBuf::new(),
        };
        let mut releases = Vec::new();
        for (name, spec) in &self.releases {
            if spec
                .only
                .as_ref()
                .is_some_and(|only| !only.iter().any(|e| e == environment))
            {
                continue;
            }
            let mut merged = self.defaults.clone();
            merged.overlay(&spec.settings);
            if let Some(own) = spec.environments.get(environment) {
                merged.overlay(own);
            }
            let module = merged.module.clone().unwrap_or_default();
            // A module in a registry is named as it is; a path is this file's.
            let module = if module.starts_with("oci://") {
                PathBuf::from(module)
            } else {
                base.join(&module)
            };
            releases.push(Release {
                name: name.clone(),
                environment: environment.to_owned(),
                module,
                values: merged.values_files.iter().map(|f| base.join(f)).collect(),
                set: assignments(&merged.values),
                instance: merged.instance.clone().unwrap_or_else(|| name.clone()),
                namespace: merged.namespace.clone(),
                providers: merged
                    .providers
                    .clone()
                    .unwrap_or_default()
                    .iter()
                    .map(|p| provider_path(&base, p))
                    .collect(),
                renderer: merged.renderer.clone(),
                strict: merged.strict.unwrap_or(false),
                allow_env: merged.allow_env.clone(),
            });
        }
        Ok(releases)
    }
}

impl Release {
    /// The `opm mod build` command that renders this release as the platform build does (with
    /// `--out-dir DIR` and the output flags the caller adds), its arguments one by one.
    pub fn command(&self) -> Vec<String> {
        let mut args = vec![
            "opm".to_owned(),
            "mod".to_owned(),
            "build".to_owned(),
            self.module.display().to_string(),
        ];
        for values in &self.values {
            args.extend(["-f".to_owned(), values.display().to_string()]);
        }
        for set in &self.set {
            args.extend(["--set".to_owned(), set.clone()]);
        }
        for provider in &self.providers {
            args.extend(["-p".to_owned(), provider.clone()]);
        }
        if let Some(renderer) = &self.renderer {
            args.extend(["--renderer".to_owned(), renderer.clone()]);
        }
        args.extend(["--instance".to_owned(), self.instance.clone()]);
        if let Some(namespace) = &self.namespace {
            args.extend(["-n".to_owned(), namespace.clone()]);
        }
        if self.strict {
            args.push("--strict".to_owned());
        }
        for name in self.allow_env.iter().flatten() {
            args.extend(["--allow-env".to_owned(), name.clone()]);
        }
        args
    }
}

impl Settings {
    /// `other` over `self`: what it sets replaces, its values files come after, its values
    /// are deep-merged over.
    fn overlay(&mut self, other: &Settings) {
        macro_rules! replace {
            ($($field:ident),*) => {$(
                if other.$field.is_some() {
                    self.$field.clone_from(&other.$field);
                }
            )*};
        }
        replace!(
            module, instance, namespace, providers, renderer, strict, allow_env
        );
        self.values_files.extend(other.values_files.iter().cloned());
        merge(&mut self.values, &other.values);
    }
}

/// `over` deep-merged onto `base`: maps key by key, anything else replaced.
fn merge(base: &mut Map<String, Value>, over: &Map<String, Value>) {
    for (key, value) in over {
        match (base.get_mut(key), value) {
            (Some(Value::Object(mine)), Value::Object(theirs)) if !theirs.is_empty() => {
                merge(mine, theirs)
            }
            _ => {
                base.insert(key.clone(), value.clone());
            }
        }
    }
}

/// One `--set PATH=VALUE` per leaf of `values` (a scalar, a list, an empty map), in the file's
/// order;
/// each VALUE the leaf as JSON, which `--set` reads as the same YAML value.
fn assignments(values: &Map<String, Value>) -> Vec<String> {
    fn walk(path: &mut Vec<String>, value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) if !map.is_empty() => {
                for (key, item) in map {
                    path.push(set_key(key));
                    walk(path, item, out);
                    path.pop();
                }
            }
            leaf => out.push(format!("{}={leaf}", path.join("."))),
        }
    }
    let mut out = Vec::new();
    for (key, value) in values {
        walk(&mut vec![set_key(key)], value, &mut out);
    }
    out
}

/// `key` as one key of a `--set` path: quoted when it holds what the path's syntax reads.
fn set_key(key: &str) -> String {
    let plain = !key.is_empty()
        && !key
            .chars()
            .any(|c| matches!(c, '.' | '"' | '\\' | '[' | ']' | '=') || c.is_whitespace());
    if plain {
        key.to_owned()
    } else {
        format!("\"{}\"", key.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

/// A provider as `-p` takes it: a path (one starting with `./`, `../` or `/`, or naming a
/// `.opmb` file) joined to the file's directory; a name as it is.
fn provider_path(base: &Path, provider: &str) -> String {
    let is_path = provider.starts_with("./")
        || provider.starts_with("../")
        || provider.starts_with('/')
        || provider.ends_with(".opmb");
    if is_path {
        base.join(provider).display().to_string()
    } else {
        provider.to_owned()
    }
}

fn known_environment(environment: &str, known: &[String], at: &str) -> Result<(), String> {
    if known.iter().any(|e| e == environment) {
        return Ok(());
    }
    Err(format!(
        "{at}: {environment:?} is not one of the file's environments ({}){}",
        known.join(", "),
        did_you_mean(&suggest(environment, known.iter().map(String::as_str)))
    ))
}

/// Whether `name` may name a release or an environment: it names a directory and, for a
/// release, the default instance.
fn check_name(name: &str, what: &str) -> Result<(), String> {
    crate::names::check_instance_name(name)
        .map_err(|_| format!("{what}'s name {name:?} must be a DNS label that starts with a letter: lowercase letters, digits and '-', at most 63"))
}

/// Every key of `map` is one of `allowed`, or an error naming it at `at` with a "did you mean".
fn keys(map: &Map<String, Value>, allowed: &[&str], at: &str) -> Result<(), String> {
    for key in map.keys() {
        if !allowed.contains(&key.as_str()) {
            return Err(format!(
                "{at}{key}: unknown key{}",
                match suggest(key, allowed.iter().copied()).as_slice() {
                    [] => format!(" (known here: {})", allowed.join(", ")),
                    close => did_you_mean(close),
                }
            ));
        }
    }
    Ok(())
}

fn object<'a>(value: &'a Value, at: &str) -> Result<&'a Map<String, Value>, String> {
    value
        .as_object()
        .ok_or_else(|| format!("{at} must be a map, not {}", kind(value)))
}

fn string(value: Option<&Value>, at: &str) -> Result<Option<String>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("{at} must be a string, not {}", kind(other))),
    }
}

fn strings(value: Option<&Value>, at: &str) -> Result<Option<Vec<String>>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                string(Some(item), &format!("{at}[{index}]"))?
                    .ok_or_else(|| format!("{at}[{index}] must be a string, not null"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => Err(format!(
            "{at} must be a list of strings, not {}",
            kind(other)
        )),
    }
}

fn settings(map: &Map<String, Value>, at: &str) -> Result<Settings, String> {
    let field = |key: &str| format!("{at}.{key}");
    let instance = string(map.get("instance"), &field("instance"))?;
    if let Some(instance) = &instance {
        crate::names::check_instance_name(instance)
            .map_err(|e| format!("{}: {e}", field("instance")))?;
    }
    let strict = match map.get("strict") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => {
            return Err(format!(
                "{} must be true or false, not {}",
                field("strict"),
                kind(other)
            ));
        }
    };
    let values = match map.get("values") {
        None | Some(Value::Null) => Map::new(),
        Some(value) => object(value, &field("values"))?.clone(),
    };
    Ok(Settings {
        module: string(map.get("module"), &field("module"))?,
        instance,
        namespace: string(map.get("namespace"), &field("namespace"))?,
        providers: strings(map.get("providers"), &field("providers"))?,
        renderer: string(map.get("renderer"), &field("renderer"))?,
        strict,
        allow_env: strings(map.get("allowEnv"), &field("allowEnv"))?,
        values_files: strings(map.get("valuesFiles"), &field("valuesFiles"))?.unwrap_or_default(),
        values,
    })
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "apiVersion: core.opm.dev/v1
kind: Platform
metadata: {name: acme}
environments: [dev, prod]
defaults: {providers: [kubernetes]}
releases:
  shop:
    module: ../examples/shop
    namespace: shop
    valuesFiles: [values/shop.yaml]
    values: {replicas: 3, database: {size: 10Gi}}
    environments:
      prod:
        namespace: shop-prod
        valuesFiles: [values/shop-prod.yaml]
        values: {database: {password: '${env:PW}'}, \"a.b\": [1, 2]}
  tools:
    module: tools/module.yaml
    only: [dev]
    providers: [./acme.opmb]
";

    fn platform() -> Platform {
        Platform::parse(Path::new("platform/releases.yaml"), FILE).unwrap()
    }

    #[test]
    fn a_release_in_an_environment_is_its_defaults_then_its_own_then_its_environments() {
        let prod = platform().releases("prod").unwrap();
        assert_eq!(prod.len(), 1, "tools renders only in dev");
        let shop = &prod[0];
        assert_eq!(shop.module, Path::new("platform/../examples/shop"));
        assert_eq!(
            shop.values,
            [
                Path::new("platform/values/shop.yaml"),
                Path::new("platform/values/shop-prod.yaml")
            ]
        );
        assert_eq!(
            shop.set,
            [
                "replicas=3",
                "database.size=\"10Gi\"",
                "database.password=\"${env:PW}\"",
                "\"a.b\"=[1,2]"
            ]
        );
        assert_eq!(shop.namespace.as_deref(), Some("shop-prod"));
        assert_eq!(shop.instance, "shop");
        assert_eq!(shop.providers, ["kubernetes"]);
        let dev = platform().releases("dev").unwrap();
        assert_eq!(dev.len(), 2);
        assert_eq!(dev[0].namespace.as_deref(), Some("shop"));
        assert_eq!(dev[1].providers, ["platform/./acme.opmb"]);
        assert_eq!(
            dev[0].command().join(" "),
            "opm mod build platform/../examples/shop -f platform/values/shop.yaml --set \
             replicas=3 --set database.size=\"10Gi\" -p kubernetes --instance shop -n shop"
        );
    }

    #[test]
    fn a_typo_gets_a_did_you_mean() {
        let cases = [
            (
                FILE.replace("namespace: shop\n", "namespce: shop\n"),
                "releases.shop.namespce: unknown key; did you mean \"namespace\"?",
            ),
            (
                FILE.replace("      prod:\n", "      prd:\n"),
                "releases.shop.environments: \"prd\" is not one of the file's environments (dev, prod); did you mean \"prod\"?",
            ),
            (
                FILE.replace("only: [dev]", "only: [deb]"),
                "did you mean \"dev\"?",
            ),
            (
                FILE.replace("defaults:", "default:"),
                "default: unknown key; did you mean \"defaults\"?",
            ),
            (
                FILE.replace("    module: tools/module.yaml\n", ""),
                "releases.tools.module is missing",
            ),
            (
                FILE.replace("  shop:\n", "  Shop:\n"),
                "releases.Shop: a release's name \"Shop\" must be a DNS label",
            ),
            (
                FILE.replace("kind: Platform", "kind: Module"),
                "is not a releases file",
            ),
        ];
        for (text, wanted) in cases {
            let error = Platform::parse(Path::new("p.yaml"), &text)
                .unwrap_err()
                .to_string();
            assert!(error.starts_with("p.yaml: "), "{error}");
            assert!(error.contains(wanted), "{error}\nwanted: {wanted}");
        }
        let platform = platform();
        let error = platform.releases("prd").unwrap_err().to_string();
        assert!(error.contains("did you mean \"prod\"?"), "{error}");
        let error = platform.check_release("shpo").unwrap_err().to_string();
        assert!(
            error.contains("has no release \"shpo\"; did you mean \"shop\"?"),
            "{error}"
        );
    }

    #[test]
    fn a_key_the_set_syntax_reads_is_quoted() {
        assert_eq!(set_key("plain-key_1"), "plain-key_1");
        assert_eq!(set_key("opm.dev/x@v1#R"), "\"opm.dev/x@v1#R\"");
        assert_eq!(set_key("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(set_key("a=b"), "\"a=b\"");
        assert_eq!(set_key(""), "\"\"");
    }
}
