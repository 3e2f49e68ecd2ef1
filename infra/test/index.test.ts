import assert from "node:assert/strict";
import { test } from "node:test";
import type { SqsWaiterProps } from "../lib/sqs-waiter.ts";
import { twoQueueWaiter } from "./helpers.ts";

function indexes(indexProjection?: string): any[] {
  const template = twoQueueWaiter({ indexProjection: indexProjection as SqsWaiterProps["indexProjection"] });
  const tables = Object.values(template.findResources("AWS::DynamoDB::Table")) as any[];
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
