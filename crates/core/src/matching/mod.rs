//! Matching components to transformers (`docs/matching.md`), natively, before any WebAssembly runs.
//!
//! [`plan`] takes a loaded [`Module`](crate::module::Module) and a provider manifest and returns a
//! [`Plan`]: for every component its effective labels, the transformers that match and why, the
//! ones that do not and exactly what is missing, what no match handles, and every error and
//! warning; plus the [`Call`]s to run, each with the JSON its transformer receives
//! (`docs/module-format.md#what-a-transformer-receives`).
//!
//! - [`engine`] is the algorithm, one named phase after another;
//! - `flatten` turns a component into the JSON a transformer receives;
//! - [`plan`](mod@plan) holds the plan's types and its problems;
//! - [`text`] prints a plan as text for `opm mod vet` and `--verbose`.
//!
//! ```
//! use opm_core::{matching, module, provider::ProviderManifest};
//!
//! let manifest: ProviderManifest = serde_saphyr::from_str(r#"
//! apiVersion: core.opm.dev/v1
//! kind: Provider
//! metadata: {name: demo, version: 1.0.0}
//! definitions:
//!   opm.dev/resources/workload@v1#Container:
//!     kind: Resource
//!     labels: {core.opm.dev/workload-type: stateless}
//!     schema: {type: object, required: [image]}
//! transformers:
//!   transformer.opm.dev/workload@v1#DeploymentTransformer:
//!     requiredLabels: {core.opm.dev/workload-type: stateless}
//!     requiredResources: [opm.dev/resources/workload@v1#Container]
//!     component: deployment.wasm
//! "#).unwrap();
//! let module = module::from_str(r#"
//! apiVersion: core.opm.dev/v1
//! kind: Module
//! metadata: {name: shop, version: 1.0.0}
//! components:
//!   api: {resources: {Container: {image: nginx}}}
//! "#, "module.yaml").unwrap();
//!
//! let plan = matching::plan(&module, &manifest, false);
//! assert!(plan.is_ok());
//! let call = plan.calls().next().unwrap();
//! assert_eq!(call.transformer, "transformer.opm.dev/workload@v1#DeploymentTransformer");
//! assert_eq!(call.input_value()["spec"]["container"]["image"], "nginx");
//! assert_eq!(call.input_value()["metadata"]["labels"]["core.opm.dev/workload-type"], "stateless");
//! ```

pub mod engine;
mod flatten;
pub mod plan;
pub mod text;

pub use crate::provider::Requirements;
pub use engine::{Explain, declared, plan, plan_providers, plan_providers_recalling, plan_with};
pub use plan::{
    Call, Candidate, ComponentPlan, Declared, EffectiveLabel, LabelClaim, LabelSource, LeftOut,
    Matched, Missing, Plan, PlanConfig, PlanPatch, PlanProvider, PlanRenderer, Problem, Reason,
    Unmatched, describe_requirements,
};

#[cfg(test)]
mod tests;
