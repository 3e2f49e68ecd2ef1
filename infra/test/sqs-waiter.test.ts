import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { App, Duration, Stack } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import * as cxapi from "aws-cdk-lib/cx-api";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { ExampleStack } from "../lib/example-stack.ts";
import { RANGES } from "../lib/ranges.ts";
import { INDEX_NAME, SqsWaiter } from "../lib/sqs-waiter.ts";
import { CDK_JSON, example, fakeCode, newApp } from "./helpers.ts";
import { nagFindings } from "./nag.ts";

test("one table per queue with the contract's keys and index", () => {
  const { stack, template } = example();
  template.resourceCountIs("AWS::DynamoDB::Table", 2);
  for (const queue of stack.queues) {
    template.hasResourceProperties("AWS::DynamoDB::Table", {
      TableName: stack.resolve(`sqs-waiter-${queue.queueName}`),
      BillingMode: "PAY_PER_REQUEST",
      KeySchema: [
        { AttributeName: "scheduler", KeyType: "HASH" },
        { AttributeName: "job_id", KeyType: "RANGE" },
      ],
      AttributeDefinitions: Match.arrayWith([{ AttributeName: "perform_at", AttributeType: "N" }]),
      GlobalSecondaryIndexes: [
        {
          IndexName: INDEX_NAME,
          KeySchema: [
            { AttributeName: "scheduler", KeyType: "HASH" },
            { AttributeName: "perform_at", KeyType: "RANGE" },
          ],
          Projection: { ProjectionType: "INCLUDE", NonKeyAttributes: ["priority", "weight"] },
        },
      ],
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
      TimeToLiveSpecification: { AttributeName: "purge_at", Enabled: true },
    });
  }
  // Kept on delete and replacement, but not after a failed first create (so it can be retried).
  template.resourcePropertiesCountIs("AWS::DynamoDB::Table", {}, 2);
  for (const table of Object.values(template.findResources("AWS::DynamoDB::Table"))) {
    assert.equal(table.DeletionPolicy, "RetainExceptOnCreate");
    assert.equal(table.UpdateReplacePolicy, "Retain");
  }
});

test("a table's logical id follows its queue, so reordering or removing queues replaces nothing", () => {
  const ids = (names: string[]) => {
    const app = newApp();
    const stack = new Stack(app, "S");
    const queues = names.map((n) => sqs.Queue.fromQueueArn(stack, n, `arn:aws:sqs:us-east-1:111111111111:${n}`));
    new SqsWaiter(stack, "Waiter", { queues, enqueueCode: fakeCode(), pollerCode: fakeCode() });
    const tables = Template.fromStack(stack).findResources("AWS::DynamoDB::Table");
    return new Map(Object.entries(tables).map(([id, t]) => [t.Properties.TableName as string, id]));
  };
  const before = ids(["orders", "billing", "emails"]);
  const after = ids(["emails", "orders"]);
  assert.equal(after.get("sqs-waiter-orders"), before.get("sqs-waiter-orders"));
  assert.equal(after.get("sqs-waiter-emails"), before.get("sqs-waiter-emails"));
  assert.equal(after.size, 2);
});

test("the poller reserves concurrency only when asked", () => {
  const { template } = example();
  for (const fn of Object.values(template.findResources("AWS::Lambda::Function"))) {
    assert.equal(fn.Properties.ReservedConcurrentExecutions, undefined);
  }
  const app = newApp();
  const stack = new Stack(app, "S");
  const queues = [sqs.Queue.fromQueueArn(stack, "q", "arn:aws:sqs:us-east-1:111111111111:orders")];
  new SqsWaiter(stack, "Waiter", { queues, enqueueCode: fakeCode(), pollerCode: fakeCode(), pollerReservedConcurrency: 2 });
  Template.fromStack(stack).hasResourceProperties("AWS::Lambda::Function", { ReservedConcurrentExecutions: 2 });
});

test("both functions run the Rust bootstrap on arm64 with the waiter configuration", () => {
  const { stack, template } = example();
  template.resourcePropertiesCountIs("AWS::Lambda::Function", { Runtime: "provided.al2023", Handler: "bootstrap", Architectures: ["arm64"] }, 2);
  template.hasResourceProperties("AWS::Lambda::Function", {
    Environment: {
      Variables: {
        WAITER_QUEUES: stack.resolve(stack.queues.map((q) => q.queueName).join(",")),
        WAITER_TABLE_PREFIX: "sqs-waiter-",
        WAITER_SHARDS: "4",
        WAITER_LOOKAHEAD: "120",
        WAITER_DIRECT_MAX_DELAY: "900",
        WAITER_FIFO_HOLD: "0",
        WAITER_HISTORY_DAYS: "7",
        WAITER_HISTORY_BODY: "false",
        WAITER_MAX_RATE: "0",
        // The process filters its own logs; Lambda filters nothing, so the EMF line (which
        // Lambda would count as INFO) survives any level.
        RUST_LOG: "INFO",
      },
    },
    LoggingConfig: { LogFormat: "JSON", ApplicationLogLevel: "TRACE" },
  });
  template.hasResourceProperties("AWS::Lambda::Function", { Timeout: 70 });
  template.hasResourceProperties("AWS::Lambda::EventInvokeConfig", {
    MaximumRetryAttempts: 0,
    DestinationConfig: { OnFailure: { Destination: Match.anyValue() } },
  });
});

test("IAM statements name only the given tables, index and queues, never *", () => {
  const { stack, template } = example();
  const policies = template.findResources("AWS::IAM::Policy");
  const statements = Object.values(policies).flatMap((p: any) => p.Properties.PolicyDocument.Statement);
  assert.ok(statements.length > 0);
  for (const s of statements) {
    const resources = Array.isArray(s.Resource) ? s.Resource : [s.Resource];
    for (const r of resources) {
      assert.notEqual(r, "*", `wildcard resource in ${JSON.stringify(s)}`);
    }
  }
  const resolved = JSON.stringify(statements);
  const dynamoActions = statements.filter((s: any) => [s.Action].flat().some((a: string) => a.startsWith("dynamodb:")));
  // Every DynamoDB statement is scoped to one of our tables (its ARN or its index).
  const tableIds = stack.waiter.tables.map((t) => stack.resolve((t.node.defaultChild as any).logicalId));
  for (const s of dynamoActions) {
    assert.ok(tableIds.some((id: string) => JSON.stringify(s.Resource).includes(id)), `unscoped: ${JSON.stringify(s)}`);
  }
  assert.ok(resolved.includes(`/index/${INDEX_NAME}`), "the poller's Query is on the index");
  const enqueueActions = new Set(
    statements.filter((s: any) => JSON.stringify(s).includes("dynamodb:PutItem")).flatMap((s: any) => [s.Action].flat()),
  );
  assert.ok(!enqueueActions.has("dynamodb:Scan"), "no table scans");
  // Every call the functions make: enqueue records its shard count (GetItem, UpdateItem); the
  // poller re-reads due jobs consistently (BatchGetItem) and reads the shard counts (GetItem).
  const actionsWith = (marker: string) =>
    new Set(statements.filter((s: any) => [s.Action].flat().includes(marker)).flatMap((s: any) => [s.Action].flat()));
  const enqueueTable = actionsWith("dynamodb:ConditionCheckItem");
  for (const a of [
    "dynamodb:PutItem",
    "dynamodb:BatchGetItem",
    "dynamodb:GetItem",
    "dynamodb:UpdateItem",
    "dynamodb:Query",
    "dynamodb:PartiQLDelete",
    "dynamodb:PartiQLUpdate",
  ]) {
    assert.ok(enqueueTable.has(a), `enqueue lacks ${a}`);
  }
  // The poller's table statement: removals and leases, and no transactions' ConditionCheckItem.
  const acts = (s: any): string[] => [s.Action].flat();
  const pollerTable = new Set(
    statements
      .filter((s: any) => acts(s).includes("dynamodb:DeleteItem") && !acts(s).includes("dynamodb:ConditionCheckItem"))
      .flatMap(acts),
  );
  assert.ok(!statements.some((s: any) => acts(s).includes("dynamodb:BatchWriteItem")), "no unconditional batch writes");
  for (const a of [
    "dynamodb:BatchGetItem",
    "dynamodb:GetItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:PutItem",
    "dynamodb:PartiQLDelete",
    "dynamodb:PartiQLUpdate",
  ]) {
    assert.ok(pollerTable.has(a), `poller lacks ${a}`);
  }
  // Send rights: each function on each managed queue, the poller on its failure queue, and the
  // schedule's role on the schedule's dead-letter queue.
  // (cdk.json's @aws-cdk/aws-iam:minimizePolicies merges statements, so resources are lists.)
  const sendTargets = statements
    .filter((s: any) => [s.Action].flat().includes("sqs:SendMessage"))
    .flatMap((s: any) => [s.Resource].flat().map((r: unknown) => JSON.stringify(r)));
  const managed = stack.queues.map((q) => JSON.stringify(stack.resolve(q.queueArn)));
  const failures = JSON.stringify(stack.resolve(stack.waiter.pollerFailures.queueArn));
  const deadLetters = JSON.stringify(stack.resolve(stack.waiter.scheduleDeadLetters.queueArn));
  assert.deepEqual([...sendTargets].sort(), [...managed, ...managed, failures, deadLetters].sort());
});

test("alarms on poller errors, backlog age and parked jobs", () => {
  const { template } = example();
  template.hasResourceProperties("AWS::CloudWatch::Alarm", { Namespace: "AWS/Lambda", MetricName: "Errors" });
  template.hasResourceProperties("AWS::CloudWatch::Alarm", { Namespace: "SqsWaiter", MetricName: "BacklogAge" });
  template.hasResourceProperties("AWS::CloudWatch::Alarm", { Namespace: "SqsWaiter", MetricName: "Parked" });
});

test("silence alarms: heartbeat, throttles, failure queues, failed entries, partition errors, enqueue errors", () => {
  const { template } = example();
  template.hasResourceProperties("AWS::CloudWatch::Alarm", {
    Namespace: "AWS/Lambda",
    MetricName: "Invocations",
    Period: 300,
    EvaluationPeriods: 1,
    Threshold: 1,
    ComparisonOperator: "LessThanThreshold",
    TreatMissingData: "breaching",
  });
  template.hasResourceProperties("AWS::CloudWatch::Alarm", { Namespace: "AWS/Lambda", MetricName: "Throttles" });
  // Failure queues alarm on arrivals (clearing 5 minutes after the last), not on depth, which
  // would stay in ALARM for the 14 days the failures are kept.
  template.resourcePropertiesCountIs(
    "AWS::CloudWatch::Alarm",
    { Namespace: "AWS/SQS", MetricName: "NumberOfMessagesSent", Statistic: "Sum" },
    2,
  );
  template.resourcePropertiesCountIs(
    "AWS::CloudWatch::Alarm",
    { Namespace: "AWS/SQS", MetricName: "ApproximateNumberOfMessagesVisible" },
    0,
  );
  template.hasResourceProperties("AWS::CloudWatch::Alarm", { Namespace: "SqsWaiter", MetricName: "FailedEntries" });
  template.hasResourceProperties("AWS::CloudWatch::Alarm", { Namespace: "SqsWaiter", MetricName: "PartitionErrors" });
  template.hasResourceProperties("AWS::CloudWatch::Alarm", { Namespace: "SqsWaiter", MetricName: "Unreadable" });
  template.resourcePropertiesCountIs("AWS::CloudWatch::Alarm", { Namespace: "AWS/Lambda", MetricName: "Errors" }, 1);
  template.hasResourceProperties("AWS::Scheduler::Schedule", {
    Target: Match.objectLike({ DeadLetterConfig: { Arn: Match.anyValue() } }),
  });
});

test("refuses an empty queue list", () => {
  const stack = new Stack(newApp(), "Empty");
  assert.throws(() => new SqsWaiter(stack, "W", { queues: [], enqueueCode: fakeCode(), pollerCode: fakeCode() }), /at least one queue/);
});

test("maxRate reaches the functions and a bad one is refused at synth", () => {
  const stack = new Stack(newApp(), "Rated");
  const queue = new sqs.Queue(stack, "Q");
  new SqsWaiter(stack, "W", { queues: [queue], maxRate: 500, enqueueCode: fakeCode(), pollerCode: fakeCode() });
  Template.fromStack(stack).hasResourceProperties("AWS::Lambda::Function", {
    Environment: { Variables: Match.objectLike({ WAITER_MAX_RATE: "500" }) },
  });
  const bad = new Stack(newApp(), "BadRate");
  const q = new sqs.Queue(bad, "Q");
  assert.throws(
    () => new SqsWaiter(bad, "W", { queues: [q], maxRate: 1.5, enqueueCode: fakeCode(), pollerCode: fakeCode() }),
    /maxRate must be a whole number/,
  );
});

test("cdk-nag AwsSolutions has no unsuppressed findings", () => {
  const app = newApp();
  const stack = new ExampleStack(app, "Nagged", { enqueueCode: fakeCode(), pollerCode: fakeCode() });
  const findings = nagFindings(app, stack);
  assert.deepEqual(findings, [], findings.join("\n"));
});

test("an imported queue works too", () => {
  const stack = new Stack(newApp(), "Imported", { env: { account: "123456789012", region: "eu-west-1" } });
  const queue = sqs.Queue.fromQueueArn(stack, "Q", "arn:aws:sqs:eu-west-1:123456789012:legacy");
  new SqsWaiter(stack, "W", { queues: [queue], enqueueCode: fakeCode(), pollerCode: fakeCode(), tablePrefix: "" });
  Template.fromStack(stack).hasResourceProperties("AWS::DynamoDB::Table", { TableName: "legacy" });
});

test("KMS-encrypted imported queues: both roles get exactly the given keys", () => {
  const app = newApp();
  const stack = new Stack(app, "S");
  const keyArn = "arn:aws:kms:us-east-1:111111111111:key/1234abcd-12ab-34cd-56ef-1234567890ab";
  const queues = [sqs.Queue.fromQueueArn(stack, "q", "arn:aws:sqs:us-east-1:111111111111:orders")];
  new SqsWaiter(stack, "Waiter", {
    queues,
    enqueueCode: fakeCode(),
    pollerCode: fakeCode(),
    queueKmsKeys: [kms.Key.fromKeyArn(stack, "Key", keyArn)],
  });
  const statements = Object.values(Template.fromStack(stack).findResources("AWS::IAM::Policy")).flatMap(
    (p: any) => p.Properties.PolicyDocument.Statement,
  );
  const kmsStatements = statements.filter((s: any) => [s.Action].flat().some((a: string) => a.startsWith("kms:")));
  assert.equal(kmsStatements.length, 2, "one per function role");
  for (const s of kmsStatements) {
    assert.deepEqual([s.Action].flat().sort(), ["kms:Decrypt", "kms:GenerateDataKey"]);
    assert.equal(s.Resource, keyArn);
  }
});

/**
 * Each function role's IAM budget as IAM counts it (no whitespace): inline characters, and the
 * sizes of its managed policies, with every unresolved reference replaced by `placeholder`.
 */
function roleBudgets(stack: Stack, placeholder: string): { role: string; inlineChars: number; managed: number[] }[] {
  const resources = Template.fromStack(stack).toJSON().Resources as Record<string, any>;
  const size = (doc: unknown): number =>
    JSON.stringify(stack.resolve(doc), (_k, v) =>
      v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).some((k) => k === "Ref" || k.startsWith("Fn::"))
        ? placeholder
        : v,
    ).length;
  return ["EnqueueRole", "PollerRole"].map((role) => {
    const roleId = Object.keys(resources).find((id) => id.startsWith(`Waiter${role}`) && resources[id].Type === "AWS::IAM::Role");
    assert.ok(roleId, role);
    const attached = (r: any) => JSON.stringify(r.Properties.Roles ?? []).includes(`"${roleId}"`);
    const of = (type: string) => Object.values(resources).filter((r) => r.Type === type && attached(r));
    return {
      role,
      inlineChars: of("AWS::IAM::Policy").reduce((n, r) => n + size(r.Properties.PolicyDocument), 0),
      managed: of("AWS::IAM::ManagedPolicy").map((m) => size(m.Properties.PolicyDocument)),
    };
  });
}

/** IAM's limits: 10,240 inline characters per role, 10 managed policies (default quota) of 6,144. */
function assertWithinIamLimits(budgets: ReturnType<typeof roleBudgets>, what: string): void {
  for (const { role, inlineChars, managed } of budgets) {
    assert.ok(inlineChars <= 10_240, `${what} ${role}: ${inlineChars} inline policy characters`);
    assert.ok(managed.length <= 10, `${what} ${role}: ${managed.length} managed policies (default quota 10)`);
    for (const chars of managed) {
      assert.ok(chars <= 6_144, `${what} ${role}: a managed policy of ${chars} characters`);
    }
  }
}

test("50 queues: each role stays within IAM's policy size and count limits", () => {
  const app = newApp();
  const stack = new Stack(app, "S", { env: { account: "111111111111", region: "ap-southeast-2" } });
  const queues = Array.from({ length: 50 }, (_, i) =>
    sqs.Queue.fromQueueArn(stack, `q${i}`, `arn:aws:sqs:ap-southeast-2:111111111111:queue-with-a-forty-character-name-${String(i).padStart(6, "0")}`),
  );
  new SqsWaiter(stack, "Waiter", { queues, enqueueCode: fakeCode(), pollerCode: fakeCode() });
  assertWithinIamLimits(roleBudgets(stack, "x".repeat(90)), "50 queues");
});

test("grantEnqueue lets a role invoke enqueue; tableFor finds a queue's table or names the problem", () => {
  const stack = new ExampleStack(newApp(), "Example", { enqueueCode: fakeCode(), pollerCode: fakeCode() });
  const caller = new iam.Role(stack, "Caller", { assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com") });
  stack.waiter.grantEnqueue(caller); // (warns: aliases.test.ts)
  const statements = Object.values(Template.fromStack(stack).findResources("AWS::IAM::Policy"))
    .filter((p: any) => JSON.stringify(p.Properties.Roles).includes(stack.resolve(caller.roleName).Ref))
    .flatMap((p: any) => p.Properties.PolicyDocument.Statement);
  assert.ok(
    statements.some((st: any) => [st.Action].flat().includes("lambda:InvokeFunction")),
    JSON.stringify(statements),
  );
  assert.equal(stack.waiter.tableFor(stack.queues[0]), stack.waiter.tables[0]);
  assert.equal(stack.waiter.tableFor("billing.fifo"), stack.waiter.tables[1]);
  assert.throws(() => stack.waiter.tableFor("elsewhere"), /elsewhere is not one of the managed queues/);
});

test("cdk.json sets every feature flag aws-cdk-lib currently recommends", () => {
  for (const [flag, value] of Object.entries(cxapi.CURRENTLY_RECOMMENDED_FLAGS)) {
    assert.deepEqual(CDK_JSON.context[flag], value, `${flag} in cdk.json`);
  }
});

test("without code, both functions are RustFunctions built by cargo lambda for the chosen architecture", () => {
  for (const [architecture, expected] of [
    [lambda.Architecture.ARM_64, "arm64"],
    [lambda.Architecture.X86_64, "x86_64"],
  ] as const) {
    // Bundling skipped: the test checks the functions, not a 5-minute release build.
    const app = new App({ context: { ...CDK_JSON.context, "aws:cdk:bundling-stacks": [] } });
    const stack = new Stack(app, "S");
    const queues = [sqs.Queue.fromQueueArn(stack, "q", "arn:aws:sqs:us-east-1:111111111111:orders")];
    const waiter = new SqsWaiter(stack, "Waiter", { queues, architecture });
    assert.equal(waiter.enqueueFunction.constructor.name, "RustFunction");
    assert.equal(waiter.pollerFunction.constructor.name, "RustFunction");
    Template.fromStack(stack).resourcePropertiesCountIs(
      "AWS::Lambda::Function",
      { Runtime: "provided.al2023", Handler: "bootstrap", Architectures: [expected] },
      2,
    );
  }
});

test("adopted queues: no table created, the existing table granted exactly, the queue managed", () => {
  const stack = new Stack(newApp(), "Adopting", { env: { account: "111111111111", region: "us-east-1" } });
  const orders = sqs.Queue.fromQueueArn(stack, "orders", "arn:aws:sqs:us-east-1:111111111111:orders");
  const billing = sqs.Queue.fromQueueArn(stack, "billing", "arn:aws:sqs:us-east-1:111111111111:billing");
  const waiter = new SqsWaiter(stack, "W", { queues: [orders], adoptedQueues: [billing], enqueueCode: fakeCode(), pollerCode: fakeCode() });
  const template = Template.fromStack(stack);
  template.resourceCountIs("AWS::DynamoDB::Table", 1);
  template.hasResourceProperties("AWS::DynamoDB::Table", { TableName: "sqs-waiter-orders" });
  template.resourcePropertiesCountIs(
    "AWS::Lambda::Function",
    { Environment: { Variables: Match.objectLike({ WAITER_QUEUES: "orders,billing" }) } },
    2,
  );
  const resources = JSON.stringify(
    Object.values(template.findResources("AWS::IAM::Policy")).flatMap((p: any) => p.Properties.PolicyDocument.Statement),
  );
  for (const arn of [
    "arn:aws:dynamodb:us-east-1:111111111111:table/sqs-waiter-billing",
    `arn:aws:dynamodb:us-east-1:111111111111:table/sqs-waiter-billing/index/${INDEX_NAME}`,
    "arn:aws:sqs:us-east-1:111111111111:billing",
  ]) {
    assert.ok(resources.includes(`"${arn}"`), `${arn} granted`);
  }
  assert.equal(stack.resolve(waiter.tableFor("billing").tableName), "sqs-waiter-billing");
  // Only adopted queues is enough (a stack re-created after a destroy).
  const again = new Stack(newApp(), "Readopting");
  const q = sqs.Queue.fromQueueArn(again, "q", "arn:aws:sqs:us-east-1:111111111111:orders");
  new SqsWaiter(again, "W", { queues: [], adoptedQueues: [q], enqueueCode: fakeCode(), pollerCode: fakeCode() });
  Template.fromStack(again).resourceCountIs("AWS::DynamoDB::Table", 0);
});

test("a queue in both queues and adoptedQueues is refused, naming it", () => {
  const stack = new Stack(newApp(), "Both");
  const q = sqs.Queue.fromQueueArn(stack, "q", "arn:aws:sqs:us-east-1:111111111111:orders");
  assert.throws(
    () => new SqsWaiter(stack, "W", { queues: [q], adoptedQueues: [q], enqueueCode: fakeCode(), pollerCode: fakeCode() }),
    /queue orders is listed twice \(a queue is in queues or in adoptedQueues, once\)/,
  );
});

test("names that differ only in punctuation get their own tables and logical ids", () => {
  const stack = new Stack(newApp(), "Punctuation");
  const names = ["jobs-fifo", "jobs_fifo", "orders-eu", "orders.eu"];
  const queues = names.map((n) => sqs.Queue.fromQueueArn(stack, n, `arn:aws:sqs:us-east-1:111111111111:${n}`));
  // (Their own aliases would share a name, orders-eu: aliases.test.ts.)
  new SqsWaiter(stack, "W", { queues, queueAliases: false, enqueueCode: fakeCode(), pollerCode: fakeCode() });
  const tables = Template.fromStack(stack).findResources("AWS::DynamoDB::Table");
  assert.deepEqual(Object.values(tables).map((t: any) => t.Properties.TableName).sort(), names.map((n) => `sqs-waiter-${n}`).sort());
  assert.equal(new Set(Object.keys(tables)).size, names.length);
});

test("every prop in ranges.json is checked at synth, naming the prop and its range", () => {
  const build = (prop: string, value: number) => {
    const stack = new Stack(newApp(), "Ranged");
    const queue = new sqs.Queue(stack, "Q");
    const range = RANGES[prop];
    const given = range.unit === "s" ? Duration.seconds(value) : value;
    const provisioned = { billingMode: dynamodb.BillingMode.PROVISIONED, readCapacity: 1, writeCapacity: 1 };
    const extra =
      prop === "readCapacity" || prop === "writeCapacity"
        ? { billingMode: dynamodb.BillingMode.PROVISIONED }
        : prop === "maxReadCapacity" || prop === "maxWriteCapacity"
          ? provisioned
          : prop === "targetUtilizationPercent"
            ? { ...provisioned, maxWriteCapacity: 10 }
        : prop === "fifoHold"
          ? { pollerTimeout: Duration.seconds(900) } // at least fifoHold + 5 s (checks.test.ts)
          : {};
    return new SqsWaiter(stack, "W", { queues: [queue], enqueueCode: fakeCode(), pollerCode: fakeCode(), ...extra, [prop]: given });
  };
  assert.ok(Object.keys(RANGES).length >= 10);
  for (const [prop, range] of Object.entries(RANGES)) {
    const bounds = range.max === null ? `at least ${range.min}` : `from ${range.min} to ${range.max}`;
    const refused = (v: number) =>
      assert.throws(() => build(prop, v), (e: Error) => e.message.startsWith(`SqsWaiter: ${prop} must be a whole number`) && e.message.includes(bounds) && e.message.includes(`got ${v}`), `${prop} = ${v}`);
    build(prop, range.min);
    if (range.unit !== "s" || range.min > 0) {
      refused(range.min - 1); // (a negative Duration cannot even be made)
    }
    refused(range.min + 0.5);
    if (range.max !== null) {
      build(prop, range.max);
      refused(range.max + 1);
    }
  }
  // 0 would be ReservedConcurrentExecutions: 0, a poller throttled for good (SAM's 0 means none).
  assert.throws(() => build("pollerReservedConcurrency", 0), /leave it out for none/);
});

test("ranges.json: the SAM parameters and the docs' table say the same", () => {
  const template = fs.readFileSync(path.join(import.meta.dirname, "..", "..", "template.yaml"), "utf8");
  const docs = fs.readFileSync(path.join(import.meta.dirname, "..", "..", "docs", "deploy.md"), "utf8");
  for (const [prop, range] of Object.entries(RANGES)) {
    const param = template.match(new RegExp(`\\n  ${range.sam}:\\n((?:    .*\\n)+)`));
    assert.ok(param, `template.yaml has a parameter ${range.sam}`);
    // Numbers, or quoted numbers (PollerGroups, a String so that its values key a mapping).
    const allowed = param[1].match(/AllowedValues: \[([\d, "]+)\]/)?.[1]?.replaceAll('"', "");
    if (allowed !== undefined) {
      // A whole-number parameter listed value by value (PollerGroups): the list is the range.
      assert.ok(range.max !== null, `${range.sam} lists its values, so the range has a top`);
      const span = Array.from({ length: range.max - range.min + 1 }, (_, i) => range.min + i);
      assert.deepEqual(allowed.split(",").map((v) => Number(v.trim())), span, `${range.sam} AllowedValues`);
    } else {
      const min = param[1].match(/MinValue: (\d+)/)?.[1];
      const max = param[1].match(/MaxValue: (\d+)/)?.[1];
      assert.equal(Number(min), range.samNone ?? range.min, `${range.sam} MinValue`);
      assert.equal(max === undefined ? null : Number(max), range.max, `${range.sam} MaxValue`);
    }
    const unit = range.unit === "s" ? " s" : "";
    const span = range.max === null ? `≥ ${range.min}` : `${range.min}–${range.max}`;
    const row = `| \`${prop}\` | \`${range.sam}\` | ${range.env ? `\`${range.env}\`` : "–"} | ${span}${unit} |`;
    assert.ok(docs.includes(row), `docs/deploy.md lists ${row}`);
  }
});

test("the enqueue alarm leaves out refused requests: Errors - Refused + Failures", () => {
  const { stack, template } = example();
  const fn = stack.resolve(stack.waiter.enqueueFunction.functionName);
  const alarm = Object.values(template.findResources("AWS::CloudWatch::Alarm")).find((a: any) =>
    (a.Properties.Metrics ?? []).some((m: any) => m.Expression),
  ) as any;
  assert.ok(alarm, "a metric-math alarm");
  const metrics = Object.fromEntries(alarm.Properties.Metrics.map((m: any) => [m.Id, m]));
  assert.equal(metrics[alarm.Properties.Metrics.find((m: any) => m.Expression).Id].Expression, "FILL(errors, 0) - FILL(refused, 0) + FILL(failures, 0)");
  for (const [id, ns, name] of [
    ["errors", "AWS/Lambda", "Errors"],
    ["refused", "SqsWaiter", "Refused"],
    ["failures", "SqsWaiter", "Failures"],
  ]) {
    assert.deepEqual(metrics[id].MetricStat.Metric, { Namespace: ns, MetricName: name, Dimensions: [{ Name: "FunctionName", Value: fn }] }, id);
    assert.equal(metrics[id].MetricStat.Stat, "Sum", id);
  }
  assert.equal(alarm.Properties.Threshold, 1);
});

test("100 queues of 80 characters, in every partition: each role within IAM's size and count limits", () => {
  for (const [partition, region] of [
    ["aws", "ap-southeast-2"],
    ["aws-cn", "cn-northwest-1"],
    ["aws-us-gov", "us-gov-west-1"],
  ]) {
    const app = newApp();
    const stack = new Stack(app, "S", { env: { account: "111111111111", region } });
    const queues = Array.from({ length: 100 }, (_, i) =>
      sqs.Queue.fromQueueArn(stack, `q${i}`, `arn:${partition}:sqs:${region}:111111111111:${"q".repeat(74)}${String(i).padStart(6, "0")}`),
    );
    assert.equal(queues[0].queueName.length, 80);
    new SqsWaiter(stack, "Waiter", { queues, enqueueCode: fakeCode(), pollerCode: fakeCode() });
    // An unresolved reference stands for the longest ARN the policies hold, in this partition.
    const budgets = roleBudgets(stack, `arn:${partition}:dynamodb:${region}:111111111111:table/${"x".repeat(91)}`);
    assertWithinIamLimits(budgets, partition);
    if (partition === "aws") {
      // Issue 24, 2h: the functions (and the schedule, which names the poller) wait for every
      // policy their role holds, overflow managed policies too, and those name the tables.
      const resources = Template.fromStack(stack).toJSON().Resources as Record<string, any>;
      for (const fn of ["Enqueue", "Poller"]) {
        const [fnId, fnRes] = Object.entries(resources).find(
          ([id, r]) => r.Type === "AWS::Lambda::Function" && id.startsWith(`Waiter${fn}`) && !id.includes("Role"),
        )!;
        const roleId = fnRes.Properties.Role["Fn::GetAtt"][0];
        const policies = Object.entries(resources)
          .filter(([, r]) => {
            const roles = r.Properties?.Roles ?? [];
            return (r.Type === "AWS::IAM::Policy" || r.Type === "AWS::IAM::ManagedPolicy") &&
              roles.some((x: any) => x.Ref === roleId);
          })
          .map(([id]) => id);
        assert.ok(policies.length >= 2, `${fn}: ${policies}`);
        for (const p of policies) {
          assert.ok((fnRes.DependsOn ?? []).includes(p), `${fnId} does not wait for ${p}`);
        }
      }
    }
    for (const { role, inlineChars, managed } of budgets) {
      console.log(`${partition} ${role}: ${inlineChars} inline characters, ${managed.length} managed policies`);
    }
  }
});

test("the operator's dashboard: the body SAM deploys (dashboard.json), with the functions and the poller's timeout; dashboard: false leaves it out", () => {
  const { template } = example();
  const dashboards = Object.values(template.findResources("AWS::CloudWatch::Dashboard"));
  assert.equal(dashboards.length, 1);
  const [body, vars] = dashboards[0].Properties.DashboardBody["Fn::Sub"];
  assert.equal(body, fs.readFileSync(path.join(import.meta.dirname, "..", "lib", "dashboard.json"), "utf8"));
  assert.deepEqual(Object.keys(vars).sort(), ["EnqueueFunction", "PollerFunction", "PollerTimeout"]);
  assert.match(JSON.stringify(vars.PollerFunction), /WaiterPoller/);
  assert.match(JSON.stringify(vars.EnqueueFunction), /WaiterEnqueue/);
  assert.equal(vars.PollerTimeout, "70");

  const stack = new Stack(newApp(), "NoDashboard");
  new SqsWaiter(stack, "W", { queues: [new sqs.Queue(stack, "Q")], dashboard: false, enqueueCode: fakeCode(), pollerCode: fakeCode() });
  Template.fromStack(stack).resourceCountIs("AWS::CloudWatch::Dashboard", 0);
});
