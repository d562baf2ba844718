"""CapacityBlockEvents with many reservation ids: one rule per event pattern that fits EventBridge's size quota.

GIVEN hundreds of reservation ids, THEN the ids are split, in order and without loss, over the fewest rules whose
pattern is at most EVENT_PATTERN_MAX_CHARS characters, each invoking the handler; a few ids keep one rule.
"""

from __future__ import annotations

import itertools
import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sns as sns

from fmconstructs.capacity_events import DETAIL_TYPES, CapacityBlockEvents
from fmconstructs.capacity_events.patterns import (
    EVENT_PATTERN_API_MAX_CHARS,
    EVENT_PATTERN_MAX_CHARS,
    event_pattern,
    pattern_chars,
    split_reservation_ids,
)
from fmconstructs.errors import FmValidationError


def _ids(count: int) -> list[str]:
    return [f"cr-{index:017x}" for index in range(count)]


def test_the_quota_is_the_default_event_pattern_size():
    assert EVENT_PATTERN_MAX_CHARS == 2048 and EVENT_PATTERN_API_MAX_CHARS == 4096


@pytest.mark.parametrize("count", [1, 50, 200, 1000])
def test_split_keeps_every_id_in_order_within_the_limit(count):
    ids = _ids(count)
    groups = split_reservation_ids(ids, detail_types=DETAIL_TYPES)
    assert [i for group in groups for i in group] == ids
    for group in groups:
        assert pattern_chars(event_pattern(DETAIL_TYPES, group)) <= EVENT_PATTERN_MAX_CHARS
    # the fewest groups: no group could have taken the next group's first id
    for group, following in itertools.pairwise(groups):
        assert pattern_chars(event_pattern(DETAIL_TYPES, [*group, following[0]])) > EVENT_PATTERN_MAX_CHARS


def test_no_ids_is_one_pattern_without_detail():
    assert split_reservation_ids([], detail_types=DETAIL_TYPES) == [()]
    assert "detail" not in event_pattern(DETAIL_TYPES, ())


def test_a_deploy_time_id_counts_as_the_longest_id():
    token = cdk.Token.as_string(cdk.Fn.ref("BlockId"))
    longest = "cr-" + "f" * 17
    assert pattern_chars(event_pattern(DETAIL_TYPES, [token])) == pattern_chars(event_pattern(DETAIL_TYPES, [longest]))


@pytest.mark.parametrize("limit", [10, 200])
def test_a_limit_no_single_id_fits_is_refused(limit):
    with pytest.raises(FmValidationError, match=r"^capacity_reservation_ids must be ids whose event pattern fits"):
        split_reservation_ids(_ids(3), detail_types=DETAIL_TYPES, max_chars=limit)


def _rules(stack: cdk.Stack) -> list[dict]:
    from aws_cdk.assertions import Template

    return [r["Properties"] for r in Template.from_stack(stack).find_resources("AWS::Events::Rule").values()]


def test_many_ids_make_several_rules_that_all_invoke_the_handler(scene):
    ids = _ids(300)
    events = CapacityBlockEvents(
        scene.stack, "Blocks", alert_topic=sns.Topic(scene.stack, "Alerts"), capacity_reservation_ids=ids
    )
    rules = _rules(scene.stack)
    assert len(rules) == len(events.rules) > 1
    assert events.rule is events.rules[0]
    seen: list[str] = []
    function_arn = scene.stack.resolve(events.function.function_arn)
    for rule in rules:
        pattern = rule["EventPattern"]
        assert len(json.dumps(pattern)) <= EVENT_PATTERN_MAX_CHARS
        assert pattern["detail-type"] == list(DETAIL_TYPES)
        seen += pattern["detail"]["capacity-reservation-id"]
        assert [t["Arn"] for t in rule["Targets"]] == [function_arn]
    assert sorted(seen) == sorted(ids)


def test_a_few_ids_keep_one_rule(scene):
    events = CapacityBlockEvents(
        scene.stack, "Blocks", alert_topic=sns.Topic(scene.stack, "Alerts"), capacity_reservation_ids=_ids(3)
    )
    assert len(events.rules) == 1 and events.rules[0].node.id == "Rule"
    (rule,) = _rules(scene.stack)
    assert rule["EventPattern"]["detail"]["capacity-reservation-id"] == _ids(3)
