"""The Slurm renderer: the sacctmgr script (accounts, QoS, associations, limits) and the slurm.conf lines.

The script is run against a fake ``sacctmgr``/``squeue`` (a small bash stub keeping its state in files) to prove it is
idempotent (a second run adds nothing) and that a removed team's account is kept, closed to new jobs and reported,
never deleted. Real Slurm (slurmdbd) runs it in the cluster twin, not here.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fmconstructs.errors import FmValidationError
from fmconstructs.teams import Preemption, Team
from fmconstructs.teams.slurm import SLURM_CONF_SETTINGS, render_sacctmgr_script, slurm_conf_lines

TEAMS = [
    Team(
        name="research",
        users=["alice", "bob"],
        unix_group="ml",
        guaranteed_gpus=16,
        borrowing_limit_gpus=8,
        priority=50,
        preemption=Preemption.LOWER_PRIORITY,
        max_job_gpus=16,
        max_job_time_minutes=1440,
    ),
    Team(name="prod", users=["carol"], guaranteed_gpus=8, priority=90),
    Team(name="dev", users=["dave"], preemption=Preemption.NEVER),
]

#: A stand-in for sacctmgr: ``list`` prints what was added, ``add`` records it, ``modify`` answers "Nothing modified"
#: (exit 1) when the same change was made before, as sacctmgr does. Every call is logged.
FAKE_SACCTMGR = r"""#!/bin/bash
state="$FAKE_STATE"; echo "$*" >> "$state/calls"
args=("$@"); while [[ "${args[0]}" == -* ]]; do args=("${args[@]:1}"); done
verb=${args[0]}; entity=${args[1]}
case "$verb" in
  list)
    if [ "$entity" = account ] && [[ "${args[2]}" == where ]] && [[ "${args[3]}" == organization=* ]]; then
      cat "$state/accounts" 2>/dev/null; exit 0; fi
    key="$entity ${args[3]#*=}"; [ "$entity" = association ] && key="association ${args[3]#*=} ${args[4]#*=}"
    grep -qxF "$key" "$state/objects" 2>/dev/null && echo "${args[3]#*=}"; exit 0 ;;
  add)
    if [ "$entity" = user ]; then echo "association ${args[2]} ${args[3]#*=}" >> "$state/objects";
    else echo "$entity ${args[2]}" >> "$state/objects"; fi
    [ "$entity" = account ] && echo "${args[2]}" >> "$state/accounts"; exit 0 ;;
  modify)
    if grep -qxF "$*" "$state/modified" 2>/dev/null; then echo " Nothing modified"; exit 1; fi
    echo "$*" >> "$state/modified"; exit 0 ;;
  delete) echo "DELETE CALLED" >> "$state/calls"; exit 0 ;;
esac
"""
FAKE_SQUEUE = "#!/bin/bash\nprintf '101\\n102\\n'\n"


def test_the_script_adds_every_qos_then_accounts_with_limits_and_users():
    script = render_sacctmgr_script(TEAMS)
    assert script.startswith("#!/bin/bash\n") and "set -euo pipefail" in script
    assert script.index("add qos dev") < script.index("modify qos where name=research")  # Preempt names dev
    assert (
        "modify qos where name=research set Priority=50 Preempt=dev PreemptMode=REQUEUE MaxTRESPerJob=gres/gpu=16 "
        "MaxWall=1440" in script
    )
    assert "modify qos where name=prod set Priority=90 Preempt=dev,research PreemptMode=REQUEUE" in script
    assert (
        "modify qos where name=dev set Priority=0 \"Preempt=''\" PreemptMode=REQUEUE MaxTRESPerJob=gres/gpu=-1"
        in script
    )
    assert (
        "modify account where name=research set Fairshare=16 GrpTRES=gres/gpu=24 QOS=research DefaultQOS=research"
        in script
    )
    assert "modify account where name=prod set Fairshare=8 GrpTRES=gres/gpu=-1" in script
    assert "add_user alice research" in script and "group_members ml" in script
    assert "delete" not in script.replace("sacctmgr delete account $account", "")


def test_the_slurm_conf_lines_turn_on_qos_priority_preemption_limits_and_gpu_tracking():
    assert slurm_conf_lines() == [
        "PriorityType=priority/multifactor",
        "PriorityWeightQOS=10000",
        "PreemptType=preempt/qos",
        "PreemptMode=REQUEUE",
        "AccountingStorageEnforce=associations,limits,qos",
        "AccountingStorageTRES=gres/gpu",
    ]
    assert SLURM_CONF_SETTINGS["PreemptType"] == "preempt/qos"


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
def test_the_script_passes_shellcheck(tmp_path: Path):
    path = tmp_path / "teams.sh"
    path.write_text(render_sacctmgr_script(TEAMS))
    result = subprocess.run(["shellcheck", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


def _run(tmp_path: Path, script: str) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in (
        ("sacctmgr", FAKE_SACCTMGR),
        ("squeue", FAKE_SQUEUE),
        ("getent", "#!/bin/bash\necho ml:x:1:erin,frank\n"),
    ):
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    path = tmp_path / "teams.sh"
    path.write_text(script)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "FAKE_STATE": str(state)}
    return subprocess.run(["bash", str(path)], capture_output=True, text=True, env=env, check=False)


def test_the_script_is_idempotent_a_second_run_adds_nothing(tmp_path: Path):
    first = _run(tmp_path, render_sacctmgr_script(TEAMS))
    assert first.returncode == 0, first.stderr
    calls = (tmp_path / "state" / "calls").read_text().splitlines()
    adds = [c for c in calls if " add " in f" {c} "]
    assert len(adds) == 3 + 3 + 6  # QoS, accounts, users (alice, bob, erin, frank from the group, carol, dave)
    second = _run(tmp_path, render_sacctmgr_script(TEAMS))
    assert second.returncode == 0, second.stderr
    again = (tmp_path / "state" / "calls").read_text().splitlines()[len(calls) :]
    assert [c for c in again if " add " in f" {c} "] == []
    assert "3 team(s) applied" in second.stdout


def test_a_removed_team_keeps_its_account_takes_no_new_jobs_and_is_reported(tmp_path: Path):
    assert _run(tmp_path, render_sacctmgr_script(TEAMS)).returncode == 0
    result = _run(tmp_path, render_sacctmgr_script(TEAMS[:2]))
    assert result.returncode == 0, result.stderr
    calls = (tmp_path / "state" / "calls").read_text()
    assert "-i modify account where name=dev set GrpTRES=gres/gpu=0 GrpSubmitJobs=0 MaxJobs=0" in calls
    assert "DELETE CALLED" not in calls
    assert "team dev removed: account kept with its history" in result.stdout
    assert "2 running job(s) left to finish (not cancelled)" in result.stdout


def test_the_renderer_refuses_names_slurm_would_change_or_split():
    with pytest.raises(FmValidationError, match=r"^teams\[0\]\.name"):
        render_sacctmgr_script([Team(name="Research")])
    with pytest.raises(FmValidationError, match=r"^teams\[1\]\.name"):
        render_sacctmgr_script([Team(name="a"), Team(name="a")])
