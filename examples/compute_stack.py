"""FmCompute: one GPU launch template per catalog type, plus ODCR and Capacity Block variants."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct

from fmconstructs import (
    BUILTIN_INSTANCE_TYPES,
    CapacityBlock,
    CapacityReservation,
    ClusterPlacementGroup,
    EfaSecurityGroup,
    GpuAutoScalingGroup,
    GpuLaunchTemplate,
    UltraServerCapacityBlock,
    get_instance_spec,
)

from .lint import acknowledge_cfn_lint, acknowledge_nag
from .network import example_vpc
from .reservations import PLACEHOLDER_CAPACITY_BLOCK_IDS, PLACEHOLDER_ODCR_IDS, capacity_block_id, odcr_id

# cfn-lint 1.x checks InstanceType against a per-region list (E3628) that lags EC2 launches (GpuLaunchTemplate
# acknowledges E3628 itself for the UltraServer-only p6e-gb200.36xlarge).
_CFN_LINT_UNKNOWN_TYPES = {
    "p5e.48xlarge": "cfn-lint lists p5e.48xlarge for us-east-2 only; EC2 offers it in more regions and the template "
    "is region-agnostic",
}

# Placeholders (examples/reservations.py), overridden with `cdk synth -c fmconstructs:odcr-id:p5.48xlarge=cr-...`.
DEFAULT_ODCR_ID = PLACEHOLDER_ODCR_IDS["p5.48xlarge"]
DEFAULT_CAPACITY_BLOCK_ID = PLACEHOLDER_CAPACITY_BLOCK_IDS["p5en.48xlarge"]
# Public SSM parameter of the AWS Deep Learning Base OSS Nvidia Driver GPU AMI (Amazon Linux 2023), x86_64
# (DLAMI release notes: "Query AMI-ID with SSM parameter").
DLAMI_X86_PARAMETER = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-amazon-linux-2023/latest/ami-id"
DEFAULT_ULTRASERVER_GROUP_ARN = "arn:aws:resource-groups:us-east-1:123456789012:group/example-gb200-ultraserver-block"


class ComputeStack(Stack):
    """Launch templates for every GPU type in the catalog (self-managed policy) sharing one EFA security group."""

    def __init__(self, scope: Construct, id: str, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        ctx = self.node.try_get_context
        odcr = odcr_id(self, "p5.48xlarge")
        block_id = capacity_block_id(self, "p5en.48xlarge")
        ultraserver_arn = ctx("fmconstructs:ultraserver-resource-group-arn") or DEFAULT_ULTRASERVER_GROUP_ARN

        self.vpc = example_vpc(self)
        subnet = self.vpc.private_subnets[0]
        self.efa_security_group = EfaSecurityGroup(self, "Efa", vpc=self.vpc)
        self.placement_group = ClusterPlacementGroup(self, "PlacementGroup")
        self.node_security_group = ec2.SecurityGroup(
            self,
            "NodeSecurityGroup",
            vpc=self.vpc,
            description="GPU nodes: outbound only",
            allow_all_outbound=True,
        )
        common: dict[str, Any] = {
            "vpc": self.vpc,
            "subnet": subnet,
            "efa_security_group": self.efa_security_group,
            "security_groups": [self.node_security_group],
        }

        self.launch_templates: dict[str, GpuLaunchTemplate] = {}
        for instance_type in BUILTIN_INSTANCE_TYPES:
            spec = get_instance_spec(instance_type)
            if spec.ultraserver_types:
                # UltraServer types are sold only as UltraServer Capacity Blocks; no placement group on blocks.
                lt = GpuLaunchTemplate(
                    self,
                    _construct_id(instance_type),
                    instance_type=instance_type,
                    **common,
                    capacity=UltraServerCapacityBlock(resource_group_arn=ultraserver_arn),
                    max_nodes=18,
                )
            else:
                lt = GpuLaunchTemplate(
                    self,
                    _construct_id(instance_type),
                    instance_type=instance_type,
                    **common,
                    placement_group=self.placement_group,
                )
            self.launch_templates[instance_type] = lt

        self.launch_templates["p5.48xlarge+odcr"] = GpuLaunchTemplate(
            self,
            "P5Odcr",
            instance_type="p5.48xlarge",
            **common,
            placement_group=self.placement_group,
            capacity=CapacityReservation(reservation_id=odcr),
        )
        # A self-managed fleet on the Capacity Block: AMI from the public DLAMI SSM parameter (resolved at deploy
        # time, no lookup at synth), Session Manager instead of SSH, launch/terminate events to an encrypted topic.
        node_role = iam.Role(self, "FleetNodeRole", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
        node_role.add_managed_policy(iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSSMManagedInstanceCore"))
        acknowledge_nag(
            node_role,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSSMManagedInstanceCore]",
            "AmazonSSMManagedInstanceCore is the AWS-maintained minimum for Session Manager access to GPU nodes, "
            "which replaces SSH",
        )
        block_template = GpuLaunchTemplate(
            self,
            "P5enCapacityBlock",
            instance_type="p5en.48xlarge",
            **common,
            capacity=CapacityBlock(reservation_id=block_id, instance_count=2),
            max_nodes=2,
            machine_image=ec2.MachineImage.from_ssm_parameter(DLAMI_X86_PARAMETER),
            instance_profile=iam.InstanceProfile(self, "FleetInstanceProfile", role=node_role),
        )
        self.launch_templates["p5en.48xlarge+capacity-block"] = block_template
        # Encrypted launch/terminate events: GpuAutoScalingGroup adds the Auto Scaling service-linked role to this key's
        # policy (kms:GenerateDataKey*, kms:Decrypt), without which Auto Scaling cannot publish to the topic.
        fleet_key = kms.Key(self, "FleetEventsKey", enable_key_rotation=True)
        self.fleet_events = sns.Topic(self, "FleetEvents", master_key=fleet_key, enforce_ssl=True)
        self.fleet = GpuAutoScalingGroup(
            self,
            "P5enFleet",
            launch_template=block_template,
            min_nodes=2,
            max_nodes=2,
            notifications_topic=self.fleet_events,
        )
        for lt in self.launch_templates.values():
            if lt.instance_spec.instance_type in _CFN_LINT_UNKNOWN_TYPES:
                acknowledge_cfn_lint(lt.resource, "E3628", _CFN_LINT_UNKNOWN_TYPES[lt.instance_spec.instance_type])
        self._add_outputs()

    def _add_outputs(self) -> None:
        """What an operator needs to launch into, attach to or watch this stack's capacity."""
        for name, lt in self.launch_templates.items():
            what = (
                f"{lt.instance_type} ({lt.capacity.kind.value}, {lt.efa_interface_count} EFA interfaces, "
                f"{lt.efa_bandwidth_gbps_per_node:,.0f} Gbps EFA per node)"
            )
            CfnOutput(
                self,
                f"{_construct_id(name)}LaunchTemplateId",
                value=lt.launch_template_id,
                description=f"Launch template id for {what}",
            )
            CfnOutput(
                self,
                f"{_construct_id(name)}LaunchTemplateVersion",
                value=lt.version_number,
                description=f"Pinned launch template version for {lt.instance_type} (Capacity Blocks need a version, "
                "not $Latest)",
            )
        CfnOutput(
            self,
            "EfaSecurityGroupId",
            value=self.efa_security_group.security_group_id,
            description="EFA security group of the GPU nodes: give it to file systems and other EFA peers",
        )
        CfnOutput(
            self,
            "NodeSecurityGroupId",
            value=self.node_security_group.security_group_id,
            description="Security group on the GPU nodes' primary interfaces (outbound only; open inbound from it)",
        )
        CfnOutput(
            self,
            "PlacementGroupName",
            value=self.placement_group.placement_group_name,
            description="Cluster placement group of the On-Demand and ODCR templates",
        )
        CfnOutput(
            self,
            "FleetAutoScalingGroupName",
            value=self.fleet.auto_scaling_group_name,
            description="Auto Scaling group of the p5en Capacity Block fleet",
        )
        CfnOutput(
            self,
            "FleetDescribeCommand",
            value=self.fleet.describe_command,
            description="Lists the fleet's instances and their health",
        )
        CfnOutput(
            self,
            "FleetEventsTopicArn",
            value=self.fleet_events.topic_arn,
            description="SNS topic of the fleet's launch and terminate events (subscribe to be told about failures)",
        )


def _construct_id(instance_type: str) -> str:
    """``p6-b200.48xlarge`` -> ``P6B20048xlarge``: stable construct ids derived from the type name."""
    return "".join(part.capitalize() for part in instance_type.replace("+", "-").replace(".", "-").split("-"))
