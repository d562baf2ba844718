"""The Debian 13 (trixie) root the twin's Slurm runs in, built once per machine and cached.

Debian 12 ships Slurm 22.05; trixie ships 24.11.5 (the major version AWS PCS offers), whose packages need glibc 2.38,
so they run from a trixie root made with ``debootstrap --variant=minbase`` (../shared/reference/twin.md: about 40 s,
then about 15 s of ``apt-get install``). The root is read-only for the tests: everything a twin writes (slurm.conf,
spool, munge key and socket, node tools, logs) is bind-mounted over it per daemon (:func:`chroot_argv`), inside a
private mount namespace (``unshare -m``), so the mounts vanish with the daemon and nothing leaks into the host.

Cache: ``$FMCONSTRUCTS_TWIN_CACHE`` (default ``~/.cache/fmconstructs/twin``), one directory per package list (its
hash in the name), built in a temporary directory and renamed into place under a file lock (xdist workers share it).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from .procs import TwinError

__all__ = ["PACKAGES", "SUITE", "TwinNamespace", "chroot_argv", "mirror", "prerequisites_missing", "twin_root"]

SUITE = "trixie"
#: Slurm 24.11 daemons and client, munge, and what the library's node scripts call (pgrep, hostname, findmnt,
#: logger, timeout, python3 for the report and mapping scripts).
PACKAGES: tuple[str, ...] = (
    "slurmctld",
    "slurmd",
    "slurm-client",
    "munge",
    "python3",
    "procps",
    "hostname",
    "util-linux",
)
_MOUNTS = ("proc", "dev", "sys")


def prerequisites_missing() -> str | None:
    """Why the twin cannot run here (None: it can): it needs root, unshare, chroot and debootstrap."""
    if os.geteuid() != 0:
        return "the cluster twin needs root (chroot, mount namespaces); CI runs it as root"
    for tool, package in (("debootstrap", "debootstrap"), ("unshare", "util-linux"), ("chroot", "coreutils")):
        if shutil.which(tool) is None:
            return f"{tool} is missing (Debian package {package}; `make test` installs it)"
    return None


def mirror() -> str:
    """The Debian mirror of this machine's apt sources (twin.md: the registry serves trixie to these machines)."""
    for path in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        try:
            text = path.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            words = line.split()
            if words[:1] == ["URIs:"] and len(words) > 1 and "security" not in words[1]:
                return words[1]
            if words[:1] == ["deb"] and len(words) > 1 and "security" not in line:
                return next(w for w in words[1:] if "://" in w)
    return "http://deb.debian.org/debian"


def _cache_dir() -> Path:
    default = Path.home() / ".cache" / "fmconstructs" / "twin"
    return Path(os.environ.get("FMCONSTRUCTS_TWIN_CACHE", str(default)))


def _run(argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None) -> None:
    with log.open("ab") as out:
        done = subprocess.run(list(argv), stdout=out, stderr=subprocess.STDOUT, check=False, env=env)
    if done.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
        raise TwinError(f"{' '.join(argv[:4])} ... exited {done.returncode}:\n{tail}")


def _build(target: Path, log: Path) -> None:
    _run(["debootstrap", "--variant=minbase", SUITE, str(target), mirror()], log)
    script = (
        "set -e; for m in proc dev sys; do mount --bind /$m {root}/$m; done; "
        "chroot {root} apt-get update -qq; "
        "DEBIAN_FRONTEND=noninteractive chroot {root} apt-get install -y -qq --no-install-recommends {packages}; "
        "chroot {root} apt-get clean"
    ).format(root=target, packages=" ".join(PACKAGES))
    _run(["unshare", "-m", "--propagation", "private", "/bin/sh", "-c", script], log)
    (target / "etc" / "hosts").write_text("127.0.0.1 localhost\n::1 localhost\n")
    (target / ".fmconstructs-twin-complete").write_text(" ".join(PACKAGES) + "\n")


def twin_root() -> Path:
    """The cached trixie root (built on first use, about a minute)."""
    key = hashlib.sha256(f"{SUITE} {' '.join(PACKAGES)}".encode()).hexdigest()[:12]
    cache = _cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    root = cache / f"{SUITE}-{key}"
    if (root / ".fmconstructs-twin-complete").is_file():
        return root
    with (cache / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / ".fmconstructs-twin-complete").is_file():
            return root
        building = cache / f".building-{key}"
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir()
        _build(building, cache / f"build-{key}.log")
        shutil.rmtree(root, ignore_errors=True)
        building.rename(root)
    return root


def chroot_argv(
    root: Path,
    argv: Sequence[str],
    *,
    binds: Sequence[tuple[Path, str]] = (),
    userspec: str | None = None,
    namespace_pid: int | None = None,
) -> list[str]:
    """``argv`` run inside ``root`` in a private mount namespace with ``binds`` ((host dir, path in the root), in
    order: a later bind may sit inside an earlier one) on top of /dev and /sys, and a /proc of its own.

    ``namespace_pid``: enter the PID and network namespaces of that process first (:class:`TwinNamespace`): every
    daemon of one twin sees the others' processes (the gate's ``pgrep -x slurmd``) and nothing of the host's, binds
    only to that namespace's loopback, and dies with it."""
    lines = ["set -e"]
    lines += [f"mount --bind /{m} '{root}/{m}'" for m in ("dev", "sys")]
    lines.append(f"mount -t proc proc '{root}/proc'")
    for host, inside in binds:
        lines.append(f"mkdir -p '{root}{inside}' 2>/dev/null || true")
        lines.append(f"mount --bind '{host}' '{root}{inside}'")
    user = f"--userspec={userspec} " if userspec else ""
    lines.append(f"exec chroot {user}'{root}' \"$@\"")
    inner = ["unshare", "-m", "--propagation", "private", "/bin/sh", "-c", "\n".join(lines), "twin", *argv]
    if namespace_pid is None:
        return inner
    return ["nsenter", "-t", str(namespace_pid), "-p", "-n", "--", *inner]


class TwinNamespace:
    """A PID and network namespace for one twin: ``unshare --pid --net --fork --kill-child`` around a ``sleep``
    (PID 1 of the namespace) with loopback up. Stopping it kills PID 1, and the kernel then kills every process
    of the namespace: nothing a twin started (daemons, prologs, a gate in the background) can outlive it."""

    def __init__(self) -> None:
        self._holder: subprocess.Popen[bytes] | None = None
        self.pid = 0

    def start(self) -> TwinNamespace:
        self._holder = subprocess.Popen(
            [
                "unshare",
                "--pid",
                "--net",
                "--fork",
                "--kill-child",
                "/bin/sh",
                "-c",
                "ip link set lo up; ip addr add 10.254.0.1/32 dev lo; exec sleep infinity",
            ],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            children = Path(f"/proc/{self._holder.pid}/task/{self._holder.pid}/children")
            found = children.read_text().split() if children.exists() else []
            if found and Path(f"/proc/{found[0]}/comm").read_text().strip() == "sleep":
                self.pid = int(found[0])
                return self
            time.sleep(0.05)
        self.stop()
        raise TwinError("the twin's namespace did not start (unshare --pid --net)")

    def stop(self) -> None:
        if self._holder is None:
            return
        if self.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self._holder.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._holder.wait(timeout=10)
        self._holder = None
        self.pid = 0
