"""Model weights for the model server (issue 23 section 1): S3 through the Mountpoint for Amazon S3 CSI add-on with a
prefix-only role (EKS Pod Identity, pod-level credentials), FSx for Lustre claims, Hugging Face with a token from
Secrets Manager (an init container, no Kubernetes Secret)."""

from __future__ import annotations

import json
from typing import Any

import kubernetes_validate
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk.assertions import Match, Template

from fmconstructs import FmTypeError, FmValidationError
from fmconstructs.eks import DEFAULT_KUBERNETES_VERSION, GpuEksCluster
from fmconstructs.serving.model_server import ModelServer
from fmconstructs.serving.weights import (
    ModelWeights,
    WeightsSource,
    check_prefix,
    hugging_face_mount,
    s3_volume_manifests,
)
from fmconstructs.storage import LustreFileSystem

from tests.conftest import new_scene

K8S = DEFAULT_KUBERNETES_VERSION.version


def _text(body: Any) -> str:
    """A manifest body as JSON text: deploy-time parts of an ``Fn::Join`` become ``"<token>"`` placeholders."""
    if isinstance(body, str):
        return body
    separator, parts = body["Fn::Join"]
    return separator.join(p if isinstance(p, str) else "<token>" for p in parts)


def _objects(template: Template, kind: str) -> list[dict[str, Any]]:
    found = []
    for resource in template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").values():
        found += [m for m in json.loads(_text(resource["Properties"]["Manifest"])) if m["kind"] == kind]
    return found


# --- ModelWeights --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("prefix", "normalized"),
    [("models/llama", "models/llama/"), ("models/llama/", "models/llama/"), ("llama-3.1_8B(v2)", "llama-3.1_8B(v2)/")],
)
def test_prefix_is_normalized_to_end_with_a_slash(prefix, normalized):
    assert check_prefix("prefix", prefix) == normalized


@pytest.mark.parametrize(
    "prefix", ["", "/models", "models/../secrets", "..", "models//llama", "models/./llama", "models/*", "a b", "m?"]
)
def test_bad_prefixes_are_refused(prefix):
    with pytest.raises(FmValidationError, match=r"^prefix must be an S3 key prefix"):
        check_prefix("prefix", prefix)


def test_weights_fields_belong_to_their_source():
    scene = new_scene()
    bucket = s3.Bucket.from_bucket_name(scene.stack, "B", "models")
    with pytest.raises(FmValidationError, match=r"^model_id must be None for S3 weights"):
        ModelWeights(WeightsSource.S3, bucket=bucket, prefix="m/", model_id="org/model")
    with pytest.raises(FmTypeError, match=r"^source"):
        ModelWeights("s3", bucket=bucket, prefix="m/")  # type: ignore[arg-type]
    with pytest.raises(FmTypeError, match=r"^bucket"):
        ModelWeights.from_s3("my-bucket", prefix="m/")  # type: ignore[arg-type]
    with pytest.raises(FmValidationError, match=r"^model_id"):
        ModelWeights.from_hugging_face("not a model id")
    with pytest.raises(FmTypeError, match=r"^file_system"):
        ModelWeights.from_fsx("fs-0123456789abcdef0", path="x")  # type: ignore[arg-type]


# --- S3 manifests ----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def s3_manifests():
    return s3_volume_manifests(name="llama", namespace="fm-serving", bucket_name="my-models", prefix="llama/8b/")


@pytest.mark.parametrize("index", [0, 1])
def test_s3_volume_manifests_are_valid_kubernetes(s3_manifests, index):
    assert kubernetes_validate.validate(s3_manifests[index], K8S, strict=True) == K8S


def test_s3_volume_is_read_only_mountpoint_with_the_prefix_and_pod_credentials(s3_manifests):
    pv, pvc = s3_manifests
    assert pv["spec"]["accessModes"] == ["ReadOnlyMany"] and pvc["spec"]["accessModes"] == ["ReadOnlyMany"]
    assert pv["spec"]["mountOptions"] == ["prefix llama/8b/"]
    assert pv["spec"]["storageClassName"] == "" and pvc["spec"]["storageClassName"] == ""
    assert pv["spec"]["csi"] == {
        "driver": "s3.csi.aws.com",
        "volumeHandle": "fm-serving-llama-weights",
        "volumeAttributes": {"bucketName": "my-models", "authenticationSource": "pod"},
    }
    assert pv["spec"]["claimRef"] == {"namespace": "fm-serving", "name": "llama-weights"}
    assert pvc["spec"]["volumeName"] == "fm-serving-llama-weights"


# --- S3 through the construct ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def s3_server():
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_gpu_node_group("P5en", instance_type="p5en.48xlarge", max_nodes=1, subnets=[scene.subnet_a])
    key = kms.Key(scene.stack, "Key")
    bucket = s3.Bucket(scene.stack, "Models", encryption_key=key)
    server = ModelServer(
        scene.stack,
        "Server",
        cluster=cluster,
        name="llama",
        weights=ModelWeights.from_s3(bucket, prefix="llama/8b"),
        instance_type="p5en.48xlarge",
        mountpoint_addon_version="v2.0.0-eksbuild.1",
    )
    return scene, server, Template.from_stack(scene.stack)


def _policy_statements(template: Template) -> list[dict[str, Any]]:
    statements = []
    for policy in template.find_resources("AWS::IAM::Policy").values():
        statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def test_s3_role_lists_and_reads_only_the_model_prefix(s3_server):
    scene, server, template = s3_server
    resolve = scene.stack.resolve
    statements = [s for s in _policy_statements(template) if str(s.get("Action", "")).startswith("s3:")]
    by_sid = {s["Sid"]: s for s in statements}
    assert set(by_sid) == {"ListModelPrefix", "ReadModelObjects"}
    assert by_sid["ListModelPrefix"]["Action"] == "s3:ListBucket"
    assert by_sid["ListModelPrefix"]["Condition"] == {"StringLike": {"s3:prefix": ["llama/8b/*"]}}
    assert by_sid["ReadModelObjects"]["Action"] == "s3:GetObject"
    resource = json.dumps(by_sid["ReadModelObjects"]["Resource"])
    assert (
        resource.endswith('"/llama/8b/*"]]}') and resolve(server.weights.bucket.bucket_arn)["Fn::GetAtt"][0] in resource
    )
    # Nothing else on S3: no Put/Delete, no bucket-wide read.
    assert all(s["Action"] in ("s3:ListBucket", "s3:GetObject") for s in statements)


def test_s3_role_can_decrypt_with_the_bucket_key(s3_server):
    _, _, template = s3_server
    decrypt = [s for s in _policy_statements(template) if s.get("Action") == "kms:Decrypt"]
    assert len(decrypt) == 1


def test_s3_role_is_assumed_by_the_server_service_account_through_pod_identity(s3_server):
    _, _, template = s3_server
    template.has_resource_properties(
        "AWS::EKS::PodIdentityAssociation", {"Namespace": "fm-serving", "ServiceAccount": "llama"}
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
                                        "aws:RequestTag/kubernetes-namespace": "fm-serving",
                                        "aws:RequestTag/kubernetes-service-account": "llama",
                                    }
                                )
                            },
                        }
                    )
                ]
            }
        },
    )


def test_mountpoint_add_on_is_installed_with_the_pinned_version_and_no_driver_role(s3_server):
    _, _, template = s3_server
    template.has_resource_properties(
        "AWS::EKS::Addon",
        {
            "AddonName": "aws-mountpoint-s3-csi-driver",
            "AddonVersion": "v2.0.0-eksbuild.1",
            "ServiceAccountRoleArn": Match.absent(),
            "PodIdentityAssociations": Match.absent(),
        },
    )


def test_s3_server_pods_mount_the_claim_read_only_at_models(s3_server):
    _, _, template = s3_server
    (deployment,) = _objects(template, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert {"name": "weights", "persistentVolumeClaim": {"claimName": "llama-weights", "readOnly": True}} in pod[
        "volumes"
    ]
    (c,) = pod["containers"]
    assert {"name": "weights", "mountPath": "/models", "readOnly": True} in c["volumeMounts"]
    assert c["args"][0] == "/models"
    (pv,) = _objects(template, "PersistentVolume")
    assert pv["spec"]["mountOptions"] == ["prefix llama/8b/"]


# --- FSx for Lustre --------------------------------------------------------------------------------------------------
def test_fsx_weights_use_a_static_lustre_claim_mounted_read_only_at_the_directory():
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    sg = ec2.SecurityGroup.from_security_group_id(scene.stack, "FsxSg", "sg-0123456789abcdef0")
    fs = LustreFileSystem.from_lustre_file_system_attributes(
        scene.stack,
        "Fsx",
        file_system_id="fs-0123456789abcdef0",
        dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
        mount_name="abcdefgh",
        security_group=sg,
        storage_capacity_gib=2400,
    )
    ModelServer(
        scene.stack,
        "Server",
        cluster=cluster,
        name="llama",
        weights=ModelWeights.from_fsx(fs, path="/checkpoints/llama-70b/"),
        instance_type="p5en.48xlarge",
    )
    template = scene.template()
    template.has_resource_properties("AWS::EKS::Addon", {"AddonName": "aws-fsx-csi-driver"})
    (pvc,) = _objects(template, "PersistentVolumeClaim")
    assert (pvc["metadata"]["name"], pvc["metadata"]["namespace"]) == ("fm-serving-llama-weights", "fm-serving")
    (deployment,) = _objects(template, "Deployment")
    (c,) = deployment["spec"]["template"]["spec"]["containers"]
    assert {
        "name": "weights",
        "mountPath": "/models",
        "readOnly": True,
        "subPath": "checkpoints/llama-70b",
    } in c["volumeMounts"]
    template.resource_count_is("AWS::EKS::PodIdentityAssociation", 0)


@pytest.mark.parametrize("path", ["../etc", "a/../../b", "", "with space"])
def test_bad_fsx_paths_are_refused(path):
    scene = new_scene()
    sg = ec2.SecurityGroup.from_security_group_id(scene.stack, "FsxSg", "sg-0123456789abcdef0")
    fs = LustreFileSystem.from_lustre_file_system_attributes(
        scene.stack,
        "Fsx",
        file_system_id="fs-0123456789abcdef0",
        dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
        mount_name="abcdefgh",
        security_group=sg,
    )
    with pytest.raises(FmValidationError, match=r"^path"):
        ModelWeights.from_fsx(fs, path=path)


# --- Hugging Face ------------------------------------------------------------------------------------------------------
def test_hugging_face_without_token_serves_the_model_id():
    mount = hugging_face_mount("Qwen/Qwen3-0.6B")
    assert (mount.model, mount.init_containers, mount.env) == ("Qwen/Qwen3-0.6B", (), ())


def test_hugging_face_token_is_fetched_by_an_init_container_into_memory():
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    secret = secretsmanager.Secret(scene.stack, "HfToken")
    ModelServer(
        scene.stack,
        "Server",
        cluster=cluster,
        name="llama",
        weights=ModelWeights.from_hugging_face("meta-llama/Llama-3.1-8B-Instruct", token=secret),
        instance_type="p5en.48xlarge",
    )
    template = scene.template()
    (deployment,) = _objects(template, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (init,) = pod["initContainers"]
    assert init["image"] == "public.ecr.aws/aws-cli/aws-cli:2.37.1"
    assert "aws secretsmanager get-secret-value" in init["command"][2]
    assert {"name": "hf-token", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}} in pod["volumes"]
    (c,) = pod["containers"]
    assert {"name": "HF_TOKEN_PATH", "value": "/var/run/secrets/huggingface/token"} in c["env"]
    assert c["args"][0] == "meta-llama/Llama-3.1-8B-Instruct"
    # No Kubernetes Secret holds the token; the role may read that one secret.
    assert not _objects(template, "Secret")
    reads = [
        s
        for s in _policy_statements(template)
        if "secretsmanager:GetSecretValue" in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    ]
    assert len(reads) == 1 and reads[0]["Resource"] == {"Ref": scene.stack.resolve(secret.secret_arn)["Ref"]}
    template.resource_count_is("AWS::EKS::PodIdentityAssociation", 1)


# --- cdk-nag: the construct owns its findings ----------------------------------------------------------------------
@pytest.mark.validation
def test_cdk_nag_reports_nothing_unacknowledged_for_the_model_servers(tmp_path) -> None:
    """A user app with the cluster, an S3 server on two nodes and a Hugging Face server with a token: every cdk-nag
    finding under the model servers is acknowledged by the construct (the prefix wildcard of the S3 read)."""
    import aws_cdk as cdk
    from cdk_nag import AwsSolutionsChecks

    app = cdk.App(outdir=str(tmp_path / "cdk.out"), builtin_cloud_formation_validation=True)
    stack = cdk.Stack(app, "UserServing", env=cdk.Environment(account="123456789012", region="us-east-1"))
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
    )
    cluster = GpuEksCluster(stack, "Cluster", vpc=vpc)
    bucket = s3.Bucket.from_bucket_name(stack, "Models", "my-models")
    secret = secretsmanager.Secret.from_secret_name_v2(stack, "HfToken", "hf-token")
    ModelServer(
        stack,
        "Big",
        cluster=cluster,
        name="big",
        weights=ModelWeights.from_s3(bucket, prefix="llama-405b"),
        instance_type="p5en.48xlarge",
        nodes=2,
    )
    ModelServer(
        stack,
        "Hf",
        cluster=cluster,
        name="hf",
        weights=ModelWeights.from_hugging_face("meta-llama/Llama-3.1-8B", token=secret),
        instance_type="p5en.48xlarge",
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    try:
        app.synth()
    except RuntimeError as error:
        if "ValidationFailed" not in str(error):
            raise
    report = json.loads((tmp_path / "cdk.out" / "validation-report.json").read_text())
    found = sorted(
        f"{violation['ruleName']} {resource.get('constructPath')}"
        for plugin in report["pluginReports"]
        for violation in plugin.get("violations", [])
        for resource in violation.get("violatingConstructs", [])
    )
    assert [f for f in found if "/Big/" in f or "/Hf/" in f] == []
