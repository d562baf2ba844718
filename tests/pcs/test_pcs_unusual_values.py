"""A sweep of unusual values through every PCS constructor, factory and hook: each raises the library's error
(FmValidationError or FmTypeError, naming a parameter) or succeeds; nothing raises a raw exception (jsii's, Python's
AttributeError/TypeError from deep inside, or NaN reaching the jsii runtime)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2

from fmconstructs import FmValidationError
from fmconstructs.pcs import PcsAmi, PcsCluster, PcsGpuNodeGroup, PcsInstanceProfile

from tests.conftest import new_scene

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
_IDS = iter(range(1_000_000))


class _Scene:
    def __init__(self) -> None:
        scene = new_scene()
        self.stack, self.vpc = scene.stack, scene.vpc
        self.cluster = PcsCluster(self.stack, "Cluster", vpc=self.vpc)
        self.group: PcsGpuNodeGroup = self.cluster.add_gpu_node_group(
            "Gpu", instance_type="p5.48xlarge", ami=AMI, max_nodes=2
        )
        self.weird: list[Any] = [
            None,
            True,
            0,
            -1,
            1.5,
            float("nan"),
            float("inf"),
            "",
            " ",
            "x\n",
            "\x00",
            "é",
            "a" * 5000,
            [],
            [None],
            {},
            {"a": "b"},
            (),
            object(),
            b"x",
            cdk.CfnParameter(self.stack, "S").value_as_string,
            cdk.CfnParameter(self.stack, "N", type="Number").value_as_number,
            10**30,
            self.stack,
            self.vpc,
            ec2.Port.all_traffic(),
        ]


@pytest.fixture(scope="module")
def world() -> _Scene:
    return _Scene()


def _sweep(world: _Scene, make: Callable[[Any, str], object]) -> None:
    raw = []
    for value in world.weird:
        try:
            make(value, f"X{next(_IDS)}")
        except FmValidationError:
            pass
        except Exception as error:  # the point: nothing else may escape
            raw.append(f"{value!r:.40}: {type(error).__name__}: {error}"[:300])
    assert raw == []


CLUSTER = [
    "vpc",
    "subnet",
    "slurm_version",
    "size",
    "accounting",
    "accounting_purge_time_days",
    "scale_down_idle_time",
    "slurm_settings",
    "enable_imex",
    "security_group",
    "cluster_name",
    "tags",
]
GPU = [
    "instance_type",
    "ami",
    "max_nodes",
    "min_nodes",
    "capacity",
    "spot",
    "subnet",
    "efa_interface_count",
    "efa_cards",
    "placement_group",
    "instance_store_mount_point",
    "mounts",
    "user_data_commands",
    "instance_profile",
    "security_groups",
    "slurm_settings",
    "scale_down_idle_time",
    "root_volume_size_gib",
    "node_group_name",
    "tags",
    "bootstrap_delivery",
]
LOGIN = [
    "ami",
    "instance_type",
    "nodes",
    "subnet",
    "mounts",
    "user_data_commands",
    "instance_profile",
    "security_groups",
    "root_volume_size_gib",
    "node_group_name",
    "tags",
    "bootstrap_delivery",
]


@pytest.mark.parametrize("parameter", CLUSTER)
def test_cluster(world, parameter):
    base: dict[str, Any] = {} if parameter == "vpc" else {"vpc": world.vpc}
    _sweep(world, lambda value, id: PcsCluster(world.stack, id, **base, **{parameter: value}))


@pytest.mark.parametrize("parameter", GPU)
def test_gpu_node_group(world, parameter):
    base: dict[str, Any] = {"instance_type": "p5.48xlarge", "ami": AMI, "max_nodes": 2}
    _sweep(world, lambda value, id: world.cluster.add_gpu_node_group(id, **{**base, parameter: value}))


@pytest.mark.parametrize("parameter", LOGIN)
def test_login_node_group(world, parameter):
    _sweep(world, lambda value, id: world.cluster.add_login_node_group(id, **{"ami": AMI, parameter: value}))


@pytest.mark.parametrize("parameter", ["node_groups", "queue_name", "slurm_settings"])
def test_queue(world, parameter):
    base: dict[str, Any] = {"node_groups": [world.group]}
    _sweep(world, lambda value, id: world.cluster.add_queue(id, **{**base, parameter: value}))


def test_amis_profiles_hooks_scope_and_id(world):
    _sweep(world, lambda value, _: PcsAmi.from_image_id(value))
    _sweep(world, lambda value, _: PcsAmi.from_ssm_parameter(value))
    _sweep(world, lambda value, _: PcsAmi.from_image_id("ami-1", architecture=value))
    _sweep(world, lambda value, id: PcsInstanceProfile(world.stack, id, cluster_arn=value))
    _sweep(world, lambda value, _: world.group.add_user_data(value))
    _sweep(world, lambda value, _: world.group.add_mount(value))
    _sweep(world, lambda value, _: PcsCluster(value, "Other", vpc=world.vpc))
    _sweep(world, lambda value, _: PcsCluster(world.stack, value, vpc=world.vpc))
