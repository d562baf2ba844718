"""ParallelCluster's cross-property rules (fmconstructs.parallelcluster.rules), each with plain values: no stack."""

from __future__ import annotations

from typing import Any

import pytest

from fmconstructs import CapacityBlock, OnDemand, UltraServerCapacityBlock
from fmconstructs._rules import Advice
from fmconstructs.capacity import Capacity
from fmconstructs.catalog import CATALOG
from fmconstructs.errors import FmValidationError, WarningId
from fmconstructs.parallelcluster import ComputeResource, OperatingSystem, rules

BLOCK = CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=4, zone="us-east-1a")
ULTRA = UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef2")
P5 = ComputeResource(name="p5", instance_type="p5.48xlarge", max_nodes=4)
GB200 = ComputeResource(name="gb200", instance_type="p6e-gb200.36xlarge", capacity=ULTRA)
CPU = ComputeResource(name="cpu", instance_type="c7i.large", max_nodes=2)


@pytest.mark.parametrize(("min_nodes", "max_nodes"), [(0, 1), (4, 4), (None, 2), (5, float("nan"))])
def test_min_nodes_at_most_max_nodes_accepts(min_nodes: Any, max_nodes: Any) -> None:
    rules.min_nodes_at_most_max_nodes(min_nodes, max_nodes)


@pytest.mark.parametrize(("min_nodes", "max_nodes"), [(2, 1), (10, 0)])
def test_min_nodes_above_max_nodes_refused(min_nodes: int, max_nodes: int) -> None:
    with pytest.raises(FmValidationError, match=rf"min_nodes must be at most max_nodes \({max_nodes}\)"):
        rules.min_nodes_at_most_max_nodes(min_nodes, max_nodes)


@pytest.mark.parametrize(
    ("capacity", "instance_type", "ok"),
    [(OnDemand(), "c7i.large", True), (BLOCK, "p5.48xlarge", True), (BLOCK, "c7i.large", False)],
)
def test_capacity_block_needs_a_catalog_type(capacity: Capacity, instance_type: str, ok: bool) -> None:
    spec = CATALOG.get(instance_type) if instance_type in CATALOG else None
    if ok:
        rules.capacity_block_needs_a_catalog_type(capacity, instance_type, spec)
    else:
        with pytest.raises(FmValidationError, match="a catalog instance type on a Capacity Block"):
            rules.capacity_block_needs_a_catalog_type(capacity, instance_type, spec)


@pytest.mark.parametrize(
    ("efa", "instance_type", "ok"),
    [(True, "p5.48xlarge", True), (None, "t3.micro", True), (False, "t3.micro", True), (True, "t3.micro", False)],
)
def test_efa_needs_an_efa_type(efa: bool | None, instance_type: str, ok: bool) -> None:
    if ok:
        rules.efa_needs_an_efa_type(efa, instance_type)
    else:
        with pytest.raises(FmValidationError, match="it takes no EFA interface"):
            rules.efa_needs_an_efa_type(efa, instance_type)


@pytest.mark.parametrize(("count", "ok"), [(1, True), (2, False), (3, False)])
def test_ultraserver_block_holds_one_ultraserver(count: int, ok: bool) -> None:
    capacity = UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef2", ultraserver_count=count)
    if ok:
        rules.ultraserver_block_holds_one_ultraserver(capacity)
    else:
        with pytest.raises(FmValidationError, match=r"capacity\.ultraserver_count"):
            rules.ultraserver_block_holds_one_ultraserver(capacity)
    rules.ultraserver_block_holds_one_ultraserver(BLOCK)  # other capacity: not this rule's business


def test_block_reservation_is_targeted_by_id() -> None:
    rules.block_reservation_is_targeted_by_id(BLOCK)
    rules.block_reservation_is_targeted_by_id(OnDemand())
    by_group = UltraServerCapacityBlock(resource_group_arn="arn:aws:resource-groups:us-east-1:123456789012:group/gb")
    with pytest.raises(FmValidationError, match="reservation_id"):
        rules.block_reservation_is_targeted_by_id(by_group)


@pytest.mark.parametrize(("names", "ok"), [(["a", "b"], True), ([], True), (["a", "a"], False)])
def test_names_are_distinct(names: list[str], ok: bool) -> None:
    for rule, parameter in (
        (rules.compute_resource_names_are_distinct, "compute_resources"),
        (rules.queue_names_are_distinct, "queues"),
    ):
        if ok:
            rule(names)
        else:
            with pytest.raises(FmValidationError, match=rf"^{parameter} must be .* distinct names"):
                rule(names)


@pytest.mark.parametrize(
    ("capacity", "block_queue", "ok"),
    [(BLOCK, True, True), (OnDemand(), False, True), (BLOCK, False, False), (OnDemand(), True, False)],
)
def test_capacity_matches_the_queue_type(capacity: Capacity, block_queue: bool, ok: bool) -> None:
    kind = "CAPACITY_BLOCK" if block_queue else "ONDEMAND"
    if ok:
        rules.capacity_matches_the_queue_type(2, capacity, block_queue=block_queue, kind=kind)
    else:
        with pytest.raises(FmValidationError, match=rf"compute_resources\[2\]\.capacity .*in a {kind} queue"):
            rules.capacity_matches_the_queue_type(2, capacity, block_queue=block_queue, kind=kind)


@pytest.mark.parametrize(
    ("os", "ok"), [(OperatingSystem.UBUNTU2404, True), (OperatingSystem.RHEL8, False), (OperatingSystem.RHEL9, False)]
)
def test_p6e_gb200_needs_a_supported_os(os: OperatingSystem, ok: bool) -> None:
    rules.p6e_gb200_needs_a_supported_os([P5, CPU], os)  # other types: any OS
    if ok:
        rules.p6e_gb200_needs_a_supported_os([GB200], os)
    else:
        with pytest.raises(FmValidationError, match=r"^os must be one of .* for p6e-gb200"):
            rules.p6e_gb200_needs_a_supported_os([P5, GB200], os)


@pytest.mark.parametrize(("version", "ok"), [("3.14.0", True), ("3.16.1", True), ("3.13.2", False), ("3.9.0", False)])
def test_ultraservers_need_version_3_14(version: str, ok: bool) -> None:
    rules.ultraservers_need_version_3_14([P5], version)
    rules.ultraservers_need_version_3_14([GB200], "not-a-version")  # left to the version's own check
    if ok:
        rules.ultraservers_need_version_3_14([GB200], version)
    else:
        with pytest.raises(FmValidationError, match=r"3\.14\.0 or later for p6e-gb200"):
            rules.ultraservers_need_version_3_14([GB200], version)


@pytest.mark.parametrize(
    ("resource", "warns"),
    [
        (ComputeResource(name="b", instance_type="p5.48xlarge", capacity=BLOCK, placement_group=True), True),
        (ComputeResource(name="b", instance_type="p5.48xlarge", capacity=BLOCK), False),
        (ComputeResource(name="b", instance_type="p5.48xlarge", placement_group=True), False),
    ],
)
def test_placement_group_on_capacity_block(resource: ComputeResource, warns: bool) -> None:
    advice = rules.placement_group_on_capacity_block("gpu", resource)
    if not warns:
        assert advice is None
        return
    assert isinstance(advice, Advice)
    assert advice.warning is WarningId.PLACEMENT_GROUP_WITH_CAPACITY_BLOCK
    assert advice.message.startswith("queue gpu compute resource b sets a placement group on a Capacity Block")


@pytest.mark.parametrize(
    ("counts", "parameter"),
    [
        ({"queues": 51, "compute_resources": 1, "login_pools": 0}, "queues"),
        ({"queues": 1, "compute_resources": 51, "login_pools": 0}, r"queues \(compute resources in all queues\)"),
        ({"queues": 1, "compute_resources": 1, "login_pools": 11}, "login_nodes"),
    ],
)
def test_cluster_counts_fit_parallelcluster_refuses(counts: dict[str, int], parameter: str) -> None:
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be at most"):
        rules.cluster_counts_fit_parallelcluster(login_pool_names=[], **counts)


def test_cluster_counts_fit_parallelcluster_accepts_and_refuses_duplicate_pools() -> None:
    rules.cluster_counts_fit_parallelcluster(queues=50, compute_resources=50, login_pools=10, login_pool_names=["a"])
    with pytest.raises(FmValidationError, match="login pool names that are unique"):
        rules.cluster_counts_fit_parallelcluster(
            queues=1, compute_resources=1, login_pools=2, login_pool_names=["a", "a"]
        )


@pytest.mark.parametrize(
    ("names", "ids", "dirs", "match"),
    [
        (["a", "a"], ["fs-1", "fs-2"], ["/a", "/b"], "shared storage names"),
        (["a", "b"], ["fs-1", "fs-1"], ["/a", "/b"], "file systems"),
        (["a", "b"], ["fs-1", "fs-2"], ["/a", "/a"], "mount directories"),
        ([f"s{i}" for i in range(21)], [f"fs-{i}" for i in range(21)], [f"/d{i}" for i in range(21)], "at most 20"),
    ],
)
def test_shared_storage_is_distinct_refuses(names: list[str], ids: list[str], dirs: list[str], match: str) -> None:
    with pytest.raises(FmValidationError, match=match):
        rules.shared_storage_is_distinct(names, ids, dirs)


def test_shared_storage_is_distinct_accepts() -> None:
    rules.shared_storage_is_distinct(["a", "b"], ["fs-1", "fs-2"], ["/a", "/b"])


@pytest.mark.parametrize(
    ("dirs", "instance_storage", "ok"),
    [
        (["/fsx", "/data"], True, True),
        (["/fsx", "/fsx2"], False, True),
        (["/scratch/lustre"], False, True),
        (["/scratch/lustre"], True, False),
        (["/fsx", "/fsx/inner"], False, False),
    ],
)
def test_mount_dirs_do_not_overlap(dirs: list[str], instance_storage: bool, ok: bool) -> None:
    if ok:
        rules.mount_dirs_do_not_overlap(dirs, instance_storage)
    else:
        with pytest.raises(FmValidationError, match="do not contain one another"):
            rules.mount_dirs_do_not_overlap(dirs, instance_storage)


@pytest.mark.parametrize(("head", "ok"), [("c7i.2xlarge", True), ("m5.large", True), ("c7g.2xlarge", False)])
def test_compute_types_share_the_head_architecture(head: str, ok: bool) -> None:
    resources = [("gpu", P5)]
    if ok:
        rules.compute_types_share_the_head_architecture(head, resources)  # m5.large: facts unknown, skipped
    else:
        with pytest.raises(FmValidationError, match=r"an x86_64 instance type such as c7i\.2xlarge: queue gpu"):
            rules.compute_types_share_the_head_architecture(head, resources)


@pytest.mark.parametrize(
    ("head", "max_nodes", "ok"),
    [
        ("c7i.xlarge", [100], True),
        ("c7i.xlarge", [200, 10], False),
        ("c7i.2xlarge", [1000], True),
        ("x.y", [9999], True),
    ],
)
def test_head_node_memory_fits_the_compute_nodes(head: str, max_nodes: list[int], ok: bool) -> None:
    if ok:
        rules.head_node_memory_fits_the_compute_nodes(head, max_nodes)
    else:
        with pytest.raises(FmValidationError, match="HeadNodeMemorySizeValidator"):
            rules.head_node_memory_fits_the_compute_nodes(head, max_nodes)
