"""TrainingPlatform(health=PlatformHealth()): node-join checks, the scheduled NCCL check and node remediation, wired
per backend, on by default, off with health=None, replacing nodes only on the explicit opt-in (issue 20)."""

from __future__ import annotations

import json
import re
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match

from fmconstructs.bootstrap import NodeBootstrap
from fmconstructs.errors import FmTypeError, FmValidationError, WarningId
from fmconstructs.health import (
    NcclAlertOptions,
    NcclCheckSpec,
    NodeHealthOptions,
    render_sbatch,
    render_timer_units,
    report_script,
)
from fmconstructs.health.xid import DEFAULT_XID_POLICY, XidClass
from fmconstructs.parallelcluster import ComputeResource, HeadNode, ParallelCluster, SlurmQueue
from fmconstructs.platform import (
    Backend,
    PcsOptions,
    PlatformHealth,
    PlatformObservability,
    PlatformStorage,
    TrainingPlatform,
)
from fmconstructs.platform.health import scrontab_install_commands
from fmconstructs.remediation import Backend as RemediationBackend
from fmconstructs.remediation import RemediationPolicy

from tests.conftest import new_scene, require_tool
from tests.support.platform_health import AMI, STORAGE, Built, _build

IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/nccl-tests:v2.19.6"


@cache
def _default(backend: Backend) -> Built:
    return _build(backend)


@cache
def _off(backend: Backend) -> Built:
    return _build(backend, health=None)


def _steps(bootstrap: NodeBootstrap | None) -> list[str]:
    return [step.name for step in bootstrap.steps] if bootstrap is not None else []


def _step_files(bootstrap: NodeBootstrap, name: str) -> dict[str, tuple[str, int]]:
    (step,) = [s for s in bootstrap.steps if s.name == name]
    return dict(step.files)


def _policy(built: Built) -> dict[str, Any]:
    (function,) = [
        r["Properties"]
        for r in built.template.find_resources("AWS::Lambda::Function").values()
        if "node remediation" in r["Properties"].get("Description", "")
    ]
    return dict(json.loads(function["Environment"]["Variables"]["POLICY"]))


def _remediation_functions(built: Built) -> int:
    return sum(
        "node remediation" in r["Properties"].get("Description", "")
        for r in built.template.find_resources("AWS::Lambda::Function").values()
    )


def _warnings(built: Built, warning: WarningId) -> list[Any]:
    return list(Annotations.from_stack(built.stack).find_warning("*", Match.string_like_regexp(warning.value)))


# --- defaults per backend --------------------------------------------------------------------------------------------
def test_pcs_default_checks_nodes_schedules_nccl_on_the_login_node_and_remediates_in_dry_run():
    built = _default(Backend.PCS)
    platform = built.platform
    assert platform.cluster.node_health == NodeHealthOptions()  # type: ignore[union-attr]
    assert "node-health" in _steps(platform.node_group.bootstrap)
    files = _step_files(platform.login_node_group.bootstrap, "nccl-check")
    timer = files["/etc/systemd/system/fm-nccl-check.service"][0]
    assert "ExecStart=/opt/fmconstructs/nccl/submit.sh /fsx/fmconstructs/nccl/fm-nccl-allreduce.sbatch" in timer
    submit = files["/opt/fmconstructs/nccl/submit.sh"][0]
    assert "/opt/aws/pcs/scheduler/slurm-" in submit and "squeue" in submit  # the PCS Slurm, one run at a time
    assert "/etc/systemd/system/fm-nccl-publish.timer" in files
    # the publish unit also runs the queue probe with the PCS squeue (NcclCheckStale is quiet while deferred)
    publish = files["/etc/systemd/system/fm-nccl-publish.service"][0]
    assert "--probe-queue --squeue /opt/aws/pcs/scheduler/slurm-" in publish and "--partition gpu" in publish
    assert files["/opt/fmconstructs/nccl/nccl_report.py"][0] == report_script()
    sbatch = files["/opt/fmconstructs/nccl/fm-nccl-allreduce.sbatch"][0]
    assert "#SBATCH --partition=gpu" in sbatch
    # the platform's type gives the catalog floor: 0.8 x 487.09 GB/s (2 x p5.48xlarge at 16 GiB)
    assert "--floor-gbytes-per-second 389.672" in sbatch and "--schedule-interval-seconds 86400" in sbatch
    assert platform.nccl_check == NcclCheckSpec(
        nodes=2, gpus_per_node=8, state_dir="/fsx/fmconstructs/nccl", partition="gpu", instance_type="p5.48xlarge"
    )
    assert platform.remediation is not None
    assert platform.remediation.target.backend is RemediationBackend.PCS
    assert _policy(built)["dry_run"] is True


def test_a_new_workspace_gets_the_nccl_rule_group():
    built = _default(Backend.PCS)
    namespaces = [
        r["Properties"]["Data"] for r in built.template.find_resources("AWS::APS::RuleGroupsNamespace").values()
    ]
    assert any("NcclBusBandwidthBelowBaseline" in json.dumps(data) for data in namespaces)


def test_one_xid_policy_moves_an_xid_for_the_checks_the_alerts_and_remediation():
    # issue 29: NodeHealthOptions(xid_policy=...) reaches the node checks and the new workspace's alerts, whose
    # labels carry the class's trigger (reset-xid: the remediation policy reboots)
    tuned = DEFAULT_XID_POLICY.moved([94], to=XidClass.RESET)
    built = _build(Backend.PCS, health=PlatformHealth(node_checks=NodeHealthOptions(xid_policy=tuned)))
    platform = built.platform
    assert platform.cluster.node_health.xid_policy == tuned  # type: ignore[union-attr]
    scripts = [body for body, _ in _step_files(platform.node_group.bootstrap, "node-health").values()]
    assert any('reset=" 46 48 62 64 74 94 95 ' in body for body in scripts)
    assert platform.prometheus_workspace is not None
    rules = [r for g in platform.prometheus_workspace.rule_groups for r in g.rules]
    (reset,) = [r for r in rules if r.name == "GpuCriticalXid" and r.labels.get("xid_class") == "reset"]
    assert "DCGM_FI_DEV_XID_ERRORS == 94 " in reset.expr and reset.labels["fmconstructs_trigger"] == "reset-xid"
    assert "GpuContainedXid" not in {r.name for r in rules}
    assert _policy(built)["actions"]["reset-xid"] == "reboot"


def test_parallelcluster_default_gate_in_the_gpu_bootstrap_nccl_on_the_head_node_by_scrontab():
    built = _default(Backend.PARALLELCLUSTER)
    platform = built.platform
    assert _steps(platform.node_bootstrap) == ["nvme-scratch", "observability", "node-health"]
    head = platform.head_bootstrap
    assert _steps(head) == ["observability", "nccl-check", "node-health-prolog"]
    assert head is not None
    files = _step_files(head, "nccl-check")
    assert "#SCRON --job-name=fm-nccl-allreduce" in files["/opt/fmconstructs/nccl/scrontab"][0]
    assert "--probe-queue --squeue /opt/slurm/bin/squeue" in files["/etc/systemd/system/fm-nccl-publish.service"][0]
    assert "ScronParameters" in built.text  # CustomSlurmSettings: scrontab enabled
    assert platform.remediation is not None
    assert platform.remediation.target.backend is RemediationBackend.PARALLELCLUSTER
    assert platform.remediation.target.cluster == "platform-pc"
    assert _policy(built)["dry_run"] is True


def test_parallelcluster_scrontab_install_reports_its_outcome():
    head = _default(Backend.PARALLELCLUSTER).platform.head_bootstrap
    assert head is not None
    (step,) = [s for s in head.steps if s.name == "nccl-check"]
    text = "\n".join(step.commands)
    assert "fm_nccl_install() {" in text and "for try in $(seq 30)" in text
    assert "FMCONSTRUCTS-DOWNLOAD-FAILED component=nccl-check: " in text
    assert "/var/lib/node_exporter/textfile/fm_bootstrap_nccl.prom" in text


def _scrontab_run(tmp_path: Path, rc: int) -> tuple[subprocess.CompletedProcess[str], str]:
    stub = tmp_path / "scrontab"
    stub.write_text(f'#!/bin/bash\necho "scrontab $*" >>{tmp_path}/calls\nexit {rc}\n')
    stub.chmod(0o755)
    lines = scrontab_install_commands(str(stub), "/x/scrontab", textfile_dir=str(tmp_path), pause_seconds=0, attempts=3)
    script = tmp_path / "step.sh"
    script.write_text("#!/bin/bash\nset -e\n" + "\n".join(lines) + "\necho step-went-on\n")
    run = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    return run, (tmp_path / "fm_bootstrap_nccl.prom").read_text()


def test_a_scrontab_that_is_never_accepted_is_loud_and_the_step_goes_on(tmp_path: Path):
    run, metric = _scrontab_run(tmp_path, 1)
    assert run.returncode == 0 and "step-went-on" in run.stdout  # the head node's later steps still run
    assert run.stderr.startswith("FMCONSTRUCTS-DOWNLOAD-FAILED component=nccl-check: scrontab /x/scrontab (root)")
    assert metric == 'fm_bootstrap_download_failed{component="nccl-check"} 1\n'  # NodeBootstrapDownloadFailed
    assert (tmp_path / "calls").read_text().count("scrontab /x/scrontab") == 3


def test_an_accepted_scrontab_reports_zero(tmp_path: Path):
    run, metric = _scrontab_run(tmp_path, 0)
    assert run.returncode == 0 and run.stderr == ""
    assert metric == 'fm_bootstrap_download_failed{component="nccl-check"} 0\n'


def test_the_scrontab_install_passes_shellcheck(tmp_path: Path):
    shellcheck = require_tool("shellcheck", "shellcheck")
    script = tmp_path / "step.sh"
    script.write_text("#!/bin/bash\nset -e\n" + "\n".join(scrontab_install_commands("/opt/slurm/bin/scrontab", "/x")))
    result = subprocess.run([shellcheck, "-s", "bash", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


def test_eks_default_node_checks_no_nccl_without_image_remediation_on_the_cluster():
    built = _default(Backend.EKS)
    platform = built.platform
    assert platform.node_group.node_checks is True
    assert platform.nccl_check is None
    assert "MPIJob" not in built.text
    assert "NcclBusBandwidthBelowBaseline" not in built.text
    assert platform.remediation is not None
    assert platform.remediation.target.backend is RemediationBackend.EKS


def test_hyperpod_slurm_gets_the_node_checks_without_dcgm_and_sagemaker_remediation():
    built = _default(Backend.HYPERPOD)
    platform = built.platform
    assert platform.nccl_check is None  # HyperPod's InstanceConnectivity deep health check tests the fabric
    cluster = platform.cluster
    assert cluster.node_health == NodeHealthOptions()  # type: ignore[union-attr]
    gpu = cluster.node_bootstraps[platform.node_group.name]  # type: ignore[union-attr]
    assert _steps(gpu)[-1] == "node-health"
    gate = _step_files(gpu, "node-health")["/opt/fmconstructs/health/boot-gate.sh"][0]
    assert "dcgmi diag -r" not in gate  # HyperPod's InstanceStress deep health check runs DCGM level 4
    assert platform.remediation is not None and _remediation_functions(built) == 1
    target = platform.remediation.target
    assert target.backend is RemediationBackend.HYPERPOD
    assert target.cluster == cluster.cluster_name and target.cluster_arn == cluster.cluster_arn  # type: ignore[union-attr]
    sagemaker = sorted(a for a in re.findall(r'"(sagemaker:[A-Za-z]+)"', built.text) if "Cluster" in a)
    assert set(sagemaker) >= {
        "sagemaker:BatchRebootClusterNodes",
        "sagemaker:BatchReplaceClusterNodes",
        "sagemaker:ListClusterNodes",
    }


def test_hyperpod_health_none_renders_no_checks_and_no_handler():
    built = _off(Backend.HYPERPOD)
    assert built.platform.cluster.node_health is None  # type: ignore[union-attr]
    assert built.platform.remediation is None and _remediation_functions(built) == 0


# --- health=None ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", [Backend.PCS, Backend.PARALLELCLUSTER, Backend.EKS], ids=lambda b: b.value)
def test_health_none_turns_everything_off(backend: Backend):
    built = _off(backend)
    platform = built.platform
    assert platform.nccl_check is None and platform.remediation is None
    assert _remediation_functions(built) == 0
    assert "NcclBusBandwidthBelowBaseline" not in built.text
    if backend is Backend.PCS:
        assert platform.cluster.node_health is None  # type: ignore[union-attr]
        assert "node-health" not in _steps(platform.node_group.bootstrap)
        assert _steps(platform.login_node_group.bootstrap).count("nccl-check") == 0
    elif backend is Backend.PARALLELCLUSTER:
        assert _steps(platform.node_bootstrap) == ["nvme-scratch", "observability"]
        assert platform.head_bootstrap is None
        assert "ScronParameters" not in built.text
    else:
        assert platform.node_group.node_checks is False


# --- remediation: dry run unless replace_nodes, only with observability --------------------------------------------
def test_replace_nodes_turns_the_dry_run_off():
    built = _build(Backend.PCS, health=PlatformHealth(replace_nodes=True))
    assert built.platform.remediation is not None and built.platform.remediation.policy.dry_run is False
    assert _policy(built)["dry_run"] is False


def test_replace_nodes_keeps_the_rest_of_the_policy():
    health = PlatformHealth(remediation=RemediationPolicy(max_replacements_per_hour=5), replace_nodes=True)
    policy = health.remediation_policy
    assert policy is not None and policy.dry_run is False and policy.max_replacements_per_hour == 5
    assert PlatformHealth().remediation_policy == RemediationPolicy(dry_run=True)


def test_remediation_only_with_observability():
    built = _build(Backend.PCS, observability=False)
    assert built.platform.remediation is None and _remediation_functions(built) == 0
    # node checks and the NCCL check do not need a workspace
    assert "node-health" in _steps(built.platform.node_group.bootstrap)
    assert built.platform.nccl_check is not None


def test_pcs_without_login_nodes_skips_nccl_and_remediation_with_warnings():
    built = _build(Backend.PCS, options={"login_nodes": 0})
    assert built.platform.nccl_check is None and built.platform.remediation is None
    messages = [str(w.entry.data) for w in _warnings(built, WarningId.PLATFORM_HEALTH_SKIPPED)]
    assert any("NCCL check is off" in m for m in messages)
    assert any("Node remediation is off" in m for m in messages)


# --- the NCCL check per backend ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("nodes", "storage"), [(1, STORAGE), (2, None)], ids=["one-node", "no-storage"])
def test_default_nccl_is_off_where_it_cannot_run(nodes: int, storage: PlatformStorage | None):
    built = _build(Backend.PARALLELCLUSTER, nodes=nodes, storage=storage)
    assert built.platform.nccl_check is None
    assert "nccl-check" not in _steps(built.platform.head_bootstrap)
    assert "ScronParameters" not in built.text


def test_explicit_nccl_spec_takes_the_queue_as_partition():
    spec = NcclCheckSpec(nodes=2, state_dir="/fsx/health/nccl", schedule="0 */6 * * *")
    built = _build(Backend.PARALLELCLUSTER, health=PlatformHealth(nccl=spec))
    assert built.platform.nccl_check == NcclCheckSpec(
        nodes=2, state_dir="/fsx/health/nccl", schedule="0 */6 * * *", partition="gpu", instance_type="p5.48xlarge"
    )
    head = built.platform.head_bootstrap
    assert head is not None
    assert (
        "0 */6 * * * /fsx/health/nccl/fm-nccl-allreduce.sbatch"
        in _step_files(head, "nccl-check")["/opt/fmconstructs/nccl/scrontab"][0]
    )


def test_nccl_off_keeps_node_checks():
    built = _build(Backend.PCS, health=PlatformHealth(nccl=False))
    assert built.platform.nccl_check is None
    assert "nccl-check" not in _steps(built.platform.login_node_group.bootstrap)
    assert "node-health" in _steps(built.platform.node_group.bootstrap)
    assert "NcclBusBandwidthBelowBaseline" not in built.text


def test_eks_with_an_image_adds_the_mpijob_on_the_claim_and_warns():
    built = _build(Backend.EKS, health=PlatformHealth(nccl_image=IMAGE))
    assert built.platform.nccl_check is not None
    # the MPIJob is created by a CronJob from a ConfigMap (tests/health/test_health_eks_nccl.py)
    assert '\\"kind\\":\\"CronJob\\"' in built.text and "MPIJob" in built.text and IMAGE in built.text
    assert _warnings(built, WarningId.PLATFORM_HEALTH_EKS_NCCL)


@pytest.mark.parametrize(
    ("backend", "kwargs", "parameter"),
    [
        (Backend.PCS, {"health": PlatformHealth(nccl_image=IMAGE)}, "health.nccl_image"),
        (Backend.HYPERPOD, {"health": PlatformHealth(nccl=NcclCheckSpec())}, "health.nccl"),
        (Backend.EKS, {"health": PlatformHealth(nccl=NcclCheckSpec())}, "health.nccl"),
        (Backend.PCS, {"health": PlatformHealth(nccl=NcclCheckSpec()), "storage": None}, "health.nccl"),
        (Backend.PCS, {"health": PlatformHealth(nccl=NcclCheckSpec()), "nodes": 1}, "health.nccl"),
        (Backend.EKS, {"health": PlatformHealth(nccl_image=IMAGE), "storage": None}, "health.nccl"),
        (Backend.PCS, {"health": PlatformHealth(nccl=NcclCheckSpec(gpus_per_node=16))}, "health.nccl.gpus_per_node"),
        (Backend.PCS, {"health": PlatformHealth(nccl=NcclCheckSpec(nodes=4))}, "health.nccl.nodes"),
        (
            Backend.PCS,
            {"health": PlatformHealth(nccl=NcclCheckSpec(state_dir="/scratch/nccl"))},
            "health.nccl.state_dir",
        ),
    ],
    ids=[
        "image-not-eks",
        "hyperpod-spec",
        "eks-spec-no-image",
        "spec-no-storage",
        "spec-one-node",
        "eks-image-no-storage",
        "more-ranks-than-gpus",
        "more-nodes-than-platform",
        "state-dir-off-the-file-system",
    ],
)
def test_nccl_refused_where_it_cannot_run(backend: Backend, kwargs: dict[str, Any], parameter: str):
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be"):
        _build(backend, **kwargs)


def test_refused_platform_leaves_nothing_in_the_tree():
    scene = new_scene("Refused")
    with pytest.raises(FmValidationError):
        TrainingPlatform(
            scene.stack,
            "Platform",
            vpc=scene.vpc,
            instance_type="p5.48xlarge",
            nodes=2,
            orchestrator=PcsOptions(ami=AMI),
            health=PlatformHealth(nccl=NcclCheckSpec()),
        )
    assert scene.stack.node.try_find_child("Platform") is None


# --- bad input ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "error", "parameter"),
    [
        ({"node_checks": "yes"}, FmTypeError, "node_checks"),
        ({"nccl": "daily"}, FmTypeError, "nccl"),
        ({"nccl_image": "nccl-tests"}, FmValidationError, "image"),
        ({"nccl_image": "public.ecr.aws/hpc-cloud/nccl-tests:latest"}, FmValidationError, "image"),
        ({"nccl_image": IMAGE, "nccl": False}, FmValidationError, "nccl_image"),
        ({"nccl_alerts": None}, FmTypeError, "nccl_alerts"),
        ({"remediation": "dry-run"}, FmTypeError, "remediation"),
        ({"remediation": RemediationPolicy(dry_run=False)}, FmValidationError, "remediation.dry_run"),
        ({"remediation": None, "replace_nodes": True}, FmValidationError, "replace_nodes"),
        ({"replace_nodes": "yes"}, FmTypeError, "replace_nodes"),
    ],
    ids=[
        "node-checks-str",
        "nccl-str",
        "image-unpinned",
        "image-latest",
        "image-without-nccl",
        "alerts-none",
        "remediation-str",
        "replacing-policy-without-opt-in",
        "replace-without-policy",
        "replace-str",
    ],
)
def test_platform_health_refuses_bad_input(kwargs: dict[str, Any], error: type[Exception], parameter: str):
    with pytest.raises(error, match=rf"^{parameter} must be"):
        PlatformHealth(**kwargs)


def test_platform_refuses_a_health_of_another_type():
    scene = new_scene("BadHealth")
    with pytest.raises(FmTypeError, match=r"^health must be"):
        TrainingPlatform(
            scene.stack,
            "Platform",
            vpc=scene.vpc,
            instance_type="p5.48xlarge",
            nodes=2,
            orchestrator=PcsOptions(ami=AMI),
            health=NodeHealthOptions(),  # type: ignore[arg-type]
        )


def test_health_accepts_alert_options_and_node_options():
    health = PlatformHealth(
        node_checks=NodeHealthOptions(dcgm_level=None), nccl_alerts=NcclAlertOptions(drop_percent=15)
    )
    built = _build(Backend.PCS, health=health)
    assert built.platform.cluster.node_health == NodeHealthOptions(dcgm_level=None)  # type: ignore[union-attr]
    assert "15% below" in built.text


# --- what the wiring needed below the platform ---------------------------------------------------------------------
def test_sbatch_lets_root_run_mpirun_and_timer_takes_the_sbatch_path():
    spec = NcclCheckSpec()
    assert "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n" in render_sbatch(spec)
    units = render_timer_units(spec, sbatch="/opt/x/bin/sbatch")
    assert "ExecStart=/opt/x/bin/sbatch " in units["fm-nccl-check.service"]
    with pytest.raises(FmValidationError, match=r"^sbatch must be"):
        render_timer_units(spec, sbatch="sbatch")


def test_parallelcluster_node_bootstrap_takes_one_queue():
    scene = new_scene("Pc")
    subnet = scene.vpc.private_subnets[0]
    queues = [
        SlurmQueue(
            name=name, subnets=[subnet], compute_resources=[ComputeResource(name="p5", instance_type="p5.48xlarge")]
        )
        for name in ("a", "b")
    ]
    cluster = ParallelCluster(
        scene.stack,
        "Cluster",
        cluster_name="pc",
        head_node=HeadNode(instance_type="c7i.2xlarge", subnet=subnet),
        queues=queues,
    )
    with pytest.raises(FmValidationError, match=r"^queues must be exactly one queue"):
        cluster.enable_node_health(NodeHealthOptions(), node_bootstrap=NodeBootstrap(scene.stack, "B"))


def test_a_stack_without_file_assets_skips_pcs_node_checks_and_remediation_with_warnings():
    """A StackSetStack-like stack: the GPU set-up goes inline (the checks would pass EC2's 16 KB) and the handler's
    Lambda code is an asset nobody publishes."""
    from aws_cdk import aws_ec2 as ec2

    from tests.conftest import ENV, new_app

    stack = cdk.Stack(new_app(), "Bare", env=ENV, synthesizer=cdk.BootstraplessSynthesizer())
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
    )
    platform = TrainingPlatform(
        stack,
        "Platform",
        vpc=vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        orchestrator=PcsOptions(ami=AMI),
        observability=PlatformObservability.new(grafana=False),
    )
    assert platform.cluster.node_health is None and platform.remediation is None  # type: ignore[union-attr]
    built = Built(platform, stack)
    messages = [str(w.entry.data) for w in _warnings(built, WarningId.PLATFORM_HEALTH_SKIPPED)]
    assert any("Node-join checks are off" in m for m in messages)
    assert any("Node remediation is off" in m for m in messages)
    assert _remediation_functions(built) == 0
