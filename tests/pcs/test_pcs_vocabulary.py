"""One vocabulary on PCS (issue 10 section 4): ``max_nodes``/``min_nodes`` for GPU node groups and ``nodes`` for login
node groups (the old names were removed in 0.3.0: tests/house/test_removed_names.py); typed factory signatures; the EFA
card layout.
"""

from __future__ import annotations

import inspect
import typing
import warnings
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from fmconstructs import CapacityBlock, CpuArchitecture, EfaCardSelection, FmValidationError, UltraServerCapacityBlock
from fmconstructs.pcs import PcsAmi, PcsCluster, PcsGpuNodeGroup, PcsLoginNodeGroup
from fmconstructs.pcs import node_group as node_group_module
from fmconstructs.pcs.node_group import PcsGpuNodeGroupOptions, PcsLoginNodeGroupOptions

from tests.conftest import new_scene

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
GB200_AMI = PcsAmi.from_image_id("ami-0123456789abcdef0", architecture=CpuArchitecture.ARM64)
BLOCK = "cr-0123456789abcdef0"
CNG = "AWS::PCS::ComputeNodeGroup"


def _cluster(**props: Any) -> PcsCluster:
    scene = new_scene()
    return PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, **props)


# --- the node-count names --------------------------------------------------------------------------------------------


def test_max_and_min_nodes():
    cluster = _cluster()
    group = cluster.add_gpu_node_group("Gpu", instance_type="p5.48xlarge", ami=AMI, max_nodes=4, min_nodes=1)
    assert (group.min_nodes, group.max_nodes) == (1, 4)
    Template.from_stack(cdk.Stack.of(cluster)).has_resource_properties(
        CNG, {"ScalingConfiguration": {"MinInstanceCount": 1, "MaxInstanceCount": 4}}
    )


def test_new_names_do_not_warn():
    cluster = _cluster()
    with warnings.catch_warnings():
        # No old name of any fmconstructs API is used underneath (PCS passes max_nodes to the launch template and the
        # capacity check).
        warnings.filterwarnings("error", r".* is deprecated and will be removed in fmconstructs")
        group = cluster.add_gpu_node_group(
            "Gpu",
            instance_type="p5.48xlarge",
            ami=AMI,
            capacity=CapacityBlock(reservation_id=BLOCK, instance_count=2),
            max_nodes=2,
            min_nodes=2,
        )
        login = cluster.add_login_node_group("Login", ami=AMI, nodes=1)
        assert (group.max_nodes, login.nodes) == (2, 1)


def test_count_errors_name_the_new_parameters():
    cluster = _cluster()
    with pytest.raises(FmValidationError, match=r"^max_nodes must be at most the reservation's 2 instances, got 4"):
        cluster.add_gpu_node_group(
            "Gpu",
            instance_type="p5.48xlarge",
            ami=AMI,
            capacity=CapacityBlock(reservation_id=BLOCK, instance_count=2),
            max_nodes=4,
        )
    with pytest.raises(FmValidationError, match=r"^min_nodes must be at most max_nodes \(2\), got 3"):
        cluster.add_gpu_node_group("Gpu2", instance_type="p5.48xlarge", ami=AMI, max_nodes=2, min_nodes=3)


# --- typed factories ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("factory", "options", "construct"),
    [
        (PcsCluster.add_gpu_node_group, PcsGpuNodeGroupOptions, PcsGpuNodeGroup),
        (PcsCluster.add_login_node_group, PcsLoginNodeGroupOptions, PcsLoginNodeGroup),
    ],
)
def test_factories_take_every_constructor_option_typed(factory, options, construct):
    # Before: add_gpu_node_group(id, **options: Any). Now the factory and the constructor both take
    # **options: Unpack[<Options>] (the one declaration: tests/pcs/test_pcs_options_declared_once.py).
    for function in (factory, construct.__init__):
        hints = typing.get_type_hints(
            function, include_extras=True, localns={**vars(node_group_module), "PcsCluster": PcsCluster}
        )
        assert typing.get_origin(hints["options"]) is typing.Unpack and typing.get_args(hints["options"]) == (options,)
    assert "cluster" in inspect.signature(construct.__init__).parameters


# --- EFA card layouts -----------------------------------------------------------------------------------------------------


def _efa_cards(template: Template) -> list[int]:
    (lt,) = [
        r["Properties"]["LaunchTemplateData"]
        for r in template.find_resources("AWS::EC2::LaunchTemplate").values()
        if "NetworkInterfaces" in r["Properties"]["LaunchTemplateData"]
    ]
    return sorted(
        ni["NetworkCardIndex"] for ni in lt["NetworkInterfaces"] if ni["InterfaceType"] in ("efa", "efa-only")
    )


@pytest.mark.parametrize(
    ("selection", "cards"),
    [
        # EC2 User Guide efa-acc-inst-types#efa-for-p6e: 4 x 400 Gbps on cards 1, 5, 9, 13, or 8 x 200 Gbps on the odd
        # cards 1-15.
        (EfaCardSelection.RECOMMENDED, [1, 5, 9, 13]),
        (EfaCardSelection.EVERY_GPU_CARD, [1, 3, 5, 7, 9, 11, 13, 15]),
    ],
)
def test_gb200_efa_card_layouts(selection, cards):
    cluster = _cluster(enable_imex=True)
    group = cluster.add_gpu_node_group(
        "Gb200",
        instance_type="p6e-gb200.36xlarge",
        ami=GB200_AMI,
        capacity=UltraServerCapacityBlock(reservation_id=BLOCK),
        max_nodes=18,
        efa_cards=selection,
    )
    assert group.efa_interface_count == len(cards)
    assert _efa_cards(Template.from_stack(cdk.Stack.of(cluster))) == cards
