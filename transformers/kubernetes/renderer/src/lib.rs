//! The Kubernetes renderer ("Kubernetes List Renderer"): writes a render's resources in
//! Kubernetes install order, as one multi-document YAML stream, one JSON `v1` `List`, or with
//! `--split` one YAML file per resource, and refuses two resources that are one object in a
//! cluster (API group, kind, the namespace it lands in, name).
//!
//! The YAML documents themselves are written by the host ([`Chunk::Yaml`]), on its render
//! threads: the renderer decides order, names and framing, and never parses a resource for the
//! YAML forms.

use std::collections::BTreeMap;
use std::fmt;

use opm_guest::{Chunk, Context, File, Options, RenderError, Rendered, Renderer, Value, json};
use opm_k8s_common::is_cluster_scoped;

/// Kinds in install order: a namespaced workload's dependencies (its ServiceAccount, Secrets,
/// ConfigMaps, claims) come before it; every other kind comes last, alphabetically.
pub const INSTALL_ORDER: &[&str] = &[
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
];

/// What makes two resources the same object in a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity<'a> {
    /// The API group (`apps`; empty for the core group).
    pub group: &'a str,
    /// The kind.
    pub kind: &'a str,
    /// The namespace it lands in: its own, else the render's; empty for a cluster-scoped kind.
    pub namespace: &'a str,
    /// The name.
    pub name: &'a str,
}

impl<'a> Identity<'a> {
    /// The identity of `resource` rendered into `target_namespace`.
    pub fn of(resource: &'a Rendered, target_namespace: &'a str) -> Self {
        Self::scoped(
            resource,
            target_namespace,
            is_cluster_scoped(&resource.kind),
        )
    }

    /// [`Identity::of`] for a resource whose kind is known to be `cluster_scoped` or not.
    fn scoped(resource: &'a Rendered, target_namespace: &'a str, cluster_scoped: bool) -> Self {
        let group = resource
            .api_version
            .rsplit_once('/')
            .map_or("", |(group, _)| group);
        let namespace = if cluster_scoped {
            ""
        } else if resource.namespace.is_empty() {
            target_namespace
        } else {
            &resource.namespace
        };
        Self {
            group,
            kind: &resource.kind,
            namespace,
            name: &resource.name,
        }
    }
}

impl fmt::Display for Identity<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.group.is_empty() {
            write!(f, "{}/", self.group)?;
        }
        write!(f, "{} ", self.kind)?;
        if !self.namespace.is_empty() {
            write!(f, "{}/", self.namespace)?;
        }
        write!(f, "{}", self.name)
    }
}

fn rank(kind: &str) -> usize {
    INSTALL_ORDER
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(INSTALL_ORDER.len())
}

/// The identities of a render's resources, with their kinds and namespaces also as numbers
/// (each one's position among the distinct ones, kinds in install order) and the start of
/// their names as a number ([`name_prefix`]). Strings compare byte by byte in WebAssembly, so
/// sorting and comparing compare numbers, and names as strings only where their first eight
/// bytes tie.
pub struct Identities<'a> {
    identities: Vec<Identity<'a>>,
    /// Each resource's kind position, namespace position and name prefix packed into one
    /// number (32, 32 and 64 bits, in that order): ordered as the strings they stand for, equal
    /// for equal strings.
    keys: Vec<u128>,
}

impl<'a> Identities<'a> {
    /// The identities of `resources` rendered into `namespace`.
    pub fn of(resources: &'a [Rendered], namespace: &'a str) -> Self {
        let (kinds, distinct_kinds) =
            positions(resources.iter().map(|r| r.kind.as_str()), |kind| {
                (rank(kind), kind)
            });
        // Whether a kind is cluster-scoped, asked once per kind rather than per resource.
        let cluster_scoped: Vec<bool> = distinct_kinds
            .iter()
            .map(|kind| is_cluster_scoped(kind))
            .collect();
        let identities: Vec<Identity<'a>> = resources
            .iter()
            .zip(&kinds)
            .map(|(resource, &kind)| {
                Identity::scoped(resource, namespace, cluster_scoped[kind as usize])
            })
            .collect();
        let (namespaces, _) = positions(identities.iter().map(|id| id.namespace), |namespace| {
            namespace
        });
        let keys = kinds
            .into_iter()
            .zip(namespaces)
            .zip(&identities)
            .map(|((kind, namespace), id)| {
                u128::from(kind) << 96 | u128::from(namespace) << 64 | name_prefix(id.name)
            })
            .collect();
        Self { identities, keys }
    }

    /// The identity of the resource at `index`.
    pub fn get(&self, index: usize) -> &Identity<'a> {
        &self.identities[index]
    }

    /// Whether the resources at `a` and `b` are one object in a cluster: equal keys are equal
    /// kinds and namespaces, so only the rest of the names and groups are left to compare.
    fn same(&self, a: usize, b: usize) -> bool {
        let (ia, ib) = (&self.identities[a], &self.identities[b]);
        self.keys[a] == self.keys[b] && ia.name == ib.name && ia.group == ib.group
    }
}

/// The first eight bytes of `name` as a big-endian number, zeros past its end. Where two
/// names' prefixes differ, the names are in the order of their prefixes: at the first byte
/// where the prefixes differ, either both names have a byte, or one of them has ended, and
/// its zero, smaller than the other's byte, stands for a name that sorts first as a string.
fn name_prefix(name: &str) -> u128 {
    let mut bytes = [0; 8];
    let length = name.len().min(8);
    bytes[..length].copy_from_slice(&name.as_bytes()[..length]);
    u128::from(u64::from_be_bytes(bytes))
}

/// For each of `keys`, its position among the distinct keys sorted by `sort_key`; and the
/// distinct keys in that order. Keys often repeat the one before, which is tried first.
fn positions<'k, K: Ord>(
    keys: impl Iterator<Item = &'k str>,
    sort_key: impl Fn(&'k str) -> K,
) -> (Vec<u32>, Vec<&'k str>) {
    let position = |index: usize| u32::try_from(index).expect("a wasm32 count");
    let mut seen: BTreeMap<&'k str, u32> = BTreeMap::new();
    let mut distinct: Vec<&'k str> = Vec::new();
    let mut last: Option<(&'k str, u32)> = None;
    let first_seen: Vec<u32> = keys
        .map(|key| match last {
            Some((last_key, index)) if last_key == key => index,
            _ => {
                let index = *seen.entry(key).or_insert_with(|| {
                    distinct.push(key);
                    position(distinct.len() - 1)
                });
                last = Some((key, index));
                index
            }
        })
        .collect();
    let mut sorted: Vec<usize> = (0..distinct.len()).collect();
    sorted.sort_by_key(|&index| sort_key(distinct[index]));
    let mut positions = vec![0; distinct.len()];
    for (sorted_position, &index) in sorted.iter().enumerate() {
        positions[index] = position(sorted_position);
    }
    let in_order = sorted.iter().map(|&index| distinct[index]).collect();
    let keys_positions = first_seen
        .into_iter()
        .map(|index| positions[index as usize])
        .collect();
    (keys_positions, in_order)
}

/// The positions of `resources` in install order: kind rank, kind, namespace, name, group,
/// then producer, so the order is total.
///
/// The resources are sorted on their packed keys, and only each run of equal keys, rare, on
/// the rest: a comparison of the whole order through indices cost two fifths of the
/// renderer's fuel.
pub fn install_order(resources: &[Rendered], identities: &Identities<'_>) -> Vec<usize> {
    let mut keyed: Vec<(u128, usize)> = identities.keys.iter().copied().zip(0..).collect();
    keyed.sort_unstable();
    let mut order: Vec<usize> = keyed.iter().map(|&(_, index)| index).collect();
    let mut start = 0;
    for run in keyed.chunk_by(|a, b| a.0 == b.0) {
        let range = start..start + run.len();
        start = range.end;
        if run.len() > 1 {
            order[range].sort_unstable_by(|&a, &b| {
                let (ia, ib) = (identities.get(a), identities.get(b));
                (ia.name, ia.group)
                    .cmp(&(ib.name, ib.group))
                    .then_with(|| producer(&resources[a]).cmp(&producer(&resources[b])))
                    .then_with(|| a.cmp(&b))
            });
        }
    }
    order
}

fn producer(resource: &Rendered) -> (&str, &str) {
    (&resource.component, &resource.transformer)
}

/// Each resource (by position) that is the same object as one before it in `order`, and why:
/// equal identities are neighbours in install order.
pub fn duplicates(
    resources: &[Rendered],
    identities: &Identities<'_>,
    order: &[usize],
) -> Vec<(u32, String)> {
    let mut refused = Vec::new();
    let mut first = match order.first() {
        Some(&first) => first,
        None => return refused,
    };
    for &index in &order[1..] {
        if !identities.same(index, first) {
            first = index;
            continue;
        }
        let original = &resources[first];
        refused.push((
            index as u32,
            format!(
                "rendered {}, which component {:?} (transformer {}) also rendered",
                identities.get(index),
                original.component,
                original.transformer
            ),
        ));
    }
    refused.sort();
    refused
}

/// The file name of each resource under `--split`, in `order`: `<lowercase-kind>-<name>.yaml`.
///
/// Names never collide. When several resources share kind and name, each of them gets its
/// namespace after an underscore (`deployment-api_staging.yaml`; none for a cluster-scoped one);
/// when that still collides (the same kind in two API groups), the group follows after another
/// underscore (`ingress-web_shop_networking.k8s.io.yaml`, `core` for the core group).
/// Kubernetes names and namespaces never contain `_`, so the three forms cannot meet.
pub fn split_names(identities: &[Identity<'_>]) -> Vec<String> {
    let base: Vec<String> = identities
        .iter()
        .map(|id| format!("{}-{}", id.kind.to_lowercase(), id.name))
        .collect();
    let with_namespace: Vec<String> = identities
        .iter()
        .zip(&base)
        .map(|(id, base)| {
            if id.namespace.is_empty() {
                base.clone()
            } else {
                format!("{base}_{}", id.namespace)
            }
        })
        .collect();
    let count = |names: &[String]| {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for name in names {
            *counts.entry(name.clone()).or_default() += 1;
        }
        counts
    };
    let (base_counts, namespace_counts) = (count(&base), count(&with_namespace));
    identities
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let stem = if base_counts[&base[i]] == 1 {
                base[i].clone()
            } else if namespace_counts[&with_namespace[i]] == 1 {
                with_namespace[i].clone()
            } else {
                let group = if id.group.is_empty() {
                    "core"
                } else {
                    id.group
                };
                format!("{}_{}_{group}", base[i], id.namespace)
            };
            format!("{stem}.yaml")
        })
        .collect()
}

/// Renders Kubernetes manifests.
pub struct KubernetesRenderer;

impl Renderer for KubernetesRenderer {
    fn render(
        resources: &[Rendered],
        context: &Context,
        options: &Options,
    ) -> Result<Vec<File>, RenderError> {
        let namespace = context.namespace.as_str();
        let identities = Identities::of(resources, namespace);
        let order = install_order(resources, &identities);
        let refused = duplicates(resources, &identities, &order);
        if !refused.is_empty() {
            return Err(RenderError::Refused(refused));
        }
        let yaml = |index: usize| Chunk::Yaml(u32::try_from(index).expect("a wasm32 index"));
        if options.split {
            if !options.directory {
                return Err(RenderError::Failed(
                    "--split writes one file per resource: give it --out-dir".into(),
                ));
            }
            let identities: Vec<Identity<'_>> = order
                .iter()
                .map(|&index| identities.get(index).clone())
                .collect();
            return Ok(split_names(&identities)
                .into_iter()
                .zip(&order)
                .map(|(path, &index)| File::new(path, vec![yaml(index)]))
                .collect());
        }
        let (extension, content) = match options.format.as_str() {
            "yaml" => {
                let mut content = Vec::with_capacity(order.len() * 2);
                for &index in &order {
                    content.push(Chunk::Bytes(b"---\n".to_vec()));
                    content.push(yaml(index));
                }
                ("yaml", content)
            }
            "json" => {
                let items = order
                    .iter()
                    .map(|&index| resources[index].value())
                    .collect::<Result<Vec<Value>, _>>()?;
                let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
                let mut text = serde_json::to_string_pretty(&list)
                    .map_err(|e| RenderError::Failed(format!("writing the List: {e}")))?;
                text.push('\n');
                ("json", vec![Chunk::Bytes(text.into_bytes())])
            }
            other => {
                return Err(RenderError::Failed(format!(
                    "the Kubernetes renderer writes yaml or json, not {other:?}"
                )));
            }
        };
        Ok(vec![File::new(
            format!("{}.{extension}", context.name),
            content,
        )])
    }
}

opm_guest::export_renderer!(KubernetesRenderer);

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(api_version: &str, kind: &str, name: &str) -> Rendered {
        Rendered::new(
            "c",
            "t",
            &json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}),
        )
    }

    fn context() -> Context {
        Context {
            name: "shop".into(),
            namespace: "shop".into(),
            ..Context::default()
        }
    }

    fn options(format: &str, split: bool, directory: bool) -> Options {
        Options {
            format: format.into(),
            split,
            directory,
        }
    }

    #[test]
    fn install_order_then_name() {
        let resources = vec![
            resource("apps/v1", "Deployment", "b"),
            resource("example.com/v1", "Widget", "w"),
            resource("v1", "Service", "a"),
            resource("apps/v1", "Deployment", "a"),
            resource("v1", "ServiceAccount", "z"),
        ];
        let identities = Identities::of(&resources, "");
        let order: Vec<String> = install_order(&resources, &identities)
            .into_iter()
            .map(|i| identities.get(i).to_string())
            .collect();
        assert_eq!(
            order,
            [
                "ServiceAccount z",
                "Service a",
                "apps/Deployment a",
                "apps/Deployment b",
                "example.com/Widget w"
            ]
        );
    }

    #[test]
    fn kinds_and_namespaces_as_numbers_order_as_their_strings() {
        // Every kind of the install order, some it does not know, in two groups; namespaces
        // their own, the render's and none; names and producers that collide.
        let kinds: Vec<&str> = INSTALL_ORDER
            .iter()
            .copied()
            .chain(["Widget", "Gadget", "Aardvark"])
            .collect();
        // Names longer and shorter than eight bytes, prefixes of each other, and equal in
        // their first eight bytes.
        let names: Vec<String> = (0..40)
            .map(|i| format!("n{i}"))
            .chain(
                [
                    "a",
                    "ab",
                    "abcdefg",
                    "abcdefgh",
                    "abcdefgh0",
                    "abcdefgh-1",
                    "abcdefgh-10",
                ]
                .map(String::from),
            )
            .chain((0..12).map(|i| format!("web-frontend-{i}")))
            .collect();
        let mut resources = Vec::new();
        let mut seed = 7_u64;
        let mut next = |n: usize| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) as usize % n
        };
        for i in 0..2_000 {
            let kind = kinds[next(kinds.len())];
            let api_version = ["v1", "apps/v1", "example.com/v1"][next(3)];
            let mut value = json!({"apiVersion": api_version, "kind": kind,
                                   "metadata": {"name": names[next(names.len())]}});
            let namespace = ["", "shop", "other", "zeta"][next(4)];
            if !namespace.is_empty() {
                value["metadata"]["namespace"] = json!(namespace);
            }
            let component = format!("c{}", next(3));
            resources.push(Rendered::new(&component, ["T1", "T2"][i % 2], &value));
        }
        let identities = Identities::of(&resources, "shop");
        for (index, resource) in resources.iter().enumerate() {
            assert_eq!(identities.get(index), &Identity::of(resource, "shop"));
        }
        let order = install_order(&resources, &identities);
        let mut expected: Vec<usize> = (0..resources.len()).collect();
        expected.sort_by(|&a, &b| {
            let (ia, ib) = (identities.get(a), identities.get(b));
            (rank(ia.kind), ia.kind, ia.namespace, ia.name, ia.group)
                .cmp(&(rank(ib.kind), ib.kind, ib.namespace, ib.name, ib.group))
                .then_with(|| producer(&resources[a]).cmp(&producer(&resources[b])))
                .then_with(|| a.cmp(&b))
        });
        assert_eq!(order, expected);
        let refused = duplicates(&resources, &identities, &order);
        let same = expected
            .windows(2)
            .filter(|pair| identities.get(pair[0]) == identities.get(pair[1]))
            .count();
        assert!(same > 100, "the mix has duplicates to find: {same}");
        assert_eq!(refused.len(), same);
    }

    #[test]
    fn identity_is_the_namespace_a_resource_lands_in() {
        let of = |value: Value| Identity::of(&Rendered::new("c", "t", &value), "shop").to_string();
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert_eq!(of(config.clone()), "ConfigMap shop/c");
        let mut elsewhere = config;
        elsewhere["metadata"]["namespace"] = json!("other");
        assert_eq!(of(elsewhere), "ConfigMap other/c");
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                          "metadata": {"name": "r", "namespace": "shop"}});
        assert_eq!(of(role), "rbac.authorization.k8s.io/ClusterRole r");
    }

    #[test]
    fn one_object_twice_is_refused_naming_both_producers() {
        let mut explicit = json!({"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "c", "namespace": "shop"}});
        let resources = vec![
            Rendered::new(
                "a",
                "T1",
                &json!({"apiVersion": "v1", "kind": "ConfigMap",
                                              "metadata": {"name": "c"}}),
            ),
            Rendered::new("b", "T2", &explicit),
        ];
        let error =
            KubernetesRenderer::render(&resources, &context(), &options("yaml", false, false))
                .unwrap_err();
        assert_eq!(
            error,
            RenderError::Refused(vec![(
                1,
                "rendered ConfigMap shop/c, which component \"a\" (transformer T1) also rendered"
                    .into()
            )])
        );
        explicit["metadata"]["namespace"] = json!("other");
        let resources = vec![resources[0].clone(), Rendered::new("b", "T2", &explicit)];
        assert!(
            KubernetesRenderer::render(&resources, &context(), &options("yaml", false, false))
                .is_ok()
        );
    }

    #[test]
    fn a_stream_frames_host_written_documents_in_install_order() {
        let resources = vec![
            resource("apps/v1", "Deployment", "api"),
            resource("v1", "Service", "api"),
        ];
        let files =
            KubernetesRenderer::render(&resources, &context(), &options("yaml", false, false))
                .unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(
            files[0].content,
            [
                Chunk::Bytes(b"---\n".to_vec()),
                Chunk::Yaml(1),
                Chunk::Bytes(b"---\n".to_vec()),
                Chunk::Yaml(0)
            ]
        );
    }

    #[test]
    fn json_is_one_list() {
        let resources = vec![resource("v1", "Service", "api")];
        let files =
            KubernetesRenderer::render(&resources, &context(), &options("json", false, false))
                .unwrap();
        let Chunk::Bytes(bytes) = &files[0].content[0] else {
            panic!("bytes")
        };
        let list: Value = serde_json::from_slice(bytes).unwrap();
        assert_eq!(list["kind"], "List");
        assert_eq!(list["items"][0]["metadata"]["name"], "api");
        assert!(
            KubernetesRenderer::render(&resources, &context(), &options("toml", false, false))
                .is_err()
        );
    }

    #[test]
    fn split_names_never_collide() {
        let resources = vec![
            Rendered::new(
                "a",
                "t",
                &json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "api", "namespace": "staging"}}),
            ),
            Rendered::new(
                "a",
                "t",
                &json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "api"}}),
            ),
            Rendered::new(
                "a",
                "t",
                &json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                "metadata": {"name": "web"}}),
            ),
            Rendered::new(
                "a",
                "t",
                &json!({"apiVersion": "example.com/v1", "kind": "Ingress",
                "metadata": {"name": "web"}}),
            ),
            resource("v1", "Service", "api"),
        ];
        let files =
            KubernetesRenderer::render(&resources, &context(), &options("yaml", true, true))
                .unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            names,
            [
                "service-api.yaml",
                "deployment-api_shop.yaml",
                "deployment-api_staging.yaml",
                "ingress-web_shop_example.com.yaml",
                "ingress-web_shop_networking.k8s.io.yaml"
            ]
        );
        assert!(
            KubernetesRenderer::render(&resources, &context(), &options("yaml", true, false))
                .is_err()
        );
    }
}
