"""References that reach Kubernetes manifests: container image references, URL paths and served model names.

- :func:`check_image_reference`: the reference grammar of the container registries' own parser,
  distribution/reference ``regexp.go`` (the grammar containerd and Docker parse a pod's ``image`` with)::

      reference      := name [ ":" tag ] [ "@" digest ]
      name           := [domain '/'] remote-name
      domain         := host [':' port-number]
      host           := domain-name | IPv4address | \\[ IPv6address \\]
      domain-name    := domain-component ['.' domain-component]*
      domain-component := /([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])/
      path-component := alpha-numeric [separator alpha-numeric]*      alpha-numeric := /[a-z0-9]+/
      separator      := /[_.]|__|[-]+/
      tag            := /[\\w][\\w.-]{0,127}/
      digest         := algorithm ":" hex   algorithm := /[A-Za-z][A-Za-z0-9]*([+.-_][A-Za-z][A-Za-z0-9]*)*/
      hex            := /[0-9a-fA-F]{32,}/

  and ``NameTotalLengthMax = 255`` (the name, without tag and digest). A reference with a deploy-time part (an ECR
  repository URI token) passes unchecked.
- :func:`check_url_path`: an absolute path of RFC 3986 section 3.3 (``path-absolute``: ``/`` then segments of
  ``pchar`` = unreserved / pct-encoded / sub-delims / ``:`` / ``@``) with an optional ``?query`` (section 3.4), at
  most the caller's limit: 1,024 for load balancer health checks (botocore elbv2 ``Path``: min 1, max 1024).
- :func:`check_model_name`: the name clients send as ``model`` (vLLM ``--served-model-name``, the ``model_name``
  label of its metrics): 1-256 printable characters without whitespace, quotes or backslashes. vLLM itself takes any
  string; the limit and the character set are this library's own rule (the name is written into pod ``args``,
  PromQL label matchers and messages), not a service's.
"""

from __future__ import annotations

import re
from typing import Any

from ._validate import check_str
from .errors import FmValidationError, is_token

__all__ = ["check_image_reference", "check_model_name", "check_url_path"]

_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])"
_DOMAIN = rf"{_HOST}(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[_.]|__|[-]+)[a-z0-9]+)*"
_NAME = re.compile(rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*")
_TAG = re.compile(r"[\w][\w.-]{0,127}")
_DIGEST = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}")
NAME_TOTAL_LENGTH_MAX = 255
_IMAGE_TEXT = (
    "a container image reference '[registry[:port]/]repository[:tag][@digest]' with a lower-case repository, a tag "
    "of at most 128 letters, digits, '_', '.' or '-', and a name of at most 255 characters (distribution/reference "
    "grammar)"
)


def _split_reference(text: str) -> tuple[str, str | None, str | None]:
    name, at, digest = text.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    tag = None
    if colon > slash:  # a ':' after the last '/' starts the tag (one before it is a registry port)
        name, tag = name[:colon], name[colon + 1 :]
    return name, tag, digest if at else None


def check_image_reference(parameter: str, value: object, *, pinned: bool = False) -> Any:
    """A container image reference (module docstring); with ``pinned``, a tag other than ``latest`` or a digest."""
    text = check_str(parameter, value, allowed=_IMAGE_TEXT)
    if is_token(text) or "${Token[" in text:
        return text
    name, tag, digest = _split_reference(text)
    ok = (
        bool(_NAME.fullmatch(name))
        and len(name) <= NAME_TOTAL_LENGTH_MAX
        and (tag is None or bool(_TAG.fullmatch(tag)))
        and (digest is None or bool(_DIGEST.fullmatch(digest)))
    )
    if not ok:
        raise FmValidationError(parameter, value, _IMAGE_TEXT)
    if pinned and digest is None and tag in (None, "latest"):
        raise FmValidationError(parameter, value, "a container image pinned by a tag other than 'latest' or a digest")
    return text


_PCHAR = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})"
_URL_PATH = re.compile(rf"/(?:{_PCHAR}+(?:/{_PCHAR}*)*)?(?:\?(?:{_PCHAR}|[/?])*)?")


def check_url_path(parameter: str, value: object, *, max_length: int = 1024, example: str = "/health") -> Any:
    """An absolute URL path (RFC 3986 path-absolute, optional query) of at most ``max_length`` characters."""
    allowed = (
        f"an absolute URL path such as {example!r} of at most {max_length} characters: letters, digits, "
        "-._~!$&'()*+,;=:@ and %XX escapes between '/' (RFC 3986 path-absolute), no spaces or control characters"
    )
    text = check_str(parameter, value, allowed=allowed, min_length=1, max_length=max_length)
    if is_token(text):
        return text
    if not _URL_PATH.fullmatch(text):
        raise FmValidationError(parameter, value, allowed)
    return text


_MODEL_NAME = re.compile(r"[^\s\"'\\\x00-\x1f\x7f]{1,256}")


def check_model_name(parameter: str, value: object) -> Any:
    """A served model name (module docstring: the library's own rule)."""
    return check_str(
        parameter,
        value,
        pattern=_MODEL_NAME,
        allowed="a model name of 1-256 printable characters without whitespace, quotes or backslashes",
    )
