"""Daemons of the cluster twin: started by the tests, bound to loopback, stopped by pid, nothing left running.

Each :class:`Daemon` runs in its own process group (``start_new_session``), so :meth:`Daemon.stop` ends it and every
child it forked (slurmd's prolog, node_exporter's collectors). :class:`Daemons` stops everything it started, in
reverse order, when its ``with`` block ends, and an ``atexit`` hook does the same if a test process dies first.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Daemon", "Daemons", "TwinError", "free_port", "http_get", "wait_for", "wait_for_http", "wait_for_port"]

_LIVE: set[int] = set()


class TwinError(RuntimeError):
    """The twin could not do what a test asked (a daemon did not start, a wait ran out)."""


def _kill_leftovers() -> None:
    for pgid in list(_LIVE):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


atexit.register(_kill_leftovers)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for(what: str, ready: Callable[[], object], timeout_s: float, interval_s: float = 0.1) -> object:
    """Poll ``ready`` until it returns something truthy; raise :class:`TwinError` naming ``what`` on timeout."""
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while True:
        try:
            value = ready()
            if value:
                return value
        except Exception as error:  # a daemon not up yet: keep polling
            last_error = error
        if time.monotonic() >= deadline:
            raise TwinError(f"timed out after {timeout_s:.0f}s waiting for {what} (last error: {last_error})")
        time.sleep(interval_s)


def wait_for_port(port: int, timeout_s: float = 30.0, host: str = "127.0.0.1") -> None:
    def connects() -> bool:
        with socket.create_connection((host, port), timeout=1):
            return True

    wait_for(f"{host}:{port}", connects, timeout_s)


def wait_for_http(url: str, timeout_s: float = 30.0) -> None:
    def answers() -> bool:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)

    wait_for(url, answers, timeout_s)


@dataclass
class Daemon:
    """One started process (and its process group)."""

    name: str
    argv: Sequence[str]
    log_path: Path
    env: dict[str, str] | None = None
    cwd: Path | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    def start(self) -> Daemon:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            list(self.argv),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self.env,
            cwd=self.cwd,
            start_new_session=True,
        )
        log.close()
        _LIVE.add(self.process.pid)
        return self

    @property
    def pid(self) -> int:
        if self.process is None:
            raise TwinError(f"{self.name} was never started")
        return self.process.pid

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def check_running(self) -> None:
        if not self.running():
            raise TwinError(f"{self.name} exited ({self.process and self.process.returncode}): {self.tail()}")

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM the process group, then SIGKILL what is left after ``timeout_s``."""
        if self.process is None:
            return
        pgid = self.process.pid
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=timeout_s)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        _LIVE.discard(pgid)
        self.process = None


@dataclass
class Daemons:
    """The daemons of one twin; ``with Daemons() as d: d.start(...)`` stops them all on exit."""

    started: list[Daemon] = field(default_factory=list)

    def start(self, daemon: Daemon) -> Daemon:
        self.started.append(daemon.start())
        return daemon

    def stop(self, daemon: Daemon) -> None:
        daemon.stop()
        if daemon in self.started:
            self.started.remove(daemon)

    def stop_all(self) -> None:
        for daemon in reversed(self.started):
            daemon.stop()
        self.started.clear()

    def __enter__(self) -> Daemons:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()


def http_get(url: str, timeout_s: float = 5.0) -> bytes:
    """GET a loopback URL."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            body: bytes = response.read()
            return body
    except urllib.error.URLError as error:
        raise TwinError(f"GET {url}: {error}") from error
