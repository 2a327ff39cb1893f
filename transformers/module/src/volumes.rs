//! The Volumes resource: each entry names one source (`emptyDir`, `configMap`, `secret`,
//! `persistentClaim`, `hostPath`, `projected`, `nfs`, `csi`, `ephemeral`), which each platform
//! renders its own way; and the PersistentStorage trait's entries ([`Storage`]), each a volume
//! of the component's own, named as its claim is on Kubernetes.

use opm_guest::{Component, Context, Map, TransformError, Value};

use crate::sorted_entries;

/// One entry of the PersistentStorage trait.
#[derive(Debug, Clone, PartialEq)]
pub struct Storage {
    /// The entry's name: a pod volume's name.
    pub name: String,
    /// Where the main container mounts it, if anywhere.
    pub mount_path: Option<String>,
    /// The volume's name: the entry's `claimName` (an existing volume's, such as `redisdata`),
    /// else the name the Kubernetes claim has, `<component>-<entry>` for the instance.
    pub volume: String,
    /// The entry's value.
    pub value: Value,
}

impl Storage {
    /// The entries of the component's PersistentStorage trait, in name order.
    pub fn of(component: &Component, context: &Context) -> Result<Vec<Self>, TransformError> {
        let storage: Option<Value> = component.field("persistentStorage")?;
        Ok(sorted_entries(storage.as_ref())
            .into_iter()
            .map(|(name, value)| Self {
                name: name.clone(),
                mount_path: value
                    .get("mountPath")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                volume: value.get("claimName").and_then(Value::as_str).map_or_else(
                    || context.object_name(&format!("{}-{name}", component.name())),
                    str::to_owned,
                ),
                value: value.clone(),
            })
            .collect())
    }
}

/// The source of the Volumes entry `name`, as its kind and its value: the one field `source`
/// has.
pub fn source<'a>(
    name: &str,
    source: &'a Value,
) -> Result<(&'a String, &'a Value), TransformError> {
    match source.as_object().map(|s| s.iter().collect::<Vec<_>>()) {
        Some(entries) if entries.len() == 1 => Ok(entries[0]),
        _ => Err(TransformError::invalid(format!(
            "volumes.{name} must have exactly one of emptyDir, configMap, secret, \
             persistentClaim, hostPath, projected, nfs, csi, ephemeral"
        ))),
    }
}

/// The name of the claim of another component's PersistentStorage entry, which the
/// `persistentClaim` of the Volumes entry `name` refers to as `{component, storage}`:
/// `<component>-<entry>`, for the instance ([`Context::object_name`]), as that component's
/// provider names it.
pub fn shared_claim(
    name: &str,
    reference: &Map<String, Value>,
    context: &Context,
) -> Result<String, TransformError> {
    let (Some(owner), Some(entry)) = (
        reference.get("component").and_then(Value::as_str),
        reference.get("storage").and_then(Value::as_str),
    ) else {
        return Err(TransformError::invalid(format!(
            "volumes.{name}.persistentClaim must be a claim name or {{component, storage}}"
        )));
    };
    Ok(context.object_name(&format!("{owner}-{entry}")))
}

#[cfg(test)]
mod tests {
    use opm_guest::json;

    use super::*;

    #[test]
    fn an_entry_has_exactly_one_source() {
        let entry = json!({"emptyDir": {"medium": "Memory"}});
        let (kind, value) = source("cache", &entry).unwrap();
        assert_eq!(
            (kind.as_str(), value),
            ("emptyDir", &json!({"medium": "Memory"}))
        );
        for wrong in [
            json!({}),
            json!({"emptyDir": {}, "hostPath": {}}),
            json!("cache"),
        ] {
            let error = source("cache", &wrong).unwrap_err().to_string();
            assert!(
                error.contains("volumes.cache must have exactly one of"),
                "{error}"
            );
        }
    }

    #[test]
    fn a_shared_claim_is_named_for_its_owner_and_the_instance() {
        let reference = json!({"component": "db", "storage": "data", "readOnly": true});
        let reference = reference.as_object().unwrap();
        assert_eq!(
            shared_claim("db", reference, &Context::default()).unwrap(),
            "db-data"
        );
        let instance = crate::test_second_instance(Context::default());
        assert_eq!(
            shared_claim("db", reference, &instance).unwrap(),
            "shop-eu-db-data"
        );
        let half = json!({"component": "db"});
        let error = shared_claim("db", half.as_object().unwrap(), &instance)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(
                "volumes.db.persistentClaim must be a claim name or {component, storage}"
            ),
            "{error}"
        );
    }
}
