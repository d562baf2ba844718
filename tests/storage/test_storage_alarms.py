"""Saturation alarms: FSx throughput against the aggregate baseline, free capacity against the size."""

from __future__ import annotations

import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_sns as sns

from fmconstructs import FmValidationError, LustreDeploymentType, LustreFileSystem


def test_alarms_for_a_new_file_system(scene):
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=2400, throughput_mbps_per_tib=500)
    topic = sns.Topic(scene.stack, "Alerts")
    fs.add_saturation_alarms(topic=topic)
    alarms = scene.template().find_resources("AWS::CloudWatch::Alarm")
    assert len(alarms) == 3  # and the fullest-storage-target alarm (tests/storage/test_storage_ost_alarm.py)
    throughput = next(p for p in alarms.values() if "throughput" in p["Properties"]["AlarmDescription"])["Properties"]
    # 2400 GiB = 2.34375 TiB at 500 MB/s/TiB = 1,171.875 MB/s baseline; 300 s periods
    expression = next(m["Expression"] for m in throughput["Metrics"] if "Expression" in m)
    assert expression == "(r + w) / 300 / 1171875000"
    names = {m["MetricStat"]["Metric"]["MetricName"] for m in throughput["Metrics"] if "MetricStat" in m}
    assert names == {"DataReadBytes", "DataWriteBytes"}
    assert throughput["Threshold"] == 0.9
    assert throughput["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    capacity = next(p for p in alarms.values() if "free" in p["Properties"]["AlarmDescription"])
    props = capacity["Properties"]
    assert props["Threshold"] == 2400 * 1024**3 * 0.1
    assert props["ComparisonOperator"] == "LessThanThreshold"
    (free,) = [m["MetricStat"] for m in props["Metrics"] if "MetricStat" in m]
    assert free["Metric"]["Namespace"] == "AWS/FSx" and free["Metric"]["MetricName"] == "FreeDataStorageCapacity"
    assert free["Stat"] == "Sum"  # the whole file system (tests/storage/test_storage_free_capacity_sum.py)
    for p in (throughput, props):
        assert p["AlarmActions"] == [scene.stack.resolve(topic.topic_arn)]
        assert p["TreatMissingData"] == "notBreaching"


def test_alarms_for_an_imported_file_system_with_facts(scene):
    group = ec2.SecurityGroup.from_security_group_id(scene.stack, "G", "sg-0123456789abcdef0")
    fs = LustreFileSystem.from_lustre_file_system_attributes(
        scene.stack,
        "Imported",
        file_system_id="fs-0123456789abcdef0",
        dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
        mount_name="mnt",
        security_group=group,
        storage_capacity_gib=4800,
        deployment_type=LustreDeploymentType.PERSISTENT_2,
        throughput_mbps_per_tib=1000,
    )
    throughput_alarm, capacity_alarm = fs.add_saturation_alarms(throughput_ratio=0.8)
    assert throughput_alarm is not None and capacity_alarm is not None
    scene.template().resource_count_is("AWS::CloudWatch::Alarm", 3)


def test_throughput_baseline_is_tib_times_per_unit_throughput(scene):
    """Baseline = storage in TiB x MB/s/TiB (FSx API PerUnitStorageThroughput is MB/s per TiB; 1 TiB = 1,024 GiB):
    4,800 GiB at 1,000 MB/s/TiB is 4.6875 TiB x 1,000 = 4,687.5 MB/s, not 4,800 MB/s."""
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=4800, throughput_mbps_per_tib=1000)
    fs.add_saturation_alarms()
    alarms = scene.template().find_resources("AWS::CloudWatch::Alarm")
    throughput = next(p for p in alarms.values() if "throughput" in p["Properties"]["AlarmDescription"])["Properties"]
    expression = next(m["Expression"] for m in throughput["Metrics"] if "Expression" in m)
    assert expression == "(r + w) / 300 / 4687500000"  # 4,687.5 MB/s in bytes per second
    assert "4,687.5 MB/s baseline" in throughput["AlarmDescription"]


def test_alarms_need_known_size(scene):
    group = ec2.SecurityGroup.from_security_group_id(scene.stack, "G", "sg-0123456789abcdef0")
    fs = LustreFileSystem.from_lustre_file_system_attributes(
        scene.stack,
        "Imported",
        file_system_id="fs-0123456789abcdef0",
        dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
        mount_name="m",
        security_group=group,
    )
    with pytest.raises(FmValidationError, match=r"storage_capacity_gib/deployment_type must be known"):
        fs.add_saturation_alarms()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"throughput_ratio": 1.2}, r"throughput_ratio must be a ratio between 0 and 1"),
        ({"free_capacity_ratio": 0}, r"free_capacity_ratio must be a ratio between 0 and 1"),
        ({"evaluation_periods": 0}, r"evaluation_periods must be at least 1"),
        ({"throughput_ratio": float("nan")}, r"throughput_ratio must be a finite number, got nan"),
        ({"free_capacity_ratio": float("inf")}, r"free_capacity_ratio must be a finite number, got inf"),
        ({"throughput_ratio": "0.9"}, r"throughput_ratio must be a number"),
        ({"evaluation_periods": True}, r"evaluation_periods must be an integer"),
        ({"evaluation_periods": 2.5}, r"evaluation_periods must be a whole number"),
        ({"period": 300}, r"period must be a Duration"),
        ({"topic": "arn:aws:sns:us-east-1:123456789012:alerts"}, r"topic must be an sns.ITopic"),
    ],
)
def test_invalid_alarm_props(scene, kwargs, message):
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200)
    with pytest.raises(FmValidationError, match=message):
        fs.add_saturation_alarms(**kwargs)
