import assert from "node:assert/strict";
import { test } from "node:test";
import { Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { SqsWaiter, SqsWaiterProps } from "../lib/sqs-waiter.ts";
import { fakeCode, newApp } from "./helpers.ts";

function indexes(indexProjection?: string): any[] {
  const stack = new Stack(newApp(), "S", { env: { account: "123456789012", region: "eu-west-1" } });
  const queues = ["orders", "billing"].map((q) => sqs.Queue.fromQueueArn(stack, q, `arn:aws:sqs:eu-west-1:123456789012:${q}`));
  new SqsWaiter(stack, "Waiter", {
    queues,
    enqueueCode: fakeCode(),
    pollerCode: fakeCode(),
    indexProjection: indexProjection as SqsWaiterProps["indexProjection"],
  });
  const tables = Object.values(Template.fromStack(stack).findResources("AWS::DynamoDB::Table")) as any[];
  assert.equal(tables.length, 2);
  return tables.map((t) => t.Properties.GlobalSecondaryIndexes[0]);
}

test("indexProjection: the due index holds the keys, priority and weight by default", () => {
  for (const index of indexes()) {
    assert.equal(index.IndexName, "scheduler-perform_at-index");
    assert.deepEqual(index.Projection, { ProjectionType: "INCLUDE", NonKeyAttributes: ["priority", "weight"] });
  }
});

test("indexProjection: ALL keeps the index of tables created before", () => {
  for (const index of indexes("ALL")) {
    assert.deepEqual(index.Projection, { ProjectionType: "ALL" });
  }
});

test("indexProjection: anything else is refused, naming the prop", () => {
  assert.throws(() => indexes("KEYS_ONLY"), /indexProjection must be "INCLUDE" or "ALL", got "KEYS_ONLY"/);
});
