"""Convert CustomResourceDefinition YAML into the JSON schemas the tests validate against.

One script for every vendored CRD (kueue_crds, keda_crds, karpenter_crds, lws_crds). Usage (from the repository
root, with a clone of the upstream repository at the pinned tag)::

    git -C kueue show v0.19.2:config/components/crd/bases/kueue.x-k8s.io_topologies.yaml \
        | python tests/data/vendor_crd.py v1beta2 > tests/data/kueue_crds/kueue.x-k8s.io_topologies.v1beta2.json

Keeps the ``openAPIV3Schema`` of the named version unchanged except that ``description`` texts are dropped (size).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import yaml


def strip_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: strip_descriptions(v) for k, v in node.items() if not (k == "description" and isinstance(v, str))}
    if isinstance(node, list):
        return [strip_descriptions(v) for v in node]
    return node


def main(version: str) -> None:
    crd = yaml.safe_load(sys.stdin)
    (entry,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    schema = strip_descriptions(entry["schema"]["openAPIV3Schema"])
    out = {
        "group": crd["spec"]["group"],
        "kind": crd["spec"]["names"]["kind"],
        "version": version,
        "openAPIV3Schema": schema,
    }
    json.dump(out, sys.stdout, sort_keys=True, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
