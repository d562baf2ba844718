"""Node-side steps for PCS: MIME multi-part user data and the NVIDIA IMEX prolog for UltraServers.

**MIME.** PCS merges launch-template user data with its own, so it must be a MIME multi-part archive; blocks of type
``text/x-shellscript`` run after the node registers with PCS and before ``slurmd`` starts (PCS User Guide "Working
with Amazon EC2 user data"). :func:`pcs_mime_user_data` wraps one shell script in that format, with the blank lines
the guide requires around each boundary.

**IMEX.** GPU-to-GPU traffic over NVLink across the instances of an UltraServer needs the NVIDIA IMEX service
configured with the addresses of the job's nodes. The PCS User Guide "Configure UltraServer instances"
(capacity-blocks-nvidia-imex) does this in a Slurm ``Prolog`` set on the cluster together with
``PrologFlags=Alloc,NoHold``, with the script present on every compute node (Slurm 25.05 or later; an AMI with the
NVIDIA driver and ``nvidia-imex`` enabled). :func:`imex_prolog_script` renders the guide's ``91_nvidia_imex_prolog.sh``
with the renderer the ParallelCluster backend shares (:mod:`fmconstructs.compute.imex`: the steps, and where both
renderings differ from their guides). Only exclusive jobs get IMEX configured: restarting IMEX would break other jobs
on the same nodes, so UltraServer queues are exclusive (:class:`~fmconstructs.pcs.PcsQueue` sets
``OverSubscribe=EXCLUSIVE`` on them) and jobs are submitted with ``--exclusive``.

What this guide has of its own (:func:`imex_prolog_spec`):

- ``p6e-gb200`` and ``p6e-gb300`` instances ("This prolog script supports p6e-gb200 and p6e-gb300 instance types").
- ``PATH`` starts with the cluster's Slurm (``/opt/aws/pcs/scheduler/slurm-<version>/bin``: "The Slurm installer
  provided by AWS PCS stores Slurm in /opt/aws/pcs/scheduler/slurm-version", PCS User Guide spank_install).
- The log file is ``/var/log/nvidia-imex-prolog.log`` (UNCONFIRMED that the guide's script uses this name); the prolog
  is installed as :data:`IMEX_PROLOG_PATH`.
- ``channel0`` is created with mode 0666 (where the guide gives no mode), as NVIDIA's IMEX guide lists it
  (``crw-rw-rw-``), so non-root jobs can open it.

The script runs on every node of the cluster (the ``Prolog`` is cluster-wide) and exits 0 at once on nodes that are
not UltraServer instances (p5 node groups of the same cluster).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .._validate import check_sequence, check_str
from ..compute.imex import (
    IMEX_CHANNEL_PATH,
    IMEX_PROLOG_FLAGS,
    IMEX_PROLOG_MODE,
    ImexPrologSpec,
    render_imex_prolog,
)
from ..compute.launch_template import MIME_BOUNDARY, render_mime_multipart
from ..errors import FmTypeError, FmValidationError
from ._checks import ABSOLUTE_PATH
from .slurm import DEFAULT_SLURM_VERSION

__all__ = [
    "IMEX_CHANNEL_MODE",
    "IMEX_CHANNEL_PATH",
    "IMEX_INSTANCE_FAMILIES",
    "IMEX_PROLOG_FLAGS",
    "IMEX_PROLOG_LOG_PATH",
    "IMEX_PROLOG_PATH",
    "IMEX_PROLOG_SCRIPT",
    "imex_prolog_install_commands",
    "imex_prolog_script",
    "imex_prolog_spec",
    "pcs_mime_user_data",
]

#: Where node groups of an IMEX-enabled cluster install the prolog (the cluster's ``Prolog`` setting).
IMEX_PROLOG_PATH = "/opt/fmconstructs/slurm/imex-prolog.sh"
#: The prolog's log file on PCS nodes (the file fmconstructs' PCS prolog has always written; UNCONFIRMED that the
#: guide's script uses this name).
IMEX_PROLOG_LOG_PATH = "/var/log/nvidia-imex-prolog.log"
#: "This prolog script supports p6e-gb200 and p6e-gb300 instance types" (PCS User Guide capacity-blocks-nvidia-imex).
IMEX_INSTANCE_FAMILIES = ("p6e-gb200", "p6e-gb300")
#: The channel's mode: 0666, as NVIDIA's IMEX guide "IMEX Channels" lists channel0 (``crw-rw-rw-``), so non-root jobs
#: can open it (the PCS guide's ``mknod`` gives no mode).
IMEX_CHANNEL_MODE = 0o666


#: A Slurm major version as PCS names it (``SlurmVersion`` values: ``25.11``). Matched whole.
_SLURM_VERSION = re.compile(r"\d{2}\.\d{2}")
#: A MIME content type on one line (``text/cloud-config``, ``text/x-shellscript; charset="us-ascii"``).
_CONTENT_TYPE = re.compile(r"[A-Za-z0-9.+-]+/[A-Za-z0-9.+-]+(;[ -~]*)?")


def _check_slurm_version(value: object) -> str:
    version: str = check_str(
        "slurm_version", value, pattern=_SLURM_VERSION, allowed="a Slurm version as PCS names it, such as '25.11'"
    )
    return version


def _check_path(value: object) -> str:
    path: str = check_str(
        "path", value, pattern=ABSOLUTE_PATH, allowed="an absolute path (letters, digits, '.', '_', '-', '/')"
    )
    return path


def imex_prolog_spec(
    slurm_version: str = DEFAULT_SLURM_VERSION.value, *, prolog_path: str = IMEX_PROLOG_PATH
) -> ImexPrologSpec:
    """What the PCS guide's IMEX prolog has of its own, for a cluster running ``slurm_version``."""
    version = _check_slurm_version(slurm_version)
    return ImexPrologSpec(
        guide='AWS PCS User Guide "Configure UltraServer instances" (capacity-blocks-nvidia-imex)',
        differences_in="fmconstructs/pcs/user_data.py",
        prolog_path=_check_path(prolog_path),
        # "The Slurm installer provided by AWS PCS stores Slurm in /opt/aws/pcs/scheduler/slurm-version" (PCS User
        # Guide spank_install).
        slurm_bin_dir=f"/opt/aws/pcs/scheduler/slurm-{version}/bin",
        log_file_path=IMEX_PROLOG_LOG_PATH,
        instance_families=IMEX_INSTANCE_FAMILIES,
        channel_mode=IMEX_CHANNEL_MODE,
    )


def imex_prolog_script(slurm_version: str = DEFAULT_SLURM_VERSION.value) -> str:
    """The IMEX prolog for a cluster running ``slurm_version`` (its Slurm commands come first on ``PATH``)."""
    return render_imex_prolog(imex_prolog_spec(slurm_version))


#: The prolog for the default Slurm version (shellcheck and behaviour tests read it).
IMEX_PROLOG_SCRIPT = imex_prolog_script()


def imex_prolog_install_commands(
    path: str = IMEX_PROLOG_PATH, *, slurm_version: str = DEFAULT_SLURM_VERSION.value
) -> list[str]:
    """Shell commands that install :func:`imex_prolog_script` at ``path`` (mode 0755, owned by root)."""
    path = _check_path(path)
    return [
        f"mkdir -p {path.rsplit('/', 1)[0]}",
        f"cat > {path} <<'FMCONSTRUCTS_EOF'",
        *render_imex_prolog(imex_prolog_spec(slurm_version, prolog_path=path)).rstrip("\n").splitlines(),
        "FMCONSTRUCTS_EOF",
        f"chmod {IMEX_PROLOG_MODE:04o} {path}",
    ]


def pcs_mime_user_data(script: str, *, extra_parts: Sequence[tuple[str, str]] = ()) -> str:
    """Wrap ``script`` (a ``#!/bin/bash`` script, may contain tokens) as the MIME multi-part archive PCS requires.

    ``extra_parts`` are further ``(content_type, body)`` blocks, e.g. ``("text/cloud-config", "...")`` to run
    before the node registers with PCS.
    """
    check_str("script", script)
    parts = check_sequence("extra_parts", extra_parts, _check_part)
    return render_mime_multipart([*parts, ('text/x-shellscript; charset="us-ascii"', script)])


def _check_part(parameter: str, value: object) -> tuple[str, str]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise FmTypeError(parameter, value, f"a (content_type, body) pair of str (got a {type(value).__name__})")
    content_type, body = value
    check_str(f"{parameter} content_type", content_type, pattern=_CONTENT_TYPE, allowed="a one-line MIME content type")
    check_str(f"{parameter} body", body)
    if MIME_BOUNDARY in body:
        raise FmValidationError(f"{parameter} body", "...", f"a body without the MIME boundary {MIME_BOUNDARY!r}")
    return content_type, body
