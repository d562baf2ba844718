"""A twin cluster watched by the monitoring half, with its login (PCS, HyperPod Slurm) or head (ParallelCluster)
node: the minimal composition loops (g) NCCL and (j) job mapping need (HyperPod: loop (j) only).

:class:`ObservedCluster` starts, from one synthesized platform (:func:`~.rendered.build_platform`):

- a :class:`~.cluster.TwinCluster` on real Slurm, with the platform's file system mount point shared by every node
  and the login node (the NCCL check keeps its script, logs, baseline and metrics there), Slurm GRES GPUs (PCS and
  ParallelCluster configure ``Gres=gpu:N`` for GPU instances themselves) and as many CPUs as a job's
  ``--ntasks-per-node`` asks;
- a :class:`LoginHost`: the login node of PCS or the head node of ParallelCluster, which runs no slurmd: its own
  tools (the fakes, for ``systemctl``), textfile, systemd and log directories, the shared ``/opt`` and file system,
  the Slurm client commands; the files of its bootstrap are installed (``/opt`` shared, ``/etc/systemd/system`` its
  own), its rendered steps run inside it (:meth:`LoginHost.run_step`) and its rendered units start through
  :meth:`LoginHost.start_unit` (each ``ExecStart`` in order; ``-`` ignores a failure, systemd.service(5));
  :meth:`LoginHost.run_timer` runs a unit on its timer's ``OnUnitActiveSec`` in twin time (:mod:`.timescale`);
- a :class:`~.monitoring.MonitoringTwin` scraping each GPU node (its textfile directory, its fake dcgm-exporter
  reading the node's scenario and its job-mapping directory ``/var/run/fmconstructs/dcgm-job-mapping``) and the login
  node, with the agent configurations of their ``observability`` steps, the workspace's rules and Alertmanager (to a
  local SNS endpoint that only records).

Substitutions, each the twin standing in for something that is not the library's: the login node's dcgm-exporter is
down (no GPU and no docker there, so the rendered step does not start it) and its ``slurm`` job is not scraped (no
Slurm exporter binary in the twin).

Another helper's ``world.py`` (remediation loops) composes the same halves with the remediation handler; this module
is the NCCL/job-mapping subset, kept separate until the two are consolidated.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fmconstructs.observability.job_mapping import DEFAULT_JOB_MAPPING_DIR
from fmconstructs.platform import Backend

from .artifacts import agent_config_from_user_data, monitoring_artifacts
from .cluster import TwinCluster
from .exporters import MonitoredNode
from .monitoring import DUMMY_SECRET_ACCESS_KEY, MonitoringTwin
from .nodes import HEALTHY, Scenario, install_fakes
from .procs import TwinError
from .rendered import Bootstrap, Rendered
from .root import chroot_argv
from .slurm import SlurmTwin, TwinNode
from .sns import SnsReceiver
from .timescale import FACTOR, systemd_seconds

__all__ = ["LOGIN_BOOTSTRAPS", "LoginHost", "ObservedCluster", "unit_exec_starts"]

#: The bootstrap of the node that submits and publishes the NCCL check (PCS login node group; ParallelCluster head).
#: HyperPod Slurm has no NCCL check (fmconstructs.platform.health ``_nccl_problem``): its login instance group
#: (TrainingPlatform's default ``login`` group on HyperPod) is the host without slurmd that the monitoring scrapes.
LOGIN_BOOTSTRAPS: Mapping[Backend, str] = {
    Backend.PCS: "Login/Bootstrap",
    Backend.PARALLELCLUSTER: "HeadBootstrap",
    Backend.HYPERPOD: "Bootstrap-login",
}
_UNIT_DIR = "/etc/systemd/system/"


def unit_exec_starts(unit: str) -> list[str]:
    """The ``ExecStart=`` command lines of a systemd unit, in order (a oneshot service may have several)."""
    return [line.split("=", 1)[1] for line in unit.splitlines() if line.startswith("ExecStart=")]


def _unit_value(unit: str, key: str) -> str | None:
    return next((line.split("=", 1)[1] for line in unit.splitlines() if line.startswith(f"{key}=")), None)


@dataclass
class LoginHost:
    """The login or head node (module notes): a host of the twin that runs no slurmd."""

    slurm: SlurmTwin
    bootstrap: Bootstrap
    node: TwinNode
    file_transform: Callable[[str, str], str] = lambda path, text: text
    timer_errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def install(self) -> None:
        """Its tools (the fakes, a node without GPUs) and the files of its bootstrap (``file_transform(path, text)``
        is the time factor on rendered schedules)."""
        for sub in (host for host, _ in self.node.binds()):
            sub.mkdir(parents=True, exist_ok=True)
        install_fakes(self.node.bin_dir, self.node.efa_bin_dir, HEALTHY.but(gpus=0, hostname=self.node.name))
        for path, (text, mode) in self.bootstrap.files().items():
            text = self.file_transform(path, text)
            if path.startswith("/opt/"):
                self.slurm.install(path, text, mode)
            elif path.startswith(_UNIT_DIR):
                (self.node.home / "systemd" / path.removeprefix(_UNIT_DIR)).write_text(text)

    def run(self, command: Sequence[str], *, timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
        """``command`` on this host (its binds over the cluster's common ones, in the twin's namespace)."""
        argv = chroot_argv(
            self.slurm.root,
            command,
            binds=self.slurm.common_binds() + self.node.binds(),
            namespace_pid=self.slurm.namespace.pid,
        )
        return subprocess.run(
            argv, capture_output=True, text=True, env=self.slurm.env(), timeout=timeout_s, check=False
        )

    def run_step(self, name: str, *, timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
        """The rendered bootstrap step ``name`` on this host (its script as the loader runs it)."""
        step = self.bootstrap.step(name)
        if step is None:
            raise TwinError(f"{self.bootstrap.path} has no step {name}")
        done = self.run(["/bin/bash", "-c", step.script], timeout_s=timeout_s)
        if done.returncode != 0:
            raise TwinError(f"step {name} exited {done.returncode}: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        return done

    def unit(self, name: str) -> str:
        return (self.node.home / "systemd" / name).read_text()

    def start_unit(self, name: str, *, timeout_s: float = 60.0) -> list[subprocess.CompletedProcess[str]]:
        """A oneshot service as systemd runs it: each ``ExecStart`` in order, stopping at a failure unless the
        command starts with ``-`` (systemd.service(5))."""
        results = []
        for command in unit_exec_starts(self.unit(name)):
            ignore = command.startswith("-")
            done = self.run(["/bin/sh", "-c", f"exec {command.lstrip('-')}"], timeout_s=timeout_s)
            results.append(done)
            if done.returncode != 0 and not ignore:
                raise TwinError(f"{name}: {command} exited {done.returncode}: {done.stderr.strip()[-1000:]}")
        return results

    def run_timer(self, timer: str) -> float:
        """Run the timer's service every ``OnUnitActiveSec`` (twin time) on a thread until :meth:`stop`; returns
        the period in real seconds."""
        span = _unit_value(self.unit(timer), "OnUnitActiveSec")
        if span is None:
            raise TwinError(f"{timer} has no OnUnitActiveSec")
        period = systemd_seconds(span) / FACTOR
        service = _unit_value(self.unit(timer), "Unit") or timer.removesuffix(".timer") + ".service"

        stop = self._stop

        def loop() -> None:
            while not stop.wait(period):
                try:
                    self.start_unit(service)
                except (TwinError, subprocess.SubprocessError) as error:
                    self.timer_errors.append(str(error))

        thread = threading.Thread(target=loop, name=f"timer-{timer}", daemon=True)
        thread.start()
        self._threads.append(thread)
        return period

    def stop(self) -> None:
        """Stop every timer (they may be started again)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
        self._threads.clear()
        self._stop = threading.Event()


@dataclass
class ObservedCluster:
    """One backend's cluster with its login/head node and monitoring (module notes)."""

    rendered: Rendered
    home: Path
    nodes: int = 4
    gpus: int = 8
    cpus: int = 8
    shared: tuple[str, ...] = ("/fsx",)
    file_transform: Callable[[str, str], str] = lambda path, text: text
    cluster: TwinCluster = field(init=False)
    login: LoginHost = field(init=False)
    receiver: SnsReceiver = field(init=False)
    monitoring: MonitoringTwin = field(init=False)

    @property
    def backend(self) -> Backend:
        return self.rendered.backend

    @property
    def slurm(self) -> SlurmTwin:
        assert self.cluster.slurm is not None
        return self.cluster.slurm

    def start(self, scenarios: Mapping[str, Scenario] | None = None) -> ObservedCluster:
        self.cluster = TwinCluster(
            rendered=self.rendered,
            home=self.home / "cluster",
            nodes=self.nodes,
            cpus=self.cpus,
            gpus=self.gpus,
            shared=self.shared,
        )
        self.cluster.start(dict(scenarios or {}))
        login_node = TwinNode(
            name="login", address="127.0.0.1", port=0, home=self.home / "login", instance_id="i-00000000000000fc1"
        )
        self.login = LoginHost(
            self.slurm, self.rendered.bootstrap(LOGIN_BOOTSTRAPS[self.backend]), login_node, self.file_transform
        )
        self.login.install()
        artifacts = monitoring_artifacts(self.rendered.template)
        topic = artifacts.alertmanager_config["receivers"][0]["sns_configs"][0]["topic_arn"]
        self.receiver = SnsReceiver(topic, lambda event: None, secret_key=DUMMY_SECRET_ACCESS_KEY)
        self.receiver.start()
        self.monitoring = MonitoringTwin(artifacts, workdir=self.home / "monitoring", sns_url=self.receiver.url)
        self.monitoring.start([*(self.monitored(name) for name in self.cluster.node_names), self._login_monitored()])
        self.slurm.wait_nodes_idle(timeout_s=90)
        return self

    def agent_config(self, bootstrap: Bootstrap) -> dict[str, Any]:
        step = bootstrap.step("observability")
        if step is None:
            raise TwinError(f"{bootstrap.path} has no observability step")
        return agent_config_from_user_data(step.script)

    def job_mapping_dir(self, name: str) -> Path:
        """Node ``name``'s ``/var/run/fmconstructs/dcgm-job-mapping`` on the host."""
        relative = DEFAULT_JOB_MAPPING_DIR.removeprefix("/var/run/fmconstructs/")
        return self.slurm.nodes[name].run_dir / relative

    def monitored(self, name: str) -> MonitoredNode:
        node = self.slurm.nodes[name]
        return MonitoredNode(
            name=name,
            instance_id=node.instance_id,
            agent_config=self.agent_config(self.rendered.bootstrap(self.cluster.profile.gpu_bootstrap)),
            textfile_dir=node.textfile_dir,
            scenario=node.bin_dir / "scenario.json",
            job_mapping_dir=self.job_mapping_dir(name),
        )

    def _login_monitored(self) -> MonitoredNode:
        node = self.login.node
        scenario = node.home / "exporters.json"
        scenario.write_text(json.dumps({"dcgm_exporter": "down"}))  # module notes: no dcgm-exporter on this host
        return MonitoredNode(
            name=node.name,
            instance_id=node.instance_id,
            agent_config=self.agent_config(self.login.bootstrap),
            textfile_dir=node.textfile_dir,
            scenario=scenario,
            drop_jobs=frozenset({"slurm"}),  # module notes: no Slurm exporter binary in the twin
        )

    def close(self) -> None:
        with contextlib.suppress(AttributeError):
            self.login.stop()
        with contextlib.suppress(AttributeError):
            self.monitoring.close()
        with contextlib.suppress(AttributeError):
            self.receiver.close()
        with contextlib.suppress(AttributeError):
            self.cluster.stop()

    def __enter__(self) -> ObservedCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
