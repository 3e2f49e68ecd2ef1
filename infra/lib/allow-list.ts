import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Token } from "aws-cdk-lib";
import * as lambda from "aws-cdk-lib/aws-lambda";
import type { Construct } from "constructs";

/**
 * Lambda holds at most 4 KB of environment variables per function, keys and values together.
 * https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html
 */
export const LAMBDA_ENVIRONMENT_BYTES = 4096;
/** SQS's longest queue name: what an unresolved (CloudFormation-generated) name may take. */
export const SQS_MAX_QUEUE_NAME = 80;
/** Where the layer's file lands in the function (Lambda extracts layers under /opt). */
export const ALLOW_LIST_PATH = "/opt/sqs-waiter/queues";

/** The environment's size as Lambda counts it, an unresolved queue name at its longest. */
export function environmentBytes(environment: Record<string, string>, names: string[]): number {
  let total = 0;
  for (const [key, value] of Object.entries(environment)) {
    total += Buffer.byteLength(key);
    total += key === "WAITER_QUEUES" ? listBytes(names) : Buffer.byteLength(value);
  }
  return total;
}

function listBytes(names: string[]): number {
  const each = names.map((n) => (Token.isUnresolved(n) ? SQS_MAX_QUEUE_NAME : Buffer.byteLength(n)));
  return each.reduce((a, b) => a + b, 0) + Math.max(0, names.length - 1);
}

/**
 * The functions' environment with the allow-list where it fits: in `WAITER_QUEUES` while the
 * environment stays within Lambda's 4 KB, else in a file of a layer of its own
 * (`WAITER_QUEUES_FILE`), which the functions read once at start. Names CloudFormation
 * generates are known only at deploy, so they cannot go in a file: such a list must fit the
 * environment.
 */
export function placeAllowList(
  scope: Construct,
  names: string[],
  environment: Record<string, string>,
): { environment: Record<string, string>; layer?: lambda.LayerVersion } {
  const bytes = environmentBytes(environment, names);
  if (bytes <= LAMBDA_ENVIRONMENT_BYTES) {
    return { environment };
  }
  const unresolved = names.filter((n) => Token.isUnresolved(n)).length;
  if (unresolved > 0) {
    throw new Error(
      `SqsWaiter: the functions' environment would take up to ${bytes} bytes with ${names.length} queues, over ` +
        `Lambda's ${LAMBDA_ENVIRONMENT_BYTES}; a longer allow-list goes in a layer, which needs every queue's ` +
        `name at synth, and ${unresolved} queues have names CloudFormation generates: give them a queueName`,
    );
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sqs-waiter-allow-list-"));
  fs.mkdirSync(path.join(dir, "sqs-waiter"));
  fs.writeFileSync(path.join(dir, "sqs-waiter", "queues"), names.join("\n") + "\n");
  const layer = new lambda.LayerVersion(scope, "AllowList", {
    code: lambda.Code.fromAsset(dir),
    description: `sqs-waiter allow-list: ${names.length} queues (WAITER_QUEUES_FILE)`,
  });
  const { WAITER_QUEUES: _list, ...rest } = environment;
  return { environment: { ...rest, WAITER_QUEUES_FILE: ALLOW_LIST_PATH }, layer };
}
