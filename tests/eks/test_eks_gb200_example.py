"""FmEksGb200: EKS on one u-p6e-gb200x72 UltraServer (EKS User Guide ml-eks-nvidia-ultraserver), DRA driver values,
EFA device plugin version, the ComputeDomain and the EFA-enabled FSx for Lustre volume."""

from __future__ import annotations

import json
import shlex

import pytest
from aws_cdk.assertions import Template

from examples.eks_gb200_stack import DEFAULT_ULTRASERVER_GROUP_ARN, EksGb200Stack

from tests.conftest import new_app

OTHER_GROUP_ARN = "arn:aws:resource-groups:us-west-2:123456789012:group/my-gb200-block"


@pytest.fixture(scope="module")
def stack():
    return EksGb200Stack(new_app(), "FmEksGb200")


@pytest.fixture(scope="module")
def template(stack):
    return Template.from_stack(stack)


def one(template, type_, props=None):
    found = template.find_resources(type_, {"Properties": props} if props else None)
    assert len(found) == 1, f"{len(found)} {type_}"
    return next(iter(found.values()))


def chart(template, name):
    return one(template, "Custom::AWSCDK-EKS-HelmChart", {"Chart": name})["Properties"]


def gb200_launch_template(template):
    return one(template, "AWS::EC2::LaunchTemplate")["Properties"]["LaunchTemplateData"]


def gb200_nodegroup(template):
    return one(template, "AWS::EKS::Nodegroup", {"CapacityType": "CAPACITY_BLOCK"})["Properties"]


def test_kubernetes_version_supports_dra(template):
    # EKS User Guide ml-eks-nvidia-ultraserver: P6e-GB200 on EKS needs Kubernetes 1.33 or later (DRA).
    version = one(template, "AWS::EKS::Cluster")["Properties"]["Version"]
    assert tuple(int(p) for p in version.split(".")) >= (1, 33)


def test_dra_driver_values_of_the_eks_ultraserver_guide(template):
    props = chart(template, "nvidia-dra-driver-gpu")
    assert (props["Version"], props["Repository"]) == ("25.8.0", "https://helm.ngc.nvidia.com/nvidia")
    values = json.loads(props["Values"])
    assert values["controller"] == {"nodeSelector": None, "affinity": None, "tolerations": []}
    assert values["resources"] == {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}}
    assert values["kubeletPlugin"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ] == [{"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]}]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in values["kubeletPlugin"][
        "tolerations"
    ]


def test_efa_device_plugin_version_and_gb200(template):
    # EKS User Guide ml-eks-nvidia-ultraserver: EFA device plugin chart 0.5.14 or later.
    props = chart(template, "aws-efa-k8s-device-plugin")
    assert props["Version"] == "v0.5.30"
    values = json.loads(props["Values"])
    assert "p6e-gb200.36xlarge" in values["supportedInstanceLabels"]["values"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in values["tolerations"]


def test_device_plugin_labels_cliques(template):
    # GFD's nvidia.com/gpu.clique label is what the DRA driver's ComputeDomains use (the guide's components table).
    assert json.loads(chart(template, "nvidia-device-plugin")["Values"])["gfd"] == {"enabled": True}


def test_ultraserver_node_group_on_the_capacity_block(template):
    group = gb200_nodegroup(template)
    assert group["AmiType"] == "AL2023_ARM_64_NVIDIA"
    assert group["ScalingConfig"] == {"MinSize": 18, "MaxSize": 18, "DesiredSize": 18}
    assert group["Labels"]["fmconstructs.io/capacity"] == "ultraserver-capacity-block"
    assert group["Labels"]["fmconstructs.io/efa-interface-count"] == "4"
    assert "LaunchTemplate" in group and "InstanceTypes" not in group  # EKS: Capacity Blocks need a custom template
    data = gb200_launch_template(template)
    assert data["InstanceType"] == "p6e-gb200.36xlarge"
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationResourceGroupArn": DEFAULT_ULTRASERVER_GROUP_ARN}
    }
    assert "Placement" not in data  # block instances are already placed


def test_efa_layout_gives_the_four_devices_the_guide_expects(template):
    interfaces = gb200_launch_template(template)["NetworkInterfaces"]
    assert [(i["NetworkCardIndex"], i["InterfaceType"]) for i in interfaces] == [
        (0, "interface"),
        (1, "efa-only"),
        (5, "efa-only"),
        (9, "efa-only"),
        (13, "efa-only"),
    ]
    assert all("SubnetId" not in i for i in interfaces)


def test_resource_group_arn_from_context():
    app = new_app(**{"fmconstructs:ultraserver-resource-group-arn": OTHER_GROUP_ARN})
    data = gb200_launch_template(Template.from_stack(EksGb200Stack(app, "Ctx")))
    assert data["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationResourceGroupArn": OTHER_GROUP_ARN
    }


def test_compute_domain_after_the_dra_driver(template):
    found = [
        (logical_id, r)
        for logical_id, r in template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").items()
        if "ComputeDomain" in json.dumps(r["Properties"]["Manifest"])
    ]
    assert len(found) == 1
    _, resource = found[0]
    (domain,) = json.loads(resource["Properties"]["Manifest"])
    assert domain["apiVersion"] == "resource.nvidia.com/v1beta1"
    assert domain["metadata"]["name"] == "gb200-imex" and domain["metadata"]["namespace"] == "training"
    assert domain["spec"] == {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "gb200-imex-channel"}}}
    dra_chart = next(
        iter(
            template.find_resources("Custom::AWSCDK-EKS-HelmChart", {"Properties": {"Chart": "nvidia-dra-driver-gpu"}})
        )
    )
    assert dra_chart in resource["DependsOn"]


def test_efa_enabled_lustre_file_system(template):
    fs = one(template, "AWS::FSx::FileSystem")["Properties"]
    assert fs["StorageCapacity"] == 9600  # the 0.2.0 size, kept (FSx cannot shrink)
    config = fs["LustreConfiguration"]
    assert (config["DeploymentType"], config["PerUnitStorageThroughput"], config["EfaEnabled"]) == (
        "PERSISTENT_2",
        1000,
        True,
    )
    assert config["MetadataConfiguration"] == {"Mode": "AUTOMATIC"}
    # The file system shares the cluster's EFA security group, which the nodes' EFA interfaces carry.
    assert any("ClusterEfaSecurityGroup" in json.dumps(g) for g in fs["SecurityGroupIds"])
    group_subnets = gb200_nodegroup(template)["Subnets"]
    assert fs["SubnetIds"] == group_subnets  # EFA traffic stays in one availability zone


def test_nodes_set_up_lustre_over_efa_before_kubelet(stack, template):
    # FSx UG "Configuring EFA clients": p6e-gb200 clients use 8 EFA interfaces by default; these nodes attach 4
    # (cards 1, 5, 9, 13), so LNet uses 4. EKS UG fsx-csi-tuning-efa: the set-up runs as pre-bootstrap user data.
    data = gb200_launch_template(template)["UserData"]["Fn::Base64"]
    text = "".join(p if isinstance(p, str) else json.dumps(p) for p in data["Fn::Join"][1])
    # the pre-bootstrap steps travel as an S3 asset: the shell part is the loader
    assert "fmconstructs.bootstrap loader" in text
    script = stack.gb200.launch_template.bootstrap.render()
    (line,) = [
        shlex.split(line)
        for line in script.splitlines()
        if line.startswith("/usr/local/sbin/fmconstructs-lustre-mount ")
    ]
    assert line[3] == "/fsx/fsx-training"
    assert line[5:] == ["4", "1", "p6e-gb200"]  # 4 EFA interfaces for LNet, GPUDirect Storage on, family
    assert text.index("application/node.eks.aws") < text.index("text/x-shellscript")
    assert [c.efa_interfaces for c in stack.gb200.lustre_clients] == [4]


def test_static_volume_and_claim_in_the_training_namespace(template):
    volume = [
        json.dumps(r["Properties"]["Manifest"])
        for r in template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").values()
        if "PersistentVolumeClaim" in json.dumps(r["Properties"]["Manifest"])
    ]
    assert len(volume) == 1
    assert all(s in volume[0] for s in ("fsx.csi.aws.com", "fsx-training", "9600Gi", '\\"Namespace\\"'))
    # Besides the FSx CSI driver: vpc-cni and the Pod Identity agent (the CNI's own role, fmconstructs.eks.vpc_cni),
    # and the node monitoring agent (node auto repair: tests/health/test_health_eks.py).
    names = sorted(r["Properties"]["AddonName"] for r in template.find_resources("AWS::EKS::Addon").values())
    assert names == ["aws-fsx-csi-driver", "eks-node-monitoring-agent", "eks-pod-identity-agent", "vpc-cni"]


def test_gb200_launch_template_cfn_lint_acknowledged_with_reason(template):
    metadata = one(template, "AWS::EC2::LaunchTemplate")["Metadata"]
    assert "E3628" in metadata["cfn-lint"]["config"]["ignore_checks"]
    assert "p6e-gb200.36xlarge" in metadata["fmconstructs:cfn-lint-acknowledgements"]["E3628"]


def test_scraper_only_with_a_workspace(stack):
    from examples.observability_stack import ObservabilityStack

    assert stack.scraper is None
    app = new_app()
    observability = ObservabilityStack(app, "Obs")
    with_scraper = EksGb200Stack(app, "WithScraper", workspace=observability.workspace)
    assert with_scraper.scraper is not None
    Template.from_stack(with_scraper).resource_count_is("AWS::APS::Scraper", 1)
    assert observability in with_scraper.dependencies  # known once synthesized


def test_outputs_an_operator_needs_with_descriptions(template):
    outputs = template.find_outputs("*")
    expected = {
        "ClusterName",
        "ClusterArn",
        "ClusterEndpoint",
        "UpdateKubeconfigCommand",
        "Gb200Nodegroup",
        "FileSystemId",
        "FileSystemDnsName",
        "FileSystemMountName",
        "VolumeClaim",
        "ComputeDomainChannelTemplate",
    }
    assert set(outputs) >= expected
    assert all(outputs[name].get("Description") for name in expected)
    joined = outputs["UpdateKubeconfigCommand"]["Value"]["Fn::Join"][1]
    assert joined[0] == "aws eks update-kubeconfig --name " and joined[-1] == {"Ref": "AWS::Region"}
