"""AWS Parallel Computing Service (PCS): Slurm clusters of GPU nodes with EFA, Capacity Blocks and FSx for Lustre.

``slurm`` (versions, sizes, purchase options, validated custom settings) -> ``ami`` (AMI id or SSM parameter) ->
``iam`` (the ``/aws-pcs/`` instance profile) -> ``user_data`` (MIME archive, IMEX prolog) -> ``cluster`` ->
``node_group`` (GPU and login node groups) -> ``queue``.
"""

from .ami import PcsAmi, sample_ami_name
from .cluster import PcsCluster
from .iam import PCS_IAM_PATH, PcsInstanceProfile
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
    DEFAULT_SLURM_VERSION,
    AccountingMode,
    ClusterSetting,
    ControllerSize,
    NodeGroupSetting,
    PurchaseOption,
    QueueSetting,
    SlurmVersion,
)
from .user_data import IMEX_PROLOG_PATH, IMEX_PROLOG_SCRIPT, pcs_mime_user_data

__all__ = [
    "DEFAULT_SLURM_VERSION",
    "IMEX_PROLOG_PATH",
    "IMEX_PROLOG_SCRIPT",
    "NODE_GROUP_ID_TAG",
    "PCS_IAM_PATH",
    "AccountingMode",
    "ClusterSetting",
    "ControllerSize",
    "FileSystemMount",
    "NodeGroupSetting",
    "PcsAmi",
    "PcsCluster",
    "PcsGpuNodeGroup",
    "PcsGpuNodeGroupOptions",
    "PcsInstanceProfile",
    "PcsLoginNodeGroup",
    "PcsLoginNodeGroupOptions",
    "PcsQueue",
    "PurchaseOption",
    "QueueSetting",
    "SlurmVersion",
    "pcs_mime_user_data",
    "purchase_option_for",
    "sample_ami_name",
]
