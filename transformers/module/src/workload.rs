//! How a workload's containers restart: the RestartPolicy trait (`restartPolicy.policy`) and,
//! for a job, JobConfig's `backoffLimit`, read once for every platform ([`restart`]), which each
//! provider writes its own way (compose's `restart:`, a Quadlet unit's `Restart=`).
//!
//! ```
//! use opm_guest::{Component, json};
//! use opm_module_common::workload::{Restart, restart};
//!
//! let job = Component::from_value(json!({
//!     "metadata": {"name": "migrate"},
//!     "spec": {"jobConfig": {"backoffLimit": 2}},
//! }))
//! .unwrap();
//! assert_eq!(restart(&job, true, "a job").unwrap(), Restart::OnFailure(2));
//! assert_eq!(restart(&job, false, "a stateless workload").unwrap(), Restart::Always);
//! ```

use opm_guest::{Component, TransformError, Value};

/// Kubernetes' retries of a Job that names none.
pub const DEFAULT_BACKOFF_LIMIT: u64 = 6;

/// How a workload's main container (and sidecars) restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    /// Whenever it stops: a workload that runs until stopped, whose one policy is `Always`.
    Always,
    /// Never: a job whose policy is `Never`, or `OnFailure` with a `backoffLimit` of 0.
    Never,
    /// After a failure, at most this many times (more than 0): a job's `OnFailure` (the
    /// default) with JobConfig's `backoffLimit` (default [`DEFAULT_BACKOFF_LIMIT`]).
    OnFailure(u64),
}

/// How the containers of `component` restart; `job` says whether it runs to completion (a job
/// or a cronjob). `workload` names a workload that runs until stopped in the error that refuses
/// any policy but `Always` for it (`a stateless workload`).
pub fn restart(
    component: &Component,
    job: bool,
    workload: &str,
) -> Result<Restart, TransformError> {
    let policy: Option<Value> = component.field_or_default("restartPolicy")?;
    let policy = policy
        .as_ref()
        .and_then(|p| p.get("policy"))
        .and_then(Value::as_str);
    if !job {
        if let Some(policy) = policy.filter(|policy| *policy != "Always") {
            return Err(TransformError::invalid(format!(
                "restartPolicy.policy {policy:?} is not allowed for {workload}; use Always"
            )));
        }
        return Ok(Restart::Always);
    }
    match policy.unwrap_or("OnFailure") {
        "Never" => Ok(Restart::Never),
        "OnFailure" => {
            let config: Option<Value> = component.field("jobConfig")?;
            let retries = config
                .as_ref()
                .and_then(|c| c.get("backoffLimit"))
                .and_then(Value::as_u64)
                .unwrap_or(DEFAULT_BACKOFF_LIMIT);
            Ok(if retries == 0 {
                Restart::Never
            } else {
                Restart::OnFailure(retries)
            })
        }
        other => Err(TransformError::invalid(format!(
            "restartPolicy.policy {other:?} is not allowed for a job; use OnFailure or Never"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use opm_guest::json;

    use super::*;

    fn component(spec: Value) -> Component {
        Component::from_value(json!({"metadata": {"name": "api"}, "spec": spec})).unwrap()
    }

    #[test]
    fn a_job_retries_its_backoff_limit_on_failure_by_default() {
        let plain = component(json!({}));
        assert_eq!(
            restart(&plain, true, "a job").unwrap(),
            Restart::OnFailure(DEFAULT_BACKOFF_LIMIT)
        );
        let never = component(json!({"restartPolicy": {"policy": "Never"}}));
        assert_eq!(restart(&never, true, "a job").unwrap(), Restart::Never);
        let no_retries = component(json!({"jobConfig": {"backoffLimit": 0}}));
        assert_eq!(restart(&no_retries, true, "a job").unwrap(), Restart::Never);
        let always = component(json!({"restartPolicy": {"policy": "Always"}}));
        assert_eq!(
            restart(&always, true, "a job").unwrap_err().to_string(),
            TransformError::invalid(
                "restartPolicy.policy \"Always\" is not allowed for a job; use OnFailure or Never"
            )
            .to_string()
        );
    }

    #[test]
    fn a_workload_that_runs_until_stopped_restarts_always() {
        assert_eq!(
            restart(&component(json!({})), false, "a daemon workload").unwrap(),
            Restart::Always
        );
        let never = component(json!({"restartPolicy": {"policy": "Never"}}));
        let error = restart(&never, false, "a daemon workload")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(
                "restartPolicy.policy \"Never\" is not allowed for a daemon workload; use Always"
            ),
            "{error}"
        );
    }
}
