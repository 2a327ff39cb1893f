//! Several providers in one render: the standard one plus a team's own (`-p kubernetes -p acme`,
//! or every provider a project's `.opm/providers.yaml` names).
//!
//! A [`ProviderSet`] is the providers in the order given, each loaded, verified and (for an
//! installed one) signature-checked exactly as alone. Building one refuses what cannot be
//! rendered together: a provider named twice, one transformer FQN in two providers, two
//! providers for different platforms (their `core.opm.dev/format` labels differ; a provider that
//! ships only a renderer states none), and two providers with different renderers.
//!
//! A render has exactly one renderer, chosen by one rule ([`ProviderSet::renderer`]): the one
//! named (`--renderer NAME`, or `renderer: NAME` in `.opm/providers.yaml`), else the one the
//! providers with transformers ship. A provider that ships only a renderer sees every resource
//! of every provider and writes the files, so beside other providers it is used only when it is
//! named: unnamed, the set is refused ([`SetError::UnchosenRenderer`]). Definitions
//! are merged by the plan, which reports one FQN defined differently by two providers as an
//! error naming both (`definitions::Catalog::build`). Each provider's `limits` apply to its own
//! transformers' calls ([`ProviderSet::limits`]).

use std::collections::BTreeMap;

use super::{Provider, ProviderManifest};
use crate::calls::{Caps, Limits};

/// The label by which a provider says which platform its output is for.
pub const FORMAT_LABEL: &str = "core.opm.dev/format";

/// The providers of one render, in the order given.
#[derive(Debug, Clone)]
pub struct ProviderSet {
    providers: Vec<Provider>,
    /// Transformer FQN → index of the provider that holds it.
    owners: BTreeMap<String, usize>,
    /// The provider named to write the render's files, by index.
    chosen: Option<usize>,
}

/// Why providers cannot be used together.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SetError {
    /// No provider at all.
    #[error("no provider to render with")]
    Empty,
    /// One provider given twice.
    #[error("provider {name} is given twice ({first} and {second})")]
    Twice {
        /// Its name.
        name: String,
        /// Where the first came from.
        first: String,
        /// Where the second came from.
        second: String,
    },
    /// Two providers hold the same transformer.
    #[error(
        "transformer {fqn} is in provider {first} ({first_origin}) and in provider {second} \
         ({second_origin}); a render can use only one of them: leave one provider out, or \
         rename the transformer in your own"
    )]
    Transformer {
        /// The FQN.
        fqn: String,
        /// The first provider's name.
        first: String,
        /// Where it came from.
        first_origin: String,
        /// The second provider's name.
        second: String,
        /// Where it came from.
        second_origin: String,
    },
    /// Two providers ship different renderers.
    #[error(
        "providers {first} and {second} each ship a renderer, and they differ: one render \
         writes its files with one renderer, so leave the renderer out of one of them"
    )]
    Renderers {
        /// The first provider's name.
        first: String,
        /// The second provider's name.
        second: String,
    },
    /// A provider that ships only a renderer, beside others, and not named to write the files.
    #[error(
        "provider {provider} ({origin}) ships only a renderer, which would see every resource \
         of the render and write its files in place of {replaces}: name it to use it \
         (--renderer {provider}, or `renderer: {provider}` in .opm/providers.yaml), or leave \
         it out"
    )]
    UnchosenRenderer {
        /// The renderer-only provider.
        provider: String,
        /// Where it came from.
        origin: String,
        /// Whose renderer it would replace (`provider kubernetes's renderer`).
        replaces: String,
    },
    /// The renderer named is not a provider of the set, or ships no renderer.
    #[error("--renderer {name}: {why}")]
    NoSuchRenderer {
        /// The name given.
        name: String,
        /// What is wrong (no such provider among `…`; it ships no renderer).
        why: String,
    },
    /// Two providers target different platforms.
    #[error(
        "provider {first} renders for {first_format} and provider {second} for {second_format} \
         (their {FORMAT_LABEL} labels): one render targets one platform"
    )]
    Platform {
        /// The first provider's name.
        first: String,
        /// Its format.
        first_format: String,
        /// The second provider's name.
        second: String,
        /// Its format.
        second_format: String,
    },
}

impl ProviderSet {
    /// The providers, in the order given, once they are known to fit together, with no renderer
    /// named.
    pub fn new(providers: Vec<Provider>) -> Result<Self, SetError> {
        Self::with_renderer(providers, None)
    }

    /// The providers, in the order given, once they are known to fit together; the renderer
    /// of the provider `renderer` names writes the files, when it names one.
    pub fn with_renderer(
        providers: Vec<Provider>,
        renderer: Option<&str>,
    ) -> Result<Self, SetError> {
        if providers.is_empty() {
            return Err(SetError::Empty);
        }
        let mut owners: BTreeMap<String, usize> = BTreeMap::new();
        for (index, provider) in providers.iter().enumerate() {
            let name = &provider.manifest.metadata.name;
            if let Some(first) = providers[..index]
                .iter()
                .find(|p| &p.manifest.metadata.name == name)
            {
                return Err(SetError::Twice {
                    name: name.clone(),
                    first: first.origin.clone(),
                    second: provider.origin.clone(),
                });
            }
            if let Some(this) = platform_of(provider)
                && let Some(other) = providers[..index]
                    .iter()
                    .find(|p| platform_of(p).is_some_and(|f| f != this))
            {
                return Err(SetError::Platform {
                    first: other.manifest.metadata.name.clone(),
                    first_format: format_of(other).to_owned(),
                    second: name.clone(),
                    second_format: this.to_owned(),
                });
            }
            for fqn in provider.manifest.transformers.keys() {
                if let Some(&first) = owners.get(fqn) {
                    let first = &providers[first];
                    return Err(SetError::Transformer {
                        fqn: fqn.clone(),
                        first: first.manifest.metadata.name.clone(),
                        first_origin: first.origin.clone(),
                        second: name.clone(),
                        second_origin: provider.origin.clone(),
                    });
                }
                owners.insert(fqn.clone(), index);
            }
        }
        if let Some(name) = renderer {
            let names = || {
                providers
                    .iter()
                    .map(|p| p.manifest.metadata.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let Some(index) = providers
                .iter()
                .position(|p| p.manifest.metadata.name == name)
            else {
                return Err(SetError::NoSuchRenderer {
                    name: name.to_owned(),
                    why: format!("no provider of this render is called so ({})", names()),
                });
            };
            if providers[index].renderer.is_none() {
                return Err(SetError::NoSuchRenderer {
                    name: name.to_owned(),
                    why: format!("provider {name} ships no renderer"),
                });
            }
            return Ok(Self {
                providers,
                owners,
                chosen: Some(index),
            });
        }
        // Unnamed, the renderer is the one the providers with transformers ship. One that ships
        // only a renderer would write the others' objects, secrets included: beside others it
        // is used only when it is named.
        if providers.len() > 1
            && let Some(only) = providers.iter().find(|p| is_renderer_only(p))
        {
            let replaces = providers
                .iter()
                .find(|p| !is_renderer_only(p) && p.renderer.is_some())
                .map_or_else(
                    || "the embedded renderer of the platform".to_owned(),
                    |p| format!("provider {}'s renderer", p.manifest.metadata.name),
                );
            return Err(SetError::UnchosenRenderer {
                provider: only.manifest.metadata.name.clone(),
                origin: only.origin.clone(),
                replaces,
            });
        }
        let mut renderers = providers
            .iter()
            .filter_map(|p| Some((p, p.manifest.renderer.as_ref()?.digest.as_deref())));
        if let Some((first, digest)) = renderers.next()
            && let Some((second, _)) =
                renderers.find(|(_, other)| *other != digest || digest.is_none())
        {
            return Err(SetError::Renderers {
                first: first.manifest.metadata.name.clone(),
                second: second.manifest.metadata.name.clone(),
            });
        }
        Ok(Self {
            providers,
            owners,
            chosen: None,
        })
    }

    /// The provider whose renderer writes this set's files: the one named, else the one
    /// provider of the set that ships a renderer (providers that ship the same one count as
    /// one), if any.
    pub fn renderer(&self) -> Option<&Provider> {
        match self.chosen {
            Some(index) => Some(&self.providers[index]),
            None => self.providers.iter().find(|p| p.renderer.is_some()),
        }
    }

    /// Whether the renderer was named rather than found.
    pub fn renderer_named(&self) -> bool {
        self.chosen.is_some()
    }

    /// The platform the set renders for, when one of its providers states it: what its
    /// transformers produce (a provider that ships only a renderer writes that platform's
    /// objects in a form of its own).
    pub fn format(&self) -> Option<&str> {
        self.providers.iter().find_map(platform_of)
    }

    /// One provider alone.
    pub fn single(provider: Provider) -> Self {
        Self::new(vec![provider]).expect("one provider always fits with itself")
    }

    /// The providers, in the order given.
    pub fn providers(&self) -> &[Provider] {
        &self.providers
    }

    /// Their manifests, in the order given: what the plan matches against.
    pub fn manifests(&self) -> Vec<&ProviderManifest> {
        self.providers.iter().map(|p| &p.manifest).collect()
    }

    /// The providers' names, in the order given, separated by ", ".
    pub fn name(&self) -> String {
        self.providers
            .iter()
            .map(|p| p.manifest.metadata.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The provider holding the transformer `fqn`.
    pub fn provider_of(&self, fqn: &str) -> Option<&Provider> {
        self.owners.get(fqn).map(|&index| &self.providers[index])
    }

    /// The component of the transformer `fqn`.
    pub fn component(&self, fqn: &str) -> Option<&crate::bundle::Blob> {
        self.provider_of(fqn)?.components.get(fqn)
    }

    /// The limits of each provider's calls, by provider name: what it asks for, never more than
    /// `caps`.
    pub fn limits(&self, caps: &Caps) -> Result<CallLimits, String> {
        let mut by_provider = BTreeMap::new();
        for provider in &self.providers {
            let limits = provider
                .manifest
                .limits
                .limits(caps)
                .map_err(|e| format!("provider {}: {e}", provider.origin))?;
            by_provider.insert(provider.manifest.metadata.name.clone(), limits);
        }
        let default = super::LimitsSpec::default()
            .limits(caps)
            .expect("the host's default limits parse");
        Ok(CallLimits {
            default,
            by_provider,
        })
    }
}

/// A provider's platform, when it states one.
fn format(manifest: &ProviderManifest) -> Option<&str> {
    manifest
        .metadata
        .labels
        .get(FORMAT_LABEL)
        .map(String::as_str)
}

/// Whether `provider` ships a renderer and no transformer: it writes other providers' objects.
fn is_renderer_only(provider: &Provider) -> bool {
    provider.renderer.is_some() && provider.manifest.transformers.is_empty()
}

/// The platform of the objects `provider`'s transformers produce; none for a provider that
/// ships only a renderer.
fn platform_of(provider: &Provider) -> Option<&str> {
    if is_renderer_only(provider) {
        None
    } else {
        format(&provider.manifest)
    }
}

fn format_of(provider: &Provider) -> &str {
    format(&provider.manifest).unwrap_or_default()
}

/// The limits of a render's calls: each provider's for its own transformers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallLimits {
    /// For a call whose provider is not among `by_provider` (a render through another runner).
    default: Limits,
    by_provider: BTreeMap<String, Limits>,
}

impl CallLimits {
    /// The limits of the calls of the provider `name`.
    pub fn of(&self, provider: &str) -> &Limits {
        self.by_provider.get(provider).unwrap_or(&self.default)
    }

    /// What the sandbox must allow for any of these calls: the most memory any provider asks
    /// (the default limits when no provider is named).
    pub fn ceiling(&self) -> Limits {
        let mut limits = self.by_provider.values();
        let Some(first) = limits.next() else {
            return self.default;
        };
        let mut ceiling = *first;
        for limits in limits {
            ceiling.memory = ceiling.memory.max(limits.memory);
        }
        ceiling
    }
}

impl From<Limits> for CallLimits {
    /// The same limits for every call.
    fn from(limits: Limits) -> Self {
        Self {
            default: limits,
            by_provider: BTreeMap::new(),
        }
    }
}
