//! JobTransformer: renders a run-to-completion workload (`core.opm.dev/workload-type: job`) into
//! a `batch/v1` Job, with the JobConfig trait's settings and a restart policy of OnFailure unless
//! the RestartPolicy trait says Never.

use opm_guest::{Component, Context, TransformError, Transformer, Value, json};
use opm_k8s_common::job::job_spec;
use opm_k8s_common::object_metadata;
use opm_k8s_common::pod::WorkloadKind;

/// Renders job components into Jobs.
pub struct JobTransformer;

impl Transformer for JobTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        Ok(vec![json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": object_metadata(component, context, &context.object_name(component.name())),
            "spec": job_spec(component, context, WorkloadKind::Job)?,
        })])
    }
}

#[cfg(not(feature = "library"))]
opm_guest::export!(JobTransformer);

#[cfg(test)]
mod tests {
    use super::*;

    fn render(spec: Value) -> Result<Vec<Value>, TransformError> {
        let component = Component::from_value(json!({
            "metadata": {"name": "migrate", "labels": {"core.opm.dev/workload-type": "job"}},
            "spec": spec,
        }))?;
        let context = opm_k8s_common::test_context();
        JobTransformer::transform(&component, &context)
    }

    #[test]
    fn minimal_component_becomes_a_job_that_restarts_on_failure() {
        let out = render(json!({"container": {"image": "migrate:1"}})).unwrap();
        assert_eq!(out.len(), 1);
        let job = &out[0];
        assert_eq!(job["apiVersion"], "batch/v1");
        assert_eq!(job["kind"], "Job");
        assert!(job["spec"].get("selector").is_none());
        assert_eq!(
            job["spec"]["template"]["spec"]["restartPolicy"],
            "OnFailure"
        );
    }

    #[test]
    fn the_pod_template_leaves_out_the_module_version() {
        let out = render(json!({"container": {"image": "migrate:1"}})).unwrap();
        let job = &out[0];
        assert_eq!(
            job["metadata"]["labels"]["module.opmodel.dev/version"],
            "1.2.0"
        );
        assert_eq!(
            job["spec"]["template"]["metadata"]["labels"],
            json!({"app.kubernetes.io/instance": "shop", "app.kubernetes.io/name": "migrate"})
        );
    }

    #[test]
    fn maximal_component_renders_job_config_and_every_trait() {
        let out = render(json!({
            "container": {"image": "migrate:1", "args": ["up"]},
            "jobConfig": {"backoffLimit": 3, "completions": 5, "parallelism": 2,
                          "activeDeadlineSeconds": 600, "ttlSecondsAfterFinished": 3600},
            "restartPolicy": {"policy": "Never"},
            "initContainers": {"wait": {"image": "busybox"}},
            "sidecarContainers": {"proxy": {"image": "cloud-sql-proxy"}},
            "volumes": {"scratch": {"emptyDir": {"sizeLimit": "1Gi"}}},
            "persistentStorage": {"out": {"size": "2Gi", "mountPath": "/out"}},
            "podScheduling": {"nodeSelector": {"pool": "batch"}},
            "securityContext": {"runAsNonRoot": true},
            "serviceAccount": {"name": "migrator"},
            "healthCheck": {"liveness": {"exec": {"command": ["true"]}}},
        }))
        .unwrap();
        let spec = &out[0]["spec"];
        assert_eq!(spec["backoffLimit"], 3);
        assert_eq!(spec["completions"], 5);
        assert_eq!(spec["parallelism"], 2);
        assert_eq!(spec["activeDeadlineSeconds"], 600);
        assert_eq!(spec["ttlSecondsAfterFinished"], 3600);
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        assert_eq!(pod["serviceAccountName"], "migrator");
        assert_eq!(pod["securityContext"], json!({"runAsNonRoot": true}));
        assert_eq!(pod["nodeSelector"], json!({"pool": "batch"}));
        assert_eq!(
            pod["volumes"],
            json!([
                {"name": "out", "persistentVolumeClaim": {"claimName": "migrate-out"}},
                {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}},
            ])
        );
        assert_eq!(
            pod["initContainers"],
            json!([{"name": "wait", "image": "busybox"}])
        );
        let main = &pod["containers"][0];
        assert_eq!(main["args"], json!(["up"]));
        assert_eq!(
            main["livenessProbe"],
            json!({"exec": {"command": ["true"]}})
        );
        assert_eq!(
            main["volumeMounts"],
            json!([{"name": "out", "mountPath": "/out"}])
        );
        assert_eq!(
            pod["containers"][1],
            json!({"name": "proxy", "image": "cloud-sql-proxy"})
        );
    }

    #[test]
    fn always_is_not_a_job_restart_policy() {
        let err =
            render(json!({"container": {"image": "x"}, "restartPolicy": {"policy": "Always"}}))
                .unwrap_err();
        assert!(err.to_string().contains("OnFailure or Never"), "{err}");
    }
}
