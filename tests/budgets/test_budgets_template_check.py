"""Template budgets (issue 30): every stack's template against CloudFormation's limits at synthesis, an error above a
limit and a warning above 80% of it, naming the largest constructs and the remedy."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match

from fmconstructs.budgets import (
    MAX_OUTPUTS,
    MAX_TEMPLATE_BYTES,
    TemplateBudgets,
    check_template_budgets,
    measure_template,
)
from fmconstructs.errors import WarningId


def _stack(
    blob_bytes: int = 0, outputs: int = 0, *, nested: bool = False, context: dict[str, object] | None = None
) -> tuple[cdk.Stack, cdk.Stack]:
    app = cdk.App(context=context)
    stack = cdk.Stack(app, "Budget")
    target: cdk.Stack = cdk.NestedStack(stack, "Inner") if nested else stack
    if blob_bytes:
        cdk.CfnResource(
            target, "Blob", type="Custom::Blob", properties={"ServiceToken": "arn", "Data": "x" * blob_bytes}
        )
    for i in range(outputs):
        cdk.CfnOutput(target, f"Out{i}", value=str(i))
    return stack, target


def _messages(stack: cdk.Stack, level: str) -> list[str]:
    annotations = Annotations.from_stack(stack)
    found = (annotations.find_error if level == "error" else annotations.find_warning)(
        "*", Match.string_like_regexp("template-budget|CloudFormation")
    )
    return [str(m.entry.data) for m in found]


def test_a_template_above_80_percent_of_the_size_limit_warns_naming_the_construct() -> None:
    stack, _ = _stack(int(MAX_TEMPLATE_BYTES * 0.85))
    check_template_budgets(stack)
    (warning,) = _messages(stack, "warning")
    assert WarningId.TEMPLATE_BUDGET.qualified in warning
    assert "template body size" in warning and "Blob" in warning and "NestedStack" in warning
    assert _messages(stack, "error") == []


def test_a_template_above_the_size_limit_is_an_error() -> None:
    stack, _ = _stack(MAX_TEMPLATE_BYTES + 10)
    check_template_budgets(stack)
    (error,) = _messages(stack, "error")
    assert "CloudFormation refuses this deploy" in error and "Blob" in error


@pytest.mark.parametrize(("count", "level"), [(int(MAX_OUTPUTS * 0.9), "warning"), (MAX_OUTPUTS + 1, "error")])
def test_outputs_are_counted(count: int, level: str) -> None:
    stack, _ = _stack(outputs=count)
    check_template_budgets(stack)
    (message,) = _messages(stack, level)
    assert f"outputs {count:,} of CloudFormation's {MAX_OUTPUTS}" in message


def test_a_small_stack_says_nothing_and_the_check_is_added_once() -> None:
    stack, _ = _stack(1000, outputs=3)
    check_template_budgets(stack)
    check_template_budgets(stack)
    assert _messages(stack, "warning") == [] and _messages(stack, "error") == []
    usage = measure_template(stack)
    assert usage is not None and usage.outputs == 3 and usage.resources == 1


def test_the_aspect_checks_nested_stacks_of_users_apps() -> None:
    stack, nested = _stack(MAX_TEMPLATE_BYTES + 10, nested=True)
    cdk.Aspects.of(stack.node.root).add(TemplateBudgets())
    (error,) = _messages(stack, "error")
    assert nested.node.path in error


def test_the_context_key_turns_it_off() -> None:
    stack, _ = _stack(MAX_TEMPLATE_BYTES + 10, context={"fmconstructs:template-budgets-check": False})
    check_template_budgets(stack)
    assert _messages(stack, "error") == []


def test_a_platform_kept_in_one_stack_past_the_limit_is_an_error_naming_its_groups() -> None:
    """GIVEN an EKS TrainingPlatform told to keep 100 GPU groups per stack, WHEN it has 70, THEN its one template
    passes 1 MB and the error names groups of its cluster and the remedy."""
    from aws_cdk import aws_ec2 as ec2

    from fmconstructs.platform import EksOptions, TrainingPlatform

    app = cdk.App(context={"fmconstructs:node-groups-per-stack": 100}, builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "Big", env=cdk.Environment(account="123456789012", region="us-east-1"))
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
    )
    platform = TrainingPlatform(
        stack, "Platform", vpc=vpc, instance_type="p5.48xlarge", nodes=2, orchestrator=EksOptions()
    )
    for i in range(1, 70):
        platform.cluster.add_gpu_node_group(f"Gpu{i}", instance_type="p5.48xlarge", max_nodes=2)  # type: ignore[union-attr]
    (error,) = _messages(stack, "error")
    assert "template body size" in error and "Platform/Cluster/Gpu" in error
    assert "fmconstructs:node-groups-per-stack" in error, error
