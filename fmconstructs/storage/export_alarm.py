"""Alarms on FSx for Lustre automatic export to S3 (the ``/checkpoints`` link): a backlog and failures.

A checkpoint written to ``/checkpoints`` is durable only once automatic export has copied it to S3; a slow or failing
export is silent (the write on Lustre succeeded). Two alarms, for file systems with at least one data repository
association whose ``auto_export_events`` are set:

- Backlog: ``AgeOfOldestQueuedMessage`` in ``AWS/FSx`` with the dimensions ``FileSystemId, Publisher`` (CloudWatch User
  Guide "AWS services that publish CloudWatch metrics", enriched-metrics table, AWS::FSx::FileSystem: seen). FSx's API
  reference (``DeleteFileSystem``) tells users of automatic export to wait for that metric to be zero before
  deleting a linked file system (link ``LustreGuide/monitoring-cloudwatch.html#auto-import-export-metrics``), so it is
  the age of the oldest change not yet exported. The metric is per file system, not per association: one alarm.
  UNCONFIRMED (not seen in the FSx for Lustre User Guide text, only in third-party measurements of automatic export):
  the ``Publisher`` value ``AutoExport`` (``AutoImport`` for the other direction) and the unit, seconds.
- Failures: FSx writes no failure metric; it logs export errors to CloudWatch Logs when the file system's
  ``LogConfiguration.Level`` includes errors (FSx for Lustre User Guide "Logging with Amazon CloudWatch Logs":
  automatic export and data repository tasks log error and warning events; "Data repository event logs": the export
  error codes below, log level ERROR; awsdocs/amazon-fsx-lustre-user-guide doc_source/cw-event-logging.md and
  data-repo-event-logs.md). A metric filter on the file system's log group counts events that name one of those
  codes (a term match, so it does not depend on the event's layout, which the guide does not show: UNCONFIRMED), and
  an alarm fires on any. The filter counts every event of the group: give each file system its own group. FSx's
  default group ``/aws/fsx/lustre`` is shared by every file system of the account and Region and exists only once FSx
  has logged something, so without a ``log_group`` the failure alarm is left out (a warning says so).
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, Names
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct

from .._validate import (
    check_bool,
    check_construct,
    check_count,
    check_first_call,
    check_metric_period,
    check_number,
    known,
)
from ..errors import FmValidationError, WarningId, add_warning
from ._checks import check_instance

#: Default backlog threshold: the oldest change waiting for automatic export is an hour old (a choice, not an AWS
#: number: a checkpoint that old is not yet in S3).
DEFAULT_EXPORT_BACKLOG_AGE_SECONDS = 3600.0
#: ``AWS/FSx`` metric and dimension of the export queue (CloudWatch User Guide enriched-metrics table, AWS/FSx).
EXPORT_QUEUE_METRIC = "AgeOfOldestQueuedMessage"
PUBLISHER_DIMENSION = "Publisher"
#: UNCONFIRMED in AWS documentation (third-party measurements name it): the ``Publisher`` of automatic export.
AUTO_EXPORT_PUBLISHER = "AutoExport"
#: Export error codes FSx logs at level ERROR (FSx for Lustre User Guide "Data repository event logs", Export events).
EXPORT_ERROR_CODES = (
    "S3ExportInternalError",
    "S3ExportAccessDenied",
    "S3ExportPathSizeTooLong",
    "S3ExportFileSizeTooLarge",
    "S3ExportResourceBusy",
    "InternalAutoExportError",
)
#: Namespace of the failure count the metric filter writes.
FAILURE_METRIC_NAMESPACE = "fmconstructs/FSx"
#: ``LogConfiguration.Level`` values that log error events (FSx API LustreLogCreateConfiguration.Level).
LEVELS_WITH_ERRORS = frozenset({"ERROR_ONLY", "WARN_ERROR"})


@dataclass(frozen=True)
class ExportAlarms:
    """The alarms :func:`add_export_alarms` created (``failures`` is None without a log group to watch)."""

    backlog: cloudwatch.Alarm
    failures: cloudwatch.Alarm | None


@dataclass(frozen=True)
class ExportAlarmSettings:
    """Checked settings of the export alarms (kept by the file system until an auto-export association exists)."""

    topic: sns.ITopic | None
    backlog_age_seconds: float
    period: Duration
    evaluation_periods: int
    failures: bool
    log_group: logs.ILogGroup | None


def check_export_alarm_settings(
    *,
    topic: sns.ITopic | None,
    backlog_age_seconds: float,
    period: Duration | None,
    evaluation_periods: int,
    failures: bool,
    log_group: logs.ILogGroup | None,
) -> ExportAlarmSettings:
    """The settings, checked (a deploy-time threshold or count is passed through unchecked)."""
    if topic is not None:
        check_construct("topic", topic, attribute="topic_arn", expected="an sns.ITopic")
    age = check_number("export_backlog_age_seconds", backlog_age_seconds, unit="seconds")
    if known(age) and not age > 0:
        raise FmValidationError("export_backlog_age_seconds", backlog_age_seconds, "a number of seconds above 0")
    evaluation_periods = check_count("evaluation_periods", evaluation_periods, minimum=1)
    check_instance("period", period, Duration, "a Duration (Duration.minutes(n))")
    period = period or Duration.minutes(5)
    check_metric_period("period", period, alarm=True)
    failures = check_bool("export_failures", failures)
    if log_group is not None:
        check_construct("log_group", log_group, attribute="log_group_name", expected="a logs.ILogGroup")
    return ExportAlarmSettings(topic, age, period, evaluation_periods, failures, log_group)


def export_backlog_metric(file_system_id: str, period: Duration) -> cloudwatch.Metric:
    """The age of the oldest change waiting for automatic export (Maximum over ``period``)."""
    return cloudwatch.Metric(
        namespace="AWS/FSx",
        metric_name=EXPORT_QUEUE_METRIC,
        dimensions_map={"FileSystemId": file_system_id, PUBLISHER_DIMENSION: AUTO_EXPORT_PUBLISHER},
        statistic="Maximum",
        period=period,
    )


def export_failure_pattern() -> logs.IFilterPattern:
    """Events naming any export error code (CloudWatch Logs filter syntax ``?term ?term``: any of the terms)."""
    return logs.FilterPattern.any_term(*EXPORT_ERROR_CODES)


def add_export_alarms(
    scope: Construct,
    *,
    file_system_id: str,
    settings: ExportAlarmSettings,
    log_level: str | None,
    paths: tuple[str, ...],
) -> ExportAlarms:
    """The backlog alarm, and the failure alarm when ``settings.failures`` and a log group with errors logged."""
    check_first_call(
        scope,
        "ExportBacklogAlarm",
        method="add_export_alarms",
        remedy="keep the alarms it returned, or give each file system its own scope",
    )
    where = ", ".join(p for p in paths if known(p)) or "its auto-export paths"
    backlog = export_backlog_metric(file_system_id, settings.period).create_alarm(
        scope,
        "ExportBacklogAlarm",
        threshold=settings.backlog_age_seconds,
        evaluation_periods=settings.evaluation_periods,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        alarm_description=(
            f"FSx for Lustre automatic export to S3 is behind: the oldest change of {where} not yet exported is at "
            f"least {settings.backlog_age_seconds:g} s old (checkpoints written there are not yet durable in S3)"
        ),
    )
    failures = _failure_alarm(scope, settings, log_level, where) if settings.failures else None
    for alarm in (backlog, failures):
        if alarm is not None and settings.topic is not None:
            alarm.add_alarm_action(cloudwatch_actions.SnsAction(settings.topic))
    return ExportAlarms(backlog, failures)


def _failure_alarm(
    scope: Construct, settings: ExportAlarmSettings, log_level: str | None, where: str
) -> cloudwatch.Alarm | None:
    if settings.log_group is None:
        add_warning(
            scope,
            WarningId.LUSTRE_EXPORT_FAILURES_NOT_WATCHED,
            "no alarm on automatic export failures: FSx logs them only to CloudWatch Logs, and this file system has "
            "no log group of its own (give LustreFileSystem(log_group=...) or add_export_alarms(log_group=...))",
        )
        return None
    if log_level is not None and known(log_level) and log_level not in LEVELS_WITH_ERRORS:
        add_warning(
            scope,
            WarningId.LUSTRE_EXPORT_FAILURES_NOT_WATCHED,
            f"no alarm on automatic export failures: log_level {log_level} does not log errors (use WARN_ERROR or "
            "ERROR_ONLY)",
        )
        return None
    metric_filter = logs.MetricFilter(
        scope,
        "ExportFailureFilter",
        log_group=settings.log_group,
        filter_pattern=export_failure_pattern(),
        metric_namespace=FAILURE_METRIC_NAMESPACE,
        # One metric per file system (a filter cannot add dimensions to a term pattern).
        metric_name=f"ExportFailures-{Names.unique_id(scope)}"[:255],
        metric_value="1",
        default_value=0,
    )
    return metric_filter.metric(statistic="Sum", period=settings.period).create_alarm(
        scope,
        "ExportFailureAlarm",
        threshold=0,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        alarm_description=(
            f"FSx for Lustre failed to export files of {where} to S3 (errors {', '.join(EXPORT_ERROR_CODES)} in its "
            "log group): those files are not in S3; see the log events for the keys and causes"
        ),
    )
