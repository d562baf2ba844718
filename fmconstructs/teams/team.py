"""A team sharing a platform: who is in it, the GPUs it is guaranteed and may borrow, its priority and preemption.

One vocabulary on every backend (GPUs, minutes); each backend's renderer maps it to its own objects
(:mod:`fmconstructs.teams.slurm`, :mod:`fmconstructs.teams.kueue`, :mod:`fmconstructs.teams.hyperpod`). The
per-backend names and cross-team rules are in :mod:`fmconstructs.teams.rules`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from .._validate import check_count, check_enum, check_optional_count, check_str, check_str_sequence
from ..errors import FmTypeError, FmValidationError

__all__ = ["MAX_PRIORITY", "Preemption", "Team"]

#: Team priorities are 0..100: the narrowest backend range, HyperPod task governance's ``PriorityClass.Weight`` and
#: ``ComputeQuotaTarget.FairShareWeight`` (botocore sagemaker service-2.json PriorityWeight / FairShareWeight: 0..100).
#: Slurm QoS ``Priority`` and Kueue ``WorkloadPriorityClass.value`` (int32) take these as they are.
MAX_PRIORITY = 100
#: Slurm ``MaxWall`` is recorded in minutes (sacctmgr(1) 24.11, "MaxWall ... The value is recorded in minutes");
#: one year is a bound against typos, not a Slurm limit.
MAX_JOB_TIME_MINUTES = 366 * 24 * 60
#: A Unix user or group name: the POSIX portable filename character set, not starting with '-' (IEEE Std 1003.1
#: "User Name"); at most 32 characters (useradd(8), shadow: "Usernames may only be up to 32 characters long").
_UNIX_NAME = re.compile(r"[A-Za-z0-9._][A-Za-z0-9._-]*")


class Preemption(str, Enum):
    """What a team's jobs may preempt (each backend's mapping is in the docs page "Teams" and the renderers).

    - ``NEVER``: nothing: its jobs wait for free GPUs.
    - ``RECLAIM``: take back its guaranteed GPUs from teams borrowing them (Kueue ``reclaimWithinCohort: Any``;
      HyperPod does this for every team). Slurm has no borrowing: there it preempts the teams of lower priority,
      like ``LOWER_PRIORITY``.
    - ``LOWER_PRIORITY``: also preempt lower-priority jobs, its own team's and, while borrowing, other teams'
      (Kueue ``withinClusterQueue: LowerPriority``, ``borrowWithinCohort: LowerPriority``; HyperPod
      ``PreemptTeamTasks: LowerPriority``; Slurm QoS ``Preempt`` lists the lower-priority teams' QoS).
    """

    NEVER = "never"
    RECLAIM = "reclaim"
    LOWER_PRIORITY = "lower-priority"


def _minutes(parameter: str, value: object) -> int | None:
    """Minutes as an int, from an int or an ``aws_cdk.Duration`` (whole minutes)."""
    if value is None:
        return None
    if hasattr(value, "to_minutes") and not isinstance(value, int | float | str):
        try:
            value = value.to_minutes()
        except RuntimeError:  # jsii: not a whole number of minutes, or a token in another unit
            raise FmValidationError(parameter, "a Duration", "a whole number of minutes") from None
    minutes = check_count(parameter, value, minimum=1, maximum=MAX_JOB_TIME_MINUTES)
    if not isinstance(minutes, int):
        raise FmValidationError(parameter, value, "a number of minutes known at synthesis")
    return minutes


@dataclass(frozen=True, kw_only=True)
class Team:
    """A team: its members and its share of the platform's GPUs.

    :param name: the team's name: the Slurm account and QoS, the Kueue ClusterQueue and WorkloadPriorityClass, the
        HyperPod task governance team (each backend's naming rule: :mod:`fmconstructs.teams.rules`).
    :param users: Unix users of the team (Slurm associations). Default none.
    :param unix_group: a Unix group whose members join the team (Slurm; expanded with ``getent group`` when the
        script runs). Default None.
    :param namespaces: Kubernetes namespaces whose jobs are the team's (EKS: a LocalQueue in each; each namespace in
        one team only). Default none. HyperPod task governance uses its own ``hyperpod-ns-<name>``.
    :param guaranteed_gpus: GPUs the team is guaranteed (Kueue nominalQuota; HyperPod ComputeQuota accelerators;
        Slurm fair share). Default 0.
    :param borrowing_limit_gpus: GPUs the team may use beyond its guarantee when others' are idle; None: no limit.
        Default None.
    :param priority: 0..100, higher first. Default 0.
    :param preemption: what the team's jobs may preempt (:class:`Preemption`). Default RECLAIM.
    :param max_job_gpus: GPUs one job may use; None: no limit. Default None.
    :param max_job_time_minutes: the longest a job may run, in minutes (an int or an ``aws_cdk.Duration``); None: no
        limit. Default None. Slurm only (Kueue and HyperPod task governance have no per-queue time limit).
    """

    name: str
    users: tuple[str, ...] = ()
    unix_group: str | None = None
    namespaces: tuple[str, ...] = ()
    guaranteed_gpus: int = 0
    borrowing_limit_gpus: int | None = None
    priority: int = 0
    preemption: Preemption = Preemption.RECLAIM
    max_job_gpus: int | None = None
    max_job_time_minutes: Any = field(default=None)

    def __post_init__(self) -> None:
        check_str("name", self.name, min_length=1, allowed="a non-empty team name")
        object.__setattr__(self, "users", check_str_sequence("users", self.users, item=_member))
        if self.unix_group is not None:
            _member("unix_group", self.unix_group)
        object.__setattr__(self, "namespaces", check_str_sequence("namespaces", self.namespaces))
        for parameter, values in (("users", self.users), ("namespaces", self.namespaces)):
            if len(set(values)) != len(values):
                raise FmValidationError(parameter, list(values), "distinct names")
        self._check_numbers()
        check_enum("preemption", self.preemption, Preemption)
        object.__setattr__(self, "max_job_time_minutes", _minutes("max_job_time_minutes", self.max_job_time_minutes))

    def _check_numbers(self) -> None:
        for parameter in ("guaranteed_gpus", "priority"):
            if not isinstance(getattr(self, parameter), int) or isinstance(getattr(self, parameter), bool):
                raise FmTypeError(parameter, getattr(self, parameter), "an int")
        check_count("guaranteed_gpus", self.guaranteed_gpus)
        check_count("priority", self.priority, maximum=MAX_PRIORITY)
        check_optional_count("borrowing_limit_gpus", self.borrowing_limit_gpus)
        check_optional_count("max_job_gpus", self.max_job_gpus, minimum=1)

    @property
    def gpu_limit(self) -> int | None:
        """The most GPUs the team's jobs may hold at once (guarantee + borrowing limit), None for no limit."""
        if self.borrowing_limit_gpus is None:
            return None
        return self.guaranteed_gpus + self.borrowing_limit_gpus


def _member(parameter: str, value: object) -> Any:
    return check_str(
        parameter,
        value,
        pattern=_UNIX_NAME,
        max_length=32,
        allowed="a Unix user or group name (letters, digits, '.', '_' and '-', not starting with '-', at most 32 "
        "characters)",
    )
