// The tables' settings as the construct reads its props: the due index's projection, the
// priority order the functions read, and a created table's autoscaling. Moved out of
// sqs-waiter.ts unchanged (issue 82), each refusing a bad prop by name.
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import { INDEX_NAME } from "./grants.ts";
import { inRange } from "./ranges.ts";

/** `priorityOrder` as the functions read it, or an error naming the prop (JS callers skip the type). */
export function priorityOrder(order: string | undefined): string {
  if (order === undefined || order === "time" || order === "priority") {
    return order ?? "time";
  }
  throw new Error(`SqsWaiter: priorityOrder must be "time" or "priority", got ${JSON.stringify(order)}`);
}

/** What the due index projects (codec INDEX_INCLUDED_ATTRIBUTES), or an error naming the prop. */
export function indexProjection(projection: string | undefined): Pick<dynamodb.GlobalSecondaryIndexProps, "projectionType" | "nonKeyAttributes"> {
  if (projection === undefined || projection === "INCLUDE") {
    return { projectionType: dynamodb.ProjectionType.INCLUDE, nonKeyAttributes: ["priority", "weight"] };
  }
  if (projection === "ALL") {
    return { projectionType: dynamodb.ProjectionType.ALL };
  }
  throw new Error(`SqsWaiter: indexProjection must be "INCLUDE" or "ALL", got ${JSON.stringify(projection)}`);
}

/**
 * The autoscaling of a created table and its index (target tracking on reads, writes or both),
 * or undefined when no maximum is given; an error naming the prop where the props disagree.
 */
export function autoscaling(
  props: { maxReadCapacity?: number; maxWriteCapacity?: number; targetUtilizationPercent?: number },
  provisioned: boolean,
  capacity: { readCapacity?: number; writeCapacity?: number },
): ((table: dynamodb.Table) => void) | undefined {
  const maxRead = props.maxReadCapacity === undefined ? undefined : inRange("maxReadCapacity", props.maxReadCapacity, 0);
  const maxWrite = props.maxWriteCapacity === undefined ? undefined : inRange("maxWriteCapacity", props.maxWriteCapacity, 0);
  const target = inRange("targetUtilizationPercent", props.targetUtilizationPercent, 70);
  if (maxRead === undefined && maxWrite === undefined) {
    if (props.targetUtilizationPercent !== undefined) {
      throw new Error("SqsWaiter: targetUtilizationPercent needs maxReadCapacity or maxWriteCapacity");
    }
    return undefined;
  }
  if (!provisioned) {
    throw new Error("SqsWaiter: maxReadCapacity and maxWriteCapacity need billingMode PROVISIONED (on demand scales by itself)");
  }
  for (const [prop, max, min] of [
    ["maxReadCapacity", maxRead, capacity.readCapacity],
    ["maxWriteCapacity", maxWrite, capacity.writeCapacity],
  ] as const) {
    if (max !== undefined && min !== undefined && max < min) {
      throw new Error(`SqsWaiter: ${prop} (${max}) must be at least ${prop === "maxReadCapacity" ? "readCapacity" : "writeCapacity"} (${min}), autoscaling's minimum`);
    }
  }
  const track = { targetUtilizationPercent: target };
  return (table) => {
    if (maxRead !== undefined) {
      const reads = { minCapacity: capacity.readCapacity ?? 5, maxCapacity: maxRead };
      table.autoScaleReadCapacity(reads).scaleOnUtilization(track);
      table.autoScaleGlobalSecondaryIndexReadCapacity(INDEX_NAME, reads).scaleOnUtilization(track);
    }
    if (maxWrite !== undefined) {
      const writes = { minCapacity: capacity.writeCapacity ?? 5, maxCapacity: maxWrite };
      table.autoScaleWriteCapacity(writes).scaleOnUtilization(track);
      table.autoScaleGlobalSecondaryIndexWriteCapacity(INDEX_NAME, writes).scaleOnUtilization(track);
    }
  };
}
