"""Fake GPU, EFA, DCGM, IMEX, Lustre and nccl-tests tools on each twin node, driven by a per-node scenario.

Every fake is one Python program (``fmtwin-fake``) linked under the names the library's node scripts call, in the
node's own ``/usr/local/bin`` (and ``fi_info`` in ``/opt/amazon/efa/bin``, where the checks look first). It reads
the node's scenario (``scenario.json`` beside it) on every call, so a test changes a node's health by rewriting that
file (:meth:`Scenario.write`), as a fault would change a real host between two commands.

What each fake prints follows the command lines and output formats the node checks parse
(:mod:`fmconstructs.health.checks` names the AWS and NVIDIA procedures), not more.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

__all__ = ["FAKE_NAMES", "HEALTHY", "Scenario", "install_fakes"]


@dataclass(frozen=True)
class Scenario:
    """One node's hardware state, as the fakes report it."""

    gpus: int = 8
    driver: str = "570.172.08"
    #: Xid numbers in the kernel log since boot (``NVRM: Xid (PCI:...): <n>, ...`` lines of dmesg).
    xids: tuple[int, ...] = ()
    #: A GPU with a pending row remapping (needs a reset).
    remap_pending: bool = False
    fabric_manager: str = "active"
    imex: str = "enabled"
    #: EFA devices ``fi_info -p efa -t FI_EP_RDM`` lists.
    efa_devices: int = 32
    #: Mount points where a Lustre file system is mounted (``findmnt -t lustre``).
    lustre_mounts: tuple[str, ...] = ("/fsx",)
    #: ``dcgmi diag -r N`` fails for N >= this level (None: every level passes).
    dcgm_fail_level: int | None = None
    #: all_reduce_perf bus bandwidth this node reaches (GB/s); a job's figure is the slowest node's.
    nccl_busbw_gbytes_per_s: float = 480.0
    #: How long all_reduce_perf runs on this node (seconds; a run in progress).
    nccl_seconds: float = 0.0
    #: The node's name and address (``hostname -s``, ``hostname -I``) and EC2 instance id.
    hostname: str = ""
    address: str = ""
    instance_id: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    def write(self, bin_dir: Path) -> None:
        """Write ``scenario.json`` atomically (a fake dcgm-exporter may read it meanwhile), with the view a
        dcgm-exporter has of it: ``xid`` = the last Xid (``DCGM_FI_DEV_XID_ERRORS`` holds the last one; key of
        :mod:`.exporters`' scenario file), on GPU 0 as the kernel-log lines say."""
        data = asdict(self)
        data["xid"], data["xid_gpu"] = (self.xids[-1] if self.xids else 0), 0
        tmp = bin_dir / ".scenario.json.tmp"
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(bin_dir / "scenario.json")

    @classmethod
    def read(cls, bin_dir: Path) -> Scenario:
        data = json.loads((bin_dir / "scenario.json").read_text())
        data.pop("xid", None), data.pop("xid_gpu", None)
        for key in ("xids", "lustre_mounts"):
            data[key] = tuple(data[key])
        return cls(**data)

    def but(self, **changes: object) -> Scenario:
        return replace(self, **changes)  # type: ignore[arg-type]


HEALTHY = Scenario()

#: The commands the fakes answer, by where they are linked.
FAKE_NAMES: tuple[str, ...] = ("nvidia-smi", "dmesg", "systemctl", "findmnt", "dcgmi", "hostname", "all_reduce_perf")
_EFA_NAMES: tuple[str, ...] = ("fi_info",)

_FAKE = r'''#!/usr/bin/python3
"""The cluster twin's fake node tools (tests/support/twin/nodes.py): one program, dispatched on its name."""
import json, os, sys

here = os.path.dirname(os.path.abspath(__file__))
scenario_path = os.path.join(here, "scenario.json")
if not os.path.exists(scenario_path):  # fi_info lives in /opt/amazon/efa/bin: the scenario sits in /usr/local/bin
    scenario_path = "/usr/local/bin/scenario.json"
with open(scenario_path) as f:
    s = json.load(f)
name = os.path.basename(sys.argv[0])
args = sys.argv[1:]


def bus(i):
    return "00000000:%02X:00.0" % (0x53 + i)


if name == "nvidia-smi":
    query = next((a for a in args if a.startswith("--query")), "")
    if query.startswith("--query-remapped-rows"):
        for i in range(s["gpus"]):
            pending = "Yes" if s["remap_pending"] and i == 0 else "No"
            print("%s, %s, No" % (bus(i), pending))
    elif "retired_pages.pending" in query:
        for i in range(s["gpus"]):
            print("%s, No" % bus(i))
    else:
        for i in range(s["gpus"]):
            print("%d, %s" % (i, s["driver"]))
elif name == "dmesg":
    print("[    0.000000] Linux version 6.1.0 (fmtwin)")
    for x in s["xids"]:
        print("[ 1234.567890] NVRM: Xid (PCI:%s): %d, pid=4242, name=python, Ch 00000008" % (bus(0), x))
elif name == "systemctl":
    flags = [a for a in args if a.startswith("-")]
    words = [a for a in args if not a.startswith("-")]
    verb, unit = (words + ["", ""])[:2]
    if verb in ("start", "restart") and unit.endswith(".service"):
        # systemd stand-in for the library's own units: run ExecStart (in the background for --no-block).
        path = os.path.join("/etc/systemd/system", unit)
        if not os.path.exists(path):
            sys.exit(0)  # a unit of the OS (slurmctld, ...): the twin runs those itself
        command = next(l.split("=", 1)[1] for l in open(path).read().splitlines() if l.startswith("ExecStart="))
        log = open("/var/log/fmconstructs/%s.log" % unit, "ab")
        import subprocess
        proc = subprocess.Popen(command.split(), stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        sys.exit(0 if "--no-block" in flags else proc.wait())
    if verb == "is-active" and unit.startswith("nvidia-fabricmanager"):
        print(s["fabric_manager"]); sys.exit(0 if s["fabric_manager"] == "active" else 3)
    if verb == "is-enabled" and unit.startswith("nvidia-imex"):
        print(s["imex"]); sys.exit(0 if s["imex"] == "enabled" else 1)
    sys.exit(0)
elif name == "findmnt":
    target = args[-1] if args else ""
    if target in s["lustre_mounts"]:
        print("%s 10.0.0.10@tcp:/fsx lustre rw" % target)
        sys.exit(0)
    sys.exit(1)
elif name == "fi_info":
    if s["efa_devices"] == 0:
        print("fi_getinfo: -61 (No data available)", file=sys.stderr); sys.exit(1)
    for i in range(s["efa_devices"]):
        print("provider: efa\n    fabric: efa\n    domain: rdmap%ds0-rdm\n    version: 122.0\n    type: FI_EP_RDM\n"
              "    protocol: FI_PROTO_EFA" % (16 + i))
elif name == "dcgmi":
    level = int(args[args.index("-r") + 1]) if "-r" in args else 1
    fail = s["dcgm_fail_level"] is not None and level >= s["dcgm_fail_level"]
    print("+---------------------------+------------------------------------------------+")
    print("| Diagnostic                | Result                                         |")
    print("| Memory                    | %s |" % ("Fail - GPU 0: memory error" if fail else "Pass"))
    sys.exit(226 if fail else 0)
elif name == "hostname":
    if "-I" in args:
        print(s["address"])
    else:
        print(s["hostname"])
elif name == "all_reduce_perf":
    bw = s["nccl_busbw_gbytes_per_s"]
    import time
    time.sleep(float(s.get("nccl_seconds", 0)))
    print("# nccl-tests fake (fmtwin)")
    # nccl-tests src/util.cu writeResultHeader: out-of-place then in-place columns (time algbw busbw #wrong each).
    print("#                                                              out-of-place                       in-place")
    print("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong")
    for size in (1073741824, 4294967296, 17179869184):
        cols = "   9999.9  %6.2f  %6.2f      0" % (bw / 1.875, bw)
        print("  %12d  %12d     float     sum      -1%s%s" % (size, size // 4, cols, cols))
    print("# Out of bounds values : 0 OK")
    print("# Avg bus bandwidth    : %.4f" % bw)
else:
    print("fmtwin-fake: unknown tool %s" % name, file=sys.stderr)
    sys.exit(127)
'''


def install_fakes(bin_dir: Path, efa_bin_dir: Path, scenario: Scenario) -> None:
    """Write the fake program and its links into a node's two tool directories, and the scenario."""
    fake = bin_dir / "fmtwin-fake"
    fake.write_text(_FAKE)
    fake.chmod(0o755)
    for name in FAKE_NAMES:
        link = bin_dir / name
        if not link.exists():
            link.symlink_to("fmtwin-fake")
    efa_fake = efa_bin_dir / "fmtwin-fake"
    efa_fake.write_text(_FAKE)
    efa_fake.chmod(0o755)
    for name in _EFA_NAMES:
        link = efa_bin_dir / name
        if not link.exists():
            link.symlink_to("fmtwin-fake")
    scenario.write(bin_dir)
