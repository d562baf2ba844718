"""GPU node images built by EC2 Image Builder: one pipeline per architecture, the AMI id published in SSM.

:class:`GpuNodeImage` wraps the Image Builder L1 resources (aws-cdk-lib 2.275 ships only ``Cfn*`` classes in
``aws_imagebuilder``; the L2 is the experimental ``@aws-cdk/aws-imagebuilder-alpha`` package, not used here):

- one ``AWS::ImageBuilder::Component`` per piece (:mod:`fmconstructs.images.components`), versioned by content;
- an ``AWS::ImageBuilder::ImageRecipe`` on a documented parent: by default the AWS Deep Learning Base OSS Nvidia
  Driver GPU AMI (Amazon Linux 2023) of the node architecture, referenced as ``ssm:<public parameter>`` so that every
  build starts from the newest release (botocore imagebuilder ``CreateImageRecipeRequest.parentImage``: "Amazon Web
  Services Systems Manager (SSM) Parameter Store Parameter, prefixed by ssm:, followed by the parameter name or
  ARN"); the root volume is encrypted with a customer managed KMS key;
- an ``AWS::ImageBuilder::InfrastructureConfiguration``: build and test instances in a private subnet, IMDSv2 only
  (``InstanceMetadataOptions.HttpTokens=required``), an instance profile with the two AWS managed policies the Image
  Builder guide asks for (EC2InstanceProfileForImageBuilder, AmazonSSMManagedInstanceCore), logs to a TLS-only bucket;
- an ``AWS::ImageBuilder::DistributionConfiguration`` that encrypts the AMI with the same key and writes its id to an
  SSM parameter (``Distribution.SsmParameterConfigurations``, data type ``aws:ec2:image``): the parameter that
  ``fmconstructs.pcs.PcsAmi.from_ssm_parameter`` reads;
- an ``AWS::ImageBuilder::ImagePipeline``: manual runs, or a schedule (:class:`BuildSchedule`), with image tests on.

Prerequisites and limits (read before deploying):

- The AMI id parameter must be named ``/imagebuilder/...``: Image Builder writes it with its service-linked role,
  whose policy can "read and update private Parameters prefixed with /imagebuilder/" (Image Builder User Guide
  security-iam-awsmanpol, AWSServiceRoleForImageBuilder).
- The parameter exists only after the first successful build: start the pipeline once before deploying stacks whose
  node groups read it (a stack parameter of type ``AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>`` fails on a
  missing parameter). It is not a CloudFormation resource, so deleting the stack leaves it (and the AMIs) in place.
- Build instances download the PCS, EFA and exporter installers, the Lustre client, Docker and the dcgm-exporter image
  at build time: the private subnet needs a route to the internet (NAT) or mirrors; nodes launched from the image need
  none of it at boot.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any

from aws_cdk import Duration, Names, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_imagebuilder as imagebuilder
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from .._log_groups import encrypted_log_group
from .._nag import acknowledge_no_access_logs
from .._validate import (
    check_bool,
    check_construct,
    check_enum,
    check_kms_key,
    check_number,
    check_security_group,
    check_sequence,
    check_str,
    check_subnet,
    check_vpc,
    known,
    located,
)
from ..catalog import CpuArchitecture, InstanceSpec, check_instance_type, get_instance_spec
from ..errors import FmTypeError, FmValidationError, is_token
from ..pcs.slurm import DEFAULT_SLURM_VERSION, SlurmVersion
from . import _nag, rules
from ._pipeline_parts import ROOT_DEVICE_NAME as ROOT_DEVICE_NAME
from ._pipeline_parts import distribution_configuration, image_recipe, infrastructure_configuration
from .components import (
    EFA_INSTALLER_VERSION,
    PCS_AGENT_VERSION,
    SLURM_INSTALLER_VERSION,
    ImageComponent,
    dcgm_component,
    efa_component,
    fabric_manager_component,
    gpu_smoke_test_component,
    imex_component,
    lustre_client_component,
    metrics_agents_component,
    nvidia_driver_component,
    pcs_agent_component,
    slurm_component,
)
from .cron import check_schedule_expression
from .nccl_tests import nccl_tests_component
from .slurm_exporter import slurm_exporter_component

#: Public SSM parameters of the AWS Deep Learning Base OSS Nvidia Driver GPU AMI (Amazon Linux 2023). Name format
#: ``/aws/service/deeplearning/ami/<architecture>/<ami type>/latest/ami-id`` (DLAMI Developer Guide "Finding the ID
#: of a DLAMI", find-dlami-id); the two names as AWS's aws-hpc-recipes use them for the same purpose
#: (recipes/pcs/dlami_for_pcs_imagebuilder, README "Source AMIs" and assets/dlami-for-pcs.yaml ``DLAMIConfigs``).
#: What the parents carry (DLAMI release notes, "Major package versions", 2026-09 releases): the NVIDIA driver
#: (595.91.07), CUDA 12.8-13.2, DCGM (4.6-4.7), EFA (installer 1.47-1.50), the NVIDIA container toolkit, containerd and
#: the SSM agent; supported instances include P5, P5e, P5en, P6-B200, P6-B300 and G6 (x86_64) and P6e-GB200, G5g
#: (arm64). Fabric Manager and IMEX are not in that table: the components install them when missing.
DLAMI_BASE_GPU_PARAMETERS: dict[CpuArchitecture, str] = {
    CpuArchitecture.X86_64: "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-amazon-linux-2023"
    "/latest/ami-id",
    CpuArchitecture.ARM64: "/aws/service/deeplearning/ami/arm64/base-oss-nvidia-driver-gpu-amazon-linux-2023"
    "/latest/ami-id",
}

#: Build and test instance types. The build needs no GPU; only the GPU smoke test does, so with ``validate_on_gpu``
#: (the default) the smallest-but-one GPU types the DLAMI parents list as supported are used: G6 (NVIDIA L4) for
#: x86_64 and G5g (NVIDIA T4G, Graviton2) for arm64 (DLAMI release notes, supported_ec2_instances). 8 vCPUs keep the
#: Slurm compile short. Without it, general-purpose types (packages and kernel modules are checked, not a GPU).
DEFAULT_BUILD_INSTANCE_TYPES: dict[tuple[CpuArchitecture, bool], tuple[str, ...]] = {
    (CpuArchitecture.X86_64, True): ("g6.2xlarge",),
    (CpuArchitecture.ARM64, True): ("g5g.2xlarge",),
    (CpuArchitecture.X86_64, False): ("c7i.2xlarge",),
    (CpuArchitecture.ARM64, False): ("c7g.2xlarge",),
}

#: Build logs and image tests: test timeout (botocore imagebuilder ``ImageTestsTimeoutMinutes``: 60-1440).
IMAGE_TESTS_TIMEOUT_MINUTES = 90

# botocore imagebuilder 1.44.8: SsmParameterName ^[a-zA-Z0-9_.\-\/]+$ (1-1011); the /imagebuilder/ prefix is what
# the service-linked role may write (see the module notes).
_SSM_PARAMETER = re.compile(r"/imagebuilder/[a-zA-Z0-9_.\-/]{1,997}")
# Resource names: ResourceName ^[-_A-Za-z-0-9][-_A-Za-z0-9 ]{1,126}[-_A-Za-z-0-9]$; the image name is also part of
# CloudWatch Logs group names (LogGroupName ^[a-zA-Z0-9\-_/\.]{1,512}$), so no spaces, and it leaves room for
# component suffixes.
_IMAGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{1,62}[A-Za-z0-9]")
_AMI_ID = re.compile(r"ami-[0-9a-f]{8,17}")
_SSM_SOURCE = re.compile(
    r"/[a-zA-Z0-9_.\-/]{1,2047}|arn:aws[a-z-]*:ssm:[a-z0-9-]+:[0-9]{12}:parameter/[a-zA-Z0-9_.\-/]+"
)
# botocore imagebuilder Timezone: [a-zA-Z0-9]{2,}(?:\/[a-zA-Z0-9-_+]+)*, 3-100.
_TIMEZONE = re.compile(r"[a-zA-Z0-9]{2,}(?:/[a-zA-Z0-9_+-]+)*")


class PipelineStartCondition(str, Enum):
    """When a scheduled pipeline builds (botocore imagebuilder ``PipelineExecutionStartCondition``)."""

    #: Build at every match of the expression.
    EXPRESSION_MATCH_ONLY = "EXPRESSION_MATCH_ONLY"
    #: Build at a match only when a dependency changed; "a change in the [parent's SSM] parameter's value also
    #: counts as an available dependency update" (botocore ``Schedule.pipelineExecutionStartCondition``).
    EXPRESSION_MATCH_AND_DEPENDENCY_UPDATES_AVAILABLE = "EXPRESSION_MATCH_AND_DEPENDENCY_UPDATES_AVAILABLE"


_ON_UPDATES = PipelineStartCondition.EXPRESSION_MATCH_AND_DEPENDENCY_UPDATES_AVAILABLE


@dataclass(frozen=True)
class BuildSchedule:
    """When the pipeline builds: manual runs only (``expression`` None) or a cron/rate expression."""

    expression: str | None = None
    start_condition: PipelineStartCondition = _ON_UPDATES
    timezone: str | None = None

    def __post_init__(self) -> None:
        if self.expression is not None:
            # Fields, ranges and wildcards of the AWS cron reference, or a rate (fmconstructs.images.cron).
            check_schedule_expression("schedule.expression", self.expression)
        check_enum("schedule.start_condition", self.start_condition, PipelineStartCondition)
        if self.timezone is not None:
            check_str(
                "schedule.timezone",
                self.timezone,
                pattern=_TIMEZONE,
                min_length=3,
                max_length=100,
                allowed="an IANA time zone such as 'Etc/UTC' or 'Europe/Paris'",
            )
            rules.timezone_needs_a_schedule(timezone=self.timezone, expression=self.expression)

    @classmethod
    def manual(cls) -> BuildSchedule:
        """No schedule: build with ``aws imagebuilder start-image-pipeline-execution`` (see
        :attr:`GpuNodeImage.start_pipeline_command`)."""
        return cls()

    @classmethod
    def cron(
        cls,
        expression: str,
        *,
        start_condition: PipelineStartCondition = _ON_UPDATES,
        timezone: str | None = None,
    ) -> BuildSchedule:
        """A cron or rate expression; by default a build only runs when the parent (or a component) changed."""
        return cls(expression=expression, start_condition=start_condition, timezone=timezone)

    @classmethod
    def weekly_when_parent_changes(cls) -> BuildSchedule:
        """Mondays 06:00 UTC, only when a new parent AMI (DLAMI release) or component version is available."""
        return cls.cron("cron(0 6 ? * MON *)")

    @property
    def is_manual(self) -> bool:
        return self.expression is None


@dataclass(frozen=True)
class ParentImage:
    """The image the recipe builds on, as Image Builder's ``ParentImage`` takes it (an AMI id or ``ssm:<name>``).

    The components target Amazon Linux 2023 (``dnf``); a parent must carry the NVIDIA driver (checked at build).
    """

    value: str
    description: str

    def __post_init__(self) -> None:
        check_str("parent_image.value", self.value, min_length=1, max_length=1024, allowed="1-1024 characters")

    @classmethod
    def dlami_base_gpu(cls, architecture: CpuArchitecture) -> ParentImage:
        """The newest AWS Deep Learning Base OSS Nvidia Driver GPU AMI (Amazon Linux 2023) of ``architecture``."""
        check_enum("architecture", architecture, CpuArchitecture)
        return cls(
            value=f"ssm:{DLAMI_BASE_GPU_PARAMETERS[architecture]}",
            description=f"Deep Learning Base OSS Nvidia Driver GPU AMI (Amazon Linux 2023), {architecture.value}",
        )

    @classmethod
    def from_ssm_parameter(cls, parameter: str) -> ParentImage:
        """A parameter (name or ARN) holding an AMI id, resolved by Image Builder at each build."""
        check_str(
            "parameter",
            parameter,
            pattern=_SSM_SOURCE,
            allowed="an SSM parameter name starting with '/' or a parameter ARN",
        )
        return cls(value=f"ssm:{parameter}", description=f"AMI in SSM parameter {parameter}")

    @classmethod
    def from_ami_id(cls, ami_id: str) -> ParentImage:
        check_str("ami_id", ami_id, pattern=_AMI_ID, allowed="an AMI id like 'ami-0123456789abcdef0'")
        return cls(value=ami_id, description=f"AMI {ami_id}")


def _instance_specs(instance_types: object) -> tuple[InstanceSpec, ...]:
    types = check_sequence("instance_types", instance_types, check_instance_type)
    if not types:
        raise FmValidationError("instance_types", list(types), "at least one catalog GPU instance type")
    if any(is_token(t) for t in types):
        raise FmValidationError(
            "instance_types", "a deploy-time value", "instance types known at synth time (they choose the architecture)"
        )
    specs = []
    for index, name in enumerate(types):
        try:
            specs.append(get_instance_spec(name))
        except FmValidationError as error:
            raise FmValidationError(f"instance_types[{index}]", name, error.allowed) from None
    return tuple(specs)


def _architecture(specs: Sequence[InstanceSpec]) -> CpuArchitecture:
    rules.instance_types_share_one_architecture(specs)
    return specs[0].architecture


def _check_build_type(parameter: str, value: object, architecture: CpuArchitecture, gpu: bool) -> str:
    name = check_instance_type(parameter, value)  # catalog or botocore's EC2 InstanceType enum
    if is_token(name):
        return str(name)
    rules.build_type_matches_the_architecture(parameter=parameter, instance_type=name, architecture=architecture)
    rules.gpu_validation_needs_a_gpu_type(parameter=parameter, instance_type=name, validate_on_gpu=gpu)
    return str(name)


@dataclass(frozen=True)
class _ImageProps:
    """The keyword arguments of :class:`GpuNodeImage` as given (checked by ``_check_props``), for its steps."""

    instance_types: Sequence[str]
    vpc: ec2.IVpc
    subnet: ec2.ISubnet | None
    slurm_versions: Sequence[SlurmVersion]
    pcs_agent_version: str
    slurm_installer_version: str
    efa_installer_version: str
    parent_image: ParentImage | None
    schedule: BuildSchedule | None
    ssm_parameter_name: str | None
    image_name: str | None
    build_instance_types: Sequence[str] | None
    validate_on_gpu: bool
    root_volume_size_gib: int
    encryption_key: kms.IKey | None
    logs_bucket: s3.IBucket | None
    server_access_logs_bucket: s3.IBucket | None
    security_groups: Sequence[ec2.ISecurityGroup] | None
    additional_components: Sequence[ImageComponent]
    removal_policy: RemovalPolicy
    log_removal_policy: RemovalPolicy
    log_retention: logs.RetentionDays

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> _ImageProps:
        """The props among a constructor's ``locals()`` (its keyword arguments)."""
        return cls(**{field.name: arguments[field.name] for field in fields(cls)})


class GpuNodeImage(Construct):
    """An EC2 Image Builder pipeline that builds GPU node AMIs for one architecture and publishes the newest AMI id in
    an SSM parameter.

    :param instance_types: the catalog GPU types the image serves (``["p5.48xlarge", "p6-b200.48xlarge"]``,
        ``["p6e-gb200.36xlarge"]``): they fix the architecture (``get_instance_spec(t).architecture``; one per image)
        and the NVIDIA pieces (Fabric Manager for the x86_64 NVSwitch HGX types, IMEX for UltraServer types).
    :param vpc: where build and test instances run.
    :param subnet: a private subnet with a route to the internet (NAT) for the installers. Default: the VPC's first
        private subnet with egress. Public subnets of ``vpc`` are refused (no public IP on build instances).
    :param slurm_versions: the Slurm versions of the clusters the image serves, each installed with the AWS PCS Slurm
        installer (two versions support a rolling scheduler update, PCS User Guide
        working-with_clusters_version_update_procedure). Default: ``(DEFAULT_SLURM_VERSION,)`` (25.11). Empty: no PCS
        agent and no Slurm (images for EKS or HyperPod).
    :param pcs_agent_version: ``"latest"`` (default) or a pinned agent version like ``"1.3.1-1"``.
    :param slurm_installer_version: ``"latest"`` (default) or a pinned installer like ``"25.11.2-1"`` (one Slurm
        version only).
    :param efa_installer_version: the EFA installer used when the parent's EFA software is missing or older.
        Default: :data:`~fmconstructs.images.components.EFA_INSTALLER_VERSION`.
    :param parent_image: default: :meth:`ParentImage.dlami_base_gpu` of the architecture.
    :param schedule: default: :meth:`BuildSchedule.manual`.
    :param ssm_parameter_name: where the AMI id is written; must start with ``/imagebuilder/``. Default:
        ``/imagebuilder/fmconstructs/<image_name>``.
    :param image_name: the name of the recipe, pipeline and log groups (3-64 letters, digits, '-' or '_'). Default:
        a unique name from the construct path.
    :param build_instance_types: default: :data:`DEFAULT_BUILD_INSTANCE_TYPES` (G6 / G5g with ``validate_on_gpu``).
    :param validate_on_gpu: run the GPU smoke test (``nvidia-smi``) in the test stage, on GPU test instances.
        Default True. False builds and tests on general-purpose instances and checks packages and kernel modules only.
    :param root_volume_size_gib: the AMI's root volume (gp3, encrypted). Default 150.
    :param encryption_key: encrypts the root volume and the distributed AMI. Default: a new customer managed key with
        rotation, kept on stack deletion (``removal_policy``).
    :param logs_bucket: where build instances write their logs. Default: a new TLS-only bucket (logs expire after a
        year).
    :param server_access_logs_bucket: server access logs of the new logs bucket. Default: none.
    :param security_groups: of the build instances. Default: a new group with no ingress and all egress.
    :param additional_components: your own components, run after the built-in ones.
    :param removal_policy: of the key and the logs bucket. Default RETAIN.
    :param log_removal_policy: of the build and pipeline log groups. Default DESTROY: their names are fixed by Image
        Builder's convention (``/aws/imagebuilder/<image name>``), so a retained group would make the next stack with
        this image name fail with "already exists" after ``cdk destroy`` (CloudFormation cannot create a named resource
        that exists); the build logs that matter are also in ``logs_bucket``. RETAIN keeps them (then delete the groups
        before re-creating the stack).
    :param log_retention: of the build and pipeline log groups. Default one year.
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        instance_types: Sequence[str],
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet | None = None,
        slurm_versions: Sequence[SlurmVersion] = (DEFAULT_SLURM_VERSION,),
        pcs_agent_version: str = PCS_AGENT_VERSION,
        slurm_installer_version: str = SLURM_INSTALLER_VERSION,
        efa_installer_version: str = EFA_INSTALLER_VERSION,
        parent_image: ParentImage | None = None,
        schedule: BuildSchedule | None = None,
        ssm_parameter_name: str | None = None,
        image_name: str | None = None,
        build_instance_types: Sequence[str] | None = None,
        validate_on_gpu: bool = True,
        root_volume_size_gib: int = 150,
        encryption_key: kms.IKey | None = None,
        logs_bucket: s3.IBucket | None = None,
        server_access_logs_bucket: s3.IBucket | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        additional_components: Sequence[ImageComponent] = (),
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
        log_removal_policy: RemovalPolicy = RemovalPolicy.DESTROY,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_YEAR,
    ) -> None:
        props = _ImageProps.of(locals())
        super().__init__(scope, id)
        size, groups, extra = self._check_props(props)
        self._resolve_settings(props, extra)
        self._build_storage(props)
        self._build_instance_access(vpc, groups)
        self._build_components()
        self.recipe: imagebuilder.CfnImageRecipe = image_recipe(self, size)
        self.infrastructure_configuration: imagebuilder.CfnInfrastructureConfiguration = infrastructure_configuration(
            self
        )
        self.distribution_configuration: imagebuilder.CfnDistributionConfiguration = distribution_configuration(self)
        self._build_pipeline(props)
        _nag.acknowledge_image(self)

    # --- constructor steps -----------------------------------------------------------------------------------------

    def _check_props(
        self, props: _ImageProps
    ) -> tuple[Any, tuple[ec2.ISecurityGroup, ...] | None, tuple[ImageComponent, ...]]:
        """Check the props (in the order of the signature); keep the instance specs, architecture, Slurm versions
        and GPU validation; return the root volume size, the security groups given and the additional components."""
        specs = _instance_specs(props.instance_types)
        self.instance_specs: tuple[InstanceSpec, ...] = specs
        self.architecture: CpuArchitecture = _architecture(specs)
        check_vpc("vpc", props.vpc)
        if props.subnet is not None:
            check_subnet("subnet", props.subnet)
        self.slurm_versions: tuple[SlurmVersion, ...] = check_sequence(
            "slurm_versions", props.slurm_versions, lambda n, v: check_enum(n, v, SlurmVersion)
        )
        if len(set(self.slurm_versions)) != len(self.slurm_versions):
            raise FmValidationError("slurm_versions", [v.value for v in self.slurm_versions], "distinct versions")
        check_str("slurm_installer_version", props.slurm_installer_version)
        rules.one_slurm_version_for_a_pinned_installer(
            installer_version=props.slurm_installer_version, slurm_versions=len(self.slurm_versions)
        )
        if props.parent_image is not None and not isinstance(props.parent_image, ParentImage):
            raise FmTypeError("parent_image", props.parent_image, "a ParentImage or None")
        if props.schedule is not None and not isinstance(props.schedule, BuildSchedule):
            raise FmTypeError("schedule", props.schedule, "a BuildSchedule or None")
        self.validate_on_gpu: bool = check_bool("validate_on_gpu", props.validate_on_gpu)
        size = check_number(
            "root_volume_size_gib", props.root_volume_size_gib, minimum=1, maximum=16000, integer=True, unit="GiB"
        )
        if props.encryption_key is not None:
            check_kms_key("encryption_key", props.encryption_key)
        for parameter, bucket in (
            ("logs_bucket", props.logs_bucket),
            ("server_access_logs_bucket", props.server_access_logs_bucket),
        ):
            if bucket is not None:
                check_construct(parameter, bucket, attribute="bucket_name", expected="an s3.IBucket")
        groups = None
        if props.security_groups is not None:
            groups = check_sequence("security_groups", props.security_groups, check_security_group)
            if not groups:
                raise FmValidationError("security_groups", [], "at least one security group, or None")
        extra = check_sequence("additional_components", props.additional_components, _check_component)
        check_enum("removal_policy", props.removal_policy, RemovalPolicy)
        check_enum("log_removal_policy", props.log_removal_policy, RemovalPolicy)
        check_enum("log_retention", props.log_retention, logs.RetentionDays)

        return size, groups, extra

    def _resolve_settings(self, props: _ImageProps, extra: tuple[ImageComponent, ...]) -> None:
        """Names, parent image, schedule, build instance types, subnet and components, defaults filled in."""
        self.image_name: str = self._image_name(props.image_name)
        self.ssm_parameter_name: str = self._parameter_name(props.ssm_parameter_name)
        self.parent_image: ParentImage = props.parent_image or ParentImage.dlami_base_gpu(self.architecture)
        self.schedule: BuildSchedule = props.schedule or BuildSchedule.manual()
        self.build_instance_types: tuple[str, ...] = self._build_types(props.build_instance_types)
        self.subnet: ec2.ISubnet = self._subnet(props.vpc, props.subnet)

        self.components: tuple[ImageComponent, ...] = (
            *self._builtin_components(
                pcs_agent_version=props.pcs_agent_version,
                slurm_installer_version=props.slurm_installer_version,
                efa_installer_version=props.efa_installer_version,
            ),
            *extra,
        )
        names = [c.name for c in self.components]
        if len(set(names)) != len(names):
            raise FmValidationError("additional_components", names, "components whose names differ from each other")

    def _build_types(self, build_instance_types: Sequence[str] | None) -> tuple[str, ...]:
        """``build_instance_types`` checked against the image's architecture, or the default for it."""
        if build_instance_types is None:
            return DEFAULT_BUILD_INSTANCE_TYPES[(self.architecture, self.validate_on_gpu)]
        build_types = check_sequence(
            "build_instance_types",
            build_instance_types,
            lambda n, v: _check_build_type(n, v, self.architecture, self.validate_on_gpu),
        )
        if not build_types:
            raise FmValidationError("build_instance_types", [], "at least one instance type, or None")
        return tuple(build_types)

    def _build_storage(self, props: _ImageProps) -> None:
        """The image's KMS key and the build logs bucket (given or created)."""
        self.encryption_key: kms.IKey = props.encryption_key or self._new_key(props.removal_policy)
        self.logs_bucket: s3.IBucket = props.logs_bucket or s3.Bucket(
            self,
            "Logs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(365))],
            server_access_logs_bucket=props.server_access_logs_bucket,
            server_access_logs_prefix=f"{self.image_name}/" if props.server_access_logs_bucket is not None else None,
            removal_policy=props.removal_policy,
        )
        if props.logs_bucket is None and props.server_access_logs_bucket is None:
            acknowledge_no_access_logs(self.logs_bucket, parameter="server_access_logs_bucket")
        self.logs_prefix: str = f"imagebuilder/{self.image_name}/"

    def _build_instance_access(self, vpc: ec2.IVpc, groups: tuple[ec2.ISecurityGroup, ...] | None) -> None:
        """The build and test instances' role, instance profile and security groups."""
        # The build instances' role: the two AWS managed policies the Image Builder guide requires for build and test
        # instances ("Image Builder ... instance profile": EC2InstanceProfileForImageBuilder, the minimum for an
        # instance to work with Image Builder, "This does not include permissions required to use the Systems
        # Manager Agent", hence AmazonSSMManagedInstanceCore; security-iam-awsmanpol), plus writing its own logs.
        self.role: iam.Role = iam.Role(
            self,
            "InstanceRole",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description=f"fmconstructs: Image Builder build and test instances of {self.image_name}",
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name("EC2InstanceProfileForImageBuilder"),
                iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSSMManagedInstanceCore"),
            ],
        )
        # Only s3:PutObject (which also covers multipart uploads) under its own prefix: no reads, no deletes.
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["s3:PutObject"], resources=[self.logs_bucket.arn_for_objects(f"{self.logs_prefix}*")]
            )
        )
        self.instance_profile: iam.InstanceProfile = iam.InstanceProfile(self, "InstanceProfile", role=self.role)
        self.security_groups: tuple[ec2.ISecurityGroup, ...] = groups or (
            ec2.SecurityGroup(
                self,
                "SecurityGroup",
                vpc=vpc,
                description=f"fmconstructs: Image Builder instances of {self.image_name} (no ingress; egress for "
                "installers and Systems Manager)",
                allow_all_outbound=True,
            ),
        )

        #: Network rules for the build and test instances (e.g. to reach a package mirror or proxy).
        self.connections: ec2.Connections = ec2.Connections(security_groups=list(self.security_groups))

    def _build_components(self) -> None:
        """One Image Builder component per component of the image."""
        self.component_resources: dict[str, imagebuilder.CfnComponent] = {}
        for component in self.components:
            self.component_resources[component.name] = imagebuilder.CfnComponent(
                self,
                f"Component-{component.name}",
                name=f"{self.image_name}-{component.name}",
                platform="Linux",
                version=component.version,
                data=component.document_yaml(),
                description=component.description,
                change_description=f"document sha256 {component.digest[:16]}",
                supported_os_versions=["Amazon Linux 2023"],
            )

    def _build_pipeline(self, props: _ImageProps) -> None:
        """The build and pipeline log groups and the image pipeline (schedule, image tests)."""
        self.image_log_group: logs.LogGroup = encrypted_log_group(  # KMS, as every library log group
            self,
            "ImageLogs",
            log_group_name=f"/aws/imagebuilder/{self.image_name}",
            retention=props.log_retention,
            removal_policy=props.log_removal_policy,
        )
        self.pipeline_log_group: logs.LogGroup = encrypted_log_group(
            self,
            "PipelineLogs",
            log_group_name=f"/aws/imagebuilder/pipeline/{self.image_name}",
            retention=props.log_retention,
            removal_policy=props.log_removal_policy,
        )
        self.pipeline: imagebuilder.CfnImagePipeline = imagebuilder.CfnImagePipeline(
            self,
            "Resource",
            name=self.image_name,
            description=f"fmconstructs GPU node image for {', '.join(s.instance_type for s in self.instance_specs)}"[
                :1024
            ],
            image_recipe_arn=self.recipe.attr_arn,
            infrastructure_configuration_arn=self.infrastructure_configuration.attr_arn,
            distribution_configuration_arn=self.distribution_configuration.attr_arn,
            image_tests_configuration=imagebuilder.CfnImagePipeline.ImageTestsConfigurationProperty(
                image_tests_enabled=True, timeout_minutes=IMAGE_TESTS_TIMEOUT_MINUTES
            ),
            enhanced_image_metadata_enabled=True,
            schedule=None
            if self.schedule.is_manual
            else imagebuilder.CfnImagePipeline.ScheduleProperty(
                schedule_expression=self.schedule.expression,
                pipeline_execution_start_condition=self.schedule.start_condition.value,
                timezone=self.schedule.timezone,
            ),
            status="ENABLED",
            logging_configuration=imagebuilder.CfnImagePipeline.PipelineLoggingConfigurationProperty(
                image_log_group_name=self.image_log_group.log_group_name,
                pipeline_log_group_name=self.pipeline_log_group.log_group_name,
            ),
        )

    # --- properties ------------------------------------------------------------------------------------------------

    @property
    def pipeline_arn(self) -> str:
        return str(self.pipeline.attr_arn)

    @property
    def recipe_arn(self) -> str:
        return str(self.recipe.attr_arn)

    @property
    def start_pipeline_command(self) -> str:
        """The AWS CLI command that starts a build (a manual trigger)."""
        return f"aws imagebuilder start-image-pipeline-execution --image-pipeline-arn {self.pipeline_arn}"

    @property
    def installs_pcs(self) -> bool:
        return bool(self.slurm_versions)

    def grant_start_pipeline(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` start builds (``imagebuilder:StartImagePipelineExecution`` on this pipeline)."""
        return iam.Grant.add_to_principal(
            grantee=grantee, actions=["imagebuilder:StartImagePipelineExecution"], resource_arns=[self.pipeline_arn]
        )

    # --- helpers ---------------------------------------------------------------------------------------------------

    def _image_name(self, given: str | None) -> str:
        if given is None:
            return Names.unique_resource_name(self, max_length=64, separator="-").lower()
        checked = check_str(
            "image_name",
            given,
            pattern=_IMAGE_NAME,
            allowed="3-64 letters, digits, '-' or '_' (no leading or trailing '-' or '_')",
        )
        if is_token(checked):
            raise FmValidationError("image_name", checked, "a name known at synth time (it names several resources)")
        return str(checked)

    def _parameter_name(self, given: str | None) -> str:
        if given is None:
            return f"/imagebuilder/fmconstructs/{self.image_name}"
        checked = check_str(
            "ssm_parameter_name",
            given,
            pattern=_SSM_PARAMETER,
            allowed="an SSM parameter name under /imagebuilder/ (the only prefix Image Builder's service-linked role "
            "may write), such as '/imagebuilder/fmconstructs/pcs/x86_64'",
        )
        return str(checked)

    def _subnet(self, vpc: ec2.IVpc, subnet: ec2.ISubnet | None) -> ec2.ISubnet:
        if subnet is not None:
            for public in vpc.public_subnets:
                same_id = known(subnet.subnet_id) and subnet.subnet_id == public.subnet_id
                if same_id or subnet.node.path == public.node.path:
                    raise FmValidationError(
                        "subnet", subnet.subnet_id, "a private subnet (build instances get no public IP address)"
                    )
            return subnet
        # vpc.private_subnets are the subnets with egress (PRIVATE_WITH_EGRESS); isolated ones are separate.
        private = vpc.private_subnets
        if not private:
            raise FmValidationError(
                "vpc", vpc.vpc_id, "a VPC with a private subnet with egress (or pass subnet=) for the installers"
            )
        return private[0]

    def _builtin_components(
        self, *, pcs_agent_version: str, slurm_installer_version: str, efa_installer_version: str
    ) -> list[ImageComponent]:
        components = [efa_component(efa_installer_version), lustre_client_component(), nvidia_driver_component()]
        # NVSwitch HGX systems (every x86_64 type in the catalog: P5, P5e, P5en, P6-B200, P6-B300) need Fabric Manager;
        # UltraServer types (p6e-gb200) need IMEX (PCS User Guide capacity-blocks-nvidia-imex).
        if self.architecture is CpuArchitecture.X86_64:
            components.append(fabric_manager_component())
        if any(spec.ultraserver_types for spec in self.instance_specs):
            components.append(imex_component())
        components.append(dcgm_component())
        # nccl-tests for the scheduled fabric check (fmconstructs.health.nccl), built against the image's EFA/CUDA.
        components.append(nccl_tests_component())
        if self.slurm_versions:
            components.append(pcs_agent_component(pcs_agent_version))
            components.extend(slurm_component(v, slurm_installer_version) for v in self.slurm_versions)
            components.append(slurm_exporter_component())  # used on the login node (ExporterSource.IMAGE)
        components.append(metrics_agents_component())
        if self.validate_on_gpu:
            components.append(gpu_smoke_test_component())
        return components

    def _new_key(self, removal_policy: RemovalPolicy) -> kms.Key:
        stack = Stack.of(self)
        key = kms.Key(
            self,
            "Key",
            enable_key_rotation=True,
            description=f"fmconstructs: encrypts the EBS snapshots of the {self.image_name} AMIs",
            removal_policy=removal_policy,
        )
        # Instances are launched from the AMI by service-linked roles (Image Builder's for build and test, PCS, EC2
        # Auto Scaling, EKS node groups), whose AWS-managed policies cannot name this key. As in the key policy of the
        # AWS managed key aws/ebs (UNCONFIRMED source: that policy as `aws kms get-key-policy` shows it), any principal
        # of this account may use the key through EC2; here only service-linked roles, matched by aws:PrincipalArn
        # (a key policy cannot name a role that may not exist yet).
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowServiceLinkedRolesThroughEc2",
                principals=[iam.AnyPrincipal()],
                actions=[
                    "kms:Encrypt",
                    "kms:Decrypt",
                    "kms:ReEncrypt*",
                    "kms:GenerateDataKey*",
                    "kms:CreateGrant",
                    "kms:DescribeKey",
                ],
                resources=["*"],  # in a key policy, "*" is this key
                conditions={
                    "StringEquals": {
                        "kms:CallerAccount": stack.account,
                        "kms:ViaService": f"ec2.{stack.region}.{stack.url_suffix}",
                    },
                    "ArnLike": {
                        "aws:PrincipalArn": f"arn:{stack.partition}:iam::{stack.account}:role/aws-service-role/*"
                    },
                },
            )
        )
        return key


def _check_component(parameter: str, value: object) -> ImageComponent:
    if not isinstance(value, ImageComponent):
        raise FmTypeError(parameter, value, "an ImageComponent")
    return value
