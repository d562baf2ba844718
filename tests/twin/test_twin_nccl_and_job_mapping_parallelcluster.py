"""Loops (g) NCCL and (j) job mapping on ParallelCluster: the tests of test_twin_nccl_and_job_mapping.py (its module
notes), on a cluster of this backend. One file per backend, so that `pytest -n 2 --dist loadfile` (`make test`) runs
the two backends' clusters side by side. The tests build on each other on one cluster: they are bound here in the
order of that file.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fmconstructs.platform import Backend

from tests.twin import test_twin_nccl_and_job_mapping as loops


@pytest.fixture(scope="module", params=[Backend.PARALLELCLUSTER], ids=lambda b: b.value)
def twin(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[loops.Twin]:
    yield from loops.backend_twin(request.param, tmp_path_factory)


test_g_the_check_is_the_platform_default_but_its_schedule = (
    loops.test_g_the_check_is_the_platform_default_but_its_schedule
)
test_g_a_degraded_first_run_is_below_the_floor_alerts_and_is_not_the_baseline = (
    loops.test_g_a_degraded_first_run_is_below_the_floor_alerts_and_is_not_the_baseline
)
test_g_healthy_runs_make_the_baseline_and_clear_the_alert = (
    loops.test_g_healthy_runs_make_the_baseline_and_clear_the_alert
)
test_g_5_percent_under_the_baseline_does_not_alert = loops.test_g_5_percent_under_the_baseline_does_not_alert
test_g_15_percent_under_the_baseline_alerts_and_stays_out_of_the_window = (
    loops.test_g_15_percent_under_the_baseline_alerts_and_stays_out_of_the_window
)
test_g_the_baseline_is_the_median_of_the_last_7_runs = loops.test_g_the_baseline_is_the_median_of_the_last_7_runs
test_g_nccl_check_stale_is_quiet_while_the_check_waits_behind_a_long_job = (
    loops.test_g_nccl_check_stale_is_quiet_while_the_check_waits_behind_a_long_job
)
test_g_a_dead_queue_probe_no_longer_holds_the_alert_back = (
    loops.test_g_a_dead_queue_probe_no_longer_holds_the_alert_back
)
test_g_nccl_check_stale_is_quiet_while_a_late_check_runs = (
    loops.test_g_nccl_check_stale_is_quiet_while_a_late_check_runs
)
test_g_nccl_check_stale_fires_when_the_check_stopped = loops.test_g_nccl_check_stale_fires_when_the_check_stopped
test_j_a_running_job_s_gpu_series_carry_its_id = loops.test_j_a_running_job_s_gpu_series_carry_its_id
test_j_after_the_job_ends_its_gpu_series_no_longer_carry_its_id = (
    loops.test_j_after_the_job_ends_its_gpu_series_no_longer_carry_its_id
)
