import { test } from "node:test";
import { Stack } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { SqsWaiter } from "../lib/sqs-waiter.ts";
import { fakeCode, newApp } from "./helpers.ts";

// Issue 45, item 7: each queue's metrics are custom metrics billed by the month.
test("queueMetrics reaches both functions as WAITER_QUEUE_METRICS, on by default", () => {
  for (const [queueMetrics, expected] of [
    [undefined, "true"],
    [false, "false"],
  ] as const) {
    const stack = new Stack(newApp(), `Metrics${expected}`);
    const queue = new sqs.Queue(stack, "Q");
    new SqsWaiter(stack, "W", { queues: [queue], queueMetrics, enqueueCode: fakeCode(), pollerCode: fakeCode() });
    const functions = Template.fromStack(stack).findResources("AWS::Lambda::Function", {
      Properties: { Environment: { Variables: Match.objectLike({ WAITER_QUEUE_METRICS: expected }) } },
    });
    if (Object.keys(functions).length !== 2) {
      throw new Error(`queueMetrics ${queueMetrics}: ${Object.keys(functions).length} functions with ${expected}`);
    }
  }
});

// Issue 82 (13): every message carries waiter.job_id unless turned off; the default costs no
// byte of Lambda's 4 KB of environment.
test("jobIdAttribute false reaches both functions as WAITER_JOB_ID_ATTRIBUTE, absent by default", () => {
  for (const jobIdAttribute of [undefined, true, false] as const) {
    const stack = new Stack(newApp(), `JobId${String(jobIdAttribute)}`);
    const queue = new sqs.Queue(stack, "Q");
    new SqsWaiter(stack, "W", { queues: [queue], jobIdAttribute, enqueueCode: fakeCode(), pollerCode: fakeCode() });
    const functions = Object.values(Template.fromStack(stack).findResources("AWS::Lambda::Function"));
    const values = functions.map((f) => f.Properties.Environment.Variables.WAITER_JOB_ID_ATTRIBUTE);
    const expected = jobIdAttribute === false ? "false" : undefined;
    if (functions.length !== 2 || values.some((v) => v !== expected)) {
      throw new Error(`jobIdAttribute ${jobIdAttribute}: ${JSON.stringify(values)}`);
    }
  }
});
