"""The ``fmc`` command: plan a cloud assembly before you deploy it, and preflight it against the real account.

It reads a synthesized cloud assembly (``cdk.out``) and the catalog; it never synthesizes an app or imports backend
constructs to answer a question. Run it as ``fmc`` (console script) or ``python -m fmconstructs.cli``.
"""

from .main import main

__all__ = ["main"]
