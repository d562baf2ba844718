"""Every public dataclass's direct constructor refuses what its factory methods refuse (issue 18 section 5).

GIVEN each public dataclass of fmconstructs (those a package's ``__all__`` exports, plus documented ones listed in
:data:`EXTRA_PUBLIC`), WHEN it is built directly with a bad or contradictory value, THEN it raises
:class:`FmValidationError` (a wrong type: :class:`FmTypeError`, a subclass) naming the field; and every factory
method's result survives the direct constructor (``dataclasses.replace``) unchanged.

The meta-tests fail when a new public dataclass (or a new factory classmethod) appears without a row here: add bad
inputs to :data:`BAD`, or a reason to :data:`RESULT_TYPES` when users never build it; add each factory to
:data:`FACTORIES`.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from collections.abc import Callable
from functools import cached_property
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_s3 as s3

import fmconstructs
from fmconstructs.errors import FmTypeError, FmValidationError

from tests.conftest import ENV, new_app

ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/my-plan-abcdef"


def _public_dataclasses() -> dict[str, type]:
    """``module.QualName`` -> class, for every dataclass named in the ``__all__`` of fmconstructs or of one of its
    public modules (not the ``fmc`` CLI, which never takes user props, nor Lambda handler code)."""
    modules = [fmconstructs]
    for info in pkgutil.walk_packages(fmconstructs.__path__, "fmconstructs."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts[1:]) or parts[1] == "cli" or "handler" in parts:
            continue
        modules.append(importlib.import_module(info.name))
    found: dict[str, type] = {}
    for module in modules:
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            if not name.startswith("_") and inspect.isclass(obj) and dataclasses.is_dataclass(obj):
                found[_key(obj)] = obj
    for extra in EXTRA_PUBLIC:
        module_name, _, qualname = extra.rpartition(".")
        found[extra] = getattr(importlib.import_module(module_name), qualname)
    return found


def _key(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


#: Public dataclasses documented (in another class's docstring) but exported by no ``__all__``.
EXTRA_PUBLIC = ("fmconstructs.hyperpod.eks_dependencies.HyperPodDependenciesChart",)

#: Dataclasses whose constructor takes no argument (nothing to refuse).
NO_ARGUMENTS = ("fmconstructs.capacity.OnDemand",)

#: Dataclasses users receive, never build: what a method returned or a parser read (no bad-input rows needed).
RESULT_TYPES: dict[str, str] = {
    "fmconstructs.platform.elastic.ElasticPool": "what add_elastic_pool made (manifest, name, labels)",
    "fmconstructs.platform.backends._base.BackendResult": "what a platform backend built (TrainingPlatform's parts)",
    "fmconstructs.platform.backends._base.PlatformChoices": "the checked platform choices TrainingPlatform passes on",
    "fmconstructs.platform.backends._base.Unsupported": "a backend's declaration, read by TrainingPlatform",
    "fmconstructs.serving.sizing.ServingLayout": "serving_layout()/check_model_fits() result (inputs checked there)",
    "fmconstructs.bootstrap.node_bootstrap.BootstrapStep": "NodeBootstrap.steps, built by its add_* methods",
    "fmconstructs.bootstrap.node_bootstrap.ScriptAction": "NodeBootstrap.script_action() result",
    "fmconstructs.capacity_events.scaling.BlockScalingTarget": "built from a node group by scaling_target()",
    "fmconstructs.catalog.InstanceCatalog": "the registry (CATALOG); InstanceSpec rows are validated",
    "fmconstructs.budgets.TemplateUsage": "measure_template() result (a stack as measured)",
    "fmconstructs.health.xid.XidSource": "a row of XID_SOURCES (NVIDIA's catalog); users tune XidPolicy",
    "fmconstructs.eks.cluster.GpuAddons": "GpuEksCluster.add_gpu_addons() result",
    "fmconstructs.eks.node_group.LustreClient": "GpuNodeGroup.add_lustre_client() result",
    "fmconstructs.storage.lustre_clients.LustreClientPlan": "plan_lustre_client() result (inputs checked there)",
    "fmconstructs.pcs.health.PcsNodeHealthStep": "pcs_node_health_step() result, installed by PcsGpuNodeGroup",
    "fmconstructs.topology.slurm.InstanceTopology": "parse_instance_topology() result (a DescribeInstanceTopology row)",
    "fmconstructs.health.nccl_report.NcclResult": "parse of an nccl-tests report",
    "fmconstructs.health.nccl_report.SizeResult": "one row of a parsed nccl-tests report",
    "fmconstructs.hyperpod.health.ClusterHealth": "read from the SageMaker API by the health reader",
    "fmconstructs.hyperpod.health.GroupHealth": "read from the SageMaker API by the health reader",
    "fmconstructs.hyperpod.health.NodeHealth": "read from the SageMaker API by the health reader",
    "fmconstructs.networking.interfaces.InterfaceLayout": "plan_network_interfaces() result",
    "fmconstructs.networking.interfaces.PlannedInterface": "one interface of plan_network_interfaces()",
    "fmconstructs.observability.dashboards.Dashboard": "loaded from the shipped dashboard JSON files",
    "fmconstructs.pcs.slurm.ControllerLimits": "the CONTROLLER_SIZE_LIMITS table",
}


class Ctx:
    """Constructs some rows need, built on first use (one stack for the module)."""

    def __init__(self) -> None:
        self.stack = cdk.Stack(new_app(), "DataclassConstructors", env=ENV)

    @cached_property
    def vpc(self) -> ec2.IVpc:
        return ec2.Vpc.from_vpc_attributes(
            self.stack,
            "Vpc",
            vpc_id="vpc-0123456789abcdef0",
            availability_zones=["us-east-1a", "us-east-1b"],
            private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
        )

    @cached_property
    def eks_cluster(self) -> Any:
        from fmconstructs.eks import GpuEksCluster

        return GpuEksCluster(self.stack, "Eks", vpc=self.vpc, system_node_group=None)

    @cached_property
    def bucket(self) -> s3.IBucket:
        return s3.Bucket.from_bucket_name(self.stack, "Bucket", "my-mirror-bucket")

    @cached_property
    def repository(self) -> ecr.IRepository:
        return ecr.Repository.from_repository_name(self.stack, "Repo", "charts/hyperpod-helm-chart")

    @cached_property
    def prometheus(self) -> Any:
        from fmconstructs.observability import PrometheusWorkspace

        return PrometheusWorkspace(self.stack, "Prom")


@pytest.fixture(scope="module")
def ctx() -> Ctx:
    return Ctx()


Row = Callable[[Ctx], object]


# --- bad direct-constructor inputs: class -> [(id, build)] ---------------------------------------------------------
# Each build must raise FmValidationError (FmTypeError for a wrong type). Rows for the classes issue 18 named first.


def _m(path: str) -> Any:
    module_name, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module_name), name)


def _enum(path: str, member: str) -> Any:
    return getattr(_m(path), member)


HPC = "fmconstructs.hyperpod.types.HyperPodCapacity"
PIH = "fmconstructs.pcs.instance_health.PcsInstanceHealthChecks"
PHM = "fmconstructs.pcs.instance_health.PcsHealthMonitoring"
PRA = "fmconstructs.pcs.instance_health.PcsRepairAction"
PLS = "fmconstructs.pcs.instance_health.PcsLifecycleScript"
PNL = "fmconstructs.pcs.instance_health.PcsNodeLifecycleActions"
HPO = "fmconstructs.hyperpod.orchestrator.HyperPodOrchestrator"
HPT = "fmconstructs.hyperpod.instance_group_options.KubernetesTaint"
HPC_TYPE = "fmconstructs.hyperpod.instance_group_options.CapacityType"
HPT_EFFECT = "fmconstructs.hyperpod.instance_group_options.TaintEffect"
HPK = "fmconstructs.hyperpod.instance_group_options.HyperPodKubernetesConfig"
HPB = "fmconstructs.hyperpod.instance_group_options.UpdateBatchSize"
HPB_TYPE = "fmconstructs.hyperpod.instance_group_options.BatchSizeType"
HPU = "fmconstructs.hyperpod.instance_group_options.HyperPodScheduledUpdate"
HPA = "fmconstructs.hyperpod.provisioning.HyperPodAutoScaling"
HPTS = "fmconstructs.hyperpod.provisioning.TieredCheckpointing"
KIND = "fmconstructs.hyperpod.orchestrator.OrchestratorKind"
LMC = "fmconstructs.storage.lustre_options.LustreMetadataConfiguration"
LMM = "fmconstructs.storage.lustre_options.LustreMetadataMode"
EFA = "fmconstructs.storage.lustre_efa.EfaClientGroup"
RT = "fmconstructs.remediation.policy.RemediationTarget"
BACKEND = "fmconstructs.remediation.policy.Backend"
SLURM_CONF = "fmconstructs.hyperpod.types.SlurmConfiguration"
SLURM_STRATEGY = "fmconstructs.hyperpod.types.SlurmConfigStrategy"

NHO = "fmconstructs.health.options.NodeHealthOptions"
PH = "fmconstructs.platform.health.PlatformHealth"

SSP = "fmconstructs.compute.slurm_scripts.SlurmScriptPiece"
SSD = "fmconstructs.compute.slurm_scripts.SlurmScriptDirs"
_PROLOG = "fmconstructs.compute.slurm_scripts.SlurmHook"

KRT = "fmconstructs.eks.karpenter_manifests.CapacityReservationTerm"
KND = "fmconstructs.eks.karpenter_manifests.NodePoolDisruption"

SAT = "fmconstructs.serving.observability.ServingAlertThresholds"
MW = "fmconstructs.serving.weights.ModelWeights"
_WS = "fmconstructs.serving.weights.WeightsSource"

BAD: dict[str, list[tuple[str, Row]]] = {
    KRT: [
        ("nothing-selected", lambda c: _m(KRT)()),
        ("bad-id", lambda c: _m(KRT)(id="r-0123")),
        ("id-with-tags", lambda c: _m(KRT)(id="cr-0123", tags={"k": "v"})),
        ("empty-tag-value", lambda c: _m(KRT)(tags={"k": ""})),
        ("bad-owner", lambda c: _m(KRT)(tags={"k": "v"}, owner_id="12")),
        ("bad-match-criteria", lambda c: _m(KRT)(instance_match_criteria="closed")),
    ],
    KND: [
        ("policy-str", lambda c: _m(KND)(consolidation_policy="WhenEmpty")),
        ("bad-duration", lambda c: _m(KND)(consolidate_after="10 minutes")),
        ("bad-expiry", lambda c: _m(KND)(expire_after="30d")),
        ("budget-over-100", lambda c: _m(KND)(budget_nodes="110%")),
    ],
    SAT: [
        ("ttft-zero", lambda c: _m(SAT)(ttft_p95_seconds=0)),
        ("ttft-str", lambda c: _m(SAT)(ttft_p95_seconds="2")),
        ("queue-zero", lambda c: _m(SAT)(queue_waiting_requests=0)),
        ("restarts-fraction", lambda c: _m(SAT)(pod_restarts=1.5)),
        ("bad-duration", lambda c: _m(SAT)(queue_for="5 minutes")),
        ("zero-window", lambda c: _m(SAT)(restart_window="0m")),
    ],
    MW: [
        ("prefix-with-dotdot", lambda c: _m(MW)(_enum(_WS, "S3"), bucket=c.bucket, prefix="models/../x")),
        ("s3-without-bucket", lambda c: _m(MW)(_enum(_WS, "S3"), prefix="models/")),
        ("s3-with-model-id", lambda c: _m(MW)(_enum(_WS, "S3"), bucket=c.bucket, prefix="m/", model_id="o/m")),
        ("source-as-str", lambda c: _m(MW)("s3", bucket=c.bucket, prefix="m/")),
        ("bad-model-id", lambda c: _m(MW)(_enum(_WS, "HUGGING_FACE"), model_id="not a model")),
        ("fsx-without-file-system", lambda c: _m(MW)(_enum(_WS, "FSX"), path="checkpoints")),
    ],
    SSP: [
        ("name-without-order", lambda c: _m(SSP)(hook=_enum(_PROLOG, "PROLOG"), name="x.sh", text="#!/bin/sh\n")),
        ("text-without-shebang", lambda c: _m(SSP)(hook=_enum(_PROLOG, "PROLOG"), name="20-x.sh", text="exit 0")),
        ("hook-as-str", lambda c: _m(SSP)(hook="Prolog", name="20-x.sh", text="#!/bin/sh\n")),
    ],
    SSD: [
        ("relative-dir", lambda c: _m(SSD)(prolog_dir="prolog.d", epilog_dir="/e")),
        ("same-dirs", lambda c: _m(SSD)(prolog_dir="/p", epilog_dir="/p")),
    ],
    PH: [
        ("node-checks-not-options", lambda c: _m(PH)(node_checks=True)),
        ("nccl-not-spec", lambda c: _m(PH)(nccl="daily")),
        ("nccl-image-latest", lambda c: _m(PH)(nccl_image="example.com/nccl-tests:latest")),
        ("replace-without-remediation", lambda c: _m(PH)(remediation=None, replace_nodes=True)),
        ("replace-not-bool", lambda c: _m(PH)(replace_nodes="yes")),
    ],
    NHO: [
        ("enabled-not-bool", lambda c: _m(NHO)(enabled="yes")),
        ("dcgm-level-5", lambda c: _m(NHO)(dcgm_level=5)),
        ("prolog-checks-not-bool", lambda c: _m(NHO)(prolog_checks=1)),
        ("prolog-budget-0", lambda c: _m(NHO)(prolog_budget_seconds=0)),
        ("prolog-budget-too-long", lambda c: _m(NHO)(prolog_budget_seconds=3600)),
    ],
    HPC: [
        ("type-without-arn", lambda c: _m(HPC)(training_plan_instance_type="ml.p5.48xlarge")),
        ("count-without-arn", lambda c: _m(HPC)(training_plan_instance_count=2)),
        ("bad-arn", lambda c: _m(HPC)(training_plan_arn="arn:aws:sagemaker:us-east-1:1:training-plan/x")),
        ("arn-not-str", lambda c: _m(HPC)(training_plan_arn=42)),
        ("unknown-type", lambda c: _m(HPC)(training_plan_arn=ARN, training_plan_instance_type="p9.bogus")),
        ("zero-count", lambda c: _m(HPC)(training_plan_arn=ARN, training_plan_instance_count=0)),
        ("count-not-int", lambda c: _m(HPC)(training_plan_arn=ARN, training_plan_instance_count="2")),
        ("spot-with-plan", lambda c: _m(HPC)(training_plan_arn=ARN, capacity_type=_enum(HPC_TYPE, "SPOT"))),
        ("capacity-type-str", lambda c: _m(HPC)(capacity_type="Spot")),
    ],
    HPO: [
        ("kind-str", lambda c: _m(HPO)("slurm", "controller")),
        ("slurm-without-controller", lambda c: _m(HPO)(_enum(KIND, "SLURM"))),
        ("slurm-bad-controller", lambda c: _m(HPO)(_enum(KIND, "SLURM"), "-bad-")),
        ("slurm-bad-login", lambda c: _m(HPO)(_enum(KIND, "SLURM"), "controller", login_group="a_b")),
        (
            "slurm-configuration-str",
            lambda c: _m(HPO)(_enum(KIND, "SLURM"), "controller", slurm_configuration="api"),
        ),
        (
            "strategy-with-lifecycle-scripts",
            lambda c: _m(HPO)(
                _enum(KIND, "SLURM"),
                "controller",
                slurm_configuration=_enum(SLURM_CONF, "LIFECYCLE_SCRIPTS"),
                slurm_config_strategy=_enum(SLURM_STRATEGY, "MANAGED"),
            ),
        ),
        ("slurm-with-eks-cluster", lambda c: _m(HPO)(_enum(KIND, "SLURM"), "controller", eks_cluster=c.eks_cluster)),
        ("eks-without-cluster", lambda c: _m(HPO)(_enum(KIND, "EKS"))),
        ("eks-cluster-not-construct", lambda c: _m(HPO)(_enum(KIND, "EKS"), eks_cluster="arn:aws:eks:x")),
        ("eks-with-controller", lambda c: _m(HPO)(_enum(KIND, "EKS"), "controller", eks_cluster=c.eks_cluster)),
        (
            "eks-with-slurm-configuration",
            lambda c: _m(HPO)(
                _enum(KIND, "EKS"), eks_cluster=c.eks_cluster, slurm_configuration=_enum(SLURM_CONF, "API")
            ),
        ),
    ],
    LMC: [
        ("mode-str", lambda c: _m(LMC)("AUTOMATIC")),
        ("automatic-with-iops", lambda c: _m(LMC)(_enum(LMM, "AUTOMATIC"), 3000)),
        ("user-provisioned-without-iops", lambda c: _m(LMC)(_enum(LMM, "USER_PROVISIONED"))),
        ("iops-not-a-tier", lambda c: _m(LMC)(_enum(LMM, "USER_PROVISIONED"), 2000)),
        ("iops-too-high", lambda c: _m(LMC)(_enum(LMM, "USER_PROVISIONED"), 204000)),
        ("iops-str", lambda c: _m(LMC)(_enum(LMM, "USER_PROVISIONED"), "3000")),
    ],
    EFA: [
        ("empty-path", lambda c: _m(EFA)("", 4, 8)),
        ("path-not-str", lambda c: _m(EFA)(None, 4, 8)),
        ("negative-nodes", lambda c: _m(EFA)("Stack/P5", -1, 8)),
        ("fractional-interfaces", lambda c: _m(EFA)("Stack/P5", 4, 2.5)),
        ("nodes-str", lambda c: _m(EFA)("Stack/P5", "4", 8)),
    ],
    RT: [
        ("backend-str", lambda c: _m(RT)("pcs", "pcs_abc", "login", ("compute",))),
        ("pcs-without-login", lambda c: _m(RT)(_enum(BACKEND, "PCS"), "pcs_abc", compute_node_group_ids=("a",))),
        ("pcs-without-compute", lambda c: _m(RT)(_enum(BACKEND, "PCS"), "pcs_abc", "login")),
        ("pcs-login-in-compute", lambda c: _m(RT)(_enum(BACKEND, "PCS"), "pcs_abc", "login", ("login",))),
        ("pcs-compute-str", lambda c: _m(RT)(_enum(BACKEND, "PCS"), "pcs_abc", "login", "compute")),
        ("pcs-bad-cluster", lambda c: _m(RT)(_enum(BACKEND, "PCS"), "pcs abc", "login", ("compute",))),
        ("pcluster-bad-name", lambda c: _m(RT)(_enum(BACKEND, "PARALLELCLUSTER"), "9-starts-with-digit")),
        ("pcluster-with-login", lambda c: _m(RT)(_enum(BACKEND, "PARALLELCLUSTER"), "cluster", "login")),
        ("asg-empty-name", lambda c: _m(RT)(_enum(BACKEND, "AUTO_SCALING"), "")),
        ("asg-with-compute", lambda c: _m(RT)(_enum(BACKEND, "AUTO_SCALING"), "group", None, ("a",))),
        ("asg-with-eks-cluster", lambda c: _m(RT)(_enum(BACKEND, "AUTO_SCALING"), "group", eks_cluster=c.bucket)),
        ("eks-without-cluster", lambda c: _m(RT)(_enum(BACKEND, "EKS"), "cluster")),
        ("eks-cluster-wrong-type", lambda c: _m(RT)(_enum(BACKEND, "EKS"), "cluster", eks_cluster=c.bucket)),
    ],
    "fmconstructs.eks.addons.HelmChartPin": [
        ("empty-chart", lambda c: _m("fmconstructs.eks.addons.HelmChartPin")("", "https://x", "1.0", "ns", "rel")),
        ("version-int", lambda c: _m("fmconstructs.eks.addons.HelmChartPin")("c", "https://x", 1, "ns", "rel")),
        ("empty-namespace", lambda c: _m("fmconstructs.eks.addons.HelmChartPin")("c", "https://x", "1", "", "rel")),
    ],
    "fmconstructs.health.spec.NodeCheckSpec": [
        (
            "efa-above-catalog-maximum",
            lambda c: _m("fmconstructs.health.spec.NodeCheckSpec")("p5.48xlarge", 8, 64, True, False),
        ),
        ("gpu-count-zero", lambda c: _m("fmconstructs.health.spec.NodeCheckSpec")("p5.48xlarge", 0, 32, True, False)),
    ],
    # Classes that already validated before issue 18 section 5: one row each keeps them honest.
    "fmconstructs.capacity.Capacity": [("base-class", lambda c: _m("fmconstructs.capacity.Capacity")())],
    "fmconstructs.capacity.CapacityBlock": [
        ("count-str", lambda c: _m("fmconstructs.capacity.CapacityBlock")(reservation_id="cr-0123", instance_count="2"))
    ],
    "fmconstructs.capacity.CapacityReservation": [
        ("neither-id-nor-group", lambda c: _m("fmconstructs.capacity.CapacityReservation")())
    ],
    "fmconstructs.capacity.UltraServerCapacityBlock": [
        ("nothing", lambda c: _m("fmconstructs.capacity.UltraServerCapacityBlock")())
    ],
    "fmconstructs.capacity.InterruptibleCapacityReservation": [
        ("no-id", lambda c: _m("fmconstructs.capacity.InterruptibleCapacityReservation")()),
        (
            "group-arn",
            lambda c: _m("fmconstructs.capacity.InterruptibleCapacityReservation")(
                resource_group_arn="arn:aws:resource-groups:us-east-1:123456789012:group/g"
            ),
        ),
    ],
    "fmconstructs.catalog.GpuSpec": [("count-str", lambda c: _m("fmconstructs.catalog.GpuSpec")("H100", "8", 81920))],
    "fmconstructs.catalog.InstanceSpec": [
        ("positional-garbage", lambda c: _m("fmconstructs.catalog.InstanceSpec")(*([None] * 12)))
    ],
    "fmconstructs.catalog.InstanceStoreSpec": [
        ("negative", lambda c: _m("fmconstructs.catalog.InstanceStoreSpec")(-1, 3800))
    ],
    "fmconstructs.catalog.NetworkCardGroup": [
        ("cards-str", lambda c: _m("fmconstructs.catalog.NetworkCardGroup")("0", 400.0))
    ],
    "fmconstructs.catalog.NetworkCardSpec": [
        ("index-str", lambda c: _m("fmconstructs.catalog.NetworkCardSpec")("0", ("efa",), 2, 100.0))
    ],
    "fmconstructs.catalog.UltraServerSpec": [
        ("zero-count", lambda c: _m("fmconstructs.catalog.UltraServerSpec")("u-x", "p6e-gb200.36xlarge", 0))
    ],
    "fmconstructs.compute.imex.ImexPrologSpec": [
        ("nones", lambda c: _m("fmconstructs.compute.imex.ImexPrologSpec")(None, None, None, None, None, None))
    ],
    "fmconstructs.eks.addons.ChartSource": [
        ("repository-ftp", lambda c: _m("fmconstructs.eks.addons.ChartSource")(repository="ftp://x/y")),
        ("tag-without-image", lambda c: _m("fmconstructs.eks.addons.ChartSource")(image_tag="v1")),
    ],
    "fmconstructs.eks.cluster.SystemNodeGroupOptions": [
        ("min-above-max", lambda c: _m("fmconstructs.eks.cluster.SystemNodeGroupOptions")(min_nodes=5, max_nodes=4))
    ],
    "fmconstructs.health.xid.XidPolicy": [
        ("xid-zero", lambda c: _m("fmconstructs.health.xid.XidPolicy")(reset=(0,))),
        ("xid-str", lambda c: _m("fmconstructs.health.xid.XidPolicy")(fatal="79")),
        ("two-classes", lambda c: _m("fmconstructs.health.xid.XidPolicy")(reset=(94,))),
    ],
    "fmconstructs.health.nccl.NcclCheckSpec": [
        ("nodes-str", lambda c: _m("fmconstructs.health.nccl.NcclCheckSpec")(nodes="2"))
    ],
    "fmconstructs.health.nccl_rules.NcclAlertOptions": [
        ("drop-str", lambda c: _m("fmconstructs.health.nccl_rules.NcclAlertOptions")(drop_percent="10"))
    ],
    "fmconstructs.health.slurm_gate.GateHold": [
        ("bad-prefix", lambda c: _m("fmconstructs.health.slurm_gate.GateHold")(reservation_prefix="x y")),
        ("minutes-zero", lambda c: _m("fmconstructs.health.slurm_gate.GateHold")(minutes=0)),
        ("relative-marker", lambda c: _m("fmconstructs.health.slurm_gate.GateHold")(marker_path="var/x")),
        ("quote-in-pattern", lambda c: _m("fmconstructs.health.slurm_gate.GateHold")(unlimited_nodes="a'b")),
    ],
    "fmconstructs.teams.team.Team": [
        ("empty-name", lambda c: _m("fmconstructs.teams.team.Team")(name="")),
        ("negative-guarantee", lambda c: _m("fmconstructs.teams.team.Team")(name="a", guaranteed_gpus=-1)),
        ("priority-over-100", lambda c: _m("fmconstructs.teams.team.Team")(name="a", priority=101)),
        ("preemption-str", lambda c: _m("fmconstructs.teams.team.Team")(name="a", preemption="never")),
        ("users-str", lambda c: _m("fmconstructs.teams.team.Team")(name="a", users="alice")),
    ],
    "fmconstructs.platform.scheduling.PlatformCapacityEvents": [
        (
            "lead-below-warning",
            lambda c: _m("fmconstructs.platform.scheduling.PlatformCapacityEvents")(drain_lead_minutes=30),
        ),
        (
            "job-warning-str",
            lambda c: _m("fmconstructs.platform.scheduling.PlatformCapacityEvents")(job_warning="USR1"),
        ),
    ],
    "fmconstructs.hyperpod.types.HyperPodInstanceGroup": [
        (
            "capacity-str",
            lambda c: _m("fmconstructs.hyperpod.types.HyperPodInstanceGroup")("gpu", "p5.48xlarge", 2, capacity=ARN),
        ),
        (
            "min-above-nodes",
            lambda c: _m("fmconstructs.hyperpod.types.HyperPodInstanceGroup")("gpu", "p5.48xlarge", 2, min_nodes=3),
        ),
        (
            "encrypted-ami-object",
            lambda c: _m("fmconstructs.hyperpod.types.HyperPodInstanceGroup")("gpu", "p5.48xlarge", 2, image_id=7),
        ),
    ],
    "fmconstructs.images.components.ImageComponent": [
        ("no-script", lambda c: _m("fmconstructs.images.components.ImageComponent")("my-comp", "d"))
    ],
    "fmconstructs.images.image.BuildSchedule": [
        ("timezone-without-expression", lambda c: _m("fmconstructs.images.image.BuildSchedule")(timezone="Etc/UTC"))
    ],
    "fmconstructs.images.image.ParentImage": [
        ("empty", lambda c: _m("fmconstructs.images.image.ParentImage")("", "d"))
    ],
    "fmconstructs.observability.collection.NodeLabels": [
        ("cluster-int", lambda c: _m("fmconstructs.observability.collection.NodeLabels")(7))
    ],
    "fmconstructs.observability.grafana.workspace.GrafanaNetworkAccess": [
        ("cidrs-str", lambda c: _m("fmconstructs.observability.grafana.workspace.GrafanaNetworkAccess")("10.0.0.0/8"))
    ],
    "fmconstructs.observability.grafana.workspace.SamlOptions": [
        ("no-metadata", lambda c: _m("fmconstructs.observability.grafana.workspace.SamlOptions")())
    ],
    "fmconstructs.observability.rules.AlertRule": [
        (
            "empty-expr",
            lambda c: _m("fmconstructs.observability.rules.AlertRule")(
                "A", "", "5m", _enum("fmconstructs.observability.rules.Severity", "CRITICAL"), "s", "d", ()
            ),
        )
    ],
    "fmconstructs.observability.rules.AlertThresholds": [
        ("ratio-str", lambda c: _m("fmconstructs.observability.rules.AlertThresholds")(throttle_ratio="0.5"))
    ],
    "fmconstructs.observability.rules.RuleGroup": [
        ("rules-str", lambda c: _m("fmconstructs.observability.rules.RuleGroup")("g", "rule"))
    ],
    "fmconstructs.observability.sources.ExporterSource": [
        (
            "bucket-without-mirror",
            lambda c: _m("fmconstructs.observability.sources.ExporterSource")(
                _enum("fmconstructs.observability.sources.ExporterSourceKind", "IMAGE"), bucket=c.bucket
            ),
        ),
        (
            "mirror-without-bucket",
            lambda c: _m("fmconstructs.observability.sources.ExporterSource")(
                _enum("fmconstructs.observability.sources.ExporterSourceKind", "S3_MIRROR")
            ),
        ),
    ],
    "fmconstructs.parallelcluster.config.ComputeResource": [
        (
            "nodes-str",
            lambda c: _m("fmconstructs.parallelcluster.config.ComputeResource")(
                name="p5", instance_type="p5.48xlarge", max_nodes="2"
            ),
        )
    ],
    "fmconstructs.parallelcluster.config.CustomAction": [
        ("script-int", lambda c: _m("fmconstructs.parallelcluster.config.CustomAction")(script=7))
    ],
    "fmconstructs.parallelcluster.config.HeadNode": [
        (
            "subnet-str",
            lambda c: _m("fmconstructs.parallelcluster.config.HeadNode")(
                instance_type="c7i.2xlarge", subnet="subnet-0123"
            ),
        )
    ],
    "fmconstructs.parallelcluster.config.LoginNodePool": [
        (
            "subnet-str",
            lambda c: _m("fmconstructs.parallelcluster.config.LoginNodePool")(
                name="l", instance_type="c7i.xlarge", subnet="subnet-0123"
            ),
        )
    ],
    "fmconstructs.parallelcluster.config.Monitoring": [
        ("retention-str", lambda c: _m("fmconstructs.parallelcluster.config.Monitoring")(log_retention_days="14"))
    ],
    "fmconstructs.parallelcluster.config.SharedLustre": [
        ("file-system-str", lambda c: _m("fmconstructs.parallelcluster.config.SharedLustre")(file_system="fs-0123"))
    ],
    "fmconstructs.parallelcluster.config.SlurmQueue": [
        (
            "subnets-str",
            lambda c: _m("fmconstructs.parallelcluster.config.SlurmQueue")(
                name="gpu", subnets="subnet-0123", compute_resources=()
            ),
        )
    ],
    "fmconstructs.parallelcluster.accounting.SlurmDatabase": [
        (
            "password-secret-str",
            lambda c: _m("fmconstructs.parallelcluster.accounting.SlurmDatabase")(
                host="db.example.internal",
                user_name="clusteradmin",
                password_secret="arn:aws:secretsmanager:us-east-1:123456789012:secret:db",
            ),
        )
    ],
    "fmconstructs.parallelcluster.accounting.ExternalSlurmdbd": [
        (
            "munge-key-secret-str",
            lambda c: _m("fmconstructs.parallelcluster.accounting.ExternalSlurmdbd")(
                host="slurmdbd.example.internal",
                munge_key_secret="arn:aws:secretsmanager:us-east-1:123456789012:secret:munge",
            ),
        )
    ],
    "fmconstructs.pcs.ami.PcsAmi": [
        ("neither", lambda c: _m("fmconstructs.pcs.ami.PcsAmi")()),
        ("both", lambda c: _m("fmconstructs.pcs.ami.PcsAmi")("ami-0123456789abcdef0", "/pcs/ami")),
    ],
    "fmconstructs.storage.lustre_mount.LustreMount": [
        ("file-system-str", lambda c: _m("fmconstructs.storage.lustre_mount.LustreMount")("fs-0123"))
    ],
    "fmconstructs.platform.options.EksOptions": [
        ("gpu-addons-str", lambda c: _m("fmconstructs.platform.options.EksOptions")(gpu_addons="yes"))
    ],
    "fmconstructs.platform.options.HyperPodOptions": [
        ("capacity-str", lambda c: _m("fmconstructs.platform.options.HyperPodOptions")(capacity=ARN))
    ],
    "fmconstructs.platform.options.ParallelClusterOptions": [
        ("login-nodes-str", lambda c: _m("fmconstructs.platform.options.ParallelClusterOptions")(login_nodes="1"))
    ],
    "fmconstructs.platform.options.PcsOptions": [
        ("ami-str", lambda c: _m("fmconstructs.platform.options.PcsOptions")(ami="ami-0123456789abcdef0"))
    ],
    "fmconstructs.platform.options.PlatformObservability": [
        (
            "grafana-without-prometheus",
            lambda c: _m("fmconstructs.platform.options.PlatformObservability")(create_grafana="yes"),
        )
    ],
    "fmconstructs.platform.options.PlatformStorage": [
        (
            "throughput-without-target",
            lambda c: _m("fmconstructs.platform.options.PlatformStorage")(
                objective=_enum("fmconstructs.platform.options.StorageObjective", "THROUGHPUT")
            ),
        )
    ],
    "fmconstructs.remediation.policy.RemediationPolicy": [
        ("dry-run-str", lambda c: _m("fmconstructs.remediation.policy.RemediationPolicy")(dry_run="no"))
    ],
    "fmconstructs.storage.client.EksStaticVolume": [
        ("capacity-str", lambda c: _m("fmconstructs.storage.client.EksStaticVolume")("fs-0123", "d", "m", "1200"))
    ],
    "fmconstructs.storage.data_repository.DataRepositoryLink": [
        ("path-int", lambda c: _m("fmconstructs.storage.data_repository.DataRepositoryLink")(7))
    ],
    "fmconstructs.storage.sizing.LustreSizing": [
        ("type-str", lambda c: _m("fmconstructs.storage.sizing.LustreSizing")("PERSISTENT_2", 1200, 125))
    ],
    "fmconstructs.hyperpod.eks_dependencies.HyperPodDependenciesChart": [
        (
            "oci-without-version",
            lambda c: _m("fmconstructs.hyperpod.eks_dependencies.HyperPodDependenciesChart")(
                _enum("fmconstructs.hyperpod.eks_dependencies.ChartLocation", "OCI"),
                repository="oci://r.example.com/charts/hyperpod-helm-chart",
            ),
        )
    ],
    "fmconstructs.capacity_events.expiry.JobWarning": [
        ("unknown-signal", lambda c: _m("fmconstructs.capacity_events.expiry.JobWarning")(slurm_signal="KILL")),
        ("scope-as-str", lambda c: _m("fmconstructs.capacity_events.expiry.JobWarning")(slurm_signal_scope="full")),
        ("bad-annotation", lambda c: _m("fmconstructs.capacity_events.expiry.JobWarning")(pod_annotation="a b")),
    ],
    HPT: [
        ("effect-str", lambda c: _m(HPT)("nvidia.com/gpu", "NoSchedule")),
        ("bad-key", lambda c: _m(HPT)("a b", _enum(HPT_EFFECT, "NO_SCHEDULE"))),
        ("value-too-long", lambda c: _m(HPT)("k", _enum(HPT_EFFECT, "NO_EXECUTE"), "v" * 64)),
    ],
    HPK: [
        ("labels-list", lambda c: _m(HPK)(labels=["team=a"])),
        ("empty-label-value", lambda c: _m(HPK)(labels={"team": ""})),
        ("taints-str", lambda c: _m(HPK)(taints="k:NoSchedule")),
        ("taint-tuple", lambda c: _m(HPK)(taints=[("k", "NoSchedule")])),
    ],
    HPB: [
        ("type-str", lambda c: _m(HPB)("INSTANCE_COUNT", 1)),
        ("zero", lambda c: _m(HPB)(_enum(HPB_TYPE, "INSTANCE_COUNT"), 0)),
        ("percent-above-100", lambda c: _m(HPB)(_enum(HPB_TYPE, "CAPACITY_PERCENTAGE"), 150)),
    ],
    HPU: [
        ("rate-expression", lambda c: _m(HPU)("rate(7 days)")),
        ("five-fields", lambda c: _m(HPU)("cron(0 3 * * *)")),
        ("rollback-without-batch", lambda c: _m(HPU)("cron(0 3 ? * SUN *)", rollback_batch_size=_m(HPB).instances(1))),
        ("wait-too-long", lambda c: _m(HPU)("cron(0 3 ? * SUN *)", wait_interval_seconds=3601)),
        ("eleven-alarms", lambda c: _m(HPU)("cron(0 3 ? * SUN *)", rollback_alarms=[f"a{i}" for i in range(11)])),
        ("alarms-str", lambda c: _m(HPU)("cron(0 3 ? * SUN *)", rollback_alarms="alarm")),
    ],
    HPA: [
        ("enabled-str", lambda c: _m(HPA)(enabled="yes")),
        ("type-str", lambda c: _m(HPA)(auto_scaler_type="Karpenter")),
        ("role-str", lambda c: _m(HPA)(cluster_role="arn:aws:iam::123456789012:role/x")),
    ],
    HPTS: [
        ("percent-above-100", lambda c: _m(HPTS)(instance_memory_percent=101)),
        ("percent-when-disabled", lambda c: _m(HPTS)(enabled=False, instance_memory_percent=10)),
        ("enabled-int", lambda c: _m(HPTS)(enabled=1)),
    ],
    PIH: [
        ("monitoring-str", lambda c: _m(PIH)(monitoring="STANDARD")),
        (
            "repair-without-monitoring",
            lambda c: _m(PIH)(monitoring=_enum(PHM, "NONE"), monitoring_repair_action=_enum(PRA, "AUTO")),
        ),
        ("repair-without-deep-check", lambda c: _m(PIH)(deep_health_check_repair_action=_enum(PRA, "REPLACE"))),
    ],
    PLS: [
        ("bad-name", lambda c: _m(PLS)(name="-x", script_location="s3://my-bucket/a.sh")),
        ("bad-location", lambda c: _m(PLS)(name="a", script_location="/tmp/a.sh")),
        ("bad-checksum", lambda c: _m(PLS)(name="a", script_location="s3://my-bucket/a.sh", checksum_sha256="00")),
    ],
    PNL: [
        ("no-scripts", lambda c: _m(PNL)()),
        ("not-a-script", lambda c: _m(PNL)(node_ready=["s3://my-bucket/a.sh"])),
    ],
}

# --- factory classmethods: "module.Class.method" -> build with good inputs -----------------------------------------
FACTORIES: dict[str, Row] = {
    f"{KRT}.for_capacity": lambda c: _m(KRT).for_capacity(
        _m("fmconstructs.capacity.CapacityBlock")(reservation_id="cr-0123456789abcdef0")
    ),
    f"{MW}.from_s3": lambda c: _m(MW).from_s3(c.bucket, prefix="models/llama"),
    f"{MW}.from_hugging_face": lambda c: _m(MW).from_hugging_face("meta-llama/Llama-3.1-8B"),
    f"{HPC}.on_demand": lambda c: _m(HPC).on_demand(),
    f"{HPC}.spot": lambda c: _m(HPC).spot(),
    f"{HPB}.instances": lambda c: _m(HPB).instances(2),
    f"{HPB}.percent": lambda c: _m(HPB).percent(25),
    f"{HPA}.karpenter": lambda c: _m(HPA).karpenter(),
    f"{HPA}.disabled": lambda c: _m(HPA).disabled(),
    f"{HPC}.training_plan": lambda c: _m(HPC).training_plan(ARN, instance_type="p5.48xlarge", instance_count=2.0),
    f"{HPO}.slurm": lambda c: _m(HPO).slurm(
        controller_group="controller", login_group="login", strategy=_enum(SLURM_STRATEGY, "MANAGED")
    ),
    f"{HPO}.eks": lambda c: _m(HPO).eks(c.eks_cluster),
    f"{LMC}.automatic": lambda c: _m(LMC).automatic(),
    f"{LMC}.user_provisioned": lambda c: _m(LMC).user_provisioned(24000),
    f"{RT}.pcs": lambda c: _m(RT).pcs(
        cluster_id="pcs_abc", login_node_group_id="pcs_login1", compute_node_group_ids=["pcs_compute1"]
    ),
    f"{RT}.parallelcluster": lambda c: _m(RT).parallelcluster(cluster_name="training"),
    f"{RT}.eks": lambda c: _m(RT).eks(cluster=c.eks_cluster),
    f"{RT}.auto_scaling_group": lambda c: _m(RT).auto_scaling_group(group_name="gpu-asg"),
    f"{RT}.hyperpod": lambda c: _m(RT).hyperpod(
        cluster_name="training", cluster_arn="arn:aws:sagemaker:us-east-1:123456789012:cluster/abcdef012345"
    ),
    "fmconstructs.health.spec.NodeCheckSpec.for_instance_type": lambda c: _m(
        "fmconstructs.health.spec.NodeCheckSpec"
    ).for_instance_type("p5.48xlarge", lustre_mount_point="/fsx"),
    "fmconstructs.eks.addons.ChartSource.oci": lambda c: _m("fmconstructs.eks.addons.ChartSource").oci(
        "oci://123456789012.dkr.ecr.us-east-1.amazonaws.com/charts/dcgm-exporter"
    ),
    "fmconstructs.eks.addons.ChartSource.ecr": lambda c: _m("fmconstructs.eks.addons.ChartSource").ecr(c.repository),
    "fmconstructs.eks.addons.ChartSource.helm_repository": lambda c: _m(
        "fmconstructs.eks.addons.ChartSource"
    ).helm_repository("https://charts.example.com/stable"),
    "fmconstructs.images.image.BuildSchedule.manual": lambda c: _m("fmconstructs.images.image.BuildSchedule").manual(),
    "fmconstructs.images.image.BuildSchedule.cron": lambda c: _m("fmconstructs.images.image.BuildSchedule").cron(
        "cron(0 6 ? * MON *)", timezone="Europe/Paris"
    ),
    "fmconstructs.images.image.BuildSchedule.weekly_when_parent_changes": lambda c: _m(
        "fmconstructs.images.image.BuildSchedule"
    ).weekly_when_parent_changes(),
    "fmconstructs.images.image.ParentImage.dlami_base_gpu": lambda c: _m(
        "fmconstructs.images.image.ParentImage"
    ).dlami_base_gpu(_enum("fmconstructs.catalog.CpuArchitecture", "ARM64")),
    "fmconstructs.images.image.ParentImage.from_ssm_parameter": lambda c: _m(
        "fmconstructs.images.image.ParentImage"
    ).from_ssm_parameter("/my/ami"),
    "fmconstructs.images.image.ParentImage.from_ami_id": lambda c: _m(
        "fmconstructs.images.image.ParentImage"
    ).from_ami_id("ami-0123456789abcdef0"),
    "fmconstructs.observability.sources.ExporterSource.s3_mirror": lambda c: _m(
        "fmconstructs.observability.sources.ExporterSource"
    ).s3_mirror(c.bucket),
    "fmconstructs.pcs.ami.PcsAmi.from_image_id": lambda c: _m("fmconstructs.pcs.ami.PcsAmi").from_image_id(
        "ami-0123456789abcdef0"
    ),
    "fmconstructs.pcs.ami.PcsAmi.from_ssm_parameter": lambda c: _m("fmconstructs.pcs.ami.PcsAmi").from_ssm_parameter(
        "/pcs/ami/x86_64"
    ),
    "fmconstructs.platform.options.PlatformObservability.new": lambda c: _m(
        "fmconstructs.platform.options.PlatformObservability"
    ).new(alias="training"),
    "fmconstructs.platform.options.PlatformObservability.existing": lambda c: _m(
        "fmconstructs.platform.options.PlatformObservability"
    ).existing(prometheus_workspace=c.prometheus),
    "fmconstructs.platform.options.PlatformStorage.for_throughput": lambda c: _m(
        "fmconstructs.platform.options.PlatformStorage"
    ).for_throughput(target_gbytes_per_s=10),
    "fmconstructs.platform.options.PlatformStorage.for_checkpoint": lambda c: _m(
        "fmconstructs.platform.options.PlatformStorage"
    ).for_checkpoint(checkpoint_bytes=2e12, checkpoint_seconds=120),
    "fmconstructs.platform.options.PlatformStorage.of_capacity": lambda c: _m(
        "fmconstructs.platform.options.PlatformStorage"
    ).of_capacity(storage_capacity_gib=2400),
    "fmconstructs.hyperpod.eks_dependencies.HyperPodDependenciesChart.from_oci": lambda c: _m(
        "fmconstructs.hyperpod.eks_dependencies.HyperPodDependenciesChart"
    ).from_oci("oci://123456789012.dkr.ecr.us-east-1.amazonaws.com/charts/hyperpod-helm-chart", version="0.1.0"),
    "fmconstructs.hyperpod.eks_dependencies.HyperPodDependenciesChart.from_ecr": lambda c: _m(
        "fmconstructs.hyperpod.eks_dependencies.HyperPodDependenciesChart"
    ).from_ecr(c.repository, version="0.1.0"),
    "fmconstructs.hyperpod.eks_dependencies.HyperPodDependenciesChart.from_helm_repository": lambda c: _m(
        "fmconstructs.hyperpod.eks_dependencies.HyperPodDependenciesChart"
    ).from_helm_repository("https://charts.example.com/hyperpod", version="0.1.0"),
    f"{PIH}.off": lambda c: _m(PIH).off(),
}

#: Factories not round-tripped here, with where they are covered.
FACTORIES_ELSEWHERE: dict[str, str] = {
    f"{MW}.from_fsx": "needs an FSx for Lustre file system construct: tests/serving/test_serving_weights.py",
    "fmconstructs.parallelcluster.config.SharedLustre.from_mount": (
        "needs an FSx for Lustre file system construct: tests/parallelcluster/test_parallelcluster_shared_lustre_mount.py"
    ),
    "fmconstructs.hyperpod.eks_dependencies.HyperPodDependenciesChart.from_directory": (
        "needs a chart checkout on disk: tests/hyperpod/test_hyperpod_eks_dependencies.py"
    ),
    "fmconstructs.hyperpod.eks_dependencies.HyperPodDependenciesChart.from_context": (
        "reads CDK context, then calls from_oci/from_directory: tests/hyperpod/test_hyperpod_eks_dependencies.py"
    ),
}


PUBLIC = _public_dataclasses()


def _factory_keys(cls: type) -> list[str]:
    return [f"{_key(cls)}.{name}" for name, value in vars(cls).items() if isinstance(value, classmethod)]


def test_every_public_dataclass_has_bad_inputs_or_is_a_result_type():
    missing = sorted(set(PUBLIC) - set(BAD) - set(RESULT_TYPES) - set(NO_ARGUMENTS))
    assert not missing, f"add rows to BAD (or a reason to RESULT_TYPES) for: {missing}"
    stale = sorted((set(BAD) | set(RESULT_TYPES) | set(NO_ARGUMENTS)) - set(PUBLIC))
    assert not stale, f"rows for classes that are not public dataclasses: {stale}"


def test_every_factory_method_is_round_tripped():
    expected = {key for cls in PUBLIC.values() for key in _factory_keys(cls)}
    missing = sorted(expected - set(FACTORIES) - set(FACTORIES_ELSEWHERE))
    assert not missing, f"add FACTORIES rows for: {missing}"
    assert not sorted(set(FACTORIES) - expected), "FACTORIES rows for methods that are not factory classmethods"


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(build, id=f"{key.rpartition('.')[2]}-{row_id}")
        for key, rows in BAD.items()
        for row_id, build in rows
    ],
)
def test_direct_constructor_refuses_bad_input(ctx, build):
    with pytest.raises(FmValidationError):
        build(ctx)


def test_wrong_types_raise_fm_type_error(ctx):
    # GIVEN a wrong Python type where an enum or str goes, THEN FmTypeError (a TypeError and an FmValidationError)
    for build in (
        lambda: _m(HPO)("slurm", "controller"),
        lambda: _m(LMC)("AUTOMATIC"),
        lambda: _m(RT)("pcs", "pcs_abc", "login", ("compute",)),
        lambda: _m(HPC)(training_plan_arn=42),
        lambda: _m(EFA)(None, 4, 8),
    ):
        with pytest.raises(FmTypeError):
            build()


@pytest.mark.parametrize("key", sorted(FACTORIES))
def test_factory_result_survives_the_direct_constructor(ctx, key):
    made = FACTORIES[key](ctx)
    again = dataclasses.replace(made)  # type: ignore[type-var]  # calls __init__ and __post_init__ again
    assert again == made


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda c: _m(HPC)(training_plan_instance_type="p5.48xlarge"), r"training_plan_instance_type must be None "),
        (lambda c: _m(HPC)(ARN, "p9.bogus"), r"training_plan_instance_type must be an instance type SageMaker Hyper"),
        (lambda c: _m(HPO)(_enum(KIND, "SLURM")), r"controller_group must be a str"),
        (
            lambda c: _m(HPO)(
                _enum(KIND, "SLURM"),
                "controller",
                slurm_configuration=_enum(SLURM_CONF, "LIFECYCLE_SCRIPTS"),
                slurm_config_strategy=_enum(SLURM_STRATEGY, "MANAGED"),
            ),
            r"slurm_config_strategy must be None with SlurmConfiguration.LIFECYCLE_SCRIPTS",
        ),
        (
            lambda c: _m(HPO)(_enum(KIND, "EKS"), login_group="login"),
            r"login_group must be None for OrchestratorKind.EKS",
        ),
        (lambda c: _m(RT)(_enum(BACKEND, "PCS"), "pcs_abc"), r"login_node_group_id must be a PCS compute node group"),
        (lambda c: _m(EFA)("Stack/P5", -1, 8), r"max_nodes must be at least 0, got -1"),
    ],
)
def test_errors_name_the_field_and_value(ctx, build, match):
    with pytest.raises(FmValidationError, match=match):
        build(ctx)


def test_training_plan_type_is_normalized_like_the_factory():
    # GIVEN an EC2 type name, WHEN built directly, THEN stored as the HyperPod name, as training_plan() does
    direct = _m(HPC)(ARN, "p5.48xlarge", 2)
    assert direct == _m(HPC).training_plan(ARN, instance_type="p5.48xlarge", instance_count=2)
    assert direct.training_plan_instance_type == "ml.p5.48xlarge"


def test_deploy_time_values_are_accepted():
    # GIVEN CDK tokens for counts and the plan ARN, THEN nothing is checked that only deploy time knows
    stack = cdk.Stack(new_app(), "Tokens", env=ENV)
    count = cdk.CfnParameter(stack, "Count", type="Number").value_as_number
    arn = cdk.CfnParameter(stack, "Arn").value_as_string
    assert _m(HPC)(arn, None, count).training_plan_instance_count is count
    assert _m(EFA)("Stack/P5", count, count).max_efa_connections is None
    assert _m(LMC)(_enum(LMM, "USER_PROVISIONED"), count).iops is count
