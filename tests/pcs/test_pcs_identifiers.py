"""PCS ids and ARNs given as strings: an id where an ARN is needed (and the reverse, and another resource type's ARN)
is refused with a message that says what was given and what to pass. Before: ``PcsInstanceProfile(cluster_arn=...)``
took any ``arn:...:pcs:...`` string (a node group ARN too) and refused an id with a generic pattern message."""

from __future__ import annotations

import pytest

from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.pcs import PcsInstanceProfile, PcsResourceType, check_pcs_arn, check_pcs_id

from tests.conftest import new_scene

CLUSTER_ARN = "arn:aws:pcs:us-east-1:123456789012:cluster/pcs_abc123def4"
GROUP_ARN = "arn:aws:pcs:us-east-1:123456789012:cluster/pcs_abc123def4/computenodegroup/pcs_ng0123456"
QUEUE_ARN = "arn:aws:pcs:us-east-1:123456789012:cluster/pcs_abc123def4/queue/pcs_q01234567"
GOV_CLUSTER_ARN = "arn:aws-us-gov:pcs:us-gov-west-1:123456789012:cluster/pcs_abc123def4"


@pytest.mark.parametrize(
    ("resource", "value"),
    [
        (PcsResourceType.CLUSTER, CLUSTER_ARN),
        (PcsResourceType.CLUSTER, GOV_CLUSTER_ARN),
        (PcsResourceType.COMPUTE_NODE_GROUP, GROUP_ARN),
        (PcsResourceType.QUEUE, QUEUE_ARN),
    ],
)
def test_arns_of_the_right_type_pass(resource, value):
    assert check_pcs_arn("arn", value, resource) == value


@pytest.mark.parametrize(
    ("resource", "value", "message"),
    [
        (PcsResourceType.CLUSTER, "pcs_abc123def4", r"a PCS cluster ARN .*, not an id, got 'pcs_abc123def4'"),
        (PcsResourceType.CLUSTER, GROUP_ARN, r"a PCS cluster ARN .*, not a compute node group ARN"),
        (PcsResourceType.CLUSTER, QUEUE_ARN, r"a PCS cluster ARN .*, not a queue ARN"),
        (PcsResourceType.COMPUTE_NODE_GROUP, CLUSTER_ARN, r"compute node group ARN .*, not a cluster ARN"),
        (PcsResourceType.COMPUTE_NODE_GROUP, "pcs_ng0123456", r"compute node group ARN .*, not an id"),
        (PcsResourceType.CLUSTER, "arn:aws:iam::123456789012:role/x", r"^arn must be a PCS cluster ARN"),
        (PcsResourceType.CLUSTER, "my-cluster", r"^arn must be a PCS cluster ARN"),
        (PcsResourceType.CLUSTER, CLUSTER_ARN + "\n", r"^arn must be a PCS cluster ARN"),
    ],
)
def test_wrong_arns_are_refused(resource, value, message):
    with pytest.raises(FmValidationError, match=message):
        check_pcs_arn("arn", value, resource)


@pytest.mark.parametrize(
    ("resource", "value", "message"),
    [
        (
            PcsResourceType.COMPUTE_NODE_GROUP,
            GROUP_ARN,
            r"a PCS compute node group id .*, not a compute node group ARN: take the id after the last '/'",
        ),
        (PcsResourceType.COMPUTE_NODE_GROUP, CLUSTER_ARN, r"compute node group id .*, not a cluster ARN"),
        (PcsResourceType.CLUSTER, CLUSTER_ARN, r"a PCS cluster id .*, not a cluster ARN"),
        (PcsResourceType.CLUSTER, "arn:aws:s3:::bucket", r"a PCS cluster id .*, not an ARN"),
        (PcsResourceType.CLUSTER, "my-cluster", r"^id must be a PCS cluster id \('pcs_'"),
        (PcsResourceType.CLUSTER, "pcs_", r"^id must be a PCS cluster id"),
        (PcsResourceType.CLUSTER, "", r"^id must be a PCS cluster id"),
    ],
)
def test_wrong_ids_are_refused(resource, value, message):
    with pytest.raises(FmValidationError, match=message):
        check_pcs_id("id", value, resource)


def test_ids_pass():
    assert check_pcs_id("id", "pcs_ng0123456", PcsResourceType.COMPUTE_NODE_GROUP) == "pcs_ng0123456"


@pytest.mark.parametrize("value", [None, 5, ["pcs_abc"], b"pcs_abc"])
def test_non_strings_are_type_errors(value):
    with pytest.raises(FmTypeError):
        check_pcs_id("id", value, PcsResourceType.CLUSTER)
    with pytest.raises(FmTypeError):
        check_pcs_arn("arn", value, PcsResourceType.CLUSTER)


def test_deploy_time_values_pass():
    import aws_cdk as cdk

    stack = new_scene().stack
    value = cdk.CfnParameter(stack, "Id").value_as_string
    assert check_pcs_id("id", value, PcsResourceType.CLUSTER) == value
    arn = stack.format_arn(service="pcs", resource="cluster", resource_name=value)
    assert check_pcs_arn("arn", arn, PcsResourceType.CLUSTER) == arn


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("pcs_abc123def4", r"^cluster_arn must be a PCS cluster ARN .*, not an id"),
        (GROUP_ARN, r"^cluster_arn must be a PCS cluster ARN .*, not a compute node group ARN"),
    ],
)
def test_instance_profile_refuses_an_id_or_a_node_group_arn(value, message):
    scene = new_scene()
    with pytest.raises(FmValidationError, match=message):
        PcsInstanceProfile(scene.stack, "Profile", cluster_arn=value)


def test_instance_profile_takes_a_cluster_arn():
    scene = new_scene()
    profile = PcsInstanceProfile(scene.stack, "Profile", cluster_arn=CLUSTER_ARN)
    assert profile.role is not None
