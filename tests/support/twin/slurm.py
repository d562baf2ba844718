"""A real Slurm 24.11 cluster on one host: munged, slurmctld and one ``slurmd -N <node>`` per node (twin.md).

Each daemon runs chrooted in the cached trixie root (:mod:`.root`) in its own mount namespace, with the twin's
state bind-mounted over the root: ``/etc/slurm`` (the slurm.conf this module writes from the library's settings),
``/etc/munge`` and ``/run/munge``, the spool and log directories, ``/opt`` (what the library installs on nodes) and,
per node, that node's fake tools (``/usr/local/bin``, ``/opt/amazon/efa/bin``), its node exporter textfile directory
and its ``/var/log/fmconstructs``. So every slurmd, and every prolog, epilog and health check it runs, sees its own
"host", while all of them share the Slurm configuration, as nodes of one cluster do.

Every daemon runs in the twin's own network namespace (:class:`~.root.TwinNamespace`), which has nothing but
loopback: each node has its own address in 127.0.0.0/8 (``NodeAddr``) and port, slurmctld binds 127.0.0.1
(``CommunicationParameters=NoCtldInAddrAny``), and nothing of the twin is reachable from the host's network.

What the twin's slurm.conf holds that a service generates itself (PCS and ParallelCluster write their own
slurm.conf; the library only adds settings): the cluster name, controller, nodes and partitions, and the few
plugins a chroot without cgroups or a database needs (``proctrack/linuxproc``, ``task/none``, no accounting).
Everything the library renders (custom settings, Prolog/Epilog, HealthCheckProgram, topology) is appended as given.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .procs import Daemon, Daemons, TwinError, free_port, wait_for
from .root import TwinNamespace, chroot_argv

__all__ = ["SlurmTwin", "TwinNode"]

#: Where the checks and the gate look for tools (fmconstructs.health.checks: /opt/amazon/efa/bin first, then PATH
#: with /usr/local/bin before /usr/bin): a node's fakes go into these two directories of its own.
#: The twin's job credential lifetime (slurm.conf ``AuthInfo=cred_expire=``), in seconds. slurm.conf(5) of Slurm
#: 24.11.5 (Debian 13 man page in the twin's root): "Default job step credential lifetime ... It must be sufficiently
#: long enough to load user environment, run prolog ... This also controls how long a requeued job must wait before
#: starting again. The default value is 120 seconds." Slurm refuses values it deems too small ("AuthInfo=cred_expire=%d
#: invalid" in libslurm; the bound is UNCONFIRMED, said to be 5). This is the twin's own daemon configuration, not a
#: library artifact: AWS's services keep Slurm's default. The default scaled by the twin's factor (120 s / 60) would
#: be 2 s, shorter than the twin's prologs on a busy 2-core host, so the twin takes 15 s: a requeued job waits 16 s
#: instead of 121 s.
CRED_EXPIRE_S = 15
#: How long Slurm 24.11 holds a requeued job (``batch_requeue_fini``: BeginTime = now + cred_expire + 1).
REQUEUE_DELAY_S = CRED_EXPIRE_S + 1
_NODE_BIN = "/usr/local/bin"
_EFA_BIN = "/opt/amazon/efa/bin"
_TEXTFILE = "/var/lib/node_exporter/textfile"
_FM_LOG = "/var/log/fmconstructs"
#: The node's own ``/var/run/fmconstructs`` (job-mapping and app-metrics directories, their locks): ``/var/run`` is a
#: link to ``/run`` in the root, so the bind goes to ``/run`` (a bind onto the link would follow it on the host).
_FM_RUN = "/run/fmconstructs"
_FM_STATE = "/var/lib/fmconstructs"
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass
class TwinNode:
    """One Slurm node of the twin and its private directories on the host."""

    name: str
    address: str
    port: int
    home: Path
    instance_id: str
    features: tuple[str, ...] = ()
    slurmd: Daemon | None = None

    @property
    def bin_dir(self) -> Path:
        return self.home / "bin"

    @property
    def efa_bin_dir(self) -> Path:
        return self.home / "efa-bin"

    @property
    def textfile_dir(self) -> Path:
        return self.home / "textfile"

    @property
    def log_dir(self) -> Path:
        return self.home / "fmlog"

    @property
    def run_dir(self) -> Path:
        """The node's ``/var/run/fmconstructs`` (host side)."""
        return self.home / "run-fmconstructs"

    @property
    def state_dir(self) -> Path:
        """The node's own ``/var/lib/fmconstructs`` (the boot gate's failed marker, GateHold.marker_path): in the
        shared root it leaked from one node, and one twin, to every other (a ParallelCluster prolog failed on a healthy
        node with another twin's Xid 119 marker)."""
        return self.home / "varlib-fmconstructs"

    def binds(self) -> list[tuple[Path, str]]:
        return [
            (self.bin_dir, _NODE_BIN),
            (self.efa_bin_dir, _EFA_BIN),
            (self.textfile_dir, _TEXTFILE),
            (self.log_dir, _FM_LOG),
            (self.home / "systemd", "/etc/systemd/system"),
            (self.run_dir, _FM_RUN),
            (self.state_dir, _FM_STATE),
        ]


@dataclass
class SlurmTwin:
    """A Slurm cluster of ``node_names`` in ``home``, configured from ``settings`` (name, value) pairs."""

    root: Path
    home: Path
    node_names: Sequence[str]
    partitions: Mapping[str, Sequence[str]]
    settings: Sequence[tuple[str, str]] = ()
    node_settings: Mapping[str, str] = field(default_factory=dict)
    extra_files: Mapping[str, str] = field(default_factory=dict)
    cpus: int = 2
    #: (host directory, path) shared by every node and the controller, such as a file system's mount point.
    shared_dirs: Sequence[tuple[Path, str]] = ()
    daemons: Daemons = field(default_factory=Daemons)
    nodes: dict[str, TwinNode] = field(default_factory=dict, init=False)
    ctld_port: int = field(default=0, init=False)
    _ctld: Daemon | None = field(default=None, init=False)
    namespace: TwinNamespace = field(default_factory=TwinNamespace, init=False)

    # --- layout ---------------------------------------------------------------------------------------------
    def _dir(self, *parts: str) -> Path:
        path = self.home.joinpath(*parts)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def common_binds(self) -> list[tuple[Path, str]]:
        return [
            (self._dir("etc-slurm"), "/etc/slurm"),
            (self._dir("munge", "etc"), "/etc/munge"),
            (self._dir("munge", "run"), "/run/munge"),
            (self._dir("munge", "lib"), "/var/lib/munge"),
            (self._dir("munge", "log"), "/var/log/munge"),
            (self._dir("spool"), "/var/spool/slurm"),
            (self._dir("log"), "/var/log/slurm"),
            (self._dir("opt"), "/opt"),
            (self._hosts_file(), "/etc/hosts"),
            *self.shared_dirs,
        ]

    def _hosts_file(self) -> Path:
        """/etc/hosts: the machine's own name on loopback too (slurmctld with ``NoCtldInAddrAny`` binds to the
        address its host name resolves to), and each node's name on its address."""
        path = self.home / "hosts"
        if not path.exists():
            lines = [f"127.0.0.1 localhost {socket.gethostname()}", "::1 localhost"]
            lines += [f"{node.address} {node.name}" for node in self.nodes.values()]
            path.write_text("\n".join(lines) + "\n")
        return path

    def argv(self, command: Sequence[str], node: str | None = None, userspec: str | None = None) -> list[str]:
        """``command`` inside the root, as seen from ``node`` (its tools) or from the controller (None)."""
        binds = self.common_binds() + (self.nodes[node].binds() if node else [])
        return chroot_argv(self.root, command, binds=binds, userspec=userspec, namespace_pid=self.namespace.pid)

    def env(self) -> dict[str, str]:
        return {"PATH": _PATH, "LANG": "C.UTF-8", "HOME": "/root"}

    def run(
        self, command: Sequence[str], *, node: str | None = None, check: bool = True, timeout_s: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        """Run a command inside the twin (``scontrol``, ``sbatch``, a rendered script) and return what it did."""
        done = subprocess.run(
            self.argv(command, node),
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=timeout_s,
            check=False,
        )
        if check and done.returncode != 0:
            raise TwinError(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip() or done.stdout}")
        return done

    def install(self, path: str, text: str, mode: int = 0o755) -> Path:
        """Put a file the library renders at ``path`` under /opt or /etc/slurm (the twin's writable trees)."""
        for prefix, host in (("/opt/", self._dir("opt")), ("/etc/slurm/", self._dir("etc-slurm"))):
            if path.startswith(prefix):
                target = host / path[len(prefix) :]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
                target.chmod(mode)
                return target
        raise TwinError(f"the twin installs files under /opt or /etc/slurm only, not {path}")

    # --- configuration --------------------------------------------------------------------------------------
    def _make_nodes(self) -> None:
        for index, name in enumerate(self.node_names):
            home = self._dir("nodes", name)
            node = TwinNode(
                name=name,
                address=f"127.0.{index // 250 + 1}.{index % 250 + 2}",
                port=free_port(),
                home=home,
                instance_id=f"i-{0x0FC0000000 + index:017x}",
            )
            self._dir("spool", "d", name)
            for sub in (
                node.bin_dir,
                node.efa_bin_dir,
                node.textfile_dir,
                node.log_dir,
                home / "systemd",
                node.run_dir,
                node.state_dir,
            ):
                sub.mkdir(parents=True, exist_ok=True)
            self.nodes[name] = node

    def slurm_conf(self) -> str:
        lines = [
            "# The cluster twin's slurm.conf (tests/support/twin/slurm.py): base lines a service writes itself,",
            "# then the library's rendered settings, unchanged.",
            "ClusterName=twin",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={self.ctld_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=cred_expire={CRED_EXPIRE_S}",
            "CommunicationParameters=NoCtldInAddrAny",
            "MailProg=/bin/true",
            "StateSaveLocation=/var/spool/slurm/ctld",
            "SlurmdSpoolDir=/var/spool/slurm/d/%n",
            "SlurmctldPidFile=/var/spool/slurm/slurmctld.pid",
            "SlurmdPidFile=/var/spool/slurm/slurmd-%n.pid",
            "SlurmctldLogFile=/var/log/slurm/slurmctld.log",
            "SlurmdLogFile=/var/log/slurm/slurmd-%n.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SchedulerType=sched/backfill",
            "MpiDefault=none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "SlurmdTimeout=30",
            "MessageTimeout=10",
            "InactiveLimit=0",
            "KillWait=2",
            "MinJobAge=600",
        ]
        if self.cpus > (os.cpu_count() or 1):
            # More CPUs per node than the host has (a job's --ntasks-per-node as on a GPU instance): slurm.conf(5)
            # SlurmdParameters "config_overrides": nodes with less than the configured resources are not drained.
            lines.append("SlurmdParameters=config_overrides")
        lines += [f"{name}={value}" for name, value in self.settings]
        node_extra = " ".join(f"{k}={v}" for k, v in self.node_settings.items())
        for node in self.nodes.values():
            features = f" Features={','.join(node.features)}" if node.features else ""
            lines.append(
                f"NodeName={node.name} NodeHostname={node.name} NodeAddr={node.address} Port={node.port} "
                f"CPUs={self.cpus} RealMemory=1000 State=UNKNOWN{features} {node_extra}".rstrip()
            )
        for index, (partition, members) in enumerate(self.partitions.items()):
            default = " Default=YES" if index == 0 else ""
            lines.append(f"PartitionName={partition} Nodes={','.join(members)} MaxTime=INFINITE State=UP{default}")
        return "\n".join(lines) + "\n"

    def write_config(self) -> None:
        etc = self._dir("etc-slurm")
        (etc / "slurm.conf").write_text(self.slurm_conf())
        (etc / "cgroup.conf").write_text("CgroupPlugin=disabled\n")
        for name, text in self.extra_files.items():
            (etc / name).write_text(text)

    # --- daemons --------------------------------------------------------------------------------------------
    def _munge(self) -> None:
        key = self._dir("munge", "etc") / "munge.key"
        key.write_bytes(os.urandom(1024))
        uid, gid = _ids(self.root, "munge")
        for path in (key, *(self._dir("munge", sub) for sub in ("etc", "run", "lib", "log"))):
            os.chown(path, uid, gid)
        key.chmod(0o400)
        self._dir("munge", "etc").chmod(0o700)
        self._dir("munge", "run").chmod(0o755)
        munged = Daemon(
            "munged",
            self.argv(["/usr/sbin/munged", "-F", "--force"], userspec="munge:munge"),
            self.home / "log" / "munged.out",
            env=self.env(),
        )
        self.daemons.start(munged)
        wait_for("munged", lambda: (self._dir("munge", "run") / "munge.socket.2").exists(), 20)

    def start(self) -> SlurmTwin:
        """Write the configuration and start munged, slurmctld and every slurmd."""
        self.namespace.start()
        self._make_nodes()
        self.start_controller()
        for name in self.nodes:
            self.start_slurmd(name)
        return self

    def start_controller(self) -> None:
        """Write slurm.conf and start munged and slurmctld (the namespace and nodes exist)."""
        self.ctld_port = free_port()
        self.write_config()
        self._munge()
        self._ctld = Daemon(
            "slurmctld",
            self.argv(["/usr/sbin/slurmctld", "-D", "-i"]),
            self.home / "log" / "slurmctld.out",
            env=self.env(),
        )
        self.daemons.start(self._ctld)
        wait_for("slurmctld", lambda: self.run(["scontrol", "ping"], check=False).returncode == 0, 30)

    def restart_controller(self) -> None:
        """Stop slurmctld and start it again on slurm.conf as it is now (not rewritten): what a service's
        ``systemctl restart slurmctld`` is to the twin."""
        if self._ctld is not None:
            self.daemons.stop(self._ctld)
        self._ctld = Daemon(
            "slurmctld",
            self.argv(["/usr/sbin/slurmctld", "-D", "-i"]),
            self.home / "log" / "slurmctld.out",
            env=self.env(),
        )
        self.daemons.start(self._ctld)
        wait_for("slurmctld", lambda: self.run(["scontrol", "ping"], check=False).returncode == 0, 30)

    def start_slurmd(self, name: str) -> Daemon:
        node = self.nodes[name]
        node.slurmd = Daemon(
            f"slurmd-{name}",
            self.argv(["/usr/sbin/slurmd", "-D", "-N", name], node=name),
            self.home / "log" / f"slurmd-{name}.out",
            env=self.env(),
        )
        self.daemons.start(node.slurmd)
        return node.slurmd

    def stop_slurmd(self, name: str) -> None:
        node = self.nodes[name]
        if node.slurmd is not None:
            self.daemons.stop(node.slurmd)
            node.slurmd = None

    def stop(self) -> None:
        self.daemons.stop_all()
        self.namespace.stop()

    def __enter__(self) -> SlurmTwin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- queries --------------------------------------------------------------------------------------------
    def node_info(self, name: str) -> dict[str, str]:
        """``scontrol -o show node`` as a dict (State, Reason, ...)."""
        out = self.run(["scontrol", "-o", "show", "node", name]).stdout
        return _key_values(out)

    def state(self, name: str) -> str:
        return self.node_info(name).get("State", "")

    def reason(self, name: str) -> str:
        return self.node_info(name).get("Reason", "")

    def job_info(self, job_id: str) -> dict[str, str]:
        out = self.run(["scontrol", "-o", "show", "job", job_id], check=False).stdout
        return _key_values(out)

    def sbatch(self, *args: str) -> str:
        out = self.run(["sbatch", "--parsable", *args]).stdout.strip()
        return out.split(";")[0]

    def wait_node(self, name: str, predicate: str | re.Pattern[str], timeout_s: float = 30.0) -> dict[str, str]:
        """Wait until the node's State matches ``predicate`` (a regex); returns its info."""
        pattern = re.compile(predicate) if isinstance(predicate, str) else predicate

        def matches() -> dict[str, str] | None:
            info = self.node_info(name)
            return info if pattern.search(info.get("State", "")) else None

        try:
            return wait_for(f"{name} state ~ {pattern.pattern}", matches, timeout_s, 0.3)  # type: ignore[return-value]
        except TwinError as error:
            raise TwinError(f"{error}; now: {self.node_info(name)}") from None

    def wait_nodes_idle(self, names: Iterable[str] | None = None, timeout_s: float = 30.0) -> None:
        for name in names or self.nodes:
            self.wait_node(name, r"^IDLE", timeout_s)


def _key_values(text: str) -> dict[str, str]:
    """``Key=Value`` pairs of one ``scontrol -o`` line (a value runs up to the next `` Key=``)."""
    pairs: dict[str, str] = {}
    for match in re.finditer(r"(\w[\w:/]*)=(.*?)(?= \w[\w:/]*=|$)", text.strip()):
        pairs[match.group(1)] = match.group(2)
    return pairs


def _ids(root: Path, user: str) -> tuple[int, int]:
    for line in (root / "etc" / "passwd").read_text().splitlines():
        fields = line.split(":")
        if fields[0] == user:
            return int(fields[2]), int(fields[3])
    raise TwinError(f"no user {user} in {root}/etc/passwd")
