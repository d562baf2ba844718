"""Helpers of tests/hyperpod/test_hyperpod_eks_dependencies.py that other test modules use too."""

from __future__ import annotations

from pathlib import Path

from fmconstructs.hyperpod.eks_dependencies import (
    CHART_NAME,
)


def write_chart(root: Path, *, name: str = CHART_NAME, archived: bool = True, local_dir: bool = True) -> Path:
    """A stand-in for a checkout's HyperPodHelmChart after `helm dependencies update` (the layout, not the chart)."""
    chart = root / "HyperPodHelmChart"
    (chart / "charts").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(
        f"apiVersion: v2\nname: {name}\nversion: 0.1.0\ndependencies:\n"
        "  - name: nvidia-device-plugin\n    version: '0.16.1'\n    repository: https://nvidia.github.io/k8s-device-plugin\n"
        "  - name: health-monitoring-agent\n    version: '0.1.0'\n    repository: file://charts/health-monitoring-agent\n"
    )
    if archived:
        (chart / "charts" / "nvidia-device-plugin-0.16.1.tgz").write_bytes(b"")
    if local_dir:
        (chart / "charts" / "health-monitoring-agent").mkdir()
        (chart / "charts" / "health-monitoring-agent" / "Chart.yaml").write_text("name: health-monitoring-agent\n")
    return chart
