"""Every textfile a DaemonSet writes for node exporter is read by node exporter (issue 29).

GIVEN the rendered EKS manifests of the example app (FmEksP5en, FmEksGb200, FmServeP5en, each with the managed
scraper) and of a TrainingPlatform on EKS with health and observability on, WHEN the DaemonSets' containers are
walked (command, args, preStop hook, mounted ConfigMap scripts; volumes and volumeMounts;
:mod:`tests.support.collector_textfiles`), THEN each file written (the node checks' ``fm_node_checks_boot.prom``, the
EFA counters, the clean-stop marker) lies in a directory that a node exporter running on every node reads with
``--collector.textfile.directory``: the same host path once the container paths are mapped through the volumes.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest

from fmconstructs import CapacityBlock
from fmconstructs.health import metric_names as names
from fmconstructs.platform import EksOptions, PlatformHealth, PlatformObservability, PlatformStorage, TrainingPlatform

from tests.conftest import ENV, new_app
from tests.support.collector_textfiles import (
    daemon_sets,
    template_manifests,
    textfile_readers,
    unread_textfiles,
    written_textfiles,
)

EXAMPLES = ("FmEksP5en", "FmEksGb200", "FmServeP5en")
CHECKS_FILE = names.NODE_CHECK_TEXTFILE.format(mode="boot")


def _platform_manifests() -> list[dict[str, Any]]:
    app = new_app()
    stack = cdk.Stack(app, "Textfiles", env=ENV)
    vpc = cdk.aws_ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
        private_subnet_route_table_ids=["rtb-0aaaaaaaaaaaaaaa1", "rtb-0bbbbbbbbbbbbbbb2"],
    )
    TrainingPlatform(
        stack,
        "Platform",
        vpc=vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        capacity=CapacityBlock(reservation_id="cr-0fedcba9876543210", instance_count=2),
        orchestrator=EksOptions(),
        storage=PlatformStorage.for_throughput(target_gbytes_per_s=1.0),
        observability=PlatformObservability.new(),
        health=PlatformHealth(),
    )
    return template_manifests(app.synth().get_stack_by_name(stack.stack_name).template)


@pytest.fixture(scope="module")
def rendered(example_stacks: dict[str, cdk.Stack]) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for name in EXAMPLES:
        stack = example_stacks[name]
        template = stack.node.root.synth().get_stack_by_name(stack.stack_name).template  # type: ignore[attr-defined]
        out[name] = template_manifests(template)
    out["TrainingPlatform(EksOptions)"] = _platform_manifests()
    return out


@pytest.mark.parametrize("source", [*EXAMPLES, "TrainingPlatform(EksOptions)"])
def test_every_textfile_a_daemonset_writes_is_read_by_node_exporter(
    rendered: dict[str, list[dict[str, Any]]], source: str
) -> None:
    manifests = rendered[source]
    assert daemon_sets(manifests), f"{source}: no DaemonSet rendered"
    assert textfile_readers(manifests), f"{source}: no node exporter reads textfiles"
    assert unread_textfiles(manifests) == []


@pytest.mark.parametrize("source", [*EXAMPLES, "TrainingPlatform(EksOptions)"])
def test_the_node_check_gate_writes_its_results_where_node_exporter_reads(
    rendered: dict[str, list[dict[str, Any]]], source: str
) -> None:
    """The walk sees the gate's file at all (a test that finds no writer proves nothing)."""
    manifests = rendered[source]
    checks = [w for w in written_textfiles(manifests) if w.file == CHECKS_FILE]
    assert checks, f"{source}: no DaemonSet writes {CHECKS_FILE}"
    readers = {r.where for r in textfile_readers(manifests)}
    assert {w.where for w in checks} <= readers
    assert {w.where for w in checks} == {f"host:{names.NODE_EXPORTER_TEXTFILE_DIR}"}
