"""Node-side steps for PCS: MIME multi-part user data and the NVIDIA IMEX prolog for UltraServers.

**MIME.** PCS merges launch-template user data with its own, so it must be a MIME multi-part archive; blocks of type
``text/x-shellscript`` run after the node registers with PCS and before ``slurmd`` starts (PCS User Guide "Working
with Amazon EC2 user data"). :func:`pcs_mime_user_data` wraps one shell script in that format, with the blank lines
the guide requires around each boundary.

**IMEX.** GPU-to-GPU traffic over NVLink across the instances of an UltraServer needs the NVIDIA IMEX service
configured with the addresses of the job's nodes. PCS documents doing this in a Slurm ``Prolog`` set on the cluster,
with the script present on every compute node (PCS User Guide "Configure UltraServer instances"; needs Slurm >= 25.05
and an AMI with the NVIDIA driver and ``nvidia-imex`` enabled). :data:`IMEX_PROLOG_SCRIPT` implements the documented
steps; because the cluster's ``Prolog`` runs on every node of the cluster, it exits 0 at once on nodes without IMEX
(e.g. p5), and it never fails the job because IMEX is slow to start (it logs instead).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..compute.launch_template import render_mime_multipart

#: Where node groups of an IMEX-enabled cluster install the prolog (the cluster's ``Prolog`` setting).
IMEX_PROLOG_PATH = "/opt/fmconstructs/slurm/imex-prolog.sh"

IMEX_PROLOG_SCRIPT = r"""#!/bin/bash
# fmconstructs: Slurm prolog for NVIDIA IMEX on EC2 UltraServers (AWS PCS "Configure UltraServer instances").
# Writes the addresses of the job's nodes to the IMEX node list and (re)starts nvidia-imex when the list changes.
set -uo pipefail
log() { logger -t fmconstructs-imex-prolog "$*" 2>/dev/null || echo "fmconstructs-imex-prolog: $*"; }
nodes_config="${FMCONSTRUCTS_IMEX_NODES_CONFIG:-/etc/nvidia-imex/nodes_config.cfg}"
if ! command -v nvidia-imex-ctl >/dev/null 2>&1 || ! systemctl cat nvidia-imex.service >/dev/null 2>&1; then
  exit 0  # not an IMEX node (no NVLink domain across instances): nothing to do
fi
if [ -z "${SLURM_JOB_NODELIST:-}" ]; then
  log "SLURM_JOB_NODELIST is empty; leaving IMEX as it is"
  exit 0
fi
new_config=$(mktemp)
trap 'rm -f "$new_config"' EXIT
for node in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do
  scontrol show node "$node" --oneliner | tr ' ' '\n' | awk -F= '$1 == "NodeAddr" {print $2}'
done > "$new_config"
if [ ! -s "$new_config" ]; then
  log "no node addresses found for $SLURM_JOB_NODELIST; leaving IMEX as it is"
  exit 0
fi
mkdir -p "$(dirname "$nodes_config")"
if cmp -s "$new_config" "$nodes_config" && systemctl is-active --quiet nvidia-imex; then
  log "IMEX already configured for $SLURM_JOB_NODELIST"
  exit 0
fi
cp "$new_config" "$nodes_config"
systemctl restart nvidia-imex
for _ in $(seq 1 60); do
  if nvidia-imex-ctl -q 2>/dev/null | grep -q READY; then
    log "IMEX domain ready for $SLURM_JOB_NODELIST"
    exit 0
  fi
  sleep 2
done
log "IMEX domain not ready after 120 s for $SLURM_JOB_NODELIST; the job continues (check nvidia-imex logs)"
exit 0
"""


def imex_prolog_install_commands(path: str = IMEX_PROLOG_PATH) -> list[str]:
    """Shell commands that install :data:`IMEX_PROLOG_SCRIPT` at ``path`` (mode 0755, owned by root)."""
    return [
        f"mkdir -p {path.rsplit('/', 1)[0]}",
        f"cat > {path} <<'FMCONSTRUCTS_EOF'",
        *IMEX_PROLOG_SCRIPT.rstrip("\n").splitlines(),
        "FMCONSTRUCTS_EOF",
        f"chmod 0755 {path}",
    ]


def pcs_mime_user_data(script: str, *, extra_parts: Sequence[tuple[str, str]] = ()) -> str:
    """Wrap ``script`` (a ``#!/bin/bash`` script, may contain tokens) as the MIME multi-part archive PCS requires.

    ``extra_parts`` are further ``(content_type, body)`` blocks, e.g. ``("text/cloud-config", "...")`` to run
    before the node registers with PCS.
    """
    return render_mime_multipart([*extra_parts, ('text/x-shellscript; charset="us-ascii"', script)])
