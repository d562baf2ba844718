"""Linter acknowledgements of the compute constructs (see :mod:`fmconstructs._nag`), each with its reason."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _nag

if TYPE_CHECKING:
    from .launch_template import GpuLaunchTemplate

# cfn-lint E3628 checks LaunchTemplateData.InstanceType against its per-region instance-type data; cfn-lint 1.58.0
# (this repository's pin) has no p6e-gb200.36xlarge in us-east-1 (seen: E3628 on a GB200 launch template).
_ULTRASERVER_ONLY_REASON = (
    "cfn-lint's instance-type data has no {type} (E3628 fires with cfn-lint 1.58.0 in us-east-1); EC2 launches the "
    "type in UltraServers through UltraServer Capacity Blocks (EC2 User Guide capacity-blocks-launch)"
)


def acknowledge_launch_template(template: GpuLaunchTemplate) -> None:
    """cfn-lint E3628 for an instance type the catalog knows only in UltraServers (e.g. p6e-gb200.36xlarge)."""
    spec = template.instance_spec
    if spec.ultraserver_types:
        reason = _ULTRASERVER_ONLY_REASON.format(type=spec.instance_type)
        _nag.acknowledge_cfn_lint(template.resource, "E3628", reason)
