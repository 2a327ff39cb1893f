//! The quadlet provider's renderer ("Quadlet Renderer"): writes each unit a transformer
//! returned as its file — `NAME.container`, `NAME.pod`, `NAME.volume`, `NAME.timer` — the
//! module's network `<instance>.network` that the containers join, and the files the units
//! read: each ConfigMap key as `config/<object>/<key>`, each Secret key as
//! `secrets/<object>/<key>` (mode 0600), and a container's variables read from them as the
//! `EnvironmentFile=` its unit names (`secrets/NAME.env`, 0600, when a Secret is read; else
//! `config/NAME.env`).
//!
//! Every unit opens with a comment naming the module, the instance and the component; units
//! come in name order, then the files, so a module renders the same bytes every time. The
//! whole directory goes where Quadlet looks (`~/.config/containers/systemd/<instance>/`):
//! Quadlet resolves the `./config/…` and `./secrets/…` of the units against it.
//!
//! Units are neither YAML nor JSON, so `-o json` and `--split` are refused.

use std::collections::BTreeMap;

use opm_guest::{Chunk, Context, File, Mode, Options, RenderError, Rendered, Renderer, Value};
use opm_quadlet_common::unit::{EXTENSION, text};
use opm_quadlet_common::{
    API_VERSION, CONFIG_MAP, SECRET, UNIT_KINDS, data, network_name, object_labels, quote,
};

/// Renders quadlet resources as unit files.
pub struct QuadletRenderer;

impl Renderer for QuadletRenderer {
    fn render(
        resources: &[Rendered],
        context: &Context,
        options: &Options,
    ) -> Result<Vec<File>, RenderError> {
        if options.split {
            return Err(RenderError::Failed(
                "--split: the quadlet renderer writes one file per unit already; leave out --split"
                    .into(),
            ));
        }
        if !matches!(options.format.as_str(), "" | "yaml") {
            return Err(RenderError::Failed(format!(
                "-o {}: Quadlet units are systemd unit files, not YAML or JSON; leave out -o",
                options.format
            )));
        }
        render(resources, context)
    }
}

opm_guest::export_renderer!(QuadletRenderer);

/// One ConfigMap's or Secret's files, by key.
type Object = BTreeMap<String, Vec<u8>>;

/// The files of `resources`.
pub fn render(resources: &[Rendered], context: &Context) -> Result<Vec<File>, RenderError> {
    let mut refused = Vec::new();
    let mut units: BTreeMap<String, (String, &Rendered, Value)> = BTreeMap::new();
    let mut configs: BTreeMap<String, Object> = BTreeMap::new();
    let mut secrets: BTreeMap<String, Object> = BTreeMap::new();
    for (index, resource) in resources.iter().enumerate() {
        let index = index as u32;
        if resource.api_version != API_VERSION {
            refused.push((
                index,
                format!(
                    "the quadlet renderer writes {API_VERSION} resources, not {} {}",
                    resource.api_version, resource.kind
                ),
            ));
            continue;
        }
        let value = resource.value()?;
        let spec = value.get("spec").cloned().unwrap_or(Value::Null);
        let what = format!("{} {}", resource.kind, resource.name);
        if resource.kind == CONFIG_MAP || resource.kind == SECRET {
            let files = match data::files(&value, &what) {
                Ok(files) => files,
                Err(reason) => {
                    refused.push((index, reason));
                    continue;
                }
            };
            let into = if resource.kind == CONFIG_MAP {
                &mut configs
            } else {
                &mut secrets
            };
            into.insert(resource.name.clone(), files.into_iter().collect());
            continue;
        }
        let Some((_, extension, own)) = UNIT_KINDS
            .iter()
            .find(|(kind, _, _)| *kind == resource.kind)
        else {
            refused.push((index, format!(
                "{what}: the quadlet renderer writes the kinds Container, Pod, Volume, Network, Timer, ConfigMap and Secret"
            )));
            continue;
        };
        if !is_unit_name(&resource.name) {
            refused.push((index, format!(
                "{what}: a unit's name is letters, digits and - _ . @ (it names the file {}.{extension})",
                resource.name
            )));
            continue;
        }
        let path = format!("{}.{extension}", resource.name);
        if let Some((_, other, _)) = units.get(&path) {
            refused.push((
                index,
                format!(
                    "{path} is returned for component {:?} and for component {:?}",
                    other.component, resource.component
                ),
            ));
            continue;
        }
        units.insert(path, (own.to_string(), resource, spec));
    }
    if !refused.is_empty() {
        return Err(RenderError::Refused(refused));
    }

    let module = if context.module.is_empty() {
        context.name.as_str()
    } else {
        context.module.as_str()
    };
    let network = format!("{}.network", network_name(context));
    let mut files: Vec<File> = Vec::new();
    let mut env_files: Vec<File> = Vec::new();
    let mut joined = false;
    for (path, (own, resource, mut spec)) in units {
        if let Some(extension) = spec.as_object_mut().and_then(|s| s.remove(EXTENSION)) {
            env_files.push(env_file(
                context.strict,
                &path,
                &extension,
                &configs,
                &secrets,
            )?);
        }
        joined |= ["Container", "Pod"].iter().any(|section| {
            spec.get(*section)
                .and_then(|s| s.get("Network"))
                .and_then(Value::as_str)
                == Some(&network)
        });
        check_files(&path, &spec, &configs, &secrets);
        let header = format!(
            "# {path}: component {:?} of module {module:?}, instance {:?}, rendered by opm",
            resource.component, context.name
        );
        let body = text(&[&header], &own, &spec).map_err(|e| {
            RenderError::Failed(format!("{path} (component {:?}): {e}", resource.component))
        })?;
        files.push(File::new(path, vec![Chunk::Bytes(body.into_bytes())]));
    }
    if joined && !files.iter().any(|f| f.path == network) {
        let mut body = format!(
            "# {network}: the network of module {module:?}, instance {:?}, which every container joins, rendered by opm\n[Network]\n",
            context.name
        );
        for (key, value) in object_labels(context) {
            body.push_str(&format!(
                "Label={}\n",
                quote(&format!("{key}={}", value.as_str().unwrap_or_default()))
            ));
        }
        files.push(File::new(network, vec![Chunk::Bytes(body.into_bytes())]));
        files.sort_by(|a, b| a.path.cmp(&b.path));
    }
    for (dir, objects, mode) in [
        (opm_quadlet_common::CONFIG_DIR, &configs, Mode::Regular),
        (opm_quadlet_common::SECRET_DIR, &secrets, Mode::Private),
    ] {
        for (object, keys) in objects {
            for (key, bytes) in keys {
                files.push(
                    File::new(
                        format!("{dir}/{object}/{key}"),
                        vec![Chunk::Bytes(bytes.clone())],
                    )
                    .with_mode(mode),
                );
            }
        }
    }
    env_files.sort_by(|a, b| a.path.cmp(&b.path));
    files.extend(env_files);
    Ok(files)
}

/// Whether `name` can name a unit file.
fn is_unit_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
        && !name.starts_with('.')
}

/// The `EnvironmentFile=` of the unit `path`, from its extension: `envFrom` first, in order,
/// then each variable of `env` read from a ConfigMap or Secret (a later line wins, as `env`
/// wins over `envFrom`). Private when it lies under `secrets/`. A value with a line break, or
/// bytes that are not text, cannot be a line of the file: it is left out with a warning (an
/// error under `--strict`).
fn env_file(
    strict: bool,
    path: &str,
    extension: &Value,
    configs: &BTreeMap<String, Object>,
    secrets: &BTreeMap<String, Object>,
) -> Result<File, RenderError> {
    let fail = |message: String| RenderError::Failed(format!("{path}: {message}"));
    let object = |item: &Value| -> (&'static str, String, Option<&Object>) {
        if let Some(name) = item.get("secret").and_then(Value::as_str) {
            ("Secret", name.to_owned(), secrets.get(name))
        } else {
            let name = item
                .get("configMap")
                .and_then(Value::as_str)
                .unwrap_or_default();
            ("ConfigMap", name.to_owned(), configs.get(name))
        }
    };
    let mut lines: Vec<(String, Vec<u8>)> = Vec::new();
    for item in extension
        .get("envFrom")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (kind, name, found) = object(item);
        let optional = item
            .get("optional")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let prefix = item
            .get("prefix")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(keys) = found else {
            if optional {
                continue;
            }
            return Err(fail(format!(
                "envFrom reads the {kind} {name:?}, which no component of the module renders; render it, or mark it optional"
            )));
        };
        for (key, bytes) in keys {
            let var = format!("{prefix}{key}");
            if !is_env_name(&var) {
                opm_guest::log::warn(&format!(
                    "{path}: envFrom {kind} {name:?}: {var:?} is not a variable name; it is left out, as the kubelet leaves it out"
                ));
                continue;
            }
            lines.push((var, bytes.clone()));
        }
    }
    for item in extension
        .get("env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (kind, name, found) = object(item);
        let var = item.get("name").and_then(Value::as_str).unwrap_or_default();
        let key = item.get("key").and_then(Value::as_str).unwrap_or_default();
        let optional = item
            .get("optional")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        match found.and_then(|keys| keys.get(key)) {
            Some(bytes) => lines.push((var.to_owned(), bytes.clone())),
            None if optional => {}
            None => {
                return Err(fail(format!(
                    "{var} reads key {key:?} of the {kind} {name:?}, which no component of the module renders with that key; render it, or mark the reference optional"
                )));
            }
        }
    }
    let mut body = Vec::new();
    for (var, bytes) in lines {
        let why = match std::str::from_utf8(&bytes) {
            Err(_) => Some("the value is bytes that are not text, which cannot be a variable"),
            Ok(text) if text.contains(['\n', '\r', '\0']) => {
                Some("the value holds a line break, which an EnvironmentFile cannot hold")
            }
            Ok(_) => None,
        };
        if let Some(why) = why {
            let message = format!(
                "{path}: {var}: {why}; the variable is left out (mount the key as a file instead)"
            );
            if strict {
                return Err(RenderError::Failed(format!(
                    "{message} (an error under --strict)"
                )));
            }
            opm_guest::log::warn(&message);
            continue;
        }
        body.extend_from_slice(var.as_bytes());
        body.push(b'=');
        body.extend_from_slice(&bytes);
        body.push(b'\n');
    }
    let file = extension
        .get("envFile")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mode = if file.starts_with(opm_quadlet_common::SECRET_DIR) {
        Mode::Private
    } else {
        Mode::Regular
    };
    Ok(File::new(file, vec![Chunk::Bytes(body)]).with_mode(mode))
}

/// Whether `name` is a variable name a container's environment takes (printable ASCII, no
/// `=`), as Kubernetes takes names.
fn is_env_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_graphic() && c != '=')
}

/// Warns of a bind mount of `./config/<object>` or `./secrets/<object>` whose object no
/// component renders: Podman would refuse to start the container.
fn check_files(
    path: &str,
    spec: &Value,
    configs: &BTreeMap<String, Object>,
    secrets: &BTreeMap<String, Object>,
) {
    let volumes = spec.get("Container").and_then(|c| c.get("Volume"));
    let values: Vec<&str> = match volumes {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        Some(Value::String(one)) => vec![one.as_str()],
        _ => Vec::new(),
    };
    for value in values {
        let value = value.trim_matches('"');
        for (dir, objects, kind) in [
            ("./config/", configs, "ConfigMap"),
            ("./secrets/", secrets, "Secret"),
        ] {
            if let Some(rest) = value.strip_prefix(dir) {
                let object = rest.split(['/', ':']).next().unwrap_or_default();
                if !objects.contains_key(object) {
                    opm_guest::log::warn(&format!(
                        "{path} mounts the {kind} {object:?}, which no component of the module renders: \
                         write {dir}{object}/ beside the units before starting it"
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
