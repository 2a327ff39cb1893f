//! A guest built for `wasm32-wasip2`: Rust's standard library linked against WASI, so the
//! component imports `wasi:cli`, `wasi:filesystem`, `wasi:sockets`, `wasi:clocks`,
//! `wasi:random` and the rest. It reaches for the WASI capability its component's
//! `wasi.opm.dev/mode` label names, and returns a ConfigMap named after the component, with what
//! it observed in `data`, when it survives:
//!
//! - `print`: a line to stdout and one to stderr (the happy path: both should show as logs);
//! - `read-file`: reads `/etc/passwd`; fails with the io error (no preopens, so it should);
//! - `list-root`: lists `/`, likewise;
//! - `socket`: connects TCP to `127.0.0.1:80` and binds UDP on `127.0.0.1:0`, likewise;
//! - `env-args`: counts environment variables and arguments, and asks for the current directory;
//! - `sleep`: sleeps for an hour;
//! - `busy-poll`: polls the monotonic clock until 10 s have passed (never, if it does not move);
//! - `stdout-forever`: writes to stdout without end;
//! - `exit`: `std::process::exit(3)`;
//! - `clock-random`: the wall clock, the monotonic clock read twice, and 16 random bytes read
//!   twice;
//! - `stdin`: reads stdin to its end and reports how many bytes it got.

use std::io::{Read as _, Write as _};
use std::time::{Duration, Instant, SystemTime};

use opm_guest::{Component, Context, TransformError, Transformer, Value, json};

pub struct Wasi;

impl Transformer for Wasi {
    fn transform(component: &Component, _: &Context) -> Result<Vec<Value>, TransformError> {
        let mode = component.label("wasi.opm.dev/mode").unwrap_or_default();
        let data = observe(mode)?;
        Ok(vec![json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": component.name()},
            "data": data,
        })])
    }
}

/// Does what `mode` says; returns what it saw, or the error WASI gave it.
fn observe(mode: &str) -> Result<Value, TransformError> {
    let failed =
        |what: &str, error: std::io::Error| TransformError::failed(format!("{what}: {error}"));
    Ok(match mode {
        "print" => {
            println!("hello from testing-wasi on stdout");
            eprintln!("hello from testing-wasi on stderr");
            json!({"printed": "true"})
        }
        "read-file" => {
            let bytes =
                std::fs::read("/etc/passwd").map_err(|e| failed("reading /etc/passwd", e))?;
            json!({"bytes": bytes.len().to_string()})
        }
        "list-root" => {
            let entries = std::fs::read_dir("/")
                .map_err(|e| failed("listing /", e))?
                .filter_map(Result::ok)
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect::<Vec<_>>();
            json!({"entries": entries.join(",")})
        }
        "socket" => {
            let udp = std::net::UdpSocket::bind("127.0.0.1:0")
                .map(|socket| format!("{:?}", socket.local_addr()))
                .unwrap_or_else(|error| format!("udp bind: {error}"));
            std::net::TcpStream::connect("127.0.0.1:80")
                .map_err(|e| failed(&format!("tcp connect to 127.0.0.1:80 ({udp})"), e))?;
            json!({"tcp": "connected", "udp": udp})
        }
        "env-args" => {
            let current_dir = match std::env::current_dir() {
                Ok(dir) => dir.display().to_string(),
                Err(error) => format!("error: {error}"),
            };
            json!({
                "vars": std::env::vars().count().to_string(),
                "args": std::env::args().count().to_string(),
                "currentDir": current_dir,
            })
        }
        "sleep" => {
            std::thread::sleep(Duration::from_secs(3600));
            json!({"slept": "3600s"})
        }
        "busy-poll" => {
            let deadline = Instant::now() + Duration::from_secs(10);
            let mut polls: u64 = 0;
            while Instant::now() < deadline {
                polls = std::hint::black_box(polls + 1);
            }
            json!({"polls": polls.to_string()})
        }
        "stdout-forever" => {
            let mut stdout = std::io::stdout();
            loop {
                // An error (a closed stream) does not stop it either.
                let _ = stdout.write_all(b"testing-wasi writes forever\n");
            }
        }
        "exit" => std::process::exit(3),
        "clock-random" => {
            let since_epoch = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|elapsed| elapsed.as_secs().to_string())
                .unwrap_or_else(|error| format!("error: {error}"));
            let first = Instant::now();
            let elapsed = first.elapsed();
            json!({
                "unixSeconds": since_epoch,
                "instantElapsedNanos": elapsed.as_nanos().to_string(),
                "random1": random_hex()?,
                "random2": random_hex()?,
            })
        }
        "stdin" => {
            let mut input = Vec::new();
            std::io::stdin()
                .read_to_end(&mut input)
                .map_err(|e| failed("reading stdin", e))?;
            json!({"stdinBytes": input.len().to_string()})
        }
        other => {
            return Err(TransformError::invalid(format!(
                "unknown wasi.opm.dev/mode {other:?}"
            )));
        }
    })
}

/// 16 bytes from the platform's randomness (WASI `random` in the guest), in hex.
fn random_hex() -> Result<String, TransformError> {
    let mut bytes = [0_u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|error| TransformError::failed(format!("getrandom: {error}")))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

opm_guest::export!(Wasi);
