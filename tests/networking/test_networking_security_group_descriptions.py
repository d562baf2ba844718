"""Security group descriptions are pinned: a release cannot reword one.

``GroupDescription`` is create-only (cfn-lint 1.58.0 schema of AWS::EC2::SecurityGroup: ``createOnlyProperties``
GroupDescription, GroupName, VpcId; aws-cdk's service spec marks it as replacing). Rewording the description of a
deployed group makes CloudFormation replace the group, and with it every resource whose create-only properties name
it: an FSx for Lustre file system's ``SecurityGroupIds`` (a new, empty /fsx), a PCS cluster's networking (the cluster
and its node groups). The constructs build these strings from code, so nothing else notices a change.

Why a literal table: this is one of the rare places where a checked-in copy of the output is the point. The test
must fail when the text changes, whatever the reason (a wording fix, an f-string, an aws-cdk-lib upgrade that rewords
its own default, such as the EKS control plane group); computing the expected value from the same code would pass.
If a description must change, that is a breaking change: keep the old text for existing construct paths, or document
the replacement in the CHANGELOG, and only then update the table. Keys are construct paths (stable public API: ids),
not logical ids.
"""

from __future__ import annotations

import re

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Template

from fmconstructs.compute import GpuLaunchTemplate

from tests.conftest import Scene

#: Every AWS::EC2::SecurityGroup of the example app (examples/app.py build), by construct path.
EXAMPLE_APP_DESCRIPTIONS: dict[str, str] = {
    "FmCompute/Efa/Resource/Resource": "EFA: all traffic to and from members of this group only",
    "FmCompute/NodeSecurityGroup/Resource": "GPU nodes: outbound only",
    "FmEksGb200/Cluster/EfaSecurityGroup/Resource/Resource": "EFA: all traffic to and from members of this group only",
    "FmEksGb200/Cluster/Resource/ControlPlaneSecurityGroup/Resource": "EKS Control Plane Security Group",
    "FmEksGb200/Lustre/SecurityGroup/Resource": "FSx for Lustre: Lustre ports (TCP 988, 1018-1023) from its clients only",
    "FmEksP5en/CapacityBlockEvents/HandlerSecurityGroup/Resource": "Capacity Block events handler: EKS API server (443) and AWS APIs",
    "FmEksP5en/Cluster/EfaSecurityGroup/Resource/Resource": "EFA: all traffic to and from members of this group only",
    "FmEksP5en/Cluster/Resource/ControlPlaneSecurityGroup/Resource": "EKS Control Plane Security Group",
    "FmEksP5en/Lustre/SecurityGroup/Resource": "FSx for Lustre: Lustre ports (TCP 988, 1018-1023) from its clients only",
    "FmEksP5en/NodeRemediation/HandlerSecurityGroup/Resource": "Node remediation handler",
    "FmHyperPodEks/Cluster/EfaSecurityGroup/Resource/Resource": "EFA: all traffic to and from members of this group only",
    "FmHyperPodEks/Cluster/Resource/ControlPlaneSecurityGroup/Resource": "EKS Control Plane Security Group",
    "FmHyperPodEks/HyperPod/EfaSecurityGroup/Resource/Resource": "HyperPod nodes: EFA within the group, HTTPS out",
    "FmHyperPodEks/Lustre/SecurityGroup/Resource": "FSx for Lustre: Lustre ports (TCP 988, 1018-1023) from its clients only",
    "FmHyperPodSlurm/FileSystem/SecurityGroup/Resource": "FSx for Lustre: Lustre ports (TCP 988, 1018-1023) from its clients only",
    "FmHyperPodSlurm/HyperPod/EfaSecurityGroup/Resource/Resource": "HyperPod nodes: EFA within the group, HTTPS out",
    "FmImages/Gb200/SecurityGroup/Resource": "fmconstructs: Image Builder instances of fmimages-gb200-66958f05 (no ingress; egress for installers and Systems Manager)",
    "FmImages/X86/SecurityGroup/Resource": "fmconstructs: Image Builder instances of fmimages-x86-960e72eb (no ingress; egress for installers and Systems Manager)",
    "FmParallelClusterP5en/Efa/Resource/Resource": "EFA: all traffic to and from members of this group only",
    "FmParallelClusterP5en/Lustre/SecurityGroup/Resource": "FSx for Lustre: Lustre ports (TCP 988, 1018-1023) from its clients only",
    "FmPcsGb200/Cluster/EfaSecurityGroup/Resource/Resource": "EFA: all traffic to and from members of this group only",
    "FmPcsGb200/Cluster/SecurityGroup/Resource": "AWS PCS cluster: controller, login and compute nodes reach each other; all outbound",
    "FmPcsP5/Cluster/EfaSecurityGroup/Resource/Resource": "EFA: all traffic to and from members of this group only",
    "FmPcsP5/Cluster/SecurityGroup/Resource": "AWS PCS cluster: controller, login and compute nodes reach each other; all outbound",
    "FmPcsP5/Lustre/SecurityGroup/Resource": "FSx for Lustre: Lustre ports (TCP 988, 1018-1023) from its clients only",
    "FmPlatform/Platform/Cluster/EfaSecurityGroup/Resource/Resource": "EFA: all traffic to and from members of this group only",
    "FmPlatform/Platform/Cluster/SecurityGroup/Resource": "AWS PCS cluster: controller, login and compute nodes reach each other; all outbound",
    "FmPlatform/Platform/FileSystem/SecurityGroup/Resource": "FSx for Lustre: Lustre ports (TCP 988, 1018-1023) from its clients only",
    "FmPrivateP5/Cluster/EfaSecurityGroup/Resource/Resource": "EFA: all traffic to and from members of this group only",
    "FmPrivateP5/Cluster/SecurityGroup/Resource": "AWS PCS cluster: controller, login and compute nodes reach each other; all outbound",
    "FmPrivateP5/Endpoints/SecurityGroup/Resource": "fmconstructs VPC interface endpoints: HTTPS from the cluster network only",
    "FmServeP5en/Cluster/EfaSecurityGroup/Resource/Resource": "EFA: all traffic to and from members of this group only",
    "FmServeP5en/Cluster/Resource/ControlPlaneSecurityGroup/Resource": "EKS Control Plane Security Group",
    "FmStorage/Efa/Resource/Resource": "EFA: all traffic to and from members of this group only",
    "FmStorage/Lustre/SecurityGroup/Resource": "FSx for Lustre: Lustre ports (TCP 988, 1018-1023) from its clients only",
    "FmStorage/NodeSecurityGroup/Resource": "GPU nodes: outbound only",
}

#: Groups the library creates that the example app does not: one construction each below.
LIBRARY_ONLY_DESCRIPTIONS: dict[str, str] = {
    "Test/Lt/SecurityGroup/Resource": "GPU nodes (p5.48xlarge): outbound only; open inbound through connections",
    "Test/Lt/EfaSecurityGroup/Resource/Resource": "EFA: all traffic to and from members of this group only",
}


def _descriptions(root: cdk.App | cdk.Stack) -> dict[str, object]:
    """``GroupDescription`` of every security group under ``root``, resolved, by construct path."""
    found: dict[str, object] = {}
    for construct in root.node.find_all():
        if isinstance(construct, cdk.CfnResource) and construct.cfn_resource_type == "AWS::EC2::SecurityGroup":
            assert isinstance(construct, ec2.CfnSecurityGroup), construct.node.path
            found[construct.node.path] = cdk.Stack.of(construct).resolve(construct.group_description)
    return found


def _app(stacks: dict[str, cdk.Stack]) -> cdk.App:
    app = next(iter(stacks.values())).node.root
    assert isinstance(app, cdk.App)
    return app


def test_every_example_security_group_keeps_its_description(example_stacks: dict[str, cdk.Stack]) -> None:
    assert _descriptions(_app(example_stacks)) == EXAMPLE_APP_DESCRIPTIONS


def test_the_table_covers_every_security_group_in_the_templates(example_stacks: dict[str, cdk.Stack]) -> None:
    # The walk above finds L1 constructs; the templates are what CloudFormation sees: same count, same texts.
    described = set(EXAMPLE_APP_DESCRIPTIONS.values())
    total = 0
    for stack in example_stacks.values():
        groups = Template.from_stack(stack).find_resources("AWS::EC2::SecurityGroup")
        total += len(groups)
        for group in groups.values():
            assert group["Properties"]["GroupDescription"] in described
    assert total == len(EXAMPLE_APP_DESCRIPTIONS)


def test_library_groups_outside_the_example_keep_their_descriptions(scene: Scene) -> None:
    GpuLaunchTemplate(scene.stack, "Lt", instance_type="p5.48xlarge", vpc=scene.vpc, subnet=scene.subnet_a)
    assert _descriptions(scene.stack) == LIBRARY_ONLY_DESCRIPTIONS


@pytest.mark.parametrize("description", sorted(set(EXAMPLE_APP_DESCRIPTIONS.values())))
def test_each_pinned_description_is_one_ec2_accepts(description: str) -> None:
    # EC2 CreateSecurityGroup GroupDescription: up to 255 characters of a-z, A-Z, 0-9, spaces and ._-:/()#,@[]+=&;{}!$*
    # (the rule fmconstructs.networking.security_group checks for EfaSecurityGroup(description=...)).
    assert re.fullmatch(r"[a-zA-Z0-9 ._\-:/()#,@\[\]+=&;{}!$*]{1,255}", description)
