"""Karpenter 1.14.1 on a GpuEksCluster (fmconstructs.eks.karpenter): the controller's IAM (the upstream policies,
compared with the vendored cloudformation.yaml), Pod Identity, the node role and its EC2_LINUX access entry, the
interruption queue and its EventBridge rules, the pinned chart and its values keys (against the chart's values.yaml at
v1.14.1), and the EC2NodeClass/NodePool manifests validated against the CRDs of the pinned version (tests/data/
karpenter_crds, see SOURCE.md there), with reservations, the multi-EFA layouts and the refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsonschema
import pytest
import yaml
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Match, Template

from fmconstructs import CapacityBlock, FmValidationError
from fmconstructs.capacity import CapacityReservation
from fmconstructs.catalog import get_instance_spec
from fmconstructs.eks import GpuEksCluster
from fmconstructs.eks.addons import ChartSource
from fmconstructs.eks.karpenter import INTERRUPTION_RULES, KARPENTER, karpenter_values
from fmconstructs.eks.karpenter_iam import CONTROLLER_POLICIES
from fmconstructs.eks.karpenter_manifests import (
    CapacityReservationTerm,
    ConsolidationPolicy,
    KarpenterCapacityType,
    NodePoolDisruption,
    ReservationType,
    ec2_node_class_manifest,
    node_pool_manifest,
)

from tests.conftest import ENV, new_app, new_scene

DATA = Path(__file__).parents[1] / "data" / "karpenter_crds"
SCHEMAS = {
    ("karpenter.k8s.aws/v1", "EC2NodeClass"): "karpenter.k8s.aws_ec2nodeclasses.v1.json",
    ("karpenter.sh/v1", "NodePool"): "karpenter.sh_nodepools.v1.json",
}
RESERVED = KarpenterCapacityType.RESERVED
RESERVATION = "cr-0123456789abcdef0"
ON_DEMAND = KarpenterCapacityType.ON_DEMAND


def _strict(schema: Any) -> Any:
    """The CRD schema with unknown fields refused (the API server would prune a typo silently)."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


def validate(manifest: dict[str, Any]) -> None:
    """OpenAPI schema of the pinned CRD, plus the CEL rules (x-kubernetes-validations) the renderers can break."""
    vendored = json.loads((DATA / SCHEMAS[(manifest["apiVersion"], manifest["kind"])]).read_text())
    assert (
        f"{vendored['group']}/{vendored['version']}" == manifest["apiVersion"] and vendored["kind"] == manifest["kind"]
    )
    jsonschema.Draft7Validator(_strict(vendored["openAPIV3Schema"])).validate(manifest)
    assert set(manifest["metadata"]) <= {"name", "labels", "annotations"}
    spec = manifest["spec"]
    if manifest["kind"] == "EC2NodeClass":
        # "must specify exactly one of ['role', 'instanceProfile']"; alias terms are exclusive
        assert ("role" in spec) != ("instanceProfile" in spec)
        assert len(spec["amiSelectorTerms"]) == 1 and spec["amiSelectorTerms"][0]["alias"].startswith("al2023@")
        interfaces = spec.get("networkInterfaces", [])
        if interfaces:
            # "networkInterfaces must include a primary interface with interfaceType='interface'"
            assert {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"} in interfaces
            pairs = [(i["networkCardIndex"], i["deviceIndex"]) for i in interfaces]
            assert len(pairs) == len(set(pairs))  # no duplicate (card, device)
            efa_cards = [i["networkCardIndex"] for i in interfaces if i["interfaceType"] == "efa-only"]
            assert len(efa_cards) == len(set(efa_cards))  # at most one EFA device per card
        for term in spec.get("capacityReservationSelectorTerms", []):
            assert "id" not in term or set(term) == {"id"}  # 'id' is mutually exclusive
            assert {"id", "tags", "instanceMatchCriteria"} & set(term)
    else:
        for requirement in spec["template"]["spec"]["requirements"]:
            assert requirement["key"] not in ("karpenter.sh/nodepool", "kubernetes.io/hostname")


def node_class(**overrides: Any) -> dict[str, Any]:
    props: dict[str, Any] = {"name": "gpu", "role": "KarpenterNodeRole", "subnet_ids": ["subnet-0aaaaaaaaaaaaaaa1"]}
    props["security_group_ids"] = ["sg-0123456789abcdef0"]
    return ec2_node_class_manifest(**{**props, **overrides})


def node_pool(**overrides: Any) -> dict[str, Any]:
    props: dict[str, Any] = {"name": "gpu", "node_class_name": "gpu", "instance_types": ["p5en.48xlarge"]}
    props["max_nodes"] = 2
    return node_pool_manifest(**{**props, **overrides})


def _upstream() -> dict[str, Any]:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!Sub", lambda loader, node: {"Fn::Sub": loader.construct_scalar(node)})
    Loader.add_constructor("!Ref", lambda loader, node: {"Ref": loader.construct_scalar(node)})
    Loader.add_constructor("!GetAtt", lambda loader, node: {"Fn::GetAtt": loader.construct_scalar(node)})
    resources: dict[str, Any] = yaml.load((DATA / "cloudformation.yaml").read_text(), Loader=Loader)["Resources"]
    return resources


UPSTREAM = _upstream()


# --- a cluster with Karpenter and a Capacity Block pool ----------------------------------------------------------
@pytest.fixture(scope="module")
def synth():
    scene = new_scene("Karp")
    cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc)
    karpenter = cluster.add_karpenter()
    karpenter.add_gpu_node_pool(
        "p5en-block",
        instance_types=["p5en.48xlarge"],
        max_nodes=4,
        capacity_reservations=[CapacityReservationTerm.for_capacity(CapacityBlock(reservation_id="cr-0abc1234"))],
        reservation_type=ReservationType.CAPACITY_BLOCK,
        subnets=[scene.subnet_a],
    )
    return scene.stack, cluster, karpenter, Template.from_stack(scene.stack)


def _logical_id(stack: cdk.Stack, construct: Any) -> str:
    element = construct if isinstance(construct, cdk.CfnElement) else construct.node.default_child
    return str(stack.resolve(element.logical_id))


def test_controller_policies_are_upstreams_statement_for_statement(synth):
    stack, _, karpenter, template = synth
    upstream = {k: v for k, v in UPSTREAM.items() if v["Type"] == "AWS::IAM::ManagedPolicy"}
    assert set(upstream) == set(CONTROLLER_POLICIES)
    role_id = _logical_id(stack, karpenter.controller_role)
    node_role = _logical_id(stack, karpenter.node_role)
    queue = _logical_id(stack, karpenter.interruption_queue)
    policies = template.find_resources("AWS::IAM::ManagedPolicy")
    assert len(policies) == 6
    for resource in policies.values():
        text, variables = resource["Properties"]["PolicyDocument"]["Fn::Sub"]
        assert resource["Properties"]["Roles"] == [{"Ref": role_id}]
        document = json.loads(text)
        (name,) = [n for n, doc in CONTROLLER_POLICIES.items() if doc == document]
        expected = upstream[name]["Properties"]["PolicyDocument"]["Fn::Sub"]
        expected = expected.replace("${KarpenterNodeRole.Arn}", "${NodeRoleArn}")
        expected = expected.replace("${KarpenterInterruptionQueue.Arn}", "${InterruptionQueueArn}")
        assert document == json.loads(expected)
        wanted = {
            "ClusterName": {"Ref": stack.resolve(karpenter.cluster.cluster.node.default_child.logical_id)},
            "NodeRoleArn": {"Fn::GetAtt": [node_role, "Arn"]},
            "InterruptionQueueArn": {"Fn::GetAtt": [queue, "Arn"]},
        }
        assert variables == {k: v for k, v in wanted.items() if "${" + k + "}" in text}


def test_launch_and_delete_are_scoped_by_the_cluster_tag_as_upstream():
    lifecycle = CONTROLLER_POLICIES["NodeLifecyclePolicy"]["Statement"]
    deletion = next(s for s in lifecycle if s["Sid"] == "AllowScopedDeletion")
    assert deletion["Condition"]["StringEquals"] == {"aws:ResourceTag/kubernetes.io/cluster/${ClusterName}": "owned"}
    pass_role = CONTROLLER_POLICIES["IAMIntegrationPolicy"]["Statement"][0]
    assert (pass_role["Action"], pass_role["Resource"]) == ("iam:PassRole", "${NodeRoleArn}")


def test_controller_runs_with_pod_identity_on_the_karpenter_service_account(synth):
    stack, _, karpenter, template = synth
    template.has_resource_properties(
        "AWS::EKS::PodIdentityAssociation",
        {
            "Namespace": "kube-system",
            "ServiceAccount": "karpenter",
            "RoleArn": {"Fn::GetAtt": [_logical_id(stack, karpenter.controller_role), "Arn"]},
        },
    )
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": {
                "Statement": [
                    Match.object_like(
                        {
                            "Action": ["sts:AssumeRole", "sts:TagSession"],
                            "Principal": {"Service": "pods.eks.amazonaws.com"},
                            "Condition": {
                                "StringEquals": Match.object_like(
                                    {
                                        "aws:RequestTag/kubernetes-namespace": "kube-system",
                                        "aws:RequestTag/kubernetes-service-account": "karpenter",
                                    }
                                )
                            },
                        }
                    )
                ]
            },
            "Description": "Karpenter controller (EKS Pod Identity)",
        },
    )
    template.resource_count_is("AWS::EKS::Addon", 2)  # vpc-cni and the pod identity agent
    template.has_resource_properties("AWS::EKS::Addon", {"AddonName": "eks-pod-identity-agent"})


def test_node_role_has_an_ec2_linux_access_entry_and_the_node_policies(synth):
    stack, _, karpenter, template = synth
    node_role = _logical_id(stack, karpenter.node_role)
    template.has_resource_properties(
        "AWS::EKS::AccessEntry",
        {"Type": "EC2_LINUX", "PrincipalArn": {"Fn::GetAtt": [node_role, "Arn"]}, "AccessPolicies": []},
    )
    role = template.to_json()["Resources"][node_role]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "ec2.amazonaws.com"}
    names = sorted(p["Fn::Join"][1][-1].rpartition("/")[2] for p in role["ManagedPolicyArns"])
    assert names == ["AmazonEC2ContainerRegistryPullOnly", "AmazonEKSWorkerNodePolicy"]


def test_interruption_queue_and_rules_follow_upstream(synth):
    stack, _, karpenter, template = synth
    queue = _logical_id(stack, karpenter.interruption_queue)
    upstream_queue = UPSTREAM["KarpenterInterruptionQueue"]["Properties"]
    template.has_resource_properties(
        "AWS::SQS::Queue",
        {"MessageRetentionPeriod": upstream_queue["MessageRetentionPeriod"], "SqsManagedSseEnabled": True},
    )
    upstream_rules = {
        (r["Properties"]["EventPattern"]["source"][0], r["Properties"]["EventPattern"]["detail-type"][0])
        for r in UPSTREAM.values()
        if r["Type"] == "AWS::Events::Rule"
    }
    assert set(INTERRUPTION_RULES.values()) == upstream_rules and len(upstream_rules) == 5
    rules = template.find_resources("AWS::Events::Rule")
    found = {
        (r["Properties"]["EventPattern"]["source"][0], r["Properties"]["EventPattern"]["detail-type"][0])
        for r in rules.values()
    }
    assert found == upstream_rules
    for rule in rules.values():
        assert rule["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [queue, "Arn"]}
    (policy,) = template.find_resources("AWS::SQS::QueuePolicy").values()
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    deny = [s for s in statements if s["Effect"] == "Deny"]
    assert deny[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}  # upstream DenyHTTP
    sends = [s for s in statements if s["Effect"] == "Allow"]
    assert len(sends) == 5 and all(s["Principal"] == {"Service": "events.amazonaws.com"} for s in sends)
    sources = {s["Condition"]["ArnEquals"]["aws:SourceArn"]["Fn::GetAtt"][0] for s in sends}
    assert sources == set(rules)


def test_chart_is_pinned_and_its_values_keys_exist_in_the_charts_values_yaml(synth):
    stack, _, karpenter, template = synth
    (chart,) = template.find_resources("Custom::AWSCDK-EKS-HelmChart", {"Properties": {"Chart": "karpenter"}}).values()
    props = chart["Properties"]
    assert (props["Repository"], props["Version"], props["Namespace"], props["Release"]) == (
        "oci://public.ecr.aws/karpenter/karpenter",
        "1.14.1",
        "kube-system",
        "karpenter",
    )
    assert (KARPENTER.repository, KARPENTER.version) == (props["Repository"], props["Version"])
    assert props["Wait"] is True
    assert props.get("CreateNamespace") in (None, False)  # kube-system exists
    depends = set(chart["DependsOn"])
    assert _logical_id(stack, karpenter.pod_identity_association) in depends
    values = karpenter_values(cluster_name="c", interruption_queue_name="q")
    assert values["settings"] == {"clusterName": "c", "interruptionQueue": "q"}
    assert values["controller"]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    mirrored = karpenter_values(
        cluster_name="c",
        interruption_queue_name="q",
        source=ChartSource.oci("oci://111122223333.dkr.ecr.us-east-1.amazonaws.com/charts/karpenter").with_image(
            "111122223333.dkr.ecr.us-east-1.amazonaws.com/karpenter/controller"
        ),
    )
    assert mirrored["controller"]["image"] == {
        "repository": "111122223333.dkr.ecr.us-east-1.amazonaws.com/karpenter/controller",
        "tag": "1.14.1",
        "digest": "",
    }
    chart_values = yaml.safe_load((DATA / "values.yaml").read_text())
    for rendered in (values, mirrored):
        _assert_keys_exist(rendered, chart_values, "")


def _assert_keys_exist(values: dict[str, Any], chart: dict[str, Any], path: str) -> None:
    for key, value in values.items():
        assert key in chart, f"{path}{key} is not a key of charts/karpenter/values.yaml v1.14.1"
        if isinstance(value, dict) and isinstance(chart[key], dict) and chart[key]:
            _assert_keys_exist(value, chart[key], f"{path}{key}.")


def test_a_private_registry_source_sets_the_chart_and_the_controller_image():
    scene = new_scene("KarpMirror")
    cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc)
    source = ChartSource.oci("oci://111122223333.dkr.ecr.us-east-1.amazonaws.com/charts/karpenter").with_image(
        "111122223333.dkr.ecr.us-east-1.amazonaws.com/karpenter/controller", tag="1.14.1"
    )
    cluster.add_karpenter(source=source)
    template = scene.template()
    (chart,) = template.find_resources("Custom::AWSCDK-EKS-HelmChart", {"Properties": {"Chart": "karpenter"}}).values()
    assert chart["Properties"]["Repository"] == "oci://111122223333.dkr.ecr.us-east-1.amazonaws.com/charts/karpenter"
    body = chart["Properties"]["Values"]
    values = json.loads("".join(p if isinstance(p, str) else "token" for p in body["Fn::Join"][1]))
    assert values["controller"]["image"] == {
        "repository": "111122223333.dkr.ecr.us-east-1.amazonaws.com/karpenter/controller",
        "tag": "1.14.1",
        "digest": "",
    }
    assert "image" not in values  # the chart has no top-level image key (values.yaml v1.14.1)


def test_isolated_vpc_uses_an_instance_profile_and_the_isolated_setting():
    scene = new_scene("KarpIsolated")
    cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc)
    karpenter = cluster.add_karpenter(isolated_vpc=True)
    karpenter.add_gpu_node_pool("p5en", instance_types=["p5en.48xlarge"], max_nodes=2)
    template = scene.template()
    node_role = _logical_id(scene.stack, karpenter.node_role)
    template.has_resource_properties("AWS::IAM::InstanceProfile", {"Roles": [{"Ref": node_role}]})
    (klass,) = [m for m in _manifests_of(template) if m["kind"] == "EC2NodeClass"]
    assert "role" not in klass["spec"] and "instanceProfile" in klass["spec"]
    values = karpenter_values(cluster_name="c", interruption_queue_name="q", isolated_vpc=True)
    assert values["settings"]["isolatedVPC"] is True
    _assert_keys_exist(values, yaml.safe_load((DATA / "values.yaml").read_text()), "")


def _manifests_of(template: Template) -> list[dict[str, Any]]:
    """The Karpenter manifests of the template, deploy-time values replaced by stand-ins."""
    stand_in = "sg-0aaaaaaaaaaaaaaa0"
    found = []
    for resource in template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").values():
        body = resource["Properties"]["Manifest"]
        if isinstance(body, dict):
            body = "".join(part if isinstance(part, str) else stand_in for part in body["Fn::Join"][1])
        found += [m for m in json.loads(body) if m["apiVersion"].startswith("karpenter.")]
    for manifest in found:  # aws-cdk-lib's prune label
        manifest["metadata"].pop("labels", None)
    return found


def test_rendered_pool_in_the_template_is_valid_and_uses_the_cluster_groups(synth):
    *_, template = synth
    manifests = _manifests_of(template)
    assert sorted(m["kind"] for m in manifests) == ["EC2NodeClass", "NodePool"]
    for manifest in manifests:
        validate(manifest)
    (klass,) = [m for m in manifests if m["kind"] == "EC2NodeClass"]
    assert klass["spec"]["subnetSelectorTerms"] == [{"id": "subnet-0aaaaaaaaaaaaaaa1"}]
    assert len(klass["spec"]["securityGroupSelectorTerms"]) == 2  # cluster SG + EFA SG
    assert klass["spec"]["capacityReservationSelectorTerms"] == [{"id": "cr-0abc1234"}]
    (pool,) = [m for m in manifests if m["kind"] == "NodePool"]
    assert {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]} in pool["spec"]["template"][
        "spec"
    ]["requirements"]


# --- renderers -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "manifest",
    [
        pytest.param(node_class(), id="class-default"),
        pytest.param(node_class(efa_instance_type="p5.48xlarge"), id="class-p5-efa"),
        pytest.param(node_class(role=None, instance_profile="KarpenterNodeProfile"), id="class-instance-profile"),
        pytest.param(node_class(efa_instance_type="p6-b300.48xlarge"), id="class-p6-b300-efa"),
        pytest.param(
            node_class(
                subnet_ids=[],
                subnet_tags={"karpenter.sh/discovery": "c"},
                security_group_ids=[],
                security_group_tags={"karpenter.sh/discovery": "c"},
                ami_version="v20240807",
                kms_key_id="arn:aws:kms:us-east-1:123456789012:key/abcd",
                imds_hop_limit=2,
                tags={"team": "ml"},
                capacity_reservations=[
                    CapacityReservationTerm(id="cr-0123456789abcdef0"),
                    CapacityReservationTerm(tags={"purpose": "serving"}, owner_id="123456789012"),
                    CapacityReservationTerm(instance_match_criteria="targeted", tags={"a": "b"}),
                ],
            ),
            id="class-tags-and-terms",
        ),
        pytest.param(node_pool(), id="pool-default"),
        pytest.param(
            node_pool(
                max_gpus=64,
                max_nodes=None,
                capacity_types=[RESERVED, ON_DEMAND],
                reserved=True,
                labels={"team": "ml"},
                disruption=NodePoolDisruption(
                    consolidation_policy=ConsolidationPolicy.WHEN_EMPTY_OR_UNDERUTILIZED,
                    consolidate_after="1h",
                    expire_after="Never",
                    budget_nodes="1",
                ),
                weight=50,
            ),
            id="pool-reserved-then-on-demand",
        ),
        pytest.param(
            node_pool(capacity_types=[RESERVED], reserved=True, reservation_type=ReservationType.DEFAULT),
            id="pool-odcr-only",
        ),
    ],
)
def test_rendered_manifests_are_valid_against_the_pinned_crds(manifest):
    validate(manifest)


def test_gpu_node_class_defaults_imdsv2_hop_limit_1_encrypted_gp3_and_the_al2023_alias():
    spec = node_class()["spec"]
    assert spec["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    assert spec["metadataOptions"]["httpTokens"] == "required"
    assert spec["metadataOptions"]["httpPutResponseHopLimit"] == 1
    (root,) = spec["blockDeviceMappings"]
    assert root == {
        "deviceName": "/dev/xvda",
        "rootVolume": True,
        "ebs": {"volumeSize": "200Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True},
    }
    assert "networkInterfaces" not in spec


@pytest.mark.parametrize(
    ("instance_type", "efa_cards"),
    [("p5.48xlarge", list(range(32))), ("p5en.48xlarge", list(range(16))), ("p6-b300.48xlarge", list(range(1, 17)))],
)
def test_multi_efa_types_get_the_managed_node_group_layout(instance_type, efa_cards):
    interfaces = node_class(efa_instance_type=instance_type)["spec"]["networkInterfaces"]
    assert interfaces[0] == {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
    efa = [i["networkCardIndex"] for i in interfaces if i["interfaceType"] == "efa-only"]
    assert efa == efa_cards
    # Karpenter advertises one vpc.amazonaws.com/efa per efa-only entry (instancetype/types.go efas).
    assert len(efa) == get_instance_spec(instance_type).maximum_efa_interfaces


def test_gpu_pool_taints_labels_limits_and_disruption():
    spec = node_pool(max_gpus=16)["spec"]
    template = spec["template"]
    assert template["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    assert template["metadata"]["labels"] == {"nvidia.com/gpu.present": "true", "vpc.amazonaws.com/efa.present": "true"}
    assert template["spec"]["requirements"][0] == {
        "key": "node.kubernetes.io/instance-type",
        "operator": "In",
        "values": ["p5en.48xlarge"],
    }
    assert spec["limits"] == {"nvidia.com/gpu": "16", "nodes": "2"}
    assert spec["disruption"] == {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "10m",
        "budgets": [{"nodes": "10%"}],
    }
    assert template["spec"]["expireAfter"] == "720h"


def test_capacity_block_pools_select_by_reservation_type():
    requirements = node_pool(capacity_types=[RESERVED], reserved=True, reservation_type=ReservationType.CAPACITY_BLOCK)[
        "spec"
    ]["template"]["spec"]["requirements"]
    assert requirements[1:] == [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]},
        {"key": "karpenter.k8s.aws/capacity-reservation-type", "operator": "In", "values": ["capacity-block"]},
    ]


def test_reservation_terms():
    assert CapacityReservationTerm(id="cr-0123456789abcdef0").to_manifest() == {"id": "cr-0123456789abcdef0"}
    assert CapacityReservationTerm(tags={"k": "v"}, owner_id="123456789012").to_manifest() == {
        "tags": {"k": "v"},
        "ownerID": "123456789012",
    }
    assert CapacityReservationTerm(instance_match_criteria="open").to_manifest() == {"instanceMatchCriteria": "open"}
    assert CapacityReservationTerm.for_capacity(CapacityReservation(reservation_id=RESERVATION)).id == RESERVATION
    with pytest.raises(FmValidationError, match="reservation_id"):
        CapacityReservationTerm.for_capacity(
            CapacityBlock(resource_group_arn="arn:aws:resource-groups:us-east-1:123456789012:group/blocks")
        )


# --- refusals --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("instance_type", ["p6e-gb200.36xlarge"])
def test_ultraserver_types_are_refused_with_a_pointer_to_managed_node_groups(instance_type):
    with pytest.raises(FmValidationError, match=r"instance_types\[0\] must be .*managed node group"):
        node_pool(instance_types=[instance_type])


def test_a_multi_efa_type_must_be_alone_in_its_pool():
    with pytest.raises(FmValidationError, match="one instance type when it has EFA on several network cards"):
        node_pool(instance_types=["p5.48xlarge", "p5en.48xlarge"])


@pytest.mark.parametrize(
    ("build", "parameter"),
    [
        (lambda: node_pool(instance_types=[]), "instance_types"),
        (lambda: node_pool(instance_types="p5en.48xlarge"), "instance_types"),
        (lambda: node_pool(instance_types=["m7i.xlarge"]), r"instance_types\[0\]"),
        (lambda: node_pool(instance_types=["p9.bogus"]), r"instance_types\[0\]"),
        (lambda: node_pool(max_nodes=0), "max_nodes"),
        (lambda: node_pool(max_nodes=-1), "max_nodes"),
        (lambda: node_pool(max_nodes=None, max_gpus=0), "max_gpus"),
        (lambda: node_pool(max_nodes=None), "max_gpus"),
        (lambda: node_pool(capacity_types=[RESERVED]), "capacity_types"),
        (lambda: node_pool(capacity_types=[]), "capacity_types"),
        (lambda: node_pool(capacity_types=["on-demand"]), r"capacity_types\[0\]"),
        (lambda: node_pool(reservation_type=ReservationType.CAPACITY_BLOCK), "reservation_type"),
        (lambda: node_pool(weight=0), "weight"),
        (lambda: node_pool(name="Not_A_Name"), "name"),
        (lambda: node_pool(disruption="WhenEmpty"), "disruption"),
        (lambda: NodePoolDisruption(consolidate_after="10 minutes"), "consolidate_after"),
        (lambda: NodePoolDisruption(budget_nodes="110%"), "budget_nodes"),
        (lambda: NodePoolDisruption(consolidation_policy="WhenEmpty"), "consolidation_policy"),
        (lambda: node_class(ami_version="2024-08-07"), "ami_version"),
        (lambda: node_class(imds_hop_limit=65), "imds_hop_limit"),
        (lambda: node_class(root_volume_size_gib=0), "root_volume_size_gib"),
        (lambda: node_class(subnet_ids=[]), "subnet_ids"),
        (lambda: node_class(subnet_ids=["vpc-0123"]), r"subnet_ids\[0\]"),
        (lambda: node_class(security_group_ids=[], security_group_tags={}), "security_group_tags"),
        (lambda: node_class(efa_instance_type="p6e-gb200.36xlarge"), r"efa_instance_type\[0\]"),
        (lambda: node_class(capacity_reservations=["cr-0123456789abcdef0"]), r"capacity_reservations\[0\]"),
        (lambda: node_class(role=None), "role"),
        (lambda: node_class(instance_profile="KarpenterNodeProfile"), "role"),
        (lambda: CapacityReservationTerm(), "id"),
        (lambda: CapacityReservationTerm(id="r-0123"), "id"),
        (lambda: CapacityReservationTerm(id="cr-0123456789abcdef0", tags={"k": "v"}), "tags"),
        (lambda: CapacityReservationTerm(tags={"k": ""}), r"tags\['k'\]"),
        (lambda: CapacityReservationTerm(tags={"k": "v"}, owner_id="12"), "owner_id"),
        (lambda: CapacityReservationTerm(instance_match_criteria="closed"), "instance_match_criteria"),
    ],
)
def test_bad_inputs_name_the_parameter(build, parameter):
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be"):
        build()


def test_deploy_time_values_are_accepted():
    stack = cdk.Stack(new_app(), "Tokens", env=ENV)
    count = cdk.CfnParameter(stack, "Count", type="Number").value_as_number
    reservation = cdk.CfnParameter(stack, "Reservation").value_as_string
    subnet = cdk.CfnParameter(stack, "Subnet").value_as_string
    pool = node_pool(max_nodes=count, max_gpus=count)
    assert pool["spec"]["limits"] == {"nvidia.com/gpu": count, "nodes": count}
    klass = node_class(subnet_ids=[subnet], capacity_reservations=[CapacityReservationTerm(id=reservation)])
    assert klass["spec"]["capacityReservationSelectorTerms"] == [{"id": reservation}]
    assert NodePoolDisruption(budget_nodes="10%").budget_nodes == "10%"


# --- the construct -------------------------------------------------------------------------------------------------
def test_construct_errors_name_the_construct_path():
    scene = new_scene("KarpBad")
    cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc)
    with pytest.raises(FmValidationError, match=r"version must be .*\(at KarpBad/Eks/Karpenter\)"):
        cluster.add_karpenter(version="1.14.1\n")


def test_one_karpenter_per_cluster_and_pool_names_are_unique():
    scene = new_scene("KarpTwice")
    cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc)
    karpenter = cluster.add_karpenter()
    assert cluster.karpenter is karpenter
    with pytest.raises(
        FmValidationError, match=r"add_karpenter must be called once: the first call created its child .Karpenter."
    ):
        cluster.add_karpenter()
    karpenter.add_gpu_node_pool("p5", instance_types=["p5.48xlarge"], max_gpus=16)
    with pytest.raises(FmValidationError, match="name must be a NodePool name not added yet"):
        karpenter.add_gpu_node_pool("p5", instance_types=["p5.48xlarge"], max_gpus=16)


def test_pool_with_deploy_time_subnets_and_counts_synthesizes():
    app = new_app()
    stack = cdk.Stack(app, "KarpTokens", env=ENV)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2)
    cluster = GpuEksCluster(stack, "Eks", vpc=vpc)
    count = cdk.CfnParameter(stack, "Nodes", type="Number").value_as_number
    cluster.add_karpenter().add_gpu_node_pool("p5en", instance_types=["p5en.48xlarge"], max_nodes=count)
    body = json.dumps(Template.from_stack(stack).find_resources("Custom::AWSCDK-EKS-KubernetesResource"))
    assert '"Ref": "Nodes"' in body


@pytest.mark.validation
def test_karpenter_is_cdk_nag_and_cfn_lint_clean(tmp_path):
    from cdk_nag import AwsSolutionsChecks
    from cfnlint.api import lint_file

    app = cdk.App(outdir=str(tmp_path), builtin_cloud_formation_validation=True)
    scene_stack = cdk.Stack(app, "KarpNag", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        scene_stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
    )
    cluster = GpuEksCluster(scene_stack, "Eks", vpc=vpc)
    cluster.add_karpenter().add_gpu_node_pool("p5en", instance_types=["p5en.48xlarge"], max_nodes=2)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on an unacknowledged cdk-nag error
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []
    errors = [m for m in lint_file(tmp_path / "KarpNag.template.json") if m.rule.severity == "error"]
    assert [f"{m.rule.id} {m.message[:200]}" for m in errors] == []
