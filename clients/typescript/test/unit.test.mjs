// Unit tests of the built client (dist/): no function, a fake Lambda client that records what it
// was sent and answers what it is told. The schema is read from the repository (schema/).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  ACTIONS,
  ATTRIBUTES,
  Client,
  ERROR_TYPES,
  attemptOf,
  InvalidRequest,
  InvokeError,
  LIMITS,
  NotAWaiterMessage,
  SqsWaiterError,
  Throttled,
  UnknownFunctionError,
  replayOf,
  retryOf,
  split,
} from "../dist/index.js";

const schema = JSON.parse(readFileSync(new URL("../../../schema/contract.schema.json", import.meta.url), "utf8"));
const defs = schema.$defs;
const JOB_REPLY = { status: "scheduled", job_id: "j", queue: "q" };

class FakeLambda {
  constructor(...answers) {
    this.answers = answers;
    this.sent = [];
  }
  async send(command) {
    this.sent.push(JSON.parse(new TextDecoder().decode(command.input.Payload)));
    const answer = this.answers.shift() ?? { payload: JOB_REPLY };
    if (answer.throws) throw answer.throws;
    return { Payload: new TextEncoder().encode(JSON.stringify(answer.payload)), FunctionError: answer.functionError };
  }
}

const batch = (n) => ({ payload: { results: Array(n).fill(JOB_REPLY) } });
const client = (fake) => new Client({ functionName: "f", lambdaClient: fake });

// One call per request form the function reads: a form the schema adds and the client lacks fails.
const CALLS = {
  Job: (c) => c.enqueue({ queue: "q", message_body: "b" }),
  EnqueueMany: (c) => c.enqueueMany([{ queue: "q", message_body: "b" }]),
  Get: (c) => c.get("q", "j"),
  Cancel: (c) => c.cancel("q", "j"),
  Reschedule: (c) => c.reschedule({ queue: "q", job_id: "j", delay_seconds: 60 }),
  List: (c) => c.list({ queue: "q", from: "2030-01-01T00:00:00Z" }),
  CancelMany: (c) => c.cancelMany({ queue: "q", prefix: "a" }),
  ListParked: (c) => c.parked({ queue: "q" }),
  Redrive: (c) => c.redrive("q", "j"),
  RedriveMany: (c) => c.redriveMany("q", ["a", "b"]),
  RedriveAll: (c) => c.redriveAll("q", { limit: 10 }),
  Stats: (c) => c.stats({ queue: "q" }),
  Replay: (c) => c.replay({ queue: "q", job_id: "j" }),
  Retry: (c) => c.retry({ queue: "q", job_id: "j", attempt: 1, message_body: "b" }),
  Pause: (c) => c.pause({ queue: "q" }),
  Resume: (c) => c.resume({ queue: "q", job_id: "j" }),
  Trigger: (c) => c.trigger("q", "j"),
  Preview: (c) => c.preview({ repeat: { every_s: 60 } }),
  Queues: (c) => c.queues(),
};
const BATCHES = { EnqueueMany: 1, RedriveMany: 2 };

test("the constants are the schema's", () => {
  const extra = schema["x-sqs-waiter"];
  assert.deepEqual(
    ACTIONS.map((f) => ({ ...f })),
    extra.actions,
  );
  assert.deepEqual(LIMITS, extra.limits);
  assert.deepEqual(ATTRIBUTES, extra.attributes);
  assert.deepEqual(ERROR_TYPES, Object.fromEntries(extra.error_types.map((t) => [t.name, t.retryable])));
});

test("each request form has a method that sends its action with the schema's fields", async () => {
  assert.deepEqual(Object.keys(CALLS).sort(), ACTIONS.map((f) => f.request).sort());
  for (const { action, request } of ACTIONS) {
    const fake = new FakeLambda(request in BATCHES ? batch(BATCHES[request]) : { payload: JOB_REPLY });
    await CALLS[request](client(fake));
    assert.equal(fake.sent.length, 1, request);
    const { action: sentAction, ...fields } = fake.sent[0];
    assert.equal(sentAction, action, request);
    const known = Object.keys(defs[request].properties ?? {});
    for (const f of Object.keys(fields)) assert.ok(known.includes(f), `${request}: ${f} is not in the schema`);
    for (const f of defs[request].required ?? []) assert.ok(f in fields, `${request}: ${f} is required`);
  }
});

test("the function name is given, else the environment's, else the default", () => {
  const saved = process.env.SQS_WAITER_FUNCTION;
  try {
    delete process.env.SQS_WAITER_FUNCTION;
    assert.equal(new Client({ lambdaClient: new FakeLambda() }).functionName, "sqs-waiter-enqueue");
    process.env.SQS_WAITER_FUNCTION = "from-env";
    assert.equal(new Client({ lambdaClient: new FakeLambda() }).functionName, "from-env");
    assert.equal(client(new FakeLambda()).functionName, "f");
  } finally {
    if (saved === undefined) delete process.env.SQS_WAITER_FUNCTION;
    else process.env.SQS_WAITER_FUNCTION = saved;
  }
});

test("each errorType rejects with its class and says whether to retry", async () => {
  for (const t of schema["x-sqs-waiter"].error_types) {
    const fake = new FakeLambda({
      payload: { errorType: t.name, errorMessage: "queue: must be one of orders" },
      functionError: "Unhandled",
    });
    const e = await client(fake).get("q", "j").then(() => assert.fail("resolved"), (e) => e);
    assert.ok(e instanceof SqsWaiterError);
    assert.equal(e.constructor.name, t.name);
    assert.equal(e.name, t.name);
    assert.deepEqual([e.errorType, e.retryable], [t.name, t.retryable]);
  }
});

test("InvalidRequest names the field and the rule", async () => {
  const fake = new FakeLambda({
    payload: { errorType: "InvalidRequest", errorMessage: "message_attributes.a.data_type: is required" },
    functionError: "Unhandled",
  });
  const e = await client(fake).get("q", "j").catch((e) => e);
  assert.ok(e instanceof InvalidRequest);
  assert.deepEqual([e.field, e.rule, e.message], ["message_attributes.a.data_type", "is required", "message_attributes.a.data_type: is required"]);
});

test("an unknown errorType is not retried, and a reply with a status is a reply", async () => {
  const crash = new FakeLambda({ payload: { errorType: "Runtime.ExitError", errorMessage: "exit status 101" }, functionError: "Unhandled" });
  const e = await client(crash).get("q", "j").catch((e) => e);
  assert.ok(e instanceof UnknownFunctionError);
  assert.deepEqual([e.errorType, e.retryable], ["Runtime.ExitError", false]);
  assert.equal((await client(new FakeLambda()).get("q", "j")).status, "scheduled");
});

test("Lambda's own failures are retryable when transient, with the SDK's error as the cause", async () => {
  const sdkError = (name, status) => Object.assign(new Error("m"), { name, $metadata: { httpStatusCode: status } });
  const cases = [
    [sdkError("TooManyRequestsException", 429), true],
    [sdkError("ServiceException", 500), true],
    [sdkError("ResourceNotFoundException", 404), false],
    [sdkError("AccessDeniedException", 403), false],
    [Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" }), true],
    [Object.assign(new Error("socket hang up"), { name: "TimeoutError" }), true],
    [new Error("Region is missing"), false],
    [Object.assign(new Error("Could not load credentials"), { name: "CredentialsProviderError" }), false],
  ];
  for (const [error, retryable] of cases) {
    const e = await client(new FakeLambda({ throws: error })).get("q", "j").catch((e) => e);
    assert.ok(e instanceof InvokeError, String(e));
    assert.equal(e.retryable, retryable, error.name);
    assert.equal(e.cause, error);
  }
  // cargo lambda watch's 500 carries the function's error in its body: the SDK copies it.
  const watch = Object.assign(sdkError("UnknownError", 500), { errorType: "Throttled", errorMessage: "slow down" });
  const e = await client(new FakeLambda({ throws: watch })).get("q", "j").catch((e) => e);
  assert.ok(e instanceof Throttled);
});

test("a batch's failed entries are errors in place", async () => {
  const failure = { status: "error", error: { type: "Throttled", message: "slow down", retryable: true } };
  const [first, second] = await client(new FakeLambda({ payload: { results: [JOB_REPLY, failure] } })).enqueueMany([
    { queue: "q", message_body: "a" },
    { queue: "q", message_body: "b" },
  ]);
  assert.deepEqual(first, JOB_REPLY);
  assert.ok(second instanceof Throttled && second.retryable);
  // A type this client does not know keeps the function's word on retrying.
  const newer = { status: "error", error: { type: "Overloaded", message: "later", retryable: true } };
  const [only] = await client(new FakeLambda({ payload: { results: [newer] } })).enqueueMany([{ queue: "q", message_body: "a" }]);
  assert.ok(only instanceof UnknownFunctionError && only.retryable);
});

test("a request's own action field cannot change the action", async () => {
  const fake = new FakeLambda();
  await client(fake).call("get", { queue: "q", job_id: "j", action: "cancel" });
  assert.equal(fake.sent[0].action, "get");
});

test("the attempt is read as the Rust client reads it", () => {
  const cases = { 3: 3, " 3 ": 3, "+3": 3, 2.5: 1, 0: 1, "-2": 1, "1_0": 1, "\uff14": 1, 4294967295: 4294967295, 4294967296: 1, "": 1, x: 1 };
  for (const [value, want] of Object.entries(cases)) {
    assert.equal(attemptOf({ [ATTRIBUTES.attempt]: { data_type: "Number", string_value: value } }), want, JSON.stringify(value));
  }
  assert.equal(attemptOf({}), 1);
});

const jobs = (n, body) => Array.from({ length: n }, (_, i) => ({ queue: "orders", message_body: "x".repeat(body), job_id: `job-${i}` }));

test("requests split by count and by bytes, in order", async () => {
  assert.deepEqual(split(jobs(2500, 10)).map((r) => r.length), [1000, 1000, 500]);
  const requests = split(jobs(1000, 7 * 1024));
  assert.ok(requests.length >= 2);
  for (const r of requests) {
    assert.ok(Buffer.byteLength(JSON.stringify({ action: "enqueue", jobs: r })) < LIMITS.max_invoke_payload_bytes);
  }
  assert.deepEqual(requests.flat().map((j) => j.job_id), jobs(1000, 0).map((j) => j.job_id));
  const list = jobs(3, 10);
  list.splice(1, 0, { queue: "orders", message_body: "y".repeat(300) });
  assert.deepEqual(split(list, 200).map((r) => r.length), [1, 1, 2]);
  assert.deepEqual(split([]), []);
  const fake = new FakeLambda(batch(1000), batch(1000), batch(500));
  assert.equal((await client(fake).enqueueMany(jobs(2500, 10))).length, 2500);
  assert.deepEqual(fake.sent.map((s) => s.jobs.length), [1000, 1000, 500]);
});

test("a failed request is the error of each of its jobs and the others keep their results (issue 82, defect 9)", async () => {
  const failed = { payload: { errorType: "Throttled", errorMessage: "slow down" }, functionError: "Unhandled" };
  const fake = new FakeLambda(batch(1000), failed, batch(500));
  const results = await client(fake).enqueueMany(jobs(2500, 10));
  assert.equal(results.length, 2500);
  assert.deepEqual(fake.sent.map((s) => s.jobs.length), [1000, 1000, 500]);
  assert.ok([...results.slice(0, 1000), ...results.slice(2000)].every((r) => r === JOB_REPLY || r.status === "scheduled"));
  assert.ok(results.slice(1000, 2000).every((e) => e instanceof Throttled && e.retryable));
});

test("redriveAll takes the reply's cursor as it came, null included (issue 82, defect 10)", async () => {
  const fake = new FakeLambda({ payload: { redriven: 0, cursor: null } }, { payload: { redriven: 0, cursor: null } });
  await client(fake).redriveAll("q", { limit: 5, cursor: "c-1" });
  await client(fake).redriveAll("q", { cursor: null });
  assert.deepEqual(fake.sent, [
    { action: "redrive", queue: "q", all: true, limit: 5, cursor: "c-1" },
    { action: "redrive", queue: "q", all: true },
  ]);
});

test("a Lambda record's attribute without a data type reads as String (issue 82, defect 10)", () => {
  const r = retryOf({ ...RECORD, messageAttributes: { ...RECORD.messageAttributes, kind: { stringValue: "x" } } }, {});
  assert.deepEqual(r.message_attributes.kind, { data_type: "String", string_value: "x" });
});

const RECEIVED = {
  MessageId: "m-1",
  Body: '{"order":7}',
  Attributes: { MessageGroupId: "g-1" },
  MessageAttributes: {
    "waiter.attempt": { DataType: "Number", StringValue: "3" },
    kind: { DataType: "String", StringValue: "invoice" },
    raw: { DataType: "Binary", BinaryValue: new Uint8Array([0, 1]) },
  },
};
const RECORD = {
  messageId: "m-2",
  body: "x",
  attributes: {},
  messageAttributes: { "waiter.job_id": { dataType: "String", stringValue: "o-8~3" } },
  eventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:orders",
};

test("a received message is retried with its body, attributes, attempt and group", () => {
  const r = retryOf(RECEIVED, { queue: "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs.fifo", jobId: "o-7" });
  assert.deepEqual([r.queue, r.job_id, r.attempt, r.message_body, r.message_group_id], ["jobs.fifo", "o-7", 3, '{"order":7}', "g-1"]);
  assert.equal(r.message_attributes.raw.binary_value, "AAE=");
  assert.equal(r.message_attributes.kind.string_value, "invoice");
});

test("a Lambda record names its queue, and a copy its own id", () => {
  const r = retryOf(RECORD, { jobId: "o-8" });
  assert.deepEqual([r.queue, r.job_id, r.attempt], ["orders", "o-8~3", 1]);
  assert.deepEqual(replayOf(RECORD), { queue: "orders", job_id: "o-8~3" });
});

test("a message that names no job is refused and nothing is sent", async () => {
  const fake = new FakeLambda();
  const plain = { messageId: "m-3", body: "x", messageAttributes: {}, eventSourceARN: "arn:aws:sqs:r:1:orders" };
  const e = await client(fake).retryMessage(plain).catch((e) => e);
  assert.ok(e instanceof NotAWaiterMessage);
  assert.match(e.message, /waiter\.job_id/);
  const noQueue = await client(fake).retryMessage(RECEIVED, { jobId: "o-7" }).catch((e) => e);
  assert.ok(noQueue instanceof NotAWaiterMessage && noQueue.message.startsWith("queue:"));
  assert.deepEqual(fake.sent, []);
});

test("retryMessage sends the policy with the message", async () => {
  const fake = new FakeLambda();
  await client(fake).retryMessage(RECORD, { backoff: { base_s: 2, jitter: false }, maxAttempts: 4, error: "boom" });
  const [sent] = fake.sent;
  assert.deepEqual([sent.action, sent.backoff, sent.max_attempts, sent.error], ["retry", { base_s: 2, jitter: false }, 4, "boom"]);
});
