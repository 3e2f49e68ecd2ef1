import { Duration } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as cwActions from "aws-cdk-lib/aws-cloudwatch-actions";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as sns from "aws-cdk-lib/aws-sns";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";

/** What the alarms watch. */
export interface AlarmedParts {
  readonly pollerFunction: lambda.IFunction;
  readonly enqueueFunction: lambda.IFunction;
  readonly pollerFailures: sqs.IQueue;
  readonly scheduleDeadLetters: sqs.IQueue;
}

/**
 * The same alarms as the SAM template's, created in `scope` (their ids are the construct's
 * own), each notifying `topic` when given.
 */
export function createAlarms(scope: Construct, parts: AlarmedParts, topic?: sns.ITopic): cloudwatch.Alarm[] {
  const metric = (namespace: string, metricName: string, statistic: string, period: Duration, fn = parts.pollerFunction) =>
    new cloudwatch.Metric({
      namespace,
      metricName,
      statistic,
      period,
      dimensionsMap: { FunctionName: fn.functionName },
    });
  const atLeastOne = (id: string, alarmDescription: string, m: cloudwatch.IMetric, evaluationPeriods = 1) =>
    new cloudwatch.Alarm(scope, id, {
      alarmDescription,
      metric: m,
      threshold: 1,
      evaluationPeriods,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  const fiveMinutes = Duration.minutes(5);
  const alarms = [
    new cloudwatch.Alarm(scope, "PollerErrors", {
      alarmDescription: "The sqs-waiter poller failed runs (no partition could be worked).",
      metric: metric("AWS/Lambda", "Errors", "Sum", Duration.minutes(5)),
      threshold: 2,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    }),
    new cloudwatch.Alarm(scope, "BacklogAge", {
      alarmDescription: "The oldest overdue job found by the poller is more than 2 minutes late (leaving out jobs MaxRate holds back by design).",
      metric: metric("SqsWaiter", "BacklogAge", "Maximum", Duration.minutes(1)),
      threshold: 120,
      evaluationPeriods: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    }),
    new cloudwatch.Alarm(scope, "ParkedJobs", {
      alarmDescription: "SQS rejected jobs permanently; they are parked (action list_parked).",
      metric: metric("SqsWaiter", "Parked", "Sum", Duration.minutes(5)),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    }),
    // Silence alarms: a poller that stopped running, or that runs and fails quietly.
    new cloudwatch.Alarm(scope, "PollerHeartbeat", {
      alarmDescription: "The sqs-waiter poller has not run for 5 minutes (schedule disabled, deleted or failing to invoke).",
      metric: metric("AWS/Lambda", "Invocations", "Sum", fiveMinutes),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
    }),
    atLeastOne("PollerThrottles", "Lambda throttled the sqs-waiter poller.", metric("AWS/Lambda", "Throttles", "Sum", fiveMinutes)),
    // On messages arriving, not on the queues' depth: failures are kept 14 days for
    // inspection, and the alarms clear 5 minutes after the last one.
    atLeastOne(
      "PollerFailuresDepth",
      "sqs-waiter poller runs failed in the last 5 minutes (kept in the on-failure queue for 14 days).",
      parts.pollerFailures.metricNumberOfMessagesSent({ statistic: "Sum", period: fiveMinutes }),
    ),
    atLeastOne(
      "ScheduleDeadLettersDepth",
      "EventBridge Scheduler could not invoke the sqs-waiter poller in the last 5 minutes.",
      parts.scheduleDeadLetters.metricNumberOfMessagesSent({ statistic: "Sum", period: fiveMinutes }),
    ),
    atLeastOne(
      "FailedEntries",
      "SQS kept refusing entries the poller sent (retryable failures for 15 minutes).",
      metric("SqsWaiter", "FailedEntries", "Sum", fiveMinutes),
      3,
    ),
    atLeastOne(
      "PartitionErrors",
      "Poller partitions stopped on errors (queue-level SQS or DynamoDB faults) for 10 minutes.",
      metric("SqsWaiter", "PartitionErrors", "Sum", fiveMinutes),
      2,
    ),
    atLeastOne(
      "UnreadableItems",
      "The poller met items it cannot read (a later release's format, after a rollback, or damaged) and left them unsent.",
      metric("SqsWaiter", "Unreadable", "Sum", fiveMinutes),
      1,
    ),
    // A refused request is a function error (the contract), so Lambda's Errors alone would
    // page on callers' mistakes: the function counts those as Refused, and its own failures
    // (also failed jobs of a batch) as Failures. Crashes and timeouts print no line and stay
    // in Errors.
    atLeastOne(
      "EnqueueErrors",
      "The sqs-waiter enqueue function failed on its side (dependencies, internal errors, crashes, timeouts); refused requests are not counted.",
      new cloudwatch.MathExpression({
        expression: "FILL(errors, 0) - FILL(refused, 0) + FILL(failures, 0)",
        label: "enqueue failures on our side",
        period: fiveMinutes,
        usingMetrics: {
          errors: metric("AWS/Lambda", "Errors", "Sum", fiveMinutes, parts.enqueueFunction),
          refused: metric("SqsWaiter", "Refused", "Sum", fiveMinutes, parts.enqueueFunction),
          failures: metric("SqsWaiter", "Failures", "Sum", fiveMinutes, parts.enqueueFunction),
        },
      }),
    ),
  ];
  if (topic) {
    for (const alarm of alarms) {
      alarm.addAlarmAction(new cwActions.SnsAction(topic));
    }
  }
  return alarms;
}
