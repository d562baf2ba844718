"""FmEksP5en: cluster, the p5en Capacity Block and p6-b300 ODCR node groups, the four add-ons and the FSx volume."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Template

from examples.eks_stack import DEFAULT_CAPACITY_BLOCK_ID, DEFAULT_ODCR_ID, EksStack

from tests.conftest import new_app


@pytest.fixture(scope="module")
def stack():
    return EksStack(new_app(), "FmEksP5en")


@pytest.fixture(scope="module")
def template(stack):
    return Template.from_stack(stack)


def one(template, type_, props=None):
    found = template.find_resources(type_, {"Properties": props} if props else None)
    assert len(found) == 1, f"{len(found)} {type_}"
    return next(iter(found.values()))["Properties"]


def charts(template):
    return {
        r["Properties"]["Chart"]: r["Properties"]
        for r in template.find_resources("Custom::AWSCDK-EKS-HelmChart").values()
    }


def test_cluster_private_endpoint_logging_and_kms(template):
    props = one(template, "AWS::EKS::Cluster")
    assert props["Version"] == "1.35"
    assert props["ResourcesVpcConfig"]["EndpointPrivateAccess"] is True
    assert props["ResourcesVpcConfig"]["EndpointPublicAccess"] is False
    assert {t["Type"] for t in props["Logging"]["ClusterLogging"]["EnabledTypes"]} == {
        "api", "audit", "authenticator", "controllerManager", "scheduler"
    }  # fmt: skip
    assert props["EncryptionConfig"][0]["Resources"] == ["secrets"]
    assert props["AccessConfig"] == {"AuthenticationMode": "API", "BootstrapClusterCreatorAdminPermissions": False}
    template.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})


def test_system_node_group_for_addons(template):
    groups = [r["Properties"] for r in template.find_resources("AWS::EKS::Nodegroup").values()]
    system = [g for g in groups if g.get("Labels", {}).get("fmconstructs.io/node-role") == "system"]
    assert len(system) == 1
    assert system[0]["AmiType"] == "AL2023_x86_64_STANDARD"
    assert system[0]["ScalingConfig"] == {"MinSize": 2, "MaxSize": 4, "DesiredSize": 2}


def test_two_gpu_node_groups_on_their_reservations(stack, template):
    assert (stack.p5en.capacity_type.value, stack.p5en.max_nodes, stack.p5en.efa_interface_count) == (
        "CAPACITY_BLOCK",
        2,
        16,
    )
    assert (stack.p6_b300.capacity_type.value, stack.p6_b300.max_nodes, stack.p6_b300.efa_interface_count) == (
        "ON_DEMAND",
        1,
        16,
    )
    targets = {
        r["Properties"]["LaunchTemplateData"]["InstanceType"]: r["Properties"]["LaunchTemplateData"]
        for r in template.find_resources("AWS::EC2::LaunchTemplate").values()
    }
    assert targets["p5en.48xlarge"]["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationId": DEFAULT_CAPACITY_BLOCK_ID
    }
    assert targets["p6-b300.48xlarge"]["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationId": DEFAULT_ODCR_ID
    }
    b300 = targets["p6-b300.48xlarge"]["NetworkInterfaces"]
    assert [(i["NetworkCardIndex"], i["InterfaceType"]) for i in b300 if i["NetworkCardIndex"] == 0] == [
        (0, "interface")
    ]
    assert all("SubnetId" not in i for lt in targets.values() for i in lt["NetworkInterfaces"])


@pytest.mark.parametrize(
    ("chart", "repository", "namespace"),
    [
        ("nvidia-device-plugin", "https://nvidia.github.io/k8s-device-plugin", "nvidia-device-plugin"),
        ("aws-efa-k8s-device-plugin", "https://aws.github.io/eks-charts", "kube-system"),
        ("dcgm-exporter", "https://nvidia.github.io/dcgm-exporter/helm-charts", "dcgm-exporter"),
    ],
)
def test_gpu_addon_charts_pinned(template, chart, repository, namespace):
    props = charts(template)[chart]
    assert props["Repository"] == repository
    assert props["Namespace"] == namespace
    assert props["Version"]
    assert props.get("Wait") in (None, False)  # no waiting for DaemonSets on not-yet-active blocks


def test_efa_device_plugin_chart_is_a_version_the_gb200_guide_accepts(template):
    # EKS User Guide ml-eks-nvidia-ultraserver: chart 0.5.14+ (v0.5.7 ships plugin image v0.5.4); v0.5.30 is listed in
    # https://aws.github.io/eks-charts/index.yaml.
    assert charts(template)["aws-efa-k8s-device-plugin"]["Version"] == "v0.5.30"


def test_chart_values_carry_what_we_set(template):
    found = charts(template)
    nvidia = json.loads(found["nvidia-device-plugin"]["Values"])
    assert nvidia["mofedEnabled"] is False
    efa = json.loads(found["aws-efa-k8s-device-plugin"]["Values"])
    assert {"p5en.48xlarge", "p6-b300.48xlarge"} <= set(efa["supportedInstanceLabels"]["values"])
    dcgm = json.loads(found["dcgm-exporter"]["Values"])
    assert dcgm["service"]["port"] == 9400


def test_fsx_csi_managed_addon_and_static_volume(template):
    # Besides the FSx CSI driver: vpc-cni and the Pod Identity agent (the CNI's own role, fmconstructs.eks.vpc_cni),
    # and the node monitoring agent (node auto repair: tests/health/test_health_eks.py).
    names = sorted(r["Properties"]["AddonName"] for r in template.find_resources("AWS::EKS::Addon").values())
    assert names == ["aws-fsx-csi-driver", "eks-node-monitoring-agent", "eks-pod-identity-agent", "vpc-cni"]
    manifests = [
        json.dumps(r["Properties"]["Manifest"])
        for r in template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").values()
    ]
    volume = [m for m in manifests if "PersistentVolumeClaim" in m]
    assert len(volume) == 1
    assert "fsx.csi.aws.com" in volume[0] and "fsx-training" in volume[0] and "2400Gi" in volume[0]


def test_lustre_port_open_from_cluster_security_group(template):
    rules = template.find_resources("AWS::EC2::SecurityGroupIngress", {"Properties": {"FromPort": 988, "ToPort": 988}})
    sources = [json.dumps(r["Properties"].get("SourceSecurityGroupId")) for r in rules.values()]
    assert any("ClusterSecurityGroupId" in s for s in sources)


def test_no_wildcard_actions_on_our_roles(template):
    """Roles and policies this library and the example create: no '*' or 'service:*' actions."""
    ours = ("ClusterNodeRole", "ClusterAdminRole", "ClusterRole")
    documents = []
    for logical_id, res in template.find_resources("AWS::IAM::Role").items():
        if logical_id.startswith(ours):
            documents += [p["PolicyDocument"] for p in res["Properties"].get("Policies", [])]
    for logical_id, res in template.find_resources("AWS::IAM::Policy").items():
        if logical_id.startswith(ours):
            documents.append(res["Properties"]["PolicyDocument"])
    for document in documents:
        for statement in document["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            assert not [a for a in actions if a == "*" or a.endswith(":*")], statement
    node_role = next(
        r for lid, r in template.find_resources("AWS::IAM::Role").items() if lid.startswith("ClusterNodeRole")
    )
    managed = json.dumps(node_role["Properties"]["ManagedPolicyArns"])
    for policy in ("AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly"):
        assert policy in managed
    # The VPC CNI has its own role (EKS Pod Identity), not the node role's (fmconstructs.eks.vpc_cni).
    assert "AmazonEKS_CNI_Policy" not in managed


EXPECTED_OUTPUTS = {
    "ClusterName",
    "ClusterArn",
    "ClusterEndpoint",
    "UpdateKubeconfigCommand",
    "P5enNodegroup",
    "P6B300Nodegroup",
    "FileSystemId",
    "FileSystemDnsName",
    "FileSystemMountName",
    "VolumeClaim",
}


def test_outputs_an_operator_needs_with_descriptions(template):
    outputs = template.find_outputs("*")
    assert set(outputs) >= EXPECTED_OUTPUTS
    assert all(outputs[name].get("Description") for name in EXPECTED_OUTPUTS)
    command = outputs["UpdateKubeconfigCommand"]["Value"]["Fn::Join"]
    assert command[1][0] == "aws eks update-kubeconfig --name "
    assert command[1][2:] == [" --region ", {"Ref": "AWS::Region"}]
    assert outputs["ClusterEndpoint"]["Value"]["Fn::GetAtt"][1] == "Endpoint"
    assert outputs["VolumeClaim"]["Value"] == "training/fsx-training"


def test_no_placement_group_for_the_odcr_group(stack, template):
    # EKS node groups get a placement group only when asked (EC2 User Guide cr-cpg: an unrelated new group does not
    # hold the reservation).
    assert stack.p6_b300.placement_group is None
    assert template.find_resources("AWS::EC2::PlacementGroup") == {}


# --- with the shared workspace: Capacity Block events cordon the block's nodes ---------------------------------------


@pytest.fixture(scope="module")
def with_workspace():
    import aws_cdk as cdk

    from fmconstructs.observability.workspace import PrometheusWorkspace

    app = new_app()
    obs = cdk.Stack(app, "Obs")
    workspace = PrometheusWorkspace(obs, "Workspace")
    stack = EksStack(app, "FmEksP5en", workspace=workspace)
    return stack, Template.from_stack(stack)


def test_no_capacity_events_without_workspace(stack, template):
    assert stack.capacity_events is None
    assert template.find_resources("AWS::Events::Rule") == {}


def test_capacity_block_events_notify_the_alert_topic_and_cordon(with_workspace):
    stack, template = with_workspace
    events = stack.capacity_events
    assert events is not None and events.eks_cluster is stack.cluster
    # the events' own rule (the node remediation handler has one for AWS Health scheduled changes)
    rule = next(
        r["Properties"]
        for lid, r in template.find_resources("AWS::Events::Rule").items()
        if lid.startswith("CapacityBlockEvents")
    )
    assert rule["EventPattern"]["source"] == ["aws.ec2"]
    assert "Capacity Block Expiration Warning" in rule["EventPattern"]["detail-type"]
    function = next(
        r["Properties"]
        for lid, r in template.find_resources("AWS::Lambda::Function").items()
        if lid.startswith("CapacityBlockEventsHandler")
    )
    variables = function["Environment"]["Variables"]
    assert "Fn::ImportValue" in json.dumps(variables["TOPIC_ARN"])  # the workspace's topic, from FmObservability
    assert variables["EKS_CLUSTER_NAME"]["Ref"].startswith("Cluster")
    assert "VpcConfig" in function  # the endpoint is private
    entries = [
        r["Properties"]
        for lid, r in template.find_resources("AWS::EKS::AccessEntry").items()
        if lid.startswith("CapacityBlockEvents")
    ]
    assert [e["KubernetesGroups"] for e in entries if "KubernetesGroups" in e] == [[events.kubernetes_group]]
    manifests = [
        json.loads(r["Properties"]["Manifest"])
        for lid, r in template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").items()
        if lid.startswith("CapacityBlockEventsCordonRbac")
    ]
    assert manifests[0][0]["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}]
