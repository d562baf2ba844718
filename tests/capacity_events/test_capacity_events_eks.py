"""CapacityBlockEvents with an EKS cluster: IAM scoped to the cluster, access entry + node-cordon RBAC, VPC access."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template

from fmconstructs.capacity_events import CORDON_RULES, CapacityBlockEvents
from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import FmTypeError

from tests.conftest import ENV, new_app


def _cluster_stack(stack_id: str = "CbEks") -> tuple[cdk.Stack, GpuEksCluster, sns.Topic]:
    stack = cdk.Stack(new_app(), stack_id, env=ENV)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    cluster = GpuEksCluster(stack, "Cluster", vpc=vpc, system_node_group=None)
    return stack, cluster, sns.Topic(stack, "Alerts")


@pytest.fixture(scope="module")
def built() -> tuple[CapacityBlockEvents, Template]:
    stack, cluster, topic = _cluster_stack()
    events = CapacityBlockEvents(stack, "Blocks", alert_topic=topic, eks_cluster=cluster)
    return events, Template.from_stack(stack)


@pytest.fixture(scope="module")
def template(built) -> Template:
    return built[1]


@pytest.fixture(scope="module")
def public_template() -> Template:
    stack, cluster, topic = _cluster_stack()
    CapacityBlockEvents(stack, "Blocks", alert_topic=topic, eks_cluster=cluster, eks_in_vpc=False)
    return Template.from_stack(stack)


def _manifest(template: Template) -> list[dict[str, object]]:
    found = [
        r["Properties"]["Manifest"]
        for lid, r in template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").items()
        if lid.startswith("BlocksCordonRbac")
    ]
    assert len(found) == 1
    return json.loads(found[0])


def _policy_statements(template: Template) -> list[dict[str, object]]:
    policies = [
        r["Properties"]["PolicyDocument"]["Statement"]
        for lid, r in template.find_resources("AWS::IAM::Policy").items()
        if lid.startswith("BlocksHandlerRole")
    ]
    assert len(policies) == 1
    return policies[0]


def test_function_gets_the_cluster_name(template):
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "index.handler",
            "Environment": {
                "Variables": {
                    "TOPIC_ARN": Match.any_value(),
                    "EKS_CLUSTER_NAME": {"Ref": Match.string_like_regexp("^Cluster")},
                }
            },
        },
    )


def test_describe_cluster_scoped_to_the_cluster_arn(template):
    statements = _policy_statements(template)
    describe = [s for s in statements if s["Action"] == "eks:DescribeCluster"]
    assert len(describe) == 1
    assert describe[0]["Resource"]["Fn::GetAtt"][0].startswith("Cluster")
    assert describe[0]["Resource"]["Fn::GetAtt"][1] == "Arn"


def test_describe_instances_is_the_only_wildcard_and_no_ssm(template):
    statements = _policy_statements(template)
    # the drain/cordon's instance lookup, the extension check and the expiry schedule's reads of the block
    wildcard = sorted(json.dumps(s["Action"]) for s in statements if s["Resource"] == "*")
    assert wildcard == sorted(
        [
            '"ec2:DescribeInstances"',
            '["ec2:DescribeCapacityReservations", "ec2:DescribeCapacityBlockExtensionHistory"]',
            '["ec2:DescribeCapacityReservations", "ec2:DescribeCapacityBlocks"]',
        ]
    )
    assert not [s for s in statements if "ssm" in json.dumps(s["Action"])]
    assert not [s for s in statements if "eks:" in json.dumps(s["Action"]) and s["Action"] != "eks:DescribeCluster"]


def test_access_entry_maps_the_role_to_one_group_without_access_policy(built, template):
    events, _ = built
    entries = {lid: r["Properties"] for lid, r in template.find_resources("AWS::EKS::AccessEntry").items()}
    ours = [p for lid, p in entries.items() if lid.startswith("BlocksKubernetesAccess")]
    assert len(ours) == 1
    entry = ours[0]
    assert entry["KubernetesGroups"] == [events.kubernetes_group]
    assert entry["Type"] == "STANDARD"
    assert "AccessPolicies" not in entry
    assert entry["PrincipalArn"]["Fn::GetAtt"][0].startswith("BlocksHandlerRole")
    assert entry["ClusterName"]["Ref"].startswith("Cluster")


def test_cluster_role_allows_only_get_list_patch_on_nodes(built, template):
    events, _ = built
    role, binding = _manifest(template)
    assert role["kind"] == "ClusterRole" and role["metadata"]["name"] == events.cluster_role_name
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}]
    assert role["rules"] == [dict(r) for r in CORDON_RULES]
    assert binding["kind"] == "ClusterRoleBinding"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": events.cluster_role_name,
    }
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": events.kubernetes_group}
    ]


def test_handler_runs_in_the_cluster_subnets_with_its_own_security_group(template):
    function = next(
        r["Properties"]
        for lid, r in template.find_resources("AWS::Lambda::Function").items()
        if lid.startswith("BlocksHandler")
    )
    config = function["VpcConfig"]
    assert [g["Fn::GetAtt"][0] for g in config["SecurityGroupIds"]] == [
        next(
            lid
            for lid in template.find_resources("AWS::EC2::SecurityGroup")
            if lid.startswith("BlocksHandlerSecurityGroup")
        )
    ]
    assert sorted(s["Ref"] for s in config["SubnetIds"]) == sorted(
        lid for lid in template.find_resources("AWS::EC2::Subnet") if "Private" in lid
    )


def test_api_server_admits_the_handler_on_443_only(template):
    rules = [
        r["Properties"]
        for lid, r in template.find_resources("AWS::EC2::SecurityGroupIngress").items()
        if lid.startswith("BlocksApiServerFromHandler")
    ]
    assert len(rules) == 1
    rule = rules[0]
    assert (rule["IpProtocol"], rule["FromPort"], rule["ToPort"]) == ("tcp", 443, 443)
    assert rule["GroupId"]["Fn::GetAtt"][1] == "ClusterSecurityGroupId"
    assert rule["SourceSecurityGroupId"]["Fn::GetAtt"][0].startswith("BlocksHandlerSecurityGroup")


def test_role_has_eni_management_for_the_vpc(template):
    role = next(
        r for lid, r in template.find_resources("AWS::IAM::Role").items() if lid.startswith("BlocksHandlerRole")
    )
    assert "AWSLambdaENIManagementAccess" in json.dumps(role["Properties"]["ManagedPolicyArns"])
    assert "AWSLambdaVPCAccessExecutionRole" not in json.dumps(role["Properties"])


def test_outside_the_vpc_no_network_resources(public_template):
    function = next(
        r["Properties"]
        for lid, r in public_template.find_resources("AWS::Lambda::Function").items()
        if lid.startswith("BlocksHandler")
    )
    assert "VpcConfig" not in function
    assert not [lid for lid in public_template.find_resources("AWS::EC2::SecurityGroup") if lid.startswith("Blocks")]
    assert not [
        lid for lid in public_template.find_resources("AWS::EC2::SecurityGroupIngress") if lid.startswith("Blocks")
    ]
    role = next(
        r for lid, r in public_template.find_resources("AWS::IAM::Role").items() if lid.startswith("BlocksHandlerRole")
    )
    assert "ManagedPolicyArns" not in role["Properties"]
    # the Kubernetes access is the same
    assert [lid for lid in public_template.find_resources("AWS::EKS::AccessEntry") if lid.startswith("Blocks")]


def test_two_constructs_on_one_cluster_get_distinct_groups_and_roles():
    stack, cluster, topic = _cluster_stack()
    a = CapacityBlockEvents(stack, "A", alert_topic=topic, eks_cluster=cluster)
    b = CapacityBlockEvents(stack, "B", alert_topic=topic, eks_cluster=cluster, eks_in_vpc=False)
    assert a.kubernetes_group != b.kubernetes_group
    assert a.cluster_role_name != b.cluster_role_name
    assert a.security_group is not None and b.security_group is None


def test_attributes_without_eks_are_none():
    stack, _, topic = _cluster_stack()
    events = CapacityBlockEvents(stack, "Blocks", alert_topic=topic)
    assert (events.kubernetes_group, events.access_entry, events.rbac, events.security_group) == (None,) * 4
    assert "EKS_CLUSTER_NAME" not in json.dumps(Template.from_stack(stack).find_resources("AWS::Lambda::Function"))


def test_token_cluster_name_synthesizes():
    stack = cdk.Stack(new_app(), "CbEksToken", env=ENV)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    name = cdk.CfnParameter(stack, "ClusterName").value_as_string
    cluster = GpuEksCluster(stack, "Cluster", vpc=vpc, cluster_name=name, system_node_group=None)
    CapacityBlockEvents(stack, "Blocks", alert_topic=sns.Topic(stack, "Alerts"), eks_cluster=cluster)
    entries = Template.from_stack(stack).find_resources("AWS::EKS::AccessEntry")
    ours = [r["Properties"] for lid, r in entries.items() if lid.startswith("BlocksKubernetesAccess")]
    assert len(ours) == 1
    assert ours[0]["ClusterName"]["Ref"].startswith("Cluster")


@pytest.mark.parametrize(
    ("parameter", "value"),
    [
        ("eks_cluster", "fm-eks"),
        ("eks_cluster", 1),
        ("eks_cluster", True),
        ("eks_in_vpc", "yes"),
        ("eks_in_vpc", 1),
        ("eks_in_vpc", None),
    ],
)
def test_rejects_bad_eks_input(parameter, value):
    stack, _, topic = _cluster_stack()
    with pytest.raises(FmTypeError, match=rf"^{parameter}"):
        CapacityBlockEvents(stack, "Blocks", alert_topic=topic, **{parameter: value})


def test_rejects_the_underlying_l2_cluster():
    stack, cluster, topic = _cluster_stack()
    with pytest.raises(FmTypeError, match=r"^eks_cluster .*GpuEksCluster"):
        CapacityBlockEvents(stack, "Blocks", alert_topic=topic, eks_cluster=cluster.cluster)  # type: ignore[arg-type]
