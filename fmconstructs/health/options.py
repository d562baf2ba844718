"""What a backend is told about node health: :class:`NodeHealthOptions`, one value object for PCS and ParallelCluster.

A backend takes ``node_health=NodeHealthOptions(...)`` and turns it into a :class:`~fmconstructs.health.NodeCheckSpec`
per instance type (:meth:`NodeHealthOptions.spec_for`) with the facts only it knows (the EFA interfaces its launch
layout attaches, the Lustre mount point). Where the service runs DCGM itself (PCS deep health checks, ParallelCluster
``HealthChecks/Gpu``), give ``dcgm_level=None`` so DCGM does not run twice. No aws_cdk import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from .._validate import check_bool
from .spec import CheckMode, CheckName, NodeCheckSpec
from .xid import DEFAULT_XID_POLICY, XidPolicy

__all__ = ["DEFAULT_PROLOG_BUDGET_SECONDS", "NodeHealthOptions"]

#: Per-check cap in the prolog (seconds), the :class:`NodeCheckSpec` default.
DEFAULT_PROLOG_BUDGET_SECONDS = 10
# Any catalog GPU type: the options are checked by building a spec with them (one set of rules, one message form).
_REFERENCE_TYPE = "p5.48xlarge"


@dataclass(frozen=True, kw_only=True)
class NodeHealthOptions:
    """Node-join checks for a backend's GPU nodes: the boot gate and the prolog checks.

    :param enabled: run the checks at all. Default True (``NodeHealthOptions(enabled=False)`` turns them off for one
        node group whose cluster has them on).
    :param dcgm_level: ``dcgmi diag -r`` level at boot (1-4), None: no DCGM at boot. Default 2 (NVIDIA: about two
        minutes; what ParallelCluster's GPU health check and PCS's MEDIUM deep health check run). Never in the prolog.
    :param prolog_checks: also run the lightweight checks (every check but DCGM) in a Slurm prolog before each job.
        Default True.
    :param budget_seconds: per-check budgets at boot; checks not named keep
        :data:`~fmconstructs.health.DEFAULT_BUDGET_SECONDS`.
    :param prolog_budget_seconds: the most any check may take in the prolog (1-60). Default 10.
    :param xid_policy: which Xids fail ``gpu-xid`` (the RESET and FATAL classes of
        :class:`~fmconstructs.health.xid.XidPolicy`); ``TrainingPlatform`` gives the same policy to the alerts of the
        workspace it creates, so one value moves an Xid for the checks, the alerts and remediation. Default
        :data:`~fmconstructs.health.xid.DEFAULT_XID_POLICY` (NVIDIA's Xid catalog).
    :param fatal_xids: deprecated: exactly these Xids fail ``gpu-xid`` (``XidPolicy.with_node_check_xids`` applied
        to ``xid_policy``; it is then None). Default None.
    """

    enabled: bool = True
    dcgm_level: int | None = 2
    prolog_checks: bool = True
    budget_seconds: Mapping[CheckName, int] = field(default_factory=dict)
    prolog_budget_seconds: int = DEFAULT_PROLOG_BUDGET_SECONDS
    xid_policy: XidPolicy = DEFAULT_XID_POLICY
    fatal_xids: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        check_bool("enabled", self.enabled)
        check_bool("prolog_checks", self.prolog_checks)
        # NodeCheckSpec checks the rest (levels, budgets against DCGM's nominal time, Xids, tokens refused).
        reference = self.spec_for(_REFERENCE_TYPE, efa_interfaces=0)
        object.__setattr__(self, "budget_seconds", MappingProxyType(dict(reference.budget_seconds)))
        object.__setattr__(self, "xid_policy", reference.xid_policy)
        object.__setattr__(self, "fatal_xids", None)

    def spec_for(
        self,
        instance_type: str,
        *,
        efa_interfaces: int | None = None,
        lustre_mount_point: str | None = None,
    ) -> NodeCheckSpec:
        """The checks for ``instance_type`` (catalog facts) with these options; see
        :meth:`NodeCheckSpec.for_instance_type` for ``efa_interfaces`` and ``lustre_mount_point``."""
        return NodeCheckSpec.for_instance_type(
            instance_type,
            efa_interfaces=efa_interfaces,
            lustre_mount_point=lustre_mount_point,
            dcgm_level=self.dcgm_level,
            budget_seconds=self.budget_seconds,
            xid_policy=self.xid_policy,
            fatal_xids=self.fatal_xids,
            prolog_budget_seconds=self.prolog_budget_seconds,
        )

    def without_dcgm(self) -> NodeHealthOptions:
        """These options with ``dcgm_level=None`` (the service runs DCGM itself)."""
        return replace(self, dcgm_level=None)

    def prolog_total_seconds(self, instance_type: str, *, efa_interfaces: int | None = None) -> int:
        """The most the prolog checks can take on ``instance_type`` (every command at its budget)."""
        return self.spec_for(instance_type, efa_interfaces=efa_interfaces).total_budget_seconds(CheckMode.PROLOG)
