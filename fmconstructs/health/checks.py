"""The node checks: one shell renderer for every backend, ``render_node_checks(spec, mode)``.

Each check is a small bash function that prints one line, ``PASS <name>: <detail> [<s>s/<budget>s]`` or
``FAIL <name>: <reason> [<s>s/<budget>s]``, and runs its commands under ``timeout <budget>``; the script ends with a
summary (``... N passed, M failed in Ts``: the boot-time cost) and exits 0 only when every check passed. Lines go to
stdout, to the log file (``NodeCheckSpec.log_file_path``) and to syslog (tag ``fmconstructs-node-checks``).

The checks and the procedure each follows:

- ``gpu-count``: ``nvidia-smi --query-gpu=index,driver_version --format=csv,noheader`` lists the catalog's GPU count
  (one line per GPU) and a driver version.
- ``gpu-memory``: ``nvidia-smi --query-remapped-rows=gpu_bus_id,remapped_rows.pending,remapped_rows.failure
  --format=csv,noheader``: no GPU with a pending row remapping (NVIDIA "GPU Memory Error Management", "Row
  Remapping": "The process of row-remapping requires a GPU reset to take effect"; NVML ``nvmlDeviceGetRemappedRows``:
  ``isPending`` "A reset will be required", ``failureOccurred`` "a row remapping ever failed"), then
  ``nvidia-smi --query-gpu=pci.bus_id,retired_pages.pending --format=csv,noheader``: no pending page retirement
  (NVIDIA "Dynamic Page Retirement"). Yes/No and 1/0 are both read; ``[N/A]`` passes.
- ``gpu-xid``: no Xid of the RESET or FATAL class of ``NodeCheckSpec.xid_policy`` among the
  ``NVRM: Xid (<pci>): <n>, ...`` kernel lines (``dmesg``, i.e. since boot; NVIDIA "Dynamic Page Retirement",
  "Visibility": Xids are "logged to the system error log"). The failure names the Xid and its class,
  ``Xid 119 (reset) on PCI:0000:53:00 ...`` (a FATAL one first when both are there): the alert on the failure routes
  remediation by that word (:func:`fmconstructs.health.xid.node_check_reason_regex`). CONTAINED (94) and
  APPLICATION Xids pass.
- ``fabric-manager``: ``systemctl is-active nvidia-fabricmanager`` is ``active`` (x86_64 NVSwitch types).
- ``imex``: ``systemctl is-enabled nvidia-imex`` is ``enabled`` (UltraServer types). Not ``is-active`` nor
  ``nvidia-imex-ctl -q`` = READY: both AWS guides (PCS "capacity-blocks-nvidia-imex", ParallelCluster
  "support-nvidia-imex-p6e-gb200-instance"; :mod:`fmconstructs.compute.imex`) write the IMEX nodes file and restart
  ``nvidia-imex`` in each exclusive job's prolog, so a node between jobs has no IMEX domain; their own prolog gates on
  ``systemctl is-enabled nvidia-imex`` the same way.
- ``efa-devices``: the number of distinct ``domain:`` values in ``fi_info -p efa -t FI_EP_RDM`` (EC2 User Guide "Get
  started with EFA and MPI", step "Confirm that the EFA software components were successfully installed": that
  command, one ``domain: efa_N-rdm`` block per interface) equals the EFA interfaces of the launch layout. Distinct
  domains, not blocks: newer Libfabric lists two fabrics (``efa`` and ``efa-direct``) per device. ``fi_info`` is
  looked up in ``/opt/amazon/efa/bin`` (where the EFA installer puts Libfabric) first.
- ``lustre-mount``: ``findmnt -t lustre -n <mount point>`` finds it (only when the node has a file system).
- ``dcgm-diag`` (boot only): ``dcgmi diag -r <level>`` exits 0 and no test reports ``Fail``. Level 2 by default:
  NVIDIA's "dcgmi diag" reference gives level 1 "seconds", level 2 "approximately two minutes", level 3 "approximately
  15 minutes"; level 2 is what ParallelCluster's GPU health check runs (aws-parallelcluster-cookbook CHANGELOG 3.6.0:
  "executing NVIDIA DCGM L2 diagnostic") and PCS's deep health check profile MEDIUM (PCS API
  ``DeepHealthCheckOnStart.profile``: QUICK = level 1, MEDIUM = level 2, LONG = level 3). That ``dcgmi diag`` exits
  non-zero on a failed test is UNCONFIRMED (not seen in NVIDIA's text): the output's ``Fail`` is checked too.

EFA loopback or pingpong: not a check. The EFA documentation tests EFA with ``fi_pingpong -p efa`` between two
instances only (PCS User Guide "(Optional) Test EFA": "two running instances"); AWS documents no single-node
loopback, and an AWS re:Post answer says ``fi_pingpong -p efa 127.0.0.1`` hangs because EFA is for traffic between
instances. Fabric checks across nodes belong to the scheduled NCCL job (issue 20, section 2).

PROLOG mode runs every check but ``dcgm-diag``, each capped at ``NodeCheckSpec.prolog_budget_seconds``: a prolog must
finish on every node before the job starts, and long diagnostics there hang jobs (aws/aws-parallelcluster#6777,
"Prolog hangs due to long GPU health check times on certain instance types": p4d and p5 with ParallelCluster's DCGM
prolog check). A failing prolog exits 1, which Slurm answers by draining the node and requeueing the job (Slurm
"Prolog and Epilog Guide"); the prolog never calls ``scontrol`` (the same guide asks prologs not to call Slurm
commands).

Where the script differs from the AWS and NVIDIA procedures above, and why: every command runs under ``timeout``
(budgets); ``2>&1`` output is kept to name the failure; nothing is repaired (no driver reload, no service restart):
the checks only report, and the backends' wiring decides what a failure does.

Metrics: at the end of each run the script writes ``fm_node_checks_<mode>.prom`` into
``NodeCheckSpec.textfile_dir`` (node exporter's textfile directory; skipped when the directory does not exist, e.g. in
the EKS gate's container): ``fm_node_check_status{check,mode}`` 1/0, ``fm_node_check_duration_seconds{check,mode}``,
``fm_node_check_last_run_timestamp_seconds{mode}`` and ``fm_node_check_failure_info{check,mode,reason} 1`` per
failing check (names: :mod:`.metric_names`), through a temporary file renamed into place. The alert on them is
``FmNodeCheckFailed`` (:func:`fmconstructs.observability.rules.node_check_rules`).

Tests only (unset on nodes): ``FMCONSTRUCTS_ROOT`` puts ``$FMCONSTRUCTS_ROOT/bin`` (stub commands) first on ``PATH``
and prefixes the log path; ``FMCONSTRUCTS_HEALTH_LOG`` names the log file.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..errors import FmTypeError
from . import metric_names as names
from .spec import CheckMode, CheckName, NodeCheckSpec, check_enum_mode
from .xid import XidClass

__all__ = ["SYSLOG_TAG", "render_node_checks"]

#: The syslog tag of every line the checks log.
SYSLOG_TAG = "fmconstructs-node-checks"

_HEADER = r"""#!/bin/bash
# fmconstructs node checks (@MODE@) for @INSTANCE_TYPE@: one "PASS <name>" or "FAIL <name>: <reason>" line per
# check, then a summary. Rendered by fmconstructs/health/checks.py (sources and differences from the AWS and
# NVIDIA procedures are listed there).
set -u
PATH="/opt/amazon/efa/bin:${PATH:-}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
root="${FMCONSTRUCTS_ROOT:-}" # tests only: stub commands in $root/bin, a sandbox prefix for the log
if [ -n "$root" ]; then
  PATH="${root}/bin:${PATH}"
fi
export PATH
NODE_CHECKS_LOG="${FMCONSTRUCTS_HEALTH_LOG:-${root}@LOG_FILE@}"
mkdir -p "$(dirname "$NODE_CHECKS_LOG")" 2>/dev/null || true
NODE_CHECKS_TEXTFILE_DIR="@TEXTFILE_DIR@" # empty: no metrics
CHECKS_PASSED=0
CHECKS_FAILED=0
FIRST_FAILED_CHECK=""
FIRST_FAIL_REASON=""
CHECK_NAME=""
CHECK_BUDGET=1
CHECK_STARTED=0
RESULT_COUNT=0
RESULT_NAMES=()
RESULT_STATUS=()
RESULT_SECONDS=()
RESULT_REASONS=()

function log() {
  echo "$1"
  echo "$(date "+%Y-%m-%dT%H:%M:%S") $1" >>"$NODE_CHECKS_LOG" 2>/dev/null || true
  logger -t @SYSLOG_TAG@ "$1" </dev/null >/dev/null 2>&1 || true
}

function elapsed() {
  echo "[$((SECONDS - CHECK_STARTED))s/${CHECK_BUDGET}s]"
}

# Keeps the current check's result for the metrics: status (1 pass, 0 fail), seconds taken, the reason of a failure.
function record() {
  RESULT_NAMES+=("$CHECK_NAME")
  RESULT_STATUS+=("$1")
  RESULT_SECONDS+=("$((SECONDS - CHECK_STARTED))")
  RESULT_REASONS+=("$2")
  RESULT_COUNT=$((RESULT_COUNT + 1))
}

function pass() {
  CHECKS_PASSED=$((CHECKS_PASSED + 1))
  record 1 ""
  log "PASS ${CHECK_NAME}: $1 $(elapsed)"
}

function fail() {
  CHECKS_FAILED=$((CHECKS_FAILED + 1))
  if [ -z "$FIRST_FAILED_CHECK" ]; then
    FIRST_FAILED_CHECK="$CHECK_NAME"
    FIRST_FAIL_REASON="$1"
  fi
  record 0 "$1"
  log "FAIL ${CHECK_NAME}: $1 $(elapsed)"
}

# Runs a command under the current check's budget (timeout(1): exit status 124, or 137 after --kill-after).
function timed() {
  timeout --kill-after=5 "$CHECK_BUDGET" "$@"
}

# Fails the current check and returns 0 when exit status $1 says command $2 ran out of budget.
function over_budget() {
  if [ "$1" -eq 124 ] || [ "$1" -eq 137 ]; then
    fail "$2 did not finish within ${CHECK_BUDGET}s"
    return 0
  fi
  return 1
}

function first_line() {
  echo "$1" | grep -m 1 . | tr -d '"' | cut -c 1-120
}

# A label value (text exposition format): printable ASCII only, at most @REASON_MAX@ characters, then \\ and \" escaped
# (the format's escapes for backslash and double quote; newlines were turned into spaces before).
function label_value() {
  local value
  value=$(printf '%s' "$1" | LC_ALL=C tr -c '[:print:]' ' ' | tr -s ' ' | cut -c 1-@REASON_MAX@)
  value="${value//\\/\\\\}"
  printf '%s' "${value//\"/\\\"}"
}

# node exporter's textfile collector format, written to a temporary file and renamed (node exporter never reads a
# partial file). Skipped when the textfile directory does not exist (no node exporter on this node).
function write_metrics() {
  local dir="${root}${NODE_CHECKS_TEXTFILE_DIR}" tmp i reason mode="@MODE@"
  if [ -z "$NODE_CHECKS_TEXTFILE_DIR" ] || [ ! -d "$dir" ]; then
    return 0
  fi
  tmp=$(mktemp "${dir}/.@TEXTFILE@.XXXXXX") || return 0
  {
    echo "# HELP @STATUS@ Last result of an fmconstructs node check: 1 pass, 0 fail."
    echo "# TYPE @STATUS@ gauge"
    for ((i = 0; i < RESULT_COUNT; i++)); do
      echo "@STATUS@{check=\"${RESULT_NAMES[$i]}\",mode=\"${mode}\"} ${RESULT_STATUS[$i]}"
    done
    echo "# HELP @DURATION@ Seconds an fmconstructs node check took."
    echo "# TYPE @DURATION@ gauge"
    for ((i = 0; i < RESULT_COUNT; i++)); do
      echo "@DURATION@{check=\"${RESULT_NAMES[$i]}\",mode=\"${mode}\"} ${RESULT_SECONDS[$i]}"
    done
    echo "# HELP @LAST_RUN@ Unix time the fmconstructs node checks of a mode last finished."
    echo "# TYPE @LAST_RUN@ gauge"
    echo "@LAST_RUN@{mode=\"${mode}\"} $(date +%s)"
    if [ "$CHECKS_FAILED" -gt 0 ]; then
      echo "# HELP @FAILURE_INFO@ 1 for a failing fmconstructs node check; the label reason says why."
      echo "# TYPE @FAILURE_INFO@ gauge"
      for ((i = 0; i < RESULT_COUNT; i++)); do
        if [ "${RESULT_STATUS[$i]}" -eq 0 ]; then
          reason=$(label_value "${RESULT_REASONS[$i]}")
          echo "@FAILURE_INFO@{check=\"${RESULT_NAMES[$i]}\",mode=\"${mode}\",reason=\"${reason}\"} 1"
        fi
      done
    fi
  } >"$tmp"
  if ! { chmod 0644 "$tmp" && mv -f "$tmp" "${dir}/@TEXTFILE@"; }; then
    rm -f "$tmp"
  fi
  return 0
}

function start_check() {
  CHECK_NAME="$1"
  CHECK_BUDGET="$2"
  CHECK_STARTED=$SECONDS
}
"""

_CHECKS: Mapping[CheckName, str] = MappingProxyType(
    {
        CheckName.GPU_COUNT: r"""
function check_gpu_count() {
  local out rc count driver
  out=$(timed nvidia-smi --query-gpu=index,driver_version --format=csv,noheader 2>&1)
  rc=$?
  over_budget "$rc" nvidia-smi && return
  if [ "$rc" -ne 0 ]; then
    fail "nvidia-smi exited ${rc}: $(first_line "$out")"
    return
  fi
  count=$(echo "$out" | grep -c '[^[:space:]]')
  driver=$(echo "$out" | awk -F', *' 'NF > 1 && $2 != "" {print $2; exit}')
  if [ "$count" -ne @EXPECTED_GPUS@ ]; then
    fail "${count} GPUs visible, expected @EXPECTED_GPUS@"
  elif [ -z "$driver" ]; then
    fail "nvidia-smi reports no driver version"
  else
    pass "${count} GPUs, driver ${driver}"
  fi
}
""",
        CheckName.GPU_MEMORY: r"""
function check_gpu_memory() {
  local out rc bad
  out=$(timed nvidia-smi --query-remapped-rows=gpu_bus_id,remapped_rows.pending,remapped_rows.failure \
    --format=csv,noheader 2>&1)
  rc=$?
  over_budget "$rc" "nvidia-smi --query-remapped-rows" && return
  if [ "$rc" -ne 0 ]; then
    fail "nvidia-smi --query-remapped-rows exited ${rc}: $(first_line "$out")"
    return
  fi
  bad=$(echo "$out" | awk -F', *' '
    $3 ~ /^(Yes|1)$/ {print "GPU " $1 ": row remapping failed"; exit}
    $2 ~ /^(Yes|1)$/ {print "GPU " $1 ": row remapping pending (GPU reset required)"; exit}')
  if [ -n "$bad" ]; then
    fail "$bad"
    return
  fi
  out=$(timed nvidia-smi --query-gpu=pci.bus_id,retired_pages.pending --format=csv,noheader 2>&1)
  rc=$?
  over_budget "$rc" "nvidia-smi --query-gpu=retired_pages.pending" && return
  if [ "$rc" -ne 0 ]; then
    fail "nvidia-smi --query-gpu=retired_pages.pending exited ${rc}: $(first_line "$out")"
    return
  fi
  bad=$(echo "$out" | awk -F', *' '$2 ~ /^(Yes|1)$/ {print "GPU " $1 ": page retirement pending"; exit}')
  if [ -n "$bad" ]; then
    fail "$bad"
  else
    pass "no pending row remapping or page retirement"
  fi
}
""",
        CheckName.GPU_XID: r"""
function check_gpu_xid() {
  local out rc found
  out=$(timed dmesg 2>&1)
  rc=$?
  over_budget "$rc" dmesg && return
  if [ "$rc" -ne 0 ]; then
    fail "dmesg exited ${rc}: $(first_line "$out")"
    return
  fi
  found=$(echo "$out" | sed -n 's/.*NVRM: Xid (\([^)]*\)): \([0-9][0-9]*\).*/\2 \1/p' |
    awk -v fatal=" @FATAL_CLASS_XIDS@ " -v reset=" @RESET_CLASS_XIDS@ " '
      index(fatal, " " $1 " ") {f = "Xid " $1 " (@FATAL_CLASS@) on " $2; exit}
      index(reset, " " $1 " ") && r == "" {r = "Xid " $1 " (@RESET_CLASS@) on " $2}
      END {if (f != "") print f; else if (r != "") print r}')
  if [ -n "$found" ]; then
    fail "${found} in the kernel log since boot"
  else
    pass "no Xid of @NODE_CHECK_XIDS@ since boot"
  fi
}
""",
        CheckName.FABRIC_MANAGER: r"""
function check_fabric_manager() {
  local state rc
  state=$(timed systemctl is-active nvidia-fabricmanager 2>/dev/null)
  rc=$?
  over_budget "$rc" "systemctl is-active nvidia-fabricmanager" && return
  if [ "$state" = active ]; then
    pass "nvidia-fabricmanager is active"
  else
    fail "nvidia-fabricmanager is ${state:-unknown}"
  fi
}
""",
        CheckName.IMEX: r"""
function check_imex() {
  local state rc
  state=$(timed systemctl is-enabled nvidia-imex 2>/dev/null)
  rc=$?
  over_budget "$rc" "systemctl is-enabled nvidia-imex" && return
  if [ "$state" = enabled ]; then
    pass "nvidia-imex is enabled"
  else
    fail "nvidia-imex is ${state:-not installed}, not enabled"
  fi
}
""",
        CheckName.EFA_DEVICES: r"""
function check_efa_devices() {
  local out rc count
  out=$(timed fi_info -p efa -t FI_EP_RDM 2>&1)
  rc=$?
  over_budget "$rc" fi_info && return
  count=$(echo "$out" | awk '$1 == "domain:" {print $2}' | sort -u | grep -c .)
  if [ "$count" -eq @EXPECTED_EFA@ ]; then
    pass "${count} EFA devices"
  elif [ "$rc" -ne 0 ]; then
    fail "${count} EFA devices, expected @EXPECTED_EFA@ (fi_info exited ${rc}: $(first_line "$out"))"
  else
    fail "${count} EFA devices, expected @EXPECTED_EFA@"
  fi
}
""",
        CheckName.LUSTRE_MOUNT: r"""
function check_lustre_mount() {
  local rc
  timed findmnt -t lustre -n "@LUSTRE_MOUNT_POINT@" >/dev/null 2>&1
  rc=$?
  over_budget "$rc" findmnt && return
  if [ "$rc" -eq 0 ]; then
    pass "Lustre mounted at @LUSTRE_MOUNT_POINT@"
  else
    fail "no Lustre file system mounted at @LUSTRE_MOUNT_POINT@"
  fi
}
""",
        CheckName.DCGM_DIAG: r"""
function check_dcgm_diag() {
  local out rc failed
  out=$(timed dcgmi diag -r @DCGM_LEVEL@ 2>&1)
  rc=$?
  over_budget "$rc" "dcgmi diag -r @DCGM_LEVEL@" && return
  failed=$(echo "$out" | grep -m 1 -w Fail | tr -s ' |' ' ' | sed 's/^ //; s/ $//')
  if [ -n "$failed" ]; then
    fail "dcgmi diag -r @DCGM_LEVEL@: ${failed}"
  elif [ "$rc" -ne 0 ]; then
    fail "dcgmi diag -r @DCGM_LEVEL@ exited ${rc}: $(first_line "$out")"
  else
    pass "dcgmi diag -r @DCGM_LEVEL@ passed"
  fi
}
""",
    }
)

_RUNNER = r"""
function run_checks() {
  local started=$SECONDS
  log "fmconstructs node checks (@MODE@) on @INSTANCE_TYPE@: @CHECK_LIST@ (budget at most @TOTAL@s)"
@RUN_LINES@
  log "fmconstructs node checks (@MODE@): ${CHECKS_PASSED} passed, ${CHECKS_FAILED} failed in $((SECONDS - started))s"
  write_metrics
  if [ "$CHECKS_FAILED" -gt 0 ]; then
    log "fmconstructs node checks (@MODE@): first failure: ${FIRST_FAILED_CHECK}: ${FIRST_FAIL_REASON}"
    return 1
  fi
  return 0
}
"""

_MAIN = r"""
run_checks
exit $?
"""


def _fill(template: str, values: Mapping[str, str]) -> str:
    for placeholder, value in values.items():
        template = template.replace(placeholder, value)
    return template


def _xid_values(spec: NodeCheckSpec) -> dict[str, str]:
    """The ``gpu-xid`` check's Xid lists and class names (from ``spec.xid_policy``)."""
    policy = spec.xid_policy
    return {
        "@FATAL_CLASS_XIDS@": " ".join(map(str, policy.xids(XidClass.FATAL))),
        "@RESET_CLASS_XIDS@": " ".join(map(str, policy.xids(XidClass.RESET))),
        "@FATAL_CLASS@": XidClass.FATAL.value,
        "@RESET_CLASS@": XidClass.RESET.value,
        "@NODE_CHECK_XIDS@": " ".join(map(str, policy.node_check_xids)) or "(none)",
    }


def render_check_library(spec: NodeCheckSpec, mode: CheckMode) -> str:
    """The script without its last lines: the helpers, one function per check of ``mode`` and ``run_checks``.

    :func:`render_node_checks` ends it with ``run_checks; exit $?``; the Slurm boot gate
    (:mod:`fmconstructs.health.slurm_gate`) calls ``run_checks`` between its own steps.
    """
    if not isinstance(spec, NodeCheckSpec):
        raise FmTypeError("spec", spec, f"a NodeCheckSpec (got a {type(spec).__name__})")
    check_enum_mode(mode)
    checks = spec.checks(mode)
    values = {
        "@MODE@": mode.value,
        "@INSTANCE_TYPE@": spec.instance_type,
        "@LOG_FILE@": spec.log_file_path,
        "@SYSLOG_TAG@": SYSLOG_TAG,
        "@EXPECTED_GPUS@": str(spec.gpu_count),
        "@EXPECTED_EFA@": str(spec.efa_interfaces),
        **_xid_values(spec),
        "@LUSTRE_MOUNT_POINT@": spec.lustre_mount_point or "",
        "@DCGM_LEVEL@": str(spec.dcgm_level or 0),
        "@CHECK_LIST@": ", ".join(c.value for c in checks) or "none",
        "@TOTAL@": str(spec.total_budget_seconds(mode)),
        "@TEXTFILE_DIR@": spec.textfile_dir or "",
        "@TEXTFILE@": names.NODE_CHECK_TEXTFILE.format(mode=mode.value),
        "@STATUS@": names.NODE_CHECK_STATUS,
        "@DURATION@": names.NODE_CHECK_DURATION,
        "@LAST_RUN@": names.NODE_CHECK_LAST_RUN,
        "@FAILURE_INFO@": names.NODE_CHECK_FAILURE_INFO,
        "@REASON_MAX@": str(names.NODE_CHECK_REASON_MAX_CHARS),
        "@RUN_LINES@": "\n".join(
            f"  start_check {c.value} {spec.budget(c, mode)}\n  check_{c.name.lower()}" for c in checks
        ),
    }
    functions = "".join(_CHECKS[c] for c in checks)
    return _fill(_HEADER + functions + _RUNNER, values)


def render_node_checks(spec: NodeCheckSpec, mode: CheckMode = CheckMode.BOOT) -> str:
    """The node checks (``#!/bin/bash``) for ``spec`` in ``mode``; exits 0 only when every check passed.

    BOOT runs every check that applies to the node; PROLOG runs the lightweight ones (no DCGM diagnostics), each
    within ``spec.prolog_budget_seconds``. See the module notes for the commands and their sources.
    """
    return render_check_library(spec, mode) + _MAIN
