"""The rule shape shared by every package's rules.py: a soft rule's Advice reaches the construct as its warning."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk.assertions import Annotations, Match
from constructs import Construct

from fmconstructs._rules import Advice, warn
from fmconstructs.errors import WarningId


def test_warn_attaches_each_advice_and_skips_none() -> None:
    stack = cdk.Stack(cdk.App(), "S")
    scope = Construct(stack, "Thing")
    advice = Advice(WarningId.NO_INSTANCE_STORE, "no NVMe here")
    warn(scope, [None, advice])
    warn(scope, None)
    warn(scope, Advice(WarningId.PLACEMENT_GROUP_WITH_CAPACITY_BLOCK, "not on a block"))
    annotations = Annotations.from_stack(stack)
    annotations.has_warning("/S/Thing", Match.string_like_regexp("no NVMe here"))
    annotations.has_warning("/S/Thing", Match.string_like_regexp("not on a block"))
    assert len(annotations.find_warning("*", Match.any_value())) == 2
