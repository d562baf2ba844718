"""The documentation's Python samples marked ``<!-- run -->`` run as written.

``<!-- run -->``: a whole program (it builds its own ``cdk.App`` and calls ``app.synth()``, or needs no CDK at all),
run with the app writing to a temporary directory and CloudFormation validation off, as unit tests run.
``<!-- run: stack -->``: the body of a ``Stack`` (``self``) with a two-AZ VPC (``vpc``).
"""

from __future__ import annotations

import re

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2

from tests.conftest import ENV, new_app
from tests.house.docs_pages import DOCS, MARKED, needs_credentials, pages, run_program


def samples() -> list[tuple[str, int, str, str]]:
    """(page, index on the page, mode, code) of every marked sample."""
    return [
        (str(p.relative_to(DOCS)), i, m.group(1) or "app", m.group(2))
        for p in pages()
        for i, m in enumerate(MARKED.finditer(p.read_text()))
    ]


@pytest.mark.parametrize(("name", "index", "mode", "code"), samples(), ids=[f"{s[0]}#{s[1]}" for s in samples()])
def test_sample_runs(name, index, mode, code, tmp_path):
    assert mode in {"app", "stack"}
    if mode == "app":
        assert max(len(line) for line in code.splitlines()) <= 120  # whole programs are copied: keep them lint-clean
        run_program(code, f"docs/{name}", tmp_path)
        if "app.synth()" in code:
            assert (tmp_path / "manifest.json").exists()
            assert needs_credentials(tmp_path) == []  # `npx cdk synth` runs it with no AWS account or credentials
        else:
            assert "aws_cdk" not in code  # a program that builds an app must synthesize it
        return
    stack = cdk.Stack(new_app(), "DocsSample", env=ENV)
    exec(compile(code, f"docs/{name}", "exec"), {"self": stack, "vpc": ec2.Vpc(stack, "Vpc", max_azs=2)})
    assert stack.node.children


def test_getting_started_and_every_backend_guide_have_a_run_sample():
    marked = {name for name, _, _, _ in samples()}
    expected = {"getting-started.md", "concepts/serving.md"} | {
        f"backends/{b}.md" for b in ("platform", "pcs", "parallelcluster", "eks", "hyperpod")
    }
    assert expected <= marked


def test_marker_without_a_python_block_is_refused():
    loose = [
        str(p.relative_to(DOCS))
        for p in pages()
        for m in re.finditer(r"<!-- run(?:: \w+)? -->\n(.{0,10})", p.read_text())
        if not m.group(1).startswith("```python")
    ]
    assert loose == []
