"""AWS Parallel Computing Service (PCS): Slurm clusters of GPU nodes with EFA, Capacity Blocks and FSx for Lustre.

``slurm`` (versions, sizes, purchase options, validated custom settings) -> ``ami`` (AMI id or SSM parameter) ->
``iam`` (the ``/aws-pcs/`` instance profile) -> ``user_data`` (MIME archive, IMEX prolog) -> ``cluster`` ->
``node_group`` (GPU and login node groups; ``instance_health``: PCS's own instance health checks and node lifecycle
actions, applied by ``instance_health_resource``) -> ``queue``. ``identifiers`` checks PCS ids and ARNs given as
strings.

Exports resolve lazily (PEP 562, :mod:`fmconstructs._lazy`): ``slurm`` and ``identifiers`` import no aws_cdk, so the
``fmc`` command reads the controller-size table without Node.js.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .ami import PcsAmi, sample_ami_name
    from .cluster import PcsCluster
    from .iam import PCS_IAM_PATH, PcsInstanceProfile
    from .identifiers import PcsResourceType, check_pcs_arn, check_pcs_id
    from .instance_health import (
        PcsDeepHealthProfile,
        PcsHealthMonitoring,
        PcsInstanceHealthChecks,
        PcsLifecycleOnError,
        PcsLifecycleScript,
        PcsLifecycleScriptCaching,
        PcsLifecycleScriptExecution,
        PcsNodeLifecycleActions,
        PcsRepairAction,
    )
    from .node_group import (
        NODE_GROUP_ID_TAG,
        FileSystemMount,
        PcsGpuNodeGroup,
        PcsGpuNodeGroupOptions,
        PcsLoginNodeGroup,
        PcsLoginNodeGroupOptions,
        purchase_option_for,
    )
    from .queue import PcsQueue
    from .slurm import (
        CONTROLLER_SIZE_LIMITS,
        DEFAULT_SLURM_VERSION,
        AccountingMode,
        ClusterSetting,
        ControllerLimits,
        ControllerSize,
        NodeGroupSetting,
        PurchaseOption,
        QueueSetting,
        SlurmVersion,
    )
    from .user_data import IMEX_PROLOG_PATH, IMEX_PROLOG_SCRIPT, pcs_mime_user_data

__all__ = [
    "CONTROLLER_SIZE_LIMITS",
    "DEFAULT_SLURM_VERSION",
    "IMEX_PROLOG_PATH",
    "IMEX_PROLOG_SCRIPT",
    "NODE_GROUP_ID_TAG",
    "PCS_IAM_PATH",
    "AccountingMode",
    "ClusterSetting",
    "ControllerLimits",
    "ControllerSize",
    "FileSystemMount",
    "NodeGroupSetting",
    "PcsAmi",
    "PcsCluster",
    "PcsDeepHealthProfile",
    "PcsGpuNodeGroup",
    "PcsGpuNodeGroupOptions",
    "PcsHealthMonitoring",
    "PcsInstanceHealthChecks",
    "PcsInstanceProfile",
    "PcsLifecycleOnError",
    "PcsLifecycleScript",
    "PcsLifecycleScriptCaching",
    "PcsLifecycleScriptExecution",
    "PcsLoginNodeGroup",
    "PcsLoginNodeGroupOptions",
    "PcsNodeLifecycleActions",
    "PcsQueue",
    "PcsRepairAction",
    "PcsResourceType",
    "PurchaseOption",
    "QueueSetting",
    "SlurmVersion",
    "check_pcs_arn",
    "check_pcs_id",
    "pcs_mime_user_data",
    "purchase_option_for",
    "sample_ami_name",
]

_EXPORTS: dict[str, tuple[str, ...]] = {
    ".ami": ("PcsAmi", "sample_ami_name"),
    ".cluster": ("PcsCluster",),
    ".iam": ("PCS_IAM_PATH", "PcsInstanceProfile"),
    ".identifiers": ("PcsResourceType", "check_pcs_arn", "check_pcs_id"),
    ".instance_health": (
        "PcsDeepHealthProfile",
        "PcsHealthMonitoring",
        "PcsInstanceHealthChecks",
        "PcsLifecycleOnError",
        "PcsLifecycleScript",
        "PcsLifecycleScriptCaching",
        "PcsLifecycleScriptExecution",
        "PcsNodeLifecycleActions",
        "PcsRepairAction",
    ),
    ".node_group": (
        "NODE_GROUP_ID_TAG",
        "FileSystemMount",
        "PcsGpuNodeGroup",
        "PcsGpuNodeGroupOptions",
        "PcsLoginNodeGroup",
        "PcsLoginNodeGroupOptions",
        "purchase_option_for",
    ),
    ".queue": ("PcsQueue",),
    ".slurm": (
        "CONTROLLER_SIZE_LIMITS",
        "DEFAULT_SLURM_VERSION",
        "AccountingMode",
        "ClusterSetting",
        "ControllerLimits",
        "ControllerSize",
        "NodeGroupSetting",
        "PurchaseOption",
        "QueueSetting",
        "SlurmVersion",
    ),
    ".user_data": ("IMEX_PROLOG_PATH", "IMEX_PROLOG_SCRIPT", "pcs_mime_user_data"),
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
