"""Image references, URL paths and served model names that reach manifests (fmconstructs._validate_refs)."""

from __future__ import annotations

import pytest
from aws_cdk import Token
from hypothesis import given, settings
from hypothesis import strategies as st

from fmconstructs._validate_refs import check_image_reference, check_model_name, check_url_path
from fmconstructs.errors import FmValidationError

GOOD_IMAGES = [
    "vllm/vllm-openai:v0.11.0",
    "public.ecr.aws/hpc-cloud/nccl-tests:cuda12.8.1-efa1.43.2-ofiv1.16.3-ncclv2.27.7-1-testsv2.16.9",
    "123456789012.dkr.ecr.us-east-1.amazonaws.com/trainer:1.0",
    "localhost:5000/team/model_server__v2",
    "nginx",
    "ghcr.io/org/app@sha256:" + "a" * 64,
    "registry.example.com:443/a/b:tag@sha256:" + "0" * 64,
]
BAD_IMAGES = [
    "",
    "vllm/vllm-openai:v0.11.0\n",
    "vllm/vllm\x00-openai",
    "vllm/vllm-openai :v1",
    "Vllm/VLLM",  # repository path components are lower case
    "vllm/vllm-openai:" + "t" * 129,
    "vllm/vllm-openai:-bad",
    "vllm//openai",
    "a/" + "b" * 260,
    "vllm/vllm-openai@sha256:short",
]


@pytest.mark.parametrize("image", GOOD_IMAGES)
def test_image_references_the_registry_grammar_accepts(image: str) -> None:
    assert check_image_reference("image", image) == image


@pytest.mark.parametrize("image", BAD_IMAGES)
def test_image_references_the_registry_grammar_refuses(image: str) -> None:
    with pytest.raises(FmValidationError, match=r"^image must be a container image reference"):
        check_image_reference("image", image)


def test_a_pinned_image_needs_a_tag_other_than_latest_or_a_digest() -> None:
    for image in ("nginx", "nginx:latest"):
        with pytest.raises(FmValidationError, match="pinned"):
            check_image_reference("image", image, pinned=True)
    assert check_image_reference("image", "nginx:1.27", pinned=True)


def test_an_image_with_a_deploy_time_part_passes() -> None:
    image = f"{Token.as_string({'Ref': 'Repo'})}:v1"
    assert check_image_reference("image", image) == image


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x1F), min_size=1, max_size=3))
def test_control_characters_never_pass(control: str) -> None:
    with pytest.raises(FmValidationError):
        check_image_reference("image", f"vllm/vllm{control}openai:v1")
    with pytest.raises(FmValidationError):
        check_url_path("health_check_path", f"/he{control}alth")
    with pytest.raises(FmValidationError):
        check_model_name("served_model_name", f"llama{control}")


@pytest.mark.parametrize("path", ["/", "/health", "/v1/models", "/ping?ready=1", "/a%20b", "/a/b/", "/" + "a" * 1023])
def test_url_paths_of_rfc_3986_within_the_limit_pass(path: str) -> None:
    assert check_url_path("health_check_path", path) == path


@pytest.mark.parametrize("path", ["", "health", "//x", "/a b", "/a%zz", "/a#frag", "/" + "a" * 1024, "/x\n"])
def test_url_paths_otherwise_are_refused(path: str) -> None:
    with pytest.raises(FmValidationError, match=r"^health_check_path must be "):
        check_url_path("health_check_path", path)


@pytest.mark.parametrize("name", ["llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct", "m" * 256])
def test_model_names_pass(name: str) -> None:
    assert check_model_name("served_model_name", name) == name


@pytest.mark.parametrize("name", ["", "two words", 'say"hi', "m" * 257, "a\\b"])
def test_model_names_otherwise_are_refused(name: str) -> None:
    with pytest.raises(FmValidationError, match=r"^served_model_name must be a model name"):
        check_model_name("served_model_name", name)
