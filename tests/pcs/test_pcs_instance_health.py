"""PCS native health on GPU node groups: typed options mirror the botocore PCS model, node lifecycle actions go through
CloudFormation, instance health checks through the custom resource (properties, IAM, opt-out, DCGM not twice)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import botocore
import pytest
from aws_cdk.assertions import Match, Template

from fmconstructs import FmValidationError
from fmconstructs.errors import WarningId
from fmconstructs.health import NodeHealthOptions
from fmconstructs.pcs import (
    PcsAmi,
    PcsCluster,
    PcsDeepHealthProfile,
    PcsGpuNodeGroup,
    PcsHealthMonitoring,
    PcsInstanceHealthChecks,
    PcsLifecycleOnError,
    PcsLifecycleScript,
    PcsLifecycleScriptCaching,
    PcsLifecycleScriptExecution,
    PcsNodeLifecycleActions,
    PcsRepairAction,
    SlurmVersion,
)
from fmconstructs.pcs.health import BOOT_GATE_PATH, NODE_HEALTH_STEP
from fmconstructs.pcs.instance_health_resource import FAS_ACTIONS, PROVIDER_ID, RESOURCE_TYPE

from tests.conftest import new_scene

CNG = "AWS::PCS::ComputeNodeGroup"
AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
MODEL = Path(botocore.__file__).parent / "data" / "pcs" / "2023-02-10" / "service-2.json.gz"
SHAPES: dict[str, Any] = json.loads(gzip.decompress(MODEL.read_bytes()))["shapes"]
SCRIPT = PcsLifecycleScript(name="Mount scratch", script_location="s3://my-bucket/mount.sh")
CHECKS = PcsInstanceHealthChecks(
    monitoring_repair_action=PcsRepairAction.REPLACE,
    deep_health_check_on_start=PcsDeepHealthProfile.MEDIUM,
)


def _cluster(slurm_version: SlurmVersion = SlurmVersion.V26_05, **props: object) -> PcsCluster:
    scene = new_scene()
    return PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, slurm_version=slurm_version, **props)  # type: ignore[arg-type]


def _group(cluster: PcsCluster, id: str = "P5", **options: Any) -> PcsGpuNodeGroup:
    return cluster.add_gpu_node_group(id, instance_type="p5.48xlarge", ami=AMI, max_nodes=2, **options)


@pytest.fixture(scope="module")
def with_checks() -> tuple[PcsGpuNodeGroup, Template]:
    cluster = _cluster(node_health=NodeHealthOptions())
    group = _group(
        cluster,
        instance_health_checks=CHECKS,
        node_lifecycle_actions=PcsNodeLifecycleActions(node_bootstrapped=[SCRIPT]),
    )
    _group(cluster, "Second", instance_health_checks=PcsInstanceHealthChecks())
    return group, Template.from_stack(cdk.Stack.of(cluster))


# --- options mirror the model ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("enum", "shapes"),
    [
        (PcsHealthMonitoring, ["HealthMonitoringMode"]),
        (PcsRepairAction, ["HealthMonitoringRepairAction", "DeepHealthCheckOnStartRepairAction"]),
        (PcsDeepHealthProfile, ["DeepHealthCheckOnStartProfile"]),
        (PcsLifecycleOnError, ["OnError"]),
        (PcsLifecycleScriptExecution, ["ExecutionPolicy"]),
        (PcsLifecycleScriptCaching, ["ScriptCachingPolicy"]),
    ],
)
def test_enums_are_the_model_values(enum, shapes):
    for shape in shapes:
        assert [m.value for m in enum] == SHAPES[shape]["enum"]


def test_to_api_is_an_update_request_of_the_model():
    members = SHAPES["UpdateInstanceHealthChecksRequest"]["members"]
    body = CHECKS.to_api()
    assert set(body) <= set(members)
    assert body == {
        "healthMonitoring": {"mode": "STANDARD", "repairAction": "REPLACE"},
        "deepHealthChecks": {"onStart": {"profile": "MEDIUM"}},
    }


def test_off_sends_none_for_both_checks():
    assert PcsInstanceHealthChecks.off().to_api() == {
        "healthMonitoring": {"mode": "NONE"},
        "deepHealthChecks": {"onStart": {"profile": "NONE"}},
    }


def test_deep_profiles_name_their_dcgm_levels():
    assert [p.dcgm_level for p in PcsDeepHealthProfile] == [None, 1, 2, 3]


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"monitoring": "STANDARD"}, "monitoring"),
        ({"deep_health_check_on_start": "QUICK"}, "deep_health_check_on_start"),
        (
            {"monitoring": PcsHealthMonitoring.NONE, "monitoring_repair_action": PcsRepairAction.AUTO},
            "monitoring_repair",
        ),
        ({"deep_health_check_repair_action": PcsRepairAction.REPLACE}, "deep_health_check_repair_action"),
        (
            {
                "deep_health_check_on_start": PcsDeepHealthProfile.NONE,
                "deep_health_check_repair_action": PcsRepairAction.ISOLATE,
            },
            "deep_health_check_repair_action",
        ),
        ({"monitoring_repair_action": "AUTO"}, "monitoring_repair_action"),
    ],
)
def test_rejects_bad_health_checks(kwargs, parameter):
    with pytest.raises(FmValidationError, match=rf"^{parameter}"):
        PcsInstanceHealthChecks(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"name": "-starts-with-dash"}, "name"),
        ({"name": "x" * 65}, "name"),
        ({"name": "semi;colon"}, "name"),
        ({"script_location": "/local/path.sh"}, "script_location"),
        ({"script_location": "http://example.com/a.sh"}, "script_location"),
        ({"checksum_sha256": "abc"}, "checksum_sha256"),
        ({"script_location": "https://example.com/a.sh", "s3_version_id": "v1"}, "s3_version_id"),
        ({"arguments": ["a"] * 21}, "arguments"),
        ({"arguments": ["x" * 257]}, r"arguments\[0\]"),
        ({"arguments": "one-string"}, "arguments"),
        ({"on_error": "TERMINATE"}, "on_error"),
        ({"execution": "EVERY_BOOT"}, "execution"),
    ],
)
def test_rejects_bad_lifecycle_scripts(kwargs, parameter):
    values = {"name": "ok", "script_location": "s3://my-bucket/a.sh", **kwargs}
    with pytest.raises(FmValidationError, match=rf"^{parameter}"):
        PcsLifecycleScript(**values)


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({}, "node_bootstrapped"),
        ({"node_bootstrapped": [SCRIPT, SCRIPT]}, "node_bootstrapped"),
        ({"node_ready": [SCRIPT] * 21}, "node_ready"),
        ({"node_ready": ["not a script"]}, r"node_ready\[0\]"),
        ({"node_ready": [SCRIPT], "script_caching": "CACHE_ONCE"}, "script_caching"),
    ],
)
def test_rejects_bad_lifecycle_actions(kwargs, parameter):
    with pytest.raises(FmValidationError, match=rf"^{parameter}"):
        PcsNodeLifecycleActions(**kwargs)


def test_lifecycle_to_api_uses_the_model_members():
    script = PcsLifecycleScript(
        name="Mount",
        script_location="s3://my-bucket/m.sh",
        checksum_sha256="a" * 64,
        s3_version_id="v1",
        arguments=["fs-1", "/scratch"],
        on_error=PcsLifecycleOnError.CONTINUE,
        execution=PcsLifecycleScriptExecution.EVERY_BOOT,
    )
    body = PcsNodeLifecycleActions(node_ready=[script], script_caching=PcsLifecycleScriptCaching.REFRESH_ON_REBOOT)
    api = body.to_api()
    assert set(api) <= set(SHAPES["NodeLifecycleActions"]["members"])
    assert set(api["stages"]["nodeReady"][0]) <= set(SHAPES["NodeLifecycleScript"]["members"])
    assert set(api["stages"]["nodeReady"][0]["scriptSource"]) == set(SHAPES["ScriptSource"]["members"])
    assert "nodeBootstrapped" not in api["stages"]  # lists hold 1-20 scripts: an empty stage is left out


# --- node lifecycle actions: CloudFormation --------------------------------------------------------------------------
def test_lifecycle_actions_are_the_node_groups_cloudformation_property(with_checks):
    _, template = with_checks
    template.has_resource_properties(
        CNG,
        {
            "NodeLifecycleActions": {
                "Stages": {
                    "NodeBootstrapped": [
                        {"Name": "Mount scratch", "ScriptSource": {"ScriptLocation": "s3://my-bucket/mount.sh"}}
                    ]
                }
            }
        },
    )


# --- instance health checks: the custom resource ---------------------------------------------------------------------
def test_custom_resource_carries_the_request_and_the_group(with_checks):
    _, template = with_checks
    template.has_resource_properties(
        RESOURCE_TYPE,
        {
            "ClusterId": {"Fn::GetAtt": [Match.string_like_regexp("^Cluster"), "Id"]},
            "ComputeNodeGroupId": {"Fn::GetAtt": [Match.string_like_regexp("^ClusterP5"), "Id"]},
            "InstanceHealthChecks": CHECKS.to_api(),
        },
    )
    assert len(template.find_resources(RESOURCE_TYPE)) == 2


def test_one_provider_per_stack_waits_with_a_bounded_timeout(with_checks):
    group, template = with_checks
    assert cdk.Stack.of(group).node.try_find_child(PROVIDER_ID) is not None
    # handler + isComplete + the framework's onEvent, isComplete and onTimeout functions: one set for both groups
    assert len(template.find_resources("AWS::Lambda::Function")) == 5
    assert len(template.find_resources("AWS::StepFunctions::StateMachine")) == 1


def _handler_statements(template: Template) -> list[dict[str, Any]]:
    policies = template.find_resources("AWS::IAM::Policy")
    for logical, policy in policies.items():
        if logical.startswith(PROVIDER_ID) and "HandlerRole" in logical:
            return list(policy["Properties"]["PolicyDocument"]["Statement"])
    raise AssertionError("no handler role policy")


def test_handler_updates_only_its_node_groups(with_checks):
    _, template = with_checks
    statements = _handler_statements(template)
    pcs = [s for s in statements if s["Action"] == ["pcs:GetComputeNodeGroup", "pcs:UpdateComputeNodeGroup"]]
    assert len(pcs) == 2  # one per node group
    for statement in pcs:
        resources = json.dumps(statement["Resource"])
        assert "*" not in resources and '"Arn"' in resources


def test_handler_passes_only_the_node_role_to_ec2(with_checks):
    _, template = with_checks
    passes = [s for s in _handler_statements(template) if s["Action"] == "iam:PassRole"]
    assert passes and all(
        s["Condition"] == {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}} and "*" not in json.dumps(s)
        for s in passes
    )


def test_ec2_actions_only_through_pcs(with_checks):
    _, template = with_checks
    fas = [s for s in _handler_statements(template) if s.get("Resource") == "*"]
    assert len(fas) == 1
    assert fas[0]["Action"] == list(FAS_ACTIONS)
    assert fas[0]["Condition"] == {"ForAnyValue:StringEquals": {"aws:CalledVia": ["pcs.amazonaws.com"]}}


def test_changing_checks_is_announced(with_checks):
    group, _ = with_checks
    warnings = [
        entry.data
        for entry in group.node.metadata
        if entry.type == "aws:cdk:warning"
        and WarningId.PCS_INSTANCE_HEALTH_CHECKS_REPLACE_INSTANCES.qualified in str(entry.data)
    ]
    assert warnings and "replaces all this node group's instances after their running jobs finish" in str(warnings[0])


def test_default_creates_nothing():
    cluster = _cluster()
    group = _group(cluster)
    template = Template.from_stack(cdk.Stack.of(cluster))
    assert template.find_resources(RESOURCE_TYPE) == {}
    assert cdk.Stack.of(cluster).node.try_find_child(PROVIDER_ID) is None
    assert "NodeLifecycleActions" not in json.dumps(template.find_resources(CNG))
    assert group.instance_health_checks_resource is None


# --- nothing runs twice ---------------------------------------------------------------------------------------------
def test_deep_health_check_takes_dcgm_off_the_boot_gate(with_checks):
    group, _ = with_checks
    assert group.node_health is not None and group.node_health.dcgm_level is None
    gate = _boot_gate(group)
    assert "dcgmi diag" not in gate


def _boot_gate(group: PcsGpuNodeGroup) -> str:
    step = next(s for s in group.bootstrap.steps if s.name == NODE_HEALTH_STEP)
    return step.files[BOOT_GATE_PATH][0]


def test_monitoring_alone_keeps_the_gates_dcgm():
    cluster = _cluster(node_health=NodeHealthOptions())
    group = _group(cluster, instance_health_checks=PcsInstanceHealthChecks())
    assert group.node_health is not None and group.node_health.dcgm_level == 2
    assert "dcgmi diag -r 2" in _boot_gate(group)


# --- rules ------------------------------------------------------------------------------------------------------------
def test_instance_health_checks_need_slurm_26_05():
    cluster = _cluster(SlurmVersion.V25_11)
    with pytest.raises(FmValidationError, match=r"^instance_health_checks must be None on Slurm 25.11 .*26.05"):
        _group(cluster, instance_health_checks=PcsInstanceHealthChecks())


def test_rejects_a_wrong_type():
    cluster = _cluster()
    with pytest.raises(FmValidationError, match=r"^instance_health_checks must be a PcsInstanceHealthChecks"):
        _group(cluster, instance_health_checks={"healthMonitoring": {"mode": "STANDARD"}})
    with pytest.raises(FmValidationError, match=r"^node_lifecycle_actions must be a PcsNodeLifecycleActions"):
        _group(cluster, "Other", node_lifecycle_actions=[SCRIPT])


# --- TrainingPlatform ---------------------------------------------------------------------------------------------------
def test_training_platform_passes_both_options_to_its_gpu_node_group():
    from fmconstructs.platform import PcsOptions

    from tests.support.platform import _platform

    scene = new_scene()
    actions = PcsNodeLifecycleActions(node_ready=[SCRIPT])
    options = PcsOptions(
        ami=AMI, slurm_version=SlurmVersion.V26_05, instance_health_checks=CHECKS, node_lifecycle_actions=actions
    )
    platform = _platform(scene, orchestrator=options, storage=None)
    assert isinstance(platform.node_group, PcsGpuNodeGroup)
    assert platform.node_group.instance_health_checks is CHECKS
    template = Template.from_stack(scene.stack)
    template.resource_count_is(RESOURCE_TYPE, 1)
    template.has_resource_properties(CNG, {"NodeLifecycleActions": {"Stages": {"NodeReady": Match.any_value()}}})


def test_pcs_options_check_their_types():
    from fmconstructs.platform import PcsOptions

    with pytest.raises(FmValidationError, match=r"^instance_health_checks must be a PcsInstanceHealthChecks"):
        PcsOptions(ami=AMI, instance_health_checks="STANDARD")  # type: ignore[arg-type]


# --- cdk-nag and cfn-lint --------------------------------------------------------------------------------------------
@pytest.mark.validation
def test_node_group_with_native_health_is_nag_and_cfn_lint_clean(tmp_path):
    from cdk_nag import AwsSolutionsChecks
    from cfnlint.api import lint_file

    from tests.conftest import ENV

    app = cdk.App(outdir=str(tmp_path), builtin_cloud_formation_validation=True)
    stack = cdk.Stack(app, "Health", env=ENV)
    from aws_cdk import aws_ec2 as ec2

    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
    )
    cluster = PcsCluster(stack, "Cluster", vpc=vpc, slurm_version=SlurmVersion.V26_05)
    _group(cluster, instance_health_checks=CHECKS, node_lifecycle_actions=PcsNodeLifecycleActions(node_ready=[SCRIPT]))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on any unacknowledged finding
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []
    errors = [
        f"{m.rule.id} {m.message}" for m in lint_file(tmp_path / "Health.template.json") if m.rule.severity == "error"
    ]
    assert errors == []
