//! The catalog: every definition a plan can use, from the provider and from the module.
//!
//! [`Catalog::build`] checks each definition (its FQN parses, its field is an identifier, and,
//! for a module's own definitions, its schema compiles), rejects two different definitions under
//! one FQN, and indexes short names so that [`Catalog::resolve`] turns what a module writes
//! (`Container` or the FQN) into a [`Definition`]. [`Definition::apply`] merges a component's
//! value over the definition's defaults and validates the result against its JSON Schema.
//!
//! A provider's definitions are many and a module uses a few: their schemas are compiled when
//! they first validate a value, not when the catalog is built (compiling them all was most of
//! the time of planning a small module). One that does not compile validates nothing and is
//! reported by [`Catalog::schema_errors`] once planning is done.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use super::fqn::{self, Fqn};
use super::validated::{Validated, json_digest};
use super::{DefinitionKind, DefinitionSpec};
use crate::origin::Origin;

/// Where a definition was declared.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum DefinitionSource {
    /// In the provider manifest, named by the provider's name.
    Provider(String),
    /// In the module's `definitions`, at this place.
    Module(Origin),
}

impl fmt::Display for DefinitionSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Provider(name) => write!(f, "provider {name}"),
            Self::Module(origin) => write!(f, "the module at {origin}"),
        }
    }
}

/// A checked definition, ready to resolve, merge and validate values.
#[derive(Clone)]
pub struct Definition {
    /// The FQN.
    pub fqn: String,
    /// Resource, trait or policy.
    pub kind: DefinitionKind,
    /// The spec field its value fills.
    pub field: String,
    /// Labels given to every component attaching it.
    pub labels: BTreeMap<String, String>,
    /// The value a component's value is merged over.
    pub defaults: Option<Value>,
    /// Where it was declared.
    pub source: DefinitionSource,
    schema: Option<std::sync::Arc<Schema>>,
}

/// A definition's JSON Schema, compiled the first time it is needed.
struct Schema {
    schema: Value,
    compiled: std::sync::OnceLock<Result<jsonschema::Validator, String>>,
    /// BLAKE3 of the schema's JSON, the first time a value's validation is looked up
    /// ([`super::validated`]).
    digest: std::sync::OnceLock<[u8; 32]>,
}

impl Schema {
    fn new(schema: Value) -> Self {
        Self {
            schema,
            compiled: std::sync::OnceLock::new(),
            digest: std::sync::OnceLock::new(),
        }
    }

    fn digest(&self) -> &[u8; 32] {
        self.digest.get_or_init(|| json_digest(&self.schema))
    }

    /// The compiled schema, or what the compiler said of it.
    fn compiled(&self) -> &Result<jsonschema::Validator, String> {
        self.compiled.get_or_init(|| {
            jsonschema::Validator::new(&self.schema)
                .map_err(|error| lowercase_first(&error.masked().to_string()))
        })
    }
}

impl fmt::Debug for Definition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Definition")
            .field("fqn", &self.fqn)
            .field("kind", &self.kind)
            .field("field", &self.field)
            .field("labels", &self.labels)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// One way a value breaks its definition's schema. Never holds the value itself.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct SchemaViolation {
    /// JSON pointer into the value (`/ports/http/containerPort`), empty for the value itself.
    pub path: String,
    /// What the schema wanted, with the value masked.
    pub message: String,
}

impl Definition {
    /// Merges `value` over the defaults (maps merge, anything else replaces; a null value takes
    /// the defaults) and validates the result. Returns the merged value and every violation.
    pub fn apply(&self, value: &Value) -> (Value, Vec<SchemaViolation>) {
        self.apply_recalling(value, None)
    }

    /// [`apply`](Self::apply), not validating again what `validated` recalls as found valid by
    /// an earlier render, and telling it what is found valid now (by a schema that compiled).
    pub fn apply_recalling(
        &self,
        value: &Value,
        validated: Option<&Validated<'_>>,
    ) -> (Value, Vec<SchemaViolation>) {
        let merged = match &self.defaults {
            Some(defaults) => merge_over(defaults, value),
            None => value.clone(),
        };
        let named = self
            .schema
            .as_ref()
            .zip(validated)
            .map(|(schema, validated)| (validated, validated.digest(schema.digest(), &merged)));
        if named.is_some_and(|(validated, digest)| validated.recalls(digest)) {
            return (merged, Vec::new());
        }
        let violations = self.validate(&merged);
        let compiled = self
            .schema
            .as_ref()
            .is_some_and(|schema| matches!(schema.compiled.get(), Some(Ok(_))));
        if let Some((validated, digest)) = named
            && violations.is_empty()
            && compiled
        {
            validated.found(digest);
        }
        (merged, violations)
    }

    /// Every way `value` breaks this definition's schema, sorted by path.
    /// A schema that does not compile validates nothing ([`Catalog::schema_errors`] reports it).
    pub fn validate(&self, value: &Value) -> Vec<SchemaViolation> {
        let Some(Ok(validator)) = self.schema.as_ref().map(|schema| schema.compiled()) else {
            return Vec::new();
        };
        let mut violations = Vec::new();
        for error in validator.iter_errors(value) {
            push_violations(&error, &mut violations);
        }
        violations.sort();
        violations.dedup();
        violations
    }
}

/// `value` merged over `defaults`: maps merge key by key, anything else replaces, and a null
/// value keeps the defaults.
pub fn merge_over(defaults: &Value, value: &Value) -> Value {
    match (defaults, value) {
        (_, Value::Null) => defaults.clone(),
        (Value::Object(base), Value::Object(over)) => {
            let mut merged = base.clone();
            for (key, over_value) in over {
                let entry = match base.get(key) {
                    Some(base_value) => merge_over(base_value, over_value),
                    None => over_value.clone(),
                };
                merged.insert(key.clone(), entry);
            }
            Value::Object(merged)
        }
        _ => value.clone(),
    }
}

/// The violations `error` stands for. A `oneOf`/`anyOf` whose forms are told apart by their
/// type (a map or a list of the same entries, a name or an object) and of which only one has
/// the value's type stands for that form's own violations, each at its own path, rather than a
/// list of every form's.
fn push_violations(error: &jsonschema::ValidationError<'_>, violations: &mut Vec<SchemaViolation>) {
    use jsonschema::error::ValidationErrorKind;
    if let ValidationErrorKind::OneOfNotValid { context } | ValidationErrorKind::AnyOf { context } =
        error.kind()
    {
        let here = error.instance_path();
        let mut fitting = context.iter().filter(|form| {
            !form.iter().any(|reason| {
                matches!(reason.kind(), ValidationErrorKind::Type { .. })
                    && reason.instance_path() == here
            })
        });
        if let (Some(form), None) = (fitting.next(), fitting.next()) {
            for reason in form {
                push_violations(reason, violations);
            }
            return;
        }
    }
    violations.push(SchemaViolation {
        path: error.instance_path().to_string(),
        message: describe_violation(error),
    });
}

/// What `error` says, in words for the person who wrote the value. Values are masked, since
/// they may be sensitive. `oneOf`/`anyOf` failures list why each allowed form does not fit.
pub(crate) fn describe_violation(error: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::ValidationErrorKind;
    match error.kind() {
        ValidationErrorKind::FalseSchema => "this field is not allowed here".to_owned(),
        ValidationErrorKind::OneOfNotValid { context } | ValidationErrorKind::AnyOf { context } => {
            let forms: Vec<String> = context
                .iter()
                .map(|form| {
                    let reasons: Vec<String> = form.iter().map(describe_violation).collect();
                    reasons.join(" and ")
                })
                .collect();
            format!(
                "the value fits none of the allowed forms: {}",
                forms.join("; or ")
            )
        }
        _ => lowercase_first(&error.masked_with("the value").to_string()),
    }
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A definition that cannot be used, or two that cannot both be.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "camelCase")]
#[non_exhaustive]
pub enum DefinitionError {
    /// The key of a definition is not an FQN.
    #[error("definition in {declared}: {error}")]
    InvalidFqn {
        /// Where it was declared.
        declared: DefinitionSource,
        /// Why it does not parse.
        #[serde(serialize_with = "serialize_display")]
        error: fqn::FqnError,
    },
    /// The definition's `field` is not a lowerCamelCase identifier.
    #[error("definition {fqn} in {declared}: field {field:?} is not a lowerCamelCase identifier")]
    InvalidField {
        /// The definition.
        fqn: String,
        /// Where it was declared.
        declared: DefinitionSource,
        /// The field as written.
        field: String,
    },
    /// The definition's schema is not a valid JSON Schema (or refers to another document).
    #[error("definition {fqn} in {declared}: invalid JSON Schema: {message}")]
    InvalidSchema {
        /// The definition.
        fqn: String,
        /// Where it was declared.
        declared: DefinitionSource,
        /// What the schema compiler said.
        message: String,
    },
    /// Two different definitions share one FQN.
    #[error(
        "definition {fqn} is defined differently in {first} and in {second}; rename one or make them identical"
    )]
    Conflict {
        /// The FQN.
        fqn: String,
        /// The first declaration.
        first: DefinitionSource,
        /// The other declaration.
        second: DefinitionSource,
    },
}

fn serialize_display<T: fmt::Display, S: serde::Serializer>(
    value: &T,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

/// Why a name written in a module does not resolve to one definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// No definition has this FQN or short name; `similar` lists those it is likely a typo of.
    Unknown {
        /// Close matches, as FQNs.
        similar: Vec<String>,
    },
    /// The short name is shared by several definitions, listed by FQN.
    Ambiguous {
        /// Every definition with that short name.
        candidates: Vec<String>,
    },
}

/// Every usable definition, keyed by FQN, with a short-name index.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    definitions: BTreeMap<String, Definition>,
    by_short_name: BTreeMap<String, Vec<String>>,
}

impl Catalog {
    /// Checks and indexes `declared` definitions, in the order given (provider first, then the
    /// module). A definition that fails a check is left out and reported; of two conflicting
    /// declarations the first is kept.
    pub fn build<'a>(
        declared: impl IntoIterator<Item = (&'a str, &'a DefinitionSpec, DefinitionSource)>,
    ) -> (Self, Vec<DefinitionError>) {
        let mut catalog = Self::default();
        let mut errors = Vec::new();
        let mut specs: BTreeMap<String, (&DefinitionSpec, DefinitionSource)> = BTreeMap::new();
        for (name, spec, source) in declared {
            if let Some((first_spec, first_source)) = specs.get(name) {
                if !same_definition(first_spec, spec) {
                    errors.push(DefinitionError::Conflict {
                        fqn: name.to_owned(),
                        first: first_source.clone(),
                        second: source,
                    });
                }
                continue;
            }
            match check(name, spec, &source) {
                Ok(definition) => {
                    specs.insert(name.to_owned(), (spec, source));
                    catalog.insert(definition);
                }
                Err(error) => errors.push(error),
            }
        }
        (catalog, errors)
    }

    /// Every definition whose schema was compiled and does not compile, by FQN: a provider's,
    /// once a component used it ([`Definition::validate`]).
    pub fn schema_errors(&self) -> Vec<DefinitionError> {
        self.definitions
            .values()
            .filter_map(|definition| {
                let schema = definition.schema.as_ref()?;
                let Some(Err(message)) = schema.compiled.get() else {
                    return None;
                };
                Some(DefinitionError::InvalidSchema {
                    fqn: definition.fqn.clone(),
                    declared: definition.source.clone(),
                    message: message.clone(),
                })
            })
            .collect()
    }

    fn insert(&mut self, definition: Definition) {
        let same_name = self
            .by_short_name
            .entry(fqn::short_name(&definition.fqn).to_owned())
            .or_default();
        same_name.push(definition.fqn.clone());
        same_name.sort();
        self.definitions.insert(definition.fqn.clone(), definition);
    }

    /// The definition named `name`: an FQN, or a short name that only one definition has.
    pub fn resolve(&self, name: &str) -> Result<&Definition, Unresolved> {
        if let Some(definition) = self.definitions.get(name) {
            return Ok(definition);
        }
        if !name.contains('#')
            && let Some(fqns) = self.by_short_name.get(name)
        {
            return match fqns.as_slice() {
                [only] => Ok(&self.definitions[only]),
                many => Err(Unresolved::Ambiguous {
                    candidates: many.to_vec(),
                }),
            };
        }
        // The FQNs of the short names closest to the one written.
        let close = crate::names::suggest(
            fqn::short_name(name),
            self.by_short_name.keys().map(String::as_str),
        );
        let similar = close
            .iter()
            .flat_map(|short| self.by_short_name[short].iter().cloned())
            .collect();
        Err(Unresolved::Unknown { similar })
    }

    /// The definition with this exact FQN.
    pub fn get(&self, fqn: &str) -> Option<&Definition> {
        self.definitions.get(fqn)
    }

    /// Every definition, by FQN.
    pub fn iter(&self) -> impl Iterator<Item = &Definition> {
        self.definitions.values()
    }

    /// How many definitions the catalog holds.
    pub fn len(&self) -> usize {
        self.definitions.len()
    }

    /// Whether the catalog holds no definition.
    pub fn is_empty(&self) -> bool {
        self.definitions.is_empty()
    }
}

/// Two declarations are the same definition when they agree on everything but the description.
fn same_definition(a: &DefinitionSpec, b: &DefinitionSpec) -> bool {
    a.kind == b.kind
        && a.field == b.field
        && a.labels == b.labels
        && a.defaults == b.defaults
        && a.schema == b.schema
}

fn check(
    name: &str,
    spec: &DefinitionSpec,
    source: &DefinitionSource,
) -> Result<Definition, DefinitionError> {
    let parsed = Fqn::parse(name).map_err(|error| DefinitionError::InvalidFqn {
        declared: source.clone(),
        error,
    })?;
    let field = match &spec.field {
        Some(field) if !fqn::is_field(field) => {
            return Err(DefinitionError::InvalidField {
                fqn: name.to_owned(),
                declared: source.clone(),
                field: field.clone(),
            });
        }
        Some(field) => field.clone(),
        None => fqn::default_field(parsed.name()),
    };
    let schema = spec
        .schema
        .as_ref()
        .map(|schema| std::sync::Arc::new(Schema::new(schema.clone())));
    // A module's own definitions are checked now: they are few, and the module's author is who
    // reads the error. A provider's wait until a component uses them.
    if let (Some(schema), DefinitionSource::Module(_)) = (&schema, source)
        && let Err(message) = schema.compiled()
    {
        return Err(DefinitionError::InvalidSchema {
            fqn: name.to_owned(),
            declared: source.clone(),
            message: message.clone(),
        });
    }
    Ok(Definition {
        fqn: name.to_owned(),
        kind: spec.kind,
        field,
        labels: spec.labels.clone(),
        defaults: spec.defaults.clone(),
        source: source.clone(),
        schema,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(
        kind: DefinitionKind,
        schema: Option<Value>,
        defaults: Option<Value>,
    ) -> DefinitionSpec {
        DefinitionSpec {
            kind,
            description: None,
            field: None,
            labels: BTreeMap::new(),
            defaults,
            schema,
        }
    }

    fn provider() -> DefinitionSource {
        DefinitionSource::Provider("test".into())
    }

    #[test]
    fn resolves_fqn_and_unambiguous_short_name() {
        let container = spec(DefinitionKind::Resource, None, None);
        let (catalog, errors) = Catalog::build([(
            "opm.dev/resources/workload@v1#Container",
            &container,
            provider(),
        )]);
        assert!(errors.is_empty());
        assert_eq!(catalog.resolve("Container").unwrap().field, "container");
        assert_eq!(
            catalog
                .resolve("opm.dev/resources/workload@v1#Container")
                .unwrap()
                .kind,
            DefinitionKind::Resource
        );
        assert_eq!(
            catalog.resolve("container").unwrap_err(),
            Unresolved::Unknown {
                similar: vec!["opm.dev/resources/workload@v1#Container".into()]
            }
        );
        assert_eq!(
            catalog.resolve("Contianer").unwrap_err(),
            Unresolved::Unknown {
                similar: vec!["opm.dev/resources/workload@v1#Container".into()]
            },
            "a typo of a short name is suggested too"
        );
    }

    #[test]
    fn ambiguous_short_name_lists_candidates() {
        let a = spec(DefinitionKind::Trait, None, None);
        let (catalog, _) = Catalog::build([
            ("opm.dev/traits/network@v1#Expose", &a, provider()),
            ("acme.io/traits@v2#Expose", &a, provider()),
        ]);
        assert_eq!(
            catalog.resolve("Expose").unwrap_err(),
            Unresolved::Ambiguous {
                candidates: vec![
                    "acme.io/traits@v2#Expose".into(),
                    "opm.dev/traits/network@v1#Expose".into()
                ]
            }
        );
    }

    #[test]
    fn conflicting_duplicate_is_an_error_identical_is_not() {
        let a = spec(
            DefinitionKind::Trait,
            Some(json!({"type": "integer"})),
            None,
        );
        let mut same = a.clone();
        same.description = Some("described".into());
        let b = spec(DefinitionKind::Trait, Some(json!({"type": "string"})), None);
        let module = DefinitionSource::Module(Origin::new("module.yaml", 3, 5));
        let (_, errors) = Catalog::build([
            ("opm.dev/traits/scaling@v1#Replicas", &a, provider()),
            ("opm.dev/traits/scaling@v1#Replicas", &same, module.clone()),
        ]);
        assert!(errors.is_empty());
        let (_, errors) = Catalog::build([
            ("opm.dev/traits/scaling@v1#Replicas", &a, provider()),
            ("opm.dev/traits/scaling@v1#Replicas", &b, module),
        ]);
        assert_eq!(
            errors[0].to_string(),
            "definition opm.dev/traits/scaling@v1#Replicas is defined differently in provider test and in the module at module.yaml:3:5; rename one or make them identical"
        );
    }

    #[test]
    fn defaults_merge_under_the_value_and_violations_hide_the_value() {
        let replicas = spec(
            DefinitionKind::Resource,
            Some(
                json!({"type": "object", "properties": {"image": {"type": "string"}, "port": {"type": "integer"}}, "required": ["image"]}),
            ),
            Some(json!({"port": 80, "pull": "Always"})),
        );
        let (catalog, _) = Catalog::build([(
            "opm.dev/resources/workload@v1#Container",
            &replicas,
            provider(),
        )]);
        let definition = catalog.resolve("Container").unwrap();
        let (merged, violations) = definition.apply(&json!({"image": "x", "pull": "Never"}));
        assert_eq!(merged, json!({"port": 80, "pull": "Never", "image": "x"}));
        assert!(violations.is_empty());
        let (_, violations) =
            definition.apply(&json!({"image": "hunter2-secret", "port": "hunter2-secret"}));
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].path, "/port");
        assert!(
            !violations[0].message.contains("hunter2"),
            "{}",
            violations[0].message
        );
        let (_, violations) = definition.apply(&Value::Null);
        assert_eq!(violations[0].message, "\"image\" is a required property");
    }

    /// A value an earlier render found valid is not validated again, nor its schema compiled; a
    /// value found invalid is never remembered, and is validated (and refused) every time.
    #[test]
    fn a_value_found_valid_before_is_recalled_rather_than_validated() {
        use crate::definitions::validated::{Validated, tests::InMemory};
        let container = spec(
            DefinitionKind::Resource,
            Some(
                json!({"type": "object", "properties": {"image": {"type": "string", "pattern": "^[a-z]+$"}}, "required": ["image"]}),
            ),
            Some(json!({"pull": "Always"})),
        );
        let store = InMemory::default();
        let render = |value: &Value| {
            let (catalog, _) = Catalog::build([(
                "opm.dev/resources/workload@v1#Container",
                &container,
                provider(),
            )]);
            let validated = Validated::recall(&store, b"module.yaml");
            let definition = catalog.resolve("Container").unwrap();
            let (merged, violations) = definition.apply_recalling(value, Some(&validated));
            validated.remember();
            let compiled = definition.schema.as_ref().unwrap().compiled.get().is_some();
            (
                merged,
                violations.len(),
                validated.found_count() == 1,
                compiled,
            )
        };
        let good = json!({"image": "nginx"});
        let merged = json!({"pull": "Always", "image": "nginx"});
        assert_eq!(render(&good), (merged.clone(), 0, true, true), "validated");
        assert_eq!(render(&good), (merged, 0, true, false), "recalled");
        let bad = json!({"image": "NGINX"});
        for _ in 0..2 {
            let (_, violations, remembered, compiled) = render(&bad);
            assert_eq!((violations, remembered, compiled), (1, false, true));
        }
        // What the second render of the good value recalled is still there: a render's
        // remembering replaces the entry with what it found valid, and that render found
        // nothing valid, so it left the entry alone.
        assert!(!render(&good).3, "recalled");
    }

    #[test]
    fn bad_definitions_are_reported() {
        let bad_schema = spec(
            DefinitionKind::Trait,
            Some(json!({"type": "no-such-type"})),
            None,
        );
        let mut bad_field = spec(DefinitionKind::Trait, None, None);
        bad_field.field = Some("Not-A-Field".into());
        let ok = spec(DefinitionKind::Trait, None, None);
        let module = DefinitionSource::Module(Origin::new("module.yaml", 3, 5));
        let (catalog, errors) = Catalog::build([
            ("opm.dev/traits/x@v1#Bad", &bad_schema, module),
            ("opm.dev/traits/x@v1#Field", &bad_field, provider()),
            ("not an fqn", &ok, provider()),
        ]);
        assert!(catalog.is_empty());
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert!(messages[0].contains("invalid JSON Schema"), "{messages:?}");
        assert!(
            messages[1].contains("field \"Not-A-Field\""),
            "{messages:?}"
        );
        assert!(messages[2].contains("is not an FQN"), "{messages:?}");
    }

    /// A provider's schema is compiled when it first validates a value: one that does not
    /// compile validates nothing and is reported by `schema_errors` from then on.
    #[test]
    fn a_provider_definition_s_schema_is_compiled_when_used() {
        let bad = spec(
            DefinitionKind::Trait,
            Some(json!({"type": "no-such-type"})),
            None,
        );
        let good = spec(
            DefinitionKind::Trait,
            Some(json!({"type": "integer"})),
            None,
        );
        let (catalog, errors) = Catalog::build([
            ("opm.dev/traits/x@v1#Bad", &bad, provider()),
            ("opm.dev/traits/x@v1#Good", &good, provider()),
        ]);
        assert!(errors.is_empty(), "{errors:?}");
        assert!(
            catalog.schema_errors().is_empty(),
            "nothing is compiled yet"
        );
        let bad = catalog.resolve("Bad").unwrap();
        assert!(bad.apply(&json!(1)).1.is_empty());
        let good = catalog.resolve("Good").unwrap();
        assert_eq!(good.apply(&json!("x")).1.len(), 1);
        let messages: Vec<String> = catalog
            .schema_errors()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].starts_with("definition opm.dev/traits/x@v1#Bad in provider ")
                && messages[0].contains("invalid JSON Schema"),
            "{messages:?}"
        );
    }
}
