"""Custom Slurm settings on PCS follow the PCS User Guide's lists (fmconstructs.pcs.slurm): typed names as enums, the
other names of a level's list passed through as strings, anything else refused naming the list; what the template
renders is readable as (name, value) pairs; a Prolog the library sets brings nohold_on_prolog_fail, merged with the
user's SchedulerParameters (Slurm "Prolog and Epilog Guide", Failure Handling)."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template
from hypothesis import given, settings
from hypothesis import strategies as st

from fmconstructs.compute.slurm_scripts import SlurmHook, SlurmScriptPiece
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.health import NodeHealthOptions
from fmconstructs.pcs import ClusterSetting, NodeGroupSetting, PcsAmi, PcsCluster, QueueSetting
from fmconstructs.pcs.slurm import (
    CLUSTER_SETTINGS,
    NODE_GROUP_SETTINGS,
    NOHOLD_ON_PROLOG_FAIL,
    QUEUE_SETTINGS,
    SettingList,
    check_settings,
    merge_scheduler_parameters,
)

from tests.conftest import new_scene

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
# A deploy-time value: it satisfies every name (typed value checks skip tokens).
ANY_VALUE = cdk.CfnParameter(new_scene().stack, "AnyValue").value_as_string
NO_IDLE = NodeHealthOptions(idle_check_interval_seconds=None)


def _cluster(**props: Any) -> PcsCluster:
    scene = new_scene()
    return PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, **props)


def _rendered(cluster: PcsCluster) -> list[dict[str, str]]:
    (resource,) = Template.from_stack(cdk.Stack.of(cluster)).find_resources("AWS::PCS::Cluster").values()
    items: list[dict[str, str]] = resource["Properties"]["SlurmConfiguration"].get("SlurmCustomSettings", [])
    return items


def _pairs(items: list[dict[str, str]]) -> tuple[tuple[str, str], ...]:
    return tuple((item["ParameterName"], item["ParameterValue"]) for item in items)


# --- names on the lists pass through -------------------------------------------------------------------------------


def test_a_listed_cluster_setting_passes_through_as_a_string_in_the_lists_spelling() -> None:
    cluster = _cluster(slurm_settings={"minjobage": "300", "UnkillableStepTimeout": "180"})
    assert _rendered(cluster) == [
        {"ParameterName": "MinJobAge", "ParameterValue": "300"},
        {"ParameterName": "UnkillableStepTimeout", "ParameterValue": "180"},
    ]


def test_the_health_check_settings_are_cluster_settings_when_the_library_does_not_set_them() -> None:
    settings = {"HealthCheckProgram": "/opt/nhc/nhc", "HealthCheckInterval": "600", "HealthCheckNodeState": "ANY"}
    cluster = _cluster(slurm_settings=settings, node_health=NO_IDLE)
    assert {pair for pair in cluster.slurm_custom_settings if pair[0].startswith("HealthCheck")} == set(
        settings.items()
    )


def test_node_group_features_and_queue_max_time_pass_through() -> None:
    cluster = _cluster()
    group = cluster.add_gpu_node_group(
        "P5", instance_type="p5.48xlarge", ami=AMI, max_nodes=2, slurm_settings={"Features": "h100,efa"}
    )
    queue = group.add_queue("Q", slurm_settings={"maxtime": "2-00:00:00", QueueSetting.DEFAULT: "YES"})
    template = Template.from_stack(cdk.Stack.of(cluster))
    template.has_resource_properties(
        "AWS::PCS::ComputeNodeGroup",
        {
            "SlurmConfiguration": Match.object_like(
                {"SlurmCustomSettings": [{"ParameterName": "Features", "ParameterValue": "h100,efa"}]}
            )
        },
    )
    (resource,) = template.find_resources("AWS::PCS::Queue").values()
    items = resource["Properties"]["SlurmConfiguration"]["SlurmCustomSettings"]
    assert _pairs(items) == queue.slurm_custom_settings == (("Default", "YES"), ("MaxTime", "2-00:00:00"))
    assert group.slurm_custom_settings == (("Features", "h100,efa"),)


def test_the_rendered_pairs_are_the_templates_items_in_order() -> None:
    cluster = _cluster(
        node_health=NodeHealthOptions(),
        enable_imex=True,
        slurm_settings={"SchedulerParameters": "bf_continue", ClusterSetting.SELECT_TYPE_PARAMETERS: "CR_Core"},
    )
    assert _pairs(_rendered(cluster)) == cluster.slurm_custom_settings
    assert [name for name, _ in cluster.slurm_custom_settings] == sorted(
        name for name, _ in cluster.slurm_custom_settings
    )


@settings(max_examples=100, deadline=None)
@given(
    level=st.sampled_from([CLUSTER_SETTINGS, NODE_GROUP_SETTINGS, QUEUE_SETTINGS]),
    data=st.data(),
)
def test_any_listed_name_in_any_case_comes_back_in_the_lists_spelling(level: SettingList, data: st.DataObject) -> None:
    names = data.draw(st.lists(st.sampled_from(level.names), unique=True, min_size=1))
    spelled = {data.draw(st.sampled_from([name, name.lower(), name.upper()])): ANY_VALUE for name in names}
    checked = check_settings("slurm_settings", spelled, level)
    assert sorted(checked) == sorted(names)
    typed = {member.value for member in level.typed}
    assert all(isinstance(key, level.typed) == (key in typed) for key in checked)


# --- anything else is refused, naming the list ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "name"),
    [
        (CLUSTER_SETTINGS, "TopologyPlugin"),  # PCS sets the topology itself (PCS User Guide)
        (CLUSTER_SETTINGS, "SlurmctldHost"),
        (CLUSTER_SETTINGS, "Weight"),  # a node-group setting
        (NODE_GROUP_SETTINGS, "Prolog"),
        (NODE_GROUP_SETTINGS, "NodeName"),
        (QUEUE_SETTINGS, "Nodes"),
        (QUEUE_SETTINGS, "RealMemory"),
        (QUEUE_SETTINGS, "Weight "),
    ],
)
def test_a_name_off_the_list_is_refused_with_the_list(level: SettingList, name: str) -> None:
    with pytest.raises(FmValidationError) as caught:
        check_settings("slurm_settings", {name: "x"}, level)
    message = str(caught.value)
    assert message.startswith(
        f"slurm_settings name must be a {level.typed.__name__} or a name on the PCS {level.level}"
    )
    assert level.source in message and ", ".join(level.names) in message
    assert not isinstance(caught.value, TypeError)


@pytest.mark.parametrize(
    ("level", "name"),
    [
        (CLUSTER_SETTINGS, NodeGroupSetting.WEIGHT),
        (NODE_GROUP_SETTINGS, ClusterSetting.PROLOG),
        (QUEUE_SETTINGS, NodeGroupSetting.REAL_MEMORY),
        (CLUSTER_SETTINGS, 5),
        (QUEUE_SETTINGS, None),
    ],
)
def test_another_levels_enum_or_a_non_string_name_is_a_type_error(level: SettingList, name: object) -> None:
    with pytest.raises(FmTypeError, match=rf"slurm_settings name must be a {level.typed.__name__} or a name"):
        check_settings("slurm_settings", {name: "x"}, level)


def test_a_name_given_twice_in_two_spellings_is_refused() -> None:
    with pytest.raises(FmValidationError, match=r"slurm_settings name must be each setting once \(Prolog is given"):
        check_settings("slurm_settings", {ClusterSetting.PROLOG: "/a", "prolog": "/b"}, CLUSTER_SETTINGS)


def test_a_deploy_time_name_is_refused_and_a_deploy_time_value_passes() -> None:
    scene = new_scene()
    token = cdk.CfnParameter(scene.stack, "P").value_as_string
    with pytest.raises(FmValidationError, match=r"slurm_settings name must be a literal name"):
        check_settings("slurm_settings", {token: "x"}, CLUSTER_SETTINGS)
    assert check_settings("slurm_settings", {"MinJobAge": token}, CLUSTER_SETTINGS) == {"MinJobAge": token}


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        (ClusterSetting.HEALTH_CHECK_PROGRAM, "nhc", "the absolute path of a program"),
        (ClusterSetting.HEALTH_CHECK_PROGRAM, "/opt/a,/opt/b", "the absolute path of a program"),
        (ClusterSetting.HEALTH_CHECK_INTERVAL, "5m", "a whole number of seconds"),
        (ClusterSetting.HEALTH_CHECK_INTERVAL, "-1", "a whole number of seconds"),
        (ClusterSetting.HEALTH_CHECK_NODE_STATE, "IDLE,BUSY", "comma-separated values without repeats"),
        (ClusterSetting.HEALTH_CHECK_NODE_STATE, "IDLE,idle", "comma-separated values without repeats"),
        (ClusterSetting.SCHEDULER_PARAMETERS, "bf_continue,,nohold_on_prolog_fail", "comma-separated options"),
        (ClusterSetting.SCHEDULER_PARAMETERS, "bf_continue, bf_interval=30", "comma-separated options"),
        (ClusterSetting.PROLOG_FLAGS, "Alloc,Bogus", "comma-separated PrologFlags"),
    ],
)
def test_typed_cluster_values_are_checked(name: ClusterSetting, value: str, allowed: str) -> None:
    with pytest.raises(FmValidationError, match=rf"slurm_settings\[{name.value}\] must be {allowed}"):
        _cluster(slurm_settings={name.value: value})


# --- a failed library prolog requeues the job without holding it ----------------------------------------------------


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"node_health": NO_IDLE}, NOHOLD_ON_PROLOG_FAIL),
        ({"enable_imex": True}, NOHOLD_ON_PROLOG_FAIL),
        (
            {"node_health": NO_IDLE, "slurm_settings": {"SchedulerParameters": "bf_continue,bf_interval=60"}},
            "bf_continue,bf_interval=60,nohold_on_prolog_fail",
        ),
        (
            {"node_health": NO_IDLE, "slurm_settings": {"SchedulerParameters": "NOHOLD_ON_PROLOG_FAIL,bf_continue"}},
            "NOHOLD_ON_PROLOG_FAIL,bf_continue",
        ),
    ],
)
def test_a_library_prolog_brings_nohold_on_prolog_fail(props: dict[str, Any], expected: str) -> None:
    cluster = _cluster(**props)
    assert ("SchedulerParameters", expected) in _pairs(_rendered(cluster))


@pytest.mark.parametrize(
    "props",
    [
        {},
        {"slurm_settings": {"SchedulerParameters": "bf_continue"}},
        {"slurm_settings": {ClusterSetting.PROLOG: "/opt/mine.sh"}},  # the user's own prolog: theirs to tune
        {"node_health": NodeHealthOptions(prolog_checks=False)},
    ],
)
def test_without_a_library_prolog_scheduler_parameters_stay_as_given(props: dict[str, Any]) -> None:
    cluster = _cluster(**props)
    given = props.get("slurm_settings", {}).get("SchedulerParameters")
    assert dict(cluster.slurm_custom_settings).get("SchedulerParameters") == given


def test_a_prolog_piece_brings_nohold_on_prolog_fail() -> None:
    cluster = _cluster(slurm_settings={"SchedulerParameters": "bf_continue"})
    cluster.add_slurm_scripts(SlurmScriptPiece(hook=SlurmHook.PROLOG, name="50-mine.sh", text="#!/bin/bash\n"))
    assert dict(cluster.slurm_custom_settings)["SchedulerParameters"] == "bf_continue,nohold_on_prolog_fail"
    cluster.add_slurm_scripts(SlurmScriptPiece(hook=SlurmHook.PROLOG, name="51-mine.sh", text="#!/bin/bash\n"))
    assert dict(_pairs(_rendered(cluster)))["SchedulerParameters"] == "bf_continue,nohold_on_prolog_fail"


def test_deploy_time_scheduler_parameters_cannot_be_merged() -> None:
    scene = new_scene()
    token = cdk.CfnParameter(scene.stack, "P").value_as_string
    with pytest.raises(FmValidationError, match=r"slurm_settings\[SchedulerParameters\] must be a literal value"):
        PcsCluster(scene.stack, "C", vpc=scene.vpc, node_health=NO_IDLE, slurm_settings={"SchedulerParameters": token})


@settings(max_examples=200, deadline=None)
@given(options=st.lists(st.from_regex(r"[a-z_]{1,12}(=[0-9]{1,3})?", fullmatch=True), max_size=6))
def test_the_merge_keeps_the_given_options_first_and_adds_nohold_once(options: list[str]) -> None:
    given = ",".join(options) or None
    merged = merge_scheduler_parameters((NOHOLD_ON_PROLOG_FAIL,), given, parameter="p").split(",")
    assert merged[: len(options)] == options
    assert [o.split("=")[0].lower() for o in merged].count(NOHOLD_ON_PROLOG_FAIL) == max(
        1, [o.split("=")[0] for o in options].count(NOHOLD_ON_PROLOG_FAIL)
    )


# --- idle nodes are re-checked: HealthCheckProgram, HealthCheckInterval, HealthCheckNodeState ---------------------------


def test_node_health_renders_the_idle_check_settings() -> None:
    cluster = _cluster(node_health=NodeHealthOptions())
    assert _pairs(_rendered(cluster)) == (
        ("HealthCheckInterval", "300"),
        ("HealthCheckNodeState", "IDLE,CYCLE"),
        ("HealthCheckProgram", "/opt/fmconstructs/health/idle-check.sh"),
        ("Prolog", "/opt/fmconstructs/slurm/prolog.sh"),
        ("SchedulerParameters", "nohold_on_prolog_fail"),
    )


def test_the_idle_check_interval_and_states_are_options() -> None:
    from fmconstructs.health import HealthCheckNodeState as S

    options = NodeHealthOptions(idle_check_interval_seconds=900, idle_check_node_states=(S.NONDRAINED_IDLE, S.MIXED))
    settings = dict(_cluster(node_health=options).slurm_custom_settings)
    assert (settings["HealthCheckInterval"], settings["HealthCheckNodeState"]) == ("900", "NONDRAINED_IDLE,MIXED")


@pytest.mark.parametrize("name", ["HealthCheckProgram", "HealthCheckInterval", "healthchecknodestate"])
def test_the_library_owns_the_health_check_settings_while_it_runs_idle_checks(name: str) -> None:
    value = {"HealthCheckProgram": "/opt/nhc", "HealthCheckInterval": "60"}.get(name, "ANY")
    with pytest.raises(FmValidationError, match=r"slurm_settings\[HealthCheck\w+\] must be unset when node_health"):
        _cluster(node_health=NodeHealthOptions(), slurm_settings={name: value})
