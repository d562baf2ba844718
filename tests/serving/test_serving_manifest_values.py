"""Serving values that reach manifests are checked with the library's one image-reference and URL-path checkers."""

from __future__ import annotations

import pytest

from fmconstructs.errors import FmValidationError
from fmconstructs.serving.exposure import alb_ingress_manifest, nlb_service_manifest


@pytest.mark.parametrize("render", [nlb_service_manifest, alb_ingress_manifest])
@pytest.mark.parametrize("path", ["/" + "h" * 1024, "/health\n", "/he alth", "health"])
def test_a_health_check_path_the_load_balancer_refuses_is_refused(render, path: str) -> None:
    with pytest.raises(FmValidationError, match=r"^health_check_path must be an absolute URL path"):
        render(server_name="llama", health_check_path=path)


@pytest.mark.parametrize("render", [nlb_service_manifest, alb_ingress_manifest])
def test_a_path_with_a_query_is_kept(render) -> None:
    assert "/health?full=1" in str(render(server_name="llama", health_check_path="/health?full=1"))
