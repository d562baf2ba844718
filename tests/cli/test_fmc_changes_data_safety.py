"""Data safety of the resources added since 0.2 (issue 30): `fmc changes` and the stack policy know the Slurm
accounting database, its secret, the remediation table and the failure queues; a change the service refuses (the
database's admin user, an EKS version downgrade) is flagged before the deploy fails.

GIVEN two syntheses of the same app, one edit apart, WHEN `fmc changes` compares them, THEN the edit that loses data
or fails the deploy is a blocking finding; and the stack policy denies replace/delete on each such resource.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sqs as sqs

from fmconstructs.cli.changes import REFUSED, REMOVE, RENAME, REPLACE, STATEFUL_TYPES, compare_templates
from fmconstructs.cli.stack_policy import stack_policy
from fmconstructs.parallelcluster import SlurmAccountingDatabase

from tests.conftest import new_scene

DATABASE_TYPES = {"AWS::RDS::DBCluster", "AWS::RDS::DBInstance", "AWS::SecretsManager::Secret"}


def _accounting(id: str = "Accounting", **props: Any) -> dict[str, Any]:
    scene = new_scene()
    SlurmAccountingDatabase(scene.stack, id, vpc=scene.vpc, **props)
    template: dict[str, Any] = cdk.assertions.Template.from_stack(scene.stack).to_json()
    return template


@pytest.fixture(scope="module")
def accounting() -> dict[str, Any]:
    return _accounting()


def test_renaming_the_accounting_database_construct_is_blocking(accounting: dict[str, Any]) -> None:
    # A new construct id gives new logical ids: CloudFormation would create a new, empty accounting database.
    report = compare_templates("S", accounting, _accounting("SlurmAccounting"))
    lost = {f.resource_type for f in report.blocking if f.kind in (RENAME, REMOVE)}
    assert lost >= DATABASE_TYPES, [f.to_json() for f in report.findings]
    assert all(f.stateful for f in report.findings if f.resource_type in DATABASE_TYPES)


def test_a_new_admin_user_name_is_refused_before_the_deploy_fails(accounting: dict[str, Any]) -> None:
    report = compare_templates("S", accounting, _accounting(user_name="slurmadmin"))
    refused = [f for f in report.findings if f.resource_type == "AWS::RDS::DBCluster" and f.kind == REFUSED]
    assert [f.prop for f in refused] == ["MasterUsername"]
    assert refused[0].fails and refused[0].blocking
    assert "ModifyDBCluster" in refused[0].detail or "rds" in refused[0].detail.lower()


def test_the_same_database_has_no_findings(accounting: dict[str, Any]) -> None:
    assert compare_templates("S", accounting, _accounting()).findings == []


def test_the_stack_policy_protects_the_database_its_instance_and_its_secret(accounting: dict[str, Any]) -> None:
    policy = stack_policy("S", accounting)
    denied = policy["Statement"][1]["Resource"]
    types = {accounting["Resources"][r.split("/", 1)[1]]["Type"] for r in denied}
    assert types >= DATABASE_TYPES


def _with(kind: str, id: str) -> dict[str, Any]:
    scene = new_scene()
    if kind == "table":
        key = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
        dynamodb.Table(scene.stack, id, partition_key=key, table_name="fmc-remediation")
    else:
        sqs.Queue(scene.stack, id, queue_name="fmc-failures")
    template: dict[str, Any] = cdk.assertions.Template.from_stack(scene.stack).to_json()
    return template


@pytest.mark.parametrize("kind", ["table", "queue"])
def test_the_remediation_table_and_failure_queues_are_stateful(kind: str) -> None:
    report = compare_templates("S", _with(kind, "A"), _with(kind, "B"))
    assert report.blocking, [f.to_json() for f in report.findings]
    assert {f.resource_type for f in report.blocking} <= STATEFUL_TYPES


@pytest.mark.parametrize("kind", ["table", "queue"])
def test_renaming_the_table_or_queue_replaces_it(kind: str) -> None:
    old = _with(kind, "A")
    new = _with(kind, "A")
    (resource,) = new["Resources"].values()
    name_key = "TableName" if kind == "table" else "QueueName"
    resource["Properties"][name_key] = "renamed"
    report = compare_templates("S", old, new)
    assert [(f.kind, f.prop) for f in report.blocking] == [(REPLACE, name_key)]


def _eks(version: object) -> dict[str, Any]:
    properties = {"Name": "train", "Version": version, "RoleArn": "arn:aws:iam::123456789012:role/eks"}
    return {"Resources": {"Cluster": {"Type": "AWS::EKS::Cluster", "Properties": properties}}}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("1.32", "1.31", [(REFUSED, "Version")]),
        ("1.32", "1.9", [(REFUSED, "Version")]),  # numeric order, not string order
        ("1.31", "1.32", []),  # an upgrade: EKS updates in place
        ("1.9", "1.32", []),
        ("1.32", {"Ref": "Version"}, []),  # a deploy-time value: fmc cannot tell
        ("1.32", "1.32", []),
    ],
    ids=["downgrade", "numeric-order", "upgrade", "upgrade-numeric", "token", "same"],
)
def test_an_eks_version_downgrade_is_flagged(old: object, new: object, expected: list[tuple[str, str]]) -> None:
    report = compare_templates("S", _eks(old), _eks(new))
    assert [(f.kind, f.prop) for f in report.findings if f.kind == REFUSED] == expected
    assert all(f.fails for f in report.findings if f.kind == REFUSED)
