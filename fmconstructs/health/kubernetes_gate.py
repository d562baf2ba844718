"""The Kubernetes node gate: a GPU node takes no pods until its boot checks pass, ``render_kubernetes_node_gate(spec)``.

The node joins with the taint ``<taint_key>=pending:NoSchedule`` (an EKS managed node group taint); the gate, run on
the host at every start of its pod (a DaemonSet pod that enters the host's namespaces, :mod:`fmconstructs.eks.health`;
the kubelet starts it again after a reboot):

1. reads the node (``GET /api/v1/nodes/<node>``); when the taint is gone (checks passed before, or an operator removed
   it) the checks do not run again and the gate exits 0;
2. runs the backend's host set-up lines, if any (``host_setup``: data, e.g. installing DCGM where the image has
   none), then the BOOT checks of :func:`fmconstructs.health.render_node_checks` (the same functions, the same log,
   the same metrics in node exporter's textfile directory);
3. writes the result to the node annotation ``<annotation_key>``: ``PASS <summary>`` or ``FAIL <check>: <reason>``
   (a JSON merge patch, at most 256 characters);
4. on pass, uncordons the node when remediation cordoned it: ``spec.unschedulable`` true and the annotation
   :data:`~fmconstructs.health.metric_names.CORDONED_BY_ANNOTATION` =
   :data:`~fmconstructs.health.metric_names.CORDONED_BY_REMEDIATION`. One JSON patch (RFC 6902) ``test``s the
   annotation's value and ``spec.unschedulable`` first, then removes ``spec.unschedulable`` (what ``kubectl uncordon``
   leaves: the field unset), the annotation and remediation's reason annotation
   (:data:`~fmconstructs.health.metric_names.REMEDIATION_REASON_ANNOTATION`, when present); a cordon without the
   annotation is an operator's and is never lifted. Uncordoning comes before the taint goes, so a node whose
   uncordon failed still keeps its taint, and the next start of the gate checks it again;
5. on pass, removes the taint with a JSON patch that first ``test``s that the taint is still at the index it read
   (RFC 6902 "test"): a concurrent change of the node's taints makes the patch fail instead of removing another
   taint, and the gate re-reads and retries (3 times);
6. on fail, leaves the taint (no pod that does not tolerate it lands on the node), leaves a remediation cordon in place,
   and exits 1.

After a remediation reboot: the remediation handler puts the taint back (``<taint_key>=pending:NoSchedule``, on a
node that carries the gate's group label) before it reboots the instance, so the gate finds it at boot, runs the
checks again and, on pass, lifts both the taint and remediation's cordon (step 4); on a failed check both stay. A
node remediation cordoned without a reboot (drain only, a replacement held back by the rate limit) has no taint: a
restart of the gate's pod leaves it cordoned.

API access: ``curl`` to ``https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`` with the pod's service account
token (Kubernetes "Accessing the Kubernetes API from a Pod": "directly accessing the REST API" with the token and
``ca.crt`` of ``/var/run/secrets/kubernetes.io/serviceaccount``), and ``jq`` to read the node. Both are on the EKS
AL2023 AMIs, where the gate runs: the AMI build installs ``jq`` (awslabs/amazon-eks-ami
``templates/al2023/provisioners/install-worker.sh``, ``dnf install -y ... jq ...``) and uses ``curl`` itself in the
same script; ``kubectl`` is not on the AMI (the same script installs only ``kubelet`` from the Kubernetes binaries).
The pod passes the token and CA in the environment (``KUBE_TOKEN``, ``KUBE_CA_PEM``) with ``NODE_NAME`` (downward
API ``spec.nodeName``); the CA is written to a file mode 0600 that is removed on exit. Every API call runs under
``curl --max-time 30``. The calls, all to ``/api/v1/nodes/$NODE_NAME``: ``GET``; ``PATCH`` with
``application/merge-patch+json`` (the result annotation); ``PATCH`` with ``application/json-patch+json`` (the
uncordon, the taint's removal).

Tests only (unset on nodes): as :mod:`fmconstructs.health.checks` (``FMCONSTRUCTS_ROOT/bin`` first on ``PATH``:
a stub ``curl`` answers the API).
"""

from __future__ import annotations

from collections.abc import Sequence

from .._validate import check_str_sequence
from .._validate_k8s import check_label_key
from ..errors import FmValidationError, is_token
from . import metric_names as names
from .checks import render_check_library
from .spec import CheckMode, NodeCheckSpec

__all__ = ["PASS_PREFIX", "render_kubernetes_node_gate"]

#: The annotation value of a node that passed starts with this; a failed node's with ``FAIL``.
PASS_PREFIX = "PASS"

# A domain-prefixed Kubernetes key (``prefix/name``, k8s.io/apimachinery IsDomainPrefixedKey: the label-key rule of
# fmconstructs._validate_k8s with a prefix). Literal only (the script is rendered at synth time).
_KEY_TEXT = "a qualified Kubernetes key 'prefix/name' such as 'fmconstructs.io/node-checks'"

_GATE = r"""
# --- Kubernetes node gate (fmconstructs/health/kubernetes_gate.py): no pods until the checks above pass ---
TAINT_KEY="@TAINT_KEY@"
ANNOTATION_KEY="@ANNOTATION_KEY@"
CORDONED_BY_ANNOTATION="@CORDONED_BY_ANNOTATION@"
CORDONED_BY_REMEDIATION="@CORDONED_BY_REMEDIATION@"
REASON_ANNOTATION="@REASON_ANNOTATION@"
NODE="${NODE_NAME:-}"
API_HOST="${KUBERNETES_SERVICE_HOST:-}"
if [[ "$API_HOST" == *:* ]]; then
  API_HOST="[${API_HOST}]"
fi
API="https://${API_HOST}:${KUBERNETES_SERVICE_PORT:-443}/api/v1/nodes/${NODE}"
CA_FILE=$(mktemp)
chmod 600 "$CA_FILE"
trap 'rm -f "$CA_FILE"' EXIT
printf '%s\n' "${KUBE_CA_PEM:-}" >"$CA_FILE"

# api METHOD [CONTENT-TYPE BODY]: one call to this node's object; prints the response, fails on an HTTP error.
function api() {
  local args=(--silent --show-error --fail --max-time 30 --cacert "$CA_FILE"
    -H "Authorization: Bearer ${KUBE_TOKEN:-}" -X "$1")
  if [ $# -ge 3 ]; then
    args+=(-H "Content-Type: $2" --data-binary "$3")
  fi
  curl "${args[@]}" "$API"
}

# The index of our taint in the node's taints ("null" when it has none); fails when the node cannot be read.
function taint_index() {
  local node index
  node=$(api GET) || return 1
  index=$(jq -r --arg k "$TAINT_KEY" '[(.spec.taints // [])[].key] | index($k)' <<<"$node") || return 1
  [[ "$index" =~ ^([0-9]+|null)$ ]] || return 1
  echo "$index"
}

function annotate() {
  local body
  body=$(jq -cn --arg k "$ANNOTATION_KEY" --arg v "$(printf '%s' "$1" | tr -d '\r\n' | cut -c 1-256)" \
    '{metadata: {annotations: {($k): $v}}}')
  api PATCH application/merge-patch+json "$body" >/dev/null || log "GATE: could not annotate ${NODE}"
}

function remove_taint() {
  local attempt index body
  for attempt in 1 2 3; do
    index=$(taint_index) || index=error
    if [ "$index" = null ]; then
      return 0
    fi
    if [[ "$index" =~ ^[0-9]+$ ]]; then
      body=$(jq -cn --arg k "$TAINT_KEY" --argjson i "$index" \
        '[{op: "test", path: "/spec/taints/\($i)/key", value: $k}, {op: "remove", path: "/spec/taints/\($i)"}]')
      api PATCH application/json-patch+json "$body" >/dev/null && return 0
    fi
    log "GATE: removing ${TAINT_KEY} from ${NODE} failed (attempt ${attempt})"
    sleep $((attempt * 2))
  done
  return 1
}

# The JSON patch that lifts remediation's cordon of the node read on stdin ("" when there is none: not cordoned, or
# cordoned without remediation's annotation, an operator's cordon). Annotation keys as JSON pointers (RFC 6901).
function uncordon_patch() {
  jq -c --arg k "$CORDONED_BY_ANNOTATION" --arg v "$CORDONED_BY_REMEDIATION" --arg r "$REASON_ANNOTATION" '
    def pointer: "/metadata/annotations/" + (gsub("~"; "~0") | gsub("/"; "~1"));
    (.metadata.annotations // {}) as $notes
    | if (.spec.unschedulable // false) == true and $notes[$k] == $v then
        [{op: "test", path: ($k | pointer), value: $v}, {op: "test", path: "/spec/unschedulable", value: true},
         {op: "remove", path: "/spec/unschedulable"}, {op: "remove", path: ($k | pointer)}]
        + (if $notes | has($r) then [{op: "remove", path: ($r | pointer)}] else [] end)
      else empty end'
}

# Lifts remediation's cordon (after a reboot that remediation asked for); an operator's cordon stays.
function uncordon_if_remediation() {
  local attempt node body
  for attempt in 1 2 3; do
    body=error
    if node=$(api GET); then
      body=$(uncordon_patch <<<"$node") || body=error
    fi
    if [ -z "$body" ]; then
      return 0
    fi
    if [ "$body" != error ] && api PATCH application/json-patch+json "$body" >/dev/null; then
      log "GATE: ${NODE} uncordoned (cordoned by ${CORDONED_BY_REMEDIATION}, ${CORDONED_BY_ANNOTATION} removed)"
      return 0
    fi
    log "GATE: uncordoning ${NODE} failed (attempt ${attempt})"
    sleep $((attempt * 2))
  done
  return 1
}

# The backend's set-up of the host before the checks (fmconstructs/health/kubernetes_gate.py host_setup).
function host_setup() {
  :
@HOST_SETUP@
}

if [ -z "$NODE" ] || [ -z "$API_HOST" ]; then
  log "GATE: NODE_NAME or KUBERNETES_SERVICE_HOST is not set; checks run without the gate"
  host_setup
  run_checks
  exit $?
fi
INDEX=""
for attempt in 1 2 3 4 5; do
  INDEX=$(taint_index) && break
  log "GATE: could not read node ${NODE} (attempt ${attempt})"
  INDEX=error
  sleep $((attempt * 5))
done
if [ "$INDEX" = error ]; then
  log "GATE: the Kubernetes API did not answer; ${NODE} keeps ${TAINT_KEY}"
  exit 2
fi
if [ "$INDEX" = null ]; then
  log "GATE: ${NODE} has no ${TAINT_KEY} taint (checked before, or removed by an operator); nothing to do"
  exit 0
fi
host_setup
if run_checks; then
  annotate "@PASS_PREFIX@ ${CHECKS_PASSED} checks in ${SECONDS}s"
  if ! uncordon_if_remediation; then
    log "GATE: ${NODE} passed its checks but remediation's cordon could not be lifted; ${TAINT_KEY} kept"
    exit 2
  fi
  if remove_taint; then
    log "GATE: ${NODE} passed its checks; ${TAINT_KEY} removed, the node takes pods"
    exit 0
  fi
  log "GATE: ${NODE} passed its checks but ${TAINT_KEY} could not be removed"
  exit 2
fi
annotate "FAIL ${FIRST_FAILED_CHECK}: ${FIRST_FAIL_REASON}"
log "GATE: ${NODE} failed ${FIRST_FAILED_CHECK}: ${FIRST_FAIL_REASON}; ${TAINT_KEY} kept (and any cordon)"
exit 1
"""


def _check_key(parameter: str, value: object) -> str:
    if is_token(value):
        raise FmValidationError(parameter, value, "a literal value (the gate is rendered at synth time)")
    key: str = check_label_key(parameter, value, kind=parameter.partition("_")[0])
    if "/" not in key:
        raise FmValidationError(parameter, value, _KEY_TEXT)
    return key


def render_kubernetes_node_gate(
    spec: NodeCheckSpec, *, taint_key: str, annotation_key: str, host_setup: Sequence[str] = ()
) -> str:
    """The gate (``#!/bin/bash``, run on the host): BOOT checks, then on pass lift remediation's cordon (if any) and
    remove ``taint_key`` from this node, or keep both and annotate the failing check. Exit status: 0 passed (or
    nothing to do), 1 failed, 2 API trouble.

    :param taint_key: the key of the taint the node joins with (its value and effect are not read).
    :param annotation_key: the node annotation that receives ``PASS ...`` or ``FAIL <check>: <reason>``.
    :param host_setup: shell lines run on the host before the checks, only when they run (the taint is there), e.g.
        :func:`fmconstructs.health.install.dcgm_host_commands`. Default: none.
    """
    lines = check_str_sequence("host_setup", host_setup)
    if any(is_token(line) for line in lines):
        raise FmValidationError("host_setup", host_setup, "literal shell lines (the gate is rendered at synth time)")
    values = {
        "@TAINT_KEY@": _check_key("taint_key", taint_key),
        "@ANNOTATION_KEY@": _check_key("annotation_key", annotation_key),
        "@PASS_PREFIX@": PASS_PREFIX,
        "@HOST_SETUP@": "\n".join(f"  {line}" if line else "" for line in lines),
        "@CORDONED_BY_ANNOTATION@": names.CORDONED_BY_ANNOTATION,
        "@CORDONED_BY_REMEDIATION@": names.CORDONED_BY_REMEDIATION,
        "@REASON_ANNOTATION@": names.REMEDIATION_REASON_ANNOTATION,
    }
    gate = _GATE
    for placeholder, value in values.items():
        gate = gate.replace(placeholder, value)
    return render_check_library(spec, CheckMode.BOOT) + gate
