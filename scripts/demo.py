#!/usr/bin/env python3
"""sqs-waiter demo: both functions under `cargo lambda watch`, against a moto server, or
LocalStack with BACKEND=localstack (scripts/localstack.sh, no Docker).

Starts the backend on a free port, creates a standard and a FIFO queue with their tables, serves the
`enqueue` and `poller` binaries with cargo-lambda, enqueues jobs through real Lambda invocations,
runs the poller every second while a consumer long-polls, and prints each job's scheduled time,
arrival and lateness. Stops everything it started, whatever happens.
"""
import datetime as dt
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import boto3

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOGS = os.path.join(ROOT, "target", "demo")
QUEUES = ["orders", "billing.fifo"]
PREFIX = "demo-"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def now():
    return dt.datetime.now(dt.timezone.utc)


def wait_until(check, what, timeout):
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if check():
            return
        time.sleep(0.2)
    raise SystemExit(f"demo: {what} not ready after {timeout} s")


def http_ok(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


class Lambda:
    """Invokes a function served by `cargo lambda watch` (the Lambda Invoke API shape)."""

    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}/2015-03-31/functions"

    def invoke(self, name, payload, timeout=600):
        req = urllib.request.Request(f"{self.base}/{name}/invocations", data=json.dumps(payload).encode(),
                                     headers={"content-type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return json.loads(e.read() or b"null")


def create_resources(endpoint):
    kw = dict(endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test")
    sqs, ddb = boto3.client("sqs", **kw), boto3.client("dynamodb", **kw)
    urls = {}
    for q in QUEUES:
        attrs = {"FifoQueue": "true"} if q.endswith(".fifo") else {}
        urls[q] = sqs.create_queue(QueueName=q, Attributes=attrs)["QueueUrl"]
        ddb.create_table(
            TableName=PREFIX + q, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": t}
                                  for n, t in (("scheduler", "S"), ("job_id", "S"), ("perform_at", "N"))],
            KeySchema=[{"AttributeName": "scheduler", "KeyType": "HASH"}, {"AttributeName": "job_id", "KeyType": "RANGE"}],
            GlobalSecondaryIndexes=[{
                "IndexName": "scheduler-perform_at-index",
                "KeySchema": [{"AttributeName": "scheduler", "KeyType": "HASH"},
                              {"AttributeName": "perform_at", "KeyType": "RANGE"}],
                # As the stacks create it (IndexProjection INCLUDE).
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["priority", "weight"]}}])
    return sqs, urls


def consume(sqs, url, arrivals, stop):
    while not stop.is_set():
        # Short polls: moto's long poll only wakes on new sends, not when a delay ends, so it would
        # add up to 1 s to every delayed message's measured arrival.
        res = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        at = now()
        if not res.get("Messages"):
            time.sleep(0.02)
        for m in res.get("Messages", []):
            arrivals.append((m["Body"], at))
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])


def main():
    os.makedirs(LOGS, exist_ok=True)
    procs = []
    try:
        backend = os.environ.get("BACKEND", "moto")
        emu_port, fn_port = free_port(), free_port()
        endpoint = f"http://127.0.0.1:{emu_port}"
        emu_log = open(os.path.join(LOGS, f"{backend}.log"), "w")
        if backend == "moto":
            cmd, health = ["moto_server", "-H", "127.0.0.1", "-p", str(emu_port)], "/moto-api/"
        elif backend == "localstack":
            cmd = ["bash", os.path.join(ROOT, "scripts", "localstack.sh"), "run"]
            health = "/_localstack/health"
        else:
            raise SystemExit(f"demo: BACKEND={backend!r}: expected moto or localstack")
        procs.append(subprocess.Popen(cmd, stdout=emu_log, stderr=subprocess.STDOUT, start_new_session=True,
                                      env={**os.environ, "LOCALSTACK_PORT": str(emu_port)}))
        # A first LocalStack run installs it (about a minute).
        wait_until(lambda: http_ok(f"{endpoint}{health}"), backend, 60 if backend == "moto" else 300)
        print(f"{backend} ready on {endpoint}")
        sqs, urls = create_resources(endpoint)
        print(f"created queues {', '.join(QUEUES)} and tables {', '.join(PREFIX + q for q in QUEUES)}")

        env_file = os.path.join(LOGS, "demo.env")
        with open(env_file, "w") as f:
            f.write("\n".join([
                f"WAITER_QUEUES={','.join(QUEUES)}", f"WAITER_TABLE_PREFIX={PREFIX}",
                "WAITER_DIRECT_MAX_DELAY=5", "WAITER_LOOKAHEAD=3", "WAITER_SHARDS=2", "WAITER_FIFO_HOLD=2",
                f"AWS_ENDPOINT_URL={endpoint}", "AWS_REGION=us-east-1",
                "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "RUST_LOG=info", ""]))
        watch_log = open(os.path.join(LOGS, "cargo-lambda.log"), "w")
        procs.append(subprocess.Popen(["cargo", "lambda", "watch", "-P", str(fn_port), "--env-file", env_file],
                                      cwd=ROOT, stdout=watch_log, stderr=subprocess.STDOUT, start_new_session=True))
        lam = Lambda(fn_port)
        print(f"cargo lambda watch serving enqueue and poller on 127.0.0.1:{fn_port} (first call builds them)")
        wait_until(lambda: http_ok(f"http://127.0.0.1:{fn_port}/") or True, "cargo lambda", 5)
        for name in ("enqueue", "poller"):
            warm = {"action": "get", "queue": "orders", "job_id": "warm-up"} if name == "enqueue" else {}
            deadline = time.monotonic() + 600
            while True:
                try:
                    lam.invoke(name, warm)
                    break
                except (urllib.error.URLError, ConnectionError, OSError):
                    if time.monotonic() > deadline:
                        raise SystemExit(f"demo: {name} did not start; see {LOGS}/cargo-lambda.log")
                    time.sleep(1)

        t0 = now()
        at = lambda s: (t0 + dt.timedelta(seconds=s)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        jobs = [
            {"job_id": "welcome-email", "queue": "orders", "message_body": "welcome-email", "delay_seconds": 3},
            {"job_id": "invoice-42", "queue": "orders", "message_body": "invoice-42", "perform_at": at(9.25)},
            {"job_id": "reminder-7", "queue": "orders", "message_body": "reminder-7", "perform_at": at(12.5),
             "message_attributes": {"kind": {"data_type": "String", "string_value": "reminder"}}},
            {"job_id": "trial-ends", "queue": "orders", "message_body": "trial-ends", "perform_at": at(15.75)},
            {"job_id": "charge-9", "queue": "billing.fifo", "message_body": "charge-9", "perform_at": at(11),
             "message_group_id": "customer-9"},
        ]
        print("\nenqueue {\"jobs\": [...]} ->")
        reply = lam.invoke("enqueue", {"jobs": jobs})
        scheduled = {}
        for job, r in zip(jobs, reply["results"]):
            print(f"  {job['job_id']:<14} {r.get('status'):<10} perform_at={r.get('perform_at')}")
            if "perform_at" in r:
                scheduled[job["message_body"]] = (r["status"], dt.datetime.fromisoformat(r["perform_at"].replace("Z", "+00:00")))
        dup = lam.invoke("enqueue", {"queue": "orders", "job_id": "invoice-42", "message_body": "changed", "perform_at": at(60)})
        print(f"  again invoice-42 -> status={dup['status']} duplicate={dup['duplicate']} (nothing changed)")
        bad = lam.invoke("enqueue", {"queue": "orders", "message_body": "x", "delay_seconds": -5})
        print(f"  a bad request    -> {bad['errorType']}: {bad['errorMessage']}")

        arrivals, stop = [], threading.Event()
        consumers = [threading.Thread(target=consume, args=(sqs, urls[q], arrivals, stop), daemon=True) for q in QUEUES]
        for c in consumers:
            c.start()
        print("\nrunning the poller every second ...")
        dispatched = 0
        until = time.monotonic() + 40
        while time.monotonic() < until and len(arrivals) < len(jobs):
            summary = lam.invoke("poller", {"source": "demo"})
            dispatched += summary.get("dispatched", 0)
            time.sleep(1)
        stop.set()
        for c in consumers:
            c.join()

        print(f"\npoller dispatched {dispatched} stored jobs\n")
        print(f"{'job':<14} {'route':<10} {'scheduled for':<26} {'arrived':<26} {'late (ms)':>9}")
        late = []
        for body, arrived in sorted(arrivals, key=lambda a: a[1]):
            route, due = scheduled.get(body, ("?", None))
            ms = (arrived - due).total_seconds() * 1000 if due else float("nan")
            late.append(ms)
            print(f"{body:<14} {('direct' if route == 'sent' else 'stored'):<10} {due.isoformat(timespec='milliseconds'):<26} "
                  f"{arrived.isoformat(timespec='milliseconds'):<26} {ms:>9.0f}")
        missing = set(scheduled) - {b for b, _ in arrivals}
        print(f"\n{len(arrivals)} of {len(scheduled)} jobs arrived; early: {sum(1 for m in late if m < 0)}; "
              f"missing: {sorted(missing) or 'none'}")
        print("(arrival is when a 20 ms short-poll consumer saw it; the direct route rounds delays up to whole seconds)")

        # Managing jobs: what is left of a sent job (history), and one moved and counted.
        got = lam.invoke("enqueue", {"action": "get", "queue": "orders", "job_id": "invoice-42"})
        print(f"\nget invoice-42 -> status={got.get('status')} sent_at={got.get('sent_at')} (history; no body kept)")
        later = lam.invoke("enqueue", {"queue": "orders", "job_id": "renewal-1", "message_body": "renewal-1",
                                       "delay_seconds": 86400})
        moved = lam.invoke("enqueue", {"action": "reschedule", "queue": "orders", "job_id": "renewal-1",
                                       "delay_seconds": 7 * 86400, "if_version": 1})
        print(f"reschedule renewal-1 -> status={moved.get('status')} version={moved.get('version')} "
              f"perform_at={moved.get('perform_at')} (was {later.get('perform_at')})")
        # A week of reminders, thicker towards the end, for the operator's view below.
        week = [{"queue": "orders", "job_id": f"reminder-{i:03}", "message_body": f"reminder-{i:03}",
                 "delay_seconds": 3600 + int(600_000 * (i / 300) ** 0.5)} for i in range(300)]
        lam.invoke("enqueue", {"jobs": week})
        # The operator's view, through the sqs-waiter CLI (Lambda Invoke to cargo lambda watch).
        cli_env = {**os.environ, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{fn_port}", "AWS_REGION": "us-east-1",
                   "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "SQS_WAITER_FUNCTION": "enqueue"}
        for args in (["list", "orders", "--limit", "5"], ["stats", "orders", "--buckets", "8", "--bucket-s", "86400"]):
            print(f"\n$ sqs-waiter {' '.join(args)}", flush=True)
            cli = subprocess.run([os.path.join(ROOT, "target", "debug", "sqs-waiter"), *args], env=cli_env)
            if cli.returncode != 0:
                raise SystemExit(f"demo: sqs-waiter {args[0]} exited {cli.returncode}")
        sqs_waiter = os.path.relpath(os.path.join(ROOT, "target", "debug", "sqs-waiter"), ROOT)
        if os.environ.get("CONSOLE") == "1":
            # The web console on the demo's jobs, until Ctrl-C; it prints its address.
            print("\n$ sqs-waiter console   (Ctrl-C stops it and the demo's backend)", flush=True)
            try:
                subprocess.run([os.path.join(ROOT, "target", "debug", "sqs-waiter"), "console"], env=cli_env)
            except KeyboardInterrupt:
                pass
        else:
            print("\nThe web console on these jobs: `make demo CONSOLE=1` keeps the emulator and the function "
                  f"running and serves `{sqs_waiter} console` on 127.0.0.1 (it prints the address and opens "
                  "your browser; Ctrl-C stops it). docs/console.md shows its pages.")
        return 1 if missing else 0
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        print(f"stopped the backend and cargo lambda (logs in {os.path.relpath(LOGS, ROOT)}/)")


if __name__ == "__main__":
    sys.exit(main())
