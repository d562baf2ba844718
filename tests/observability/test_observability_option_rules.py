"""The cross-property rules of the observability constructs and specs (fmconstructs.observability.option_rules),
each with plain values: no stack."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest

from fmconstructs.errors import FmValidationError, WarningId
from fmconstructs.observability import option_rules as rules

NAMESPACE_TOKEN = cdk.Fn.ref("Namespace")  # a deploy-time namespace (a string token)


def _refused(call: Any, parameter: str, message: str) -> None:
    with pytest.raises(FmValidationError, match=message) as error:
        call()
    assert error.value.parameter == parameter


# --- exporter source ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("mirror", "bucket"), [(True, "a-bucket"), (True, None), (False, None)])
def test_a_bucket_with_an_s3_mirror_or_none_passes(mirror: bool, bucket: object) -> None:
    rules.a_bucket_only_for_an_s3_mirror(is_s3_mirror=mirror, bucket=bucket)


def test_a_bucket_without_an_s3_mirror_is_refused() -> None:
    _refused(
        lambda: rules.a_bucket_only_for_an_s3_mirror(is_s3_mirror=False, bucket="a-bucket"),
        "bucket",
        "None unless kind is S3_MIRROR",
    )


@pytest.mark.parametrize(("cache", "repository"), [(False, False), (False, True), (True, True)])
def test_pull_through_cache_with_a_repository_passes(cache: bool, repository: bool) -> None:
    rules.pull_through_cache_needs_a_repository(pull_through_cache=cache, repository_given=repository)


def test_pull_through_cache_without_a_repository_is_refused() -> None:
    _refused(
        lambda: rules.pull_through_cache_needs_a_repository(pull_through_cache=True, repository_given=False),
        "pull_through_cache",
        "False unless dcgm_exporter_repository is given",
    )


# --- Slurm scripts --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("prolog", "epilog"),
    [("/opt/slurm/prolog.d", "/opt/slurm/epilog.d"), ("/a", "/a/b")],
)
def test_two_script_directories_pass(prolog: str, epilog: str) -> None:
    rules.epilog_dir_is_not_the_prolog_dir(prolog_dir=prolog, epilog_dir=epilog)


@pytest.mark.parametrize("directory", ["/opt/slurm/scripts.d", "/a"])
def test_one_script_directory_is_refused(directory: str) -> None:
    _refused(
        lambda: rules.epilog_dir_is_not_the_prolog_dir(prolog_dir=directory, epilog_dir=directory),
        "epilog_dir",
        "a directory other than prolog_dir",
    )


@pytest.mark.parametrize(("by_default", "publishes"), [(True, True), (False, True), (False, False)])
def test_job_mapping_that_fits_has_no_advice(by_default: bool, publishes: bool) -> None:
    assert (
        rules.job_mapping_fits_the_user_data(job_mapping_by_default=by_default, publishes_file_assets=publishes) is None
    )


def test_default_job_mapping_on_inline_user_data_is_advised() -> None:
    advice = rules.job_mapping_fits_the_user_data(job_mapping_by_default=True, publishes_file_assets=False)
    assert advice is not None
    assert advice.warning is WarningId.JOB_MAPPING_SKIPPED
    assert advice.message.startswith("GPU series carry no hpc_job label: this stack's synthesizer publishes no file")
    assert advice.message.endswith("pass job_mapping=JobMappingSpec() to force it, False to silence this")


# --- EKS scraper ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", [None, (1, 34), (1, 35), (2, 0)])
def test_graceful_shutdown_versions_have_no_advice(version: tuple[int, int] | None) -> None:
    assert rules.nodes_shut_down_gracefully(version) is None


@pytest.mark.parametrize("version", [(1, 33), (1, 30), (0, 99)])
def test_older_versions_are_advised(version: tuple[int, int]) -> None:
    advice = rules.nodes_shut_down_gracefully(version)
    assert advice is not None
    assert advice.warning is WarningId.EKS_NO_GRACEFUL_NODE_SHUTDOWN
    assert advice.message.startswith(f"Kubernetes {version[0]}.{version[1]}: the EKS AL2023 AMIs turn on graceful")
    assert rules.GRACEFUL_NODE_SHUTDOWN_VERSION == (1, 34)


# --- Prometheus workspace -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("namespace", "names"),
    [
        ("fm", ["gpu", "x" * 719]),  # 2 + 719 = 721 bytes: the limit
        ("fm", []),
        (NAMESPACE_TOKEN, ["x" * 1000]),  # a deploy-time namespace is not measured
    ],
)
def test_group_names_that_fit_pass(namespace: str, names: list[str]) -> None:
    rules.group_names_fit_the_namespace(namespace=namespace, group_names=names)


@pytest.mark.parametrize(
    ("namespace", "names", "refused"),
    [("fm", ["gpu", "x" * 720], "x" * 720), ("fm-é", ["y" * 717], "y" * 717)],  # é: 2 UTF-8 bytes
)
def test_group_names_too_long_with_the_namespace_are_refused(namespace: str, names: list[str], refused: str) -> None:
    with pytest.raises(FmValidationError, match="at most 721 UTF-8 bytes together with the namespace") as error:
        rules.group_names_fit_the_namespace(namespace=namespace, group_names=names)
    assert error.value.parameter == "rule group name"
    assert error.value.value == refused
