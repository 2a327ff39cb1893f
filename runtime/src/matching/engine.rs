//! The matching algorithm (`docs/matching.md`, effective labels included) and the flattening of
//! a component into the JSON a transformer receives (`docs/module-format.md`).
//!
//! For each component, in name order: resolve what it attaches against the catalog, merge each
//! value over its definition's defaults and validate it, compute the effective labels, test every
//! transformer (in FQN order) against them, then check the matches (none, several identical) and
//! what they leave unhandled, and last each matched transformer's `validations` against the
//! JSON it would receive. Every list is sorted, so the plan does not depend on the order in
//! which the module lists components and attachments or the provider lists transformers and
//! requirements.

use std::collections::{BTreeMap, BTreeSet};

use rayon::prelude::*;
use serde_json::{Map, Value, json};

use super::Requirements;
use super::plan::{
    Attachments, Call, Candidate, ComponentPlan, Declared, EffectiveLabel, LabelClaim, LabelSource,
    Matched, Missing, Plan, Problem, Reason, Unmatched,
};
use crate::definitions::{Catalog, Definition, DefinitionKind, DefinitionSource, Unresolved};
use crate::module::{Component, Module};
use crate::provider::ProviderManifest;

/// Computes the plan for `module` against `manifest`'s definitions and transformers (plus the
/// module's own definitions). Under `strict`, unhandled resources, traits and policies are
/// errors rather than warnings. Never fails: every problem is in the plan.
pub fn plan(module: &Module, manifest: &ProviderManifest, strict: bool) -> Plan {
    plan_with(module, manifest, strict, Explain::Everything)
}

/// How much of why each transformer matched or not a plan keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Explain {
    /// Every reason of every match and every missing requirement of every transformer that
    /// did not match: what `opm mod vet` and `--verbose` print.
    Everything,
    /// Only what problems need: a component that matches no transformer still lists every
    /// candidate with what it lacks, but matched transformers carry no reasons and
    /// [`ComponentPlan::unmatched`](super::ComponentPlan::unmatched) stays empty. What a build
    /// that prints no plan uses: it saves most of planning's time and memory on large modules.
    ProblemsOnly,
}

/// [`plan`], keeping as much explanation as `explain` says.
pub fn plan_with(
    module: &Module,
    manifest: &ProviderManifest,
    strict: bool,
    explain: Explain,
) -> Plan {
    let provider_source = DefinitionSource::Provider(manifest.metadata.name.clone());
    let declared_definitions = manifest
        .definitions
        .iter()
        .map(|(fqn, spec)| (fqn.as_str(), spec, provider_source.clone()))
        .chain(module.definitions().iter().map(|(fqn, def)| {
            (
                fqn.as_str(),
                &def.spec,
                DefinitionSource::Module(def.origin.clone()),
            )
        }));
    let (catalog, definition_errors) = Catalog::build(declared_definitions);

    let mut errors: Vec<Problem> = definition_errors
        .into_iter()
        .map(|error| Problem::Definition { error })
        .collect();
    let mut warnings = Vec::new();

    let transformers: Vec<Transformer> = manifest
        .transformers
        .iter()
        .map(|(fqn, spec)| {
            let mut transformer = Transformer::new(fqn, spec.requirements());
            for (index, validation) in spec.validations.iter().enumerate() {
                match validation.compile() {
                    Ok(validator) => transformer
                        .validations
                        .push((validation.message.clone(), validator.into())),
                    Err(error) => errors.push(Problem::InvalidValidation {
                        transformer: fqn.clone(),
                        index,
                        error,
                    }),
                }
            }
            transformer
        })
        .collect();
    for transformer in &transformers {
        for fqn in &transformer.named {
            if catalog.get(fqn).is_none() {
                warnings.push(Problem::UnknownRequirement {
                    transformer: transformer.fqn.clone(),
                    definition: fqn.clone(),
                });
            }
        }
    }

    let mut components = Vec::with_capacity(module.components().len());
    let mut calls = Vec::new();
    // Components are planned independently, on the current rayon pool, and merged in order.
    let components_in_order: Vec<&Component> = module.components().collect();
    let outcomes: Vec<Outcome> = components_in_order
        .par_iter()
        .map(|component| plan_component(component, &catalog, &transformers, strict, explain))
        .collect();
    for outcome in outcomes {
        errors.extend(outcome.errors);
        warnings.extend(outcome.warnings);
        calls.extend(outcome.calls);
        components.push(outcome.plan);
    }

    Plan {
        module: module.name().to_owned(),
        provider: manifest.metadata.name.clone(),
        strict,
        ok: errors.is_empty(),
        declared: declared(manifest),
        components,
        errors,
        warnings,
        calls,
    }
}

/// The FQNs `manifest`'s transformers name, required or optional, by kind.
pub fn declared(manifest: &ProviderManifest) -> Declared {
    let mut declared = Declared::default();
    for transformer in manifest.transformers.values() {
        let r = transformer.requirements();
        declared
            .resources
            .extend(r.required_resources.into_iter().chain(r.optional_resources));
        declared
            .traits
            .extend(r.required_traits.into_iter().chain(r.optional_traits));
        declared
            .policies
            .extend(r.required_policies.into_iter().chain(r.optional_policies));
    }
    declared
}

/// A transformer's requirements, normalized: sets instead of lists.
struct Transformer {
    fqn: String,
    requirements: Requirements,
    /// What two transformers compare to detect identical requirements.
    key: RequirementKey,
    /// Every FQN named, required or optional: what the transformer handles.
    named: BTreeSet<String>,
    /// Optional FQNs, whose defaults the transformer receives when not attached.
    optional: BTreeSet<String>,
    /// The manifest's `validations`: a message and the compiled schema its input must satisfy.
    validations: Vec<(String, std::sync::Arc<jsonschema::Validator>)>,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct RequirementKey {
    labels: BTreeMap<String, String>,
    resources: BTreeSet<String>,
    traits: BTreeSet<String>,
    policies: BTreeSet<String>,
}

impl Transformer {
    fn new(fqn: &str, mut requirements: Requirements) -> Self {
        for list in [
            &mut requirements.required_resources,
            &mut requirements.optional_resources,
            &mut requirements.required_traits,
            &mut requirements.optional_traits,
            &mut requirements.required_policies,
            &mut requirements.optional_policies,
        ] {
            list.sort();
            list.dedup();
        }
        let set = |list: &[String]| list.iter().cloned().collect::<BTreeSet<_>>();
        let key = RequirementKey {
            labels: requirements.required_labels.clone(),
            resources: set(&requirements.required_resources),
            traits: set(&requirements.required_traits),
            policies: set(&requirements.required_policies),
        };
        let optional: BTreeSet<String> = requirements
            .optional_resources
            .iter()
            .chain(&requirements.optional_traits)
            .chain(&requirements.optional_policies)
            .cloned()
            .collect();
        let named = key
            .resources
            .iter()
            .chain(&key.traits)
            .chain(&key.policies)
            .chain(&optional)
            .cloned()
            .collect();
        Self {
            fqn: fqn.to_owned(),
            requirements,
            key,
            named,
            optional,
            validations: Vec::new(),
        }
    }
}

/// What planning one component produced.
struct Outcome {
    plan: ComponentPlan,
    errors: Vec<Problem>,
    warnings: Vec<Problem>,
    calls: Vec<Call>,
}

/// An attached definition with its merged value.
struct Attached<'a> {
    definition: &'a Definition,
    value: Value,
}

fn plan_component(
    component: &Component,
    catalog: &Catalog,
    transformers: &[Transformer],
    strict: bool,
    explain: Explain,
) -> Outcome {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let name = &component.name;
    let at = &component.origin;

    let attached = resolve_attachments(component, catalog, &mut errors);
    // A name that resolved to nothing is the cause of whatever does not match; it is reported
    // once, not again as "matches no transformer".
    let unresolved = !errors.is_empty();
    if component.resources.is_empty() {
        errors.push(Problem::NoResources {
            component: name.clone(),
            at: at.clone(),
        });
    }
    let spec = build_spec(component, &attached, &mut errors);
    let labels = effective_labels(component, &attached, &mut errors);
    let has = |kind: DefinitionKind, fqn: &str| {
        attached.get(fqn).is_some_and(|a| a.definition.kind == kind)
    };

    let mut matched: Vec<(&Transformer, Matched)> = Vec::new();
    let mut unmatched = Vec::new();
    for transformer in transformers {
        if explain == Explain::ProblemsOnly {
            if matches(transformer, &labels, &has) {
                matched.push((
                    transformer,
                    Matched {
                        transformer: transformer.fqn.clone(),
                        reasons: Vec::new(),
                    },
                ));
            }
            continue;
        }
        let (reasons, missing) = check(transformer, &labels, &has);
        if missing.is_empty() {
            matched.push((
                transformer,
                Matched {
                    transformer: transformer.fqn.clone(),
                    reasons,
                },
            ));
        } else {
            unmatched.push(Unmatched {
                transformer: transformer.fqn.clone(),
                missing,
            });
        }
    }

    let fqns_of = |kind: DefinitionKind| -> Vec<String> {
        attached
            .iter()
            .filter(|(_, a)| a.definition.kind == kind)
            .map(|(fqn, _)| fqn.clone())
            .collect()
    };
    let (resources, traits, policies) = (
        fqns_of(DefinitionKind::Resource),
        fqns_of(DefinitionKind::Trait),
        fqns_of(DefinitionKind::Policy),
    );

    let mut unhandled = Vec::new();
    if matched.is_empty() && !unresolved {
        errors.push(Problem::NoMatch {
            component: name.clone(),
            has: Attachments {
                labels: labels
                    .iter()
                    .map(|(key, label)| (key.clone(), label.value.clone()))
                    .collect(),
                resources: resources.clone(),
                traits: traits.clone(),
                policies: policies.clone(),
            },
            // Every transformer is a candidate that did not match: say what each lacks.
            candidates: transformers
                .iter()
                .map(|transformer| Candidate {
                    transformer: transformer.fqn.clone(),
                    requirements: transformer.requirements.clone(),
                    missing: check(transformer, &labels, &has).1,
                })
                .collect(),
            at: at.clone(),
        });
    } else if !matched.is_empty() {
        let mut groups: BTreeMap<&RequirementKey, Vec<String>> = BTreeMap::new();
        for (transformer, _) in &matched {
            groups
                .entry(&transformer.key)
                .or_default()
                .push(transformer.fqn.clone());
        }
        for transformers in groups.into_values().filter(|group| group.len() > 1) {
            errors.push(Problem::MultipleExactMatches {
                component: name.clone(),
                transformers,
                at: at.clone(),
            });
        }
        unhandled = attached
            .keys()
            .filter(|fqn| {
                !matched
                    .iter()
                    .any(|(transformer, _)| transformer.named.contains(*fqn))
            })
            .cloned()
            .collect();
        if !unhandled.is_empty() {
            let problem = Problem::Unhandled {
                component: name.clone(),
                definitions: unhandled.clone(),
                at: at.clone(),
            };
            if strict {
                errors.push(problem)
            } else {
                warnings.push(problem)
            }
        }
    }

    // Each matched transformer's validations see exactly the JSON it would receive, and only
    // once everything before them holds.
    let mut inputs = Vec::new();
    if errors.is_empty() {
        let base = flatten(component, &attached, &labels, spec);
        for (transformer, _) in &matched {
            let input = with_defaults(&base, transformer, &attached, catalog);
            for (message, validator) in &transformer.validations {
                if !validator.is_valid(&input) {
                    errors.push(Problem::Refused {
                        component: name.clone(),
                        transformer: transformer.fqn.clone(),
                        message: message.clone(),
                        at: at.clone(),
                    });
                }
            }
            inputs.push(input);
        }
    }
    let ok = errors.is_empty();
    let calls = if ok {
        matched
            .iter()
            .zip(inputs)
            .map(|((transformer, _), input)| Call {
                component: name.clone(),
                transformer: transformer.fqn.clone(),
                input: input.to_string(),
            })
            .collect()
    } else {
        Vec::new()
    };

    let plan = ComponentPlan {
        name: name.clone(),
        origin: at.clone(),
        resources,
        traits,
        policies,
        labels,
        matched: matched.into_iter().map(|(_, matched)| matched).collect(),
        unmatched,
        unhandled,
        ok,
    };
    Outcome {
        plan,
        errors,
        warnings,
        calls,
    }
}

/// Resolves each attachment to a definition of the right kind, keyed by FQN.
fn resolve_attachments<'a>(
    component: &Component,
    catalog: &'a Catalog,
    errors: &mut Vec<Problem>,
) -> BTreeMap<String, Attached<'a>> {
    let mut attached: BTreeMap<String, Attached<'a>> = BTreeMap::new();
    let mut written_as: BTreeMap<String, String> = BTreeMap::new();
    let name = &component.name;
    for kind in DefinitionKind::ALL {
        for attachment in component.attachments(kind) {
            let definition = match catalog.resolve(&attachment.name) {
                Ok(definition) => definition,
                Err(Unresolved::Unknown { similar }) => {
                    errors.push(Problem::UnknownDefinition {
                        component: name.clone(),
                        name: attachment.name.clone(),
                        similar,
                        at: attachment.origin.clone(),
                    });
                    continue;
                }
                Err(Unresolved::Ambiguous { candidates }) => {
                    errors.push(Problem::AmbiguousDefinition {
                        component: name.clone(),
                        name: attachment.name.clone(),
                        candidates,
                        at: attachment.origin.clone(),
                    });
                    continue;
                }
            };
            if definition.kind != kind {
                errors.push(Problem::WrongSection {
                    component: name.clone(),
                    definition: definition.fqn.clone(),
                    definition_kind: definition.kind,
                    attached_as: kind,
                    at: attachment.origin.clone(),
                });
                continue;
            }
            if let Some(first) = written_as.get(&definition.fqn) {
                let mut names = vec![first.clone(), attachment.name.clone()];
                names.sort();
                errors.push(Problem::DuplicateAttachment {
                    component: name.clone(),
                    definition: definition.fqn.clone(),
                    names,
                    at: attachment.origin.clone(),
                });
                continue;
            }
            written_as.insert(definition.fqn.clone(), attachment.name.clone());
            attached.insert(
                definition.fqn.clone(),
                Attached {
                    definition,
                    value: attachment.value.clone(),
                },
            );
        }
    }
    attached
}

/// Merges each value over its defaults, validates it, and keys it by spec field.
fn build_spec(
    component: &Component,
    attached: &BTreeMap<String, Attached<'_>>,
    errors: &mut Vec<Problem>,
) -> BTreeMap<String, Value> {
    let origin_of = |fqn: &str| {
        DefinitionKind::ALL
            .iter()
            .flat_map(|kind| component.attachments(*kind))
            .find(|a| a.name == fqn || crate::definitions::fqn::short_name(fqn) == a.name)
            .map_or_else(|| component.origin.clone(), |a| a.origin.clone())
    };
    let mut spec = BTreeMap::new();
    let mut fillers: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (fqn, a) in attached {
        let (merged, violations) = a.definition.apply(&a.value);
        for violation in violations {
            errors.push(Problem::InvalidValue {
                component: component.name.clone(),
                definition: fqn.clone(),
                path: violation.path,
                message: violation.message,
                at: origin_of(fqn),
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

/// The labels of every attached definition, overlaid by the component's own
/// (`docs/module-format.md#effective-labels`).
fn effective_labels(
    component: &Component,
    attached: &BTreeMap<String, Attached<'_>>,
    errors: &mut Vec<Problem>,
) -> BTreeMap<String, EffectiveLabel> {
    let mut labels: BTreeMap<String, EffectiveLabel> = BTreeMap::new();
    let mut conflicts: BTreeSet<&str> = BTreeSet::new();
    for (fqn, a) in attached {
        for (key, value) in &a.definition.labels {
            match labels.get(key) {
                Some(existing) if existing.value != *value => {
                    if conflicts.insert(key) {
                        let LabelSource::Definition(first) = &existing.from else {
                            continue;
                        };
                        errors.push(Problem::LabelConflict {
                            component: component.name.clone(),
                            key: key.clone(),
                            first: LabelClaim {
                                definition: first.clone(),
                                value: existing.value.clone(),
                            },
                            second: LabelClaim {
                                definition: fqn.clone(),
                                value: value.clone(),
                            },
                            at: component.origin.clone(),
                        });
                    }
                }
                Some(_) => {}
                None => {
                    labels.insert(
                        key.clone(),
                        EffectiveLabel {
                            value: value.clone(),
                            from: LabelSource::Definition(fqn.clone()),
                        },
                    );
                }
            }
        }
    }
    for (key, value) in &component.labels {
        labels.insert(
            key.clone(),
            EffectiveLabel {
                value: value.clone(),
                from: LabelSource::Component,
            },
        );
    }
    labels
}

/// Tests one transformer: what satisfied each requirement, and what is missing.
/// Whether `transformer`'s requirements are all met, as [`check`] would find, without building
/// the explanation.
fn matches(
    transformer: &Transformer,
    labels: &BTreeMap<String, EffectiveLabel>,
    has: &dyn Fn(DefinitionKind, &str) -> bool,
) -> bool {
    let key = &transformer.key;
    key.labels
        .iter()
        .all(|(key, wanted)| labels.get(key).is_some_and(|label| label.value == *wanted))
        && key
            .resources
            .iter()
            .all(|fqn| has(DefinitionKind::Resource, fqn))
        && key.traits.iter().all(|fqn| has(DefinitionKind::Trait, fqn))
        && key
            .policies
            .iter()
            .all(|fqn| has(DefinitionKind::Policy, fqn))
}

fn check(
    transformer: &Transformer,
    labels: &BTreeMap<String, EffectiveLabel>,
    has: &dyn Fn(DefinitionKind, &str) -> bool,
) -> (Vec<Reason>, Vec<Missing>) {
    let mut reasons = Vec::new();
    let mut missing = Vec::new();
    for (key, wanted) in &transformer.key.labels {
        match labels.get(key) {
            Some(label) if label.value == *wanted => {
                reasons.push(Reason::Label {
                    key: key.clone(),
                    value: wanted.clone(),
                    from: label.from.clone(),
                });
            }
            found => missing.push(Missing::Label {
                key: key.clone(),
                wanted: wanted.clone(),
                found: found.map(|label| label.value.clone()),
            }),
        }
    }
    for fqn in &transformer.key.resources {
        if has(DefinitionKind::Resource, fqn) {
            reasons.push(Reason::Resource { fqn: fqn.clone() });
        } else {
            missing.push(Missing::Resource { fqn: fqn.clone() });
        }
    }
    for fqn in &transformer.key.traits {
        if has(DefinitionKind::Trait, fqn) {
            reasons.push(Reason::Trait { fqn: fqn.clone() });
        } else {
            missing.push(Missing::Trait { fqn: fqn.clone() });
        }
    }
    for fqn in &transformer.key.policies {
        if has(DefinitionKind::Policy, fqn) {
            reasons.push(Reason::Policy { fqn: fqn.clone() });
        } else {
            missing.push(Missing::Policy { fqn: fqn.clone() });
        }
    }
    (reasons, missing)
}

/// The part of a transformer's input that every matched transformer shares: all of it but
/// `defaults` (`docs/module-format.md#what-a-transformer-receives`).
fn flatten(
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

/// `base` plus the defaults of the transformer's optional definitions the component does not
/// attach, keyed by field.
fn with_defaults(
    base: &Map<String, Value>,
    transformer: &Transformer,
    attached: &BTreeMap<String, Attached<'_>>,
    catalog: &Catalog,
) -> Value {
    let defaults: BTreeMap<&str, &Value> = transformer
        .optional
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
    let mut input = base.clone();
    input.insert(
        "defaults".into(),
        Value::Object(
            defaults
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.clone()))
                .collect(),
        ),
    );
    Value::Object(input)
}
