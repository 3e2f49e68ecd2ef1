"""A LocalStack Lambda runtime executor that runs a function's `bootstrap` as a host process.

LocalStack's default executor downloads its Lambda runtime and starts Docker containers, both
unreachable on these machines. The deploy rehearsal (tests/rehearsal) needs the deployed
functions to run, so this executor does what a container would, on the host:

- it takes the code the stack gave the function (LocalStack unzips it), and starts its
  `bootstrap` with the environment LocalStack computed for the function (the role's
  credentials, the function's variables, AWS_ENDPOINT_URL pointing at LocalStack);
- it serves that process the Lambda Runtime API (`invocation/next`, `response`, `error`,
  `init/error`) on a free loopback port, and hands each invocation from LocalStack to the
  process and its result back, as LocalStack's own executor does through its container's init;
- it stops exactly the process it started, and keeps the process's output as the function's logs.

The bootstrap runs on the host whatever architecture the function declares, so the rehearsal
deploys binaries built for the host. Selected with LAMBDA_RUNTIME_EXECUTOR=sqs-waiter-host.
"""

import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
from concurrent.futures import Future
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from plux import Plugin

API = "/2018-06-01/runtime"
STARTUP_TIMEOUT_S = 30
STOP_GRACE_S = 5


class RuntimeApi(ThreadingHTTPServer):
    """One function process's Runtime API: invocations wait in `pending` until the process asks
    for the next one; each result resolves the future its invocation registered."""

    daemon_threads = True

    def __init__(self, timeout_s):
        super().__init__(("127.0.0.1", 0), RuntimeApiHandler)
        self.timeout_s = timeout_s
        self.pending = queue.Queue()
        self.results = {}
        self.ready = threading.Event()
        self.init_error = None
        self.closing = threading.Event()

    def complete(self, request_id, body, is_error):
        future = self.results.pop(request_id, None)
        if future is None:
            return False
        future.set_result((body, is_error))
        return True


class RuntimeApiHandler(BaseHTTPRequestHandler):
    server: RuntimeApi

    def log_message(self, *args):
        pass

    def _reply(self, status, body=b"", headers=None):
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self):
        if self.path != f"{API}/invocation/next":
            return self._reply(404, b'{"errorType":"NotFound"}')
        self.server.ready.set()
        while not self.server.closing.is_set():
            try:
                invocation = self.server.pending.get(timeout=0.5)
            except queue.Empty:
                continue
            deadline_ms = int(time.time() * 1000) + self.server.timeout_s * 1000
            return self._reply(200, invocation["payload"].encode(), {
                "Content-Type": "application/json",
                "Lambda-Runtime-Aws-Request-Id": invocation["invoke-id"],
                "Lambda-Runtime-Deadline-Ms": str(deadline_ms),
                "Lambda-Runtime-Invoked-Function-Arn": invocation["invoked-function-arn"],
                "Lambda-Runtime-Trace-Id": invocation.get("trace-id") or "",
            })
        self._reply(503, b'{"errorType":"ShuttingDown"}')

    def do_POST(self):
        body = self._body()
        parts = self.path[len(API):].strip("/").split("/")
        if parts == ["init", "error"]:
            self.server.init_error = body
            self.server.ready.set()
            return self._reply(202, b'{"status":"OK"}')
        if len(parts) == 3 and parts[0] == "invocation" and parts[2] in ("response", "error"):
            if self.server.complete(parts[1], body, parts[2] == "error"):
                return self._reply(202, b'{"status":"OK"}')
            return self._reply(400, b'{"errorType":"InvalidRequestID"}')
        self._reply(404, b'{"errorType":"NotFound"}')


def _executor_class():
    from localstack import config
    from localstack.services.lambda_.invocation.lambda_models import InvocationResult
    from localstack.services.lambda_.invocation.runtime_executor import (
        LambdaRuntimeException,
        RuntimeExecutor,
    )

    class HostExecutor(RuntimeExecutor):
        def __init__(self, id, function_version):
            super().__init__(id, function_version)
            self.api = None
            self.proc = None
            self.log_path = None

        def start(self, env_vars):
            code = self.function_version.config.code.get_unzipped_code_location()
            bootstrap = code / "bootstrap"
            if not bootstrap.is_file():
                raise LambdaRuntimeException(f"the function's code has no bootstrap ({bootstrap})")
            os.chmod(bootstrap, 0o755)
            self.api = RuntimeApi(int(self.function_version.config.timeout))
            threading.Thread(target=self.api.serve_forever, daemon=True).start()
            env = {k: str(v) for k, v in env_vars.items()}
            env["AWS_LAMBDA_RUNTIME_API"] = f"127.0.0.1:{self.api.server_address[1]}"
            env["LAMBDA_TASK_ROOT"] = str(code)
            env["PATH"] = os.environ.get("PATH", "/usr/bin:/bin")
            fd, self.log_path = tempfile.mkstemp(prefix=f"lambda-{self.id}-", suffix=".log")
            # Not a session of its own: the process stays in LocalStack's process group, so
            # whoever stops LocalStack's group stops it too.
            self.proc = subprocess.Popen([str(bootstrap)], cwd=code, env=env, stdout=fd,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            os.close(fd)
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while not self.api.ready.wait(0.1):
                if self.proc.poll() is not None:
                    raise LambdaRuntimeException(
                        f"bootstrap exited with {self.proc.returncode} before its first invocation: {self.get_logs()[-2000:]}")
                if time.monotonic() > deadline:
                    raise LambdaRuntimeException(f"bootstrap did not ask for an invocation within {STARTUP_TIMEOUT_S} s")
            if self.api.init_error is not None:
                raise LambdaRuntimeException(f"bootstrap failed to start: {self.api.init_error.decode(errors='replace')}")

        def stop(self):
            if self.proc is not None and self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            if self.api is not None:
                self.api.closing.set()
                self.api.shutdown()
                self.api.server_close()
            if self.log_path:
                try:
                    os.unlink(self.log_path)
                except OSError:
                    pass

        def get_address(self):
            return "127.0.0.1"

        def get_endpoint_from_executor(self):
            return "127.0.0.1"

        def get_runtime_endpoint(self):
            return f"http://127.0.0.1:{config.GATEWAY_LISTEN[0].port}/_localstack_lambda/{self.id}"

        def invoke(self, payload):
            request_id = payload["invoke-id"]
            future = Future()
            self.api.results[request_id] = future
            logs_from = os.path.getsize(self.log_path)
            self.api.pending.put(payload)
            deadline = time.monotonic() + int(self.function_version.config.timeout) + 5
            while True:
                try:
                    body, is_error = future.result(timeout=0.2)
                    break
                except TimeoutError:
                    pass
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.api.results.pop(request_id, None)
                    why = (f"bootstrap exited with {self.proc.returncode}" if self.proc.poll() is not None
                           else "no result before the function's timeout")
                    body, is_error = json.dumps({"errorType": "Runtime.ExitError", "errorMessage": why}).encode(), True
                    break
            with open(self.log_path, "rb") as f:
                f.seek(logs_from)
                logs = f.read().decode(errors="replace")
            return InvocationResult(request_id, body, is_error=is_error, logs=logs)

        def get_logs(self):
            try:
                with open(self.log_path, encoding="utf-8", errors="replace") as f:
                    return f.read()
            except (OSError, TypeError):
                return ""

        @classmethod
        def prepare_version(cls, function_version):
            if function_version.config.code:
                function_version.config.code.prepare_for_execution()

        @classmethod
        def cleanup_version(cls, function_version):
            pass

        @classmethod
        def validate_environment(cls):
            return True

    return HostExecutor


class HostExecutorPlugin(Plugin):
    namespace = "localstack.lambda.runtime_executor"
    name = "sqs-waiter-host"

    def load(self, *args, **kwargs):
        return _executor_class()
