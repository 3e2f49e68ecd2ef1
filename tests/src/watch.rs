//! `cargo lambda watch` serving the Lambda Invoke API (`/2015-03-31/functions/NAME/invocations`)
//! in front of the real `enqueue` binary, so the client crate and the CLI go through real Lambda
//! Invoke calls. Watch runs with `--only-lambda-apis` and the binary `make test` built is started
//! against its Runtime API: no cargo build runs inside a test.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::runtime_api::{binary_path, Profile};
use crate::{free_port, workspace_root, Emulator, Env};

/// Dropping it kills the function and watch's process group, exactly what it started.
pub struct Watch {
    watch: Child,
    function: Child,
    pub endpoint: String,
    pub function_name: String,
    pub log_path: PathBuf,
}

fn cargo_lambda() -> PathBuf {
    if let Some(p) = std::env::var_os("CARGO_LAMBDA") {
        return PathBuf::from(p);
    }
    let p = workspace_root().join(".venv/bin/cargo-lambda");
    assert!(
        p.exists(),
        "cargo-lambda not found at {}: run `make venv` (make test does) or set CARGO_LAMBDA",
        p.display()
    );
    p
}

impl Watch {
    /// The environment that points the `sqs-waiter` CLI at this function, and nothing of the
    /// caller's (start the command with `env_clear`).
    pub fn cli_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("SQS_WAITER_FUNCTION", self.function_name.clone()),
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ACCESS_KEY_ID", "test".into()),
            ("AWS_SECRET_ACCESS_KEY", "test".into()),
            ("AWS_EC2_METADATA_DISABLED", "true".into()),
        ]
    }

    /// Serves `name` (a binary of the workspace, built in the dev profile) with `env`.
    pub async fn start(name: &str, env: &Env) -> Self {
        let binary = binary_path(name, Profile::Debug);
        assert!(
            binary.exists(),
            "{} is missing: build it first with `cargo build -p enqueue` (make test does)",
            binary.display()
        );
        let port = free_port();
        let log_dir = workspace_root().join("target/e2e-logs");
        std::fs::create_dir_all(&log_dir).expect("create log dir");
        let log_path = log_dir.join(format!("watch-{name}-{port}.log"));
        let log = std::fs::File::create(&log_path).expect("create watch log");
        let watch = Command::new(cargo_lambda())
            .args(["lambda", "watch", "--only-lambda-apis", "-A", "127.0.0.1", "-P"])
            .arg(port.to_string())
            .current_dir(workspace_root())
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().expect("clone log handle")))
            .stderr(Stdio::from(log.try_clone().expect("clone log handle")))
            .process_group(0)
            .spawn()
            .expect("start cargo lambda watch");
        let endpoint = format!("http://127.0.0.1:{port}");
        let until = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < until,
                "cargo lambda watch did not listen on {port} within 60 s; see {}",
                log_path.display()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let function = Command::new(&binary)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("AWS_LAMBDA_RUNTIME_API", format!("{endpoint}/.rt/{name}"))
            .env("AWS_LAMBDA_FUNCTION_NAME", name)
            .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("AWS_ACCESS_KEY_ID", crate::iam_calls::access_key_of(name))
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().expect("clone log handle")))
            .stderr(Stdio::from(log))
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", binary.display()));
        Self {
            watch,
            function,
            endpoint,
            function_name: name.to_owned(),
            log_path,
        }
    }

    /// A Lambda client whose endpoint is watch (dummy credentials, us-east-1).
    pub async fn lambda_client(&self) -> aws_sdk_lambda::Client {
        let config = crate::emulator::sdk_config(&self.endpoint).await;
        aws_sdk_lambda::Client::new(&config)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }
}

/// A fresh emulator with queue `queue` and its table `waiter-{queue}`, and watch serving the
/// `enqueue` function for it: the emulator, watch and the queue's URL.
pub async fn serve_enqueue(queue: &str) -> (Emulator, Watch, String) {
    let emu = Emulator::start().await;
    let url = emu.create_queue(queue).await;
    emu.create_table(&format!("waiter-{queue}")).await;
    let env = emu.function_env(&[("WAITER_QUEUES", queue), ("WAITER_TABLE_PREFIX", "waiter-")]);
    let watch = Watch::start("enqueue", &env).await;
    (emu, watch, url)
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.function.kill();
        let _ = self.function.wait();
        let _ = Command::new("kill")
            .args(["-s", "TERM", "--", &format!("-{}", self.watch.id())])
            .status();
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until && !matches!(self.watch.try_wait(), Ok(Some(_))) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{}", self.watch.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.watch.wait();
    }
}
