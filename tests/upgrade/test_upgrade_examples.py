"""Upgrading a deployed example stack from a release to today's library: GIVEN each release's baseline (its example app
synthesized at the release commit by tools/record_upgrade_baseline.py, reduced to what ``fmc changes`` compares) WHEN
today's example app is compared with it by ``fmc changes``' own comparison (fmconstructs.cli.changes.compare_stacks)
THEN no stateful resource is replaced, removed, renamed or shrunk and no provider refuses the update, except the
reviewed changes of tests/upgrade/allowed_changes.py, each with its migration note in docs/upgrading.md and CHANGELOG.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from fmconstructs.cli.changes import STATEFUL_TYPES, Finding, compare_stacks
from fmconstructs.cli.changes_baseline import BASELINE_FORMAT, project_template

from tests.upgrade.allowed_changes import ALLOWED

BASELINES = Path(__file__).resolve().parent / "baselines"
ROOT = Path(__file__).resolve().parents[2]
VERSIONS = sorted(p.name for p in BASELINES.iterdir() if p.is_dir())


def _baseline(version: str) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((BASELINES / version).glob("Fm*.json"))}


def _findings(version: str, templates: dict[str, dict[str, Any]]) -> list[Finding]:
    old = _baseline(version)
    return compare_stacks(old, {name: t for name, t in templates.items() if name in old}).findings


def _label(finding: Finding) -> str:
    return f"{finding.stack}/{finding.logical_id} {finding.kind} {finding.prop}: {finding.old} -> {finding.new}"


def test_releases_0_2_and_0_3_have_baselines():
    assert {"0.2.0", "0.3.0", "0.3.1"} <= set(VERSIONS)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_baseline_holds_every_example_stack_of_its_release(version: str):
    provenance = json.loads((BASELINES / version / "provenance.json").read_text())
    stacks = _baseline(version)
    assert sorted(stacks) == sorted(provenance["stacks"])
    assert {s["format"] for s in stacks.values()} == {BASELINE_FORMAT}
    assert {s["version"] for s in stacks.values()} == {version}


def test_a_baseline_finds_what_the_whole_template_finds(example_templates: dict[str, Any]):
    # GIVEN the 0.3.0 baseline WHEN compared with today's whole templates or with their reduced form THEN the same
    # findings (the reduction keeps everything the comparison reads)
    whole = _findings("0.3.0", example_templates)
    reduced = _findings("0.3.0", {name: project_template(t) for name, t in example_templates.items()})
    assert [f.to_json() for f in reduced] == [f.to_json() for f in whole]
    assert (
        compare_stacks({n: project_template(t) for n, t in example_templates.items()}, example_templates).findings == []
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_an_upgrade_changes_no_stateful_resource_beyond_the_reviewed_list(
    version: str, example_templates: dict[str, Any]
):
    gating = [f for f in _findings(version, example_templates) if f.gating]
    unreviewed = [_label(f) for f in gating if not any(a.covers(version, f) for a in ALLOWED)]
    assert unreviewed == [], (
        f"upgrading the example app from {version} would replace, remove or fail these; fix the change or add a "
        "reviewed entry with its migration note (tests/upgrade/allowed_changes.py, docs/upgrading.md)"
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_every_stateful_logical_id_of_a_release_is_kept_with_its_type(version: str, example_templates: dict[str, Any]):
    lost = [
        f"{stack}/{lid} ({res['Type']})"
        for stack, template in _baseline(version).items()
        for lid, res in template["Resources"].items()
        if res["Type"] in STATEFUL_TYPES
        and example_templates[stack]["Resources"].get(lid, {}).get("Type") != res["Type"]
    ]
    assert lost == []


@pytest.mark.parametrize("allowed", ALLOWED, ids=lambda a: f"{a.version}-{a.stack}-{a.note}")
def test_every_reviewed_change_is_still_found(allowed: Any, example_templates: dict[str, Any]):
    assert any(allowed.covers(allowed.version, f) for f in _findings(allowed.version, example_templates)), (
        "a reviewed change no upgrade makes any more: remove its entry"
    )


@pytest.mark.parametrize("note", sorted({a.note for a in ALLOWED}))
def test_every_reviewed_change_has_its_migration_note_in_the_docs_and_the_changelog(note: str):
    upgrading = (ROOT / "docs" / "upgrading.md").read_text()
    assert re.search(rf"^### {re.escape(note)}: ", upgrading, re.M), f"docs/upgrading.md has no '### {note}: ' note"
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "docs/upgrading.md" in changelog and note in changelog, f"CHANGELOG.md does not name the note {note}"


@pytest.mark.parametrize("version", [v for v in VERSIONS if v != "0.2.0"])
def test_a_baseline_keeps_the_parallelcluster_head_node_actions(version: str):
    # what ParallelCluster refuses to update (fmconstructs.cli.changes.UPDATE_REFUSED) is in the baseline
    for stack in ("FmParallelClusterP5en", "FmParallelClusterGb200"):
        (cluster,) = [
            r for r in _baseline(version)[stack]["Resources"].values() if r["Type"] == "Custom::PclusterCluster"
        ]
        config = cluster["Properties"]["ClusterConfiguration"]
        assert config["HeadNode"]["CustomActions"] and config["HeadNode"]["InstanceType"]


@pytest.mark.parametrize("version", ["0.3.0", "0.3.1"])
def test_keeping_the_deployed_head_node_actions_upgrades_a_parallelcluster_example(version: str):
    # GIVEN a ParallelCluster example deployed with 0.3.x WHEN it is upgraded with the migration note's one line (the
    # deployed HeadNode.CustomActions kept through add_override) THEN nothing gating is left: ParallelCluster accepts
    # the update, and the new head node pieces wait in their SSM parameters for a new cluster
    import aws_cdk as cdk

    from examples.observability_stack import ObservabilityStack
    from examples.parallelcluster_stacks import ParallelClusterGb200Stack, ParallelClusterP5enStack

    from tests.conftest import new_app

    app = new_app()
    observability = ObservabilityStack(app, "FmObservability")
    stacks: dict[str, cdk.Stack] = {
        "FmParallelClusterP5en": ParallelClusterP5enStack(
            app, "FmParallelClusterP5en", workspace=observability.workspace
        ),
        "FmParallelClusterGb200": ParallelClusterGb200Stack(app, "FmParallelClusterGb200"),
    }
    old = _baseline(version)
    for name, stack in stacks.items():
        (deployed,) = [r for r in old[name]["Resources"].values() if r["Type"] == "Custom::PclusterCluster"]
        actions = deployed["Properties"]["ClusterConfiguration"]["HeadNode"]["CustomActions"]
        stack.cluster.add_override("HeadNode.CustomActions", actions)  # type: ignore[attr-defined]
    assembly = app.synth()
    new = {name: assembly.get_stack_by_name(s.stack_name).template for name, s in stacks.items()}
    findings = compare_stacks({name: old[name] for name in new}, new).findings
    assert [_label(f) for f in findings if f.gating] == []
