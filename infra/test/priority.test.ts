import assert from "node:assert/strict";
import { test } from "node:test";
import { Stack } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { SqsWaiter } from "../lib/sqs-waiter.ts";
import { fakeCode, newApp } from "./helpers.ts";

test("priorityOrder reaches the functions as WAITER_PRIORITY_ORDER and a bad one is refused at synth", () => {
  const stack = new Stack(newApp(), "Ranked");
  const queue = new sqs.Queue(stack, "Q");
  new SqsWaiter(stack, "W", { queues: [queue], priorityOrder: "priority", enqueueCode: fakeCode(), pollerCode: fakeCode() });
  Template.fromStack(stack).hasResourceProperties("AWS::Lambda::Function", {
    Environment: { Variables: Match.objectLike({ WAITER_PRIORITY_ORDER: "priority", WAITER_MAX_RATE: "0" }) },
  });
  const plain = new Stack(newApp(), "Unranked");
  new SqsWaiter(plain, "W", { queues: [new sqs.Queue(plain, "Q")], enqueueCode: fakeCode(), pollerCode: fakeCode() });
  Template.fromStack(plain).hasResourceProperties("AWS::Lambda::Function", {
    Environment: { Variables: Match.objectLike({ WAITER_PRIORITY_ORDER: "time" }) },
  });
  const bad = new Stack(newApp(), "BadOrder");
  const q = new sqs.Queue(bad, "Q");
  assert.throws(
    () =>
      new SqsWaiter(bad, "W", {
        queues: [q],
        priorityOrder: "fifo" as "time",
        enqueueCode: fakeCode(),
        pollerCode: fakeCode(),
      }),
    /priorityOrder must be "time" or "priority", got "fifo"/,
  );
});
