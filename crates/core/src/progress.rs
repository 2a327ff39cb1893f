//! A progress line on stderr while something slow runs, such as compiling a 12–18 MB
//! JavaScript or Python component on its first use. Only on a terminal (and not a `dumb` one):
//! into a file, a pipe or a CI log, opm stays quiet. It appears only once the work has taken a
//! moment, and leaves no trace when it is done.

use std::io::{IsTerminal, Write};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the work runs before the line appears.
const DELAY: Duration = Duration::from_millis(250);
/// How often the line is redrawn.
const TICK: Duration = Duration::from_millis(100);
const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// A running progress line; dropping it clears the line.
#[derive(Debug)]
pub struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Shows `message` with a spinner and the elapsed time on the process's stderr, if it is a
    /// terminal; `None` otherwise.
    pub fn start(message: String) -> Option<Self> {
        Self::start_with(move || message.clone())
    }

    /// [`start`](Self::start) with a line `message` makes afresh at each redraw (a count of
    /// what is done, say).
    pub fn start_with(message: impl Fn() -> String + Send + 'static) -> Option<Self> {
        if !on_terminal() {
            return None;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        // Its own descriptor of stderr: the CLI holds the lock of `std::io::stderr()` while a
        // command runs.
        let terminal = std::fs::File::from(std::io::stderr().as_fd().try_clone_to_owned().ok()?);
        let thread = std::thread::Builder::new()
            .name("opm-progress".into())
            .spawn(move || spin(&message, &flag, terminal))
            .ok()?;
        Some(Self {
            stop,
            thread: Some(thread),
        })
    }
}

fn spin(message: &dyn Fn() -> String, stop: &AtomicBool, mut terminal: std::fs::File) {
    let started = Instant::now();
    let mut shown = false;
    let mut frame = 0;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(TICK);
        let elapsed = started.elapsed();
        if elapsed < DELAY || stop.load(Ordering::Relaxed) {
            continue;
        }
        let _ = write!(
            terminal,
            "\r{} {} {:.1} s\x1b[K",
            FRAMES[frame % FRAMES.len()],
            message(),
            elapsed.as_secs_f64()
        );
        shown = true;
        frame += 1;
    }
    if shown {
        let _ = write!(terminal, "\r\x1b[K");
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The progress of compiling the components `uncached` lists (the size of each not yet in the
/// cache), if there are any; `why` ends the line. `uncached` runs only on a terminal: finding
/// out hashes every component, work a render into a pipe has no use for.
pub fn compiling(why: &str, uncached: impl FnOnce() -> Vec<usize>) -> Option<Progress> {
    if !on_terminal() {
        return None;
    }
    let sizes = uncached();
    if sizes.is_empty() {
        return None;
    }
    let total: usize = sizes.iter().sum();
    Progress::start(format!(
        "compiling {} transformer{} ({}) {why}",
        sizes.len(),
        if sizes.len() == 1 { "" } else { "s" },
        crate::calls::Bytes(total as u64)
    ))
}

/// Whether a progress line can be shown: stderr is a terminal, and not a `dumb` one.
fn on_terminal() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
}
