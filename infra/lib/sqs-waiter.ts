import { CfnOutput, Duration, Fn, RemovalPolicy, Stack, Validations } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as destinations from "aws-cdk-lib/aws-lambda-destinations";
import * as logs from "aws-cdk-lib/aws-logs";
import * as scheduler from "aws-cdk-lib/aws-scheduler";
import * as sns from "aws-cdk-lib/aws-sns";
import * as sqs from "aws-cdk-lib/aws-sqs";
import * as fs from "node:fs";
import * as path from "node:path";
import { Construct } from "constructs";
import {
  checkPollerTimeout,
  checkQueueCount,
  checkReservedConcurrency,
  checkWarmThroughput,
  guardManagedPolicies,
  MANAGED_POLICIES_PER_ROLE,
  TABLE_QUOTA,
} from "./checks.ts";
import { createAlarms } from "./alarms.ts";
import { EnqueueAliases, grantInvokeOn, literalName, warnWideGrant } from "./aliases.ts";
import { placeAllowList } from "./allow-list.ts";
import { grantQueueAccess, grantTableKey, INDEX_NAME } from "./grants.ts";
import { cargoLambdaCdk, releaseCode } from "./code.ts";
import { inRange } from "./ranges.ts";
import { autoscaling, indexProjection, priorityOrder } from "./tables.ts";
import { VERSION } from "./version.ts";

export { INDEX_NAME };

/**
 * A queue's key for its table: its name when the app knows it (an imported queue, or a queue
 * given a physical name), else its construct id, which is as stable.
 */
function queueKey(queue: sqs.IQueue): string {
  return literalName(queue) ?? queue.node.id;
}

/** A queue's key, given as the queue or as its name. */
function keyOf(queue: sqs.IQueue | string): string {
  return typeof queue === "string" ? queue : queueKey(queue);
}

export interface SqsWaiterProps {
  /** The queues this deployment manages (the allow-list). Each gets its own table. */
  readonly queues: sqs.IQueue[];
  /**
   * Queues it also manages whose table (`${tablePrefix}${name}`) exists already, kept by an
   * earlier deployment: a queue taken out of `queues`, a destroyed stack. The construct uses and
   * grants that table but neither creates nor owns it, so the jobs stored in it are delivered
   * again. A queue is in `queues` or here, once. @default none
   */
  readonly adoptedQueues?: sqs.IQueue[];
  /**
   * Built `bootstrap` of the enqueue function, e.g. from CI. @default a `RustFunction`
   * (cargo-lambda-cdk) that builds the `enqueue` binary of `manifestPath` for `architecture`.
   */
  readonly enqueueCode?: lambda.Code;
  /**
   * Whether each queue gets aliases of the enqueue function of its own, `{queue}--send` and
   * `{queue}--view` (`.fifo` as `-fifo`), beside the class aliases `send`, `view` and
   * `operate` (docs/security.md): two resources a queue. @default true
   */
  readonly queueAliases?: boolean;
  /** Built `bootstrap` of the poller function. @default a `RustFunction` building `poller`. */
  readonly pollerCode?: lambda.Code;
  /** The workspace manifest the default `RustFunction`s build. @default this repository's Cargo.toml */
  readonly manifestPath?: string;
  /** The table for queue q is `${tablePrefix}${q}`. @default "sqs-waiter-" */
  readonly tablePrefix?: string;
  /** `scheduler` partition-key values per table; may only grow. @default 4 */
  readonly shards?: number;
  /** The poller hands over jobs due within this window. @default 120 s */
  readonly lookahead?: Duration;
  /** Standard-queue jobs with at most this delay go straight to SQS. @default 900 s */
  readonly directMaxDelay?: Duration;
  /** How long a poller run may hold FIFO jobs that fall due during it. @default 0 */
  readonly fifoHold?: Duration;
  /**
   * Days a job that left the table stays known to `get` and to idempotency (0 turns history
   * off). History records are removed by the tables' TTL on `purge_at`.
   * @default 7
   */
  readonly historyDays?: number;
  /**
   * History records also keep each job's message, so that the `replay` action can send it
   * again. Costs storage only. @default false
   */
  readonly historyBody?: boolean;
  /**
   * Every message carries its job's id as `waiter.job_id` where it leaves room under SQS's
   * 10 attributes (`WAITER_JOB_ID_ATTRIBUTE`), so a consumer can retry it. @default true
   */
  readonly jobIdAttribute?: boolean;
  /**
   * Messages per second per queue the poller lets arrive (`WAITER_MAX_RATE`); jobs over it
   * arrive in the next seconds with room. 0 is unlimited.
   * @default 0
   */
  readonly maxRate?: number;
  /**
   * Which due jobs `maxRate` lets arrive first (`WAITER_PRIORITY_ORDER`): `time` (earliest due
   * first, then lower priority) or `priority` (lower priority first, then earliest due; urgent
   * jobs can starve the others).
   * @default "time"
   */
  readonly priorityOrder?: "time" | "priority";
  /**
   * Poller groups (`WAITER_POLLER_GROUPS`): that many schedules each invoke the poller with
   * `{"group": i, "groups": n}`, and each run works its 1/n of the partitions, so that a herd
   * drains n times as fast (docs/performance.md "Herds").
   * @default 1
   */
  readonly pollerGroups?: number;
  /**
   * Warm throughput of the created tables and their index, for a herd drained at once
   * (docs/performance.md "Herds"). It can only grow, and pre-warming is charged once.
   * @default none: DynamoDB's own
   */
  readonly warmThroughput?: dynamodb.WarmThroughput;
  /** @default 70 s; keep it above fifoHold + 5 s */
  readonly pollerTimeout?: Duration;
  /** The poller's memory in MB, and so its CPU (docs/performance.md "Herds"). @default 256 */
  readonly pollerMemorySize?: number;
  /** @default ARM_64 */
  readonly architecture?: lambda.Architecture;
  /** @default PAY_PER_REQUEST */
  readonly billingMode?: dynamodb.BillingMode;
  /**
   * What the created tables' due index holds: INCLUDE (the keys, priority and weight; an entry
   * bills 1 write unit whatever the body's size) or ALL. CloudFormation cannot change it on an
   * existing table: pass ALL for tables created before (docs/tables.md "Index projection").
   * @default INCLUDE
   */
  readonly indexProjection?: "INCLUDE" | "ALL";
  /** Table and index capacity when billingMode is PROVISIONED. @default 5 */
  readonly readCapacity?: number;
  readonly writeCapacity?: number;
  /**
   * With billingMode PROVISIONED: autoscaling of each created table's and its index's reads
   * from readCapacity up to this, tracking targetUtilizationPercent. @default none
   */
  readonly maxReadCapacity?: number;
  /** The same for writes, from writeCapacity. @default none */
  readonly maxWriteCapacity?: number;
  /** Autoscaling's target: the percent of the provisioned capacity used. @default 70 */
  readonly targetUtilizationPercent?: number;
  /** @default INFO */
  readonly logLevel?: lambda.ApplicationLogLevel;
  /** Alarms notify this topic when given. */
  readonly alarmTopic?: sns.ITopic;
  /**
   * An operator's CloudWatch dashboard (`dashboard.json`, the same as the SAM template's):
   * dispatched and lateness per queue, parked, expired and failed entries, the poller's
   * duration against its timeout, enqueue errors by type. @default true
   */
  readonly dashboard?: boolean;
  /**
   * Metrics per queue (dimension `Queue`, `WAITER_QUEUE_METRICS`) beside the per-function ones:
   * 6 custom metrics a queue, 2 more once it has retries and up to 4 with priorities, each
   * billed by the month (docs/operations.md "Metrics"). `false` keeps the per-function metrics
   * and the alarms, and leaves the dashboard's per-queue graphs empty. @default true
   */
  readonly queueMetrics?: boolean;
  /**
   * @default RETAIN_ON_UPDATE_OR_DELETE: the tables hold jobs nobody else has, but a failed
   * first create removes them so that it can be retried.
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Reserved concurrency for the poller. The partition lease already makes concurrent runs
   * safe, and a reservation fails on accounts with a small concurrency quota (10 or 50).
   * @default none
   */
  readonly pollerReservedConcurrency?: number;
  /**
   * Customer-managed keys that encrypt the managed queues, for queues whose key the construct
   * cannot see (imported queues). Both functions get kms:GenerateDataKey and kms:Decrypt on
   * exactly these keys. Queues defined with their key in the app are covered without this.
   * @default none
   */
  readonly queueKmsKeys?: kms.IKey[];
  /**
   * A customer-managed key that encrypts the tables this construct creates. Both functions are
   * granted this key only, and only through DynamoDB (kms:ViaService). Adopted tables keep
   * their own encryption (docs/deploy.md "Keys"). @default the AWS managed key aws/dynamodb
   */
  readonly tableEncryptionKey?: kms.IKey;
  /**
   * X-Ray tracing of both functions. With PASS_THROUGH a job still keeps a sampled caller's
   * trace; ACTIVE samples invocations too (CDK grants the roles X-Ray's writes).
   * @default unset: Lambda's PassThrough, and no X-Ray rights
   */
  readonly tracing?: lambda.Tracing;
  /**
   * IAM's quota of managed policies per role in this account: many queues move grants into
   * overflow managed policies, and synth fails past this. @default 10 (IAM's default; 20 at most)
   */
  readonly managedPolicyQuota?: number;
  /** DynamoDB's table-level throughput quota, which bounds warmThroughput. @default 40000 */
  readonly tableThroughputQuota?: number;
}

/**
 * sqs-waiter: schedule SQS messages beyond the 900-second DelaySeconds limit. Creates the same
 * resources as the SAM template: a table per queue, the enqueue and poller functions with
 * least-privilege roles, a one-minute EventBridge schedule, a failure queue, alarms and a
 * dashboard.
 */
export class SqsWaiter extends Construct {
  /** The tables this construct creates, one per queue of `queues`. */
  readonly tables: dynamodb.Table[];
  /** The existing tables of `adoptedQueues`. */
  readonly adoptedTables: dynamodb.ITable[];
  private readonly tablesByQueue = new Map<string, dynamodb.ITable>();
  readonly enqueueFunction: lambda.Function;
  /** The enqueue function's class aliases (`grantSend`, `grantView`, `grantOperate`). */
  readonly aliases: EnqueueAliases;
  readonly pollerFunction: lambda.Function;
  readonly pollerFailures: sqs.Queue;
  readonly scheduleDeadLetters: sqs.Queue;
  readonly alarms: cloudwatch.Alarm[];
  /** The operator's dashboard, unless `dashboard: false`. */
  readonly dashboard?: cloudwatch.CfnDashboard;

  constructor(scope: Construct, id: string, props: SqsWaiterProps) {
    super(scope, id);
    const adoptedQueues = props.adoptedQueues ?? [];
    if (props.queues.length + adoptedQueues.length === 0) {
      throw new Error("SqsWaiter: queues must name at least one queue (or adoptedQueues one whose table exists)");
    }
    checkQueueCount(props.queues.length, adoptedQueues.length);
    const prefix = props.tablePrefix ?? "sqs-waiter-";
    checkWarmThroughput(props.warmThroughput, props.tableThroughputQuota ?? TABLE_QUOTA);
    const projection = indexProjection(props.indexProjection);
    const billingMode = props.billingMode ?? dynamodb.BillingMode.PAY_PER_REQUEST;
    const provisioned = billingMode === dynamodb.BillingMode.PROVISIONED;
    const capacity = provisioned
      ? {
          readCapacity: inRange("readCapacity", props.readCapacity, 5),
          writeCapacity: inRange("writeCapacity", props.writeCapacity, 5),
        }
      : {};

    const scaling = autoscaling(props, provisioned, capacity);
    this.tables = props.queues.map((queue) => {
      // Keyed by the queue, not its position, so that reordering or removing a queue never
      // replaces another queue's table. An unnamed queue's name is a token: its construct id
      // is stable instead.
      const key = this.claim(queue);
      const table = new dynamodb.Table(this, `Table-${key}`, {
        tableName: `${prefix}${queue.queueName}`,
        partitionKey: { name: "scheduler", type: dynamodb.AttributeType.STRING },
        sortKey: { name: "job_id", type: dynamodb.AttributeType.STRING },
        billingMode,
        ...capacity,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        // History records carry purge_at; DynamoDB removes them then (docs/contract.md "History").
        timeToLiveAttribute: "purge_at",
        ...(props.tableEncryptionKey
          ? { encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED, encryptionKey: props.tableEncryptionKey }
          : { encryption: dynamodb.TableEncryption.AWS_MANAGED }),
        removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
        warmThroughput: props.warmThroughput,
      });
      this.tablesByQueue.set(key, table);
      table.addGlobalSecondaryIndex({
        indexName: INDEX_NAME,
        partitionKey: { name: "scheduler", type: dynamodb.AttributeType.STRING },
        sortKey: { name: "perform_at", type: dynamodb.AttributeType.NUMBER },
        // What the poller reads before its consistent re-read.
        ...projection,
        ...capacity,
        // The index takes every write the table takes, and the poller's reads.
        warmThroughput: props.warmThroughput,
      });
      scaling?.(table);
      return table;
    });
    this.adoptedTables = adoptedQueues.map((queue) => {
      const key = this.claim(queue);
      const table = dynamodb.Table.fromTableName(this, `Adopted-${key}`, `${prefix}${queue.queueName}`);
      this.tablesByQueue.set(key, table);
      return table;
    });
    const managed: [sqs.IQueue, dynamodb.ITable][] = [
      ...props.queues.map((q, i): [sqs.IQueue, dynamodb.ITable] => [q, this.tables[i]]),
      ...adoptedQueues.map((q, i): [sqs.IQueue, dynamodb.ITable] => [q, this.adoptedTables[i]]),
    ];

    const pollerGroups = inRange("pollerGroups", props.pollerGroups, 1);
    const fifoHoldS = inRange("fifoHold", props.fifoHold, 0);
    const environment: Record<string, string> = {
      WAITER_QUEUES: managed.map(([q]) => q.queueName).join(","),
      WAITER_TABLE_PREFIX: prefix,
      WAITER_SHARDS: String(inRange("shards", props.shards, 4)),
      WAITER_LOOKAHEAD: String(inRange("lookahead", props.lookahead, 120)),
      WAITER_DIRECT_MAX_DELAY: String(inRange("directMaxDelay", props.directMaxDelay, 900)),
      WAITER_FIFO_HOLD: String(fifoHoldS),
      WAITER_HISTORY_DAYS: String(inRange("historyDays", props.historyDays, 7)),
      WAITER_HISTORY_BODY: String(props.historyBody ?? false),
      // Only when off: the default costs no byte of Lambda's 4 KB of environment.
      ...(props.jobIdAttribute === false ? { WAITER_JOB_ID_ATTRIBUTE: "false" } : {}),
      WAITER_MAX_RATE: String(inRange("maxRate", props.maxRate, 0)),
      WAITER_PRIORITY_ORDER: priorityOrder(props.priorityOrder),
      WAITER_POLLER_GROUPS: String(pollerGroups),
      WAITER_QUEUE_METRICS: String(props.queueMetrics ?? true),
      RUST_LOG: props.logLevel ?? lambda.ApplicationLogLevel.INFO,
    };
    // Past Lambda's 4 KB of environment (47 queues of 80 characters), the allow-list
    // goes in a layer's file instead (docs/deploy.md "Many queues").
    const allowList = placeAllowList(this, managed.map(([q]) => q.queueName), environment);
    const common = {
      runtime: lambda.Runtime.PROVIDED_AL2023,
      handler: "bootstrap",
      architecture: props.architecture ?? lambda.Architecture.ARM_64,
      memorySize: 256,
      environment: allowList.environment,
      layers: allowList.layer ? [allowList.layer] : undefined,
      // Left unset by default: Lambda's PassThrough, without the X-Ray rights CDK grants for
      // any explicit mode.
      tracing: props.tracing,
      loggingFormat: lambda.LoggingFormat.JSON,
      // Lambda counts a JSON line without a `level` (the EMF metrics line) as INFO and would drop
      // it at WARN or ERROR; so Lambda filters nothing and the process filters by RUST_LOG.
      applicationLogLevelV2: lambda.ApplicationLogLevel.TRACE,
      systemLogLevelV2: lambda.SystemLogLevel.WARN,
    };

    // Code given (CI, `make build`), else a release package's zips (`make dist`), else cargo-lambda-cdk's
    // RustFunction builds the binary at synth, for the chosen architecture.
    const manifestPath = props.manifestPath ?? path.join(import.meta.dirname, "..", "..", "Cargo.toml");
    const rustFunction = (id: string, binaryName: string, given: lambda.Code | undefined, options: lambda.FunctionOptions) => {
      const code = given ?? releaseCode(binaryName, common.architecture);
      return code
        ? new lambda.Function(this, id, { ...common, ...options, code })
        : new (cargoLambdaCdk().RustFunction)(this, id, { ...common, ...options, manifestPath, binaryName, runtime: "provided.al2023" });
    };

    const enqueueRole = this.functionRole("EnqueueRole", "enqueue");
    this.enqueueFunction = rustFunction("Enqueue", "enqueue", props.enqueueCode, {
      description: "sqs-waiter enqueue (Lambda Invoke from other services)",
      role: enqueueRole.role,
      logGroup: enqueueRole.logGroup,
      timeout: Duration.seconds(30),
    });
    this.aliases = new EnqueueAliases(
      this,
      "EnqueueAliases",
      this.enqueueFunction,
      managed.map(([q]): [string, sqs.IQueue] => [queueKey(q), q]),
      props.queueAliases ?? true,
    );

    this.pollerFailures = new sqs.Queue(this, "PollerFailures", {
      retentionPeriod: Duration.days(14),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    const pollerRole = this.functionRole("PollerRole", "poller");
    const pollerTimeoutS = inRange("pollerTimeout", props.pollerTimeout, 70);
    checkPollerTimeout(pollerTimeoutS, fifoHoldS);
    const reserved =
      props.pollerReservedConcurrency === undefined
        ? undefined
        : inRange("pollerReservedConcurrency", props.pollerReservedConcurrency, 0);
    checkReservedConcurrency(reserved, pollerGroups);
    this.pollerFunction = rustFunction("Poller", "poller", props.pollerCode, {
      description: "sqs-waiter poller (hands due jobs to SQS)",
      role: pollerRole.role,
      logGroup: pollerRole.logGroup,
      timeout: Duration.seconds(pollerTimeoutS),
      // More memory is more CPU: for herds (docs/performance.md "Herds").
      memorySize: inRange("pollerMemorySize", props.pollerMemorySize, 256),
      // Opt-in: partitions are leased, so concurrent runs are safe without a reservation.
      reservedConcurrentExecutions: reserved,
      // A failed run is not retried: the next starts within a minute and resumes from the table.
      retryAttempts: 0,
      maxEventAge: Duration.seconds(60),
      onFailure: new destinations.SqsDestination(this.pollerFailures),
    });

    grantQueueAccess(enqueueRole.role, pollerRole.role, managed, props.queueKmsKeys);
    if (props.tableEncryptionKey) {
      grantTableKey([enqueueRole.role, pollerRole.role], props.tableEncryptionKey);
    }

    // The functions, and so the schedule that names the poller, wait for every policy of their
    // roles (the default policy and its overflow managed policies, which name the tables): a
    // first run before its rights exist would fail.
    guardManagedPolicies(this, [enqueueRole.role, pollerRole.role], props.managedPolicyQuota ?? MANAGED_POLICIES_PER_ROLE.default);
    this.enqueueFunction.node.addDependency(enqueueRole.role);
    this.pollerFunction.node.addDependency(pollerRole.role);
    // The poller is updated before enqueue: a narrower window, not a guarantee (a rollback follows
    // the old template's order; enqueue runs poller code in-process). The format mark is that.
    this.enqueueFunction.node.addDependency(this.pollerFunction);
    new CfnOutput(this, "Version", { value: VERSION, description: "The sqs-waiter release (docs/upgrades.md)." });

    // The schedules live in a group of their own, which the role's trust names: EventBridge
    // Scheduler gives the schedule group's ARN as aws:SourceArn (docs/deploy.md).
    const scheduleGroup = new scheduler.CfnScheduleGroup(this, "Schedules", {});
    const schedulerRole = new iam.Role(this, "SchedulerRole", {
      assumedBy: new iam.ServicePrincipal("scheduler.amazonaws.com", {
        conditions: {
          StringEquals: { "aws:SourceAccount": Stack.of(this).account },
          ArnEquals: { "aws:SourceArn": scheduleGroup.attrArn },
        },
      }),
      inlinePolicies: {
        invoke: new iam.PolicyDocument({
          statements: [
            new iam.PolicyStatement({ actions: ["lambda:InvokeFunction"], resources: [this.pollerFunction.functionArn] }),
          ],
        }),
      },
    });
    // Invocations the scheduler could not make (permissions, throttling); it sends them with
    // the schedule's role.
    this.scheduleDeadLetters = new sqs.Queue(this, "ScheduleDeadLetters", {
      retentionPeriod: Duration.days(14),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    this.scheduleDeadLetters.grantSendMessages(schedulerRole);
    // One schedule per poller group, each naming its group. Group 0 keeps the id the single
    // schedule had, so that adding groups to a deployed stack adds schedules and replaces none.
    for (let group = 0; group < pollerGroups; group++) {
      new scheduler.CfnSchedule(this, group === 0 ? "EveryMinute" : `EveryMinute-Group${group}`, {
        description: `Runs the sqs-waiter poller, group ${group} of ${pollerGroups}`,
        groupName: scheduleGroup.ref,
        scheduleExpression: "rate(1 minute)",
        flexibleTimeWindow: { mode: "OFF" },
        target: {
          arn: this.pollerFunction.functionArn,
          roleArn: schedulerRole.roleArn,
          input: JSON.stringify({ group, groups: pollerGroups }),
          retryPolicy: { maximumRetryAttempts: 0 },
          deadLetterConfig: { arn: this.scheduleDeadLetters.queueArn },
        },
      });
    }

    this.alarms = createAlarms(this, this, props.alarmTopic);

    if (props.dashboard ?? true) {
      // The SAM template's body, read from one file: per-queue graphs are SEARCH expressions, so
      // the body does not change with the queue list.
      const body = fs.readFileSync(path.join(import.meta.dirname, "dashboard.json"), "utf8");
      this.dashboard = new cloudwatch.CfnDashboard(this, "Dashboard", {
        dashboardBody: Fn.sub(body, {
          PollerFunction: this.pollerFunction.functionName,
          EnqueueFunction: this.enqueueFunction.functionName,
          PollerTimeout: String(pollerTimeoutS),
        }),
      });
    }

    if (props.tracing !== undefined && props.tracing !== lambda.Tracing.DISABLED) {
      for (const role of [enqueueRole.role, pollerRole.role]) {
        Validations.of(role).acknowledge({
          id: "AwsSolutions-IAM5[Resource::*]",
          reason: "X-Ray's PutTraceSegments and PutTelemetryRecords take no resource ARN (CDK's tracing grant).",
        });
      }
    }
    Validations.of(this.pollerFailures).acknowledge({
      id: "AwsSolutions-SQS3",
      reason: "This queue is itself the poller's on-failure destination.",
    });
    Validations.of(this.scheduleDeadLetters).acknowledge({
      id: "AwsSolutions-SQS3",
      reason: "This queue is itself the schedule's dead-letter queue.",
    });
  }

  /** Every right on every queue (the unqualified function, and `:*`): warns at synth (docs/security.md). */
  grantEnqueue(grantee: iam.IGrantable): iam.Grant {
    warnWideGrant(this);
    return this.enqueueFunction.grantInvoke(grantee);
  }

  /**
   * A producer's rights, and its consumers' (docs/security.md): invoke through the `send` alias
   * of each of `queues`, or through `send` for every queue. Names only those alias ARNs; another
   * account's principal (`new iam.AccountPrincipal(id)`) gets each alias's resource policy.
   */
  grantSend(grantee: iam.IGrantable, queues?: (sqs.IQueue | string)[]): iam.Grant {
    return grantInvokeOn(grantee, this.aliases.aliasesFor("send", queues?.map(keyOf)));
  }

  /** A viewer's rights: the `view` alias of each of `queues`, or `view` for every queue. */
  grantView(grantee: iam.IGrantable, queues?: (sqs.IQueue | string)[]): iam.Grant {
    return grantInvokeOn(grantee, this.aliases.aliasesFor("view", queues?.map(keyOf)));
  }

  /** An operator's rights: every action on every queue, through the `operate` alias. */
  grantOperate(grantee: iam.IGrantable): iam.Grant {
    return grantInvokeOn(grantee, [this.aliases.byClass.operate]);
  }

  /** The table that stores `queue`'s jobs. Throws if this waiter does not manage the queue. */
  tableFor(queue: sqs.IQueue | string): dynamodb.ITable {
    const key = typeof queue === "string" ? queue : queueKey(queue);
    const table = this.tablesByQueue.get(key);
    if (!table) {
      throw new Error(`SqsWaiter: ${key} is not one of the managed queues (${[...this.tablesByQueue.keys()].join(", ")})`);
    }
    return table;
  }

  /**
   * The queue's key among the managed queues, refusing a queue named twice (in either list):
   * each queue's table is registered before the next queue is claimed.
   */
  private claim(queue: sqs.IQueue): string {
    const key = queueKey(queue);
    if (this.tablesByQueue.has(key)) {
      throw new Error(`SqsWaiter: queue ${key} is listed twice (a queue is in queues or in adoptedQueues, once)`);
    }
    return key;
  }

  /** A role with logging rights on the function's own log group only, instead of the AWS managed policy. */
  private functionRole(id: string, name: string): { role: iam.Role; logGroup: logs.LogGroup } {
    const logGroup = new logs.LogGroup(this, `${id}Logs`, {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const role = new iam.Role(this, id, {
      assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
      description: `sqs-waiter ${name} function`,
    });
    // logGroupArn ends in ":*", which covers this group's streams only.
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ["logs:CreateLogStream", "logs:PutLogEvents"], resources: [logGroup.logGroupArn] }),
    );
    return { role, logGroup };
  }
}
