"""What the library renders for an EKS TrainingPlatform, read back from the synthesized template for the EKS twin.

- the GPU managed node group (``AWS::EKS::Nodegroup`` with the node-checks taint): its ``Taints`` (EKS spells the
  effect ``NO_SCHEDULE``; the kubelet registers ``NoSchedule``: EKS API ``Taint``), ``Labels`` and desired size;
- the manifests (``Custom::AWSCDK-EKS-KubernetesResource`` ``Manifest``, JSON): the node-check gate's ConfigMap and
  DaemonSet (:mod:`fmconstructs.eks.health`), the node-exporter DaemonSet and Service
  (:mod:`fmconstructs.observability.eks`);
- the dcgm-exporter chart's Service (``Custom::AWSCDK-EKS-HelmChart`` release ``dcgm-exporter``: ``service.port`` and
  ``service.annotations`` of its values);
- the AMP managed scraper's configuration (``AWS::APS::Scraper`` ``ConfigurationBlob``, base64 YAML).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from .artifacts import Resolver
from .procs import TwinError

__all__ = ["EksRendered", "eks_rendered"]

NODE_CHECKS_TAINT = "fmconstructs.io/node-checks"
_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


@dataclass(frozen=True)
class EksRendered:
    template: Mapping[str, Any]
    #: The GPU node group's taints (Kubernetes spelling) and labels, and its desired size.
    taints: tuple[dict[str, str], ...]
    labels: Mapping[str, str]
    desired_size: int
    #: Every manifest object by (kind, name).
    manifests: Mapping[tuple[str, str], dict[str, Any]]
    dcgm_service: dict[str, Any]
    scrape_config: Mapping[str, Any]

    def manifest(self, kind: str, name_prefix: str) -> dict[str, Any]:
        found = [m for (k, n), m in self.manifests.items() if k == kind and n.startswith(name_prefix)]
        if len(found) != 1:
            raise TwinError(f"{len(found)} {kind} manifests named {name_prefix}*: {sorted(self.manifests)}")
        return found[0]

    @property
    def gate_daemon_set(self) -> dict[str, Any]:
        return self.manifest("DaemonSet", "fmconstructs-node-checks-")

    @property
    def gate_config_map(self) -> dict[str, Any]:
        return self.manifest("ConfigMap", "fmconstructs-node-checks-")

    @property
    def node_exporter_daemon_set(self) -> dict[str, Any]:
        return self.manifest("DaemonSet", "fm-node-exporter")

    @property
    def node_exporter_service(self) -> dict[str, Any]:
        return self.manifest("Service", "fm-node-exporter")


def _resources(template: Mapping[str, Any], kind: str) -> dict[str, Mapping[str, Any]]:
    return {k: v for k, v in (template.get("Resources") or {}).items() if v.get("Type") == kind}


def _gpu_group(template: Mapping[str, Any]) -> Mapping[str, Any]:
    groups: list[Mapping[str, Any]] = [
        g["Properties"]
        for g in _resources(template, "AWS::EKS::Nodegroup").values()
        if any(t.get("Key") == NODE_CHECKS_TAINT for t in g["Properties"].get("Taints") or [])
    ]
    if len(groups) != 1:
        raise TwinError(f"{len(groups)} node groups carry the {NODE_CHECKS_TAINT} taint (the twin runs one)")
    return groups[0]


def _manifests(template: Mapping[str, Any], resolver: Resolver) -> dict[tuple[str, str], dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for resource in _resources(template, "Custom::AWSCDK-EKS-KubernetesResource").values():
        text = resolver.resolve((resource.get("Properties") or {}).get("Manifest"))
        for obj in json.loads(str(text)):
            found[(str(obj["kind"]), str(obj["metadata"]["name"]))] = obj
    return found


def _dcgm_service(template: Mapping[str, Any], resolver: Resolver) -> dict[str, Any]:
    for resource in _resources(template, "Custom::AWSCDK-EKS-HelmChart").values():
        properties = resolver.resolve(resource.get("Properties") or {})
        if properties.get("Release") == "dcgm-exporter":
            values = json.loads(str(properties.get("Values") or "{}"))
            service: dict[str, Any] = dict(values.get("service") or {})
            return {"name": "dcgm-exporter", "namespace": properties.get("Namespace"), **service}
    raise TwinError("no dcgm-exporter chart in the template")


def eks_rendered(template: Mapping[str, Any]) -> EksRendered:
    resolver = Resolver(template)
    group = _gpu_group(template)
    taints = tuple(
        {"key": t["Key"], "value": t.get("Value", ""), "effect": _EFFECTS[t["Effect"]]} for t in group["Taints"]
    )
    (scraper,) = _resources(template, "AWS::APS::Scraper").values()
    blob = scraper["Properties"]["ScrapeConfiguration"]["ConfigurationBlob"]
    return EksRendered(
        template=template,
        taints=taints,
        labels=dict(group.get("Labels") or {}),
        desired_size=int(group["ScalingConfig"]["DesiredSize"]),
        manifests=_manifests(template, resolver),
        dcgm_service=_dcgm_service(template, resolver),
        scrape_config=yaml.safe_load(base64.b64decode(str(resolver.resolve(blob)))),
    )
