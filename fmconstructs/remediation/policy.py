"""What the remediation handler does about a faulty node: :class:`RemediationPolicy` and :class:`RemediationTarget`.

Pure data (no aws_cdk): the construct serializes both into the handler's environment (:meth:`RemediationPolicy.to_json`,
:meth:`RemediationTarget.to_json`) and the handler (``handler/index.py``) reads them back as plain dicts.

Triggers (:class:`Trigger`) and where they come from:

- ``FATAL_XID``, ``RESET_XID``, ``CONTAINED_XID``: an Xid of the FATAL, RESET or CONTAINED class of the
  :class:`~fmconstructs.health.xid.XidPolicy` (:mod:`fmconstructs.health.xid`): alert ``GpuCriticalXid``
  (``xid_class`` fatal or reset) or ``GpuContainedXid`` of :mod:`fmconstructs.observability.rules`, or a
  ``gpu-xid`` node-check failure (``FmNodeCheckFailed`` with the same ``xid_class``); each carries its trigger in
  ``fmconstructs_trigger``. Default actions: replace, reboot, notify (:data:`XID_CLASS_ACTIONS`). ``FATAL_XID`` also
  comes from ``GpuRowRemapFailure`` (the GPU ran out of spare rows). Delivered by the Prometheus workspace's
  Alertmanager to the alert topic (SNS). ``GpuDoubleBitEccErrors`` maps to no trigger: the counter cannot tell a
  contained error (94, no action) from an uncontained one (95); the Xid alerts can.
- ``EFA_ERROR``: the critical EFA alerts of the same module (``EfaRdmaWorkRequestErrors``, ``EfaUnresponsiveRemote``).
- ``NODE_CHECK_FAILED``: a node-join check failed: alert ``FmNodeCheckFailed`` of
  :func:`fmconstructs.observability.rules.node_check_rules` (in the default rule groups; it carries
  ``fmconstructs_trigger="node-check-failed"``), or any alert whose ``reason`` label starts with ``fmconstructs:``
  (the prefix node-join checks drain with).
- ``NCCL_OUTLIER``: the pairwise NCCL check found the node in the slowest pair too many runs in a row: alert
  ``FmNcclOutlier`` of :func:`fmconstructs.health.nccl_rules.nccl_rule_group` (``fmconstructs_trigger="nccl-outlier"``).
  ``NcclBusBandwidthBelowBaseline`` maps to no trigger on purpose: it is a cluster-wide figure published by the login
  node, so its ``instance`` is the login node, not a faulty one.
- ``SCHEDULED_EVENT``: an AWS Health ``scheduledChange`` event for an EC2 instance (retirement, maintenance), from
  EventBridge. It arrives ahead of its start time (AWS Health User Guide, aws-health-events-eventbridge-schema:
  events containing MAINTENANCE_SCHEDULED "are usually pushed about two weeks before the start time"), so the drain the
  handler does on arrival happens ahead of the date.

Any alert can be mapped to a trigger with ``alert_triggers``; an alert label ``fmconstructs_trigger`` (a trigger value)
overrides the mapping.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from .._validate import check_bool, check_count, check_enum, check_str, check_str_sequence
from .._validate_ids import (
    AUTO_SCALING_GROUP_NAME,
    EKS_CLUSTER_NAME,
    PARALLELCLUSTER_CLUSTER_NAME,
    PCS_CLUSTER_IDENTIFIER,
    PCS_NODE_GROUP_ID,
    SAGEMAKER_CLUSTER_ARN,
    SAGEMAKER_CLUSTER_NAME_OR_ARN,
    check_service_id,
)
from ..errors import FmTypeError, FmValidationError, is_token
from ..health import metric_names as names
from ..health import xid
from . import rules

__all__ = [
    "DEFAULT_ACTIONS",
    "DEFAULT_ALERT_TRIGGERS",
    "XID_CLASS_ACTIONS",
    "XID_CLASS_TRIGGERS",
    "Action",
    "Backend",
    "JobKill",
    "RemediationPolicy",
    "RemediationTarget",
    "Trigger",
]


class Trigger(str, Enum):
    """Why a node is remediated (see the module docstring)."""

    FATAL_XID = xid.TRIGGER_FATAL_XID
    RESET_XID = xid.TRIGGER_RESET_XID
    CONTAINED_XID = xid.TRIGGER_CONTAINED_XID
    EFA_ERROR = "efa-error"
    NODE_CHECK_FAILED = names.TRIGGER_NODE_CHECK_FAILED
    NCCL_OUTLIER = names.TRIGGER_NCCL_OUTLIER
    SCHEDULED_EVENT = "scheduled-event"


class Action(str, Enum):
    """What the handler does: each step includes the ones before it (a reboot or a replacement drains first)."""

    #: Only notify the alert topic.
    NOTIFY = "notify"
    #: Stop new work on the node (Slurm DRAIN with a reason; Kubernetes cordon and eviction).
    DRAIN = "drain"
    #: Drain, then reboot once the node's work is done (Slurm ``scontrol reboot ASAP``; ec2:RebootInstances).
    REBOOT = "reboot"
    #: Drain, then replace the instance (counted against ``max_replacements_per_hour``).
    REPLACE = "replace"


class JobKill(str, Enum):
    """Whether remediation may end running jobs."""

    #: Never: a drained node waits for its jobs. A REPLACE drains the node and replaces it as soon as Slurm shows no
    #: job on it (PCS: set DOWN and terminated; ParallelCluster: set DOWN, clustermgtd replaces it; a node whose
    #: prolog check failed is idle, so it is replaced at once); while jobs run, PCS defers (``replace-deferred``,
    #: retried at the alert's next delivery) and ParallelCluster keeps it DRAIN (clustermgtd replaces it after its
    #: jobs); EKS defers while a PodDisruptionBudget keeps pods. Within the hourly limit in every case.
    NEVER = "never"
    #: For the policy's ``fatal_triggers`` only: the node is replaced at once (Slurm state DOWN, instance
    #: terminated, Auto Scaling health Unhealthy), ending what runs there. Other triggers behave as NEVER.
    FATAL = "fatal"


class Backend(str, Enum):
    PCS = "pcs"
    PARALLELCLUSTER = "parallelcluster"
    EKS = "eks"
    AUTO_SCALING = "auto-scaling"
    HYPERPOD = "hyperpod"


#: The critical alerts of fmconstructs.observability.rules that name one node, and the health alerts to come.
DEFAULT_ALERT_TRIGGERS: Mapping[str, Trigger] = {
    "GpuCriticalXid": Trigger.FATAL_XID,  # its rules' fmconstructs_trigger label wins (reset-xid for the reset class)
    "GpuContainedXid": Trigger.CONTAINED_XID,
    "GpuRowRemapFailure": Trigger.FATAL_XID,
    "EfaRdmaWorkRequestErrors": Trigger.EFA_ERROR,
    "EfaUnresponsiveRemote": Trigger.EFA_ERROR,
    names.ALERT_NODE_CHECK_FAILED: Trigger.NODE_CHECK_FAILED,
    names.ALERT_NCCL_OUTLIER: Trigger.NCCL_OUTLIER,
}

#: The trigger of each Xid class (the ``fmconstructs_trigger`` its alerts carry); APPLICATION has none.
XID_CLASS_TRIGGERS: Mapping[xid.XidClass, Trigger] = {c: Trigger(c.trigger) for c in xid.XidClass if c.trigger}

#: What each Xid class gets by default: NVIDIA's immediate action as this library can take it (contained: the job
#: already ended and new work may run, so only a notice; reset: a reboot resets every GPU of the node; fatal: other
#: hardware). See :mod:`fmconstructs.health.xid` for the sources.
XID_CLASS_ACTIONS: Mapping[xid.XidClass, Action] = {
    xid.XidClass.CONTAINED: Action.NOTIFY,
    xid.XidClass.RESET: Action.REBOOT,
    xid.XidClass.FATAL: Action.REPLACE,
}

#: A fatal GPU fault or a failed node-join check replaces the node, an Xid that needs a GPU reset reboots it, a
#: contained Xid only notifies; the rest drain it.
DEFAULT_ACTIONS: Mapping[Trigger, Action] = {
    **{XID_CLASS_TRIGGERS[c]: action for c, action in XID_CLASS_ACTIONS.items()},
    Trigger.EFA_ERROR: Action.DRAIN,
    Trigger.NODE_CHECK_FAILED: Action.REPLACE,
    Trigger.NCCL_OUTLIER: Action.DRAIN,
    Trigger.SCHEDULED_EVENT: Action.DRAIN,
}

# Prometheus alert names: metric-name characters (Prometheus data model: [a-zA-Z_:][a-zA-Z0-9_:]*).
_ALERT_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
#: An upper bound that keeps a typo (1000 instead of 10) from turning the limit off.
MAX_REPLACEMENTS_PER_HOUR_LIMIT = 100


@dataclass(frozen=True)
class RemediationPolicy:
    """Which triggers drain, reboot or replace a node, and how far the handler may go.

    :param actions: trigger -> action; a trigger not listed only notifies. default: :data:`DEFAULT_ACTIONS`.
    :param max_replacements_per_hour: replacements per cluster per clock hour (UTC), enforced in the handler with a
        conditional write; 0 never replaces (a REPLACE drains). default: 2.
    :param dry_run: only notify what would be done; nothing is drained, rebooted or replaced. default: True.
    :param job_kill: whether a fatal fault may end running jobs (:class:`JobKill`). default: NEVER (a REPLACE
        still replaces an idle node: see :attr:`JobKill.NEVER`).
    :param fatal_triggers: the triggers ``JobKill.FATAL`` applies to. default: FATAL_XID.
    :param alert_triggers: alert name -> trigger. default: :data:`DEFAULT_ALERT_TRIGGERS`.
    """

    actions: Mapping[Trigger, Action] = field(default_factory=lambda: dict(DEFAULT_ACTIONS))
    max_replacements_per_hour: int = 2
    dry_run: bool = True
    job_kill: JobKill = JobKill.NEVER
    fatal_triggers: frozenset[Trigger] = frozenset({Trigger.FATAL_XID})
    alert_triggers: Mapping[str, Trigger] = field(default_factory=lambda: dict(DEFAULT_ALERT_TRIGGERS))

    def __post_init__(self) -> None:
        if not isinstance(self.actions, Mapping):
            raise FmTypeError("actions", self.actions, "a mapping of Trigger to Action")
        for trigger, action in self.actions.items():
            check_enum("actions (key)", trigger, Trigger)
            check_enum(f"actions[{trigger.name}]", action, Action)
        count = check_count(
            "max_replacements_per_hour", self.max_replacements_per_hour, maximum=MAX_REPLACEMENTS_PER_HOUR_LIMIT
        )
        if is_token(count):
            raise FmValidationError(
                "max_replacements_per_hour", count, "a number known at synth time (it is written into the handler)"
            )
        check_bool("dry_run", self.dry_run)
        check_enum("job_kill", self.job_kill, JobKill)
        if isinstance(self.fatal_triggers, str | bytes) or not isinstance(
            self.fatal_triggers, Sequence | frozenset | set
        ):
            raise FmTypeError("fatal_triggers", self.fatal_triggers, "a set of Trigger")
        for trigger in self.fatal_triggers:
            check_enum("fatal_triggers[]", trigger, Trigger)
        object.__setattr__(self, "fatal_triggers", frozenset(self.fatal_triggers))
        if not isinstance(self.alert_triggers, Mapping):
            raise FmTypeError("alert_triggers", self.alert_triggers, "a mapping of alert name to Trigger")
        for name, trigger in self.alert_triggers.items():
            check_str("alert_triggers (key)", name, pattern=_ALERT_NAME, allowed="a Prometheus alert name")
            check_enum(f"alert_triggers[{name}]", trigger, Trigger)
        object.__setattr__(self, "actions", dict(self.actions))
        object.__setattr__(self, "alert_triggers", dict(self.alert_triggers))

    def action_for(self, trigger: Trigger) -> Action:
        return self.actions.get(trigger, Action.NOTIFY)

    def to_json(self) -> str:
        """The policy as the handler reads it (``POLICY`` environment variable)."""
        return json.dumps(
            {
                "actions": {t.value: a.value for t, a in self.actions.items()},
                "max_replacements_per_hour": int(self.max_replacements_per_hour),
                "dry_run": self.dry_run,
                "job_kill": self.job_kill.value,
                "fatal_triggers": sorted(t.value for t in self.fatal_triggers),
                "alert_triggers": {name: t.value for name, t in sorted(self.alert_triggers.items())},
            },
            sort_keys=True,
        )


# The services' own identifier rules (fmconstructs._validate_ids, botocore shapes cited there): PCS node groups by
# their id (the handler targets instances by the tag aws:pcs:compute-node-group-id, whose value is the id).


@dataclass(frozen=True)
class RemediationTarget:
    """One cluster's backend specifics, as data. Build it with :meth:`pcs`, :meth:`parallelcluster`, :meth:`eks`,
    :meth:`auto_scaling_group` or :meth:`hyperpod`; ``cluster`` names the cluster in notices and keys its rate
    limit."""

    backend: Backend
    cluster: str
    login_node_group_id: str | None = None
    compute_node_group_ids: tuple[str, ...] = ()
    eks_cluster: Any = None
    #: HyperPod only: the cluster's ARN, the IAM resource of the handler's SageMaker calls.
    cluster_arn: str | None = None

    @classmethod
    def pcs(
        cls, *, cluster_id: str, login_node_group_id: str, compute_node_group_ids: Sequence[str]
    ) -> RemediationTarget:
        """A PCS cluster: Slurm commands run on a login node of ``login_node_group_id`` through SSM Run Command; only
        instances of ``compute_node_group_ids`` are remediated (tag ``aws:pcs:compute-node-group-id``)."""
        check_service_id("cluster_id", cluster_id, PCS_CLUSTER_IDENTIFIER)
        check_service_id("login_node_group_id", login_node_group_id, PCS_NODE_GROUP_ID)
        ids = check_str_sequence(
            "compute_node_group_ids",
            compute_node_group_ids,
            item=lambda n, v: check_service_id(n, v, PCS_NODE_GROUP_ID),
            min_items=1,
        )
        rules.login_group_is_not_a_compute_group(login_node_group_id=login_node_group_id, compute_node_group_ids=ids)
        return cls(Backend.PCS, cluster_id, login_node_group_id=login_node_group_id, compute_node_group_ids=ids)

    @classmethod
    def parallelcluster(cls, *, cluster_name: str) -> RemediationTarget:
        """A ParallelCluster cluster: Slurm commands run on its head node through SSM Run Command."""
        check_service_id("cluster_name", cluster_name, PARALLELCLUSTER_CLUSTER_NAME)
        return cls(Backend.PARALLELCLUSTER, cluster_name)

    @classmethod
    def eks(cls, *, cluster: Any) -> RemediationTarget:
        """An EKS cluster (a :class:`~fmconstructs.eks.GpuEksCluster`): cordon, evict, then terminate."""
        from ..eks import GpuEksCluster

        if not isinstance(cluster, GpuEksCluster):
            raise FmTypeError("cluster", cluster, f"a GpuEksCluster (got a {type(cluster).__name__})")
        return cls(Backend.EKS, cluster.cluster_name, eks_cluster=cluster)

    @classmethod
    def auto_scaling_group(cls, *, group_name: str) -> RemediationTarget:
        """A self-managed Auto Scaling group: replaced through autoscaling:SetInstanceHealth (Unhealthy)."""
        check_service_id("group_name", group_name, AUTO_SCALING_GROUP_NAME)
        return cls(Backend.AUTO_SCALING, group_name)

    @classmethod
    def hyperpod(cls, *, cluster_name: str, cluster_arn: str) -> RemediationTarget:
        """A SageMaker HyperPod cluster on Slurm: nodes are replaced with sagemaker:BatchReplaceClusterNodes and
        rebooted with sagemaker:BatchRebootClusterNodes (``cluster_name``: the cluster's name or ARN, as those calls
        take it; ``cluster_arn``: their IAM resource). SSM Run Command does not reach HyperPod nodes, so the handler
        sets no Slurm state there (see :mod:`fmconstructs.remediation.handler.index`)."""
        check_service_id("cluster_name", cluster_name, SAGEMAKER_CLUSTER_NAME_OR_ARN)
        check_service_id("cluster_arn", cluster_arn, SAGEMAKER_CLUSTER_ARN)
        return cls(Backend.HYPERPOD, cluster_name, cluster_arn=cluster_arn)

    def __post_init__(self) -> None:
        """The direct constructor refuses what the factory of its backend refuses (issue 18 section 5), and the
        fields of other backends."""
        backend = check_enum("backend", self.backend, Backend)
        if backend is Backend.PCS:
            self._check_pcs()
            return
        rules.node_groups_only_for_pcs(
            backend=backend,
            login_node_group_id=self.login_node_group_id,
            compute_node_group_ids=self.compute_node_group_ids,
        )
        rules.eks_cluster_only_for_eks(backend=backend, eks_cluster=self.eks_cluster)
        rules.cluster_arn_only_for_hyperpod(backend=backend, cluster_arn=self.cluster_arn)
        if backend is Backend.HYPERPOD:
            check_service_id("cluster", self.cluster, SAGEMAKER_CLUSTER_NAME_OR_ARN)
            if self.cluster_arn is None:
                raise FmValidationError("cluster_arn", None, SAGEMAKER_CLUSTER_ARN.allowed + " for Backend.HYPERPOD")
            check_service_id("cluster_arn", self.cluster_arn, SAGEMAKER_CLUSTER_ARN)
        elif backend is Backend.PARALLELCLUSTER:
            check_service_id("cluster", self.cluster, PARALLELCLUSTER_CLUSTER_NAME)
        elif backend is Backend.AUTO_SCALING:
            check_service_id("cluster", self.cluster, AUTO_SCALING_GROUP_NAME)
        else:
            from ..eks import GpuEksCluster

            if not isinstance(self.eks_cluster, GpuEksCluster):
                raise FmTypeError(
                    "eks_cluster", self.eks_cluster, f"a GpuEksCluster (got a {type(self.eks_cluster).__name__})"
                )
            check_service_id("cluster", self.cluster, EKS_CLUSTER_NAME)

    def _check_pcs(self) -> None:
        rules.eks_cluster_only_for_eks(backend=Backend.PCS, eks_cluster=self.eks_cluster)
        rules.cluster_arn_only_for_hyperpod(backend=Backend.PCS, cluster_arn=self.cluster_arn)
        check_service_id("cluster", self.cluster, PCS_CLUSTER_IDENTIFIER)
        rules.pcs_needs_a_login_node_group(login_node_group_id=self.login_node_group_id)
        check_service_id("login_node_group_id", self.login_node_group_id, PCS_NODE_GROUP_ID)
        ids = check_str_sequence(
            "compute_node_group_ids",
            self.compute_node_group_ids,
            item=lambda n, v: check_service_id(n, v, PCS_NODE_GROUP_ID),
            min_items=1,
        )
        rules.login_group_is_not_a_compute_group(
            login_node_group_id=self.login_node_group_id, compute_node_group_ids=ids
        )
        object.__setattr__(self, "compute_node_group_ids", ids)

    def to_json(self) -> str:
        """The target as the handler reads it (``TARGET`` environment variable; deploy-time values are tokens that
        CloudFormation resolves in the JSON string)."""
        return json.dumps(
            {
                "backend": self.backend.value,
                "cluster": self.cluster,
                "login_node_group_id": self.login_node_group_id or "",
                "compute_node_group_ids": list(self.compute_node_group_ids),
            }
        )
