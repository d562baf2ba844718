"""Teams on Slurm: an idempotent ``sacctmgr`` script (accounts, QoS, associations) and the slurm.conf it needs.

Mapping (sources: Slurm 24.11 sacctmgr(1) and slurm.conf(5), tag slurm-24-11-5-1 of SchedMD/slurm
doc/man/man1/sacctmgr.1 and doc/man/man5/slurm.conf.5; qos.html, preempt.html):

- a team -> an account (``Organization=fmconstructs``, the mark this script uses to find the accounts it manages)
  and a QoS of the same name (the account's only and default QoS: ``QOS=`` and ``DefaultQOS=``);
- ``guaranteed_gpus`` -> the account's ``Fairshare`` (at least 1): Slurm has no guaranteed share; fair share weighs
  the team's priority by its use. ``guaranteed_gpus + borrowing_limit_gpus`` -> the account's
  ``GrpTRES=gres/gpu=N`` (a cap on the GPUs its running jobs hold; ``-1`` clears it when the borrowing limit is None);
- ``priority`` -> QoS ``Priority`` (counted only with ``PriorityWeightQOS`` > 0, qos.html);
- ``preemption`` -> QoS ``Preempt`` (the QoS this one may preempt: the teams of lower priority; "the Priority of a QOS
  is NOT related to QOS preemption, only Preempt is") and every team QoS ``PreemptMode=REQUEUE`` (how its own jobs are
  preempted). RECLAIM and LOWER_PRIORITY are the same here (Slurm has no borrowing to reclaim);
- ``max_job_gpus`` -> QoS ``MaxTRESPerJob=gres/gpu=N``; ``max_job_time_minutes`` -> QoS ``MaxWall=<min>``;
- users (and the Unix group's members, ``getent group``) -> ``add user <u> Account=<team>`` associations.

Idempotent: each object is added only when ``sacctmgr list`` does not show it, then set to the rendered values
(``modify`` answering "Nothing modified", which sacctmgr reports as an error, account_functions.c, is success here).

Removal: an account with ``Organization=fmconstructs`` that is no longer a team is never deleted: its
``GrpTRES=gres/gpu=0``, ``GrpSubmitJobs=0`` and ``MaxJobs=0`` stop new jobs (group limits are tested when a job is
considered for allocation, so running jobs go on), and the script prints how many jobs still run. Its records stay
in the accounting database (``sacctmgr delete account`` is yours to run, and marks it deleted: ``WithDeleted``).
Users removed from a team keep their association (history), and are not removed by the script.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from .rules import check_teams, slurm_team_names
from .team import Preemption, Team

__all__ = ["MANAGED_ORGANIZATION", "SLURM_CONF_SETTINGS", "render_sacctmgr_script", "slurm_conf_lines"]

#: The Organization of every account the script manages (lower case: Slurm keeps names in lower case).
MANAGED_ORGANIZATION = "fmconstructs"
#: slurm.conf settings teams need (slurm.conf(5) 24.11): multifactor priority with the QoS factor weighted
#: (PriorityWeightQOS "The default value is 0"; 10000 is this library's choice, any value > 0 counts the QoS),
#: QoS preemption with requeue as the cluster default ("a valid default
#: PreemptMode value must be specified for the cluster as a whole when preemption is enabled"), limits enforced
#: (``limits`` implies ``associations``; ``qos`` enforces QoS limits; ``safe`` UNCONFIRMED as needed, not set), GPUs
#: tracked (GRES TRES are not tracked by default: "AccountingStorageTRES=gres/gpu").
SLURM_CONF_SETTINGS: dict[str, str] = {
    "PriorityType": "priority/multifactor",
    "PriorityWeightQOS": "10000",
    "PreemptType": "preempt/qos",
    "PreemptMode": "REQUEUE",
    "AccountingStorageEnforce": "associations,limits,qos",
    "AccountingStorageTRES": "gres/gpu",
}

#: sacctmgr clears a limit with -1 (sacctmgr(1): "To clear a previously set value use the modify command with a new
#: value of -1"); Preempt with '' ("two single quotes with nothing between them").
_CLEAR = "-1"

_PRELUDE = """#!/bin/bash
# fmconstructs teams: Slurm accounts, QoS and associations. Idempotent: run it again after any change.
# Run as a Slurm administrator (root or SlurmUser) where sacctmgr reaches slurmdbd.
set -euo pipefail
SACCTMGR="${SACCTMGR:-sacctmgr}"
SQUEUE="${SQUEUE:-squeue}"
log() { echo "fmconstructs-teams: $*"; }
exists() { [ -n "$("$SACCTMGR" -n -P "$@" 2>/dev/null)" ]; }
# modify: sacctmgr exits non-zero with "Nothing modified" when the values are already set.
modify() {
  local out
  if ! out=$("$SACCTMGR" -i modify "$@" 2>&1); then
    case "$out" in *"Nothing modified"*) ;; *) echo "$out" >&2; return 1 ;; esac
  fi
}
add_user() {
  exists list association where user="$1" account="$2" format=user || "$SACCTMGR" -i add user "$1" Account="$2"
}
group_members() { getent group "$1" | cut -d: -f4 | tr ',' ' '; }
"""


def slurm_conf_lines() -> list[str]:
    """The slurm.conf lines teams need (``Key=Value``)."""
    return [f"{key}={value}" for key, value in SLURM_CONF_SETTINGS.items()]


def _gpus(value: int | None) -> str:
    return f"gres/gpu={_CLEAR if value is None else value}"


def _preempts(team: Team, teams: Sequence[Team]) -> list[str]:
    """The QoS a team's QoS may preempt: none for NEVER, else every team of lower priority."""
    if team.preemption is Preemption.NEVER:
        return []
    return sorted(other.name for other in teams if other.priority < team.priority)


def _qos_commands(team: Team, teams: Sequence[Team]) -> list[str]:
    preempt = ",".join(_preempts(team, teams))
    wall = _CLEAR if team.max_job_time_minutes is None else str(team.max_job_time_minutes)
    settings = [
        f"Priority={team.priority}",
        f"Preempt={preempt}" if preempt else "\"Preempt=''\"",
        "PreemptMode=REQUEUE",
        f"MaxTRESPerJob={_gpus(team.max_job_gpus)}",
        f"MaxWall={wall}",
    ]
    return [f"modify qos where name={team.name} set {' '.join(settings)}"]


def _account_commands(team: Team) -> list[str]:
    settings = [
        f"Fairshare={max(team.guaranteed_gpus, 1)}",
        f"GrpTRES={_gpus(team.gpu_limit)}",
        f"QOS={team.name}",
        f"DefaultQOS={team.name}",
        # undo a retirement (a team that comes back)
        f"GrpSubmitJobs={_CLEAR}",
        f"MaxJobs={_CLEAR}",
    ]
    description = shlex.quote(f"Description=fmconstructs team {team.name}")
    commands = [
        f"exists list account where name={team.name} format=account || "
        f'"$SACCTMGR" -i add account {team.name} {description} Organization={MANAGED_ORGANIZATION}',
        f"modify account where name={team.name} set {' '.join(settings)}",
    ]
    commands += [f"add_user {user} {team.name}" for user in team.users]
    if team.unix_group is not None:
        commands.append(f'for u in $(group_members {team.unix_group}); do add_user "$u" {team.name}; done')
    return commands


def _retire_commands(teams: Sequence[Team]) -> list[str]:
    """Accounts this script made that are no longer teams: no new jobs, nothing deleted, running jobs reported."""
    names = " ".join(team.name for team in teams)
    return [
        f'TEAMS=" {names} "',
        f'for account in $("$SACCTMGR" -n -P list account where organization={MANAGED_ORGANIZATION} '
        "format=account); do",
        '  case "$TEAMS" in *" $account "*) continue ;; esac',
        '  modify account where name="$account" set GrpTRES=gres/gpu=0 GrpSubmitJobs=0 MaxJobs=0',
        '  if jobs=$("$SQUEUE" -h -A "$account" -t RUNNING -o %i 2>/dev/null); then',
        '    running=$(printf "%s\\n" "$jobs" | grep -c . || true)',
        "  else running=unknown; fi",
        '  log "team $account removed: account kept with its history, no new jobs start;'
        ' $running running job(s) left to finish (not cancelled). Delete it with: sacctmgr delete account $account"',
        "done",
    ]


def render_sacctmgr_script(teams: Sequence[Team]) -> str:
    """The bash script that applies ``teams`` to Slurm's accounting database (see the module docstring)."""
    checked = check_teams(teams)
    slurm_team_names(checked)
    lines = [_PRELUDE, "# every QoS first: a Preempt list names other teams' QoS"]
    lines += [f'exists list qos where name={t.name} format=name || "$SACCTMGR" -i add qos {t.name}' for t in checked]
    for team in checked:
        lines.append(f"# team {team.name}")
        lines += _qos_commands(team, checked)
        lines += _account_commands(team)
    lines += _retire_commands(checked)
    lines.append(f'log "{len(checked)} team(s) applied"')
    return "\n".join(lines) + "\n"
