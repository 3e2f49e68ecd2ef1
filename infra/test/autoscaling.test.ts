import assert from "node:assert/strict";
import { test } from "node:test";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import { twoQueueWaiter } from "./helpers.ts";

const synth = twoQueueWaiter;

const PROVISIONED = { billingMode: dynamodb.BillingMode.PROVISIONED, readCapacity: 5, writeCapacity: 10 };

test("autoscaling: each created table and its index scale reads and writes, tracking the target", () => {
  const template = synth({ ...PROVISIONED, maxReadCapacity: 100, maxWriteCapacity: 400, targetUtilizationPercent: 60 });
  const targets = Object.values(template.findResources("AWS::ApplicationAutoScaling::ScalableTarget")) as any[];
  assert.equal(targets.length, 8, "2 tables x (table, index) x (read, write)");
  const dimensions = targets.map((t) => `${t.Properties.ScalableDimension} ${t.Properties.MinCapacity}-${t.Properties.MaxCapacity}`).sort();
  assert.deepEqual(dimensions, [
    "dynamodb:index:ReadCapacityUnits 5-100",
    "dynamodb:index:ReadCapacityUnits 5-100",
    "dynamodb:index:WriteCapacityUnits 10-400",
    "dynamodb:index:WriteCapacityUnits 10-400",
    "dynamodb:table:ReadCapacityUnits 5-100",
    "dynamodb:table:ReadCapacityUnits 5-100",
    "dynamodb:table:WriteCapacityUnits 10-400",
    "dynamodb:table:WriteCapacityUnits 10-400",
  ]);
  const policies = Object.values(template.findResources("AWS::ApplicationAutoScaling::ScalingPolicy")) as any[];
  assert.equal(policies.length, 8);
  for (const p of policies) {
    assert.equal(p.Properties.PolicyType, "TargetTrackingScaling");
    assert.equal(p.Properties.TargetTrackingScalingPolicyConfiguration.TargetValue, 60);
  }
});

test("autoscaling: none by default, and reads alone when only maxReadCapacity is given", () => {
  assert.equal(Object.keys(synth(PROVISIONED).findResources("AWS::ApplicationAutoScaling::ScalableTarget")).length, 0);
  assert.equal(Object.keys(synth({}).findResources("AWS::ApplicationAutoScaling::ScalableTarget")).length, 0);
  const reads = Object.values(synth({ ...PROVISIONED, maxReadCapacity: 50 }).findResources("AWS::ApplicationAutoScaling::ScalableTarget")) as any[];
  assert.equal(reads.length, 4);
  assert.ok(reads.every((t) => t.Properties.ScalableDimension.endsWith(":ReadCapacityUnits")));
  const policy = Object.values(synth({ ...PROVISIONED, maxReadCapacity: 50 }).findResources("AWS::ApplicationAutoScaling::ScalingPolicy"))[0] as any;
  assert.equal(policy.Properties.TargetTrackingScalingPolicyConfiguration.TargetValue, 70, "the default target");
});

test("autoscaling: props that disagree are refused, naming them", () => {
  assert.throws(() => synth({ maxReadCapacity: 50 }), /maxReadCapacity and maxWriteCapacity need billingMode PROVISIONED/);
  assert.throws(() => synth({ ...PROVISIONED, maxWriteCapacity: 9 }), /maxWriteCapacity \(9\) must be at least writeCapacity \(10\)/);
  assert.throws(() => synth({ ...PROVISIONED, targetUtilizationPercent: 50 }), /targetUtilizationPercent needs maxReadCapacity or maxWriteCapacity/);
  assert.throws(() => synth({ ...PROVISIONED, maxReadCapacity: 50, targetUtilizationPercent: 95 }), /targetUtilizationPercent must be a whole number from 20 to 90/);
});
