"""The remediation handler acts, then records: a lease guards concurrent handling, ``done`` is written only after the
action succeeded, a retry after a timeout (the lease expired) acts again, and the invocation's deadline stops the work
with what was not reached reported and left unclaimed (moto DynamoDB/SNS/EC2, the SSM double, fake Slurm)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from moto import mock_aws

from fmconstructs.remediation import Action, JobKill, Trigger
from fmconstructs.remediation.handler import index
from fmconstructs.remediation.handler.runtime import LEASE_MARGIN_S, Lease, Ledger

from tests.support.remediation_world import GPU, LOGIN, NOW, PCS_TARGET, TABLE, World, alert_record, policy, sns_event

DRAIN_EFA = {"actions": {Trigger.EFA_ERROR: Action.DRAIN}}


@pytest.fixture
def world(tmp_path):
    with mock_aws():
        yield World(tmp_path)


def _gpus(world: World, count: int = 1) -> list[str]:
    world.instances(1, LOGIN)
    return world.instances(count, GPU, slurm=True)


def _efa(*instances: str) -> dict[str, Any]:
    return sns_event(*[alert_record("EfaRdmaWorkRequestErrors", i) for i in instances])


def test_a_lease_left_by_a_timed_out_invocation_is_taken_over_when_it_expires(world):
    (gpu,) = _gpus(world)
    # GIVEN an invocation that leased the fault and then timed out mid-action (nothing recorded as done)
    dead = Ledger(world.clients["dynamodb"], TABLE, lambda: NOW).lease(f"{gpu}#efa-error", 120 + LEASE_MARGIN_S)
    assert dead.taken
    # WHEN a redelivery arrives while the lease may still be held: skipped, not acted twice at once
    world.now = NOW + 10
    early = world.run(_efa(gpu), policy(**DRAIN_EFA), PCS_TARGET)
    assert [r["outcome"] for r in early["records"]] == ["in-progress"]
    assert world.ssm.sent == []
    # WHEN Lambda's retry arrives after the lease expired (a minute after the timeout at the earliest)
    world.now = NOW + 120 + 60
    retry = world.run(_efa(gpu), policy(**DRAIN_EFA), PCS_TARGET)
    # THEN it acts again and records the fault as done
    assert [r["outcome"] for r in retry["records"]] == ["drained"]
    assert world.slurm.state(world.node_of(gpu)) == "IDLE+DRAIN"
    assert world.ledger_item(f"{gpu}#efa-error")["state"] == "done"


def test_handled_is_recorded_only_after_the_action(world):
    (gpu,) = _gpus(world)
    seen: list[str] = []
    send = world.ssm.send_command

    def send_and_look(**kwargs: Any) -> Any:
        seen.append(world.ledger_item(f"{gpu}#efa-error")["state"])
        return send(**kwargs)

    world.ssm.send_command = send_and_look  # type: ignore[method-assign]
    world.run(_efa(gpu), policy(**DRAIN_EFA), PCS_TARGET)
    assert seen == ["leased"]
    assert world.ledger_item(f"{gpu}#efa-error")["state"] == "done"


def test_a_handled_fault_is_a_duplicate_for_an_hour(world):
    (gpu,) = _gpus(world)
    outcomes = []
    for offset in (0, 3599, 3601):
        world.now = NOW + offset
        outcomes += [r["outcome"] for r in world.run(_efa(gpu), policy(**DRAIN_EFA), PCS_TARGET)["records"]]
    assert outcomes == ["drained", "duplicate", "drained"]  # draining a drained node again is harmless
    assert len(world.ssm.sent) == 2


def test_a_dry_run_is_notified_once(world):
    (gpu,) = _gpus(world)
    dry = json.loads(json.dumps(policy(**DRAIN_EFA) | {"dry_run": True}))
    outcomes = [r["outcome"] for _ in range(2) for r in world.run(_efa(gpu), dry, PCS_TARGET)["records"]]
    assert outcomes == ["dry-run", "duplicate"]
    assert len(world.notices()) == 1


def test_an_ssm_command_unfinished_at_the_deadline_is_released_and_retried(world):
    (gpu,) = _gpus(world)
    world.ssm.pending_polls = 10_000
    clock = [60.0]  # seconds left in the invocation; every sleep between polls spends them

    def sleep(seconds: float) -> None:
        clock[0] -= seconds

    result = world.run(_efa(gpu), policy(**DRAIN_EFA), PCS_TARGET, remaining_s=lambda: clock[0], sleep=sleep)
    assert [r["outcome"] for r in result["records"]] == ["not-finished"]
    assert result["unfinished"] == 1
    assert clock[0] >= 10.0  # stopped before the reserve kept for the notice
    assert world.ledger_item(f"{gpu}#efa-error") == {}  # released: a redelivery acts again
    (notice,) = world.notices()
    assert notice["Subject"].startswith("[not-finished] drain") and "still InProgress" in notice["Message"]
    with pytest.raises(index.Unfinished, match="1 fault"):
        index.finish(result)


def test_faults_past_the_deadline_are_reported_and_left_unclaimed(world):
    gpus = _gpus(world, 3)
    clock = [45.0]
    send = world.ssm.send_command

    def slow_send(**kwargs: Any) -> Any:
        clock[0] -= 20.0  # the first fault's command takes 20 s: 25 s left, 15 s after the reserve
        return send(**kwargs)

    world.ssm.send_command = slow_send  # type: ignore[method-assign]
    result = world.run(_efa(*gpus), policy(**DRAIN_EFA), PCS_TARGET, remaining_s=lambda: clock[0] - 0.5)
    assert [r["outcome"] for r in result["records"]] == ["drained", "not-reached", "not-reached"]
    assert [world.ledger_item(f"{g}#efa-error").get("state") for g in gpus] == ["done", None, None]
    assert [world.slurm.state(world.node_of(g)) for g in gpus] == ["IDLE+DRAIN", "IDLE", "IDLE"]
    subjects = sorted(n["Subject"] for n in world.notices())
    assert subjects[0].startswith("[drained]")
    assert subjects[1] == "[not-reached] 2 fault(s) left for redelivery (pcs_c1)"
    with pytest.raises(index.Unfinished):
        index.finish(result)
    assert index.finish({"unfinished": 0, "records": []}) == {"unfinished": 0, "records": []}


def test_a_lease_is_released_only_by_its_owner(world):
    ledger = Ledger(world.clients["dynamodb"], TABLE, lambda: NOW)
    mine = ledger.lease("i-1#fatal-xid", 60)
    ledger.release(Lease(mine.key, owner="someone-else"))
    assert world.ledger_item("i-1#fatal-xid")["state"] == "leased"
    ledger.complete(mine)
    ledger.release(mine)  # a completion stays
    assert world.ledger_item("i-1#fatal-xid")["state"] == "done"
    again = ledger.lease("i-1#fatal-xid", 60)
    assert (again.taken, again.state) == (False, "done")


def test_a_held_back_replacement_is_one_log_line_the_metric_filter_counts(world, capsys):
    _, gpu = _gpus(world, 2)
    world.run(sns_event(alert_record("GpuCriticalXid", gpu)), policy(max_replacements_per_hour=0), PCS_TARGET)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    held = [line for line in lines if line.get("outcome") == "rate-limited"]
    # the fields of NodeRemediation's metric filter: $.event, $.outcome, and $.cluster as the dimension
    assert [(h["event"], h["cluster"]) for h in held] == [("remediation", "pcs_c1")]
    assert world.slurm.state(world.node_of(gpu)) == "IDLE+DRAIN"  # only drained
    assert world.ledger_item(f"{gpu}#fatal-xid")["state"] == "done"


def test_a_fatal_fault_with_job_kill_ends_the_jobs_at_once(world):
    (gpu,) = _gpus(world)
    world.slurm.set_jobs(world.node_of(gpu), "1", "2")
    result = world.run(sns_event(alert_record("GpuCriticalXid", gpu)), policy(job_kill=JobKill.FATAL), PCS_TARGET)
    assert [r["outcome"] for r in result["records"]] == ["replaced"]
    assert world.slurm.state(world.node_of(gpu)) == "DOWN+DRAIN"
    (notice,) = world.notices()
    assert "(its jobs end)" in notice["Message"]
