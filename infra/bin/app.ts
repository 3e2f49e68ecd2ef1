import * as path from "node:path";
import { App, Duration, Validations } from "aws-cdk-lib";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { AwsSolutionsChecks } from "cdk-nag";
import { functionCode } from "../lib/code.ts";
import { ExampleStack } from "../lib/example-stack.ts";

const app = new App();
const lambdaDir = path.resolve(String(app.node.tryGetContext("lambdaDir") ?? "../target/lambda-arm64"));
const allowMissing = String(app.node.tryGetContext("allowMissingCode") ?? "false") === "true";
const architecture =
  app.node.tryGetContext("architecture") === "x86_64" ? lambda.Architecture.X86_64 : lambda.Architecture.ARM_64;
const directMaxDelay = app.node.tryGetContext("directMaxDelay");
const code = functionCode(lambdaDir, allowMissing);
new ExampleStack(app, "SqsWaiterExample", {
  enqueueCode: code.enqueue,
  pollerCode: code.poller,
  architecture,
  directMaxDelay: directMaxDelay === undefined ? undefined : Duration.seconds(Number(directMaxDelay)),
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
