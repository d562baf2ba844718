"""Fixtures of the compute tests."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template


@pytest.fixture(scope="session")
def compute_template(example_stacks: dict[str, cdk.Stack]) -> Template:
    """The example app's FmCompute stack (one launch template per catalog type)."""
    return Template.from_stack(example_stacks["FmCompute"])
