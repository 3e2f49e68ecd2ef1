import assert from "node:assert/strict";
import { test } from "node:test";
import { Stack } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { SqsWaiter } from "../lib/sqs-waiter.ts";
import { fakeCode, newApp } from "./helpers.ts";
import { nagFindings } from "./nag.ts";

const KEY_ARN = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab";

function waiter(tableKey: boolean): Template {
  const stack = new Stack(newApp(), "S", { env: { account: "123456789012", region: "eu-west-1" } });
  const queues = ["orders", "billing"].map((q) => sqs.Queue.fromQueueArn(stack, q, `arn:aws:sqs:eu-west-1:123456789012:${q}`));
  new SqsWaiter(stack, "Waiter", {
    queues,
    enqueueCode: fakeCode(),
    pollerCode: fakeCode(),
    tableEncryptionKey: tableKey ? kms.Key.fromKeyArn(stack, "TableKey", KEY_ARN) : undefined,
  });
  return Template.fromStack(stack);
}

function kmsStatements(template: Template): any[] {
  return Object.values(template.findResources("AWS::IAM::Policy"))
    .flatMap((p: any) => p.Properties.PolicyDocument.Statement)
    .filter((s: any) => [s.Action].flat().some((a: string) => a.startsWith("kms:")));
}

test("tableEncryptionKey: every created table uses it, and both roles get it only through DynamoDB", () => {
  const template = waiter(true);
  const tables = Object.values(template.findResources("AWS::DynamoDB::Table"));
  assert.equal(tables.length, 2);
  for (const t of tables as any[]) {
    assert.deepEqual(t.Properties.SSESpecification, { SSEEnabled: true, SSEType: "KMS", KMSMasterKeyId: KEY_ARN });
  }
  const statements = kmsStatements(template);
  assert.equal(statements.length, 2, "one per function role");
  for (const s of statements) {
    assert.equal(s.Resource, KEY_ARN);
    assert.deepEqual(s.Condition, { StringEquals: { "kms:ViaService": "dynamodb.eu-west-1.amazonaws.com" } });
    assert.ok(!s.Action.includes("kms:CreateGrant") && !s.Action.includes("kms:*"), s.Action);
  }
  // The key is not created or changed here: it is the customer's.
  template.resourceCountIs("AWS::KMS::Key", 0);
});

test("without tableEncryptionKey the tables use the AWS managed key and no role gets a KMS right", () => {
  const template = waiter(false);
  template.allResourcesProperties("AWS::DynamoDB::Table", {
    SSESpecification: Match.objectEquals({ SSEEnabled: true }),
  });
  assert.deepEqual(kmsStatements(template), []);
});

test("tracing: pass-through by default; ACTIVE on both functions, with X-Ray's writes on both roles", () => {
  for (const tracing of [undefined, lambda.Tracing.ACTIVE]) {
    const stack = new Stack(newApp(), "T");
    const queues = [sqs.Queue.fromQueueArn(stack, "q", "arn:aws:sqs:us-east-1:123456789012:orders")];
    new SqsWaiter(stack, "Waiter", { queues, enqueueCode: fakeCode(), pollerCode: fakeCode(), tracing });
    const template = Template.fromStack(stack);
    const functions = Object.values(template.findResources("AWS::Lambda::Function")) as any[];
    const modes = functions.map((f) => f.Properties.TracingConfig?.Mode).sort();
    const want = tracing ? "Active" : undefined;
    assert.deepEqual(modes, [want, want], "unset is Lambda's PassThrough");
    const xray = Object.values(template.findResources("AWS::IAM::Policy"))
      .flatMap((p: any) => p.Properties.PolicyDocument.Statement)
      .filter((s: any) => [s.Action].flat().includes("xray:PutTraceSegments"));
    assert.equal(xray.length, tracing ? 2 : 0, "one statement per function role");
  }
});

test("cdk-nag: active tracing adds no unsuppressed finding", () => {
  const app = newApp();
  const stack = new Stack(app, "Traced");
  const queues = [new sqs.Queue(stack, "Orders", { enforceSSL: true, encryption: sqs.QueueEncryption.SQS_MANAGED })];
  new SqsWaiter(stack, "Waiter", { queues, enqueueCode: fakeCode(), pollerCode: fakeCode(), tracing: lambda.Tracing.ACTIVE });
  const findings = nagFindings(app, stack).filter((f) => !f.includes("/Orders"));
  assert.deepEqual(findings, [], findings.join("\n"));
});
