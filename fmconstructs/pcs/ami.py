"""The AMI of a PCS node group: an AMI id or an SSM parameter, never a lookup at synth time.

PCS launches nodes from an AMI that carries the PCS agent and Slurm (``/opt/aws/pcs/scheduler/slurm-XX.YY``, where
the PCS Slurm installer puts it: PCS User Guide spank_install) and, for
EFA nodes, the EFA software; GPU nodes also need the NVIDIA driver and CUDA, and UltraServer nodes the NVIDIA IMEX
service (PCS User Guide "Using custom AMIs" and "Configure UltraServer instances"). The Slurm major version of the AMI
must match the cluster's.

Finding the PCS sample AMIs (PCS User Guide "working-with_ami_samples"): they are public images named
``aws-pcs-sample_ami-<os>-<architecture>-slurm-<version>`` (e.g. ``aws-pcs-sample_ami-al2023-x86_64-slurm-25.11``
or ``...-arm64-slurm-25.11``). Read the newest id once, outside the CDK app, and pass it in::

    aws ec2 describe-images --region us-east-1 --owners amazon \\
        --filters 'Name=name,Values=aws-pcs-sample_ami-al2023-x86_64-slurm-25.11*' \\
        --query 'sort_by(Images, &CreationDate)[-1].ImageId' --output text

The sample AMIs are for demonstration (the guide advises against production use) and carry no NVIDIA driver: GPU
node groups need a custom AMI built with the PCS agent and Slurm installers on top of a GPU base image. Publishing
the id in an SSM parameter (:meth:`PcsAmi.from_ssm_parameter`) lets the image change without a code change; it is
resolved by CloudFormation at deploy time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aws_cdk import aws_ssm as ssm
from constructs import Construct

from .._validate import check_enum, check_str, is_token
from ..catalog import CpuArchitecture
from ..errors import FmTypeError, FmValidationError
from .slurm import SlurmVersion

#: ``CreateComputeNodeGroup.amiId`` (botocore PCS model, shape ``AmiId``): pattern ``ami-[a-z0-9]+``; the
#: CloudFormation schema of ``AWS::PCS::ComputeNodeGroup.AmiId`` has ``^ami-[a-z0-9]+$``. Matched whole.
_AMI_ID = re.compile(r"ami-[a-z0-9]+")
#: SSM ``GetParameter.Name`` (botocore SSM model, shape ``PSParameterName``): 1 to 2,048 characters, a name or an ARN
#: (shared parameters), optionally ``:label`` or ``:version``; names use letters, digits, ``_ . -`` and ``/`` for
#: hierarchies (SSM User Guide "Parameter naming requirements"). Matched whole.
_SSM_NAME = re.compile(r"[A-Za-z0-9_./:-]{1,2048}")
#: The OS part of a sample AMI name (``al2023``, ``amzn2``, ``rhel9``, ``rocky9``, ``ubuntu2204`` ...).
_AMI_OS = re.compile(r"[a-z0-9]+")


def sample_ami_name(architecture: CpuArchitecture, slurm_version: SlurmVersion, *, os: str = "al2023") -> str:
    """The name of a PCS sample AMI (for ``describe-images --filters Name=name,Values=<name>*``)."""
    check_enum("architecture", architecture, CpuArchitecture)
    check_enum("slurm_version", slurm_version, SlurmVersion)
    check_str("os", os, pattern=_AMI_OS, allowed="an OS name such as 'al2023' (lower-case letters and digits)")
    return f"aws-pcs-sample_ami-{os}-{architecture.value}-slurm-{slurm_version.value}"


@dataclass(frozen=True)
class PcsAmi:
    """An AMI id or the name of an SSM parameter that holds one; optionally its architecture, which node groups check
    against the instance type (an arm64 AMI on p5 fails at launch, not at synth)."""

    image_id: str | None = None
    ssm_parameter_name: str | None = None
    architecture: CpuArchitecture | None = None

    def __post_init__(self) -> None:
        if (self.image_id is None) == (self.ssm_parameter_name is None):
            raise FmValidationError(
                "image_id/ssm_parameter_name", (self.image_id, self.ssm_parameter_name), "exactly one of the two"
            )
        if self.image_id is not None:
            _check_image_id("image_id", self.image_id)
        if self.ssm_parameter_name is not None:
            _check_ssm_name("ssm_parameter_name", self.ssm_parameter_name)
        if self.architecture is not None and not isinstance(self.architecture, CpuArchitecture):
            raise FmTypeError("architecture", self.architecture, "a CpuArchitecture or None")

    @classmethod
    def from_image_id(cls, image_id: str, *, architecture: CpuArchitecture | None = None) -> PcsAmi:
        """An AMI id (``ami-...``), or a deploy-time value (a ``CfnParameter``, an import, an SSM dynamic value)."""
        if image_id is None:
            raise FmTypeError("image_id", image_id, "a str (an AMI id)")
        _check_image_id("image_id", image_id)
        return cls(image_id=image_id, architecture=architecture)

    @classmethod
    def from_ssm_parameter(cls, parameter_name: str, *, architecture: CpuArchitecture | None = None) -> PcsAmi:
        """Resolved at deploy time through an ``AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>`` stack parameter."""
        if parameter_name is None:
            raise FmTypeError("parameter_name", parameter_name, "a str (an SSM parameter name)")
        _check_ssm_name("parameter_name", parameter_name)
        return cls(ssm_parameter_name=parameter_name, architecture=architecture)

    def resolve(self, scope: Construct) -> str:
        """The AMI id as the node group's ``AmiId`` takes it (a token for SSM parameters)."""
        if not isinstance(scope, Construct):
            raise FmTypeError("scope", scope, f"a Construct (got a {type(scope).__name__})")
        if self.image_id is not None:
            return self.image_id
        assert self.ssm_parameter_name is not None
        return ssm.StringParameter.value_for_typed_string_parameter_v2(
            scope, self.ssm_parameter_name, ssm.ParameterValueType.AWS_EC2_IMAGE_ID
        )

    def check_architecture(self, architecture: CpuArchitecture, instance_type: str) -> None:
        """Raise when the AMI's architecture is known and is not ``architecture`` (that of ``instance_type``)."""
        check_enum("architecture", architecture, CpuArchitecture)
        check_str("instance_type", instance_type)
        if self.architecture is not None and self.architecture is not architecture:
            raise FmValidationError(
                "ami.architecture",
                self.architecture.value,
                f"{architecture.value} to match {instance_type}",
            )


def _check_image_id(parameter: str, value: object) -> None:
    check_str(parameter, value, pattern=_AMI_ID, allowed="an AMI id like 'ami-0123456789abcdef0' (PCS AmiId)")


def _check_ssm_name(parameter: str, value: object) -> None:
    name = check_str(
        parameter,
        value,
        pattern=_SSM_NAME,
        allowed="an SSM parameter name like '/pcs/ami/x86_64' (1-2048 letters, digits, '_', '.', '-', '/', ':')",
    )
    if is_token(name):
        # aws-cdk-lib derives the stack parameter from the name, which must be known at synthesis.
        raise FmValidationError(
            parameter,
            name,
            "a literal name (CloudFormation resolves the parameter's value at deploy time); for an AMI id known only "
            "at deploy time use PcsAmi.from_image_id(<token>)",
        )
