"""``fmc preflight``: read-only checks of a cloud assembly against the target account (boto3).

Every call is a read (``Describe*``, ``GetServiceQuota``); credentials come from the usual boto3 chain. An AWS error
never ends in a traceback: it becomes a failed check that names the missing permission, the throttling or the
missing resource. Capacity reservations are read with :func:`fmconstructs.preflight.describe_reservation` and judged
with :func:`fmconstructs.preflight.check_capacity` and :func:`fmconstructs.preflight.block_end_problem`.

Dry run without an account: ``--endpoint-url`` sends every call to another endpoint, e.g. a local moto server
(``moto_server -p 5000``; moto models DescribeSubnets, DescribeImages and DescribeInstanceTypeOfferings, not capacity
reservations or Capacity Block offerings), with placeholder credentials when none are configured.

Exit codes: see :mod:`fmconstructs.cli.errors` (1 when a check fails, 3 for an unreadable assembly or one without a
GPU node group, 4 without credentials, 5 for an unknown region or unreachable endpoint).

IAM (all read-only): ``ec2:DescribeCapacityReservations``, ``ec2:DescribeCapacityBlocks``, ``ec2:DescribeSubnets``,
``ec2:DescribeInstanceTypeOfferings``, ``ec2:DescribeImages``, ``ec2:DescribeCapacityReservationTopology``,
``ec2:DescribeCapacityBlockOfferings`` (with ``--find-block``), ``servicequotas:GetServiceQuota``,
``pricing:GetProducts`` (with ``--prices``).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from enum import Enum
from functools import partial
from typing import Any, TypeVar

import click
from botocore.exceptions import BotoCoreError
from rich.console import Console
from rich.table import Table

from ..capacity import Capacity, CapacityBlock, CapacityReservation, UltraServerCapacityBlock
from ..catalog import CATALOG, ULTRASERVERS, get_instance_spec
from ..errors import FmValidationError
from ..preflight import ReservationInfo, block_end_problem, check_capacity, describe_reservation
from .assembly import read_assembly
from .aws_call import _CREDENTIAL_ERRORS as _CREDENTIAL_ERRORS
from .aws_call import AwsFailure, call_aws
from .aws_call import explain as explain
from .errors import ExitCode, FmcError, require_gpu_groups
from .magnitudes import MAX_HOURS, Magnitude
from .plan import NodeGroupPlan, Plan, plan_stacks
from .preflight_options import check_region, connection_options, parse_find_block
from .replay import Recorded, attach
from .subnet_ips import check_subnet_ips, subnets_to_load
from .topology_aws import ACTION as TOPOLOGY_ACTION
from .topology_aws import Fetched, fetch_topology, reservation_topology_rows

T = TypeVar("T")

#: Service Quotas code of EC2 "Running On-Demand P instances", a vCPU count per region (service code ``ec2``).
#: Seen in the Service Quotas console address ``servicequotas/home/services/ec2/quotas/L-417A185B`` quoted by public
#: pages and tools (not on an AWS reference page seen here: UNCONFIRMED against AWS documentation).
ON_DEMAND_P_QUOTA_CODE = "L-417A185B"


class Status(str, Enum):
    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"
    SKIP = "SKIP"
    INFO = "INFO"


@dataclass
class Check:
    check: str
    target: str
    status: Status
    detail: str


@dataclass
class Report:
    region: str | None
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(c.status is Status.FAIL for c in self.checks)

    def add(self, check: str, target: str, status: Status, detail: str) -> None:
        self.checks.append(Check(check, target, status, detail))

    def to_json(self) -> dict[str, Any]:
        return {
            "region": self.region,
            "ok": self.ok,
            "checks": [asdict(c) | {"status": c.status.value} for c in self.checks],
        }


class AwsProblem(Exception):
    """An AWS call failed; ``str()`` explains it for the user."""


#: ``fmc preflight``: every failed call (and a value the check cannot read) is a FAIL row.
_AS_FAIL_ROW = AwsFailure(
    answered=AwsProblem,
    unreachable=AwsProblem,
    not_aws="{action}: the response is not an AWS response (a proxy or captive page?): {error}",
    also=(FmValidationError,),
    # a malformed response must be a FAIL row, not a traceback
    unexpected="{action}: unexpected response ({kind}: {error})",
)


def _call(action: str, fn: Callable[..., T], **kwargs: Any) -> T:
    """``fn(**kwargs)``; any failure but missing or refused credentials becomes :class:`AwsProblem` (a FAIL row).

    botocore's ``ResponseParserError`` (e.g. an HTML page from a proxy instead of the AWS response) subclasses neither
    ``ClientError`` nor ``BotoCoreError`` (botocore.parsers); a response without the fields the check reads raises
    ``KeyError``/``TypeError``: every one of them is a failed check, never a traceback.
    """
    return call_aws(action, fn, _AS_FAIL_ROW, **kwargs)


def extension_hint(info: ReservationInfo, window_hours: float, now: dt.datetime) -> str:
    """For a Capacity Block that ends inside the training window: the ``fmc capacity extend`` command with the
    fewest days that cover the shortfall (an extended block keeps its reservation id, so the app needs no change:
    EC2 User Guide capacity-blocks-extend). Empty for anything else."""
    from .capacity_aws import EXTENDABLE_STATES
    from .preflight_options import CAPACITY_BLOCK_DAYS

    if not info.is_capacity_block or info.state not in EXTENDABLE_STATES or info.end_date is None:
        return ""
    start = max(now, info.start_date or now)
    short_hours = (start + dt.timedelta(hours=window_hours) - info.end_date).total_seconds() / 3600
    days = next((d for d in CAPACITY_BLOCK_DAYS if d * 24 >= short_hours), CAPACITY_BLOCK_DAYS[-1])
    return f"; extend it (same reservation id): fmc capacity extend --reservation {info.reservation_id} --days {days}"


def _target(g: NodeGroupPlan) -> str:
    return f"{g.stack}/{g.group}"


def _literal_subnets(g: NodeGroupPlan) -> list[str]:
    return [s for s in g.subnets if s.startswith("subnet-")]


def _configured_capacity(g: NodeGroupPlan, info: ReservationInfo) -> Capacity:
    rid = info.reservation_id
    if g.capacity == "UltraServer Capacity Block":
        kind = info.ultraserver_type if info.ultraserver_type in ULTRASERVERS else "u-p6e-gb200x72"
        return UltraServerCapacityBlock(reservation_id=rid, ultraserver_type=str(kind))
    if g.capacity == "Capacity Block":
        return CapacityBlock(reservation_id=rid)
    return CapacityReservation(reservation_id=rid)


class Preflight:
    """The checks, on injected boto3 clients (``ec2``, ``service-quotas``)."""

    def __init__(
        self,
        plan: Plan,
        *,
        ec2: Any,
        quotas: Any,
        region: str | None,
        now: dt.datetime | None = None,
        training_window_hours: float | None = None,
        pricing: Any = None,
    ) -> None:
        self.plan = plan
        self.pricing = pricing
        self.ec2 = ec2
        self.quotas = quotas
        self.report = Report(region=region)
        self.now = now or dt.datetime.now(dt.UTC)
        self.training_window_hours = training_window_hours
        self._subnets: dict[str, dict[str, Any] | None] = {}

    def groups(self) -> list[NodeGroupPlan]:
        """Groups whose instances are EC2 instances of this account (quota, offerings, prices, reservations).

        SageMaker HyperPod instances are not: they count against SageMaker's quotas and prices (only their network
        interfaces land in the account's subnets, so the IP check still covers them).
        """
        return [
            g for g in self.plan.node_groups if g.kind != "hyperpod" and (g.instance_type in CATALOG or g.reservation)
        ]

    def run(self, find_blocks: list[tuple[str, int, int]] | None = None) -> Report:
        steps: list[tuple[str, Callable[[], None]]] = [
            ("subnets", self.load_subnets),
            ("capacity", self.check_capacity),
            ("quota", self.check_quota),
            ("offering", self.check_offerings),
            ("subnet IPs", self.check_ips),
            ("image", self.check_images),
            ("FSx EFA budget", self.check_efa_budget),
            ("topology", self.check_topology),
        ]
        for instance_type, count, days in find_blocks or []:
            steps.append(("block offerings", partial(self.find_block, instance_type, count, days)))
        if self.pricing is not None:
            steps.append(("price", self.check_prices))
        for name, step in steps:
            self._guarded(name, step)
        return self.report

    def _guarded(self, name: str, step: Callable[[], None]) -> None:
        """Run one check; an unexpected error (a malformed response) is a FAIL row, never a traceback. Missing
        credentials (:class:`FmcError`) end the run."""
        try:
            step()
        except FmcError:
            raise
        except Exception as error:  # one check's defect must not hide the others
            self.report.add(name, "-", Status.FAIL, f"check could not run ({type(error).__name__}: {error})")

    # -- subnets ---------------------------------------------------------------------------------------------------
    def load_subnets(self) -> None:
        ids = subnets_to_load(self.plan)
        if not ids:
            return
        try:
            response = _call("ec2:DescribeSubnets", self.ec2.describe_subnets, SubnetIds=ids)
        except AwsProblem as problem:
            self.report.add("subnets", ", ".join(ids), Status.FAIL, str(problem))
            for subnet in ids:
                self._subnets[subnet] = None
            return
        if not isinstance(response.get("Subnets"), list):
            # An HTML page from a proxy can parse as an empty response: not "every subnet is missing".
            self.report.add("subnets", ", ".join(ids), Status.FAIL, "ec2:DescribeSubnets returned no Subnets list")
            for subnet in ids:
                self._subnets[subnet] = None
            return
        for subnet in response["Subnets"]:
            self._subnets[subnet["SubnetId"]] = subnet

    def _zones(self, g: NodeGroupPlan) -> list[str]:
        return sorted({str(s["AvailabilityZone"]) for i in _literal_subnets(g) if (s := self._subnets.get(i))})

    # -- capacity --------------------------------------------------------------------------------------------------
    def check_capacity(self) -> None:
        for g in self.plan.node_groups:
            if g.reservation is None or g.kind == "hyperpod":
                continue
            target = _target(g)
            rid = g.reservation
            if not rid.startswith("cr-"):
                what = "a resource group" if rid.startswith("arn:") else "a deploy-time value"
                self.report.add(
                    "capacity",
                    target,
                    Status.SKIP,
                    f"the launch template targets {what} ({rid}); check its reservations with "
                    "resource-groups:ListGroupResources and DescribeCapacityReservations",
                )
                continue
            try:
                info = _call(
                    "ec2:DescribeCapacityReservations (and ec2:DescribeCapacityBlocks)",
                    describe_reservation,
                    reservation_id=rid,
                    ec2_client=self.ec2,
                )
            except AwsProblem as problem:
                self.report.add("capacity", f"{target} {rid}", Status.FAIL, str(problem))
                continue
            nodes = g.max_nodes if isinstance(g.max_nodes, int) and g.max_nodes > 0 else 1
            try:
                problems = check_capacity(_configured_capacity(g, info), g.instance_type, max_nodes=nodes, info=info)
            except FmValidationError as error:
                problems = [str(error)]
            zones = self._zones(g)
            if zones and info.zone not in zones:
                problems.append(f"{rid} is in {info.zone} but the group's subnets are in {', '.join(zones)}")
            detail = (
                f"{info.reservation_type} {info.state}, {info.total_instance_count} x {info.instance_type} "
                f"in {info.zone}" + (f", ends {info.end_date.isoformat()}" if info.end_date else "")
            )
            if problems:
                self.report.add("capacity", f"{target} {rid}", Status.FAIL, "; ".join(problems) + f" ({detail})")
            else:
                self.report.add("capacity", f"{target} {rid}", Status.PASS, detail)
            if self.training_window_hours is not None:
                warning = block_end_problem(info, training_window_hours=self.training_window_hours, now=self.now)
                if warning:
                    hint = extension_hint(info, self.training_window_hours, self.now)
                    self.report.add("capacity end", f"{target} {rid}", Status.WARN, warning + hint)
                else:
                    self.report.add(
                        "capacity end",
                        f"{target} {rid}",
                        Status.PASS,
                        f"lasts the {self.training_window_hours:,.1f} h training window",
                    )

    # -- quota -----------------------------------------------------------------------------------------------------
    def check_quota(self) -> None:
        counted: list[str] = []
        blocks: list[str] = []
        vcpus = 0
        unknown: list[str] = []
        for g in self.groups():
            if not g.instance_type.startswith("p") or g.kind == "launch-template" or g.vcpus_per_node is None:
                continue
            if "Capacity Block" in g.capacity:
                blocks.append(g.group)
                continue
            if not isinstance(g.vcpus_total, int):
                unknown.append(g.group)
                continue
            vcpus += g.vcpus_total
            counted.append(f"{g.group} {g.vcpus_total:,}")
        if not counted and not unknown:
            self.report.add(
                "quota",
                ON_DEMAND_P_QUOTA_CODE,
                Status.SKIP,
                "no On-Demand or ODCR P-instance group"
                + (f" (Capacity Block groups not counted: {', '.join(blocks)})" if blocks else ""),
            )
            return
        try:
            response = _call(
                "servicequotas:GetServiceQuota",
                self.quotas.get_service_quota,
                ServiceCode="ec2",
                QuotaCode=ON_DEMAND_P_QUOTA_CODE,
            )
        except AwsProblem as problem:
            self.report.add("quota", ON_DEMAND_P_QUOTA_CODE, Status.FAIL, str(problem))
            return
        value = float(response.get("Quota", {}).get("Value", 0))
        detail = (
            f"Running On-Demand P instances quota {value:,.0f} vCPUs; planned {vcpus:,} vCPUs ({'; '.join(counted)})"
            " — instances already running also count"
        )
        if unknown:
            detail += f"; max nodes known only at deploy time: {', '.join(unknown)}"
        if blocks:
            # UNCONFIRMED whether instances in Capacity Blocks count against this quota: they are left out.
            detail += f"; Capacity Block groups not counted: {', '.join(blocks)}"
        self.report.add("quota", ON_DEMAND_P_QUOTA_CODE, Status.FAIL if vcpus > value else Status.PASS, detail)

    # -- offerings -------------------------------------------------------------------------------------------------
    def check_offerings(self) -> None:
        for g in self.groups():
            if g.instance_type not in CATALOG:
                continue
            zones = self._zones(g)
            location_type = "availability-zone" if zones else "region"
            filters: list[dict[str, Any]] = [{"Name": "instance-type", "Values": [g.instance_type]}]
            if zones:
                filters.append({"Name": "location", "Values": zones})
            try:
                response = _call(
                    "ec2:DescribeInstanceTypeOfferings",
                    self.ec2.describe_instance_type_offerings,
                    LocationType=location_type,
                    Filters=filters,
                )
            except AwsProblem as problem:
                self.report.add("offering", _target(g), Status.FAIL, str(problem))
                continue
            offered = {o["Location"] for o in response.get("InstanceTypeOfferings", [])}
            if zones:
                missing = [z for z in zones if z not in offered]
                if missing:
                    self.report.add(
                        "offering",
                        _target(g),
                        Status.FAIL,
                        f"{g.instance_type} is not offered in {', '.join(missing)} (subnet zones)",
                    )
                else:
                    self.report.add(
                        "offering", _target(g), Status.PASS, f"{g.instance_type} offered in {', '.join(zones)}"
                    )
            elif offered:
                self.report.add(
                    "offering",
                    _target(g),
                    Status.PASS,
                    f"{g.instance_type} offered in the region (subnet zones known only at deploy time)",
                )
            else:
                self.report.add("offering", _target(g), Status.FAIL, f"{g.instance_type} is not offered in this region")

    # -- IP addresses ----------------------------------------------------------------------------------------------
    def check_ips(self) -> None:
        """IPs summed per subnet over every consumer the stacks put there (:mod:`fmconstructs.cli.subnet_ips`)."""
        for check, target, status, detail in check_subnet_ips(self.plan, self._subnets):
            self.report.add(check, target, Status(status), detail)

    # -- images ----------------------------------------------------------------------------------------------------
    def check_images(self) -> None:
        wanted: dict[str, list[NodeGroupPlan]] = {}
        for g in self.plan.node_groups:
            if g.image and g.image.startswith("ami-"):
                wanted.setdefault(g.image, []).append(g)
        if not wanted:
            return
        try:
            response = _call("ec2:DescribeImages", self.ec2.describe_images, ImageIds=sorted(wanted))
        except AwsProblem as problem:
            self.report.add("images", ", ".join(sorted(wanted)), Status.FAIL, str(problem))
            return
        images = {i["ImageId"]: i for i in response.get("Images", [])}
        for image_id, groups in sorted(wanted.items()):
            image = images.get(image_id)
            for g in groups:
                if image is None:
                    self.report.add("image", f"{_target(g)} {image_id}", Status.FAIL, "not found in this region")
                    continue
                arch = image.get("Architecture")
                if g.instance_type in CATALOG:
                    expected = get_instance_spec(g.instance_type).architecture.value
                    if arch != expected:
                        self.report.add(
                            "image",
                            f"{_target(g)} {image_id}",
                            Status.FAIL,
                            f"{arch} image for {g.instance_type}, which needs {expected}",
                        )
                        continue
                self.report.add("image", f"{_target(g)} {image_id}", Status.PASS, f"{image.get('State', '?')}, {arch}")

    # -- reservation topology (cli.topology_aws) --------------------------------------------------------------------
    def check_topology(self) -> None:
        """Layer-3 network nodes each reservation spans; an AWS error is a WARN (advisory check)."""

        def fetch(ids: list[str]) -> Fetched:
            return _call(TOPOLOGY_ACTION, fetch_topology, ec2=self.ec2, reservation_ids=ids)

        try:
            rows = reservation_topology_rows(self.plan, fetch)
        except AwsProblem as problem:
            self.report.add("topology", "-", Status.WARN, str(problem))
            return
        for check, target, status, detail in rows:
            self.report.add(check, target, Status(status), detail)

    # -- FSx -------------------------------------------------------------------------------------------------------
    def check_efa_budget(self) -> None:
        for fs in self.plan.file_systems:
            target = f"{fs.stack}/{fs.file_system}"
            if fs.efa_enabled is not True:
                continue
            if fs.within_budget is None:
                self.report.add(
                    "FSx EFA budget",
                    target,
                    Status.SKIP,
                    "client EFA counts unknown in the template "
                    "(deploy-time node counts or no fmconstructs marker: see fmc plan unknowns)",
                )
                continue
            clients = "; ".join(fs.efa_clients) or "no clients in this stack"
            detail = f"{fs.efa_connections:,} of {fs.efa_connection_limit:,} EFA connections ({clients})"
            self.report.add("FSx EFA budget", target, Status.PASS if fs.within_budget else Status.FAIL, detail)

    # -- Capacity Block offerings ----------------------------------------------------------------------------------
    def find_block(self, instance_type: str, count: int, days: int) -> None:
        target = f"{count} x {instance_type}, {days} days"
        try:
            response = _call(
                "ec2:DescribeCapacityBlockOfferings",
                self.ec2.describe_capacity_block_offerings,
                InstanceType=instance_type,
                InstanceCount=count,
                CapacityDurationHours=days * 24,
            )
        except AwsProblem as problem:
            self.report.add("block offerings", target, Status.FAIL, str(problem))
            return
        offers = response.get("CapacityBlockOfferings", [])
        if not offers:
            self.report.add("block offerings", target, Status.WARN, "no Capacity Block offering matches")
            return
        for offer in offers[:5]:
            start = offer.get("StartDate")
            detail = (
                f"{offer.get('CapacityBlockOfferingId')}: {offer.get('AvailabilityZone')}, from "
                f"{start.isoformat() if isinstance(start, dt.datetime) else start}, "
                f"{offer.get('CapacityBlockDurationHours')} h, upfront {offer.get('UpfrontFee')} "
                f"{offer.get('CurrencyCode', '')}".rstrip()
            )
            self.report.add("block offerings", target, Status.INFO, detail)

    # -- prices ----------------------------------------------------------------------------------------------------
    def check_prices(self) -> None:
        """On-Demand Linux list prices from the AWS Price List API (``pricing:GetProducts``), times the nodes.

        Filters are product attributes of the ``AmazonEC2`` offer (``instanceType``, ``regionCode``,
        ``operatingSystem``, ``tenancy``, ``preInstalledSw``, ``capacitystatus``, ``licenseModel``), as public
        examples of GetProducts use them; ``regionCode`` as a filter field is UNCONFIRMED against an AWS page. The
        price is ``terms.OnDemand.*.priceDimensions.*.pricePerUnit.USD`` of each ``PriceList`` entry (a JSON string).
        Capacity Blocks and reservations are billed differently: the list price is shown for reference only.
        """
        nodes: dict[str, int] = {}
        for g in self.groups():
            if g.kind != "launch-template" and isinstance(g.max_nodes, int):
                nodes[g.instance_type] = nodes.get(g.instance_type, 0) + g.max_nodes
        region = self.report.region
        for instance_type in sorted({g.instance_type for g in self.groups() if g.instance_type in CATALOG}):
            attributes = {
                "instanceType": instance_type,
                "regionCode": region or "",
                "operatingSystem": "Linux",
                "tenancy": "Shared",
                "preInstalledSw": "NA",
                "capacitystatus": "Used",
                "licenseModel": "No License required",
            }
            filters = [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in attributes.items()]
            try:
                response = _call(
                    "pricing:GetProducts", self.pricing.get_products, ServiceCode="AmazonEC2", Filters=filters
                )
            except AwsProblem as problem:
                self.report.add("price", instance_type, Status.WARN, str(problem))
                continue
            price = _on_demand_usd_per_hour(response.get("PriceList", []))
            if price is None:
                self.report.add("price", instance_type, Status.WARN, f"no On-Demand Linux price listed in {region}")
                continue
            detail = f"{price:,.4f} USD/hour/node On-Demand list price (Linux, shared tenancy)"
            if instance_type in nodes:
                detail += f"; {nodes[instance_type]} nodes = {price * nodes[instance_type]:,.2f} USD/hour"
            self.report.add("price", instance_type, Status.INFO, detail)


def _on_demand_usd_per_hour(price_list: list[Any]) -> float | None:
    """The first non-zero hourly USD price of the On-Demand terms of ``PriceList`` entries (JSON strings)."""
    for item in price_list:
        try:
            product = json.loads(item) if isinstance(item, str) else item
            terms = product.get("terms", {}).get("OnDemand", {})
            for term in terms.values():
                for dimension in term.get("priceDimensions", {}).values():
                    usd = float(dimension.get("pricePerUnit", {}).get("USD", "0"))
                    if usd > 0 and str(dimension.get("unit", "Hrs")).lower().startswith("hr"):
                        return usd
        except (ValueError, AttributeError, TypeError):
            continue
    return None


def render_report(report: Report, console: Console) -> None:
    table = Table(title=f"fmc preflight ({report.region or 'default region'})", title_justify="left")
    for column in ("Check", "Target", "Status", "Detail"):
        table.add_column(column, overflow="fold")
    colours = {Status.PASS: "green", Status.WARN: "yellow", Status.FAIL: "red", Status.SKIP: "dim", Status.INFO: "cyan"}
    for c in report.checks:
        table.add_row(c.check, c.target, f"[{colours[c.status]}]{c.status.value}[/]", c.detail)
    console.print(table)
    console.print("[green]preflight passed[/]" if report.ok else "[red]preflight failed[/]")


#: Credentials used with ``--endpoint-url`` when none are configured: a local endpoint (moto) accepts any, and
#: botocore must sign each request with something.
DRY_RUN_CREDENTIALS = ("fmc-dry-run", "fmc-dry-run")


def _session_clients(
    region: str | None, profile: str | None, endpoint_url: str | None = None
) -> tuple[Any, Any, str | None]:
    """EC2 and Service Quotas clients and the resolved region; raises :class:`FmcError` (exit 4) without
    credentials, before any call is made."""
    import boto3

    try:
        session = boto3.Session(profile_name=profile, region_name=region)
        credentials = session.get_credentials()
    except _CREDENTIAL_ERRORS as error:
        raise FmcError(explain(error, "reading credentials"), ExitCode.NO_CREDENTIALS) from None
    if credentials is None and endpoint_url is None:
        raise FmcError(
            "no AWS credentials found: set AWS_PROFILE or --profile, environment variables, or an instance/SSO role "
            "(or use --endpoint-url for a dry run against a local endpoint)",
            ExitCode.NO_CREDENTIALS,
        )
    if credentials is None:
        key, secret = DRY_RUN_CREDENTIALS
        session = boto3.Session(aws_access_key_id=key, aws_secret_access_key=secret, region_name=region)
    resolved = session.region_name
    if resolved is None:
        return None, None, None
    check_region(resolved)
    options: dict[str, Any] = {"endpoint_url": endpoint_url} if endpoint_url else {}
    return session.client("ec2", **options), session.client("service-quotas", **options), resolved


def _pricing_client(profile: str | None, endpoint_url: str | None = None) -> Any:
    """The Price List API client: its endpoints are in us-east-1, eu-central-1 and ap-south-1 only (botocore's
    endpoint data for ``pricing``); us-east-1 is used."""
    import boto3

    options: dict[str, Any] = {"endpoint_url": endpoint_url} if endpoint_url else {}
    if endpoint_url and boto3.Session(profile_name=profile).get_credentials() is None:
        key, secret = DRY_RUN_CREDENTIALS
        return boto3.client(
            "pricing", region_name="us-east-1", aws_access_key_id=key, aws_secret_access_key=secret, **options
        )
    return boto3.Session(profile_name=profile).client("pricing", region_name="us-east-1", **options)


def _replay_clients(region: str | None, responses: Recorded, prices: bool) -> tuple[Any, Any, Any, str]:
    """Clients answered from recorded responses (:mod:`fmconstructs.cli.replay`): placeholder credentials, no calls."""
    import boto3

    if region is None:
        raise FmcError("no AWS region: give --region (the stacks pin none)", ExitCode.AWS_SETUP)
    check_region(region)
    key, secret = DRY_RUN_CREDENTIALS
    session = boto3.Session(aws_access_key_id=key, aws_secret_access_key=secret, region_name=region)
    ec2 = attach(session.client("ec2"), "ec2", responses)
    quotas = attach(session.client("service-quotas"), "service-quotas", responses)
    pricing = attach(session.client("pricing", region_name="us-east-1"), "pricing", responses) if prices else None
    return ec2, quotas, pricing, region


def make_clients(
    region: str | None,
    profile: str | None,
    *,
    endpoint_url: str | None = None,
    prices: bool = False,
    responses: Recorded | None = None,
) -> tuple[Any, Any, Any, str]:
    """(ec2, service-quotas, pricing or None, region); :class:`FmcError` for missing credentials (exit 4), no or
    an unknown region and clients botocore cannot build (exit 5)."""
    if responses is not None:
        return _replay_clients(region, responses, prices)
    extra: dict[str, Any] = {"endpoint_url": endpoint_url} if endpoint_url else {}
    try:
        ec2, quotas, resolved = _session_clients(region, profile, **extra)
        pricing = _pricing_client(profile, **extra) if prices else None
    except (BotoCoreError, ValueError) as error:
        raise FmcError(f"cannot create AWS clients: {error}", ExitCode.AWS_SETUP) from None
    if resolved is None:
        raise FmcError(
            "no AWS region: give --region (the stacks pin none and the profile sets none)", ExitCode.AWS_SETUP
        )
    return ec2, quotas, pricing, resolved


def _report_json(report: Report, endpoint_url: str | None) -> dict[str, Any]:
    data = report.to_json()
    data["exit_code"] = int(ExitCode.OK if report.ok else ExitCode.CHECKS_FAILED)
    if endpoint_url:
        data["endpoint_url"] = endpoint_url
    return data


@click.command()
@click.argument("cdk_out", required=False, default="cdk.out", type=click.Path(file_okay=False))
@click.option("--region", help="AWS region (default: the stacks' pinned region, else the profile's).")
@click.option("--profile", help="AWS profile from ~/.aws/config.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (for CI) instead of a table; errors too.")
@click.option(
    "--training-window-hours",
    type=Magnitude(0, MAX_HOURS, unit="hours"),
    help="Warn when a reservation ends before this many hours pass.",
)
@click.option(
    "--find-block",
    "find_block",
    multiple=True,
    help="List Capacity Block offerings: TYPE:COUNT:DAYS (1-64 instances; 1-14 days or 21-182 in 7-day steps).",
)
@click.option(
    "--prices", is_flag=True, help="Read On-Demand list prices from the AWS Price List API (pricing:GetProducts)."
)
@click.option(
    "--responses",
    "responses_file",
    type=click.Path(dir_okay=False),
    help="Dry run without an account: answer every AWS call from this JSON file of recorded responses "
    '({"ec2": {"DescribeSubnets": {...}}, "service-quotas": {...}}).',
)
@click.option(
    "--endpoint-url",
    help="Send every AWS call to this endpoint (dry run against a local moto server, e.g. http://127.0.0.1:5000); "
    "placeholder credentials are used when none are configured.",
)
def preflight(
    cdk_out: str,
    region: str | None,
    profile: str | None,
    as_json: bool,
    training_window_hours: float | None,
    find_block: tuple[str, ...],
    prices: bool,
    endpoint_url: str | None,
    responses_file: str | None,
) -> None:
    """Check CDK_OUT (default ./cdk.out) against the AWS account with read-only calls; exit 1 when a check fails."""
    blocks = [parse_find_block(v) for v in find_block]
    if training_window_hours is not None and not (training_window_hours > 0 and math.isfinite(training_window_hours)):
        raise click.BadParameter("a finite number of hours above 0", param_hint="--training-window-hours")
    responses = connection_options(endpoint_url, responses_file, region)
    try:
        stacks = read_assembly(cdk_out)
        plan = plan_stacks(stacks)
    except FmValidationError as error:
        raise FmcError(str(error), ExitCode.ASSEMBLY) from None
    require_gpu_groups(plan, cdk_out)
    pinned = sorted({s.region for s in stacks if s.region})
    if region is None and len(pinned) == 1:
        region = pinned[0]
    ec2, quotas, pricing, resolved = make_clients(
        region, profile, endpoint_url=endpoint_url, prices=prices, responses=responses
    )
    report = Preflight(
        plan, ec2=ec2, quotas=quotas, region=resolved, training_window_hours=training_window_hours, pricing=pricing
    ).run(blocks)
    if as_json:
        click.echo(json.dumps(_report_json(report, endpoint_url), indent=2, default=str))
    else:
        console = Console()
        render_report(report, console if console.is_terminal else Console(width=200))
        if endpoint_url:
            console.print(f"(dry run: every call went to {endpoint_url})", markup=False)
    raise SystemExit(int(ExitCode.OK if report.ok else ExitCode.CHECKS_FAILED))
