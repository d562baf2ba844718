"""Autoscaling of a model server (issue 23): KEDA 2.20.2 (pinned chart) with the prometheus scaler reading vLLM's queue
from the AMP workspace with SigV4 through EKS Pod Identity; aps:QueryMetrics on that workspace only; ScaledObjects for a
Deployment or a LeaderWorkerSet validated against the CRD schemas of the pinned version (tests/data/keda_crds)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import FmValidationError, WarningId
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.serving.autoscaling import (
    KEDA,
    KedaAutoscaling,
    ModelServerAutoscaler,
    ScaleTargetKind,
    ServingMetric,
    scaled_object_manifest,
    serving_query,
    trigger_authentication_manifest,
)

from tests.conftest import new_scene

CRDS = Path(__file__).parents[1] / "data" / "keda_crds"
SCHEMA_FILES = {
    "ScaledObject": "keda.sh_scaledobjects.v1alpha1.json",
    "TriggerAuthentication": "keda.sh_triggerauthentications.v1alpha1.json",
}
WS_ARN = "arn:aws:aps:us-east-1:123456789012:workspace/ws-0123abcd-4567-89ef-0123-456789abcdef"
WS_ID = "ws-0123abcd-4567-89ef-0123-456789abcdef"
ADDRESS = f"https://aps-workspaces.us-east-1.amazonaws.com/workspaces/{WS_ID}"


def _strict(schema: Any) -> Any:
    """Unknown fields refused (the API server would prune them silently), as tests/eks/test_eks_kueue.py does."""
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
    vendored = json.loads((CRDS / SCHEMA_FILES[manifest["kind"]]).read_text())
    assert manifest["apiVersion"] == f"{vendored['group']}/{vendored['version']}"
    jsonschema.Draft7Validator(_strict(vendored["openAPIV3Schema"])).validate(manifest)
    assert set(manifest["metadata"]) <= {"name", "namespace", "labels", "annotations"}


def _render(**overrides: Any) -> dict[str, Any]:
    props: dict[str, Any] = {
        "server_name": "llama",
        "namespace": "fm-serving",
        "target_kind": ScaleTargetKind.DEPLOYMENT,
        "server_address": ADDRESS,
        "aws_region": "us-east-1",
        "authentication": "llama-amp",
    }
    return scaled_object_manifest(**{**props, **overrides})


@pytest.fixture(scope="module")
def scene() -> Any:
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    small = ModelServerAutoscaler(
        scene.stack, "Scale", cluster=cluster, server_name="llama", workspace=WS_ARN, max_replicas=4
    )
    big = ModelServerAutoscaler(
        scene.stack,
        "ScaleLws",
        cluster=cluster,
        server_name="big",
        workspace=WS_ARN,
        target_kind=ScaleTargetKind.LEADER_WORKER_SET,
    )
    return scene, cluster, Template.from_stack(scene.stack), [*small.manifest_body, *big.manifest_body]


def _objects(template: Template) -> list[Any]:
    """The KEDA objects of the template's manifests (their server address holds the partition's URL suffix, a
    deploy-time value: the manifest is an Fn::Join, compared below through the constructs' bodies)."""
    manifests = template.find_resources("Custom::AWSCDK-EKS-KubernetesResource")
    return [m for m in manifests.values() if "keda.sh/v1alpha1" in json.dumps(m)]


def test_keda_chart_pinned_and_waits(scene: Any) -> None:
    template = scene[2]
    template.has_resource_properties(
        "Custom::AWSCDK-EKS-HelmChart",
        {
            "Chart": "keda",
            "Repository": "https://kedacore.github.io/charts",
            "Version": "2.20.2",
            "Namespace": "keda",
            "CreateNamespace": True,
            "Wait": True,
        },
    )
    assert KEDA.version == "2.20.2"


def test_one_keda_per_cluster(scene: Any) -> None:
    _, cluster, template, _ = scene
    assert KedaAutoscaling.of(cluster) is KedaAutoscaling.of(cluster)
    charts = [
        r
        for r in template.find_resources("Custom::AWSCDK-EKS-HelmChart").values()
        if r["Properties"]["Chart"] == "keda"
    ]
    assert len(charts) == 1


def test_operator_may_only_query_the_workspace(scene: Any) -> None:
    template = scene[2]
    (policy,) = [p for p in template.find_resources("AWS::IAM::Policy").values() if "aps:" in json.dumps(p)]
    # two servers on one workspace: one statement
    assert policy["Properties"]["PolicyDocument"]["Statement"] == [
        {"Action": "aps:QueryMetrics", "Effect": "Allow", "Resource": WS_ARN}
    ]
    template.has_resource_properties(
        "AWS::EKS::PodIdentityAssociation", {"Namespace": "keda", "ServiceAccount": "keda-operator"}
    )


def test_rendered_objects_validate_against_pinned_crds(scene: Any) -> None:
    template = scene[2]
    assert len(_objects(template)) == 2
    objects = scene[3]
    assert sorted(o["kind"] for o in objects) == [
        "ScaledObject",
        "ScaledObject",
        "TriggerAuthentication",
        "TriggerAuthentication",
    ]
    for manifest in objects:
        validate(manifest)


def test_scaled_object_reads_amp_with_sigv4_and_pod_identity(scene: Any) -> None:
    objects = scene[3]
    (auth,) = [o for o in objects if o["kind"] == "TriggerAuthentication" and o["metadata"]["name"] == "llama-amp"]
    assert auth["spec"] == {"podIdentity": {"provider": "aws"}}
    (scaled,) = [o for o in objects if o["kind"] == "ScaledObject" and o["metadata"]["name"] == "llama"]
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "prometheus"
    assert trigger["authenticationRef"] == {"name": "llama-amp"}
    assert trigger["metadata"]["awsRegion"] == "us-east-1"
    assert scene[0].stack.resolve(trigger["metadata"]["serverAddress"]) == {
        "Fn::Join": ["", ["https://aps-workspaces.us-east-1.", {"Ref": "AWS::URLSuffix"}, f"/workspaces/{WS_ID}"]]
    }
    assert trigger["metadata"]["query"] == 'sum(vllm:num_requests_waiting{namespace="fm-serving",model_server="llama"})'
    assert scaled["spec"]["scaleTargetRef"] == {"name": "llama"}
    assert (scaled["spec"]["minReplicaCount"], scaled["spec"]["maxReplicaCount"]) == (1, 4)


def test_leader_worker_set_target_uses_its_scale_subresource(scene: Any) -> None:
    (scaled,) = [o for o in scene[3] if o["kind"] == "ScaledObject" and o["metadata"]["name"] == "big"]
    assert scaled["spec"]["scaleTargetRef"] == {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "name": "big",
    }


def test_workspace_construct_in_same_stack_is_referenced() -> None:
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    workspace = PrometheusWorkspace(scene.stack, "Workspace")
    ModelServerAutoscaler(scene.stack, "Scale", cluster=cluster, server_name="llama", workspace=workspace)
    template = Template.from_stack(scene.stack)
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": [Match.object_like({"Action": "aps:QueryMetrics", "Resource": Match.any_value()})]
            }
        },
    )


def test_scale_to_zero_sets_min_zero_and_activation() -> None:
    manifest = _render(
        min_replicas=0, scale_to_zero=True, activation_threshold=0.5, wake_query="sum(rate(gw_requests[1m]))"
    )
    validate(manifest)
    assert manifest["spec"]["minReplicaCount"] == 0
    assert [t["metadata"]["activationThreshold"] for t in manifest["spec"]["triggers"]] == ["0.5", "0.5"]
    assert manifest["spec"]["triggers"][1]["metadata"]["query"] == "sum(rate(gw_requests[1m]))"


def test_scale_to_zero_without_wake_warns() -> None:
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    ModelServerAutoscaler(
        scene.stack, "Scale", cluster=cluster, server_name="llama", workspace=WS_ARN, min_replicas=0, scale_to_zero=True
    )
    Annotations.from_stack(scene.stack).has_warning(
        "/Test/Scale", Match.string_like_regexp(f".*{WarningId.SERVING_SCALE_TO_ZERO_WITHOUT_WAKE.qualified}")
    )


def test_running_metric_and_cluster_label_in_query() -> None:
    query = serving_query(
        server_name="llama", namespace="fm-serving", metric=ServingMetric.REQUESTS_RUNNING, cluster_label="gpu-1"
    )
    assert query == 'sum(vllm:num_requests_running{namespace="fm-serving",model_server="llama",cluster="gpu-1"})'


def test_trigger_authentication_validates() -> None:
    validate(trigger_authentication_manifest(name="llama-amp", namespace="fm-serving"))


@pytest.mark.parametrize(
    ("overrides", "parameter"),
    [
        ({"min_replicas": 3, "max_replicas": 2}, "min_replicas"),
        ({"min_replicas": 0}, "min_replicas"),
        ({"min_replicas": 1, "scale_to_zero": True}, "min_replicas"),
        ({"max_replicas": 0}, "max_replicas"),
        ({"threshold": 0}, "threshold"),
        ({"threshold": -1}, "threshold"),
        ({"activation_threshold": -0.5}, "activation_threshold"),
        ({"target_kind": "Deployment"}, "target_kind"),
        ({"metric": "vllm:num_requests_waiting"}, "metric"),
        ({"server_name": "Llama"}, "server_name"),
        ({"namespace": "fm_serving"}, "namespace"),
        ({"cluster_label": 'a"b'}, "cluster_label"),
        ({"polling_interval_seconds": 0}, "polling_interval_seconds"),
        ({"wake_query": ""}, "wake_query"),
        ({"aws_region": ""}, "aws_region"),
        ({"server_address": ""}, "server_address"),
        ({"authentication": "Bad_Name"}, "authentication"),
    ],
)
def test_bad_renderer_inputs_are_refused(overrides: dict[str, Any], parameter: str) -> None:
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be"):
        _render(**overrides)


@pytest.mark.parametrize(
    ("overrides", "parameter"),
    [
        ({"workspace": "ws-0123"}, "workspace"),
        ({"workspace": 42}, "workspace"),
        ({"min_replicas": 5, "max_replicas": 2}, "min_replicas"),
        ({"cluster": "my-cluster"}, "cluster"),
        ({"keda": "keda"}, "keda"),
    ],
)
def test_bad_construct_inputs_are_refused(overrides: dict[str, Any], parameter: str) -> None:
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    props: dict[str, Any] = {"cluster": cluster, "server_name": "llama", "workspace": WS_ARN}
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be"):
        ModelServerAutoscaler(scene.stack, "Scale", **{**props, **overrides})


def test_cdk_nag_and_cfn_lint_clean(tmp_path: Path) -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2
    from cdk_nag import AwsSolutionsChecks
    from cfnlint.api import lint_file

    from tests.conftest import ENV

    app = cdk.App(outdir=str(tmp_path), builtin_cloud_formation_validation=True)
    stack = cdk.Stack(app, "Serving", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
    )
    cluster = GpuEksCluster(stack, "Cluster", vpc=vpc)
    ModelServerAutoscaler(stack, "Scale", cluster=cluster, server_name="llama", workspace=WS_ARN)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []
    errors = [m for m in lint_file(tmp_path / "Serving.template.json") if m.rule.severity == "error"]
    assert errors == []


def test_keda_refuses_a_single_image_source() -> None:
    from fmconstructs.eks.addons import ChartSource

    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    with pytest.raises(FmValidationError, match=r"^source must be"):
        KedaAutoscaling(scene.stack, "Keda", cluster=cluster, source=ChartSource().with_image("example.com/keda/keda"))
