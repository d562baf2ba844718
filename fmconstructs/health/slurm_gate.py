"""The Slurm boot gate: a node takes no jobs until its boot checks pass, ``render_slurm_boot_gate(spec, ...)``.

The script, run once at boot after ``slurmd`` has registered the node (a boot unit or a backend's lifecycle script):

1. finds the node's Slurm name (``node_name_command``; default below) and waits up to ``node_wait_seconds`` for it;
2. keeps new jobs off the node while it checks: drains it with ``reason="fmconstructs: node checks running"``
   (``drain_while_checking``) or, race-free, reserves it (``reserve_while_checking``: a reservation
   ``fmconstructs-checking-<node>``, ``Users=root``, ``Flags=IGNORE_JOBS,OVERLAP``, for the checks' total budget
   plus 5 minutes, deleted when they end; scontrol(1) "RESERVATIONS"), which never writes the node's state or reason;
3. runs the BOOT checks of :func:`fmconstructs.health.render_node_checks` (the same functions, the same log);
4. on pass, resumes the node (``scontrol update nodename=<node> state=resume``) only while its drain reason is still
   one of ours (it starts with ``fmconstructs:``): a node an operator drained meanwhile stays drained;
5. on fail, drains it with ``reason="fmconstructs: <failing check>: <reason>"`` (the first failing check; quotes and
   newlines removed, at most 200 characters) and exits 1; with a :class:`GateHold` it holds the node in a reservation
   instead (and releases it when a later run passes).

A node already drained by someone else when the gate starts (state ``DRAIN`` with a reason not starting with
``fmconstructs:``) is never touched: the checks run and log, its state and reason stay. A node Slurm marked ``DOWN``
for its own reasons (e.g. "Node unexpectedly rebooted") is not "drained by someone": the gate drains it, and resumes
it when the checks pass. Every ``scontrol`` call runs under ``timeout 30``.

Why ``reserve_while_checking`` (found by the cluster twin's loop (e), tests/twin/test_twin_slurm_loops.py): Slurm's
``scontrol update`` has no compare-and-set, so a drain while checking is "look, then write": an operator's drain
that lands between the gate's look and its ``state=drain reason="fmconstructs: node checks running"`` is overwritten
by it, and the gate then resumes what it takes for its own drain; one that lands between its last look and its
``state=resume`` is resumed. On the twin a node drained by an operator while it booted was seen MIXED, running a job.
A reservation holds the node without touching its drain, so on a pass the gate writes nothing unless the node
carries a drain of ours from before (an earlier failed run); that resume and a failure's drain still look, then
write, one call apart (Slurm offers nothing narrower).

How the node knows its Slurm name (``node_name_command=None``): ``hostname -s`` when ``scontrol show node`` knows that
name; else the node whose ``NodeAddr`` or ``NodeHostName`` is one of ``hostname -I`` or ``hostname -s``
(``scontrol -o show node``). ParallelCluster sets a compute node's hostname to its Slurm node name unless
``Scheduling/SlurmSettings/Dns/UseEc2Hostnames`` is true (ParallelCluster User Guide, Scheduling section: the setting
exists; that the hostname equals the node name otherwise is UNCONFIRMED from the text seen). PCS: how the compute
node's hostname relates to its Slurm node name is UNCONFIRMED; the ``NodeAddr`` lookup covers both (PCS nodes register
their private address, PCS User Guide "(Optional) Test EFA" shows ``scontrol show nodes`` with ``NodeAddr`` and
``NodeHostName``).

Between jobs (:func:`render_slurm_idle_check`): the same library with the IDLE checks (the PROLOG ones, each within
:data:`~fmconstructs.health.spec.IDLE_BUDGET_CAP_SECONDS`), for Slurm's ``HealthCheckProgram``, which slurmd runs as
root every ``HealthCheckInterval`` seconds on the nodes ``HealthCheckNodeState`` selects, once when it starts, and
kills after 60 s; "any action to be taken must be explicitly performed by the program (e.g. execute scontrol update
NodeName=foo State=drain Reason=...)" (slurm.conf(5) ``HealthCheckProgram``). The script:

1. takes the node's name from ``SLURMD_NODENAME`` (slurmd sets it for the program: Slurm's slurmd.c
   ``run_script_health_check``), else as the gate finds it;
2. leaves a drained node alone and checks nothing there (state ``DRAIN``), unless its drain reason names one of
   the checks this script runs (``fmconstructs: <check>: ...``, a failure of the same check, by this script or the
   boot gate): an operator's drain (any reason not starting with ``fmconstructs:``), the boot gate's while it checks,
   remediation's (``fmconstructs: remediation``) and a failure of a boot-only check (``dcgm-diag``) stay as they are;
3. runs the checks; on pass, resumes a node drained for one of its checks when its reason is still the one it saw
   (Slurm's ``[user@time]`` included), else does nothing more; slurmd runs the program on drained idle nodes too
   (``HealthCheckNodeState=IDLE``; ``NONDRAINED_IDLE`` would skip them, slurm.conf(5));
4. on fail, drains the node with ``reason="fmconstructs: <failing check>: <reason>"`` unless someone drained it
   meanwhile, and exits 1 (slurmd only logs the status). Every ``scontrol`` call runs under ``timeout 5``, at most
   three per run (one ``show node`` gives the state and the reason).

What each backend allows (wired by :mod:`fmconstructs.pcs.health` and :mod:`fmconstructs.parallelcluster.health`):

- PCS: custom Slurm settings per level, checked against the PCS User Guide's lists
  (:mod:`fmconstructs.pcs.slurm`); the cluster level takes ``Prolog`` (PROLOG mode), ``HealthCheckProgram``,
  ``HealthCheckInterval`` and ``HealthCheckNodeState`` (IDLE mode, this module's between-jobs check), and PCS runs
  this gate at boot from the node's user data. PCS also has its
  own checks per compute node group (PCS API ``InstanceHealthChecks``; PCS User Guide "Configuring instance health
  checks"): ``deepHealthChecks.onStart.profile`` QUICK / MEDIUM / LONG = DCGM level 1 / 2 / 3, run "each time an
  instance starts ... before the compute node accepts jobs", after the ``nodeBootstrapped`` scripts of
  ``nodeLifecycleActions``, with ``repairAction`` AUTO / REPLACE / ISOLATE / NONE; ``healthMonitoring`` (STANDARD)
  watches running instances. ``PcsGpuNodeGroup(instance_health_checks=...)`` sets them
  (:mod:`fmconstructs.pcs.instance_health`) and, where the deep health check is on, renders the gate with
  ``dcgm_level=None`` so DCGM does not run twice.
- ParallelCluster: ``Scheduling/SlurmQueues/HealthChecks/Gpu/Enabled`` and
  ``.../ComputeResources/HealthChecks/Gpu/Enabled`` (ParallelCluster User Guide, Scheduling section; AWS HPC blog
  "Introducing GPU health checks in AWS ParallelCluster 3.6") run DCGM level 2 in the prolog
  (``90_pcluster_health_check_manager``): the typed option, with aws-parallelcluster#6777's hang on p4d/p5.
  Custom prologs go in ``/opt/slurm/etc/scripts/prolog.d/`` (User Guide "Slurm prolog and epilog";
  ``BatchStartTimeout=180``). Mind clustermgtd: it replaces static nodes whose Slurm state turns DRAIN or DOWN
  (User Guide "Slurm Workload Manager": "the change of the Slurm node status to DRAIN or DOWN"), so on ParallelCluster
  render the gate with ``drain_while_checking=False`` (a node draining for its checks would be replaced) and with a
  :class:`GateHold`: a failing node is held in a reservation instead of drained, so it stays up with its metrics
  (``FmNodeCheckFailed``) until remediation replaces it (:mod:`fmconstructs.parallelcluster.health` has the sources).

Tests only (unset on nodes): as :mod:`fmconstructs.health.checks`, plus ``$FMCONSTRUCTS_ROOT<slurm_bin_dir>`` on
``PATH`` before the real one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .._validate import check_bool, check_count, check_str
from ..errors import FmTypeError, FmValidationError, is_token
from .checks import render_check_library
from .metric_names import NODE_CHECK_REASON_PREFIX
from .spec import CheckMode, NodeCheckSpec

__all__ = [
    "CHECKING_REASON",
    "CHECK_RESERVATION_PREFIX",
    "IDLE_CHECK_OFF",
    "PARALLELCLUSTER_SLURM_BIN_DIR",
    "REASON_PREFIX",
    "GateHold",
    "pcs_slurm_bin_dir",
    "render_slurm_boot_gate",
    "render_slurm_idle_check",
]

#: Every drain reason the gate sets starts with this; only such a drain is ever resumed.
REASON_PREFIX = NODE_CHECK_REASON_PREFIX
#: The drain reason while the checks run.
CHECKING_REASON = f"{REASON_PREFIX} node checks running"
#: ParallelCluster's Slurm commands (ParallelCluster User Guide "support-nvidia-imex-p6e-gb200-instance":
#: ``SCONTROL_CMD="/opt/slurm/bin/scontrol"``; :mod:`fmconstructs.parallelcluster.imex`).
PARALLELCLUSTER_SLURM_BIN_DIR = "/opt/slurm/bin"

_ABSOLUTE_PATH = re.compile(r"/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*")
# One line of printable ASCII without '@' (the template's placeholder mark) or a quote that would end the function.
_COMMAND = re.compile(r"[ !#-&(-?A-~]{1,200}")
_SLURM_VERSION = re.compile(r"[0-9]{2}\.[0-9]{2}")


def pcs_slurm_bin_dir(slurm_version: str) -> str:
    """The Slurm commands of a PCS node: "The Slurm installer provided by AWS PCS stores Slurm in
    /opt/aws/pcs/scheduler/slurm-version" (PCS User Guide spank_install; :mod:`fmconstructs.pcs.user_data`)."""
    check_str("slurm_version", slurm_version, pattern=_SLURM_VERSION, allowed="a Slurm version such as '25.05'")
    return f"/opt/aws/pcs/scheduler/slurm-{slurm_version}/bin"


_DEFAULT_NODE_NAME = r"""  local host addr
  host=$(hostname -s)
  if sctl show node "$host" >/dev/null 2>&1; then
    echo "$host"
    return
  fi
  for addr in $(hostname -I 2>/dev/null) "$host"; do
    sctl -o show node 2>/dev/null | awk -v a="$addr" '{
      for (i = 2; i <= NF; i++) if ($i == "NodeAddr=" a || $i == "NodeHostName=" a) {
        sub(/^NodeName=/, "", $1); print $1; exit
      }
    }' | grep -m 1 . && return
  done"""

# The scripts' Slurm helpers, in pieces so each script takes the ones it calls (the gate takes them all, in this order).
_PATH = r"""if [ -n "$root" ]; then
  PATH="${root}/bin:${root}@SLURM_BIN@:@SLURM_BIN@:${PATH}"
else
  PATH="@SLURM_BIN@:${PATH}"
fi
REASON_PREFIX="@REASON_PREFIX@"
"""

_SCTL = r"""
function sctl() {
  timeout @SCONTROL_TIMEOUT@ scontrol "$@"
}

function node_name() {
@NODE_NAME@
}
"""

_READY = r"""
function node_ready() {
@READY@
}
"""

_NODE_FIELDS = r"""
function node_field() {
  sctl show node "$1" 2>/dev/null | sed -n "s/^ *$2=\(.*\)\$/\1/p" | head -n 1
}

function node_state() {
  node_field "$1" State | awk '{print $1}'
}
"""

_GATE_HELPERS = r"""
function drained_by_someone_else() {
  local reason
  reason=$(node_field "$1" Reason)
  [[ "$(node_state "$1")" == *DRAIN* ]] && [ -n "$reason" ] && [[ "$reason" != "$REASON_PREFIX"* ]]
}

function ours_to_resume() {
  [[ "$(node_field "$1" Reason)" == "$REASON_PREFIX"* ]]
}

function wait_for_node() {
  local deadline=$((SECONDS + NODE_WAIT_SECONDS))
  while :; do
    NODE=""
    if node_ready; then
      NODE=$(node_name)
    fi
    [ -n "$NODE" ] && return 0
    [ "$SECONDS" -ge "$deadline" ] && return 1
    sleep 5
  done
}
"""

_FAILURE_REASON = r"""
function failure_reason() {
  printf '%s %s: %s' "$REASON_PREFIX" "$FIRST_FAILED_CHECK" "$FIRST_FAIL_REASON" | tr -d '"\r\n' | cut -c 1-200
}
"""

_GATE_MAIN = r"""
@HOLD_FUNCTIONS@@RESERVE_FUNCTIONS@
if ! wait_for_node; then
  log "GATE: no Slurm node found for $(hostname -s) within ${NODE_WAIT_SECONDS}s; checks run without the gate"
@UNGATED@fi
if drained_by_someone_else "$NODE"; then
  log "GATE: ${NODE} is drained by someone else ($(node_field "$NODE" Reason)); checks run, its state stays"
@UNGATED@fi
if [ "$DRAIN_WHILE_CHECKING" -eq 1 ]; then
  sctl update nodename="$NODE" state=drain reason="$CHECKING_REASON" ||
    log "GATE: could not drain ${NODE} while the checks run"
fi
@RESERVE@if run_checks; then
@UNRESERVE_PASS@@ON_PASS@  if ours_to_resume "$NODE"; then
    sctl update nodename="$NODE" state=resume && log "GATE: ${NODE} passed its checks and takes jobs"
  elif drained_by_someone_else "$NODE"; then
    log "GATE: ${NODE} passed its checks but was drained meanwhile by someone else; left drained"
  else
    log "GATE: ${NODE} passed its checks"
  fi
  exit 0
fi
@FAILED@if drained_by_someone_else "$NODE"; then
  log "GATE: ${NODE} failed its checks and was drained meanwhile by someone else; reason left as it is"
else
  reason=$(failure_reason)
@ON_FAIL@fi
@UNRESERVE@exit 1
"""

_GATE = (
    "\n# --- Slurm boot gate (fmconstructs/health/slurm_gate.py): no jobs until the checks above pass ---\n"
    + _PATH
    + r"""CHECKING_REASON="@CHECKING_REASON@"
NODE_WAIT_SECONDS=@NODE_WAIT@
DRAIN_WHILE_CHECKING=@DRAIN_WHILE_CHECKING@
NODE=""
"""
    + _SCTL
    + _READY
    + _NODE_FIELDS
    + _GATE_HELPERS
    + _FAILURE_REASON
    + _GATE_MAIN
)

_IDLE_MAIN = r"""
function record_field() {
  sed -n "s/^ *$2=\(.*\)\$/\1/p" <<<"$1" | head -n 1
}

NODE="${SLURMD_NODENAME:-}"
if [ -z "$NODE" ]; then
  NODE=$(node_name)
fi
if [ -z "$NODE" ]; then
  log "IDLE: no Slurm node found for $(hostname -s); checks run, nothing is drained"
  run_checks
  exit $?
fi
record=$(sctl show node "$NODE" 2>/dev/null)
state=$(record_field "$record" State | awk '{print $1}')
if [ -z "$state" ]; then
  log "IDLE: the state of ${NODE} is unknown (scontrol); checks run, nothing is drained"
  run_checks
  exit $?
fi
if [[ "$state" == *DRAIN* ]]; then
  seen=$(record_field "$record" Reason)
  case "$seen" in
    @OWN_REASONS@) ;;
    *)
      log "IDLE: ${NODE} is drained (${state}: ${seen}); not checked, left as it is"
      exit 0
      ;;
  esac
  if ! run_checks; then
    log "IDLE: ${NODE} is drained (${seen}) and still fails its checks; left drained"
    exit 1
  fi
  if [ "$(node_field "$NODE" Reason)" != "$seen" ]; then
    log "IDLE: ${NODE} passed its checks but was drained meanwhile for something else; left as it is"
    exit 0
  fi
  sctl update nodename="$NODE" state=resume || { log "IDLE: could not resume ${NODE}"; exit 1; }
  log "IDLE: ${NODE} passed the check it was drained for (${seen}); resumed"
  exit 0
fi
if run_checks; then
  exit 0
fi
if [[ "$(node_state "$NODE")" == *DRAIN* ]]; then
  log "IDLE: ${NODE} failed its checks and was drained meanwhile; left as it is"
  exit 1
fi
reason=$(failure_reason)
sctl update nodename="$NODE" state=drain reason="$reason" || log "IDLE: could not drain ${NODE}"
log "IDLE: ${NODE} drained: ${reason}"
exit 1
"""

_IDLE_CHECK = (
    "\n# --- Slurm between-jobs check (fmconstructs/health/slurm_gate.py): HealthCheckProgram; drains on failure,"
    " resumes only a drain for one of its own checks ---\n"
    + _PATH
    + _SCTL
    + _NODE_FIELDS
    + _FAILURE_REASON
    + _IDLE_MAIN
)
#: The ``HealthCheckProgram`` of a node whose own options turn the between-jobs check off while its cluster runs it
#: (one ``HealthCheckProgram`` per cluster): it passes.
IDLE_CHECK_OFF = """#!/bin/bash
# fmconstructs: this node's checks between jobs are off (its node group's node_health); the cluster's
# HealthCheckProgram passes here (fmconstructs/health/slurm_gate.py).
exit 0
"""
#: ``timeout`` of each ``scontrol`` call: the gate's, and the between-jobs check's (three calls within slurmd's 60 s).
_GATE_SCONTROL_SECONDS = 30
_IDLE_SCONTROL_SECONDS = 5


# Without a hold the gate drains a failing node (the original text, byte for byte).
_DRAIN = {
    "@HOLD_FUNCTIONS@": "",
    "@UNGATED@": "  run_checks\n  exit $?\n",
    "@ON_PASS@": "",
    "@FAILED@": "",
    "@ON_FAIL@": '  sctl update nodename="$NODE" state=drain reason="$reason" || log "GATE: could not drain ${NODE}"\n'
    '  log "GATE: ${NODE} drained: ${reason}"\n',
}

_HOLD_FUNCTIONS = r"""
# --- hold (GateHold): a failing node stays up, out of work, in a reservation; never drained or failed by the gate ---
HOLD_PREFIX="@HOLD_PREFIX@"
HOLD_MARKER="${root}@HOLD_MARKER@"

function mark_failed() {
  if ! { mkdir -p "${HOLD_MARKER%/*}" && printf '%s\n' "$1" >"$HOLD_MARKER"; }; then
    log "GATE: could not write ${HOLD_MARKER}"
  fi
}

function clear_failed() {
  rm -f "$HOLD_MARKER"
}

function hold_minutes() {
  case "$1" in
    @HOLD_UNLIMITED@) echo UNLIMITED ;;
    *) echo @HOLD_MINUTES@ ;;
  esac
}

function hold_node() {
  local node=$1 reason=$2 name="${HOLD_PREFIX}$1" job
  if sctl show reservation "$name" >/dev/null 2>&1 ||
    sctl create reservation ReservationName="$name" Nodes="$node" Users=root StartTime=now \
      Duration="$(hold_minutes "$node")" Flags=IGNORE_JOBS,OVERLAP >/dev/null; then
    log "GATE: ${node} held out of work by reservation ${name}: ${reason}"
  else
    sctl update nodename="$node" state=drain reason="$reason" || log "GATE: could not drain ${node}"
    log "GATE: no reservation ${name}; ${node} drained instead: ${reason}"
  fi
  sctl update nodename="$node" comment="$reason" || log "GATE: could not set the comment of ${node}"
  for job in $(timeout 30 squeue -h -w "$node" -o %A 2>/dev/null); do
    if sctl requeue "$job"; then
      log "GATE: job ${job} requeued off ${node}"
    else
      log "GATE: could not requeue job ${job} off ${node}"
    fi
  done
}

function release_node() {
  local name="${HOLD_PREFIX}$1"
  [ -n "$1" ] || return 0
  if sctl show reservation "$name" >/dev/null 2>&1; then
    if sctl delete reservation "$name"; then
      log "GATE: reservation ${name} deleted"
    else
      log "GATE: could not delete reservation ${name}"
    fi
  fi
  if [[ "$(node_field "$1" Comment)" == "$REASON_PREFIX"* ]]; then
    sctl update nodename="$1" comment="" || log "GATE: could not clear the comment of ${1}"
  fi
}"""

# --- reserve while checking: the node takes no new job while its checks run; its state and reason are not touched ---
_RESERVE_FUNCTIONS = r"""
# --- while the checks run the node is reserved (no new jobs), never drained: an operator's drain is never touched ---
CHECK_RESERVATION=""

function reserve_for_checks() {
  CHECK_RESERVATION="@CHECK_RESERVATION_PREFIX@$1"
  if sctl show reservation "$CHECK_RESERVATION" >/dev/null 2>&1; then
    log "GATE: ${1} stays reserved (${CHECK_RESERVATION}, from an earlier run) while its checks run"
  elif sctl create reservation ReservationName="$CHECK_RESERVATION" Nodes="$1" Users=root StartTime=now \
    Duration=@CHECK_MINUTES@ Flags=IGNORE_JOBS,OVERLAP >/dev/null; then
    log "GATE: ${1} reserved (${CHECK_RESERVATION}) while its checks run"
  else
    log "GATE: could not reserve ${1} while its checks run; a job may start there meanwhile (its prolog checks run)"
  fi
}

function unreserve_after_checks() {
  if sctl show reservation "$CHECK_RESERVATION" >/dev/null 2>&1; then
    sctl delete reservation "$CHECK_RESERVATION" || log "GATE: could not delete reservation ${CHECK_RESERVATION}"
  fi
}
"""
_RESERVE = {
    "@RESERVE@": 'reserve_for_checks "$NODE"\n',
    "@UNRESERVE_PASS@": "  unreserve_after_checks\n",
    "@UNRESERVE@": "unreserve_after_checks\n",
}
_NO_RESERVE = {"@RESERVE_FUNCTIONS@": "", "@RESERVE@": "", "@UNRESERVE_PASS@": "", "@UNRESERVE@": ""}
#: The reservation that keeps new jobs off a node while the gate checks it (``reserve_while_checking``).
CHECK_RESERVATION_PREFIX = "fmconstructs-checking-"
# Minutes the reservation outlasts the checks' total budget (a gate killed mid-check holds the node no longer).
_CHECK_RESERVATION_MARGIN_MINUTES = 5

_HOLD = {
    "@UNGATED@": '  if run_checks; then\n    clear_failed\n    release_node "$NODE"\n    exit 0\n  fi\n'
    '  mark_failed "$(failure_reason)"\n  exit 1\n',
    "@ON_PASS@": '  clear_failed\n  release_node "$NODE"\n',
    "@FAILED@": 'mark_failed "$(failure_reason)"\n',
    "@ON_FAIL@": '  hold_node "$NODE" "$reason"\n',
}

_RESERVATION_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,39}")
_NODE_PATTERN = re.compile(r"[A-Za-z0-9*?_.|\[\]-]{1,1000}")


@dataclass(frozen=True, kw_only=True)
class GateHold:
    """How the boot gate keeps a failing node out of work when draining it would get it replaced at once, or failing
    would end its bootstrap (ParallelCluster: :mod:`fmconstructs.parallelcluster.health`).

    On failure the node is not drained: a Slurm reservation ``<reservation_prefix><node>`` (``Users=root``,
    ``Flags=IGNORE_JOBS,OVERLAP``, no ``MAINT``) keeps other users' jobs off it (scontrol(1) "RESERVATIONS";
    Slurm reservations.html), its ``Comment`` gets the failure (``fmconstructs: <check>: <reason>``), jobs already
    allocated to it are requeued, and ``marker_path`` records the failure for the prolog
    (:func:`fmconstructs.health.install.render_prolog_dispatch` ``failed_marker``), which fails any job that still
    reaches the node. If the reservation cannot be created the node is drained instead. On pass the gate deletes its
    reservation, clears its comment and the marker (a replacement instance under the same node name takes jobs).

    :param reservation_prefix: the reservation's name before the node name.
    :param unlimited_nodes: a shell ``case`` pattern of the node names held until a passing gate releases them (e.g.
        ParallelCluster's static nodes ``*-st-*``); other nodes are held for ``minutes`` (a dynamic node's name
        returns to the pool once its instance is gone).
    :param minutes: how long other nodes are held.
    :param marker_path: the node-local file that records a failed gate.
    """

    reservation_prefix: str = "fmconstructs-node-checks-"
    unlimited_nodes: str = "*"
    minutes: int = 30
    marker_path: str = "/var/lib/fmconstructs/node-checks-failed"

    def __post_init__(self) -> None:
        check_str(
            "reservation_prefix",
            self.reservation_prefix,
            pattern=_RESERVATION_PREFIX,
            allowed="a letter, then up to 39 letters, digits, '_' or '-'",
        )
        check_str(
            "unlimited_nodes",
            self.unlimited_nodes,
            pattern=_NODE_PATTERN,
            allowed="a shell case pattern of letters, digits and '*?_.|[]-' (at most 1000 characters)",
        )
        check_count("minutes", self.minutes, minimum=1, maximum=1440)
        check_str("marker_path", self.marker_path, pattern=_ABSOLUTE_PATH, allowed="an absolute path")
        for name in ("reservation_prefix", "unlimited_nodes", "minutes", "marker_path"):
            if is_token(getattr(self, name)):
                raise FmValidationError(name, getattr(self, name), "a literal value (the gate is rendered at synth)")

    def placeholders(self) -> dict[str, str]:
        """The gate's placeholders for this hold."""
        functions = (
            _HOLD_FUNCTIONS.replace("@HOLD_PREFIX@", self.reservation_prefix)
            .replace("@HOLD_MARKER@", self.marker_path)
            .replace("@HOLD_UNLIMITED@", self.unlimited_nodes)
            .replace("@HOLD_MINUTES@", str(self.minutes))
        )
        return {"@HOLD_FUNCTIONS@": functions + "\n", **_HOLD}


def render_slurm_boot_gate(
    spec: NodeCheckSpec,
    *,
    slurm_bin_dir: str,
    node_name_command: str | None = None,
    drain_while_checking: bool = True,
    node_wait_seconds: int = 300,
    ready_command: str | None = None,
    hold: GateHold | None = None,
    reserve_while_checking: bool = False,
) -> str:
    """The boot gate (``#!/bin/bash``): drain, run the BOOT checks, resume or keep drained with the reason.

    :param slurm_bin_dir: the cluster's Slurm commands (:data:`PARALLELCLUSTER_SLURM_BIN_DIR`,
        :func:`pcs_slurm_bin_dir`).
    :param node_name_command: one shell line that prints the node's Slurm name; default: see the module notes.
    :param drain_while_checking: drain the node while the checks run (False on ParallelCluster: see module notes).
    :param node_wait_seconds: how long to wait for ``slurmd`` to register the node before checking without the gate.
    :param ready_command: one shell line that succeeds once the node may be looked up (e.g. ``pgrep -x slurmd``
        where the gate starts before ``slurmd``: PCS user data); polled with the node name within
        ``node_wait_seconds``. Default: none (look the node up at once).
    :param hold: keep a failing node out of work without draining it (:class:`GateHold`); the gate still exits 1
        on failure. Default: none (drain it).
    :param reserve_while_checking: keep new jobs off the node while the checks run with a reservation
        (:data:`CHECK_RESERVATION_PREFIX` + node, deleted when they end) instead of a drain, so the gate never
        writes the node's state or reason on a pass; give it with ``drain_while_checking=False`` (see the module
        notes: why a drain while checking can lose an operator's drain). Default: False.
    """
    _check_commands(slurm_bin_dir=slurm_bin_dir, node_name_command=node_name_command, ready_command=ready_command)
    check_bool("drain_while_checking", drain_while_checking)
    check_bool("reserve_while_checking", reserve_while_checking)
    if drain_while_checking and reserve_while_checking:
        raise FmValidationError(
            "reserve_while_checking",
            True,
            "False with drain_while_checking=True (one way to hold a node while checking)",
        )
    check_count("node_wait_seconds", node_wait_seconds, minimum=0, maximum=3600)
    values = {
        **_slurm_values(slurm_bin_dir, node_name_command, _GATE_SCONTROL_SECONDS),
        "@CHECKING_REASON@": CHECKING_REASON,
        "@NODE_WAIT@": str(node_wait_seconds),
        "@DRAIN_WHILE_CHECKING@": "1" if drain_while_checking else "0",
        "@READY@": "  true" if ready_command is None else f"  {ready_command}",
    }
    if hold is not None and not isinstance(hold, GateHold):
        raise FmTypeError("hold", hold, "a GateHold or None")
    # The hold's and the reservation's text first: their functions hold placeholders of the gate's (none repeat).
    values = {
        **(_DRAIN if hold is None else hold.placeholders()),
        **_reserve_values(spec, reserve_while_checking),
        **values,
    }
    return render_check_library(spec, CheckMode.BOOT) + _fill(_GATE, values)


def render_slurm_idle_check(spec: NodeCheckSpec, *, slurm_bin_dir: str, node_name_command: str | None = None) -> str:
    """The between-jobs check (``#!/bin/bash``) for Slurm's ``HealthCheckProgram``: the IDLE checks; a failing node
    is drained with the failing check as its reason; a drained node is left alone unless it was drained for one of
    these checks, which a pass resumes; an operator's drain is never resumed (see the module notes). The parameters
    are :func:`render_slurm_boot_gate`'s."""
    _check_commands(slurm_bin_dir=slurm_bin_dir, node_name_command=node_name_command, ready_command=None)
    values = _slurm_values(slurm_bin_dir, node_name_command, _IDLE_SCONTROL_SECONDS)
    values["@OWN_REASONS@"] = _own_reasons_pattern(spec, CheckMode.IDLE)
    return render_check_library(spec, CheckMode.IDLE) + _fill(_IDLE_CHECK, values)


def _own_reasons_pattern(spec: NodeCheckSpec, mode: CheckMode) -> str:
    """A shell ``case`` pattern of the drain reasons a failing check of ``mode`` sets (``fmconstructs: <check>: ``),
    one alternative per check ``mode`` runs: the drains a later pass of the same check may lift."""
    return "|".join(f'"{REASON_PREFIX} {check.value}: "*' for check in spec.checks(mode))


def _reserve_values(spec: NodeCheckSpec, reserve: bool) -> dict[str, str]:
    """The placeholders of the reservation while checking (empty without it)."""
    if not reserve:
        return dict(_NO_RESERVE)
    minutes = -(-spec.total_budget_seconds(CheckMode.BOOT) // 60) + _CHECK_RESERVATION_MARGIN_MINUTES
    functions = _RESERVE_FUNCTIONS.replace("@CHECK_RESERVATION_PREFIX@", CHECK_RESERVATION_PREFIX).replace(
        "@CHECK_MINUTES@", str(minutes)
    )
    return {"@RESERVE_FUNCTIONS@": functions, **_RESERVE}


def _slurm_values(slurm_bin_dir: str, node_name_command: str | None, scontrol_seconds: int) -> dict[str, str]:
    """The placeholders of the Slurm helpers both scripts share."""
    return {
        "@SLURM_BIN@": slurm_bin_dir,
        "@REASON_PREFIX@": REASON_PREFIX,
        "@SCONTROL_TIMEOUT@": str(scontrol_seconds),
        "@NODE_NAME@": _DEFAULT_NODE_NAME if node_name_command is None else f"  {node_name_command}",
    }


def _fill(template: str, values: dict[str, str]) -> str:
    for placeholder, value in values.items():
        template = template.replace(placeholder, value)
    return template


def _check_commands(*, slurm_bin_dir: object, node_name_command: object, ready_command: object) -> None:
    """Literal values only (the scripts are rendered at synth time), each of its form."""
    for name, value in (
        ("slurm_bin_dir", slurm_bin_dir),
        ("node_name_command", node_name_command),
        ("ready_command", ready_command),
    ):
        if is_token(value):
            raise FmValidationError(name, value, "a literal value (the gate is rendered at synth time)")
    check_str(
        "slurm_bin_dir",
        slurm_bin_dir,
        pattern=_ABSOLUTE_PATH,
        allowed="an absolute path without a trailing '/' (letters, digits, '.', '_', '-', '/')",
    )
    for name, value in (("node_name_command", node_name_command), ("ready_command", ready_command)):
        if value is not None:
            check_str(
                name,
                value,
                pattern=_COMMAND,
                allowed="one line of printable ASCII without quotes or '@' (at most 200 characters)",
            )
