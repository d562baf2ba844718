"""Value objects of :mod:`fmconstructs.hyperpod`: instance groups, capacity, health checks, orchestrators.

Every field and rule cites the SageMaker API (botocore ``sagemaker`` service model, ``CreateCluster`` /
``ClusterInstanceGroupSpecification``) or CloudFormation ``AWS::SageMaker::Cluster``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .._validate import check_count, check_enum, check_str, check_str_sequence
from ..catalog import CATALOG, InstanceSpec
from ..errors import FmTypeError, FmValidationError, is_token
from ..storage.client import lustre_efa_interfaces
from . import rules
from .instance_group_options import (
    CapacityType,
    HyperPodKubernetesConfig,
    HyperPodScheduledUpdate,
    check_group_option_types,
    check_image_id,
    check_min_nodes,
)

#: ``ClusterInstanceGroupName`` / ``ClusterName`` (botocore sagemaker model): 1-63 characters, pattern
#: ``[a-zA-Z0-9](-*[a-zA-Z0-9])*``.
NAME_PATTERN = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9])*")
NAME_ALLOWED = "1-63 letters, digits or '-', starting and ending with a letter or digit (SageMaker ClusterName pattern)"
#: ``TrainingPlanArn`` (botocore sagemaker model): 50-2048 characters.
TRAINING_PLAN_ARN = re.compile(r"arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:training-plan/.*")
#: ``ClusterInstanceCount`` (botocore sagemaker model): 0-6758.
MAX_INSTANCE_COUNT = 6758
#: ``ClusterEbsVolumeSizeInGB`` (botocore sagemaker model): 1-16384.
MAX_EBS_VOLUME_GB = 16384
#: ``ClusterInstanceStorageConfigs`` (botocore sagemaker model): at most 4.
MAX_STORAGE_CONFIGS = 4
#: ``CreateCluster.InstanceGroups``: botocore ``sagemaker`` 2017-07-24 model ``ClusterInstanceGroupSpecifications``
#: ``"max": 100`` (this venv's model; the SageMaker API reference's 2024 text said "Maximum number of 5 items"). A
#: larger fleet is more than one cluster (issue 30: a 128-group HyperPod app is two clusters).
MAX_INSTANCE_GROUPS = 100

#: ``ClusterInstanceType`` enum of the botocore ``sagemaker`` service model shipped with this venv (2026): the types
#: HyperPod accepts. Families: p4d, p4de, p5, p5e, p5en, p6-b200, p6-b300, p6e-gb200, g4dn, g5, g6, g6e, g7, g7e,
#: gr6, trn1, trn1n, trn2 and CPU families.
_SIZES_CPU = ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge")


def _botocore_types() -> frozenset[str]:
    types = {
        "p4d.24xlarge",
        "p4de.24xlarge",
        "p5.48xlarge",
        "p5.4xlarge",
        "p6e-gb200.36xlarge",
        "trn1.32xlarge",
        "trn1n.32xlarge",
        "p5e.48xlarge",
        "p5en.48xlarge",
        "p6-b200.48xlarge",
        "p6-b300.48xlarge",
        "trn2.3xlarge",
        "trn2.48xlarge",
        "gr6.4xlarge",
        "gr6.8xlarge",
        "r5d.16xlarge",
        "c8a.16xlarge",
        "m8a.16xlarge",
        "t3.medium",
        "t3.large",
        "t3.xlarge",
        "t3.2xlarge",
    }
    types |= {f"g5.{s}" for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge")}
    types.add("g5.48xlarge")
    for family in ("g6", "g6e"):
        types |= {f"{family}.{s}" for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge")}
        types |= {f"{family}.24xlarge", f"{family}.48xlarge"}
    for family in ("g7", "g7e"):
        types |= {f"{family}.{s}" for s in ("2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge")}
    types |= {f"g4dn.{s}" for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge")}
    types |= {f"c5.{s}" for s in ("large", "xlarge", "2xlarge", "4xlarge", "9xlarge", "12xlarge", "18xlarge")}
    types.add("c5.24xlarge")
    types |= {f"c5n.{s}" for s in ("large", "2xlarge", "4xlarge", "9xlarge", "18xlarge")}
    types |= {f"m5.{s}" for s in _SIZES_CPU}
    for family in ("c6i", "m6i", "r6i"):
        types |= {f"{family}.{s}" for s in (*_SIZES_CPU, "32xlarge")}
    types |= {f"i3en.{s}" for s in ("large", "xlarge", "2xlarge", "3xlarge", "6xlarge", "12xlarge", "24xlarge")}
    for family in ("m7i", "r7i"):
        types |= {f"{family}.{s}" for s in (*_SIZES_CPU, "48xlarge")}
    for family in ("c6g", "c7g", "m6g", "m7g"):
        types |= {f"{family}.{s}" for s in ("medium", *_SIZES_CPU[:-1])}
    for family in ("c8g", "m8g"):
        types |= {f"{family}.{s}" for s in ("medium", *_SIZES_CPU, "48xlarge")}
    for family in ("c6a", "m6a"):
        types |= {f"{family}.{s}" for s in (*_SIZES_CPU, "32xlarge", "48xlarge")}
    return frozenset(f"ml.{t}" for t in types)


HYPERPOD_INSTANCE_TYPES: frozenset[str] = _botocore_types()
"""Every ``ClusterInstanceType`` (``ml.`` names) of the botocore ``sagemaker`` model (tests compare with it)."""

#: Deep health checks run on accelerated instances only: SageMaker Developer Guide
#: "sagemaker-hyperpod-eks-resiliency-deep-health-checks" (instance type compatibility: GPU, Trainium) and
#: "sagemaker-hyperpod-resiliency-slurm-deep-health-checks" (InstanceStress, InstanceConnectivity).
_ACCELERATED_FAMILIES = (
    "p4d",
    "p4de",
    "p5",
    "p5e",
    "p5en",
    "p6-b200",
    "p6-b300",
    "p6e-gb200",
    "g4dn",
    "g5",
    "g6",
    "g6e",
    "g7",
    "g7e",
    "gr6",
    "trn1",
    "trn1n",
    "trn2",
)


def is_accelerated(hyperpod_type: str) -> bool:
    """Whether ``ml.<family>.<size>`` has GPUs or Trainium chips (deep health checks are supported)."""
    family = hyperpod_type.removeprefix("ml.").split(".", 1)[0]
    return family in _ACCELERATED_FAMILIES


def is_gpu(hyperpod_type: str) -> bool:
    """Whether ``ml.<family>.<size>`` has NVIDIA GPUs (accelerated and not Trainium): the groups that get
    fmconstructs' node collectors (dcgm-exporter needs NVIDIA GPUs)."""
    family = hyperpod_type.removeprefix("ml.").split(".", 1)[0]
    return is_accelerated(hyperpod_type) and not family.startswith("trn")


class DeepHealthCheck(str, Enum):
    """``OnStartDeepHealthChecks`` values (botocore ``DeepHealthCheckType``; CloudFormation
    ``ClusterInstanceGroup.OnStartDeepHealthChecks``)."""

    INSTANCE_STRESS = "InstanceStress"
    INSTANCE_CONNECTIVITY = "InstanceConnectivity"


#: The default on accelerated groups: both documented on-start checks.
DEFAULT_DEEP_HEALTH_CHECKS = (DeepHealthCheck.INSTANCE_STRESS, DeepHealthCheck.INSTANCE_CONNECTIVITY)


class NodeRecovery(str, Enum):
    """``CreateCluster.NodeRecovery`` (botocore ``ClusterNodeRecovery``)."""

    AUTOMATIC = "Automatic"
    NONE = "None"


class SlurmConfiguration(str, Enum):
    """Who configures and starts Slurm on a HyperPod cluster.

    - ``API``: HyperPod itself (API-driven Slurm configuration): ``Orchestrator.Slurm`` and each instance group's
      ``SlurmConfig`` (node type, partition) in ``CreateCluster``; no ``provisioning_parameters.json`` in S3 (SageMaker
      Developer Guide "sagemaker-hyperpod-slurm-api-config-migration": node types, partition assignments and FSx
      mounting go "directly in the CreateCluster and UpdateCluster API payloads, removing the need to manage a separate
      configuration file in Amazon S3"; its Step 4 is "Remove provisioning_parameters.json from Amazon S3"). The
      lifecycle entry point is ``OnInitComplete`` (botocore ``ClusterLifeCycleConfig.OnInitComplete``: "runs on the
      node after the AMI-based initialization is complete"; awsome-distributed-training 1.architectures/
      5.sagemaker-hyperpod/Extensions/observability/README.md: with AMI-based configuration "HyperPod sets up Slurm and
      Docker automatically, then runs your extension script").
    - ``LIFECYCLE_SCRIPTS``: HyperPod's published Slurm lifecycle scripts (awsome-distributed-training
      ``LifecycleScripts/base-config``, passed as ``base_config_dir``) configure and start Slurm from
      ``provisioning_parameters.json``; ``OnCreate``; no ``Orchestrator`` property.
    """

    API = "api"
    LIFECYCLE_SCRIPTS = "lifecycle-scripts"


class SlurmConfigStrategy(str, Enum):
    """``Orchestrator.Slurm.SlurmConfigStrategy`` (botocore ``ClusterSlurmConfigStrategy``: Overwrite, Managed,
    Merge; "the strategy for managing partitions for the Slurm configuration")."""

    MANAGED = "Managed"
    OVERWRITE = "Overwrite"
    MERGE = "Merge"


#: The default strategy: ``Managed``, as in awsome-distributed-training 1.architectures/5.sagemaker-hyperpod/
#: Extensions/observability/README.md's CreateCluster example (``"Slurm": {"SlurmConfigStrategy": "Managed"}``).
#: The API marks the field optional and documents no default (UNCONFIRMED what HyperPod uses when it is omitted).
DEFAULT_SLURM_CONFIG_STRATEGY = SlurmConfigStrategy.MANAGED


class SlurmNodeType(str, Enum):
    """``InstanceGroups[].SlurmConfig.NodeType`` (botocore ``ClusterSlurmNodeType`` enum: Controller, Login, Compute;
    the API reference's prose says "Worker" for the last, its valid values say ``Compute``)."""

    CONTROLLER = "Controller"
    LOGIN = "Login"
    COMPUTE = "Compute"


class HyperPodLustreMount(str, Enum):
    """Who mounts the cluster's FSx for Lustre file system with ``SlurmConfiguration.API``.

    - ``NODE_BOOTSTRAP``: fmconstructs' lifecycle script, with the storage module's mount steps
      (:meth:`~fmconstructs.storage.LustreFileSystemBase.mount_commands`: Lustre client, LNet over EFA on EFA-enabled
      file systems, an fstab entry that survives reboots) on every node. It runs from ``OnInitComplete``, after
      HyperPod started Slurm; whether HyperPod keeps a new or replaced node out of scheduling until
      ``OnInitComplete`` finishes is UNCONFIRMED (choose ``HYPERPOD`` if jobs must never see a node without
      ``/fsx``).
    - ``HYPERPOD``: HyperPod, from ``InstanceStorageConfigs[].FsxLustreConfig`` (``DnsName``, ``MountName``,
      ``MountPath``) on every group (botocore ``ClusterFsxLustreConfig``: "attaching an Amazon FSx for Lustre file
      system to the instances in the SageMaker HyperPod cluster instance group"). Whether HyperPod sets up LNet over
      EFA for an EFA-enabled file system is UNCONFIRMED.
    """

    NODE_BOOTSTRAP = "node-bootstrap"
    HYPERPOD = "hyperpod"


#: ``ClusterSlurmConfig.PartitionNames`` items (botocore ``ClusterPartitionName``): 0-1024 characters, pattern
#: ``[a-zA-Z0-9](-*[a-zA-Z0-9])*``; at most one partition per group (``ClusterPartitionNames`` max 1).
API_PARTITION_PATTERN = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9])*")
API_PARTITION_MAX_LENGTH = 1024
API_PARTITION_ALLOWED = (
    "letters, digits or '-', starting and ending with a letter or digit (SageMaker ClusterPartitionName pattern "
    "[a-zA-Z0-9](-*[a-zA-Z0-9])*, used with SlurmConfiguration.API)"
)


@dataclass(frozen=True)
class HyperPodCapacity:
    """Where an instance group's instances come from: On-Demand (default) or a SageMaker training plan
    (``ClusterInstanceGroup.TrainingPlanArn``), or Spot (:meth:`spot`: ``CapacityRequirements.Spot``).

    ``capacity_type``: ``ClusterInstanceGroup.CapacityRequirements`` (:class:`~fmconstructs.hyperpod.
    instance_group_options.CapacityType`); None (default) leaves it out (HyperPod's default, On-Demand or the
    training plan). ``CapacityType.SPOT`` is refused with a training plan: a plan's instances are reserved capacity,
    not Spot.
    """

    training_plan_arn: str | None = None
    training_plan_instance_type: str | None = None
    training_plan_instance_count: Any = None
    capacity_type: CapacityType | None = None

    @classmethod
    def on_demand(cls) -> HyperPodCapacity:
        return cls()

    @classmethod
    def spot(cls) -> HyperPodCapacity:
        """Spot Instances (``CapacityRequirements: {Spot: {}}``; SageMaker Developer Guide "sagemaker-hyperpod-spot":
        Spot on HyperPod works with continuous provisioning by default, and with Karpenter-based autoscaling)."""
        return cls(capacity_type=CapacityType.SPOT)

    @classmethod
    def training_plan(
        cls, arn: str, *, instance_type: str | None = None, instance_count: int | float | None = None
    ) -> HyperPodCapacity:
        """A SageMaker training plan. ``instance_type``/``instance_count``: what the plan reserved, when you know it
        (checked against the group at construction; the ARN alone does not say)."""
        check_str(
            "arn",
            arn,
            pattern=TRAINING_PLAN_ARN,
            min_length=50,
            max_length=2048,
            allowed="a training plan ARN (arn:aws:sagemaker:<region>:<account>:training-plan/<name>)",
        )
        plan_type = None if instance_type is None else hyperpod_type("instance_type", instance_type)
        count = None if instance_count is None else check_count("instance_count", instance_count, minimum=1)
        return cls(arn, plan_type, count)

    def __post_init__(self) -> None:
        """The direct constructor refuses what :meth:`training_plan` refuses (issue 18 section 5), and a plan's type
        or count without its ARN."""
        if self.capacity_type is not None:
            check_enum("capacity_type", self.capacity_type, CapacityType)
            if self.capacity_type is CapacityType.SPOT and self.training_plan_arn is not None:
                raise FmValidationError(
                    "capacity_type", "Spot", "None or CapacityType.ON_DEMAND with a training plan (reserved capacity)"
                )
        if self.training_plan_arn is None:
            for name in ("training_plan_instance_type", "training_plan_instance_count"):
                if getattr(self, name) is not None:
                    raise FmValidationError(
                        name, getattr(self, name), "None without training_plan_arn (On-Demand capacity)"
                    )
            return
        check_str(
            "training_plan_arn",
            self.training_plan_arn,
            pattern=TRAINING_PLAN_ARN,
            min_length=50,
            max_length=2048,
            allowed="a training plan ARN (arn:aws:sagemaker:<region>:<account>:training-plan/<name>)",
        )
        if self.training_plan_instance_type is not None:
            plan_type = hyperpod_type("training_plan_instance_type", self.training_plan_instance_type)
            object.__setattr__(self, "training_plan_instance_type", plan_type)
        if self.training_plan_instance_count is not None:
            count = check_count("training_plan_instance_count", self.training_plan_instance_count, minimum=1)
            object.__setattr__(self, "training_plan_instance_count", count)

    @property
    def is_training_plan(self) -> bool:
        return self.training_plan_arn is not None


def hyperpod_type(parameter: str, value: object) -> str:
    """``p5.48xlarge`` or ``ml.p5.48xlarge`` -> ``ml.p5.48xlarge``, refused unless HyperPod accepts it."""
    check_str(parameter, value)
    assert isinstance(value, str)
    if is_token(value):
        raise FmValidationError(parameter, value, "an instance type known at synthesis")
    name = value if value.startswith("ml.") else f"ml.{value}"
    if name not in HYPERPOD_INSTANCE_TYPES:
        raise FmValidationError(
            parameter,
            value,
            "an instance type SageMaker HyperPod supports (botocore ClusterInstanceType), e.g. "
            "ml.p5.48xlarge, ml.p5en.48xlarge, ml.m5.2xlarge",
        )
    return name


@dataclass(frozen=True)
class HyperPodInstanceGroup:
    """One ``ClusterInstanceGroup``.

    :param name: ``InstanceGroupName`` (1-63, ``[a-zA-Z0-9](-*[a-zA-Z0-9])*``).
    :param instance_type: an EC2 name (``p5.48xlarge``) or HyperPod name (``ml.p5.48xlarge``); catalog GPU types
        resolve to :attr:`instance_spec`.
    :param nodes: ``InstanceCount`` (0-6758; a number token is accepted).
    :param threads_per_core: ``ThreadsPerCore`` 1 or 2. Default: not set (HyperPod's default).
    :param extra_ebs_gib: ``InstanceStorageConfigs[].EbsVolumeConfig.VolumeSizeInGB`` (1-16384), mounted by HyperPod
        at ``/opt/sagemaker``. Default: none.
    :param deep_health_checks: ``OnStartDeepHealthChecks``. Default (None): both checks on GPU/Trainium groups, none
        elsewhere; ``()`` turns them off.
    :param capacity: :class:`HyperPodCapacity`. Default: On-Demand.
    :param partition_name: Slurm partition of a worker (compute) group: ``SlurmConfig.PartitionNames`` with
        ``SlurmConfiguration.API`` (letters, digits and inner '-'), ``worker_groups[].partition_name`` of the
        provisioning parameters with ``LIFECYCLE_SCRIPTS``. Default: ``name``.
    :param efa_interfaces_for_lustre: EFA interfaces each node of this group uses for LNet when fmconstructs configures
        LNet over EFA for the cluster's EFA-enabled ``file_system`` (``SlurmConfiguration.API`` with
        ``HyperPodLustreMount.NODE_BOOTSTRAP``, and EKS orchestration); 0 keeps this group's Lustre traffic on TCP
        (and off the file system's 1,024 EFA connection budget). At most the type's EFA interfaces. Default (None):
        the type's FSx default (:func:`~fmconstructs.storage.lustre_efa_interfaces`: 8 on p5, p5e, p5en, p6-b200,
        p6e-gb200; 16 on p6-b300).
    :param min_nodes: ``MinInstanceCount`` (0-6758, at most ``nodes``): the group becomes InService once this many
        instances run, else it rolls back after 3 hours (botocore ``MinInstanceCount``). Default: not set.
    :param kubernetes: :class:`~fmconstructs.hyperpod.instance_group_options.HyperPodKubernetesConfig` (EKS only):
        ``KubernetesConfig`` labels and taints HyperPod keeps on the group's nodes. Default: none.
    :param scheduled_update: :class:`~fmconstructs.hyperpod.instance_group_options.HyperPodScheduledUpdate`:
        ``ScheduledUpdateConfig`` (a cron schedule for AMI updates, rolling batches, rollback alarms). Default: none.
    :param image_id: ``ImageId``: an unencrypted AMI of this account, ``default``, or a token. Default: not set
        (HyperPod's AMI).
    """

    name: str
    instance_type: str
    nodes: Any
    threads_per_core: int | None = None
    extra_ebs_gib: Any = None
    deep_health_checks: Sequence[DeepHealthCheck] | None = None
    capacity: HyperPodCapacity = HyperPodCapacity()
    partition_name: str | None = None
    efa_interfaces_for_lustre: int | None = None
    min_nodes: Any = None
    kubernetes: HyperPodKubernetesConfig | None = None
    scheduled_update: HyperPodScheduledUpdate | None = None
    image_id: str | None = None

    def __post_init__(self) -> None:
        check_str("name", self.name, pattern=NAME_PATTERN, min_length=1, max_length=63, allowed=NAME_ALLOWED)
        if is_token(self.name):
            raise FmValidationError("name", self.name, "a group name known at synthesis")
        object.__setattr__(self, "instance_type", hyperpod_type("instance_type", self.instance_type))
        check_count("nodes", self.nodes, minimum=0, maximum=MAX_INSTANCE_COUNT)
        if self.threads_per_core is not None:
            check_count("threads_per_core", self.threads_per_core, minimum=1, maximum=2)
        if self.extra_ebs_gib is not None:
            check_count("extra_ebs_gib", self.extra_ebs_gib, minimum=1, maximum=MAX_EBS_VOLUME_GB)
        if self.deep_health_checks is not None:
            checks = check_str_sequence(
                "deep_health_checks",
                self.deep_health_checks,
                item=lambda p, v: check_enum(p, v, DeepHealthCheck),
            )
            if len(set(checks)) != len(checks):
                raise FmValidationError("deep_health_checks", list(checks), "each check at most once")
            rules.deep_health_checks_need_an_accelerated_type(
                checks, self.instance_type, is_accelerated(self.instance_type)
            )
            object.__setattr__(self, "deep_health_checks", checks)
        if not isinstance(self.capacity, HyperPodCapacity):
            raise FmTypeError(
                "capacity", self.capacity, "a HyperPodCapacity (HyperPodCapacity.on_demand() or .training_plan(arn))"
            )
        self._check_training_plan()
        if self.min_nodes is not None:
            check_min_nodes(self.min_nodes, self.nodes, MAX_INSTANCE_COUNT)
        check_group_option_types(self.kubernetes, self.scheduled_update)
        if self.image_id is not None:
            check_image_id("image_id", self.image_id)
        if self.partition_name is not None:
            check_str(
                "partition_name",
                self.partition_name,
                pattern=re.compile(r"[A-Za-z0-9_.-]{1,64}"),
                allowed="1-64 letters, digits, '_', '.' or '-' (a Slurm partition name)",
            )
        if self.efa_interfaces_for_lustre is not None:
            check_count("efa_interfaces_for_lustre", self.efa_interfaces_for_lustre, minimum=0)
            if is_token(self.efa_interfaces_for_lustre):
                raise FmValidationError(
                    "efa_interfaces_for_lustre", self.efa_interfaces_for_lustre, "a number known at synthesis"
                )
            # Refuses more than the type's EFA interfaces (the catalog's MaximumEfaInterfaces, else the storage
            # module's table for types the catalog does not hold).
            lustre_efa_interfaces(
                efa_enabled=True,
                instance_spec=self.instance_spec,
                instance_type=self.instance_type,
                efa_interfaces_for_lustre=self.efa_interfaces_for_lustre,
            )

    def _check_training_plan(self) -> None:
        plan = self.capacity
        rules.group_type_matches_the_training_plan(
            self.instance_type, plan.training_plan_instance_type, plan.training_plan_arn
        )
        rules.nodes_fit_the_training_plan(self.nodes, plan.training_plan_instance_count, plan.training_plan_arn)

    @property
    def instance_spec(self) -> InstanceSpec | None:
        """The catalog record of this type (GPU types the catalog holds), else None."""
        ec2_type = self.instance_type.removeprefix("ml.")
        return CATALOG.get(ec2_type) if ec2_type in CATALOG else None

    @property
    def accelerated(self) -> bool:
        return is_accelerated(self.instance_type)

    @property
    def gpu(self) -> bool:
        return is_gpu(self.instance_type)

    @property
    def effective_deep_health_checks(self) -> tuple[DeepHealthCheck, ...]:
        if self.deep_health_checks is None:
            return DEFAULT_DEEP_HEALTH_CHECKS if self.accelerated else ()
        return tuple(self.deep_health_checks)
