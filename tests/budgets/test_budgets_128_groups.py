"""Issue 30 target: 128 GPU node groups on each backend synthesize as one app within CloudFormation's limits.

EKS and PCS: a TrainingPlatform and 127 more groups on its cluster; groups beyond the first ``per_stack`` go into
nested stacks of as many (:func:`fmconstructs.budgets.node_group_scope`), so every template, parent and nested, is
within the limits and the budget check reports nothing. ParallelCluster (50 queues per cluster) and HyperPod (100
instance groups per cluster) are several clusters in one stack: their templates are small. One synthesized app per
backend for the module (validation off; the build and synthesis take seconds per backend)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Annotations, Match

from benchmarks import templates as bench
from fmconstructs.budgets import MAX_OUTPUTS, MAX_PARAMETERS, MAX_RESOURCES, MAX_TEMPLATE_BYTES
from fmconstructs.eks.cluster import GPU_NODE_GROUPS_PER_STACK as EKS_PER_STACK
from fmconstructs.pcs import PcsAmi
from fmconstructs.pcs.cluster import GPU_NODE_GROUPS_PER_STACK as PCS_PER_STACK
from fmconstructs.platform import EksOptions, PcsOptions, TrainingPlatform

GROUPS = 128
ENV = cdk.Environment(account="123456789012", region="us-east-1")
AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")


def _vpc(stack: cdk.Stack) -> ec2.IVpc:
    return ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
        private_subnet_route_table_ids=["rtb-0aaaaaaaaaaaaaaa1", "rtb-0bbbbbbbbbbbbbbb2"],
    )


def _platform_app(backend: str, outdir: Path, groups: int) -> cdk.Stack:
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "Big", env=ENV)
    orchestrator: Any = EksOptions() if backend == "eks" else PcsOptions(ami=AMI)
    platform = TrainingPlatform(
        stack, "Platform", vpc=_vpc(stack), instance_type="p5.48xlarge", nodes=2, orchestrator=orchestrator
    )
    for i in range(1, groups):
        extra: dict[str, Any] = {"ami": AMI} if backend == "pcs" else {}
        platform.cluster.add_gpu_node_group(f"Gpu{i}", instance_type="p5.48xlarge", max_nodes=2, **extra)  # type: ignore[union-attr]
    return stack


def _cluster_app(backend: str, outdir: Path, groups: int) -> cdk.Stack:
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "Big", env=ENV)
    vpc = _vpc(stack)
    bench.BACKENDS[backend](stack, vpc, vpc.private_subnets[0], groups)
    return stack


@pytest.fixture(scope="module", params=["eks", "pcs", "parallelcluster", "hyperpod"])
def big(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, cdk.Stack, Path, float]:
    backend: str = request.param
    outdir = tmp_path_factory.mktemp(backend)
    start = time.perf_counter()
    build = _platform_app if backend in ("eks", "pcs") else _cluster_app
    stack = build(backend, outdir, GROUPS)
    stack.node.root.synth()  # type: ignore[attr-defined]
    return backend, stack, outdir, time.perf_counter() - start


def test_every_template_is_within_cloudformations_limits(big: tuple[str, cdk.Stack, Path, float]) -> None:
    backend, _stack, outdir, seconds = big
    templates = sorted(outdir.glob("*.template.json"))
    for path in templates:
        template = json.loads(path.read_text())
        assert path.stat().st_size < MAX_TEMPLATE_BYTES * 0.8, path.name
        assert len(template.get("Resources", {})) < MAX_RESOURCES * 0.8, path.name
        assert len(template.get("Outputs", {})) < MAX_OUTPUTS * 0.8, path.name
        assert len(template.get("Parameters", {})) < MAX_PARAMETERS * 0.8, path.name
    nested = [p for p in templates if ".nested." in p.name]
    per_stack = {"eks": EKS_PER_STACK, "pcs": PCS_PER_STACK}.get(backend)
    assert len(nested) == (-(-GROUPS // per_stack) - 1 if per_stack else 0)
    print(f"{backend}: {GROUPS} groups, {len(templates)} templates, {seconds:.1f} s build + synth")


def test_the_budget_check_reports_nothing(big: tuple[str, cdk.Stack, Path, float]) -> None:
    _backend, stack, _outdir, _seconds = big
    annotations = Annotations.from_stack(stack)
    budget = Match.string_like_regexp("template-budget")
    assert annotations.find_error("*", budget) == [] and annotations.find_warning("*", budget) == []


@pytest.mark.parametrize("backend", ["eks", "pcs"])
def test_a_small_apps_groups_keep_their_place_when_groups_are_added(backend: str, tmp_path: Path) -> None:
    """Placement by order: the groups of an app that fits in one stack stay where they were (same logical ids in the
    parent stack) after the app grows past the nested-stack threshold, so an update never replaces them."""
    per_stack = EKS_PER_STACK if backend == "eks" else PCS_PER_STACK
    kind = "AWS::EKS::Nodegroup" if backend == "eks" else "AWS::PCS::ComputeNodeGroup"

    def group_ids(groups: int, where: str) -> set[str]:
        _platform_app(backend, tmp_path / where, groups).node.root.synth()  # type: ignore[attr-defined]
        template = json.loads((tmp_path / where / "Big.template.json").read_text())
        return {k for k, v in template["Resources"].items() if v["Type"] == kind}

    small = group_ids(per_stack, "small")
    assert not list((tmp_path / "small").glob("*.nested.template.json"))
    grown = group_ids(per_stack + 2, "grown")
    assert small <= grown and len(list((tmp_path / "grown").glob("*.nested.template.json"))) == 1
