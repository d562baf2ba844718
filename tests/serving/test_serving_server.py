"""The vLLM model server (issue 23 section 1): single-node Deployments, multi-node LeaderWorkerSets (validated against
the CRD of the pinned LWS, tests/data/lws_crds), Services, the LWS chart pin and the ModelServer construct."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs import CapacityBlock, FmTypeError, FmValidationError
from fmconstructs.eks import DEFAULT_KUBERNETES_VERSION, GpuEksCluster
from fmconstructs.errors import WarningId
from fmconstructs.serving import vllm
from fmconstructs.serving.lws import LWS_API_VERSION, lws_chart_pin, lws_values
from fmconstructs.serving.model_server import ModelServer
from fmconstructs.serving.sizing import ModelDtype
from fmconstructs.serving.weights import ModelWeights, claim_mount

from tests.conftest import new_scene

K8S = DEFAULT_KUBERNETES_VERSION.version
LWS_CRD = Path(__file__).parents[1] / "data" / "lws_crds" / "leaderworkerset.x-k8s.io_leaderworkersets.v1.json"
WEIGHTS = claim_mount("llama-weights")


def _strict(schema: Any) -> Any:
    """The CRD schema with unknown fields refused (the API server would prune them silently)."""
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


@pytest.fixture(scope="module")
def lws_validator() -> jsonschema.Draft7Validator:
    vendored = json.loads(LWS_CRD.read_text())
    assert f"{vendored['group']}/{vendored['version']}" == LWS_API_VERSION
    assert vendored["kind"] == "LeaderWorkerSet"
    return jsonschema.Draft7Validator(_strict(vendored["openAPIV3Schema"]))


def spec(instance_type: str = "p5en.48xlarge", nodes: int = 1, efa: int | None = None, **kw: Any) -> vllm.ServerSpec:
    from fmconstructs.catalog import get_instance_spec
    from fmconstructs.networking.interfaces import plan_network_interfaces

    tp = kw.pop("tensor_parallel", None)
    pp = kw.pop("pipeline_parallel", None)
    if efa is None:
        efa = plan_network_interfaces(get_instance_spec(instance_type)).efa_interface_count
    parallelism = vllm.plan_parallelism(
        instance_type=instance_type, nodes=nodes, tensor_parallel=tp, pipeline_parallel=pp
    )
    return vllm.ServerSpec(
        name="llama",
        namespace="fm-serving",
        instance_type=instance_type,
        parallelism=parallelism,
        weights=kw.pop("weights", WEIGHTS),
        efa_interfaces=efa,
        service_account="llama",
        **kw,
    )


def container(pod_template: dict[str, Any]) -> dict[str, Any]:
    (only,) = pod_template["spec"]["containers"]
    return only


# --- single node: a Deployment --------------------------------------------------------------------------------------
def test_single_node_deployment_uses_every_gpu_and_efa_of_p5en_with_tensor_parallel_8():
    deployment = vllm.render_deployment(spec(replicas=2, max_model_len=8192))
    assert kubernetes_validate.validate(deployment, K8S, strict=True) == K8S
    assert deployment["spec"]["replicas"] == 2
    c = container(deployment["spec"]["template"])
    assert c["image"] == "docker.io/vllm/vllm-openai:v0.30.0"
    assert c["command"] == ["vllm", "serve"]
    assert c["args"][:1] == ["/models"]
    assert c["args"][c["args"].index("--tensor-parallel-size") + 1] == "8"
    assert "--pipeline-parallel-size" not in c["args"]
    assert c["args"][c["args"].index("--max-model-len") + 1] == "8192"
    # p5en.48xlarge: 8 GPUs and 16 EFA interfaces in the catalog.
    assert c["resources"]["limits"] == {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 16}
    assert c["resources"]["requests"] == c["resources"]["limits"]


def test_every_pod_carries_the_shared_labels_and_serves_http_8000_with_health_probes():
    deployment = vllm.render_deployment(spec())
    labels = {
        "app.kubernetes.io/name": "vllm",
        "app.kubernetes.io/instance": "llama",
        "fmconstructs.io/model-server": "llama",
    }
    assert deployment["spec"]["template"]["metadata"]["labels"] == labels
    assert deployment["spec"]["selector"]["matchLabels"] == labels
    c = container(deployment["spec"]["template"])
    assert c["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert c[probe]["httpGet"] == {"path": "/health", "port": "http"}
    assert c["args"][c["args"].index("--port") + 1] == "8000"


def test_pods_have_shared_memory_gpu_toleration_and_the_instance_type_selector():
    pod = vllm.render_deployment(spec(shm_size_gib=32))["spec"]["template"]["spec"]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}} in pod["volumes"]
    assert {"name": "dshm", "mountPath": "/dev/shm"} in container({"spec": pod})["volumeMounts"]
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["nodeSelector"] == {"node.kubernetes.io/instance-type": "p5en.48xlarge"}
    assert pod["serviceAccountName"] == "llama"


def test_a_type_without_efa_gets_no_efa_resource():
    # The catalog holds only EFA types (P5/P6); a type without EFA is rendered with efa_interfaces=0, what
    # plan_network_interfaces returns for such a type.
    c = container(vllm.render_deployment(spec(efa=0))["spec"]["template"])
    assert c["resources"]["limits"] == {"nvidia.com/gpu": 8}


def test_a_pod_on_part_of_a_node_asks_for_its_gpus_and_no_efa():
    c = container(vllm.render_deployment(spec(tensor_parallel=4))["spec"]["template"])
    assert c["resources"]["limits"] == {"nvidia.com/gpu": 4}
    assert c["args"][c["args"].index("--tensor-parallel-size") + 1] == "4"


def test_extra_args_are_kept_and_kubelet_variable_syntax_is_escaped():
    c = container(
        vllm.render_deployment(spec(extra_args=("--gpu-memory-utilization=0.9", "$(HOME)")))["spec"]["template"]
    )
    assert c["args"][-2:] == ["--gpu-memory-utilization=0.9", "$$(HOME)"]


# --- multi-node: a LeaderWorkerSet ----------------------------------------------------------------------------------
def test_multi_node_leader_worker_set_is_valid_against_the_pinned_crd(lws_validator):
    lws = vllm.render_leader_worker_set(spec(nodes=2, replicas=3))
    lws_validator.validate(lws)
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1" and lws["kind"] == "LeaderWorkerSet"
    assert lws["spec"]["replicas"] == 3
    template = lws["spec"]["leaderWorkerTemplate"]
    assert template["size"] == 2
    assert template["restartPolicy"] == "RecreateGroupOnPodRestart"


def test_leader_runs_ray_head_then_vllm_with_tp_per_node_and_pp_across_nodes():
    template = vllm.render_leader_worker_set(spec(nodes=2))["spec"]["leaderWorkerTemplate"]
    leader = container(template["leaderTemplate"])
    assert leader["command"][:2] == ["/bin/bash", "-c"]
    script = leader["command"][2]
    assert script.startswith(
        "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader --ray_cluster_size=$(LWS_GROUP_SIZE); "
    )
    assert "exec vllm serve /models " in script
    assert "--tensor-parallel-size 8 --pipeline-parallel-size 2 --distributed-executor-backend ray" in script
    assert leader["ports"][0]["name"] == "http"
    worker = container(template["workerTemplate"])
    assert worker["command"][2] == (
        "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh worker --ray_address=$(LWS_LEADER_ADDRESS)"
    )
    assert "ports" not in worker and "readinessProbe" not in worker


def test_every_multi_node_pod_takes_a_whole_node_with_its_efa_interfaces():
    template = vllm.render_leader_worker_set(spec(nodes=2))["spec"]["leaderWorkerTemplate"]
    for role in ("leaderTemplate", "workerTemplate"):
        c = container(template[role])
        assert c["resources"]["limits"] == {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 16}
        assert template[role]["metadata"]["labels"]["fmconstructs.io/model-server"] == "llama"
        assert {"name": "weights", "mountPath": "/models", "readOnly": True} in c["volumeMounts"]


def test_p6_b200_multi_node_uses_its_8_efa_interfaces(lws_validator):
    lws = vllm.render_leader_worker_set(spec("p6-b200.48xlarge", nodes=4))
    lws_validator.validate(lws)
    leader = container(lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"])
    assert leader["resources"]["limits"] == {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 8}


# --- the Service ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("multi_node", [False, True])
def test_service_is_a_clusterip_named_after_the_server_on_http_8000(multi_node):
    service = vllm.render_service(name="llama", namespace="fm-serving", multi_node=multi_node)
    assert kubernetes_validate.validate(service, K8S, strict=True) == K8S
    assert service["metadata"]["name"] == "llama" and service["metadata"]["namespace"] == "fm-serving"
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["ports"] == [{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}]
    selector = service["spec"]["selector"]
    assert selector["fmconstructs.io/model-server"] == "llama"
    # A LeaderWorkerSet's leaders (worker index 0) serve; its workers run Ray only.
    assert selector.get("leaderworkerset.sigs.k8s.io/worker-index") == ("0" if multi_node else None)


# --- parallelism ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, (1, 8, 8, 1)),
        ({"tensor_parallel": 2}, (1, 2, 2, 1)),
        ({"tensor_parallel": 4, "pipeline_parallel": 2}, (1, 8, 4, 2)),
        ({"nodes": 2}, (2, 8, 8, 2)),
        ({"nodes": 2, "tensor_parallel": 16}, (2, 8, 16, 1)),
        ({"nodes": 4, "tensor_parallel": 8, "pipeline_parallel": 4}, (4, 8, 8, 4)),
    ],
)
def test_parallelism_defaults_to_tp_in_a_node_and_pp_across_nodes(kwargs, expected):
    p = vllm.plan_parallelism(instance_type="p5en.48xlarge", **kwargs)
    assert (p.nodes, p.gpus_per_pod, p.tensor_parallel, p.pipeline_parallel) == expected


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"nodes": 0}, "nodes"),
        ({"nodes": -1}, "nodes"),
        ({"tensor_parallel": 3}, "tensor_parallel"),
        ({"tensor_parallel": 0}, "tensor_parallel"),
        ({"tensor_parallel": 16}, "tensor_parallel"),
        ({"tensor_parallel": 4, "pipeline_parallel": 3}, "pipeline_parallel"),
        ({"nodes": 2, "tensor_parallel": 3}, "tensor_parallel"),
        ({"nodes": 2, "tensor_parallel": 8, "pipeline_parallel": 3}, "pipeline_parallel"),
        ({"instance_type": "g9.fake"}, "instance_type"),
    ],
)
def test_bad_parallelism_is_refused_naming_the_parameter(kwargs, parameter):
    args = {"instance_type": "p5en.48xlarge", **kwargs}
    with pytest.raises(FmValidationError) as raised:
        vllm.plan_parallelism(**args)
    assert raised.value.parameter == parameter


def test_a_deployment_is_one_node_and_a_leader_worker_set_several():
    with pytest.raises(FmValidationError, match=r"^nodes"):
        vllm.render_deployment(spec(nodes=2))
    with pytest.raises(FmValidationError, match=r"^nodes"):
        vllm.render_leader_worker_set(spec())


@pytest.mark.parametrize("arg", ["--tensor-parallel-size=2", "--port", "--host=::"])
def test_extra_args_may_not_override_what_the_construct_sets(arg):
    with pytest.raises(FmValidationError, match=r"^extra_args\[0\]"):
        vllm.check_extra_args("extra_args", [arg])


def test_extra_args_must_be_a_list():
    with pytest.raises(FmTypeError, match=r"^extra_args"):
        vllm.check_extra_args("extra_args", "--enforce-eager")  # type: ignore[arg-type]


# --- the LWS controller pin -----------------------------------------------------------------------------------------
def test_lws_chart_is_pinned_to_the_release_oci_chart():
    pin = lws_chart_pin()
    assert (pin.repository, pin.version, pin.namespace, pin.release) == (
        "oci://registry.k8s.io/lws/charts/lws",
        "0.10.0",
        "lws-system",
        "lws",
    )


def test_a_mirrored_lws_image_goes_to_the_chart_manager_image_key():
    from fmconstructs.eks.addons import ChartSource

    source = ChartSource.oci("oci://111122223333.dkr.ecr.us-east-1.amazonaws.com/charts/lws").with_image(
        "111122223333.dkr.ecr.us-east-1.amazonaws.com/lws/lws", tag="v0.10.0"
    )
    assert lws_values(source) == {
        "image": {
            "manager": {
                "repository": "111122223333.dkr.ecr.us-east-1.amazonaws.com/lws/lws",
                "pullPolicy": "IfNotPresent",
                "tag": "v0.10.0",
            }
        }
    }
    assert lws_values() == {}


# --- the construct ---------------------------------------------------------------------------------------------------
def _cluster() -> tuple[Any, GpuEksCluster]:
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    return scene, cluster


def _objects(template: Template, kind: str) -> list[dict[str, Any]]:
    found = []
    for resource in template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").values():
        body = resource["Properties"]["Manifest"]
        text = body if isinstance(body, str) else json.dumps(body)
        if f'"kind":"{kind}"' not in text.replace(" ", ""):
            continue
        if isinstance(body, str):
            found += [m for m in json.loads(body) if m["kind"] == kind]
        else:
            found.append(body)
    return found


@pytest.fixture(scope="module")
def served():
    """p5en on a Capacity Block: a 2-node server (LeaderWorkerSet) and a single-node one, weights from S3."""
    scene, cluster = _cluster()
    group = cluster.add_gpu_node_group(
        "P5en",
        instance_type="p5en.48xlarge",
        max_nodes=4,
        subnets=[scene.subnet_a],
        capacity=CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=4),
    )
    bucket = s3.Bucket.from_bucket_name(scene.stack, "Models", "my-models")
    big = ModelServer(
        scene.stack,
        "Big",
        cluster=cluster,
        name="llama-405b",
        weights=ModelWeights.from_s3(bucket, prefix="llama-3.1-405b"),
        instance_type="p5en.48xlarge",
        nodes=2,
        node_group=group,
        parameters=405e9,
        dtype=ModelDtype.BF16,
    )
    small = ModelServer(
        scene.stack,
        "Small",
        cluster=cluster,
        name="llama-8b",
        weights=ModelWeights.from_s3(bucket, prefix="llama-3.1-8b/"),
        instance_type="p5en.48xlarge",
        tensor_parallel=2,
        replicas=2,
    )
    return scene, cluster, big, small, Template.from_stack(scene.stack)


def test_construct_renders_the_lws_for_several_nodes_and_a_deployment_for_one(served, lws_validator):
    *_, template = served
    (lws,) = _objects(template, "LeaderWorkerSet")
    lws_validator.validate(lws)
    assert (lws["metadata"]["name"], lws["metadata"]["namespace"]) == ("llama-405b", "fm-serving")
    # aws-cdk-lib adds its own prune label to every manifest.
    labels = {k: v for k, v in lws["metadata"]["labels"].items() if not k.startswith("aws.cdk.eks/prune-")}
    assert labels == vllm.server_labels("llama-405b")
    (deployment,) = _objects(template, "Deployment")
    assert kubernetes_validate.validate(deployment, K8S, strict=True) == K8S
    assert deployment["spec"]["replicas"] == 2


def test_node_group_labels_pin_the_pods_to_that_group(served):
    *_, template = served
    (lws,) = _objects(template, "LeaderWorkerSet")
    selector = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["nodeSelector"]
    assert selector == {
        "node.kubernetes.io/instance-type": "p5en.48xlarge",
        "fmconstructs.io/instance-type": "p5en.48xlarge",
        "fmconstructs.io/capacity": "capacity-block",
    }


def test_construct_services_namespace_and_hooks(served):
    _, _, big, small, template = served
    services = {s["metadata"]["name"]: s for s in _objects(template, "Service")}
    assert set(services) == {"llama-405b", "llama-8b"}
    for service in services.values():
        assert kubernetes_validate.validate(service, K8S, strict=True) == K8S
    assert (big.service_name, big.namespace) == ("llama-405b", "fm-serving")
    assert big.selector_labels["leaderworkerset.sigs.k8s.io/worker-index"] == "0"
    assert small.selector_labels == vllm.server_labels("llama-8b")
    # One namespace manifest for both servers.
    assert len(_objects(template, "Namespace")) == 1
    assert (big.parameters, big.dtype, small.parameters) == (405e9, "bf16", None)


def test_lws_controller_chart_is_installed_once_and_waits_for_its_webhooks(served):
    *_, template = served
    charts = template.find_resources("Custom::AWSCDK-EKS-HelmChart", {"Properties": {"Chart": "lws"}})
    assert len(charts) == 1
    props = next(iter(charts.values()))["Properties"]
    assert (props["Repository"], props["Version"], props["Namespace"], props["Wait"]) == (
        "oci://registry.k8s.io/lws/charts/lws",
        "0.10.0",
        "lws-system",
        True,
    )


def test_a_single_node_server_installs_no_lws_controller():
    scene, cluster = _cluster()
    ModelServer(
        scene.stack,
        "Only",
        cluster=cluster,
        name="small",
        weights=ModelWeights.from_hugging_face("Qwen/Qwen3-0.6B"),
        instance_type="p5en.48xlarge",
    )
    template = scene.template()
    assert not template.find_resources("Custom::AWSCDK-EKS-HelmChart", {"Properties": {"Chart": "lws"}})
    # No AWS access needed: no role.
    template.resource_count_is("AWS::EKS::PodIdentityAssociation", 0)
    Annotations.from_stack(scene.stack).has_warning(
        "*", Match.string_like_regexp(WarningId.SERVING_NO_NODE_GROUP.value)
    )


def _server(**overrides: Any) -> ModelServer:
    scene, cluster = _cluster()
    props: dict[str, Any] = {
        "cluster": cluster,
        "name": "llama",
        "weights": ModelWeights.from_hugging_face("meta-llama/Llama-3.1-8B"),
        "instance_type": "p5en.48xlarge",
    }
    props.update(overrides)
    return ModelServer(scene.stack, "Server", **props)


@pytest.mark.parametrize(
    ("overrides", "parameter"),
    [
        ({"nodes": 0}, "nodes"),
        ({"replicas": -1}, "replicas"),
        ({"tensor_parallel": 3}, "tensor_parallel"),
        ({"nodes": 2, "pipeline_parallel": 3}, "pipeline_parallel"),
        ({"instance_type": "x9.unknown"}, "instance_type"),
        ({"name": "Llama_70B"}, "name"),
        ({"namespace": "Serving"}, "namespace"),
        ({"max_model_len": 0}, "max_model_len"),
        ({"shm_size_gib": 0}, "shm_size_gib"),
        ({"parameters": 0}, "parameters"),
        ({"dtype": ""}, "dtype"),
        ({"extra_args": ["--port=9000"]}, "extra_args[0]"),
        ({"node_selector": {"bad key!": "x"}}, "node_selector['bad key!']"),
    ],
)
def test_bad_inputs_are_refused_naming_the_parameter(overrides, parameter):
    with pytest.raises(FmValidationError) as raised:
        _server(**overrides)
    assert raised.value.parameter == parameter


@pytest.mark.parametrize(
    ("overrides", "parameter"),
    [
        ({"cluster": "my-cluster"}, "cluster"),
        ({"weights": "s3://bucket/prefix"}, "weights"),
        ({"extra_args": "--enforce-eager"}, "extra_args"),
        ({"lws_source": "oci://x/lws"}, "lws_source"),
    ],
)
def test_wrong_types_are_refused_naming_the_parameter(overrides, parameter):
    with pytest.raises(FmTypeError) as raised:
        _server(**overrides)
    assert raised.value.parameter == parameter


def test_a_node_group_of_another_type_is_refused():
    scene, cluster = _cluster()
    group = cluster.add_gpu_node_group("B200", instance_type="p6-b200.48xlarge", max_nodes=1, subnets=[scene.subnet_a])
    with pytest.raises(FmValidationError, match=r"^node_group"):
        ModelServer(
            scene.stack,
            "Server",
            cluster=cluster,
            name="llama",
            weights=ModelWeights.from_hugging_face("meta-llama/Llama-3.1-8B"),
            instance_type="p5en.48xlarge",
            node_group=group,
        )


# --- light imports ---------------------------------------------------------------------------------------------------
def test_the_renderers_import_no_aws_cdk():
    """The vLLM/LWS renderers run without the jsii runtime (the ``fmc`` command may render them)."""
    import subprocess
    import sys

    code = (
        "import sys, fmconstructs.serving.vllm, fmconstructs.serving.lws; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'aws_cdk', 'constructs', 'jsii'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=Path(__file__).parents[2]
    )
    assert out.stdout.strip() == "[]"


def test_local_eks_names_match_fmconstructs_eks():
    from fmconstructs.eks import addons

    assert (vllm.GPU_TAINT_KEY, vllm.INSTANCE_TYPE_LABEL) == (addons.GPU_TAINT_KEY, addons.INSTANCE_TYPE_LABEL)


@pytest.mark.parametrize("name", ["Llama", "llama_8b", "-llama", "a" * 64, ""])
def test_server_names_are_dns_labels(name):
    with pytest.raises(FmValidationError, match=r"^name must be a Kubernetes DNS-1123 label"):
        vllm.render_service(name=name, namespace="fm-serving")


def test_replicas_may_be_a_deploy_time_value_but_nodes_may_not():
    import aws_cdk as cdk

    scene, cluster = _cluster()
    replicas = cdk.CfnParameter(scene.stack, "Replicas", type="Number").value_as_number
    ModelServer(
        scene.stack,
        "Server",
        cluster=cluster,
        name="llama",
        weights=ModelWeights.from_hugging_face("meta-llama/Llama-3.1-8B"),
        instance_type="p5en.48xlarge",
        replicas=replicas,
    )
    text = json.dumps(scene.template().to_json())
    assert '\\"replicas\\":' in text and '{"Ref": "Replicas"}' in text
    nodes = cdk.CfnParameter(scene.stack, "Nodes", type="Number").value_as_number
    with pytest.raises(FmValidationError, match=r"^nodes must be numbers known at synthesis"):
        ModelServer(
            scene.stack,
            "Other",
            cluster=cluster,
            name="other",
            weights=ModelWeights.from_hugging_face("meta-llama/Llama-3.1-8B"),
            instance_type="p5en.48xlarge",
            nodes=nodes,
        )
