"""TrainingPlatform(slurm_topology=..., capacity_block_events=PlatformCapacityEvents(...)): Slurm topology and the
Capacity Block expiry actions (drain lead times, job warning) on every backend that can have them, refused with the
reason elsewhere; `fmc plan` reports the topology that is configured."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from fmconstructs import OnDemand
from fmconstructs.capacity_events import JobWarning
from fmconstructs.cli import topology as topo
from fmconstructs.cli.assembly import parse_stack
from fmconstructs.cli.plan import plan_stacks
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.parallelcluster import CustomActionEvent
from fmconstructs.platform import (
    Backend,
    ParallelClusterOptions,
    PlatformCapacityEvents,
    PlatformObservability,
    TrainingPlatform,
)

from tests.conftest import new_scene
from tests.support.platform_health import Built, _build

EVENTS = PlatformCapacityEvents(drain_lead_minutes=90, job_warning=JobWarning())


@cache
def _pc(**kwargs: Any) -> Built:
    return _build(Backend.PARALLELCLUSTER, **kwargs)


def _head_actions(built: Built) -> dict[str, Any]:
    actions: dict[str, Any] = built.platform.cluster.to_dict()["HeadNode"]["CustomActions"]  # type: ignore[union-attr]
    return actions


def _handler_env(built: Built) -> dict[str, Any]:
    functions = built.template.find_resources("AWS::Lambda::Function")
    (env,) = [
        f["Properties"]["Environment"]["Variables"]
        for path, f in functions.items()
        if "CapacityBlockEvents" in path and "Environment" in f["Properties"]
    ]
    return dict(env)


# --- Slurm topology ------------------------------------------------------------------------------------------------
def test_parallelcluster_topology_is_a_piece_of_the_head_node_start() -> None:
    built = _pc(slurm_topology=True)
    runs = built.platform.cluster.head_node_actions(CustomActionEvent.ON_NODE_START)  # type: ignore[union-attr]
    names = [entry["Args"][0] for entry in runs]
    assert names == ["slurm-scripts", "slurm-topology"]  # the job mapping's, then the refresher
    assert {"TopologyPlugin": "topology/tree"} in built.platform.cluster.to_dict()["Scheduling"]["SlurmSettings"][
        "CustomSlurmSettings"
    ]


def test_fmc_plan_reports_the_configured_tree() -> None:
    built = _pc(slurm_topology=True)
    plan = plan_stacks([parse_stack("S", built.template.to_json())])
    (gpu,) = [g for g in plan.node_groups if g.kind == "parallelcluster" and "/gpu/" in g.group]
    assert gpu.topology == topo.PCLUSTER_TREE


def test_the_default_head_node_keeps_one_script_per_event() -> None:
    actions = _head_actions(_pc())
    assert set(actions["OnNodeStart"]) == {"Script", "Args"}  # the job mapping alone, as before
    assert set(actions["OnNodeConfigured"]) == {"Script", "Args"}  # collectors, NCCL check and prolog checks
    plan = plan_stacks([parse_stack("S", _pc().template.to_json())])
    assert {g.topology for g in plan.node_groups if "/gpu/" in g.group} == {"none"}


@pytest.mark.parametrize(
    ("backend", "match"),
    [
        (Backend.PCS, r"slurm_topology must be False with PcsOptions: PCS configures the topology plugin itself"),
        (Backend.EKS, r"slurm_topology must be False with EksOptions \(Slurm only\)"),
        (Backend.HYPERPOD, r"slurm_topology must be False with HyperPodOptions"),
    ],
)
def test_slurm_topology_elsewhere_is_refused(backend: Backend, match: str) -> None:
    with pytest.raises(FmValidationError, match=match):
        _build(backend, slurm_topology=True)


def test_pcs_topology_refusal_names_pcs_own_topology_aware_queues() -> None:
    # The reason named only UltraServer blocks; the PCS User Guide page "Network topology-aware scheduling in AWS PCS"
    # describes topology/tree on queues that PCS configures itself (found by the twin loop (i), issue 29).
    with pytest.raises(FmValidationError, match=r"Network topology-aware scheduling in AWS PCS.*UNCONFIRMED"):
        _build(Backend.PCS, slurm_topology=True)


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_slurm_topology_must_be_a_bool(value: object) -> None:
    with pytest.raises(FmTypeError, match="slurm_topology must be a bool"):
        _build(Backend.PARALLELCLUSTER, slurm_topology=value)


# --- Capacity Block expiry actions -----------------------------------------------------------------------------------
def test_pcs_gets_the_lead_time_and_the_job_warning() -> None:
    env = _handler_env(_build(Backend.PCS, capacity_block_events=EVENTS))
    assert json.loads(env["LEAD_MINUTES"]) == {"instances": 90, "ultraserver": 70}
    assert json.loads(env["JOB_WARNING"])["slurm_signal"] == "USR1"
    assert "PCS_LOGIN_NODE_GROUP_ID" in env


def test_parallelcluster_drains_and_warns_on_its_head_node_with_options() -> None:
    env = _handler_env(_pc(capacity_block_events=EVENTS))
    assert env["PARALLELCLUSTER_CLUSTER_NAME"] == "platform-pc"
    assert json.loads(env["JOB_WARNING"])["slurm_signal"] == "USR1"


def test_parallelcluster_default_stays_notify_only() -> None:
    env = _handler_env(_pc())
    assert "PARALLELCLUSTER_CLUSTER_NAME" not in env and "JOB_WARNING" not in env


def test_eks_gets_the_pod_warning() -> None:
    env = _handler_env(_build(Backend.EKS, capacity_block_events=EVENTS))
    assert "EKS_CLUSTER_NAME" in env and "pod_annotation" in json.loads(env["JOB_WARNING"])


@pytest.mark.parametrize(
    ("backend", "kwargs", "match"),
    [
        (Backend.HYPERPOD, {}, r"capacity_block_events must be True or False with HyperPodOptions"),
        (Backend.PCS, {"observability": False}, r"True or False without observability"),
        (
            Backend.PCS,
            {"options": {"login_nodes": 0}},
            r"capacity_block_events.job_warning must be None with PcsOptions\(login_nodes=0\)",
        ),
    ],
)
def test_options_that_nothing_would_use_are_refused(backend: Backend, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(FmValidationError, match=match):
        _build(backend, capacity_block_events=EVENTS, **kwargs)


def test_options_without_a_capacity_block_are_refused() -> None:
    scene = new_scene("Platform")
    with pytest.raises(FmValidationError, match=r"True or False unless capacity is a CapacityBlock"):
        TrainingPlatform(
            scene.stack,
            "Platform",
            vpc=scene.vpc,
            instance_type="p5.48xlarge",
            nodes=2,
            capacity=OnDemand(),
            orchestrator=ParallelClusterOptions(),
            observability=PlatformObservability.new(grafana=False),
            capacity_block_events=EVENTS,
        )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"drain_lead_minutes": 30}, r"capacity_block_events.drain_lead_minutes must be .*40"),
        ({"drain_lead_minutes": 2000}, r"capacity_block_events.drain_lead_minutes"),
        ({"ultraserver_drain_lead_minutes": 50}, r"capacity_block_events.ultraserver_drain_lead_minutes"),
    ],
)
def test_bad_lead_times_are_refused(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(FmValidationError, match=match):
        PlatformCapacityEvents(**kwargs)


@pytest.mark.parametrize("value", ["on", 1, {"drain_lead_minutes": 60}])
def test_capacity_block_events_of_the_wrong_type(value: object) -> None:
    with pytest.raises(FmTypeError, match="capacity_block_events must be True, False or a PlatformCapacityEvents"):
        _build(Backend.PCS, capacity_block_events=value)


def test_a_job_warning_that_is_not_one_is_refused() -> None:
    with pytest.raises(FmTypeError, match=r"capacity_block_events\.job_warning must be a JobWarning or None"):
        PlatformCapacityEvents(job_warning="USR1")  # type: ignore[arg-type]
