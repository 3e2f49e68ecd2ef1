import { Token } from "aws-cdk-lib";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import type { IConstruct } from "constructs";

/**
 * Checks across props, and of what CDK builds from them, that AWS would otherwise refuse
 * mid-deploy or that would fail at run time. Each error names the props and the rule.
 */

/**
 * The queues one stack serves, SAM or CDK: both are tested at this many 80-character names
 * (IAM's policy limits in every partition, the allow-list in a layer), and refuse one more
 * rather than meet an untested limit mid-deploy. scripts/iam_budget.py's MAX_QUEUES is the same.
 */
export const MAX_QUEUES = 100;
/** IAM attaches 10 managed policies to a role by default; the quota can be raised to 20. */
export const MANAGED_POLICIES_PER_ROLE = { default: 10, max: 20 };
/** DynamoDB's warm throughput: a new on-demand table starts at these, and it never shrinks. */
export const WARM_FLOOR = { read: 12_000, write: 4_000 };
/** DynamoDB's default table-level throughput quota, read and write alike. */
export const TABLE_QUOTA = 40_000;
/** The poller's run ends this long before its timeout: a FIFO hold must fit before it. */
export const POLLER_MARGIN_S = 5;

/** At most MAX_QUEUES queues, created and adopted together. */
export function checkQueueCount(queues: number, adopted: number): void {
  if (queues + adopted > MAX_QUEUES) {
    throw new Error(
      `SqsWaiter: ${queues + adopted} queues (queues ${queues}, adoptedQueues ${adopted}): a stack serves at most ` +
        `${MAX_QUEUES} (the count tested at 80-character names in every partition); split them over two SqsWaiter stacks`,
    );
  }
}

/** A run holds FIFO jobs up to `fifoHold`: Lambda would stop a run whose timeout ends first. */
export function checkPollerTimeout(timeoutS: number, fifoHoldS: number): void {
  if (Token.isUnresolved(timeoutS) || Token.isUnresolved(fifoHoldS)) {
    return;
  }
  if (timeoutS < fifoHoldS + POLLER_MARGIN_S) {
    throw new Error(
      `SqsWaiter: pollerTimeout (${timeoutS} s) must be at least fifoHold + ${POLLER_MARGIN_S} s ` +
        `(${fifoHoldS + POLLER_MARGIN_S} s): Lambda would stop a run holding FIFO jobs`,
    );
  }
}

/**
 * Each group's schedule invokes the poller every minute: a reservation below the groups throttles
 * some, and EventBridge Scheduler drops an invocation it could not make within 60 s.
 */
export function checkReservedConcurrency(reserved: number | undefined, groups: number): void {
  if (reserved === undefined || Token.isUnresolved(reserved) || Token.isUnresolved(groups)) {
    return;
  }
  if (reserved < groups) {
    throw new Error(
      `SqsWaiter: pollerReservedConcurrency (${reserved}) must be at least pollerGroups (${groups}): ` +
        "each group's run needs its own concurrent execution",
    );
  }
}

/** DynamoDB refuses warm throughput below a new table's own, and above the table quota. */
export function checkWarmThroughput(warm: dynamodb.WarmThroughput | undefined, tableQuota: number): void {
  for (const [prop, value, floor] of [
    ["writeUnitsPerSecond", warm?.writeUnitsPerSecond, WARM_FLOOR.write],
    ["readUnitsPerSecond", warm?.readUnitsPerSecond, WARM_FLOOR.read],
  ] as const) {
    if (value === undefined || Token.isUnresolved(value)) {
      continue;
    }
    if (!Number.isInteger(value) || value < floor || value > tableQuota) {
      throw new Error(
        `SqsWaiter: warmThroughput.${prop} must be a whole number from ${floor} (a new table's own) ` +
          `to ${tableQuota} (tableThroughputQuota), got ${value}`,
      );
    }
  }
}

/**
 * CDK moves the statements that do not fit a role's inline policy into "overflow" managed
 * policies, and only warns past IAM's quota; the deploy would then fail on the role. Checked
 * at synth, after CDK has split the policies.
 */
export function guardManagedPolicies(scope: IConstruct, roles: iam.Role[], quota: number): void {
  if (!Number.isInteger(quota) || quota < 1 || quota > MANAGED_POLICIES_PER_ROLE.max) {
    throw new Error(
      `SqsWaiter: managedPolicyQuota must be a whole number from 1 to ${MANAGED_POLICIES_PER_ROLE.max} ` +
        `(IAM's quota of managed policies per role, ${MANAGED_POLICIES_PER_ROLE.default} unless raised), got ${quota}`,
    );
  }
  scope.node.addValidation({
    validate: () =>
      roles.flatMap((role) => {
        const attached = role.node.findAll().filter((c) => c instanceof iam.ManagedPolicy).length;
        return attached > quota
          ? [
              `SqsWaiter: ${role.node.path} needs ${attached} managed policies for its grants, over ` +
                `managedPolicyQuota (${quota}): raise IAM's quota and managedPolicyQuota (up to ` +
                `${MANAGED_POLICIES_PER_ROLE.max}), or split the queues over two stacks`,
            ]
          : [];
      }),
  });
}
