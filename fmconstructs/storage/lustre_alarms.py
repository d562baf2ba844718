"""The alarms of a Lustre file system: throughput and capacity saturation, the fullest storage target, export to S3."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct

from .._validate import (
    check_construct,
    check_count,
    check_first_call,
    check_metric_period,
    check_number,
    known,
)
from ..errors import FmValidationError
from ._checks import check_instance
from .data_repository import (
    DataRepositoryAssociation,
)
from .export_alarm import (
    DEFAULT_EXPORT_BACKLOG_AGE_SECONDS,
    ExportAlarms,
    ExportAlarmSettings,
    add_export_alarms,
    check_export_alarm_settings,
)
from .sizing import (
    LustreDeploymentType,
    LustreSizing,
)
from .target_alarm import DEFAULT_STORAGE_TARGET_USED_PERCENT, add_storage_target_alarm, check_used_percent

if TYPE_CHECKING:
    _Construct = Construct  # mypy sees the mixin as a construct; at run time it is a plain class
else:
    _Construct = object


class _LustreAlarms(_Construct):
    """The alarm side of :class:`~fmconstructs.storage.lustre.LustreFileSystemBase` (a mixin)."""

    file_system_id: str
    deployment_type: LustreDeploymentType | None
    storage_capacity_gib: int | None
    log_group: logs.ILogGroup | None
    log_level: str | None
    export_alarms: ExportAlarms | None
    _export_alarm_settings: ExportAlarmSettings | None
    _data_repositories: list[DataRepositoryAssociation]

    if TYPE_CHECKING:

        @property
        def sizing(self) -> LustreSizing | None:
            raise NotImplementedError

    def add_saturation_alarms(
        self,
        *,
        topic: sns.ITopic | None = None,
        throughput_ratio: float = 0.9,
        free_capacity_ratio: float = 0.1,
        period: Duration | None = None,
        evaluation_periods: int = 3,
        storage_target_used_percent: float | None = DEFAULT_STORAGE_TARGET_USED_PERCENT,
    ) -> tuple[cloudwatch.Alarm, cloudwatch.Alarm]:
        """CloudWatch alarms for throughput and capacity saturation (FSx publishes these to CloudWatch only).

        Throughput: ``(DataReadBytes + DataWriteBytes) / period`` against the file system's aggregate baseline
        throughput (FSx for Lustre User Guide "Monitoring with Amazon CloudWatch": both metrics are Sums per period,
        in bytes; FSx's MB/s are 10^6 bytes per second). Capacity: the file system's free bytes
        (``FreeDataStorageCapacity`` Sum per minute: every storage target together) below ``free_capacity_ratio`` of
        the storage capacity. Alarms go to ``topic`` when given.

        Storage target: unless ``storage_target_used_percent`` is None, a third alarm on the fullest storage target
        (OST), which fills before the aggregate (:func:`fmconstructs.storage.target_alarm.add_storage_target_alarm`);
        it is kept as :attr:`storage_target_alarm`.

        :param period: default 5 minutes.
        """
        sizing = self.sizing
        if sizing is None:
            raise FmValidationError(
                "storage_capacity_gib/deployment_type",
                (self.storage_capacity_gib, self.deployment_type),
                "known (pass them to from_lustre_file_system_attributes) to size saturation alarms",
            )
        check_first_call(
            self, "ThroughputSaturationAlarm", method="add_saturation_alarms", remedy="keep the alarms it returned"
        )
        _check_saturation_inputs(topic, throughput_ratio, free_capacity_ratio, storage_target_used_percent)
        evaluation_periods = check_count("evaluation_periods", evaluation_periods, minimum=1)
        check_instance("period", period, Duration, "a Duration (Duration.minutes(n))")
        period = period or Duration.minutes(5)
        seconds = check_metric_period("period", period, alarm=True)  # CloudWatch PutMetricAlarm Period values
        throughput_alarm = self._throughput_saturation_alarm(
            sizing, throughput_ratio, period, seconds, evaluation_periods
        )
        capacity_alarm = self._free_capacity_alarm(sizing, free_capacity_ratio, period, seconds, evaluation_periods)
        if topic is not None:
            for alarm in (throughput_alarm, capacity_alarm):
                alarm.add_alarm_action(cloudwatch_actions.SnsAction(topic))
        if storage_target_used_percent is not None:
            self.storage_target_alarm: cloudwatch.Alarm | None = add_storage_target_alarm(
                self,
                file_system_id=self.file_system_id,
                topic=topic,
                used_percent=storage_target_used_percent,
                period=period,
                evaluation_periods=evaluation_periods,
            )
        return throughput_alarm, capacity_alarm

    def _fsx_metric(self, name: str, statistic: str, period: Duration) -> cloudwatch.Metric:
        return cloudwatch.Metric(
            namespace="AWS/FSx",
            metric_name=name,
            dimensions_map={"FileSystemId": self.file_system_id},
            statistic=statistic,
            period=period,
        )

    def _throughput_saturation_alarm(
        self, sizing: LustreSizing, throughput_ratio: float, period: Duration, seconds: float, evaluation_periods: int
    ) -> cloudwatch.Alarm:
        # Baseline = storage in TiB (GiB / 1024) x per-unit throughput (MB/s/TiB): sizing.aggregate_throughput_mbps,
        # the one implementation (4,800 GiB at 1,000 MB/s/TiB = 4,687.5 MB/s).
        baseline_mbps = sizing.aggregate_throughput_mbps
        baseline_bytes_per_second = baseline_mbps * 1_000_000
        utilisation = cloudwatch.MathExpression(
            expression=f"(r + w) / {seconds} / {baseline_bytes_per_second:.0f}",
            using_metrics={
                "r": self._fsx_metric("DataReadBytes", "Sum", period),
                "w": self._fsx_metric("DataWriteBytes", "Sum", period),
            },
            label="Throughput / aggregate baseline throughput",
            period=period,
        )
        throughput_alarm = utilisation.create_alarm(
            self,
            "ThroughputSaturationAlarm",
            threshold=throughput_ratio,
            evaluation_periods=evaluation_periods,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=(
                f"FSx for Lustre throughput at or above {throughput_ratio:.0%} of its "
                f"{baseline_mbps:,.1f} MB/s baseline: jobs are I/O bound"
            ),
        )
        return throughput_alarm

    def _free_capacity_alarm(
        self,
        sizing: LustreSizing,
        free_capacity_ratio: float,
        period: Duration,
        seconds: float,
        evaluation_periods: int,
    ) -> cloudwatch.Alarm:
        capacity_bytes = sizing.storage_capacity_gib * 1024**3
        # FreeDataStorageCapacity is one data point per storage target (disk) per minute; its Sum is the bytes free in
        # the whole file system and its Minimum only those of the fullest target (FSx for Lustre User Guide
        # "Monitoring with Amazon CloudWatch", awsdocs/amazon-fsx-lustre-user-guide doc_source/monitoring-cloudwatch.md;
        # the current "Amazon FSx for Lustre metrics and dimensions" page says the same of Minimum for the I/O
        # metrics: "on a single OST"). Against a share of the whole capacity the aggregate is the Sum of ONE minute:
        # the Sum over the period divided by its minutes (a shorter period holds at most one point per target). The
        # fullest target has its own alarm (storage_target_used_percent).
        minutes = max(seconds / 60, 1) if known(seconds) else 1
        free_bytes = cloudwatch.MathExpression(
            expression=f"free / {minutes:g}",
            using_metrics={"free": self._fsx_metric("FreeDataStorageCapacity", "Sum", period)},
            label="Free bytes in the file system",
            period=period,
        )
        capacity_alarm = free_bytes.create_alarm(
            self,
            "FreeCapacityAlarm",
            threshold=capacity_bytes * free_capacity_ratio,
            evaluation_periods=evaluation_periods,
            comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=f"FSx for Lustre has less than {free_capacity_ratio:.0%} free: checkpoints will fail",
        )
        return capacity_alarm

    def add_export_alarms(
        self,
        *,
        topic: sns.ITopic | None = None,
        export_backlog_age_seconds: float = DEFAULT_EXPORT_BACKLOG_AGE_SECONDS,
        period: Duration | None = None,
        evaluation_periods: int = 3,
        export_failures: bool = True,
        log_group: logs.ILogGroup | None = None,
    ) -> ExportAlarms | None:
        """CloudWatch alarms on automatic export to S3 (:mod:`fmconstructs.storage.export_alarm`): the oldest change
        not yet exported older than ``export_backlog_age_seconds``, and any export error in the file system's log
        group (``log_group``, default the one given to the file system; none: no failure alarm, with a warning).

        Only for a file system with a data repository association whose ``auto_export_events`` are set (the default
        ``/checkpoints`` link): created now if one exists, else when the first one is added. Returns the alarms, or
        None until then (see :attr:`export_alarms`). Alarms go to ``topic`` when given. ``period`` default 5 minutes.
        """
        if self._export_alarm_settings is not None:
            # Not a child check: the alarms may wait for the first exporting data repository (see above).
            raise FmValidationError(
                "add_export_alarms",
                f"a second call on {self.node.path}",
                "called once per file system (keep the first call's alarms: export_alarms)",
            )
        self._export_alarm_settings = check_export_alarm_settings(
            topic=topic,
            backlog_age_seconds=export_backlog_age_seconds,
            period=period,
            evaluation_periods=evaluation_periods,
            failures=export_failures,
            log_group=log_group if log_group is not None else self.log_group,
        )
        self._create_export_alarms()
        return self.export_alarms

    def _create_export_alarms(self) -> None:
        settings = self._export_alarm_settings
        exporting = [a for a in self._data_repositories if a.exports_to_s3]
        if settings is None or self.export_alarms is not None or not exporting:
            return
        self.export_alarms = add_export_alarms(
            self,
            file_system_id=self.file_system_id,
            settings=settings,
            log_level=self.log_level,
            paths=tuple(a.file_system_path for a in exporting),
        )


def _check_saturation_inputs(
    topic: object, throughput_ratio: object, free_capacity_ratio: object, storage_target_used_percent: object
) -> None:
    if topic is not None:
        check_construct("topic", topic, attribute="topic_arn", expected="an sns.ITopic")
    for name, ratio in (("throughput_ratio", throughput_ratio), ("free_capacity_ratio", free_capacity_ratio)):
        checked = check_number(name, ratio)
        if not known(checked) or not 0 < checked < 1:
            raise FmValidationError(name, ratio, "a ratio between 0 and 1 (exclusive) known at synthesis")
    if storage_target_used_percent is not None:
        check_used_percent("storage_target_used_percent", storage_target_used_percent)
