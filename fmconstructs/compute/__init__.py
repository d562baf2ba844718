"""GPU compute: the launch template, the self-managed fleet and node-side user data."""

from .fleet import GpuAutoScalingGroup
from .launch_template import GpuLaunchTemplate
from .user_data import nvme_raid_commands, nvme_raid_script

__all__ = ["GpuAutoScalingGroup", "GpuLaunchTemplate", "nvme_raid_commands", "nvme_raid_script"]
