"""Slurm prolog and epilog pieces: one script per behaviour, installed by each backend in its own directories.

A behaviour that runs around every job (the node checks, the IMEX prolog, the dcgm-exporter job mapping) is rendered
once, below the backends, as a :class:`SlurmScriptPiece`: which hook (``Prolog`` or ``Epilog``), a file name whose
leading number orders it among the other pieces, and the script. A backend only says where the pieces go
(:class:`SlurmScriptDirs`, data) and how its slurmd gets to run every file of those directories:

- AWS PCS takes ONE ``Prolog`` and ONE ``Epilog`` value (PCS API ``SlurmCustomSetting``), so the cluster's
  settings point at runners (:func:`fmconstructs.health.install.render_prolog_runner`,
  :func:`fmconstructs.health.install.render_epilog_runner`) of ``/opt/fmconstructs/slurm/prolog.d`` and ``epilog.d``
  (:meth:`fmconstructs.pcs.PcsCluster.add_slurm_scripts`).
- ParallelCluster's ``slurm.conf`` already runs every file of its shared directories:
  ``Prolog=/opt/slurm/etc/scripts/prolog.d/*`` and ``Epilog=/opt/slurm/etc/scripts/epilog.d/*``
  (aws/aws-parallelcluster-cookbook cookbooks/aws-parallelcluster-slurm/templates/default/slurm/slurm.conf.erb
  lines 45-46; the directories are created by recipes/config/config_health_check.rb lines 18-38), so the pieces are
  copied there (:meth:`fmconstructs.parallelcluster.ParallelCluster.add_slurm_scripts`).

Which piece runs first depends on how the backend runs the directory (:class:`SlurmRunOrder`, :func:`run_order`):
the library's runners go in name order; Slurm's own glob (``Prolog=<dir>/*``) runs the files "in reverse
alphabetical order (z-a -> Z-A -> 9-0)" and stops at the first that fails (Slurm "Prolog and Epilog Guide",
doc/html/prolog_epilog.shtml since SchedMD/slurm 19be282 "Clarify ordering of multiple prolog/epilog scripts",
2024-01; src/plugins/prep/script/prep_script_slurmd.c at 284c3b9: ``glob(3)`` results ``list_push``-ed, i.e.
prepended, then ``list_for_each``, which stops when a script fails). So a backend whose slurmd runs a glob names
its pieces so that the one meant to run first sorts last (ParallelCluster:
:data:`fmconstructs.parallelcluster.slurm_scripts.PROLOG_ORDER`).

A piece may need ``PrologFlags`` (e.g. ``Alloc``, so the prolog runs at allocation on every node of the job);
:func:`merge_flags` merges flag lists without repeats, keeping the first spelling.

No aws_cdk import.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

from .._validate import check_enum, check_str
from ..errors import FmTypeError, FmValidationError, is_token

__all__ = [
    "NODE_DIR",
    "NODE_DIR_TEXT",
    "SLURM_SCRIPT_PATH",
    "SlurmHook",
    "SlurmRunOrder",
    "SlurmScriptDirs",
    "SlurmScriptPiece",
    "merge_flags",
    "run_order",
    "slurm_piece_header",
    "slurm_piece_script",
    "slurm_script_files",
]

_NAME = re.compile(r"[0-9]{2}[-_][A-Za-z0-9][A-Za-z0-9._-]{0,62}")
_NAME_TEXT = "two digits, '-' or '_', then letters, digits, '.', '_' or '-' (at most 66 characters)"
#: A directory on the node that node-side scripts write or run from: absolute, segments of letters, digits and '._-'
#: that start with a letter, digit or '_' (so no '..' and no hidden segment), no trailing '/'. One rule for every
#: Slurm piece directory, the dcgm job-mapping directory and the application-metrics discovery directory.
NODE_DIR = re.compile(r"/(?:[A-Za-z0-9_][A-Za-z0-9._-]*/)*[A-Za-z0-9_][A-Za-z0-9._-]*")
NODE_DIR_TEXT = "an absolute directory path of letters, digits, '.', '_' and '-' (no '..', no trailing '/')"
_DIR, _DIR_TEXT = NODE_DIR, NODE_DIR_TEXT
#: slurmd runs Prolog and Epilog with no search path (Slurm "Prolog and Epilog Guide",
#: https://slurm.schedmd.com/prolog_epilog.html), so every piece sets this one.
SLURM_SCRIPT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def slurm_piece_header(*, what: str, module: str, role: str, tag: str, variables: Sequence[str]) -> list[str]:
    """The first lines of a Slurm Prolog/Epilog piece: shebang, what it is, why it always exits 0, PATH, the given
    ``name=value`` shell assignments, ``job_id`` and a ``log`` function tagged ``tag`` (syslog, else stderr)."""
    return [
        "#!/bin/bash",
        f"# fmconstructs: {what}, Slurm {role} (generated; see {module}).",
        "# Always exits 0: a failing Prolog/Epilog drains the node (https://slurm.schedmd.com/prolog_epilog.html).",
        f"PATH={SLURM_SCRIPT_PATH}",
        "export PATH",
        *variables,
        'job_id="${SLURM_JOB_ID:-}"',
        "log() {",
        f'  logger -t {tag} -- "$*" 2>/dev/null || echo "{tag}: $*" >&2',
        "}",
    ]


def slurm_piece_script(prelude: Sequence[str], main: Sequence[str], *, nothing: str) -> str:
    """A Slurm Prolog/Epilog piece: ``prelude`` (:func:`slurm_piece_header` and the piece's own definitions), then a
    ``main`` function that returns 0 with a log line ("no numeric SLURM_JOB_ID; ``nothing``") for a job id that is not
    a number and else runs the ``main`` lines (indented by the caller); it always exits 0."""
    lines = [
        *prelude,
        "main() {",
        f'  case "$job_id" in ""|*[!0-9]*) log "no numeric SLURM_JOB_ID; {nothing}"; return 0 ;; esac',
        *main,
        "}",
        "main || true",
        "exit 0",
    ]
    return "\n".join(lines) + "\n"


_FLAG = re.compile(r"[A-Za-z]+")


class SlurmHook(str, Enum):
    """When slurmd runs a piece (Slurm "Prolog and Epilog Guide": both run as SlurmdUser on the compute node)."""

    PROLOG = "Prolog"
    EPILOG = "Epilog"


class SlurmRunOrder(str, Enum):
    """How a backend's slurmd runs the files of a prolog or epilog directory (see the module notes)."""

    #: fmconstructs' runners (:func:`fmconstructs.health.install.render_prolog_runner`): name order.
    NAME = "name"
    #: Slurm's own glob (``Prolog=<dir>/*``): reverse alphabetical order, byte-wise (z-a -> Z-A -> 9-0).
    SLURM_GLOB = "slurm-glob"


def run_order(names: Iterable[str], order: SlurmRunOrder) -> list[str]:
    """``names`` in the order slurmd runs them under ``order`` (first runs first)."""
    checked = check_enum("order", order, SlurmRunOrder)
    # glob(3) sorts with strcoll(3), so slurmd's locale could reorder names that differ only in punctuation or case
    # (which locale slurmd has is UNCONFIRMED); names whose leading digits differ sort the same in any locale.
    return sorted(names, reverse=checked is SlurmRunOrder.SLURM_GLOB)


@dataclass(frozen=True, kw_only=True)
class SlurmScriptPiece:
    """One script of a prolog or epilog directory: ``name`` orders it (``20-dcgm-job-mapping.sh``), ``text`` is the
    whole script (with its shebang), ``mode`` its file mode (executable: the runners skip other files)."""

    hook: SlurmHook
    name: str
    text: str
    mode: int = 0o755

    def __post_init__(self) -> None:
        object.__setattr__(self, "hook", check_enum("hook", self.hook, SlurmHook))
        check_str("name", self.name, pattern=_NAME, allowed=_NAME_TEXT)
        if is_token(self.name):
            raise FmValidationError("name", self.name, f"{_NAME_TEXT}, known at synth time")
        check_str("text", self.text, min_length=1, allowed="a script starting with '#!'")
        if is_token(self.text) or not self.text.startswith("#!"):
            raise FmValidationError("text", self.text[:40], "a script starting with '#!', known at synth time")
        if isinstance(self.mode, bool) or not isinstance(self.mode, int) or not 0o500 <= self.mode <= 0o777:
            raise FmTypeError("mode", self.mode, "an executable file mode such as 0o755")
        if not self.mode & 0o100:
            raise FmValidationError("mode", oct(self.mode), "executable by its owner (the runners skip other files)")


@dataclass(frozen=True, kw_only=True)
class SlurmScriptDirs:
    """Where a backend's slurmd finds the prolog and epilog pieces."""

    prolog_dir: str
    epilog_dir: str

    def __post_init__(self) -> None:
        for name in ("prolog_dir", "epilog_dir"):
            value = getattr(self, name)
            check_str(name, value, pattern=_DIR, allowed=_DIR_TEXT)
            if is_token(value):
                raise FmValidationError(name, value, f"{_DIR_TEXT}, known at synth time")
        if self.prolog_dir == self.epilog_dir:
            raise FmValidationError("epilog_dir", self.epilog_dir, "a directory other than prolog_dir")

    def directory(self, hook: SlurmHook) -> str:
        return self.prolog_dir if hook is SlurmHook.PROLOG else self.epilog_dir

    def path(self, piece: SlurmScriptPiece) -> str:
        """The node path of ``piece``."""
        return f"{self.directory(piece.hook)}/{piece.name}"


def check_pieces(parameter: str, pieces: Iterable[object]) -> tuple[SlurmScriptPiece, ...]:
    """Pieces, with no (hook, name) twice."""
    checked: list[SlurmScriptPiece] = []
    for index, piece in enumerate(pieces):
        if not isinstance(piece, SlurmScriptPiece):
            raise FmTypeError(f"{parameter}[{index}]", piece, "a SlurmScriptPiece")
        if any((p.hook, p.name) == (piece.hook, piece.name) for p in checked):
            raise FmValidationError(f"{parameter}[{index}].name", piece.name, f"unique among the {piece.hook.value}s")
        checked.append(piece)
    return tuple(checked)


def slurm_script_files(pieces: Sequence[SlurmScriptPiece], dirs: SlurmScriptDirs) -> dict[str, tuple[str, int]]:
    """``{path: (text, mode)}`` of ``pieces`` in ``dirs`` (a :meth:`NodeBootstrap.add_step` ``files`` entry)."""
    if not isinstance(dirs, SlurmScriptDirs):
        raise FmTypeError("dirs", dirs, "a SlurmScriptDirs")
    return {dirs.path(piece): (piece.text, piece.mode) for piece in check_pieces("pieces", pieces)}


def merge_flags(*values: str | Sequence[str] | None) -> str:
    """Comma-separated flags of every value (a str ``"Alloc,NoHold"`` or a list), in order, without repeats
    (compared case-insensitively; the first spelling is kept). Names are not checked against Slurm's list here."""
    merged: list[str] = []
    for value in values:
        if value is None:
            continue
        if isinstance(value, str) and is_token(value):
            raise FmValidationError("PrologFlags", value, "a literal value (fmconstructs adds flags to it)")
        items = value.split(",") if isinstance(value, str) else list(value)
        for item in items:
            flag = check_str("PrologFlags", str(item).strip(), pattern=_FLAG, allowed="flag names (letters only)")
            if flag.lower() not in {m.lower() for m in merged}:
                merged.append(flag)
    return ",".join(merged)
