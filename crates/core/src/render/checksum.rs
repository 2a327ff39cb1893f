//! Checksum references: how a workload restarts when the configuration it reads changes.
//!
//! A transformer sees one component, so it cannot know the content of an object that another
//! component renders. It writes a *reference* instead, as the value of an annotation (any
//! `metadata.annotations` in the resource, such as a pod template's); with the Kubernetes
//! provider:
//!
//! ```text
//! checksum.opm.dev/config: "opm:checksum ConfigMap/settings Secret/credentials"
//! ```
//!
//! Each reference is `KIND/NAME` (no API group) or `GROUP/KIND/NAME`, in the namespace the
//! referring resource lands in. Once every call has run, [`resolve`] replaces the value with a
//! checksum (64 hex digits) of the content of the referenced objects this render produced:
//! everything but their `metadata` and `status`, with keys sorted, so labels and the module
//! version do not count. Objects the render does not produce (created by someone else) are left
//! out; when none is produced the annotation is removed. The value is the same for the same
//! content, whatever the thread count, and changes when any referenced object's content does.
//!
//! The content of a secret object (one of the kinds the renderer's provider lists as
//! `renderer.secretKinds`, `Secret` for Kubernetes) never enters the checksum directly. It is
//! first stretched with Argon2id (19 MiB, two passes, the OWASP password-storage setting) salted
//! with the object's namespace and name, so that guessing a value from the annotation costs a
//! memory-hard hash per guess, and a table computed in advance applies only to an object of that
//! same namespace and name. (A value short enough to enumerate can still be found that way,
//! slowly: the annotation is deterministic by design, so it cannot hide a value whose every
//! candidate can be tried. Anyone who can read the rendered object reads it anyway.)
//!
//! That stretch is work the host does after the calls, outside their fuel and time, at a cost
//! the transformers choose by what they reference. So it is bounded per call: the resources
//! one call returned may reference at most [`MAX_SECRETS_PER_CALL`] distinct secret objects of
//! the render; a call over it fails with [`Problem::TooManySecrets`] and none of its references
//! is resolved. Each is stretched once per render however many calls reference it, so a render
//! stretches at most that many per call — about as long as one call's default time limit,
//! which bounds what the call could make the host wait anyway.
//!
//! A stretch costs some 10 ms of CPU and 19 MiB of memory, most of a small render's: so the
//! secret objects are stretched one at a time, in one buffer that the render allocates once and
//! only when it has a secret object to stretch; and a render given a [`Memo`] (the compile
//! cache's, [`resolve_with`]) stretches a content only the first time it meets it on that
//! machine, recalling the result afterwards. The memo's entries are named and authenticated
//! with the cache's key, which only the user can read: without the key, an entry's name says
//! nothing of the content and its value is what the annotation shows anyway.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rayon::prelude::*;
use serde_json::Value;

use super::Resource;
use super::identity::Identity;
use crate::json::sorted;

/// How a reference starts.
pub const MARKER: &str = "opm:checksum ";

/// The BLAKE3 key-derivation context of the checksum.
const CONTEXT: &str = "opm.dev 2026-11 config checksum v1";

/// The most distinct Secrets the checksum references of one call's resources may name.
pub const MAX_SECRETS_PER_CALL: usize = 32;

/// A resource with references: its position, its value, and what they name or why they do
/// not parse.
type Parsed = (usize, Value, Result<BTreeSet<Identity>, String>);

/// Why a resource's references were left as they were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The reference at `index` does not parse.
    BadReference {
        /// The resource's position.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// The call that rendered the resource at `index` (its first resource with a reference)
    /// names more Secrets than [`MAX_SECRETS_PER_CALL`].
    TooManySecrets {
        /// The resource's position.
        index: usize,
        /// How many distinct Secrets of the render its resources name.
        secrets: usize,
    },
}

/// What remembers stretches between renders: the result of stretching `input` (the stretch's
/// parameters, salt and content, [`STRETCH`]), kept where only the user can read it.
pub trait Memo: Sync {
    /// The output remembered for `input`, if any (and sound).
    fn recall(&self, input: &[u8]) -> Option<[u8; 32]>;
    /// Remembers `output` for `input`; failures are ignored (the next render stretches again).
    fn remember(&self, input: &[u8], output: &[u8; 32]);
}

/// What a [`Memo`]'s input starts with: the stretch and its parameters, so that other
/// parameters are never answered with this one's outputs.
pub const STRETCH: &[u8] = b"opm checksum stretch: argon2id v19 m=19456 t=2 p=1 len=32\0";

/// Resolves every checksum reference in `resources`. Returns every [`Problem`]: the resources
/// it names are left as they were.
pub fn resolve(resources: &mut [Resource], secret_kinds: &[String]) -> Vec<Problem> {
    resolve_with(resources, secret_kinds, None)
}

/// [`resolve`], recalling and remembering each secret object's stretch in `memo`.
pub fn resolve_with(
    resources: &mut [Resource],
    secret_kinds: &[String],
    memo: Option<&dyn Memo>,
) -> Vec<Problem> {
    let is_secret = |identity: &Identity| secret_kinds.contains(&identity.kind_reference());
    let marked: Vec<usize> = resources
        .iter()
        .enumerate()
        .filter(|(_, r)| r.json.contains("\"opm:checksum "))
        .map(|(index, _)| index)
        .collect();
    if marked.is_empty() {
        return Vec::new();
    }
    let mut parsed: Vec<Parsed> = marked
        .par_iter()
        .map(|&index| {
            let resource = &resources[index];
            let value = resource.value();
            let wanted = references(&value, &resource.identity.namespace);
            (index, value, wanted)
        })
        .collect();

    let by_identity: HashMap<&Identity, &Resource> = resources
        .iter()
        .rev()
        .map(|resource| (&resource.identity, resource))
        .collect();
    let over = calls_over_the_secret_limit(resources, &parsed, &by_identity, &is_secret);
    let within = |index: usize| !over.contains_key(&call_of(&resources[index]));
    let wanted: BTreeMap<&Identity, &Resource> = parsed
        .iter()
        .filter(|(index, _, _)| within(*index))
        .filter_map(|(_, _, wanted)| wanted.as_ref().ok())
        .flatten()
        .filter_map(|identity| Some((identity, *by_identity.get(identity)?)))
        .collect();
    // Secret objects are stretched one after another, in one buffer (a stretch is memory-hard:
    // two at once would hold twice its memory); the others are digested in parallel.
    let (secrets, others): (Vec<&Resource>, Vec<&Resource>) = wanted
        .into_values()
        .partition(|resource| is_secret(&resource.identity));
    let mut digests: HashMap<Identity, [u8; 32]> = others
        .into_par_iter()
        .map(|resource| {
            let identity = resource.identity.clone();
            (identity, digest(&content(&resource.value())))
        })
        .collect();
    let mut stretcher = Stretcher::new(memo);
    for resource in secrets {
        let identity = resource.identity.clone();
        let stretched = stretcher.stretch(&identity, &content(&resource.value()));
        digests.insert(identity, stretched);
    }
    drop(stretcher);

    let mut problems: Vec<Problem> = over
        .values()
        .map(|&(index, secrets)| Problem::TooManySecrets { index, secrets })
        .collect();
    let mut patched = Vec::new();
    for (index, value, wanted) in &mut parsed {
        match wanted {
            Err(reason) => problems.push(Problem::BadReference {
                index: *index,
                reason: std::mem::take(reason),
            }),
            Ok(_) if within(*index) => {
                let namespace = &resources[*index].identity.namespace;
                patch(value, namespace, &digests);
                patched.push((*index, crate::json::compact(value)));
            }
            Ok(_) => {}
        }
    }
    drop(over);
    for (index, json) in patched {
        resources[index].json = json;
    }
    problems
}

/// The call that rendered `resource`: its component and transformer.
fn call_of(resource: &Resource) -> (&str, &str) {
    (&resource.component, &resource.transformer)
}

/// The calls whose resources' references name more than [`MAX_SECRETS_PER_CALL`] distinct
/// Secrets that the render produced, each with its first referring resource and that count.
fn calls_over_the_secret_limit<'a>(
    resources: &'a [Resource],
    parsed: &[Parsed],
    by_identity: &HashMap<&Identity, &Resource>,
    is_secret: &dyn Fn(&Identity) -> bool,
) -> BTreeMap<(&'a str, &'a str), (usize, usize)> {
    let mut secrets: BTreeMap<(&str, &str), (usize, BTreeSet<&Identity>)> = BTreeMap::new();
    for (index, _, wanted) in parsed {
        let Ok(wanted) = wanted else { continue };
        let (_, named) = secrets
            .entry(call_of(&resources[*index]))
            .or_insert_with(|| (*index, BTreeSet::new()));
        named.extend(
            wanted
                .iter()
                .filter(|identity| is_secret(identity) && by_identity.contains_key(identity)),
        );
    }
    secrets
        .into_iter()
        .filter(|(_, (_, named))| named.len() > MAX_SECRETS_PER_CALL)
        .map(|(call, (index, named))| (call, (index, named.len())))
        .collect()
}

/// Every object the references in `value` name, or why one does not parse.
fn references(value: &Value, namespace: &str) -> Result<BTreeSet<Identity>, String> {
    let mut found = BTreeSet::new();
    let mut error = None;
    visit_references(value, &mut |text| match parse(text, namespace) {
        Ok(identities) => found.extend(identities),
        Err(reason) => {
            error.get_or_insert(reason);
        }
    });
    error.map_or(Ok(found), Err)
}

/// Calls `visit` with every annotation value under `value` that is a reference.
fn visit_references(value: &Value, visit: &mut impl FnMut(&str)) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if key == "metadata"
                    && let Some(Value::Object(annotations)) = child.get("annotations")
                {
                    for text in annotations.values().filter_map(Value::as_str) {
                        if text.starts_with(MARKER) {
                            visit(text);
                        }
                    }
                }
                visit_references(child, visit);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| visit_references(item, visit)),
        _ => {}
    }
}

/// The identities `text` (`opm:checksum REF…`) names, in `namespace`.
fn parse(text: &str, namespace: &str) -> Result<Vec<Identity>, String> {
    let refs = text[MARKER.len()..].split_whitespace();
    let parsed: Vec<Identity> = refs
        .map(|reference| {
            let parts: Vec<&str> = reference.split('/').collect();
            let (group, kind, name) = match parts.as_slice() {
                [kind, name] => ("", *kind, *name),
                [group, kind, name] => (*group, *kind, *name),
                _ => return Err(reference),
            };
            if kind.is_empty() || name.is_empty() {
                return Err(reference);
            }
            Ok(Identity {
                group: group.to_owned(),
                kind: kind.to_owned(),
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            })
        })
        .collect::<Result<_, _>>()
        .map_err(|reference| {
            format!(
                "checksum reference {reference:?} in {text:?} is not KIND/NAME or GROUP/KIND/NAME"
            )
        })?;
    if parsed.is_empty() {
        return Err(format!("checksum reference {text:?} names no object"));
    }
    Ok(parsed)
}

/// Replaces each reference under `value` by the checksum of the objects it names that have a
/// digest, or removes the annotation when none has; an emptied `annotations` goes too.
fn patch(value: &mut Value, namespace: &str, digests: &HashMap<Identity, [u8; 32]>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(metadata)) = map.get_mut("metadata")
                && let Some(Value::Object(annotations)) = metadata.get_mut("annotations")
            {
                annotations.retain(|_, text| {
                    let Some(reference) = text.as_str().filter(|t| t.starts_with(MARKER)) else {
                        return true;
                    };
                    let identities = parse(reference, namespace).unwrap_or_default();
                    match checksum(&identities, digests) {
                        Some(sum) => {
                            *text = Value::String(sum);
                            true
                        }
                        None => false,
                    }
                });
                if annotations.is_empty() {
                    metadata.remove("annotations");
                }
            }
            for child in map.values_mut() {
                patch(child, namespace, digests);
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| patch(item, namespace, digests)),
        _ => {}
    }
}

/// The checksum of the named objects that have digests, in identity order; none if none has.
fn checksum(identities: &[Identity], digests: &HashMap<Identity, [u8; 32]>) -> Option<String> {
    let mut present: Vec<(&Identity, &[u8; 32])> = identities
        .iter()
        .filter_map(|identity| digests.get(identity).map(|digest| (identity, digest)))
        .collect();
    if present.is_empty() {
        return None;
    }
    present.sort();
    present.dedup();
    let mut hasher = blake3::Hasher::new_derive_key(CONTEXT);
    for (identity, digest) in present {
        hasher.update(identity.to_string().as_bytes());
        hasher.update(&[0]);
        hasher.update(digest);
    }
    Some(hasher.finalize().to_hex().to_string())
}

/// What an object's digest covers: all but `metadata` and `status`, keys sorted.
fn content(value: &Value) -> Vec<u8> {
    let mut content = Vec::new();
    if let Value::Object(map) = value {
        let mut keys: Vec<&String> = map
            .keys()
            .filter(|key| !matches!(key.as_str(), "metadata" | "status"))
            .collect();
        keys.sort();
        for key in keys {
            serde_json::to_writer(&mut content, key).expect("a key serializes");
            content.push(b':');
            serde_json::to_writer(&mut content, &sorted(&map[key])).expect("JSON serializes");
            content.push(b',');
        }
    }
    content
}

/// The digest of an object that is not a secret: the BLAKE3 of its [`content`].
fn digest(content: &[u8]) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new_derive_key(CONTEXT);
    hasher.update(content);
    *hasher.finalize().as_bytes()
}

/// The Argon2id blocks of a stretch: 19 MiB ([`STRETCH`]).
const STRETCH_BLOCKS: u32 = 19 * 1024;

/// Stretches secret objects' contents one at a time, in one buffer made on the first stretch
/// that the memo cannot answer.
struct Stretcher<'a> {
    memo: Option<&'a dyn Memo>,
    blocks: Vec<argon2::Block>,
}

impl<'a> Stretcher<'a> {
    fn new(memo: Option<&'a dyn Memo>) -> Self {
        Self {
            memo,
            blocks: Vec::new(),
        }
    }

    /// Argon2id of a secret object's `content`, salted with its namespace and name.
    fn stretch(&mut self, identity: &Identity, content: &[u8]) -> [u8; 32] {
        use argon2::{Algorithm, Argon2, Params, Version};
        let salt = blake3::Hasher::new_derive_key("opm.dev 2026-11 secret checksum salt v1")
            .update(format!("{}/{}", identity.namespace, identity.name).as_bytes())
            .finalize();
        let salt = &salt.as_bytes()[..16];
        let input = self.memo.map(|_| [STRETCH, salt, content].concat());
        if let (Some(memo), Some(input)) = (self.memo, &input)
            && let Some(output) = memo.recall(input)
        {
            return output;
        }
        let params =
            Params::new(STRETCH_BLOCKS, 2, 1, Some(32)).expect("constant Argon2 parameters");
        if self.blocks.is_empty() {
            self.blocks = vec![argon2::Block::default(); STRETCH_BLOCKS as usize];
        }
        let mut out = [0u8; 32];
        Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
            .hash_password_into_with_memory(content, salt, &mut out, &mut self.blocks)
            .expect("Argon2 takes any password, a 16-byte salt and its own block count");
        if let (Some(memo), Some(input)) = (self.memo, &input) {
            memo.remember(input, &out);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The Kubernetes provider's `renderer.secretKinds`.
    fn secret_kinds() -> Vec<String> {
        vec!["Secret".into()]
    }

    fn resource(value: Value) -> Resource {
        Resource::new("c", "t", &value, "shop")
    }

    fn deployment(annotation: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"},
               "spec": {"template": {"metadata": {"labels": {"a": "b"},
                                                  "annotations": {"checksum.opm.dev/config": annotation,
                                                                  "keep": "me"}}}}})
    }

    fn config(value: &str, version: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "settings", "labels": {"module.opmodel.dev/version": version}},
               "data": {"mode": value}})
    }

    fn secret(value: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
               "stringData": {"password": value}})
    }

    fn annotation(resources: &[Resource]) -> Value {
        resources[0].value()["spec"]["template"]["metadata"]["annotations"].clone()
    }

    fn render(objects: Vec<Value>) -> Vec<Resource> {
        let mut resources: Vec<Resource> = objects.into_iter().map(resource).collect();
        assert_eq!(resolve(&mut resources, &secret_kinds()), []);
        resources
    }

    #[test]
    fn a_reference_becomes_a_checksum_of_content_not_metadata() {
        let reference = "opm:checksum ConfigMap/settings Secret/creds";
        let first = render(vec![
            deployment(reference),
            config("fast", "1.0.0"),
            secret("hunter2"),
        ]);
        let sum = annotation(&first)["checksum.opm.dev/config"].clone();
        assert_eq!(sum.as_str().unwrap().len(), 64);
        assert_eq!(annotation(&first)["keep"], "me");
        let relabelled = render(vec![
            deployment(reference),
            config("fast", "2.0.0"),
            secret("hunter2"),
        ]);
        assert_eq!(annotation(&relabelled)["checksum.opm.dev/config"], sum);
        for changed in [
            vec![
                deployment(reference),
                config("slow", "1.0.0"),
                secret("hunter2"),
            ],
            vec![
                deployment(reference),
                config("fast", "1.0.0"),
                secret("hunter3"),
            ],
        ] {
            assert_ne!(annotation(&render(changed))["checksum.opm.dev/config"], sum);
        }
    }

    #[test]
    fn a_secret_value_cannot_be_read_back_or_looked_up() {
        let resources = render(vec![
            deployment("opm:checksum Secret/creds"),
            secret("hunter2"),
        ]);
        let sum = annotation(&resources)["checksum.opm.dev/config"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(!resources[0].json.contains("hunter2"));
        // Not a plain hash of the value or of the content, which a table could reverse.
        for plain in [
            "hunter2".to_owned(),
            "\"stringData\":{\"password\":\"hunter2\"},".to_owned(),
        ] {
            assert_ne!(sum, blake3::hash(plain.as_bytes()).to_hex().to_string());
            let mut hasher = blake3::Hasher::new_derive_key(CONTEXT);
            hasher.update(plain.as_bytes());
            assert_ne!(sum, hasher.finalize().to_hex().to_string());
        }
    }

    #[test]
    fn objects_the_render_does_not_produce_are_left_out_and_none_removes_the_annotation() {
        let resources = render(vec![
            deployment("opm:checksum ConfigMap/elsewhere"),
            config("fast", "1"),
        ]);
        assert_eq!(annotation(&resources), json!({"keep": "me"}));
        let mut only = deployment("opm:checksum ConfigMap/elsewhere");
        only["spec"]["template"]["metadata"]["annotations"]
            .as_object_mut()
            .unwrap()
            .remove("keep");
        let resources = render(vec![only]);
        assert_eq!(annotation(&resources), Value::Null);
    }

    #[test]
    fn a_reference_in_another_namespace_or_malformed_is_not_resolved() {
        let mut resources = vec![resource(deployment("opm:checksum ConfigMap/settings"))];
        let mut elsewhere = config("fast", "1");
        elsewhere["metadata"]["namespace"] = json!("other");
        resources.push(resource(elsewhere));
        assert_eq!(resolve(&mut resources, &secret_kinds()), []);
        assert_eq!(annotation(&resources), json!({"keep": "me"}));
        let mut bad = vec![resource(deployment("opm:checksum settings"))];
        let problems = resolve(&mut bad, &secret_kinds());
        assert!(
            matches!(&problems[..], [Problem::BadReference { index: 0, reason }]
                     if reason.contains("is not KIND/NAME")),
            "{problems:?}"
        );
    }

    /// `count` Secrets named `s0`… rendered by the call (`component`, `t`), and a Deployment of
    /// that call referencing them all.
    fn secrets_and_a_reference(component: &str, count: usize) -> Vec<Resource> {
        let names: Vec<String> = (0..count)
            .map(|i| format!("Secret/{component}-s{i}"))
            .collect();
        let mut referrer = deployment(&format!("opm:checksum {}", names.join(" ")));
        referrer["metadata"]["name"] = json!(component);
        let mut resources = vec![Resource::new(component, "t", &referrer, "shop")];
        for i in 0..count {
            let mut one = secret(&format!("value-{i}"));
            one["metadata"]["name"] = json!(format!("{component}-s{i}"));
            resources.push(Resource::new(component, "t", &one, "shop"));
        }
        resources
    }

    #[test]
    fn a_call_naming_more_secrets_than_the_limit_fails_and_the_others_resolve() {
        let mut resources = secrets_and_a_reference("greedy", MAX_SECRETS_PER_CALL + 1);
        let greedy_json = resources[0].json.clone();
        let modest = secrets_and_a_reference("modest", MAX_SECRETS_PER_CALL);
        let modest_at = resources.len();
        resources.extend(modest);
        let problems = resolve(&mut resources, &secret_kinds());
        assert_eq!(
            problems,
            [Problem::TooManySecrets {
                index: 0,
                secrets: MAX_SECRETS_PER_CALL + 1
            }]
        );
        assert_eq!(resources[0].json, greedy_json, "left as it was");
        let sum = &annotation(&resources[modest_at..])["checksum.opm.dev/config"];
        assert_eq!(sum.as_str().map(str::len), Some(64), "{sum}");
    }

    /// A memo in memory, counting what it is asked.
    #[derive(Default)]
    struct Remembers {
        kept: std::sync::Mutex<HashMap<Vec<u8>, [u8; 32]>>,
        recalled: std::sync::atomic::AtomicUsize,
        remembered: std::sync::atomic::AtomicUsize,
    }

    impl Memo for Remembers {
        fn recall(&self, input: &[u8]) -> Option<[u8; 32]> {
            let found = self.kept.lock().unwrap().get(input).copied();
            if found.is_some() {
                self.recalled
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            found
        }

        fn remember(&self, input: &[u8], output: &[u8; 32]) {
            self.remembered
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.kept.lock().unwrap().insert(input.to_vec(), *output);
        }
    }

    #[test]
    fn a_stretch_is_remembered_and_recalled_rather_than_done_again() {
        use std::sync::atomic::Ordering::SeqCst;
        let objects = || {
            vec![
                resource(deployment("opm:checksum ConfigMap/settings Secret/creds")),
                resource(config("fast", "1")),
                resource(secret("hunter2")),
            ]
        };
        let plain = render(objects().into_iter().map(|r| r.value()).collect());
        let memo = Remembers::default();
        let mut first = objects();
        assert_eq!(resolve_with(&mut first, &secret_kinds(), Some(&memo)), []);
        assert_eq!(
            annotation(&first),
            annotation(&plain),
            "the memo changes no checksum"
        );
        assert_eq!(
            (memo.recalled.load(SeqCst), memo.remembered.load(SeqCst)),
            (0, 1)
        );
        let (input, _) = memo
            .kept
            .lock()
            .unwrap()
            .iter()
            .next()
            .map(|(k, v)| (k.clone(), *v))
            .unwrap();
        assert!(
            input.starts_with(STRETCH),
            "the input names the stretch and its parameters"
        );
        let mut second = objects();
        assert_eq!(resolve_with(&mut second, &secret_kinds(), Some(&memo)), []);
        assert_eq!(annotation(&second), annotation(&plain));
        assert_eq!(
            (memo.recalled.load(SeqCst), memo.remembered.load(SeqCst)),
            (1, 1)
        );
        // What the memo answers is what the checksum is made of: nothing stretched again.
        memo.kept.lock().unwrap().insert(input, [7; 32]);
        let mut third = objects();
        assert_eq!(resolve_with(&mut third, &secret_kinds(), Some(&memo)), []);
        assert_ne!(annotation(&third), annotation(&plain));
    }

    #[test]
    fn secrets_stretched_one_after_another_are_each_their_own() {
        // One buffer serves every stretch of a render: each still depends on its own content
        // and name only.
        let mut two = vec![
            resource(deployment("opm:checksum Secret/creds Secret/other")),
            resource(secret("hunter2")),
        ];
        let mut other = secret("hunter3");
        other["metadata"]["name"] = json!("other");
        two.push(resource(other));
        assert_eq!(resolve(&mut two, &secret_kinds()), []);
        let alone = render(vec![
            deployment("opm:checksum Secret/creds"),
            secret("hunter2"),
        ]);
        let mut stretcher = Stretcher::new(None);
        let creds = two[1].identity.clone();
        let once = stretcher.stretch(&creds, &content(&two[1].value()));
        let again = stretcher.stretch(&creds, &content(&two[1].value()));
        assert_eq!(once, again, "a reused buffer gives the same stretch");
        let want = checksum(
            std::slice::from_ref(&creds),
            &HashMap::from([(creds.clone(), once)]),
        )
        .unwrap();
        assert_eq!(annotation(&alone)["checksum.opm.dev/config"], json!(want));
    }
}
