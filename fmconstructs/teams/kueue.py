"""Teams on EKS: Kueue objects (the pinned Kueue, ``kueue.x-k8s.io/v1beta2`` of v0.19.2: config/components/crd/bases
of kubernetes-sigs/kueue tag v0.19.2, commit 8eab687; the tests validate every object against those CRD schemas).

- one ``Cohort`` (:data:`DEFAULT_COHORT`) that the teams' ClusterQueues and the platform's own ClusterQueue (``fm-gpu``
  of :class:`~fmconstructs.eks.scheduling.KueueScheduling`) join (``spec.cohortName``);
- a ``ClusterQueue`` per team, named after it, admitting only its namespaces (``namespaceSelector`` on
  ``kubernetes.io/metadata.name``), with an ``nvidia.com/gpu`` ``nominalQuota`` per flavor (the team's guaranteed GPUs,
  taken from the flavors in order: :func:`allocate_guarantees`) and a ``borrowingLimit`` (omitted for no limit);
  the topology-aware flavors are the scheduling's own, unchanged;
- the platform's ClusterQueue keeps the GPUs no team is guaranteed (and every EFA interface), as the cohort's shared
  pool: teams borrow from it, and reclaim their guarantee from whoever borrows it;
- a ``LocalQueue`` named after the team in each of its namespaces (jobs: ``kueue.x-k8s.io/queue-name: <team>``);
- a ``WorkloadPriorityClass`` per team, named after it, ``value`` = its priority (jobs:
  ``kueue.x-k8s.io/priority-class: <team>``; Kueue priorities are per workload, not per queue).

Preemption (ClusterQueue ``spec.preemption``): NEVER -> ``withinClusterQueue: Never, reclaimWithinCohort: Never``;
RECLAIM -> ``reclaimWithinCohort: Any``; LOWER_PRIORITY -> also ``withinClusterQueue: LowerPriority`` and
``borrowWithinCohort.policy: LowerPriority`` (the CRD refuses a borrow policy without reclaim). Team queues cover GPUs
only: the Kueue configuration ignores undeclared resources (``quotaCheckStrategy: IgnoreUndeclared``).
``max_job_gpus`` and ``max_job_time_minutes`` have no ClusterQueue field in v1beta2: not rendered on EKS.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from .._kueue import GPU_RESOURCE, KUEUE_API_VERSION, FlavorQuota, cluster_queue_manifest
from ..errors import FmValidationError
from .rules import check_teams, kubernetes_team_names, teams_have_namespaces
from .team import Preemption, Team

__all__ = [
    "DEFAULT_COHORT",
    "NAMESPACE_NAME_LABEL",
    "allocate_guarantees",
    "cohort_manifest",
    "render_kueue_teams",
    "shared_queue_spec",
    "team_cluster_queue",
    "team_local_queues",
    "team_priority_class",
]

DEFAULT_COHORT = "fm-teams"
#: Kubernetes sets this label on every namespace to its name (Kubernetes docs "Well-Known Labels, Annotations and
#: Taints": kubernetes.io/metadata.name; not re-read for this change: UNCONFIRMED here).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

#: Team preemption -> ClusterQueue spec.preemption (enums of the v0.19.2 ClusterQueue CRD).
_PREEMPTION: dict[Preemption, dict[str, Any]] = {
    Preemption.NEVER: {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"},
    Preemption.RECLAIM: {"withinClusterQueue": "Never", "reclaimWithinCohort": "Any"},
    Preemption.LOWER_PRIORITY: {
        "withinClusterQueue": "LowerPriority",
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "LowerPriority"},
    },
}


def allocate_guarantees(teams: Sequence[Team], flavors: Sequence[FlavorQuota]) -> dict[str, dict[str, int]]:
    """Team -> flavor -> guaranteed GPUs: each team in order takes its guarantee from the flavors in order (a flavor's
    GPUs are shared until used up). Raises when the guarantees are more than the flavors' GPUs."""
    free = {flavor.name: flavor.gpus for flavor in flavors}
    out: dict[str, dict[str, int]] = {}
    for index, team in enumerate(teams):
        wanted = team.guaranteed_gpus
        out[team.name] = {}
        for flavor in flavors:
            taken = min(wanted, free[flavor.name])
            out[team.name][flavor.name] = taken
            free[flavor.name] -= taken
            wanted -= taken
        if wanted:
            raise FmValidationError(
                f"teams[{index}].guaranteed_gpus",
                team.guaranteed_gpus,
                f"at most the GPUs left in the Kueue flavors ({sum(f.gpus for f in flavors)} in all, "
                "guarantees taken in team order)",
            )
    return out


def cohort_manifest(name: str = DEFAULT_COHORT) -> dict[str, Any]:
    return {"apiVersion": KUEUE_API_VERSION, "kind": "Cohort", "metadata": {"name": name}, "spec": {}}


def team_priority_class(team: Team) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": team.name},
        "value": team.priority,
        "description": f"fmconstructs team {team.name}",
    }


def team_cluster_queue(
    team: Team, flavors: Sequence[FlavorQuota], guaranteed: Mapping[str, int], *, cohort: str = DEFAULT_COHORT
) -> dict[str, Any]:
    """The team's ClusterQueue: its namespaces only, its guarantee per flavor, its borrowing limit."""
    resources = []
    for flavor in flavors:
        quota: dict[str, Any] = {"name": GPU_RESOURCE, "nominalQuota": guaranteed.get(flavor.name, 0)}
        if team.borrowing_limit_gpus is not None:
            quota["borrowingLimit"] = team.borrowing_limit_gpus
        resources.append({"name": flavor.name, "resources": [quota]})
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": team.name},
        "spec": {
            "cohortName": cohort,
            "namespaceSelector": {
                "matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": list(team.namespaces)}]
            },
            "resourceGroups": [{"coveredResources": [GPU_RESOURCE], "flavors": resources}],
            "preemption": dict(_PREEMPTION[team.preemption]),
        },
    }


def team_local_queues(team: Team) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": KUEUE_API_VERSION,
            "kind": "LocalQueue",
            "metadata": {"name": team.name, "namespace": namespace},
            "spec": {"clusterQueue": team.name},
        }
        for namespace in team.namespaces
    ]


def shared_queue_spec(
    name: str,
    flavors: Sequence[FlavorQuota],
    teams: Sequence[Team],
    *,
    cohort: str = DEFAULT_COHORT,
) -> dict[str, Any]:
    """The platform ClusterQueue's spec with teams: the GPUs no team is guaranteed, in the cohort."""
    allocation = allocate_guarantees(teams, flavors)
    left = [
        replace(flavor, gpus=flavor.gpus - sum(allocation[team.name][flavor.name] for team in teams))
        for flavor in flavors
    ]
    spec: dict[str, Any] = cluster_queue_manifest(name, left)["spec"]
    spec["cohortName"] = cohort
    return spec


def render_kueue_teams(
    teams: Sequence[Team], flavors: Sequence[FlavorQuota], *, cohort: str = DEFAULT_COHORT
) -> list[dict[str, Any]]:
    """Every team object: the cohort, then per team its WorkloadPriorityClass, ClusterQueue and LocalQueues."""
    checked = check_teams(teams)
    kubernetes_team_names(checked)
    teams_have_namespaces(checked)
    allocation = allocate_guarantees(checked, flavors)
    out = [cohort_manifest(cohort)]
    for team in checked:
        out.append(team_priority_class(team))
        out.append(team_cluster_queue(team, flavors, allocation[team.name], cohort=cohort))
        out += team_local_queues(team)
    return out
