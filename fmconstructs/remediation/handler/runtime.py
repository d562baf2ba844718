"""The small runtime remediation handlers share: structured logs, idempotence, a rate limit, dry run, notification.

Standard library + boto3 only (it runs in Lambda, next to the handler that imports it). Written so that other handlers
(e.g. :mod:`fmconstructs.capacity_events`) can adopt it: nothing here knows about nodes or backends.

State lives in one DynamoDB table with a string partition key ``pk`` and a TTL attribute ``expires_at``:

- ``rate#<scope>#<window>``: a counter per scope (a cluster) per clock-hour window. :meth:`Ledger.take` adds 1 with
  the condition ``attribute_not_exists(used) OR used < :limit``; DynamoDB evaluates a condition and writes atomically
  (DynamoDB Developer Guide, "Condition expressions": "the write succeeds only if the condition is met"; UpdateItem
  ConditionExpression, failure ``ConditionalCheckFailedException``), so concurrent invocations never exceed the limit.
- ``once#<key>#<window>``: an idempotency claim, written with ``attribute_not_exists(pk)``: the first writer wins and a
  duplicate delivery within the window is skipped.

TTL removes items a day after their window (DynamoDB TTL deletes expired items in the background, typically within a
few days: the handler never reads an item of a past window, so late deletion does not matter).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

#: Error codes for "not allowed" (IAM: AccessDenied / AccessDeniedException; EC2: UnauthorizedOperation).
ACCESS_DENIED_CODES = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"})
#: Throttling error codes (botocore retries/standard.py ThrottledRetryableChecker._THROTTLED_ERROR_CODES, a subset).
THROTTLING_CODES = frozenset(
    {"Throttling", "ThrottlingException", "TooManyRequestsException", "RequestLimitExceeded", "ThrottledException"}
)
WINDOW_S = 3600
TTL_GRACE_S = 86400
#: SNS message attribute on every notice: the alert topic subscription filters it out (no loop through the topic).
NOTICE_ATTRIBUTE = "fmconstructs_notice"
# SNS Publish Subject: "Constraints: Subjects must be ASCII text ... and must be less than 100 characters long"
# (SNS API reference, Publish).
_SUBJECT_MAX = 99
# SNS messages are at most 256 KiB (SNS API reference, Publish Message); notices stay far below.
_MESSAGE_MAX = 200_000


def log(event: str, **fields: Any) -> None:
    """One JSON line on stdout (CloudWatch Logs keeps each line as one event; Logs Insights parses JSON fields)."""
    print(json.dumps({"event": event, **fields}, default=str, sort_keys=True), file=sys.stdout, flush=True)


def error_code(error: BaseException) -> str:
    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code", ""))
    return ""


def outcome_of(error: BaseException) -> str:
    """``access-denied``, ``throttled`` or ``failed``: what a notice says about an action that raised ``error``."""
    code = error_code(error)
    if code in ACCESS_DENIED_CODES:
        return "access-denied"
    if code in THROTTLING_CODES:
        return "throttled"
    return "failed"


def window_of(now_s: float, window_s: int = WINDOW_S) -> int:
    """The start (epoch seconds) of the window that contains ``now_s``."""
    return int(now_s) // window_s * window_s


def window_label(start_s: int) -> str:
    return dt.datetime.fromtimestamp(start_s, dt.UTC).strftime("%Y-%m-%dT%H:%MZ")


@dataclass
class Ledger:
    """Idempotency claims and rate-limit tokens in a DynamoDB table (see the module docstring)."""

    dynamodb: Any
    table: str
    clock: Callable[[], float] = time.time
    window_s: int = WINDOW_S

    def _expiry(self, window: int) -> int:
        return window + self.window_s + TTL_GRACE_S

    def claim(self, key: str) -> bool:
        """True for the first claim of ``key`` in the current window, False for a duplicate."""
        window = window_of(self.clock(), self.window_s)
        try:
            self.dynamodb.put_item(
                TableName=self.table,
                Item={"pk": {"S": f"once#{key}#{window}"}, "expires_at": {"N": str(self._expiry(window))}},
                ConditionExpression="attribute_not_exists(pk)",
            )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def release(self, key: str) -> None:
        """Forget the claim of ``key`` (an action that failed may be retried by a redelivery)."""
        window = window_of(self.clock(), self.window_s)
        self.dynamodb.delete_item(TableName=self.table, Key={"pk": {"S": f"once#{key}#{window}"}})

    def take(self, scope: str, limit: int) -> bool:
        """Take one of ``limit`` tokens of ``scope`` in the current window; False when none is left."""
        if limit <= 0:
            return False
        window = window_of(self.clock(), self.window_s)
        try:
            self.dynamodb.update_item(
                TableName=self.table,
                Key={"pk": {"S": f"rate#{scope}#{window}"}},
                UpdateExpression="ADD used :one SET expires_at = :expires",
                ConditionExpression="attribute_not_exists(used) OR used < :limit",
                ExpressionAttributeValues={
                    ":one": {"N": "1"},
                    ":limit": {"N": str(limit)},
                    ":expires": {"N": str(self._expiry(window))},
                },
            )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def give_back(self, scope: str) -> None:
        """Return a token taken by :meth:`take` (the action it paid for did not happen)."""
        window = window_of(self.clock(), self.window_s)
        try:
            self.dynamodb.update_item(
                TableName=self.table,
                Key={"pk": {"S": f"rate#{scope}#{window}"}},
                UpdateExpression="ADD used :minus",
                ConditionExpression="used > :zero",
                ExpressionAttributeValues={":minus": {"N": "-1"}, ":zero": {"N": "0"}},
            )
        except ClientError as error:
            if error_code(error) != "ConditionalCheckFailedException":
                raise


@dataclass
class Notifier:
    """Publishes notices to the alert topic, marked with :data:`NOTICE_ATTRIBUTE` so that a subscription of the same
    topic can filter them out; a failed publish is logged, never raised (the action already happened)."""

    sns: Any
    topic_arn: str
    source: str
    sent: list[dict[str, str]] = field(default_factory=list)

    def notify(self, subject: str, lines: list[str], *, attributes: Mapping[str, str] | None = None) -> None:
        message = "\n".join(lines)[:_MESSAGE_MAX]
        subject = subject.encode("ascii", "replace").decode()[:_SUBJECT_MAX]
        message_attributes = {NOTICE_ATTRIBUTE: {"DataType": "String", "StringValue": self.source}}
        for key, value in (attributes or {}).items():
            message_attributes[key] = {"DataType": "String", "StringValue": value}
        try:
            self.sns.publish(
                TopicArn=self.topic_arn, Subject=subject, Message=message, MessageAttributes=message_attributes
            )
        except Exception as error:  # a notice must not undo or hide the action it reports
            log("notify-failed", subject=subject, error=str(error), outcome=outcome_of(error))
            return
        self.sent.append({"subject": subject, "message": message})
        log("notified", subject=subject)
