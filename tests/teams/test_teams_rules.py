"""Cross-team and per-backend naming rules (pure functions): GIVEN teams that break one rule, THEN the rule raises
FmValidationError naming ``teams[i].<field>``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.teams import Team, rules


def _t(name: str, **kw: Any) -> Team:
    return Team(name=name, **kw)


GOOD = [_t("research", namespaces=["ml"], guaranteed_gpus=16), _t("prod", namespaces=["prod"], guaranteed_gpus=8)]


def test_good_teams_pass_every_rule():
    assert rules.check_teams(GOOD) == tuple(GOOD)
    rules.guarantees_fit_the_cluster(GOOD, 32)
    rules.slurm_team_names(GOOD)
    rules.kubernetes_team_names(GOOD)
    rules.teams_have_namespaces(GOOD)
    rules.hyperpod_team_names(GOOD)


@pytest.mark.parametrize(
    ("rule", "teams", "parameter"),
    [
        (rules.check_teams, "research", "teams"),
        (rules.check_teams, ["research"], r"teams\[0\]"),
        (rules.unique_team_names, [_t("a"), _t("b"), _t("a")], r"teams\[2\]\.name"),
        (
            rules.namespace_in_one_team,
            [_t("a", namespaces=["ml"]), _t("b", namespaces=["ml"])],
            r"teams\[1\]\.namespaces",
        ),
        (lambda t: rules.guarantees_fit_the_cluster(t, 16), GOOD, "teams"),
        (lambda t: rules.guarantees_fit_the_cluster(t, 64), [_t("a", max_job_gpus=65)], r"teams\[0\]\.max_job_gpus"),
        (rules.slurm_team_names, [_t("ML")], r"teams\[0\]\.name"),
        (rules.slurm_team_names, [_t("a,b")], r"teams\[0\]\.name"),
        (rules.slurm_team_names, [_t("a b")], r"teams\[0\]\.name"),
        (rules.slurm_team_names, [_t("a", users=["Alice"])], r"teams\[0\]\.users\[0\]"),
        (rules.kubernetes_team_names, [_t("ml_team")], r"teams\[0\]\.name"),
        (rules.kubernetes_team_names, [_t("a", namespaces=["ML"])], r"teams\[0\]\.namespaces\[0\]"),
        (rules.teams_have_namespaces, [_t("a")], r"teams\[0\]\.namespaces"),
        (rules.hyperpod_team_names, [_t("a" * 41)], r"teams\[0\]\.name"),
        (rules.hyperpod_team_names, [_t("team-")], r"teams\[0\]\.name"),
        (rules.hyperpod_team_names, [_t(f"t{i}") for i in range(11)], "teams"),
    ],
)
def test_each_rule_refuses_what_it_checks(rule: Callable[[Any], None], teams: Any, parameter: str):
    with pytest.raises((FmValidationError, FmTypeError), match=rf"^{parameter} "):
        rule(teams)


def test_the_guarantee_sum_is_not_checked_against_unknown_or_deploy_time_gpus():
    import aws_cdk as cdk

    stack = cdk.Stack()
    nodes = cdk.CfnParameter(stack, "N", type="Number").value_as_number
    rules.guarantees_fit_the_cluster(GOOD, None)
    rules.guarantees_fit_the_cluster(GOOD, nodes)
