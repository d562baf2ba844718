"""Node-side files the backends install around the checks: a prolog directory runner and the boot gate's unit.

- :func:`render_prolog_runner`: one Slurm ``Prolog`` program that runs every executable file of a directory in name
  order and stops at the first that fails, with its exit status (a prolog that exits non-zero drains the node and
  requeues the job: Slurm "Prolog and Epilog Guide"). For a scheduler that takes one ``Prolog`` path (PCS custom
  settings carry one value), so the IMEX prolog and the node checks can share it, in the spirit of ParallelCluster's
  ``/opt/slurm/etc/scripts/prolog.d/`` (User Guide "Slurm prolog and epilog"). An empty directory passes.
- :func:`render_epilog_runner`: the ``Epilog`` counterpart: runs EVERY executable file of a directory in name order
  (clean-up must not be skipped because an earlier piece failed) and exits with the first non-zero status (a failing
  epilog drains the node: Slurm "Prolog and Epilog Guide"). An empty directory passes.
- :func:`render_prolog_dispatch`: a prolog for a directory every node shares (ParallelCluster's
  ``/opt/slurm/etc/scripts/prolog.d/`` lives on the head node) that runs the node's own prolog checks when the node
  has them (nodes of queues without node health pass at once).
- :func:`render_boot_gate_unit`: a systemd oneshot service that runs the boot gate at every boot (a node that
  reboots is checked again), for backends whose user data runs before ``slurmd`` starts (PCS: "after the node
  registers with PCS and before slurmd starts", PCS User Guide "Working with Amazon EC2 user data"), so the gate
  cannot run inline there; it waits for ``slurmd`` itself (``render_slurm_boot_gate(ready_command=...)``).
- :func:`dcgm_host_commands`: DCGM (``dcgmi``, ``nv-hostengine``) on a host image that lacks it, so the BOOT checks'
  ``dcgm-diag`` runs there as on the Slurm backends' images (the EKS node-check gate runs them on the host before its
  checks: the EKS AL2023 NVIDIA AMI installs the driver, Fabric Manager, IMEX and the NVIDIA container toolkit but no
  DCGM: awslabs/amazon-eks-ami ``templates/al2023/provisioners/install-nvidia-driver.sh``).

No aws_cdk import.
"""

from __future__ import annotations

import re

from .._validate import check_count, check_str

__all__ = [
    "BOOT_GATE_UNIT_NAME",
    "boot_gate_unit_commands",
    "dcgm_host_commands",
    "render_boot_gate_unit",
    "render_epilog_runner",
    "render_prolog_dispatch",
    "render_prolog_runner",
]

#: The systemd service that runs the boot gate.
BOOT_GATE_UNIT_NAME = "fmconstructs-node-checks.service"

# DCGM 4 on an RPM distribution: the package for the driver's CUDA major version, with its weak dependencies (the
# diagnostics), then the host engine's service. NVIDIA DCGM "Install DCGM" lists Amazon Linux 2023 among the supported
# distributions; the package name ``datacenter-gpu-manager-4-cuda<major>`` and ``--setopt=install_weak_deps=True`` are
# from that guide as remembered, not re-read here (UNCONFIRMED); the service ``nvidia-dcgm`` is the unit DCGM's
# packages install (``systemctl --now enable nvidia-dcgm``, NVIDIA's getting-started steps). The package comes from
# NVIDIA's CUDA repository, which the EKS NVIDIA AMI leaves configured (install-nvidia-driver.sh adds
# cuda-amzn2023.repo; cleanup.sh does not remove it): a node without a route to it logs the failure, and the gate's
# dcgm-diag check then fails with dcgmi missing, so the node keeps its taint and FmNodeCheckFailed names it. Then up
# to 30 s for the host engine to answer (``dcgmi discovery -l`` lists the GPUs), so the diagnostics find it.
_DCGM_INSTALL = r"""if ! command -v dcgmi >/dev/null 2>&1; then
  cuda=$(nvidia-smi 2>/dev/null | sed -n -E 's/.*CUDA Version: ([0-9]+)[.].*/\1/p' | head -n 1)
  dnf install -y --setopt=install_weak_deps=True "datacenter-gpu-manager-4-cuda${cuda:-12}" ||
    echo "fmconstructs: DCGM not installed (the dcgm-diag node check will fail)" >&2
fi
if command -v nv-hostengine >/dev/null 2>&1; then
  systemctl enable --now nvidia-dcgm || echo "fmconstructs: nvidia-dcgm did not start" >&2
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    dcgmi discovery -l >/dev/null 2>&1 && break
    sleep 3
  done
fi"""

_ABSOLUTE_PATH = re.compile(r"/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*")
_PATH_TEXT = "an absolute path without a trailing '/' (letters, digits, '.', '_', '-', '/')"

_RUNNER = r"""#!/bin/bash
# fmconstructs Slurm prolog runner (fmconstructs/health/install.py): runs each executable file of @DIR@ in name order;
# the first that exits non-zero ends the prolog with its status (Slurm then drains the node and requeues the job).
set -u
dir="${FMCONSTRUCTS_ROOT:-}@DIR@" # FMCONSTRUCTS_ROOT: tests only
for script in "$dir"/*; do
  if [ ! -f "$script" ] || [ ! -x "$script" ]; then
    continue
  fi
  "$script"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "prolog ${script##*/} exited ${rc}" >&2
    exit "$rc"
  fi
done
exit 0
"""

_EPILOG_RUNNER = r"""#!/bin/bash
# fmconstructs Slurm epilog runner (fmconstructs/health/install.py): runs every executable file of @DIR@ in name order,
# then exits with the first non-zero status (Slurm then drains the node).
set -u
dir="${FMCONSTRUCTS_ROOT:-}@DIR@" # FMCONSTRUCTS_ROOT: tests only
status=0
for script in "$dir"/*; do
  if [ ! -f "$script" ] || [ ! -x "$script" ]; then
    continue
  fi
  "$script"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "epilog ${script##*/} exited ${rc}" >&2
    if [ "$status" -eq 0 ]; then
      status=$rc
    fi
  fi
done
exit "$status"
"""

_DISPATCH = r"""#!/bin/bash
# fmconstructs prolog dispatch (fmconstructs/health/install.py): runs this node's own prolog checks, @CHECKS@, when
# its node set-up installed them; other nodes pass.
checks="${FMCONSTRUCTS_ROOT:-}@CHECKS@" # FMCONSTRUCTS_ROOT: tests only
@FAILED@if [ ! -x "$checks" ]; then
  exit 0
fi
exec "$checks"
"""

_UNIT = """[Unit]
Description=fmconstructs node checks and Slurm boot gate (fmconstructs/health)
After=network-online.target
Wants=network-online.target

[Service]
Type=oneshot
ExecStart=@GATE@
TimeoutStartSec=@TIMEOUT@

[Install]
WantedBy=multi-user.target
"""


def _path(parameter: str, value: object) -> str:
    path: str = check_str(parameter, value, pattern=_ABSOLUTE_PATH, allowed=_PATH_TEXT)
    return path


def render_prolog_runner(directory: str) -> str:
    """The ``Prolog`` program that runs ``directory``'s executables in name order (see the module notes)."""
    return _RUNNER.replace("@DIR@", _path("directory", directory))


def render_epilog_runner(directory: str) -> str:
    """The ``Epilog`` program that runs every executable of ``directory`` in name order (see the module notes)."""
    return _EPILOG_RUNNER.replace("@DIR@", _path("directory", directory))


_FAILED = """failed="${FMCONSTRUCTS_ROOT:-}@MARKER@" # written by a boot gate that failed (GateHold)
if [ -f "$failed" ]; then
  echo "fmconstructs: this node failed its boot checks ($(head -c 200 "$failed")); no job starts here" >&2
  exit 1
fi
"""


def render_prolog_dispatch(checks_path: str, *, failed_marker: str | None = None) -> str:
    """A shared prolog that runs the node-local ``checks_path`` when it exists (see the module notes); with
    ``failed_marker`` (a boot gate's :attr:`~fmconstructs.health.slurm_gate.GateHold.marker_path`) it fails first on
    a node whose boot gate failed, so a job that reaches a held node is requeued and the node drained."""
    failed = "" if failed_marker is None else _FAILED.replace("@MARKER@", _path("failed_marker", failed_marker))
    return _DISPATCH.replace("@CHECKS@", _path("checks_path", checks_path)).replace("@FAILED@", failed)


def render_boot_gate_unit(gate_path: str, *, timeout_seconds: int) -> str:
    """The systemd unit running ``gate_path`` once per boot; ``timeout_seconds`` bounds it (the gate's node wait
    plus its checks' total budget, with a margin)."""
    gate = _path("gate_path", gate_path)
    seconds = check_count("timeout_seconds", timeout_seconds, minimum=1, maximum=86_400)
    return _UNIT.replace("@GATE@", gate).replace("@TIMEOUT@", str(seconds))


def boot_gate_unit_commands() -> list[str]:
    """Enable the unit for later boots and start it now without waiting (user data must not block on the gate: it
    waits for ``slurmd``, which starts after the user data)."""
    return [
        "systemctl daemon-reload",
        f"systemctl enable {BOOT_GATE_UNIT_NAME}",
        f"systemctl start --no-block {BOOT_GATE_UNIT_NAME}",
    ]


def dcgm_host_commands() -> list[str]:
    """Shell lines (run as root on the host) that install DCGM when ``dcgmi`` is missing and start its host engine
    (``nvidia-dcgm``), so ``dcgmi diag`` of the BOOT checks can run. They never fail: a node where DCGM could not be
    installed fails its ``dcgm-diag`` check instead (named in the node's annotation and metrics)."""
    return _DCGM_INSTALL.splitlines()
