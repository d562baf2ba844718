"""Convert CustomResourceDefinition YAML into the JSON schemas the tests validate against.

Usage (from the repository root, with a clone of the upstream repository at the pinned tag)::

    git -C keda show v2.20.2:config/crd/bases/keda.sh_scaledobjects.yaml \
        | python tests/data/keda_crds/vendor.py v1alpha1 > tests/data/keda_crds/keda.sh_scaledobjects.v1alpha1.json

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
