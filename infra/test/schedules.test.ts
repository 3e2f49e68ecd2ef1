import assert from "node:assert/strict";
import { test } from "node:test";
import { Stack } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { SqsWaiter } from "../lib/sqs-waiter.ts";
import { example, fakeCode, newApp } from "./helpers.ts";

// The poller's schedules: one per poller group, in the stack's own schedule group, and the
// scheduler role that only they may assume.

test("the poller runs every minute through EventBridge Scheduler", () => {
  const { template } = example();
  template.hasResourceProperties("AWS::Scheduler::Schedule", {
    ScheduleExpression: "rate(1 minute)",
    FlexibleTimeWindow: { Mode: "OFF" },
    Target: { RetryPolicy: { MaximumRetryAttempts: 0 } },
  });
});

test("only this stack's schedules may assume the scheduler role: its own schedule group, named in the trust", () => {
  const { stack, template } = example();
  const groups = Object.entries(template.findResources("AWS::Scheduler::ScheduleGroup")) as [string, any][];
  assert.equal(groups.length, 1);
  const [groupId, group] = groups[0];
  assert.equal(group.Properties?.Name, undefined, "a fixed name would collide between two stacks");
  for (const s of Object.values(template.findResources("AWS::Scheduler::Schedule")) as any[]) {
    assert.deepEqual(s.Properties.GroupName, { Ref: groupId });
  }
  template.hasResourceProperties("AWS::IAM::Role", {
    AssumeRolePolicyDocument: {
      Statement: [
        {
          Action: "sts:AssumeRole",
          Effect: "Allow",
          Principal: { Service: "scheduler.amazonaws.com" },
          Condition: {
            StringEquals: { "aws:SourceAccount": stack.resolve(stack.account) },
            ArnEquals: { "aws:SourceArn": { "Fn::GetAtt": [groupId, "Arn"] } },
          },
        },
      ],
    },
  });
});

test("one schedule per poller group, each invoking the poller with its group", () => {
  const { template } = example();
  const single = Object.values(template.findResources("AWS::Scheduler::Schedule")) as any[];
  assert.equal(single.length, 1);
  assert.equal(single[0].Properties.Target.Input, JSON.stringify({ group: 0, groups: 1 }));

  const stack = new Stack(newApp(), "Grouped");
  const queue = new sqs.Queue(stack, "Q");
  const table = { readUnitsPerSecond: 30000, writeUnitsPerSecond: 40000 };
  new SqsWaiter(stack, "W", { queues: [queue], pollerGroups: 4, warmThroughput: table, enqueueCode: fakeCode(), pollerCode: fakeCode() });
  const grouped = Template.fromStack(stack);
  const schedules = Object.entries(grouped.findResources("AWS::Scheduler::Schedule")) as [string, any][];
  const inputs = schedules.map(([, s]) => JSON.parse(s.Properties.Target.Input)).sort((a, b) => a.group - b.group);
  assert.deepEqual(inputs, [0, 1, 2, 3].map((group) => ({ group, groups: 4 })));
  // Group 0 keeps the single schedule's id: adding groups replaces no schedule.
  assert.ok(schedules.some(([id, s]) => id.startsWith("WEveryMinute") && !id.includes("Group") && JSON.parse(s.Properties.Target.Input).group === 0));
  for (const [, s] of schedules) {
    assert.equal(s.Properties.Target.RetryPolicy.MaximumRetryAttempts, 0);
    assert.ok(s.Properties.Target.DeadLetterConfig.Arn);
  }
  grouped.hasResourceProperties("AWS::Lambda::Function", {
    Environment: { Variables: Match.objectLike({ WAITER_POLLER_GROUPS: "4" }) },
  });
  const warm = { ReadUnitsPerSecond: 30000, WriteUnitsPerSecond: 40000 };
  grouped.hasResourceProperties("AWS::DynamoDB::Table", {
    WarmThroughput: warm,
    GlobalSecondaryIndexes: [Match.objectLike({ WarmThroughput: warm })],
  });
  assert.ok(
    Object.values(template.findResources("AWS::DynamoDB::Table")).every((t: any) => t.Properties.WarmThroughput === undefined),
    "no warm throughput unless asked",
  );
});
