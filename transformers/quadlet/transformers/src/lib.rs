//! The quadlet provider's transformers, all in one component (`quadlet_transformers.wasm`):
//! every transformer entry of `providers/quadlet/provider.yaml` names it, and each call's
//! context says which entry called (`Context::transformer`, contract 1.1.0), so one component
//! serves every role — one compile, one cache entry — where a component that cannot tell would
//! be one per role.
//!
//! | transformer (after `#`) | renders |
//! |---|---|
//! | `StatelessTransformer`, `StatefulTransformer`, `DaemonTransformer` | a `.container` that runs until stopped ([`workload`]) |
//! | `JobTransformer` | a oneshot `.container` |
//! | `CronJobTransformer` | a oneshot `.container` and a `.timer` ([`cron`]) |
//! | `ConfigTransformer`, `SecretTransformer` | a `ConfigMap` or `Secret` resource in the Kubernetes object's shape, whose keys the renderer writes as files |
//!
//! A host of contract 1.0.0 names no transformer: the component is then read by what it holds
//! (a Container by its workload-type label, else a ConfigMap, else a Secret).

pub mod container;
pub mod cron;
pub mod volumes;
pub mod workload;

use opm_guest::{Component, Context, TransformError, Transformer, Value};
use opm_quadlet_common::{CONFIG_MAP, SECRET, WORKLOAD_TYPE_LABEL, data};

/// The roles of the component, one per transformer entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A workload of this type.
    Workload(workload::Kind),
    /// ConfigMap files.
    Config,
    /// Secret files.
    Secret,
}

impl Role {
    /// The role of the transformer `fqn` (`transformer.opm.dev/quadlet@v1#JobTransformer`), or
    /// for an empty one (a 1.0.0 host) the role `component` fits.
    pub fn of(fqn: &str, component: &Component) -> Result<Self, TransformError> {
        use workload::Kind;
        let name = fqn.rsplit_once('#').map_or(fqn, |(_, name)| name);
        Ok(match name {
            "StatelessTransformer" => Self::Workload(Kind::Stateless),
            "StatefulTransformer" => Self::Workload(Kind::Stateful),
            "DaemonTransformer" => Self::Workload(Kind::Daemon),
            "JobTransformer" => Self::Workload(Kind::Job),
            "CronJobTransformer" => Self::Workload(Kind::CronJob),
            "ConfigTransformer" => Self::Config,
            "SecretTransformer" => Self::Secret,
            "" if component.spec().contains_key("container") => {
                Self::Workload(Kind::of_label(component.label(WORKLOAD_TYPE_LABEL))?)
            }
            "" if component.spec().contains_key("configMap") => Self::Config,
            "" if component.spec().contains_key("secret") => Self::Secret,
            _ => {
                return Err(TransformError::invalid(format!(
                    "quadlet_transformers.wasm serves the quadlet provider's transformers, not \
                     {fqn:?}: name it only from the entries of providers/quadlet/provider.yaml"
                )));
            }
        })
    }
}

/// Renders a component for Podman Quadlet, in the role the context names.
pub struct QuadletTransformers;

impl Transformer for QuadletTransformers {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        match Role::of(&context.transformer, component)? {
            Role::Workload(kind) => workload::render(component, context, kind),
            Role::Config => data::object(component, context, CONFIG_MAP, "configMap"),
            Role::Secret => data::object(component, context, SECRET, "secret"),
        }
    }
}

opm_guest::export!(QuadletTransformers);

#[cfg(test)]
mod tests;
