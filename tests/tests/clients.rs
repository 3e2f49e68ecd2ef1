//! The Python and TypeScript clients end to end, as a new user gets them: the built wheel and the
//! packed tarball, installed into clean environments by `make clients` (target/clients/), call
//! the real `enqueue` function under `cargo lambda watch` against the emulator. Each client's own script does the calls and
//! checks (clients/python/tests/e2e.py, clients/typescript/test/e2e.test.mjs); it also runs the
//! snippets of README.md and of the client's README, with the stack's function name
//! (`sqs-waiter-enqueue`) read as the one watch serves (`enqueue`, its binary's name). A FIFO
//! queue beside the standard one takes a consumer's retry of a grouped message, received as the
//! clients' READMEs receive it (issue 82, defect 11).

use std::path::{Path, PathBuf};
use std::process::Command;

use e2e::watch::Watch;
use e2e::{workspace_root, Emulator};

const QUEUE: &str = "orders";
const FIFO_QUEUE: &str = "orders.fifo";

/// The emulator and the function the scripts call, with history bodies kept (for `replay`) and a
/// lookahead that hands a retry's next attempt to SQS at once (a standard queue's: a FIFO
/// queue's stays stored, for the poller). The URLs: the standard queue's, then the FIFO one's.
async fn serve() -> (Emulator, Watch, [String; 2]) {
    let emu = Emulator::start().await;
    let url = emu.create_queue(QUEUE).await;
    let fifo_url = emu.create_queue(FIFO_QUEUE).await;
    for queue in [QUEUE, FIFO_QUEUE] {
        emu.create_table(&format!("waiter-{queue}")).await;
    }
    let env = emu.function_env(&[
        ("WAITER_QUEUES", &format!("{QUEUE},{FIFO_QUEUE}")),
        ("WAITER_TABLE_PREFIX", "waiter-"),
        ("WAITER_HISTORY_BODY", "true"),
        ("WAITER_LOOKAHEAD", "60"),
    ]);
    let watch = Watch::start("enqueue", &env).await;
    (emu, watch, [url, fifo_url])
}

/// What a script needs to reach the function and the queue, and nothing of the caller's: the
/// CLI's environment (the function, its endpoint, dummy credentials), with SQS on the emulator, in
/// its region.
fn script_env(emu: &Emulator, watch: &Watch, [url, fifo_url]: &[String; 2]) -> Vec<(&'static str, String)> {
    let mut env = watch.cli_env();
    env.extend([
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("HOME", std::env::var("HOME").unwrap_or_default()),
        ("SQS_WAITER_QUEUE_URL", url.clone()),
        ("SQS_WAITER_FIFO_QUEUE_URL", fifo_url.clone()),
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
    let (emu, watch, urls) = serve().await;
    let mut command = Command::new(python);
    command
        .env_clear()
        .envs(script_env(&emu, &watch, &urls))
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
    let (emu, watch, urls) = serve().await;
    let mut command = Command::new("node");
    command
        .env_clear()
        .envs(script_env(&emu, &watch, &urls))
        .args(["--test", "--test-reporter=spec"])
        .arg(&script);
    run("clients/typescript/test/e2e.test.mjs", command, &dir, &watch);
}
