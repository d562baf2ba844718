"""Per-storage-target (OST) fullness alarm for FSx for Lustre.

Lustre returns ENOSPC when the OST a file is striped on is full, even when the file system as a whole has room
(awslabs/awsome-distributed-ai#1225: ENOSPC at ~90% aggregate use because single targets were full), so an aggregate
free-capacity alarm alone fires too late. FSx publishes ``StorageCapacityUtilization`` in ``AWS/FSx`` with the
dimensions ``FileSystemId, StorageTargetId`` (and ``FreeDataStorageCapacity`` with ``FileSystemId`` and with
``FileSystemId, StorageTargetId``): CloudWatch User Guide, "AWS/FSx" enriched-metrics table (AWS::FSx::FileSystem).
The target ids are not known at synthesis, so the alarm is a CloudWatch Metrics Insights query returning one series,
the worst target: CloudWatch User Guide "Create a CloudWatch alarm based on a Metrics Insights query" (aggregate
monitoring: ``SELECT FUNCTION(metricName) FROM SCHEMA(...) WHERE condition``); in CloudFormation the query is the
``Expression`` of an alarm ``Metrics`` entry, as for metric math (re:Post "cloudformation definition for cloudwatch
alarm based on metrics insights query"). Metrics Insights alarms evaluate the most recent three hours of data and are
limited to 200 per Region (CloudWatch User Guide "Metrics Insights quotas").

UNCONFIRMED: the unit of ``StorageCapacityUtilization`` for Lustre targets is taken to be percent (0-100) from the
metric's name and the FSx "...Utilization" metrics documented in percent (FSx for ONTAP User Guide "File system
metrics"); the FSx for Lustre User Guide row for it was not seen.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_sns as sns
from constructs import Construct

from .._validate import check_construct, check_count, check_first_call, check_metric_period, check_number, known
from ..errors import FmValidationError
from ._checks import check_instance

#: Default alarm threshold: the fullest storage target at or above this share of its capacity (percent).
DEFAULT_STORAGE_TARGET_USED_PERCENT = 85.0
#: ``AWS/FSx`` metric and dimensions (CloudWatch User Guide, "AWS/FSx" enriched-metrics table).
STORAGE_TARGET_METRIC = "StorageCapacityUtilization"
STORAGE_TARGET_DIMENSION = "StorageTargetId"


def storage_target_query(file_system_id: str) -> str:
    """The Metrics Insights query for the fullest storage target of ``file_system_id`` (one series, so an alarm can
    watch it; a deploy-time id becomes an ``Fn::Join`` in the template)."""
    return (
        f'SELECT MAX({STORAGE_TARGET_METRIC}) FROM SCHEMA("AWS/FSx", FileSystemId, {STORAGE_TARGET_DIMENSION}) '
        f"WHERE FileSystemId = '{file_system_id}'"
    )


def check_used_percent(parameter: str, value: object) -> float:
    checked = check_number(parameter, value)
    if not known(checked) or not 0 < checked < 100:
        raise FmValidationError(parameter, value, "a percentage between 0 and 100 (exclusive) known at synthesis")
    return float(checked)


def add_storage_target_alarm(
    scope: Construct,
    *,
    file_system_id: str,
    topic: sns.ITopic | None = None,
    used_percent: float = DEFAULT_STORAGE_TARGET_USED_PERCENT,
    period: Duration | None = None,
    evaluation_periods: int = 3,
) -> cloudwatch.Alarm:
    """A CloudWatch alarm when the fullest storage target (OST) of the file system is at or above ``used_percent``.

    :param period: default 5 minutes.
    """
    check_first_call(
        scope,
        "StorageTargetFullAlarm",
        method="add_storage_target_alarm",
        remedy="keep the alarm it returned, or give each file system its own scope",
    )
    used_percent = check_used_percent("storage_target_used_percent", used_percent)
    if topic is not None:
        check_construct("topic", topic, attribute="topic_arn", expected="an sns.ITopic")
    evaluation_periods = check_count("evaluation_periods", evaluation_periods, minimum=1)
    check_instance("period", period, Duration, "a Duration (Duration.minutes(n))")
    period = period or Duration.minutes(5)
    seconds = check_metric_period("period", period, alarm=True)
    # Metrics Insights does not support high-resolution data (CloudWatch User Guide "Metrics Insights quotas").
    if known(seconds) and seconds % 60:
        raise FmValidationError("period", period, "a multiple of 60 seconds (Metrics Insights has no sub-minute data)")
    fullest = cloudwatch.MathExpression(
        expression=storage_target_query(file_system_id),
        label="Fullest storage target (percent used)",
        period=period,
    )
    alarm = fullest.create_alarm(
        scope,
        "StorageTargetFullAlarm",
        threshold=used_percent,
        evaluation_periods=evaluation_periods,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        alarm_description=(
            f"An FSx for Lustre storage target (OST) is at least {used_percent:g}% full: writes striped on it fail "
            "with ENOSPC even when the file system has free space (rebalance with lfs_migrate or grow the file system)"
        ),
    )
    if topic is not None:
        alarm.add_alarm_action(cloudwatch_actions.SnsAction(topic))
    return alarm
