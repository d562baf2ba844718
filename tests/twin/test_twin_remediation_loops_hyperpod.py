"""Loops (b), (c), (d) and (f) on HyperPod Slurm: the tests of test_twin_remediation_loops.py (its module notes), on a
world of this backend (one file per backend, for `pytest -n 2 --dist loadfile`). The tests build on each other in one
world: they are bound here in that file's order.

On HyperPod the handler acts through the SageMaker API (``RemediationTarget.hyperpod``: ListClusterNodes,
BatchReplaceClusterNodes; the twin's :class:`~tests.support.twin.remediation.TwinSageMaker` validates each call
against botocore's model) and the twin emulates HyperPod's replacement (:meth:`~tests.support.twin.cluster.
TwinCluster.hyperpod_replace`). What the loops found on HyperPod before its fix: the library rendered no node checks
and no remediation there, so (b) a node losing an EFA device ran jobs (no prolog check, no FmNodeCheckFailed) and
(c) a node with Xid 79 alerted and stayed in the cluster, nothing acted; (f) had nothing to limit. Now (f) shows the
HyperPod difference: a replacement held back leaves the node as it is (the handler cannot drain there; SSM Run
Command does not reach HyperPod nodes).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fmconstructs.platform import Backend

from tests.support.twin.world import TwinWorld
from tests.twin import test_twin_remediation_loops as loops


@pytest.fixture(scope="module", params=[Backend.HYPERPOD], ids=lambda b: b.value)
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinWorld]:
    yield from loops.backend_world(request.param, tmp_path_factory)


test_b_a_prolog_check_failure_requeues_drains_alerts_and_replaces = (
    loops.test_b_a_prolog_check_failure_requeues_drains_alerts_and_replaces
)
test_c_a_fatal_xid_during_a_job_replaces_the_node_and_requeues_the_job = (
    loops.test_c_a_fatal_xid_during_a_job_replaces_the_node_and_requeues_the_job
)
test_d_a_contained_xid_ends_no_node = loops.test_d_a_contained_xid_ends_no_node
test_f_a_burst_beyond_the_rate_limit_only_drains_the_excess = (
    loops.test_f_a_burst_beyond_the_rate_limit_only_drains_the_excess
)
test_b_and_c_the_requeued_jobs_complete_on_the_replacements = (
    loops.test_b_and_c_the_requeued_jobs_complete_on_the_replacements
)
