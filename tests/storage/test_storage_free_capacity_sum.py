"""The aggregate free-capacity alarm reads the whole file system: FreeDataStorageCapacity's Sum (every storage
target) per minute, not its Minimum (the fullest target only; FSx for Lustre User Guide "Monitoring with Amazon
CloudWatch"), which compared with a share of the whole capacity fired on any file system of 10 or more targets."""

from __future__ import annotations

import pytest
from aws_cdk import Duration

from fmconstructs import LustreFileSystem


def _capacity_alarm(scene):
    alarms = scene.template().find_resources("AWS::CloudWatch::Alarm")
    (props,) = [p["Properties"] for p in alarms.values() if "free" in p["Properties"]["AlarmDescription"]]
    return props


@pytest.mark.parametrize(
    ("period", "expression"),
    [
        (None, "free / 5"),  # default 5 minutes: five points per target in the period
        (Duration.minutes(1), "free / 1"),
        (Duration.minutes(15), "free / 15"),
        (Duration.seconds(30), "free / 1"),  # at most one point per target in a sub-minute period
    ],
)
def test_free_capacity_is_the_sum_over_targets_per_minute(scene, period, expression):
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=4800, throughput_mbps_per_tib=250)
    fs.add_saturation_alarms(period=period, storage_target_used_percent=None)
    props = _capacity_alarm(scene)
    assert "MetricName" not in props and "Statistic" not in props  # a metric-math alarm, not a single statistic
    (math,) = [m for m in props["Metrics"] if "Expression" in m]
    assert math["Expression"] == expression and math["ReturnData"] is True
    (stat,) = [m["MetricStat"] for m in props["Metrics"] if "MetricStat" in m]
    assert stat["Metric"]["MetricName"] == "FreeDataStorageCapacity"
    assert stat["Stat"] == "Sum"
    assert stat["Metric"]["Dimensions"] == [{"Name": "FileSystemId", "Value": scene.stack.resolve(fs.file_system_id)}]
    assert props["Threshold"] == 4800 * 1024**3 * 0.1 and props["ComparisonOperator"] == "LessThanThreshold"
