"""The fmconstructs example app: ``npx cdk synth`` (via cdk.json) synthesizes every example stack.

Stack names are stable: FmCompute (foundation). Later issues add stacks here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import aws_cdk as cdk

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from examples.compute_stack import ComputeStack  # noqa: E402


def build(app: cdk.App) -> dict[str, cdk.Stack]:
    """Add every example stack to ``app`` and return them by name."""
    return {"FmCompute": ComputeStack(app, "FmCompute", description="fmconstructs example: GPU launch templates")}


def main() -> None:
    app = cdk.App()
    build(app)
    app.synth()


if __name__ == "__main__":
    main()
