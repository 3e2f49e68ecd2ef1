import { Annotations, Fn, Token } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";

/**
 * The enqueue function's classes of rights, an alias each (docs/security.md): the function
 * allows a call through one only its class's actions, on its queue.
 */
export const CLASSES = ["send", "view", "operate"] as const;
export type RightsClass = (typeof CLASSES)[number];
/** The classes a queue has aliases of its own for: `{queue}--send`, `{queue}--view`. */
export const QUEUE_CLASSES = ["send", "view"] as const;

/** A queue's part of its aliases' names: an alias name has no ".", so `.fifo` becomes `-fifo`. */
export function aliasKey(queueName: string): string {
  return queueName.replace(/\./g, "-");
}

/**
 * Refuses two queues whose aliases would share a name (`jobs.fifo` and `jobs-fifo`), as
 * `make deploy` does for SAM; names still tokens are left to CloudFormation.
 */
export function checkAliasKeys(names: string[]): void {
  const seen = new Map<string, string>();
  for (const name of names.filter((n) => !Token.isUnresolved(n))) {
    const key = aliasKey(name);
    const other = seen.get(key);
    if (other !== undefined) {
      throw new Error(
        `SqsWaiter: queues '${other}' and '${name}' would share the aliases ${key}--send and ${key}--view ` +
          "(an alias name has no '.'): rename one, or set queueAliases: false (the class aliases only)",
      );
    }
    seen.set(key, name);
  }
}

/** A queue's name where synth knows it: given, or the physical name of a queue it creates. */
export function literalName(queue: sqs.IQueue): string | undefined {
  if (!Token.isUnresolved(queue.queueName)) {
    return queue.queueName;
  }
  const physical = (queue.node.defaultChild as sqs.CfnQueue | undefined)?.queueName;
  return physical && !Token.isUnresolved(physical) ? physical : undefined;
}

/**
 * The class aliases of the enqueue function, and each queue's own (unless `perQueue` is false).
 * Each follows `$LATEST` and costs nothing.
 */
export class EnqueueAliases extends Construct {
  readonly byClass: Record<RightsClass, lambda.Alias>;
  private readonly byQueue = new Map<string, Record<(typeof QUEUE_CLASSES)[number], lambda.Alias>>();

  constructor(scope: Construct, id: string, fn: lambda.IFunction, queues: [string, sqs.IQueue][], perQueue: boolean) {
    super(scope, id);
    const alias = (aliasId: string, aliasName: string, description: string) =>
      new lambda.Alias(this, aliasId, { aliasName, version: fn.latestVersion, description });
    this.byClass = {
      send: alias("send", "send", "sqs-waiter: the send class, every queue"),
      view: alias("view", "view", "sqs-waiter: the view class, every queue"),
      operate: alias("operate", "operate", "sqs-waiter: the operate class"),
    };
    if (!perQueue) {
      return;
    }
    checkAliasKeys(queues.map(([, q]) => literalName(q) ?? q.queueName));
    for (const [key, queue] of queues) {
      // A name known only at deploy (a queue CloudFormation names) is mapped by CloudFormation:
      // "." split out, "-" joined.
      const literal = literalName(queue);
      const name = literal === undefined ? Fn.join("-", Fn.split(".", queue.queueName)) : aliasKey(literal);
      this.byQueue.set(key, {
        send: alias(`${key}--send`, `${name}--send`, "sqs-waiter: the send class, one queue"),
        view: alias(`${key}--view`, `${name}--view`, "sqs-waiter: the view class, one queue"),
      });
    }
  }

  /** The aliases of `cls` for `queues` (their keys), or the class's alias for every queue. */
  aliasesFor(cls: (typeof QUEUE_CLASSES)[number], keys?: string[]): lambda.Alias[] {
    if (keys === undefined) {
      return [this.byClass[cls]];
    }
    return keys.map((key) => {
      const own = this.byQueue.get(key);
      if (!own) {
        throw new Error(
          `SqsWaiter: ${key} has no aliases of its own: it is not a managed queue, or queueAliases is false`,
        );
      }
      return own[cls];
    });
  }
}

/**
 * `lambda:InvokeFunction` on exactly these aliases' ARNs (`function:NAME:ALIAS`), never on
 * `function:NAME` or `function:NAME:*` (which `grantInvoke` writes, aws-cdk #20177). A principal
 * of this stack's account gets an IAM statement; another account's (an `AccountPrincipal`, an
 * `ArnPrincipal`, a role imported with `mutable: false`) a statement of each alias's resource
 * policy, as `AddPermission` with `Qualifier` writes: an alias's own `grantInvoke` does both.
 * Anyone (`AnyPrincipal`, an organization) and services are refused: that policy would let them
 * all invoke the alias, a service on anyone's behalf.
 */
export function grantInvokeOn(grantee: iam.IGrantable, aliases: lambda.Alias[]): iam.Grant {
  const [first, ...rest] = aliases;
  if (first === undefined) {
    throw new Error("SqsWaiter: a grant needs at least one queue (leave queues out for every queue)");
  }
  const json = grantee.grantPrincipal.policyFragment.principalJson;
  if ([json.AWS ?? []].flat().includes("*") || json.Service || json.Federated) {
    throw new Error(
      `SqsWaiter: ${grantee.grantPrincipal} may not be granted an alias: grant a role or an account ` +
        "(a Role, an AccountPrincipal, an ArnPrincipal), never anyone or a service (docs/security.md)",
    );
  }
  return rest.reduce((grant, alias) => grant.combine(alias.grantInvoke(grantee)), first.grantInvoke(grantee));
}

/** `grantEnqueue`'s warning: it grants every action on every queue. */
export function warnWideGrant(scope: Construct): void {
  Annotations.of(scope).addWarningV2(
    "sqs-waiter:grantEnqueue",
    "grantEnqueue grants the unqualified function (every action, every queue, and every alias through " +
      "function:NAME:*); grant a producer grantSend(role, queues), a viewer grantView, an operator grantOperate",
  );
}
