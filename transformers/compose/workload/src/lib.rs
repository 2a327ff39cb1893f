//! The docker-compose provider's workload transformer: renders a component with a Container
//! (`stateless`, `stateful`, `daemon` or `job`, by its `core.opm.dev/workload-type` label) as
//! compose `Service` resources — the main container, its sidecars and init containers — and the
//! `Volume` resources of its named volumes. One component serves the provider's four workload
//! transformers: the label tells it which it is.
//!
//! | workload type | compose service |
//! |---|---|
//! | `stateless` | `deploy.replicas` (the Replicas trait, or Autoscaling's `minReplicas`), `restart: unless-stopped` |
//! | `stateful` | the same, with its PersistentStorage as named volumes |
//! | `daemon` | `deploy.mode: global`: one copy, on the one Docker engine |
//! | `job` | a one-shot service: `restart: "no"`, or `on-failure:<backoffLimit>` for RestartPolicy OnFailure (the default) |
//!
//! The pod's shape is in [`pod`], a container's fields in [`container`], the environment in
//! [`env`](mod@env), probes and hooks in [`probe`], Expose in [`ports`], volumes in [`volumes`] and the
//! security context in [`security`]. What compose cannot honour is a warning, or with
//! `--strict` an error (`opm_module_common::notes`). What would reach into the Docker host — a
//! `hostPath` bind mount, a privileged container, an added capability, the host's network — is
//! refused unless the component asks for host access with the label
//! `security.opm.dev/host-access: "true"` ([`host`]). Every string is written raw: the renderer
//! escapes the `$` of the whole file.
//!
//! A component waits for another one — a database to be healthy, a migration job to have
//! exited 0 — through an annotation on the waiting component: `depends-on.opm.dev/<component>`
//! with the value `started`, `healthy` or `completed` ([`pod::DEPENDS_ON_PREFIX`]). The
//! Kubernetes provider copies it onto the objects, where it changes nothing.

pub mod container;
pub mod env;
pub mod host;
pub mod pod;
pub mod ports;
pub mod probe;
pub mod security;
pub mod volumes;

use opm_guest::{Component, Context, TransformError, Transformer, Value};

/// Renders workloads as compose services.
pub struct WorkloadTransformer;

impl Transformer for WorkloadTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        pod::render(component, context)
    }
}

opm_guest::export!(WorkloadTransformer);

#[cfg(test)]
mod tests;
