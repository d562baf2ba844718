"""The slurm-exporter Image Builder component: SckyzO/slurm_exporter at the version
:mod:`fmconstructs.observability.slurm_exporter` pins, so that the login node downloads nothing at boot
(``ExporterSource.IMAGE``)."""

from __future__ import annotations

import re

from .._validate import check_str
from ..observability.slurm_exporter import (
    SLURM_EXPORTER_CHECKSUMS,
    SLURM_EXPORTER_REPOSITORY,
    SLURM_EXPORTER_VERSION,
)
from .components import _CHECK_HELPERS, _ROOT, ImageComponent, _assign

_VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
_ARCH = r"""
case "$(uname -m)" in
  x86_64) goarch=amd64 ;;
  aarch64) goarch=arm64 ;;
  *) echo "fmconstructs: unsupported architecture $(uname -m)" >&2; exit 1 ;;
esac
dir="/opt/fmconstructs/slurm_exporter-$version.linux-$goarch"
"""


def slurm_exporter_component(version: str = SLURM_EXPORTER_VERSION) -> ImageComponent:
    """SckyzO/slurm_exporter ``version`` from its GitHub release, checked against the release's
    ``slurm_exporter_checksums.txt`` and unpacked where the login node's boot step looks
    (``/opt/fmconstructs/slurm_exporter-<version>.linux-<goarch>/slurm_exporter``)."""
    check_str("slurm_exporter_version", version, pattern=_VERSION, allowed="a version like '1.8.4'")
    values = _assign(version=version, checksums=SLURM_EXPORTER_CHECKSUMS)
    build = (
        values
        + _assign(repository=SLURM_EXPORTER_REPOSITORY)
        + _ARCH
        + r"""
if [ -x "$dir/slurm_exporter" ]; then exit 0; fi
base="https://github.com/$repository/releases/download/v$version"
tarball="slurm_exporter-$version-linux-$goarch.tar.gz"
tmp=$(mktemp -d)
curl -fsSL --retry 5 -o "$tmp/$tarball" "$base/$tarball"
curl -fsSL --retry 5 -o "$tmp/$checksums" "$base/$checksums"
(cd "$tmp" && grep " $tarball\$" "$checksums" | sha256sum -c -)
mkdir -p "$dir"
tar -xzf "$tmp/$tarball" -C "$dir" slurm_exporter
rm -rf "$tmp"
"""
    )
    check = (
        _CHECK_HELPERS
        + _ROOT
        + values
        + _ARCH
        + r"""
binary="$root$dir/slurm_exporter"
[ -x "$binary" ] || fm_fail "slurm_exporter $version is not installed at $dir"
"$binary" --version 2>&1 | grep -q "version $version " || fm_fail "$binary is not version $version"
"""
    )
    return ImageComponent(
        name="slurm-exporter",
        description=f"SckyzO/slurm_exporter {version} for the Slurm login node",
        build_script=build,
        check_script=check,
    )
