"""FmServeP5en (examples/serve_stack.py): two vLLM servers on one GPU EKS cluster, weights from S3, internal NLBs, KEDA
on the AMP workspace, a Karpenter NodePool, the managed scraper with the serving job."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
import yaml
from aws_cdk.assertions import Match, Template

from examples.observability_stack import ObservabilityStack
from examples.serve_stack import DEFAULT_CAPACITY_BLOCK_ID, SERVING_POOL, ServeStack

from tests.conftest import new_app


@pytest.fixture(scope="module")
def serve() -> tuple[ServeStack, Template]:
    app = new_app()
    observability = ObservabilityStack(app, "FmObservability")
    stack = ServeStack(app, "FmServeP5en", workspace=observability.workspace)
    return stack, Template.from_stack(stack)


@pytest.fixture(scope="module")
def template(serve: tuple[ServeStack, Template]) -> Template:
    return serve[1]


def manifests(template: Template) -> list[dict[str, Any]]:
    """Every Kubernetes object the stack applies; deploy-time values (bucket names, ARNs) read as ``TOKEN``."""
    found: list[dict[str, Any]] = []
    for resource in template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").values():
        body = resource["Properties"]["Manifest"]
        if isinstance(body, dict):
            separator, parts = body["Fn::Join"]
            body = separator.join(p if isinstance(p, str) else "TOKEN" for p in parts)
        found += json.loads(body)
    return found


def objects(template: Template, kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [m for m in manifests(template) if m["kind"] == kind and (name is None or m["metadata"].get("name") == name)]


def chart(template: Template, name: str) -> dict[str, Any]:
    (found,) = template.find_resources("Custom::AWSCDK-EKS-HelmChart", {"Properties": {"Chart": name}}).values()
    props: dict[str, Any] = found["Properties"]
    return props


# --- the multi-node model on the Capacity Block ----------------------------------------------------------------------
def test_the_405b_model_is_a_leader_worker_set_of_two_p5en_nodes_on_the_capacity_block(template):
    (lws,) = objects(template, "LeaderWorkerSet", "llama-405b")
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
    assert leader["nodeSelector"] == {
        "node.kubernetes.io/instance-type": "p5en.48xlarge",
        "fmconstructs.io/instance-type": "p5en.48xlarge",
        "fmconstructs.io/capacity": "capacity-block",
    }
    (container,) = leader["containers"]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 16}
    assert "--pipeline-parallel-size 2" in container["command"][-1]
    template.has_resource_properties(
        "AWS::EC2::LaunchTemplate",
        {
            "LaunchTemplateData": Match.object_like(
                {
                    "CapacityReservationSpecification": {
                        "CapacityReservationTarget": {"CapacityReservationId": DEFAULT_CAPACITY_BLOCK_ID}
                    }
                }
            )
        },
    )


def test_the_405b_model_fits_its_layout(serve):
    stack, _ = serve
    layout = stack.large.layout
    assert layout is not None and layout.fits
    assert (layout.nodes, layout.tensor_parallel, layout.pipeline_parallel) == (2, 8, 2)


def test_the_405b_model_has_an_internal_nlb_to_its_leader(template):
    (service,) = objects(template, "Service", "llama-405b-nlb")
    annotations = service["metadata"]["annotations"]
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-scheme"] == "internal"
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-type"] == "external"
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"] == "ip"
    assert service["spec"]["selector"] == {
        "fmconstructs.io/model-server": "llama-405b",
        "leaderworkerset.sigs.k8s.io/worker-index": "0",
    }
    assert service["metadata"]["namespace"] == "fm-serving"


def test_keda_scales_the_leader_worker_set_on_the_amp_workspace(template):
    (scaled,) = objects(template, "ScaledObject", "llama-405b")
    assert scaled["spec"]["scaleTargetRef"] == {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "name": "llama-405b",
    }
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "prometheus"
    assert trigger["metadata"]["query"] == (
        'sum(vllm:num_requests_waiting{namespace="fm-serving",model_server="llama-405b",cluster="FmServeP5en"})'
    )
    assert trigger["metadata"]["serverAddress"].startswith("https://aps-workspaces.")
    assert objects(template, "TriggerAuthentication", "llama-405b-amp")
    # The operator may query the workspace, nothing else.
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": [Match.object_like({"Action": "aps:QueryMetrics", "Resource": Match.any_value()})]
            }
        },
    )


# --- the single-node model on Karpenter ------------------------------------------------------------------------------
def test_the_8b_model_is_a_deployment_on_the_karpenter_node_pool(template):
    (deployment,) = objects(template, "Deployment", "llama-8b")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {
        "node.kubernetes.io/instance-type": "p5.48xlarge",
        "karpenter.sh/nodepool": SERVING_POOL,
    }
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    (container,) = pod["containers"]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": 1}
    (pool,) = objects(template, "NodePool", SERVING_POOL)
    requirements = pool["spec"]["template"]["spec"]["requirements"]
    assert {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]} in requirements
    assert objects(template, "EC2NodeClass", SERVING_POOL)


def test_the_8b_model_has_an_internal_nlb_to_every_pod(template):
    (service,) = objects(template, "Service", "llama-8b-nlb")
    assert service["metadata"]["annotations"]["service.beta.kubernetes.io/aws-load-balancer-scheme"] == "internal"
    assert service["spec"]["selector"] == {"fmconstructs.io/model-server": "llama-8b"}


def test_no_endpoint_is_internet_facing(template):
    for service in objects(template, "Service"):
        scheme = service["metadata"].get("annotations", {}).get("service.beta.kubernetes.io/aws-load-balancer-scheme")
        assert scheme in (None, "internal")


def test_each_server_has_a_cluster_ip_service(template):
    for name in ("llama-405b", "llama-8b"):
        (service,) = objects(template, "Service", name)
        assert service["spec"].get("type", "ClusterIP") == "ClusterIP"


# --- weights from S3, least privilege ------------------------------------------------------------------------------
@pytest.mark.parametrize("prefix", ["llama-3.1-405b/", "llama-3.1-8b/"])
def test_each_server_reads_only_its_own_prefix(template, prefix):
    policies = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in template.find_resources("AWS::IAM::Policy").values()
        if prefix in json.dumps(p)
    ]
    (statements,) = policies
    by_sid = {s["Sid"]: s for s in statements}
    assert by_sid["ListModelPrefix"]["Action"] == "s3:ListBucket"
    assert by_sid["ListModelPrefix"]["Condition"] == {"StringLike": {"s3:prefix": [f"{prefix}*"]}}
    assert by_sid["ReadModelObjects"]["Action"] == "s3:GetObject"
    (bucket_arn, suffix) = by_sid["ReadModelObjects"]["Resource"]["Fn::Join"][1]
    assert "Fn::GetAtt" in bucket_arn and suffix == f"/{prefix}*"
    # Nothing else in that policy reads S3.
    assert {s["Sid"] for s in statements if "s3:" in json.dumps(s["Action"])} == {"ListModelPrefix", "ReadModelObjects"}


def test_weights_are_mounted_read_only_from_s3(template):
    volumes = objects(template, "PersistentVolume")
    assert {v["metadata"]["name"] for v in volumes} == {"fm-serving-llama-405b-weights", "fm-serving-llama-8b-weights"}
    for volume in volumes:
        assert volume["spec"]["accessModes"] == ["ReadOnlyMany"]
        assert volume["spec"]["csi"]["driver"] == "s3.csi.aws.com"
    template.has_resource_properties("AWS::EKS::Addon", {"AddonName": "aws-mountpoint-s3-csi-driver"})


def test_the_model_bucket_is_encrypted_tls_only_and_retained(template):
    buckets = template.find_resources("AWS::S3::Bucket", {"DeletionPolicy": "Retain"})
    assert len(buckets) == 2  # the models and their access logs
    for bucket in buckets.values():
        assert bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})]
                )
            }
        },
    )


# --- pinned charts and observability ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("lws", "0.10.0"),
        ("aws-load-balancer-controller", "3.5.0"),
        ("keda", "2.20.2"),
        ("karpenter", "1.14.1"),
    ],
)
def test_charts_are_pinned(template, name, version):
    assert chart(template, name)["Version"] == version


def test_the_scraper_collects_the_serving_job_and_adds_the_serving_rules(template):
    (scraper,) = template.find_resources("AWS::APS::Scraper").values()
    blob = scraper["Properties"]["ScrapeConfiguration"]["ConfigurationBlob"]
    config = yaml.safe_load(base64.b64decode(blob))
    assert "fm-serving" in {job["job_name"] for job in config["scrape_configs"]}
    template.has_resource_properties("AWS::APS::RuleGroupsNamespace", {"Name": "fmconstructs-serving-FmServeP5en"})


def test_the_example_is_in_the_app(example_stacks):
    stack = example_stacks["FmServeP5en"]
    assert isinstance(stack, ServeStack)
    Template.from_stack(stack)  # cross-stack references (the workspace) become dependencies at synthesis
    assert example_stacks["FmObservability"] in stack.dependencies
