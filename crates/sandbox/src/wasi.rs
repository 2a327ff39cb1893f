//! WASI 0.2 that grants nothing, for components from other toolchains
//! (`docs/host-guest-contract.md#what-the-sandbox-guarantees`).
//!
//! Components built by componentize-js, componentize-py, `wasm32-wasip2` Rust or wasi-libc C
//! import WASI even when they never touch a file. [`add_to_linker`] satisfies every interface
//! [`opm_core::contract::WASI_INTERFACES`] allows with `wasmtime-wasi`, configured per call by
//! [`WasiState::new`] so that a guest
//!
//! - sees no files (no preopens), no environment, no arguments and no working directory;
//! - cannot open a socket or look up a name (TCP, UDP and name lookup are all denied);
//! - reads an empty stdin, and has what it writes to stdout and stderr kept in a buffer of
//!   bounded size — past it, writes still succeed but are dropped and counted — which becomes
//!   the call's log lines, redacted like every other log line;
//! - reads the wall clock and the monotonic clock as the render timestamp, always: two renders
//!   of the same inputs see the same time, and time never moves during a call;
//! - gets randomness from a generator seeded with the call's input (its BLAKE3), so the same
//!   call sees the same bytes in every render;
//! - never waits: a sleep, or a poll on a clock, is ready at once (the clock does not move, so
//!   waiting could only ever hold the render), and nothing else it can poll ever blocks; its
//!   time limit is the epoch deadline like any other guest's;
//! - ends its call when it calls `exit` (see [`super::CallError::Exit`]).
//!
//! A Rust guest built with `opm-guest` for `wasm32-unknown-unknown` imports none of this, and
//! its calls never build a WASI context: [`WasiState`] is made on a guest's first WASI call.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker, Resource};
use wasmtime_wasi::p2::bindings::clocks::monotonic_clock;
use wasmtime_wasi::p2::{DynPollable, OutputStream, Pollable, StreamResult};
use wasmtime_wasi::{ResourceTable, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::call::CallState;

/// Most WASI resources (streams, pollables, …) a call may hold at once.
const MAX_WASI_RESOURCES: usize = 10_000;

/// Most bytes a guest may ask for in one `get-random-bytes` call.
const MAX_RANDOM_BYTES: u64 = 1 << 20;

/// Largest write a guest is told it may make to stdout or stderr at once.
const WRITE_PERMIT: usize = 64 << 10;

/// Adds the deny-all WASI 0.2 implementation to `linker`.
pub(super) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_sync(linker)?;
    // wasmtime-wasi's monotonic clock sleeps for real; ours is fixed and never waits.
    linker.allow_shadowing(true);
    monotonic_clock::add_to_linker::<CallState, HasSelf<CallState>>(linker, |state| state)?;
    linker.allow_shadowing(false);
    Ok(())
}

/// What a call's WASI context is made from, known when the call starts.
#[derive(Debug, Clone)]
pub(super) struct WasiSetup {
    /// The render timestamp, since the Unix epoch.
    pub now: Duration,
    /// The seed of the call's random numbers: the BLAKE3 of its input, or zeros for a
    /// component that does not import `wasi:random` and so cannot read them.
    pub seed: [u8; 32],
    /// Bytes of stdout, and of stderr, kept.
    pub capture_limit: usize,
}

/// A call's WASI context and resource table, made on its first WASI call.
pub(super) struct WasiState {
    ctx: WasiCtx,
    table: ResourceTable,
    stdout: Capture,
    stderr: Capture,
}

impl WasiState {
    pub(super) fn new(setup: &WasiSetup) -> Self {
        let stdout = Capture::new(setup.capture_limit);
        let stderr = Capture::new(setup.capture_limit);
        let mut builder = WasiCtxBuilder::new();
        builder
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .wall_clock(FixedClock(setup.now))
            .monotonic_clock(FixedClock(setup.now))
            .secure_random(SeededRandom::new(setup.seed, b"secure"))
            .insecure_random(SeededRandom::new(setup.seed, b"insecure"))
            .insecure_random_seed(u128::from_le_bytes(
                SeededRandom::new(setup.seed, b"insecure-seed").take16(),
            ))
            .max_random_size(MAX_RANDOM_BYTES)
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_WASI_RESOURCES);
        Self {
            ctx: builder.build(),
            table,
            stdout,
            stderr,
        }
    }

    /// What the guest wrote to stdout and stderr: the bytes kept, and how many were dropped.
    pub(super) fn take_output(&self) -> [(Vec<u8>, u64); 2] {
        [self.stdout.take(), self.stderr.take()]
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        let state = self.wasi();
        WasiCtxView {
            ctx: &mut state.ctx,
            table: &mut state.table,
        }
    }
}

/// The monotonic clock: fixed, and every wait on it over at once.
impl monotonic_clock::Host for CallState {
    fn now(&mut self) -> wasmtime::Result<monotonic_clock::Instant> {
        Ok(self
            .wasi_setup()
            .now
            .as_nanos()
            .try_into()
            .unwrap_or(u64::MAX))
    }

    fn resolution(&mut self) -> wasmtime::Result<monotonic_clock::Instant> {
        Ok(1)
    }

    fn subscribe_instant(
        &mut self,
        _when: monotonic_clock::Instant,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        self.ready_pollable()
    }

    fn subscribe_duration(
        &mut self,
        _duration: monotonic_clock::Duration,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        self.ready_pollable()
    }
}

impl CallState {
    fn ready_pollable(&mut self) -> wasmtime::Result<Resource<DynPollable>> {
        let table = &mut self.wasi().table;
        let ready = table.push(Ready)?;
        wasmtime_wasi::p2::subscribe(table, ready)
    }
}

/// A pollable that is always ready.
struct Ready;

#[wasmtime_wasi::async_trait]
impl Pollable for Ready {
    async fn ready(&mut self) {}
}

/// A clock that always reads the render timestamp.
struct FixedClock(Duration);

impl wasmtime_wasi::HostWallClock for FixedClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        self.0
    }
}

impl wasmtime_wasi::HostMonotonicClock for FixedClock {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        self.0.as_nanos().try_into().unwrap_or(u64::MAX)
    }
}

/// Random bytes from BLAKE3's extendable output, keyed by the call's seed and a purpose: the
/// same for the same call in every render, different for different calls or purposes.
///
/// The output is read a block at a time: `wasmtime-wasi` draws a `u32` for every byte of a
/// `get-random-bytes` (CPython reads some 2,500 at start-up), and the reader compresses a whole
/// block for each read however short. The bytes served are the output's, in order, either way.
struct SeededRandom {
    output: blake3::OutputReader,
    block: [u8; BLOCK],
    /// How much of `block` has been served.
    served: usize,
}

/// BLAKE3's block: what one compression of its output yields.
const BLOCK: usize = 64;

impl SeededRandom {
    fn new(seed: [u8; 32], purpose: &[u8]) -> Self {
        let mut hasher = blake3::Hasher::new_keyed(&seed);
        hasher.update(b"opm sandbox randomness: ");
        hasher.update(purpose);
        Self {
            output: hasher.finalize_xof(),
            block: [0; BLOCK],
            served: BLOCK,
        }
    }

    fn take16(mut self) -> [u8; 16] {
        let mut bytes = [0; 16];
        self.fill(&mut bytes);
        bytes
    }

    fn fill(&mut self, mut dest: &mut [u8]) {
        while !dest.is_empty() {
            if self.served == BLOCK {
                // Whole blocks go straight from the output, several at a time.
                let whole = dest.len() - dest.len() % BLOCK;
                if whole > 0 {
                    let (direct, rest) = dest.split_at_mut(whole);
                    self.output.fill(direct);
                    dest = rest;
                    continue;
                }
                self.output.fill(&mut self.block);
                self.served = 0;
            }
            let n = dest.len().min(BLOCK - self.served);
            let (now, rest) = dest.split_at_mut(n);
            now.copy_from_slice(&self.block[self.served..self.served + n]);
            self.served += n;
            dest = rest;
        }
    }
}

impl rand_core::TryRng for SeededRandom {
    type Error = rand_core::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        let mut bytes = [0; 4];
        self.fill(&mut bytes);
        Ok(u32::from_le_bytes(bytes))
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        let mut bytes = [0; 8];
        self.fill(&mut bytes);
        Ok(u64::from_le_bytes(bytes))
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), Self::Error> {
        self.fill(dest);
        Ok(())
    }
}

/// A guest's stdout or stderr: keeps the first `limit` bytes, drops and counts the rest, and
/// never fails a write (a guest whose `println!` failed would panic).
#[derive(Clone)]
struct Capture(Arc<Mutex<Captured>>);

struct Captured {
    bytes: Vec<u8>,
    limit: usize,
    dropped: u64,
}

impl Capture {
    fn new(limit: usize) -> Self {
        Self(Arc::new(Mutex::new(Captured {
            bytes: Vec::new(),
            limit,
            dropped: 0,
        })))
    }

    fn write(&self, bytes: &[u8]) {
        let mut captured = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let room = captured.limit.saturating_sub(captured.bytes.len());
        let kept = bytes.len().min(room);
        captured.bytes.extend_from_slice(&bytes[..kept]);
        captured.dropped += (bytes.len() - kept) as u64;
    }

    fn take(&self) -> (Vec<u8>, u64) {
        let mut captured = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let dropped = std::mem::take(&mut captured.dropped);
        (std::mem::take(&mut captured.bytes), dropped)
    }
}

impl wasmtime_wasi::cli::IsTerminal for Capture {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl wasmtime_wasi::cli::StdoutStream for Capture {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Capture {
    async fn ready(&mut self) {}
}

impl OutputStream for Capture {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        Capture::write(self, &bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_PERMIT)
    }
}

impl tokio::io::AsyncWrite for Capture {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        bytes: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        Capture::write(&self, bytes);
        std::task::Poll::Ready(Ok(bytes.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// Seconds since the Unix epoch of an RFC 3339 UTC timestamp as the render writes it
/// (`2026-01-01T00:00:00Z`); the epoch itself when it is not one.
pub(super) fn timestamp_since_epoch(timestamp: &str) -> Duration {
    parse_timestamp(timestamp).unwrap_or_default()
}

fn parse_timestamp(text: &str) -> Option<Duration> {
    let text = text.strip_suffix('Z')?;
    let (date, time) = text.split_once('T')?;
    let mut date = date.splitn(3, '-').map(str::parse::<i64>);
    let (year, month, day) = (date.next()?.ok()?, date.next()?.ok()?, date.next()?.ok()?);
    let mut time = time.splitn(3, ':').map(str::parse::<i64>);
    let (hour, minute, second) = (time.next()?.ok()?, time.next()?.ok()?, time.next()?.ok()?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    // Days from 1970-01-01 to the date, in the proleptic Gregorian calendar.
    let shifted = if month <= 2 { year - 1 } else { year };
    let era = shifted.div_euclid(400);
    let year_of_era = shifted - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second;
    Some(Duration::from_secs(u64::try_from(seconds).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_read_as_seconds_since_the_epoch() {
        assert_eq!(
            timestamp_since_epoch("1970-01-01T00:00:00Z"),
            Duration::ZERO
        );
        assert_eq!(
            timestamp_since_epoch("2026-01-01T00:00:00Z"),
            Duration::from_secs(1_767_225_600)
        );
        assert_eq!(
            timestamp_since_epoch("2000-02-29T12:34:56Z"),
            Duration::from_secs(951_827_696)
        );
        assert_eq!(timestamp_since_epoch("yesterday"), Duration::ZERO);
    }

    #[test]
    fn a_capture_keeps_its_limit_and_counts_the_rest() {
        let capture = Capture::new(5);
        capture.write(b"hello, ");
        capture.write(b"world");
        assert_eq!(capture.take(), (b"hello".to_vec(), 7));
        assert_eq!(capture.take(), (Vec::new(), 0));
    }

    #[test]
    fn seeded_randomness_depends_on_seed_and_purpose_only() {
        let bytes = |seed: u8, purpose: &[u8]| SeededRandom::new([seed; 32], purpose).take16();
        assert_eq!(bytes(1, b"secure"), bytes(1, b"secure"));
        assert_ne!(bytes(1, b"secure"), bytes(2, b"secure"));
        assert_ne!(bytes(1, b"secure"), bytes(1, b"insecure"));
    }

    #[test]
    fn seeded_randomness_is_the_output_in_order_however_it_is_read() {
        use rand_core::TryRng as _;
        let mut whole = vec![0; 4000];
        SeededRandom::new([7; 32], b"secure")
            .output
            .fill(&mut whole);
        let mut random = SeededRandom::new([7; 32], b"secure");
        let mut read = Vec::new();
        for round in 0..40 {
            match round % 4 {
                0 => read.extend(random.try_next_u32().unwrap().to_le_bytes()),
                1 => read.extend(random.try_next_u64().unwrap().to_le_bytes()),
                2 => {
                    // Past a block's end, and whole blocks at once.
                    let mut bytes = vec![0; 3 + round * 7];
                    random.try_fill_bytes(&mut bytes).unwrap();
                    read.extend(bytes);
                }
                _ => read.extend(random.try_next_u32().unwrap().to_le_bytes()),
            }
        }
        assert!(read.len() > 2 * BLOCK, "{} bytes read", read.len());
        assert_eq!(read, whole[..read.len()]);
    }
}
