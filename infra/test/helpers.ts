import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { ExampleStack } from "../lib/example-stack.ts";
import { SqsWaiter, type SqsWaiterProps } from "../lib/sqs-waiter.ts";

/** An app with cdk.json's context (its feature flags), as `cdk synth` builds it. */
export const CDK_JSON = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, "..", "cdk.json"), "utf8"));
export function newApp(): App {
  return new App({ context: CDK_JSON.context });
}

/** A function's code that is only a bootstrap stub: synth needs an asset, not a build. */
export function fakeCode(): lambda.Code {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sqs-waiter-test-"));
  fs.writeFileSync(path.join(dir, "bootstrap"), "#!/bin/sh\n", { mode: 0o755 });
  return lambda.Code.fromAsset(dir);
}

/** The example stack (two queues) with stub code, and its template. */
export function example(): { app: App; stack: ExampleStack; template: Template } {
  const app = newApp();
  const stack = new ExampleStack(app, "Example", { enqueueCode: fakeCode(), pollerCode: fakeCode() });
  return { app, stack, template: Template.fromStack(stack) };
}

/**
 * A construct over two imported queues (`orders`, `billing`) in eu-west-1 with stub code and
 * `props` on top, and its template.
 */
export function twoQueueWaiter(props: Partial<SqsWaiterProps> = {}): Template {
  const stack = new Stack(newApp(), "S", { env: { account: "123456789012", region: "eu-west-1" } });
  const queues = ["orders", "billing"].map((q) => sqs.Queue.fromQueueArn(stack, q, `arn:aws:sqs:eu-west-1:123456789012:${q}`));
  new SqsWaiter(stack, "Waiter", { queues, enqueueCode: fakeCode(), pollerCode: fakeCode(), ...props });
  return Template.fromStack(stack);
}
