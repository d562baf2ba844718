"""The small runtime remediation handlers share: structured logs, idempotence, a rate limit, dry run, notification.

Standard library + boto3 only (it runs in Lambda, next to the handler that imports it). Written so that other handlers
(e.g. :mod:`fmconstructs.capacity_events`) can adopt it: nothing here knows about nodes or backends.

State lives in one DynamoDB table with a string partition key ``pk`` and a TTL attribute ``expires_at``:

- ``rate#<scope>#<window>``: a counter per scope (a cluster) per clock-hour window. :meth:`Ledger.take` adds 1 with
  the condition ``attribute_not_exists(used) OR used < :limit``; DynamoDB evaluates a condition and writes atomically
  (DynamoDB Developer Guide, "Condition expressions": "the write succeeds only if the condition is met"; UpdateItem
  ConditionExpression, failure ``ConditionalCheckFailedException``), so concurrent invocations never exceed the limit.
- ``once#<key>``: who handles ``key`` (an instance and a trigger), with ``state`` ``leased`` or ``done``, ``owner`` (a
  random id per lease) and ``until`` (epoch seconds). :meth:`Ledger.lease` writes it with the condition
  ``attribute_not_exists(pk) OR #until < :now``: the first writer wins, and a lease whose holder died (a Lambda
  timeout mid-action) expires at ``until``, so a retry takes it over and acts again. The handler writes the lease
  *before* it acts, :meth:`Ledger.complete` (``done`` for :data:`DONE_S`) only *after* the action succeeded, and
  :meth:`Ledger.release` (conditional on its own ``owner``) when the action failed or was deferred: acts, then
  records. A lease lasts the invocation's remaining time plus :data:`LEASE_MARGIN_S`; Lambda retries a failed
  asynchronous invocation after one minute, then two (Lambda Developer Guide, "How Lambda handles errors and retries
  with asynchronous invocation": "a one-minute wait between the first two attempts, and two minutes between the
  second and third attempts"; timeouts are function errors), so the lease of a timed-out invocation has expired when
  its retry arrives. A condition that fails returns the item (``ReturnValuesOnConditionCheckFailure`` ``ALL_OLD``,
  DynamoDB API reference PutItem; botocore ConditionalCheckFailedException ``Item``), which tells a duplicate
  (``done``) from a fault another invocation is handling now (``leased``).

TTL removes items a day after their ``until`` (DynamoDB TTL deletes expired items in the background, typically within
a few days: the handler compares ``until`` itself, so late deletion does not matter).

Time: :class:`Deadline` is the invocation's budget (Lambda's ``context.get_remaining_time_in_millis()`` minus
:data:`NOTICE_RESERVE_S` kept for the last notice); every wait and every Kubernetes call stops at it.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from botocore.exceptions import ClientError

#: Error codes for "not allowed" (IAM: AccessDenied / AccessDeniedException; EC2: UnauthorizedOperation).
ACCESS_DENIED_CODES = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"})
#: Throttling error codes (botocore retries/standard.py ThrottledRetryableChecker._THROTTLED_ERROR_CODES, a subset).
THROTTLING_CODES = frozenset(
    {"Throttling", "ThrottlingException", "TooManyRequestsException", "RequestLimitExceeded", "ThrottledException"}
)
WINDOW_S = 3600
TTL_GRACE_S = 86400
#: How long a handled (instance, trigger) stays handled: a redelivery within the hour is a duplicate.
DONE_S = 3600
#: A lease outlives the invocation that took it by this much (see the module docstring).
LEASE_MARGIN_S = 30.0
#: Kept back from the invocation's remaining time for the last notice (sns:Publish) and the final log line.
NOTICE_RESERVE_S = 10.0
#: Without a Lambda context (tests, a local harness): the budget of one call of ``process``.
DEFAULT_BUDGET_S = 100.0
#: SNS message attribute on every notice: the alert topic subscription filters it out (no loop through the topic).
NOTICE_ATTRIBUTE = "fmconstructs_notice"
# SNS Publish Subject: "Constraints: Subjects must be ASCII text ... and must be less than 100 characters long"
# (SNS API reference, Publish).
_SUBJECT_MAX = 99
# SNS messages are at most 256 KiB (SNS API reference, Publish Message); notices stay far below.
_MESSAGE_MAX = 200_000
_CONDITION_FAILED = "ConditionalCheckFailedException"


class OutOfTime(Exception):
    """The invocation's :class:`Deadline` came before the step finished: nothing is recorded, a redelivery retries."""


def log(event: str, **fields: Any) -> None:
    """One JSON line on stdout (CloudWatch Logs keeps each line as one event; Logs Insights parses JSON fields)."""
    print(json.dumps({"event": event, **fields}, default=str, sort_keys=True), file=sys.stdout, flush=True)


def error_code(error: BaseException) -> str:
    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code", ""))
    return ""


def outcome_of(error: BaseException) -> str:
    """``not-finished`` (:class:`OutOfTime`), ``access-denied``, ``throttled`` or ``failed``: what a notice says
    about an action that raised ``error``."""
    if isinstance(error, OutOfTime):
        return "not-finished"
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


class Deadline:
    """The invocation's time budget: ``remaining_s()`` (seconds left in the invocation; in Lambda
    ``context.get_remaining_time_in_millis() / 1000``, Lambda Developer Guide "Using the Lambda context object to
    retrieve Python function information": "Returns the number of milliseconds left before the execution times out")
    minus ``reserve_s``. Without ``remaining_s``: :data:`DEFAULT_BUDGET_S` from now (``monotonic``)."""

    def __init__(
        self,
        remaining_s: Callable[[], float] | None = None,
        *,
        reserve_s: float = NOTICE_RESERVE_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        end = monotonic() + DEFAULT_BUDGET_S + reserve_s

        def default_remaining() -> float:
            return end - monotonic()

        self.remaining_s: Callable[[], float] = remaining_s or default_remaining
        self.reserve_s = reserve_s

    def remaining(self) -> float:
        """Seconds left in the invocation (the reserve included)."""
        return max(0.0, float(self.remaining_s()))

    def left(self) -> float:
        """Seconds left for work (the reserve excluded)."""
        return max(0.0, self.remaining() - self.reserve_s)

    def expired(self) -> bool:
        return self.left() <= 0.0


@dataclass
class Lease:
    """The answer of :meth:`Ledger.lease`: ``owner`` when taken, else the ``state`` of whoever holds it."""

    key: str
    owner: str = ""
    state: str = ""

    @property
    def taken(self) -> bool:
        return bool(self.owner)


@dataclass
class Ledger:
    """Leases, completion records and rate-limit tokens in a DynamoDB table (see the module docstring)."""

    dynamodb: Any
    table: str
    clock: Callable[[], float] = time.time
    window_s: int = WINDOW_S

    def _expiry(self, window: int) -> int:
        return window + self.window_s + TTL_GRACE_S

    def _item(self, key: str, state: str, owner: str, until: float) -> dict[str, Any]:
        return {
            "pk": {"S": f"once#{key}"},
            "state": {"S": state},
            "owner": {"S": owner},
            "until": {"N": str(int(until))},
            "expires_at": {"N": str(int(until) + TTL_GRACE_S)},
        }

    def lease(self, key: str, seconds: float) -> Lease:
        """Take ``key`` for ``seconds`` unless it is done or leased by someone else (their lease not yet expired)."""
        now = self.clock()
        owner = uuid.uuid4().hex
        try:
            self.dynamodb.put_item(
                TableName=self.table,
                Item=self._item(key, "leased", owner, now + seconds),
                ConditionExpression="attribute_not_exists(pk) OR #until < :now",
                ExpressionAttributeNames={"#until": "until"},
                ExpressionAttributeValues={":now": {"N": str(int(now))}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error_code(error) != _CONDITION_FAILED:
                raise
            held = cast(dict[str, Any], error.response.get("Item") or {})
            return Lease(key, state=str((held.get("state") or {}).get("S") or "leased"))
        return Lease(key, owner=owner)

    def complete(self, lease: Lease, seconds: float = DONE_S) -> None:
        """Record ``lease.key`` as done for ``seconds`` (after the action succeeded)."""
        self.dynamodb.put_item(
            TableName=self.table, Item=self._item(lease.key, "done", lease.owner, self.clock() + seconds)
        )

    def release(self, lease: Lease) -> None:
        """Forget ``lease`` (the action failed or was deferred: a redelivery acts again); only while it is still
        ours (a lease taken over, or a completion written by another invocation, stays)."""
        try:
            self.dynamodb.delete_item(
                TableName=self.table,
                Key={"pk": {"S": f"once#{lease.key}"}},
                ConditionExpression="#owner = :owner AND #state = :leased",
                ExpressionAttributeNames={"#owner": "owner", "#state": "state"},
                ExpressionAttributeValues={":owner": {"S": lease.owner}, ":leased": {"S": "leased"}},
            )
        except ClientError as error:
            if error_code(error) != _CONDITION_FAILED:
                raise

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
            if error_code(error) == _CONDITION_FAILED:
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
            if error_code(error) != _CONDITION_FAILED:
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
