"""The Capacity Block events bridge: EC2's event before a block ends, the real handler code
(``fmconstructs/capacity_events/handler/index.py`` ``process``), the AWS side in moto and botocore's Stubber, and
the Slurm script the handler sends through SSM run inside the twin.

What is the library's and what the twin stands in for:

- :func:`capacity_events_artifacts` reads the synthesized handler function's environment (``TOPIC_ARN``,
  ``LEAD_MINUTES``, ``JOB_WARNING``, ``PCS_LOGIN_NODE_GROUP_ID`` or ``PARALLELCLUSTER_CLUSTER_NAME``, the schedule
  settings) and the ``EventPattern`` of every ``AWS::Events::Rule`` whose target is that function: the handler runs
  with exactly these settings, as its Lambda entry point ``handler()`` builds them.
- :func:`expiration_warning` is the event EC2 sends forty minutes before a Capacity Block ends, in the EventBridge
  envelope Lambda receives (EventBridge User Guide "Amazon EventBridge events": ``version``, ``id``, ``detail-type``,
  ``source``, ``account``, ``time``, ``region``, ``resources``, ``detail``), with the detail of the EC2 User Guide's
  example (capacity-blocks-monitor, "Capacity Block Expiration Warning": ``source`` ``aws.ec2``, ``resources`` the
  reservation's ARN, ``detail`` ``capacity-reservation-id`` and ``end-date``). The page's example spells the key
  ``detail_type``; what EventBridge delivers is ``detail-type`` (EventBridge User Guide, event structure).
  :func:`rule_matches` checks it against the rendered rule with moto's EventBridge pattern matcher, so the loop
  fails if the library's rule would not route the event to the handler.
- EC2 (:class:`BlockEc2`): moto's instances with the twin's addresses (:class:`~.remediation.TwinEc2`) and the tags
  the handler looks for (PCS ``aws:pcs:compute-node-group-id`` on the login node; ParallelCluster
  ``parallelcluster:cluster-name`` and ``parallelcluster:node-type`` ``HeadNode``: ``handler/index.py``). moto
  (5.x) implements neither the DescribeInstances filter ``capacity-reservation-id`` nor Capacity Reservations and
  Blocks, so the filter is applied by the bridge (the instances it launched into each reservation) and
  ``describe_capacity_reservations``, ``describe_capacity_blocks`` and
  ``describe_capacity_block_extension_history`` are answered by a botocore client under :class:`botocore.stub.Stubber`,
  which checks both the handler's request and the answer against the EC2 service model.
- EventBridge Scheduler (:class:`TwinScheduler`): ``create_schedule`` is checked by a Stubber against the
  scheduler service model and kept; :meth:`CapacityBridge.fire_due` waits until the library clock (the one time
  factor, :class:`~.timescale.LibraryClock`) reaches the schedule's ``at(...)`` and invokes the handler with the
  schedule's ``Target.Input``, as Scheduler invokes the function (not through an EventBridge rule);
- SSM: :class:`~.remediation.TwinSsm`: ``send_command`` runs the handler's script (``Parameters.commands``) at once
  through ``run_slurm_script`` (in the twin, on the controller: the PCS login node's or ParallelCluster head node's
  view of the cluster) and keeps it; SNS: moto, notices recorded.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.stub import Stubber

from fmconstructs.capacity_events.handler import budget as handler_budget
from fmconstructs.capacity_events.handler import index as handler_index
from fmconstructs.capacity_events.handler import lead as handler_lead

from .artifacts import Resolver
from .procs import TwinError
from .remediation import SsmCommand, TwinEc2, TwinSsm
from .timescale import LibraryClock

__all__ = [
    "BlockEc2",
    "CapacityBridge",
    "CapacityEventsArtifacts",
    "TwinScheduler",
    "capacity_events_artifacts",
    "expiration_warning",
    "rule_matches",
]

_AMI = "ami-12c6146b"  # any id: moto accepts unknown AMIs (as tests/support/twin/remediation.py)
SlurmRunner = Callable[[str], tuple[int, str, str]]


@dataclass(frozen=True)
class CapacityEventsArtifacts:
    """The capacity events handler's settings and its rules' patterns, resolved."""

    environment: Mapping[str, str]
    patterns: tuple[Mapping[str, Any], ...]

    @property
    def topic_arn(self) -> str:
        return self.environment["TOPIC_ARN"]

    @property
    def lead_minutes(self) -> dict[str, int]:
        return {str(k): int(v) for k, v in json.loads(self.environment["LEAD_MINUTES"]).items()}

    @property
    def job_warning(self) -> dict[str, Any]:
        settings: dict[str, Any] = json.loads(self.environment.get("JOB_WARNING") or "{}")
        return settings


def capacity_events_artifacts(template: Mapping[str, Any], region: str = "us-east-1") -> CapacityEventsArtifacts:
    """The handler of :class:`fmconstructs.capacity_events.CapacityBlockEvents` in ``template`` (the function with
    ``LEAD_MINUTES`` in its environment) and the event patterns of the rules that invoke it."""
    resolver = Resolver(template, region=region)
    resources: Mapping[str, Mapping[str, Any]] = template["Resources"]
    found = [
        logical
        for logical, resource in resources.items()
        if resource["Type"] == "AWS::Lambda::Function"
        and "LEAD_MINUTES" in (resource["Properties"].get("Environment", {}).get("Variables") or {})
    ]
    if len(found) != 1:
        raise TwinError(f"expected one capacity events handler in the template, found {found}")
    (logical,) = found
    variables = resources[logical]["Properties"]["Environment"]["Variables"]
    environment = {name: str(resolver.resolve(value)) for name, value in variables.items()}
    arn = resolver.get_att(logical, "Arn")
    patterns = tuple(
        resource["Properties"]["EventPattern"]
        for resource in resources.values()
        if resource["Type"] == "AWS::Events::Rule"
        and any(resolver.resolve(t.get("Arn")) == arn for t in resource["Properties"].get("Targets") or [])
    )
    if not patterns:
        raise TwinError(f"no EventBridge rule targets the capacity events handler {logical}")
    return CapacityEventsArtifacts(environment=environment, patterns=patterns)


def expiration_warning(
    reservation_id: str,
    *,
    ends_at: dt.datetime,
    detail_type: str = "Capacity Block Expiration Warning",
    account: str = "123456789012",
    region: str = "us-east-1",
) -> dict[str, Any]:
    """The event EC2 sends forty minutes before the block ends (module docstring), as Lambda receives it."""
    now = dt.datetime.now(dt.UTC)
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": detail_type,
        "source": "aws.ec2",
        "account": account,
        "time": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:ec2:{region}:{account}:capacity-reservation/{reservation_id}"],
        "detail": {
            "capacity-reservation-id": reservation_id,
            "end-date": ends_at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    }


def rule_matches(pattern: Mapping[str, Any], event: Mapping[str, Any]) -> bool:
    """Whether EventBridge would match ``event`` to ``pattern`` (moto's implementation of EventBridge patterns)."""
    from moto.events.models import EventPattern

    return bool(EventPattern.load(json.dumps(pattern)).matches_event(dict(event)))  # type: ignore[arg-type]


class BlockEc2(TwinEc2):
    """moto's EC2 with the twin's addresses, the ``capacity-reservation-id`` filter and Capacity Reservation answers
    through a Stubber-checked client (module docstring)."""

    def __init__(self, moto: Any, *, region: str) -> None:
        super().__init__(moto, replace=self._no_replacement)
        self.members: dict[str, set[str]] = {}
        self.reservations: dict[str, dict[str, Any]] = {}
        self.checked_calls: list[tuple[str, dict[str, Any]]] = []
        self._stubbed = boto3.session.Session(region_name=region).client("ec2")
        self._stubber = Stubber(self._stubbed)
        self._stubber.activate()

    @staticmethod
    def _no_replacement(instance_id: str) -> None:
        raise TwinError(f"the capacity events handler terminated {instance_id}: it never should")

    def describe_instances(self, **kwargs: Any) -> dict[str, Any]:
        filters = list(kwargs.pop("Filters", None) or [])
        wanted = [f for f in filters if f.get("Name") == "capacity-reservation-id"]
        rest = [f for f in filters if f.get("Name") != "capacity-reservation-id"]
        response = super().describe_instances(**kwargs, **({"Filters": rest} if rest else {}))
        if wanted:
            allowed = set().union(*(self.members.get(r, set()) for f in wanted for r in f.get("Values") or []))
            for reservation in response.get("Reservations", []):
                reservation["Instances"] = [i for i in reservation["Instances"] if i["InstanceId"] in allowed]
            response["Reservations"] = [r for r in response["Reservations"] if r["Instances"]]
        return response

    def _checked(self, operation: str, response: dict[str, Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        self.checked_calls.append((operation, dict(kwargs)))
        self._stubber.add_response(operation, response, dict(kwargs))
        answer: dict[str, Any] = getattr(self._stubbed, operation)(**kwargs)
        return answer

    def describe_capacity_reservations(self, **kwargs: Any) -> dict[str, Any]:
        ids = kwargs.get("CapacityReservationIds") or []
        items = [self.reservations[i] for i in ids if i in self.reservations]
        return self._checked("describe_capacity_reservations", {"CapacityReservations": items}, kwargs)

    def describe_capacity_blocks(self, **kwargs: Any) -> dict[str, Any]:
        ids = set(kwargs.get("CapacityBlockIds") or [])
        blocks = [
            {
                "CapacityBlockId": r["CapacityBlockId"],
                "CapacityReservationIds": [r["CapacityReservationId"]],
                "StartDate": r["StartDate"],
                "EndDate": r["EndDate"],
                "State": "active",
            }
            for r in self.reservations.values()
            if r.get("CapacityBlockId") in ids
        ]
        return self._checked("describe_capacity_blocks", {"CapacityBlocks": blocks}, kwargs)

    def describe_capacity_block_extension_history(self, **kwargs: Any) -> dict[str, Any]:
        return self._checked("describe_capacity_block_extension_history", {"CapacityBlockExtensions": []}, kwargs)


@dataclass
class CapacityBridge:
    """The capacity events handler behind EC2's events (module docstring); a context manager (moto runs inside).

    :param run_slurm_script: runs the handler's SSM script on the twin's login/head node; (exit code, stdout,
        stderr).
    :param backend: ``pcs`` (the login node is found by its node group tag) or ``parallelcluster`` (the head node).
    """

    artifacts: CapacityEventsArtifacts
    run_slurm_script: SlurmRunner
    region: str = "us-east-1"
    clock: LibraryClock = field(default_factory=LibraryClock)
    ec2: BlockEc2 | None = field(default=None, init=False)
    ssm: TwinSsm | None = field(default=None, init=False)
    scheduler: TwinScheduler | None = field(default=None, init=False)
    notices: list[dict[str, Any]] = field(default_factory=list, init=False)
    results: list[dict[str, Any]] = field(default_factory=list, init=False)
    _hosts: set[str] = field(default_factory=set, init=False)
    _mock: Any = field(default=None, init=False)
    _sns: Any = field(default=None, init=False)

    def __enter__(self) -> CapacityBridge:
        from moto import mock_aws

        self._mock = mock_aws()
        self._mock.start()
        client = boto3.session.Session(region_name=self.region).client
        self._sns = client("sns")
        topic = self._sns.create_topic(Name=self.artifacts.topic_arn.rsplit(":", 1)[-1])["TopicArn"]
        if topic != self.artifacts.topic_arn:
            raise TwinError(f"moto made topic {topic}, the handler publishes to {self.artifacts.topic_arn}")
        self.ec2 = BlockEc2(client("ec2"), region=self.region)
        self.ssm = TwinSsm(self.run_slurm_script, lambda: set(self._hosts))
        self.scheduler = TwinScheduler(self.region)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._mock is not None:
            self._mock.stop()
            self._mock = None

    # --- the fleet --------------------------------------------------------------------------------------------
    def _run(self, tags: Mapping[str, str]) -> str:
        assert self.ec2 is not None
        response = self.ec2._moto.run_instances(
            ImageId=_AMI,
            MinCount=1,
            MaxCount=1,
            InstanceType="p5.48xlarge",
            TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}],
        )
        return str(response["Instances"][0]["InstanceId"])

    def slurm_host(self, *, private_ip: str = "127.0.0.1") -> str:
        """The instance where the handler's SSM command runs: the PCS login node (its node group id from
        ``PCS_LOGIN_NODE_GROUP_ID``) or the ParallelCluster head node (``PARALLELCLUSTER_CLUSTER_NAME``)."""
        env = self.artifacts.environment
        if env.get("PARALLELCLUSTER_CLUSTER_NAME"):
            tags = {
                handler_index.PC_CLUSTER_TAG: env["PARALLELCLUSTER_CLUSTER_NAME"],
                handler_index.PC_NODE_TYPE_TAG: handler_index.PC_HEAD_NODE,
            }
        elif env.get("PCS_LOGIN_NODE_GROUP_ID"):
            tags = {handler_index.NODE_GROUP_ID_TAG: env["PCS_LOGIN_NODE_GROUP_ID"]}
        else:
            raise TwinError(f"the handler has no Slurm host setting: {sorted(env)}")
        instance_id = self._run(tags)
        assert self.ec2 is not None
        self.ec2.addresses[instance_id] = (private_ip, f"ip-{private_ip.replace('.', '-')}.ec2.internal")
        self._hosts.add(instance_id)
        return instance_id

    def add_block(self, reservation_id: str, *, ends_at: dt.datetime, instance_count: int) -> None:
        """A Capacity Block reservation (active, ending ``ends_at``) as DescribeCapacityReservations shows it."""
        assert self.ec2 is not None
        self.ec2.reservations[reservation_id] = {
            "CapacityReservationId": reservation_id,
            "InstanceType": "p5.48xlarge",
            "TotalInstanceCount": instance_count,
            "AvailableInstanceCount": 0,
            "State": "active",
            "ReservationType": "capacity-block",
            "StartDate": ends_at - dt.timedelta(days=1),
            "EndDate": ends_at,
            "EndDateType": "limited",
            "CapacityBlockId": "cb-" + reservation_id.removeprefix("cr-"),
        }
        self.ec2.members.setdefault(reservation_id, set())

    def launch_into(self, reservation_id: str, *, private_ip: str, tags: Mapping[str, str] | None = None) -> str:
        """A running GPU instance in ``reservation_id`` with the twin address ``private_ip``."""
        assert self.ec2 is not None
        instance_id = self._run(dict(tags or {"Name": f"gpu {private_ip}"}))
        self.ec2.addresses[instance_id] = (private_ip, f"ip-{private_ip.replace('.', '-')}.ec2.internal")
        self.ec2.members.setdefault(reservation_id, set()).add(instance_id)
        return instance_id

    # --- events -----------------------------------------------------------------------------------------------
    def now(self) -> dt.datetime:
        """The library's time now (:attr:`clock`)."""
        return dt.datetime.fromtimestamp(self.clock(), dt.UTC)

    def library_time(self, wall: float) -> dt.datetime:
        """The library time of a wall-clock timestamp (``time.time()``, ``date +%s``) taken while :attr:`clock` runs."""
        return dt.datetime.fromtimestamp(
            self.clock.anchor + (wall - self.clock.started_wall) * self.clock.factor, dt.UTC
        )

    def deliver(
        self, event: dict[str, Any], *, budget_s: float = handler_budget.DEFAULT_BUDGET_S, via_rule: bool = True
    ) -> dict[str, Any]:
        """Run one event through the handler with the synthesized function's settings (what its Lambda entry point
        passes) at the library's time; an EventBridge event (``via_rule``) only if one of the rendered rules matches
        it. Returns the handler's result."""
        if via_rule and not any(rule_matches(pattern, event) for pattern in self.artifacts.patterns):
            raise TwinError(f"no rendered rule matches the event: {self.artifacts.patterns}")
        env = self.artifacts.environment
        result: dict[str, Any] = handler_index.process(
            event,
            ec2=self.ec2,
            ssm=self.ssm,
            sns=_RecordingSns(self._sns, self.notices),
            topic_arn=self.artifacts.topic_arn,
            login_node_group_id=env.get("PCS_LOGIN_NODE_GROUP_ID", ""),
            parallelcluster_cluster_name=env.get("PARALLELCLUSTER_CLUSTER_NAME", ""),
            scaling_targets=json.loads(env.get("SCALING_TARGETS") or "[]"),
            budget=handler_budget.Budget(budget_s),
            lead=handler_lead.LeadSettings(
                lead_minutes=self.artifacts.lead_minutes,
                group=env.get("SCHEDULE_GROUP", ""),
                role_arn=env.get("SCHEDULE_ROLE_ARN", ""),
                function_arn=FUNCTION_ARN,
            ),
            scheduler=self.scheduler,
            job_warning=self.artifacts.job_warning,
            now=self.now(),
        )
        self.results.append(result)
        return result

    def fire_due(self, *, timeout_s: float = 30.0) -> tuple[dict[str, Any], dt.datetime]:
        """Wait until the library clock reaches the one schedule's time, then invoke the handler with its input, as
        EventBridge Scheduler does; returns the result and the schedule's time."""
        assert self.scheduler is not None
        (schedule,) = self.scheduler.schedules
        target = schedule["Target"]
        if target["Arn"] != FUNCTION_ARN or target["RoleArn"] != self.artifacts.environment.get("SCHEDULE_ROLE_ARN"):
            raise TwinError(f"the schedule does not invoke the handler with the scheduler role: {target}")
        at = _schedule_time(schedule)
        wait_s = (at.timestamp() - self.clock()) / self.clock.factor
        if wait_s > timeout_s:
            raise TwinError(f"the schedule is {wait_s:.0f} twin seconds away (more than {timeout_s:.0f})")
        time.sleep(max(0.0, wait_s))
        return self.deliver(json.loads(target["Input"]), via_rule=False), at

    @property
    def commands(self) -> Sequence[SsmCommand]:
        return [] if self.ssm is None else self.ssm.commands


class _RecordingSns:
    def __init__(self, moto: Any, notices: list[dict[str, Any]]) -> None:
        self._moto, self._notices = moto, notices

    def publish(self, **kwargs: Any) -> dict[str, Any]:
        self._notices.append(dict(kwargs))
        response: dict[str, Any] = self._moto.publish(**kwargs)
        return response


#: The handler function's ARN as its Lambda context gives it (``invoked_function_arn``), the schedule's target.
FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:capacity-events"


class TwinScheduler:
    """The EventBridge Scheduler client: ``create_schedule`` checked against the service model and kept."""

    def __init__(self, region: str) -> None:
        self.schedules: list[dict[str, Any]] = []
        self._client = boto3.session.Session(region_name=region).client("scheduler")
        self._stubber = Stubber(self._client)
        self._stubber.activate()

    def create_schedule(self, **kwargs: Any) -> dict[str, Any]:
        name = kwargs.get("Name", "")
        arn = f"arn:aws:scheduler:us-east-1:123456789012:schedule/{kwargs.get('GroupName', 'default')}/{name}"
        self._stubber.add_response("create_schedule", {"ScheduleArn": arn}, dict(kwargs))
        answer: dict[str, Any] = self._client.create_schedule(**kwargs)
        self.schedules.append(dict(kwargs))
        return answer

    def __getattr__(self, name: str) -> Any:
        raise TwinError(f"the handler called scheduler.{name}, which the twin does not stand in for")


def _schedule_time(schedule: Mapping[str, Any]) -> dt.datetime:
    """The time of a one-time schedule: ``at(yyyy-mm-ddThh:mm:ss)`` in ``ScheduleExpressionTimezone`` (UTC only here;
    Scheduler User Guide, schedule types: one-time schedules)."""
    expression = str(schedule["ScheduleExpression"])
    if not (expression.startswith("at(") and expression.endswith(")")):
        raise TwinError(f"not a one-time schedule: {expression}")
    if schedule.get("ScheduleExpressionTimezone", "UTC") != "UTC":
        raise TwinError(f"the twin reads UTC schedules only, got {schedule.get('ScheduleExpressionTimezone')}")
    return dt.datetime.fromisoformat(expression[3:-1]).replace(tzinfo=dt.UTC)
