"""The catalog knows each GPU's peak dense FLOPS per precision, HBM and each type's EFA generation (issue 23 s. 2)."""

from __future__ import annotations

import pytest

from fmconstructs._gpu_performance import EFA_GENERATION, GPU_PERFORMANCE, Precision
from fmconstructs.catalog import BUILTIN_INSTANCE_TYPES, get_instance_spec, gpu_performance
from fmconstructs.errors import FmValidationError


@pytest.mark.parametrize("instance_type", BUILTIN_INSTANCE_TYPES)
def test_every_catalog_type_has_sourced_figures(instance_type: str) -> None:
    spec = get_instance_spec(instance_type)
    performance = spec.gpu_performance
    assert performance is not None and performance.model == spec.gpu.model
    assert performance.sources and performance.hbm_gb > 0 and performance.hbm_bandwidth_tbytes_per_s > 0
    for precision in (Precision.FP64, Precision.TF32, Precision.BF16, Precision.FP16, Precision.FP8):
        assert performance.dense_tflops[precision] > 0
    assert spec.efa_generation in (2, 3, 4)
    assert gpu_performance(instance_type) is performance


@pytest.mark.parametrize(
    ("instance_type", "bf16_pflops", "fp8_pflops", "fp4_pflops"),
    [
        # AWS overview (issue 23): H100 0.98 PF dense BF16, 1.98 FP8; B200/B300 2.25 BF16; B300 FP4 up to 13.5.
        ("p5.48xlarge", 0.9895, 1.979, None),
        ("p5en.48xlarge", 0.9895, 1.979, None),
        ("p6-b200.48xlarge", 2.25, 4.5, 9.0),
        ("p6-b300.48xlarge", 2.25, 4.5, 13.5),
        ("p6e-gb200.36xlarge", 2.5, 5.0, 10.0),
    ],
)
def test_dense_figures_match_the_overview(
    instance_type: str, bf16_pflops: float, fp8_pflops: float, fp4_pflops: float | None
) -> None:
    performance = gpu_performance(instance_type)
    assert performance.dense_pflops(Precision.BF16) == pytest.approx(bf16_pflops)
    assert performance.dense_pflops(Precision.FP8) == pytest.approx(fp8_pflops)
    assert performance.dense_pflops(Precision.FP4) == (None if fp4_pflops is None else pytest.approx(fp4_pflops))


def test_hbm_and_efa_generation() -> None:
    assert (GPU_PERFORMANCE["H200"].hbm_gb, GPU_PERFORMANCE["H200"].hbm_bandwidth_tbytes_per_s) == (141.0, 4.8)
    assert (GPU_PERFORMANCE["B300"].hbm_gb, GPU_PERFORMANCE["B300"].hbm_bandwidth_tbytes_per_s) == (288.0, 8.0)
    assert EFA_GENERATION["p5en.48xlarge"] == 3
    assert EFA_GENERATION["p6-b200.48xlarge"] == EFA_GENERATION["p6-b300.48xlarge"] == 4


def test_a_registered_type_without_figures_is_refused() -> None:
    from dataclasses import replace

    from fmconstructs.catalog import CATALOG, GpuSpec

    spec = replace(get_instance_spec("p5.48xlarge"), instance_type="p5.4xlarge", gpu=GpuSpec("X100", 8, 81920))
    CATALOG.register(spec)
    try:
        assert spec.gpu_performance is None and spec.efa_generation is None
        with pytest.raises(FmValidationError, match=r"^instance_type must be a type whose GPU model has sourced"):
            gpu_performance("p5.4xlarge")
    finally:
        CATALOG.unregister("p5.4xlarge")
