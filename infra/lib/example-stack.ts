import { type Duration, Stack, type StackProps } from "aws-cdk-lib";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as sqs from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import { SqsWaiter } from "./sqs-waiter.ts";

export interface ExampleStackProps extends StackProps {
  readonly enqueueCode: lambda.Code;
  readonly pollerCode: lambda.Code;
  readonly architecture?: lambda.Architecture;
  /** Passed to the waiter; the deploy rehearsal sets 0 so that jobs seconds ahead are stored. */
  readonly directMaxDelay?: Duration;
}

/** An example: two queues of your own, managed by one sqs-waiter. */
export class ExampleStack extends Stack {
  readonly waiter: SqsWaiter;
  readonly queues: sqs.Queue[];

  constructor(scope: Construct, id: string, props: ExampleStackProps) {
    super(scope, id, props);
    const dlq = new sqs.Queue(this, "OrdersDlq", { encryption: sqs.QueueEncryption.SQS_MANAGED, enforceSSL: true });
    const orders = new sqs.Queue(this, "Orders", {
      queueName: "orders",
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: { queue: dlq, maxReceiveCount: 5 },
    });
    const billingDlq = new sqs.Queue(this, "BillingDlq", {
      fifo: true,
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    const billing = new sqs.Queue(this, "Billing", {
      queueName: "billing.fifo",
      fifo: true,
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: { queue: billingDlq, maxReceiveCount: 5 },
    });
    this.queues = [orders, billing];
    this.waiter = new SqsWaiter(this, "Waiter", {
      queues: this.queues,
      enqueueCode: props.enqueueCode,
      pollerCode: props.pollerCode,
      architecture: props.architecture,
      directMaxDelay: props.directMaxDelay,
    });
  }
}
