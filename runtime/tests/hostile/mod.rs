//! A hostile OCI registry for tests: a `TcpListener` thread speaking just enough HTTP/1.1 to
//! answer each request with what a [`Route`] says, including bodies that never end. And
//! [`run_measured`], which runs `opm` and measures its peak resident memory.

#![allow(dead_code, reason = "each test binary uses what it needs")]

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the registry sends back for one request.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status line's code and reason, e.g. `"200 OK"`.
    pub status: &'static str,
    /// Headers besides `Connection: close` and the body's length.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Body,
}

/// A reply's body.
#[derive(Debug, Clone)]
pub enum Body {
    /// These bytes, with their `Content-Length`.
    Bytes(Vec<u8>),
    /// This text repeated until the client hangs up, with no length (read until close).
    Endless(&'static str),
}

impl Reply {
    /// A reply with no extra headers.
    pub fn new(status: &'static str, body: Body) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body,
        }
    }

    /// This reply with `name: value` added.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// What a request asked: its method and path (with query).
#[derive(Debug, Clone)]
pub struct Request {
    /// `GET`, `HEAD`, …
    pub method: String,
    /// `/v2/…`.
    pub path: String,
}

/// Answers a request; `address` is the server's own `host:port`.
pub type Route = dyn Fn(&Request, &str) -> Reply + Send + Sync;

/// A hostile registry on a free loopback port, serving until the test process ends.
#[derive(Debug)]
pub struct Hostile {
    /// `host:port`.
    pub address: String,
}

impl Hostile {
    /// Starts serving `route`.
    pub fn start(route: impl Fn(&Request, &str) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let address = listener.local_addr().expect("address").to_string();
        let route: Arc<Route> = Arc::new(route);
        let own = address.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let route = Arc::clone(&route);
                let own = own.clone();
                std::thread::spawn(move || serve(stream, &*route, &own));
            }
        });
        Self { address }
    }

    /// `oci://host:port/path`.
    pub fn oci(&self, path: &str) -> String {
        format!("oci://{}/{path}", self.address)
    }
}

/// Answers every request on `stream` until the client hangs up or a body never ends.
fn serve(stream: TcpStream, route: &Route, address: &str) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut writer = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let request = Request {
            method: parts.next().unwrap_or("").to_owned(),
            path: parts.next().unwrap_or("").to_owned(),
        };
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut skipped = vec![0; length];
        if std::io::Read::read_exact(&mut reader, &mut skipped).is_err() {
            return;
        }
        let reply = route(&request, address);
        let mut head = format!("HTTP/1.1 {}\r\n", reply.status);
        for (name, value) in &reply.headers {
            head += &format!("{name}: {value}\r\n");
        }
        match &reply.body {
            Body::Bytes(bytes) => {
                head += &format!("Content-Length: {}\r\n\r\n", bytes.len());
                let mut out = head.into_bytes();
                if request.method != "HEAD" {
                    out.extend_from_slice(bytes);
                }
                if writer.write_all(&out).is_err() {
                    return;
                }
            }
            Body::Endless(text) => {
                head += "Connection: close\r\n\r\n";
                if writer.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let chunk = text.repeat((64 << 10) / text.len().max(1) + 1);
                while writer.write_all(chunk.as_bytes()).is_ok() {}
                return;
            }
        }
    }
}

/// How a measured run of `opm` went.
#[derive(Debug)]
pub struct Measured {
    /// Its exit code (`None` when a signal ended it).
    pub code: Option<i32>,
    /// What it printed.
    pub stdout: String,
    /// What it printed to stderr.
    pub stderr: String,
    /// Its peak resident memory in bytes as `wait4` reports it (`ru_maxrss`): an upper bound,
    /// since Linux counts in it the memory of the test process that spawned it (the
    /// `vfork`-shared memory it replaced at `exec`).
    pub peak_rss: u64,
    /// The highest `VmHWM` of its own memory seen while it ran, sampled every 10 ms: its own
    /// peak, short of what it reached in its last 10 ms.
    pub sampled_peak: u64,
    /// Whether the watchdog killed it, over [`KILL_RSS`] or [`KILL_AFTER`].
    pub killed: bool,
}

/// The resident memory at which the watchdog kills a run, so that a test of unbounded reading
/// fails instead of exhausting the machine.
pub const KILL_RSS: u64 = 1 << 30;
/// The time after which the watchdog kills a run, so that a hang fails the test.
pub const KILL_AFTER: Duration = Duration::from_secs(120);

/// Runs the `opm` under test with `args` in `dir` (with `HOME` there and no `OPM_REGISTRY` or
/// `DOCKER_CONFIG`) and measures its peak resident memory: as the kernel accounts it on exit, an
/// upper bound that a test can assert on, and as sampled while it ran.
pub fn run_measured(dir: &Path, args: &[&str]) -> Measured {
    #[expect(
        clippy::zombie_processes,
        reason = "wait4 below reaps it, to read its rusage"
    )]
    let mut child = Command::new(env!("CARGO_BIN_EXE_opm"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("OPM_REGISTRY")
        .env_remove("DOCKER_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("opm runs");
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = read(Box::new(child.stdout.take().expect("stdout")));
    let stderr = read(Box::new(child.stderr.take().expect("stderr")));
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    let started = Instant::now();
    let mut killed = false;
    let mut sampled_peak = 0;
    let (status, usage) = loop {
        let mut status = 0;
        // SAFETY: `rusage` is plain data that wait4 fills in; all-zero bytes are a valid value.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is this process's own child, not yet reaped (only this loop reaps it),
        // and both pointers are to live locals of the right types.
        let reaped = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        assert!(reaped >= 0, "wait4: {}", std::io::Error::last_os_error());
        if reaped == pid {
            break (status, usage);
        }
        let (resident, high_water) = memory(child.id());
        sampled_peak = sampled_peak.max(high_water);
        if !killed && (resident > KILL_RSS || started.elapsed() > KILL_AFTER) {
            killed = true;
            // SAFETY: kill has no memory effects; `pid` is our unreaped child, so it cannot
            // name another process.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Measured {
        code,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
        // Linux counts ru_maxrss in kilobytes.
        peak_rss: u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024,
        sampled_peak,
        killed,
    }
}

/// The resident memory of process `pid` now and its high-water mark (`VmRSS`, `VmHWM`), in
/// bytes (0 once it is gone).
fn memory(pid: u32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |kilobytes| kilobytes * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}
