"""The ``fmc`` command runs without aws_cdk: no jsii, no Node.js (a CI job that only downloaded ``cdk.out``).

Importing aws_cdk starts the jsii Node.js runtime. The package ``__init__`` files of ``fmconstructs``, ``networking``
and ``storage`` resolve their exports lazily (PEP 562), and the light modules the command uses import aws_cdk only
where they build CDK objects; library users see the same names as before.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import fmconstructs
from fmconstructs.catalog import get_instance_spec
from fmconstructs.storage.sizing import size_for_checkpoint

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
HEAVY = ("aws_cdk", "constructs", "jsii")
LAZY_PACKAGES = ("fmconstructs", "fmconstructs.networking", "fmconstructs.serving", "fmconstructs.storage")

_REPORT_HEAVY = "import sys; print(sorted({m.split('.')[0] for m in sys.modules} & {'aws_cdk', 'constructs', 'jsii'}))"


def _python(code: str, *, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, check=False
    )


def _no_node_env() -> dict[str, str]:
    """The environment with PATH = the virtual environment's bin only: no ``node`` to start."""
    path = str(BIN)
    assert shutil.which("node", path=path) is None, f"{path} holds a node executable"
    env = {key: value for key, value in os.environ.items() if not key.startswith("JSII_")}
    env["PATH"] = path
    env["PYTHONPATH"] = str(ROOT)  # this tree's fmconstructs, also for the fmc console script
    return env


def _assembly(root: Path, *, capacity_block: bool = True) -> Path:
    """A small hand-written cloud assembly: 4 p5.48xlarge (on a Capacity Block, or On-Demand), an EFA-enabled
    PERSISTENT_2 file system."""
    efa = get_instance_spec("p5.48xlarge").maximum_efa_interfaces
    interfaces: list[dict[str, Any]] = [{"NetworkCardIndex": 0, "DeviceIndex": 0, "InterfaceType": "interface"}]
    interfaces += [
        {"NetworkCardIndex": i, "DeviceIndex": 0 if i else 1, "InterfaceType": "efa-only"} for i in range(efa)
    ]
    data: dict[str, Any] = {"InstanceType": "p5.48xlarge", "NetworkInterfaces": interfaces}
    if capacity_block:
        target = {"CapacityReservationId": "cr-0123456789abcdef0"}
        data["CapacityReservationSpecification"] = {"CapacityReservationTarget": target}
        data["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
    template = {
        "Resources": {
            "Lt": {"Type": "AWS::EC2::LaunchTemplate", "Properties": {"LaunchTemplateData": data}},
            "Fleet": {
                "Type": "AWS::AutoScaling::AutoScalingGroup",
                "Properties": {"MinSize": "4", "MaxSize": "4", "LaunchTemplate": {"LaunchTemplateId": {"Ref": "Lt"}}},
            },
            "Fs": {
                "Type": "AWS::FSx::FileSystem",
                "Properties": {
                    "FileSystemType": "LUSTRE",
                    "StorageCapacity": 4800,
                    "LustreConfiguration": {
                        "DeploymentType": "PERSISTENT_2",
                        "PerUnitStorageThroughput": 1000,
                        "EfaEnabled": True,
                    },
                },
            },
        }
    }
    out = root / "cdk.out"
    out.mkdir()
    (out / "Fm.template.json").write_text(json.dumps(template))
    manifest = {
        "version": "48.0.0",
        "artifacts": {
            "Fm": {
                "type": "aws:cloudformation:stack",
                "environment": "aws://123456789012/us-east-1",
                "properties": {"templateFile": "Fm.template.json"},
            }
        },
    }
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


@pytest.mark.parametrize(
    "statement",
    [
        "import fmconstructs.cli.main",
        "import fmconstructs.cli",
        "import fmconstructs",
        "import fmconstructs.catalog, fmconstructs.capacity, fmconstructs.preflight",
        "import fmconstructs.networking.interfaces, fmconstructs.storage.sizing",
        "from fmconstructs.storage import MAX_EFA_CONNECTIONS, size_for_checkpoint",
        "from fmconstructs import CATALOG, InstanceSpec, FmValidationError, plan_network_interfaces, LustreSizing",
    ],
)
def test_light_imports_leave_out_aws_cdk_constructs_and_jsii(statement: str) -> None:
    # GIVEN a fresh interpreter WHEN only the command (or a light module) is imported
    proc = _python(f"{statement}\n{_REPORT_HEAVY}")
    # THEN neither aws_cdk, constructs nor jsii is loaded
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]", proc.stdout


def test_fmc_plan_without_an_app_runs_without_node() -> None:
    env = _no_node_env()
    args = ["plan", "--instance-type", "p5en.48xlarge", "--nodes", "16"]
    args += ["--checkpoint-bytes", "2e12", "--checkpoint-seconds", "60", "--json"]
    proc = subprocess.run(
        [str(BIN / "fmc"), *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr == ""  # no Node.js end-of-life banner, no jsii warning
    data = json.loads(proc.stdout)
    (group,) = data["node_groups"]
    assert group["gpus_total"] == 16 * get_instance_spec("p5en.48xlarge").gpu.count == 128
    (fs,) = data["file_systems"]
    # EFA-enabled by default, as TrainingPlatform sizes it
    assert fs["storage_capacity_gib"] == size_for_checkpoint(2e12, 60, efa_enabled=True).storage_capacity_gib


def test_fmc_plan_of_an_assembly_runs_without_node(tmp_path: Path) -> None:
    out = _assembly(tmp_path)
    env = _no_node_env()
    proc = subprocess.run(
        [sys.executable, "-m", "fmconstructs.cli", "plan", str(out), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    (group,) = data["node_groups"]
    assert (group["max_nodes"], group["gpus_total"]) == (4, 32)
    assert group["capacity"] == "Capacity Block"
    (fs,) = data["file_systems"]
    assert fs["efa_enabled"] is True and fs["efa_connection_limit"] == 1024
    assert fs["storage_capacity_gib"] == 4800


def test_fmc_preflight_runs_without_node(tmp_path: Path) -> None:
    # GIVEN an On-Demand assembly (moto has no DescribeCapacityReservations) and moto standing in for EC2 and Service
    # Quotas, in an interpreter with no node on PATH
    out = _assembly(tmp_path, capacity_block=False)
    report = tmp_path / "report.json"
    script = textwrap.dedent(
        f"""
        import json, sys
        from moto import mock_aws
        from fmconstructs.cli.main import main

        with mock_aws():
            try:
                main(["preflight", {str(out)!r}, "--region", "us-east-1", "--json"])
                code = 0
            except SystemExit as exit:
                code = exit.code
        heavy = sorted({{m.split(".")[0] for m in sys.modules}} & {{"aws_cdk", "constructs", "jsii"}})
        with open({str(report)!r}, "w") as f:
            json.dump({{"code": code, "heavy": heavy}}, f)
        """
    )
    env = _no_node_env()
    env.update(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_EC2_METADATA_DISABLED="true",
    )
    proc = _python(script, env=env)
    # WHEN it runs THEN the checks are printed and aws_cdk was never imported
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(report.read_text())
    assert result["heavy"] == []
    assert result["code"] in (0, 1, None), proc.stdout[-2000:]
    checks = json.loads(proc.stdout)["checks"]
    assert {c["check"] for c in checks} >= {"offering", "FSx EFA budget"}


@pytest.mark.parametrize(
    ("package", "names"),
    [
        ("fmconstructs", ("LustreFileSystem", "PcsCluster", "GpuLaunchTemplate", "CATALOG", "NodeBootstrap")),
        ("fmconstructs", ("EfaSecurityGroup", "GpuNodeImage", "CapacityBlock", "WarningId", "size_for_checkpoint")),
        ("fmconstructs.networking", ("EfaSecurityGroup", "GpuClusterEndpoints", "ClusterPlacementGroup")),
        ("fmconstructs.storage", ("LustreFileSystem", "DataRepositoryBucket", "EksStaticVolume", "LustreSizing")),
    ],
)
def test_exports_still_resolve(package: str, names: tuple[str, ...]) -> None:
    module = importlib.import_module(package)
    for name in names:
        assert name in module.__all__
        value = getattr(module, name)
        assert value is not None
        assert name in vars(module)  # resolved once, then an ordinary attribute


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_export_resolves_and_dir_lists_all(package: str) -> None:
    module = importlib.import_module(package)
    assert set(module.__all__) <= set(dir(module))
    for name in module.__all__:
        assert getattr(module, name) is not None


def test_from_import_and_submodules_work_as_before() -> None:
    from fmconstructs import LustreFileSystem
    from fmconstructs.storage import MAX_EFA_CONNECTIONS as from_storage
    from fmconstructs.storage.lustre import MAX_EFA_CONNECTIONS as from_lustre
    from fmconstructs.storage.lustre import LustreFileSystem as Lustre

    assert LustreFileSystem is Lustre
    assert from_storage == from_lustre == 1024
    # Submodules the eager package imported on its way stay reachable as attributes.
    assert fmconstructs.observability.PrometheusWorkspace is not None
    assert fmconstructs.pcs.PcsCluster is fmconstructs.PcsCluster
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = fmconstructs.no_such_name  # type: ignore[attr-defined]


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_type_checking_imports_match_the_lazy_table(package: str) -> None:
    """The ``if TYPE_CHECKING:`` imports (what mypy and IDEs see) name the same exports, from the same submodules,
    as the table the package resolves at run time, and both cover ``__all__``."""
    module = importlib.import_module(package)
    tree = ast.parse(Path(module.__file__ or "").read_text())
    (block,) = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    static: dict[str, tuple[str, ...]] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom)
        static["." * node.level + (node.module or "")] = tuple(alias.name for alias in node.names)
    assert static == module._EXPORTS
    assert sorted(name for names in static.values() for name in names) == sorted(module.__all__)
