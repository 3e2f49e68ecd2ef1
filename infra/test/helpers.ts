import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { App } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { ExampleStack } from "../lib/example-stack.ts";

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
