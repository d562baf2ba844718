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

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fmconstructs.platform import Backend

from .nodes import HEALTHY, Scenario, install_fakes
from .procs import TwinError
from .rendered import Bootstrap, Rendered
from .root import twin_root
from .slurm import SlurmTwin, TwinNode

__all__ = ["PROFILES", "BackendProfile", "TwinCluster"]

#: Slurm commands the library's scripts call by a service's own path: linked to the root's /usr/bin.
_SLURM_COMMANDS = ("scontrol", "sinfo", "squeue", "sbatch", "srun", "scancel", "sacct", "sacctmgr", "salloc")


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
}


@dataclass
class TwinCluster:
    """One backend's cluster on real Slurm (see the module notes)."""

    rendered: Rendered
    home: Path
    nodes: int = 4
    partition: str = "gpu"
    settings_filter: Callable[[list[tuple[str, str]]], list[tuple[str, str]]] | None = None
    slurm: SlurmTwin | None = field(default=None, init=False)
    replacements: list[str] = field(default_factory=list, init=False)

    @property
    def profile(self) -> BackendProfile:
        return PROFILES[self.rendered.backend]

    @property
    def node_names(self) -> list[str]:
        return [f"{self.profile.node_prefix}-{i}" for i in range(1, self.nodes + 1)]

    def settings(self) -> list[tuple[str, str]]:
        """The service's lines, then the library's settings, as given."""
        return [*self.profile.service_settings, *self.rendered.slurm_settings()]

    # --- set-up -----------------------------------------------------------------------------------------------
    def start(self, scenarios: dict[str, Scenario] | None = None, *, boot: bool = True) -> TwinCluster:
        """Configure the cluster, start its controller and (``boot``) boot every node (else :meth:`boot_all`)."""
        self.slurm = SlurmTwin(
            root=twin_root(),
            home=self.home,
            node_names=self.node_names,
            partitions={self.partition: self.node_names},
            settings=self.settings(),
        )
        self.slurm.namespace.start()
        self.slurm._make_nodes()
        self._install_commands()
        for path in self.profile.controller_bootstraps:
            self._install_files(self.rendered.bootstrap(path), node=None)
        gpu = self.rendered.bootstrap(self.profile.gpu_bootstrap)
        for name, node in self.slurm.nodes.items():
            self._install_files(gpu, node=node)
            self.set_scenario(name, (scenarios or {}).get(name, HEALTHY))
        self.slurm.start_controller()
        if boot:
            self.boot_all()
        return self

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

    def boot(self, name: str) -> None:
        """Boot node ``name``: its bootstrap steps and slurmd, in the service's order."""
        assert self.slurm is not None
        if self.profile.slurmd_first:
            self.slurm.start_slurmd(name)
            self.run_steps(name, self.profile.boot_steps)
        else:
            self.run_steps(name, self.profile.boot_steps)
            self.slurm.start_slurmd(name)

    def replace(self, name: str, scenario: Scenario = HEALTHY, *, instance_id: str | None = None) -> None:
        """A new instance for node ``name`` (healthy unless told): fresh disk, new instance id (``instance_id``, e.g.
        the one an EC2 double launched, else one derived from the old), booted."""
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
        self.boot(name)

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
