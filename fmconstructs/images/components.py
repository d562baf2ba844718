"""Image Builder components for GPU node images: versioned AWSTOE documents with a build step and a check.

Each :class:`ImageComponent` renders one component document (``schemaVersion`` 1.0, Image Builder User Guide
toe-use-documents) with up to three phases:

- ``build`` installs the piece when the parent image lacks it (``ExecuteBash``);
- ``validate`` runs the check on the build instance (Image Builder's build stage) and ``test`` runs the same check on
  an instance launched from the new image (the test stage): every check exits non-zero when its piece is missing;
- an optional test-only step (the GPU smoke test needs a GPU, which only the test instance is asked to have).

Versions: a component version can never be overwritten (CloudFormation replaces ``AWS::ImageBuilder::Component`` on
every change and fails with "already exists" when name and version stay the same: aws-cloudformation
cloudformation-coverage-roadmap #927, ec2-image-builder-roadmap #71). So ``<major>.<minor>`` is the component's
revision and the patch is derived from the document (28 bits of its SHA-256, below Image Builder's 2^30-1 per node:
botocore imagebuilder ``CreateComponentRequest.semanticVersion``): a new Slurm version or exporter pin is a new
component version and deploys without a manual bump.

Downloads happen at build time only and are verified (nodes need no internet at boot):

- AWS PCS agent and Slurm installers: PCS User Guide "Custom Amazon Machine Images (AMIs) for AWS PCS", Step 2
  ("Install the AWS PCS agent") and Step 3 ("Install Slurm"): ``https://aws-pcs-repo-<region>.s3.<region>.amazonaws.com
  /aws-pcs-agent/aws-pcs-agent-v<version>.tar.gz`` (or ``aws-pcs-agent-v1-latest.tar.gz``) and
  ``/aws-pcs-slurm/aws-pcs-slurm-<major>-installer-<version>.tar.gz`` (or ``-latest``), each with a ``.sig``; the key
  ``https://aws-pcs-repo-public-keys-<region>.s3.<region>.amazonaws.com/aws-pcs-public-key.pub`` must have the
  fingerprint ``1C24 32C1 862F 64D1 F90A 239A 7EEF 030E DDF5 C21C``; then ``./installer.sh``. The agent writes
  ``/opt/aws/pcs/version`` (AGENT_VERSION=...), Slurm ``/opt/aws/pcs/scheduler/slurm-<major>/version`` and the unit
  ``/etc/systemd/system/slurmd-<major>.service`` (PCS User Guide "Software installers to build custom AMIs for AWS
  PCS", working-with_ami_installers).
- EFA installer: EC2 User Guide "Get started with EFA and NCCL" (efa-start-nccl) step 5 and efa-start:
  ``https://efa-installer.amazonaws.com/aws-efa-installer-<version>.tar.gz`` and ``.sig``, key
  ``https://efa-installer.amazonaws.com/aws-efa-installer.key`` with fingerprint
  ``4E90 91BC BB97 A96B 26B1 5E59 A054 80B1 DD2D 3CCC``, then ``./efa_installer.sh -y``; check with ``fi_info``.
- Prometheus node_exporter and agent: the GitHub releases and ``sha256sums.txt`` that
  :mod:`fmconstructs.observability.collection` uses at boot, unpacked into the same directories, so that its
  ``fm_release`` finds them and downloads nothing. The Slurm exporter of the login node (SckyzO/slurm_exporter, its
  GitHub release and ``slurm_exporter_checksums.txt``) is the ``slurm-exporter`` component
  (:mod:`fmconstructs.images.slurm_exporter`).
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from .._validate import check_str
from ..errors import FmTypeError, FmValidationError
from ..observability.collection import DCGM_EXPORTER_IMAGE, NODE_EXPORTER_VERSION, PROMETHEUS_VERSION
from ..pcs.slurm import SlurmVersion
from . import rules

#: Primary key fingerprint of the AWS PCS package signing key (PCS User Guide, custom AMI Steps 2 and 3).
PCS_KEY_FINGERPRINT = "1C2432C1862F64D1F90A239A7EEF030EDDF5C21C"
#: Primary key fingerprint of the EFA installer signing key (EC2 User Guide efa-start / efa-start-nccl, step 5).
EFA_KEY_FINGERPRINT = "4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC"
#: The EFA installer pinned when the parent image has no EFA software or an older one: 1.50.0, the "latest stable"
#: version of the EC2 User Guide efa-start page (zh_cn edition as stored; the en edition stored earlier showed
#: 1.47.0) and the efa_version of the DLAMI Base OSS Nvidia Driver GPU AMI (Amazon Linux 2023) releases of
#: 2026-09 (DLAMI release notes, e.g. aws-deep-learning-ami-gpubaseossarm64-al2023-2026-09-18).
EFA_INSTALLER_VERSION = "1.50.0"
#: The AWS PCS agent installer: "latest" takes ``aws-pcs-agent-v1-latest.tar.gz`` (PCS User Guide Step 2: "You can
#: also get the latest version by replacing the version number with latest"); pin with e.g. "1.3.1-1".
PCS_AGENT_VERSION = "latest"
#: The Slurm installer of each Slurm major version: "latest" (``aws-pcs-slurm-<major>-installer-latest.tar.gz``,
#: PCS User Guide Step 3); pin with e.g. "25.11.2-1".
SLURM_INSTALLER_VERSION = "latest"

# Image Builder ExecuteBash runs each step's commands with bash (toe-action-modules "ExecuteBash"); default step
# timeout 7,200 s (toe-use-documents). The Slurm installer compiles Slurm and its dependencies ("takes several
# minutes", PCS User Guide Step 3): one hour leaves room on small build instances.
_BUILD_TIMEOUT_SECONDS = 3600
_CHECK_TIMEOUT_SECONDS = 600
# Image Builder component names (CreateComponentRequest.name, ResourceName) allow letters, digits, '-', '_' and
# spaces; component ids here stay lower-case and dashed because they become part of resource names.
_COMPONENT_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,38}[a-z0-9]")
_REVISION = re.compile(r"[0-9]{1,4}\.[0-9]{1,4}")
# The inline document limit (botocore imagebuilder InlineComponentData: max 16,000 characters).
MAX_DOCUMENT_CHARS = 16000
_PCS_AGENT_VERSION = re.compile(r"latest|[0-9]+\.[0-9]+\.[0-9]+-[0-9]+")
_SLURM_INSTALLER_VERSION = re.compile(r"latest|([0-9]+\.[0-9]+)\.[0-9]+-[0-9]+")
_EFA_VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")


class _LiteralDumper(yaml.SafeDumper):
    """Multi-line strings as YAML block literals (``|``), so the documents read like the shell they hold."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_LiteralDumper.add_representer(str, _represent_str)


@dataclass(frozen=True)
class ImageComponent:
    """One Image Builder component: a build script, a check that fails when the piece is missing, and an optional
    test-only script.

    :param name: lower-case id (``pcs-agent``), part of the component's resource name.
    :param description: what the component installs.
    :param build_script: bash run in the ``build`` phase (``set -euo pipefail`` is prepended).
    :param check_script: bash run in the ``validate`` phase and again in the ``test`` phase on an instance launched
        from the new image; it must exit non-zero when the piece is missing.
    :param test_script: bash run only in the ``test`` phase (after the check).
    :param revision: ``<major>.<minor>`` of the component version; the patch comes from the document's hash.
    """

    name: str
    description: str
    build_script: str | None = None
    check_script: str | None = None
    test_script: str | None = None
    revision: str = "1.0"
    _document: dict[str, Any] = field(init=False, repr=False, compare=False)
    _document_yaml: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_str("name", self.name, pattern=_COMPONENT_NAME, allowed="2-40 lower-case letters, digits or '-'")
        check_str("description", self.description, min_length=1, max_length=1024, allowed="1-1024 characters")
        for parameter in ("build_script", "check_script", "test_script"):
            value = getattr(self, parameter)
            if value is not None:
                check_str(parameter, value, min_length=1, allowed="a non-empty bash script")
        check_str("revision", self.revision, pattern=_REVISION, allowed="'<major>.<minor>' such as '1.0'")
        rules.a_component_has_a_script(
            build_script=self.build_script, check_script=self.check_script, test_script=self.test_script
        )
        object.__setattr__(self, "_document", self._render())
        # Rendered once (the component is immutable): digest, version and Data all read it.
        object.__setattr__(
            self, "_document_yaml", str(yaml.dump(self._document, Dumper=_LiteralDumper, sort_keys=False, width=1000))
        )
        size = len(self.document_yaml())
        if size > MAX_DOCUMENT_CHARS:
            raise FmValidationError(
                f"component {self.name!r} document",
                f"{size} characters",
                f"at most {MAX_DOCUMENT_CHARS} characters (Image Builder inline component data)",
            )

    def _render(self) -> dict[str, Any]:
        phases: list[dict[str, Any]] = []
        if self.build_script is not None:
            phases.append({"name": "build", "steps": [_step("Install", self.build_script, _BUILD_TIMEOUT_SECONDS)]})
        test_steps: list[dict[str, Any]] = []
        if self.check_script is not None:
            phases.append({"name": "validate", "steps": [_step("Check", self.check_script, _CHECK_TIMEOUT_SECONDS)]})
            test_steps.append(_step("Check", self.check_script, _CHECK_TIMEOUT_SECONDS))
        if self.test_script is not None:
            test_steps.append(_step("Test", self.test_script, _CHECK_TIMEOUT_SECONDS))
        if test_steps:
            phases.append({"name": "test", "steps": test_steps})
        return {
            "name": f"fmconstructs-{self.name}",
            "description": self.description,
            "schemaVersion": 1.0,
            "phases": phases,
        }

    def document(self) -> dict[str, Any]:
        """The AWSTOE document as a dict (a copy)."""
        return yaml.safe_load(self.document_yaml())  # type: ignore[no-any-return]

    def document_yaml(self) -> str:
        """The AWSTOE document as Image Builder's ``Data`` takes it."""
        return self._document_yaml

    @property
    def digest(self) -> str:
        """SHA-256 of the document (hex)."""
        return hashlib.sha256(self.document_yaml().encode()).hexdigest()

    @property
    def version(self) -> str:
        """``<revision>.<patch>``: the patch is 28 bits of the document's SHA-256, so a changed document is a new
        version (Image Builder assigns each of the three nodes at most 2^30-1)."""
        return content_version(self.revision, self.digest)

    def scripts(self) -> dict[str, str]:
        """Every ExecuteBash script of the document by ``<phase>.<step>``, as AWSTOE runs it."""
        out: dict[str, str] = {}
        for phase in self._document["phases"]:
            for step in phase["steps"]:
                out[f"{phase['name']}.{step['name']}"] = "\n".join(step["inputs"]["commands"])
        return out


def content_version(revision: str, digest: str) -> str:
    """``<revision>.<int of the first 7 hex digits>`` (at most 268,435,455)."""
    return f"{revision}.{int(digest[:7], 16)}"


def _step(name: str, script: str, timeout_seconds: int) -> dict[str, Any]:
    body = script.strip("\n")
    return {
        "name": name,
        "action": "ExecuteBash",
        "timeoutSeconds": timeout_seconds,
        "onFailure": "Abort",
        "maxAttempts": 1,
        "inputs": {"commands": [f"set -euo pipefail\n{body}\n"]},
    }


def _assign(**values: str) -> str:
    """Shell assignments of known values (quoted), the header of a script."""
    return "".join(f"{name}={shlex.quote(value)}\n" for name, value in values.items())


# --- shell helpers shared by the scripts --------------------------------------------------------------------------

# IMDSv2 (the build and test instances require tokens: GpuNodeImage sets HttpTokens=required). The Region and the
# partition's DNS suffix come from instance metadata (EC2 User Guide instancedata-data-categories: placement/region,
# services/domain), so the documents are the same in every Region.
_IMDS = r"""
fm_imds() {
  local token
  token=$(curl -fsS --retry 3 -X PUT "http://169.254.169.254/latest/api/token" \
    -H "X-aws-ec2-metadata-token-ttl-seconds: 300")
  curl -fsS --retry 3 -H "X-aws-ec2-metadata-token: $token" "http://169.254.169.254/latest/$1"
}
"""

# Download URL and URL.sig; import the key into a throw-away keyring; refuse a key whose primary fingerprint differs;
# accept only a good signature by that key (gpg --status-fd VALIDSIG ends with the primary key fingerprint).
# FMCONSTRUCTS_ROOT prefixes the absolute paths a check reads (tests only).
_ROOT = 'root="${FMCONSTRUCTS_ROOT:-}"\n'

_VERIFIED_DOWNLOAD = r"""
fm_verified_download() {
  local url="$1" key_url="$2" fingerprint="$3" dest="$4" home actual
  home=$(mktemp -d)
  curl -fsSL --retry 5 -o "$home/signing.key" "$key_url"
  gpg --homedir "$home" --batch --quiet --import "$home/signing.key"
  actual=$(gpg --homedir "$home" --batch --with-colons --fingerprint | awk -F: '$1 == "fpr" { print $10; exit }')
  if [ "$actual" != "$fingerprint" ]; then
    echo "fmconstructs: $key_url has fingerprint ${actual:-none}, expected $fingerprint" >&2
    gpgconf --homedir "$home" --kill all || true
    rm -rf "$home"
    return 1
  fi
  curl -fsSL --retry 5 -o "$dest" "$url"
  curl -fsSL --retry 5 -o "$dest.sig" "$url.sig"
  if ! gpg --homedir "$home" --batch --status-fd 1 --verify "$dest.sig" "$dest" 2>/dev/null \
    | grep -Eq "^\[GNUPG:\] VALIDSIG .* $fingerprint\$"; then
    echo "fmconstructs: the signature of $url is not a good signature by $fingerprint" >&2
    gpgconf --homedir "$home" --kill all || true
    rm -rf "$home"
    return 1
  fi
  gpgconf --homedir "$home" --kill all || true
  rm -rf "$home"
}
"""

# A check that fails with a message naming what is missing.
_CHECK_HELPERS = r"""
fm_fail() {
  echo "fmconstructs image check failed: $*" >&2
  exit 1
}
fm_need() {
  command -v "$1" >/dev/null 2>&1 || fm_fail "$1 is not installed"
}
"""


# --- AWS PCS agent and Slurm -----------------------------------------------------------------------------------------


def _pcs_repository_install(package: str, installer_dir: str, version_file: str, **values: str) -> str:
    """The build script both PCS installers share (PCS User Guide custom AMI Steps 2 and 3): download ``$tarball``
    from the Region's PCS repository (``aws-pcs-repo-<Region>/<package>/``), verify its signature with AWS's PCS key,
    unpack it, run ``<installer_dir>/installer.sh -y`` and print ``version_file`` (a shell word)."""
    return (
        _assign(**values, fingerprint=PCS_KEY_FINGERPRINT)
        + _IMDS
        + _VERIFIED_DOWNLOAD
        + f"""
region=$(fm_imds meta-data/placement/region)
domain=$(fm_imds meta-data/services/domain)
work=$(mktemp -d)
fm_verified_download "https://aws-pcs-repo-$region.s3.$region.$domain/{package}/$tarball" \\
  "https://aws-pcs-repo-public-keys-$region.s3.$region.$domain/aws-pcs-public-key.pub" \\
  "$fingerprint" "$work/$tarball"
tar -xzf "$work/$tarball" -C "$work"
(cd "$work/{installer_dir}" && ./installer.sh -y)
rm -rf "$work"
cat {version_file}
"""
    )


def pcs_agent_component(version: str = PCS_AGENT_VERSION) -> ImageComponent:
    """The AWS PCS agent, from the Region's PCS repository, signature-checked (PCS User Guide custom AMI Step 2).

    The installer runs unattended with ``-y``, as AWS's aws-hpc-recipes do for the same DLAMI parent
    (recipes/pcs/dlami_for_pcs_imagebuilder/assets/dlami-for-pcs.yaml, PcsAgentInstallerComponent); the guide runs it
    interactively. Components declare ``SupportedOsVersions: Amazon Linux 2023`` like that recipe's components.
    """
    check_str("pcs_agent_version", version, pattern=_PCS_AGENT_VERSION, allowed="'latest' or a version like '1.3.1-1'")
    tarball = "aws-pcs-agent-v1-latest.tar.gz" if version == "latest" else f"aws-pcs-agent-v{version}.tar.gz"
    build = _pcs_repository_install("aws-pcs-agent", "aws-pcs-agent", "/opt/aws/pcs/version", tarball=tarball)
    # /opt/aws/pcs/version holds AGENT_VERSION='1.3.1' and AGENT_RELEASE='1' (PCS User Guide Step 2, item 8).
    if version == "latest":
        expect = (
            'grep -q "^AGENT_VERSION=" "$root/opt/aws/pcs/version" '
            '|| fm_fail "/opt/aws/pcs/version has no AGENT_VERSION"\n'
        )
    else:
        agent, release = version.split("-")
        expect = (
            _assign(agent=agent, release=release)
            + 'grep -qx "AGENT_VERSION=\'$agent\'" "$root/opt/aws/pcs/version" '
            + '|| fm_fail "the PCS agent is not version $agent"\n'
            + 'grep -qx "AGENT_RELEASE=\'$release\'" "$root/opt/aws/pcs/version" '
            + '|| fm_fail "the PCS agent is not release $release"\n'
        )
    check = (
        _CHECK_HELPERS
        + _ROOT
        + r"""
[ -f "$root/opt/aws/pcs/version" ] || fm_fail "the AWS PCS agent is not installed (no /opt/aws/pcs/version)"
"""
        + expect
        + 'cat "$root/opt/aws/pcs/version"\n'
    )
    return ImageComponent(
        name="pcs-agent",
        description=f"AWS PCS agent ({version}) from the Region's PCS repository, GPG-verified",
        build_script=build,
        check_script=check,
    )


def slurm_component(slurm_version: SlurmVersion, installer_version: str = SLURM_INSTALLER_VERSION) -> ImageComponent:
    """Slurm ``slurm_version`` with the AWS PCS Slurm installer (PCS User Guide custom AMI Step 3)."""
    if not isinstance(slurm_version, SlurmVersion):
        raise FmTypeError("slurm_version", slurm_version, "a SlurmVersion")
    check_str(
        "slurm_installer_version",
        installer_version,
        pattern=_SLURM_INSTALLER_VERSION,
        allowed="'latest' or an installer version like '25.11.2-1'",
    )
    major = slurm_version.value
    match = _SLURM_INSTALLER_VERSION.fullmatch(installer_version)
    rules.installer_matches_the_slurm_version(
        installer_version=installer_version, installer_major=match.group(1) if match else None, slurm_major=major
    )
    tarball = f"aws-pcs-slurm-{major}-installer-{installer_version}.tar.gz"
    build = _pcs_repository_install(
        "aws-pcs-slurm",
        "aws-pcs-slurm-$major-installer",
        '"/opt/aws/pcs/scheduler/slurm-$major/version"',
        major=major,
        tarball=tarball,
    )
    # The version file holds SLURM_VERSION='25.05.5' and PCS_SLURM_RELEASE='1' (PCS User Guide Step 3, item 6); the
    # installer copies the unit slurmd-<major>.service to /etc/systemd/system (working-with_ami_installers).
    check = (
        _CHECK_HELPERS
        + _ROOT
        + _assign(major=major)
        + r"""
file="$root/opt/aws/pcs/scheduler/slurm-$major/version"
[ -f "$file" ] || fm_fail "Slurm $major is not installed (no /opt/aws/pcs/scheduler/slurm-$major/version)"
grep -q "^SLURM_VERSION='$major\." "$file" || fm_fail "$file does not name Slurm $major"
[ -f "$root/etc/systemd/system/slurmd-$major.service" ] || fm_fail "no slurmd-$major.service unit"
cat "$file"
"""
    )
    if installer_version != "latest":
        patch, release = installer_version.rsplit("-", 1)
        check += _assign(patch=patch, release=release) + (
            'grep -qx "SLURM_VERSION=\'$patch\'" "$file" || fm_fail "Slurm is not $patch"\n'
            'grep -qx "PCS_SLURM_RELEASE=\'$release\'" "$file" '
            '|| fm_fail "the Slurm installer is not release $release"\n'
        )
    return ImageComponent(
        name=f"pcs-slurm-{major.replace('.', '-')}",
        description=f"Slurm {major} for AWS PCS (installer {installer_version}), GPG-verified",
        build_script=build,
        check_script=check,
    )


# --- EFA -------------------------------------------------------------------------------------------------------------


def efa_component(version: str = EFA_INSTALLER_VERSION) -> ImageComponent:
    """The EFA software: kept when the parent has version ``version`` or newer (the DLAMI carries it), else the
    signed installer ``version`` (EC2 User Guide efa-start-nccl, step 5)."""
    check_str("efa_installer_version", version, pattern=_EFA_VERSION, allowed="a version like '1.50.0'")
    # /opt/amazon/efa_installed_packages records the installer version ("EFA installer version: 1.47.0"; the format
    # is UNCONFIRMED: when it cannot be read, existing EFA software is kept rather than downgraded).
    build = (
        _assign(want=version, fingerprint=EFA_KEY_FINGERPRINT)
        + _VERIFIED_DOWNLOAD
        + r"""
installed=$(sed -n 's/.*EFA installer version: *\([0-9][0-9.]*\).*/\1/p' \
  /opt/amazon/efa_installed_packages 2>/dev/null | head -n 1 || true)
if [ -n "$installed" ] && [ "$(printf '%s\n%s\n' "$want" "$installed" | sort -V | head -n 1)" = "$want" ]; then
  echo "fmconstructs: EFA installer $installed is already installed (>= $want)"
  exit 0
fi
if [ -z "$installed" ] && [ -x /opt/amazon/efa/bin/fi_info ]; then
  echo "fmconstructs: EFA software of an unknown installer version is installed; keeping it"
  exit 0
fi
work=$(mktemp -d)
fm_verified_download "https://efa-installer.amazonaws.com/aws-efa-installer-$want.tar.gz" \
  "https://efa-installer.amazonaws.com/aws-efa-installer.key" "$fingerprint" "$work/aws-efa-installer.tar.gz"
tar -xzf "$work/aws-efa-installer.tar.gz" -C "$work"
(cd "$work/aws-efa-installer" && ./efa_installer.sh -y)
rm -rf "$work"
"""
    )
    # fi_info --version needs no EFA device (the build instance has none); modinfo efa finds the kernel module.
    check = (
        _CHECK_HELPERS
        + _ROOT
        + r"""
[ -x "$root/opt/amazon/efa/bin/fi_info" ] || fm_fail "libfabric (/opt/amazon/efa/bin/fi_info) is not installed"
"$root/opt/amazon/efa/bin/fi_info" --version || fm_fail "fi_info does not run"
fm_need modinfo
modinfo efa >/dev/null 2>&1 || fm_fail "the efa kernel module is not installed"
cat "$root/opt/amazon/efa_installed_packages" 2>/dev/null || true
"""
    )
    return ImageComponent(
        name="efa",
        description=f"EFA software: the parent's if >= {version}, else the signed EFA installer {version}",
        build_script=build,
        check_script=check,
    )


# --- NVIDIA ----------------------------------------------------------------------------------------------------------

_DRIVER_CHECK = r"""
fm_need modinfo
modinfo nvidia >/dev/null 2>&1 || fm_fail "the NVIDIA kernel driver is not installed"
fm_need nvidia-smi
driver=$(modinfo -F version nvidia)
echo "fmconstructs: NVIDIA driver $driver"
"""


def nvidia_driver_component() -> ImageComponent:
    """A check that the parent image carries the NVIDIA driver (the DLAMI Base OSS Nvidia Driver GPU AMIs do:
    nvidia_driver in their release notes). Nothing is installed: a parent without a driver fails the build."""
    return ImageComponent(
        name="nvidia-driver",
        description="Checks that the parent image has the NVIDIA driver and nvidia-smi",
        check_script=_CHECK_HELPERS + _DRIVER_CHECK,
    )


def fabric_manager_component() -> ImageComponent:
    """NVIDIA Fabric Manager matching the driver, enabled: HGX nodes with NVSwitches (P5, P5e, P5en, P6) need it.

    Installed from the parent's configured repositories only when missing (``/usr/bin/nv-fabricmanager`` or the
    ``nvidia-fabricmanager`` unit present: the DLAMI ships it). The package is ``nvidia-fabricmanager`` at the
    driver's exact version; ``nvidia-fabric-manager`` (the older RPM name) is tried only when the repositories have no
    ``nvidia-fabricmanager`` at that version. The service is ``nvidia-fabricmanager``. ParallelCluster installs it on
    x86 only ("NVIDIA Fabric Manager not present on ARM").
    """
    # aws/aws-parallelcluster-cookbook cookbooks/aws-parallelcluster-platform/resources/fabric_manager/partial/
    # _fabric_manager_common.rb (commit 02106c3): ``fabric_manager_package`` is 'nvidia-fabricmanager' for every
    # platform ("On AL2, the RPM package is named 'nvidia-fabric-manager' but the systemd service unit is
    # 'nvidia-fabricmanager'"), ``fabric_manager_installed?`` skips the install when /usr/bin/nv-fabricmanager exists
    # ("shipped by the base image such as the DLAMI"), and the package version is locked to the driver's
    # (_fabric_manager_install_rhel.rb: ``version fabric_manager_version``, ``action %i(install lock)``). The older
    # fabric_manager_alinux2023.rb (commit 7e17bd8) named the RPM 'nvidia-fabric-manager': kept as the fallback.
    build = (
        _CHECK_HELPERS
        + _DRIVER_CHECK
        + r"""
if [ -x /usr/bin/nv-fabricmanager ] || systemctl cat nvidia-fabricmanager.service >/dev/null 2>&1; then
  echo "fmconstructs: Fabric Manager is already installed"
elif dnf install -y "nvidia-fabricmanager-$driver"; then
  echo "fmconstructs: installed nvidia-fabricmanager-$driver"
else
  dnf install -y "nvidia-fabric-manager-$driver" \
    || fm_fail "no nvidia-fabricmanager-$driver (nor nvidia-fabric-manager-$driver) in the configured repositories"
fi
systemctl enable nvidia-fabricmanager.service
"""
    )
    # nv-fabricmanager --version prints the Fabric Manager version, which must equal the driver's (format
    # UNCONFIRMED: "Fabric Manager version is : 570.x").
    check = (
        _CHECK_HELPERS
        + _DRIVER_CHECK
        + r"""
fm_need nv-fabricmanager
systemctl is-enabled nvidia-fabricmanager.service >/dev/null 2>&1 \
  || fm_fail "nvidia-fabricmanager.service is not enabled"
nv-fabricmanager --version 2>&1 | grep -qF "$driver" || fm_fail "Fabric Manager does not match the driver $driver"
"""
    )
    return ImageComponent(
        name="nvidia-fabric-manager",
        description="NVIDIA Fabric Manager at the driver's version, enabled (NVSwitch HGX nodes)",
        build_script=build,
        check_script=check,
    )


def imex_component() -> ImageComponent:
    """NVIDIA IMEX, enabled: the PCS User Guide "Configure UltraServer instances" (capacity-blocks-nvidia-imex) asks
    for "an AMI with the NVIDIA driver, CUDA, and IMEX packages installed. The IMEX service (nvidia-imex) must be
    enabled on the AMI". Installed only when missing, from the parent's configured repositories (package names
    ``nvidia-imex-<driver branch>`` / ``nvidia-imex``: UNCONFIRMED for Amazon Linux 2023)."""
    build = (
        _CHECK_HELPERS
        + _DRIVER_CHECK
        + r"""
if command -v nvidia-imex >/dev/null 2>&1; then
  echo "fmconstructs: NVIDIA IMEX is already installed"
else
  branch=${driver%%.*}
  dnf install -y "nvidia-imex-$branch-$driver" || dnf install -y "nvidia-imex-$branch" || dnf install -y nvidia-imex \
    || fm_fail "no nvidia-imex package for driver $driver in the configured repositories"
fi
systemctl enable nvidia-imex.service
"""
    )
    check = (
        _CHECK_HELPERS
        + r"""
fm_need nvidia-imex
fm_need nvidia-imex-ctl
systemctl is-enabled nvidia-imex.service >/dev/null 2>&1 || fm_fail "nvidia-imex.service is not enabled"
"""
    )
    return ImageComponent(
        name="nvidia-imex",
        description="NVIDIA IMEX installed and enabled (UltraServer nodes, PCS User Guide capacity-blocks-nvidia-imex)",
        build_script=build,
        check_script=check,
    )


def dcgm_component(dcgm_exporter_image: str = DCGM_EXPORTER_IMAGE) -> ImageComponent:
    """DCGM (``dcgmi``; the DLAMI carries it: dcgm_version in its release notes), Docker with the NVIDIA container
    toolkit, and the dcgm-exporter image that :mod:`fmconstructs.observability.collection` runs, pulled at build
    time so that nodes start it without reaching nvcr.io.

    Docker is installed from the Amazon Linux 2023 repositories when missing (package ``docker``); a missing
    ``dcgmi`` is installed as ``datacenter-gpu-manager-4-core`` from the configured repositories (UNCONFIRMED for
    Amazon Linux 2023 without NVIDIA's CUDA repository)."""
    check_str(
        "dcgm_exporter_image",
        dcgm_exporter_image,
        pattern=re.compile(r"[a-z0-9.-]+(/[a-z0-9._-]+)+:[A-Za-z0-9._-]+"),
        allowed="a container image reference with a tag",
    )
    build = (
        _assign(image=dcgm_exporter_image)
        + r"""
if ! command -v dcgmi >/dev/null 2>&1; then
  dnf install -y datacenter-gpu-manager-4-core
fi
if ! command -v docker >/dev/null 2>&1; then
  dnf install -y docker
fi
systemctl enable --now docker.service
docker pull "$image"
"""
    )
    check = (
        _CHECK_HELPERS
        + _assign(image=dcgm_exporter_image)
        + r"""
fm_need dcgmi
dcgmi --version || fm_fail "dcgmi does not run"
fm_need docker
fm_need nvidia-ctk
systemctl is-enabled docker.service >/dev/null 2>&1 || fm_fail "docker.service is not enabled"
docker image inspect "$image" >/dev/null 2>&1 || fm_fail "the image $image is not in the local Docker store"
"""
    )
    return ImageComponent(
        name="dcgm",
        description=f"DCGM, Docker and the dcgm-exporter image {dcgm_exporter_image} (no registry access at boot)",
        build_script=build,
        check_script=check,
    )


def gpu_smoke_test_component() -> ImageComponent:
    """A test-stage-only check that the driver drives a GPU (``nvidia-smi -L`` lists one). It needs GPU test
    instances (:class:`~fmconstructs.images.GpuNodeImage` with ``validate_on_gpu``)."""
    test = (
        _CHECK_HELPERS
        + r"""
fm_need nvidia-smi
nvidia-smi -L | grep -q '^GPU 0' || fm_fail "nvidia-smi lists no GPU"
nvidia-smi --query-gpu=name,driver_version --format=csv
"""
    )
    return ImageComponent(
        name="gpu-smoke-test",
        description="Test stage: nvidia-smi lists a GPU on an instance launched from the new image",
        test_script=test,
    )


# --- storage and metrics -------------------------------------------------------------------------------------------


def lustre_client_component() -> ImageComponent:
    """The FSx for Lustre client: ``dnf install -y lustre-client`` on Amazon Linux 2023 (FSx for Lustre User Guide
    "Installing the Lustre client"; aws-parallelcluster-cookbook lustre_alinux2023.rb installs package
    ``lustre-client``). :mod:`fmconstructs.storage.client` skips its own install at boot when ``mount.lustre`` and the
    ``lustre`` module are present, which this check guarantees."""
    build = r"""
if command -v mount.lustre >/dev/null 2>&1 && modinfo lustre >/dev/null 2>&1; then
  echo "fmconstructs: the Lustre client is already installed"
  exit 0
fi
dnf install -y lustre-client
"""
    check = (
        _CHECK_HELPERS
        + r"""
fm_need mount.lustre
fm_need modinfo
modinfo lustre >/dev/null 2>&1 || fm_fail "the lustre kernel module is not installed for $(uname -r)"
"""
    )
    return ImageComponent(
        name="lustre-client",
        description="FSx for Lustre client (lustre-client) for the running kernel",
        build_script=build,
        check_script=check,
    )


def metrics_agents_component(
    *, node_exporter_version: str = NODE_EXPORTER_VERSION, prometheus_version: str = PROMETHEUS_VERSION
) -> ImageComponent:
    """node_exporter and the Prometheus agent at the versions :mod:`fmconstructs.observability.collection` pins,
    checked against the release's ``sha256sums.txt`` and unpacked where its boot-time ``fm_release`` looks
    (``/opt/fmconstructs/<name>-<version>.linux-<goarch>``), so that nodes download nothing at boot."""
    for parameter, value in (
        ("node_exporter_version", node_exporter_version),
        ("prometheus_version", prometheus_version),
    ):
        check_str(parameter, value, pattern=re.compile(r"[0-9]+\.[0-9]+\.[0-9]+"), allowed="a version like '1.9.1'")
    arch = r"""
case "$(uname -m)" in
  x86_64) goarch=amd64 ;;
  aarch64) goarch=arm64 ;;
  *) echo "fmconstructs: unsupported architecture $(uname -m)" >&2; exit 1 ;;
esac
"""
    build = (
        _assign(node_exporter_version=node_exporter_version, prometheus_version=prometheus_version)
        + arch
        + r"""
fm_release() {
  local name="$1" version="$2" dir base tarball tmp
  dir="/opt/fmconstructs/$name-$version.linux-$goarch"
  if [ -x "$dir/$name" ]; then return 0; fi
  base="https://github.com/prometheus/$name/releases/download/v$version"
  tarball="$name-$version.linux-$goarch.tar.gz"
  tmp=$(mktemp -d)
  curl -fsSL --retry 5 -o "$tmp/$tarball" "$base/$tarball"
  curl -fsSL --retry 5 -o "$tmp/sha256sums.txt" "$base/sha256sums.txt"
  (cd "$tmp" && grep " $tarball\$" sha256sums.txt | sha256sum -c -)
  mkdir -p /opt/fmconstructs
  tar -xzf "$tmp/$tarball" -C /opt/fmconstructs
  rm -rf "$tmp"
}
fm_release node_exporter "$node_exporter_version"
fm_release prometheus "$prometheus_version"
"""
    )
    check = (
        _CHECK_HELPERS
        + _ROOT
        + _assign(node_exporter_version=node_exporter_version, prometheus_version=prometheus_version)
        + arch
        + r"""
fm_check_release() {
  local name="$1" version="$2" binary
  binary="$root/opt/fmconstructs/$name-$version.linux-$goarch/$name"
  [ -x "$binary" ] || fm_fail "$name $version is not installed at /opt/fmconstructs/$name-$version.linux-$goarch"
  "$binary" --version 2>&1 | grep -q "version $version " || fm_fail "$binary is not version $version"
}
fm_check_release node_exporter "$node_exporter_version"
fm_check_release prometheus "$prometheus_version"
"""
    )
    return ImageComponent(
        name="metrics-agents",
        description=f"node_exporter {node_exporter_version} and Prometheus {prometheus_version} for the node agent",
        build_script=build,
        check_script=check,
    )


def component_summary(components: Mapping[str, ImageComponent] | tuple[ImageComponent, ...]) -> dict[str, str]:
    """``{name: version}`` of the given components (for outputs and tests)."""
    values = components.values() if isinstance(components, Mapping) else components
    return {component.name: component.version for component in values}
