#!/usr/bin/env python3
"""The peer users would otherwise write: a minimal Python 3 + boto3 enqueue handler.

Driven through the Lambda Runtime API exactly like the Rust binaries, so `make bench` can compare
cold start and memory on the same stand-in. It does the same work for one job: a conditional
PutItem for a long delay, SendMessage for a short one. No validation: it is the floor of what a
Python implementation costs, not a full one.
"""
import json
import os
import time
import urllib.request
import uuid

import boto3

DYNAMODB = boto3.client("dynamodb")
SQS = boto3.client("sqs")
PREFIX = os.environ.get("WAITER_TABLE_PREFIX", "")


def handler(event):
    delay = int(event.get("delay_seconds", 0))
    if delay <= 900:
        url = SQS.get_queue_url(QueueName=event["queue"])["QueueUrl"]
        out = SQS.send_message(QueueUrl=url, MessageBody=event["message_body"], DelaySeconds=delay)
        return {"status": "sent", "message_id": out["MessageId"]}
    job_id = event.get("job_id") or str(uuid.uuid4())
    DYNAMODB.put_item(
        TableName=PREFIX + event["queue"],
        Item={
            "scheduler": {"S": event["queue"] + "#0"},
            "job_id": {"S": job_id},
            "perform_at": {"N": str(time.time() + delay)},
            "message_body": {"S": event["message_body"]},
        },
        ConditionExpression="attribute_not_exists(job_id)",
    )
    return {"status": "scheduled", "job_id": job_id}


def main():
    base = f"http://{os.environ['AWS_LAMBDA_RUNTIME_API']}/2018-06-01/runtime/invocation"
    while True:
        with urllib.request.urlopen(f"{base}/next") as r:
            request_id = r.headers["Lambda-Runtime-Aws-Request-Id"]
            event = json.loads(r.read())
        try:
            body, path = json.dumps(handler(event)), f"{base}/{request_id}/response"
        except Exception as e:  # the runtime reports any failure as the invocation's error
            body, path = json.dumps({"errorType": type(e).__name__, "errorMessage": str(e)}), f"{base}/{request_id}/error"
        urllib.request.urlopen(urllib.request.Request(path, data=body.encode(), method="POST")).read()


if __name__ == "__main__":
    main()
