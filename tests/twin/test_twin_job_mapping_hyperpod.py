"""Loop (j) job mapping on HyperPod Slurm, on real Slurm 24.11, node_exporter and Prometheus (issue 29); why loops (g),
(h) and (i) do not apply there.

(j) GIVEN a TrainingPlatform on HyperPod Slurm (API-driven configuration, TrainingPlatform's default there) and an
:class:`~tests.support.twin.observed.ObservedCluster` built from it: the GPU group's ``slurm-scripts`` step
(:mod:`fmconstructs.hyperpod.slurm_scripts`: ``/opt/slurm/etc/prolog.d/20_fmconstructs_dcgm_job_mapping.sh`` and its
epilog) run after slurmd as HyperPod's ``OnInitComplete`` does (tests/support/twin/cluster.py
``PROFILES[Backend.HYPERPOD]``), the controller's ``slurm-prolog-flags`` step merged into slurm.conf, the login
group's host, and each node scraped with the scrape configuration of its group's rendered ``observability`` step (the
Prometheus agent's ``prometheus-agent.yml``: on HyperPod Slurm the library collects with that agent on every
instance group, fmconstructs.platform.platform "HyperPod Slurm ``prometheus_workspace``"); WHEN a GPU job runs,
THEN its GPU series carry ``hpc_job=<its id>`` in Prometheus while it runs and not after: the tests of
test_twin_nccl_and_job_mapping.py, bound here. Substitution (UNCONFIRMED): the twin gives the nodes Slurm GRES GPUs
(``Gres=gpu:8``) as on PCS and ParallelCluster; whether HyperPod's AMI writes GRES for GPU instances is not
published (without GRES a job has no ``SLURM_JOB_GPUS`` and the prolog maps nothing, by design:
fmconstructs.observability.job_mapping).

Loops that do not apply on HyperPod, because the library renders nothing for them there (each refusal is pinned by a
test below, so a library change that starts rendering one makes the test fail and the loop due):

- (g) NCCL check: ``platform_nccl_spec`` returns no check on HyperPod (fmconstructs.platform.health
  ``_nccl_problem``: "its InstanceConnectivity deep health check tests the fabric") and an explicit
  ``NcclCheckSpec`` is refused (fmconstructs.platform.backends.hyperpod ``unsupported`` ``health.nccl``): the
  service's deep health checks (``OnStartDeepHealthChecks``) are the NCCL test there.
- (h) Capacity Block ending: HyperPod takes no EC2 reservation (``capacity`` must be On-Demand; a SageMaker training
  plan goes in ``HyperPodOptions.capacity``), so the platform has no Capacity Block events handler and a
  ``PlatformCapacityEvents`` is refused (fmconstructs.platform.scheduling: "there are no Capacity Block events to act
  on"; fmconstructs.platform.backends.hyperpod ``capacity_block_events``).
- (i) Slurm topology: ``slurm_topology=True`` is refused on HyperPod, "HyperPod applies its own topology"
  (fmconstructs.platform.backends.hyperpod; fmconstructs.topology: SageMaker Developer Guide
  sagemaker-hyperpod-topology, UNCONFIRMED for P5/P6 on Slurm): the library writes no topology.conf there.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fmconstructs.errors import FmValidationError
from fmconstructs.health import NcclCheckSpec
from fmconstructs.hyperpod.slurm_scripts import (
    HYPERPOD_JOB_MAPPING_NAME,
    HYPERPOD_SLURM_SCRIPT_DIRS,
    SLURM_SCRIPTS_STEP,
)
from fmconstructs.platform import Backend, PlatformCapacityEvents, PlatformHealth

from tests.conftest import require_tool
from tests.support.twin.fixtures import require_twin
from tests.support.twin.monitoring import BINARIES, PrometheusServer
from tests.support.twin.observed import ObservedCluster
from tests.support.twin.rendered import Rendered, build_platform
from tests.twin import test_twin_nccl_and_job_mapping as loops


@dataclasses.dataclass
class HyperPodTwin:
    """The observed HyperPod cluster (no NCCL check: module notes); satisfies ``loops.MappedTwin``."""

    observed: ObservedCluster
    mapped_job: str = ""

    @property
    def prometheus(self) -> PrometheusServer:
        return self.observed.monitoring.prometheus


@pytest.fixture(scope="module")
def rendered() -> Rendered:
    """The platform on HyperPod Slurm (the (g), (h), (i) tests read it without the twin)."""
    return build_platform(Backend.HYPERPOD, nodes=4)


@pytest.fixture(scope="module")
def twin(rendered: Rendered, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HyperPodTwin]:
    require_twin()
    for binary, package in BINARIES:
        require_tool(binary, package)
    home: Path = tmp_path_factory.mktemp("job-mapping-hyperpod")
    with ObservedCluster(rendered, home) as observed:
        observed.start()
        yield HyperPodTwin(observed)


# --- (j) job mapping ---------------------------------------------------------------------------------------------
def test_j_the_rendered_pieces_are_in_hyperpods_prolog_d_and_prolog_flags_have_alloc(twin: HyperPodTwin) -> None:
    rendered = twin.observed.rendered.bootstrap(twin.observed.cluster.profile.gpu_bootstrap)
    step = rendered.step(SLURM_SCRIPTS_STEP)
    assert step is not None
    for directory in (HYPERPOD_SLURM_SCRIPT_DIRS.prolog_dir, HYPERPOD_SLURM_SCRIPT_DIRS.epilog_dir):
        path = f"{directory}/{HYPERPOD_JOB_MAPPING_NAME}"
        installed = twin.observed.cluster.home / "opt" / path.removeprefix("/opt/")
        assert installed.read_text() == step.files[path][0], path
    config = twin.observed.slurm.run(["scontrol", "show", "config"]).stdout
    flags = re.search(r"^PrologFlags\s*=\s*(\S+)", config, re.MULTILINE)
    assert flags is not None and "Alloc" in flags.group(1).split(","), config
    # The scrape configuration is the GPU group's rendered one: its dcgm job, with HyperPod's instance type.
    dcgm = next(j for j in twin.observed.monitored("gpu-3").agent_config["scrape_configs"] if j["job_name"] == "dcgm")
    assert dcgm["static_configs"][0]["labels"]["instance_type"] == "ml.p5.48xlarge"


test_j_a_running_job_s_gpu_series_carry_its_id = loops.test_j_a_running_job_s_gpu_series_carry_its_id
test_j_after_the_job_ends_its_gpu_series_no_longer_carry_its_id = (
    loops.test_j_after_the_job_ends_its_gpu_series_no_longer_carry_its_id
)


# --- (g), (h), (i): the library renders nothing for them on HyperPod (module notes) -------------------------------
def _refused(**props: Any) -> str:
    with pytest.raises(FmValidationError) as refused:
        build_platform(Backend.HYPERPOD, nodes=4, **props)
    return str(refused.value)


def test_g_hyperpod_renders_no_nccl_check_and_refuses_one(rendered: Rendered) -> None:
    assert rendered.platform.nccl_check is None
    assert not [p for p, b in rendered.bootstraps.items() if any("nccl" in s.name for s in b.steps)]
    spec = NcclCheckSpec(nodes=2, gpus_per_node=8, state_dir="/fsx/fmconstructs/nccl")
    assert "InstanceConnectivity deep health check" in _refused(health=PlatformHealth(nccl=spec))


def test_h_hyperpod_has_no_capacity_block_events_and_refuses_them(rendered: Rendered) -> None:
    assert rendered.platform.capacity_events is None
    assert not [r for r in rendered.resources("AWS::Events::Rule").values() if "Capacity" in str(r)]
    assert "no Capacity Block events to act on" in _refused(capacity_block_events=PlatformCapacityEvents())


def test_i_hyperpod_writes_no_slurm_topology_and_refuses_it(rendered: Rendered) -> None:
    assert not rendered.platform.slurm_topology
    files = [f for b in rendered.bootstraps.values() for f in b.files()]
    assert not [f for f in files if "topology" in f], files
    assert "HyperPod applies its own topology" in _refused(slurm_topology=True)
