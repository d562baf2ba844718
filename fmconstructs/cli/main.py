"""Command-line entry point: ``fmc plan`` and ``fmc preflight`` (click, rich tables, ``--json`` for CI)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from .. import __version__
from ..errors import FmValidationError
from ..serving.sizing import DEFAULT_KV_CACHE_FRACTION, ModelDtype, smallest_serving_layout
from .errors import ExitCode, FmcError, as_fmc_error, require_gpu_groups
from .magnitudes import (
    MAX_CHECKPOINT_BYTES,
    MAX_CHECKPOINT_SECONDS,
    MAX_MODEL_PARAMS,
    MAX_NODES,
    MAX_PRICE_USD,
    MAX_THROUGHPUT_GBYTES_PER_S,
    MAX_TOKENS,
    Magnitude,
    bounded,
)
from .pcs_size import COLUMNS as PCS_SIZE_COLUMNS
from .pcs_size import table_rows as pcs_size_rows
from .plan import NodeGroupPlan, Plan, plan_assembly, plan_instances
from .plan_models import plan_serving, plan_training, render_models


def _fmt(value: object, digits: int = 0) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.{digits}f}" if not value.is_integer() or digits else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _nodes(minimum: object, maximum: object) -> str:
    if minimum is None and maximum is None:
        return "- (no group)"
    if minimum == maximum:
        return _fmt(maximum)
    return f"{_fmt(minimum)}-{_fmt(maximum)}"


def _short_reservation(value: str | None) -> str:
    if value is None:
        return "-"
    if value.startswith("arn:") and ":group/" in value:
        return "resource group " + value.split(":group/", 1)[1]
    return value


_GROUP_COLUMNS = (
    "Group",
    "Instance type",
    "Nodes",
    "GPUs/node",
    "GPU GiB/node",
    "GPUs",
    "EFA/node",
    "EFA Gbit/s/node",
    "EFA Gbit/s",
    "NVMe GB/node",
    "Capacity",
    "Reservation",
    "Zone",
    "Topology",
)
_FILE_SYSTEM_COLUMNS = (
    "Stack",
    "File system",
    "Capacity (GiB)",
    "Deployment",
    "MB/s/TiB",
    "Throughput (MB/s)",
    "EFA",
    "EFA connections",
)


def render_plan(plan: Plan, console: Console) -> None:
    """Every table of a plan: node groups per stack, cost, FSx, PCS controller size, then unknowns and notes."""
    for stack in dict.fromkeys(g.stack for g in plan.node_groups):
        console.print(_node_group_table(plan, stack))
    _render_cost(plan, console)
    render_models(plan, console, _fmt)
    if plan.file_systems:
        console.print(_file_system_table(plan))
    if plan.pcs_clusters:
        pcs = Table(title="PCS controller size (login nodes count)")
        for column in PCS_SIZE_COLUMNS:
            pcs.add_column(column, overflow="fold")
        for row in pcs_size_rows(plan.pcs_clusters):
            pcs.add_row(*row)
        console.print(pcs)
    if plan.unknowns:
        console.print("[bold]Known only at deploy time:[/bold]")
        for unknown in plan.unknowns:
            console.print(f"  - {unknown}", markup=False)
    for note in plan.notes:
        console.print(f"Note: {note}", markup=False)


def _node_group_table(plan: Plan, stack: str) -> Table:
    table = Table(title=f"{stack}: node groups" if stack != "-" else "Planned nodes", title_justify="left")
    for column in _GROUP_COLUMNS:
        table.add_column(column, overflow="fold")
    for g in (g for g in plan.node_groups if g.stack == stack):
        table.add_row(
            g.group,
            g.instance_type,
            _nodes(g.min_nodes, g.max_nodes),
            f"{g.gpus_per_node} x {g.gpu_model}" if g.gpus_per_node else "-",
            _fmt(g.gpu_memory_gib_per_node),
            _fmt(g.gpus_total),
            _fmt(g.efa_interfaces_per_node),
            _fmt(g.efa_gbps_per_node),
            _fmt(g.efa_gbps_total),
            _fmt(g.nvme_gb_per_node),
            g.capacity,
            _short_reservation(g.reservation),
            _fmt(g.zone),
            _fmt(g.topology),
        )
    return table


def _file_system_table(plan: Plan) -> Table:
    storage = Table(title="FSx for Lustre")
    for column in _FILE_SYSTEM_COLUMNS:
        storage.add_column(column, overflow="fold")
    for f in plan.file_systems:
        if f.efa_connections is None:
            budget = "-"
        else:
            budget = f"{_fmt(f.efa_connections)} / {f.efa_connection_limit:,}"
            if f.within_budget is False:
                budget += " OVER"
        storage.add_row(
            f.stack,
            f.file_system,
            _fmt(f.storage_capacity_gib),
            _fmt(f.deployment_type),
            _fmt(f.throughput_mbps_per_tib),
            _fmt(f.aggregate_throughput_mbps, 1),
            _fmt(f.efa_enabled),
            budget,
        )
    return storage


def cost_total(plan: Plan) -> float | str | None:
    """USD per hour of every priced group at max nodes; ``deploy-time`` when a priced group's count is not known."""
    costs = [g.cost_per_hour for g in plan.node_groups if g.price_per_hour is not None]
    if not costs:
        return None
    if any(not isinstance(c, int | float) for c in costs):
        return "deploy-time"
    return float(sum(c for c in costs if isinstance(c, int | float)))


def _render_cost(plan: Plan, console: Console) -> None:
    priced: list[NodeGroupPlan] = [g for g in plan.node_groups if g.price_per_hour is not None]
    if not priced:
        return
    cost = Table(title="Cost (prices you gave)", title_justify="left", show_footer=True)
    total = cost_total(plan)
    footer = {"Stack": "Total", "USD/hour": _fmt(total, 2) if total is not None else "-"}
    for column in ("Stack", "Group", "Instance type", "Nodes", "USD/hour/node", "USD/hour"):
        cost.add_column(column, footer=footer.get(column, ""), overflow="fold")
    for g in priced:
        cost.add_row(
            g.stack,
            g.group,
            g.instance_type,
            _fmt(g.max_nodes),
            _fmt(g.price_per_hour, 2),
            _fmt(g.cost_per_hour, 2),
        )
    console.print(cost)


def _prices(values: tuple[str, ...], instance_type: str | None) -> dict[str, float]:
    prices: dict[str, float] = {}
    for value in values:
        name, sep, number = value.rpartition("=")
        if not sep:
            if instance_type is None:
                raise click.BadParameter(
                    f"{value!r}: give TYPE=USD (e.g. p5.48xlarge=55.04) when planning a cloud assembly",
                    param_hint="--price-per-hour",
                )
            name = instance_type
        try:
            price = float(number)
        except ValueError:
            raise click.BadParameter(
                f"{value!r}: not a number of USD per hour", param_hint="--price-per-hour"
            ) from None
        if not bounded(price, 0, MAX_PRICE_USD):
            raise click.BadParameter(
                f"{value!r}: a price must be a finite number from 0 to {MAX_PRICE_USD:g} USD per node-hour",
                param_hint="--price-per-hour",
            )
        prices[name] = price
    return prices


def _console() -> Console:
    """Rich console; wide when not a terminal (CI logs, pipes) so that tables are not folded."""
    console = Console()
    return console if console.is_terminal else Console(width=220)


def _emit_json(data: Any) -> None:
    # allow_nan=False: Infinity/NaN are not JSON; a non-finite number is a defect (bounded options prevent it).
    click.echo(json.dumps(data, indent=2, default=str, allow_nan=False))


class _GateGroup(click.Group):
    """The ``fmc`` group: whatever a command raises ends as one line (JSON with ``--json``) and an exit code of
    :class:`~fmconstructs.cli.errors.ExitCode`, never a traceback."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["fmc_json"] = "--json" in args
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BaseException as error:  # the one place that turns any error into an exit code
            converted = as_fmc_error(error, as_json=bool(ctx.meta.get("fmc_json")))
            if converted is None or converted is error:
                raise
            raise converted from None


@click.group(cls=_GateGroup)
# The version of this source (fmconstructs.__version__), not of whatever distribution metadata is installed (an
# editable install keeps the version it was installed with).
@click.version_option(version=__version__, prog_name="fmc")
def cli() -> None:
    """fmc: plan a GPU training platform before you deploy it, preflight it against your account, check its health.

    Exit codes: 0 ok, 1 a preflight check failed or health is not HEALTHY, 2 bad usage, 3 unreadable cloud assembly
    (or no GPU node group), 4 no AWS credentials, 5 AWS set-up (region, endpoint), 70 internal error.
    """


def check_prices_in_plan(prices: dict[str, float], plan: Plan) -> None:
    """Refuse ``--price-per-hour`` for a type no group of the plan uses (a typo would silently price nothing)."""
    types = sorted({g.instance_type for g in plan.node_groups if g.kind != "launch-template"})
    stray = sorted(t for t in prices if t not in types)
    if stray:
        raise FmcError(
            f"--price-per-hour for {', '.join(stray)}: not an instance type of the plan ({', '.join(types) or 'none'})",
            ExitCode.USAGE,
        )


@cli.command()
@click.argument("cdk_out", required=False, default="cdk.out", type=click.Path(file_okay=False))
@click.option("--instance-type", help="Plan without an app: a catalog instance type (e.g. p5en.48xlarge).")
@click.option("--nodes", type=click.IntRange(min=1, max=MAX_NODES), help="Plan without an app: the number of nodes.")
@click.option(
    "--checkpoint-bytes",
    type=Magnitude(0, MAX_CHECKPOINT_BYTES, exclusive_low=True, unit="bytes"),
    help="Size the Lustre file system for a checkpoint of this many bytes.",
)
@click.option(
    "--checkpoint-seconds",
    type=Magnitude(1, MAX_CHECKPOINT_SECONDS, unit="seconds"),
    help="... written within this many seconds.",
)
@click.option(
    "--throughput-gbytes-per-s",
    type=Magnitude(0, MAX_THROUGHPUT_GBYTES_PER_S, exclusive_low=True, unit="GB/s"),
    help="Size the Lustre file system for this throughput (GB/s).",
)
@click.option(
    "--lustre-efa/--no-lustre-efa",
    default=True,
    help="Size an EFA-enabled file system (default, as TrainingPlatform does for every backend but HyperPod with "
    "base_config_dir); --no-lustre-efa for a TCP one.",
)
@click.option(
    "--price-per-hour",
    multiple=True,
    help="USD per node-hour, from you (nothing is hard-coded): TYPE=USD, or USD with --instance-type. Repeatable.",
)
@click.option(
    "--model-params",
    type=Magnitude(0, MAX_MODEL_PARAMS, exclusive_low=True),
    help="Model parameters (e.g. 70e9). With --instance-type: does it fit for serving (without --nodes: the smallest "
    "layout that fits). With --tokens and --mfu: training time and cost.",
)
@click.option(
    "--dtype",
    type=click.Choice([d.value for d in ModelDtype]),
    default=ModelDtype.BF16.value,
    show_default=True,
    help="Weights dtype for the serving fit.",
)
@click.option(
    "--kv-cache-fraction",
    type=Magnitude(0, 1),
    default=DEFAULT_KV_CACHE_FRACTION,
    show_default=True,
    help="Share of usable GPU memory the serving fit keeps for the KV cache (the library's assumption).",
)
@click.option(
    "--tokens",
    type=Magnitude(0, MAX_TOKENS, exclusive_low=True),
    help="Training tokens (e.g. 15e12), with --model-params and --mfu.",
)
@click.option(
    "--mfu",
    type=Magnitude(0.001, 1),
    help="Model FLOPs utilization in [0.001, 1], your assumption (e.g. 0.4).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (for CI) instead of tables.")
def plan(
    cdk_out: str,
    instance_type: str | None,
    nodes: int | None,
    checkpoint_bytes: float | None,
    checkpoint_seconds: float | None,
    throughput_gbytes_per_s: float | None,
    lustre_efa: bool,
    price_per_hour: tuple[str, ...],
    model_params: float | None,
    dtype: str,
    kv_cache_fraction: float,
    tokens: float | None,
    mfu: float | None,
    as_json: bool,
) -> None:
    """What the cloud assembly CDK_OUT (default ./cdk.out) gives you, or --instance-type x --nodes without an app.

    Training time = 6 x parameters x tokens / (GPUs x peak dense BF16 FLOPS per GPU x MFU); MFU is your assumption.
    """
    prices = _prices(price_per_hour, instance_type)
    _check_model_options(model_params, tokens, mfu, kv_cache_fraction, instance_type)
    if instance_type is not None and nodes is None and model_params is not None:
        nodes = _serving_nodes(model_params, ModelDtype(dtype), instance_type, kv_cache_fraction)
    if instance_type is not None or nodes is not None:
        if instance_type is None or nodes is None:
            raise click.UsageError(
                "--instance-type and --nodes go together (--nodes may be left out with --model-params)"
            )
        try:
            result = plan_instances(
                instance_type,
                nodes,
                checkpoint_bytes=checkpoint_bytes,
                checkpoint_seconds=checkpoint_seconds,
                throughput_gbytes_per_s=throughput_gbytes_per_s,
                lustre_efa=lustre_efa,
                price_per_hour=prices.get(instance_type),
            )
        except FmValidationError as error:
            raise FmcError(str(error), ExitCode.USAGE) from None
        _note_storage(result, instance_type, lustre_efa, checkpoint_bytes, throughput_gbytes_per_s)
    else:
        if checkpoint_bytes is not None or checkpoint_seconds is not None or throughput_gbytes_per_s is not None:
            raise click.UsageError("--checkpoint-*/--throughput-* plan without an app: add --instance-type/--nodes")
        try:
            result = plan_assembly(cdk_out, prices=prices)
        except FmValidationError as error:
            raise FmcError(str(error), ExitCode.ASSEMBLY) from None
        require_gpu_groups(result, cdk_out)
    check_prices_in_plan(prices, result)
    _plan_models(result, instance_type, nodes, model_params, ModelDtype(dtype), kv_cache_fraction, tokens, mfu)
    if as_json:
        data = result.to_json()
        data["cost_per_hour_total"] = cost_total(result)
        _emit_json(data)
    else:
        render_plan(result, _console())


def _check_model_options(
    model_params: float | None,
    tokens: float | None,
    mfu: float | None,
    kv_cache_fraction: float,
    instance_type: str | None,
) -> None:
    """Refuse model options that cannot give an answer (exit code 2, one line)."""
    if model_params is not None and not (model_params > 0 and model_params != float("inf")):
        raise FmcError(f"--model-params must be a positive number such as 70e9, got {model_params:g}", ExitCode.USAGE)
    if (tokens is None) != (mfu is None):
        raise FmcError("--tokens and --mfu go together (training time needs both)", ExitCode.USAGE)
    if tokens is not None and model_params is None:
        raise FmcError(
            "--tokens/--mfu need --model-params (training FLOPs are 6 x parameters x tokens)", ExitCode.USAGE
        )
    if tokens is not None and not (tokens > 0 and tokens != float("inf")):
        raise FmcError(f"--tokens must be a positive number such as 15e12, got {tokens:g}", ExitCode.USAGE)
    if mfu is not None and not 0 < mfu <= 1:
        raise FmcError(f"--mfu must be in (0, 1] (model FLOPs utilization, e.g. 0.4), got {mfu:g}", ExitCode.USAGE)
    if not 0 <= kv_cache_fraction < 1:
        raise FmcError(f"--kv-cache-fraction must be in [0, 1), got {kv_cache_fraction:g}", ExitCode.USAGE)
    if model_params is not None and tokens is None and instance_type is None:
        raise FmcError(
            "--model-params answers the serving fit with --instance-type, or the training time with --tokens and "
            "--mfu: give one of them",
            ExitCode.USAGE,
        )


def _serving_nodes(parameters: float, dtype: ModelDtype, instance_type: str, kv_cache_fraction: float) -> int:
    """The node count of the smallest serving layout that fits (1 when none does)."""
    try:
        smallest = smallest_serving_layout(
            parameters=parameters, dtype=dtype, instance_type=instance_type, kv_cache_fraction=kv_cache_fraction
        )
    except FmValidationError as error:
        raise FmcError(str(error), ExitCode.USAGE) from None
    return 1 if smallest is None else smallest.nodes


def _plan_models(
    result: Plan,
    instance_type: str | None,
    nodes: int | None,
    model_params: float | None,
    dtype: ModelDtype,
    kv_cache_fraction: float,
    tokens: float | None,
    mfu: float | None,
) -> None:
    """Attach the serving fit and the training estimate the options ask for."""
    if model_params is None:
        return
    try:
        if instance_type is not None:
            result.serving = plan_serving(
                parameters=model_params,
                dtype=dtype,
                instance_type=instance_type,
                nodes=nodes,
                kv_cache_fraction=kv_cache_fraction,
            )
    except FmValidationError as error:
        raise FmcError(str(error), ExitCode.USAGE) from None
    if tokens is not None and mfu is not None and result.compute_total is not None:
        result.training = plan_training(
            parameters=model_params,
            tokens=tokens,
            mfu=mfu,
            total=result.compute_total,
            cost_per_hour=cost_total(result),
        )


def _note_storage(
    result: Plan, instance_type: str, lustre_efa: bool, checkpoint_bytes: float | None, throughput: float | None
) -> None:
    """Say how storage was sized (as ``PlatformStorage.size`` does: PERSISTENT_2 at its highest tier, EFA-enabled
    unless --no-lustre-efa), or why nothing was sized."""
    if checkpoint_bytes is None and throughput is None:
        result.notes.append(
            "No storage sized: give --checkpoint-bytes with --checkpoint-seconds, or --throughput-gbytes-per-s, to "
            "size FSx for Lustre as TrainingPlatform(storage=PlatformStorage.for_checkpoint/for_throughput) does."
        )
        return
    how = "EFA-enabled" if lustre_efa else "over TCP (--no-lustre-efa)"
    result.notes.append(
        f"Storage sized as TrainingPlatform does: PERSISTENT_2 at the highest throughput tier, {how} "
        "(PlatformStorage efa_enabled=None means EFA for every backend but HyperPod with base_config_dir)."
    )
    per_node = result.node_groups[0].lustre_efa_interfaces_per_node if result.node_groups else None
    if lustre_efa and not per_node:
        result.notes.append(
            f"{instance_type} has no catalog EFA interfaces for Lustre: its nodes would mount the EFA-enabled file "
            "system over TCP; size with --no-lustre-efa for a TCP file system."
        )


def _register_preflight() -> None:
    from .preflight import preflight

    cli.add_command(preflight)


_register_preflight()


def _register_changes() -> None:
    from .changes_cmd import changes, stack_policy_command

    cli.add_command(changes)
    cli.add_command(stack_policy_command)


_register_changes()


def _register_health() -> None:
    from .health import health

    cli.add_command(health)


_register_health()


def _register_usage() -> None:
    from .usage import usage

    cli.add_command(usage)


_register_usage()


def _register_capacity() -> None:
    from . import capacity_lend  # noqa: F401  (registers ``fmc capacity lend`` on the group)
    from .capacity import capacity

    cli.add_command(capacity)


_register_capacity()


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point (``fmc``): even an error outside a command ends as one line and exit code 70."""
    args = argv if argv is not None else sys.argv[1:]
    try:
        cli.main(args=args, prog_name="fmc")
    except (SystemExit, KeyboardInterrupt):
        raise
    except Exception as error:  # last resort: never a traceback
        converted = as_fmc_error(error, as_json="--json" in args)
        if converted is None:
            raise
        converted.show()
        raise SystemExit(converted.exit_code) from None
