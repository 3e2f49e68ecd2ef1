//! `emulators N -- COMMAND [ARGS...]`: starts N emulators of `E2E_BACKEND` (moto unless it says
//! `localstack`), each on a free port and ready, runs COMMAND with their endpoints in
//! `E2E_EMULATORS` (the tests lease regions of them, `e2e::pool`), and stops exactly those
//! emulators when COMMAND ends or this process is interrupted. Exits as COMMAND did.

use e2e::emulator::Backend;
use e2e::Emulator;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (count, command) = match args.split_first() {
        Some((n, rest)) if rest.first().map(String::as_str) == Some("--") && rest.len() > 1 => {
            match n.parse::<usize>() {
                Ok(n) if (1..=8).contains(&n) => (n, rest[1..].to_vec()),
                _ => usage(&format!("N must be 1 to 8, not {n:?}")),
            }
        }
        _ => usage("expected N -- COMMAND [ARGS...]"),
    };
    let backend = Backend::current();
    let emulators = futures::future::join_all((0..count).map(|_| Emulator::start_for_pass(backend))).await;
    let endpoints: Vec<&str> = emulators.iter().map(|e| e.endpoint.as_str()).collect();
    eprintln!("emulators: {count} {} at {}", backend.name(), endpoints.join(" "));
    let mut child = tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .env(e2e::pool::ENV, endpoints.join(","))
        .spawn()
        .unwrap_or_else(|e| {
            eprintln!("emulators: cannot run {}: {e}", command[0]);
            std::process::exit(127)
        });
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
    let code = tokio::select! {
        status = child.wait() => status.ok().and_then(|s| s.code()).unwrap_or(1),
        _ = tokio::signal::ctrl_c() => 130,
        _ = terminate.recv() => 143,
    };
    if code >= 128 {
        let _ = child.kill().await;
    }
    // Dropping them stops exactly the processes they started.
    drop(emulators);
    std::process::exit(code);
}

fn usage(problem: &str) -> ! {
    eprintln!("emulators: {problem}\nusage: emulators N -- COMMAND [ARGS...]");
    std::process::exit(2)
}
