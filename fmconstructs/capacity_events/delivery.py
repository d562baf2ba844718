"""Where a Capacity Block event goes when the handler cannot finish it: an encrypted SQS queue.

Lambda invokes an EventBridge target asynchronously. On a function error it retries twice (Lambda Developer Guide,
"How Lambda handles errors and retries with asynchronous invocation",
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html: "If the function returns an
error, by default Lambda attempts to run it two more times, with a one-minute wait between the first two attempts,
and two minutes between the second and third attempts"), then discards the event unless an on-failure destination or
a dead-letter queue retains it (Lambda API PutFunctionEventInvokeConfig: "When an event fails all processing attempts
or stays in the asynchronous invocation queue for too long, Lambda discards it"; "You can configure separate
destinations for successful invocations (on-success) and events that fail all processing attempts (on-failure)").
The handler raises only when it could not publish the notice, so an event in this queue means nobody was told.

:func:`failure_queue` builds the queue; :func:`wire_failure_queue` makes it the function's on-failure destination
(``AWS::Lambda::EventInvokeConfig``) and the rule target's dead-letter queue (events EventBridge could not deliver to
the function at all, e.g. a missing permission).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_sqs as sqs
from constructs import Construct

#: Lambda's own default number of retries for an asynchronous invocation (the page above), written explicitly.
ASYNC_RETRY_ATTEMPTS = 2
#: How long an event may wait in Lambda's asynchronous queue: an expiration warning comes forty minutes before the
#: block ends (EC2 User Guide, capacity-blocks-monitor), so an older one is of no use; a choice, not an AWS limit.
MAX_EVENT_AGE = cdk.Duration.hours(1)
#: Messages are kept 14 days, the SQS maximum (SQS API SetQueueAttributes MessageRetentionPeriod: "from 60 seconds
#: (1 minute) to 1,209,600 seconds (14 days)"; UNCONFIRMED: the page was not opened while writing this).
RETENTION = cdk.Duration.days(14)


def failure_queue(scope: Construct, id: str) -> sqs.Queue:
    """An SQS queue with server-side encryption (SQS managed keys) that refuses requests without TLS.

    SSE-SQS rather than a KMS key: Lambda (through the function's role, granted by aws-cdk-lib's SqsDestination) and
    EventBridge (through the queue policy aws-cdk-lib adds for a rule target's dead-letter queue) need no key policy.
    UNCONFIRMED: the EventBridge User Guide page on dead-letter queues was not opened to check what it says about
    encrypted queues; cfn-lint and cdk-nag pass (tests/capacity_events/test_capacity_events_validation.py)."""
    queue = sqs.Queue(
        scope,
        id,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=RETENTION,
    )
    cdk.Validations.of(queue).acknowledge(
        cdk.Acknowledgment(
            id="AwsSolutions-SQS3",
            reason="this queue is itself the dead-letter queue / on-failure destination of the Capacity Block "
            "events handler",
        )
    )
    return queue


def wire_failure_queue(function: lambda_.Function, queue: sqs.IQueue) -> None:
    """Lambda async invocation: two retries, one hour at most, then the event record goes to ``queue``."""
    function.configure_async_invoke(
        on_failure=destinations.SqsDestination(queue),
        retry_attempts=ASYNC_RETRY_ATTEMPTS,
        max_event_age=MAX_EVENT_AGE,
    )


def handler_rule(
    scope: Construct,
    id: str,
    *,
    description: str,
    pattern: Mapping[str, Any],
    function: lambda_.IFunction,
    dead_letter_queue: sqs.IQueue,
) -> events.Rule:
    """A rule on ``pattern`` (``source``, ``detail-type``, optional ``detail``) that invokes ``function``, with two
    retries and ``dead_letter_queue`` for the events EventBridge could not deliver."""
    return events.Rule(
        scope,
        id,
        description=description,
        event_pattern=events.EventPattern(
            source=pattern["source"], detail_type=pattern["detail-type"], detail=pattern.get("detail")
        ),
        targets=[targets.LambdaFunction(function, retry_attempts=2, dead_letter_queue=dead_letter_queue)],
    )
