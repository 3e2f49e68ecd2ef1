import { Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type * as kms from "aws-cdk-lib/aws-kms";
import type * as sqs from "aws-cdk-lib/aws-sqs";

/** The due-time index's name, part of the table contract (DESIGN.md "Table"). */
export const INDEX_NAME = "scheduler-perform_at-index";

/**
 * Least privilege: exact table, index and queue ARNs for each managed queue, and the queues'
 * customer-managed keys.
 */
export function grantQueueAccess(
  enqueueRole: iam.IRole,
  pollerRole: iam.IRole,
  managed: [sqs.IQueue, dynamodb.ITable][],
  queueKmsKeys: kms.IKey[] | undefined,
): void {
  for (const [queue, table] of managed) {
    enqueueRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        // PutItem: schedule and reschedule. BatchGetItem: get, the idempotency check, and
        // list's and cancel_many's re-read of what the index names.
        // DeleteItem and ConditionCheckItem: cancel (a transaction with the poller lease).
        // Query (table and index): list, list_parked. GetItem and UpdateItem: the shard
        // counts. UpdateItem, DeleteItem and PutItem: a reschedule that moves a job near
        // works its shard as a poller run would (lease, send, conditional removals, which go
        // as PartiQLDelete and PartiQLUpdate statements in a BatchExecuteStatement).
        actions: [
          "dynamodb:PutItem",
          "dynamodb:BatchGetItem",
          "dynamodb:DeleteItem",
          "dynamodb:ConditionCheckItem",
          "dynamodb:Query",
          "dynamodb:GetItem",
          "dynamodb:UpdateItem",
          "dynamodb:PartiQLDelete",
          "dynamodb:PartiQLUpdate",
        ],
        resources: [table.tableArn, `${table.tableArn}/index/${INDEX_NAME}`],
      }),
    );
    pollerRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["dynamodb:Query"],
        resources: [`${table.tableArn}/index/${INDEX_NAME}`],
      }),
    );
    pollerRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        // UpdateItem and DeleteItem: the partition lease. PartiQLDelete and PartiQLUpdate (in
        // a BatchExecuteStatement): remove sent jobs, conditioned on the version sent.
        // DeleteItem and PutItem: the same one at a time, and park rejected jobs. BatchGetItem:
        // re-read due jobs consistently under the lease. GetItem (and UpdateItem): the shard
        // counts.
        actions: [
          "dynamodb:UpdateItem",
          "dynamodb:DeleteItem",
          "dynamodb:PutItem",
          "dynamodb:BatchGetItem",
          "dynamodb:GetItem",
          "dynamodb:PartiQLDelete",
          "dynamodb:PartiQLUpdate",
        ],
        resources: [table.tableArn],
      }),
    );
    for (const role of [enqueueRole, pollerRole]) {
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({ actions: ["sqs:SendMessage", "sqs:GetQueueUrl"], resources: [queue.queueArn] }),
      );
    }
  }
  // Queues encrypted with a customer key need the key: the app's own queues name theirs, and
  // queueKmsKeys covers imported ones.
  const queueKeys = [...managed.flatMap(([q]) => q.encryptionMasterKey ?? []), ...(queueKmsKeys ?? [])];
  for (const key of queueKeys) {
    for (const role of [enqueueRole, pollerRole]) {
      key.grant(role, "kms:GenerateDataKey", "kms:Decrypt");
    }
  }
}

/**
 * DynamoDB uses the tables' customer key on behalf of the caller: each role may use this key
 * only, and only through DynamoDB in the stack's region. No kms:CreateGrant: the functions
 * create no tables.
 */
export function grantTableKey(roles: iam.IRole[], key: kms.IKey): void {
  for (const role of roles) {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*"],
        resources: [key.keyArn],
        conditions: { StringEquals: { "kms:ViaService": `dynamodb.${Stack.of(role).region}.amazonaws.com` } },
      }),
    );
  }
}
