"""Template budgets: every stack's template against CloudFormation's template limits, checked at synthesis.

CloudFormation refuses a template above its limits only when the deploy starts. :func:`check_template_budgets` (or the
:class:`TemplateBudgets` Aspect, for a whole app) adds a validation to a stack that renders its template once the tree
is prepared and, for each limit below, adds an **error** above the limit and a **warning**
(``fmconstructs:template-budget``) above :data:`WARN_FRACTION` of it, naming the constructs that contribute most and
the remedy. ``TrainingPlatform`` and the backend constructs (``GpuEksCluster``, ``PcsCluster``, ``ParallelCluster``,
``HyperPodCluster``) attach it to their own stack and to the nested stacks they create; for your own stacks::

    from aws_cdk import Aspects
    from fmconstructs.budgets import TemplateBudgets

    Aspects.of(app).add(TemplateBudgets())

What cannot be known at that point is skipped: a stack whose synthesizer is not one of aws-cdk-lib's
(``StackSynthesizer`` subclasses render templates; another ``IStackSynthesizer`` is not measured). The size is the
template as the validation renders it, before the nested stacks' template URLs and the bootstrap version rule are
filled in (about 1 KB less than the file the CDK CLI uploads; :data:`SYNTHESIS_ALLOWANCE_BYTES` is added for it).
The context key ``fmconstructs:template-budgets-check`` set to ``false`` turns the check off (it renders every template
once more).
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import Annotations, CfnElement, IAspect, ISynthesisSession, NestedStack, Stack, cx_api
from constructs import Construct, IConstruct, IValidation

from .errors import FmValidationError, WarningId, add_warning

__all__ = [
    "MAX_MAPPINGS",
    "MAX_OUTPUTS",
    "MAX_PARAMETERS",
    "MAX_RESOURCES",
    "MAX_TEMPLATE_BYTES",
    "WARN_FRACTION",
    "TemplateBudgets",
    "TemplateUsage",
    "check_new_group_id",
    "check_template_budgets",
    "measure_template",
    "node_group_scope",
    "node_groups_per_stack",
]

# AWS CloudFormation User Guide "Understand CloudFormation quotas" (cloudformation-limits; awsdocs/aws-cloudformation-
# user-guide doc_source/cloudformation-limits.md at c23f1eb): "Template body size in an Amazon S3 object ... 1 MB"
# (the CDK CLI uploads templates to S3), "Resources ... 500 resources", "Outputs ... 200 outputs", "Parameters ... 200
# parameters", "Mappings ... 200 mappings". 1 MB is read as 1,000,000 bytes, the smaller reading (whether
# CloudFormation counts 10^6 or 2^20 bytes is UNCONFIRMED).
MAX_TEMPLATE_BYTES = 1_000_000
MAX_RESOURCES = 500
MAX_OUTPUTS = 200
MAX_PARAMETERS = 200
MAX_MAPPINGS = 200
#: Above this share of a limit: a warning.
WARN_FRACTION = 0.8
#: What synthesis adds after the validation rendered the template (nested stack template URLs, the bootstrap version
#: rule): measured on aws-cdk-lib 2 as about 800 bytes per nested stack, rounded up (the library's margin).
SYNTHESIS_ALLOWANCE_BYTES = 1_000
#: CDK context key: ``false`` turns the check off.
CONTEXT_KEY = "fmconstructs:template-budgets-check"
_TOP = 3
_MAX_DEPTH = 4
_REMEDY = (
    "Move constructs to another stack or into an aws_cdk.NestedStack (GpuEksCluster and PcsCluster put GPU node "
    "groups beyond a cluster's first 32 (EKS) or 48 (PCS) into nested stacks themselves; the context value "
    "fmconstructs:node-groups-per-stack sets that share: docs/concepts/template-budgets.md), or drop what the stack "
    "does not need."
)


@dataclass(frozen=True)
class TemplateUsage:
    """A stack's template as measured: bytes, section counts, and the constructs (paths relative to the stack, two
    levels deep) that hold the most bytes, largest first: ``(path, bytes, resources)``."""

    stack_path: str
    template_bytes: int
    resources: int
    outputs: int
    parameters: int
    mappings: int
    contributors: tuple[tuple[str, int, int], ...]

    def over(self) -> list[tuple[str, int, int]]:
        """``(what, used, limit)`` for each limit."""
        return [
            ("template body size (bytes, in S3)", self.template_bytes, MAX_TEMPLATE_BYTES),
            ("resources", self.resources, MAX_RESOURCES),
            ("outputs", self.outputs, MAX_OUTPUTS),
            ("parameters", self.parameters, MAX_PARAMETERS),
            ("mappings", self.mappings, MAX_MAPPINGS),
        ]


@jsii.implements(ISynthesisSession)
class _Session:
    """A synthesis session writing into a scratch directory (the stack's template only)."""

    def __init__(self, outdir: str) -> None:
        self._outdir = outdir
        self._assembly = cx_api.CloudAssemblyBuilder(outdir)

    @property
    def outdir(self) -> str:
        return self._outdir

    @property
    def assembly(self) -> cx_api.CloudAssemblyBuilder:
        return self._assembly

    @property
    def validate_on_synthesis(self) -> bool | None:
        return False


def _render(stack: Stack) -> dict[str, Any] | None:
    """The stack's template as its synthesizer writes it (None when its synthesizer cannot render it here)."""
    with tempfile.TemporaryDirectory() as outdir:
        try:
            jsii.invoke(stack.synthesizer, "synthesizeTemplate", [_Session(outdir)])
        except Exception:  # not a StackSynthesizer, or CDK's own resource limit (reported by CDK itself)
            return None
        template: dict[str, Any] = json.loads((Path(outdir) / stack.template_file).read_text())
        return template


def _paths(stack: Stack) -> dict[str, str]:
    """Logical id -> construct path relative to the stack, for the stack's own elements."""
    prefix = stack.node.path + "/"
    found: dict[str, str] = {}
    for construct in stack.node.find_all():
        if isinstance(construct, CfnElement) and construct.stack is stack:
            found[str(stack.resolve(construct.logical_id))] = construct.node.path.removeprefix(prefix)
    return found


def _contributors(stack: Stack, resources: dict[str, Any]) -> tuple[tuple[str, int, int], ...]:
    """The constructs holding the most bytes: grouped by path, one level deeper while one group holds more than half
    of the bytes (``Platform`` -> ``Platform/Cluster`` -> ``Platform/Cluster/G7``), at most :data:`_MAX_DEPTH`."""
    paths = _paths(stack)
    items = [
        (paths.get(logical_id, logical_id).split("/"), len(json.dumps({logical_id: body}, indent=1)))
        for logical_id, body in resources.items()
    ]
    total = sum(size for _, size in items) or 1
    prefix: list[str] = []
    while True:
        sizes: dict[str, int] = defaultdict(int)
        counts: dict[str, int] = defaultdict(int)
        for parts, size in items:
            if parts[: len(prefix)] == prefix:
                owner = "/".join(parts[: len(prefix) + 1])
                sizes[owner] += size
                counts[owner] += 1
        ranked = sorted(sizes, key=lambda k: -sizes[k])
        top = ranked[0] if ranked else ""
        if len(prefix) + 1 >= _MAX_DEPTH or not ranked or sizes[top] * 2 <= total or counts[top] < 2:
            return tuple((k, sizes[k], counts[k]) for k in ranked[:_TOP])
        prefix = top.split("/")


def measure_template(stack: Stack) -> TemplateUsage | None:
    """``stack``'s template usage now (call it once the tree is complete: a validation or after ``app.synth()``);
    None when its synthesizer cannot render it here."""
    template = _render(stack)
    if template is None:
        return None
    resources: dict[str, Any] = template.get("Resources") or {}
    nested = sum(1 for r in resources.values() if r.get("Type") == "AWS::CloudFormation::Stack")
    return TemplateUsage(
        stack_path=stack.node.path,
        template_bytes=len(json.dumps(template, indent=1)) + SYNTHESIS_ALLOWANCE_BYTES * (1 + nested),
        resources=len(resources),
        outputs=len(template.get("Outputs") or {}),
        parameters=len(template.get("Parameters") or {}),
        mappings=len(template.get("Mappings") or {}),
        contributors=_contributors(stack, resources),
    )


def _report(stack: Stack, usage: TemplateUsage) -> None:
    """An error per limit passed, a warning per limit above WARN_FRACTION of it."""
    largest = ", ".join(f"{path} ({size:,} bytes, {count} resources)" for path, size, count in usage.contributors)
    for what, used, limit in usage.over():
        if used <= limit * WARN_FRACTION:
            continue
        message = (
            f"stack {usage.stack_path}: {what} {used:,} of CloudFormation's {limit:,} ({used / limit:.0%}); "
            f"largest: {largest}. {_REMEDY}"
        )
        if used > limit:
            Annotations.of(stack).add_error(
                f"[fmconstructs:template-budget] CloudFormation refuses this deploy: {message}"
            )
        else:
            add_warning(stack, WarningId.TEMPLATE_BUDGET, message)


@jsii.implements(IValidation)
class _BudgetCheck:
    def __init__(self, stack: Stack) -> None:
        self._stack = stack
        self._reported = False

    def validate(self) -> list[str]:
        if self._reported or self._stack.node.try_get_context(CONTEXT_KEY) in (False, "false"):
            return []
        self._reported = True  # once: a second synthesis of the same app would repeat the annotations
        usage = measure_template(self._stack)
        if usage is not None:
            _report(self._stack, usage)
        return []


#: The child of a checked stack that carries its check (no resources).
_MARK = "FmTemplateBudget"


def check_template_budgets(scope: IConstruct) -> None:
    """Check the template of ``scope``'s stack against CloudFormation's limits at synthesis (once per stack: a child
    construct ``FmTemplateBudget`` without resources carries the check)."""
    stack = Stack.of(scope)
    if stack.node.try_find_child(_MARK) is not None:
        return
    Construct(stack, _MARK).node.add_validation(_BudgetCheck(stack))


@jsii.implements(IAspect)
class TemplateBudgets:
    """Aspect: :func:`check_template_budgets` on every stack (nested stacks included) under the scope it is added to
    (``Aspects.of(app).add(TemplateBudgets())``)."""

    def visit(self, node: IConstruct) -> None:
        if isinstance(node, Stack):
            check_template_budgets(node)


# --- GPU node groups beyond a stack's share: nested stacks ----------------------------------------------------------
#: CDK context key: GPU node groups a cluster keeps in its own stack, and puts in each nested stack after that.
PER_STACK_CONTEXT_KEY = "fmconstructs:node-groups-per-stack"


def node_groups_per_stack(scope: IConstruct, default: int) -> int:
    """The context value ``fmconstructs:node-groups-per-stack`` (an integer >= 1), else ``default``."""
    value = scope.node.try_get_context(PER_STACK_CONTEXT_KEY)
    if value is None:
        return default
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise FmValidationError(PER_STACK_CONTEXT_KEY, value, "an integer >= 1 (GPU node groups per stack)")
    return value


def node_group_scope(owner: Construct, index: int, *, per_stack: int, prefix: str = "NodeGroups") -> Construct:
    """Where the ``index``-th GPU node group of ``owner`` (0-based, in the order they were added) goes: ``owner``
    itself for the first ``per_stack``, then the :class:`aws_cdk.NestedStack` ``<owner>/<prefix><n>`` with
    ``n = index // per_stack`` (``NodeGroups1`` holds groups ``per_stack`` .. ``2 * per_stack - 1``, ...), created on
    first use and checked by :func:`check_template_budgets`. Deterministic by order, so adding groups never moves one
    (removing or reordering earlier groups does: see docs/concepts/template-budgets.md)."""
    if index < per_stack:
        return owner
    name = f"{prefix}{index // per_stack}"
    existing = owner.node.try_find_child(name)
    if isinstance(existing, NestedStack):
        return existing
    nested = NestedStack(
        owner,
        name,
        description=f"fmconstructs: GPU node groups {index // per_stack * per_stack + 1}.. of {owner.node.path}",
    )
    check_template_budgets(nested)
    return nested


def check_new_group_id(id: str, existing: list[str]) -> None:
    """A new GPU node group's id is not one of the cluster's (groups may sit in different stacks, where a repeated
    construct id would not clash)."""
    if id in existing:
        raise FmValidationError("id", id, "an id no other GPU node group of this cluster has")
