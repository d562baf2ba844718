#!/usr/bin/env python3
"""EFA hardware counters as Prometheus metrics, for node exporter's textfile collector.

Reads ``/sys/class/infiniband/<device>/ports/<port>/hw_counters/<counter>`` (EC2 EFA driver) and writes
``fm_efa_<counter>_total{device,port}`` plus ``fm_efa_collector_success``. Standard library only: it runs with the
node's system Python, from a systemd timer. Run ``efa_textfile.py --once OUTPUT`` to write one snapshot.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

SYSFS_ROOT = Path("/sys/class/infiniband")
PREFIX = "fm_efa_"
_NAME = re.compile(r"^[a-z0-9_]+$")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def read_counters(root: Path = SYSFS_ROOT) -> dict[tuple[str, str, str], int]:
    """``(device, port, counter) -> value`` for every readable integer counter."""
    out: dict[tuple[str, str, str], int] = {}
    if not root.is_dir():
        return out
    for device in sorted(root.iterdir()):
        ports = device / "ports"
        if not ports.is_dir():
            continue
        for port in sorted(ports.iterdir()):
            counters = port / "hw_counters"
            if not counters.is_dir():
                continue
            for path in sorted(counters.iterdir()):
                if not _NAME.match(path.name):
                    continue
                try:
                    out[(device.name, port.name, path.name)] = int(path.read_text().strip())
                except (OSError, ValueError):
                    continue
    return out


def render(counters: dict[tuple[str, str, str], int]) -> str:
    """Prometheus text exposition of the counters."""
    by_counter: dict[str, list[tuple[str, str, int]]] = {}
    for (device, port, counter), value in counters.items():
        by_counter.setdefault(counter, []).append((device, port, value))
    lines: list[str] = []
    for counter in sorted(by_counter):
        metric = f"{PREFIX}{counter}_total"
        lines.append(f"# HELP {metric} EFA hardware counter {counter} (sysfs hw_counters).")
        lines.append(f"# TYPE {metric} counter")
        for device, port, value in sorted(by_counter[counter]):
            lines.append(f'{metric}{{device="{_escape(device)}",port="{_escape(port)}"}} {value}')
    lines.append(f"# HELP {PREFIX}collector_success 1 if EFA counters were read, 0 if none were found.")
    lines.append(f"# TYPE {PREFIX}collector_success gauge")
    lines.append(f"{PREFIX}collector_success {1 if counters else 0}")
    return "\n".join(lines) + "\n"


def write_atomically(text: str, output: Path) -> None:
    """Write via a temporary file and rename, so node exporter never reads a partial file."""
    output.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=output.parent, prefix=".fm_efa.", suffix=".tmp")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, output)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("output", type=Path, help="e.g. /var/lib/node_exporter/textfile/fm_efa.prom")
    parser.add_argument("--sysfs-root", type=Path, default=SYSFS_ROOT)
    args = parser.parse_args(argv)
    write_atomically(render(read_counters(args.sysfs_root)), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
