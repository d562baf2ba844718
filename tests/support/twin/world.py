"""The twin's two halves in one world: a :class:`~.cluster.TwinCluster` on real Slurm, watched by a
:class:`~.monitoring.MonitoringTwin` whose Alertmanager notifies the remediation handler (:class:`~.remediation.
RemediationBridge`), whose actions land back on the cluster.

:class:`TwinWorld` wires, all from one synthesized platform (:func:`~.rendered.build_platform`):

- **nodes -> metrics**: each Slurm node's textfile directory (where the library's gate, prolog and idle checks write
  ``fm_node_check_*``) is the textfile directory of that node's real node_exporter; each node's fake dcgm-exporter
  reads the node's scenario file (the one its fake GPU tools read: ``xid`` is the last Xid of the kernel log,
  :meth:`~.nodes.Scenario.write`); the scrape jobs are the GPU nodes' rendered agent configuration (the
  ``observability`` step of their bootstrap), the rules and Alertmanager the workspace's;
- **alerts -> handler**: Alertmanager publishes to the local SNS endpoint, which runs the handler's ``process``
  with the rendered ``POLICY``/``TARGET`` (moto for DynamoDB, SNS, EC2; every GPU node and the controller are moto
  instances with the twin's addresses, the instance ids the twin nodes carry);
- **handler -> cluster**: SSM Run Command runs the handler's Slurm script on the controller (PCS: the login node;
  ParallelCluster: the head node) inside the twin (:meth:`~.slurm.SlurmTwin.run`); ``terminate_instances`` of a
  compute instance (PCS: the handler's replacement) gives that node a new healthy instance
  (:meth:`~.cluster.TwinCluster.replace` with a new moto instance id), re-scraped under its new id; HyperPod:
  ``batch_replace_cluster_nodes`` of the bridge's :class:`~.remediation.TwinSageMaker` does the same.
- **ParallelCluster's clustermgtd** (:class:`Clustermgtd`): the library's remediation on ParallelCluster only sets a
  node DOWN or DRAIN ("clustermgtd replaces it"); the twin runs clustermgtd's documented rule as data-driven code, not
  a replace call from the test.

The handler's log lines (its stdout, one JSON object a line, what CloudWatch Logs would keep) are kept in
:attr:`TwinWorld.handler_log`. Replacements are serialized (one at a time, as each reloads Prometheus).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fmconstructs.platform import Backend

from .artifacts import agent_config_from_user_data, monitoring_artifacts, remediation_artifacts
from .cluster import TwinCluster
from .exporters import MonitoredNode
from .monitoring import DUMMY_SECRET_ACCESS_KEY, MonitoringTwin
from .nodes import HEALTHY, Scenario
from .procs import TwinError
from .remediation import RemediationBridge, deliver_logged
from .rendered import Rendered
from .slurm import _key_values
from .sns import SnsReceiver
from .timescale import FACTOR, LibraryClock

__all__ = ["CLUSTERMGTD_REASON", "Clustermgtd", "Replacement", "TwinWorld", "clustermgtd_unhealthy"]

#: The reason clustermgtd sets on an unhealthy static node before it terminates the instance behind it
#: (aws-parallelcluster-node src/slurm_plugin/clustermgtd.py ``_handle_unhealthy_static_nodes``:
#: ``set_nodes_down(node_list, reason="Static node maintenance: unhealthy node is being replaced")``).
CLUSTERMGTD_REASON = "Static node maintenance: unhealthy node is being replaced"
#: clustermgtd's loop period: ``loop_time`` 60 s (clustermgtd.py ``ClustermgtdConfig.DEFAULTS``, as
#: fmconstructs/parallelcluster/health.py reads it; UNCONFIRMED value: the DEFAULTS table was not re-read here), in
#: twin time.
CLUSTERMGTD_LOOP_S = 60 / FACTOR
#: The controller's address in the twin (slurmctld binds 127.0.0.1): the moto login/head instance's private IP.
CONTROLLER_ADDRESS = "127.0.0.1"


def clustermgtd_unhealthy(state: str) -> bool:
    """Whether clustermgtd calls a static node with Slurm state ``state`` (``IDLE+DRAIN``) unhealthy, with its
    defaults ``terminate_drain_nodes`` and ``terminate_down_nodes`` True (aws-parallelcluster-node
    src/slurm_plugin/slurm_resources.py ``StaticNode.is_state_healthy``: unhealthy when ``is_drained()`` -- DRAIN,
    not POWER_DOWN, and IDLE or DOWN -- or ``is_down()`` -- DOWN and not POWERING_DOWN; whatever the reason). A node
    clustermgtd is replacing already is skipped by the caller (``is_being_replaced``)."""
    states = set(state.split("+"))
    down = "DOWN" in states and "POWERING_DOWN" not in states
    drained = "DRAIN" in states and "POWER_DOWN" not in states and ("IDLE" in states or down)
    return drained or down


@dataclass(frozen=True)
class Replacement:
    """One node given a new instance: by whom (``handler``: PCS terminate; ``clustermgtd``), old and new ids."""

    node: str
    old_instance: str
    new_instance: str
    by: str
    at: float


class Clustermgtd:
    """ParallelCluster's clustermgtd as far as the loops need it: every loop, each static compute node whose state
    :func:`clustermgtd_unhealthy` calls unhealthy is set DOWN with :data:`CLUSTERMGTD_REASON`, its instance
    terminated and a new one launched (``_handle_unhealthy_static_nodes``); once the new instance has booted, the node
    is resumed (UNCONFIRMED: how ParallelCluster returns a replaced static node to service was not read; the twin
    resumes it after the node's bootstrap, the gate included, has run)."""

    def __init__(self, world: TwinWorld) -> None:
        self.world = world
        self.seen: list[tuple[str, str, str]] = []  # (node, state, reason) of each node it replaced
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="twin-clustermgtd", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def _run(self) -> None:
        while not self._stop.wait(CLUSTERMGTD_LOOP_S):
            try:
                self.loop()
            except BaseException as error:  # keep looping, as clustermgtd logs and goes on
                self.errors.append(error)

    def loop(self) -> None:
        slurm = self.world.slurm
        for line in slurm.run(["scontrol", "-o", "show", "node"], check=False).stdout.splitlines():
            info = _key_values(line)
            name = info.get("NodeName", "")
            if name not in self.world.cluster.node_names or not clustermgtd_unhealthy(info.get("State", "")):
                continue
            self.seen.append((name, info.get("State", ""), info.get("Reason", "")))
            slurm.run(["scontrol", "update", f"nodename={name}", "state=down", f"reason={CLUSTERMGTD_REASON}"])
            old = slurm.nodes[name].instance_id
            self.world.bridge.terminate_quietly(old)
            self.world.new_instance(name, by="clustermgtd")
            slurm.run(["scontrol", "update", f"nodename={name}", "state=resume"], check=False)


@dataclass
class TwinWorld:
    """One backend's cluster, monitoring and remediation (module docstring). ``with TwinWorld(...).start() as w``."""

    rendered: Rendered
    home: Path
    nodes: int = 4
    cluster: TwinCluster = field(init=False)
    bridge: WorldBridge = field(init=False)
    receiver: SnsReceiver = field(init=False)
    monitoring: MonitoringTwin = field(init=False)
    clustermgtd: Clustermgtd | None = field(default=None, init=False)
    replacements: list[Replacement] = field(default_factory=list, init=False)
    replacement_errors: list[BaseException] = field(default_factory=list, init=False)
    handler_log: list[dict[str, Any]] = field(default_factory=list, init=False)
    #: The handler's clock: its hourly windows (rate limit, leases) last one twin minute.
    clock: LibraryClock = field(default_factory=LibraryClock, init=False)
    _replacing: threading.Lock = field(default_factory=threading.Lock, init=False)
    _workers: list[threading.Thread] = field(default_factory=list, init=False)

    @property
    def backend(self) -> Backend:
        return self.rendered.backend

    @property
    def slurm(self) -> Any:
        assert self.cluster.slurm is not None
        return self.cluster.slurm

    # --- set-up -----------------------------------------------------------------------------------------------
    def start(self, scenarios: Mapping[str, Scenario] | None = None) -> TwinWorld:
        """Controller first, then moto instances for every node, monitoring, then the nodes boot."""
        self.cluster = TwinCluster(rendered=self.rendered, home=self.home / "cluster", nodes=self.nodes)
        self.cluster.start(dict(scenarios or {}), boot=False)
        remediation = remediation_artifacts(self.rendered.template)
        self.bridge = WorldBridge(
            remediation,
            replace=self._replace_from_handler,
            run_slurm_script=self._run_slurm_script,
            clock=self.clock,
        )
        self.bridge.start()
        role = "login" if self.backend is Backend.PCS else "head"
        self.bridge.launch(role, private_ip=CONTROLLER_ADDRESS)
        for name in self.cluster.node_names:
            node = self.slurm.nodes[name]
            node.instance_id = self.bridge.launch("compute", private_ip=node.address)
            self.cluster.set_scenario(name, (scenarios or {}).get(name, HEALTHY))
        self.receiver = SnsReceiver(
            remediation.topic_arn,
            self._deliver,
            filter_policy=remediation.filter_policy,
            secret_key=DUMMY_SECRET_ACCESS_KEY,
        )
        self.receiver.start()
        artifacts = monitoring_artifacts(self.rendered.template)
        self.monitoring = MonitoringTwin(artifacts, workdir=self.home / "monitoring", sns_url=self.receiver.url)
        self.monitoring.start([self.monitored(name) for name in self.cluster.node_names])
        self.cluster.boot_all()
        if self.backend is Backend.PARALLELCLUSTER:
            self.clustermgtd = Clustermgtd(self)
            self.clustermgtd.start()
        return self

    def agent_config(self) -> dict[str, Any]:
        """The GPU nodes' Prometheus agent configuration, as their ``observability`` step writes it."""
        step = self.rendered.bootstrap(self.cluster.profile.gpu_bootstrap).step("observability")
        if step is None:
            raise TwinError("the GPU nodes' bootstrap has no observability step")
        return agent_config_from_user_data(step.script)

    def monitored(self, name: str) -> MonitoredNode:
        """Node ``name`` as the monitoring half sees it now (its current instance id)."""
        node = self.slurm.nodes[name]
        return MonitoredNode(
            name=name,
            instance_id=node.instance_id,
            agent_config=self.agent_config(),
            textfile_dir=node.textfile_dir,
            scenario=node.bin_dir / "scenario.json",
        )

    def close(self) -> None:
        if self.clustermgtd is not None:
            self.clustermgtd.stop()
        for worker in self._workers:
            worker.join(timeout=120)
        with contextlib.suppress(AttributeError):
            self.receiver.close()
        with contextlib.suppress(AttributeError):
            self.monitoring.close()
        with contextlib.suppress(AttributeError):
            self.bridge.close()
        with contextlib.suppress(AttributeError):
            self.cluster.stop()

    def __enter__(self) -> TwinWorld:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the handler's side -------------------------------------------------------------------------------------
    def _deliver(self, event: dict[str, Any]) -> object:
        """The SNS receiver's delivery: the handler's call, its stdout kept as its log."""
        return deliver_logged(self.bridge, event, self.handler_log)

    def _run_slurm_script(self, script: str) -> tuple[int, str, str]:
        done = self.slurm.run(["/bin/bash", "-c", script], check=False, timeout_s=90)
        return done.returncode, done.stdout, done.stderr

    def _replace_from_handler(self, instance_id: str) -> None:
        """PCS: the handler terminated ``instance_id``, the node group launches a new one; HyperPod: the handler
        called BatchReplaceClusterNodes, HyperPod replaces it (:meth:`~.cluster.TwinCluster.hyperpod_replace`). On a
        worker thread: the handler holds the bridge's lock."""
        name = self.cluster.node_for_instance(instance_id)
        worker = threading.Thread(
            target=self._guarded, args=(lambda: self.new_instance(name, by="handler"),), name=f"replace-{name}"
        )
        self._workers.append(worker)
        worker.start()

    def _guarded(self, action: Callable[[], object]) -> None:
        try:
            action()
        except BaseException as error:
            self.replacement_errors.append(error)

    def new_instance(self, name: str, *, by: str) -> Replacement:
        """A new healthy instance for node ``name`` (moto instance, twin boot, scraped under the new id)."""
        with self._replacing:
            node = self.slurm.nodes[name]
            old = node.instance_id
            new = self.bridge.launch("compute", private_ip=node.address)
            if self.backend is Backend.HYPERPOD:
                self.cluster.hyperpod_replace(name, instance_id=new)
            else:
                self.cluster.replace(name, instance_id=new)
            self.monitoring.replace_node(name, self.monitored(name))
            replacement = Replacement(name, old, new, by, time.monotonic())
            self.replacements.append(replacement)
            return replacement

    # --- queries ------------------------------------------------------------------------------------------------
    def records(self, **match: str) -> list[dict[str, Any]]:
        """The handler's records whose fields equal ``match``."""
        return [r for r in self.bridge.records() if all(r.get(k) == v for k, v in match.items())]

    def wait_replaced(self, name: str, old_instance: str, timeout_s: float = 60) -> Replacement:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.replacement_errors:
                raise TwinError(f"a replacement failed: {self.replacement_errors[-1]!r}")
            for replacement in self.replacements:
                if replacement.node == name and replacement.old_instance == old_instance:
                    return replacement
            time.sleep(0.2)
        raise TwinError(f"{name} ({old_instance}) not replaced after {timeout_s:.0f}s: {self.replacements}")


class WorldBridge(RemediationBridge):
    """The bridge with one more door: terminate an instance without the handler's hook (clustermgtd's own calls)."""

    def terminate_quietly(self, instance_id: str) -> None:
        if self.ec2 is None:
            raise TwinError("the bridge is not started")
        with self._lock:
            self.ec2._moto.terminate_instances(InstanceIds=[instance_id])
