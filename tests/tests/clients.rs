//! The Python and TypeScript clients end to end, as a new user gets them: the built wheel and the
//! packed tarball, installed into clean environments by `make clients` (target/clients/), call
//! the real `enqueue` function under `cargo lambda watch` against the emulator. Each client's own script does the calls and
//! checks (clients/python/tests/e2e.py, clients/typescript/test/e2e.test.mjs); it also runs the
//! snippets of README.md and of the client's README, with the stack's function name
//! (`sqs-waiter-enqueue`) read as the one watch serves (`enqueue`, its binary's name).

use std::path::{Path, PathBuf};
use std::process::Command;

use e2e::watch::Watch;
use e2e::{workspace_root, Emulator};

const QUEUE: &str = "orders";

/// The emulator and the function the scripts call, with history bodies kept (for `replay`) and a
/// lookahead that hands a retry's next attempt to SQS at once.
async fn serve() -> (Emulator, Watch, String) {
    let emu = Emulator::start().await;
    let url = emu.create_queue(QUEUE).await;
    emu.create_table(&format!("waiter-{QUEUE}")).await;
    let env = emu.function_env(&[
        ("WAITER_QUEUES", QUEUE),
        ("WAITER_TABLE_PREFIX", "waiter-"),
        ("WAITER_HISTORY_BODY", "true"),
        ("WAITER_LOOKAHEAD", "60"),
    ]);
    let watch = Watch::start("enqueue", &env).await;
    (emu, watch, url)
}

/// What a script needs to reach the function and the queue, and nothing of the caller's: the
/// CLI's environment (the function, its endpoint, dummy credentials), with SQS on the emulator, in
/// its region.
fn script_env(emu: &Emulator, watch: &Watch, url: &str) -> Vec<(&'static str, String)> {
    let mut env = watch.cli_env();
    env.extend([
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("HOME", std::env::var("HOME").unwrap_or_default()),
        ("SQS_WAITER_QUEUE_URL", url.into()),
        ("SQS_WAITER_REPO", workspace_root().display().to_string()),
        ("AWS_ENDPOINT_URL_SQS", emu.endpoint.clone()),
        ("AWS_REGION", emu.region.clone()),
        ("AWS_DEFAULT_REGION", emu.region.clone()),
    ]);
    env
}

fn installed(path: &str) -> PathBuf {
    let p = workspace_root().join(path);
    assert!(
        p.exists(),
        "{} is missing: `make clients` builds the clients' packages and installs them there (make test does)",
        p.display()
    );
    p
}

fn run(what: &str, mut command: Command, dir: &Path, watch: &Watch) {
    let out = command
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("start {what}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{what} failed:\n{text}\n--- the function's log:\n{}",
        watch.log()
    );
    println!("{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_client_from_its_wheel_drives_the_function() {
    let python = installed("target/clients/python-env/bin/python");
    let (emu, watch, url) = serve().await;
    let mut command = Command::new(python);
    command
        .env_clear()
        .envs(script_env(&emu, &watch, &url))
        .args(["-m", "unittest", "-v", "e2e"]);
    run(
        "clients/python/tests/e2e.py",
        command,
        &workspace_root().join("clients/python/tests"),
        &watch,
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_typescript_client_from_its_tarball_drives_the_function() {
    let user = installed("target/clients/typescript-user/node_modules/@sqs-waiter/client");
    let dir = user.ancestors().nth(3).expect("the user's directory").to_path_buf();
    let script = dir.join("e2e.test.mjs");
    std::fs::copy(workspace_root().join("clients/typescript/test/e2e.test.mjs"), &script).expect("copy the script");
    let (emu, watch, url) = serve().await;
    let mut command = Command::new("node");
    command
        .env_clear()
        .envs(script_env(&emu, &watch, &url))
        .args(["--test", "--test-reporter=spec"])
        .arg(&script);
    run("clients/typescript/test/e2e.test.mjs", command, &dir, &watch);
}
