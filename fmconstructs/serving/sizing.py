"""Does a model fit for serving on a catalog instance type, and with which tensor/pipeline-parallel layout?

The model (per GPU, every GPU of a layout holding an equal share of the weights):

- weights = parameters x bytes per parameter of ``dtype`` (GiB = 2**30 bytes), split over ``tensor_parallel x
  pipeline_parallel`` GPUs;
- HBM per GPU = the catalog's ``GpuSpec.memory_mib_per_gpu`` (EC2 ``GpuInfo``);
- usable = HBM x :data:`VLLM_GPU_MEMORY_UTILIZATION` (vLLM's ``--gpu-memory-utilization`` default) minus
  :data:`RUNTIME_OVERHEAD_GIB_PER_GPU` for activations, CUDA graphs and communication buffers (the library's
  assumption, not a vLLM figure: vLLM measures it by profiling at start-up);
- KV cache = usable - weights share; the model fits when the KV cache is at least ``kv_cache_fraction`` of usable.

Layouts follow vLLM's "Distributed Inference and Serving" guide (docs.vllm.ai, serving/distributed_serving, v0.5.5
to v0.8.4 as seen): on one node, tensor parallel over the node's GPUs; on several nodes, "the tensor parallel size is
the number of GPUs you want to use in each node, and the pipeline parallel size is the number of nodes". The model's
attention-head count is unknown here, so tensor-parallel degrees are the powers of two that divide the GPUs per node
(1, 2, 4, 8 on an 8-GPU type): a degree that does not divide the model's heads is refused by vLLM at start-up, not
here. The weights' bytes count the parameters only: quantization scales (FP8/FP4 block scales), embeddings kept in
higher precision and the KV cache's own dtype are not modelled.

No aws_cdk import: ``fmc plan`` uses this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from ..catalog import get_instance_spec
from ..errors import FmTypeError, FmValidationError, is_token, one_of

GIB = 1024**3

#: vLLM ``CacheConfig.gpu_memory_utilization`` default, the fraction of each GPU's memory vLLM's executor may use:
#: 0.9 in vllm/config/cache.py (vllm-project/vllm at c1d86421174a87056edc90a41dc9942391509e84, ``Field(default=0.9,
#: gt=0, le=1)``). A newer main commit (002f10e0cfa1373a19a0d2756598a34b700d20e5) raises it to 0.92; which release
#: tag first ships 0.92 is UNCONFIRMED, so the lower (stricter) 0.9 is used.
VLLM_GPU_MEMORY_UTILIZATION = 0.9

#: GiB per GPU held back for activations, CUDA graphs and NCCL buffers: the library's assumption (vLLM profiles the
#: real figure at start-up; no upstream constant exists).
RUNTIME_OVERHEAD_GIB_PER_GPU = 4.0

#: Default share of usable GPU memory that must stay free for the KV cache: the library's assumption (vLLM itself
#: starts with any positive KV-cache space; it publishes no headroom default). Raise it for long contexts or many
#: concurrent requests.
DEFAULT_KV_CACHE_FRACTION = 0.2


class ModelDtype(str, Enum):
    """The dtype the model's weights are served in."""

    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    FP4 = "fp4"
    INT4 = "int4"

    @property
    def bytes_per_parameter(self) -> float:
        """Bytes one parameter takes (scales of quantized formats not counted)."""
        return _BYTES[self]


_BYTES: dict[ModelDtype, float] = {
    ModelDtype.FP32: 4.0,
    ModelDtype.BF16: 2.0,
    ModelDtype.FP16: 2.0,
    ModelDtype.FP8: 1.0,
    ModelDtype.INT8: 1.0,
    ModelDtype.FP4: 0.5,
    ModelDtype.INT4: 0.5,
}


@dataclass(frozen=True)
class ServingLayout:
    """One serving replica's layout and the memory arithmetic behind ``fits``.

    ``weights_gib``, ``hbm_gib`` and ``kv_cache_gib`` are totals over the layout's ``tensor_parallel x
    pipeline_parallel`` GPUs (each GPU holds an equal share)."""

    instance_type: str
    nodes: int
    gpus_per_node: int
    tensor_parallel: int
    pipeline_parallel: int
    weights_gib: float
    hbm_gib: float
    kv_cache_gib: float
    fits: bool

    @property
    def gpus(self) -> int:
        """GPUs the replica uses (tensor_parallel x pipeline_parallel)."""
        return self.tensor_parallel * self.pipeline_parallel

    def describe(self) -> str:
        """``2 x p5.48xlarge, TP=8 x PP=2 (16 GPUs): 754.2 GiB weights, 361.4 GiB KV cache of 1280.0 GiB HBM``."""
        gpus = f"{self.gpus} GPU{'s' if self.gpus > 1 else ''}"
        return (
            f"{self.nodes} x {self.instance_type}, TP={self.tensor_parallel} x PP={self.pipeline_parallel} ({gpus}): "
            f"{self.weights_gib:,.1f} GiB weights, {self.kv_cache_gib:,.1f} GiB KV cache of {self.hbm_gib:,.1f} GiB HBM"
        )


def tensor_parallel_degrees(gpus_per_node: int) -> tuple[int, ...]:
    """Powers of two that divide ``gpus_per_node`` (1, 2, 4, 8 for 8 GPUs; 1, 2, 4 for 4)."""
    return tuple(2**i for i in range(gpus_per_node.bit_length()) if gpus_per_node % 2**i == 0)


def _dtype(value: object) -> ModelDtype:
    if isinstance(value, ModelDtype):
        return value
    if isinstance(value, str):
        try:
            return ModelDtype(value.lower())
        except ValueError:
            pass
    raise FmValidationError("dtype", value, one_of(ModelDtype))


def _parameters(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FmTypeError("parameters", value, f"a number of model parameters (got a {type(value).__name__})")
    if is_token(value):
        raise FmValidationError("parameters", value, "a number known at synth time (the fit is computed at synth)")
    if not math.isfinite(value) or value <= 0:
        raise FmValidationError("parameters", value, "a positive number of model parameters such as 70e9")
    return float(value)


def _count(parameter: str, value: object, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FmTypeError(parameter, value, f"a whole number (got a {type(value).__name__})")
    if is_token(value):
        raise FmValidationError(parameter, value, "a number known at synth time (the layout is computed at synth)")
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        raise FmValidationError(parameter, value, "a whole number")
    if value < minimum:
        raise FmValidationError(parameter, value, f"at least {minimum}")
    return int(value)


def _fraction(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or is_token(value):
        raise FmTypeError("kv_cache_fraction", value, "a number in [0, 1)")
    if not math.isfinite(value) or not 0 <= value < 1:
        raise FmValidationError("kv_cache_fraction", value, "a number in [0, 1) (share of usable GPU memory)")
    return float(value)


def _parallelism(
    nodes: int, gpus_per_node: int, tensor_parallel: int | None, pipeline_parallel: int | None
) -> tuple[int, int]:
    """(TP, PP) for ``nodes``: vLLM's documented layout by default; explicit degrees checked against the nodes."""
    degrees = tensor_parallel_degrees(gpus_per_node)
    total = nodes * gpus_per_node
    if tensor_parallel is None:
        if pipeline_parallel is None:
            return gpus_per_node, nodes
        tensor_parallel = total // pipeline_parallel
        if total % pipeline_parallel or tensor_parallel not in degrees:
            raise FmValidationError(
                "pipeline_parallel",
                pipeline_parallel,
                f"a divisor of the {total} GPUs that leaves a tensor-parallel degree of {', '.join(map(str, degrees))}",
            )
    if tensor_parallel not in degrees:
        raise FmValidationError(
            "tensor_parallel",
            tensor_parallel,
            f"a power of two that divides the {gpus_per_node} GPUs per node ({', '.join(map(str, degrees))}): the "
            "model's attention heads are not known here, so tensor parallelism stays within a node",
        )
    if pipeline_parallel is None:
        pipeline_parallel = 1 if nodes == 1 else total // tensor_parallel
    if nodes == 1:
        if tensor_parallel * pipeline_parallel > gpus_per_node:
            raise FmValidationError(
                "pipeline_parallel",
                pipeline_parallel,
                f"at most {gpus_per_node // tensor_parallel} with tensor_parallel={tensor_parallel} on one node",
            )
    elif tensor_parallel * pipeline_parallel != total or pipeline_parallel % nodes:
        raise FmValidationError(
            "pipeline_parallel",
            pipeline_parallel,
            f"{total // tensor_parallel} with tensor_parallel={tensor_parallel} on {nodes} nodes (every GPU used, "
            "each pipeline stage inside one node)",
        )
    return tensor_parallel, pipeline_parallel


def _layout(
    instance_type: str, nodes: int, parameters: float, dtype: ModelDtype, fraction: float, tp: int, pp: int
) -> ServingLayout:
    spec = get_instance_spec(instance_type)
    hbm_per_gpu = spec.gpu.memory_mib_per_gpu / 1024
    usable = hbm_per_gpu * VLLM_GPU_MEMORY_UTILIZATION - RUNTIME_OVERHEAD_GIB_PER_GPU
    weights = parameters * dtype.bytes_per_parameter / GIB
    gpus = tp * pp
    kv_per_gpu = usable - weights / gpus
    fits = usable > 0 and kv_per_gpu >= fraction * usable - 1e-9
    return ServingLayout(
        instance_type=instance_type,
        nodes=nodes,
        gpus_per_node=spec.gpu.count,
        tensor_parallel=tp,
        pipeline_parallel=pp,
        weights_gib=weights,
        hbm_gib=hbm_per_gpu * gpus,
        kv_cache_gib=kv_per_gpu * gpus,
        fits=fits,
    )


def serving_layout(
    *,
    parameters: float,
    dtype: ModelDtype,
    instance_type: str,
    nodes: int = 1,
    kv_cache_fraction: float = DEFAULT_KV_CACHE_FRACTION,
    tensor_parallel: int | None = None,
    pipeline_parallel: int | None = None,
) -> ServingLayout:
    """The layout of one replica over ``nodes`` x ``instance_type`` and whether the model fits (``fits``).

    Default layout (vLLM's distributed-serving guide): tensor_parallel = GPUs per node, pipeline_parallel = nodes.
    Bad input (unknown dtype or type, non-positive parameters, a tensor-parallel degree that does not divide the GPUs
    per node) raises :class:`~fmconstructs.errors.FmValidationError`; a model that does not fit does not (see
    :func:`check_model_fits`)."""
    params = _parameters(parameters)
    model_dtype = _dtype(dtype)
    spec = get_instance_spec(instance_type)
    count = _count("nodes", nodes)
    fraction = _fraction(kv_cache_fraction)
    tp = None if tensor_parallel is None else _count("tensor_parallel", tensor_parallel)
    pp = None if pipeline_parallel is None else _count("pipeline_parallel", pipeline_parallel)
    tp, pp = _parallelism(count, spec.gpu.count, tp, pp)
    return _layout(spec.instance_type, count, params, model_dtype, fraction, tp, pp)


def smallest_serving_layout(
    *,
    parameters: float,
    dtype: ModelDtype,
    instance_type: str,
    kv_cache_fraction: float = DEFAULT_KV_CACHE_FRACTION,
) -> ServingLayout | None:
    """The fewest nodes that fit (on one node, the smallest tensor-parallel degree that fits); None when even one GPU
    has no usable memory left after the runtime overhead."""
    params = _parameters(parameters)
    model_dtype = _dtype(dtype)
    spec = get_instance_spec(instance_type)
    fraction = _fraction(kv_cache_fraction)
    per_node = spec.gpu.count
    usable = spec.gpu.memory_mib_per_gpu / 1024 * VLLM_GPU_MEMORY_UTILIZATION - RUNTIME_OVERHEAD_GIB_PER_GPU
    room = usable * (1 - fraction)
    if room <= 0:
        return None
    weights = params * model_dtype.bytes_per_parameter / GIB
    gpus_needed = max(1, math.ceil(weights / room))
    if gpus_needed <= per_node:
        for tp in tensor_parallel_degrees(per_node):
            if tp >= gpus_needed:
                layout = _layout(spec.instance_type, 1, params, model_dtype, fraction, tp, 1)
                if layout.fits:
                    return layout
    nodes = max(1, math.ceil(gpus_needed / per_node))
    while True:  # the estimate can be one short at a rounding boundary
        layout = _layout(spec.instance_type, nodes, params, model_dtype, fraction, per_node, nodes)
        if layout.fits:
            return layout
        nodes += 1


def check_model_fits(
    *,
    parameters: float,
    dtype: ModelDtype,
    instance_type: str,
    nodes: int,
    tensor_parallel: int | None = None,
    pipeline_parallel: int | None = None,
    kv_cache_fraction: float = DEFAULT_KV_CACHE_FRACTION,
    parameter: str = "nodes",
) -> ServingLayout:
    """:func:`serving_layout`, refusing a model that does not fit: the :class:`~fmconstructs.errors.FmValidationError`
    names ``parameter``, the value, and the smallest layout that fits."""
    layout = serving_layout(
        parameters=parameters,
        dtype=dtype,
        instance_type=instance_type,
        nodes=nodes,
        kv_cache_fraction=kv_cache_fraction,
        tensor_parallel=tensor_parallel,
        pipeline_parallel=pipeline_parallel,
    )
    if layout.fits:
        return layout
    model_dtype = _dtype(dtype)
    what = f"{_params_text(float(parameters))} {model_dtype.value} on {layout.instance_type}"
    shortfall = (
        f"{layout.weights_gib:,.1f} GiB weights over {layout.gpus} GPUs leave {layout.kv_cache_gib:,.1f} GiB of "
        f"{layout.hbm_gib:,.1f} GiB HBM for the KV cache, less than kv_cache_fraction={kv_cache_fraction:g} of usable "
        f"memory (gpu_memory_utilization {VLLM_GPU_MEMORY_UTILIZATION:g}, {RUNTIME_OVERHEAD_GIB_PER_GPU:g} GiB runtime "
        "overhead per GPU)"
    )
    smallest = smallest_serving_layout(
        parameters=parameters, dtype=model_dtype, instance_type=instance_type, kv_cache_fraction=kv_cache_fraction
    )
    if smallest is None:
        allowed = f"a layout that fits {what}, and none does ({shortfall})"
    elif parameter == "nodes" and smallest.nodes > layout.nodes:
        allowed = f">= {smallest.nodes} for {what} ({shortfall}; smallest that fits: {smallest.describe()})"
    else:
        allowed = f"a value that fits {what} ({shortfall}; smallest that fits: {smallest.describe()})"
    raise FmValidationError(parameter, _value_of(parameter, layout, nodes), allowed)


def _params_text(parameters: float) -> str:
    """``405e9`` rather than ``4.05e+11``."""
    return f"{parameters / 1e9:g}e9" if parameters >= 1e9 else f"{parameters:g}"


def _value_of(parameter: str, layout: ServingLayout, nodes: object) -> object:
    if parameter == "tensor_parallel":
        return layout.tensor_parallel
    if parameter == "pipeline_parallel":
        return layout.pipeline_parallel
    return nodes
