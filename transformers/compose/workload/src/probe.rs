//! Probes as compose's one `healthcheck`, and lifecycle hooks as `post_start` and `pre_stop`.
//!
//! Docker runs one health check per container and only reports it: a container whose check
//! fails is marked unhealthy, not restarted, and `depends_on: {condition: service_healthy}`
//! waits for it to pass. That is a readiness probe's meaning, so the readiness probe becomes the
//! health check (else the liveness probe, whose restarts are lost: a warning). A startup probe
//! gives the check its `start_period` — the time the container has to start, during which
//! failures do not count (not `start_interval`, which Docker Engines before 25 refuse).
//!
//! Kubernetes runs HTTP and TCP probes from the kubelet; Docker runs the check inside the
//! container. An `httpGet` probe becomes a shell command trying `wget`, then `curl`; a
//! `tcpSocket` probe `nc -z`, then bash's `/dev/tcp`; a `grpc` probe `grpc_health_probe`. The
//! image needs one of them (a warning says so), or the check never passes: give the probe an
//! `exec` command the image has instead.

use opm_compose_common::seconds;
use opm_guest::{Context, Map, TransformError, Value, json};
use opm_module_common::notes::{caveat, unhonoured};
use opm_module_common::probe::{http_command, port_number, shell_quote};

/// Kubernetes' defaults: probes every 10 s, time out after 1 s, fail after 3 failures.
const PERIOD: u64 = 10;
const TIMEOUT: u64 = 1;
const FAILURES: u64 = 3;

/// The health check of the container `spec` (its probes already replaced by the HealthCheck
/// trait's), if it has a readiness or liveness probe; `path` names it in messages.
pub fn healthcheck(
    context: &Context,
    spec: &Value,
    path: &str,
) -> Result<Option<Value>, TransformError> {
    let readiness = spec.get("readinessProbe");
    let liveness = spec.get("livenessProbe");
    let startup = spec.get("startupProbe");
    let (probe, field) = match (readiness, liveness) {
        (Some(readiness), liveness) => {
            if liveness.is_some() {
                unhonoured(
                    context,
                    &format!(
                        "{path}.livenessProbe: Docker does not restart an unhealthy container, \
                         and a container has one health check, which is the readiness probe"
                    ),
                )?;
            }
            (readiness, "readinessProbe")
        }
        (None, Some(liveness)) => {
            unhonoured(
                context,
                &format!(
                    "{path}.livenessProbe becomes the health check, but Docker only marks an \
                     unhealthy container, it does not restart it"
                ),
            )?;
            (liveness, "livenessProbe")
        }
        (None, None) => {
            if startup.is_some() {
                unhonoured(
                    context,
                    &format!(
                        "{path}.startupProbe: without a readiness or liveness probe there is no \
                         health check for it to delay"
                    ),
                )?;
            }
            return Ok(None);
        }
    };
    let at = format!("{path}.{field}");
    let number = |probe: &Value, field: &str, default: u64| {
        probe.get(field).and_then(Value::as_u64).unwrap_or(default)
    };
    let mut check = Map::new();
    check.insert("test".into(), test(probe, spec, &at)?);
    let period = number(probe, "periodSeconds", PERIOD);
    check.insert("interval".into(), json!(seconds(period)));
    check.insert(
        "timeout".into(),
        json!(seconds(number(probe, "timeoutSeconds", TIMEOUT))),
    );
    check.insert(
        "retries".into(),
        json!(number(probe, "failureThreshold", FAILURES)),
    );
    let delay = number(probe, "initialDelaySeconds", 0);
    match startup {
        Some(startup) => {
            let start_period = number(startup, "initialDelaySeconds", 0)
                + number(startup, "failureThreshold", FAILURES)
                    * number(startup, "periodSeconds", PERIOD);
            check.insert(
                "start_period".into(),
                json!(seconds(start_period.max(delay))),
            );
            // `start_interval` would check at the startup probe's period meanwhile, but Docker
            // Engines before 25 refuse a service that has it.
            let same_check = strip_timing(startup) == strip_timing(probe);
            caveat(&format!(
                "{path}.startupProbe gives the health check its start period ({start_period}s, \
                 during which failures do not count), checked every {period}s{}",
                if same_check {
                    String::new()
                } else {
                    format!(" with the {field}'s check: its own is not run")
                }
            ));
        }
        None if delay > 0 => {
            check.insert("start_period".into(), json!(seconds(delay)));
        }
        None => {}
    }
    if let Some(threshold) = probe.get("successThreshold").and_then(Value::as_u64)
        && threshold > 1
    {
        unhonoured(
            context,
            &format!(
                "{at}.successThreshold {threshold}: Docker counts a container healthy after one \
                 success"
            ),
        )?;
    }
    Ok(Some(Value::Object(check)))
}

/// A probe's check without its timing.
fn strip_timing(probe: &Value) -> Value {
    let mut probe = probe.clone();
    if let Some(fields) = probe.as_object_mut() {
        fields.retain(|key, _| matches!(key.as_str(), "exec" | "httpGet" | "tcpSocket" | "grpc"));
    }
    probe
}

/// The health check's `test` for `probe` of the container `spec`.
fn test(probe: &Value, spec: &Value, at: &str) -> Result<Value, TransformError> {
    if let Some(exec) = probe.get("exec") {
        let command = strings(exec.get("command"));
        if command.is_empty() {
            return Err(TransformError::invalid(format!(
                "{at}.exec.command is empty"
            )));
        }
        let mut test = vec![json!("CMD")];
        test.extend(command.iter().map(|arg| json!(arg)));
        return Ok(Value::Array(test));
    }
    if let Some(http) = probe.get("httpGet") {
        caveat(&format!(
            "{at}.httpGet runs inside the container, with `wget` or else `curl`: the image needs \
             one of them and /bin/sh, or the service never becomes healthy; give the probe an \
             exec command the image has otherwise"
        ));
        return Ok(json!(["CMD-SHELL", http_command(http, spec, at)?]));
    }
    if let Some(tcp) = probe.get("tcpSocket") {
        caveat(&format!(
            "{at}.tcpSocket runs inside the container, with `nc -z` or else bash's /dev/tcp: the \
             image needs one of them, or the service never becomes healthy; give the probe an \
             exec command the image has otherwise"
        ));
        let port = port_number(tcp.get("port"), spec, at)?;
        let host = tcp
            .get("host")
            .and_then(Value::as_str)
            .unwrap_or("127.0.0.1");
        let command = format!(
            "nc -z {host} {port} || bash -c {}",
            shell_quote(&format!("exec 3<>/dev/tcp/{host}/{port}"))
        );
        return Ok(json!(["CMD-SHELL", command]));
    }
    if let Some(grpc) = probe.get("grpc") {
        caveat(&format!(
            "{at}.grpc runs `grpc_health_probe` inside the container: the image needs it, or the \
             service never becomes healthy"
        ));
        let port = port_number(grpc.get("port"), spec, at)?;
        let mut test = vec![
            json!("CMD"),
            json!("grpc_health_probe"),
            json!(format!("-addr=127.0.0.1:{port}")),
        ];
        if let Some(service) = grpc.get("service").and_then(Value::as_str) {
            test.push(json!(format!("-service={service}")));
        }
        return Ok(Value::Array(test));
    }
    Err(TransformError::invalid(format!(
        "{at} needs one of exec, httpGet, tcpSocket, grpc"
    )))
}

/// A lifecycle hook (`postStart`, `preStop`) as a compose hook: `{command}`.
pub fn hook(handler: &Value, spec: &Value, at: &str) -> Result<Value, TransformError> {
    if let Some(exec) = handler.get("exec") {
        let command: Vec<Value> = strings(exec.get("command"))
            .iter()
            .map(|arg| json!(arg))
            .collect();
        return Ok(json!({"command": command}));
    }
    if let Some(http) = handler.get("httpGet") {
        caveat(&format!(
            "{at}.httpGet runs inside the container, with `wget` or else `curl`: the image needs \
             one of them and /bin/sh"
        ));
        let command = http_command(http, spec, at)?;
        return Ok(json!({"command": ["sh", "-c", command]}));
    }
    if let Some(seconds) = handler.pointer("/sleep/seconds").and_then(Value::as_u64) {
        caveat(&format!(
            "{at}.sleep runs `sleep` inside the container: the image needs it"
        ));
        return Ok(json!({"command": ["sleep", seconds.to_string()]}));
    }
    Err(TransformError::invalid(format!(
        "{at} needs one of exec, httpGet, sleep"
    )))
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|item| match item {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(spec: Value) -> (Option<Value>, Vec<(&'static str, String)>) {
        let (result, lines) =
            opm_guest::log::capture(|| healthcheck(&Context::default(), &spec, "container"));
        (result.unwrap(), lines)
    }

    #[test]
    fn an_exec_readiness_probe_is_the_health_check_with_kubernetes_timing() {
        let (check, lines) = check(json!({
            "readinessProbe": {"exec": {"command": ["pg_isready", "-U", "$USER"]}, "periodSeconds": 5},
        }));
        assert_eq!(
            check.unwrap(),
            json!({"test": ["CMD", "pg_isready", "-U", "$USER"], "interval": "5s",
                   "timeout": "1s", "retries": 3})
        );
        assert!(lines.is_empty(), "{lines:?}");
    }

    #[test]
    fn an_http_probe_tries_wget_then_curl_and_says_the_image_needs_them() {
        let (check, lines) = check(json!({
            "ports": {"http": {"containerPort": 8080}},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": "http",
                               "httpHeaders": [{"name": "X-Probe", "value": "it's"}]},
                               "initialDelaySeconds": 5, "timeoutSeconds": 2, "failureThreshold": 6},
        }));
        let check = check.unwrap();
        assert_eq!(
            check["test"],
            json!([
                "CMD-SHELL",
                "wget -q -O /dev/null --header 'X-Probe: it'\\''s' 'http://127.0.0.1:8080/ready' || curl -fsS -o /dev/null -H 'X-Probe: it'\\''s' 'http://127.0.0.1:8080/ready'"
            ])
        );
        assert_eq!(check["start_period"], "5s");
        assert_eq!(check["timeout"], "2s");
        assert_eq!(check["retries"], 6);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].1.contains("`wget` or else `curl`"), "{lines:?}");
    }

    #[test]
    fn a_tcp_probe_uses_nc_or_dev_tcp_and_an_unknown_port_name_is_invalid() {
        let (check, _) = check(json!({"readinessProbe": {"tcpSocket": {"port": 6379}}}));
        assert_eq!(
            check.unwrap()["test"],
            json!([
                "CMD-SHELL",
                "nc -z 127.0.0.1 6379 || bash -c 'exec 3<>/dev/tcp/127.0.0.1/6379'"
            ])
        );
        let error = healthcheck(
            &Context::default(),
            &json!({"readinessProbe": {"tcpSocket": {"port": "redis"}}}),
            "container",
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("\"redis\" is not a port"),
            "{error}"
        );
    }

    #[test]
    fn liveness_is_a_warning_and_startup_gives_the_start_period() {
        let (check, lines) = check(json!({
            "readinessProbe": {"exec": {"command": ["ready"]}},
            "livenessProbe": {"exec": {"command": ["live"]}},
            "startupProbe": {"exec": {"command": ["ready"]}, "failureThreshold": 30, "periodSeconds": 2},
        }));
        let check = check.unwrap();
        assert_eq!(check["test"], json!(["CMD", "ready"]));
        assert_eq!(check["start_period"], "60s");
        assert!(check.get("start_interval").is_none());
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].1.contains("does not restart"), "{lines:?}");
        assert!(
            lines[1]
                .1
                .ends_with("(60s, during which failures do not count), checked every 10s"),
            "{lines:?}"
        );
        let (only_liveness, lines) = check_only_liveness();
        assert_eq!(only_liveness.unwrap()["test"], json!(["CMD", "live"]));
        assert!(lines[0].1.contains("only marks"), "{lines:?}");
    }

    fn check_only_liveness() -> (Option<Value>, Vec<(&'static str, String)>) {
        check(json!({"livenessProbe": {"exec": {"command": ["live"]}}}))
    }

    #[test]
    fn strict_refuses_a_liveness_probe() {
        let strict = Context {
            strict: true,
            ..Context::default()
        };
        let error = healthcheck(
            &strict,
            &json!({"livenessProbe": {"exec": {"command": ["live"]}}}),
            "container",
        )
        .unwrap_err();
        assert!(error.to_string().contains("--strict"), "{error}");
    }

    #[test]
    fn hooks_run_commands_in_the_container() {
        let spec = json!({"ports": {"http": {"containerPort": 8080}}});
        assert_eq!(
            hook(
                &json!({"exec": {"command": ["/bin/drain", "$HOME"]}}),
                &spec,
                "x"
            )
            .unwrap(),
            // Raw: the renderer escapes the `$` with the rest of the file.
            json!({"command": ["/bin/drain", "$HOME"]})
        );
        assert_eq!(
            hook(&json!({"sleep": {"seconds": 5}}), &spec, "x").unwrap(),
            json!({"command": ["sleep", "5"]})
        );
        let http = hook(
            &json!({"httpGet": {"path": "drain", "port": 8080, "scheme": "HTTPS"}}),
            &spec,
            "x",
        )
        .unwrap();
        assert_eq!(
            http["command"][2],
            "wget -q -O /dev/null --no-check-certificate 'https://127.0.0.1:8080/drain' || curl -fsS -o /dev/null -k 'https://127.0.0.1:8080/drain'"
        );
    }
}
