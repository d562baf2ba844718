"""GPU compute: the launch template, the self-managed fleet, node-side user data and the NVIDIA IMEX Slurm prolog.

The node-side set-up of a launch template is a :class:`~fmconstructs.bootstrap.NodeBootstrap`
(``GpuLaunchTemplate.bootstrap``), delivered inline (default) or as an S3 asset (``bootstrap_delivery``).
"""

from ..bootstrap import BootstrapDelivery, NodeBootstrap
from .fleet import GpuAutoScalingGroup
from .imex import ImexPrologSpec, render_imex_prolog
from .launch_template import GpuLaunchTemplate
from .user_data import nvme_raid_commands, nvme_raid_script

__all__ = [
    "BootstrapDelivery",
    "GpuAutoScalingGroup",
    "GpuLaunchTemplate",
    "ImexPrologSpec",
    "NodeBootstrap",
    "nvme_raid_commands",
    "nvme_raid_script",
    "render_imex_prolog",
]
