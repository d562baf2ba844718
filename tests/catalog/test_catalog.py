"""The instance catalog against moto's bundled DescribeInstanceTypes data, type by type and field by field."""

from __future__ import annotations

import math
from typing import Any

import boto3
import pytest
from moto import mock_aws

from fmconstructs import (
    BUILTIN_INSTANCE_TYPES,
    CATALOG,
    ULTRASERVERS,
    CpuArchitecture,
    EksAmiType,
    FmValidationError,
    GpuSpec,
    InstanceCatalog,
    InstanceSpec,
    InstanceStoreSpec,
    InterfaceType,
    NetworkCardSpec,
    get_instance_spec,
    get_ultraserver,
    register_instance_type,
)
from fmconstructs.catalog import NetworkCardGroup
from fmconstructs.errors import FmTypeError

MOTO_TYPES = [t for t in BUILTIN_INSTANCE_TYPES if t != "p6e-gb200.36xlarge"]


@pytest.fixture(scope="module")
def moto_types() -> dict[str, dict[str, Any]]:
    with mock_aws():
        client = boto3.client("ec2", region_name="us-east-1")
        out = client.describe_instance_types(InstanceTypes=MOTO_TYPES)["InstanceTypes"]
    return {t["InstanceType"]: t for t in out}


def test_moto_knows_every_type_but_gb200(moto_types):
    assert sorted(moto_types) == sorted(MOTO_TYPES)
    with mock_aws(), pytest.raises(Exception, match="InvalidInstanceType"):
        boto3.client("ec2", region_name="us-east-1").describe_instance_types(InstanceTypes=["p6e-gb200.36xlarge"])


@pytest.mark.parametrize("instance_type", MOTO_TYPES)
def test_compute_fields_match_describe_instance_types(moto_types, instance_type):
    api, spec = moto_types[instance_type], get_instance_spec(instance_type)
    gpu = api["GpuInfo"]["Gpus"][0]
    assert (spec.gpu.model, spec.gpu.manufacturer, spec.gpu.count) == (
        gpu["Name"],
        gpu["Manufacturer"],
        gpu["Count"],
    )
    assert spec.gpu.memory_mib_per_gpu == gpu["MemoryInfo"]["SizeInMiB"]
    assert spec.gpu.total_memory_mib == api["GpuInfo"]["TotalGpuMemoryInMiB"]
    assert spec.vcpus == api["VCpuInfo"]["DefaultVCpus"]
    assert spec.memory_mib == api["MemoryInfo"]["SizeInMiB"]
    assert [spec.architecture.value] == api["ProcessorInfo"]["SupportedArchitectures"]
    store = api["InstanceStorageInfo"]
    assert spec.instance_store is not None
    assert spec.instance_store.total_gb == store["TotalSizeInGB"]
    assert (spec.instance_store.disk_count, spec.instance_store.disk_size_gb) == (
        store["Disks"][0]["Count"],
        store["Disks"][0]["SizeInGB"],
    )


@pytest.mark.parametrize("instance_type", MOTO_TYPES)
def test_network_fields_match_describe_instance_types(moto_types, instance_type):
    net, spec = moto_types[instance_type]["NetworkInfo"], get_instance_spec(instance_type)
    assert spec.network_card_count == net["MaximumNetworkCards"]
    assert spec.max_network_interfaces == net["MaximumNetworkInterfaces"]
    assert spec.maximum_efa_interfaces == net["EfaInfo"]["MaximumEfaInterfaces"]
    assert f"{spec.network_performance_gbps} Gigabit" == net["NetworkPerformance"]
    for api_card, card in zip(net["NetworkCards"], spec.network_cards, strict=True):
        assert card.index == api_card["NetworkCardIndex"]
        assert card.max_interfaces == api_card["MaximumNetworkInterfaces"]
        assert card.baseline_bandwidth_gbps == api_card["BaselineBandwidthInGbps"]
        assert {t.value for t in card.interface_types} == set(api_card["InterfaceTypes"])


def test_gb200_record_follows_the_documented_facts():
    spec = get_instance_spec("p6e-gb200.36xlarge")
    assert (spec.gpu.count, spec.vcpus, spec.memory_gib, spec.architecture) == (
        4,
        144,
        960,
        CpuArchitecture.ARM64,
    )
    assert spec.network_card_count == 17
    assert spec.card(0).interface_types == {InterfaceType.ENA}
    assert all(spec.card(i).interface_types == {InterfaceType.EFA_ONLY} for i in range(1, 17, 2))
    assert spec.efa_network_cards == (1, 5, 9, 13)
    assert spec.eks_ami_type is EksAmiType.AL2023_ARM_64_NVIDIA
    assert spec.instance_store == InstanceStoreSpec(disk_count=3, disk_size_gb=7500)
    assert spec.ultraserver_types == ("u-p6e-gb200x36", "u-p6e-gb200x72")


def test_gb200_gpu_and_nic_card_groups_follow_the_ec2_guide():
    """EC2 User Guide efa-acc-inst-types#efa-for-p6e: GPUs reach NCIs [1 and 3], [5 and 7], [9 and 11], [13 and 15]
    (400 Gbps EFA per GPU); NCIs [1 and 2] ... [15 and 16] share one physical NIC (400 Gbps); odd NCIs take EFA-only
    at 400 Gbps, even NCIs up to 200 Gbps ENA or EFA; the primary NCI 0 is ENA only."""
    spec = get_instance_spec("p6e-gb200.36xlarge")
    assert [(g.cards, g.bandwidth_gbps) for g in spec.gpu_card_groups] == [
        ((1, 3), 400),
        ((5, 7), 400),
        ((9, 11), 400),
        ((13, 15), 400),
    ]
    assert [(g.cards, g.bandwidth_gbps) for g in spec.nic_card_groups] == [((c, c + 1), 400) for c in range(1, 17, 2)]
    assert spec.gpu_efa_cards == (1, 3, 5, 7, 9, 11, 13, 15)
    assert [spec.card_efa_bandwidth_gbps(i) for i in range(17)] == [0] + [400, 200] * 8
    assert spec.recommended_efa_cards == (1, 5, 9, 13)


@pytest.mark.parametrize(
    ("instance_type", "per_card_gbps"),
    [
        ("p5.48xlarge", 100),  # 3,200 Gbps over 32 cards
        ("p5e.48xlarge", 100),
        ("p5en.48xlarge", 200),  # 3,200 over 16 (no p5en section in efa-acc-inst-types)
        ("p6-b200.48xlarge", 400),  # "each network card supports up to 400 Gbps EFA bandwidth"
        ("p6-b300.48xlarge", 400),  # "secondary network cards support up to 400 Gbps EFA"
    ],
)
def test_per_card_efa_bandwidth_and_no_unpublished_gpu_mapping(instance_type, per_card_gbps):
    spec = get_instance_spec(instance_type)
    assert {spec.card_efa_bandwidth_gbps(c.index) for c in spec.efa_capable_cards} == {per_card_gbps}
    assert sum(spec.card_efa_bandwidth_gbps(c.index) for c in spec.efa_capable_cards) == spec.efa_bandwidth_gbps
    # The EC2 guide publishes no GPU-to-card mapping or NIC sharing for these types: none is invented.
    assert (spec.gpu_card_groups, spec.nic_card_groups, spec.gpu_efa_cards) == ((), (), ())


def test_card_without_a_documented_efa_figure_shares_the_instance_maximum():
    spec = _small_spec(
        network_cards=(
            NetworkCardSpec(0, frozenset(InterfaceType), 2, 100.0),
            NetworkCardSpec(1, frozenset(InterfaceType), 2, 100.0),
        ),
        max_network_interfaces=4,
        maximum_efa_interfaces=2,
        efa_bandwidth_gbps=300,
    )
    assert [spec.card_efa_bandwidth_gbps(i) for i in (0, 1)] == [150, 150]


@pytest.mark.parametrize(("name", "instances", "gpus"), [("u-p6e-gb200x36", 9, 36), ("u-p6e-gb200x72", 18, 72)])
def test_ultraservers(name, instances, gpus):
    us = get_ultraserver(name)
    assert (us.instance_count, us.gpu_count, us.instance_type) == (instances, gpus, "p6e-gb200.36xlarge")
    assert set(ULTRASERVERS) == {"u-p6e-gb200x36", "u-p6e-gb200x72"}


@pytest.mark.parametrize(
    ("instance_type", "ami", "hyperpod"),
    [
        ("p5.48xlarge", EksAmiType.AL2023_X86_64_NVIDIA, "ml.p5.48xlarge"),
        ("p6-b300.48xlarge", EksAmiType.AL2023_X86_64_NVIDIA, "ml.p6-b300.48xlarge"),
        ("p6e-gb200.36xlarge", EksAmiType.AL2023_ARM_64_NVIDIA, "ml.p6e-gb200.36xlarge"),
    ],
)
def test_eks_ami_type_and_hyperpod_name(instance_type, ami, hyperpod):
    spec = get_instance_spec(instance_type)
    assert (spec.eks_ami_type, spec.hyperpod_instance_type) == (ami, hyperpod)


def test_efa_bandwidth_per_type():
    got = {t: get_instance_spec(t).efa_bandwidth_gbps for t in BUILTIN_INSTANCE_TYPES}
    assert got == {
        "p5.48xlarge": 3200,
        "p5e.48xlarge": 3200,
        "p5en.48xlarge": 3200,
        "p6-b200.48xlarge": 3200,
        "p6-b300.48xlarge": 6400,
        "p6e-gb200.36xlarge": 1600,
    }


@pytest.mark.parametrize("bad", ["p4d.24xlarge", "P5.48XLARGE", "", "p5.48xlarge "])
def test_unknown_type_lists_the_supported_ones(bad):
    with pytest.raises(FmValidationError, match=r"instance_type must be one of the catalog's types") as err:
        get_instance_spec(bad)
    for supported in BUILTIN_INSTANCE_TYPES:
        assert supported in str(err.value)
    assert isinstance(err.value, ValueError)
    assert err.value.parameter == "instance_type"


def _small_spec(instance_type: str = "p5.4xlarge", **overrides: Any) -> InstanceSpec:
    fields: dict[str, Any] = {
        "instance_type": instance_type,
        "gpu": GpuSpec("H100", 1, 81920),
        "vcpus": 16,
        "memory_mib": 262144,
        "architecture": CpuArchitecture.X86_64,
        "network_cards": (NetworkCardSpec(0, frozenset(InterfaceType), 2, 100.0),),
        "max_network_interfaces": 2,
        "maximum_efa_interfaces": 1,
        "network_performance_gbps": 100,
        "efa_bandwidth_gbps": 100,
        "instance_store": InstanceStoreSpec(1, 3800),
        "eks_ami_type": EksAmiType.AL2023_X86_64_NVIDIA,
    }
    fields.update(overrides)
    return InstanceSpec(**fields)


def test_register_a_new_type_on_a_private_catalog():
    catalog = InstanceCatalog()
    spec = catalog.register(_small_spec())
    assert catalog.get("p5.4xlarge") is spec
    assert "p5.4xlarge" in catalog and len(catalog) == 1
    with pytest.raises(FmValidationError, match="a type not yet in the catalog"):
        catalog.register(_small_spec())
    catalog.register(_small_spec(vcpus=32), replace=True)
    assert catalog.get("p5.4xlarge").vcpus == 32


def test_register_instance_type_makes_it_usable_everywhere():
    try:
        register_instance_type(_small_spec("p5.4xlarge"))
        assert get_instance_spec("p5.4xlarge").gpu.count == 1
    finally:
        CATALOG.unregister("p5.4xlarge")
    assert "p5.4xlarge" not in CATALOG


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"network_cards": ()}, r"network_cards must be indices 0..N-1"),
        (
            {"network_cards": (NetworkCardSpec(1, frozenset(InterfaceType), 2, 100.0),)},
            r"network_cards must be indices 0..N-1",
        ),
        (
            {"maximum_efa_interfaces": 2},
            r"maximum_efa_interfaces must be at most the number of EFA-capable cards",
        ),
        ({"efa_network_cards": (3,)}, r"efa_network_cards must be EFA-capable card indices"),
        ({"vcpus": 0}, r"^vcpus must be at least 1, got 0"),
        ({"gpu_card_groups": (NetworkCardGroup((5,), 400.0),)}, r"gpu_card_groups must be EFA-capable card indices"),
        (
            {
                "gpu_card_groups": (NetworkCardGroup((0,), 400.0), NetworkCardGroup((0,), 400.0)),
                "gpu": GpuSpec("H100", 2, 81920),
            },
            r"gpu_card_groups must be non-empty groups, each card in at most one group",
        ),
        ({"gpu_card_groups": (NetworkCardGroup((), 400.0),)}, r"gpu_card_groups must be non-empty groups"),
        ({"nic_card_groups": (NetworkCardGroup((0,), 0.0),)}, r"nic_card_groups must be positive bandwidths"),
        (
            {"gpu_card_groups": (NetworkCardGroup((0,), 400.0),), "gpu": GpuSpec("H100", 2, 81920)},
            r"gpu_card_groups must be one group per GPU \(2\), or empty, got 1",
        ),
        (
            {
                "network_cards": (
                    NetworkCardSpec(0, frozenset(InterfaceType), 2, 100.0),
                    NetworkCardSpec(1, frozenset(InterfaceType), 2, 100.0),
                ),
                "max_network_interfaces": 4,
                "gpu": GpuSpec("H100", 2, 81920),
                "efa_network_cards": (0,),
                "gpu_card_groups": (NetworkCardGroup((0,), 100.0), NetworkCardGroup((1,), 100.0)),
            },
            r"efa_network_cards must be at least one card of every GPU's group \(none of \[\[1\]\]\)",
        ),
        (
            {"network_cards": (NetworkCardSpec(0, frozenset(InterfaceType), 2, 100.0, efa_bandwidth_gbps=0.0),)},
            r"network_cards\[0\].efa_bandwidth_gbps must be positive, or None, got 0.0",
        ),
    ],
)
def test_inconsistent_records_are_refused(overrides, message):
    with pytest.raises(FmValidationError, match=message):
        _small_spec(**overrides)


def test_records_are_frozen():
    spec = get_instance_spec("p5.48xlarge")
    with pytest.raises(AttributeError):
        spec.vcpus = 1  # type: ignore[misc]


def test_card_lookup_rejects_unknown_index():
    with pytest.raises(FmValidationError, match=r"network_card_index must be a card index of p6-b200.48xlarge \(0-7\)"):
        get_instance_spec("p6-b200.48xlarge").card(8)


# --- issue 10: wrong types and non-finite numbers never reach a deep AttributeError ---------------------------------


@pytest.mark.parametrize(
    ("overrides", "parameter", "error"),
    [
        ({"instance_type": 5}, "instance_type", FmTypeError),
        ({"instance_type": "p5.4xlarge\n"}, "instance_type", FmValidationError),
        ({"instance_type": "p5 4xlarge"}, "instance_type", FmValidationError),
        ({"gpu": "H100"}, "gpu", FmTypeError),
        ({"vcpus": True}, "vcpus", FmTypeError),
        ({"vcpus": math.nan}, "vcpus", FmValidationError),
        ({"memory_mib": math.inf}, "memory_mib", FmValidationError),
        ({"memory_mib": "262144"}, "memory_mib", FmTypeError),
        ({"architecture": "x86_64"}, "architecture", FmTypeError),
        ({"network_cards": "cards"}, "network_cards", FmTypeError),
        ({"network_cards": ({"index": 0},)}, "network_cards[0]", FmTypeError),
        ({"max_network_interfaces": 2.5}, "max_network_interfaces", FmValidationError),
        ({"maximum_efa_interfaces": None}, "maximum_efa_interfaces", FmTypeError),
        ({"efa_bandwidth_gbps": -math.inf}, "efa_bandwidth_gbps", FmValidationError),
        ({"instance_store": (1, 3800)}, "instance_store", FmTypeError),
        ({"eks_ami_type": "AL2023_x86_64_NVIDIA"}, "eks_ami_type", FmTypeError),
        ({"efa_network_cards": "0"}, "efa_network_cards", FmTypeError),
        ({"efa_network_cards": (True,)}, "efa_network_cards[0]", FmTypeError),
        ({"ultraserver_types": "u-p6e-gb200x72"}, "ultraserver_types", FmTypeError),
        ({"fsx_lustre_efa_interfaces": math.nan}, "fsx_lustre_efa_interfaces", FmValidationError),
        ({"gpu_card_groups": ((0,), 400.0)}, "gpu_card_groups[0]", FmTypeError),
    ],
)
def test_wrong_types_in_a_record_name_the_field(overrides, parameter, error):
    with pytest.raises(error) as raised:
        _small_spec(**overrides)
    assert raised.value.parameter == parameter, raised.value


@pytest.mark.parametrize(
    ("make", "parameter", "error"),
    [
        (lambda: GpuSpec("H100", math.nan, 81920), "gpu.count", FmValidationError),
        (lambda: GpuSpec(None, 1, 81920), "gpu.model", FmTypeError),
        (lambda: GpuSpec("H100", 1, True), "gpu.memory_mib_per_gpu", FmTypeError),
        (lambda: NetworkCardSpec(0, "efa", 2, 100.0), "network_cards[0].interface_types", FmTypeError),
        (lambda: NetworkCardSpec(0, frozenset({"efa"}), 2, 100.0), "network_cards[0].interface_types", FmTypeError),
        (
            lambda: NetworkCardSpec(0, frozenset(InterfaceType), 2, math.inf),
            "network_cards[0].baseline_bandwidth_gbps",
            FmValidationError,
        ),
        (lambda: NetworkCardSpec(-1, frozenset(InterfaceType), 2, 1.0), "network_cards[].index", FmValidationError),
        (lambda: NetworkCardGroup("13", 400.0), "cards", FmTypeError),
        (lambda: NetworkCardGroup((1, 3), math.nan), "bandwidth_gbps", FmValidationError),
        (lambda: InstanceStoreSpec(0, 3800), "instance_store.disk_count", FmValidationError),
        (lambda: InstanceStoreSpec(1, "3800"), "instance_store.disk_size_gb", FmTypeError),
        (lambda: register_instance_type("p5.4xlarge"), "spec", FmTypeError),
        (lambda: register_instance_type(_small_spec(), replace="yes"), "replace", FmTypeError),
        (lambda: get_instance_spec(["p5.48xlarge"]), "instance_type", FmTypeError),
        (lambda: get_instance_spec(None), "instance_type", FmTypeError),
    ],
)
def test_wrong_types_in_parts_and_functions(make, parameter, error):
    with pytest.raises(error) as raised:
        make()
    assert raised.value.parameter == parameter, raised.value
    assert str(raised.value).startswith(f"{parameter} must be")


def test_a_list_of_cards_becomes_a_tuple():
    spec = _small_spec(network_cards=[NetworkCardSpec(0, [InterfaceType.ENA, InterfaceType.EFA], 2, 100.0)])
    assert isinstance(spec.network_cards, tuple)
    assert spec.network_cards[0].interface_types == frozenset({InterfaceType.ENA, InterfaceType.EFA})


def test_catalog_facts_cannot_be_tokens():
    import aws_cdk as cdk

    stack = cdk.Stack(cdk.App(), "CatalogTokens")
    with pytest.raises(FmValidationError, match=r"^vcpus must be a number known at synth time"):
        _small_spec(vcpus=cdk.CfnParameter(stack, "V", type="Number").value_as_number)
