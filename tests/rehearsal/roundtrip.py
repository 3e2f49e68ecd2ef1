"""Jobs through a deployed stack's own functions, as a user would send them (tests/rehearsal).

A caller invokes the stack's `enqueue` through LocalStack's Lambda API, with boto3 and with the
`sqs-waiter` CLI (its client does Lambda Invoke). The poller runs as the stack's schedule would
run it: LocalStack's EventBridge Scheduler stores schedules but never fires them, so the
rehearsal reads the schedule back and invokes its target with exactly the schedule's input (or,
without one, `{}`). Every message is received from the stack's queue and checked to arrive on
time and never early, by a consumer that, as a user's does, receives from before the first job
is sent: a job is as late as its message's first receipt, never as late as the rehearsal's own
next step (a CLI start, a poller run) on a loaded machine.
"""

import json
import os
import subprocess
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "target/debug/sqs-waiter"
# LocalStack's SQS makes a delayed message visible within about a second of its delay; the
# poller hands a stored job over before it is due. A message later than this is not on time.
ON_TIME_S = 5.0
RECEIVE_TIMEOUT_S = 60


def schedule_ref(group, name):
    """A schedule as the rehearsal names it: "group/name", or the name alone in the default
    group (`RoundTrip.fire_schedule` reads it back)."""
    return f"{group}/{name}" if group else name


def epoch(rfc3339):
    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()


class Deliveries:
    """Jobs sent through deployed functions, and how many of them arrived as the contract says."""

    def __init__(self, check):
        self.check = check
        self.expected = 0
        self.delivered = 0

    def add(self, other):
        """Counts another thread's deliveries in with these."""
        self.expected += other.expected
        self.delivered += other.delivered


class Consumer:
    """Receives one queue's messages from its start until `stop`, as a user's consumer does:
    each body's first receipt, and each body received again. Every message is deleted."""

    running = []

    @classmethod
    def stop_all(cls):
        """Stops every consumer (before their LocalStack stops)."""
        for consumer in list(cls.running):
            consumer.stop()

    def __init__(self, sqs, url):
        self.sqs, self.url = sqs, url
        self.lock = threading.Lock()
        self.first_seen = {}
        self.again = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, name=f"consumer {url}", daemon=True)
        Consumer.running.append(self)
        self.thread.start()

    def run(self):
        said = False
        while not self.stopped.is_set():
            try:
                messages = self.sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=10,
                                                    WaitTimeSeconds=1).get("Messages", [])
                for m in messages:
                    seen = time.time()
                    with self.lock:
                        if m["Body"] in self.first_seen:
                            self.again.append(m["Body"])
                        else:
                            self.first_seen[m["Body"]] = seen
                    self.sqs.delete_message(QueueUrl=self.url, ReceiptHandle=m["ReceiptHandle"])
            except Exception as e:  # noqa: BLE001 - a queue deleted with its stack: said once
                if not (said or self.stopped.is_set()):
                    print(f"note the consumer of {self.url} cannot receive: {e}", flush=True)
                    said = True
                time.sleep(1)

    def seen(self, bodies):
        """{body: first receipt} of those received, and the bodies received more than once."""
        with self.lock:
            return ({b: self.first_seen[b] for b in bodies if b in self.first_seen},
                    [b for b in self.again if b in bodies])

    def stop(self):
        self.stopped.set()
        self.thread.join(timeout=5)
        if self in Consumer.running:
            Consumer.running.remove(self)


class RoundTrip:
    def __init__(self, ls, deliveries):
        self.ls = ls
        self.lam = ls.client("lambda")
        self.sqs = ls.client("sqs")
        self.sched = ls.client("scheduler")
        self.deliveries = deliveries
        self.check = deliveries.check
        # The environment as it was made: the rehearsal's threads never read os.environ while
        # another changes it (midway.aws_at).
        self.env = dict(os.environ)
        self.consumers = {}

    def ensure_queue(self, name):
        """The queue's URL, with its consumer receiving from now on."""
        url = self.sqs.create_queue(QueueName=name)["QueueUrl"]
        if url not in self.consumers:
            self.consumers[url] = Consumer(self.sqs, url)
        return url

    def invoke(self, function, payload):
        out = self.lam.invoke(FunctionName=function, Payload=json.dumps(payload).encode())
        body = out["Payload"].read()
        try:
            reply = json.loads(body)
        except ValueError:
            reply = {"unparsed": body.decode(errors="replace")}
        return out.get("FunctionError"), reply

    def enqueue_boto3(self, function, queue, body, delay_s):
        error, reply = self.invoke(function, {"queue": queue, "message_body": body, "delay_seconds": delay_s})
        self.check(error is None and reply.get("status") in ("sent", "scheduled"),
                   f"{function}: boto3 Invoke enqueues on {queue} in {delay_s} s (got {error}: {reply})")
        return reply

    def enqueue_cli(self, function, queue, body, delay_s):
        env = dict(self.env, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
                   AWS_ENDPOINT_URL=self.ls.endpoint)
        env.pop("AWS_PROFILE", None)
        run = subprocess.run([str(CLI), "--function", function, "--region", "us-east-1", "--json",
                              "enqueue", queue, body, "--delay", f"{delay_s}s"],
                             env=env, capture_output=True, text=True, timeout=60)
        try:
            reply = json.loads(run.stdout)
        except ValueError:
            reply = {}
        self.check(run.returncode == 0 and reply.get("status") in ("sent", "scheduled"),
                   f"{function}: the sqs-waiter CLI enqueues on {queue} in {delay_s} s "
                   f"(exit {run.returncode}: {json.dumps(reply) if reply else run.stdout.strip()} {run.stderr.strip()[-500:]})")
        return reply

    said_so = False

    def fire_schedule(self, schedule_name):
        """What EventBridge Scheduler would do on the schedule's next minute."""
        if not RoundTrip.said_so:
            print("note LocalStack's EventBridge Scheduler stores schedules but never fires them: the rehearsal "
                  "invokes each schedule's target with the schedule's input, as the scheduler would", flush=True)
            RoundTrip.said_so = True
        group, _, name = schedule_name.rpartition("/")
        target = self.sched.get_schedule(Name=name, **({"GroupName": group} if group else {}))["Target"]
        payload = json.loads(target["Input"]) if target.get("Input") else {}
        error, reply = self.invoke(target["Arn"], payload)
        self.check(error is None and isinstance(reply, dict) and "dispatched" in reply and not reply.get("errors"),
                   f"schedule {schedule_name}: its target (the poller) runs without errors (got {error}: {reply})")
        return reply

    def send_jobs(self, function, queue, label, stored_delay_s):
        """A direct and a stored job by each caller; returns ({body: (perform_at, what)}, how
        many of them were stored)."""
        self.ensure_queue(queue)
        expected = {}
        stored = 0
        for how, enqueue in (("boto3", self.enqueue_boto3), ("cli", self.enqueue_cli)):
            for kind, delay in (("direct", 0), ("stored", stored_delay_s)):
                body = f"{label}/{how}/{kind}/{uuid.uuid4()}"
                reply = enqueue(function, queue, body, delay)
                if "perform_at" in reply:
                    expected[body] = (epoch(reply["perform_at"]), f"{label} {how} {kind} ({reply.get('status')})")
                    stored += reply.get("status") == "scheduled"
                    if kind == "stored":
                        self.check(reply.get("status") == "scheduled", f"{label}: the {how} job in {delay} s is stored")
        return expected, stored

    def round_trip(self, label, function, schedules, queue, stored_delay_s):
        """Jobs through a deployed stack: `send_jobs`, its poller runs, every job received."""
        expected, stored = self.send_jobs(function, queue, f"{label}/{queue}", stored_delay_s)
        self.hand_over_and_receive(label, schedules, queue, expected, stored)

    def hand_over_and_receive(self, label, schedules, queue, expected, stored, on_time=True):
        """The poller runs as the schedules (one per poller group, or one name) would run them,
        handing over the `stored` jobs between them, then every expected job received."""
        names = [schedules] if isinstance(schedules, str) else schedules
        dispatched = sum(self.fire_schedule(name).get("dispatched") or 0 for name in names)
        self.check(dispatched == stored,
                   f"{label}: the poller runs ({len(names)}) hand over the {stored} stored job(s) (got {dispatched})")
        self.receive(queue, expected, on_time=on_time)

    def hold_job(self, function, queue, label, delay_s):
        """One stored job, left for a later poller run; returns {body: (perform_at, what)}."""
        self.ensure_queue(queue)
        body = f"{label}/{uuid.uuid4()}"
        reply = self.enqueue_boto3(function, queue, body, delay_s)
        self.check(reply.get("status") == "scheduled", f"{label}: stored")
        return {body: (epoch(reply["perform_at"]), label)} if "perform_at" in reply else {}

    @staticmethod
    def stored(ddb, table):
        """Jobs stored in a table (items with a perform_at), by a consistent scan."""
        out = ddb.scan(TableName=table, ConsistentRead=True, FilterExpression="attribute_exists(perform_at)", Select="COUNT")
        return out["Count"]

    def receive(self, queue, expected, on_time=True):
        """Waits until the queue's consumer has every expected body (or the timeout); checks
        each arrival."""
        self.deliveries.expected += len(expected)
        consumer = self.consumers[self.ensure_queue(queue)]
        deadline = time.time() + max([RECEIVE_TIMEOUT_S] + [p - time.time() + RECEIVE_TIMEOUT_S for p, _ in expected.values()])
        arrived, duplicates = consumer.seen(expected)
        while len(arrived) < len(expected) and time.time() < deadline:
            time.sleep(0.2)
            arrived, duplicates = consumer.seen(expected)
        for body, (perform_at, what) in expected.items():
            seen = arrived.get(body)
            if not self.check(seen is not None, f"{what}: delivered to {queue}"):
                continue
            late = seen - perform_at
            good = self.check(late >= 0, f"{what}: never early (arrived {late:+.2f} s from perform_at)")
            if on_time:
                good = self.check(late <= ON_TIME_S, f"{what}: on time (at most {ON_TIME_S:.0f} s late; {late:.2f} s)") and good
            if good:
                self.deliveries.delivered += 1
        self.check(not duplicates, f"{queue}: no message delivered twice (got {duplicates})")
