"""Teams sharing a platform (issue 33): one :class:`Team` definition rendered per backend.

- :mod:`.team`: :class:`Team` and :class:`Preemption`;
- :mod:`.rules`: cross-team rules and each backend's naming rule (pure functions);
- :mod:`.slurm`: the ``sacctmgr`` script and slurm.conf lines;
- :mod:`.kueue`: Kueue objects (cohort, ClusterQueue per team, LocalQueues, WorkloadPriorityClasses);
- :mod:`.hyperpod`: HyperPod task governance (ClusterSchedulerConfig, ComputeQuota per team).
"""

from __future__ import annotations

from .team import MAX_PRIORITY, Preemption, Team

__all__ = ["MAX_PRIORITY", "Preemption", "Team"]
