"""Automatic export alarms for FSx for Lustre (/checkpoints -> S3): the export queue's age and export failures in the
file system's log group."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Match

from fmconstructs import FmValidationError, LustreDeploymentType, LustreFileSystem
from fmconstructs.errors import WarningId
from fmconstructs.storage.data_repository import DataRepositoryEvent
from fmconstructs.storage.export_alarm import EXPORT_ERROR_CODES, export_failure_pattern
from fmconstructs.storage.lustre import LustreLogLevel

ALARM = "AWS::CloudWatch::Alarm"
FILTER = "AWS::Logs::MetricFilter"
BUCKET = "fm-test-data-bucket"


def _fs(scene, **kwargs):
    log_group = logs.LogGroup(
        scene.stack, "FsxLogs", log_group_name="/aws/fsx/fm-test", removal_policy=RemovalPolicy.DESTROY
    )
    kwargs.setdefault("log_group", log_group)
    return LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=2400, **kwargs)


def _alarms(scene):
    return {k: v["Properties"] for k, v in scene.template().find_resources(ALARM).items()}


def _backlog(scene):
    found = [p for p in _alarms(scene).values() if p.get("MetricName") == "AgeOfOldestQueuedMessage"]
    assert len(found) == 1
    return found[0]


def _failure(scene):
    found = [p for p in _alarms(scene).values() if "failed to export" in p["AlarmDescription"]]
    assert len(found) <= 1
    return found[0] if found else None


def test_default_layout_checkpoints_get_backlog_and_failure_alarms(scene):
    fs = _fs(scene)
    fs.add_data_repositories(BUCKET)  # /datasets (import only) and /checkpoints (auto-export)
    topic = sns.Topic(scene.stack, "Alerts")
    alarms = fs.add_export_alarms(topic=topic)
    assert alarms is not None and alarms.failures is not None and fs.export_alarms is alarms
    backlog = _backlog(scene)
    assert backlog["Namespace"] == "AWS/FSx" and backlog["Statistic"] == "Maximum" and backlog["Period"] == 300
    assert backlog["Dimensions"] == [
        {"Name": "FileSystemId", "Value": scene.stack.resolve(fs.file_system_id)},
        {"Name": "Publisher", "Value": "AutoExport"},
    ]
    assert backlog["Threshold"] == 3600 and backlog["EvaluationPeriods"] == 3
    assert backlog["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert backlog["TreatMissingData"] == "notBreaching"
    assert "/checkpoints" in backlog["AlarmDescription"] and "/datasets" not in backlog["AlarmDescription"]
    failure = _failure(scene)
    assert failure["Threshold"] == 0 and failure["ComparisonOperator"] == "GreaterThanThreshold"
    assert failure["EvaluationPeriods"] == 1 and failure["Statistic"] == "Sum"
    assert failure["Namespace"] == "fmconstructs/FSx"
    for props in (backlog, failure):
        assert props["AlarmActions"] == [scene.stack.resolve(topic.topic_arn)]


def test_failure_filter_matches_every_export_error_code_in_the_file_systems_group(scene):
    fs = _fs(scene)
    fs.add_data_repositories(BUCKET)
    fs.add_export_alarms()
    filters = scene.template().find_resources(FILTER)
    assert len(filters) == 1
    (props,) = [f["Properties"] for f in filters.values()]
    assert props["LogGroupName"] == scene.stack.resolve(fs.log_group.log_group_name)
    assert props["FilterPattern"] == " ".join(f'?"{code}"' for code in EXPORT_ERROR_CODES)
    assert export_failure_pattern().log_pattern_string == props["FilterPattern"]
    (transformation,) = props["MetricTransformations"]
    assert transformation["MetricValue"] == "1" and transformation["DefaultValue"] == 0
    assert transformation["MetricName"] == _failure(scene)["MetricName"]
    assert transformation["MetricName"].startswith("ExportFailures-")


def test_alarms_wait_for_the_first_auto_export_association(scene):
    fs = _fs(scene)
    assert fs.add_export_alarms(export_backlog_age_seconds=900, period=Duration.minutes(1)) is None
    fs.add_data_repository("Datasets", bucket=BUCKET, file_system_path="/datasets")  # import only
    assert fs.export_alarms is None
    fs.add_data_repository(
        "Checkpoints",
        bucket=BUCKET,
        file_system_path="/checkpoints",
        auto_export_events=(DataRepositoryEvent.NEW, DataRepositoryEvent.CHANGED),
    )
    created = fs.export_alarms
    assert created is not None
    fs.add_data_repository("Out", bucket=BUCKET, file_system_path="/out", auto_export_events=(DataRepositoryEvent.NEW,))
    assert fs.export_alarms is created
    scene.template().resource_count_is(ALARM, 2)  # still one backlog and one failure alarm per file system
    backlog = _backlog(scene)
    assert backlog["Threshold"] == 900 and backlog["Period"] == 60
    assert "AlarmActions" not in backlog


def test_no_alarm_without_auto_export(scene):
    fs = _fs(scene)
    fs.add_data_repository("Datasets", bucket=BUCKET, file_system_path="/datasets")
    assert fs.add_export_alarms() is None
    scene.template().resource_count_is(ALARM, 0)
    scene.template().resource_count_is(FILTER, 0)


def test_without_a_log_group_only_the_backlog_alarm_and_a_warning(scene):
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=2400)
    fs.add_data_repositories(BUCKET)
    alarms = fs.add_export_alarms()
    assert alarms is not None and alarms.failures is None
    _backlog(scene)
    scene.template().resource_count_is(FILTER, 0)
    Annotations.from_stack(scene.stack).has_warning(
        "/Test/Fs",
        Match.string_like_regexp(
            f"no alarm on automatic export failures.*{WarningId.LUSTRE_EXPORT_FAILURES_NOT_WATCHED.qualified}"
        ),
    )


@pytest.mark.parametrize("level", [LustreLogLevel.WARN_ONLY, LustreLogLevel.DISABLED])
def test_log_level_without_errors_skips_the_failure_alarm(scene, level):
    fs = _fs(scene, log_level=level, log_group=None)
    fs.add_data_repositories(BUCKET)
    log_group = logs.LogGroup.from_log_group_name(scene.stack, "Existing", "/aws/fsx/other")
    assert fs.add_export_alarms(log_group=log_group).failures is None
    scene.template().resource_count_is(FILTER, 0)
    Annotations.from_stack(scene.stack).has_warning("/Test/Fs", Match.string_like_regexp(f"log_level {level.value}"))


def test_failures_can_be_turned_off(scene):
    fs = _fs(scene)
    fs.add_data_repositories(BUCKET)
    assert fs.add_export_alarms(export_failures=False).failures is None
    scene.template().resource_count_is(ALARM, 1)
    Annotations.from_stack(scene.stack).has_no_warning("*", Match.any_value())


def test_imported_file_system_with_a_log_group_given(scene):
    group = ec2.SecurityGroup.from_security_group_id(scene.stack, "G", "sg-0123456789abcdef0")
    fs = LustreFileSystem.from_lustre_file_system_attributes(
        scene.stack,
        "Imported",
        file_system_id="fs-0123456789abcdef0",
        dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
        mount_name="mnt",
        security_group=group,
        deployment_type=LustreDeploymentType.PERSISTENT_2,
    )
    fs.add_data_repositories(BUCKET)
    log_group = logs.LogGroup.from_log_group_name(scene.stack, "Existing", "/aws/fsx/imported")
    alarms = fs.add_export_alarms(log_group=log_group)
    assert alarms is not None and alarms.failures is not None
    assert _backlog(scene)["Dimensions"][0] == {"Name": "FileSystemId", "Value": "fs-0123456789abcdef0"}
    scene.template().has_resource_properties(FILTER, {"LogGroupName": "/aws/fsx/imported"})


def test_deploy_time_threshold_is_passed_through(scene):
    fs = _fs(scene)
    fs.add_data_repositories(BUCKET)
    age = cdk.CfnParameter(scene.stack, "BacklogSeconds", type="Number", default=1800).value_as_number
    fs.add_export_alarms(export_backlog_age_seconds=age)
    assert _backlog(scene)["Threshold"] == {"Ref": "BacklogSeconds"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"export_backlog_age_seconds": 0}, r"export_backlog_age_seconds must be a number of seconds above 0"),
        ({"export_backlog_age_seconds": -60}, r"export_backlog_age_seconds must be"),
        ({"export_backlog_age_seconds": float("nan")}, r"export_backlog_age_seconds must be a finite number"),
        ({"export_backlog_age_seconds": "3600"}, r"export_backlog_age_seconds must be a number"),
        ({"evaluation_periods": 0}, r"evaluation_periods must be at least 1"),
        ({"period": 300}, r"period must be a Duration"),
        ({"period": Duration.seconds(45)}, r"period must be 10, 20, 30 seconds or a multiple of 60"),
        ({"export_failures": "yes"}, r"export_failures must be"),
        ({"topic": "arn:aws:sns:us-east-1:123456789012:alerts"}, r"topic must be an sns.ITopic"),
        ({"log_group": "/aws/fsx/x"}, r"log_group must be a logs.ILogGroup"),
    ],
)
def test_bad_props_are_refused_before_any_alarm(scene, kwargs, message):
    fs = _fs(scene)
    fs.add_data_repositories(BUCKET)
    with pytest.raises(FmValidationError, match=message):
        fs.add_export_alarms(**kwargs)
    scene.template().resource_count_is(ALARM, 0)
    scene.template().resource_count_is(FILTER, 0)


def test_second_call_is_refused(scene):
    fs = _fs(scene)
    fs.add_data_repositories(BUCKET)
    fs.add_export_alarms()
    with pytest.raises(FmValidationError, match="add_export_alarms must be called once per file system"):
        fs.add_export_alarms()


# --- the platform: its /checkpoints link gets the backlog alarm --------------------------------------------------------
def test_platform_alarms_on_the_checkpoints_export_backlog(scene):
    from fmconstructs.pcs import PcsAmi
    from fmconstructs.platform import PcsOptions, PlatformStorage, TrainingPlatform

    platform = TrainingPlatform(
        scene.stack,
        "Platform",
        vpc=scene.vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        orchestrator=PcsOptions(ami=PcsAmi.from_image_id("ami-0123456789abcdef0")),
        storage=PlatformStorage.for_throughput(target_gbytes_per_s=4.6875),
    )
    assert platform.file_system is not None and platform.file_system.export_alarms is not None
    assert platform.file_system.export_alarms.failures is None  # FSx's shared default log group: not watched
    backlog = _backlog(scene)
    assert "/checkpoints" in backlog["AlarmDescription"]
    assert backlog["Dimensions"][1] == {"Name": "Publisher", "Value": "AutoExport"}
    scene.template().resource_count_is(FILTER, 0)
