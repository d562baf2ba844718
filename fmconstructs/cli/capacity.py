"""``fmc capacity``: the account's Capacity Blocks (``fmc capacity blocks``) and their extensions
(``fmc capacity extend``).

``fmc capacity extend --reservation cr-... [--days N]`` lists the extension offerings of N days (default 1) for a
block: price (``UpfrontFee`` ``CurrencyCode``, charged up front), current and new end date. ``--offering ID --yes``
buys one; without ``--yes`` fmc shows the offering, its price and new end date and refuses (exit 2): it never prompts,
so nothing is bought by a script that forgot the flag. ``--offering ID --dry-run`` asks EC2 whether the purchase would
be allowed (EC2 ``DryRun``) and buys nothing. The EC2 calls and the extension rules are in
:mod:`fmconstructs.cli.capacity_aws`.

Options as the other commands: ``--region``/``--profile``, ``--json`` (errors too), ``--endpoint-url`` (every call
to another endpoint), ``--responses FILE`` (answer every call from recorded responses, :mod:`fmconstructs.cli.replay`,
service ``ec2``). Exit codes (:mod:`fmconstructs.cli.errors`): 0 listed / bought / dry run allowed, 1 EC2 answered an
error (not found, missing permission, throttling, no capacity), 2 bad usage (a malformed id or duration, a purchase
without ``--yes``, an offering not among the listed ones), 4 no or refused credentials, 5 AWS set-up (no region, an
endpoint that cannot be reached).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import click
from botocore.exceptions import BotoCoreError
from rich.console import Console
from rich.table import Table

from .capacity_aws import (
    OFFERING_ID,
    PAYMENT_DEADLINE_BEFORE_END,
    RESERVATION_ID,
    Block,
    Offering,
    extension_notes,
    extension_offerings,
    list_blocks,
    purchase,
    read_reservation,
)
from .errors import ExitCode, FmcError
from .preflight_options import CAPACITY_BLOCK_DAYS, check_region, connection_options
from .replay import attach


def _check_reservation(value: str) -> str:
    if not RESERVATION_ID.fullmatch(value):
        raise click.BadParameter(
            f"{value!r}: a capacity reservation id, cr- and 8 or 17 hex digits (fmc capacity blocks lists yours)",
            param_hint="--reservation",
        )
    return value


def _check_offering(value: str | None) -> str | None:
    if value is not None and not OFFERING_ID.fullmatch(value):
        raise click.BadParameter(
            f"{value!r}: an offering id as fmc capacity extend lists it (letters, digits, hyphens)",
            param_hint="--offering",
        )
    return value


def _check_days(days: int) -> int:
    """Extension durations (EC2 User Guide capacity-blocks-extend: "1-day increments up to 14 days, and 7-day
    increments up to 182 days"; the ladder fmc preflight --find-block uses for new blocks)."""
    if days not in CAPACITY_BLOCK_DAYS:
        nearest = [
            d
            for d in (
                max((d for d in CAPACITY_BLOCK_DAYS if d < days), default=None),
                min((d for d in CAPACITY_BLOCK_DAYS if d > days), default=None),
            )
            if d is not None
        ]
        raise click.BadParameter(
            f"{days}: 1-14, or 21 to 182 in 7-day steps (nearest: {' or '.join(map(str, nearest))})",
            param_hint="--days",
        )
    return days


def ec2_client(region: str | None, profile: str | None, endpoint_url: str | None, responses_file: str | None) -> Any:
    """An EC2 client of the resolved region (answered from ``--responses`` if given); exit 4 without credentials,
    5 without a region or when botocore cannot build the client."""
    from .health import _session

    responses = connection_options(endpoint_url, responses_file, region)
    session, _ = _session(profile, region, replay=responses is not None, endpoint=endpoint_url is not None)
    resolved = region or session.region_name
    if resolved is None:
        raise FmcError("no AWS region: give --region (the profile sets none)", ExitCode.AWS_SETUP)
    check_region(resolved)
    options: dict[str, Any] = {"endpoint_url": endpoint_url} if endpoint_url else {}
    try:
        client = session.client("ec2", region_name=resolved, **options)
    except (BotoCoreError, ValueError) as error:
        raise FmcError(f"cannot create the ec2 client: {error}", ExitCode.AWS_SETUP) from None
    return attach(client, "ec2", responses) if responses is not None else client


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _console() -> Console:
    console = Console()
    return console if console.is_terminal else Console(width=200)


def _when(value: dt.datetime | None) -> str:
    return "-" if value is None else value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _left(end: dt.datetime | None, now: dt.datetime) -> str:
    if end is None:
        return "-"
    hours = (end - now).total_seconds() / 3600
    if hours <= 0:
        return "ended"
    return f"{hours:,.1f} h" if hours < 48 else f"{hours / 24:,.1f} d"


def _emit(data: dict[str, Any]) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


def _aws_options(command: Any) -> Any:
    """The options every ``fmc capacity`` command shares."""
    for option in reversed(
        (
            click.option("--region", help="AWS region (default: the profile's)."),
            click.option("--profile", help="AWS profile from ~/.aws/config."),
            click.option("--json", "as_json", is_flag=True, help="Print JSON (for CI) instead of tables; errors too."),
            click.option(
                "--responses",
                "responses_file",
                type=click.Path(dir_okay=False),
                help='Dry run without an account: answer every EC2 call from recorded responses ({"ec2": {...}}).',
            ),
            click.option("--endpoint-url", help="Send every EC2 call to this endpoint (a local test endpoint)."),
        )
    ):
        command = option(command)
    return command


@click.group()
def capacity() -> None:
    """Capacity Blocks of the account: list them, list and buy extensions."""


@capacity.command("blocks")
@_aws_options
@click.option("--all", "include_ended", is_flag=True, help="Also expired, cancelled and failed blocks.")
def blocks_command(
    region: str | None,
    profile: str | None,
    as_json: bool,
    responses_file: str | None,
    endpoint_url: str | None,
    include_ended: bool,
) -> None:
    """The account's Capacity Blocks in the region, by end date, and whether each can be extended now."""
    ec2 = ec2_client(region, profile, endpoint_url, responses_file)
    now = _now()
    blocks = list_blocks(ec2, include_ended=include_ended)
    if as_json:
        _emit({"ok": True, "blocks": [b.to_json(now) for b in blocks]})
        return
    table = Table(title="Capacity Blocks", title_justify="left")
    for column in ("Reservation", "Block", "Instance type", "Instances", "Zone", "State", "Start", "End", "Left"):
        table.add_column(column, overflow="fold")
    table.add_column("Extend now", overflow="fold")
    for b in blocks:
        notes = extension_notes(b, now)
        table.add_row(
            b.reservation_id,
            b.capacity_block_id or "-",
            b.instance_type,
            "-" if b.instance_count is None else f"{b.available_count or 0}/{b.instance_count} free",
            b.zone or "-",
            b.state,
            _when(b.start),
            _when(b.end),
            _left(b.end, now),
            "yes" if not notes else "no: " + "; ".join(notes),
        )
    console = _console()
    console.print(table)
    if not blocks:
        console.print("No Capacity Block in this region" + ("" if include_ended else " (--all adds ended ones)."))


def _offerings_table(block: Block, offerings: list[Offering], days: int) -> Table:
    table = Table(title=f"{block.reservation_id}: {days}-day extension offerings", title_justify="left")
    for column in ("Offering", "Instances", "Zone", "Hours", "Current end", "New end", "Price (up front)"):
        table.add_column(column, overflow="fold")
    for o in offerings:
        table.add_row(
            o.offering_id,
            f"{o.instance_count if o.instance_count is not None else '-'} x {o.instance_type or '-'}",
            o.zone or "-",
            "-" if o.duration_hours is None else str(o.duration_hours),
            _when(o.current_end),
            _when(o.new_end),
            o.price,
        )
    return table


@capacity.command("extend")
@click.option("--reservation", "reservation_id", required=True, help="The Capacity Block's reservation id (cr-...).")
@click.option(
    "--days",
    type=int,
    default=1,
    show_default=True,
    help="Extension length: 1-14 days, or 21-182 in 7-day steps.",
)
@click.option("--offering", "offering_id", help="Buy this offering (with --yes), or --dry-run its purchase.")
@click.option("--yes", is_flag=True, help="Confirm the purchase of --offering at the price shown (charged up front).")
@click.option("--dry-run", is_flag=True, help="With --offering: ask EC2 whether the purchase is allowed (EC2 DryRun).")
@_aws_options
def extend_command(
    reservation_id: str,
    days: int,
    offering_id: str | None,
    yes: bool,
    dry_run: bool,
    region: str | None,
    profile: str | None,
    as_json: bool,
    responses_file: str | None,
    endpoint_url: str | None,
) -> None:
    """List the extension offerings of a Capacity Block; buy one with --offering ID --yes."""
    _check_reservation(reservation_id)
    _check_days(days)
    _check_offering(offering_id)
    if (yes or dry_run) and offering_id is None:
        raise click.UsageError("--yes and --dry-run need --offering (the id fmc capacity extend lists)")
    if yes and dry_run:
        raise click.UsageError("--yes buys, --dry-run does not: give one")
    ec2 = ec2_client(region, profile, endpoint_url, responses_file)
    now = _now()
    block, is_block = read_reservation(ec2, reservation_id)
    notes = extension_notes(block, now, is_block=is_block)
    offerings = extension_offerings(ec2, reservation_id, days=days)
    if offering_id is None:
        _show_offerings(block, offerings, days, notes, as_json, now)
        return
    chosen = next((o for o in offerings if o.offering_id == offering_id), None)
    if chosen is None:
        listed = ", ".join(o.offering_id for o in offerings) or "none"
        raise FmcError(
            f"offering {offering_id} is not among the {days}-day offerings of {reservation_id} (listed: {listed}): "
            "give the --days it was listed with, or list again (offerings change)",
            ExitCode.USAGE,
        )
    _buy(ec2, block, chosen, notes, yes=yes, dry_run=dry_run, as_json=as_json)


def _show_offerings(
    block: Block, offerings: list[Offering], days: int, notes: list[str], as_json: bool, now: dt.datetime
) -> None:
    if not offerings:
        notes = [*notes, f"EC2 offers no {days}-day extension now (capacity is not guaranteed): try other --days"]
    if as_json:
        _emit(
            {
                "ok": True,
                "reservation": block.to_json(now),
                "offerings": [o.to_json() for o in offerings],
                "notes": notes,
            }
        )
        return
    console = _console()
    console.print(
        f"{block.reservation_id}: {block.instance_type}, {block.state}, ends {_when(block.end)}", markup=False
    )
    if offerings:
        console.print(_offerings_table(block, offerings, days))
        console.print(
            f"Buy one: fmc capacity extend --reservation {block.reservation_id} --days {days} --offering ID --yes"
        )
    for note in notes:
        console.print(f"Note: {note}", markup=False)


def _payment_note(offering: Offering) -> str:
    deadline = offering.current_end - PAYMENT_DEADLINE_BEFORE_END if offering.current_end else None
    by = f" (by {_when(deadline)})" if deadline else ""
    return (
        "the end date moves when the payment succeeds (payment-pending -> payment-succeeded); a payment not processed "
        f"within 12 hours or by 35 minutes before the current end{by} fails and the block ends as before "
        "(EC2 User Guide capacity-blocks-extend)"
    )


def _buy(
    ec2: Any, block: Block, offering: Offering, notes: list[str], *, yes: bool, dry_run: bool, as_json: bool
) -> None:
    summary = (
        f"offering {offering.offering_id}: {offering.duration_hours} h for {block.reservation_id} "
        f"({offering.instance_count} x {offering.instance_type}), end {_when(offering.current_end)} -> "
        f"{_when(offering.new_end)}, price {offering.price} charged up front"
    )
    if not (yes or dry_run):
        message = f"not bought: add --yes to buy {summary}"
        if as_json:
            error = FmcError(message, ExitCode.USAGE, as_json=True).to_json()
            _emit({**error, "purchased": False, "offering": offering.to_json(), "notes": notes})
        else:
            for note in notes:
                click.echo(f"Note: {note}", err=True)
            click.echo(f"fmc: error: {message}", err=True)
        raise SystemExit(int(ExitCode.USAGE))
    result = purchase(ec2, block.reservation_id, offering.offering_id, dry_run=dry_run)
    if result is None:
        line = f"dry run: EC2 would allow the purchase of {summary}; nothing was bought"
        data: dict[str, Any] = {"ok": True, "dry_run": True, "purchased": False, "offering": offering.to_json()}
    else:
        statuses = ", ".join(sorted({str(e.get("status")) for e in result})) or "no extension returned"
        line = f"bought {summary}; status {statuses}"
        data = {"ok": True, "purchased": True, "offering": offering.to_json(), "extensions": result}
    notes = [*notes, _payment_note(offering)]
    if as_json:
        _emit({**data, "notes": notes})
        return
    click.echo(line)
    for note in notes:
        click.echo(f"Note: {note}")
