"""Where a model server's weights come from: S3 (Mountpoint for Amazon S3 CSI driver), FSx for Lustre, Hugging Face.

No weights are baked into images: the server's pods mount them read-only, or download them at start.

- :meth:`ModelWeights.from_s3`: a bucket prefix mounted read-only at ``/models`` through the Mountpoint for Amazon
  S3 CSI driver, installed as the EKS add-on ``aws-mountpoint-s3-csi-driver`` (EKS User Guide
  "mountpoint-for-s3-add-on": "The Amazon EKS add-on name is aws-mountpoint-s3-csi-driver"). Static provisioning
  only (EKS User Guide "s3-csi": "supports only static provisioning"): a PersistentVolume with ``bucketName`` and a
  ``prefix <prefix>`` mount option, ``ReadOnlyMany`` (the driver then mounts with ``--read-only``,
  awslabs/mountpoint-s3-csi-driver v2.7.0 pkg/driver/node/node.go: ``MULTI_NODE_READER_ONLY`` ->
  ``mountpoint.ArgReadOnly``), and a claim bound to it (examples/kubernetes/static_provisioning/
  static_provisioning.yaml at v2.7.0).

  Credentials: pod-level, through EKS Pod Identity (``authenticationSource: pod``; docs/CONFIGURATION.md at v2.7.0,
  "Pod-Level Credentials": "Configuring EKS Pod Identity is the recommended way to set up the CSI Driver if you want to
  use Pod-Level credentials in an EKS Cluster"; steps: the Pod Identity Agent, which GpuEksCluster installs, and a Pod
  Identity association for the pod's service account). The server's own service account gets a role that can list
  the model's prefix and read the objects under it, nothing else (:func:`s3_read_statements`); the driver's own
  service account (``s3-csi-driver-sa``) gets no role. The EKS User Guide pages ("mountpoint-for-s3-add-on",
  "s3-csi-create") describe driver-level credentials through IRSA; a driver-level role would give every pod that
  mounts any S3 volume the same access, so pod-level credentials are used instead (the driver's documented option).
- :meth:`ModelWeights.from_fsx`: a directory of an FSx for Lustre file system (the one training wrote checkpoints
  to), through :meth:`GpuEksCluster.add_lustre_volume` (a static PersistentVolume and claim of the FSx CSI driver),
  mounted read-only at ``/models`` with ``subPath`` the directory.
- :meth:`ModelWeights.from_hugging_face`: vLLM downloads the model at start. With a ``token`` (a Secrets Manager
  secret whose value is the token), an init container reads the secret with the pod's own role (EKS Pod Identity,
  ``secretsmanager:GetSecretValue`` on that secret only) into an in-memory volume, and vLLM reads it from the file
  named by ``HF_TOKEN_PATH`` (huggingface_hub "Environment variables": ``HF_TOKEN_PATH`` "To configure where
  huggingface_hub should store the User Access Token"). Trade-off chosen: a Kubernetes Secret synced at deploy time
  would be a second, long-lived copy of the token in etcd and in the deployment's parameters (CloudFormation
  dynamic references to Secrets Manager are not resolved in custom resources); the Secrets Store CSI driver would add
  two more pinned charts. The init container keeps the token in the pod's memory only; it is refetched at each pod
  start, so a rotated secret takes effect on the next restart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any

from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager

from .._validate import check_construct, check_enum, check_str
from ..errors import FmTypeError, FmValidationError, is_token
from ..storage import LustreFileSystemBase
from . import rules
from .vllm import WeightsMount, server_labels

__all__ = ["ModelWeights", "WeightsSource"]

#: The EKS add-on (EKS User Guide "mountpoint-for-s3-add-on") and the CSI driver name its PersistentVolumes use
#: (examples/kubernetes/static_provisioning/static_provisioning.yaml, v2.7.0: ``driver: s3.csi.aws.com``).
MOUNTPOINT_S3_CSI_ADDON_NAME = "aws-mountpoint-s3-csi-driver"
MOUNTPOINT_S3_CSI_DRIVER = "s3.csi.aws.com"
#: The add-on version: no EKS add-on build string of the v2 driver (``v2.x.y-eksbuild.N``) could be read from a
#: source here (``aws eks describe-addon-versions --addon-name aws-mountpoint-s3-csi-driver`` lists them), so the
#: default is EKS's default build for the cluster's Kubernetes version, as for the FSx CSI add-on; pin one with
#: ``mountpoint_addon_version=``. Pod-level credentials through EKS Pod Identity are documented for driver v2
#: (docs/CONFIGURATION.md at v2.7.0; UNCONFIRMED which v1 release added them).
MOUNTPOINT_S3_CSI_ADDON_VERSION: str | None = None

#: Where the weights appear in the vLLM container.
MODEL_MOUNT_PATH = "/models"

#: The AWS CLI v2 image (on Amazon ECR Public, which an ECR pull-through cache rule can mirror). 2.37.1: a tag seen
#: pinned in public repositories in 2026; UNCONFIRMED as the newest. EKS Pod Identity needs AWS CLI 2.15.0 or later
#: (EKS User Guide "pod-id-minimum-sdk"; UNCONFIRMED version, read from memory of that page).
AWS_CLI_IMAGE = "public.ecr.aws/aws-cli/aws-cli:2.37.1"
#: The in-memory directory of the Hugging Face token and the variable huggingface_hub reads it from.
HF_TOKEN_DIR = "/var/run/secrets/huggingface"
HF_TOKEN_PATH_ENV = "HF_TOKEN_PATH"

#: An S3 key prefix: the characters AWS calls safe for object key names (S3 User Guide "Naming Amazon S3 objects":
#: 0-9 a-z A-Z ! - _ . * ' ( ) and /), without ``*`` (a wildcard in IAM ARNs and conditions), at most 1024 bytes.
_PREFIX = re.compile(r"[A-Za-z0-9!_.'()/-]{1,1024}")
_PREFIX_TEXT = "an S3 key prefix such as 'models/llama-3-70b/': letters, digits, ! - _ . ' ( ) /, no '..' or '//'"
#: A Hugging Face model id: ``name`` or ``owner/name`` (huggingface_hub ``validate_repo_id``: letters, digits, '-',
#: '_', '.', at most 96 characters per part; UNCONFIRMED length).
_HF_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}(/[A-Za-z0-9][A-Za-z0-9_.-]{0,95})?")
#: A directory inside a Lustre file system (relative, no '..').
_PATH = re.compile(r"[A-Za-z0-9_.=+@-]+(/[A-Za-z0-9_.=+@-]+)*")


class WeightsSource(str, Enum):
    """Where the weights come from."""

    S3 = "s3"
    FSX = "fsx"
    HUGGING_FACE = "hugging-face"


def check_prefix(parameter: str, value: object) -> Any:
    """A relative S3 key prefix without '.'/'..' segments or empty segments; returned ending in '/'."""
    text = check_str(parameter, value, allowed=_PREFIX_TEXT)
    if is_token(text):
        return text
    if not _PREFIX.fullmatch(text) or text.startswith("/"):
        raise FmValidationError(parameter, value, _PREFIX_TEXT)
    segments = text.rstrip("/").split("/")
    if any(s in ("", ".", "..") for s in segments):
        raise FmValidationError(parameter, value, _PREFIX_TEXT)
    return text if text.endswith("/") else text + "/"


def _check_path(parameter: str, value: object) -> Any:
    allowed = "a directory of the file system relative to its root, e.g. 'checkpoints/llama-3-70b' (no '..')"
    text = check_str(parameter, value, allowed=allowed)
    if is_token(text):
        return text
    text = text.strip("/")
    if not _PATH.fullmatch(text) or any(s in (".", "..") for s in text.split("/")):
        raise FmValidationError(parameter, value, allowed)
    return text


@dataclass(frozen=True)
class ModelWeights:
    """A model's weights: use :meth:`from_s3`, :meth:`from_fsx` or :meth:`from_hugging_face`."""

    source: WeightsSource
    bucket: s3.IBucket | None = None
    prefix: str | None = None
    file_system: LustreFileSystemBase | None = None
    path: str | None = None
    model_id: str | None = None
    token: secretsmanager.ISecret | None = None

    def __post_init__(self) -> None:
        check_enum("source", self.source, WeightsSource)
        given = {
            "bucket": self.bucket,
            "prefix": self.prefix,
            "file_system": self.file_system,
            "path": self.path,
            "model_id": self.model_id,
            "token": self.token,
        }
        needs = {
            WeightsSource.S3: ("bucket", "prefix"),
            WeightsSource.FSX: ("file_system", "path"),
            WeightsSource.HUGGING_FACE: ("model_id", "token"),
        }[self.source]
        rules.weights_take_the_options_of_their_source(source=self.source.name, needs=needs, given=given)
        if self.source is WeightsSource.S3:
            check_construct("bucket", self.bucket, attribute="bucket_arn", expected="an s3.IBucket")
            object.__setattr__(self, "prefix", check_prefix("prefix", self.prefix))
        elif self.source is WeightsSource.FSX:
            if not isinstance(self.file_system, LustreFileSystemBase):
                raise FmTypeError(
                    "file_system", self.file_system, f"a LustreFileSystem (got a {type(self.file_system).__name__})"
                )
            object.__setattr__(self, "path", _check_path("path", self.path))
        else:
            check_str("model_id", self.model_id, pattern=_HF_ID, allowed="a Hugging Face model id such as 'org/model'")
            if self.token is not None:
                check_construct("token", self.token, attribute="secret_arn", expected="a secretsmanager.ISecret")

    @classmethod
    def from_s3(cls, bucket: s3.IBucket, *, prefix: str) -> ModelWeights:
        """The objects under ``prefix`` of ``bucket`` (read-only; the server's role may read that prefix only)."""
        return cls(WeightsSource.S3, bucket=bucket, prefix=prefix)

    @classmethod
    def from_fsx(cls, file_system: LustreFileSystemBase, *, path: str) -> ModelWeights:
        """The directory ``path`` of an FSx for Lustre file system (read-only)."""
        return cls(WeightsSource.FSX, file_system=file_system, path=path)

    @classmethod
    def from_hugging_face(cls, model_id: str, *, token: secretsmanager.ISecret | None = None) -> ModelWeights:
        """``model_id`` from the Hugging Face Hub; ``token``: a secret whose value is an access token (gated models)."""
        return cls(WeightsSource.HUGGING_FACE, model_id=model_id, token=token)

    @property
    def needs_aws_access(self) -> bool:
        """Whether the server's pods call AWS for the weights (and need a role)."""
        return self.source is WeightsSource.S3 or self.token is not None


# --- S3 ------------------------------------------------------------------------------------------------------------
def s3_read_statements(bucket: s3.IBucket, prefix: str) -> list[iam.PolicyStatement]:
    """List the keys under ``prefix`` (``s3:ListBucket`` with an ``s3:prefix`` condition) and read them
    (``s3:GetObject`` on ``<prefix>*``): the policy the driver's docs give a pod that reads a bucket
    (awslabs/mountpoint-s3-csi-driver v2.7.0 docs/CONFIGURATION.md, cross-account example: ``s3:ListBucket`` on the
    bucket, ``s3:GetObject`` on ``bucket/*``), narrowed to the model's prefix. IAM's ``*`` matches zero characters
    too, so ``<prefix>*`` also allows listing the prefix itself (Mountpoint lists ``<prefix>`` to mount it)."""
    return [
        iam.PolicyStatement(
            sid="ListModelPrefix",
            actions=["s3:ListBucket"],
            resources=[bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{prefix}*"]}},
        ),
        iam.PolicyStatement(
            sid="ReadModelObjects",
            actions=["s3:GetObject"],
            resources=[bucket.arn_for_objects(f"{prefix}*")],
        ),
    ]


def s3_volume_manifests(*, name: str, namespace: str, bucket_name: str, prefix: str) -> list[dict[str, Any]]:
    """The PersistentVolume ``<namespace>-<name>-weights`` (cluster-wide, so the namespace is in its name) and the
    claim ``<name>-weights`` bound to it (``claimRef``, as the driver's examples do, so no other claim takes it)."""
    volume = f"{namespace}-{name}-weights"
    claim = f"{name}-weights"
    labels = server_labels(name)
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": volume, "labels": labels},
            "spec": {
                # Ignored by the driver but required by Kubernetes (static_provisioning.yaml: "Ignored, required").
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadOnlyMany"],
                "storageClassName": "",
                "claimRef": {"namespace": namespace, "name": claim},
                "mountOptions": [f"prefix {prefix}"],
                "csi": {
                    "driver": MOUNTPOINT_S3_CSI_DRIVER,
                    "volumeHandle": volume,
                    "volumeAttributes": {"bucketName": bucket_name, "authenticationSource": "pod"},
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": namespace, "labels": labels},
            "spec": {
                "accessModes": ["ReadOnlyMany"],
                "storageClassName": "",
                "resources": {"requests": {"storage": "1Gi"}},
                "volumeName": volume,
            },
        },
    ]


def claim_mount(claim: str, *, sub_path: str | None = None) -> WeightsMount:
    """Pods mount the claim ``claim`` read-only at :data:`MODEL_MOUNT_PATH` and serve it."""
    mount: dict[str, Any] = {"name": "weights", "mountPath": MODEL_MOUNT_PATH, "readOnly": True}
    if sub_path:
        mount["subPath"] = sub_path
    return WeightsMount(
        model=MODEL_MOUNT_PATH,
        volumes=({"name": "weights", "persistentVolumeClaim": {"claimName": claim, "readOnly": True}},),
        volume_mounts=(mount,),
    )


# --- Hugging Face --------------------------------------------------------------------------------------------------
def hugging_face_mount(
    model_id: str, *, token_secret_arn: str | None = None, region: str | None = None
) -> WeightsMount:
    """``model_id`` served from the Hub; with a token secret, the init container that writes it to memory."""
    if token_secret_arn is None:
        return WeightsMount(model=model_id)
    token_file = f"{HF_TOKEN_DIR}/token"
    env: list[dict[str, Any]] = [{"name": "SECRET_ID", "value": token_secret_arn}]
    if region is not None:
        env.append({"name": "AWS_REGION", "value": region})
    fetch = {
        "name": "hf-token",
        "image": AWS_CLI_IMAGE,
        "command": [
            "/bin/sh",
            "-c",
            'umask 077 && aws secretsmanager get-secret-value --secret-id "$SECRET_ID" --query SecretString '
            f"--output text > {token_file}",
        ],
        "env": env,
        "volumeMounts": [{"name": "hf-token", "mountPath": HF_TOKEN_DIR}],
    }
    return WeightsMount(
        model=model_id,
        volumes=({"name": "hf-token", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},),
        volume_mounts=({"name": "hf-token", "mountPath": HF_TOKEN_DIR, "readOnly": True},),
        env=({"name": HF_TOKEN_PATH_ENV, "value": token_file},),
        init_containers=(fetch,),
    )
