"""``fmc usage``: GPU-hours per team, Slurm user or account, namespace, Slurm job or instance type over a period, and
their cost.

It asks the Amazon Managed Prometheus workspace (``--workspace-url``, else the one the deployed stacks of CDK_OUT
created: :mod:`fmconstructs.cli.usage_workspace`) one PromQL instant query, signed with SigV4 for
service ``aps`` (:mod:`fmconstructs.cli.health_queries`: IAM ``aps:QueryMetrics``). The formula and the pricing are
in :mod:`fmconstructs.cli.usage_queries`; the query-time joins of ``--by team|user|account`` in
:mod:`fmconstructs.cli.usage_joins`. Prices come from you, as for ``fmc plan``: ``--price-per-hour TYPE=USD`` per
node-hour (divided by the catalog's GPUs per node) or ``--price-per-gpu-hour USD``.

Exit codes (:mod:`fmconstructs.cli.errors`): 0 printed, 2 bad usage (period, prices, ``--by``), 3 unreadable
assembly (CDK_OUT without ``--workspace-url``), 4 no credentials or
credentials the workspace refused, 5 AWS set-up (no region, a workspace that cannot be reached or answers an error).
"""

from __future__ import annotations

import json
import math
import time
from datetime import UTC, datetime

import click
from rich.console import Console
from rich.table import Table

from .errors import ExitCode, FmcError
from .health_queries import QueryProblem, signing_region
from .magnitudes import MAX_PRICE_USD, Magnitude
from .preflight_options import check_region
from .usage_joins import JOINS, UNKNOWN, joined_gpu_hours_query
from .usage_queries import (
    DEFAULT_STEP_SECONDS,
    GROUP_LABELS,
    HPC_JOB_LABEL,
    NAMESPACE_LABEL,
    USAGE_QUERY_TIMEOUT_SECONDS,
    CredentialsRefused,
    NoCredentials,
    Usage,
    UsageQuery,
    build_rows,
    gpu_hours_query,
    parse_duration,
)
from .usage_workspace import find_workspace

#: Default period (``--since``).
DEFAULT_SINCE = "7d"


def _instant(text: str, option: str) -> float:
    """Unix seconds of an ISO 8601 time (``2026-11-01`` or ``2026-11-01T00:00:00Z``; UTC when no offset)."""
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            f"{text!r}: an ISO 8601 time such as 2026-11-01T00:00:00Z", param_hint=option
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def period(since: str | None, start: str | None, end: str | None, *, now: float) -> tuple[float, float]:
    """(start, end) in unix seconds from ``--since`` or ``--start``/``--end`` (end defaults to now)."""
    if since is not None and start is not None:
        raise click.UsageError("--since and --start exclude each other")
    if start is None and end is not None:
        raise click.UsageError("--end needs --start")
    finish = _instant(end, "--end") if end is not None else now
    if start is not None:
        begin = _instant(start, "--start")
    else:
        try:
            begin = finish - parse_duration(since or DEFAULT_SINCE)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--since") from None
    if not begin < finish:
        raise click.BadParameter("the period's start must be before its end", param_hint="--start/--end")
    if finish > now + 60:
        raise click.BadParameter("the period ends in the future", param_hint="--end")
    return begin, finish


def _price_options(values: tuple[str, ...]) -> dict[str, float]:
    from .main import _prices  # fmc plan's parser: the same TYPE=USD syntax and checks

    return _prices(values, None)


def _credentials(profile: str | None) -> object:
    from .health import _session

    return _session(profile, None, replay=False, endpoint=False)[1]


def render(usage: Usage, console: Console) -> None:
    start = datetime.fromtimestamp(usage.start, UTC).isoformat(timespec="seconds")
    end = datetime.fromtimestamp(usage.end, UTC).isoformat(timespec="seconds")
    table = Table(title=f"GPU-hours by {usage.by} ({usage.label}), {start} to {end}", show_footer=True)
    total = usage.total_cost_usd
    footers = {
        usage.by: "Total",
        "GPU-hours": f"{usage.total_gpu_hours:,.1f}",
        "Cost USD": f"{total:,.2f}" if total is not None else "-",
    }
    for column in (usage.by, "Instance type", "GPU-hours", "GPUs/node", "USD/node-hour", "USD/GPU-hour", "Cost USD"):
        table.add_column(column, footer=footers.get(column, ""), overflow="fold")

    def money(value: float | None) -> str:
        return "-" if value is None else f"{value:,.2f}"

    for r in usage.rows:
        table.add_row(
            r.group,
            r.instance_type,
            f"{r.gpu_hours:,.1f}",
            "-" if r.gpus_per_node is None else str(r.gpus_per_node),
            money(r.usd_per_node_hour),
            money(r.usd_per_gpu_hour),
            money(r.cost_usd),
        )
    console.print(table)
    for note in usage.notes:
        console.print(f"Note: {note}", markup=False)


@click.command()
@click.argument("cdk_out", required=False, default="cdk.out", type=click.Path(file_okay=False))
@click.option(
    "--workspace-url",
    help="The Prometheus workspace (https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>/); default: the one "
    "the deployed stacks of CDK_OUT created.",
)
@click.option("--region", help="Signing region (default: the workspace URL's, else the profile's).")
@click.option("--profile", help="AWS profile from ~/.aws/config.")
@click.option("--since", help=f"The period ending now (or at --end): <n>s|m|h|d|w [default: {DEFAULT_SINCE}].")
@click.option("--start", help="The period's start, ISO 8601 (UTC without an offset); excludes --since.")
@click.option("--end", help="The period's end, ISO 8601 [default: now].")
@click.option(
    "--by",
    "group_by",
    type=click.Choice([*JOINS, *GROUP_LABELS]),
    default="team",
    show_default=True,
    help="team = Kubernetes label team of the pod, else of its namespace (EKS, kube-state-metrics); user, account = "
    "Slurm's (fm_slurm_job_info); namespace; job = Slurm job id (dcgm-exporter hpc_job); instance_type.",
)
@click.option("--step", default=f"{DEFAULT_STEP_SECONDS}s", show_default=True, help="Sampling step (<n>s|m|h).")
@click.option("--price-per-hour", multiple=True, help="USD per node-hour as for fmc plan: TYPE=USD. Repeatable.")
@click.option(
    "--price-per-gpu-hour",
    type=Magnitude(0, MAX_PRICE_USD, unit="USD"),
    help="USD per GPU-hour for every row (instead of --price-per-hour).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (for CI) instead of a table; errors too.")
@click.option(
    "--responses",
    "responses_file",
    type=click.Path(dir_okay=False),
    help="Find the workspace from recorded AWS responses (as fmc health --responses); the query still goes to it.",
)
def usage(
    cdk_out: str,
    workspace_url: str | None,
    region: str | None,
    profile: str | None,
    since: str | None,
    start: str | None,
    end: str | None,
    group_by: str,
    step: str,
    price_per_hour: tuple[str, ...],
    price_per_gpu_hour: float | None,
    as_json: bool,
    responses_file: str | None,
) -> None:
    """GPU-hours per team, user, account, namespace, job or instance type over a period, from the workspace's DCGM
    series, and their cost.

    GPU-hours = for each GPU series carrying the label, the number of --step samples in the period at which it was
    present x step / 3600 (allocated GPUs, busy or idle). team, user and account are joined at each step from
    kube-state-metrics' kube_pod_labels/kube_namespace_labels (a pod's team wins over its namespace's) or the login
    node's fm_slurm_job_info; GPU-hours without an owner are the row "unknown". Cost = GPU-hours / GPUs per node
    (catalog) x --price-per-hour of the series' instance_type, or GPU-hours x --price-per-gpu-hour.
    """
    if workspace_url is not None and not workspace_url.startswith(("http://", "https://")):
        raise click.BadParameter(f"{workspace_url!r}: an http:// or https:// URL", param_hint="--workspace-url")
    if workspace_url is not None and responses_file is not None:
        raise click.UsageError("--responses finds the workspace in CDK_OUT: not with --workspace-url")
    if price_per_gpu_hour is not None and not (math.isfinite(price_per_gpu_hour) and price_per_gpu_hour >= 0):
        raise click.BadParameter("a finite number >= 0", param_hint="--price-per-gpu-hour")
    if price_per_gpu_hour is not None and price_per_hour:
        raise click.UsageError("--price-per-hour and --price-per-gpu-hour exclude each other")
    prices = _price_options(price_per_hour)
    try:
        step_seconds = parse_duration(step)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--step") from None
    begin, finish = period(since, start, end, now=time.time())
    span = round(finish - begin)
    if step_seconds > span:
        raise click.BadParameter("longer than the period", param_hint="--step")
    if region is not None:
        check_region(region)
    notes: list[str] = []
    if workspace_url is None:
        found = find_workspace(cdk_out, region=region, profile=profile, responses_file=responses_file)
        workspace_url, credentials, region = found.url, found.credentials, region or found.region
        if found.others:
            notes.append(f"{len(found.others) + 1} workspaces found; read {found.url} (--workspace-url)")
    else:
        credentials = _credentials(profile)
    signing = signing_region(workspace_url, region) or _profile_region(profile)
    result = _usage(group_by, begin, finish, span=span, step_seconds=step_seconds)
    promql = result.query
    prom = UsageQuery(workspace_url, credentials=credentials, region=signing, timeout=USAGE_QUERY_TIMEOUT_SECONDS)
    try:
        samples = prom.query_at(promql, finish)
    except NoCredentials as problem:
        raise FmcError(str(problem), ExitCode.NO_CREDENTIALS) from None
    except CredentialsRefused as problem:
        raise FmcError(
            f"{problem}: the caller needs aps:QueryMetrics on the workspace", ExitCode.NO_CREDENTIALS
        ) from None
    except QueryProblem as problem:
        raise FmcError(str(problem), ExitCode.AWS_SETUP) from None
    build_rows(result, samples, prices=prices, price_per_gpu_hour=price_per_gpu_hour)
    result.notes[:0] = notes
    if as_json:
        click.echo(json.dumps({"ok": True, **result.to_json()}, indent=2))
    else:
        console = Console()
        render(result, console if console.is_terminal else Console(width=200))


def _usage(group_by: str, begin: float, finish: float, *, span: int, step_seconds: int) -> Usage:
    """The empty result of ``--by group_by`` with its query: a series label, or a join (usage_joins)."""
    join = JOINS.get(group_by)
    if join is None:
        label = GROUP_LABELS[group_by]
        promql = gpu_hours_query(label, period_seconds=span, step_seconds=step_seconds)
        return Usage(group_by, label, begin, finish, step_seconds, promql)
    promql = joined_gpu_hours_query(group_by, period_seconds=span, step_seconds=step_seconds)
    series_label = NAMESPACE_LABEL if group_by == "team" else HPC_JOB_LABEL
    return Usage(
        group_by,
        join.label,
        begin,
        finish,
        step_seconds,
        promql,
        series_label=series_label,
        unknown=(UNKNOWN, join.missing),
    )


def _profile_region(profile: str | None) -> str:
    import boto3
    from botocore.exceptions import BotoCoreError

    try:
        name = boto3.Session(profile_name=profile).region_name
    except BotoCoreError as error:
        raise FmcError(f"reading the profile's region failed: {error}", ExitCode.AWS_SETUP) from None
    if name is None:
        raise FmcError("no AWS region to sign for: give --region (the workspace URL names none)", ExitCode.AWS_SETUP)
    return check_region(name)
