"""The FSx capacity alarms evaluated on simulated CloudWatch data, as CloudWatch would (the CloudWatch counterpart of a
promtool test: FSx metrics exist only in CloudWatch, so the per-target alert cannot be a Prometheus rule).

The evaluator reads each alarm from the synthesized template (query, statistic, period, threshold, comparison,
evaluation periods, missing-data treatment) and applies it to per-minute data points shaped as FSx publishes them:
one ``FreeDataStorageCapacity`` point per storage target per minute under ``FileSystemId`` (FSx for Lustre User
Guide "Monitoring with Amazon CloudWatch": "a data point per disk per minute"), and per target under
``FileSystemId, StorageTargetId`` with ``StorageCapacityUtilization`` (percent used; CloudWatch User Guide, AWS/FSx
enriched metrics). Metrics Insights semantics modelled (CloudWatch User Guide "Metrics Insights query components and
syntax"): ``SCHEMA(namespace, dims...)`` selects metrics whose dimension keys are exactly ``dims``; the function is
applied to every data point of the selected metrics in each period.

Scenario of awsome-distributed-ai#1225: one storage target full while the file system as a whole has room.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest

from fmconstructs import LustreFileSystem

FS_ID = "fs-0123456789abcdef0"
TARGETS = 10
CAPACITY_GIB = 4800  # 480 GiB per target
TARGET_BYTES = CAPACITY_GIB * 1024**3 / TARGETS
MINUTES = 30
_QUERY = re.compile(
    r"^SELECT (?P<function>MAX|MIN|AVG|SUM) *\((?P<metric>\w+)\) FROM SCHEMA\(\"(?P<namespace>[^\"]+)\", "
    r"(?P<dims>[\w, ]+)\) WHERE FileSystemId = '(?P<fs>[^']+)'$"
)
_FUNCTIONS = {"MAX": max, "MIN": min, "SUM": sum, "AVG": lambda v: sum(v) / len(v)}
_STATS = {"Maximum": max, "Minimum": min, "Sum": sum, "Average": lambda v: sum(v) / len(v)}


@dataclass(frozen=True)
class Point:
    namespace: str
    metric: str
    dims: tuple[tuple[str, str], ...]
    minute: int
    value: float


def fsx_points(used_percent_per_target: list[float], minutes: int = MINUTES) -> list[Point]:
    """Per-minute data points as FSx publishes them for targets filled to the given percentages."""
    points = []
    for minute in range(minutes):
        for index, used in enumerate(used_percent_per_target):
            target = (("FileSystemId", FS_ID), ("StorageTargetId", f"OST{index:04X}"))
            free = TARGET_BYTES * (1 - used / 100)
            points.append(Point("AWS/FSx", "FreeDataStorageCapacity", (("FileSystemId", FS_ID),), minute, free))
            points.append(Point("AWS/FSx", "FreeDataStorageCapacity", target, minute, free))
            points.append(Point("AWS/FSx", "StorageCapacityUtilization", target, minute, used))
    return points


def _windows(points: list[Point], period_minutes: int, select: Any) -> list[list[float]]:
    """The values selected in each period, oldest first (an empty list: no data in that period)."""
    count = MINUTES // period_minutes
    return [
        [p.value for p in points if select(p) and k * period_minutes <= p.minute < (k + 1) * period_minutes]
        for k in range(count)
    ]


def _series(alarm: dict[str, Any], points: list[Point]) -> list[float | None]:
    """The alarm's value per period (None: missing)."""
    if "MetricName" in alarm:  # a single-statistic alarm
        dims = tuple(sorted((d["Name"], d["Value"]) for d in alarm["Dimensions"]))
        stat, minutes = _STATS[alarm["Statistic"]], alarm["Period"] // 60

        def select(p: Point) -> bool:
            return p.metric == alarm["MetricName"] and tuple(sorted(p.dims)) == dims

        return [stat(w) if w else None for w in _windows(points, minutes, select)]
    (expression,) = [m for m in alarm["Metrics"] if "Expression" in m]
    text = expression["Expression"]
    query = _QUERY.match(text)
    if query:
        minutes = expression["Period"] // 60
        keys = tuple(sorted(k.strip() for k in query["dims"].split(",")))

        def select_query(p: Point) -> bool:
            return (
                p.namespace == query["namespace"]
                and p.metric == query["metric"]
                and tuple(sorted(k for k, _ in p.dims)) == keys
                and dict(p.dims)["FileSystemId"] == query["fs"]
            )

        function = _FUNCTIONS[query["function"]]
        return [function(w) if w else None for w in _windows(points, minutes, select_query)]
    # Metric math "<id> / <number>" over one MetricStat.
    (stat,) = [m for m in alarm["Metrics"] if "MetricStat" in m]
    name, divisor = re.fullmatch(r"(\w+) / ([0-9.]+)", text).groups()  # type: ignore[union-attr]
    assert stat["Id"] == name
    metric = stat["MetricStat"]["Metric"]
    dims = tuple(sorted((d["Name"], d["Value"]) for d in metric["Dimensions"]))
    stat_function, minutes = _STATS[stat["MetricStat"]["Stat"]], stat["MetricStat"]["Period"] // 60

    def select_stat(p: Point) -> bool:
        return p.metric == metric["MetricName"] and tuple(sorted(p.dims)) == dims

    return [stat_function(w) / float(divisor) if w else None for w in _windows(points, minutes, select_stat)]


def alarm_state(alarm: dict[str, Any], points: list[Point]) -> str:
    """ALARM when the last ``EvaluationPeriods`` values all breach (missing data: per ``TreatMissingData``)."""
    compare = {
        "GreaterThanOrEqualToThreshold": lambda v, t: v >= t,
        "GreaterThanThreshold": lambda v, t: v > t,
        "LessThanThreshold": lambda v, t: v < t,
    }[alarm["ComparisonOperator"]]
    assert alarm["TreatMissingData"] == "notBreaching"
    recent = _series(alarm, points)[-alarm["EvaluationPeriods"] :]
    breaching = [v is not None and compare(v, alarm["Threshold"]) for v in recent]
    return "ALARM" if all(breaching) else "OK"


@pytest.fixture
def alarms(scene) -> dict[str, dict[str, Any]]:
    from aws_cdk import aws_ec2 as ec2

    from fmconstructs import LustreDeploymentType

    group = ec2.SecurityGroup.from_security_group_id(scene.stack, "G", "sg-0123456789abcdef0")
    fs = LustreFileSystem.from_lustre_file_system_attributes(
        scene.stack,
        "Imported",
        file_system_id=FS_ID,
        dns_name=f"{FS_ID}.fsx.us-east-1.amazonaws.com",
        mount_name="mnt",
        security_group=group,
        storage_capacity_gib=CAPACITY_GIB,
        deployment_type=LustreDeploymentType.PERSISTENT_2,
        throughput_mbps_per_tib=1000,
    )
    fs.add_saturation_alarms()  # defaults: 10 % free, fullest target 85 %, 3 x 5 minutes
    found = scene.template().find_resources("AWS::CloudWatch::Alarm")
    by_kind = {}
    for resource in found.values():
        props = resource["Properties"]
        description = props["AlarmDescription"]
        kind = "target" if "storage target" in description else "free" if "free" in description else "throughput"
        by_kind[kind] = props
    assert set(by_kind) == {"target", "free", "throughput"}
    return by_kind


@pytest.mark.parametrize(
    ("used", "target", "free"),
    [
        # awsome-distributed-ai#1225: one target full at 63.5 % aggregate use -> only the per-target alarm
        ([95.0] + [60.0] * 9, "ALARM", "OK"),
        # evenly 80 % full: neither (the old Minimum statistic fired here: the fullest target's 96 GiB free is below
        # 10 % of the whole 4,800 GiB)
        ([80.0] * 10, "OK", "OK"),
        # evenly 92 % full: both (8 % free)
        ([92.0] * 10, "ALARM", "ALARM"),
        # the threshold itself: at or above 85 % fires
        ([85.0] + [10.0] * 9, "ALARM", "OK"),
        ([84.9] + [10.0] * 9, "OK", "OK"),
        # an empty file system
        ([0.0] * 10, "OK", "OK"),
    ],
)
def test_per_target_and_aggregate_alarms(alarms, used, target, free):
    points = fsx_points(used)
    assert alarm_state(alarms["target"], points) == target
    assert alarm_state(alarms["free"], points) == free


def test_a_target_full_only_briefly_does_not_fire(alarms):
    """Three 5-minute periods must breach: a target at 95 % for the last 10 minutes only stays OK."""
    points = [p for p in fsx_points([60.0] * 10) if p.minute < 20] + [
        p for p in fsx_points([95.0] + [60.0] * 9) if p.minute >= 20
    ]
    assert alarm_state(alarms["target"], points) == "OK"


def test_no_data_is_not_breaching(alarms):
    assert alarm_state(alarms["target"], []) == "OK"
    assert alarm_state(alarms["free"], []) == "OK"


def test_query_reads_only_per_target_series_of_this_file_system(alarms):
    """Data of another file system, or the per-file-system series, do not reach the per-target query."""
    other = [
        Point(
            "AWS/FSx",
            "StorageCapacityUtilization",
            (("FileSystemId", "fs-0aaaaaaaaaaaaaaaa"), ("StorageTargetId", "OST0000")),
            m,
            99.0,
        )
        for m in range(MINUTES)
    ] + [Point("AWS/FSx", "StorageCapacityUtilization", (("FileSystemId", FS_ID),), m, 99.0) for m in range(MINUTES)]
    points = fsx_points([50.0] * 10) + other
    assert alarm_state(alarms["target"], points) == "OK"
