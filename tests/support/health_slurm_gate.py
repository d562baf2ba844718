"""Helpers of tests/health/test_health_slurm_gate.py that other test modules use too."""

from __future__ import annotations

# The node's Slurm record lives in $SLURM_STATE/{state,reason}; `update` changes it as slurmctld would.
SCONTROL = r"""#!/bin/bash
echo "scontrol $*" >>"$CALLS"
node="${FAKE_NODE:-gpu-st-p5-1}"
state_file="${SLURM_STATE}/state"
reason_file="${SLURM_STATE}/reason"
state=$(cat "$state_file" 2>/dev/null || echo IDLE)
reason=$(cat "$reason_file" 2>/dev/null)
if [ "$1" = -o ] && [ "$2 $3" = "show node" ]; then
  echo "NodeName=${node} Arch=x86_64 NodeAddr=10.0.0.5 NodeHostName=ip-10-0-0-5 State=${state}"
  exit 0
fi
if [ "$1 $2" = "show node" ]; then
  [ "$3" = "$node" ] || { echo "Node $3 not found"; exit 1; }
  echo "NodeName=${node} Arch=x86_64 CoresPerSocket=48"
  echo "   NodeAddr=10.0.0.5 NodeHostName=ip-10-0-0-5 Version=25.05"
  echo "   State=${state} ThreadsPerCore=2 TmpDisk=0 Weight=1"
  [ -n "$reason" ] && echo "   Reason=${reason} [root@2026-12-01T14:00:00]"
  exit 0
fi
if [ "$1" = update ]; then
  for arg in "${@:2}"; do
    case "$arg" in
      state=drain) [[ "$state" == *DRAIN* ]] || state="${state}+DRAIN" ;;
      state=resume) state=IDLE; reason="" ;;
      reason=*) reason="${arg#reason=}" ;;
    esac
  done
  echo "$state" >"$state_file"
  printf '%s' "$reason" >"$reason_file"
  exit 0
fi
exit 2
"""


HOSTNAME = (
    '#!/bin/bash\ncase "$1" in -I) echo "${FAKE_IPS-10.0.0.5} " ;; *) echo "${FAKE_HOSTNAME:-gpu-st-p5-1}" ;; esac\n'
)

#: :data:`SCONTROL` that also keeps reservations (``$SLURM_STATE/reservations/<name>``) and, with
#: ``FAKE_DRAIN_AT=<n>``, lets an operator drain the node (reason :data:`OPERATOR_REASON`) just before it answers its
#: n-th ``show node``: a drain that lands between a script's look at the node and its next write.
OPERATOR_REASON = "ops: bad DIMM"
RACING_SCONTROL = SCONTROL.replace(
    'state=$(cat "$state_file" 2>/dev/null || echo IDLE)',
    r"""resv="${SLURM_STATE}/reservations"
mkdir -p "$resv"
case "$1 $2" in
  "show reservation") [ -f "$resv/$3" ] && { cat "$resv/$3"; exit 0; }; echo "Reservation $3 not found"; exit 1 ;;
  "delete reservation") rm "$resv/$3" 2>/dev/null; exit $? ;;
  "create reservation")
    name=""
    for arg in "${@:3}"; do case "$arg" in ReservationName=*) name="${arg#*=}" ;; esac; done
    echo "ReservationName=$name ${*:3}" >"$resv/$name"
    exit 0 ;;
esac
if [ -n "${FAKE_DRAIN_AT:-}" ] && [[ "$*" == *"show node"* ]]; then
  looks=$(( $(cat "${SLURM_STATE}/looks" 2>/dev/null || echo 0) + 1 ))
  echo "$looks" >"${SLURM_STATE}/looks"
  if [ "$looks" -eq "$FAKE_DRAIN_AT" ]; then
    now=$(cat "$state_file" 2>/dev/null || echo IDLE)
    [[ "$now" == *DRAIN* ]] || now="${now}+DRAIN"
    echo "$now" >"$state_file"
    printf '%s' "@OPERATOR_REASON@" >"$reason_file"
  fi
fi
state=$(cat "$state_file" 2>/dev/null || echo IDLE)""".replace("@OPERATOR_REASON@", OPERATOR_REASON),
)
