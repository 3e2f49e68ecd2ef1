import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { ALLOW_LIST_PATH, LAMBDA_ENVIRONMENT_BYTES } from "../lib/allow-list.ts";
import { SqsWaiter } from "../lib/sqs-waiter.ts";
import { fakeCode, newApp } from "./helpers.ts";

/** A waiter over `n` imported queues of 80-character names, synthesized. */
function waiter(n: number): { template: Template; names: string[]; assembly: string } {
  const app = newApp();
  const stack = new Stack(app, "S", { env: { account: "111111111111", region: "us-east-1" } });
  const names = Array.from({ length: n }, (_, i) => `${"q".repeat(74)}${String(i).padStart(6, "0")}`);
  const queues = names.map((name, i) => sqs.Queue.fromQueueArn(stack, `q${i}`, `arn:aws:sqs:us-east-1:111111111111:${name}`));
  new SqsWaiter(stack, "Waiter", { queues, enqueueCode: fakeCode(), pollerCode: fakeCode() });
  const assembly = app.synth().directory;
  return { template: Template.fromStack(stack), names, assembly };
}

/** Each function's environment as deployed, and its size as Lambda counts it. */
function environments(template: Template): { vars: Record<string, string>; bytes: number; layers: unknown[] }[] {
  return Object.values(template.findResources("AWS::Lambda::Function")).map((f: any) => {
    const vars = f.Properties.Environment.Variables as Record<string, string>;
    const bytes = Object.entries(vars).reduce((sum, [k, v]) => {
      assert.equal(typeof v, "string", `${k} is resolved at synth`);
      return sum + Buffer.byteLength(k) + Buffer.byteLength(v);
    }, 0);
    return { vars, bytes, layers: f.Properties.Layers ?? [] };
  });
}

/** The most queues of 80 characters whose list the environment holds. */
function envLimit(): number {
  let n = 40; // well below: each step synthesizes a stack
  assert.ok(environments(waiter(n).template).every((e) => "WAITER_QUEUES" in e.vars));
  while (environments(waiter(n + 1).template).every((e) => "WAITER_QUEUES" in e.vars)) {
    n += 1;
  }
  return n;
}

test("the allow-list stays in the environment up to Lambda's 4 KB, and one queue more moves it to a layer", () => {
  const limit = envLimit();
  console.log(`queues of 80 characters the environment holds: ${limit}`);
  assert.ok(limit >= 40 && limit < 50, `${limit}`);
  const inEnv = environments(waiter(limit).template);
  for (const e of inEnv) {
    assert.ok(e.bytes <= LAMBDA_ENVIRONMENT_BYTES, `${e.bytes} bytes`);
    assert.equal(e.vars.WAITER_QUEUES.split(",").length, limit);
    assert.deepEqual(e.layers, []);
  }
  // One queue more would pass the limit in the environment: the same check says so.
  const over = Buffer.byteLength(inEnv[0].vars.WAITER_QUEUES) + 81;
  assert.ok(inEnv[0].bytes + 81 > LAMBDA_ENVIRONMENT_BYTES, `${inEnv[0].bytes} + 81 (list ${over})`);
  for (const e of environments(waiter(limit + 1).template)) {
    assert.equal(e.vars.WAITER_QUEUES, undefined);
    assert.equal(e.vars.WAITER_QUEUES_FILE, ALLOW_LIST_PATH);
    assert.equal(e.layers.length, 1);
  }
});

test("100 queues of 80 characters: the list in the layer's file, both functions on that layer, the environment small", () => {
  const { template, names, assembly } = waiter(100);
  const layers = template.findResources("AWS::Lambda::LayerVersion");
  assert.equal(Object.keys(layers).length, 1);
  const [layerId] = Object.keys(layers);
  for (const e of environments(template)) {
    assert.deepEqual(e.layers, [{ Ref: layerId }]);
    assert.ok(e.bytes < 1024, `${e.bytes} bytes`);
  }
  // The layer's asset holds exactly the list, at the path the functions read.
  const manifest = JSON.parse(fs.readFileSync(path.join(assembly, "S.assets.json"), "utf8"));
  const sources = Object.values(manifest.files as Record<string, any>).map((f) => path.join(assembly, f.source.path));
  const file = sources.map((s) => path.join(s, "sqs-waiter", "queues")).find((f) => fs.existsSync(f));
  assert.ok(file, `no asset holds sqs-waiter/queues: ${sources}`);
  assert.equal(ALLOW_LIST_PATH, "/opt/sqs-waiter/queues");
  assert.deepEqual(fs.readFileSync(file, "utf8").trim().split("\n"), names);
});

test("a long list of queues CloudFormation names cannot go in a file: synth says which to name", () => {
  const stack = new Stack(newApp(), "Unnamed");
  const queues = Array.from({ length: 60 }, (_, i) => new sqs.Queue(stack, `Q${i}`));
  assert.throws(
    () => new SqsWaiter(stack, "W", { queues, enqueueCode: fakeCode(), pollerCode: fakeCode() }),
    /over Lambda's 4096; .*60 queues have names CloudFormation generates: give them a queueName/,
  );
});
