"""A frozen entry point: one script whose URL and arguments never change, for consumers that refuse a changed script.

ParallelCluster refuses any change to the head node's ``OnNodeStart``/``OnNodeConfigured`` (``Script`` and ``Args``)
on an existing cluster (aws-parallelcluster 3.16.1 ``pcluster/schemas/cluster_schema.py``
``HeadNodeCustomActionsSchema``: ``UpdatePolicy.UNSUPPORTED``, whose ``fail_reason`` in ``pcluster/config/
update_policy.py`` is "Update actions are not currently supported for the '<key>' parameter"). A
:class:`~fmconstructs.bootstrap.ScriptAction` carries its archive's sha256 and content-addressed URL in its arguments,
so every change to a step changes them. The entry point moves them out of the configuration:

    entry.sh PARAMETER_PATH REGION

reads the SSM parameters directly under ``PARAMETER_PATH`` (``GetParametersByPath``, authorized against the path:
Systems Manager User Guide "How Parameter Store authorizes parameter retrieval") in name order, and for each one
(``GetParameter``) runs what it holds: line 1 a static loader's ``s3://`` URL
(:func:`~fmconstructs.bootstrap.loader.render_static_loader`), each further line one of the loader's arguments (the
``ScriptAction``'s ``args``). The first that fails stops the run with its status, as a ``CustomActions`` ``Sequence``
does. SSM and S3 reads are retried 7 times over about 5 minutes (IAM changes made in the same deployment can take
seconds to apply), as the loader does.

The script is **frozen**: :data:`ENTRY_POINT_SHA256` pins it (a test fails on any edit), because its content-addressed
URL is in every deployed configuration that uses it, and a new URL is a change ParallelCluster refuses. What an AMI
needs: ``bash``, ``sort``, ``tr`` and the AWS CLI; the node needs ``ssm:GetParametersByPath`` on the path,
``ssm:GetParameter`` on the parameters under it, ``s3:GetObject`` on the loaders and archives, and a route to SSM (an
``ssm`` interface endpoint in a subnet without internet access: :class:`fmconstructs.networking.EndpointService`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

ENTRY_POINT = r"""#!/bin/bash
# fmconstructs.bootstrap entry point (FROZEN: fmconstructs/bootstrap/entry_point.py). Usage: entry.sh PATH REGION
# Runs each SSM parameter directly under PATH, in name order: line 1 a loader's s3:// URL, then one argument a line.
set -uo pipefail
p=${1:?usage: entry PARAMETER_PATH REGION} r=${2:?usage: entry PARAMETER_PATH REGION}
d=${FMCONSTRUCTS_ROOT:-}/var/lib/fmconstructs/bootstrap/entry
export AWS_S3_US_EAST_1_REGIONAL_ENDPOINT=regional
mkdir -p "$d"
fail() {
  echo "fmconstructs-entry[$p]: $1" >&2
  exit 1
}
retry() {
  local t=0
  until "$@"; do
    [ $((t += 1)) -lt 8 ] || return 1
    sleep $((t * 10))
  done
}
list() {
  aws ssm get-parameters-by-path --region "$r" --path "$p" --query 'Parameters[].Name' --output text >"$d/names"
}
type aws >/dev/null || fail "no AWS CLI"
retry list || fail "cannot list the parameters under $p"
mapfile -t names < <(tr '\t' '\n' <"$d/names" | grep -v '^None$' | grep . | sort)
[ "${#names[@]}" -gt 0 ] || fail "no parameter under $p"
i=0
for x in "${names[@]}"; do
  i=$((i + 1))
  retry aws ssm get-parameter --region "$r" --name "$x" --query Parameter.Value --output text >"$d/$i.args" ||
    fail "cannot read $x"
  mapfile -t a <"$d/$i.args"
  retry aws s3 cp --region "$r" --only-show-errors "${a[0]}" "$d/$i.sh" || fail "cannot fetch ${a[0]} ($x)"
  bash "$d/$i.sh" "${a[@]:1}" || fail "$x failed with exit status $?"
done
"""

#: The sha256 of :data:`ENTRY_POINT`. Never change the script: its URL is in deployed configurations.
ENTRY_POINT_SHA256 = "d6cabb5fe968f1c83f7b49481aa31bd82f939713ce24cb4b5b5626d3b1ba1652"

#: SSM Parameter Store: "Standard parameters have a value limit of 4 KB" (botocore ssm service-2.json,
#: PutParameterRequest Value).
PARAMETER_VALUE_MAX_CHARS = 4096


def entry_point_file(directory: Path) -> Path:
    """:data:`ENTRY_POINT` written (once) as ``directory/entry-<sha256>.sh``, for a file asset."""
    path = directory / f"entry-{hashlib.sha256(ENTRY_POINT.encode()).hexdigest()}.sh"
    if not path.exists():
        partial = path.with_suffix(".part")
        partial.write_text(ENTRY_POINT)
        partial.replace(path)
    return path


def parameter_value(script_url: str, args: tuple[str, ...]) -> str:
    """What one entry point parameter holds: the loader's URL, then each argument, one a line."""
    return "\n".join([script_url, *args])
