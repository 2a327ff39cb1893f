//! Fuzz target `patch`: a module's patches applied to rendered objects
//! ([`opm_core::render::patch::apply`], what a render runs between its calls and its
//! checksum references).
//!
//! The input is split at the first NUL byte: the module file (its `patches`), then the objects,
//! one JSON document per line, as transformers return them. Whatever a patch does, applying it
//! must not panic, and every object it leaves must still pass the output checks.

#![no_main]

use std::collections::BTreeMap;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use opm_core::module::{self, Input};
use opm_core::render::{self, RenderContext, Resource};
use opm_core::{matching, provider};

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(2, |byte| *byte == 0);
    let module_bytes = parts.next().unwrap_or_default();
    let objects = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let env = |_: &str| None;
    let input = Input {
        name: "module.yaml",
        bytes: module_bytes,
    };
    let Ok(module) = module::from_inputs(input, &[], &[], &env) else {
        return;
    };
    // Read once: the Kubernetes provider's manifest and schemas, from the repository's source
    // (the core embeds no provider), are most of a run.
    static KUBERNETES: OnceLock<provider::ProviderManifest> = OnceLock::new();
    let kubernetes = KUBERNETES.get_or_init(|| {
        let source = concat!(env!("CARGO_MANIFEST_DIR"), "/../../providers/kubernetes");
        provider::read_manifest(std::path::Path::new(source))
            .expect("the Kubernetes provider's manifest reads")
            .1
    });
    let plan = matching::plan_providers(
        &module,
        &[kubernetes],
        false,
        matching::Explain::ProblemsOnly,
    );
    let mut resources: Vec<Resource> = objects
        .lines()
        .filter_map(|line| render::check_resource(line).ok())
        .map(|value| Resource::new("api", "fuzz", &value, "fuzz"))
        .collect();
    let context = RenderContext {
        name: "fuzz".into(),
        instance: "fuzz".into(),
        namespace: "fuzz".into(),
        version: "0.1.0".into(),
        provider: "kubernetes".into(),
        timestamp: "1970-01-01T00:00:00Z".into(),
        strict: false,
        module_labels: BTreeMap::new(),
        secret_kinds: Vec::new(),
        platform: None,
        provider_versions: BTreeMap::new(),
    };
    let applied = render::patch::apply(plan.patches(), &mut resources, &context, &|_| true);
    let _ = format!("{:?}", applied.failures);
    for resource in &resources {
        assert!(
            render::check_resource(&resource.json).is_ok(),
            "a patch left an object the output checks refuse: {}",
            resource.json
        );
    }
});
