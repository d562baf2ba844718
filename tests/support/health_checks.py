"""Helpers of tests/health/test_health_checks.py that other test modules use too."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fmconstructs.health import (
    CheckName,
    NodeCheckSpec,
)

STUBS = {
    "nvidia-smi": r"""#!/bin/bash
echo "nvidia-smi $*" >>"$CALLS"
case "$*" in
  *--query-gpu=index,driver_version*)
    [ -n "${FAKE_SMI_SLEEP:-}" ] && exec sleep "$FAKE_SMI_SLEEP"
    [ "${FAKE_SMI_RC:-0}" -ne 0 ] && { echo "NVIDIA-SMI has failed"; exit "$FAKE_SMI_RC"; }
    for ((i = 0; i < ${FAKE_GPU_COUNT:-8}; i++)); do echo "${i}, ${FAKE_DRIVER-570.172.08}"; done ;;
  *--query-remapped-rows*)
    echo "00000000:53:00.0, ${FAKE_REMAP_PENDING:-No}, ${FAKE_REMAP_FAILURE:-No}"
    echo "00000000:64:00.0, No, No" ;;
  *retired_pages.pending*)
    echo "00000000:53:00.0, ${FAKE_RETIRED_PENDING:-[N/A]}" ;;
esac
""",
    "dmesg": '#!/bin/bash\necho "dmesg $*" >>"$CALLS"\nprintf "%b" "${FAKE_DMESG:-}"\n',
    "systemctl": r"""#!/bin/bash
echo "systemctl $*" >>"$CALLS"
case "$1 $2" in
  "is-active nvidia-fabricmanager") state="${FAKE_FM_STATE:-active}"; [ "$state" = active ] ;;
  "is-enabled nvidia-imex") state="${FAKE_IMEX_STATE:-enabled}"; [ "$state" = enabled ] ;;
  *) state=unknown; false ;;
esac
rc=$?
echo "$state"
exit "$rc"
""",
    "fi_info": r"""#!/bin/bash
echo "fi_info $*" >>"$CALLS"
for ((i = 0; i < ${FAKE_EFA_COUNT:-32}; i++)); do
  for fabric in efa ${FAKE_EFA_DIRECT:+efa-direct}; do
    printf 'provider: efa\n    fabric: %s\n    domain: rdmap%ss0-rdm\n    version: 2.0\n    type: FI_EP_RDM\n' \
      "$fabric" "$i"
  done
done
exit "${FAKE_FI_RC:-0}"
""",
    "findmnt": '#!/bin/bash\necho "findmnt $*" >>"$CALLS"\nexit "${FAKE_LUSTRE_RC:-0}"\n',
    "dcgmi": r"""#!/bin/bash
echo "dcgmi $*" >>"$CALLS"
[ -n "${FAKE_DCGM_SLEEP:-}" ] && exec sleep "$FAKE_DCGM_SLEEP"
echo "+---------------------------+------------------------------------------------+"
echo "| Diagnostic                | Result                                         |"
echo "| Deployment                | Pass                                           |"
echo "| Memory                    | ${FAKE_DCGM_RESULT:-Pass}                                           |"
exit "${FAKE_DCGM_RC:-0}"
""",
    "logger": "#!/bin/bash\ncat >/dev/null\n",
}


@dataclass
class Run:
    rc: int
    out: str
    calls: list[str]
    log: str

    def line(self, check: CheckName) -> str:
        lines = [x for x in self.out.splitlines() if re.match(rf"(PASS|FAIL) {check.value}:", x)]
        assert len(lines) == 1, self.out
        return lines[0]


class Sandbox:
    """A root with stub commands in root/bin; :meth:`run` executes a rendered script there."""

    def __init__(self, tmp_path: Path, extra_stubs: dict[str, str] | None = None) -> None:
        self.tmp = tmp_path
        self.root = tmp_path / "root"
        self.calls = tmp_path / "calls"
        self.calls.touch()
        for name, body in {**STUBS, **(extra_stubs or {})}.items():
            self.add_stub(name, body)

    def add_stub(self, name: str, body: str, directory: str = "bin") -> None:
        stub = self.root / directory / name
        stub.parent.mkdir(parents=True, exist_ok=True)
        stub.write_text(body)
        stub.chmod(0o755)

    def run(self, script: str, timeout: float = 60, **env: str) -> Run:
        path = self.tmp / "script.sh"
        path.write_text(script)
        log = self.tmp / "node-checks.log"
        environment = {
            "PATH": "/usr/bin:/bin",
            "FMCONSTRUCTS_ROOT": str(self.root),
            "FMCONSTRUCTS_HEALTH_LOG": str(log),
            "CALLS": str(self.calls),
            **env,
        }
        result = subprocess.run(
            ["bash", str(path)], env=environment, capture_output=True, text=True, timeout=timeout, check=False
        )
        return Run(
            rc=result.returncode,
            out=result.stdout,
            calls=self.calls.read_text().splitlines(),
            log=log.read_text() if log.exists() else "",
        )


def p5_spec(**kwargs: Any) -> NodeCheckSpec:
    kwargs.setdefault("lustre_mount_point", "/fsx")
    kwargs.setdefault("dcgm_level", 1)
    return NodeCheckSpec.for_instance_type("p5.48xlarge", **kwargs)
