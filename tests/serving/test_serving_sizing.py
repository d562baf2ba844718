"""``fmconstructs.serving.sizing``: does a model fit for serving, with which layout, against hand-computed cases.

Hand arithmetic used below (GiB = 2**30 bytes; usable = HBM x 0.9 - 4 GiB; fits when KV >= 0.2 x usable):

- p5.48xlarge: 81920 MiB = 80 GiB per H100; usable = 80 x 0.9 - 4 = 68 GiB per GPU; KV floor 0.2 x 68 = 13.6 GiB.
- p5en.48xlarge: 144384 MiB = 141 GiB per H200; usable = 141 x 0.9 - 4 = 122.9 GiB; KV floor 24.58 GiB.
- 70e9 bf16 = 140e9 bytes = 130.385 GiB; 405e9 bf16 = 810e9 bytes = 754.372 GiB.
"""

from __future__ import annotations

import math

import aws_cdk as cdk
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fmconstructs.catalog import BUILTIN_INSTANCE_TYPES
from fmconstructs.errors import FmValidationError
from fmconstructs.serving.sizing import (
    DEFAULT_KV_CACHE_FRACTION,
    RUNTIME_OVERHEAD_GIB_PER_GPU,
    VLLM_GPU_MEMORY_UTILIZATION,
    ModelDtype,
    ServingLayout,
    check_model_fits,
    serving_layout,
    smallest_serving_layout,
    tensor_parallel_degrees,
)

W70 = 140e9 / 2**30  # 130.385 GiB
W405 = 810e9 / 2**30  # 754.372 GiB


def test_the_assumptions_are_the_documented_ones() -> None:
    assert VLLM_GPU_MEMORY_UTILIZATION == 0.9  # vllm/config/cache.py CacheConfig.gpu_memory_utilization
    assert RUNTIME_OVERHEAD_GIB_PER_GPU == 4.0
    assert DEFAULT_KV_CACHE_FRACTION == 0.2


def test_70b_bf16_fits_one_p5_node_with_tp8() -> None:
    """16.298 GiB of weights per GPU (130.385 / 8) leave 68 - 16.298 = 51.702 GiB of KV cache per GPU >= 13.6."""
    layout = serving_layout(parameters=70e9, dtype=ModelDtype.BF16, instance_type="p5.48xlarge")
    assert (layout.nodes, layout.tensor_parallel, layout.pipeline_parallel, layout.fits) == (1, 8, 1, True)
    assert layout.weights_gib == pytest.approx(W70)
    assert layout.hbm_gib == pytest.approx(8 * 80)
    assert layout.kv_cache_gib == pytest.approx(8 * (68 - W70 / 8))


def test_405b_bf16_does_not_fit_one_p5_node() -> None:
    """754.372 / 8 = 94.3 GiB per GPU > 68 GiB usable: negative KV space."""
    layout = serving_layout(parameters=405e9, dtype=ModelDtype.BF16, instance_type="p5.48xlarge")
    assert layout.fits is False
    assert layout.kv_cache_gib == pytest.approx(8 * (68 - W405 / 8))


def test_405b_bf16_needs_two_p5_nodes_tp8_pp2() -> None:
    """754.372 / 16 = 47.148 GiB per GPU; KV 68 - 47.148 = 20.852 GiB >= 13.6: vLLM's TP=8 x PP=2 layout."""
    layout = smallest_serving_layout(parameters=405e9, dtype=ModelDtype.BF16, instance_type="p5.48xlarge")
    assert layout is not None
    assert (layout.nodes, layout.tensor_parallel, layout.pipeline_parallel) == (2, 8, 2)
    assert layout.kv_cache_gib == pytest.approx(16 * (68 - W405 / 16))


def test_405b_bf16_fits_one_p5en_node_at_the_default_headroom() -> None:
    """H200: 122.9 - 94.297 = 28.603 GiB KV per GPU >= 24.58 (0.2 x 122.9): one p5en node is enough."""
    layout = smallest_serving_layout(parameters=405e9, dtype=ModelDtype.BF16, instance_type="p5en.48xlarge")
    assert layout is not None
    assert (layout.nodes, layout.tensor_parallel) == (1, 8)
    assert layout.kv_cache_gib == pytest.approx(8 * (122.9 - W405 / 8))


def test_405b_bf16_needs_two_p5en_nodes_with_more_kv_headroom() -> None:
    """kv_cache_fraction 0.3: floor 36.87 GiB > 28.603 on one node; two nodes leave 122.9 - 47.148 = 75.752."""
    layout = smallest_serving_layout(
        parameters=405e9, dtype=ModelDtype.BF16, instance_type="p5en.48xlarge", kv_cache_fraction=0.3
    )
    assert layout is not None
    assert (layout.nodes, layout.tensor_parallel, layout.pipeline_parallel) == (2, 8, 2)


def test_smallest_single_node_layout_uses_the_smallest_tp_that_fits() -> None:
    """70e9 bf16 on p5: TP=2 leaves 68 - 65.19 = 2.8 GiB < 13.6; TP=4 leaves 68 - 32.6 = 35.4 GiB."""
    layout = smallest_serving_layout(parameters=70e9, dtype=ModelDtype.BF16, instance_type="p5.48xlarge")
    assert layout is not None
    assert (layout.nodes, layout.tensor_parallel, layout.pipeline_parallel) == (1, 4, 1)


def test_fp8_halves_the_weights() -> None:
    """405e9 fp8 = 377.186 GiB; / 8 = 47.148 per GPU on one p5 node: KV 20.852 >= 13.6."""
    layout = serving_layout(parameters=405e9, dtype=ModelDtype.FP8, instance_type="p5.48xlarge")
    assert layout.fits and layout.weights_gib == pytest.approx(W405 / 2)


def test_check_model_fits_names_nodes_and_the_smallest_layout() -> None:
    with pytest.raises(FmValidationError) as caught:
        check_model_fits(parameters=405e9, dtype=ModelDtype.BF16, instance_type="p5.48xlarge", nodes=1)
    message = str(caught.value)
    assert message.startswith("nodes must be >= 2 for 405e9 bf16 on p5.48xlarge (754.4 GiB weights over 8 GPUs")
    assert "smallest that fits: 2 x p5.48xlarge, TP=8 x PP=2 (16 GPUs)" in message
    assert message.endswith("got 1")
    assert caught.value.parameter == "nodes"


def test_check_model_fits_returns_the_layout_when_it_fits() -> None:
    layout = check_model_fits(parameters=405e9, dtype=ModelDtype.BF16, instance_type="p5.48xlarge", nodes=2)
    assert isinstance(layout, ServingLayout) and layout.fits and layout.pipeline_parallel == 2


def test_check_model_fits_names_the_parameter_given() -> None:
    with pytest.raises(FmValidationError, match=r"^tensor_parallel must be a value that fits 70e9 bf16") as caught:
        check_model_fits(
            parameters=70e9,
            dtype=ModelDtype.BF16,
            instance_type="p5.48xlarge",
            nodes=1,
            tensor_parallel=2,
            parameter="tensor_parallel",
        )
    assert "smallest that fits: 1 x p5.48xlarge, TP=4 x PP=1 (4 GPUs)" in str(caught.value)


def test_dtype_given_as_its_string() -> None:
    layout = serving_layout(parameters=8e9, dtype="BF16", instance_type="p5.48xlarge")  # type: ignore[arg-type]
    assert layout.weights_gib == pytest.approx(16e9 / 2**30)


def test_explicit_layouts() -> None:
    one = serving_layout(parameters=8e9, dtype=ModelDtype.BF16, instance_type="p5.48xlarge", tensor_parallel=1)
    assert (one.tensor_parallel, one.pipeline_parallel, one.gpus) == (1, 1, 1)
    pp = serving_layout(parameters=8e9, dtype=ModelDtype.BF16, instance_type="p5.48xlarge", pipeline_parallel=2)
    assert (pp.tensor_parallel, pp.pipeline_parallel) == (4, 2)
    multi = serving_layout(
        parameters=405e9, dtype=ModelDtype.BF16, instance_type="p5.48xlarge", nodes=2, tensor_parallel=4
    )
    assert (multi.tensor_parallel, multi.pipeline_parallel) == (4, 4)


def test_gb200_has_four_gpus_per_node() -> None:
    assert tensor_parallel_degrees(4) == (1, 2, 4)
    assert tensor_parallel_degrees(8) == (1, 2, 4, 8)
    layout = serving_layout(parameters=405e9, dtype=ModelDtype.BF16, instance_type="p6e-gb200.36xlarge", nodes=2)
    assert (layout.tensor_parallel, layout.pipeline_parallel, layout.gpus_per_node) == (4, 2, 4)


_TOKEN = cdk.Token.as_number({"Ref": "ModelParameters"})


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"dtype": "bf17"}, "dtype"),
        ({"dtype": 16}, "dtype"),
        ({"parameters": 0}, "parameters"),
        ({"parameters": -70e9}, "parameters"),
        ({"parameters": math.nan}, "parameters"),
        ({"parameters": math.inf}, "parameters"),
        ({"parameters": "70e9"}, "parameters"),
        ({"parameters": True}, "parameters"),
        ({"parameters": _TOKEN}, "parameters"),
        ({"instance_type": "p9.48xlarge"}, "instance_type"),
        ({"nodes": 0}, "nodes"),
        ({"nodes": 1.5}, "nodes"),
        ({"nodes": "2"}, "nodes"),
        ({"tensor_parallel": 3}, "tensor_parallel"),
        ({"tensor_parallel": 16}, "tensor_parallel"),
        ({"tensor_parallel": 0}, "tensor_parallel"),
        ({"instance_type": "p6e-gb200.36xlarge", "tensor_parallel": 8}, "tensor_parallel"),
        ({"tensor_parallel": 4, "pipeline_parallel": 4}, "pipeline_parallel"),
        ({"pipeline_parallel": 3}, "pipeline_parallel"),
        ({"nodes": 2, "tensor_parallel": 8, "pipeline_parallel": 3}, "pipeline_parallel"),
        ({"nodes": 3, "pipeline_parallel": 4}, "pipeline_parallel"),
        ({"kv_cache_fraction": 1.0}, "kv_cache_fraction"),
        ({"kv_cache_fraction": -0.1}, "kv_cache_fraction"),
        ({"kv_cache_fraction": "0.2"}, "kv_cache_fraction"),
    ],
)
def test_bad_input_names_the_parameter(kwargs: dict[str, object], parameter: str) -> None:
    args: dict[str, object] = {"parameters": 70e9, "dtype": ModelDtype.BF16, "instance_type": "p5.48xlarge"}
    args.update(kwargs)
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be ") as caught:
        serving_layout(**args)  # type: ignore[arg-type]
    assert caught.value.parameter == parameter


def test_bad_dtype_lists_the_known_ones() -> None:
    with pytest.raises(FmValidationError, match=r"dtype must be one of 'fp32', 'bf16', 'fp16', 'fp8'"):
        smallest_serving_layout(parameters=70e9, dtype="bf17", instance_type="p5.48xlarge")  # type: ignore[arg-type]


# --- properties --------------------------------------------------------------------------------------------------

_PARAMS = st.floats(min_value=1e8, max_value=5e12, allow_nan=False)
_TYPES = st.sampled_from(BUILTIN_INSTANCE_TYPES)
_DTYPES = st.sampled_from(list(ModelDtype))
_FRACTIONS = st.floats(min_value=0.0, max_value=0.9)


@settings(max_examples=150, deadline=None)
@given(parameters=_PARAMS, dtype=_DTYPES, instance_type=_TYPES, nodes=st.integers(1, 16), fraction=_FRACTIONS)
def test_more_nodes_never_unfit(
    parameters: float, dtype: ModelDtype, instance_type: str, nodes: int, fraction: float
) -> None:
    layout = serving_layout(
        parameters=parameters, dtype=dtype, instance_type=instance_type, nodes=nodes, kv_cache_fraction=fraction
    )
    more = serving_layout(
        parameters=parameters, dtype=dtype, instance_type=instance_type, nodes=nodes + 1, kv_cache_fraction=fraction
    )
    assert not layout.fits or more.fits
    assert more.kv_cache_gib / more.gpus >= layout.kv_cache_gib / layout.gpus


@settings(max_examples=150, deadline=None)
@given(parameters=_PARAMS, dtype=_DTYPES, instance_type=_TYPES, fraction=_FRACTIONS)
def test_the_smallest_layout_fits_and_one_node_less_does_not(
    parameters: float, dtype: ModelDtype, instance_type: str, fraction: float
) -> None:
    smallest = smallest_serving_layout(
        parameters=parameters, dtype=dtype, instance_type=instance_type, kv_cache_fraction=fraction
    )
    assert smallest is not None and smallest.fits
    if smallest.nodes > 1:
        fewer = serving_layout(
            parameters=parameters,
            dtype=dtype,
            instance_type=instance_type,
            nodes=smallest.nodes - 1,
            kv_cache_fraction=fraction,
        )
        assert not fewer.fits
    check_model_fits(
        parameters=parameters,
        dtype=dtype,
        instance_type=instance_type,
        nodes=smallest.nodes,
        tensor_parallel=smallest.tensor_parallel,
        kv_cache_fraction=fraction,
    )


@settings(max_examples=100, deadline=None)
@given(parameters=_PARAMS, dtype=_DTYPES, instance_type=_TYPES, low=_FRACTIONS, high=_FRACTIONS)
def test_more_kv_headroom_never_fits_more(
    parameters: float, dtype: ModelDtype, instance_type: str, low: float, high: float
) -> None:
    low, high = sorted((low, high))
    a = smallest_serving_layout(parameters=parameters, dtype=dtype, instance_type=instance_type, kv_cache_fraction=low)
    b = smallest_serving_layout(parameters=parameters, dtype=dtype, instance_type=instance_type, kv_cache_fraction=high)
    assert a is not None and b is not None
    assert (a.nodes, a.gpus) <= (b.nodes, b.gpus)
