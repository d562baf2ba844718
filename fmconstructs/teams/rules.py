"""Cross-team rules and each backend's naming rule, as pure functions (the shape of :mod:`fmconstructs._rules`).

Each takes plain values (teams, numbers) and raises :class:`~fmconstructs.errors.FmValidationError` naming the
parameter (``teams[2].name``), the value and what is allowed. The renderers and the platform call them before
anything is built; a number that is a deploy-time value (CDK token) is not checked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .._validate import check_str
from .._validate_k8s import check_dns_label
from ..errors import FmTypeError, FmValidationError, is_token
from .team import Team

__all__ = [
    "HYPERPOD_MAX_PRIORITY_CLASSES",
    "HYPERPOD_TEAM_NAME",
    "SLURM_NAME",
    "check_teams",
    "guarantees_fit_the_cluster",
    "hyperpod_team_names",
    "kubernetes_team_names",
    "namespace_in_one_team",
    "slurm_team_names",
    "teams_have_namespaces",
    "unique_team_names",
]

#: Slurm account, QoS and user names here: lower case (sacctmgr(1) 24.11: "The contents of Slurm's database are
#: maintained in lower case", so 'ML' would become 'ml' in the database and no longer match), no ',' (sacctmgr splits
#: lists on commas: slurm_addto_char_list, src/common/slurm_protocol_defs.c 24.11), no '=', quote or space (sacctmgr
#: parses ``key=value`` words). Letters, digits, '_' and '-', starting with a letter or digit; at most 64 characters
#: (a bound of this library: Slurm's own limit is UNCONFIRMED).
SLURM_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
#: HyperPod task governance team names (botocore sagemaker service-2.json ComputeQuotaTargetTeamName and
#: ClusterSchedulerPriorityClassName; the CloudFormation schema of AWS::SageMaker::ComputeQuota adds that the team
#: becomes the namespace ``hyperpod-ns-<TeamName>``, so RFC 1123). The 40-character bound is read from the pattern's
#: ``{0,39}``: UNCONFIRMED as a length limit.
HYPERPOD_TEAM_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
HYPERPOD_TEAM_NAME_MAX = 40
#: SchedulerConfig.PriorityClasses holds at most 10 (botocore PriorityClassList max 10): one per team.
HYPERPOD_MAX_PRIORITY_CLASSES = 10


def check_teams(teams: object) -> tuple[Team, ...]:
    """``teams``: a list of :class:`Team` with distinct names, each namespace in one team."""
    if isinstance(teams, str | bytes | dict) or not isinstance(teams, Sequence | tuple):
        raise FmTypeError("teams", teams, f"a list of Team (got a {type(teams).__name__})")
    for index, team in enumerate(teams):
        if not isinstance(team, Team):
            raise FmTypeError(f"teams[{index}]", team, f"a Team (got a {type(team).__name__})")
    out = tuple(teams)
    unique_team_names(out)
    namespace_in_one_team(out)
    return out


def unique_team_names(teams: Sequence[Team]) -> None:
    """No two teams share a name (they would share one account, queue or quota)."""
    seen: dict[str, int] = {}
    for index, team in enumerate(teams):
        if team.name in seen:
            raise FmValidationError(
                f"teams[{index}].name", team.name, f"a name no other team has (teams[{seen[team.name]}] has it)"
            )
        seen[team.name] = index


def namespace_in_one_team(teams: Sequence[Team]) -> None:
    """A Kubernetes namespace belongs to one team (its LocalQueue points at one ClusterQueue)."""
    owner: dict[str, str] = {}
    for index, team in enumerate(teams):
        for namespace in team.namespaces:
            if namespace in owner:
                raise FmValidationError(
                    f"teams[{index}].namespaces",
                    namespace,
                    f"a namespace of no other team (team {owner[namespace]!r} has it)",
                )
            owner[namespace] = team.name


def guarantees_fit_the_cluster(teams: Sequence[Team], cluster_gpus: Any) -> None:
    """The sum of guaranteed GPUs is at most the cluster's GPUs (skipped when unknown or a deploy-time value); each
    team's largest job fits the cluster too."""
    if cluster_gpus is None or is_token(cluster_gpus):
        return
    total = sum(team.guaranteed_gpus for team in teams)
    if total > cluster_gpus:
        detail = ", ".join(f"{t.name}={t.guaranteed_gpus}" for t in teams if t.guaranteed_gpus)
        raise FmValidationError(
            "teams", f"{total} guaranteed GPUs ({detail})", f"at most the cluster's {cluster_gpus} GPUs in total"
        )
    for index, team in enumerate(teams):
        if team.max_job_gpus is not None and team.max_job_gpus > cluster_gpus:
            raise FmValidationError(
                f"teams[{index}].max_job_gpus", team.max_job_gpus, f"at most the cluster's {cluster_gpus} GPUs"
            )


def _names(teams: Sequence[Team], check: Any) -> None:
    for index, team in enumerate(teams):
        check(f"teams[{index}].name", team.name)


def slurm_name(parameter: str, value: object) -> Any:
    return check_str(
        parameter,
        value,
        pattern=SLURM_NAME,
        allowed="a Slurm account name: lower-case letters, digits, '_' and '-', starting with a letter or digit, at "
        "most 64 characters (Slurm keeps names in lower case and splits lists on ',')",
    )


def slurm_team_names(teams: Sequence[Team]) -> None:
    """Slurm backends: each team's name is a Slurm account and QoS name; its users' names are lower case."""
    _names(teams, slurm_name)
    for index, team in enumerate(teams):
        for position, user in enumerate(team.users):
            if user != user.lower():
                raise FmValidationError(
                    f"teams[{index}].users[{position}]",
                    user,
                    "a lower-case user name (sacctmgr(1): user names are forced to lower case unless "
                    "PreserveCaseUser is set in slurmdbd.conf)",
                )


def kubernetes_team_names(teams: Sequence[Team]) -> None:
    """EKS: each team's name is a ClusterQueue and WorkloadPriorityClass name: a DNS-1123 label here (the Kueue
    CRDs take a subdomain; a label also fits the ``team`` label value the job attribution uses)."""
    _names(teams, check_dns_label)
    for index, team in enumerate(teams):
        for position, namespace in enumerate(team.namespaces):
            check_dns_label(f"teams[{index}].namespaces[{position}]", namespace)


def teams_have_namespaces(teams: Sequence[Team]) -> None:
    """EKS: a team without a namespace has no LocalQueue, so no job of it could ever run in its quota."""
    for index, team in enumerate(teams):
        if not team.namespaces:
            raise FmValidationError(
                f"teams[{index}].namespaces", [], "at least one Kubernetes namespace on EKS (a LocalQueue in each)"
            )


def hyperpod_team_names(teams: Sequence[Team]) -> None:
    """HyperPod task governance: team names its API accepts; at most 10 teams (one priority class each)."""
    for index, team in enumerate(teams):
        check_str(
            f"teams[{index}].name",
            team.name,
            pattern=HYPERPOD_TEAM_NAME,
            max_length=HYPERPOD_TEAM_NAME_MAX,
            allowed="a HyperPod task governance team name: lower-case letters, digits and '-', starting and ending "
            f"with a letter or digit, at most {HYPERPOD_TEAM_NAME_MAX} characters",
        )
    if len(teams) > HYPERPOD_MAX_PRIORITY_CLASSES:
        raise FmValidationError(
            "teams",
            f"{len(teams)} teams",
            f"at most {HYPERPOD_MAX_PRIORITY_CLASSES} teams on HyperPod (one priority class each; "
            "SchedulerConfig.PriorityClasses holds at most 10)",
        )
