"""Published nccl-tests ``all_reduce_perf`` bus bandwidth per instance type and node count: references, not gates.

Read these through the catalog (:func:`fmconstructs.catalog.nccl_allreduce_reference`), never from here: the catalog
stays the one source of instance facts. The scheduled NCCL check (:mod:`fmconstructs.health.nccl`) takes a fraction of
a figure as the *floor* of its rolling baseline, so that a degraded first run never becomes the standard; the alert
compares the cluster with its own baseline, not with these numbers. A fixed per-SKU gate misfires on a healthy
cluster whose fabric, NCCL or EFA versions differ from the ones the figure was measured on (NVIDIA/aicr#1256: "a fixed
absolute fabric-specific busbw value ... false-fails a healthy run"; busbw "is topology/transport-class dependent and
is *not* count-linear"), so a figure applies only to its own type, node count and message size.

Each figure is the out-of-place ``busbw`` (GB/s) of the row at ``message_bytes`` in a published run of
``all_reduce_perf -b 8 -e 16G -f 2 -g 1`` with one rank per GPU, over EFA. Sources as seen
(awslabs/awsome-distributed-ai, the snapshot at commit 95b939cdc5b24ded03a70da21533964f9354b731):

- [AWSOME-NCCL] ``micro-benchmarks/nccl-tests/README.md``, "Results": "All_reduce performance test will be executed
  from 8B to 16GB on 2x p5.48xlarge": the 17179869184-byte row prints busbw 487.09 (out-of-place), 487.26
  (in-place).
- [AWSOME-PCS] ``architectures/aws-pcs/tests/compute-test.md``, "Test 6: NCCL multi-node (EFA)": "on 2x p6-b300,
  ~654 GB/s at 16 GiB but ~751 GB/s at 64 GiB ...; ~480 GB/s on 2x p5", and "Verified - p6-b200 x4 (32 GPU,
  ap-south-1)": "16 GiB 377 GB/s (peak); 0 wrong / 0 out-of-bounds", "not a peak-tuned number - NICs auto-selected
  (no NCCL_ALGO / topology tuning), general-purpose nccl-tests image".

Types without a published figure (p5e, p5en, p6e-gb200, and other node counts of the types above) have none: their
check has no catalog floor (give ``NcclCheckSpec(floor_busbw_gbytes_per_s=...)`` for one).
"""

from __future__ import annotations

from dataclasses import dataclass

#: 16 GiB, the largest message size of the published runs (``-e 16G``; nccl-tests reads K/M/G as powers of 1024).
REFERENCE_MESSAGE_BYTES = 16 * 1024**3


@dataclass(frozen=True)
class NcclAllReduceReference:
    """A published all-reduce bus bandwidth of ``nodes`` instances of ``instance_type`` (a reference, not a gate)."""

    instance_type: str
    nodes: int
    busbw_gbytes_per_s: float
    """Out-of-place busbw of the ``message_bytes`` row (GB/s, as nccl-tests prints it)."""
    source: str
    """Key of the source in this module's docstring, with the page's words for the figure."""
    message_bytes: int = REFERENCE_MESSAGE_BYTES


NCCL_ALLREDUCE_REFERENCES: tuple[NcclAllReduceReference, ...] = (
    # [AWSOME-NCCL] the 16 GiB row of the 2x p5.48xlarge sample; [AWSOME-PCS] "~480 GB/s on 2x p5" agrees.
    NcclAllReduceReference("p5.48xlarge", 2, 487.09, "AWSOME-NCCL: 2x p5.48xlarge, 17179869184 B row, busbw 487.09"),
    # [AWSOME-PCS] "Verified - p6-b200 x4": "16 GiB 377 GB/s (peak)", untuned.
    NcclAllReduceReference("p6-b200.48xlarge", 4, 377.0, "AWSOME-PCS: 4x p6-b200, 16 GiB 377 GB/s (not peak-tuned)"),
    # [AWSOME-PCS] "on 2x p6-b300, ~654 GB/s at 16 GiB" (the 16 EFA NICs are not saturated at 16 GiB).
    NcclAllReduceReference("p6-b300.48xlarge", 2, 654.0, "AWSOME-PCS: 2x p6-b300, ~654 GB/s at 16 GiB"),
)
