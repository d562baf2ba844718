"""Helpers of the remediation handler tests that a harness can reuse: an SSM client double that runs the handler's
Slurm script with bash, and fake Slurm commands (``sinfo``, ``scontrol``, ``squeue``) keeping node state in files.

:class:`ScriptSsm` keeps the contract of ``fmconstructs/remediation/handler/backends.py`` (module docstring):
``send_command`` runs ``Parameters["commands"][0]`` and answers ``{"Command": {"CommandId": ...}}``;
``get_command_invocation`` answers ``Status`` ("Success" on exit 0, else "Failed"), ``ResponseCode``,
``StandardOutputContent`` and ``StandardErrorContent``. Point ``path`` at real Slurm commands to drive a real cluster.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_SINFO = r"""#!/bin/bash
# fake sinfo: -h -N -o '%N %o %n' -> "name addr host" per node and partition (each node in two partitions)
for d in "$FAKE_SLURM"/nodes/*/; do
  d=${d%/}
  read -r addr <"$d/addr"
  read -r host <"$d/host"
  for _ in 1 2; do echo "${d##*/} $addr $host"; done
done
"""

_SCONTROL = r"""#!/bin/bash
# fake scontrol: show node, update nodename= state= reason=, reboot ASAP nextstate= reason= NODE
echo "scontrol $*" >>"$FAKE_SLURM/log"
[ -f "$FAKE_SLURM/fail" ] && grep -q -- "$1" "$FAKE_SLURM/fail" && exit 1
base() { if [ -s "$FAKE_SLURM/jobs/$1" ]; then echo ALLOCATED; else echo IDLE; fi; }
case "$1" in
  show)
    if [ "$2" = reservation ]; then [ -f "$FAKE_SLURM/reservations/$3" ] && exit 0; echo "not found" >&2; exit 1; fi
    d="$FAKE_SLURM/nodes/$3"
    [ -d "$d" ] || { echo "Node $3 not found" >&2; exit 1; }
    read -r addr <"$d/addr"; read -r host <"$d/host"; read -r state <"$d/state"; IFS= read -r reason <"$d/reason"
    echo "NodeName=$3 Arch=x86_64 CoresPerSocket=48"
    echo "   NodeAddr=$addr NodeHostName=$host Version=24.11.5"
    echo "   State=$state ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A"
    echo "   Partitions=gpu"
    [ -n "$reason" ] && echo "   Reason=$reason [root@2026-12-02T10:00:00]"
    exit 0 ;;
  create)
    # create reservation ReservationName=N Nodes=NODE ...: kept as reservations/N (its arguments); the node RESERVED
    name="" node=""
    for a in "${@:3}"; do case "$a" in ReservationName=*) name=${a#*=} ;; Nodes=*) node=${a#*=} ;; esac; done
    [ -n "$name" ] && [ -d "$FAKE_SLURM/nodes/$node" ] || exit 1
    mkdir -p "$FAKE_SLURM/reservations" && echo "${*:3}" >"$FAKE_SLURM/reservations/$name"
    read -r state <"$FAKE_SLURM/nodes/$node/state"; echo "$state+RESERVED" >"$FAKE_SLURM/nodes/$node/state"
    exit 0 ;;
  update)
    node="" state="" reason="" comment=""
    for a in "${@:2}"; do
      case "$a" in nodename=*) node=${a#nodename=} ;; state=*) state=${a#state=} ;; reason=*) reason=${a#reason=} ;;
        comment=*) comment=${a#comment=} ;; esac
    done
    d="$FAKE_SLURM/nodes/$node"
    [ -d "$d" ] || exit 1
    if [ -z "$state" ] && [ -n "$comment" ]; then printf '%s' "$comment" >"$d/comment"; exit 0; fi
    case "$state" in
      DRAIN) echo "$(base "$node")+DRAIN" >"$d/state" ;;
      DOWN) echo "DOWN+DRAIN" >"$d/state" ;;
      resume) echo "$(base "$node")" >"$d/state" ;;
    esac
    printf '%s' "$reason" >"$d/reason"
    exit 0 ;;
  reboot)
    node="${*: -1}" reason=""
    for a in "$@"; do case "$a" in reason=*) reason=${a#reason=} ;; esac; done
    d="$FAKE_SLURM/nodes/$node"
    echo "$(base "$node")+DRAIN+REBOOT_REQUESTED" >"$d/state"
    printf '%s' "$reason" >"$d/reason"
    exit 0 ;;
esac
exit 2
"""

_SQUEUE = r"""#!/bin/bash
# fake squeue: -h -w NODE -t STATES -o %i -> the job ids in jobs/NODE
node=""
while [ $# -gt 0 ]; do case "$1" in -w) node=$2; shift ;; esac; shift; done
cat "$FAKE_SLURM/jobs/$node" 2>/dev/null || true
"""


class FakeSlurm:
    """Fake Slurm commands in ``root/bin`` and their state in ``root`` (one folder per node)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "bin"
        for folder in (self.bin, root / "nodes", root / "jobs"):
            folder.mkdir(parents=True, exist_ok=True)
        for name, text in (("sinfo", _SINFO), ("scontrol", _SCONTROL), ("squeue", _SQUEUE)):
            path = self.bin / name
            path.write_text(text)
            path.chmod(0o755)
        (root / "log").write_text("")

    def add_node(
        self, name: str, addr: str, host: str, *, state: str = "IDLE", reason: str = "", jobs: tuple[str, ...] = ()
    ) -> None:
        node = self.root / "nodes" / name
        node.mkdir(exist_ok=True)
        (node / "addr").write_text(addr)
        (node / "host").write_text(host)
        (node / "state").write_text(state)
        (node / "reason").write_text(reason)
        self.set_jobs(name, *jobs)

    def set_jobs(self, name: str, *jobs: str) -> None:
        (self.root / "jobs" / name).write_text("".join(f"{j}\n" for j in jobs))

    def fail(self, subcommand: str) -> None:
        """Make ``scontrol <subcommand>`` fail."""
        (self.root / "fail").write_text(subcommand + "\n")

    def state(self, name: str) -> str:
        return (self.root / "nodes" / name / "state").read_text().strip()

    def reason(self, name: str) -> str:
        return (self.root / "nodes" / name / "reason").read_text()

    def comment(self, name: str) -> str:
        path = self.root / "nodes" / name / "comment"
        return path.read_text() if path.exists() else ""

    def reservation(self, name: str) -> str | None:
        """The arguments ``scontrol create reservation`` got for reservation ``name`` (None: no such reservation)."""
        path = self.root / "reservations" / name
        return path.read_text().strip() if path.exists() else None

    def log(self) -> list[str]:
        return (self.root / "log").read_text().splitlines()

    def env(self) -> dict[str, str]:
        return {"FAKE_SLURM": str(self.root)}


@dataclass
class ScriptSsm:
    """An SSM client double that runs each command with bash, ``path`` first on its PATH (see the module docstring).
    ``pending_polls``: how many polls answer "InProgress" before the result (0: at once)."""

    path: list[Path]
    env: dict[str, str] = field(default_factory=dict)
    pending_polls: int = 0
    sent: list[dict[str, Any]] = field(default_factory=list)
    polls: int = 0
    _results: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def send_command(self, **kwargs: Any) -> dict[str, Any]:
        self.sent.append(kwargs)
        script = kwargs["Parameters"]["commands"][0]
        env = {**os.environ, **self.env, "PATH": os.pathsep.join([*map(str, self.path), os.environ["PATH"]])}
        done = subprocess.run(["bash", "-s"], input=script, capture_output=True, text=True, env=env, check=False)
        command_id = str(uuid.uuid4())
        for host in kwargs["InstanceIds"]:
            self._results[(command_id, host)] = {
                "CommandId": command_id,
                "InstanceId": host,
                "Status": "Success" if done.returncode == 0 else "Failed",
                "ResponseCode": done.returncode,
                "StandardOutputContent": done.stdout,
                "StandardErrorContent": done.stderr,
                "_pending": self.pending_polls,
            }
        return {"Command": {"CommandId": command_id}}

    def get_command_invocation(self, *, CommandId: str, InstanceId: str) -> dict[str, Any]:
        self.polls += 1
        answer = self._results[(CommandId, InstanceId)]
        if answer["_pending"] > 0:
            answer["_pending"] -= 1
            return {"CommandId": CommandId, "InstanceId": InstanceId, "Status": "InProgress"}
        return {k: v for k, v in answer.items() if not k.startswith("_")}

    def scripts(self) -> list[str]:
        return [str(s["Parameters"]["commands"][0]) for s in self.sent]
