//! The rules of `docs/matching.md` as tests: every acceptance criterion (`ac01_…` to `ac18_…`),
//! edge cases and bad input (`edge`), and order independence (`props`).
//!
//! The provider is `testdata/provider/provider.yaml`, a Kubernetes-like provider with workload,
//! Service, storage, config and network-policy transformers.

mod ac;
mod edge;
mod props;

use crate::matching::{self, Plan};
use crate::module::{self, Module};
use crate::provider::ProviderManifest;

pub(super) const PROVIDER: &str = include_str!("../testdata/provider/provider.yaml");

pub(super) const DEPLOYMENT: &str = "transformer.opm.dev/workload@v1#DeploymentTransformer";
pub(super) const STATEFULSET: &str = "transformer.opm.dev/workload@v1#StatefulSetTransformer";
pub(super) const SERVICE: &str = "transformer.opm.dev/network@v1#ServiceTransformer";
pub(super) const CONTAINER: &str = "opm.dev/resources/workload@v1#Container";
pub(super) const EXPOSE: &str = "opm.dev/traits/network@v1#Expose";
pub(super) const REPLICAS: &str = "opm.dev/traits/scaling@v1#Replicas";
pub(super) const WORKLOAD_TYPE: &str = "core.opm.dev/workload-type";

pub(super) fn provider() -> ProviderManifest {
    manifest(PROVIDER)
}

pub(super) fn manifest(text: &str) -> ProviderManifest {
    serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("test provider does not parse: {e}"))
}

/// A module named `shop` whose `components:` section is `components` (indented by two).
pub(super) fn module(components: &str) -> Module {
    module_with(components, "")
}

/// Like [`module`], with `extra` appended at the top level (e.g. `definitions:`).
pub(super) fn module_with(components: &str, extra: &str) -> Module {
    let text = format!(
        "apiVersion: core.opm.dev/v1\nkind: Module\nmetadata: {{name: shop, version: 1.0.0}}\ncomponents:\n{components}{extra}"
    );
    module::from_str(&text, "module.yaml")
        .unwrap_or_else(|e| panic!("test module does not load: {e}"))
}

pub(super) fn plan_of(components: &str) -> Plan {
    matching::plan(&module(components), &provider(), false)
}

pub(super) fn matched(plan: &Plan, component: &str) -> Vec<String> {
    plan.component(component)
        .unwrap()
        .matched
        .iter()
        .map(|m| m.transformer.clone())
        .collect()
}

pub(super) fn messages(problems: &[matching::Problem]) -> Vec<String> {
    problems.iter().map(ToString::to_string).collect()
}

/// The stateless web component of `docs/module-format.md#the-module-file`.
pub(super) const API: &str = concat!(
    "  api:\n",
    "    resources:\n",
    "      Container: {image: ghcr.io/acme/api:1.4.0, ports: {http: {containerPort: 8080}}}\n",
    "    traits:\n",
    "      Expose: {type: ClusterIP}\n",
    "      Replicas: 3\n",
);
