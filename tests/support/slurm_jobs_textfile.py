"""Helpers of tests/observability/test_slurm_jobs_textfile.py that other test modules use too."""

from __future__ import annotations

# squeue --Format "JobID:0|,UserName:0|,...": each value whole, followed by "|".
ODD_ACCOUNT = 'a"b\\c'  # a double quote and a backslash: escaped in the label value
RUNNING = (
    "1001|alice|ml-team|gpu|cpu=192,mem=2000G,node=1,billing=192,gres/gpu=8,gres/gpu:h100=8|\n"
    "1002|bob|research|gpu|cpu=2,mem=4G,node=1,billing=2|\n"
    f"1003|carol|{ODD_ACCOUNT}|gpu|cpu=4,gres/gpu:a100=2,gres/gpu:h100=4|\n"
    "garbage\n"
    "notanid|x|y|z|w|\n"
)


PENDING = "gpu|Priority\ngpu|Priority\ngpu|Resources\ncpu|QOSMaxGRESPerUser\ngpu,cpu|ReqNodeNotAvail, UnavailableNodes:n[1-2]\n"
FAKE_SQUEUE = f"""#!/bin/sh
echo "$*" >> "$(dirname "$0")/squeue.log"
case "$*" in
  *--states=RUNNING*) cat <<'EOF_R'
{RUNNING}EOF_R
  ;;
  *--states=PENDING*) cat <<'EOF_P'
{PENDING}EOF_P
  ;;
  *) exit 2 ;;
esac
"""
