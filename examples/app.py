"""The fmconstructs example app: ``npx cdk synth`` (via cdk.json) synthesizes every example stack.

Stack names are stable: FmCompute (foundation), FmStorage (storage), FmPcsP5 and FmPcsGb200 (AWS PCS),
FmEksP5en and FmEksGb200 (EKS), FmServeP5en (model serving on EKS), FmObservability (metrics and alerts),
FmImages (GPU node images), FmPrivateP5 (no internet route), FmParallelClusterP5en and FmParallelClusterGb200
(AWS ParallelCluster), FmHyperPodSlurm and FmHyperPodEks (SageMaker HyperPod), FmPlatform (one-call
TrainingPlatform on AWS PCS).
"""

from __future__ import annotations

import sys
from pathlib import Path

import aws_cdk as cdk

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from examples.compute_stack import ComputeStack
from examples.eks_gb200_stack import EksGb200Stack
from examples.eks_stack import EksStack
from examples.hyperpod_stacks import HyperPodEksStack, HyperPodSlurmStack
from examples.images_stack import ImagesStack
from examples.observability_stack import ObservabilityStack
from examples.parallelcluster_stacks import ParallelClusterGb200Stack, ParallelClusterP5enStack
from examples.pcs_stacks import PcsGb200Stack, PcsP5Stack
from examples.platform_stack import PlatformStack
from examples.private_stack import PrivatePcsP5Stack
from examples.serve_stack import ServeStack
from examples.storage_stack import StorageStack


def build(app: cdk.App) -> dict[str, cdk.Stack]:
    """Add every example stack to ``app`` and return them by name."""
    observability = ObservabilityStack(
        app, "FmObservability", description="fmconstructs example: AMP workspace, alert rules, alerts to SNS"
    )
    return {
        "FmObservability": observability,
        "FmImages": ImagesStack(
            app,
            "FmImages",
            description="fmconstructs example: GPU node images (x86_64, arm64) from EC2 Image Builder, AMI ids in SSM",
        ),
        "FmCompute": ComputeStack(app, "FmCompute", description="fmconstructs example: GPU launch templates"),
        "FmStorage": StorageStack(
            app,
            "FmStorage",
            description="fmconstructs example: FSx for Lustre linked to S3 (EFA, data repository associations)",
        ),
        "FmPcsP5": PcsP5Stack(
            app,
            "FmPcsP5",
            workspace=observability.workspace,
            description="fmconstructs example: Slurm on AWS PCS, 2 p5.48xlarge on a Capacity Block, FSx at /fsx",
        ),
        "FmPcsGb200": PcsGb200Stack(
            app,
            "FmPcsGb200",
            description="fmconstructs example: Slurm on AWS PCS, one u-p6e-gb200x72 UltraServer (18 nodes)",
        ),
        "FmEksP5en": EksStack(
            app,
            "FmEksP5en",
            workspace=observability.workspace,
            description="fmconstructs example: GPU EKS cluster with EFA node groups",
        ),
        "FmEksGb200": EksGb200Stack(
            app,
            "FmEksGb200",
            workspace=observability.workspace,
            description="fmconstructs example: GPU EKS cluster on one u-p6e-gb200x72 UltraServer "
            "(DRA ComputeDomains, FSx for Lustre over EFA)",
        ),
        "FmServeP5en": ServeStack(
            app,
            "FmServeP5en",
            workspace=observability.workspace,
            description="fmconstructs example: vLLM on EKS, 405B on 2 p5en.48xlarge (Capacity Block, LeaderWorkerSet) "
            "and 8B on Karpenter p5.48xlarge, weights from S3, internal NLBs, KEDA",
        ),
        "FmPrivateP5": PrivatePcsP5Stack(
            app,
            "FmPrivateP5",
            workspace=observability.workspace,
            description="fmconstructs example: Slurm on AWS PCS, 2 p5.48xlarge in subnets with no internet route "
            "(VPC endpoints only, exporters from the image)",
        ),
        "FmParallelClusterP5en": ParallelClusterP5enStack(
            app,
            "FmParallelClusterP5en",
            workspace=observability.workspace,
            description="fmconstructs example: AWS ParallelCluster 3.16.1, 2 p5en.48xlarge on a Capacity Block, "
            "FSx at /fsx",
        ),
        "FmParallelClusterGb200": ParallelClusterGb200Stack(
            app,
            "FmParallelClusterGb200",
            description="fmconstructs example: AWS ParallelCluster 3.16.1, one u-p6e-gb200x72 UltraServer (18 nodes)",
        ),
        "FmHyperPodSlurm": HyperPodSlurmStack(
            app,
            "FmHyperPodSlurm",
            workspace=observability.workspace,
            description="fmconstructs example: SageMaker HyperPod with Slurm, 2 p5.48xlarge, FSx, deep health checks",
        ),
        "FmHyperPodEks": HyperPodEksStack(
            app,
            "FmHyperPodEks",
            workspace=observability.workspace,
            description="fmconstructs example: SageMaker HyperPod on EKS, 2 p5en.48xlarge, dependencies chart, FSx",
        ),
        "FmPlatform": PlatformStack(
            app,
            "FmPlatform",
            workspace=observability.workspace,
            grafana=observability.grafana,
            description="fmconstructs example: TrainingPlatform on AWS PCS, 2 p5.48xlarge on a Capacity Block, "
            "FSx for Lustre sized for a checkpoint (one EFA security group)",
        ),
    }


def main() -> None:
    """Synthesize every example with the cdk-nag AwsSolutions pack (disable with ``-c fmconstructs:nag=false``)."""
    app = cdk.App()
    build(app)
    if str(app.node.try_get_context("fmconstructs:nag")).lower() != "false":
        from cdk_nag import AwsSolutionsChecks

        cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()


if __name__ == "__main__":
    main()
