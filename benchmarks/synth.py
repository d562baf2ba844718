"""Synthesis timings of the example app (speed is measured here, never asserted in tests).

``make bench`` runs it: every example stack synthesized with aws-cdk-lib's CloudFormation validation off and on,
best of N runs, printed as a table.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aws_cdk as cdk

from examples.app import build


def synth_seconds(*, validation: bool) -> float:
    with tempfile.TemporaryDirectory() as outdir:
        start = time.perf_counter()
        app = cdk.App(outdir=outdir, builtin_cloud_formation_validation=validation)
        build(app)
        app.synth()
        return time.perf_counter() - start


def main(runs: int = 3) -> None:
    synth_seconds(validation=False)  # warm up the jsii runtime
    print(f"{'example app (all stacks)':32} {'best s':>8} {'median s':>9}")
    for validation in (False, True):
        samples = [synth_seconds(validation=validation) for _ in range(runs)]
        label = f"validation {'on' if validation else 'off'}"
        print(f"{label:32} {min(samples):8.2f} {statistics.median(samples):9.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
