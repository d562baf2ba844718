"""``fmc health``: after deploy, one answer to "is my cluster healthy?" (HEALTHY / DEGRADED / UNHEALTHY / UNKNOWN).

It reads the cloud assembly (which stacks, clusters, node groups and Prometheus workspace the app defines), the
deployed stacks and services with read-only calls (:mod:`fmconstructs.cli.health_aws`) and, when a workspace is
found or given, its Prometheus query API signed with SigV4 (:mod:`fmconstructs.cli.health_queries`): the last
node-join check results per node, drained Slurm nodes, the latest NCCL all-reduce busbw against the cluster's
baseline.

Verdict: UNHEALTHY when a cluster, node group or stack failed; DEGRADED when something runs but not fully (a node
group short of nodes, a failing node check, busbw below baseline, drained nodes); UNKNOWN when something could not be
read; else HEALTHY. Exit codes (:mod:`fmconstructs.cli.errors`): 0 HEALTHY, 1 DEGRADED / UNHEALTHY / UNKNOWN, 2 usage,
3 unreadable assembly, 4 no credentials, 5 AWS set-up (no or unknown region, clients that cannot be made).
"""

from __future__ import annotations

import json
import math
from typing import Any

import click
from botocore.exceptions import BotoCoreError
from rich.console import Console
from rich.table import Table

from ..errors import FmValidationError
from .assembly import Stack, read_assembly
from .errors import ExitCode, FmcError
from .health_aws import HealthAws
from .health_model import Health, HealthReport
from .health_queries import PrometheusQuery, check_nccl, check_node_checks, check_slurm_nodes, signing_region
from .magnitudes import Magnitude
from .preflight import _CREDENTIAL_ERRORS, DRY_RUN_CREDENTIALS, explain
from .preflight_options import check_region
from .replay import Recorded, attach, load_responses

#: Default for ``--nccl-tolerance-percent``: how far below its baseline busbw may fall before DEGRADED. The issue
#: asks for a configurable percentage; 10 sits between the 5% that must stay quiet and the 15% that must alert.
DEFAULT_NCCL_TOLERANCE_PERCENT = 10.0

#: Resource types ``fmc health`` looks at (anything else in the assembly is not a cluster).
_CLUSTER_TYPES = frozenset(
    {"AWS::PCS::Cluster", "AWS::EKS::Cluster", "AWS::SageMaker::Cluster", "Custom::PclusterCluster"}
)
_GROUP_KINDS = frozenset({"pcs", "eks", "asg", "hyperpod", "parallelcluster"})


class _Clients:
    """boto3 clients of one session and region, made on first use (and answered from ``--responses`` if given)."""

    def __init__(self, session: Any, region: str, endpoint_url: str | None, responses: Recorded | None) -> None:
        self.session = session
        self.region = region
        self.endpoint_url = endpoint_url
        self.responses = responses
        self._made: dict[str, Any] = {}

    def __call__(self, service: str) -> Any:
        if service not in self._made:
            options: dict[str, Any] = {"endpoint_url": self.endpoint_url} if self.endpoint_url else {}
            try:
                client = self.session.client(service, region_name=self.region, **options)
            except (BotoCoreError, ValueError) as error:
                raise FmcError(f"cannot create the {service} client: {error}", ExitCode.AWS_SETUP) from None
            self._made[service] = attach(client, service, self.responses) if self.responses is not None else client
        return self._made[service]


def _session(profile: str | None, region: str | None, *, replay: bool, endpoint: bool) -> tuple[Any, Any]:
    """(boto3 session, credentials); exit 4 without credentials. Placeholder credentials with ``--responses`` (no
    AWS call is sent) and with ``--endpoint-url`` when none are configured (a local endpoint accepts any)."""
    import boto3

    try:
        session = boto3.Session(profile_name=profile, region_name=region)
        credentials = session.get_credentials()
    except _CREDENTIAL_ERRORS as error:
        raise FmcError(explain(error, "reading credentials"), ExitCode.NO_CREDENTIALS) from None
    if credentials is None and not (replay or endpoint):
        raise FmcError(
            "no AWS credentials found: set AWS_PROFILE or --profile, environment variables, or an instance/SSO role "
            "(or use --responses / --endpoint-url for a dry run)",
            ExitCode.NO_CREDENTIALS,
        )
    if credentials is None or replay:
        key, secret = DRY_RUN_CREDENTIALS
        session = boto3.Session(aws_access_key_id=key, aws_secret_access_key=secret, region_name=region)
        credentials = session.get_credentials()
    if credentials is None:  # pragma: no cover - botocore always returns the explicit keys just given
        raise FmcError("no AWS credentials found", ExitCode.NO_CREDENTIALS)
    try:
        return session, credentials.get_frozen_credentials()
    except _CREDENTIAL_ERRORS as error:
        raise FmcError(explain(error, "reading credentials"), ExitCode.NO_CREDENTIALS) from None


def _stacks(cdk_out: str, names: tuple[str, ...]) -> list[Stack]:
    try:
        stacks = read_assembly(cdk_out)
    except FmValidationError as error:
        raise FmcError(str(error), ExitCode.ASSEMBLY) from None
    if names:
        unknown = sorted(set(names) - {s.name for s in stacks})
        if unknown:
            known = ", ".join(s.name for s in stacks) or "none"
            raise FmcError(f"--stack {', '.join(unknown)} is not in {cdk_out} (stacks: {known})", ExitCode.USAGE)
        stacks = [s for s in stacks if s.name in names]
    if not any(_has_cluster(s) for s in stacks):
        raise FmcError(
            f"no cluster or node group in {cdk_out} (PCS, EKS, HyperPod, ParallelCluster or an Auto Scaling group): "
            "nothing to check",
            ExitCode.ASSEMBLY,
        )
    return stacks


def _has_cluster(stack: Stack) -> bool:
    resources = stack.template.get("Resources", {})
    return any(g.kind in _GROUP_KINDS for g in stack.node_groups) or any(
        r.get("Type") in _CLUSTER_TYPES for r in resources.values()
    )


def _region(region: str | None, stacks: list[Stack], session_region: str | None) -> str:
    pinned = sorted({s.region for s in stacks if s.region})
    chosen = region or (pinned[0] if len(pinned) == 1 else None) or session_region
    if chosen is None:
        raise FmcError(
            "no AWS region: give --region (the stacks pin none and the profile sets none)", ExitCode.AWS_SETUP
        )
    return check_region(chosen)


def _metrics(report: HealthReport, credentials: Any, urls: list[str], tolerance_percent: float) -> None:
    """The workspace rows; SKIP rows when there is no workspace to ask."""
    if not urls:
        for what in ("node-join checks", "slurm nodes", "nccl busbw"):
            report.add(what, "-", Health.SKIP, "no Prometheus workspace in the stacks: give --workspace-url")
        return
    url = urls[0]
    report.workspace_url = url
    if len(urls) > 1:
        report.add("workspace", "-", Health.SKIP, f"{len(urls)} workspaces found; reading {url} (--workspace-url)")
    prom = PrometheusQuery(url, credentials=credentials, region=signing_region(url, report.region) or "us-east-1")
    check_node_checks(prom, report)
    check_slurm_nodes(prom, report)
    check_nccl(prom, report, tolerance_percent=tolerance_percent)


def render(report: HealthReport, console: Console) -> None:
    table = Table(title=f"fmc health ({report.region})", title_justify="left")
    for column in ("Check", "Target", "Health", "Detail"):
        table.add_column(column, overflow="fold")
    colours = {
        Health.HEALTHY: "green",
        Health.DEGRADED: "yellow",
        Health.UNHEALTHY: "red",
        Health.UNKNOWN: "magenta",
        Health.SKIP: "dim",
    }
    for r in report.rows:
        table.add_row(r.check, r.target, f"[{colours[r.health]}]{r.health.value}[/]", r.detail)
    console.print(table)
    if report.workspace_url:
        console.print(f"workspace: {report.workspace_url}", markup=False)
    console.print(f"[{colours[report.verdict]}]verdict: {report.verdict.value}[/]")


@click.command()
@click.argument("cdk_out", required=False, default="cdk.out", type=click.Path(file_okay=False))
@click.option("--region", help="AWS region (default: the stacks' pinned region, else the profile's).")
@click.option("--profile", help="AWS profile from ~/.aws/config.")
@click.option("--stack", "stack_names", multiple=True, help="Only this stack of the assembly (repeatable).")
@click.option(
    "--workspace-url",
    help="The Prometheus workspace to read (https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>/); default: "
    "the one the stacks create.",
)
@click.option(
    "--nccl-tolerance-percent",
    type=Magnitude(0, 99.999, unit="percent"),
    default=DEFAULT_NCCL_TOLERANCE_PERCENT,
    show_default=True,
    help="DEGRADED when the latest NCCL busbw is more than this many percent below the cluster's baseline.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (for CI) instead of a table; errors too.")
@click.option(
    "--responses",
    "responses_file",
    type=click.Path(dir_okay=False),
    help="Dry run without an account: answer every AWS call from this JSON file of recorded responses (the workspace "
    "query still goes to the workspace URL, signed with placeholder credentials).",
)
@click.option("--endpoint-url", help="Send every AWS call (not the workspace query) to this endpoint (dry run).")
def health(
    cdk_out: str,
    region: str | None,
    profile: str | None,
    stack_names: tuple[str, ...],
    workspace_url: str | None,
    nccl_tolerance_percent: float,
    as_json: bool,
    responses_file: str | None,
    endpoint_url: str | None,
) -> None:
    """Is the cluster CDK_OUT (default ./cdk.out) deployed healthy? Exit 0 HEALTHY, 1 DEGRADED/UNHEALTHY/UNKNOWN."""
    if not (math.isfinite(nccl_tolerance_percent) and 0 <= nccl_tolerance_percent < 100):
        raise click.BadParameter("a percentage from 0 to below 100", param_hint="--nccl-tolerance-percent")
    for name, url in (("--workspace-url", workspace_url), ("--endpoint-url", endpoint_url)):
        if url is not None and not url.startswith(("http://", "https://")):
            raise click.BadParameter(f"{url!r}: an http:// or https:// URL", param_hint=name)
    if endpoint_url is not None and responses_file is not None:
        raise click.UsageError("--endpoint-url and --responses exclude each other (one dry run at a time)")
    responses = load_responses(responses_file) if responses_file is not None else None
    if region is not None:
        check_region(region)
    stacks = _stacks(cdk_out, stack_names)
    session, credentials = _session(profile, region, replay=responses is not None, endpoint=endpoint_url is not None)
    resolved = _region(region, stacks, session.region_name)
    report = HealthReport(region=resolved)
    aws = HealthAws(_Clients(session, resolved, endpoint_url, responses), report)
    aws.run(stacks)
    _metrics(report, credentials, [workspace_url] if workspace_url else aws.workspaces, nccl_tolerance_percent)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2, default=str))
    else:
        console = Console()
        render(report, console if console.is_terminal else Console(width=200))
    raise SystemExit(int(report.exit_code))
