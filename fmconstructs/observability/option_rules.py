"""The cross-property rules of the observability constructs and specs, as pure functions (the shape of
:mod:`fmconstructs._rules`): plain values in, no construct or scope; a hard rule raises
:class:`~fmconstructs.errors.FmValidationError`, a soft rule returns an :class:`~fmconstructs._rules.Advice` (or None)
that the construct attaches with :func:`~fmconstructs._rules.warn`.

Named ``option_rules`` because :mod:`fmconstructs.observability.rules` holds the Prometheus alert rules. Checks of
one option on its own (types, patterns, durations) stay with the constructors and specs (:mod:`._checks` and the
``__post_init__`` methods). Values that are deploy-time tokens are never compared.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._rules import Advice
from ..errors import FmValidationError, WarningId, is_token

__all__ = [
    "GRACEFUL_NODE_SHUTDOWN_VERSION",
    "NAMESPACE_AND_GROUP_MAX_BYTES",
    "a_bucket_only_for_an_s3_mirror",
    "epilog_dir_is_not_the_prolog_dir",
    "group_names_fit_the_namespace",
    "job_mapping_fits_the_user_data",
    "nodes_shut_down_gracefully",
    "pull_through_cache_needs_a_repository",
]

#: The first Kubernetes version on which the EKS AL2023 AMIs turn on graceful node shutdown (amazon-eks-ami
#: nodeadm/internal/kubelet/config.go ``withVersionToggles`` at 81fec2e, 2026-07: "Enable graceful node shutdown in
#: 1.34+", shutdownGracePeriod 150 s, shutdownGracePeriodCriticalPods 30 s, for kubelet >= v1.34.0).
GRACEFUL_NODE_SHUTDOWN_VERSION: tuple[int, int] = (1, 34)
#: CreateRuleGroupsNamespace (AMP API reference): "The combined length of a rule group namespace and a rule group
#: name cannot exceed 721 UTF-8 bytes."
NAMESPACE_AND_GROUP_MAX_BYTES = 721


# --- exporter source ------------------------------------------------------------------------------------------------
def a_bucket_only_for_an_s3_mirror(*, is_s3_mirror: bool, bucket: object) -> None:
    """``bucket`` (None when not given) is for ``ExporterSourceKind.S3_MIRROR`` only."""
    if not is_s3_mirror and bucket is not None:
        raise FmValidationError("bucket", bucket, "None unless kind is S3_MIRROR")


def pull_through_cache_needs_a_repository(*, pull_through_cache: bool, repository_given: bool) -> None:
    """``pull_through_cache`` describes ``dcgm_exporter_repository``: it needs one."""
    if pull_through_cache and not repository_given:
        raise FmValidationError("pull_through_cache", True, "False unless dcgm_exporter_repository is given")


# --- Slurm scripts --------------------------------------------------------------------------------------------------
def epilog_dir_is_not_the_prolog_dir(*, prolog_dir: str, epilog_dir: str) -> None:
    """The prolog and epilog scripts share one name (``SCRIPT_NAME``): they need two directories."""
    if prolog_dir == epilog_dir:
        raise FmValidationError("epilog_dir", epilog_dir, "a directory other than prolog_dir")


def job_mapping_fits_the_user_data(*, job_mapping_by_default: bool, publishes_file_assets: bool) -> Advice | None:
    """Advice when the job mapping, on by default (``job_mapping=True``), is left out because the stack's
    synthesizer publishes no file assets (the GPU nodes' set-up is then inline user data, capped at EC2's 16 KB).
    An explicit ``JobMappingSpec`` is forced (no advice: the caller adds the pieces)."""
    if not job_mapping_by_default or publishes_file_assets:
        return None
    return Advice(
        WarningId.JOB_MAPPING_SKIPPED,
        "GPU series carry no hpc_job label: this stack's synthesizer publishes no file assets (e.g. a "
        "StackSetStack's), so the GPU nodes' set-up is inline user data and the job mapping's prolog and epilog "
        "would take it past EC2's 16 KB; pass job_mapping=JobMappingSpec() to force it, False to silence this",
    )


# --- EKS scraper ----------------------------------------------------------------------------------------------------
def nodes_shut_down_gracefully(version: tuple[int, int] | None) -> Advice | None:
    """Advice when the cluster's Kubernetes ``version`` (None: a deploy-time value) is older than
    :data:`GRACEFUL_NODE_SHUTDOWN_VERSION`: the collector's preStop hook does not run on scale-in."""
    if version is None or version >= GRACEFUL_NODE_SHUTDOWN_VERSION:
        return None
    return Advice(
        WarningId.EKS_NO_GRACEFUL_NODE_SHUTDOWN,
        f"Kubernetes {version[0]}.{version[1]}: the EKS AL2023 AMIs turn on graceful node shutdown only from "
        "1.34 (amazon-eks-ami nodeadm), so on scale-in the kubelet does not run the collector pod's preStop "
        "hook, fm_node_shutting_down never becomes 1 and every node removed on purpose pages "
        "NodeStoppedReporting. Use Kubernetes 1.34 or later, or set shutdownGracePeriod (e.g. 2m30s) and "
        "shutdownGracePeriodCriticalPods in the nodes' kubelet configuration (nodeadm NodeConfig "
        "spec.kubelet.config), then acknowledge this warning.",
    )


# --- Prometheus workspace -------------------------------------------------------------------------------------------
def group_names_fit_the_namespace(*, namespace: str, group_names: Sequence[str]) -> None:
    """Each rule group name fits :data:`NAMESPACE_AND_GROUP_MAX_BYTES` together with its namespace (a deploy-time
    namespace is not measured)."""
    if is_token(namespace):
        return
    for name in group_names:
        if len(namespace.encode()) + len(name.encode()) > NAMESPACE_AND_GROUP_MAX_BYTES:
            raise FmValidationError(
                "rule group name",
                name,
                f"at most {NAMESPACE_AND_GROUP_MAX_BYTES} UTF-8 bytes together with the namespace {namespace!r}",
            )
