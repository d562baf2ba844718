"""Template budgets (issue 30): N GPU node groups of p5.48xlarge per backend, synthesized with the backends' public
API, and for every stack of the app (nested stacks included) its template bytes, resource count and their share of
CloudFormation's limits (:mod:`fmconstructs.budgets`). Run: ``python benchmarks/templates.py [N ...]``.

- EKS: ``GpuEksCluster`` + ``add_gpu_node_group`` x N; PCS: ``PcsCluster`` + ``add_gpu_node_group`` x N.
- ParallelCluster: one queue per group, one compute resource each, at most 50 per cluster (ParallelCluster's
  ``MAX_NUMBER_OF_QUEUES``): N groups make ``ceil(N / 50)`` clusters in the stack.
- HyperPod (Slurm): a controller group and N GPU instance groups, at most 100 groups per cluster (botocore
  ``ClusterInstanceGroupSpecifications`` max 100): N groups make ``ceil((N + 1) / 100)`` clusters.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2

ENV = cdk.Environment(account="123456789012", region="us-east-1")
DEFAULT_COUNTS = (1, 8, 64, 128)
INSTANCE_TYPE = "p5.48xlarge"


def _scene(outdir: str) -> tuple[cdk.App, cdk.Stack, ec2.IVpc, ec2.ISubnet]:
    app = cdk.App(outdir=outdir, builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "Budget", env=ENV)
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


def eks(stack: cdk.Stack, vpc: ec2.IVpc, subnet: ec2.ISubnet, n: int) -> None:
    from fmconstructs.eks import GpuEksCluster

    cluster = GpuEksCluster(stack, "Eks", vpc=vpc, subnets=[subnet])
    for i in range(n):
        cluster.add_gpu_node_group(f"G{i}", instance_type=INSTANCE_TYPE, max_nodes=2, subnets=[subnet])


def pcs(stack: cdk.Stack, vpc: ec2.IVpc, subnet: ec2.ISubnet, n: int) -> None:
    from fmconstructs.pcs import PcsAmi, PcsCluster

    cluster = PcsCluster(stack, "Cluster", vpc=vpc, subnet=subnet)
    ami = PcsAmi.from_image_id("ami-0123456789abcdef0")
    for i in range(n):
        cluster.add_gpu_node_group(f"G{i}", instance_type=INSTANCE_TYPE, ami=ami, max_nodes=2)


def parallelcluster(stack: cdk.Stack, vpc: ec2.IVpc, subnet: ec2.ISubnet, n: int) -> None:
    from fmconstructs.parallelcluster import ComputeResource, HeadNode, ParallelCluster, SlurmQueue
    from fmconstructs.parallelcluster.limits import MAX_NUMBER_OF_QUEUES

    for c, start in enumerate(range(0, n, MAX_NUMBER_OF_QUEUES)):
        queues = [
            SlurmQueue(
                name=f"gpu{i}",
                subnets=[subnet],
                compute_resources=[ComputeResource(name=f"p5n{i}", instance_type=INSTANCE_TYPE, max_nodes=2)],
            )
            for i in range(start, min(n, start + MAX_NUMBER_OF_QUEUES))
        ]
        head = HeadNode(instance_type="c7i.4xlarge", subnet=subnet)
        ParallelCluster(stack, f"Cluster{c}", cluster_name=f"train{c}", head_node=head, queues=queues)


def hyperpod(stack: cdk.Stack, vpc: ec2.IVpc, subnet: ec2.ISubnet, n: int) -> None:
    from fmconstructs.hyperpod import HyperPodCluster, HyperPodInstanceGroup, HyperPodOrchestrator

    per_cluster = 99  # and the controller group: 100 (botocore ClusterInstanceGroupSpecifications max)
    for c, start in enumerate(range(0, max(n, 1), per_cluster)):
        groups = [HyperPodInstanceGroup(name="controller", instance_type="ml.m5.2xlarge", nodes=1)]
        groups += [
            HyperPodInstanceGroup(name=f"gpu{i}", instance_type=f"ml.{INSTANCE_TYPE}", nodes=1)
            for i in range(start, min(n, start + per_cluster))
        ]
        HyperPodCluster(
            stack,
            f"HyperPod{c}",
            vpc=vpc,
            subnets=[subnet],
            instance_groups=groups,
            orchestrator=HyperPodOrchestrator.slurm(controller_group="controller"),
        )


BACKENDS: dict[str, Callable[[cdk.Stack, ec2.IVpc, ec2.ISubnet, int], None]] = {
    "eks": eks,
    "pcs": pcs,
    "parallelcluster": parallelcluster,
    "hyperpod": hyperpod,
}


def measure(backend: str, n: int) -> list[tuple[str, int, int, int, int]]:
    """(template file, bytes, resources, outputs, parameters) for every stack of the app."""
    with tempfile.TemporaryDirectory() as outdir:
        app, stack, vpc, subnet = _scene(outdir)
        BACKENDS[backend](stack, vpc, subnet, n)
        app.synth()
        rows = []
        for path in sorted(Path(outdir).glob("*.template.json")):
            template = json.loads(path.read_text())
            rows.append(
                (
                    path.name,
                    # the file as written: what the CDK CLI uploads to S3 as the template body
                    path.stat().st_size,
                    len(template.get("Resources", {})),
                    len(template.get("Outputs", {})),
                    len(template.get("Parameters", {})),
                )
            )
        return rows


def main(argv: list[str]) -> None:
    counts = tuple(int(a) for a in argv if a.isdigit()) or DEFAULT_COUNTS
    only = [a for a in argv if not a.isdigit()] or list(BACKENDS)
    print(f"{'backend':16} {'groups':>6} {'stack':44} {'bytes':>10} {'% 1MB':>6} {'res':>5} {'% 500':>6} {'s':>6}")
    for backend in only:
        for n in counts:
            start = time.perf_counter()
            rows = measure(backend, n)
            seconds = time.perf_counter() - start
            for name, size, resources, _outputs, _parameters in rows:
                print(
                    f"{backend:16} {n:6} {name[:44]:44} {size:10,} {size / 1_000_000:6.0%} {resources:5} "
                    f"{resources / 500:6.0%} {seconds:6.1f}"
                )


if __name__ == "__main__":
    main(sys.argv[1:])
