"""The Kubernetes node gate: a GPU node takes no pods until its boot checks pass, ``render_kubernetes_node_gate(spec)``.

The node joins with the taint ``<taint_key>=pending:NoSchedule`` (an EKS managed node group taint); the gate, run on
the host once per node (by a DaemonSet pod that enters the host's namespaces, :mod:`fmconstructs.eks.health`):

1. reads the node (``GET /api/v1/nodes/<node>``); when the taint is gone (checks passed before, or an operator removed
   it) the checks do not run again and the gate exits 0;
2. runs the BOOT checks of :func:`fmconstructs.health.render_node_checks` (the same functions, the same log);
3. writes the result to the node annotation ``<annotation_key>``: ``PASS <summary>`` or ``FAIL <check>: <reason>``
   (a JSON merge patch, at most 256 characters);
4. on pass, removes the taint with a JSON patch that first ``test``s that the taint is still at the index it read
   (RFC 6902 "test"): a concurrent change of the node's taints makes the patch fail instead of removing another
   taint, and the gate re-reads and retries (3 times);
5. on fail, leaves the taint (no pod that does not tolerate it lands on the node) and exits 1.

API access: ``curl`` to ``https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`` with the pod's service account
token (Kubernetes "Accessing the Kubernetes API from a Pod": "directly accessing the REST API" with the token and
``ca.crt`` of ``/var/run/secrets/kubernetes.io/serviceaccount``), and ``jq`` to read the node. Both are on the EKS
AL2023 AMIs, where the gate runs: the AMI build installs ``jq`` (awslabs/amazon-eks-ami
``templates/al2023/provisioners/install-worker.sh``, ``dnf install -y ... jq ...``) and uses ``curl`` itself in the
same script; ``kubectl`` is not on the AMI (the same script installs only ``kubelet`` from the Kubernetes binaries).
The pod passes the token and CA in the environment (``KUBE_TOKEN``, ``KUBE_CA_PEM``) with ``NODE_NAME`` (downward
API ``spec.nodeName``); the CA is written to a file mode 0600 that is removed on exit. Every API call runs under
``curl --max-time 30``.

Tests only (unset on nodes): as :mod:`fmconstructs.health.checks` (``FMCONSTRUCTS_ROOT/bin`` first on ``PATH``:
a stub ``curl`` answers the API).
"""

from __future__ import annotations

import re

from .._validate import check_str
from ..errors import FmValidationError, is_token
from .checks import render_check_library
from .spec import CheckMode, NodeCheckSpec

__all__ = ["PASS_PREFIX", "render_kubernetes_node_gate"]

#: The annotation value of a node that passed starts with this; a failed node's with ``FAIL``.
PASS_PREFIX = "PASS"

# A qualified Kubernetes key (``prefix/name``): DNS subdomain prefix, then a name (k8s.io/apimachinery
# IsQualifiedName). Kept literal here (the script is rendered at synth time).
_QUALIFIED_KEY = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_KEY_TEXT = "a qualified Kubernetes key 'prefix/name' such as 'fmconstructs.io/node-checks'"

_GATE = r"""
# --- Kubernetes node gate (fmconstructs/health/kubernetes_gate.py): no pods until the checks above pass ---
TAINT_KEY="@TAINT_KEY@"
ANNOTATION_KEY="@ANNOTATION_KEY@"
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

if [ -z "$NODE" ] || [ -z "$API_HOST" ]; then
  log "GATE: NODE_NAME or KUBERNETES_SERVICE_HOST is not set; checks run without the gate"
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
if run_checks; then
  annotate "@PASS_PREFIX@ ${CHECKS_PASSED} checks in ${SECONDS}s"
  if remove_taint; then
    log "GATE: ${NODE} passed its checks; ${TAINT_KEY} removed, the node takes pods"
    exit 0
  fi
  log "GATE: ${NODE} passed its checks but ${TAINT_KEY} could not be removed"
  exit 2
fi
annotate "FAIL ${FIRST_FAILED_CHECK}: ${FIRST_FAIL_REASON}"
log "GATE: ${NODE} failed ${FIRST_FAILED_CHECK}: ${FIRST_FAIL_REASON}; ${TAINT_KEY} kept"
exit 1
"""


def _check_key(parameter: str, value: object) -> str:
    if is_token(value):
        raise FmValidationError(parameter, value, "a literal value (the gate is rendered at synth time)")
    key: str = check_str(parameter, value, pattern=_QUALIFIED_KEY, allowed=_KEY_TEXT)
    if len(key.partition("/")[0]) > 253:
        raise FmValidationError(parameter, value, _KEY_TEXT)
    return key


def render_kubernetes_node_gate(spec: NodeCheckSpec, *, taint_key: str, annotation_key: str) -> str:
    """The gate (``#!/bin/bash``, run on the host): BOOT checks, then remove ``taint_key`` from this node on pass,
    or keep it and annotate the failing check. Exit status: 0 passed (or nothing to do), 1 failed, 2 API trouble.

    :param taint_key: the key of the taint the node joins with (its value and effect are not read).
    :param annotation_key: the node annotation that receives ``PASS ...`` or ``FAIL <check>: <reason>``.
    """
    values = {
        "@TAINT_KEY@": _check_key("taint_key", taint_key),
        "@ANNOTATION_KEY@": _check_key("annotation_key", annotation_key),
        "@PASS_PREFIX@": PASS_PREFIX,
    }
    gate = _GATE
    for placeholder, value in values.items():
        gate = gate.replace(placeholder, value)
    return render_check_library(spec, CheckMode.BOOT) + gate
