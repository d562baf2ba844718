"""What the library renders for a cluster, read from a synthesized stack, so the twin installs nothing hand-written.

:func:`build_platform` synthesizes a :class:`~fmconstructs.platform.TrainingPlatform` on a Slurm backend (PCS,
ParallelCluster or HyperPod Slurm) with observability and remediation on; :class:`Rendered` then gives:

- each node group's bootstrap archive (:meth:`fmconstructs.bootstrap.NodeBootstrap.archive`, the bytes a node
  downloads): its steps and the files each installs;
- the Slurm settings the library hands the service (PCS ``SlurmCustomSettings``, ParallelCluster
  ``CustomSlurmSettings``), in order;
- the remediation handler's ``POLICY``/``TARGET`` environment and the template itself (rule groups, Alertmanager
  definition) for the monitoring half (:mod:`.monitoring`).

Deploy-time values in an archive stay ``@@FMCONSTRUCTS_VALUE_N@@`` placeholders (the loader substitutes them on a
node); the twin's node set-up never needs them (Lustre is faked).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import aws_cdk as cdk

from fmconstructs import CapacityBlock
from fmconstructs.bootstrap import NodeBootstrap
from fmconstructs.bootstrap.archive import read_tar_gz
from fmconstructs.platform import (
    Backend,
    EksOptions,
    HyperPodOptions,
    ParallelClusterOptions,
    PcsOptions,
    PlatformHealth,
    PlatformObservability,
    PlatformStorage,
    TrainingPlatform,
)
from fmconstructs.remediation import RemediationPolicy

from tests.conftest import ENV, new_app
from tests.support.platform import AMI, BLOCK, new_scene_in

__all__ = ["Bootstrap", "Rendered", "Step", "build_platform", "resolve"]


@dataclass(frozen=True)
class Step:
    """One bootstrap step: its name (``node-health``), its script and the files it installs (path -> text, mode)."""

    name: str
    script: str
    files: Mapping[str, tuple[str, int]]


@dataclass(frozen=True)
class Bootstrap:
    """One node group's bootstrap archive."""

    path: str
    steps: tuple[Step, ...]

    def step(self, name: str) -> Step | None:
        return next((s for s in self.steps if s.name == name), None)

    def files(self) -> dict[str, tuple[str, int]]:
        merged: dict[str, tuple[str, int]] = {}
        for step in self.steps:
            merged.update(step.files)
        return merged


@dataclass
class Rendered:
    """A synthesized platform and what the twin reads from it."""

    backend: Backend
    stack: cdk.Stack
    platform: TrainingPlatform
    template: dict[str, Any] = field(default_factory=dict)
    bootstraps: dict[str, Bootstrap] = field(default_factory=dict)

    def resources(self, kind: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.template["Resources"].items() if v["Type"] == kind}

    def bootstrap(self, contains: str) -> Bootstrap:
        """The bootstrap whose construct path contains ``contains`` (``Gpu``, ``Login``, ``HeadBootstrap``)."""
        found = [b for p, b in self.bootstraps.items() if contains in p]
        if len(found) != 1:
            raise KeyError(f"{len(found)} bootstraps match {contains!r}: {sorted(self.bootstraps)}")
        return found[0]

    def slurm_settings(self) -> list[tuple[str, str]]:
        """The Slurm settings the library gives the service, in order."""
        if self.backend is Backend.PCS:
            (cluster,) = self.resources("AWS::PCS::Cluster").values()
            custom = cluster["Properties"]["SlurmConfiguration"].get("SlurmCustomSettings", [])
            return [(s["ParameterName"], str(s["ParameterValue"])) for s in custom]
        if self.backend is Backend.PARALLELCLUSTER:
            (cluster,) = self.resources("Custom::PclusterCluster").values()
            slurm = cluster["Properties"]["ClusterConfiguration"]["Scheduling"].get("SlurmSettings", {})
            pairs: list[tuple[str, str]] = []
            for entry in slurm.get("CustomSlurmSettings", []):
                pairs += [(k, str(v)) for k, v in entry.items()]
            return pairs
        return []

    def remediation_environment(self) -> dict[str, Any]:
        """POLICY and TARGET of the remediation handler, decoded."""
        for resource in self.resources("AWS::Lambda::Function").values():
            variables = resource["Properties"].get("Environment", {}).get("Variables", {})
            if "POLICY" in variables and "TARGET" in variables:
                return {name: json.loads(resolve(variables[name])) for name in ("POLICY", "TARGET")}
        raise KeyError("no remediation handler in the stack")


def resolve(value: Any) -> Any:
    """A template value with its intrinsics replaced by stand-ins: ``Ref`` -> the logical id, ``Fn::GetAtt`` ->
    ``<id>.<attribute>``, ``Fn::Join`` joined, ``Fn::ImportValue`` -> its name (the twin's "deployed" values)."""
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Ref":
            return str(arg)
        if key == "Fn::GetAtt":
            return ".".join(str(a) for a in arg)
        if key == "Fn::Join":
            return str(arg[0]).join(str(resolve(part)) for part in arg[1])
        if key == "Fn::ImportValue":
            return str(resolve(arg))
        if key == "Fn::Sub" and isinstance(arg, str):
            return arg
    if isinstance(value, dict):
        return {k: resolve(v) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v) for v in value]
    return value


def _orchestrator(backend: Backend) -> Any:
    return {
        Backend.PCS: lambda: PcsOptions(ami=AMI, login_nodes=1),
        Backend.PARALLELCLUSTER: lambda: ParallelClusterOptions(cluster_name="twin-pc"),
        Backend.HYPERPOD: lambda: HyperPodOptions(),
        Backend.EKS: lambda: EksOptions(),  # the EKS half: tests/support/twin/eks.py
    }[backend]()


def build_platform(
    backend: Backend,
    *,
    nodes: int = 4,
    health: PlatformHealth | None = None,
    **platform_props: Any,
) -> Rendered:
    """Synthesize a p5.48xlarge TrainingPlatform of ``nodes`` nodes on ``backend`` (new workspace, remediation on:
    ``replace_nodes=True`` unless ``health`` says otherwise) and read what the twin needs."""
    app = new_app()
    stack = cdk.Stack(app, "Twin", env=ENV)
    scene = new_scene_in(stack)
    health = health or PlatformHealth(remediation=RemediationPolicy(dry_run=False), replace_nodes=True)
    platform = TrainingPlatform(
        stack,
        "Platform",
        vpc=scene.vpc,
        instance_type="p5.48xlarge",
        nodes=nodes,
        capacity=None if backend is Backend.HYPERPOD else CapacityBlock(reservation_id=BLOCK, instance_count=nodes),
        orchestrator=_orchestrator(backend),
        storage=PlatformStorage.for_throughput(target_gbytes_per_s=4.6875),
        observability=PlatformObservability.new(),
        health=health,
        **platform_props,
    )
    assembly = app.synth()
    rendered = Rendered(backend=backend, stack=stack, platform=platform)
    rendered.template = assembly.get_stack_by_name(stack.stack_name).template
    for construct in stack.node.find_all():
        if isinstance(construct, NodeBootstrap) and not construct.is_empty:
            rendered.bootstraps[construct.node.path] = _read_bootstrap(construct)
    return rendered


def _read_bootstrap(bootstrap: NodeBootstrap) -> Bootstrap:
    data, _values = bootstrap.archive()
    entries = read_tar_gz(data)
    steps: dict[str, dict[str, Any]] = {}
    for name, (content, mode) in sorted(entries.items()):
        parts = name.split("/", 3)
        if parts[0] != "steps" or len(parts) < 3:
            continue
        step = steps.setdefault(parts[1], {"script": "", "files": {}})
        if parts[2] == "run.sh":
            step["script"] = content.decode()
        elif parts[2] == "files":
            step["files"]["/" + parts[3]] = (content.decode(errors="replace"), mode)
    ordered = tuple(
        Step(name=key.split("-", 1)[1], script=value["script"], files=value["files"])
        for key, value in sorted(steps.items())
    )
    return Bootstrap(path=bootstrap.node.path, steps=ordered)
