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
use serde_json::Value;

use super::Requirements;
use super::flatten::{build_spec, defaults, flatten};
use super::plan::{
    Attachments, Call, Candidate, ComponentPlan, Declared, EffectiveLabel, LabelClaim, LabelSource,
    LeftOut, Matched, Missing, Plan, PlanConfig, PlanPatch, PlanProvider, Problem, Reason,
    Unmatched,
};
use crate::definitions::validated::{Validated, json_digest};
use crate::definitions::{Catalog, Definition, DefinitionKind, DefinitionSource, Unresolved};
use crate::module::{Component, Module};
use crate::provider::{ProviderManifest, Unhandled, Validation};

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
    plan_providers(module, &[manifest], strict, explain)
}

/// [`plan_with`] against several providers at once (`-p kubernetes -p acme`): their
/// definitions merged by FQN (the same FQN defined differently by two of them is an error
/// naming both), the transformers of every one of them matched. Two providers holding one
/// transformer FQN are refused before planning ([`crate::provider::ProviderSet`]); should
/// they reach here, the first keeps it.
pub fn plan_providers(
    module: &Module,
    providers: &[&ProviderManifest],
    strict: bool,
    explain: Explain,
) -> Plan {
    plan_providers_recalling(module, providers, strict, explain, None)
}

/// [`plan_providers`], not validating again the values `validated` recalls as found valid by
/// an earlier render of the module, and remembering there those of this plan
/// ([`crate::definitions::validated`]).
pub fn plan_providers_recalling(
    module: &Module,
    providers: &[&ProviderManifest],
    strict: bool,
    explain: Explain,
    validated: Option<&Validated<'_>>,
) -> Plan {
    let declared_definitions = providers
        .iter()
        .flat_map(|manifest| {
            let source = DefinitionSource::Provider(manifest.metadata.name.clone());
            manifest
                .definitions
                .iter()
                .map(move |(fqn, spec)| (fqn.as_str(), spec, source.clone()))
        })
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

    let mut specs: BTreeMap<&str, (&str, &crate::provider::TransformerSpec)> = BTreeMap::new();
    for manifest in providers {
        for (fqn, spec) in &manifest.transformers {
            specs.entry(fqn).or_insert((&manifest.metadata.name, spec));
        }
    }
    let transformers: Vec<Transformer<'_>> = specs
        .into_iter()
        .map(|(fqn, (provider, spec))| {
            Transformer::new(fqn, provider, spec.requirements(), &spec.validations)
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

    // What each provider says it cannot honour, with its name.
    let cannot: Vec<(&str, &Unhandled)> = providers
        .iter()
        .flat_map(|manifest| {
            manifest
                .unhandled
                .iter()
                .map(|entry| (manifest.metadata.name.as_str(), entry))
        })
        .collect();
    let mut components = Vec::with_capacity(module.components().len());
    let mut calls = Vec::new();
    // Components are planned independently, on the current rayon pool (on this thread when
    // they are few: handing them to the pool, and starting it for `mod vet`, costs more than
    // planning them), and merged in order.
    let components_in_order: Vec<&Component> = module.components().collect();
    let plan_one = |component: &&Component| {
        plan_component(
            component,
            &catalog,
            &transformers,
            &cannot,
            strict,
            explain,
            validated,
        )
    };
    let outcomes: Vec<Outcome> = if components_in_order.len() < crate::module::PARALLEL_FROM {
        components_in_order.iter().map(plan_one).collect()
    } else {
        components_in_order
            .par_iter()
            // Short runs, so that no thread is left idle behind one that plans many large
            // components alone (see `opm_runtime::render::execute`).
            .with_max_len(16)
            .map(plan_one)
            .collect()
    };
    // Sized first: growing a vector of 20,000 calls copies them again at every doubling.
    calls.reserve_exact(outcomes.iter().map(|outcome| outcome.calls.len()).sum());
    for outcome in outcomes {
        errors.extend(outcome.errors);
        warnings.extend(outcome.warnings);
        calls.extend(outcome.calls);
        components.push(outcome.plan);
    }
    // The provider definitions the components used whose schemas do not compile.
    errors.extend(
        catalog
            .schema_errors()
            .into_iter()
            .map(|error| Problem::Definition { error }),
    );
    // The validations of the matched transformers whose schemas do not compile.
    for transformer in &transformers {
        for (index, error) in transformer.validation_errors() {
            errors.push(Problem::InvalidValidation {
                transformer: transformer.fqn.clone(),
                index,
                error: error.clone(),
            });
        }
    }

    let patches = plan_patches(module, &mut errors);
    // What a plan that holds found valid replaces what was remembered; a plan with errors
    // leaves it, so that the render after the fix recalls what did not change.
    if let Some(validated) = validated
        && errors.is_empty()
    {
        validated.remember();
    }
    Plan {
        module: module.name().to_owned(),
        provider: providers
            .iter()
            .map(|manifest| manifest.metadata.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        providers: providers
            .iter()
            .map(|manifest| PlanProvider::of(manifest))
            .collect(),
        renderer: None,
        env: Vec::new(),
        strict,
        ok: errors.is_empty(),
        declared: declared_by(providers.iter().flat_map(|m| m.transformers.values())),
        components,
        errors,
        warnings,
        calls,
        config: module.config().map(|schema| PlanConfig {
            schema: schema.clone(),
            parameters: module.parameters().cloned().unwrap_or_default(),
        }),
        left_out: module
            .excluded()
            .iter()
            .map(|e| LeftOut {
                component: e.component.clone(),
                patch: None,
                definition: e.definition.clone(),
                path: e.path.clone(),
                condition: e.condition.clone(),
                null: e.reason == crate::module::Reason::Null,
                at: e.origin.clone(),
            })
            .chain(module.left_out_patches().iter().map(|p| LeftOut {
                component: String::new(),
                patch: Some(p.index),
                definition: None,
                path: None,
                condition: p.condition.clone(),
                null: false,
                at: p.origin.clone(),
            }))
            .collect(),
        patches,
    }
}

/// The module's patches as the plan applies them, and an error for each that names a component
/// the module does not have.
fn plan_patches(module: &Module, errors: &mut Vec<Problem>) -> Vec<PlanPatch> {
    if module.patches().is_empty() {
        // Nothing per component for the modules (nearly all) that have none.
        return Vec::new();
    }
    let names: Vec<&str> = module.components().map(|c| c.name.as_str()).collect();
    let mut patches = Vec::with_capacity(module.patches().len());
    for patch in module.patches() {
        if let Some(component) = &patch.target.component
            && module.component(component).is_none()
        {
            let left_out = module
                .excluded()
                .iter()
                .any(|e| e.definition.is_none() && e.component == *component);
            errors.push(Problem::PatchComponent {
                index: patch.index,
                component: component.clone(),
                left_out,
                similar: if left_out {
                    Vec::new()
                } else {
                    crate::names::suggest(component, names.iter().copied())
                },
                at: patch.origin.clone(),
            });
        }
        patches.push(PlanPatch::of(patch, &names));
    }
    patches
}

/// The FQNs `manifest`'s transformers name, required or optional, by kind.
pub fn declared(manifest: &ProviderManifest) -> Declared {
    declared_by(manifest.transformers.values())
}

/// The FQNs `transformers` name, required or optional, by kind.
fn declared_by<'a>(
    transformers: impl IntoIterator<Item = &'a crate::provider::TransformerSpec>,
) -> Declared {
    let mut declared = Declared::default();
    for transformer in transformers {
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
struct Transformer<'a> {
    fqn: String,
    /// The name of the provider that holds it.
    provider: String,
    requirements: Requirements,
    /// What two transformers compare to detect identical requirements.
    key: RequirementKey,
    /// Every FQN named, required or optional: what the transformer handles.
    named: BTreeSet<String>,
    /// Optional FQNs, whose defaults the transformer receives when not attached.
    optional: BTreeSet<String>,
    /// The manifest's `validations`: a message and the schema its input must satisfy.
    validations: &'a [Validation],
    /// Those schemas compiled, the first time a component matches the transformer: most of a
    /// provider's transformers match nothing in a given module, and compiling every schema was
    /// a fixed cost of every plan. A schema that does not compile validates nothing and is
    /// reported by [`Transformer::validation_errors`].
    compiled: std::sync::OnceLock<Vec<Result<jsonschema::Validator, String>>>,
    /// BLAKE3 of the validations' JSON, the first time an input's validation is looked up
    /// ([`Validated`]).
    validations_digest: std::sync::OnceLock<[u8; 32]>,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct RequirementKey {
    labels: BTreeMap<String, String>,
    resources: BTreeSet<String>,
    traits: BTreeSet<String>,
    policies: BTreeSet<String>,
}

impl<'a> Transformer<'a> {
    fn new(
        fqn: &str,
        provider: &str,
        mut requirements: Requirements,
        validations: &'a [Validation],
    ) -> Self {
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
            provider: provider.to_owned(),
            requirements,
            key,
            named,
            optional,
            validations,
            compiled: std::sync::OnceLock::new(),
            validations_digest: std::sync::OnceLock::new(),
        }
    }

    /// BLAKE3 of the validations' JSON.
    fn validations_digest(&self) -> &[u8; 32] {
        self.validations_digest
            .get_or_init(|| json_digest(&self.validations))
    }

    /// The validations, each message with its compiled schema (or why it did not compile).
    fn validations(&self) -> impl Iterator<Item = (&str, &Result<jsonschema::Validator, String>)> {
        let compiled = self
            .compiled
            .get_or_init(|| self.validations.iter().map(Validation::compile).collect());
        self.validations
            .iter()
            .map(|validation| validation.message.as_str())
            .zip(compiled)
    }

    /// The validations compiled so far that did not compile, by index.
    fn validation_errors(&self) -> impl Iterator<Item = (usize, &String)> {
        self.compiled
            .get()
            .into_iter()
            .flatten()
            .enumerate()
            .filter_map(|(index, compiled)| compiled.as_ref().err().map(|error| (index, error)))
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
pub(super) struct Attached<'a> {
    pub(super) definition: &'a Definition,
    pub(super) value: Value,
}

/// Plans one component, phase by phase: what it attaches and its effective labels; which
/// transformers match; what the matches leave wrong or unhandled; then, if nothing is wrong,
/// each match's input, checked against its `validations`, as a call.
fn plan_component(
    component: &Component,
    catalog: &Catalog,
    transformers: &[Transformer<'_>],
    cannot: &[(&str, &Unhandled)],
    strict: bool,
    explain: Explain,
    validated: Option<&Validated<'_>>,
) -> Outcome {
    let mut problems = Problems::default();
    let attached = resolve_attachments(component, catalog, &mut problems.errors);
    // A name that resolved to nothing is the cause of whatever does not match; it is reported
    // once, not again as "matches no transformer".
    let unresolved = !problems.errors.is_empty();
    if component.resources.is_empty() {
        problems.errors.push(Problem::NoResources {
            component: component.name.clone(),
            at: component.origin.clone(),
        });
    }
    let spec = build_spec(component, &attached, validated, &mut problems.errors);
    let labels = effective_labels(component, &attached, &mut problems.errors);
    let subject = Subject {
        component,
        attached: &attached,
        labels: &labels,
    };

    let (matched, unmatched) = match_transformers(&subject, transformers, explain);
    let unhandled = if matched.is_empty() {
        if !unresolved {
            match left_out(&subject, cannot) {
                Some(problem) if strict => problems.errors.push(problem),
                Some(problem) => problems.warnings.push(problem),
                None => problems.errors.push(no_match(&subject, transformers)),
            }
        }
        Vec::new()
    } else {
        check_matches(&subject, &matched, cannot, strict, &mut problems)
    };
    let calls = if problems.errors.is_empty() {
        validated_calls(
            &subject,
            spec,
            &matched,
            catalog,
            validated,
            &mut problems.errors,
        )
    } else {
        Vec::new()
    };

    let ok = problems.errors.is_empty();
    let plan = ComponentPlan {
        name: component.name.clone(),
        origin: component.origin.clone(),
        resources: subject.fqns_of(DefinitionKind::Resource),
        traits: subject.fqns_of(DefinitionKind::Trait),
        policies: subject.fqns_of(DefinitionKind::Policy),
        labels,
        matched: matched.into_iter().map(|(_, matched)| matched).collect(),
        unmatched,
        unhandled,
        ok,
    };
    Outcome {
        plan,
        errors: problems.errors,
        warnings: problems.warnings,
        calls: if ok { calls } else { Vec::new() },
    }
}

/// The errors and warnings planning one component found.
#[derive(Default)]
struct Problems {
    errors: Vec<Problem>,
    warnings: Vec<Problem>,
}

/// A component as matching sees it: what it attaches, resolved, and its effective labels.
struct Subject<'a> {
    component: &'a Component,
    attached: &'a BTreeMap<String, Attached<'a>>,
    labels: &'a BTreeMap<String, EffectiveLabel>,
}

impl Subject<'_> {
    /// Whether the component attaches the definition `fqn` of `kind`.
    fn has(&self, kind: DefinitionKind, fqn: &str) -> bool {
        self.attached
            .get(fqn)
            .is_some_and(|a| a.definition.kind == kind)
    }

    /// The FQNs of what the component attaches of `kind`, sorted.
    fn fqns_of(&self, kind: DefinitionKind) -> Vec<String> {
        self.attached
            .iter()
            .filter(|(_, a)| a.definition.kind == kind)
            .map(|(fqn, _)| fqn.clone())
            .collect()
    }
}

/// Tests every transformer against the component: those that match, and (unless only problems
/// are explained) those that do not, with what each lacks.
fn match_transformers<'t>(
    subject: &Subject<'_>,
    transformers: &'t [Transformer<'t>],
    explain: Explain,
) -> (Vec<(&'t Transformer<'t>, Matched)>, Vec<Unmatched>) {
    let has = |kind: DefinitionKind, fqn: &str| subject.has(kind, fqn);
    let mut matched = Vec::new();
    let mut unmatched = Vec::new();
    for transformer in transformers {
        let (reasons, missing) = match explain {
            Explain::ProblemsOnly if matches(transformer, subject.labels, &has) => {
                (Vec::new(), Vec::new())
            }
            Explain::ProblemsOnly => continue,
            Explain::Everything => check(transformer, subject.labels, &has),
        };
        if missing.is_empty() {
            let transformer_fqn = transformer.fqn.clone();
            matched.push((
                transformer,
                Matched {
                    transformer: transformer_fqn,
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
    (matched, unmatched)
}

/// The error of a component no transformer matches: what it has, and what each transformer
/// lacks.
fn no_match(subject: &Subject<'_>, transformers: &[Transformer<'_>]) -> Problem {
    let has = |kind: DefinitionKind, fqn: &str| subject.has(kind, fqn);
    Problem::NoMatch {
        component: subject.component.name.clone(),
        has: Attachments {
            labels: subject
                .labels
                .iter()
                .map(|(key, label)| (key.clone(), label.value.clone()))
                .collect(),
            resources: subject.fqns_of(DefinitionKind::Resource),
            traits: subject.fqns_of(DefinitionKind::Trait),
            policies: subject.fqns_of(DefinitionKind::Policy),
        },
        // Every transformer is a candidate that did not match: say what each lacks.
        candidates: transformers
            .iter()
            .map(|transformer| Candidate {
                transformer: transformer.fqn.clone(),
                requirements: transformer.requirements.clone(),
                missing: check(transformer, subject.labels, &has).1,
            })
            .collect(),
        at: subject.component.origin.clone(),
    }
}

/// The component is left out, when a provider says it cannot run components with its labels
/// (an `unhandled` entry with `labels`, all of which the component has), or whose every resource
/// a provider says it cannot honour (`unhandled` entries naming them).
fn left_out(subject: &Subject<'_>, cannot: &[(&str, &Unhandled)]) -> Option<Problem> {
    let left_out = |provider: &str, reason: String| Problem::LeftOut {
        component: subject.component.name.clone(),
        provider: provider.to_owned(),
        reason,
        at: subject.component.origin.clone(),
    };
    if let Some((provider, entry)) = cannot.iter().find(|(_, entry)| {
        !entry.labels.is_empty()
            && entry.labels.iter().all(|(key, value)| {
                subject
                    .labels
                    .get(key)
                    .is_some_and(|label| &label.value == value)
            })
    }) {
        return Some(left_out(provider, entry.reason.clone()));
    }
    let resources = subject.fqns_of(DefinitionKind::Resource);
    let mut provider = "";
    let mut reasons = Vec::new();
    for fqn in &resources {
        let (by, entry) = cannot
            .iter()
            .find(|(_, entry)| entry.definitions.contains(fqn))?;
        provider = by;
        reasons.push(format!("{fqn}: {}", entry.reason));
    }
    (!resources.is_empty()).then(|| left_out(provider, reasons.join("; ")))
}

/// Checks what the matches leave wrong: transformers with identical requirements, and what no
/// match handles (an error under `strict`, else a warning, with the reason a provider gives for
/// not handling it); returns the unhandled FQNs.
fn check_matches(
    subject: &Subject<'_>,
    matched: &[(&Transformer<'_>, Matched)],
    cannot: &[(&str, &Unhandled)],
    strict: bool,
    problems: &mut Problems,
) -> Vec<String> {
    let (name, at) = (&subject.component.name, &subject.component.origin);
    let mut groups: BTreeMap<&RequirementKey, Vec<String>> = BTreeMap::new();
    for (transformer, _) in matched {
        groups
            .entry(&transformer.key)
            .or_default()
            .push(transformer.fqn.clone());
    }
    for transformers in groups.into_values().filter(|group| group.len() > 1) {
        problems.errors.push(Problem::MultipleExactMatches {
            component: name.clone(),
            transformers,
            at: at.clone(),
        });
    }
    let unhandled: Vec<String> = subject
        .attached
        .keys()
        .filter(|fqn| {
            !matched
                .iter()
                .any(|(transformer, _)| transformer.named.contains(*fqn))
        })
        .cloned()
        .collect();
    if !unhandled.is_empty() {
        let reasons = unhandled
            .iter()
            .filter_map(|fqn| {
                let (_, entry) = cannot
                    .iter()
                    .find(|(_, entry)| entry.definitions.contains(fqn))?;
                Some((fqn.clone(), entry.reason.clone()))
            })
            .collect();
        let problem = Problem::Unhandled {
            component: name.clone(),
            definitions: unhandled.clone(),
            reasons,
            at: at.clone(),
        };
        if strict {
            problems.errors.push(problem)
        } else {
            problems.warnings.push(problem)
        }
    }
    unhandled
}

/// Each matched transformer's input — exactly the JSON it would receive — checked against its
/// `validations`, as a call; a validation that fails is an error.
fn validated_calls(
    subject: &Subject<'_>,
    spec: BTreeMap<String, Value>,
    matched: &[(&Transformer<'_>, Matched)],
    catalog: &Catalog,
    validated: Option<&Validated<'_>>,
    errors: &mut Vec<Problem>,
) -> Vec<Call> {
    let component = subject.component;
    let base = flatten(component, subject.attached, subject.labels, spec);
    // Every call's input is the shared part with its `defaults` last: written once as text, and
    // made a value only for a transformer that validates it.
    let shared = crate::json::compact_object(&base);
    let open = shared
        .strip_suffix('}')
        .expect("the shared part is a JSON object with keys");
    let mut calls = Vec::new();
    for (transformer, _) in matched {
        let defaults = defaults(&transformer.optional, subject.attached, catalog);
        let input = format!("{open},\"defaults\":{}}}", crate::json::compact(&defaults));
        // An input an earlier render found valid is not validated again (nor its schemas
        // compiled); one found valid now is remembered.
        if !transformer.validations.is_empty() {
            let named = validated.map(|validated| {
                let digest = validated.digest_text(transformer.validations_digest(), &input);
                (validated, digest)
            });
            if !named.is_some_and(|(validated, digest)| validated.recalls(digest)) {
                let mut value = base.clone();
                value.insert("defaults".into(), defaults);
                let value = Value::Object(value);
                let mut all_hold = true;
                for (message, validator) in transformer.validations() {
                    let holds = validator
                        .as_ref()
                        .map(|validator| validator.is_valid(&value));
                    all_hold &= holds == Ok(true);
                    if holds == Ok(false) {
                        errors.push(Problem::Refused {
                            component: component.name.clone(),
                            transformer: transformer.fqn.clone(),
                            message: message.to_owned(),
                            at: component.origin.clone(),
                        });
                    }
                }
                if let Some((validated, digest)) = named
                    && all_hold
                {
                    validated.found(digest);
                }
            }
        }
        calls.push(Call {
            component: component.name.clone(),
            transformer: transformer.fqn.clone(),
            provider: transformer.provider.clone(),
            input,
        });
    }
    calls
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
    transformer: &Transformer<'_>,
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
    transformer: &Transformer<'_>,
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
