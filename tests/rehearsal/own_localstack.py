"""The rehearsal's own LocalStack (tests/rehearsal/rehearse.py): started on a free port in a
session of its own, with the services the rehearsal deploys, and stopped by that session."""

import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import boto3
from botocore.config import Config

from derive import REGION

ROOT = Path(__file__).resolve().parents[2]
SERVICES = "sqs,dynamodb,cloudformation,iam,lambda,scheduler,logs,cloudwatch,sts,s3,kms,ssm"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalStack:
    def __init__(self):
        self.port = free_port()
        self.fs = tempfile.mkdtemp(prefix="sqs-waiter-rehearsal-")
        self.log_path = Path(self.fs) / "localstack.log"
        env = dict(os.environ)
        env.update(
            LOCALSTACK_PORT=str(self.port),
            LOCALSTACK_FILESYSTEM_ROOT=self.fs,
            SERVICES=SERVICES,
            LAMBDA_RUNTIME_EXECUTOR="sqs-waiter-host",
            DEBUG=os.environ.get("REHEARSE_DEBUG", "0"),
        )
        self.log = open(self.log_path, "w")
        # Its own session: stopping it signals exactly this process group (LocalStack and the
        # DynamoDB Local JVM it starts), nothing else.
        self.proc = subprocess.Popen(
            ["bash", str(ROOT / "scripts/localstack.sh"), "run"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        self.endpoint = f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout_s=120):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"LocalStack exited with {self.proc.returncode}; log: {self.log_path}")
            try:
                with urllib.request.urlopen(self.endpoint + "/_localstack/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"LocalStack not ready after {timeout_s} s; log: {self.log_path}")

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=15)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.log.close()

    def client(self, service):
        # A session of its own: boto3's default session is not safe to create clients from in
        # two threads at once (the rehearsal's as-typed steps run beside its other steps).
        return boto3.session.Session().client(
            service, endpoint_url=self.endpoint, region_name=REGION,
            aws_access_key_id="test", aws_secret_access_key="test",
            config=Config(retries={"max_attempts": 2}),
        )
