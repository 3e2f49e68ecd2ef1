// The client against the real enqueue function on the emulator. tests/tests/clients.rs serves the
// function and runs this from a clean npm project that installed the packed tarball
// (target/clients/typescript-user): every action, an InvalidRequest naming its field, a
// consumer's retry that arrives as attempt 2, a replay, a FIFO consumer's retry that keeps its
// group, and the READMEs' snippets, compiled with the project's own tsc --strict and run.
//
// Environment: SQS_WAITER_FUNCTION, SQS_WAITER_QUEUE_URL, SQS_WAITER_FIFO_QUEUE_URL, SQS_WAITER_REPO, AWS_ENDPOINT_URL (the function),
// AWS_ENDPOINT_URL_SQS and the region and dummy credentials.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { ATTRIBUTES, Client, InvalidRequest, NotAWaiterMessage, attemptOf, attributesOf, retryOf } from "@sqs-waiter/client";

const QUEUE = "orders";
const FIFO_QUEUE = "orders.fifo";
const SECTION = "### From Rust, Python or TypeScript";
const url = process.env.SQS_WAITER_QUEUE_URL;
const repo = process.env.SQS_WAITER_REPO;
const client = new Client();
const sqs = new SQSClient({});

async function receive(want, timeoutMs = 20_000) {
  const got = [];
  const until = Date.now() + timeoutMs;
  while (got.length < want && Date.now() < until) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        MessageAttributeNames: ["All"],
        MessageSystemAttributeNames: ["All"],
      }),
    );
    for (const m of out.Messages ?? []) {
      await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
      got.push(m);
    }
  }
  return got;
}

test("the installed tarball is what runs", () => {
  const resolved = realpathSync(fileURLToPath(import.meta.resolve("@sqs-waiter/client")));
  assert.ok(resolved.includes("node_modules"), resolved);
  assert.ok(!resolved.startsWith(join(repo, "clients")), resolved);
});

test("jobs are stored, sent and managed", async () => {
  const first = await client.enqueue({
    queue: QUEUE,
    message_body: "later",
    delay_seconds: 86_400,
    job_id: "ts-1",
    message_attributes: { kind: { data_type: "String", string_value: "invoice" } },
  });
  assert.deepEqual([first.status, first.duplicate], ["scheduled", false]);
  assert.equal((await client.enqueue({ queue: QUEUE, message_body: "later", delay_seconds: 86_400, job_id: "ts-1" })).duplicate, true);

  const job = await client.get(QUEUE, "ts-1");
  assert.deepEqual([job.status, job.version, job.message_body], ["scheduled", 1, "later"]);
  assert.equal(job.message_attributes.kind.string_value, "invoice");

  const moved = await client.reschedule({ queue: QUEUE, job_id: "ts-1", delay_seconds: 7 * 86_400, if_version: 1 });
  assert.deepEqual([moved.status, moved.version], ["rescheduled", 2]);
  assert.equal((await client.reschedule({ queue: QUEUE, job_id: "ts-1", delay_seconds: 60, if_version: 1 })).status, "conflict");

  const results = await client.enqueueMany([
    { queue: QUEUE, message_body: "a", delay_seconds: 2 * 86_400, job_id: "ts-2" },
    { queue: "nope", message_body: "b", delay_seconds: 3600 },
    { queue: QUEUE, message_body: "c", delay_seconds: 3 * 86_400, job_id: "ts-3" },
  ]);
  assert.equal(results.length, 3);
  assert.ok(results[1] instanceof InvalidRequest);
  assert.deepEqual([results[1].field, results[1].retryable], ["queue", false]);
  assert.ok(!(results[0] instanceof Error) && !(results[2] instanceof Error));

  const page = await client.list({ queue: QUEUE, prefix: "ts-", limit: 2 });
  assert.deepEqual(page.jobs.map((j) => j.job_id), ["ts-2", "ts-3"]);
  const rest = await client.list({ queue: QUEUE, prefix: "ts-", cursor: page.cursor });
  assert.deepEqual(rest.jobs.map((j) => j.job_id), ["ts-1"]);

  const stats = await client.stats({ queue: QUEUE, buckets: 4, bucket_s: 86_400 });
  assert.deepEqual([stats.scheduled, stats.histogram.length], [3, 4]);

  assert.equal((await client.pause({ queue: QUEUE, job_id: "ts-2" })).status, "paused");
  assert.equal((await client.resume({ queue: QUEUE, job_id: "ts-2" })).status, "resumed");

  const preview = await client.preview({ repeat: { cron: "0 9 * * *" }, time_zone: "Europe/Paris", count: 3 });
  assert.equal(preview.occurrences.length, 3);
  assert.ok(preview.occurrences.every((o) => /\+0[12]:00$/.test(o.local)));

  const { queues } = await client.queues();
  assert.deepEqual(queues.map((q) => [q.queue, q.fifo, q.paused]), [
    [QUEUE, false, false],
    [FIFO_QUEUE, true, false],
  ]);

  assert.deepEqual((await client.parked({ queue: QUEUE })).jobs, []);
  assert.equal((await client.redrive(QUEUE, "ts-404")).status, "not_found");
  assert.equal((await client.redriveAll(QUEUE)).redriven, 0);

  assert.equal((await client.cancel(QUEUE, "ts-3")).status, "cancelled");
  const bulk = await client.cancelMany({ queue: QUEUE, job_ids: ["ts-1", "ts-404"] });
  assert.deepEqual([bulk.cancelled, bulk.not_found], [1, 1]);

  const sent = await client.trigger(QUEUE, "ts-2");
  assert.equal(sent.status, "sent");
  const got = await receive(1);
  assert.deepEqual(got.map((m) => m.Body), ["a"]);
  assert.equal(got[0].MessageId, sent.message_id);
});

test("a bad request names its field and stores nothing", async () => {
  const e = await client
    .enqueue({ queue: QUEUE, message_body: "x", delay_seconds: 60, perform_at: "2030-01-01T00:00:00Z", job_id: "ts-bad" })
    .catch((e) => e);
  assert.ok(e instanceof InvalidRequest, String(e));
  assert.deepEqual([e.errorType, e.retryable], ["InvalidRequest", false]);
  assert.ok(["delay_seconds", "perform_at"].includes(e.field), e.field);
  assert.equal((await client.get(QUEUE, "ts-bad")).status, "not_found");
  const unknown = await client.call("enqueue", { queue: QUEUE, message_body: "x", delay: 60 }).catch((e) => e);
  assert.ok(unknown instanceof InvalidRequest);
  assert.equal(unknown.field, "delay");
});

test("a consumer retries a message that arrives as attempt 2, then replays it", async () => {
  assert.equal((await client.enqueue({ queue: QUEUE, message_body: "work", job_id: "ts-r" })).status, "sent");
  const [first] = await receive(1);
  assert.equal(attemptOf(attributesOf(first)), 1);
  // Every message names its job where it leaves room (issue 82): the message alone is enough.
  // One without the attribute needs the id it was enqueued under.
  assert.equal(attributesOf(first)["waiter.job_id"]?.string_value, "ts-r");
  const anonymous = {
    ...first,
    MessageAttributes: Object.fromEntries(Object.entries(first.MessageAttributes).filter(([k]) => k !== "waiter.job_id")),
  };
  const refused = await client.retryMessage(anonymous, { queue: QUEUE }).catch((e) => e);
  assert.ok(refused instanceof NotAWaiterMessage && refused.message.includes("job_id"));
  const reply = await client.retryMessage(first, {
    queue: url,
    backoff: { base_s: 1, jitter: false },
    maxAttempts: 5,
    error: "timeout",
  });
  assert.deepEqual([reply.status, reply.attempt], ["scheduled", 2]);
  const [second] = await receive(1);
  assert.equal(second.Body, "work");
  assert.equal(attributesOf(second)[ATTRIBUTES.attempt].string_value, "2");
  const record = {
    messageId: second.MessageId,
    body: second.Body,
    attributes: {},
    messageAttributes: Object.fromEntries(
      Object.entries(second.MessageAttributes).map(([k, v]) => [k, { dataType: v.DataType, stringValue: v.StringValue }]),
    ),
    eventSourceARN: `arn:aws:sqs:${process.env.AWS_REGION}:000000000000:${QUEUE}`,
  };
  const request = retryOf(record, { jobId: "ts-r" });
  assert.deepEqual([request.queue, request.attempt], [QUEUE, 2]);

  const until = Date.now() + 20_000;
  while ((await client.get(QUEUE, "ts-r")).status !== "dispatched" && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 200));
  }
  const copy = await client.replayMessage(second, { queue: QUEUE, jobId: "ts-r", newJobId: "ts-r-copy" });
  assert.deepEqual([copy.status, copy.job_id, copy.replay_of], ["scheduled", "ts-r-copy", "ts-r"]);
  const [replayed] = await receive(1);
  assert.equal(replayed.Body, "work");
  assert.equal(attributesOf(replayed)[ATTRIBUTES.job_id].string_value, "ts-r-copy");
});

// Issue 82, defect 11: the README's receive (`MessageSystemAttributeNames: ["MessageGroupId"]`)
// hands retryMessage the group; a receive without it is refused by the function, by name.
test("a FIFO consumer, receiving as the README says, retries in its group", async () => {
  const fifoUrl = process.env.SQS_WAITER_FIFO_QUEUE_URL;
  const sent = await client.enqueue({
    queue: FIFO_QUEUE,
    message_body: "fifo work",
    job_id: "ts-f",
    message_group_id: "customer-7",
  });
  assert.equal(sent.status, "sent");
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: fifoUrl,
      WaitTimeSeconds: 5,
      MessageAttributeNames: ["All"],
      MessageSystemAttributeNames: ["MessageGroupId"],
    }),
  );
  assert.equal(Messages.length, 1);
  const [message] = Messages;
  assert.equal(message.Attributes?.MessageGroupId, "customer-7");
  const { Attributes, ...withoutGroup } = message;
  const backoff = { base_s: 60, jitter: false };
  const refused = await client.retryMessage(withoutGroup, { queue: fifoUrl, backoff }).catch((e) => e);
  assert.ok(refused instanceof InvalidRequest, String(refused));
  assert.equal(refused.field, "message_group_id");
  const reply = await client.retryMessage(message, { queue: fifoUrl, backoff, error: "timeout" });
  assert.deepEqual([reply.status, reply.attempt], ["scheduled", 2]);
  await sqs.send(new DeleteMessageCommand({ QueueUrl: fifoUrl, ReceiptHandle: message.ReceiptHandle }));
  const job = await client.get(FIFO_QUEUE, "ts-f");
  assert.deepEqual(
    [job.status, job.attempt, job.message_group_id, job.message_body],
    ["scheduled", 2, "customer-7", "fifo work"],
  );
  assert.equal((await client.cancel(FIFO_QUEUE, "ts-f")).status, "cancelled");
});

test("the READMEs' snippets compile under tsc --strict and run", async () => {
  const served = process.env.SQS_WAITER_FUNCTION;
  // README.md's section on the clients (its other ts blocks are the CDK's), and the client's README.
  const section = (text) => (text.includes(SECTION) ? text.split(SECTION)[1].split(/\n##+ /)[0] : text);
  const blocks = [join(repo, "README.md"), join(repo, "clients", "typescript", "README.md")].flatMap((path) =>
    [...section(readFileSync(path, "utf8")).matchAll(/```ts\n([\s\S]*?)```/g)].map((m) =>
      m[1].replaceAll('"sqs-waiter-enqueue"', JSON.stringify(served)),
    ),
  );
  assert.equal(blocks.length, 3, `${blocks.length} snippets`);
  const dir = join(process.cwd(), "snippets");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  blocks.forEach((code, i) => writeFileSync(join(dir, `snippet${i}.ts`), `${code}\nexport {};\n`));
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: { strict: true, target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", skipLibCheck: true, types: ["node"] },
      include: ["*.ts"],
    }),
  );
  execFileSync(join(process.cwd(), "node_modules", ".bin", "tsc"), ["-p", dir], { stdio: "inherit" });
  for (let i = 0; i < blocks.length; i++) await import(join(dir, `snippet${i}.js`));
  // The consumer's snippet handed its message back: attempt 2 of charge-7 is scheduled.
  assert.equal((await client.get(QUEUE, "charge-7")).attempt, 2);
  await receive(10, 2_000);
});
