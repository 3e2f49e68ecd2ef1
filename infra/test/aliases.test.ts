import assert from "node:assert/strict";
import { test } from "node:test";
import { Stack } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import * as iam from "aws-cdk-lib/aws-iam";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { ExampleStack } from "../lib/example-stack.ts";
import { SqsWaiter } from "../lib/sqs-waiter.ts";
import { fakeCode, newApp } from "./helpers.ts";

/** The example stack (orders, billing.fifo) with a caller role, and the caller's statements. */
function withCaller(grant: (waiter: SqsWaiter, role: iam.Role) => void) {
  const stack = new ExampleStack(newApp(), "Example", { enqueueCode: fakeCode(), pollerCode: fakeCode() });
  const caller = new iam.Role(stack, "Caller", { assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com") });
  grant(stack.waiter, caller);
  const template = Template.fromStack(stack);
  const statements = Object.values(template.findResources("AWS::IAM::Policy"))
    .filter((p: any) => JSON.stringify(p.Properties.Roles).includes(stack.resolve(caller.roleName).Ref))
    .flatMap((p: any) => p.Properties.PolicyDocument.Statement);
  return { stack, template, statements };
}

/** The logical ids of the aliases a statement's resources name (`Ref`s of AWS::Lambda::Alias). */
function aliasNames(template: Template, statements: any[]): string[] {
  const aliases = template.findResources("AWS::Lambda::Alias");
  return statements
    .flatMap((st: any) => [st.Resource].flat())
    .map((r: any) => {
      assert.ok(r.Ref && aliases[r.Ref], `a resource that is no alias: ${JSON.stringify(r)}`);
      return aliases[r.Ref].Properties.Name;
    })
    .sort();
}

test("the class aliases and each queue's own follow $LATEST, .fifo as -fifo", () => {
  const { template } = withCaller(() => {});
  const names = Object.values(template.findResources("AWS::Lambda::Alias"))
    .map((a: any) => {
      assert.equal(a.Properties.FunctionVersion, "$LATEST");
      return a.Properties.Name;
    })
    .sort();
  assert.deepEqual(names, [
    "billing-fifo--send",
    "billing-fifo--view",
    "operate",
    "orders--send",
    "orders--view",
    "send",
    "view",
  ]);
});

test("grantSend, grantView and grantOperate name exactly their aliases' ARNs, never NAME or NAME:*", () => {
  const send = withCaller((w, role) => w.grantSend(role, ["orders"]));
  assert.deepEqual(aliasNames(send.template, send.statements), ["orders--send"]);
  for (const st of send.statements) {
    assert.deepEqual([st.Action].flat(), ["lambda:InvokeFunction"]);
    assert.ok(!JSON.stringify(st.Resource).includes(":*"), JSON.stringify(st));
  }
  const view = withCaller((w, role) => w.grantView(role));
  assert.deepEqual(aliasNames(view.template, view.statements), ["view"]);
  const fifo = withCaller((w, role) => w.grantView(role, ["billing.fifo"]));
  assert.deepEqual(aliasNames(fifo.template, fifo.statements), ["billing-fifo--view"]);
  const operate = withCaller((w, role) => w.grantOperate(role));
  assert.deepEqual(aliasNames(operate.template, operate.statements), ["operate"]);
});

test("grantEnqueue warns: it grants every action on every queue", () => {
  const { stack } = withCaller((w, role) => w.grantEnqueue(role));
  Annotations.fromStack(stack).hasWarning("*", Match.stringLikeRegexp("grantEnqueue grants the unqualified function"));
});

test("queueAliases: false keeps the class aliases; two queues of one alias name are refused", () => {
  const stack = new Stack(newApp(), "S", { env: { account: "123456789012", region: "eu-west-1" } });
  const queue = (name: string) => sqs.Queue.fromQueueArn(stack, name, `arn:aws:sqs:eu-west-1:123456789012:${name}`);
  const waiter = new SqsWaiter(stack, "Waiter", {
    queues: [queue("orders")],
    queueAliases: false,
    enqueueCode: fakeCode(),
    pollerCode: fakeCode(),
  });
  Template.fromStack(stack).resourceCountIs("AWS::Lambda::Alias", 3);
  assert.throws(() => waiter.grantSend(new iam.AnyPrincipal(), ["orders"]), /orders has no aliases of its own/);
  assert.throws(() => waiter.grantView(new iam.AnyPrincipal(), []), /a grant needs at least one queue/);
  const other = new Stack(newApp(), "T", { env: { account: "123456789012", region: "eu-west-1" } });
  const q = (name: string) => sqs.Queue.fromQueueArn(other, name, `arn:aws:sqs:eu-west-1:123456789012:${name}`);
  assert.throws(
    () =>
      new SqsWaiter(other, "Waiter", {
        queues: [q("jobs.fifo")],
        adoptedQueues: [q("jobs-fifo")],
        enqueueCode: fakeCode(),
        pollerCode: fakeCode(),
      }),
    /'jobs.fifo' and 'jobs-fifo' would share the aliases jobs-fifo--send/,
  );
});

test("a queue CloudFormation names gets its aliases' names from CloudFormation, '.' as '-'", () => {
  const stack = new Stack(newApp(), "U", { env: { account: "123456789012", region: "eu-west-1" } });
  new SqsWaiter(stack, "Waiter", { queues: [new sqs.Queue(stack, "Unnamed")], enqueueCode: fakeCode(), pollerCode: fakeCode() });
  const names = Object.values(Template.fromStack(stack).findResources("AWS::Lambda::Alias")).map((a: any) => a.Properties.Name);
  const computed = names.filter((n: any) => typeof n !== "string");
  assert.equal(computed.length, 2, JSON.stringify(names));
  for (const n of computed) {
    const text = JSON.stringify(n);
    assert.ok(text.includes("Fn::Join") && text.includes("Fn::Split") && text.includes('"."'), text);
  }
});

test("another account's principal gets the alias's resource policy, never the function's", () => {
  for (const principal of [
    new iam.AccountPrincipal("210987654321"),
    new iam.ArnPrincipal("arn:aws:iam::210987654321:role/producer"),
  ]) {
    const stack = new ExampleStack(newApp(), "Example", { enqueueCode: fakeCode(), pollerCode: fakeCode() });
    stack.waiter.grantSend(principal, ["orders"]);
    stack.waiter.grantView(principal);
    const template = Template.fromStack(stack);
    const aliases = template.findResources("AWS::Lambda::Alias");
    const aliasName = (ref: any) => aliases[ref?.Ref]?.Properties.Name;
    const permissions = Object.values(template.findResources("AWS::Lambda::Permission"))
      .filter((p: any) => JSON.stringify(p.Properties.Principal).includes("210987654321"));
    assert.deepEqual(
      permissions.map((p: any) => [aliasName(p.Properties.FunctionName), p.Properties.Action]).sort(),
      [["orders--send", "lambda:InvokeFunction"], ["view", "lambda:InvokeFunction"]],
      JSON.stringify(permissions),
    );
    // Nothing in IAM: the other account's own policy allows its role the alias ARN.
    const policies = JSON.stringify(template.findResources("AWS::IAM::Policy"));
    assert.ok(!policies.includes("210987654321"), policies);
  }
  // Anyone and services are refused: the alias's policy would let them all invoke it.
  const stack = new ExampleStack(newApp(), "Example", { enqueueCode: fakeCode(), pollerCode: fakeCode() });
  for (const principal of [new iam.AnyPrincipal(), new iam.ServicePrincipal("sqs.amazonaws.com"), new iam.OrganizationPrincipal("o-abcdefghij")]) {
    assert.throws(() => stack.waiter.grantView(principal), /may not be granted an alias/);
  }
  assert.equal(Object.keys(Template.fromStack(stack).findResources("AWS::Lambda::Permission")).filter((k) => k.includes("view")).length, 0);
});
