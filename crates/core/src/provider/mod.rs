//! Providers: a manifest plus the WebAssembly components of its transformers
//! (`providers/README.md`).
//!
//! [`load`] takes what a user passes to `--provider`: a bundle file (`NAME-VERSION.opmb`,
//! `providers/README.md`), a provider source directory (a `provider.yaml` whose `component` paths
//! are relative to it: the transformer author's dev loop), or the name of the embedded default
//! provider (`kubernetes`, itself a bundle packed at build time).
//!
//! Loading trusts nothing, and compiles nothing: a bundle's structure and digests are checked by
//! [`bundle::read`](crate::bundle::read); then, whatever the source, the manifest is validated
//! ([`validate`]: FQNs, semver `version`, `minVersion` against this opm, limits) and every
//! component it names must be there. Components are checked when they are about to be used, and
//! only those: a render checks each component its plan calls ([`Provider::check_component`]: a
//! component, the right export, allowed imports) before the sandbox compiles it, and compiling
//! validates its code — once per component, as the compile cache keeps the result, and at build
//! time for the embedded providers. What installs, packs, signs, verifies or shows a provider
//! checks every component in full first ([`Provider::check_components`]).

pub mod catalog;
mod embedded;
pub mod installed;
pub mod manifest;
pub mod oci;
pub mod pack;
pub mod set;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::bundle::component::{self, ComponentError, ComponentInfo};
use crate::bundle::{self, Blob, BundleError};
pub use embedded::{EMBEDDED_ORIGIN, Embedded};
pub use manifest::{
    CatalogVersion, LimitsSpec, ProviderManifest, ProviderMetadata, RendererSpec, Requirements,
    TransformerSpec, Unhandled, Validation,
};
pub use set::{CallLimits, ProviderSet, SetError};

/// The name of the provider built into the `opm` binary.
pub const DEFAULT_PROVIDER: &str = "kubernetes";

/// The version of opm that a manifest's `minVersion` is compared with.
pub const OPM_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A loaded provider: its manifest and the bytes of every transformer's component.
#[derive(Debug, Clone)]
pub struct Provider {
    /// The parsed manifest.
    pub manifest: ProviderManifest,
    /// Component bytes keyed by transformer FQN.
    pub components: BTreeMap<String, Blob>,
    /// Where it came from, for messages (`embedded:kubernetes`, a path).
    pub origin: String,
    /// The bundle digest (`blake3:<hex>` of the canonical manifest), when loaded from a bundle.
    pub digest: Option<String>,
    /// The renderer's component, when the provider has one.
    pub renderer: Option<Blob>,
}

/// What [`Provider::check_components`] found: every component's size, imports, exports and
/// producers.
#[derive(Debug, Clone, Default)]
pub struct ComponentInfos {
    /// Per transformer FQN.
    pub transformers: BTreeMap<String, ComponentInfo>,
    /// The renderer's, when the provider has one.
    pub renderer: Option<ComponentInfo>,
}

impl Provider {
    /// Checks every component in full, function bodies validated: what installing, packing,
    /// signing, verifying or inspecting a provider does before anything else.
    pub fn check_components(&self) -> Result<ComponentInfos, ProviderError> {
        let mut infos = ComponentInfos::default();
        for (fqn, bytes) in &self.components {
            let info =
                component::check(bytes).map_err(|reason| self.component_error(fqn, reason))?;
            infos.transformers.insert(fqn.clone(), info);
        }
        if let Some(bytes) = &self.renderer {
            let info = component::check_renderer(bytes)
                .map_err(|reason| self.component_error(RENDERER, reason))?;
            infos.renderer = Some(info);
        }
        Ok(infos)
    }

    /// Checks the component of the transformer `fqn` — or of the renderer, for [`RENDERER`] —
    /// as a render does before compiling it: native code, a core module, the export and its
    /// signature, the imports. Not its function bodies: compiling validates those (once per
    /// component: the compile cache keeps what it compiled, and the embedded providers' code was
    /// compiled when opm was built).
    pub fn check_component(&self, fqn: &str) -> Result<(), ProviderError> {
        let checked = if fqn == RENDERER {
            self.renderer
                .as_deref()
                .map(component::check_renderer_structure)
        } else {
            self.components
                .get(fqn)
                .map(|bytes| component::check_structure(bytes))
        };
        match checked {
            Some(Err(reason)) => Err(self.component_error(fqn, reason)),
            _ => Ok(()),
        }
    }

    fn component_error(&self, fqn: &str, reason: ComponentError) -> ProviderError {
        let component = if fqn == RENDERER {
            self.manifest.renderer.as_ref().map(|spec| &spec.component)
        } else {
            self.manifest
                .transformers
                .get(fqn)
                .map(|spec| &spec.component)
        };
        ProviderError::Component {
            origin: self.origin.clone(),
            transformer: fqn.to_owned(),
            component: component.cloned().unwrap_or_default(),
            reason,
        }
    }
}

/// The name messages give a provider's renderer where they would name a transformer.
pub const RENDERER: &str = "renderer";

/// Why a provider could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The reference is neither the embedded provider's name nor an existing path.
    #[error(
        "unknown provider {0:?}: pass a bundle file (.opmb), a provider source directory, or omit --provider for the embedded \"{DEFAULT_PROVIDER}\" provider"
    )]
    Unknown(String),
    /// A file of the provider could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The manifest is not a valid `provider.yaml`.
    #[error("invalid provider manifest {origin}: {message}")]
    Manifest {
        /// The manifest's path or the embedded provider's name.
        origin: String,
        /// What is wrong, with line and column.
        message: String,
    },
    /// A transformer names a component the provider does not hold.
    #[error(
        "provider {origin}: transformer {transformer} names component {component:?}, which is not in the provider"
    )]
    MissingComponent {
        /// The provider.
        origin: String,
        /// The transformer FQN.
        transformer: String,
        /// The component path it names.
        component: String,
    },
    /// A bundle was refused.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// A transformer's component is not one opm runs.
    #[error("provider {origin}: transformer {transformer}: component {component}: {reason}")]
    Component {
        /// The provider.
        origin: String,
        /// The transformer FQN.
        transformer: String,
        /// The component's path or bundle entry.
        component: String,
        /// What is wrong with it.
        reason: ComponentError,
    },
    /// The provider needs a newer opm.
    #[error("provider {origin} needs opm {needs} or newer (minVersion); this is opm {OPM_VERSION}")]
    TooNew {
        /// The provider.
        origin: String,
        /// Its `minVersion`.
        needs: String,
    },
}

/// Loads the provider `reference` names: a bundle file, a source directory, or the name of one
/// of the `embedded` providers (`kubernetes`, `docker-compose`, `quadlet`).
pub fn load(reference: &str, embedded: &Embedded) -> Result<Provider, ProviderError> {
    let path = Path::new(reference);
    if path.is_dir() {
        return load_dir(path);
    }
    if path.is_file() {
        return load_bundle_file(path);
    }
    if embedded.bundle_of(reference).is_some() {
        return embedded.load_named(reference);
    }
    Err(ProviderError::Unknown(reference.to_owned()))
}

/// Loads the provider `reference` as a command in `cwd` means it: a path as [`load`] takes it;
/// else, when the project around `cwd` (`.opm/providers.yaml`, [`installed`]) uses a provider of
/// that name, exactly its locked, installed bytes; else the embedded provider of that name.
/// `env` is where the directories trusted though others own them are read
/// ([`installed::SAFE_DIRECTORIES`]).
pub fn load_in(
    reference: &str,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    embedded: &Embedded,
) -> Result<Provider, installed::InstallError> {
    if !Path::new(reference).exists()
        && let Some(root) = installed::find(cwd, env)?
    {
        let project = installed::Project::load(&root)?;
        if project.requirement(reference).is_some() {
            return installed::load_locked(&project, &project.lock()?, reference);
        }
    }
    Ok(load(reference, embedded)?)
}

/// Loads the providers of a render of the module at `module` (a file, or a directory holding
/// `module.yaml`): each of `references` as [`load_in`] loads it; with no reference, every
/// provider the module's project names (`.opm/providers.yaml`, in its order), exactly as
/// locked; with no project either, the default of the `embedded` ones. The project is looked for from the
/// module's directory upward, as git looks for `.git`, so a module renders with its project's
/// providers from any working directory. The renderer is the one `renderer` names, else the
/// one the project's `renderer` names, else the one the rule of [`ProviderSet`] finds.
pub fn load_set(
    references: &[String],
    module: &Path,
    renderer: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    embedded: &Embedded,
) -> Result<ProviderSet, installed::InstallError> {
    let start = project_start(module);
    let project = match installed::find(&start, env)? {
        Some(root) => Some(installed::Project::load(&root)?),
        None => None,
    };
    let providers = if references.is_empty() {
        match &project {
            Some(project) => {
                let lock = project.lock()?;
                project
                    .config
                    .providers
                    .iter()
                    .map(|requirement| installed::load_locked(project, &lock, &requirement.name))
                    .collect::<Result<Vec<_>, _>>()?
            }
            None => vec![embedded.load()?],
        }
    } else {
        references
            .iter()
            .map(|reference| load_in(reference, &start, env, embedded))
            .collect::<Result<Vec<_>, _>>()?
    };
    // The project's choice holds for the project's providers; with providers named on the
    // command line, only the command line's.
    let project_renderer = project
        .as_ref()
        .filter(|_| references.is_empty())
        .and_then(|project| project.config.renderer.as_deref());
    Ok(ProviderSet::with_renderer(
        providers,
        renderer.or(project_renderer),
    )?)
}

/// Where the project of the module at `module` is looked for from: the module's directory (or
/// the directory given as the module), made absolute so that the search goes past the working
/// directory.
pub fn project_start(module: &Path) -> PathBuf {
    let dir = if module.is_dir() {
        module
    } else {
        module.parent().unwrap_or(Path::new(""))
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    std::fs::canonicalize(dir)
        .or_else(|_| std::path::absolute(dir))
        .unwrap_or_else(|_| dir.to_owned())
}

/// Loads the bundle file at `path`.
pub fn load_bundle_file(path: &Path) -> Result<Provider, ProviderError> {
    let bundle = bundle::read_file(path)?;
    from_bundle(path.display().to_string(), bundle)
}

/// Turns a bundle whose structure and digests were checked into a provider: parses and validates
/// its manifest and finds each component it names (checked where used, see the module's doc).
pub fn from_bundle(origin: String, bundle: bundle::Bundle) -> Result<Provider, ProviderError> {
    provider_of(origin, bundle, true)
}

/// The provider `bundle` holds, its manifest validated if `validate`.
fn provider_of(
    origin: String,
    bundle: bundle::Bundle,
    validate: bool,
) -> Result<Provider, ProviderError> {
    let manifest: ProviderManifest =
        serde_json::from_slice(&bundle.manifest).map_err(|e| ProviderError::Manifest {
            origin: origin.clone(),
            message: e.to_string(),
        })?;
    let fetch = |component: &str| {
        bundle
            .components
            .get(component)
            .map(|bytes| Ok(bytes.clone()))
    };
    let mut provider = if validate {
        assemble(origin, manifest, fetch)?
    } else {
        assemble_checked(origin, manifest, fetch)?
    };
    provider.digest = Some(bundle.digest);
    Ok(provider)
}

/// [`from_bundle`], then every component checked in full ([`Provider::check_components`]): what
/// installing, pulling, pushing, signing, verifying and exporting a bundle load.
pub fn from_bundle_checked(
    origin: String,
    bundle: bundle::Bundle,
) -> Result<Provider, ProviderError> {
    let provider = from_bundle(origin, bundle)?;
    provider.check_components()?;
    Ok(provider)
}

/// Loads a provider source directory: `DIR/provider.yaml` plus the components it names, each
/// read as [`read_inside`] reads a file.
pub fn load_dir(dir: &Path) -> Result<Provider, ProviderError> {
    let (origin, manifest) = read_manifest(dir)?;
    assemble(origin, manifest, |component| {
        match read_inside(dir, component, bundle::format::MAX_COMPONENT_BYTES) {
            Err(ProviderError::Read { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                None
            }
            read => Some(read.map(Blob::from)),
        }
    })
}

/// The bytes of the file a provider manifest in `dir` names `relative`: a relative path of
/// plain segments (no `..`, nothing absolute) that stays inside `dir` when links are followed,
/// naming a regular file (not a device, a FIFO or a folder) of at most `most` bytes. A manifest
/// reads only what is its own, and never makes opm wait on or exhaust itself on a special file.
pub fn read_inside(dir: &Path, relative: &str, most: u64) -> Result<Vec<u8>, ProviderError> {
    use std::io::Read as _;
    let path = dir.join(relative);
    let refuse = |why: &str| ProviderError::Read {
        path: path.clone(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, why.to_owned()),
    };
    let plain = !relative.is_empty()
        && Path::new(relative)
            .components()
            .all(|part| matches!(part, std::path::Component::Normal(_)));
    if !plain {
        return Err(refuse(
            "a path in a provider manifest must be relative and inside the provider's directory \
             (no absolute path, no `..`)",
        ));
    }
    let io = |source: std::io::Error| ProviderError::Read {
        path: path.clone(),
        source,
    };
    let real = std::fs::canonicalize(&path).map_err(io)?;
    let real_dir = std::fs::canonicalize(dir).map_err(io)?;
    if !real.starts_with(&real_dir) {
        return Err(refuse(
            "it leads out of the provider's directory through a symbolic link",
        ));
    }
    let mut file = std::fs::File::open(&real).map_err(io)?;
    let metadata = file.metadata().map_err(io)?;
    if !metadata.is_file() {
        return Err(refuse("it is not a regular file"));
    }
    if metadata.len() > most {
        return Err(refuse(&format!(
            "it is {} bytes, over the limit of {most} bytes",
            metadata.len()
        )));
    }
    let mut bytes = Vec::new();
    file.by_ref()
        .take(most + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > most {
        return Err(refuse(&format!("it is over the limit of {most} bytes")));
    }
    Ok(bytes)
}

/// `DIR/provider.yaml`, parsed (not yet validated), and its path as messages name it.
pub fn read_manifest(dir: &Path) -> Result<(String, ProviderManifest), ProviderError> {
    let (origin, _, manifest) = read_source_manifest(dir)?;
    Ok((origin, manifest))
}

/// `DIR/provider.yaml` as messages name it, as JSON (what `opm provider pack` packs) and parsed
/// (not yet validated), with the definitions of the catalog its `definitionsFrom` names (a path
/// relative to `DIR`) taken in: the shared vocabulary of several providers
/// (`providers/catalog/`). A definition both name is an error.
pub fn read_source_manifest(
    dir: &Path,
) -> Result<(String, serde_json::Value, ProviderManifest), ProviderError> {
    let manifest_path = dir.join("provider.yaml");
    let origin = manifest_path.display().to_string();
    let invalid = |message: String| ProviderError::Manifest {
        origin: origin.clone(),
        message,
    };
    let bytes = read_inside(dir, "provider.yaml", bundle::format::MAX_MANIFEST_BYTES)?;
    let text = std::str::from_utf8(&bytes).map_err(|e| invalid(format!("not UTF-8: {e}")))?;
    let mut raw: serde_json::Value =
        serde_saphyr::from_str(text).map_err(|e| invalid(crate::yaml::message(&e)))?;
    let Some(from) = raw
        .as_object_mut()
        .and_then(|m| m.remove("definitionsFrom"))
    else {
        // Parsed from the text, so that an error has its line and column.
        return Ok((origin.clone(), raw, parse_manifest(&origin, &bytes)?));
    };
    let from = from
        .as_str()
        .ok_or_else(|| invalid("definitionsFrom is not a path".into()))?;
    let catalog_path = dir.join(from);
    let catalog_bytes = read_inside(dir, from, bundle::format::MAX_MANIFEST_BYTES)?;
    // What the file holds is never quoted: a manifest may name any file of its directory, and
    // the error lands in CI logs.
    let catalog_text = std::str::from_utf8(&catalog_bytes)
        .map_err(|_| invalid(format!("{}: not UTF-8", catalog_path.display())))?;
    let catalog: serde_json::Value = serde_saphyr::from_str(catalog_text).map_err(|e| {
        let at = e
            .location()
            .map(|at| format!(" (at line {}, column {})", at.line(), at.column()))
            .unwrap_or_default();
        invalid(format!(
            "definitionsFrom {}: not a YAML catalog of definitions{at}",
            catalog_path.display()
        ))
    })?;
    bundle::format::take_definitions(&mut raw, catalog)
        .map_err(|e| invalid(format!("definitionsFrom {from}: {e}")))?;
    let manifest = serde_json::from_value(raw.clone()).map_err(|e| invalid(e.to_string()))?;
    Ok((origin, raw, manifest))
}

/// Validates a manifest and fetches each transformer's component with `fetch`, which returns
/// `None` for a component the provider does not hold. The components are checked where they are
/// used ([`Provider::check_component`], [`Provider::check_components`]).
fn assemble(
    origin: String,
    manifest: ProviderManifest,
    fetch: impl FnMut(&str) -> Option<Result<Blob, ProviderError>>,
) -> Result<Provider, ProviderError> {
    validate(&origin, &manifest)?;
    assemble_checked(origin, manifest, fetch)
}

/// [`assemble`] of a manifest already validated.
fn assemble_checked(
    origin: String,
    manifest: ProviderManifest,
    mut fetch: impl FnMut(&str) -> Option<Result<Blob, ProviderError>>,
) -> Result<Provider, ProviderError> {
    let mut components = BTreeMap::new();
    for (fqn, transformer) in &manifest.transformers {
        let bytes =
            fetch(&transformer.component).ok_or_else(|| ProviderError::MissingComponent {
                origin: origin.clone(),
                transformer: fqn.clone(),
                component: transformer.component.clone(),
            })??;
        components.insert(fqn.clone(), bytes);
    }
    let renderer = match &manifest.renderer {
        Some(spec) => {
            Some(
                fetch(&spec.component).ok_or_else(|| ProviderError::MissingComponent {
                    origin: origin.clone(),
                    transformer: RENDERER.into(),
                    component: spec.component.clone(),
                })??,
            )
        }
        None => None,
    };
    Ok(Provider {
        manifest,
        components,
        origin,
        digest: None,
        renderer,
    })
}

/// Checks what the manifest's types do not: `apiVersion` and `kind`, FQN keys and requirement
/// lists, semver `version` and `minVersion` (which must not be newer than this opm), and the
/// units of `limits`.
pub fn validate(origin: &str, manifest: &ProviderManifest) -> Result<(), ProviderError> {
    let invalid = |message: String| ProviderError::Manifest {
        origin: origin.to_owned(),
        message,
    };
    manifest.check().map_err(invalid)?;
    if let Some(min) = &manifest.metadata.min_version {
        let needs = semver::Version::parse(min).map_err(|e| {
            invalid(format!(
                "metadata.minVersion {min:?} is not a semantic version: {e}"
            ))
        })?;
        let have = semver::Version::parse(OPM_VERSION).expect("the crate version is semver");
        if needs > have {
            return Err(ProviderError::TooNew {
                origin: origin.to_owned(),
                needs: min.clone(),
            });
        }
    }
    Ok(())
}

/// Parses `provider.yaml` text.
pub fn parse_manifest(origin: &str, bytes: &[u8]) -> Result<ProviderManifest, ProviderError> {
    let invalid = |message: String| ProviderError::Manifest {
        origin: origin.to_owned(),
        message,
    };
    let text = std::str::from_utf8(bytes).map_err(|e| invalid(format!("not UTF-8: {e}")))?;
    serde_saphyr::from_str(text).map_err(|e| invalid(crate::yaml::message(&e)))
}
