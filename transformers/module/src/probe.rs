//! A probe run inside the container, as Docker's and Podman's health checks run it: the
//! kubelet runs an `httpGet` probe from the node, a container engine runs a command in the
//! container, so the probe becomes a shell command of tools the image must have.
//!
//! - [`http_command`]: an `httpGet` probe (or hook) as `wget …, else curl …`, as the kubelet
//!   sends it: to `127.0.0.1` unless the probe names a host (inside the container `localhost`
//!   may be IPv6's `::1`, where a server listening on IPv4 only is not), HTTPS without checking
//!   the certificate, with the probe's `httpHeaders`, each word quoted for `/bin/sh`;
//! - [`port_number`]: a probe's port, a number or the name of one of the container's ports;
//! - [`shell_quote`]: one word for `/bin/sh`.
//!
//! The command is shell text; each provider writes it as its platform reads it (compose's
//! `CMD-SHELL`, Quadlet's `HealthCmd=` escaped for systemd).
//!
//! ```
//! use opm_guest::json;
//! use opm_module_common::probe::http_command;
//! let spec = json!({"ports": {"http": {"containerPort": 8080}}});
//! let command = http_command(&json!({"path": "/ready", "port": "http"}), &spec, "container.readinessProbe").unwrap();
//! assert_eq!(command, "wget -q -O /dev/null 'http://127.0.0.1:8080/ready' || \
//!                      curl -fsS -o /dev/null 'http://127.0.0.1:8080/ready'");
//! ```

use opm_guest::{TransformError, Value};

/// A shell command that fetches an `httpGet` probe's URL, failing on an HTTP error (Kubernetes
/// counts 200 to 399 as success; both tools fail on 400 and above); `spec` is the container's,
/// for a named port, and `at` names the probe in messages. The engine's timeout bounds it
/// (busybox's `wget -T` crashes in some builds).
pub fn http_command(http: &Value, spec: &Value, at: &str) -> Result<String, TransformError> {
    let port = port_number(http.get("port"), spec, at)?;
    let host = http
        .get("host")
        .and_then(Value::as_str)
        .unwrap_or("127.0.0.1");
    let scheme = match http.get("scheme").and_then(Value::as_str) {
        Some("HTTPS") => "https",
        _ => "http",
    };
    let path = http.get("path").and_then(Value::as_str).unwrap_or("/");
    let path = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    };
    let url = shell_quote(&format!("{scheme}://{host}:{port}{path}"));
    let mut wget = String::from("wget -q -O /dev/null");
    let mut curl = String::from("curl -fsS -o /dev/null");
    if scheme == "https" {
        // The kubelet does not verify a probe's certificate either.
        wget.push_str(" --no-check-certificate");
        curl.push_str(" -k");
    }
    for header in http
        .get("httpHeaders")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = header
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let value = header
            .get("value")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let header = shell_quote(&format!("{name}: {value}"));
        wget.push_str(&format!(" --header {header}"));
        curl.push_str(&format!(" -H {header}"));
    }
    Ok(format!("{wget} {url} || {curl} {url}"))
}

/// A port of a probe: a number, or the name of a port of the container `spec`; `at` names the
/// probe in messages.
pub fn port_number(port: Option<&Value>, spec: &Value, at: &str) -> Result<u64, TransformError> {
    match port {
        Some(Value::Number(number)) => number
            .as_u64()
            .ok_or_else(|| TransformError::invalid(format!("{at}: port {number} is not a port"))),
        Some(Value::String(name)) => match name.parse::<u64>() {
            Ok(number) => Ok(number),
            Err(_) => spec
                .pointer(&format!("/ports/{name}/containerPort"))
                .and_then(Value::as_u64)
                .ok_or_else(|| {
                    TransformError::invalid(format!(
                        "{at}: port {name:?} is not a port of the container"
                    ))
                }),
        },
        _ => Err(TransformError::invalid(format!("{at}.port is required"))),
    }
}

/// `text` as one `/bin/sh` word, in single quotes.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use opm_guest::json;

    use super::*;

    #[test]
    fn https_skips_the_certificate_check_and_headers_are_quoted() {
        let command = http_command(
            &json!({"scheme": "HTTPS", "host": "api.local", "port": 8443, "path": "health",
                    "httpHeaders": [{"name": "X-Probe", "value": "it's"}]}),
            &json!({}),
            "container.livenessProbe",
        )
        .unwrap();
        assert_eq!(
            command,
            "wget -q -O /dev/null --no-check-certificate --header 'X-Probe: it'\\''s' \
             'https://api.local:8443/health' || curl -fsS -o /dev/null -k -H 'X-Probe: it'\\''s' \
             'https://api.local:8443/health'"
        );
    }

    #[test]
    fn a_port_is_a_number_or_a_port_of_the_container() {
        let spec = json!({"ports": {"http": {"containerPort": 8080}}});
        let at = "container.readinessProbe";
        assert_eq!(port_number(Some(&json!(80)), &spec, at).unwrap(), 80);
        assert_eq!(port_number(Some(&json!("81")), &spec, at).unwrap(), 81);
        assert_eq!(port_number(Some(&json!("http")), &spec, at).unwrap(), 8080);
        let error = port_number(Some(&json!("grpc")), &spec, at).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("container.readinessProbe: port \"grpc\" is not a port"),
            "{error}"
        );
        let error = port_number(None, &spec, at).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("container.readinessProbe.port is required"),
            "{error}"
        );
    }
}
