#!/usr/bin/env python3
"""Slurm node states as Prometheus metrics, for node exporter's textfile collector on the login node.

Runs ``sinfo --noheader --format='%T %D'`` and writes ``fm_slurm_nodes{state}`` (nodes per state, state flags such
as ``*`` (not responding) or ``~`` (powered down) stripped) and ``fm_slurm_collector_success``. Standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# States reported even when zero, so that alerts can tell "none down" from "not collected".
KNOWN_STATES = ("allocated", "completing", "down", "drained", "draining", "fail", "failing", "idle", "mixed")
_FLAGS = re.compile(r"[*~#!%$@^+-]+$")


def parse_sinfo(output: str) -> dict[str, int]:
    """``state -> node count`` from ``sinfo -h -o '%T %D'`` output."""
    counts = dict.fromkeys(KNOWN_STATES, 0)
    for line in output.splitlines():
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            continue
        state = _FLAGS.sub("", parts[0].lower())
        counts[state] = counts.get(state, 0) + int(parts[1])
    return counts


def render(counts: dict[str, int] | None) -> str:
    lines = [
        "# HELP fm_slurm_nodes Slurm nodes per state (sinfo %T).",
        "# TYPE fm_slurm_nodes gauge",
    ]
    for state, count in sorted((counts or {}).items()):
        lines.append(f'fm_slurm_nodes{{state="{state}"}} {count}')
    lines += [
        "# HELP fm_slurm_collector_success 1 if sinfo ran and parsed, else 0.",
        "# TYPE fm_slurm_collector_success gauge",
        f"fm_slurm_collector_success {0 if counts is None else 1}",
    ]
    return "\n".join(lines) + "\n"


def run_sinfo(sinfo: str = "sinfo") -> dict[str, int] | None:
    try:
        proc = subprocess.run(
            [sinfo, "--noheader", "--format=%T %D"], capture_output=True, text=True, timeout=30, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_sinfo(proc.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("output", type=Path)
    parser.add_argument("--sinfo", default="sinfo")
    args = parser.parse_args(argv)
    text = render(run_sinfo(args.sinfo))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=args.output.parent, prefix=".fm_slurm.", suffix=".tmp")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
