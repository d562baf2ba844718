"""Serving as one product (issue 23 section 3): the model-fit check through ModelServer, its endpoint and autoscaler,
Karpenter NodePools as capacity, the lazy ``fmconstructs.serving`` exports and ``TrainingPlatform.add_model_server``."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs import CapacityBlock
from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import FmTypeError, FmValidationError, WarningId
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.pcs import PcsAmi
from fmconstructs.platform import (
    EksOptions,
    PcsOptions,
    PlatformObservability,
    PlatformStorage,
    TrainingPlatform,
)
from fmconstructs.serving import ModelDtype, ModelServer, ModelWeights
from fmconstructs.serving.autoscaling import ScaleTargetKind
from fmconstructs.serving.exposure import LoadBalancerKind, LoadBalancerScheme

from tests.conftest import ENV, new_app, new_scene

ROOT = Path(__file__).resolve().parents[2]
WORKSPACE_ARN = "arn:aws:aps:us-east-1:123456789012:workspace/ws-0123abcd-0123-4567-89ab-0123456789ab"


def _cluster(**karpenter_pools: list[str]) -> tuple[Any, GpuEksCluster]:
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    if karpenter_pools:
        karpenter = cluster.add_karpenter()
        for name, types in karpenter_pools.items():
            karpenter.add_gpu_node_pool(name.replace("_", "-"), instance_types=types, max_nodes=2)
    return scene, cluster


def _server(cluster: GpuEksCluster, scope: Any, **overrides: Any) -> ModelServer:
    props: dict[str, Any] = {
        "cluster": cluster,
        "name": "llama",
        "weights": ModelWeights.from_hugging_face("meta-llama/Llama-3.1-8B"),
        "instance_type": "p5en.48xlarge",
    }
    props.update(overrides)
    return ModelServer(scope, "Server", **props)


def _manifests(template: Template, kind: str) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(logical id, resource, object) of every applied object of ``kind``."""
    found = []
    for logical_id, resource in template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").items():
        body = resource["Properties"]["Manifest"]
        if isinstance(body, dict):
            separator, parts = body["Fn::Join"]
            body = separator.join(p if isinstance(p, str) else "TOKEN" for p in parts)
        found += [(logical_id, resource, m) for m in json.loads(body) if m["kind"] == kind]
    return found


def _one(template: Template, kind: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    (only,) = _manifests(template, kind)
    return only


# --- the model-fit check ---------------------------------------------------------------------------------------------
def test_a_model_that_fits_keeps_its_layout():
    scene, cluster = _cluster()
    server = _server(cluster, scene.stack, nodes=2, parameters=405e9, dtype=ModelDtype.BF16)
    assert server.layout is not None and server.layout.fits
    assert (server.layout.nodes, server.layout.gpus) == (2, 16)


def test_a_model_that_does_not_fit_one_node_is_refused_naming_nodes_and_the_smallest_layout():
    # 405e9 x 2 bytes = 754.4 GiB; 8 H100 of 80 GiB hold 8 x (80 x 0.9 - 4) = 544 GiB usable: refused on one node,
    # while 2 nodes leave 333.6 GiB of KV cache (sizing module's figures).
    scene, cluster = _cluster()
    with pytest.raises(FmValidationError) as raised:
        _server(cluster, scene.stack, instance_type="p5.48xlarge", parameters=405e9, dtype=ModelDtype.BF16)
    assert raised.value.parameter == "nodes"
    assert raised.value.value == 1
    assert ">= 2" in str(raised.value) and "2 x p5.48xlarge, TP=8 x PP=2 (16 GPUs)" in str(raised.value)


def test_a_kv_cache_headroom_the_node_cannot_give_asks_for_more_nodes():
    # On p5en (141 GiB H200) 405e9 bf16 fits one node at the default 0.2, not at 0.5: 2 nodes do (the example's
    # choice).
    scene, cluster = _cluster()
    _server(cluster, scene.stack, parameters=405e9, dtype=ModelDtype.BF16)
    other, other_cluster = _cluster()
    with pytest.raises(FmValidationError, match=r">= 2") as raised:
        _server(other_cluster, other.stack, parameters=405e9, dtype=ModelDtype.BF16, kv_cache_fraction=0.5)
    assert raised.value.parameter == "nodes"


def test_a_tensor_parallel_degree_too_small_for_the_model_is_refused_naming_it():
    # 70e9 bf16 = 130.4 GiB: one H200 cannot hold it (tensor_parallel=1), two can.
    scene, cluster = _cluster()
    with pytest.raises(FmValidationError) as raised:
        _server(cluster, scene.stack, tensor_parallel=1, parameters=70e9, dtype=ModelDtype.BF16)
    assert raised.value.parameter == "tensor_parallel"
    assert "TP=2" in str(raised.value)


def test_the_kv_cache_fraction_is_passed_to_the_check():
    # 8 GPUs hold 70e9 bf16 with room to spare at 0.2, not when 95 % must stay free for the KV cache.
    scene, cluster = _cluster()
    _server(cluster, scene.stack, parameters=70e9, dtype=ModelDtype.BF16)
    other, other_cluster = _cluster()
    with pytest.raises(FmValidationError, match=r"kv_cache_fraction=0\.95"):
        _server(other_cluster, other.stack, parameters=70e9, dtype=ModelDtype.BF16, kv_cache_fraction=0.95)


@pytest.mark.parametrize(
    ("overrides", "parameter"),
    [
        ({"parameters": 8e9, "dtype": "bf16"}, "dtype"),
        ({"parameters": 8e9, "dtype": "int3"}, "dtype"),
        ({"parameters": 8e9}, "dtype"),
        ({"dtype": ModelDtype.BF16}, "parameters"),
        ({"parameters": 8e9, "dtype": ModelDtype.BF16, "kv_cache_fraction": 1.0}, "kv_cache_fraction"),
    ],
)
def test_bad_model_sizes_are_refused_naming_the_parameter(overrides, parameter):
    scene, cluster = _cluster()
    with pytest.raises(FmValidationError) as raised:
        _server(cluster, scene.stack, **overrides)
    assert raised.value.parameter == parameter


def test_a_dtype_string_is_refused_with_the_enum_to_use():
    scene, cluster = _cluster()
    with pytest.raises(FmTypeError, match=r"ModelDtype\.BF16"):
        _server(cluster, scene.stack, parameters=8e9, dtype="bf16")


# --- endpoint and autoscaling ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def wired() -> tuple[ModelServer, ModelServer, Template]:
    scene, cluster = _cluster()
    group = cluster.add_gpu_node_group(
        "P5en",
        instance_type="p5en.48xlarge",
        max_nodes=2,
        subnets=[scene.subnet_a],
        capacity=CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=2),
    )
    big = _server(cluster, scene.stack, name="big", nodes=2, node_group=group)
    big.add_endpoint()
    big.add_autoscaling(workspace=WORKSPACE_ARN, max_replicas=1)
    small = ModelServer(
        scene.stack,
        "Small",
        cluster=cluster,
        name="small",
        weights=ModelWeights.from_hugging_face("Qwen/Qwen3-0.6B"),
        instance_type="p5en.48xlarge",
        tensor_parallel=1,
    )
    small.add_endpoint(kind=LoadBalancerKind.ALB)
    small.add_autoscaling(workspace=WORKSPACE_ARN, threshold=10, max_replicas=4)
    return big, small, Template.from_stack(scene.stack)


def test_the_endpoint_of_a_multi_node_server_selects_its_leaders_in_its_namespace(wired):
    *_, template = wired
    (_, _, service) = next(
        (i, r, m) for i, r, m in _manifests(template, "Service") if m["metadata"]["name"] == "big-nlb"
    )
    assert service["metadata"]["namespace"] == "fm-serving"
    assert service["spec"]["selector"] == {
        "fmconstructs.io/model-server": "big",
        "leaderworkerset.sigs.k8s.io/worker-index": "0",
    }
    assert service["metadata"]["annotations"]["service.beta.kubernetes.io/aws-load-balancer-scheme"] == "internal"


def test_the_endpoint_is_applied_after_the_servers_service(wired):
    *_, template = wired
    service_id = next(i for i, _, m in _manifests(template, "Service") if m["metadata"]["name"] == "big")
    nlb = next(r for _, r, m in _manifests(template, "Service") if m["metadata"]["name"] == "big-nlb")
    assert service_id in nlb["DependsOn"]


def test_the_alb_endpoint_of_a_single_node_server_routes_to_its_service(wired):
    *_, template = wired
    (_, _, ingress) = _one(template, "Ingress")
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]
    assert backend == {"service": {"name": "small", "port": {"number": 8000}}}


def test_the_autoscaler_targets_the_servers_workload_kind_and_follows_it(wired):
    big, small, template = wired
    scaled = {m["metadata"]["name"]: (r, m) for _, r, m in _manifests(template, "ScaledObject")}
    assert scaled["big"][1]["spec"]["scaleTargetRef"]["kind"] == ScaleTargetKind.LEADER_WORKER_SET.value
    assert scaled["small"][1]["spec"]["scaleTargetRef"] == {"name": "small"}
    assert scaled["small"][1]["spec"]["maxReplicaCount"] == 4
    workload_id = next(i for i, _, m in _manifests(template, "LeaderWorkerSet"))
    assert workload_id in scaled["big"][0]["DependsOn"]
    assert big.node.find_child("Autoscaling") is not None and small.node.find_child("Endpoint") is not None


def test_a_second_endpoint_or_autoscaler_is_refused(wired):
    big, *_ = wired
    with pytest.raises(FmValidationError, match="add_endpoint"):
        big.add_endpoint()
    with pytest.raises(FmValidationError, match="add_autoscaling"):
        big.add_autoscaling(workspace=WORKSPACE_ARN)


def test_an_internet_facing_endpoint_needs_the_opt_in():
    scene, cluster = _cluster()
    server = _server(cluster, scene.stack)
    with pytest.raises(FmValidationError) as raised:
        server.add_endpoint(scheme=LoadBalancerScheme.INTERNET_FACING)
    assert raised.value.parameter == "scheme"


# --- Karpenter NodePools as capacity ---------------------------------------------------------------------------------
def test_a_server_on_a_node_pool_selects_the_pool_and_follows_it():
    scene, cluster = _cluster(serving_p5en=["p5en.48xlarge"])
    server = _server(cluster, scene.stack, tensor_parallel=2, node_pool="serving-p5en")
    template = scene.template()
    (_, resource, deployment) = _one(template, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {
        "node.kubernetes.io/instance-type": "p5en.48xlarge",
        "karpenter.sh/nodepool": "serving-p5en",
    }
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    pool_id = next(i for i, _, m in _manifests(template, "NodePool"))
    assert pool_id in resource["DependsOn"]
    assert server.node_pool is not None and server.node_pool[0] == "serving-p5en"
    # A pool is capacity: no "no node group" warning.
    assert not Annotations.from_stack(scene.stack).find_warning(
        "*", Match.string_like_regexp(WarningId.SERVING_NO_NODE_GROUP.value)
    )


def test_the_pool_manifest_returned_by_add_gpu_node_pool_is_accepted():
    scene, cluster = _cluster()
    assert cluster.karpenter is None
    pool = cluster.add_karpenter().add_gpu_node_pool("p5en", instance_types=["p5en.48xlarge"], max_nodes=1)
    server = _server(cluster, scene.stack, node_pool=pool)
    assert server.node_pool == ("p5en", pool)


@pytest.mark.parametrize(
    ("pools", "overrides", "match"),
    [
        ({}, {"node_pool": "serving"}, "add_karpenter"),
        ({"serving": ["p5en.48xlarge"]}, {"node_pool": "other"}, "serving"),
        ({"serving": ["p5.48xlarge"]}, {"node_pool": "serving"}, "launches p5en.48xlarge"),
        ({"serving": ["p5en.48xlarge"]}, {"node_pool": 3}, "NodePool name"),
    ],
)
def test_bad_node_pools_are_refused(pools, overrides, match):
    scene, cluster = _cluster(**pools)
    with pytest.raises(FmValidationError, match=match) as raised:
        _server(cluster, scene.stack, **overrides)
    assert raised.value.parameter == "node_pool"


def test_a_node_pool_and_a_node_group_together_are_refused():
    scene, cluster = _cluster(serving=["p5en.48xlarge"])
    group = cluster.add_gpu_node_group("P5en", instance_type="p5en.48xlarge", max_nodes=1, subnets=[scene.subnet_a])
    with pytest.raises(FmValidationError) as raised:
        _server(cluster, scene.stack, node_pool="serving", node_group=group)
    assert raised.value.parameter == "node_pool"


# --- lazy exports ----------------------------------------------------------------------------------------------------
def test_the_serving_package_imports_sizing_without_aws_cdk():
    code = (
        "import sys; import fmconstructs.serving.sizing; import fmconstructs.serving as s; s.ModelDtype; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'aws_cdk', 'constructs', 'jsii'}))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300, check=True
    )
    assert proc.stdout.strip() == "[]"


def test_the_serving_package_exports_the_constructs():
    import fmconstructs.serving as serving
    from fmconstructs.serving.model_server import ModelServer as Direct

    assert serving.ModelServer is Direct
    assert "ModelServerEndpoint" in dir(serving)


# --- TrainingPlatform.add_model_server -------------------------------------------------------------------------------
def _platform(orchestrator: Any, *, storage: bool = True) -> tuple[cdk.Stack, TrainingPlatform]:
    app = new_app()
    shared = cdk.Stack(app, "Observability", env=ENV)
    workspace = PrometheusWorkspace(shared, "Prometheus")
    stack = cdk.Stack(app, "Platform", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
        private_subnet_route_table_ids=["rtb-0aaaaaaaaaaaaaaa1", "rtb-0bbbbbbbbbbbbbbb2"],
    )
    platform = TrainingPlatform(
        stack,
        "Platform",
        vpc=vpc,
        instance_type="p5en.48xlarge",
        nodes=2,
        capacity=CapacityBlock(reservation_id="cr-0fedcba9876543210", instance_count=2),
        orchestrator=orchestrator,
        storage=PlatformStorage.of_capacity(storage_capacity_gib=4800) if storage else None,
        observability=PlatformObservability.existing(prometheus_workspace=workspace),
    )
    return stack, platform


@pytest.fixture(scope="module")
def eks_platform() -> tuple[cdk.Stack, TrainingPlatform, ModelServer, Template]:
    stack, platform = _platform(EksOptions())
    server = platform.add_model_server(
        "Llama",
        name="llama-70b",
        fsx_path="checkpoints/llama-70b",
        parameters=70e9,
        dtype=ModelDtype.BF16,
    )
    return stack, platform, server, Template.from_stack(stack)


def test_platform_server_runs_on_the_platforms_cluster_and_group(eks_platform):
    _, platform, server, template = eks_platform
    assert server.cluster is platform.eks_cluster
    (_, _, deployment) = _one(template, "Deployment")
    assert deployment["spec"]["template"]["spec"]["nodeSelector"]["fmconstructs.io/capacity"] == "capacity-block"


def test_platform_server_reads_the_platforms_file_system(eks_platform):
    _, platform, server, template = eks_platform
    assert server.weights.file_system is platform.file_system
    (_, _, deployment) = _one(template, "Deployment")
    (mount,) = [
        m for m in deployment["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] if m["name"] == "weights"
    ]
    assert mount == {"name": "weights", "mountPath": "/models", "readOnly": True, "subPath": "checkpoints/llama-70b"}


def test_platform_scraper_collects_serving_metrics(eks_platform):
    _, platform, _, template = eks_platform
    assert platform.scraper is not None and platform.scraper.serving_rules is not None
    (scraper,) = template.find_resources("AWS::APS::Scraper").values()
    config = yaml.safe_load(base64.b64decode(scraper["Properties"]["ScrapeConfiguration"]["ConfigurationBlob"]))
    assert "fm-serving" in {job["job_name"] for job in config["scrape_configs"]}
    template.resource_count_is("AWS::APS::RuleGroupsNamespace", 1)


def test_platform_servers_with_s3_weights_share_one_serving_rule_namespace():
    stack, platform = _platform(EksOptions(), storage=False)
    bucket = s3.Bucket.from_bucket_name(stack, "Models", "my-models")
    servers = [
        platform.add_model_server(f"Server{i}", name=f"m{i}", weights=ModelWeights.from_s3(bucket, prefix=f"m{i}/"))
        for i in (1, 2)
    ]
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::APS::RuleGroupsNamespace", 1)
    assert all(server.role is not None for server in servers)
    template.has_resource_properties(
        "AWS::EKS::PodIdentityAssociation", {"Namespace": "fm-serving", "ServiceAccount": "m2"}
    )


def test_platform_add_model_server_is_refused_on_pcs():
    _, platform = _platform(PcsOptions(ami=PcsAmi.from_image_id("ami-0123456789abcdef0")))
    with pytest.raises(FmValidationError) as raised:
        platform.add_model_server("Llama", name="llama", weights=ModelWeights.from_hugging_face("org/model"))
    assert (raised.value.parameter, raised.value.value) == ("backend", "pcs")


@pytest.mark.parametrize(
    ("options", "parameter"),
    [
        ({}, "weights"),
        ({"weights": ModelWeights.from_hugging_face("org/model"), "fsx_path": "x"}, "weights"),
    ],
)
def test_platform_weights_are_exactly_one_source(eks_platform, options, parameter):
    _, platform, _, _ = eks_platform
    with pytest.raises(FmValidationError) as raised:
        platform.add_model_server(f"Bad{len(options)}", name="bad", **options)
    assert raised.value.parameter == parameter


def test_platform_fsx_path_without_storage_is_refused():
    _, platform = _platform(EksOptions(), storage=False)
    with pytest.raises(FmValidationError) as raised:
        platform.add_model_server("Llama", name="llama", fsx_path="checkpoints/x")
    assert raised.value.parameter == "fsx_path"
