"""``fmc plan``'s readers: a registry by resource type, fed by the versioned plan record the constructs write.

The record (``Metadata`` key ``fmconstructs:plan``, :mod:`fmconstructs._plan_metadata`) carries a version, a kind and
the construct's backend, and for ParallelCluster / HyperPod the Lustre EFA interfaces per node. A version the CLI does
not read is a note in the plan (never a crash) and the resource is read as without the record; templates without the
record (older synths) are read as before.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from fmconstructs._plan_metadata import (
    PLAN_METADATA_KEY,
    PLAN_RECORD_VERSION,
    PlanKind,
    plan_record,
    read_plan_record,
    write_plan_record,
)
from fmconstructs.cli.assembly import LUSTRE_EFA_METADATA_KEY, parse_stack
from fmconstructs.cli.plan import plan_stacks
from fmconstructs.cli.plan_readers import READERS, ReadContext, ReaderRegistry, ReaderRegistryError

from tests.conftest import new_scene

LT = {"Type": "AWS::EC2::LaunchTemplate", "Properties": {"LaunchTemplateData": {"InstanceType": "p5.48xlarge"}}}


def _pcluster(metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ParallelCluster resource with one p5 queue of at most 4 nodes."""
    queue = {
        "Name": "gpu",
        "ComputeResources": [{"Name": "p5", "InstanceType": "p5.48xlarge", "MaxCount": 4, "Efa": {"Enabled": True}}],
    }
    resource: dict[str, Any] = {
        "Type": "Custom::PclusterCluster",
        "Properties": {"ClusterConfiguration": {"Scheduling": {"SlurmQueues": [queue]}}},
    }
    if metadata is not None:
        resource["Metadata"] = metadata
    return resource


#: One minimal resource per registered type, and what its reader adds to the stack.
RESOURCES: dict[str, tuple[dict[str, Any], str]] = {
    "AWS::PCS::ComputeNodeGroup": (
        {
            "Type": "AWS::PCS::ComputeNodeGroup",
            "Properties": {
                "InstanceConfigs": [{"InstanceType": "p5.48xlarge"}],
                "ScalingConfiguration": {"MinInstanceCount": 0, "MaxInstanceCount": 2},
                "CustomLaunchTemplate": {"TemplateId": {"Ref": "Lt"}},
            },
        },
        "node group pcs",
    ),
    "AWS::EKS::Nodegroup": (
        {
            "Type": "AWS::EKS::Nodegroup",
            "Properties": {"ScalingConfig": {"MinSize": 0, "MaxSize": 2}, "LaunchTemplate": {"Id": {"Ref": "Lt"}}},
        },
        "node group eks",
    ),
    "AWS::AutoScaling::AutoScalingGroup": (
        {
            "Type": "AWS::AutoScaling::AutoScalingGroup",
            "Properties": {"MinSize": "0", "MaxSize": "2", "LaunchTemplate": {"LaunchTemplateId": {"Ref": "Lt"}}},
        },
        "node group asg",
    ),
    "AWS::SageMaker::Cluster": (
        {
            "Type": "AWS::SageMaker::Cluster",
            "Properties": {"InstanceGroups": [{"InstanceGroupName": "gpu", "InstanceType": "ml.p5.48xlarge"}]},
        },
        "node group hyperpod",
    ),
    "Custom::PclusterCluster": (_pcluster(), "node group parallelcluster"),
    "AWS::FSx::FileSystem": (
        {"Type": "AWS::FSx::FileSystem", "Properties": {"StorageCapacity": 1200, "FileSystemType": "LUSTRE"}},
        "file system",
    ),
    "AWS::EC2::Subnet": ({"Type": "AWS::EC2::Subnet", "Properties": {"AvailabilityZone": "us-east-1a"}}, "subnet"),
    "AWS::PCS::Cluster": (
        {"Type": "AWS::PCS::Cluster", "Properties": {"Networking": {"SubnetIds": ["subnet-1"]}}},
        "consumer pcs-controller",
    ),
    "AWS::EC2::VPCEndpoint": (
        {"Type": "AWS::EC2::VPCEndpoint", "Properties": {"VpcEndpointType": "Interface", "SubnetIds": ["subnet-1"]}},
        "consumer vpc-endpoint",
    ),
}


def _found(template: dict[str, Any]) -> set[str]:
    stack = parse_stack("S", template)
    found = {f"node group {g.kind}" for g in stack.node_groups if g.kind != "launch-template"}
    found |= {"file system" for _ in stack.file_systems}
    found |= {"subnet" for _ in stack.subnet_zones}
    found |= {f"consumer {c.kind}" for c in stack.network_consumers}
    return found


# --- the registry ---------------------------------------------------------------------------------------------------
def test_every_reader_has_a_case_here() -> None:
    assert set(READERS.resource_types) == set(RESOURCES)


@pytest.mark.parametrize("resource_type", sorted(RESOURCES))
def test_a_reader_per_resource_type(resource_type: str) -> None:
    resource, expected = RESOURCES[resource_type]
    assert _found({"Resources": {"Lt": LT, "R": resource}}) == {expected}


@pytest.mark.parametrize("resource_type", sorted(RESOURCES))
def test_the_registry_refuses_a_second_reader_for_a_type(resource_type: str) -> None:
    with pytest.raises(ReaderRegistryError, match="already has a reader"):
        READERS.register(resource_type)(lambda ctx: None)


def test_a_new_registry_takes_one_reader_per_type_and_reads_with_it() -> None:
    registry = ReaderRegistry()
    seen: list[str] = []

    @registry.register("Custom::Thing", kind=PlanKind.NODE_GROUP)
    def read_thing(ctx: ReadContext) -> None:
        seen.append(ctx.logical_id)

    with pytest.raises(ReaderRegistryError, match=r"Custom::Thing already has a reader \(read_thing\)"):
        registry.register("Custom::Thing")(read_thing)
    stack = parse_stack("S", {"Resources": {}})
    registry.read(ReadContext(stack, "T", {"Type": "Custom::Thing"}, None, {}))
    registry.read(ReadContext(stack, "U", {"Type": "Custom::Other"}, None, {}))  # no reader: nothing, no error
    assert seen == ["T"]
    assert registry.resource_types == ("Custom::Thing",)


def test_types_without_a_reader_are_not_planned() -> None:
    assert _found({"Resources": {"B": {"Type": "AWS::S3::Bucket", "Properties": {}}}}) == set()


# --- the record -----------------------------------------------------------------------------------------------------
def _lustre_efa(template_resource: dict[str, Any]) -> tuple[bool, int | None, list[str]]:
    plan = plan_stacks([parse_stack("S", {"Resources": {"Pc": template_resource}})])
    (group,) = parse_stack("S", {"Resources": {"Pc": template_resource}}).node_groups
    return group.lustre_efa_declared, group.lustre_efa_interfaces, plan.notes


def test_the_records_lustre_efa_counts_are_read() -> None:
    record = plan_record(PlanKind.NODE_GROUP, backend="parallelcluster", lustre_efa_interfaces={"gpu": 4})
    declared, count, notes = _lustre_efa(_pcluster({PLAN_METADATA_KEY: record}))
    assert (declared, count) == (True, 4)
    assert not any(PLAN_METADATA_KEY in n for n in notes)


def test_the_record_wins_over_the_older_key() -> None:
    record = plan_record(PlanKind.NODE_GROUP, backend="parallelcluster", lustre_efa_interfaces={"gpu": 2})
    declared, count, _ = _lustre_efa(_pcluster({PLAN_METADATA_KEY: record, LUSTRE_EFA_METADATA_KEY: {"gpu": 8}}))
    assert (declared, count) == (True, 2)


@pytest.mark.parametrize(
    ("metadata", "declared", "count"),
    [
        ({LUSTRE_EFA_METADATA_KEY: {"gpu": 8}}, True, 8),  # an older synth: the older key only
        ({}, False, None),  # no marker at all: unknown, as before
        ({PLAN_METADATA_KEY: {"version": 1, "kind": "node-group", "backend": "parallelcluster"}}, False, None),
    ],
)
def test_without_the_records_counts_the_older_reading_holds(
    metadata: dict[str, Any], declared: bool, count: int | None
) -> None:
    got_declared, got_count, notes = _lustre_efa(_pcluster(metadata))
    assert (got_declared, got_count) == (declared, count)
    assert not any(PLAN_METADATA_KEY in n for n in notes)


@pytest.mark.parametrize(
    "record",
    [
        {"version": 2, "kind": "node-group", "backend": "parallelcluster", "lustre_efa_interfaces": {"gpu": 4}},
        {"version": "1", "kind": "node-group", "lustre_efa_interfaces": {"gpu": 4}},
        {"version": True, "lustre_efa_interfaces": {"gpu": 4}},
        {"kind": "node-group", "lustre_efa_interfaces": {"gpu": 4}},
        "version 1",
        None,
        [1],
    ],
)
def test_a_record_version_it_does_not_read_is_a_note_and_the_older_reading(record: object) -> None:
    declared, count, notes = _lustre_efa(_pcluster({PLAN_METADATA_KEY: record, LUSTRE_EFA_METADATA_KEY: {"gpu": 8}}))
    assert (declared, count) == (True, 8)  # its fields unused: the older key, as an older synth
    (note,) = [n for n in notes if PLAN_METADATA_KEY in n]
    assert note.startswith("S/Pc: fmconstructs:plan version ")
    assert f"not the version this fmc reads ({PLAN_RECORD_VERSION})" in note


def test_a_record_kind_its_reader_does_not_expect_is_a_note() -> None:
    record = plan_record(PlanKind.FILE_SYSTEM, backend="fsx-lustre")
    template = {"Resources": {"Pc": _pcluster({PLAN_METADATA_KEY: record})}}
    plan = plan_stacks([parse_stack("S", template)])
    assert [g.kind for g in plan.node_groups] == ["parallelcluster"]
    assert any("kind 'file-system', but Custom::PclusterCluster is read as 'node-group'" in n for n in plan.notes)


def test_a_record_on_a_type_without_a_reader_is_a_note() -> None:
    record = plan_record(PlanKind.NODE_GROUP, backend="future")
    template = {"Resources": {"X": {"Type": "AWS::Future::Group", "Metadata": {PLAN_METADATA_KEY: record}}}}
    plan = plan_stacks([parse_stack("S", template)])
    assert plan.node_groups == []
    assert any("S/X: fmconstructs:plan kind 'node-group' on AWS::Future::Group" in n for n in plan.notes)


def test_write_and_read_round_trip() -> None:
    scene = new_scene()
    resource = cdk.CfnResource(scene.stack, "R", type="Custom::Thing")
    write_plan_record(resource, PlanKind.NODE_GROUP, backend="pcs")
    write_plan_record(
        cdk.CfnResource(scene.stack, "S", type="Custom::Thing"),
        PlanKind.NODE_GROUP,
        backend="hyperpod",
        lustre_efa_interfaces={"gpu": "decided-on-node"},
    )
    resources = Template.from_stack(scene.stack).to_json()
    r, s = resources["Resources"]["R"], resources["Resources"]["S"]
    assert r["Metadata"][PLAN_METADATA_KEY] == {"version": 1, "kind": "node-group", "backend": "pcs"}
    assert LUSTRE_EFA_METADATA_KEY not in r["Metadata"]
    assert s["Metadata"][LUSTRE_EFA_METADATA_KEY] == {"gpu": "decided-on-node"}
    read = read_plan_record(s)
    assert read is not None
    assert (read.supported, read.kind, read.backend) == (True, "node-group", "hyperpod")
    assert read.lustre_efa_interfaces == {"gpu": "decided-on-node"}
    assert read_plan_record({"Type": "X"}) is None


# --- the constructs write it ----------------------------------------------------------------------------------------
#: The record each construct's resource type carries.
WRITTEN = {
    "AWS::PCS::ComputeNodeGroup": ("node-group", "pcs"),
    "AWS::EKS::Nodegroup": ("node-group", "eks"),
    "AWS::FSx::FileSystem": ("file-system", "fsx-lustre"),
    "Custom::PclusterCluster": ("node-group", "parallelcluster"),
    "AWS::SageMaker::Cluster": ("node-group", "hyperpod"),
}


def test_the_example_apps_node_groups_and_file_systems_carry_the_record(example_stacks: dict[str, Any]) -> None:
    seen: dict[str, int] = {}
    for stack in example_stacks.values():
        template = Template.from_stack(stack).to_json()
        for resource in template.get("Resources", {}).values():
            if resource["Type"] not in WRITTEN:
                continue
            record = read_plan_record(resource)
            assert record is not None, resource["Type"]
            assert (record.supported, record.kind, record.backend) == (True, *WRITTEN[resource["Type"]])
            seen[resource["Type"]] = seen.get(resource["Type"], 0) + 1
    assert set(seen) == set(WRITTEN)  # every backend and the file system, in the example app
