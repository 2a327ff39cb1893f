//! CronJobTransformer: renders a scheduled workload (`core.opm.dev/workload-type: cronjob` with
//! the Schedule trait) into a `batch/v1` CronJob whose `jobTemplate` is the Job spec a Job would
//! get.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::job::job_spec;
use opm_k8s_common::pod::WorkloadKind;
use opm_k8s_common::{copy_fields, object_metadata, template_labels};

/// Renders cronjob components into CronJobs.
pub struct CronJobTransformer;

impl Transformer for CronJobTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let schedule: Value = component.require("schedule")?;
        let cron = schedule
            .get("cron")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                TransformError::invalid(format!(
                    "component {:?}: schedule.cron is required",
                    component.name()
                ))
            })?;
        let mut spec = Map::new();
        spec.insert("schedule".into(), Value::from(cron));
        copy_fields(
            &schedule,
            &mut spec,
            &[
                "timeZone",
                "concurrencyPolicy",
                "suspend",
                "startingDeadlineSeconds",
                "successfulJobsHistoryLimit",
                "failedJobsHistoryLimit",
            ],
        );
        spec.insert(
            "jobTemplate".into(),
            json!({
                "metadata": {"labels": template_labels(component, context)},
                "spec": job_spec(component, context, WorkloadKind::CronJob)?,
            }),
        );
        Ok(vec![json!({
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": object_metadata(component, context, &context.object_name(component.name())),
            "spec": spec,
        })])
    }
}

#[cfg(not(feature = "library"))]
opm_guest::export!(CronJobTransformer);

#[cfg(test)]
mod tests {
    use super::*;

    fn render(spec: Value) -> Result<Vec<Value>, TransformError> {
        let component = Component::from_value(json!({
            "metadata": {"name": "cleanup", "labels": {"core.opm.dev/workload-type": "cronjob"}},
            "spec": spec,
        }))?;
        let context = opm_k8s_common::test_context();
        CronJobTransformer::transform(&component, &context)
    }

    #[test]
    fn minimal_component_becomes_a_cronjob() {
        let out =
            render(json!({"container": {"image": "cleanup:1"}, "schedule": {"cron": "0 3 * * *"}}))
                .unwrap();
        assert_eq!(out.len(), 1);
        let cron = &out[0];
        assert_eq!(cron["kind"], "CronJob");
        assert_eq!(cron["spec"]["schedule"], "0 3 * * *");
        let pod = &cron["spec"]["jobTemplate"]["spec"]["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "OnFailure");
        assert_eq!(pod["containers"][0]["name"], "cleanup");
    }

    #[test]
    fn job_and_pod_templates_leave_out_the_module_version() {
        let out =
            render(json!({"container": {"image": "cleanup:1"}, "schedule": {"cron": "0 3 * * *"}}))
                .unwrap();
        let cron = &out[0];
        assert_eq!(
            cron["metadata"]["labels"]["module.opmodel.dev/version"],
            "1.2.0"
        );
        let labels =
            json!({"app.kubernetes.io/instance": "shop", "app.kubernetes.io/name": "cleanup"});
        let job = &cron["spec"]["jobTemplate"];
        assert_eq!(job["metadata"]["labels"], labels);
        assert_eq!(job["spec"]["template"]["metadata"]["labels"], labels);
    }

    #[test]
    fn maximal_component_renders_schedule_job_config_and_traits() {
        let out = render(json!({
            "container": {"image": "cleanup:1"},
            "schedule": {"cron": "*/5 * * * *", "timeZone": "Europe/Paris",
                         "concurrencyPolicy": "Forbid", "suspend": false,
                         "startingDeadlineSeconds": 120, "successfulJobsHistoryLimit": 1,
                         "failedJobsHistoryLimit": 3},
            "jobConfig": {"backoffLimit": 1, "ttlSecondsAfterFinished": 300},
            "restartPolicy": {"policy": "Never"},
            "serviceAccount": {"create": true},
            "securityContext": {"runAsNonRoot": true},
            "podScheduling": {"priorityClassName": "low"},
            "volumes": {"tmp": {"emptyDir": {}}},
            "initContainers": {"a": {"image": "a"}},
            "sidecarContainers": {"b": {"image": "b"}},
            "persistentStorage": {"archive": {"size": "1Gi", "mountPath": "/archive"}},
            "healthCheck": {"liveness": {"exec": {"command": ["true"]}}},
        }))
        .unwrap();
        let spec = &out[0]["spec"];
        assert_eq!(spec["timeZone"], "Europe/Paris");
        assert_eq!(spec["concurrencyPolicy"], "Forbid");
        assert_eq!(spec["suspend"], false);
        assert_eq!(spec["failedJobsHistoryLimit"], 3);
        assert_eq!(spec["startingDeadlineSeconds"], 120);
        assert_eq!(spec["successfulJobsHistoryLimit"], 1);
        let job = &spec["jobTemplate"]["spec"];
        assert_eq!(job["backoffLimit"], 1);
        assert_eq!(job["ttlSecondsAfterFinished"], 300);
        let pod = &job["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        assert_eq!(pod["serviceAccountName"], "cleanup");
        assert_eq!(pod["securityContext"], json!({"runAsNonRoot": true}));
        assert_eq!(pod["priorityClassName"], "low");
        assert_eq!(
            pod["volumes"],
            json!([
                {"name": "archive", "persistentVolumeClaim": {"claimName": "cleanup-archive"}},
                {"name": "tmp", "emptyDir": {}},
            ])
        );
        assert_eq!(pod["initContainers"], json!([{"name": "a", "image": "a"}]));
        let main = &pod["containers"][0];
        assert_eq!(
            main["livenessProbe"],
            json!({"exec": {"command": ["true"]}})
        );
        assert_eq!(
            main["volumeMounts"],
            json!([{"name": "archive", "mountPath": "/archive"}])
        );
        assert_eq!(pod["containers"][1], json!({"name": "b", "image": "b"}));
    }

    #[test]
    fn a_cronjob_without_a_schedule_is_invalid() {
        let err = render(json!({"container": {"image": "x"}})).unwrap_err();
        assert!(err.to_string().contains("spec.schedule"), "{err}");
    }
}
