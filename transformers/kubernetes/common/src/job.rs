//! The Job spec that a Job and a CronJob's `jobTemplate` share: the JobConfig trait's settings
//! and the pod template, whose restart policy defaults to OnFailure as Kubernetes requires.

use opm_guest::{Component, Context, Map, TransformError, Value};

use crate::copy_fields;
use crate::pod::{WorkloadKind, pod_template};

/// The JobConfig fields, in the order they are written out.
pub const JOB_CONFIG_FIELDS: [&str; 5] = [
    "backoffLimit",
    "completions",
    "parallelism",
    "activeDeadlineSeconds",
    "ttlSecondsAfterFinished",
];

/// A `batch/v1` JobSpec for `component`, rendered as a `kind` (Job or CronJob).
pub fn job_spec(
    component: &Component,
    context: &Context,
    kind: WorkloadKind,
) -> Result<Value, TransformError> {
    let pod = pod_template(component, context, kind)?;
    let mut spec = Map::new();
    if let Some(config) = component.field_or_default::<Value>("jobConfig")? {
        copy_fields(&config, &mut spec, &JOB_CONFIG_FIELDS);
    }
    spec.insert("template".into(), pod.template);
    Ok(Value::Object(spec))
}

#[cfg(test)]
mod tests {
    use opm_guest::json;

    use super::*;

    #[test]
    fn job_config_fields_come_before_the_template() {
        let component = Component::from_value(json!({"metadata": {"name": "etl"}, "spec": {
            "container": {"image": "etl"},
            "jobConfig": {"ttlSecondsAfterFinished": 60, "backoffLimit": 2},
        }}))
        .unwrap();
        let spec = job_spec(&component, &Context::default(), WorkloadKind::Job).unwrap();
        let keys: Vec<&str> = spec
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            ["backoffLimit", "ttlSecondsAfterFinished", "template"]
        );
        assert_eq!(spec["template"]["spec"]["restartPolicy"], "OnFailure");
    }
}
