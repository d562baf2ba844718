"""Helpers of tests/health/test_health_nccl.py that other test modules use too."""

from __future__ import annotations

import re

_PREFIX = re.compile(r"\s*(?:\d+: ?|\[\d+,\d+\]<stdout>:)?\s*")

# all_reduce_perf on 2x p5.48xlarge as `srun --label` prints it: rows from awslabs/awsome-distributed-ai
# micro-benchmarks/nccl-tests/README.md ("Results"), the footer in the format of NVIDIA/nccl-tests src/util.cu
# writeResultFooter (v2.19.6).
P5_SRUN = """\
0: # nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803
0: # Collective test starting: all_reduce_perf
0: NCCL INFO Bootstrap : Using enp71s0:10.1.2.3<0>
0: #
0: #                                                              out-of-place                       in-place
0: #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
0: #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
0:            8             2     float     sum      -1    69.12    0.00    0.00      0    72.43    0.00    0.00      0
0:      1048576        262144     float     sum      -1    123.2    8.51   15.95      0    121.3    8.64   16.21      0
0:   1073741824     268435456     float     sum      -1   4607.6  233.04  436.95      0   4565.6  235.18  440.96      0
0:   8589934592    2147483648     float     sum      -1    33605  255.62  479.28      0    33628  255.44  478.95      0
0:  17179869184    4294967296     float     sum      -1    66132  259.78  487.09      0    66109  259.87  487.26      0
0: # Out of bounds values : 0 OK
0: # Avg bus bandwidth    : 193.452
0: #
0: # Collective test concluded: all_reduce_perf
"""


# The EKS launcher's `mpirun --tag-output` format (same README, "Amazon EKS", step 4).
EKS_TAGGED = """\
[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
[1,0]<stdout>:#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
[1,0]<stdout>:           0             0     float     sum      -1    15.51    0.00    0.00      0    15.52    0.00    0.00      0
[1,0]<stdout>:  1073741824     268435456     float     sum      -1   6426.3  167.09  313.29      0   6426.1  167.09  313.29      0
[1,0]<stdout>:  2147483648     536870912     float     sum      -1   9197.5  233.49  437.79      0   9195.2  233.54  437.89      0
[1,0]<stdout>:# Out of bounds values : 0 OK
[1,0]<stdout>:# Avg bus bandwidth    : 52.9753
"""


def _degraded(text: str, avg: str) -> str:
    return text.replace("193.452", avg)


def scaled(text: str, factor: float) -> str:
    """``text`` (an all_reduce_perf output) with every algbw/busbw and the average multiplied by ``factor``: the
    same fabric ``1 - factor`` slower (0.85: a 15% drop). Row layout: NVIDIA/nccl-tests src/util.cu (v2.19.6)."""
    lines = []
    for line in text.splitlines(keepends=True):
        match = _PREFIX.match(line)
        prefix, body = match.group(0), line[match.end() :]
        tokens = body.split()
        if len(tokens) >= 13 and tokens[0].isdigit():
            for index in (6, 7, 10, 11):
                tokens[index] = f"{float(tokens[index]) * factor:.2f}"
            line = prefix + "  ".join(tokens) + "\n"
        elif body.startswith("# Avg bus bandwidth"):
            value = float(body.rsplit(":", 1)[1])
            line = prefix + f"# Avg bus bandwidth    : {value * factor:.4f}\n"
        lines.append(line)
    return "".join(lines)
