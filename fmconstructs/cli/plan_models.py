"""``fmc plan``'s model questions: compute per precision, "does it fit for serving", "how long does training take".

Peak figures come from the catalog (:attr:`fmconstructs.catalog.InstanceSpec.gpu_performance`, each with its
source); the serving fit from :mod:`fmconstructs.serving.sizing`. Training time is the usual estimate

    time = 6 x parameters x tokens / (GPUs x peak dense BF16 FLOPS per GPU x MFU)

(6 FLOPs per parameter per token for forward and backward passes of a dense transformer, Kaplan et al. 2020,
"Scaling laws for neural language models"). MFU (model FLOPs utilization) is the user's assumption: nothing here
measures or defaults it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from rich.table import Table

from .._gpu_performance import Precision
from ..catalog import get_instance_spec
from ..serving.sizing import (
    RUNTIME_OVERHEAD_GIB_PER_GPU,
    VLLM_GPU_MEMORY_UTILIZATION,
    ModelDtype,
    ServingLayout,
    serving_layout,
    smallest_serving_layout,
)
from .assembly import DEPLOY_TIME

#: Precisions ``fmc plan`` shows, in column order.
PRECISIONS: tuple[Precision, ...] = (Precision.FP4, Precision.FP8, Precision.BF16, Precision.TF32, Precision.FP64)
TRAINING_FORMULA = "time = 6 x parameters x tokens / (GPUs x peak dense BF16 FLOPS per GPU x MFU)"


@dataclass
class ComputeTotal:
    """Every GPU group of the plan at max nodes: GPUs, peak dense PFLOPS per precision, GPU memory."""

    gpus: int | str = 0
    dense_pflops: dict[str, float | str] = field(default_factory=dict)
    gpu_memory_gib: float | str = 0.0


@dataclass
class ServingPlan:
    parameters: float
    dtype: str
    instance_type: str
    kv_cache_fraction: float
    nodes: int
    fits: bool
    layout: dict[str, Any]
    smallest: dict[str, Any] | None
    answer: str
    assumptions: str = (
        f"weights = parameters x bytes per parameter; usable = HBM x {VLLM_GPU_MEMORY_UTILIZATION:g} (vLLM "
        f"--gpu-memory-utilization default) - {RUNTIME_OVERHEAD_GIB_PER_GPU:g} GiB per GPU (library assumption); "
        "fits when the KV cache keeps at least kv_cache_fraction of usable memory; TP = GPUs per node, PP = nodes "
        "(vLLM distributed serving guide)"
    )


@dataclass
class TrainingPlan:
    parameters: float
    tokens: float
    mfu: float
    gpus: int | str
    peak_dense_bf16_pflops: float | str
    total_flops: float
    hours: float | str
    days: float | str
    cost_usd: float | str | None
    formula: str = TRAINING_FORMULA
    note: str = "MFU is your assumption (not measured): the time scales with 1/MFU."


def group_compute(gpus_per_node: int, instance_type: str, nodes: object) -> tuple[dict[str, float], dict[str, Any]]:
    """Per-node and total peak dense PFLOPS per precision of ``nodes`` x ``instance_type`` (total ``deploy-time``
    when the node count is not known)."""
    performance = get_instance_spec(instance_type).gpu_performance
    per_node: dict[str, float] = {}
    total: dict[str, Any] = {}
    if performance is None:
        return per_node, total
    for precision in PRECISIONS:
        pflops = performance.dense_pflops(precision)
        if pflops is None:
            continue
        per_node[precision.value] = pflops * gpus_per_node
        if isinstance(nodes, int):
            total[precision.value] = pflops * gpus_per_node * nodes
        elif nodes is not None:
            total[precision.value] = DEPLOY_TIME
    return per_node, total


def compute_total(groups: list[Any]) -> ComputeTotal:
    """Sum of the GPU groups (``NodeGroupPlan`` with ``dense_pflops_total``)."""
    total = ComputeTotal()
    for g in groups:
        if not g.dense_pflops_total:
            continue
        total.gpus = _add(total.gpus, g.gpus_total)
        total.gpu_memory_gib = _add(total.gpu_memory_gib, g.gpu_memory_gib_total)
        for precision, value in g.dense_pflops_total.items():
            total.dense_pflops[precision] = _add(total.dense_pflops.get(precision, 0.0), value)
    return total


def _add(a: Any, b: Any) -> Any:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a + b
    return DEPLOY_TIME


def plan_serving(
    *, parameters: float, dtype: ModelDtype, instance_type: str, nodes: int | None, kv_cache_fraction: float
) -> ServingPlan:
    """The fit at ``nodes`` (or at the smallest layout when ``nodes`` is None) and the smallest layout that fits."""
    smallest = smallest_serving_layout(
        parameters=parameters, dtype=dtype, instance_type=instance_type, kv_cache_fraction=kv_cache_fraction
    )
    if nodes is None:
        layout = smallest or serving_layout(
            parameters=parameters, dtype=dtype, instance_type=instance_type, kv_cache_fraction=kv_cache_fraction
        )
    else:
        layout = serving_layout(
            parameters=parameters,
            dtype=dtype,
            instance_type=instance_type,
            nodes=nodes,
            kv_cache_fraction=kv_cache_fraction,
        )
    what = f"{parameters / 1e9:g}B parameters in {dtype.value}"
    if layout.fits:
        answer = f"{what} fit for serving on {layout.describe()}"
        if smallest is not None and smallest.gpus < layout.gpus:
            answer += f" (the smallest layout that fits: {smallest.describe()})"
    elif smallest is not None:
        answer = f"{what} do NOT fit on {layout.describe()}; the smallest layout that fits: {smallest.describe()}"
    else:
        answer = f"{what} do NOT fit on {instance_type} in any layout"
    return ServingPlan(
        parameters=parameters,
        dtype=dtype.value,
        instance_type=instance_type,
        kv_cache_fraction=kv_cache_fraction,
        nodes=layout.nodes,
        fits=layout.fits,
        layout=_layout_json(layout),
        smallest=None if smallest is None else _layout_json(smallest),
        answer=answer,
    )


def _layout_json(layout: ServingLayout) -> dict[str, Any]:
    data = asdict(layout)
    data["gpus"] = layout.gpus
    return data


def plan_training(
    *, parameters: float, tokens: float, mfu: float, total: ComputeTotal, cost_per_hour: float | str | None
) -> TrainingPlan:
    """Training time and cost on every GPU of the plan (``total``) at ``mfu``."""
    flops = 6 * parameters * tokens
    peak = total.dense_pflops.get(Precision.BF16.value, DEPLOY_TIME if total.gpus == DEPLOY_TIME else 0.0)
    hours: float | str = DEPLOY_TIME
    days: float | str = DEPLOY_TIME
    cost: float | str | None = None
    if isinstance(peak, int | float) and peak > 0:
        seconds = flops / (peak * 1e15 * mfu)
        hours = seconds / 3600
        days = hours / 24
        if isinstance(cost_per_hour, int | float):
            cost = cost_per_hour * hours
        elif cost_per_hour is not None:
            cost = DEPLOY_TIME
    return TrainingPlan(
        parameters=parameters,
        tokens=tokens,
        mfu=mfu,
        gpus=total.gpus,
        peak_dense_bf16_pflops=peak,
        total_flops=flops,
        hours=hours,
        days=days,
        cost_usd=cost,
    )


def compute_table(groups: list[Any], total: ComputeTotal, fmt: Any) -> Table:
    """Peak dense PFLOPS per precision and GPU memory per node group and in total."""
    table = Table(title="Compute (peak dense tensor PFLOPS, vendor figures)", title_justify="left", show_footer=True)
    footer = {"Group": "Total", "GPUs": fmt(total.gpus), "GPU memory GiB": fmt(total.gpu_memory_gib, 1)}
    for precision in PRECISIONS:
        footer[f"{precision.value.upper()} PF"] = fmt(total.dense_pflops.get(precision.value), 2)
    columns = ("Stack", "Group", "Instance type", "GPUs", *(f"{p.value.upper()} PF" for p in PRECISIONS))
    for column in (*columns, "GPU memory GiB", "EFA gen"):
        table.add_column(column, footer=footer.get(column, ""), overflow="fold")
    for g in groups:
        if not g.dense_pflops_total:
            continue
        table.add_row(
            g.stack,
            g.group,
            g.instance_type,
            fmt(g.gpus_total),
            *(fmt(g.dense_pflops_total.get(p.value), 2) for p in PRECISIONS),
            fmt(g.gpu_memory_gib_total, 1),
            fmt(g.efa_generation),
        )
    return table


def render_models(plan: Any, console: Any, fmt: Any) -> None:
    """The compute table, then the serving answer and the training estimate when asked for."""
    total = plan.compute_total
    if total is not None and total.dense_pflops:
        console.print(compute_table(plan.node_groups, total, fmt))
    if plan.serving is not None:
        serving = plan.serving
        console.print(f"[bold]Serving fit:[/bold] {serving.answer}", highlight=False)
        console.print(f"  Model: {serving.assumptions}; kv_cache_fraction={serving.kv_cache_fraction:g}.", markup=False)
    if plan.training is not None:
        t = plan.training
        console.print("[bold]Training time:[/bold]", highlight=False)
        console.print(f"  {t.formula}", markup=False)
        console.print(
            f"  = 6 x {t.parameters:.4g} x {t.tokens:.4g} = {t.total_flops:.4g} FLOPs over {fmt(t.gpus)} GPUs "
            f"({fmt(t.peak_dense_bf16_pflops, 2)} PFLOPS peak dense BF16) at MFU {t.mfu:g}: "
            f"{fmt(t.hours, 1)} hours ({fmt(t.days, 1)} days)",
            markup=False,
        )
        if t.cost_usd is not None:
            console.print(f"  Cost at the prices you gave: {fmt(t.cost_usd, 2)} USD", markup=False)
        else:
            console.print("  Cost: give --price-per-hour TYPE=USD to see it (nothing is hard-coded).", markup=False)
        console.print(f"  {t.note}", markup=False)
