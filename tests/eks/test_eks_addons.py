"""GPU add-on chart pins and the Helm values fmconstructs sets, checked against the keys each chart documents."""

from __future__ import annotations

import re

import pytest

from fmconstructs.eks import (
    DCGM_EXPORTER,
    EFA_DEVICE_PLUGIN,
    NVIDIA_DEVICE_PLUGIN,
    NVIDIA_DRA_DRIVER,
    dcgm_exporter_values,
    efa_device_plugin_values,
    nvidia_device_plugin_values,
    nvidia_dra_driver_values,
)
from fmconstructs.eks.addons import ChartSource, contains_null

# Top-level keys each chart's values.yaml documents (at the pinned versions): a key we set outside these would be
# silently ignored by Helm.
CHART_KEYS = {
    "nvidia-device-plugin": {
        "config", "compatWithCPUManager", "migStrategy", "failOnInitError", "deviceListStrategy", "deviceIDStrategy",
        "nvidiaDriverRoot", "gdrcopyEnabled", "gdsEnabled", "mofedEnabled", "deviceDiscoveryStrategy", "nameOverride",
        "fullnameOverride", "namespaceOverride", "selectorLabelsOverride", "allowDefaultNamespace", "imagePullSecrets",
        "image", "updateStrategy", "podAnnotations", "podSecurityContext", "securityContext", "resources",
        "nodeSelector", "affinity", "tolerations", "priorityClassName", "runtimeClassName", "devicePlugin", "gfd",
        "nfd", "mps", "cdi",
    },
    "aws-efa-k8s-device-plugin": {
        "image", "securityContext", "supportedInstanceLabels", "resources", "nodeSelector", "tolerations",
        "additionalPodAnnotations", "additionalPodLabels", "nameOverride", "fullnameOverride", "imagePullSecrets",
    },
    # deployments/helm/nvidia-dra-driver-gpu/values.yaml at NVIDIA/k8s-dra-driver-gpu tag v25.8.0.
    "nvidia-dra-driver-gpu": {
        "nvidiaDriverRoot", "nvidiaCDIHookPath", "nameOverride", "fullnameOverride", "namespaceOverride",
        "selectorLabelsOverride", "gpuResourcesEnabledOverride", "allowDefaultNamespace", "imagePullSecrets", "image",
        "serviceAccount", "resources", "featureGates", "logVerbosity", "webhook", "controller", "kubeletPlugin",
    },
    "dcgm-exporter": {
        "image", "arguments", "imagePullSecrets", "nameOverride", "fullnameOverride", "serviceAccount",
        "podAnnotations", "podSecurityContext", "securityContext", "service", "resources", "serviceMonitor",
        "mapPodsMetrics", "nodeSelector", "tolerations", "affinity", "extraHostVolumes", "extraConfigMapVolumes",
        "extraVolumeMounts", "extraEnv",
        # deployment/values.yaml at NVIDIA/dcgm-exporter tag 4.4.1-4.6.0 (chart 4.6.0): pod attribution
        "kubeletPath", "kubernetes",
    },
}  # fmt: skip

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("chart", "values"),
    [
        ("nvidia-device-plugin", nvidia_device_plugin_values()),
        ("aws-efa-k8s-device-plugin", efa_device_plugin_values(["p5en.48xlarge"])),
        ("dcgm-exporter", dcgm_exporter_values()),
        ("nvidia-dra-driver-gpu", nvidia_dra_driver_values()),
    ],
)
def test_values_only_use_keys_the_chart_documents(chart, values):
    assert set(values) <= CHART_KEYS[chart]


@pytest.mark.parametrize(
    "values",
    [
        nvidia_device_plugin_values(),
        efa_device_plugin_values(["p5en.48xlarge"]),
        dcgm_exporter_values(),
        nvidia_dra_driver_values()["kubeletPlugin"],
    ],
)
def test_every_gpu_addon_tolerates_the_gpu_taint(values):
    assert GPU_TOLERATION in values["tolerations"]


def test_nvidia_device_plugin_turns_mofed_off_with_efa():
    assert nvidia_device_plugin_values(efa_plugin=True)["mofedEnabled"] is False
    assert "mofedEnabled" not in nvidia_device_plugin_values(efa_plugin=False)


def test_nvidia_device_plugin_runs_on_gpu_nodes_with_feature_discovery():
    values = nvidia_device_plugin_values()
    assert values["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert values["gfd"] == {"enabled": True}


def test_efa_plugin_lists_the_given_types_including_p6_b300():
    values = efa_device_plugin_values(["p6-b300.48xlarge", "p5en.48xlarge", "p5en.48xlarge"])
    assert values["supportedInstanceLabels"] == {
        "keys": ["node.kubernetes.io/instance-type"],
        "values": ["p5en.48xlarge", "p6-b300.48xlarge"],
    }
    assert values["nodeSelector"] == {"vpc.amazonaws.com/efa.present": "true"}


@pytest.mark.parametrize(
    ("instance_types", "parameter"),
    [
        ("p5en.48xlarge", "instance_types"),  # a str is not a list of types
        (["p5en.48xlarge\n"], "instance_types[0]"),
        (["p5en.48xlarge", 5], "instance_types[1]"),
    ],
)
def test_efa_plugin_instance_types_are_a_list_of_label_values(instance_types, parameter):
    with pytest.raises(ValueError, match=rf"^{re.escape(parameter)} must be"):
        efa_device_plugin_values(instance_types)


@pytest.mark.parametrize(
    ("function", "kwargs", "parameter"),
    [
        (nvidia_device_plugin_values, {"efa_plugin": "yes"}, "efa_plugin"),
        (nvidia_device_plugin_values, {"gpu_feature_discovery": None}, "gpu_feature_discovery"),
        (dcgm_exporter_values, {"service_monitor": 1}, "service_monitor"),
        (dcgm_exporter_values, {"port": True}, "port"),
        (dcgm_exporter_values, {"port": 0}, "port"),
        (dcgm_exporter_values, {"port": float("nan")}, "port"),
    ],
)
def test_addon_values_refuse_bad_input(function, kwargs, parameter):
    with pytest.raises(ValueError, match=rf"^{parameter} must be"):
        function(**kwargs)


@pytest.mark.parametrize("version", [5, "0.17.1\n", " ", ["1"]])
def test_chart_pin_versions_are_one_word(version):
    with pytest.raises(ValueError, match=r"^version must be"):
        NVIDIA_DEVICE_PLUGIN.with_version(version)


def test_efa_plugin_needs_instance_types():
    with pytest.raises(ValueError, match=r"^instance_types must be a list of at least 1 item"):
        efa_device_plugin_values([])


def test_dcgm_exporter_metrics_endpoint_is_scrapable():
    values = dcgm_exporter_values()
    assert values["service"]["enable"] is True
    assert values["service"]["port"] == 9400
    for scrape in (values["service"]["annotations"], values["podAnnotations"]):
        assert scrape == {
            "prometheus.io/scrape": "true",
            "prometheus.io/port": "9400",
            "prometheus.io/path": "/metrics",
        }
    assert values["serviceMonitor"] == {"enabled": False}
    assert dcgm_exporter_values(service_monitor=True)["serviceMonitor"] == {"enabled": True}


def test_dra_driver_leaves_gpus_to_the_device_plugin():
    values = nvidia_dra_driver_values()
    assert values["resources"]["gpus"] == {"enabled": False}
    assert values["resources"]["computeDomains"] == {"enabled": True}
    assert values["nvidiaDriverRoot"] == "/"


def test_dra_controller_overrides_of_the_eks_ultraserver_guide():
    # EKS User Guide ml-eks-nvidia-ultraserver, dra-values.yaml: the chart's controller requires a
    # node-role.kubernetes.io/control-plane node, which EKS never has.
    assert nvidia_dra_driver_values()["controller"] == {"nodeSelector": None, "affinity": None, "tolerations": []}


def test_dra_kubelet_plugin_runs_on_gpu_nodes_only():
    # EKS User Guide ml-eks-nvidia-ultraserver, dra-values.yaml: kubeletPlugin.affinity on nvidia.com/gpu.present.
    plugin = nvidia_dra_driver_values()["kubeletPlugin"]
    assert plugin["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]}
                ]
            }
        }
    }
    plugin["affinity"]["nodeAffinity"].clear()
    assert nvidia_dra_driver_values()["kubeletPlugin"]["affinity"]["nodeAffinity"]  # a caller's edit does not leak


def test_efa_device_plugin_meets_the_gb200_guide_minimum():
    # EKS User Guide ml-eks-nvidia-ultraserver: EFA device plugin 0.5.14+; v0.5.30 is listed in the eks-charts index.
    assert EFA_DEVICE_PLUGIN.version == "v0.5.30"
    assert tuple(int(p) for p in EFA_DEVICE_PLUGIN.version.lstrip("v").split(".")) >= (0, 5, 14)


def test_dra_driver_is_the_version_of_the_eks_ultraserver_guide():
    assert NVIDIA_DRA_DRIVER.version == "25.8.0"
    assert NVIDIA_DRA_DRIVER.repository == "https://helm.ngc.nvidia.com/nvidia"


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"a": {"b": None}}, True),
        ({"a": [{"b": None}]}, True),
        ({"a": {"b": []}}, False),
        ({"a": [1, "x", {"b": False}]}, False),
    ],
)
def test_contains_null(values, expected):
    assert contains_null(values) is expected


@pytest.mark.parametrize("pin", [NVIDIA_DEVICE_PLUGIN, EFA_DEVICE_PLUGIN, DCGM_EXPORTER, NVIDIA_DRA_DRIVER])
def test_charts_are_pinned_to_an_exact_version(pin):
    assert pin.version
    assert not any(c in pin.version for c in "^~*x><= ")
    assert pin.repository.startswith("https://")


def test_pin_with_version_is_the_upgrade_path():
    assert NVIDIA_DEVICE_PLUGIN.with_version("0.18.0").version == "0.18.0"
    assert NVIDIA_DEVICE_PLUGIN.with_version(None) is NVIDIA_DEVICE_PLUGIN


# --- chart sources: private OCI registries (ECR) for clusters without an internet route (issue 11 section 3) ---------
REGISTRY = "111122223333.dkr.ecr.us-east-1.amazonaws.com"
EFA_OCI = f"oci://{REGISTRY}/helm-charts/aws-efa-k8s-device-plugin"


def test_oci_source_replaces_the_repository_and_keeps_the_pin():
    pin = ChartSource.oci(EFA_OCI).pin(EFA_DEVICE_PLUGIN)
    assert pin.repository == EFA_OCI
    assert (pin.chart, pin.version, pin.namespace, pin.release) == (
        EFA_DEVICE_PLUGIN.chart,
        EFA_DEVICE_PLUGIN.version,
        EFA_DEVICE_PLUGIN.namespace,
        EFA_DEVICE_PLUGIN.release,
    )
    assert ChartSource.oci(EFA_OCI).is_oci and ChartSource.PUBLIC.pin(EFA_DEVICE_PLUGIN) is EFA_DEVICE_PLUGIN


def test_oci_reference_must_end_in_the_chart_name():
    """The aws_eks_v2 kubectl handler runs `helm pull <oci> --untar` and reads the chart from the directory named by
    the reference's last segment, which helm names after the chart."""
    with pytest.raises(ValueError, match=r"^source must be an OCI reference ending in the chart name"):
        ChartSource.oci(f"oci://{REGISTRY}/helm-charts/efa").pin(EFA_DEVICE_PLUGIN)


def test_image_and_extra_values_merge_over_fmconstructs_values():
    source = (
        ChartSource.oci(f"oci://{REGISTRY}/charts/nvidia-device-plugin")
        .with_image(f"{REGISTRY}/nvidia/k8s-device-plugin", tag="v0.17.1")
        .with_values({"nfd": {"image": {"repository": f"{REGISTRY}/nfd/node-feature-discovery"}}})
    )
    values = source.apply(nvidia_device_plugin_values())
    assert values["image"] == {"repository": f"{REGISTRY}/nvidia/k8s-device-plugin", "tag": "v0.17.1"}
    assert values["nfd"] == {"image": {"repository": f"{REGISTRY}/nfd/node-feature-discovery"}}
    assert values["nodeSelector"] == {"nvidia.com/gpu.present": "true"}  # fmconstructs' values stay
    assert set(values) <= CHART_KEYS["nvidia-device-plugin"]
    assert ChartSource.PUBLIC.apply({"a": 1}) == {"a": 1}


def test_ecr_repository_source_is_oci_plus_the_repository_uri():
    import aws_cdk as cdk
    from aws_cdk import aws_ecr as ecr

    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(account="111122223333", region="us-east-1"))
    repository = ecr.Repository.from_repository_name(stack, "Charts", "helm-charts/dcgm-exporter")
    source = ChartSource.ecr(repository)
    assert source.is_oci
    resolved = stack.resolve(source.repository)
    assert resolved["Fn::Join"][1][0] == "oci://111122223333.dkr.ecr.us-east-1."
    assert source.pin(DCGM_EXPORTER).repository == source.repository  # a token URI is not checked at synthesis


@pytest.mark.parametrize(
    ("make", "parameter"),
    [
        (lambda: ChartSource.oci("https://aws.github.io/eks-charts"), "reference"),
        (lambda: ChartSource.oci(f"{EFA_OCI}\n"), "reference"),
        (lambda: ChartSource.oci(f"oci://{REGISTRY}/Charts/EFA"), "reference"),
        (lambda: ChartSource.oci(5), "reference"),
        (lambda: ChartSource.helm_repository("oci://x/y"), "url"),
        (lambda: ChartSource.helm_repository("https://x y"), "url"),
        (lambda: ChartSource.ecr("helm-charts/efa"), "repository"),
        (lambda: ChartSource(repository="ftp://x"), "repository"),
        (lambda: ChartSource.PUBLIC.with_image("nvcr.io/nvidia/k8s-device-plugin:v1"), "image_repository"),
        (lambda: ChartSource.PUBLIC.with_image(f"{REGISTRY}/x", tag="v1\n"), "image_tag"),
        (lambda: ChartSource.PUBLIC.with_image(3), "image_repository"),
        (lambda: ChartSource(image_tag="v1"), "image_tag"),
        (lambda: ChartSource.PUBLIC.with_values([("a", 1)]), "values"),
    ],
)
def test_chart_sources_refuse_bad_input(make, parameter):
    with pytest.raises(ValueError, match=rf"^{parameter} must be"):
        make()


@pytest.fixture(scope="module")
def private_cluster():
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk.assertions import Template

    from fmconstructs.eks import GpuEksCluster

    stack = cdk.Stack(cdk.App(), "PrivateCharts")
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
    )
    cluster = GpuEksCluster(stack, "Cluster", vpc=vpc)
    cluster.add_nvidia_dra_driver(
        source=ChartSource.oci(f"oci://{REGISTRY}/charts/nvidia-dra-driver-gpu").with_image(
            f"{REGISTRY}/nvidia/k8s-dra-driver-gpu"
        )
    )
    cluster.add_gpu_addons(
        efa_device_plugin_source=ChartSource.oci(EFA_OCI).with_image(f"{REGISTRY}/eks/aws-efa-k8s-device-plugin"),
        dcgm_exporter_source=ChartSource.helm_repository("https://charts.example.internal/dcgm"),
    )
    return cluster, stack, Template.from_stack(stack)


def _chart_props(template, chart):
    import json

    for resource in template.find_resources("Custom::AWSCDK-EKS-HelmChart").values():
        if resource["Properties"]["Chart"] == chart:
            props = dict(resource["Properties"])
            props["Values"] = json.loads(props["Values"]) if isinstance(props.get("Values"), str) else props["Values"]
            return props
    raise AssertionError(chart)


def test_helm_chart_from_ecr_oci_with_its_image(private_cluster):
    _, _, template = private_cluster
    props = _chart_props(template, "aws-efa-k8s-device-plugin")
    assert props["Repository"] == EFA_OCI
    assert props["Version"] == EFA_DEVICE_PLUGIN.version
    assert props["Values"]["image"] == {"repository": f"{REGISTRY}/eks/aws-efa-k8s-device-plugin"}
    assert props["Values"]["nodeSelector"] == {"vpc.amazonaws.com/efa.present": "true"}


def test_dra_driver_from_oci_keeps_its_null_overrides(private_cluster):
    _, _, template = private_cluster
    props = _chart_props(template, "nvidia-dra-driver-gpu")
    assert props["Repository"] == f"oci://{REGISTRY}/charts/nvidia-dra-driver-gpu"
    assert props["Values"]["controller"] == {"nodeSelector": None, "affinity": None, "tolerations": []}
    assert props["Values"]["image"] == {"repository": f"{REGISTRY}/nvidia/k8s-dra-driver-gpu"}


def test_other_charts_keep_their_public_or_given_repository(private_cluster):
    _, _, template = private_cluster
    assert _chart_props(template, "nvidia-device-plugin")["Repository"] == NVIDIA_DEVICE_PLUGIN.repository
    assert _chart_props(template, "dcgm-exporter")["Repository"] == "https://charts.example.internal/dcgm"


def test_kubectl_handler_can_pull_from_ecr(private_cluster):
    """aws-cdk-lib's aws_eks_v2 KubectlProvider gives its handler role AmazonEC2ContainerRegistryReadOnly, which the
    handler's `aws ecr get-login-password | helm registry login` and `helm pull oci://...` need."""
    _, _, template = private_cluster
    roles = template.find_resources("AWS::IAM::Role")
    handler_roles = [
        r
        for r in roles.values()
        if "AmazonEC2ContainerRegistryReadOnly" in str(r["Properties"].get("ManagedPolicyArns"))
    ]
    assert handler_roles


def test_a_chart_added_from_one_source_is_not_silently_reused_from_another(private_cluster):
    cluster, _, _ = private_cluster
    assert cluster.add_nvidia_dra_driver() is cluster.add_nvidia_dra_driver()  # no source: the existing chart
    with pytest.raises(ValueError, match=r"^source must be the source NvidiaDraDriver was first added with"):
        cluster.add_nvidia_dra_driver(source=ChartSource.oci(f"oci://{REGISTRY}/other/nvidia-dra-driver-gpu"))
    with pytest.raises(TypeError, match=r"^source must be a ChartSource"):
        cluster.add_dcgm_exporter(source="oci://x/y/dcgm-exporter")  # type: ignore[arg-type]
