"""HyperPod Slurm: a Session Manager login command (property and platform output, target
``sagemaker-cluster:<cluster-id>_<group>-<instance-id>``), and CPU groups (controller, login) counted at 0 EFA
connections against the file system's 1,024, so ``fmc plan`` knows the budget."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fmconstructs.cli.plan import plan_assembly
from fmconstructs.eks import GpuEksCluster
from fmconstructs.hyperpod import HyperPodCluster, HyperPodInstanceGroup, HyperPodOrchestrator
from fmconstructs.hyperpod.access import TARGET_PREFIX
from fmconstructs.platform import HyperPodOptions, PlatformStorage, TrainingPlatform
from fmconstructs.storage.sizing import LUSTRE_EFA_METADATA_KEY

from tests.conftest import Scene, new_scene


def _platform(scene: Scene, **options: Any) -> TrainingPlatform:
    return TrainingPlatform(
        scene.stack,
        "Platform",
        vpc=scene.vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        orchestrator=HyperPodOptions(**options),
        storage=PlatformStorage.for_throughput(target_gbytes_per_s=4.6875),
    )


def _output(scene: Scene, name: str) -> dict[str, Any]:
    outputs = scene.template().to_json()["Outputs"]
    found = [o for k, o in outputs.items() if k.startswith(f"Platform{name}")]
    assert len(found) == 1, f"{name}: {sorted(outputs)}"
    return dict(found[0])


def _joined(scene: Scene, value: Any) -> str:
    return json.dumps(scene.stack.resolve(value))


@pytest.fixture(scope="module")
def slurm() -> tuple[Scene, TrainingPlatform]:
    scene = new_scene("HyperPodLogin")
    return scene, _platform(scene)


def test_login_command_output_targets_the_login_group(slurm):
    scene, platform = slurm
    output = _output(scene, "LoginCommand")
    rendered = json.dumps(output["Value"])
    assert "aws ssm start-session" in rendered
    assert f'--target \\"{TARGET_PREFIX}' in rendered
    # <cluster-id>: the last part of the cluster ARN; <group>-<instance-id>: the login group's running node
    assert "Fn::Select" in rendered and "ClusterArn" in rendered
    assert "_login-$(aws sagemaker list-cluster-nodes" in rendered
    assert "InstanceGroupName=='login' && InstanceStatus.Status=='Running'" in rendered
    assert "Session Manager" in output["Description"] and "sbatch -p gpu" in output["Description"]
    assert isinstance(platform.cluster, HyperPodCluster) and platform.cluster.login_command is not None


def test_login_command_on_the_controller_without_a_login_group():
    scene = new_scene("HyperPodLoginController")
    _platform(scene, login_instance_type=None)
    output = _output(scene, "LoginCommand")
    rendered = json.dumps(output["Value"])
    assert "_controller-$(aws sagemaker list-cluster-nodes" in rendered
    assert "controller node" in output["Description"]


def test_no_login_command_with_eks():
    scene = new_scene("HyperPodLoginEks")
    eks_cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc)
    gpu = HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=1)
    cluster = HyperPodCluster(
        scene.stack, "H", vpc=scene.vpc, instance_groups=[gpu], orchestrator=HyperPodOrchestrator.eks(eks_cluster)
    )
    assert cluster.login_command is None


# --- the Lustre EFA budget --------------------------------------------------------------------------------------
def test_cpu_groups_count_zero_lustre_efa_interfaces(slurm):
    scene, platform = slurm
    (resource,) = scene.template().find_resources("AWS::SageMaker::Cluster").values()
    # GIVEN an EFA-enabled file system WHEN the Slurm groups mount it THEN controller and login use TCP (0 interfaces)
    assert resource["Metadata"][LUSTRE_EFA_METADATA_KEY] == {"controller": 0, "login": 0, "gpu": 8}
    assert isinstance(platform.cluster, HyperPodCluster)
    assert platform.cluster.lustre_efa_interfaces == {"gpu": 8}
    controller = platform.cluster.node_bootstraps["controller"].render()
    assert "--lnet-only" not in controller


def test_fmc_plan_knows_the_file_systems_efa_budget(slurm):
    scene, _ = slurm
    assembly = scene.app.synth()
    plan = plan_assembly(assembly.directory)
    (fs,) = plan.file_systems
    assert fs.efa_enabled is True
    assert fs.efa_connections == 16 and fs.within_budget is True
    assert not any("EFA connections of" in u for u in plan.unknowns)


def test_cpu_group_may_still_ask_for_efa():
    # GIVEN a CPU group with an explicit count THEN it is counted (the default 0 is only a default)
    scene = new_scene("HyperPodCpuEfa")
    platform = _platform(scene, login_instance_type=None)
    file_system = platform.file_system
    assert file_system is not None
    groups = [
        HyperPodInstanceGroup(name="ctl", instance_type="c5n.18xlarge", nodes=1, efa_interfaces_for_lustre=1),
        HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=1),
    ]
    cluster = HyperPodCluster(
        scene.stack,
        "Other",
        vpc=scene.vpc,
        subnets=[platform.subnet],
        instance_groups=groups,
        orchestrator=HyperPodOrchestrator.slurm(controller_group="ctl"),
        file_system=file_system,
        efa_security_group=platform.security_group,
    )
    assert cluster.lustre_efa_interfaces == {"ctl": 1, "gpu": 8}
