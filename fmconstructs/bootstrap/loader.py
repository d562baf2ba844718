"""The node-side halves of asset delivery: the loader that goes into user data and the runner inside the archive.

**Loader** (:func:`render_loader`, a few hundred bytes plus the deploy-time values): runs as root from cloud-init,
with the node's instance-profile role.

1. Exits 0 at once when ``/var/lib/fmconstructs/bootstrap/<sha256>/done`` exists (this content already ran on this
   instance: the marker is per content hash).
2. Writes the deploy-time values (CloudFormation resolved them into the user data) to ``params``, one ``N=value``
   per line.

The same loader has a second rendering, :func:`render_static_loader`: a static file whose name, sha256, archive URL,
Region, log group and values come from its arguments instead of embedded text (one loader logic, two renderings;
for ParallelCluster ``CustomActions`` ``Script`` + ``Args``).
3. Fetches the archive with ``aws s3 cp --region <region>``: the AWS CLI signs with the instance-profile role, and
   with the Region given it uses the Regional S3 endpoint, which an S3 gateway endpoint serves, so no internet route
   is needed. ``AWS_S3_US_EAST_1_REGIONAL_ENDPOINT=regional`` makes AWS CLI v1 use the Regional endpoint in
   us-east-1 too (botocore ``configprovider.py``: ``us_east_1_regional_endpoint`` from that variable; AWS CLI v2 uses
   Regional endpoints by default). Retried 7 times over about 5 minutes: IAM changes made in the same deployment can
   take seconds to apply, and the node may boot before they do.
4. Checks the archive's sha256 (embedded in the loader at synthesis) with ``sha256sum -c``; unpacks it and hands over
   to the runner.

Every failure (no AWS CLI, fetch, checksum, unpack) prints one ``fmconstructs-bootstrap[<name>]: ...`` line to the
log file and sends it to the CloudWatch Logs group, and the loader exits 1.

**Runner** (:data:`RUNNER_SCRIPT`, ``run.sh`` in the archive): for each ``steps/NNN-<name>/`` in order, unless its
marker ``done.NNN-<name>`` exists: installs the step's ``files/`` tree at ``/`` (each file with its archive mode,
``install -D``), replaces the deploy-time placeholders in the step's ``run.sh`` with the values, and runs it with
``bash`` (``set -e``: the first failing command fails the step). A failed step stops the run: later steps are not
started, the runner exits with the step's status, and running the loader again resumes at that step. When every
step is done it writes ``done``.

**Logs.** Each run writes ``/var/log/fmconstructs/<name>.<epoch seconds>.log`` (also on the console, so in
``/var/log/cloud-init-output.log``), and the runner sends it to the CloudWatch Logs group with the AWS CLI
(``aws logs put-log-events``, log stream ``<name>/<instance id>``), encoding the events with ``python3``. The AWS CLI
and Python are what cloud-init images carry (cloud-init is a Python program), so nothing is installed; the CloudWatch
agent is not used because AL2023 and the Deep Learning AMIs do not start it by default and a private subnet may not
be able to install it. PutLogEvents limits (CloudWatch Logs API reference, PutLogEvents): a batch holds at most
10,000 events and 1,048,576 bytes counting 26 bytes per event, each event at most 256 KB: the runner sends the last
lines of the run that fit (at most 9,999 events, 1,000,000 bytes, each line cut at 60,000 characters). In a subnet
without a CloudWatch Logs endpoint or route the upload fails after a 10 s connect timeout and the log stays on the
node: the run's outcome does not depend on it.

What an AMI needs: ``bash``, coreutils (``sha256sum``, ``install``, ``stat``), ``tar`` with gzip, ``find`` and the
AWS CLI (v1 or v2) on ``PATH`` for the fetch; ``python3`` for the CloudWatch upload. Amazon Linux 2023, the Deep
Learning AMIs, the EKS-optimized AL2023 AMIs and the AWS PCS sample AMIs are built on cloud-init distributions; that
each ships the AWS CLI is UNCONFIRMED here (not read on an image): the loader fails with "the AWS CLI is missing"
where it does not. Deploy-time values must be single-line strings (ARNs, ids, DNS names and URLs are).
"""

from __future__ import annotations

import re

#: Where the loader keeps archives and markers, and where logs go (under ``$FMCONSTRUCTS_ROOT`` in tests only).
STATE_DIR = "/var/lib/fmconstructs/bootstrap"
LOG_DIR = "/var/log/fmconstructs"

#: A deploy-time value's placeholder in step scripts: ``@@FMCONSTRUCTS_VALUE_<n>@@``.
PLACEHOLDER = "@@FMCONSTRUCTS_VALUE_{index}@@"
#: The heredoc marker of the values block in the loader.
VALUES_MARKER = "FMCONSTRUCTS_VALUES"

#: A bootstrap name: what log files and log streams are named after.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

# Kept terse: it travels in user data (target: the whole user data under 2 KiB). shellcheck runs on it in tests.
_LOADER = r"""#!/bin/bash
# fmconstructs.bootstrap loader
set -uo pipefail
@HEAD@ t=0 z=${FMCONSTRUCTS_ROOT:-}
d=$z@STATE@/$h l=$z@LOGS@/$n.$(date +%s).log
export AWS_S3_US_EAST_1_REGIONAL_ENDPOINT=regional
mkdir -p "$d" "${l%/*}"
exec > >(tee -a "$l") 2>&1
fail() {
  echo "fmconstructs-bootstrap[$n]: $1"
  s=(--region "$r" --log-group-name "$g" --log-stream-name "$n/$(cat "$z/var/lib/cloud/data/instance-id" || hostname)")
  aws logs create-log-stream "${s[@]}"
  aws logs put-log-events "${s[@]}" --log-events "[{\"timestamp\":$(date +%s000),\"message\":\"$n: $1\"}]"
  exit 1
}
[ -e "$d/done" ] && { echo "$n: $h already ran"; exit 0; }
@PARAMS@
type aws >/dev/null || fail "no AWS CLI"
until aws s3 cp --region "$r" --only-show-errors "$u" "$d/a.tgz"; do
  [ $((t += 1)) -lt 8 ] || fail "cannot fetch $u"
  sleep $((t * 10))
done
echo "$h  $d/a.tgz" | sha256sum -c --status || fail "sha256 mismatch: $u"
tar -xzf "$d/a.tgz" -C "$d" || fail "cannot unpack $u"
exec bash "$d/run.sh" "$d" "$n" "$r" "$g" "$l"
"""

#: ``run.sh`` at the root of every bootstrap archive (see the module docstring).
RUNNER_SCRIPT = r"""#!/bin/bash
# fmconstructs NodeBootstrap runner (fmconstructs/bootstrap/loader.py): run the archive's steps in order, each once.
# Usage: run.sh DIR NAME REGION LOG_GROUP LOG_FILE (the loader passes them). Steps: DIR/steps/NNN-name/{files/,run.sh}
set -uo pipefail
d=$1 n=$2 r=$3 g=$4 l=$5
z=${FMCONSTRUCTS_ROOT:-} # tests only
shopt -u patsub_replacement 2>/dev/null || true # bash 5.2: '&' in a replacement stays literal
log() { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) fmconstructs-bootstrap[$n]: $*"; }

# Deploy-time values: CloudFormation resolved them into DIR/params ("N=value" lines); each replaces its placeholder.
substitute() {
  local file=$1 text line
  text=$(cat "$file" && echo .)
  text=${text%.}
  while IFS= read -r line || [ -n "$line" ]; do
    text=${text//"@@FMCONSTRUCTS_VALUE_${line%%=*}@@"/"${line#*=}"}
  done <"$d/params"
  printf '%s' "$text" >"$file"
}

# A step's files/ tree, installed at / with the modes the archive gives them.
install_files() {
  local root=$1 file
  [ -d "$root" ] || return 0
  while IFS= read -r -d '' file; do
    install -D -m "$(stat -c %a "$file")" "$file" "$z/${file#"$root"/}"
  done < <(find "$root" -type f -print0 | sort -z)
}

# This run's log to CloudWatch Logs (best effort: the run's outcome does not depend on it).
upload() {
  local stream
  command -v aws >/dev/null || return 0
  if ! command -v python3 >/dev/null; then
    log "python3 is missing: the log was not sent to CloudWatch Logs (it is in $l)"
    return 0
  fi
  python3 - "$l" >"$d/events.json" <<'PY' || return 0
import json, sys, time

lines = [x[:60000] for x in open(sys.argv[1], encoding="utf-8", errors="replace").read().splitlines() if x.strip()]
kept, size = [], 0
for line in reversed(lines):
    size += len(line.encode()) + 26
    if size > 1_000_000 or len(kept) == 9_999:
        break
    kept.append(line)
now = int(time.time() * 1000)
print(json.dumps([{"timestamp": now, "message": line} for line in reversed(kept)]))
PY
  stream=$n/$(cat "$z/var/lib/cloud/data/instance-id" 2>/dev/null || hostname)
  aws logs create-log-stream --region "$r" --cli-connect-timeout 10 --log-group-name "$g" \
    --log-stream-name "$stream" 2>/dev/null
  aws logs put-log-events --region "$r" --cli-connect-timeout 10 --log-group-name "$g" --log-stream-name "$stream" \
    --log-events "file://$d/events.json" >/dev/null || log "could not send the log to CloudWatch Logs group $g"
}

status=0
for step in "$d"/steps/*/; do
  [ -d "$step" ] || continue
  step=${step%/}
  id=${step##*/}
  if [ -e "$d/done.$id" ]; then
    log "step $id: done before, skipped"
    continue
  fi
  log "step $id: start"
  install_files "$step/files"
  substitute "$step/run.sh"
  if bash "$step/run.sh"; then
    touch "$d/done.$id"
    log "step $id: done"
  else
    status=$?
    log "step $id: FAILED with exit status $status; later steps did not run"
    break
  fi
done
if [ "$status" = 0 ]; then
  touch "$d/done"
  log "every step done"
fi
upload
exit "$status"
"""


def render_loader(
    *, name: str, sha256: str, bucket: str, key: str, region: str, log_group: str, values: list[str]
) -> str:
    """The loader script for one archive. ``bucket``, ``region`` and the ``values`` may be CDK tokens (CloudFormation
    resolves them into the user data); ``values[i]`` replaces ``@@FMCONSTRUCTS_VALUE_<i+1>@@`` in the steps."""
    lines = "".join(f"{index}={value}\n" for index, value in enumerate(values, start=1))
    head = f"n={name} h={sha256} u=s3://{bucket}/{key} r={region} g={log_group}"
    params = f"cat >\"$d/params\" <<'{VALUES_MARKER}'\n{lines}{VALUES_MARKER}"
    return _render(head, params)


#: How many arguments :func:`render_static_loader`'s script takes before the deploy-time values.
STATIC_LOADER_FIXED_ARGS = 5


def render_static_loader() -> str:
    """The same loader as a static file: it takes its values from arguments instead of embedded text, so one file
    (content-addressed) serves any archive. Usage: ``loader.sh NAME SHA256 S3_URL REGION LOG_GROUP [VALUE...]``;
    the ``VALUE`` arguments replace ``@@FMCONSTRUCTS_VALUE_1@@``... in the steps, in order (the arguments of
    :meth:`fmconstructs.bootstrap.NodeBootstrap.script_action`). For script-URL consumers such as ParallelCluster's
    ``CustomActions`` (``Script`` + ``Args``, ParallelCluster User Guide "custom-bootstrap-actions-config-v3")."""
    head = "n=${1:?usage: loader NAME SHA256 S3_URL REGION LOG_GROUP [VALUE...]} h=${2:?} u=${3:?} r=${4:?} g=${5:?}"
    params = f'shift {STATIC_LOADER_FIXED_ARGS}\ni=0\nfor v in "$@"; do echo "$((i += 1))=$v"; done >"$d/params"'
    return _render(head, params)


def _render(head: str, params: str) -> str:
    # The fixed parts first: the head and the values are not searched again for placeholders.
    replacements = {"@STATE@": STATE_DIR, "@LOGS@": LOG_DIR, "@HEAD@": head, "@PARAMS@": params}
    text = _LOADER
    for placeholder, value in replacements.items():
        text = text.replace(placeholder, value)
    return text


def loader_template() -> str:
    """The loader with its placeholders (shellcheck reads a rendered copy; see the tests)."""
    return _LOADER
