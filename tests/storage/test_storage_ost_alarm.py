"""Per-storage-target (OST) fullness alarm: a Metrics Insights query on the fullest target, next to the aggregate."""

from __future__ import annotations

import pytest
from aws_cdk import Duration
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_sns as sns

from fmconstructs import FmValidationError, LustreDeploymentType, LustreFileSystem
from fmconstructs.storage.target_alarm import add_storage_target_alarm, storage_target_query


def _target_alarm(scene):
    alarms = scene.template().find_resources("AWS::CloudWatch::Alarm")
    found = [
        p["Properties"]
        for p in alarms.values()
        if any("SELECT" in str(m.get("Expression", "")) for m in p["Properties"].get("Metrics", []))
    ]
    assert len(found) == 1
    return found[0], alarms


def _expression(props):
    (query,) = [m for m in props["Metrics"] if "Expression" in m]
    return query


def test_new_file_system_gets_the_target_alarm_next_to_the_aggregate(scene):
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=2400, throughput_mbps_per_tib=500)
    topic = sns.Topic(scene.stack, "Alerts")
    fs.add_saturation_alarms(topic=topic)
    props, alarms = _target_alarm(scene)
    assert len(alarms) == 3  # throughput, aggregate free capacity, fullest target
    assert any("FreeDataStorageCapacity" in str(p["Properties"].get("Metrics")) for p in alarms.values())
    query = _expression(props)
    assert query["ReturnData"] is True and query["Period"] == 300
    # The file system id is a deploy-time Ref: the query is joined around it.
    joined = query["Expression"]["Fn::Join"][1]
    assert joined[0] == (
        'SELECT MAX(StorageCapacityUtilization) FROM SCHEMA("AWS/FSx", FileSystemId, StorageTargetId) '
        "WHERE FileSystemId = '"
    )
    assert joined[1] == scene.stack.resolve(fs.file_system_id)
    assert joined[2] == "'"
    assert props["Threshold"] == 85
    assert props["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert props["EvaluationPeriods"] == 3
    assert props["TreatMissingData"] == "notBreaching"
    assert props["AlarmActions"] == [scene.stack.resolve(topic.topic_arn)]
    assert fs.storage_target_alarm is not None


def test_imported_file_system_query_names_the_id(scene):
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
    fs.add_saturation_alarms(storage_target_used_percent=70, period=Duration.minutes(1), evaluation_periods=2)
    props, _ = _target_alarm(scene)
    assert _expression(props)["Expression"] == storage_target_query("fs-0123456789abcdef0")
    assert "WHERE FileSystemId = 'fs-0123456789abcdef0'" in storage_target_query("fs-0123456789abcdef0")
    assert props["Threshold"] == 70
    assert _expression(props)["Period"] == 60
    assert props["EvaluationPeriods"] == 2
    assert "AlarmActions" not in props


def test_target_alarm_can_be_turned_off(scene):
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200)
    fs.add_saturation_alarms(storage_target_used_percent=None)
    scene.template().resource_count_is("AWS::CloudWatch::Alarm", 2)


def test_target_alarm_alone_needs_no_sizing(scene):
    add_storage_target_alarm(scene.stack, file_system_id="fs-0123456789abcdef0", used_percent=90)
    props, _ = _target_alarm(scene)
    assert props["Threshold"] == 90


@pytest.mark.parametrize("bad", [0, 100, 150, -5, "85", True, float("nan")])
def test_bad_threshold_is_refused_before_any_alarm(scene, bad):
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200)
    with pytest.raises(FmValidationError, match="storage_target_used_percent"):
        fs.add_saturation_alarms(storage_target_used_percent=bad)
    scene.template().resource_count_is("AWS::CloudWatch::Alarm", 0)


def test_sub_minute_period_is_refused_for_metrics_insights(scene):
    with pytest.raises(FmValidationError, match="multiple of 60"):
        add_storage_target_alarm(scene.stack, file_system_id="fs-0123456789abcdef0", period=Duration.seconds(30))
