"""The cross-property rules of :class:`~fmconstructs.images.GpuNodeImage` and its components as pure functions (the
shape of :mod:`fmconstructs._rules`): plain values in (names, enums, catalog entries), no construct or scope; a hard
rule raises :class:`~fmconstructs.errors.FmValidationError`.

Checks of one option on its own (patterns, ranges, distinct entries) stay with the options and constructs; the build
subnet against the VPC's public subnets stays with the construct (it compares constructs).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..catalog import CpuArchitecture, InstanceSpec
from ..errors import FmValidationError

__all__ = [
    "a_component_has_a_script",
    "build_type_matches_the_architecture",
    "gpu_validation_needs_a_gpu_type",
    "installer_matches_the_slurm_version",
    "instance_types_share_one_architecture",
    "one_slurm_version_for_a_pinned_installer",
    "timezone_needs_a_schedule",
]

# Instance type names: a 'g' among the family's attribute letters after the generation means AWS Graviton (EC2
# Instance Types guide, "Instance type naming conventions": "g - AWS Graviton processors"), e.g. c7g, g5g, m7gd.
_GRAVITON = re.compile(r"[a-z]+[0-9]+[a-z]*g[a-z]*\.[a-z0-9-]+")
# GPU families start with g or p (G6, G5g, P5; gr6 too).
_GPU_FAMILY = re.compile(r"(g|gr|p)[0-9][a-z0-9-]*\.[a-z0-9-]+")


def timezone_needs_a_schedule(*, timezone: str | None, expression: str | None) -> None:
    """A schedule's time zone is for its expression: None for a manual-only pipeline."""
    if timezone is not None and expression is None:
        raise FmValidationError("schedule.timezone", timezone, "None for a manual-only pipeline")


def instance_types_share_one_architecture(specs: Sequence[InstanceSpec]) -> None:
    """The image's instance types (catalog entries) are of one CPU architecture: one image per architecture."""
    if len({spec.architecture for spec in specs}) != 1:
        raise FmValidationError(
            "instance_types",
            [spec.instance_type for spec in specs],
            "types of one architecture (one image per architecture: x86_64 for P5/P6, arm64 for P6e-GB200)",
        )


def build_type_matches_the_architecture(*, parameter: str, instance_type: str, architecture: CpuArchitecture) -> None:
    """A build or test instance type is of the image's architecture (Graviton names for arm64)."""
    graviton = bool(_GRAVITON.fullmatch(instance_type))
    if graviton != (architecture is CpuArchitecture.ARM64):
        raise FmValidationError(
            parameter,
            instance_type,
            f"an {architecture.value} instance type (the image is built for {architecture.value})",
        )


def gpu_validation_needs_a_gpu_type(*, parameter: str, instance_type: str, validate_on_gpu: bool) -> None:
    """``validate_on_gpu`` runs nvidia-smi: the build and test instance types are of a G or P family."""
    if validate_on_gpu and not _GPU_FAMILY.fullmatch(instance_type):
        raise FmValidationError(
            parameter,
            instance_type,
            "a GPU instance type (G or P family) when validate_on_gpu is True (the test runs nvidia-smi)",
        )


def one_slurm_version_for_a_pinned_installer(*, installer_version: str, slurm_versions: int) -> None:
    """A pinned Slurm installer version is of one Slurm version: 'latest' unless exactly one is built."""
    if installer_version != "latest" and slurm_versions != 1:
        raise FmValidationError(
            "slurm_installer_version",
            installer_version,
            "'latest' unless exactly one Slurm version is built",
        )


def installer_matches_the_slurm_version(
    *, installer_version: str, installer_major: str | None, slurm_major: str
) -> None:
    """A pinned installer (``installer_major``: its Slurm major version, None for 'latest') installs ``slurm_major``."""
    if installer_major and installer_major != slurm_major:
        raise FmValidationError(
            "slurm_installer_version",
            installer_version,
            f"an installer of Slurm {slurm_major} ('{slurm_major}.<patch>-<n>')",
        )


def a_component_has_a_script(*, build_script: str | None, check_script: str | None, test_script: str | None) -> None:
    """A component runs something: at least one of its build, check and test scripts."""
    if build_script is None and check_script is None and test_script is None:
        raise FmValidationError("build_script/check_script/test_script", None, "at least one script")
