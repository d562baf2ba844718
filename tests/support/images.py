"""Helpers of tests/images/test_images.py that other test modules use too."""

from __future__ import annotations

from fmconstructs.images import (
    GpuNodeImage,
)


def _image(scene, id: str = "Image", **props: object) -> GpuNodeImage:
    props.setdefault("instance_types", ["p5.48xlarge"])
    props.setdefault("vpc", scene.vpc)
    return GpuNodeImage(scene.stack, id, **props)  # type: ignore[arg-type]
