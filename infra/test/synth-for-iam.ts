// Prints the CloudFormation template of an SqsWaiter managing these queues (imported by ARN in
// account 123456789012, us-east-1) with this table prefix, for tests/iam/check_calls.py, which
// checks the calls the functions made in the e2e suite against the roles' statements.
//
//   node --import tsx test/synth-for-iam.ts QUEUE[,QUEUE...] TABLE_PREFIX [KMS_KEY_ARN]
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { SqsWaiter } from "../lib/sqs-waiter.ts";

const [queueList, tablePrefix, kmsKeyArn] = process.argv.slice(2);
if (!queueList || tablePrefix === undefined) {
  console.error("usage: synth-for-iam.ts QUEUE[,QUEUE...] TABLE_PREFIX");
  process.exit(2);
}
const context = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, "..", "cdk.json"), "utf8")).context;
const stack = new Stack(new App({ context }), "Iam", { env: { account: "123456789012", region: "us-east-1" } });
const queues = queueList
  .split(",")
  .map((q, i) => sqs.Queue.fromQueueArn(stack, `q${i}`, `arn:aws:sqs:us-east-1:123456789012:${q}`));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sqs-waiter-iam-"));
fs.writeFileSync(path.join(dir, "bootstrap"), "#!/bin/sh\n", { mode: 0o755 });
const code = lambda.Code.fromAsset(dir);
const queueKmsKeys = kmsKeyArn ? [kms.Key.fromKeyArn(stack, "Key", kmsKeyArn)] : undefined;
new SqsWaiter(stack, "Waiter", { queues, tablePrefix, queueKmsKeys, enqueueCode: code, pollerCode: code, dashboard: false });
console.log(JSON.stringify(Template.fromStack(stack).toJSON()));
