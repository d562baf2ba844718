"""The fmconstructs example app: ``npx cdk synth`` (via cdk.json) synthesizes every example stack.

Stack names are stable: FmCompute (foundation), FmStorage (storage). Later issues add stacks here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import aws_cdk as cdk

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from examples.compute_stack import ComputeStack
from examples.storage_stack import StorageStack


def build(app: cdk.App) -> dict[str, cdk.Stack]:
    """Add every example stack to ``app`` and return them by name."""
    return {
        "FmCompute": ComputeStack(app, "FmCompute", description="fmconstructs example: GPU launch templates"),
        "FmStorage": StorageStack(
            app,
            "FmStorage",
            description="fmconstructs example: FSx for Lustre linked to S3 (EFA, data repository associations)",
        ),
    }


def main() -> None:
    """Synthesize every example with the cdk-nag AwsSolutions pack (disable with ``-c fmconstructs:nag=false``)."""
    app = cdk.App()
    build(app)
    if str(app.node.try_get_context("fmconstructs:nag")).lower() != "false":
        from cdk_nag import AwsSolutionsChecks

        cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()


if __name__ == "__main__":
    main()
