"""The nccl-tests Image Builder component: NVIDIA nccl-tests built with MPI for the scheduled NCCL fabric check
(:mod:`fmconstructs.health.nccl`)."""

from __future__ import annotations

import re

from .._validate import check_str
from ..health.nccl import ALL_REDUCE_PERF, NCCL_TESTS_COMMIT, NCCL_TESTS_REPOSITORY, NCCL_TESTS_VERSION
from .components import _CHECK_HELPERS, _ROOT, ImageComponent, _assign

_NCCL_TESTS_TAG = re.compile(r"v[0-9]+\.[0-9]+\.[0-9]+")
_GIT_COMMIT = re.compile(r"[0-9a-f]{40}")


def nccl_tests_component(version: str = NCCL_TESTS_VERSION, commit: str = NCCL_TESTS_COMMIT) -> ImageComponent:
    """nccl-tests built with MPI into ``/opt/nccl-tests/build`` for the scheduled fabric check
    (:mod:`fmconstructs.health.nccl`): the tag ``version`` of NVIDIA/nccl-tests, refused unless it resolves to
    ``commit``.

    The build is the one AWS documents for EFA (awslabs/awsome-distributed-ai micro-benchmarks/nccl-tests/
    nccl-tests.Dockerfile: ``make MPI=1 MPI_HOME=/opt/amazon/openmpi CUDA_HOME=/usr/local/cuda NCCL_HOME=...``; NVIDIA
    nccl-tests README "Build"): Open MPI from the EFA installer, CUDA and NCCL from the parent (the DLAMI). Where the
    DLAMI keeps NCCL is UNCONFIRMED: the first of ``/usr/local/cuda``, ``/opt/nccl/build`` and ``/usr`` with
    ``include/nccl.h`` is used, and its ``lib`` is added to the loader path when the binary does not find libnccl.
    ``git``, ``make`` and ``gcc-c++`` are installed from the parent's repositories when missing.
    """
    check_str("nccl_tests_version", version, pattern=_NCCL_TESTS_TAG, allowed="a nccl-tests tag like 'v2.19.6'")
    check_str("nccl_tests_commit", commit, pattern=_GIT_COMMIT, allowed="a 40-hex-digit git commit")
    dest = ALL_REDUCE_PERF.rsplit("/build/", 1)[0]
    values = _assign(tag=version, commit=commit, dest=dest)
    build = (
        _CHECK_HELPERS
        + values
        + _assign(repository=NCCL_TESTS_REPOSITORY)
        + r"""
if [ -x "$dest/build/all_reduce_perf" ] && [ "$(cat "$dest/FMCONSTRUCTS_COMMIT" 2>/dev/null)" = "$commit" ]; then
  echo "fmconstructs: nccl-tests $tag is already installed"
  exit 0
fi
for tool in git make g++; do
  command -v "$tool" >/dev/null 2>&1 || dnf install -y git make gcc-c++
done
mpi_home=/opt/amazon/openmpi
cuda_home=/usr/local/cuda
[ -x "$mpi_home/bin/mpirun" ] || fm_fail "no Open MPI at $mpi_home (the EFA installer installs it)"
[ -x "$cuda_home/bin/nvcc" ] || fm_fail "no CUDA toolkit at $cuda_home"
nccl_home=""
for candidate in /usr/local/cuda /opt/nccl/build /usr; do
  if [ -f "$candidate/include/nccl.h" ]; then nccl_home=$candidate; break; fi
done
[ -n "$nccl_home" ] || fm_fail "no NCCL headers (include/nccl.h) in /usr/local/cuda, /opt/nccl/build or /usr"
work=$(mktemp -d)
git clone --quiet --depth 1 --branch "$tag" "$repository" "$work/nccl-tests"
actual=$(git -C "$work/nccl-tests" rev-parse HEAD)
[ "$actual" = "$commit" ] || fm_fail "nccl-tests $tag is commit $actual, expected $commit"
make -C "$work/nccl-tests" -j "$(nproc)" MPI=1 MPI_HOME="$mpi_home" CUDA_HOME="$cuda_home" NCCL_HOME="$nccl_home"
rm -rf "$dest"
mkdir -p "$dest"
cp -r "$work/nccl-tests/build" "$dest/build"
printf '%s\n' "$commit" >"$dest/FMCONSTRUCTS_COMMIT"
printf '%s\n' "$tag" >"$dest/FMCONSTRUCTS_VERSION"
rm -rf "$work"
if ldd "$dest/build/all_reduce_perf" | grep -q 'libnccl.* not found'; then
  echo "$nccl_home/lib" >/etc/ld.so.conf.d/fmconstructs-nccl.conf
  ldconfig
fi
"""
    )
    check = (
        _CHECK_HELPERS
        + _ROOT
        + values
        + r"""
binary="$root$dest/build/all_reduce_perf"
[ -x "$binary" ] || fm_fail "nccl-tests is not installed at $dest/build"
[ "$(cat "$root$dest/FMCONSTRUCTS_COMMIT" 2>/dev/null)" = "$commit" ] || fm_fail "nccl-tests is not $tag ($commit)"
fm_need ldd
if ldd "$binary" | grep -q 'not found'; then
  ldd "$binary" >&2
  fm_fail "all_reduce_perf cannot find its libraries"
fi
"""
    )
    return ImageComponent(
        name="nccl-tests",
        description=f"NVIDIA nccl-tests {version} ({commit[:12]}) built with MPI=1 for the NCCL fabric check",
        build_script=build,
        check_script=check,
    )
