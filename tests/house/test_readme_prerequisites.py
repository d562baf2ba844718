"""The docs' "Prerequisites a deployer needs" (docs/prerequisites.md): what synthesis cannot check is written down, next to the code that
depends on it."""

from __future__ import annotations

import inspect

import aws_cdk as cdk

from fmconstructs.compute.fleet import autoscaling_service_linked_role_arn
from fmconstructs.observability.grafana import GrafanaAuthentication, GrafanaWorkspace

from tests.house.docs_pages import page


def prerequisites() -> str:
    text = page("prerequisites.md")
    assert text.startswith("# Prerequisites a deployer needs\n")
    return text


def test_identity_center_for_the_default_grafana_sign_in():
    """GrafanaWorkspace signs in with IAM Identity Center by default, which must be enabled in the account."""
    default = inspect.signature(GrafanaWorkspace.__init__).parameters["authentication"].default
    assert default == (GrafanaAuthentication.AWS_SSO,)
    assert "IAM Identity Center" in prerequisites()


def test_autoscaling_service_linked_role_must_exist_for_encrypted_fleet_topics():
    """The fleet's key policy names AWSServiceRoleForAutoScaling; KMS refuses principals that do not exist."""
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(account="123456789012", region="us-east-1"))
    role = stack.resolve(autoscaling_service_linked_role_arn(stack))
    assert str(role).endswith(":role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling']]}")
    section = prerequisites()
    assert "AWSServiceRoleForAutoScaling" in section
    assert "aws iam create-service-linked-role --aws-service-name autoscaling.amazonaws.com" in section


def test_pcs_capacity_block_permission_and_one_creating_cluster():
    """PCS User Guide: ec2:DescribeCapacityReservations for node groups on Capacity Blocks; PCS API CreateCluster:
    one cluster in the Creating state per Region and account."""
    section = prerequisites()
    assert "`ec2:DescribeCapacityReservations`" in section
    assert "`ec2:DescribeCapacityBlocks`" in section and "`ec2:DescribeCapacityBlockStatus`" in section
    assert "one cluster per Region and account" in section and "`Creating`" in section


def test_eks_graceful_node_shutdown_for_quiet_scale_in():
    assert "shutdownGracePeriod" in prerequisites()
