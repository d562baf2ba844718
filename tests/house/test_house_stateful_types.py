"""Every resource type the library synthesizes is classified for `fmc changes` and the stack policy (issue 30).

GIVEN every example stack (nested stacks included) and the opt-in constructs the examples do not use (the Slurm
accounting database), WHEN their resource types are collected, THEN each type is either stateful
(``fmconstructs.cli.changes.STATEFUL_TYPES``: replacement or removal is blocking and the stack policy denies it) or
in the reviewed list below with the reason it holds nothing that a replacement loses; and every AWS type classified
has create-only data (``tools/gen_create_only.py``), so a replacing edit is seen. A new type fails this test until it
is reviewed.
"""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template
from constructs import Construct

from fmconstructs.cli.changes import STATEFUL_TYPES
from fmconstructs.cli.create_only_data import CREATE_ONLY
from fmconstructs.parallelcluster import SlurmAccountingDatabase

from tests.conftest import new_scene

_NETWORK = "network plumbing: recreated from the template, holds no data"
_POLICY = "permissions or configuration: recreated from the template"
_RECIPE = "a build recipe: the images it built are kept (AMIs are not template resources)"
_MANIFEST = "a Kubernetes object applied from the template (its data lives in the cluster's own volumes, if any)"

#: Types whose replacement loses nothing the template does not recreate, with why.
STATELESS: dict[str, str] = {
    "AWS::APS::RuleGroupsNamespace": "rules rendered from the template",
    "AWS::APS::Scraper": "a scraper: its samples are in the workspace (stateful)",
    "AWS::CloudFormation::Stack": "a nested stack: its own resources are classified one by one",
    "AWS::CloudFormation::CustomResource": _POLICY,
    "AWS::CloudWatch::Alarm": _POLICY,
    "AWS::EC2::EIP": _NETWORK + " (a NAT gateway's address; a new one is allocated)",
    "AWS::EC2::FlowLog": _NETWORK + " (the logs are in its log group)",
    "AWS::EC2::InternetGateway": _NETWORK,
    "AWS::EC2::LaunchTemplate": _POLICY + " (new versions, not replacements, on property changes)",
    "AWS::EC2::NatGateway": _NETWORK,
    "AWS::EC2::PlacementGroup": _POLICY + " (running instances are replaced with their node group, which is stateful)",
    "AWS::EC2::Route": _NETWORK,
    "AWS::EC2::RouteTable": _NETWORK,
    "AWS::EC2::SecurityGroup": _NETWORK,
    "AWS::EC2::SecurityGroupEgress": _NETWORK,
    "AWS::EC2::SecurityGroupIngress": _NETWORK,
    "AWS::EC2::Subnet": _NETWORK,
    "AWS::EC2::SubnetRouteTableAssociation": _NETWORK,
    "AWS::EC2::VPC": _NETWORK + " (its replacement fails while stateful resources use it: they are protected)",
    "AWS::EC2::VPCEndpoint": _NETWORK,
    "AWS::EC2::VPCGatewayAttachment": _NETWORK,
    "AWS::EKS::AccessEntry": _POLICY,
    "AWS::EKS::Addon": _POLICY + " (an add-on's workloads are redeployed by EKS)",
    "AWS::EKS::PodIdentityAssociation": _POLICY,
    "AWS::Events::Rule": _POLICY,
    "AWS::IAM::InstanceProfile": _POLICY,
    "AWS::IAM::ManagedPolicy": _POLICY,
    "AWS::IAM::Policy": _POLICY,
    "AWS::IAM::Role": _POLICY,
    "AWS::ImageBuilder::Component": _RECIPE,
    "AWS::ImageBuilder::DistributionConfiguration": _RECIPE,
    "AWS::ImageBuilder::ImagePipeline": _RECIPE,
    "AWS::ImageBuilder::ImageRecipe": _RECIPE,
    "AWS::ImageBuilder::InfrastructureConfiguration": _RECIPE,
    "AWS::Lambda::EventInvokeConfig": _POLICY,
    "AWS::Lambda::Function": "code from the template's assets",
    "AWS::Lambda::LayerVersion": "code from the template's assets",
    "AWS::Lambda::Permission": _POLICY,
    "AWS::Logs::LogGroup": "logs: aws-cdk-lib retains a log group by default (aws_logs.LogGroupProps removal_policy "
    "'Default: RemovalPolicy.Retain'), so a replacement leaves the old one and its logs in place",
    "AWS::Logs::MetricFilter": _POLICY,
    "AWS::RDS::DBClusterParameterGroup": _POLICY,
    "AWS::RDS::DBSubnetGroup": _NETWORK,
    "AWS::S3::BucketPolicy": _POLICY,
    "AWS::SNS::Subscription": _POLICY,
    "AWS::SNS::Topic": "a topic holds no messages (delivery is immediate; failures go to the queues, stateful)",
    "AWS::SNS::TopicPolicy": _POLICY,
    "AWS::SQS::QueuePolicy": _POLICY,
    "AWS::SSM::Parameter": "a value rendered from the template",
    "AWS::Scheduler::ScheduleGroup": _POLICY,
    "Custom::AWSCDK-EKS-HelmChart": _MANIFEST,
    "Custom::AWSCDK-EKS-KubernetesResource": _MANIFEST,
    "Custom::CDKBucketDeployment": "files copied from the template's assets",
    "Custom::FmGrafanaProvisioning": "dashboards and data sources rendered from the template",
}


def _types(root: Construct) -> set[str]:
    stacks = [c for c in root.node.find_all() if isinstance(c, cdk.Stack)]
    return {
        str(r["Type"]) for stack in stacks for r in Template.from_stack(stack).to_json().get("Resources", {}).values()
    }


@pytest.fixture(scope="module")
def synthesized(example_stacks: dict[str, cdk.Stack]) -> set[str]:
    scene = new_scene()
    SlurmAccountingDatabase(scene.stack, "Accounting", vpc=scene.vpc)
    (first,) = list(example_stacks.values())[:1]
    return _types(first.node.root) | _types(scene.app)


def test_every_synthesized_type_is_classified(synthesized: set[str]) -> None:
    unclassified = sorted(synthesized - STATEFUL_TYPES - set(STATELESS))
    assert not unclassified, (
        f"new resource types {unclassified}: add each to fmconstructs.cli.changes.STATEFUL_TYPES (if a replacement "
        "or removal loses data or running work) or to STATELESS here with the reason, and to "
        "tools/gen_create_only.py TYPES"
    )


def test_no_type_is_both(synthesized: set[str]) -> None:
    assert not STATEFUL_TYPES & set(STATELESS)


def test_every_classified_aws_type_has_create_only_data() -> None:
    missing = sorted(t for t in STATEFUL_TYPES | set(STATELESS) if t.startswith("AWS::") and t not in CREATE_ONLY)
    assert not missing, f"run tools/gen_create_only.py with {missing} in its TYPES"


def test_the_accounting_database_is_stateful(synthesized: set[str]) -> None:
    assert {
        "AWS::RDS::DBCluster",
        "AWS::RDS::DBInstance",
        "AWS::SecretsManager::Secret",
    } <= synthesized & STATEFUL_TYPES
