//! A minimal Lambda Runtime API (the interface AWS Lambda and cargo-lambda serve to a function
//! process), so tests and benchmarks can drive the real release or debug binaries.
//! <https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html>

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::{workspace_root, Env};

/// How many times in all [`Function::invoke_as_client`] sends a request that keeps getting a
/// retryable answer (the Rust client's default retry budget is the same order).
pub const CLIENT_ATTEMPTS: u32 = 5;

/// Whether the contract marks this `errorType` retryable (`ErrorType::is_retryable`).
pub fn is_retryable(error_type: &str) -> bool {
    sqs_waiter_client::ErrorType::parse(error_type).is_some_and(|t| t.is_retryable())
}

/// One line per retry in `target/e2e-retries.log` (`.ci/run` prints how many): which
/// function, which answer, which attempt.
fn count_retry(function_log: &std::path::Path, error: &LambdaError, attempt: u32) {
    use std::io::Write;
    let line = format!(
        "{}\t{}\tattempt {attempt}\t{}\n",
        function_log.file_name().and_then(|n| n.to_str()).unwrap_or("?"),
        error.error_type,
        error.error_message.chars().take(200).collect::<String>()
    );
    eprintln!("e2e: retrying a retryable answer: {line}");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(workspace_root().join("target/e2e-retries.log"))
    {
        let _ = f.write_all(line.as_bytes());
    }
}

/// A function error as the runtime reports it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct LambdaError {
    #[serde(rename = "errorType")]
    pub error_type: String,
    #[serde(rename = "errorMessage")]
    pub error_message: String,
}

type Reply = Result<Value, LambdaError>;

/// The function's unqualified ARN, as Lambda hands it to an unqualified invocation.
const INVOKED_ARN: &str = "arn:aws:lambda:us-east-1:000000000000:function:e2e";

struct Invocation {
    id: String,
    payload: Bytes,
    deadline_ms: u64,
    trace_id: String,
    invoked_arn: String,
    reply: oneshot::Sender<Reply>,
}

struct Api {
    next: tokio::sync::Mutex<mpsc::Receiver<Invocation>>,
    inflight: Mutex<HashMap<String, oneshot::Sender<Reply>>>,
    init_error: Mutex<Option<LambdaError>>,
    first_next: OnceLock<Instant>,
}

/// One function process and the Runtime API it talks to. Dropping it kills the process.
pub struct Function {
    child: Child,
    tx: mpsc::Sender<Invocation>,
    api: Arc<Api>,
    server: tokio::task::JoinHandle<()>,
    pub started: Instant,
    pub log_path: PathBuf,
    seq: std::sync::atomic::AtomicU64,
    /// The X-Ray trace header each invocation carries (`Lambda-Runtime-Trace-Id`, which the
    /// runtime passes on as `_X_AMZN_TRACE_ID`): by default one Lambda would give an untraced
    /// call (no `Sampled=1`).
    pub trace_id: String,
    /// The alias each invocation names (`Lambda-Runtime-Invoked-Function-Arn` ends in it), as
    /// a caller invoking `NAME:ALIAS` does; `None`: the unqualified function.
    pub alias: Option<String>,
}

/// Which build of the binaries to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Debug,
    Release,
}

pub fn binary_path(name: &str, profile: Profile) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| workspace_root().join("target"), PathBuf::from);
    target
        .join(if profile == Profile::Debug { "debug" } else { "release" })
        .join(name)
}

impl Function {
    /// Starts the debug build of `name` (`enqueue` or `poller`) with `env`.
    pub async fn start(name: &str, env: &Env) -> Self {
        Self::start_binary(binary_path(name, Profile::Debug), name, env).await
    }

    pub async fn start_binary(binary: PathBuf, name: &str, env: &Env) -> Self {
        Self::start_command(binary, &[], name, env).await
    }

    /// Starts any program speaking the Runtime API (the Python peer of the benchmarks, say).
    pub async fn start_command(binary: PathBuf, args: &[&str], name: &str, env: &Env) -> Self {
        assert!(
            binary.exists(),
            "{} is missing: build it first with `cargo build -p enqueue -p poller` (make test does)",
            binary.display()
        );
        let (tx, rx) = mpsc::channel(64);
        let api = Arc::new(Api {
            next: tokio::sync::Mutex::new(rx),
            inflight: Mutex::new(HashMap::new()),
            init_error: Mutex::new(None),
            first_next: OnceLock::new(),
        });
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route("/2018-06-01/runtime/invocation/{id}/response", post(response))
            .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .with_state(api.clone());
        let (addr, server) = crate::serve_local(app).await;
        let log_dir = workspace_root().join("target/e2e-logs");
        std::fs::create_dir_all(&log_dir).expect("create log dir");
        let log_path = log_dir.join(format!("{name}-{}.log", addr.port()));
        let log = std::fs::File::create(&log_path).expect("create function log");
        let started = Instant::now();
        let child = Command::new(&binary)
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("AWS_LAMBDA_RUNTIME_API", addr.to_string())
            .env("AWS_LAMBDA_FUNCTION_NAME", name)
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "e2e")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{name}"))
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            // Each function signs as itself, so the proxy knows whose call it records.
            .env("AWS_ACCESS_KEY_ID", crate::iam_calls::access_key_of(name))
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().expect("clone log handle")))
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", binary.display()));
        Self {
            child,
            tx,
            api,
            server,
            started,
            log_path,
            seq: Default::default(),
            trace_id: "Root=1-00000000-000000000000000000000000".to_owned(),
            alias: None,
        }
    }

    /// Invokes with a 60-second function timeout.
    pub async fn invoke(&mut self, payload: &Value) -> Reply {
        self.invoke_raw(
            serde_json::to_vec(payload).expect("serialise payload"),
            Duration::from_secs(60),
        )
        .await
    }

    /// Invokes as a client does (issue 81): an answer the contract marks retryable
    /// (`Throttled`, `DependencyFailure`: a slow emulator on a busy machine, say) is retried up
    /// to [`CLIENT_ATTEMPTS`] times in all, with backoff, and each retry is counted in
    /// `target/e2e-retries.log`. Any other answer is returned as it came.
    pub async fn invoke_as_client(&mut self, payload: &Value) -> Reply {
        let mut attempt = 1;
        loop {
            let reply = self.invoke(payload).await;
            match &reply {
                Err(e) if attempt < CLIENT_ATTEMPTS && is_retryable(&e.error_type) => {
                    count_retry(&self.log_path, e, attempt);
                    tokio::time::sleep(Duration::from_millis(200 << attempt)).await;
                    attempt += 1;
                }
                _ => return reply,
            }
        }
    }

    /// Invokes as a client does ([`Function::invoke_as_client`]); a failed invocation panics
    /// with the function's log.
    pub async fn invoke_ok(&mut self, payload: &Value) -> Value {
        match self.invoke_as_client(payload).await {
            Ok(v) => v,
            Err(e) => panic!(
                "{payload} failed: {e:?}\nlog ({}):\n{}",
                self.log_path.display(),
                self.log()
            ),
        }
    }

    /// Invokes with raw bytes as the payload and the given function timeout.
    pub async fn invoke_raw(&mut self, payload: Vec<u8>, timeout: Duration) -> Reply {
        let n = self.seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = format!("req-{n}");
        let deadline_ms =
            (SystemTime::now().duration_since(UNIX_EPOCH).expect("clock after 1970") + timeout).as_millis() as u64;
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Invocation {
                id,
                payload: Bytes::from(payload),
                deadline_ms,
                trace_id: self.trace_id.clone(),
                invoked_arn: match &self.alias {
                    Some(alias) => format!("{INVOKED_ARN}:{alias}"),
                    None => INVOKED_ARN.to_owned(),
                },
                reply,
            })
            .await
            .expect("runtime api is running");
        let wait_until = Instant::now() + timeout + Duration::from_secs(10);
        let mut rx = rx;
        loop {
            tokio::select! {
                r = &mut rx => {
                    return r.unwrap_or_else(|_| Err(LambdaError {
                        error_type: "Runtime.Gone".into(),
                        error_message: "the runtime api dropped the invocation".into(),
                    }));
                }
                _ = tokio::time::sleep(Duration::from_millis(50)) => {
                    if let Ok(Some(status)) = self.child.try_wait() {
                        // Like Lambda: a process that dies mid-invocation fails it.
                        return Err(LambdaError {
                            error_type: "Runtime.ExitError".into(),
                            error_message: format!("function exited ({status})"),
                        });
                    }
                    assert!(Instant::now() < wait_until, "invocation timed out; log:\n{}", self.log());
                }
            }
        }
    }

    /// Time from process start to its first `GET /runtime/invocation/next` (init time).
    pub fn init_duration(&self) -> Option<Duration> {
        self.api.first_next.get().map(|t| t.duration_since(self.started))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGKILL and reaps the process.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the process to exit on its own (init failures); returns its status.
    pub async fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let until = Instant::now() + within;
        while Instant::now() < until {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }
}

impl Drop for Function {
    fn drop(&mut self) {
        self.kill();
        self.server.abort();
    }
}

async fn next(State(api): State<Arc<Api>>) -> impl IntoResponse {
    let _ = api.first_next.set(Instant::now());
    let inv = api.next.lock().await.recv().await;
    let Some(inv) = inv else {
        return (StatusCode::GONE, HeaderMap::new(), Bytes::new());
    };
    api.inflight.lock().expect("lock").insert(inv.id.clone(), inv.reply);
    let mut h = HeaderMap::new();
    let v = |s: &str| HeaderValue::from_str(s).expect("header value");
    h.insert("lambda-runtime-aws-request-id", v(&inv.id));
    h.insert("lambda-runtime-deadline-ms", v(&inv.deadline_ms.to_string()));
    h.insert("lambda-runtime-invoked-function-arn", v(&inv.invoked_arn));
    h.insert("lambda-runtime-trace-id", v(&inv.trace_id));
    h.insert("content-type", v("application/json"));
    (StatusCode::OK, h, inv.payload)
}

async fn response(State(api): State<Arc<Api>>, Path(id): Path<String>, body: Bytes) -> StatusCode {
    let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if let Some(tx) = api.inflight.lock().expect("lock").remove(&id) {
        let _ = tx.send(Ok(value));
    }
    StatusCode::ACCEPTED
}

async fn error(State(api): State<Arc<Api>>, Path(id): Path<String>, body: Bytes) -> StatusCode {
    let err = serde_json::from_slice(&body).unwrap_or_else(|_| LambdaError {
        error_type: "Unparsable".into(),
        error_message: String::from_utf8_lossy(&body).into_owned(),
    });
    if let Some(tx) = api.inflight.lock().expect("lock").remove(&id) {
        let _ = tx.send(Err(err));
    }
    StatusCode::ACCEPTED
}

async fn init_error(State(api): State<Arc<Api>>, body: Bytes) -> StatusCode {
    *api.init_error.lock().expect("lock") = serde_json::from_slice(&body).ok();
    StatusCode::ACCEPTED
}
