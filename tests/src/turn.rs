//! Turns on the machine. A test that loads the machine (a thousand jobs through several pollers)
//! or times arrivals takes it [`alone`]: starved of CPU, an emulator answers a call after the
//! SDK's 5-second attempt timeout and the SDK sends it again (on a standard queue a second copy
//! the test would count against the poller), a receipt comes late, and a run's partitions wait
//! for each other past their bound. Every other test takes a [`shared`] turn when it starts its
//! emulator ([`crate::Emulator::start`]). `make test` runs the `alone` tests in a phase of their
//! own, nothing else running; the turns keep the same order wherever tests run side by side
//! (the threads of one `cargo test`, or two passes started by hand).
//!
//! The turns are `flock`s on two files under `target/`, so they hold across test threads, test
//! processes (nextest runs each test in its own) and both passes, and the kernel drops them with
//! the process however it ends. An `alone` test first closes the gate, so that no new shared turn
//! begins while it waits for the running ones to end (without it, a stream of shared tests could
//! keep it waiting to the end of the pass), then takes the machine.

use std::cell::RefCell;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// A turn on the machine, held while any clone of it lives. When it ends it adds a line to
/// `target/e2e-turns.tsv` (backend, test, turn, seconds waited, seconds held), from which
/// `scripts/test_times.py` tells a test's own time from its wait.
#[derive(Debug)]
pub struct Turn {
    _machine: File,
    pub alone: bool,
    waited: Duration,
    since: Instant,
}

impl Drop for Turn {
    fn drop(&mut self) {
        let test = std::env::var("NEXTEST_TEST_NAME")
            .ok()
            .or_else(|| std::thread::current().name().map(str::to_owned))
            .unwrap_or_default();
        let line = format!(
            "{}\t{test}\t{}\t{:.1}\t{:.1}\n",
            crate::emulator::Backend::current().name(),
            if self.alone { "alone" } else { "shared" },
            self.waited.as_secs_f64(),
            self.since.elapsed().as_secs_f64()
        );
        let path = crate::workspace_root().join("target/e2e-turns.tsv");
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

thread_local! {
    /// The turn this thread's test holds: a test takes one turn, however many emulators it
    /// starts (a second shared request while it waits behind a closed gate would wait on itself).
    static HELD: RefCell<Weak<Turn>> = const { RefCell::new(Weak::new()) };
}

/// Waits until no other test runs on the machine, in this pass or the other, and keeps it so
/// while the turn lives. Under nextest the test must be in the `alone` test group
/// (.config/nextest.toml), which `make test` runs before everything else with nothing beside it.
pub async fn alone() -> Arc<Turn> {
    if std::env::var_os("NEXTEST").is_some() {
        let group = std::env::var("NEXTEST_TEST_GROUP").unwrap_or_default();
        assert_eq!(
            group, "alone",
            "a test that takes the machine alone belongs to the `alone` test group in .config/nextest.toml"
        );
    }
    if let Some(turn) = held() {
        assert!(turn.alone, "a test takes `alone()` before it starts an emulator");
        return turn;
    }
    take(true).await
}

/// Waits while a test runs [`alone`] (or waits to); runs beside the other shared tests.
pub async fn shared() -> Arc<Turn> {
    if let Some(turn) = held() {
        return turn;
    }
    take(false).await
}

const GATE: &str = "e2e-turn.gate";
const MACHINE: &str = "e2e-turn.lock";

fn held() -> Option<Arc<Turn>> {
    HELD.with(|h| h.borrow().upgrade())
}

/// Waits for a turn: the gate, then the machine (exclusive for an `alone` turn, shared
/// otherwise), then opens the gate again.
async fn take(alone: bool) -> Arc<Turn> {
    let operation = if alone { libc::LOCK_EX } else { libc::LOCK_SH };
    let asked = Instant::now();
    let machine = tokio::task::spawn_blocking(move || {
        let gate = lock(GATE, operation);
        let machine = lock(MACHINE, operation);
        drop(gate);
        machine
    })
    .await
    .expect("the lock's thread");
    hold(machine, alone, asked)
}

fn hold(machine: File, alone: bool, asked: Instant) -> Arc<Turn> {
    let turn = Arc::new(Turn {
        _machine: machine,
        alone,
        waited: asked.elapsed(),
        since: Instant::now(),
    });
    HELD.with(|h| *h.borrow_mut() = Arc::downgrade(&turn));
    turn
}

/// `flock(operation)` on `target/{name}`, waiting for it.
fn lock(name: &str, operation: libc::c_int) -> File {
    let path = crate::workspace_root().join("target").join(name);
    flock(&path, operation).unwrap_or_else(|e| panic!("flock {}: {e}", path.display()))
}

/// Opens (creating it and its folder) the file at `path` and `flock`s it with `operation`. The
/// kernel drops the lock with the file, or with the process however it ends.
pub(crate) fn flock(path: &std::path::Path, operation: libc::c_int) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    // SAFETY: `flock` on the descriptor of a file this function owns.
    match unsafe { libc::flock(file.as_raw_fd(), operation) } {
        0 => Ok(file),
        _ => Err(std::io::Error::last_os_error()),
    }
}
