"""The cross-property rules of the GPU node image and its components (fmconstructs.images.rules), each with plain
values: no stack."""

from __future__ import annotations

from typing import Any

import pytest

from fmconstructs import FmValidationError
from fmconstructs.catalog import CpuArchitecture, get_instance_spec
from fmconstructs.images import rules

P5 = get_instance_spec("p5.48xlarge")
P5EN = get_instance_spec("p5en.48xlarge")
GB200 = get_instance_spec("p6e-gb200.36xlarge")


def _refused(call: Any, parameter: str, message: str) -> None:
    with pytest.raises(FmValidationError, match=message) as error:
        call()
    assert error.value.parameter == parameter


@pytest.mark.parametrize(("timezone", "expression"), [(None, None), ("Etc/UTC", "rate(7 days)"), (None, "rate(1 day)")])
def test_a_timezone_with_a_schedule_or_none_passes(timezone, expression):
    rules.timezone_needs_a_schedule(timezone=timezone, expression=expression)


def test_a_timezone_for_a_manual_pipeline_is_refused():
    _refused(
        lambda: rules.timezone_needs_a_schedule(timezone="Europe/Paris", expression=None),
        "schedule.timezone",
        "None for a manual-only pipeline",
    )


@pytest.mark.parametrize("specs", [[P5], [P5, P5EN], [GB200]])
def test_instance_types_of_one_architecture_pass(specs):
    rules.instance_types_share_one_architecture(specs)


@pytest.mark.parametrize("specs", [[P5, GB200], [GB200, P5EN, P5]])
def test_instance_types_of_two_architectures_are_refused(specs):
    _refused(lambda: rules.instance_types_share_one_architecture(specs), "instance_types", "types of one architecture")


@pytest.mark.parametrize(
    ("instance_type", "architecture"),
    [
        ("c6i.xlarge", CpuArchitecture.X86_64),
        ("c7g.xlarge", CpuArchitecture.ARM64),
        ("g5g.xlarge", CpuArchitecture.ARM64),
    ],
)
def test_a_build_type_of_the_image_architecture_passes(instance_type, architecture):
    rules.build_type_matches_the_architecture(
        parameter="build_instance_types[0]", instance_type=instance_type, architecture=architecture
    )


@pytest.mark.parametrize(
    ("instance_type", "architecture", "wanted"),
    [("c7g.xlarge", CpuArchitecture.X86_64, "x86_64"), ("c6i.xlarge", CpuArchitecture.ARM64, "arm64")],
)
def test_a_build_type_of_another_architecture_is_refused(instance_type, architecture, wanted):
    _refused(
        lambda: rules.build_type_matches_the_architecture(
            parameter="build_instance_types[0]", instance_type=instance_type, architecture=architecture
        ),
        "build_instance_types[0]",
        f"an {wanted} instance type \\(the image is built for {wanted}\\)",
    )


@pytest.mark.parametrize(
    ("instance_type", "gpu"), [("g6.xlarge", True), ("p5.48xlarge", True), ("gr6.4xlarge", True), ("c6i.xlarge", False)]
)
def test_a_gpu_type_or_no_gpu_validation_passes(instance_type, gpu):
    rules.gpu_validation_needs_a_gpu_type(parameter="p", instance_type=instance_type, validate_on_gpu=gpu)


@pytest.mark.parametrize("instance_type", ["c6i.xlarge", "m7i.2xlarge"])
def test_gpu_validation_on_a_cpu_type_is_refused(instance_type):
    _refused(
        lambda: rules.gpu_validation_needs_a_gpu_type(parameter="p", instance_type=instance_type, validate_on_gpu=True),
        "p",
        r"a GPU instance type \(G or P family\) when validate_on_gpu is True",
    )


@pytest.mark.parametrize(("installer", "versions"), [("latest", 2), ("latest", 1), ("25.05.3-1", 1)])
def test_a_pinned_installer_with_one_slurm_version_passes(installer, versions):
    rules.one_slurm_version_for_a_pinned_installer(installer_version=installer, slurm_versions=versions)


@pytest.mark.parametrize("versions", [0, 2])
def test_a_pinned_installer_with_other_than_one_slurm_version_is_refused(versions):
    _refused(
        lambda: rules.one_slurm_version_for_a_pinned_installer(installer_version="25.05.3-1", slurm_versions=versions),
        "slurm_installer_version",
        "'latest' unless exactly one Slurm version is built",
    )


@pytest.mark.parametrize(("installer", "major"), [("latest", None), ("25.05.3-1", "25.05")])
def test_an_installer_of_the_slurm_version_passes(installer, major):
    rules.installer_matches_the_slurm_version(installer_version=installer, installer_major=major, slurm_major="25.05")


def test_an_installer_of_another_slurm_version_is_refused():
    _refused(
        lambda: rules.installer_matches_the_slurm_version(
            installer_version="24.11.6-1", installer_major="24.11", slurm_major="25.05"
        ),
        "slurm_installer_version",
        r"an installer of Slurm 25.05 \('25.05.<patch>-<n>'\)",
    )


@pytest.mark.parametrize("scripts", [("echo b", None, None), (None, "echo c", None), (None, None, "echo t")])
def test_a_component_with_a_script_passes(scripts):
    build, check, test = scripts
    rules.a_component_has_a_script(build_script=build, check_script=check, test_script=test)


def test_a_component_without_a_script_is_refused():
    _refused(
        lambda: rules.a_component_has_a_script(build_script=None, check_script=None, test_script=None),
        "build_script/check_script/test_script",
        "at least one script",
    )
