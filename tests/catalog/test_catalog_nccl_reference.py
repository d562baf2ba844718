"""The catalog's published nccl-tests all-reduce figures: per type and node count, each with its source; none where
none is published (references for the NCCL check's floor, never gates)."""

from __future__ import annotations

import pytest

from fmconstructs._nccl_reference import NCCL_ALLREDUCE_REFERENCES, REFERENCE_MESSAGE_BYTES
from fmconstructs.catalog import BUILTIN_INSTANCE_TYPES, nccl_allreduce_reference


@pytest.mark.parametrize(
    ("instance_type", "nodes", "busbw"),
    [("p5.48xlarge", 2, 487.09), ("p6-b200.48xlarge", 4, 377.0), ("p6-b300.48xlarge", 2, 654.0)],
)
def test_published_figures_at_16_gib(instance_type: str, nodes: int, busbw: float) -> None:
    reference = nccl_allreduce_reference(instance_type, nodes=nodes)
    assert reference is not None and reference.busbw_gbytes_per_s == busbw
    assert reference.message_bytes == REFERENCE_MESSAGE_BYTES == 17179869184
    assert reference.source.startswith("AWSOME-")
    assert nccl_allreduce_reference(instance_type, nodes=nodes, message_bytes=16 * 1024**3) is reference


@pytest.mark.parametrize(
    ("instance_type", "nodes", "message_bytes"),
    [
        ("p5.48xlarge", 4, None),  # another node count: busbw is not count-linear (NVIDIA/aicr#1256)
        ("p6-b200.48xlarge", 2, None),
        ("p5.48xlarge", 2, 8 * 1024**3),  # another largest message size
        ("p5en.48xlarge", 2, None),  # no published figure
        ("p6e-gb200.36xlarge", 2, None),
        ("m7i.xlarge", 2, None),
    ],
)
def test_no_figure_where_none_is_published(instance_type: str, nodes: int, message_bytes: int | None) -> None:
    assert nccl_allreduce_reference(instance_type, nodes=nodes, message_bytes=message_bytes) is None


def test_every_figure_is_for_a_catalog_type_once() -> None:
    keys = [(r.instance_type, r.nodes, r.message_bytes) for r in NCCL_ALLREDUCE_REFERENCES]
    assert len(keys) == len(set(keys))
    assert {r.instance_type for r in NCCL_ALLREDUCE_REFERENCES} <= set(BUILTIN_INSTANCE_TYPES)
    assert all(r.nodes >= 2 and r.busbw_gbytes_per_s > 0 for r in NCCL_ALLREDUCE_REFERENCES)
