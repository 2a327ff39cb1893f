//! The plan: which transformer runs on which component, why, and what stands in the way.
//!
//! A [`Plan`] is a plain value. It serializes to JSON (without the calls' inputs, which may hold
//! secrets), prints as text through [`Plan::write_text`], and is the same whatever the order of
//! the module's components and the provider's transformers.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Serialize, Serializer};

use super::Requirements;
use crate::definitions::{DefinitionError, DefinitionKind};
use crate::origin::Origin;

/// The outcome of matching a module's components to a provider's transformers.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub(crate) module: String,
    /// The providers' names, in the order given, separated by ", ".
    pub(crate) provider: String,
    /// Each provider: what it contributed to the plan.
    pub(crate) providers: Vec<PlanProvider>,
    /// The renderer that writes the files, and why it is the one ([`Plan::set_renderer`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) renderer: Option<PlanRenderer>,
    /// The environment variables the module's `${env:…}` read, in name order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) env: Vec<String>,
    pub(crate) strict: bool,
    pub(crate) ok: bool,
    pub(crate) declared: Declared,
    pub(crate) components: Vec<ComponentPlan>,
    #[serde(serialize_with = "problems_with_messages")]
    pub(crate) errors: Vec<Problem>,
    #[serde(serialize_with = "problems_with_messages")]
    pub(crate) warnings: Vec<Problem>,
    pub(crate) calls: Vec<Call>,
    /// The module's parameters as this render sets them, with the config's schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) config: Option<PlanConfig>,
    /// What the module's conditions left out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) left_out: Vec<LeftOut>,
    /// The module's patches a render applies, in module order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) patches: Vec<PlanPatch>,
}

/// A provider of a plan and what it holds, so that a plan of several providers says where each
/// transformer and definition came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanProvider {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The FQNs of its transformers.
    pub transformers: Vec<String>,
    /// The FQNs of its definitions.
    pub definitions: Vec<String>,
}

impl PlanProvider {
    /// What `manifest` holds.
    pub fn of(manifest: &crate::provider::ProviderManifest) -> Self {
        Self {
            name: manifest.metadata.name.clone(),
            version: manifest.metadata.version.clone(),
            transformers: manifest.transformers.keys().cloned().collect(),
            definitions: manifest.definitions.keys().cloned().collect(),
        }
    }
}

/// The renderer of a plan: which one writes the files, whose it is, and by which rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanRenderer {
    /// Its name and version (`Kubernetes List Renderer 1.0.0`).
    pub name: String,
    /// The provider that ships it.
    pub provider: String,
    /// Why it is the one: `named` (by `--renderer` or the project's `renderer`), `shipped`
    /// (the providers with transformers ship it), or `embedded` (none ships one: the embedded
    /// provider's for the platform).
    pub chosen: &'static str,
}

/// A module's `config` and the parameters a render uses.
#[derive(Debug, Clone, Serialize)]
pub struct PlanConfig {
    /// The JSON Schema of the parameters.
    pub schema: serde_json::Value,
    /// The parameters: what the values set, over the defaults.
    pub parameters: serde_json::Value,
}

/// A component, one of its attachments or a part of one, or a patch, that a false condition or
/// a `null` left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeftOut {
    /// The component; empty for a patch.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub component: String,
    /// The patch's position in the module's `patches`, when a patch is left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<usize>,
    /// The attachment as written; none when the component is left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
    /// Where in the attachment (a JSON pointer) when only a part of it is left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The condition, as written, or the expression whose value is `null`.
    pub condition: String,
    /// Whether it is left out for a `null` (`${…}` whose value is `null`) rather than a false
    /// condition.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub null: bool,
    /// Where the condition is written.
    pub at: Origin,
}

/// A module patch, as a render applies it (`docs/module-format.md#patches`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanPatch {
    /// Its position in the module's `patches`, from 0.
    pub index: usize,
    /// Where it is written.
    pub at: Origin,
    /// Which objects it applies to.
    pub target: crate::module::patch::Target,
    /// `merge` or `jsonPatch`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// A JSON Patch's operations without their values (`add /spec/sessionAffinity`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<String>,
    /// The components whose objects it can change: its target's component, else every one.
    pub components: Vec<String>,
    /// The patch itself, which may hold secrets: neither serialized nor printed.
    #[serde(skip)]
    pub patch: crate::module::Patch,
}

impl PlanPatch {
    /// `patches[1]`: how messages name it.
    pub fn name(&self) -> String {
        format!("patches[{}]", self.index)
    }

    /// What `patch` of a module with `components` can change.
    pub fn of(patch: &crate::module::Patch, components: &[&str]) -> Self {
        use crate::module::patch::Operation;
        let (kind, operations) = match &patch.operation {
            Operation::Merge(_) => ("merge", Vec::new()),
            Operation::JsonPatch(ops) => ("jsonPatch", ops.iter().map(|op| op.summary()).collect()),
        };
        let components = match &patch.target.component {
            Some(component) => components
                .iter()
                .filter(|c| **c == component.as_str())
                .map(|c| (*c).to_owned())
                .collect(),
            None => components.iter().map(|c| (*c).to_owned()).collect(),
        };
        Self {
            index: patch.index,
            at: patch.origin.clone(),
            target: patch.target.clone(),
            kind,
            operations,
            components,
            patch: patch.clone(),
        }
    }
}

impl Plan {
    /// The module's patches, in the order a render applies them.
    pub fn patches(&self) -> &[PlanPatch] {
        &self.patches
    }

    /// Every transform call to run, by component name, then transformer FQN. Only components
    /// whose plan has no error get calls.
    pub fn calls(&self) -> impl ExactSizeIterator<Item = &Call> {
        self.calls.iter()
    }

    /// Every error, in component order; any error means nothing should be rendered.
    pub fn errors(&self) -> &[Problem] {
        &self.errors
    }

    /// Every warning, in component order.
    pub fn warnings(&self) -> &[Problem] {
        &self.warnings
    }

    /// What the module's conditions left out, in document order.
    pub fn left_out(&self) -> &[LeftOut] {
        &self.left_out
    }

    /// Whether the plan has no error.
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// What was decided for each component, by name.
    pub fn components(&self) -> &[ComponentPlan] {
        &self.components
    }

    /// What was decided for the component called `name`.
    pub fn component(&self, name: &str) -> Option<&ComponentPlan> {
        self.components
            .iter()
            .find(|component| component.name == name)
    }

    /// The resources, traits and policies the provider's transformers support.
    pub fn declared(&self) -> &Declared {
        &self.declared
    }

    /// Whether unhandled resources, traits and policies were errors.
    pub fn strict(&self) -> bool {
        self.strict
    }

    /// The module's name.
    pub fn module(&self) -> &str {
        &self.module
    }

    /// The provider's name; several providers' names separated by ", ".
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// The renderer that writes the files, once the render has chosen it.
    pub fn renderer(&self) -> Option<&PlanRenderer> {
        self.renderer.as_ref()
    }

    /// Records which renderer writes the files: the plan says so, `mod vet` and `--verbose`
    /// print it.
    pub fn set_renderer(&mut self, renderer: PlanRenderer) {
        self.renderer = Some(renderer);
    }

    /// The environment variables the module read, in name order.
    pub fn env_read(&self) -> &[String] {
        &self.env
    }

    /// Records the environment variables the module read (`module::env::EnvReads`).
    pub fn set_env_read(&mut self, names: Vec<String>) {
        self.env = names;
    }

    /// Every provider of the plan, in the order given.
    pub fn providers(&self) -> &[PlanProvider] {
        &self.providers
    }

    /// The name of the provider that holds `transformer`.
    pub fn provider_of(&self, transformer: &str) -> Option<&str> {
        self.providers
            .iter()
            .find(|p| {
                p.transformers
                    .binary_search_by(|t| t.as_str().cmp(transformer))
                    .is_ok()
            })
            .map(|p| p.name.as_str())
    }
}

/// One transform to run: a transformer on a component, with the JSON it receives
/// (`docs/module-format.md#what-a-transformer-receives`).
#[derive(Clone, Serialize)]
pub struct Call {
    /// The component's name.
    pub component: String,
    /// The transformer's FQN.
    pub transformer: String,
    /// The name of the provider that holds the transformer: its limits and its name in the
    /// context apply to the call.
    pub provider: String,
    /// What `transform` receives, as the JSON text it receives: `metadata`, `resources`,
    /// `traits`, `policies`, `spec`, `defaults`. Text rather than a `Value`, made while
    /// planning (on every thread), because that is what the sandbox passes and it takes a
    /// fraction of the memory. May hold secrets, so it is neither serialized nor printed by
    /// `Debug`.
    #[serde(skip)]
    pub input: String,
}

impl Call {
    /// [`input`](Self::input) as a JSON value.
    pub fn input_value(&self) -> serde_json::Value {
        serde_json::from_str(&self.input).expect("the planner writes valid JSON")
    }
}

impl fmt::Debug for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Call")
            .field("component", &self.component)
            .field("transformer", &self.transformer)
            .field("provider", &self.provider)
            .finish_non_exhaustive()
    }
}

/// The FQNs a provider's transformers name, required or optional, by kind (matching spec
/// criterion 18: `#declaredResources`, `#declaredTraits`, `#declaredPolicies`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Declared {
    /// Resource FQNs.
    pub resources: BTreeSet<String>,
    /// Trait FQNs.
    pub traits: BTreeSet<String>,
    /// Policy FQNs.
    pub policies: BTreeSet<String>,
}

/// What was decided for one component.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentPlan {
    /// The component's name.
    pub name: String,
    /// Where it is declared.
    pub origin: Origin,
    /// Effective labels (`docs/module-format.md#effective-labels`), each with where its value
    /// came from.
    pub labels: BTreeMap<String, EffectiveLabel>,
    /// Attached resource FQNs, sorted.
    pub resources: Vec<String>,
    /// Attached trait FQNs, sorted.
    pub traits: Vec<String>,
    /// Attached policy FQNs, sorted.
    pub policies: Vec<String>,
    /// Transformers that match, by FQN, with what satisfied each requirement.
    pub matched: Vec<Matched>,
    /// Transformers that do not match, by FQN, with everything the component lacks.
    pub unmatched: Vec<Unmatched>,
    /// Attached FQNs that no matched transformer names, required or optional.
    pub unhandled: Vec<String>,
    /// Whether the component has no error (and so gets calls).
    pub ok: bool,
}

/// A label's value and its source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EffectiveLabel {
    /// The value.
    pub value: String,
    /// Where it came from.
    pub from: LabelSource,
}

/// Where an effective label came from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum LabelSource {
    /// The component's own `metadata.labels` (which override definitions' labels).
    Component,
    /// The labels of the attached definition with this FQN.
    Definition(String),
}

impl fmt::Display for LabelSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Component => f.write_str("the component"),
            Self::Definition(fqn) => f.write_str(fqn),
        }
    }
}

impl Serialize for LabelSource {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Component => serializer.serialize_str("component"),
            Self::Definition(fqn) => serializer.serialize_str(fqn),
        }
    }
}

/// A transformer that matches, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Matched {
    /// Its FQN.
    pub transformer: String,
    /// Each requirement and what satisfied it; empty for a transformer with no requirement.
    pub reasons: Vec<Reason>,
}

/// A transformer that does not match, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unmatched {
    /// Its FQN.
    pub transformer: String,
    /// Each requirement the component does not meet.
    pub missing: Vec<Missing>,
}

/// A requirement that a component meets.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Reason {
    /// A required label with the required value.
    Label {
        /// The key.
        key: String,
        /// The value.
        value: String,
        /// Where the component's value came from.
        from: LabelSource,
    },
    /// A required resource, attached.
    Resource {
        /// Its FQN.
        fqn: String,
    },
    /// A required trait, attached.
    Trait {
        /// Its FQN.
        fqn: String,
    },
    /// A required policy, attached.
    Policy {
        /// Its FQN.
        fqn: String,
    },
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Label { key, value, from } => write!(f, "label {key}={value} (from {from})"),
            Self::Resource { fqn } => write!(f, "resource {fqn}"),
            Self::Trait { fqn } => write!(f, "trait {fqn}"),
            Self::Policy { fqn } => write!(f, "policy {fqn}"),
        }
    }
}

/// A requirement that a component does not meet.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Missing {
    /// A required label that is absent or has another value.
    Label {
        /// The key.
        key: String,
        /// The value the transformer requires.
        wanted: String,
        /// The component's value, when it has the key.
        found: Option<String>,
    },
    /// A required resource that is not attached.
    Resource {
        /// Its FQN.
        fqn: String,
    },
    /// A required trait that is not attached.
    Trait {
        /// Its FQN.
        fqn: String,
    },
    /// A required policy that is not attached.
    Policy {
        /// Its FQN.
        fqn: String,
    },
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Label {
                key,
                wanted,
                found: Some(found),
            } => {
                write!(f, "label {key} is {found:?}, not {wanted:?}")
            }
            Self::Label {
                key,
                wanted,
                found: None,
            } => write!(f, "label {key}={wanted} is missing"),
            Self::Resource { fqn } => write!(f, "resource {fqn} is not attached"),
            Self::Trait { fqn } => write!(f, "trait {fqn} is not attached"),
            Self::Policy { fqn } => write!(f, "policy {fqn} is not attached"),
        }
    }
}

/// What a component has to match with: its effective labels and attached definitions, as a
/// no-match error shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attachments {
    /// Effective labels (`docs/module-format.md#effective-labels`).
    pub labels: BTreeMap<String, String>,
    /// Attached resource FQNs, sorted.
    pub resources: Vec<String>,
    /// Attached trait FQNs, sorted.
    pub traits: Vec<String>,
    /// Attached policy FQNs, sorted.
    pub policies: Vec<String>,
}

impl fmt::Display for Attachments {
    /// `labels a=b; resources X; traits Y; policies none`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let labels: Vec<String> = self
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let mut first = true;
        for (what, list) in [
            ("labels", &labels),
            ("resources", &self.resources),
            ("traits", &self.traits),
            ("policies", &self.policies),
        ] {
            let separator = if first { "" } else { "; " };
            first = false;
            if list.is_empty() {
                write!(f, "{separator}{what} none")?;
            } else {
                write!(f, "{separator}{what} {}", list.join(", "))?;
            }
        }
        Ok(())
    }
}

/// A transformer listed by a no-match error: its requirements and what the component lacks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// Its FQN.
    pub transformer: String,
    /// What it requires (and handles optionally).
    pub requirements: Requirements,
    /// Each requirement the component does not meet.
    pub missing: Vec<Missing>,
}

/// The required part of `requirements` in words: `labels a=b; resources X; traits Y`.
pub fn describe_requirements(requirements: &Requirements) -> String {
    let mut parts = Vec::new();
    if !requirements.required_labels.is_empty() {
        let labels: Vec<String> = requirements
            .required_labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        parts.push(format!("labels {}", labels.join(", ")));
    }
    for (what, list) in [
        ("resources", &requirements.required_resources),
        ("traits", &requirements.required_traits),
        ("policies", &requirements.required_policies),
    ] {
        if !list.is_empty() {
            let mut sorted = list.clone();
            sorted.sort();
            sorted.dedup();
            parts.push(format!("{what} {}", sorted.join(", ")));
        }
    }
    if parts.is_empty() {
        "nothing".to_owned()
    } else {
        parts.join("; ")
    }
}

/// A definition's claim on a label key, for label conflicts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LabelClaim {
    /// The definition's FQN.
    pub definition: String,
    /// The value it gives.
    pub value: String,
}

/// An error or warning of a plan. Messages never quote a component's values, only where they
/// are and what their definition's schema wanted.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum Problem {
    /// A definition of the provider or the module cannot be used.
    #[error("{error}")]
    Definition {
        /// What is wrong with it.
        error: DefinitionError,
    },
    /// A component attaches a name that no definition has.
    #[error(
        "{at}: component {component:?}: no definition is named {name:?} in the provider or the module{}",
        crate::names::did_you_mean(similar)
    )]
    UnknownDefinition {
        /// The component.
        component: String,
        /// The name as written.
        name: String,
        /// Definitions whose names differ only in case.
        similar: Vec<String>,
        /// Where the name is written.
        at: Origin,
    },
    /// A component attaches a short name that several definitions share.
    #[error("{at}: component {component:?}: {name:?} could mean any of {}; write the FQN", candidates.join(", "))]
    AmbiguousDefinition {
        /// The component.
        component: String,
        /// The short name.
        name: String,
        /// Every definition with that short name.
        candidates: Vec<String>,
        /// Where the name is written.
        at: Origin,
    },
    /// A definition is attached under the section of another kind.
    #[error("{at}: component {component:?}: {definition} is a {definition_kind}, but it is attached under {}; move it to {}", attached_as.section(), definition_kind.section())]
    WrongSection {
        /// The component.
        component: String,
        /// The definition's FQN.
        definition: String,
        /// The definition's kind.
        definition_kind: DefinitionKind,
        /// The kind of the section it is attached under.
        attached_as: DefinitionKind,
        /// Where the name is written.
        at: Origin,
    },
    /// One definition attached twice (once by FQN, once by short name).
    #[error("{at}: component {component:?} attaches {definition} twice, as {}; keep one", names.join(" and "))]
    DuplicateAttachment {
        /// The component.
        component: String,
        /// The definition's FQN.
        definition: String,
        /// The names it is attached under.
        names: Vec<String>,
        /// Where the second name is written.
        at: Origin,
    },
    /// A component attaches no resource.
    #[error(
        "{at}: component {component:?} attaches no resource; a component must attach at least one (a Container, for a workload)"
    )]
    NoResources {
        /// The component.
        component: String,
        /// Where the component is declared.
        at: Origin,
    },
    /// An attached value, over its definition's defaults, breaks the definition's schema.
    #[error(
        "{at}: component {component:?}, {definition}: {}{message}",
        path_prefix(path)
    )]
    InvalidValue {
        /// The component.
        component: String,
        /// The definition's FQN.
        definition: String,
        /// JSON pointer into the value; empty for the value itself.
        path: String,
        /// What the schema wanted (the value itself is masked).
        message: String,
        /// Where the definition is attached.
        at: Origin,
    },
    /// Two attached definitions fill the same spec field.
    #[error("{at}: component {component:?}: {} all fill spec field {field:?}; attach only one", definitions.join(", "))]
    FieldClash {
        /// The component.
        component: String,
        /// The field.
        field: String,
        /// The definitions, by FQN.
        definitions: Vec<String>,
        /// Where the component is declared.
        at: Origin,
    },
    /// Two attached definitions give one label key different values.
    #[error("{at}: component {component:?}: label {key} is {:?} from {} but {:?} from {}; attach only one of them", first.value, first.definition, second.value, second.definition)]
    LabelConflict {
        /// The component.
        component: String,
        /// The label key.
        key: String,
        /// One definition and its value.
        first: LabelClaim,
        /// The other.
        second: LabelClaim,
        /// Where the component is declared.
        at: Origin,
    },
    /// No transformer matches a component.
    #[error(
        "{at}: component {component:?} matches no transformer\n    it has: {has}{}",
        no_match_details(candidates)
    )]
    NoMatch {
        /// The component.
        component: String,
        /// Its labels and attached definitions.
        has: Attachments,
        /// Every transformer of the provider, with its requirements and what the component lacks.
        candidates: Vec<Candidate>,
        /// Where the component is declared.
        at: Origin,
    },
    /// Several matching transformers have identical requirements.
    #[error("{at}: multiple exact transformer matches for component {component:?}: {} have identical requirements; differentiate them with requiredLabels or other requirements", transformers.join(", "))]
    MultipleExactMatches {
        /// The component.
        component: String,
        /// The transformers, by FQN.
        transformers: Vec<String>,
        /// Where the component is declared.
        at: Origin,
    },
    /// Attached definitions that no matched transformer names (an error under `--strict`).
    #[error("{at}: component {component:?}: no matched transformer handles {}{}", definitions.join(", "), reasons_text(reasons))]
    Unhandled {
        /// The component.
        component: String,
        /// The unhandled FQNs.
        definitions: Vec<String>,
        /// Why, for those a provider says it cannot honour (`unhandled` of its manifest): the
        /// FQN and the provider's reason.
        reasons: Vec<(String, String)>,
        /// Where the component is declared.
        at: Origin,
    },
    /// A component that matches no transformer, whose labels a provider says it cannot run
    /// (`unhandled` of its manifest): left out of the render (an error under `--strict`).
    #[error(
        "{at}: component {component:?} is left out: provider {provider} cannot run it: {reason}"
    )]
    LeftOut {
        /// The component.
        component: String,
        /// The provider that says so.
        provider: String,
        /// Its reason.
        reason: String,
        /// Where the component is declared.
        at: Origin,
    },
    /// A matched transformer's validation refuses the component: what it would refuse when run.
    #[error("{at}: component {component:?}: transformer {transformer} refuses it: {message}")]
    Refused {
        /// The component.
        component: String,
        /// The transformer.
        transformer: String,
        /// The validation's message.
        message: String,
        /// Where the component is declared.
        at: Origin,
    },
    /// A transformer's validation schema does not compile.
    #[error("transformer {transformer}: validations[{index}].schema does not compile: {error}")]
    InvalidValidation {
        /// The transformer.
        transformer: String,
        /// Which validation.
        index: usize,
        /// What the compiler said.
        error: String,
    },
    /// A patch targets a component the module does not have, or that a condition left out.
    #[error(
        "{at}: patches[{index}] targets component {component:?}, which {}",
        unknown_component(*left_out, similar)
    )]
    PatchComponent {
        /// The patch's position in the module's `patches`.
        index: usize,
        /// The component it names.
        component: String,
        /// Whether a condition left that component out.
        left_out: bool,
        /// Components whose names are close.
        similar: Vec<String>,
        /// Where the patch is written.
        at: Origin,
    },
    /// A transformer names a definition that neither the provider nor the module declares
    /// (a warning: no component can attach it).
    #[error("transformer {transformer} names {definition}, which no definition declares")]
    UnknownRequirement {
        /// The transformer.
        transformer: String,
        /// The FQN it names.
        definition: String,
    },
}

impl Problem {
    /// The component the problem is about, if it is about one.
    pub fn component(&self) -> Option<&str> {
        match self {
            Self::Definition { .. }
            | Self::UnknownRequirement { .. }
            | Self::InvalidValidation { .. }
            | Self::PatchComponent { .. } => None,
            Self::UnknownDefinition { component, .. }
            | Self::AmbiguousDefinition { component, .. }
            | Self::WrongSection { component, .. }
            | Self::DuplicateAttachment { component, .. }
            | Self::NoResources { component, .. }
            | Self::InvalidValue { component, .. }
            | Self::FieldClash { component, .. }
            | Self::LabelConflict { component, .. }
            | Self::NoMatch { component, .. }
            | Self::MultipleExactMatches { component, .. }
            | Self::Unhandled { component, .. }
            | Self::LeftOut { component, .. }
            | Self::Refused { component, .. } => Some(component),
        }
    }
}

/// The providers' reasons for definitions they do not handle, as `Problem::Unhandled` words
/// them after the list.
fn reasons_text(reasons: &[(String, String)]) -> String {
    reasons
        .iter()
        .map(|(fqn, reason)| format!("; {fqn}: {reason}"))
        .collect()
}

fn unknown_component(left_out: bool, similar: &[String]) -> String {
    if left_out {
        "a condition left out; give the patch the same `when`".to_owned()
    } else {
        format!(
            "the module does not have{}",
            crate::names::did_you_mean(similar)
        )
    }
}

fn path_prefix(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("at {path}: ")
    }
}

fn no_match_details(candidates: &[Candidate]) -> String {
    if candidates.is_empty() {
        return "\n    the provider has no transformers".to_owned();
    }
    let mut text =
        String::from("\n    the transformers, what each requires and what the component lacks:");
    for candidate in candidates {
        let lacks: Vec<String> = candidate.missing.iter().map(ToString::to_string).collect();
        text.push_str(&format!(
            "\n    {}\n      requires: {}\n      lacks: {}",
            candidate.transformer,
            describe_requirements(&candidate.requirements),
            lacks.join("; ")
        ));
    }
    text
}

/// A problem with its message, as it appears in the plan's JSON.
#[derive(Serialize)]
struct ProblemJson<'a> {
    message: String,
    #[serde(flatten)]
    problem: &'a Problem,
}

fn problems_with_messages<S: Serializer>(
    problems: &[Problem],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(problems.iter().map(|problem| ProblemJson {
        message: problem.to_string(),
        problem,
    }))
}
