"""Print a short summary of each synthesized stack in a cloud assembly: ``python -m examples.summary cdk.out``."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from fmconstructs.catalog import CATALOG


def summarize_template(name: str, template: dict[str, Any]) -> list[str]:
    """Lines describing one template: resource counts, then one line per GPU launch template."""
    resources: dict[str, Any] = template.get("Resources", {})
    counts = Counter(r["Type"] for r in resources.values())
    lines = [f"{name}: {len(resources)} resources (" + ", ".join(f"{n} {t}" for t, n in sorted(counts.items())) + ")"]
    for logical_id, res in sorted(resources.items()):
        if res["Type"] != "AWS::EC2::LaunchTemplate":
            continue
        data = res["Properties"]["LaunchTemplateData"]
        itype = data.get("InstanceType", "?")
        nics = data.get("NetworkInterfaces", [])
        efa = sum(1 for n in nics if n.get("InterfaceType") in ("efa", "efa-only"))
        gpus = CATALOG.get(itype).gpu if itype in CATALOG else None
        market = (data.get("InstanceMarketOptions") or {}).get("MarketType", "on-demand")
        target = (data.get("CapacityReservationSpecification") or {}).get("CapacityReservationTarget")
        capacity = market if not target else f"{market} -> {next(iter(target.values()))}"
        placement = "placement group" if data.get("Placement") else "no placement group"
        gpu_text = f"{gpus.count}x {gpus.model}" if gpus else "no GPU"
        network = f"{efa} EFA / {len(nics)} interfaces" if nics else "default network interface"
        lines.append(f"  {logical_id}: {itype}, {gpu_text}, {network}, {capacity}, {placement}")
    return lines


def main(argv: list[str]) -> int:
    out = Path(argv[1] if len(argv) > 1 else "cdk.out")
    templates = sorted(out.glob("*.template.json"))
    if not templates:
        print(f"no templates in {out}", file=sys.stderr)
        return 1
    for path in templates:
        name = path.name.removesuffix(".template.json")
        print("\n".join(summarize_template(name, json.loads(path.read_text()))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
