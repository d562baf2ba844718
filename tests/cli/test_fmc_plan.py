"""`fmc plan`: figures read from the example app's cloud assembly, and plans without an app, against the catalog."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from examples.reservations import PLACEHOLDER_CAPACITY_BLOCK_IDS, PLACEHOLDER_ODCR_IDS
from fmconstructs.catalog import get_instance_spec
from fmconstructs.cli.assembly import DEPLOY_TIME, parse_stack
from fmconstructs.cli.main import cli
from fmconstructs.cli.plan import plan_stacks
from fmconstructs.networking.interfaces import InterfacePolicy, plan_network_interfaces
from fmconstructs.storage.sizing import aggregate_throughput_mbps, size_for_checkpoint

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cdk_out(example_assembly: Path) -> Path:
    """The example app's cdk.out (tests/conftest.py: synthesized once per run, shared)."""
    return example_assembly


@pytest.fixture(scope="module")
def plan_json(cdk_out: Path) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["plan", str(cdk_out), "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    return data


def _group(data: dict[str, Any], stack: str, instance_type: str) -> dict[str, Any]:
    (group,) = [
        g
        for g in data["node_groups"]
        if g["stack"] == stack and g["instance_type"] == instance_type and g["kind"] != "launch-template"
    ]
    found: dict[str, Any] = group
    return found


def test_pcs_p5_figures_match_the_catalog(plan_json: dict[str, Any]) -> None:
    spec = get_instance_spec("p5.48xlarge")
    layout = plan_network_interfaces(spec, policy=InterfacePolicy.PCS)
    g = _group(plan_json, "FmPcsP5", "p5.48xlarge")
    assert g["kind"] == "pcs"
    assert (g["min_nodes"], g["max_nodes"]) == (2, 2)
    assert g["gpus_per_node"] == spec.gpu.count == 8
    assert g["gpus_total"] == 16
    assert g["gpu_memory_gib_per_node"] == spec.gpu.total_memory_mib / 1024
    assert g["efa_interfaces_per_node"] == layout.efa_interface_count == 32
    assert g["efa_gbps_per_node"] == layout.efa_bandwidth_gbps == 3200
    assert g["efa_gbps_total"] == 6400
    assert spec.instance_store is not None
    assert g["nvme_gb_per_node"] == spec.instance_store.total_gb
    assert g["vcpus_total"] == 2 * spec.vcpus
    assert g["capacity"] == "Capacity Block"
    assert g["reservation"] == PLACEHOLDER_CAPACITY_BLOCK_IDS["p5.48xlarge"]
    assert g["ip_interfaces_per_node"] == 1  # one `efa` primary; the rest are efa-only


def test_ultraserver_and_odcr_capacity_kinds(plan_json: dict[str, Any]) -> None:
    gb200 = _group(plan_json, "FmPcsGb200", "p6e-gb200.36xlarge")
    assert gb200["capacity"] == "UltraServer Capacity Block"
    assert gb200["max_nodes"] == 18
    assert gb200["gpus_total"] == 72
    spec = get_instance_spec("p6e-gb200.36xlarge")
    assert gb200["efa_gbps_per_node"] == plan_network_interfaces(spec).efa_bandwidth_gbps
    odcr = _group(plan_json, "FmEksP5en", "p6-b300.48xlarge")
    assert odcr["capacity"] == "ODCR"
    assert odcr["reservation"] == PLACEHOLDER_ODCR_IDS["p6-b300.48xlarge"]


def test_eks_system_group_range_and_non_catalog_type(plan_json: dict[str, Any]) -> None:
    g = _group(plan_json, "FmEksP5en", "m7i.xlarge")
    assert (g["min_nodes"], g["max_nodes"]) == (2, 4)
    assert g["in_catalog"] is False
    assert g["gpus_per_node"] is None


def test_file_system_throughput_and_efa_budget(plan_json: dict[str, Any]) -> None:
    (fs,) = [f for f in plan_json["file_systems"] if f["stack"] == "FmPcsP5"]
    # the 0.2.0 size, kept (tests/house/test_example_storage_never_shrinks.py)
    assert fs["storage_capacity_gib"] == 9600
    assert fs["aggregate_throughput_mbps"] == aggregate_throughput_mbps(9600, 1000) == 9375.0
    spec = get_instance_spec("p5.48xlarge")
    assert spec.fsx_lustre_efa_interfaces is not None
    assert fs["efa_connections"] == 2 * min(spec.fsx_lustre_efa_interfaces, 32)
    assert fs["efa_connection_limit"] == 1024
    assert fs["within_budget"] is True
    (eks,) = [f for f in plan_json["file_systems"] if f["stack"] == "FmEksP5en"]
    assert eks["efa_enabled"] is False and eks["efa_connections"] is None


def test_deploy_time_values_are_listed(plan_json: dict[str, Any]) -> None:
    assert any("FmPrivateP5/" in u and "AMI" in u for u in plan_json["unknowns"])
    g = _group(plan_json, "FmPcsP5", "p5.48xlarge")
    assert g["zone"] == DEPLOY_TIME  # Fn::Select of Fn::GetAZs


def test_table_output(cdk_out: Path) -> None:
    result = CliRunner().invoke(cli, ["plan", str(cdk_out)])
    assert result.exit_code == 0, result.output
    assert "FmPcsP5: node groups" in result.output
    assert "3,200" in result.output and "Capacity Block" in result.output
    assert "FSx for Lustre" in result.output and "16 / 1,024" in result.output


def test_prices_given_by_the_user_multiply(cdk_out: Path) -> None:
    result = CliRunner().invoke(cli, ["plan", str(cdk_out), "--json", "--price-per-hour", "p5.48xlarge=10.5"])
    assert result.exit_code == 0, result.output
    g = _group(json.loads(result.output), "FmPcsP5", "p5.48xlarge")
    assert g["price_per_hour"] == 10.5 and g["cost_per_hour"] == 21


def test_plan_without_an_app() -> None:
    args = ["plan", "--instance-type", "p5en.48xlarge", "--nodes", "16"]
    args += ["--checkpoint-bytes", "2e12", "--checkpoint-seconds", "60", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    spec = get_instance_spec("p5en.48xlarge")
    layout = plan_network_interfaces(spec)
    (g,) = data["node_groups"]
    assert g["gpus_total"] == 16 * spec.gpu.count == 128
    assert g["efa_interfaces_per_node"] == layout.efa_interface_count
    assert g["efa_gbps_total"] == 16 * layout.efa_bandwidth_gbps
    sizing = size_for_checkpoint(2e12, 60, efa_enabled=True)  # EFA by default, as TrainingPlatform sizes it
    (fs,) = data["file_systems"]
    assert fs["storage_capacity_gib"] == sizing.storage_capacity_gib
    assert fs["aggregate_throughput_mbps"] == sizing.aggregate_throughput_mbps
    assert fs["aggregate_throughput_mbps"] >= 2e12 / 60 / 1e6
    assert g["cost_per_hour"] is None


def test_plan_without_an_app_lustre_efa_budget_and_price() -> None:
    args = ["plan", "--instance-type", "p5.48xlarge", "--nodes", "200", "--throughput-gbytes-per-s", "10"]
    args += ["--lustre-efa", "--price-per-hour", "3", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    (fs,) = data["file_systems"]
    assert fs["efa_enabled"] is True
    assert fs["efa_connections"] == 200 * 8 and fs["within_budget"] is False
    assert data["node_groups"][0]["cost_per_hour"] == 600


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--instance-type", "p5.48xlarge"], "go together"),
        (["--instance-type", "nope.large", "--nodes", "2"], "instance_type"),
        (["--instance-type", "p5.48xlarge", "--nodes", "0"], "--nodes"),
        (["--instance-type", "p5.48xlarge", "--nodes", "2", "--checkpoint-bytes", "1e12"], "checkpoint_seconds"),
        (["--instance-type", "p5.48xlarge", "--nodes", "2", "--price-per-hour", "nan"], "--price-per-hour"),
        (["--price-per-hour", "5"], "TYPE=USD"),
        (["--checkpoint-bytes", "1e12", "--checkpoint-seconds", "1"], "--instance-type"),
    ],
)
def test_bad_options_explain_without_a_traceback(args: list[str], message: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["plan", str(tmp_path), *args])
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_missing_assembly_is_explained(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["plan", str(tmp_path / "nowhere")])
    assert result.exit_code == 3  # ExitCode.ASSEMBLY
    assert "manifest.json" in result.output and "cdk synth" in result.output


def test_tokens_become_deploy_time() -> None:
    template = {
        "Parameters": {"Nodes": {"Type": "Number"}},
        "Resources": {
            "Lt": {
                "Type": "AWS::EC2::LaunchTemplate",
                "Properties": {
                    "LaunchTemplateData": {
                        "InstanceType": "p5.48xlarge",
                        "NetworkInterfaces": {"Ref": "Interfaces"},
                        "CapacityReservationSpecification": {
                            "CapacityReservationTarget": {"CapacityReservationId": {"Ref": "Reservation"}}
                        },
                    }
                },
            },
            "Group": {
                "Type": "AWS::AutoScaling::AutoScalingGroup",
                "Properties": {
                    "MinSize": "0",
                    "MaxSize": {"Ref": "Nodes"},
                    "LaunchTemplate": {"LaunchTemplateId": {"Ref": "Lt"}},
                    "VPCZoneIdentifier": ["subnet-0123456789abcdef0"],
                },
            },
            "Fs": {
                "Type": "AWS::FSx::FileSystem",
                "Properties": {
                    "FileSystemType": "LUSTRE",
                    "StorageCapacity": {"Ref": "Size"},
                    "LustreConfiguration": {"DeploymentType": "SCRATCH_2"},
                },
            },
        },
    }
    plan = plan_stacks([parse_stack("S", template)])
    (g,) = plan.node_groups
    assert g.min_nodes == 0 and g.max_nodes == DEPLOY_TIME
    assert g.gpus_total == DEPLOY_TIME and g.efa_interfaces_per_node == DEPLOY_TIME
    assert g.capacity == "ODCR" and g.reservation == "Ref Reservation"
    assert g.zone == "zone of subnet-0123456789abcdef0"
    (fs,) = plan.file_systems
    assert fs.throughput_mbps_per_tib == 200 and fs.aggregate_throughput_mbps == DEPLOY_TIME
    joined = "\n".join(plan.unknowns)
    for part in ("max nodes (Ref Nodes)", "network interfaces", "capacity reservation", "storage capacity", "Nodes"):
        assert part in joined


def test_python_dash_m(tmp_path: Path) -> None:
    env = {**os.environ, "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION": "1"}
    args = [sys.executable, "-m", "fmconstructs.cli", "plan", "--instance-type", "p5.48xlarge", "--nodes", "2"]
    proc = subprocess.run(
        [*args, "--json"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["node_groups"][0]["efa_gbps_per_node"] == 3200


def test_interfaces_on_cards_the_catalog_lacks_give_no_bandwidth_figure() -> None:
    interfaces = [{"NetworkCardIndex": i, "DeviceIndex": 0, "InterfaceType": "efa-only"} for i in range(1, 40)]
    template = {
        "Resources": {
            "Lt": {
                "Type": "AWS::EC2::LaunchTemplate",
                "Properties": {
                    "LaunchTemplateData": {"InstanceType": "p5en.48xlarge", "NetworkInterfaces": interfaces}
                },
            }
        }
    }
    (g,) = plan_stacks([parse_stack("S", template)]).node_groups
    assert g.efa_interfaces_per_node == 39 and g.efa_gbps_per_node is None


def test_fmc_console_script_is_declared_and_runs() -> None:
    """`pip install fmconstructs` puts `fmc` on PATH (pyproject [project.scripts]); `make` installs it in .venv."""
    import subprocess
    import sys
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"fmc": "fmconstructs.cli.main:main"}
    fmc = Path(sys.executable).parent / "fmc"
    assert fmc.exists(), "the fmc console script is missing from the virtual environment: run `make test`"
    proc = subprocess.run([str(fmc), "--help"], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "plan" in proc.stdout and "preflight" in proc.stdout


def _named(data: dict[str, Any], stack: str, suffix: str) -> dict[str, Any]:
    (group,) = [g for g in data["node_groups"] if g["stack"] == stack and g["group"].endswith(suffix)]
    found: dict[str, Any] = group
    return found


def test_parallelcluster_queue_figures_match_the_catalog(plan_json: dict[str, Any]) -> None:
    # FmParallelClusterP5en: queue gpu, 2 p5en.48xlarge on a Capacity Block (Custom::PclusterCluster configuration).
    spec = get_instance_spec("p5en.48xlarge")
    (g,) = [
        g
        for g in plan_json["node_groups"]
        if g["stack"] == "FmParallelClusterP5en" and g["instance_type"] == "p5en.48xlarge"
    ]
    assert g["kind"] == "parallelcluster"
    assert g["group"].split("/")[1] == "gpu"
    assert (g["min_nodes"], g["max_nodes"]) == (2, 2)
    assert g["gpus_total"] == 2 * spec.gpu.count
    assert g["vcpus_total"] == 2 * spec.vcpus
    assert g["capacity"] == "Capacity Block"
    assert g["reservation"] == PLACEHOLDER_CAPACITY_BLOCK_IDS["p5en.48xlarge"]
    # ParallelCluster creates the EFA interfaces itself (Efa.Enabled): the plan says so instead of guessing a count.
    assert g["efa_interfaces_per_node"] == "set by AWS ParallelCluster"
    assert any(u.startswith(f"FmParallelClusterP5en/{g['group']}: EFA interfaces") for u in plan_json["unknowns"])
    head = _named(plan_json, "FmParallelClusterP5en", "/head")
    assert (head["max_nodes"], head["efa_interfaces_per_node"]) == (1, 0)


def test_parallelcluster_ultraserver_block(plan_json: dict[str, Any]) -> None:
    (g,) = [
        g
        for g in plan_json["node_groups"]
        if g["stack"] == "FmParallelClusterGb200" and g["instance_type"] == "p6e-gb200.36xlarge"
    ]
    assert g["capacity"] == "UltraServer Capacity Block"
    assert g["max_nodes"] == 18
    assert g["gpus_total"] == 18 * get_instance_spec("p6e-gb200.36xlarge").gpu.count


def test_hyperpod_instance_groups(plan_json: dict[str, Any]) -> None:
    # FmHyperPodSlurm: gpu = 2 x ml.p5.48xlarge, planned with the catalog's p5.48xlarge facts.
    spec = get_instance_spec("p5.48xlarge")
    g = _named(plan_json, "FmHyperPodSlurm", "/gpu")
    assert (g["kind"], g["instance_type"], g["max_nodes"]) == ("hyperpod", "p5.48xlarge", 2)
    assert g["gpus_total"] == 2 * spec.gpu.count
    assert g["capacity"] == "on-demand"
    assert g["efa_interfaces_per_node"] == "set by SageMaker HyperPod"
    controller = _named(plan_json, "FmHyperPodSlurm", "/controller")
    assert (controller["instance_type"], controller["max_nodes"]) == ("m5.2xlarge", 1)
    eks = _named(plan_json, "FmHyperPodEks", "/gpu")
    assert (eks["instance_type"], eks["max_nodes"]) == ("p5en.48xlarge", 2)


def test_hyperpod_training_plan_is_not_an_ec2_reservation() -> None:
    template = {
        "Resources": {
            "HP": {
                "Type": "AWS::SageMaker::Cluster",
                "Properties": {
                    "InstanceGroups": [
                        {
                            "InstanceGroupName": "gpu",
                            "InstanceType": "ml.p5en.48xlarge",
                            "InstanceCount": 4,
                            "TrainingPlanArn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/tp",
                        }
                    ],
                    "VpcConfig": {"Subnets": ["subnet-0123456789abcdef0"], "SecurityGroupIds": ["sg-1"]},
                },
            }
        }
    }
    plan = plan_stacks([parse_stack("S", template)])
    (g,) = plan.node_groups
    assert (g.capacity, g.max_nodes, g.gpus_total) == ("SageMaker training plan", 4, 32)
    assert g.reservation == "arn:aws:sagemaker:us-east-1:123456789012:training-plan/tp"


def test_parallelcluster_queues_count_against_the_efa_budget_from_the_marker(plan_json: dict[str, Any]) -> None:
    # GIVEN the example's ParallelCluster queue (2 x p5en, LNet over EFA on 8 interfaces: the catalog's FSx default)
    (fs,) = [f for f in plan_json["file_systems"] if f["stack"] == "FmParallelClusterP5en"]
    gpu = _named(plan_json, "FmParallelClusterP5en", "/gpu/p5en")
    head = _named(plan_json, "FmParallelClusterP5en", "/head")
    # THEN the plan reads the count the construct wrote (Metadata fmconstructs:lustre-efa-interfaces) and counts it
    assert gpu["efa_interfaces_per_node"] == "set by AWS ParallelCluster"
    assert gpu["lustre_efa_interfaces_per_node"] == get_instance_spec("p5en.48xlarge").fsx_lustre_efa_interfaces == 8
    assert head["lustre_efa_interfaces_per_node"] == 0
    assert fs["efa_enabled"] is True
    assert (fs["efa_connections"], fs["within_budget"]) == (16, True)
    assert fs["efa_clients"] == ["ClusterEB0386A7/gpu/p5en: 2 x 8 = 16"]
    assert not any("EFA connections of" in u for u in plan_json["unknowns"] if u.startswith("FmParallelClusterP5en"))


# --- ParallelCluster / HyperPod Lustre EFA interfaces from Metadata fmconstructs:lustre-efa-interfaces -----------------
_EFA_FS = {
    "Type": "AWS::FSx::FileSystem",
    "Properties": {
        "FileSystemType": "LUSTRE",
        "StorageCapacity": 4800,
        "SubnetIds": ["subnet-0123456789abcdef0"],
        "LustreConfiguration": {"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 1000, "EfaEnabled": True},
    },
}


def _pcluster_template(marker: object = None, gpu_max: object = 4) -> dict[str, Any]:
    """An EFA-enabled file system beside a ParallelCluster: head node, a p5en queue (Efa on) and a c7i queue."""
    resource: dict[str, Any] = {
        "Type": "Custom::PclusterCluster",
        "Properties": {
            "ClusterConfiguration": {
                "HeadNode": {"InstanceType": "c7i.2xlarge", "Networking": {"SubnetId": "subnet-0123456789abcdef0"}},
                "Scheduling": {
                    "SlurmQueues": [
                        {
                            "Name": "gpu",
                            "Networking": {"SubnetIds": ["subnet-0123456789abcdef0"]},
                            "ComputeResources": [
                                {
                                    "Name": "p5en",
                                    "InstanceType": "p5en.48xlarge",
                                    "MaxCount": gpu_max,
                                    "Efa": {"Enabled": True},
                                },
                            ],
                        },
                        {
                            "Name": "cpu",
                            "Networking": {"SubnetIds": ["subnet-0123456789abcdef0"]},
                            "ComputeResources": [{"Name": "c7i", "InstanceType": "c7i.4xlarge", "MaxCount": 10}],
                        },
                    ]
                },
            }
        },
    }
    if marker is not None:
        resource["Metadata"] = {"fmconstructs:lustre-efa-interfaces": marker}
    return {"Resources": {"Fs": _EFA_FS, "Cluster": resource}}


def _hyperpod_template(marker: object = None, gpu_nodes: object = 4) -> dict[str, Any]:
    """An EFA-enabled file system beside a HyperPod cluster of a p5 group and an m5 group."""
    resource: dict[str, Any] = {
        "Type": "AWS::SageMaker::Cluster",
        "Properties": {
            "InstanceGroups": [
                {"InstanceGroupName": "gpu", "InstanceType": "ml.p5.48xlarge", "InstanceCount": gpu_nodes},
                {"InstanceGroupName": "system", "InstanceType": "ml.m5.2xlarge", "InstanceCount": 1},
            ],
            "VpcConfig": {"Subnets": ["subnet-0123456789abcdef0"], "SecurityGroupIds": ["sg-1"]},
        },
    }
    if marker is not None:
        resource["Metadata"] = {"fmconstructs:lustre-efa-interfaces": marker}
    return {"Resources": {"Fs": _EFA_FS, "HP": resource}}


def _plan(template: dict[str, Any]) -> Any:
    return plan_stacks([parse_stack("S", template)])


def _plan_group(plan: Any, suffix: str) -> Any:
    (group,) = [g for g in plan.node_groups if g.group.endswith(suffix)]
    return group


def test_marked_parallelcluster_queues_count_max_nodes_times_interfaces() -> None:
    # GIVEN the construct's marker: 8 interfaces on queue gpu, TCP (0) on queue cpu
    plan = _plan(_pcluster_template({"gpu": 8, "cpu": 0}))
    # THEN the queue counts 4 x 8 against the 1,024 connections; the head node and the TCP queue count nothing
    (fs,) = plan.file_systems
    assert (fs.efa_connections, fs.within_budget) == (32, True)
    assert fs.efa_clients == ["Cluster/gpu/p5en: 4 x 8 = 32"]
    assert _plan_group(plan, "/gpu/p5en").lustre_efa_interfaces_per_node == 8
    assert _plan_group(plan, "/cpu/c7i").lustre_efa_interfaces_per_node == 0
    assert _plan_group(plan, "/head").lustre_efa_interfaces_per_node == 0
    assert not any("EFA connections of" in u for u in plan.unknowns)
    # the node's own EFA interfaces stay ParallelCluster's
    assert _plan_group(plan, "/gpu/p5en").efa_interfaces_per_node == "set by AWS ParallelCluster"


def test_unmarked_parallelcluster_queues_leave_the_budget_unknown() -> None:
    # GIVEN a template without the marker (another tool's, or an older fmconstructs)
    plan = _plan(_pcluster_template())
    (fs,) = plan.file_systems
    # THEN the EFA queue's connections stay unknown, never guessed from the catalog
    assert (fs.efa_connections, fs.within_budget) == (DEPLOY_TIME, None)
    assert fs.efa_clients == ["Cluster/gpu/p5en: not counted here (checked at synth by the construct)"]
    assert _plan_group(plan, "/gpu/p5en").lustre_efa_interfaces_per_node is None
    assert any("EFA connections of Cluster/gpu/p5en (no fmconstructs:lustre-efa-interfaces" in u for u in plan.unknowns)


@pytest.mark.parametrize("marker", [{"cpu": 0}, "not-a-mapping", {"gpu": {"Ref": "Interfaces"}}, {"gpu": -1}])
def test_a_queue_the_marker_does_not_state_stays_unknown(marker: object) -> None:
    # GIVEN a marker that misses queue gpu, is not a mapping, or gives no literal count for it
    plan = _plan(_pcluster_template(marker))
    (fs,) = plan.file_systems
    assert (fs.efa_connections, fs.within_budget) == (DEPLOY_TIME, None)
    assert _plan_group(plan, "/gpu/p5en").lustre_efa_interfaces_per_node in (None, "decided on the node")


def test_a_deploy_time_max_count_leaves_the_marked_budget_unknown() -> None:
    # GIVEN the marker and a MaxCount from a parameter
    plan = _plan(_pcluster_template({"gpu": 8, "cpu": 0}, gpu_max={"Ref": "GpuNodes"}))
    (fs,) = plan.file_systems
    # THEN the interfaces are known, the node count is not
    assert (fs.efa_connections, fs.within_budget) == (DEPLOY_TIME, None)
    assert fs.efa_clients == ["Cluster/gpu/p5en: ? nodes x 8"]
    assert "S/Cluster/gpu/p5en: max nodes (Ref GpuNodes)" in plan.unknowns


def test_marked_hyperpod_groups_count_against_the_budget() -> None:
    plan = _plan(_hyperpod_template({"gpu": 8, "system": 0}))
    (fs,) = plan.file_systems
    assert (fs.efa_connections, fs.within_budget) == (32, True)
    assert fs.efa_clients == ["HP/gpu: 4 x 8 = 32"]
    assert _plan_group(plan, "/gpu").lustre_efa_interfaces_per_node == 8
    assert _plan_group(plan, "/gpu").efa_interfaces_per_node == "set by SageMaker HyperPod"


def test_marked_hyperpod_groups_over_the_budget_fail_it() -> None:
    plan = _plan(_hyperpod_template({"gpu": 8, "system": 0}, gpu_nodes=200))
    (fs,) = plan.file_systems
    assert (fs.efa_connections, fs.within_budget) == (1600, False)


def test_a_hyperpod_group_whose_node_decides_leaves_the_budget_unknown() -> None:
    # GIVEN the marker's "decided-on-node": a type the catalog lacks, whose node picks its EFA interfaces for LNet
    plan = _plan(_hyperpod_template({"gpu": 8, "system": "decided-on-node"}))
    (fs,) = plan.file_systems
    assert (fs.efa_connections, fs.within_budget) == (DEPLOY_TIME, None)
    assert _plan_group(plan, "/system").lustre_efa_interfaces_per_node == "decided on the node"
    assert "HP/system: ? interfaces (decided on the node)" in fs.efa_clients
    assert "HP/gpu: 4 x 8 = 32" in fs.efa_clients


def test_unmarked_hyperpod_groups_leave_the_budget_unknown() -> None:
    plan = _plan(_hyperpod_template())
    (fs,) = plan.file_systems
    assert (fs.efa_connections, fs.within_budget) == (DEPLOY_TIME, None)
    assert fs.efa_clients == ["HP/gpu: not counted here (checked at synth by the construct)"]
