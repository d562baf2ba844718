"""A twin cluster: :class:`~.slurm.SlurmTwin` set up with exactly what the library renders for one backend.

:class:`TwinCluster` takes a :class:`~.rendered.Rendered` platform and a :class:`BackendProfile` (what the service
itself does, as data: the slurm.conf lines it writes, where the library's node files land, which bootstrap steps run
at a node's boot and in which order relative to ``slurmd``), then:

- writes slurm.conf = the twin's base lines + the service's own lines + the library's settings, unchanged;
- installs the files of the controller's and the GPU nodes' bootstrap archives (``/opt`` is shared by the nodes,
  ``/etc/systemd/system`` is each node's own; the rest, such as the NVMe and Lustre set-up tools, is hardware set-up
  the fakes stand in for);
- boots each node as the service would: the chosen bootstrap steps run inside the node (their ``systemctl`` calls
  start the library's own units through the fake systemd of :mod:`.nodes`), ``slurmd`` starts before or after them.

:meth:`TwinCluster.replace` is what a replacement instance is to the twin: the node's slurmd stops, the node gets a
fresh healthy scenario, a new instance id, empty textfile and log directories, and boots again.
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fmconstructs.platform import Backend

from .nodes import HEALTHY, Scenario, install_fakes
from .procs import TwinError
from .rendered import Bootstrap, Rendered
from .root import twin_root
from .slurm import SlurmTwin, TwinNode
from .timescale import scale_slurm_settings

__all__ = ["HYPERPOD_REPLACING", "PROFILES", "BackendProfile", "TwinCluster"]

#: Slurm commands the library's scripts call by a service's own path: linked to the root's /usr/bin.
_SLURM_COMMANDS = (
    "scontrol",
    "sinfo",
    "squeue",
    "sbatch",
    "srun",
    "scancel",
    "sacct",
    "sacctmgr",
    "salloc",
    "scrontab",
)
#: Where the twin's GPU device files stand (device nodes in the shared /opt: the twin's /dev is the host's).
GPU_DEVICE_DIR = "/opt/fmtwin/dev"


@dataclass(frozen=True)
class BackendProfile:
    """What a service does that the library does not render (data, one per backend)."""

    backend: Backend
    #: slurm.conf lines the service writes itself (before the library's settings).
    service_settings: tuple[tuple[str, str], ...]
    #: Directories where the service keeps Slurm's commands (linked to /usr/bin in the twin).
    slurm_bin_dirs: tuple[str, ...]
    #: Which bootstrap archives are the controller's (head node) and the GPU nodes' (substring of the path).
    controller_bootstraps: tuple[str, ...]
    gpu_bootstrap: str
    #: Steps of the GPU nodes' bootstrap the twin runs at boot, in archive order (the others set up hardware or
    #: collectors that the twin replaces by its fakes and its own node exporters).
    boot_steps: tuple[str, ...]
    #: Whether slurmd starts before the boot steps run (ParallelCluster's OnNodeConfigured runs after slurmd is
    #: configured) or after them (PCS user data runs "before slurmd starts").
    slurmd_first: bool
    #: The node name prefix the service gives GPU nodes.
    node_prefix: str = "gpu"
    #: Where the service keeps slurm.conf when the library's steps edit it (the twin's /etc/slurm is that
    #: directory then); None: the library never opens slurm.conf.
    slurm_conf_dir: str | None = None
    #: Steps of a controller bootstrap the twin runs on the controller once slurmctld is up, before the nodes boot:
    #: (bootstrap path substring, step name). Their ``systemctl restart slurmctld`` restarts the twin's slurmctld.
    controller_steps: tuple[tuple[str, str], ...] = ()


PROFILES: dict[Backend, BackendProfile] = {
    # PCS writes slurm.conf itself; the custom settings are appended. PCS User Guide "Working with Amazon EC2 user
    # data": user data runs "after the node registers with PCS and before slurmd starts".
    Backend.PCS: BackendProfile(
        backend=Backend.PCS,
        service_settings=(),
        slurm_bin_dirs=tuple(f"/opt/aws/pcs/scheduler/slurm-{v}/bin" for v in ("24.11", "25.05", "25.11")),
        controller_bootstraps=(),
        gpu_bootstrap="Gpu/LaunchTemplate/Bootstrap",
        boot_steps=("node-health", "slurm-scripts"),
        slurmd_first=False,
    ),
    # ParallelCluster's slurm.conf (aws-parallelcluster-cookbook templates/default/slurm/slurm.conf.erb, as the
    # pcluster helper read it at f75d84c; UNCONFIRMED by the twin's author, who did not open the file):
    # Prolog/Epilog run every file of the shared prolog.d/epilog.d; SchedulerParameters has nohold_on_prolog_fail
    # (ParallelCluster User Guide "Slurm prolog and epilog").
    Backend.PARALLELCLUSTER: BackendProfile(
        backend=Backend.PARALLELCLUSTER,
        service_settings=(
            ("Prolog", "/opt/slurm/etc/scripts/prolog.d/*"),
            ("Epilog", "/opt/slurm/etc/scripts/epilog.d/*"),
            ("SchedulerParameters", "nohold_on_prolog_fail"),
        ),
        slurm_bin_dirs=("/opt/slurm/bin",),
        controller_bootstraps=("HeadBootstrap", "SlurmScripts"),
        gpu_bootstrap="GpuBootstrap",
        boot_steps=("node-health",),
        slurmd_first=True,
    ),
    # HyperPod Slurm with the API-driven configuration (TrainingPlatform's default on HyperPod): HyperPod's AMI
    # configures and starts Slurm, then runs each group's OnInitComplete (fmconstructs.hyperpod.lifecycle: "after
    # HyperPod configured and started Slurm"), so slurmd runs before the GPU group's steps. The AMI's slurmd runs
    # the files of /opt/slurm/etc/prolog.d and epilog.d (awsome-distributed-training 0edaf15,
    # 1.architectures/5.sagemaker-hyperpod/Extensions/observability/README.md: the AMI provides
    # "/opt/slurm/etc/prolog.d/700_dcgm_job_map_register.sh" and ".../epilog.d/700_dcgm_job_map_cleanup.sh");
    # the glob form of Prolog=/Epilog= below is UNCONFIRMED (the AMI's slurm.conf is not published; the
    # published base-config's start_slurm.sh, for OnCreate clusters, sets Prolog=/opt/slurm/etc/scripts/prolog.sh
    # instead), and so is whether it sets nohold_on_prolog_fail (not set here; the library's HyperPod pieces never
    # fail a job). The AMI's own 700_ pieces are not in the twin (not published). slurm.conf is
    # /opt/slurm/etc/slurm.conf (base-config lifecycle_script.py SLURM_CONF; fmconstructs.hyperpod.slurm_scripts),
    # which the controller's PrologFlags step edits. Slurm's commands: /opt/slurm/bin (base-config
    # observability/install_slurm_exporter.sh: PATH=/opt/slurm/bin). What HyperPod itself does to nodes (deep
    # health checks in a maintenance reservation, its health monitoring agent, node recovery) is HyperPod's agent,
    # which the twin does not run; its replacement on BatchReplaceClusterNodes is TwinCluster.hyperpod_replace.
    Backend.HYPERPOD: BackendProfile(
        backend=Backend.HYPERPOD,
        service_settings=(
            ("Prolog", "/opt/slurm/etc/prolog.d/*"),
            ("Epilog", "/opt/slurm/etc/epilog.d/*"),
        ),
        slurm_bin_dirs=("/opt/slurm/bin",),
        controller_bootstraps=("Bootstrap-controller",),
        gpu_bootstrap="Bootstrap-gpu",
        boot_steps=("slurm-scripts", "node-health"),
        slurmd_first=True,
        slurm_conf_dir="/opt/slurm/etc",
        controller_steps=(("Bootstrap-controller", "slurm-prolog-flags"),),
    ),
}

#: The twin's reason on a node HyperPod is replacing (not a reason the library sets).
HYPERPOD_REPLACING = "twin: HyperPod replaces the instance"
#: The controller's ``systemctl`` in the twin (on PATH for the controller steps only): ``restart slurmctld`` asks
#: the twin to restart its slurmctld (done when the step ends); anything else succeeds and does nothing.
_CONTROLLER_BIN = "/opt/twin/controller-bin"
_RESTART_REQUEST = "/opt/twin/controller-bin/restart-slurmctld"
_CONTROLLER_SYSTEMCTL = f"""#!/bin/bash
# The cluster twin's controller systemctl (tests/support/twin/cluster.py).
if [ "$1" = restart ] && [ "${{2%.service}}" = slurmctld ]; then
  touch {_RESTART_REQUEST}
fi
exit 0
"""


@dataclass
class TwinCluster:
    """One backend's cluster on real Slurm (see the module notes)."""

    rendered: Rendered
    home: Path
    nodes: int = 4
    partition: str = "gpu"
    settings_filter: Callable[[list[tuple[str, str]]], list[tuple[str, str]]] | None = None
    #: The GPU nodes' name prefix when the service's naming matters to a loop (default: the profile's), e.g.
    #: ParallelCluster's ``<queue>-st-<compute resource>`` that the library's initial topology.conf lists.
    node_prefix: str | None = None
    #: Called after the files are installed and before slurmctld starts (a head node's OnNodeStart step).
    before_controller: Callable[[TwinCluster], None] | None = None
    #: CPUs per node in slurm.conf (more than the host has: slurmd takes the configured count).
    cpus: int = 2
    #: GPUs per node as Slurm GRES (``Gres=gpu:N``, gres.conf ``File=``), which PCS and ParallelCluster configure
    #: themselves for GPU instances; 0: none (jobs then see no ``SLURM_JOB_GPUS``).
    gpus: int = 0
    #: Directories every node and the login/head node share (a file system's mount point, such as ``/fsx``).
    shared: tuple[str, ...] = ()
    slurm: SlurmTwin | None = field(default=None, init=False)
    replacements: list[str] = field(default_factory=list, init=False)

    @property
    def profile(self) -> BackendProfile:
        return PROFILES[self.rendered.backend]

    @property
    def node_names(self) -> list[str]:
        prefix = self.node_prefix or self.profile.node_prefix
        return [f"{prefix}-{i}" for i in range(1, self.nodes + 1)]

    def settings(self) -> list[tuple[str, str]]:
        """The service's lines, then the library's settings, as given (schedules in twin time: :mod:`.timescale`)."""
        gres = [("GresTypes", "gpu")] if self.gpus else []
        return scale_slurm_settings([*self.profile.service_settings, *gres, *self.rendered.slurm_settings()])

    def shared_dir(self, path: str) -> Path:
        """The host directory of a shared path (``/fsx``)."""
        return self.home / "shared" / path.strip("/").replace("/", "_")

    def _gres(self) -> tuple[dict[str, str], dict[str, str]]:
        if not self.gpus:
            return {}, {}
        devices = self.home / "opt" / GPU_DEVICE_DIR.removeprefix("/opt/")
        devices.mkdir(parents=True, exist_ok=True)
        for index in range(self.gpus):
            # slurmd wants a character device ("is not a valid character or block device, fix your gres.conf");
            # major 195 is NVIDIA's (Linux Documentation/admin-guide/devices.txt); nothing ever opens these.
            device = devices / f"nvidia{index}"
            if not device.exists():
                os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(195, index))
        gres_conf = f"Name=gpu File={GPU_DEVICE_DIR}/nvidia[0-{self.gpus - 1}]\n"
        return {"Gres": f"gpu:{self.gpus}"}, {"gres.conf": gres_conf}

    # --- set-up -----------------------------------------------------------------------------------------------
    def start(self, scenarios: dict[str, Scenario] | None = None, *, boot: bool = True) -> TwinCluster:
        """Configure the cluster, start its controller and (``boot``) boot every node (else :meth:`boot_all`)."""
        node_settings, extra_files = self._gres()
        for path in self.shared:
            self.shared_dir(path).mkdir(parents=True, exist_ok=True)
        self.slurm = SlurmTwin(
            root=twin_root(),
            home=self.home,
            node_names=self.node_names,
            partitions={self.partition: self.node_names},
            settings=self.settings(),
            node_settings=node_settings,
            extra_files=extra_files,
            cpus=self.cpus,
            shared_dirs=[(self.shared_dir(p), p) for p in self.shared],
        )
        self._link_slurm_conf_dir()
        self.slurm.namespace.start()
        self.slurm._make_nodes()
        self._install_commands()
        for path in self.profile.controller_bootstraps:
            self._install_files(self.rendered.bootstrap(path), node=None)
        gpu = self.rendered.bootstrap(self.profile.gpu_bootstrap)
        for name, node in self.slurm.nodes.items():
            self._install_files(gpu, node=node)
            self.set_scenario(name, (scenarios or {}).get(name, HEALTHY))
        if self.before_controller is not None:
            self.before_controller(self)
        self.slurm.start_controller()
        self._run_controller_steps()
        if boot:
            self.boot_all()
        return self

    def _link_slurm_conf_dir(self) -> None:
        """Where the service keeps slurm.conf (``slurm_conf_dir``) is the twin's /etc/slurm: one directory."""
        if self.profile.slurm_conf_dir is None:
            return
        shared = self.home / "opt" / self.profile.slurm_conf_dir.removeprefix("/opt/")
        shared.mkdir(parents=True, exist_ok=True)
        (self.home / "etc-slurm").symlink_to(shared, target_is_directory=True)

    def _run_controller_steps(self) -> None:
        """The controller's steps (``controller_steps``), then the slurmctld restart they asked for."""
        assert self.slurm is not None
        if not self.profile.controller_steps:
            return
        self.slurm.install(f"{_CONTROLLER_BIN}/systemctl", _CONTROLLER_SYSTEMCTL)
        request = self.home / _RESTART_REQUEST.removeprefix("/")
        path = f"{_CONTROLLER_BIN}:{self.slurm.env()['PATH']}"
        for contains, step_name in self.profile.controller_steps:
            step = self.rendered.bootstrap(contains).step(step_name)
            if step is None:
                raise TwinError(f"no step {step_name!r} in the bootstrap {contains!r}")
            done = self.slurm.run(["/usr/bin/env", f"PATH={path}", "/bin/bash", "-c", step.script], check=False)
            with (self.home / "log" / "twin-controller-steps.log").open("a") as out:
                out.write(f"== step {step_name}: exit {done.returncode}\n{done.stdout}{done.stderr}")
        if request.exists():
            request.unlink()
            self.slurm.restart_controller()

    def boot_all(self) -> None:
        for name in self.node_names:
            self.boot(name)

    def _install_commands(self) -> None:
        assert self.slurm is not None
        for directory in self.profile.slurm_bin_dirs:
            target = self.home / "opt" / directory.removeprefix("/opt/")
            target.mkdir(parents=True, exist_ok=True)
            for command in _SLURM_COMMANDS:
                link = target / command
                if not link.exists():
                    link.symlink_to(f"/usr/bin/{command}")

    def _install_files(self, bootstrap: Bootstrap, node: TwinNode | None) -> None:
        """``/opt/...`` into the shared tree; ``/etc/systemd/system/...`` into the node's own; the rest is skipped."""
        assert self.slurm is not None
        for path, (text, mode) in bootstrap.files().items():
            if path.startswith("/opt/"):
                self.slurm.install(path, text, mode)
            elif path.startswith("/etc/systemd/system/") and node is not None:
                target = node.home / "systemd" / path.removeprefix("/etc/systemd/system/")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)

    def set_scenario(self, name: str, scenario: Scenario) -> None:
        """What node ``name``'s fakes report from now on."""
        assert self.slurm is not None
        node = self.slurm.nodes[name]
        full = scenario.but(hostname=name, address=node.address, instance_id=node.instance_id)
        install_fakes(node.bin_dir, node.efa_bin_dir, full)

    def scenario(self, name: str) -> Scenario:
        assert self.slurm is not None
        return Scenario.read(self.slurm.nodes[name].bin_dir)

    # --- boot and replacement ---------------------------------------------------------------------------------
    def run_steps(self, name: str, steps: Sequence[str]) -> None:
        assert self.slurm is not None
        bootstrap = self.rendered.bootstrap(self.profile.gpu_bootstrap)
        for step_name in steps:
            step = bootstrap.step(step_name)
            if step is None:
                continue
            done = self.slurm.run(["/bin/bash", "-c", step.script], node=name, check=False, timeout_s=120)
            log = self.slurm.nodes[name].log_dir / "twin-steps.log"
            with log.open("a") as out:
                out.write(f"== step {step_name}: exit {done.returncode}\n{done.stdout}{done.stderr}")

    def boot(self, name: str, *, on_slurmd: Callable[[], object] | None = None) -> None:
        """Boot node ``name``: its bootstrap steps and slurmd, in the service's order (``on_slurmd`` runs once
        slurmd started, before the steps where slurmd comes first)."""
        assert self.slurm is not None
        if self.profile.slurmd_first:
            self.slurm.start_slurmd(name)
            if on_slurmd is not None:
                on_slurmd()
            self.run_steps(name, self.profile.boot_steps)
        else:
            self.run_steps(name, self.profile.boot_steps)
            self.slurm.start_slurmd(name)

    def replace(
        self,
        name: str,
        scenario: Scenario = HEALTHY,
        *,
        instance_id: str | None = None,
        on_slurmd: Callable[[], object] | None = None,
    ) -> None:
        """A new instance for node ``name`` (healthy unless told): fresh disk, new instance id (``instance_id``, e.g.
        the one an EC2 double launched, else one derived from the old), booted (``on_slurmd``: :meth:`boot`)."""
        assert self.slurm is not None
        node = self.slurm.nodes[name]
        self.slurm.stop_slurmd(name)
        for directory in (node.textfile_dir, node.log_dir, node.state_dir):
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir(parents=True)
        serial = int(node.instance_id[2:], 16) + 0x1000
        node.instance_id = instance_id or f"i-{serial:017x}"
        self.set_scenario(name, scenario)
        self.replacements.append(name)
        self.boot(name, on_slurmd=on_slurmd)

    def hyperpod_replace(self, name: str, *, instance_id: str | None = None) -> None:
        """HyperPod's replacement of node ``name`` (BatchReplaceClusterNodes), as the twin models it: the node leaves
        Slurm (DOWN, so Slurm requeues what ran there) while its instance is replaced; the new instance's slurmd
        registers it as a fresh node (no drain carried over: on HyperPod a new instance gets a new IP-based host name,
        ListClusterNodes ``PrivateDnsHostname``, so a new Slurm node; the twin keeps the name and resumes the record
        once the new slurmd answers), then its OnInitComplete set-up (the gate) runs. UNCONFIRMED: how HyperPod's
        agent moves the Slurm node meanwhile."""
        assert self.slurm is not None
        slurm = self.slurm
        slurm.run(["scontrol", "update", f"nodename={name}", "state=down", f"reason={HYPERPOD_REPLACING}"])
        # A terminated instance takes its processes with it; in the twin the job steps outlive slurmd, so wait until
        # Slurm killed them (seen otherwise: the requeued job met its own old step on the new slurmd, "Duplicate
        # jobid", and the node drained).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            done = slurm.run(["scontrol", "listpids"], node=name, check=False)
            if done.returncode != 0 or len(done.stdout.strip().splitlines()) <= 1:
                break
            time.sleep(0.5)

        def registered_then_fresh() -> None:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                state = slurm.node_info(name).get("State", "")
                if "NOT_RESPONDING" not in state and "*" not in state:
                    break
                time.sleep(0.5)
            slurm.run(["scontrol", "update", f"nodename={name}", "state=resume"], check=False)

        self.replace(name, instance_id=instance_id, on_slurmd=registered_then_fresh)

    def node_for_instance(self, instance_id: str) -> str:
        assert self.slurm is not None
        for name, node in self.slurm.nodes.items():
            if node.instance_id == instance_id:
                return name
        raise TwinError(f"no twin node has instance id {instance_id}")

    def stop(self) -> None:
        if self.slurm is not None:
            self.slurm.stop()

    def __enter__(self) -> TwinCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
