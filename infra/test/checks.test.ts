import assert from "node:assert/strict";
import { test } from "node:test";
import { Duration, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { SqsWaiter, type SqsWaiterProps } from "../lib/sqs-waiter.ts";
import { fakeCode, newApp } from "./helpers.ts";

// Issue 48, defects 5, 7 and 8: what AWS would refuse mid-deploy, or what would fail at run
// time, stops synth and names the props and the rule.

function synth(props: Partial<SqsWaiterProps>, queueCount = 1, [partition, region] = ["aws", "us-east-1"]): Template {
  const stack = new Stack(newApp(), "S", { env: { account: "111111111111", region } });
  const queues = Array.from({ length: queueCount }, (_, i) =>
    sqs.Queue.fromQueueArn(stack, `q${i}`, `arn:${partition}:sqs:${region}:111111111111:${"q".repeat(74)}${String(i).padStart(6, "0")}`),
  );
  new SqsWaiter(stack, "Waiter", { queues, enqueueCode: fakeCode(), pollerCode: fakeCode(), ...props });
  return Template.fromStack(stack);
}

test("pollerTimeout below fifoHold + 5 s is refused, naming both", () => {
  assert.throws(
    () => synth({ fifoHold: Duration.seconds(60), pollerTimeout: Duration.seconds(64) }),
    /pollerTimeout \(64 s\) must be at least fifoHold \+ 5 s \(65 s\)/,
  );
  synth({ fifoHold: Duration.seconds(60), pollerTimeout: Duration.seconds(65) });
  // The defaults: no hold, a 70 s timeout.
  synth({});
});

test("a poller reservation below pollerGroups is refused; none, or enough, passes", () => {
  assert.throws(
    () => synth({ pollerGroups: 4, pollerReservedConcurrency: 3 }),
    /pollerReservedConcurrency \(3\) must be at least pollerGroups \(4\)/,
  );
  synth({ pollerGroups: 4, pollerReservedConcurrency: 4 });
  synth({ pollerGroups: 4 });
});

test("warm throughput below a new table's own or above the table quota is refused", () => {
  assert.throws(
    () => synth({ warmThroughput: { writeUnitsPerSecond: 1000 } }),
    /warmThroughput.writeUnitsPerSecond must be a whole number from 4000 .* to 40000 .*, got 1000/,
  );
  assert.throws(
    () => synth({ warmThroughput: { writeUnitsPerSecond: 50_000 } }),
    /writeUnitsPerSecond .* to 40000 \(tableThroughputQuota\), got 50000/,
  );
  assert.throws(() => synth({ warmThroughput: { readUnitsPerSecond: 5000 } }), /readUnitsPerSecond must .* from 12000/);
  synth({ warmThroughput: { writeUnitsPerSecond: 50_000 }, tableThroughputQuota: 80_000 });
  synth({ warmThroughput: { readUnitsPerSecond: 12_000, writeUnitsPerSecond: 4_000 } });
});

test("more overflow managed policies than managedPolicyQuota stop synth, naming the role", () => {
  // 100 queues of 80 characters: CDK moves grants into overflow managed policies (7 or 8 a role).
  const template = synth({}, 100);
  const count = (role: string) =>
    Object.values(template.findResources("AWS::IAM::ManagedPolicy")).filter((m: any) =>
      JSON.stringify(m.Properties.Roles).includes(`Waiter${role}`),
    ).length;
  const [enqueue, poller] = [count("EnqueueRole"), count("PollerRole")];
  assert.ok(enqueue >= 2 && poller >= 2, `${enqueue} ${poller}`);
  const quota = Math.max(enqueue, poller) - 1;
  assert.throws(() => synth({ managedPolicyQuota: quota }, 100), (e: Error) => {
    for (const [role, n] of [["EnqueueRole", enqueue], ["PollerRole", poller]] as const) {
      const named = new RegExp(`${role} needs ${n} managed policies .* over managedPolicyQuota \\(${quota}\\)`);
      (n > quota ? assert.match : assert.doesNotMatch)(e.message, named);
    }
    return true;
  });
  synth({ managedPolicyQuota: quota + 1 }, 100);
  assert.throws(() => synth({ managedPolicyQuota: 21 }), /managedPolicyQuota must be a whole number from 1 to 20/);
});

test("101 queues of 80 characters are refused in every partition, naming the limit; 100 synthesize", () => {
  for (const where of [
    ["aws", "us-east-1"],
    ["aws-cn", "cn-northwest-1"],
    ["aws-us-gov", "us-gov-west-1"],
  ] as [string, string][]) {
    assert.throws(() => synth({}, 101, where), /SqsWaiter: 101 queues \(queues 101, adoptedQueues 0\): a stack serves at most 100/);
  }
  // 100 synthesize (their IAM budgets: "100 queues of 80 characters, in every partition").
  synth({}, 100, ["aws-us-gov", "us-gov-west-1"]);
});
