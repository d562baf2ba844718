"""Deterministic archives of node-side files, and the compressed form they take inside user data.

Two packagings of the same ``{path: (content, mode)}`` files:

- :func:`deterministic_tar_gz`: a ``tar.gz`` whose bytes depend only on the files (sorted entries, USTAR, mtime 0,
  uid/gid 0 ``root``, gzip header mtime 0), so the same content always has the same sha256 and S3 asset hash, and
  a template never churns because it was synthesized on another day.
- :func:`embedded_files_commands`: the same archive base64-encoded into shell lines that unpack it on the node
  (inline delivery; compressed scripts take about a third of their size, which keeps user data under EC2's 16 KB).

:func:`lift_embedded_files` goes the other way: it takes shell lines that contain blocks written by
:func:`embedded_files_commands` and returns the lines without them plus the files they carried, so that asset
delivery ships those files once, uncompressed inside its own archive, instead of as base64 inside a script.
"""

from __future__ import annotations

import base64
import gzip
import io
import re
import tarfile
from collections.abc import Mapping, Sequence

from ..errors import FmValidationError

#: The heredoc marker of :func:`embedded_files_commands` blocks.
EMBEDDED_MARKER = "FMCONSTRUCTS_B64"
#: Base64 line length of embedded archives (as ``base64`` itself wraps, RFC 2045).
_LINE = 76

#: ``{absolute path: (text, mode)}``: files a step installs on the node.
FileMap = Mapping[str, tuple[str, int]]


def _tar_bytes(files: Mapping[str, tuple[bytes, int]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, (data, mode) in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, 0
            info.uid, info.gid, info.uname, info.gname = 0, 0, "root", "root"
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def deterministic_tar_gz(files: Mapping[str, tuple[bytes | str, int]]) -> bytes:
    """A gzip-compressed tar of ``{relative path: (content, mode)}``; the same files always give the same bytes.

    Paths are relative (no leading ``/``, no ``..``); text content is encoded as UTF-8. Compression level 9 with a zero
    header mtime (``gzip.compress(mtime=0)``): the bytes depend on the files and on zlib's deflate, not on the time.
    """
    entries: dict[str, tuple[bytes, int]] = {}
    for name, (content, mode) in files.items():
        if not name or name.startswith("/") or ".." in name.split("/"):
            raise FmValidationError("path", name, "a relative path inside the archive, without '..'")
        entries[name] = (content.encode() if isinstance(content, str) else content, mode)
    return gzip.compress(_tar_bytes(entries), compresslevel=9, mtime=0)


def read_tar_gz(data: bytes) -> dict[str, tuple[bytes, int]]:
    """``{path: (content, mode)}`` of a ``tar.gz`` (tests, and operators inspecting an asset)."""
    out: dict[str, tuple[bytes, int]] = {}
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data))) as tar:
        for member in tar.getmembers():
            extracted = tar.extractfile(member)
            if extracted is not None:
                out[member.name] = (extracted.read(), member.mode)
    return out


def check_node_path(parameter: str, path: str) -> str:
    """An absolute node path without ``..`` (where a file is installed)."""
    if not isinstance(path, str) or not path.startswith("/") or ".." in path.split("/") or path.endswith("/"):
        raise FmValidationError(parameter, path, "an absolute file path without '..'")
    return path


def embedded_files_commands(files: FileMap, *, name: str) -> list[str]:
    """Shell commands that unpack ``{path: (content, mode)}`` from a gzip-compressed, base64 tar in the user data.

    Large node-side files (scripts, units) compressed this way take a third of their size, which keeps user data
    under EC2's 16 KB limit. The archive is deterministic (fixed mtimes), so templates do not churn.
    """
    for path in files:
        check_node_path("path", path)
    archive = deterministic_tar_gz({path.lstrip("/"): (content, mode) for path, (content, mode) in files.items()})
    payload = base64.b64encode(archive).decode()
    lines = [payload[i : i + _LINE] for i in range(0, len(payload), _LINE)]
    return [
        f"base64 -d > /tmp/{name}.tar.gz <<'{EMBEDDED_MARKER}'",
        *lines,
        EMBEDDED_MARKER,
        f"tar -xzf /tmp/{name}.tar.gz -C / --no-same-owner",
        f"rm -f /tmp/{name}.tar.gz",
    ]


_BLOCK_START = re.compile(rf"base64 -d > /tmp/([A-Za-z0-9._-]+)\.tar\.gz <<'{EMBEDDED_MARKER}'")


def lift_embedded_files(lines: Sequence[str]) -> tuple[list[str], dict[str, tuple[bytes, int]]]:
    """``lines`` without the blocks :func:`embedded_files_commands` wrote, and ``{absolute path: (bytes, mode)}`` of
    the files those blocks carried (a later block's file wins, as it would on the node)."""
    kept: list[str] = []
    files: dict[str, tuple[bytes, int]] = {}
    index = 0
    while index < len(lines):
        match = _BLOCK_START.fullmatch(lines[index])
        end = index + 1
        while match and end < len(lines) and lines[end] != EMBEDDED_MARKER:
            end += 1
        tail = list(lines[end + 1 : end + 3]) if match else []
        name = match.group(1) if match else ""
        if match and tail == [f"tar -xzf /tmp/{name}.tar.gz -C / --no-same-owner", f"rm -f /tmp/{name}.tar.gz"]:
            payload = "".join(lines[index + 1 : end])
            for path, (data, mode) in read_tar_gz(base64.b64decode(payload)).items():
                files["/" + path] = (data, mode)
            index = end + 3
            continue
        kept.append(lines[index])
        index += 1
    return kept, files
