"""Exposure of a model server (issue 23): the AWS Load Balancer Controller (pinned chart, its reference IAM policy
verbatim on a Pod Identity role) and an internal NLB Service or ALB Ingress, TLS with an ACM certificate, public only
with an explicit opt-in and a warning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from aws_cdk import aws_certificatemanager as acm
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import FmValidationError, WarningId
from fmconstructs.serving.exposure import (
    IAM_POLICY_FILE,
    LOAD_BALANCER_CONTROLLER,
    AwsLoadBalancerController,
    LoadBalancerKind,
    LoadBalancerScheme,
    ModelServerEndpoint,
    alb_ingress_manifest,
    load_balancer_controller_policy,
    nlb_service_manifest,
)

from tests.conftest import new_scene

K8S = "1.33"
CERT_ARN = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-1111-2222-3333-444455556666"
SVC = "service.beta.kubernetes.io/aws-load-balancer-"


@pytest.fixture(scope="module")
def scene() -> Any:
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cert = acm.Certificate.from_certificate_arn(scene.stack, "Cert", CERT_ARN)
    ModelServerEndpoint(scene.stack, "Nlb", cluster=cluster, server_name="llama", certificate=cert)
    ModelServerEndpoint(scene.stack, "Alb", cluster=cluster, server_name="mistral", kind=LoadBalancerKind.ALB)
    return scene, cluster, Template.from_stack(scene.stack)


def _manifests(template: Template) -> list[dict[str, Any]]:
    found = []
    for resource in template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").values():
        body = resource["Properties"]["Manifest"]
        if isinstance(body, str):
            found += json.loads(body)
    return found


def _normalize(node: Any) -> Any:
    """aws-cdk-lib renders one-element lists as a scalar; compare documents modulo that."""
    if isinstance(node, dict):
        return {k: _normalize(v) for k, v in node.items()}
    if isinstance(node, list):
        items = [_normalize(v) for v in node]
        return items[0] if len(items) == 1 else items
    return node


def test_chart_pinned_in_kube_system_and_waits(scene: Any) -> None:
    _, _, template = scene
    template.has_resource_properties(
        "Custom::AWSCDK-EKS-HelmChart",
        {
            "Chart": "aws-load-balancer-controller",
            "Repository": "https://aws.github.io/eks-charts",
            "Version": "3.5.0",
            "Namespace": "kube-system",
            "Wait": True,
        },
    )
    assert (LOAD_BALANCER_CONTROLLER.version, LOAD_BALANCER_CONTROLLER.release) == (
        "3.5.0",
        "aws-load-balancer-controller",
    )


def test_chart_values_name_cluster_region_vpc_and_service_account(scene: Any) -> None:
    _, _, template = scene
    (chart,) = [
        r for r in template.find_resources("Custom::AWSCDK-EKS-HelmChart").values()
        if r["Properties"]["Chart"] == "aws-load-balancer-controller"
    ]  # fmt: skip
    values = json.dumps(chart["Properties"]["Values"])
    for key in (
        "clusterName",
        "region",
        "vpcId",
        "vpc-0123456789abcdef0",
        '\\"name\\":\\"aws-load-balancer-controller',
    ):
        assert key in values


def test_policy_is_the_vendored_reference_policy_verbatim(scene: Any) -> None:
    _, _, template = scene
    vendored = json.loads(
        (Path(__file__).parents[2] / "fmconstructs" / "serving" / "data" / IAM_POLICY_FILE).read_text()
    )
    assert load_balancer_controller_policy() == vendored
    (policy,) = [
        p for p in template.find_resources("AWS::IAM::Policy").values()
        if "elasticloadbalancing:CreateLoadBalancer" in json.dumps(p)
    ]  # fmt: skip
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert _normalize(statements) == _normalize(vendored["Statement"])


def test_vendored_policy_is_the_upstream_file_byte_for_byte() -> None:
    """The git blob id of kubernetes-sigs/aws-load-balancer-controller v3.5.0:docs/install/iam_policy.json."""
    import hashlib

    data = (Path(__file__).parents[2] / "fmconstructs" / "serving" / "data" / IAM_POLICY_FILE).read_bytes()
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    assert blob == "761d0e733c41089c91ea009dd29faf71918085e5"


def test_role_is_pod_identity_for_the_controller_service_account(scene: Any) -> None:
    _, _, template = scene
    template.has_resource_properties(
        "AWS::EKS::PodIdentityAssociation",
        {"Namespace": "kube-system", "ServiceAccount": "aws-load-balancer-controller"},
    )
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": {
                "Statement": [
                    Match.object_like(
                        {
                            "Principal": {"Service": "pods.eks.amazonaws.com"},
                            "Condition": {
                                "StringEquals": Match.object_like(
                                    {"aws:RequestTag/kubernetes-service-account": "aws-load-balancer-controller"}
                                )
                            },
                        }
                    )
                ]
            }
        },
    )


def test_one_controller_per_cluster(scene: Any) -> None:
    _, cluster, template = scene
    assert AwsLoadBalancerController.of(cluster) is AwsLoadBalancerController.of(cluster)
    assert len([r for r in template.find_resources("Custom::AWSCDK-EKS-HelmChart").values()
                if r["Properties"]["Chart"] == "aws-load-balancer-controller"]) == 1  # fmt: skip


def test_endpoints_are_internal_by_default(scene: Any) -> None:
    _, _, template = scene
    objects = _manifests(template)
    (service,) = [m for m in objects if m["kind"] == "Service"]
    (ingress,) = [m for m in objects if m["kind"] == "Ingress"]
    assert service["metadata"]["annotations"][f"{SVC}scheme"] == "internal"
    assert ingress["metadata"]["annotations"]["alb.ingress.kubernetes.io/scheme"] == "internal"
    assert Annotations.from_stack(scene[0].stack).find_warning("*", Match.string_like_regexp("internet-facing")) == []


def test_nlb_service_targets_pod_ips_with_tls_certificate(scene: Any) -> None:
    _, _, template = scene
    (service,) = [m for m in _manifests(template) if m["kind"] == "Service"]
    annotations = service["metadata"]["annotations"]
    assert annotations[f"{SVC}type"] == "external"
    assert annotations[f"{SVC}nlb-target-type"] == "ip"
    assert annotations[f"{SVC}ssl-cert"] == CERT_ARN
    assert annotations[f"{SVC}ssl-ports"] == "https"
    assert service["spec"]["type"] == "LoadBalancer"
    assert service["spec"]["selector"] == {"fmconstructs.io/model-server": "llama"}
    assert service["spec"]["ports"] == [{"name": "https", "port": 443, "targetPort": "http", "protocol": "TCP"}]


@pytest.mark.parametrize("with_cert", [False, True])
@pytest.mark.parametrize("render", [nlb_service_manifest, alb_ingress_manifest])
def test_manifests_validate_against_kubernetes_schema(render: Any, with_cert: bool) -> None:
    scene = new_scene()
    cert = acm.Certificate.from_certificate_arn(scene.stack, "Cert", CERT_ARN) if with_cert else None
    manifest = render(server_name="llama", namespace="fm-serving", certificate=cert)
    assert kubernetes_validate.validate(manifest, K8S, strict=True) == K8S


def test_alb_ingress_https_with_certificate() -> None:
    scene = new_scene()
    cert = acm.Certificate.from_certificate_arn(scene.stack, "Cert", CERT_ARN)
    ingress = alb_ingress_manifest(server_name="llama", certificate=cert)
    annotations = ingress["metadata"]["annotations"]
    assert annotations["alb.ingress.kubernetes.io/certificate-arn"] == CERT_ARN
    assert json.loads(annotations["alb.ingress.kubernetes.io/listen-ports"]) == [{"HTTPS": 443}]
    assert annotations["alb.ingress.kubernetes.io/target-type"] == "ip"
    assert ingress["spec"]["ingressClassName"] == "alb"
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]
    assert backend == {"service": {"name": "llama", "port": {"number": 8000}}}


def test_internet_facing_with_opt_in_warns() -> None:
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    endpoint = ModelServerEndpoint(
        scene.stack,
        "Public",
        cluster=cluster,
        server_name="llama",
        scheme=LoadBalancerScheme.INTERNET_FACING,
        allow_internet_facing=True,
    )
    assert endpoint.manifest_body["metadata"]["annotations"][f"{SVC}scheme"] == "internet-facing"
    Annotations.from_stack(scene.stack).has_warning(
        "/Test/Public",
        Match.string_like_regexp(f".*internet-facing.*{WarningId.SERVING_INTERNET_FACING_ENDPOINT.qualified}"),
    )


def _endpoint(**overrides: Any) -> None:
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    props: dict[str, Any] = {"cluster": cluster, "server_name": "llama"}
    ModelServerEndpoint(scene.stack, "Endpoint", **{**props, **overrides})


@pytest.mark.parametrize(
    ("overrides", "parameter"),
    [
        ({"scheme": LoadBalancerScheme.INTERNET_FACING}, "scheme"),
        ({"scheme": "internal"}, "scheme"),
        ({"kind": "nlb"}, "kind"),
        ({"server_name": "Llama_3"}, "server_name"),
        ({"server_name": "x" * 60}, "server_name"),
        ({"namespace": "fm.serving"}, "namespace"),
        ({"certificate": CERT_ARN}, "certificate"),
        ({"health_check_path": "health"}, "health_check_path"),
        ({"service_port": 0, "kind": LoadBalancerKind.ALB}, "service_port"),
        ({"allow_internet_facing": "yes"}, "allow_internet_facing"),
        ({"cluster": "my-cluster"}, "cluster"),
    ],
)
def test_bad_inputs_are_refused(overrides: dict[str, Any], parameter: str) -> None:
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be"):
        _endpoint(**overrides)


def test_cdk_nag_and_cfn_lint_clean(tmp_path: Path) -> None:
    """cdk-nag AwsSolutions reports nothing unacknowledged (the reference policy's wildcards are acknowledged with
    their reason) and cfn-lint finds no error."""
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
    cert = acm.Certificate.from_certificate_arn(stack, "Cert", CERT_ARN)
    ModelServerEndpoint(stack, "Endpoint", cluster=cluster, server_name="llama", certificate=cert)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []
    errors = [m for m in lint_file(tmp_path / "Serving.template.json") if m.rule.severity == "error"]
    assert errors == []


def test_leaders_only_selects_leader_worker_set_leaders() -> None:
    service = nlb_service_manifest(server_name="big", leaders_only=True)
    assert service["spec"]["selector"] == {
        "fmconstructs.io/model-server": "big",
        "leaderworkerset.sigs.k8s.io/worker-index": "0",
    }
    assert kubernetes_validate.validate(service, K8S, strict=True) == K8S


def test_chart_waits_for_pod_identity_association(scene: Any) -> None:
    _, _, template = scene
    (association,) = [
        logical_id
        for logical_id, r in template.find_resources("AWS::EKS::PodIdentityAssociation").items()
        if r["Properties"]["ServiceAccount"] == "aws-load-balancer-controller"
    ]
    (chart,) = [
        r for r in template.find_resources("Custom::AWSCDK-EKS-HelmChart").values()
        if r["Properties"]["Chart"] == "aws-load-balancer-controller"
    ]  # fmt: skip
    assert association in chart["DependsOn"]


def test_private_chart_source_and_image() -> None:
    from fmconstructs.eks.addons import ChartSource

    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    mirror = "111122223333.dkr.ecr.us-east-1.amazonaws.com"
    AwsLoadBalancerController.of(
        cluster,
        source=ChartSource.oci(f"oci://{mirror}/helm/aws-load-balancer-controller").with_image(
            f"{mirror}/eks/aws-load-balancer-controller", tag="v3.5.0"
        ),
    )
    template = scene.template()
    template.has_resource_properties(
        "Custom::AWSCDK-EKS-HelmChart",
        {"Chart": "aws-load-balancer-controller", "Repository": f"oci://{mirror}/helm/aws-load-balancer-controller"},
    )
    (chart,) = template.find_resources("Custom::AWSCDK-EKS-HelmChart").values()
    assert f'\\"repository\\":\\"{mirror}/eks/aws-load-balancer-controller\\"' in json.dumps(
        chart["Properties"]["Values"]
    )
