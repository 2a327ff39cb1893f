//! The flattening of a component into the JSON a transformer receives
//! (`docs/module-format.md#what-a-transformer-receives`): each attached value merged over its
//! definition's defaults and validated, keyed by spec field ([`build_spec`]); the part every
//! matched transformer shares ([`flatten`]); and, per transformer, the defaults of what it
//! handles optionally and the component does not attach ([`with_defaults`]).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::engine::Attached;
use super::plan::{EffectiveLabel, Problem};
use crate::definitions::validated::Validated;
use crate::definitions::{Catalog, DefinitionKind};
use crate::module::Component;

/// Merges each value over its defaults, validates it (unless `validated` recalls it valid), and
/// keys it by spec field.
pub(super) fn build_spec(
    component: &Component,
    attached: &BTreeMap<String, Attached<'_>>,
    validated: Option<&Validated<'_>>,
    errors: &mut Vec<Problem>,
) -> BTreeMap<String, Value> {
    // Where the value's part at `pointer` was written: the module, a values file or a --set.
    let origin_of = |fqn: &str, pointer: &str| {
        DefinitionKind::ALL
            .iter()
            .flat_map(|kind| component.attachments(*kind))
            .find(|a| a.name == fqn || crate::definitions::fqn::short_name(fqn) == a.name)
            .map_or_else(|| component.origin.clone(), |a| a.origin_at(pointer))
    };
    let mut spec = BTreeMap::new();
    let mut fillers: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (fqn, a) in attached {
        let (merged, violations) = a.definition.apply_recalling(&a.value, validated);
        for violation in violations {
            errors.push(Problem::InvalidValue {
                component: component.name.clone(),
                definition: fqn.clone(),
                at: origin_of(fqn, &violation.path),
                path: violation.path,
                message: violation.message,
            });
        }
        fillers
            .entry(&a.definition.field)
            .or_default()
            .push(fqn.clone());
        spec.insert(a.definition.field.clone(), merged);
    }
    for (field, definitions) in fillers {
        if definitions.len() > 1 {
            errors.push(Problem::FieldClash {
                component: component.name.clone(),
                field: field.to_owned(),
                definitions,
                at: component.origin.clone(),
            });
        }
    }
    spec
}

/// The part of a transformer's input that every matched transformer shares: all of it but
/// `defaults` (`docs/module-format.md#what-a-transformer-receives`).
pub(super) fn flatten(
    component: &Component,
    attached: &BTreeMap<String, Attached<'_>>,
    labels: &BTreeMap<String, EffectiveLabel>,
    spec: BTreeMap<String, Value>,
) -> Map<String, Value> {
    let fqns = |kind: DefinitionKind| -> Value {
        attached
            .iter()
            .filter(|(_, a)| a.definition.kind == kind)
            .map(|(fqn, _)| json!(fqn))
            .collect()
    };
    let labels: Map<String, Value> = labels
        .iter()
        .map(|(k, label)| (k.clone(), json!(label.value)))
        .collect();
    let annotations: Map<String, Value> = component
        .annotations
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    let mut input = Map::new();
    input.insert(
        "metadata".into(),
        json!({"name": component.name, "labels": labels, "annotations": annotations}),
    );
    input.insert("resources".into(), fqns(DefinitionKind::Resource));
    input.insert("traits".into(), fqns(DefinitionKind::Trait));
    input.insert("policies".into(), fqns(DefinitionKind::Policy));
    input.insert("spec".into(), Value::Object(spec.into_iter().collect()));
    input
}

/// The defaults of a transformer's `optional` definitions the component does not attach, keyed
/// by field: the `defaults` of its input, which is the shared part plus these.
pub(super) fn defaults(
    optional: &BTreeSet<String>,
    attached: &BTreeMap<String, Attached<'_>>,
    catalog: &Catalog,
) -> Value {
    let defaults: BTreeMap<&str, &Value> = optional
        .iter()
        .filter(|fqn| !attached.contains_key(*fqn))
        .filter_map(|fqn| catalog.get(fqn))
        .filter_map(|definition| {
            definition
                .defaults
                .as_ref()
                .map(|d| (definition.field.as_str(), d))
        })
        .collect();
    Value::Object(
        defaults
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.clone()))
            .collect(),
    )
}
