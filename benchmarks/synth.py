"""Synthesis timings (speed is measured here, never asserted in tests). ``make bench`` runs it and prints three tables:

1. The example app, every stack, with aws-cdk-lib's CloudFormation validation off and on (best and median of N).
2. The same app against aws-cdk-lib's own cost to emit the same templates: every synthesized template loaded with
   ``cloudformation_include.CfnInclude`` into a fresh app and synthesized again, in the same process. The ratio
   ``app / floor`` is fmconstructs' overhead over what CDK needs to write those resources at all (target <= 2x).
3. 1, 8, 32 and 64 GPU node groups of p5.48xlarge (32 EFA interfaces each) as bare launch templates, PCS node groups
   and EKS managed node groups: total seconds (build + synth), milliseconds per group over the empty scene, and
   ``t(64) / t(8)`` (linear growth <= 9; target <= 50 ms per group at 64).

Figures are from one shared, noisy machine: compare ratios, not absolute times.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import cloudformation_include as cfn_inc

from examples.app import build

ENV = cdk.Environment(account="123456789012", region="us-east-1")
GROUP_COUNTS = (1, 8, 32, 64)


def _timed(fn: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def app_seconds(*, validation: bool) -> float:
    with tempfile.TemporaryDirectory() as outdir:

        def run() -> None:
            app = cdk.App(outdir=outdir, builtin_cloud_formation_validation=validation)
            build(app)
            app.synth()

        return _timed(run)


def include_floor_seconds(template_dir: Path) -> float:
    """aws-cdk-lib's cost to emit the example app's templates: CfnInclude of each, then synth."""
    templates = sorted(template_dir.glob("*.template.json"))
    with tempfile.TemporaryDirectory() as outdir:

        def run() -> None:
            app = cdk.App(outdir=outdir, builtin_cloud_formation_validation=False)
            for path in templates:
                # The included template already holds the bootstrap-version parameter and rule.
                synthesizer = cdk.DefaultStackSynthesizer(generate_bootstrap_version_rule=False)
                stack = cdk.Stack(app, path.name.split(".")[0], env=ENV, synthesizer=synthesizer)
                cfn_inc.CfnInclude(stack, "Template", template_file=str(path))
            app.synth()

        return _timed(run)


def _scene() -> tuple[cdk.App, cdk.Stack, ec2.IVpc, ec2.ISubnet]:
    app = cdk.App(outdir=tempfile.mkdtemp(), builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "Bench", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        vpc_cidr_block="10.0.0.0/16",
        availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
        private_subnet_route_table_ids=["rtb-0aaaaaaaaaaaaaaa1"],
    )
    return app, stack, vpc, vpc.private_subnets[0]


def launch_templates(n: int) -> None:
    from fmconstructs import EfaSecurityGroup, GpuLaunchTemplate

    app, stack, vpc, subnet = _scene()
    efa = EfaSecurityGroup(stack, "Efa", vpc=vpc)
    for i in range(n):
        GpuLaunchTemplate(
            stack, f"Lt{i}", instance_type="p5.48xlarge", vpc=vpc, subnet=subnet, efa_security_group=efa, max_nodes=2
        )
    app.synth()


def pcs_node_groups(n: int) -> None:
    from fmconstructs.pcs import PcsAmi, PcsCluster

    app, stack, vpc, subnet = _scene()
    cluster = PcsCluster(stack, "Cluster", vpc=vpc, subnet=subnet)
    ami = PcsAmi.from_image_id("ami-0123456789abcdef0")
    for i in range(n):
        cluster.add_gpu_node_group(f"G{i}", instance_type="p5.48xlarge", ami=ami, max_nodes=2)
    app.synth()


def eks_node_groups(n: int) -> None:
    from fmconstructs.eks import GpuEksCluster

    app, stack, vpc, subnet = _scene()
    cluster = GpuEksCluster(stack, "Eks", vpc=vpc, subnets=[subnet])
    for i in range(n):
        cluster.add_gpu_node_group(f"G{i}", instance_type="p5.48xlarge", max_nodes=2, subnets=[subnet])
    app.synth()


def best(fn: Callable[[], object], runs: int) -> float:
    return min(_timed(fn) for _ in range(runs))


def main(runs: int = 3) -> None:
    app_seconds(validation=False)  # warm up the jsii runtime
    print(f"{'example app (all stacks)':32} {'best s':>8} {'median s':>9}")
    for validation in (False, True):
        samples = [app_seconds(validation=validation) for _ in range(runs)]
        label = f"validation {'on' if validation else 'off'}"
        print(f"{label:32} {min(samples):8.2f} {statistics.median(samples):9.2f}")

    with tempfile.TemporaryDirectory() as outdir:
        app = cdk.App(outdir=outdir, builtin_cloud_formation_validation=False)
        build(app)
        app.synth()
        stacks = len(list(Path(outdir).glob("*.template.json")))
        resources = sum(
            len(json.loads(p.read_text()).get("Resources", {})) for p in Path(outdir).glob("*.template.json")
        )
        app_best = min(app_seconds(validation=False) for _ in range(runs))
        floor_best = min(include_floor_seconds(Path(outdir)) for _ in range(runs))
    print()
    print(
        f"{'app vs CfnInclude floor':32} {'app s':>8} {'floor s':>9} {'ratio':>7}"
        f"   ({stacks} stacks, {resources} resources)"
    )
    print(f"{'validation off, best of ' + str(runs):32} {app_best:8.2f} {floor_best:9.2f} {app_best / floor_best:7.2f}")

    print()
    print(
        f"{'p5.48xlarge node groups':24} "
        + " ".join(f"{'t(' + str(n) + ') s':>9}" for n in GROUP_COUNTS)
        + f" {'ms/group@64':>12} {'t64/t8':>7}"
    )
    for label, fn in (
        ("bare launch templates", launch_templates),
        ("PCS node groups", pcs_node_groups),
        ("EKS node groups", eks_node_groups),
    ):
        fn(1)  # warm up this path
        base = best(lambda fn=fn: fn(0), runs)  # type: ignore[misc]
        times = {n: best(lambda fn=fn, n=n: fn(n), runs) for n in GROUP_COUNTS}  # type: ignore[misc]
        per_group_ms = (times[64] - base) / 64 * 1000
        print(
            f"{label:24} "
            + " ".join(f"{times[n]:9.2f}" for n in GROUP_COUNTS)
            + f" {per_group_ms:12.1f} {times[64] / times[8]:7.2f}"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
