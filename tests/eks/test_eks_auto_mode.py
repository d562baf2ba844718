"""EKS Auto Mode GPU node pools (fmconstructs.eks.auto_mode): GpuEksCluster(auto_mode=True) turns on Auto Mode's
compute without built-in node pools, and add_auto_mode_gpu_node_pool renders an eks.amazonaws.com/v1 NodeClass
(node role, subnets, security groups, reservations, the multi-EFA layout) and a karpenter.sh/v1 NodePool on it.
Auto Mode's NodeClass CRD is not published as a file: the manifests are checked against the structure the EKS User
Guide documents (create-node-class, auto-odcr, device-management-efa), not a vendored schema."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Match, Template

from fmconstructs import FmValidationError
from fmconstructs.catalog import get_instance_spec
from fmconstructs.eks import GpuEksCluster
from fmconstructs.eks.auto_mode import (
    AUTO_MODE_CLUSTER_ROLE_POLICIES,
    auto_mode_node_class_manifest,
    auto_mode_node_pool_manifest,
)
from fmconstructs.eks.karpenter_manifests import (
    CapacityReservationTerm,
    KarpenterCapacityType,
    NodePoolDisruption,
    ReservationType,
)

from tests.conftest import ENV, new_scene

RESERVATION = "cr-0123456789abcdef0"
RESERVED = KarpenterCapacityType.RESERVED
#: The NodeClass fields the EKS User Guide documents (create-node-class "Node Class Specification", auto-odcr,
#: device-management-efa "EKS Auto Mode"): what the renderer may write.
NODE_CLASS_FIELDS = {
    "role",
    "subnetSelectorTerms",
    "securityGroupSelectorTerms",
    "capacityReservationSelectorTerms",
    "advancedNetworking",
    "ephemeralStorage",
    "tags",
}


def check_structure(node_class: dict[str, Any], node_pool: dict[str, Any]) -> None:
    """The documented shape of an Auto Mode NodeClass and of a NodePool that references it."""
    assert node_class["apiVersion"] == "eks.amazonaws.com/v1" and node_class["kind"] == "NodeClass"
    spec = node_class["spec"]
    assert set(spec) <= NODE_CLASS_FIELDS
    assert {"role", "subnetSelectorTerms", "securityGroupSelectorTerms"} <= set(spec)
    for term in spec.get("capacityReservationSelectorTerms", []):
        assert set(term) in ({"id"}, {"tags"}, {"tags", "owner"})
    for interface in spec.get("advancedNetworking", {}).get("networkInterfaces", []):
        assert set(interface) == {"networkCardIndex", "deviceIndex", "interfaceType"}
        assert interface["interfaceType"] in ("interface", "efa-only")
    assert node_pool["apiVersion"] == "karpenter.sh/v1" and node_pool["kind"] == "NodePool"
    ref = node_pool["spec"]["template"]["spec"]["nodeClassRef"]
    assert ref == {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": node_class["metadata"]["name"]}


def _manifests(template: Template, marker: str) -> list[dict[str, Any]]:
    """The manifests of the KubernetesResource whose id contains ``marker``, tokens replaced by their JSON."""
    (resource,) = [
        r for k, r in template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").items() if marker in k
    ]
    body = resource["Properties"]["Manifest"]
    if isinstance(body, dict):  # Fn::Join of text and tokens
        body = "".join(p if isinstance(p, str) else "TOKEN" for p in body["Fn::Join"][1])
    return list(json.loads(body))


@pytest.fixture(scope="module")
def auto_stack() -> tuple[GpuEksCluster, Template]:
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc, auto_mode=True)
    cluster.add_auto_mode_gpu_node_pool(
        "p5",
        instance_types=["p5.48xlarge"],
        max_nodes=4,
        capacity_reservations=[CapacityReservationTerm(id=RESERVATION)],
        reservation_type=ReservationType.CAPACITY_BLOCK,
        subnets=[scene.subnet_a],
    )
    return cluster, scene.template()


def test_auto_mode_turns_on_compute_without_builtin_pools(auto_stack):
    _, template = auto_stack
    template.has_resource_properties(
        "AWS::EKS::Cluster",
        {
            "ComputeConfig": {"Enabled": True, "NodePools": []},
            "StorageConfig": {"BlockStorage": {"Enabled": True}},
            "KubernetesNetworkConfig": Match.object_like({"ElasticLoadBalancing": {"Enabled": True}}),
        },
    )
    (cluster,) = template.find_resources("AWS::EKS::Cluster").values()
    assert "NodeRoleArn" not in cluster["Properties"]["ComputeConfig"]


def test_default_cluster_keeps_auto_mode_off(scene):
    GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc)
    (cluster,) = scene.template().find_resources("AWS::EKS::Cluster").values()
    assert cluster["Properties"]["ComputeConfig"].get("Enabled") is not True


def test_cluster_role_gets_the_auto_mode_policies(auto_stack):
    _, template = auto_stack
    roles = template.find_resources("AWS::IAM::Role")
    (cluster_role,) = [
        r
        for r in roles.values()
        if "eks.amazonaws.com" in json.dumps(r["Properties"]["AssumeRolePolicyDocument"])
        and "AmazonEKSClusterPolicy" in json.dumps(r["Properties"].get("ManagedPolicyArns", []))
    ]
    attached = json.dumps(cluster_role["Properties"]["ManagedPolicyArns"])
    assert all(policy in attached for policy in AUTO_MODE_CLUSTER_ROLE_POLICIES)
    assert "sts:TagSession" in json.dumps(cluster_role["Properties"]["AssumeRolePolicyDocument"])


def test_node_role_has_an_ec2_access_entry_with_the_auto_node_policy(auto_stack):
    cluster, template = auto_stack
    assert cluster.auto_mode_pools is not None
    stack = cdk.Stack.of(cluster)
    template.has_resource_properties(
        "AWS::EKS::AccessEntry",
        {
            "Type": "EC2",
            "PrincipalArn": stack.resolve(cluster.auto_mode_pools.node_role.role_arn),
            "AccessPolicies": [
                {
                    "AccessScope": {"Type": "cluster"},
                    "PolicyArn": Match.object_like(
                        {
                            "Fn::Join": [
                                "",
                                Match.array_with([":eks::aws:cluster-access-policy/AmazonEKSAutoNodePolicy"]),
                            ]
                        }
                    ),
                }
            ],
        },
    )


def test_node_class_carries_the_reservation_and_the_p5_efa_layout(auto_stack):
    _, template = auto_stack
    node_class, node_pool = _manifests(template, "AutoModePoolp5")
    check_structure(node_class, node_pool)
    spec = node_class["spec"]
    assert spec["capacityReservationSelectorTerms"] == [{"id": RESERVATION}]
    assert spec["subnetSelectorTerms"] == [{"id": "subnet-0aaaaaaaaaaaaaaa1"}]
    assert len(spec["securityGroupSelectorTerms"]) == 2  # the cluster's and the EFA group
    interfaces = spec["advancedNetworking"]["networkInterfaces"]
    assert interfaces[0] == {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
    efa = [i for i in interfaces if i["interfaceType"] == "efa-only"]
    assert len(efa) == get_instance_spec("p5.48xlarge").maximum_efa_interfaces == 32


def test_node_pool_is_reserved_capacity_block_only_without_plugin_labels(auto_stack):
    _, template = auto_stack
    _, node_pool = _manifests(template, "AutoModePoolp5")
    template_spec = node_pool["spec"]["template"]["spec"]
    requirements = {r["key"]: r["values"] for r in template_spec["requirements"]}
    assert requirements == {
        "node.kubernetes.io/instance-type": ["p5.48xlarge"],
        "karpenter.sh/capacity-type": ["reserved"],
        "karpenter.k8s.aws/capacity-reservation-type": ["capacity-block"],
    }
    assert template_spec["expireAfter"] == "504h"
    assert template_spec["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    labels = node_pool["spec"]["template"]["metadata"]["labels"]
    assert "nvidia.com/gpu.present" not in labels and "vpc.amazonaws.com/efa.present" not in labels
    assert node_pool["spec"]["limits"] == {"nodes": "4"}


def test_tag_terms_use_auto_modes_owner_field():
    node_class = auto_mode_node_class_manifest(
        name="gpu",
        role="NodeRole",
        subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
        security_group_ids=["sg-0123abcd"],
        capacity_reservations=[CapacityReservationTerm(tags={"team": "ml"}, owner_id="123456789012")],
        ephemeral_storage_gib=500,
    )
    assert node_class["spec"]["capacityReservationSelectorTerms"] == [{"tags": {"team": "ml"}, "owner": "123456789012"}]
    assert node_class["spec"]["ephemeralStorage"] == {"size": "500Gi"}


def _pool(**overrides: Any) -> dict[str, Any]:
    props: dict[str, Any] = {"name": "gpu", "node_class_name": "gpu", "instance_types": ["p5.48xlarge"], "max_nodes": 2}
    props.update(overrides)
    return auto_mode_node_pool_manifest(**props)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"instance_types": ["p6e-gb200.36xlarge"]}, r"instance_types\[0\] must be .*DRA is not supported"),
        ({"instance_types": ["p5.48xlarge", "p5en.48xlarge"]}, r"instance_types must be one instance type"),
        ({"instance_types": ["m7i.xlarge"]}, r"instance_types\[0\] must be a GPU instance type"),
        ({"disruption": NodePoolDisruption(expire_after="720h")}, r"disruption.expire_after must be at most 504h"),
        ({"disruption": NodePoolDisruption(expire_after="Never")}, r"disruption.expire_after must be at most 504h"),
        ({"max_nodes": None}, r"max_gpus must be a GPU limit"),
        ({"capacity_types": [RESERVED]}, r"capacity_types must be no 'reserved' without capacity_reservations"),
    ],
)
def test_node_pool_refusals(overrides, message):
    with pytest.raises(FmValidationError, match=message):
        _pool(**overrides)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"capacity_reservations": [CapacityReservationTerm(instance_match_criteria="targeted")]},
            r"instance_match_criteria must be None for EKS Auto Mode",
        ),
        ({"ephemeral_storage_gib": 0}, r"ephemeral_storage_gib"),
        ({"subnet_ids": []}, r"subnet_ids"),
        ({"efa_instance_type": "p6e-gb200.36xlarge"}, r"efa_instance_type\[0\] must be"),
    ],
)
def test_node_class_refusals(overrides, message):
    props: dict[str, Any] = {
        "name": "gpu",
        "role": "NodeRole",
        "subnet_ids": ["subnet-0aaaaaaaaaaaaaaa1"],
        "security_group_ids": ["sg-0123abcd"],
    }
    props.update(overrides)
    with pytest.raises(FmValidationError, match=message):
        auto_mode_node_class_manifest(**props)


def test_pools_need_an_auto_mode_cluster(scene):
    cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc)
    with pytest.raises(FmValidationError, match=r"cluster must be a GpuEksCluster\(auto_mode=True\)"):
        cluster.add_auto_mode_gpu_node_pool("gpu", instance_types=["p5.48xlarge"], max_nodes=1)


def test_pool_names_are_unique(scene):
    cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc, auto_mode=True)
    cluster.add_auto_mode_gpu_node_pool("gpu", instance_types=["p5.48xlarge"], max_nodes=1)
    with pytest.raises(FmValidationError, match=r"name must be a NodePool name not added yet"):
        cluster.add_auto_mode_gpu_node_pool("gpu", instance_types=["p5en.48xlarge"], max_nodes=1)


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_auto_mode_must_be_a_bool(scene, value):
    with pytest.raises((FmValidationError, TypeError), match=r"auto_mode"):
        GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc, auto_mode=value)


@pytest.mark.validation
def test_auto_mode_pool_is_cdk_nag_and_cfn_lint_clean(tmp_path):
    from cdk_nag import AwsSolutionsChecks
    from cfnlint.api import lint_file

    app = cdk.App(outdir=str(tmp_path), builtin_cloud_formation_validation=True)
    stack = cdk.Stack(app, "AutoNag", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
    )
    cluster = GpuEksCluster(stack, "Eks", vpc=vpc, auto_mode=True)
    cluster.add_auto_mode_gpu_node_pool("p5en", instance_types=["p5en.48xlarge"], max_nodes=2)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on an unacknowledged cdk-nag error
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []
    errors = [m for m in lint_file(tmp_path / "AutoNag.template.json") if m.rule.severity == "error"]
    assert [f"{m.rule.id} {m.message[:200]}" for m in errors] == []
