"""``fmc capacity lend``: make a team's unused On-Demand Capacity Reservation capacity available as an interruptible
Capacity Reservation that other teams can borrow, reclaimable at any time.

``fmc capacity lend --reservation cr-... --count N`` reads the source reservation and shows what would be lent: N
instances lent in all, the unused ones moving from the source into an interruptible reservation (EC2 User Guide
"Interruptible Capacity Reservations", interruptible-capacity-reservations, "How it works"). Without ``--yes`` nothing
changes (exit 2); fmc never prompts. ``--yes`` lends: ``CreateInterruptibleCapacityReservationAllocation``
(``InstanceCount`` N, a ``ClientToken`` derived from the source and N, so a retried run creates one allocation) when
the source has no allocation yet, or ``UpdateInterruptibleCapacityReservationAllocation`` (``TargetInstanceCount`` N)
when it has one ("You can create only one interruptible allocation per source Capacity Reservation. If an allocation
already exists, you must modify or cancel it", EC2 User Guide capacity-owner-procedures). N is a total, so running the
same command twice lends nothing more (exit 0, "already lent"); an N below what is lent now would reclaim and is
refused (exit 2). ``--dry-run`` asks EC2 whether the call would be allowed (EC2 ``DryRun``) and changes nothing.

Checked before any change, from ``DescribeCapacityReservations`` (EC2 User Guide capacity-owner-procedures,
"Prerequisites"): the source is ``active`` "with no end date set", is not itself interruptible (owners "can only view,
launch, tag, share, and assign billing for interruptible reservations", interruptible-capacity-reservations,
"Considerations"), has at least N ``AvailableInstanceCount`` ("You can only allocate available instances"), and N is
at most 1,000 ("a maximum of 1000 instances at once"). A failed check ends with exit 1 and no change.

Lending does not share: the interruptible reservation is shared with the borrowing accounts through AWS RAM, within
the organization (capacity-owner-procedures, "Sharing interruptible reservations"). Reclaiming terminates the
borrowers' instances after a two-minute warning (same page, "Reclamation process and tracking"); fmc prints the
command and does not reclaim. Billing: the source is billed for its total minus the allocated capacity, the
interruptible reservation for the allocated capacity (interruptible-capacity-reservations, "Billing").

Options, exit codes and ``--responses``/``--endpoint-url`` as the other ``fmc capacity`` commands
(:mod:`fmconstructs.cli.capacity`). IAM: ``ec2:DescribeCapacityReservations``, and with ``--yes``/``--dry-run``
``ec2:CreateInterruptibleCapacityReservationAllocation`` or ``ec2:UpdateInterruptibleCapacityReservationAllocation``
(the operation names of botocore 1.44.8's EC2 model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click
from botocore.exceptions import ClientError

from . import capacity as capacity_cli
from .capacity_aws import DRY_RUN_OK, call, describe_reservation
from .errors import ExitCode, FmcError

#: The most instances one allocation request may move (EC2 User Guide capacity-owner-procedures: "a maximum of 1000
#: instances at once"; the same bound for a modification).
MAX_LEND_COUNT = 1000


@dataclass(frozen=True)
class Source:
    """The source reservation and its interruptible allocation, as DescribeCapacityReservations returns them."""

    reservation_id: str
    instance_type: str
    zone: str | None
    state: str
    total: int
    available: int
    end_date: object
    reservation_type: str
    interruptible: bool
    allocation: dict[str, Any] | None

    @classmethod
    def from_api(cls, item: dict[str, Any]) -> Source:
        return cls(
            reservation_id=str(item["CapacityReservationId"]),
            instance_type=str(item.get("InstanceType", "-")),
            zone=item.get("AvailabilityZone"),
            state=str(item.get("State", "-")),
            total=int(item.get("TotalInstanceCount") or 0),
            available=int(item.get("AvailableInstanceCount") or 0),
            end_date=item.get("EndDate"),
            reservation_type=str(item.get("ReservationType") or "default"),
            interruptible=bool(item.get("Interruptible")),
            allocation=item.get("InterruptibleCapacityAllocation") or None,
        )

    @property
    def lent(self) -> int:
        """Instances already allocated to its interruptible reservation (the target, when one is being changed)."""
        if not self.allocation:
            return 0
        return int(self.allocation.get("TargetInstanceCount", self.allocation.get("InstanceCount")) or 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "reservation_id": self.reservation_id,
            "instance_type": self.instance_type,
            "availability_zone": self.zone,
            "state": self.state,
            "total_instance_count": self.total,
            "available_instance_count": self.available,
            "end_date": None if self.end_date is None else str(self.end_date),
            "reservation_type": self.reservation_type,
            "interruptible": self.interruptible,
            "interruptible_allocation": self.allocation,
        }


def problems(source: Source, count: int) -> list[str]:
    """Why EC2 would refuse to lend ``count`` instances in all of ``source`` (EC2 User Guide capacity-owner-procedures,
    "Prerequisites"; interruptible-capacity-reservations, "Considerations"); empty when nothing seen says so."""
    found: list[str] = []
    if source.interruptible:
        found.append(f"{source.reservation_id} is itself an interruptible reservation: lend from its source")
    if source.reservation_type != "default":
        found.append(
            f"{source.reservation_id} is a {source.reservation_type}: only On-Demand Capacity Reservations lend"
        )
    if source.state != "active":
        found.append(f"state {source.state}: only an active reservation lends")
    if source.end_date is not None:
        found.append(f"it ends {source.end_date}: only a reservation with no end date lends")
    more = count - source.lent
    if more > source.available:
        found.append(f"{more} more instances asked, {source.available} unused: only unused instances lend")
    if more > MAX_LEND_COUNT:
        found.append(f"{more} more instances asked: at most {MAX_LEND_COUNT} move at once")
    return found


def read_source(ec2: Any, reservation_id: str) -> Source:
    return Source.from_api(describe_reservation(ec2, reservation_id))


def lend(ec2: Any, source: Source, count: int, *, dry_run: bool) -> dict[str, Any] | None:
    """Create the allocation of ``count`` instances, or set an existing one's target to ``count``: EC2's answer, None
    for an allowed dry run."""
    kwargs: dict[str, Any]
    if source.allocation:
        action = "ec2:UpdateInterruptibleCapacityReservationAllocation"
        method = ec2.update_interruptible_capacity_reservation_allocation
        kwargs = {"TargetInstanceCount": count}
    else:
        action = "ec2:CreateInterruptibleCapacityReservationAllocation"
        method = ec2.create_interruptible_capacity_reservation_allocation
        # Idempotency (ClientToken, botocore idempotencyToken): the same source and count give the same token.
        kwargs = {"InstanceCount": count, "ClientToken": f"fmc-lend-{source.reservation_id}-{count}"}

    def send() -> dict[str, Any] | None:
        try:
            answer: dict[str, Any] = method(CapacityReservationId=source.reservation_id, DryRun=dry_run, **kwargs)
        except ClientError as error:
            if dry_run and error.response.get("Error", {}).get("Code") == DRY_RUN_OK:
                return None
            raise
        return answer

    answer = call(action, send)
    if dry_run and answer is not None:
        raise FmcError(f"{action} with DryRun answered without {DRY_RUN_OK}: nothing is known", ExitCode.AWS_SETUP)
    if answer is not None:
        answer.pop("ResponseMetadata", None)
    return answer


def _notes(source: Source) -> list[str]:
    return [
        "share the interruptible reservation with the borrowing accounts through AWS RAM (within your organization): "
        "aws ram create-resource-share --resource-arns <its ARN> --principals <account>",
        "its id: aws ec2 describe-capacity-reservations --capacity-reservation-ids "
        f"{source.reservation_id} (InterruptibleCapacityAllocation.InterruptibleCapacityReservationId)",
        "reclaim (borrowers' instances get a two-minute warning, then terminate): aws ec2 "
        f"update-interruptible-capacity-reservation-allocation --capacity-reservation-id {source.reservation_id} "
        "--target-instance-count <fewer>",
        "billing: the source is billed for its total minus the lent instances, the interruptible reservation for the "
        "lent instances (EC2 User Guide interruptible-capacity-reservations)",
    ]


@capacity_cli.capacity.command("lend")
@click.option("--reservation", "reservation_id", required=True, help="The source On-Demand Capacity Reservation.")
@click.option(
    "--count",
    type=click.IntRange(min=1),
    required=True,
    help="Instances lent in all (the interruptible reservation's size).",
)
@click.option("--yes", is_flag=True, help="Confirm: move the instances into the interruptible reservation.")
@click.option("--dry-run", is_flag=True, help="Ask EC2 whether lending is allowed (EC2 DryRun); change nothing.")
@capacity_cli._aws_options
def lend_command(
    reservation_id: str,
    count: int,
    yes: bool,
    dry_run: bool,
    region: str | None,
    profile: str | None,
    as_json: bool,
    responses_file: str | None,
    endpoint_url: str | None,
) -> None:
    """Lend unused instances of an On-Demand Capacity Reservation as an interruptible reservation (with --yes)."""
    capacity_cli._check_reservation(reservation_id)
    if yes and dry_run:
        raise click.UsageError("--yes lends, --dry-run does not: give one")
    ec2 = capacity_cli.ec2_client(region, profile, endpoint_url, responses_file)
    source = read_source(ec2, reservation_id)
    summary = (
        f"{source.instance_type} of {source.reservation_id} ({source.zone or '-'}): {source.lent} lent now -> "
        f"{count} lent, {source.available} of {source.total} unused"
    )
    if count < source.lent:
        raise FmcError(
            f"not lent: {summary} would reclaim {source.lent - count} (borrowers' instances terminate after a "
            "two-minute warning); fmc does not reclaim: aws ec2 update-interruptible-capacity-reservation-allocation "
            f"--capacity-reservation-id {source.reservation_id} --target-instance-count {count}",
            ExitCode.USAGE,
            as_json=as_json,
        )
    if count == source.lent:
        _done(f"already lent: {summary}; nothing changed", {"lent": False, "source": source.to_json()}, as_json)
        return
    found = problems(source, count)
    if found:
        raise FmcError(f"cannot lend {summary}: {'; '.join(found)}", ExitCode.CHECKS_FAILED, as_json=as_json)
    notes = _notes(source)
    if not (yes or dry_run):
        _refuse(summary, source, notes, as_json)
    answer = lend(ec2, source, count, dry_run=dry_run)
    data: dict[str, Any]
    if answer is None:
        line, data = f"dry run: EC2 would allow lending {summary}; nothing changed", {"dry_run": True, "lent": False}
    else:
        line, data = f"lent {summary}; status {answer.get('Status', '-')}", {"lent": True, "allocation": answer}
    _done(line, {**data, "source": source.to_json(), "notes": notes}, as_json, notes)


def _done(line: str, data: dict[str, Any], as_json: bool, notes: list[str] | None = None) -> None:
    if as_json:
        capacity_cli._emit({"ok": True, **data})
        return
    click.echo(line)
    for note in notes or []:
        click.echo(f"Note: {note}")


def _refuse(summary: str, source: Source, notes: list[str], as_json: bool) -> None:
    message = f"not lent: add --yes to lend {summary}"
    if as_json:
        error = FmcError(message, ExitCode.USAGE, as_json=True).to_json()
        capacity_cli._emit({**error, "lent": False, "source": source.to_json(), "notes": notes})
    else:
        for note in notes:
            click.echo(f"Note: {note}", err=True)
        click.echo(f"fmc: error: {message}", err=True)
    raise SystemExit(int(ExitCode.USAGE))
