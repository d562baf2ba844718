"""GPU node images with EC2 Image Builder (issue 11, section 1).

:class:`GpuNodeImage` builds AMIs for one architecture from the AWS Deep Learning Base GPU AMI with the PCS agent,
Slurm, EFA, the NVIDIA pieces the parent lacks, the Lustre client, DCGM and the node exporters, checks each piece in
Image Builder's validate and test phases, and writes the AMI id to an SSM parameter that
``fmconstructs.pcs.PcsAmi.from_ssm_parameter`` consumes. :mod:`fmconstructs.images.components` holds the component
documents; :mod:`fmconstructs.images.schema` a JSON Schema of the AWSTOE document format they follow.
"""

from .components import (
    EFA_INSTALLER_VERSION,
    EFA_KEY_FINGERPRINT,
    PCS_AGENT_VERSION,
    PCS_KEY_FINGERPRINT,
    SLURM_INSTALLER_VERSION,
    ImageComponent,
    dcgm_component,
    efa_component,
    fabric_manager_component,
    gpu_smoke_test_component,
    imex_component,
    lustre_client_component,
    metrics_agents_component,
    nvidia_driver_component,
    pcs_agent_component,
    slurm_component,
)
from .image import (
    DEFAULT_BUILD_INSTANCE_TYPES,
    DLAMI_BASE_GPU_PARAMETERS,
    BuildSchedule,
    GpuNodeImage,
    ParentImage,
    PipelineStartCondition,
)
from .nccl_tests import nccl_tests_component
from .schema import COMPONENT_DOCUMENT_SCHEMA, document_problems
from .slurm_exporter import slurm_exporter_component

__all__ = [
    "COMPONENT_DOCUMENT_SCHEMA",
    "DEFAULT_BUILD_INSTANCE_TYPES",
    "DLAMI_BASE_GPU_PARAMETERS",
    "EFA_INSTALLER_VERSION",
    "EFA_KEY_FINGERPRINT",
    "PCS_AGENT_VERSION",
    "PCS_KEY_FINGERPRINT",
    "SLURM_INSTALLER_VERSION",
    "BuildSchedule",
    "GpuNodeImage",
    "ImageComponent",
    "ParentImage",
    "PipelineStartCondition",
    "dcgm_component",
    "document_problems",
    "efa_component",
    "fabric_manager_component",
    "gpu_smoke_test_component",
    "imex_component",
    "lustre_client_component",
    "metrics_agents_component",
    "nccl_tests_component",
    "nvidia_driver_component",
    "pcs_agent_component",
    "slurm_component",
    "slurm_exporter_component",
]
