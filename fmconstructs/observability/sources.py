"""Where Slurm nodes get their exporters: the node image, an S3 mirror, or the internet (each one explicit).

:class:`ExporterSource` chooses how :func:`~fmconstructs.observability.collection.node_collection_commands` installs
node_exporter, the Prometheus agent and the dcgm-exporter container image at boot:

- ``ExporterSource.IMAGE``: nothing is downloaded. The binaries must already be at
  ``/opt/fmconstructs/<name>-<version>.linux-<goarch>/<name>`` and the dcgm-exporter image in the local Docker store,
  where :class:`~fmconstructs.images.GpuNodeImage` installs them (its ``exporters`` and ``dcgm`` components, same
  pinned versions); Docker runs the image with ``--pull never``. For subnets without an internet route.
- ``ExporterSource.s3_mirror(bucket, prefix=...)``: the release tarballs and their ``sha256sums.txt`` come from
  ``s3://<bucket>/<prefix><name>/v<version>/`` (the layout of the GitHub release downloads,
  ``releases/download/v<version>/``) with the AWS CLI through the S3 gateway endpoint; :meth:`grant_read` gives the
  node role ``s3:GetObject`` on that prefix only. The dcgm-exporter image is not pulled from a public registry: it
  comes from the image (``--pull never``) unless :meth:`with_dcgm_exporter_from_ecr` names a private repository.
- ``ExporterSource.INTERNET``: today's behaviour, named: GitHub releases and NVIDIA's NGC registry (nvcr.io).

Any source: a node that cannot install a component says so loudly. The boot log (cloud-init output, the console)
gets one line starting ``FMCONSTRUCTS-DOWNLOAD-FAILED component=<name>:``, and the node writes
``fm_bootstrap_download_failed{component="<name>"} 1`` (0 when installed) to node exporter's textfile directory, which
the ``NodeBootstrapDownloadFailed`` alert turns into a warning. If node_exporter itself is missing, the agent's
``up{job="node"} == 0`` fires ``ExporterDown`` instead; if the Prometheus agent is missing, no metric leaves the node
and the boot log line is the only signal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar

from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from .._validate import check_bool, check_construct, check_enum, check_str
from ..errors import FmValidationError, is_token
from . import _nag
from .option_rules import a_bucket_only_for_an_s3_mirror, pull_through_cache_needs_a_repository

#: The textfile (in node exporter's textfile directory) that carries ``fm_bootstrap_download_failed``.
BOOTSTRAP_TEXTFILE = "fm_bootstrap.prom"
#: The distinct boot-log marker of a component that could not be installed.
DOWNLOAD_FAILED_MARKER = "FMCONSTRUCTS-DOWNLOAD-FAILED"
#: Default key prefix of an S3 mirror.
DEFAULT_MIRROR_PREFIX = "fmconstructs/exporters/"

# A key prefix written into shell commands: empty, or '/'-terminated segments of S3's "safe characters" without the
# ones a shell treats specially (S3 User Guide object-keys: 0-9 a-z A-Z ! - _ . * ' ( ); '!*'()' left out). A
# library rule; keys may hold up to 1,024 bytes (S3 object key limit), the file names below take under 100.
_PREFIX = re.compile(r"(?:[A-Za-z0-9_.-]+/)*")
_PREFIX_TEXT = "'' or '/'-terminated segments of letters, digits and '_.-' (e.g. 'fmconstructs/exporters/')"
# A Docker image tag: distribution/reference grammar ``tag := /[\w][\w.-]{0,127}/`` (also the form ECR accepts).
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_TAG_TEXT = "an image tag: a letter, digit or '_', then up to 127 letters, digits or '_.-'"


class ExporterSourceKind(str, Enum):
    """Where the exporters come from."""

    IMAGE = "image"
    S3_MIRROR = "s3-mirror"
    INTERNET = "internet"


@dataclass(frozen=True)
class ExporterSource:
    """Where nodes get node_exporter, the Prometheus agent and the dcgm-exporter image (see the module docstring).

    Use ``ExporterSource.IMAGE``, ``ExporterSource.INTERNET`` or :meth:`s3_mirror`, optionally followed by
    :meth:`with_dcgm_exporter_from_ecr`.
    """

    kind: ExporterSourceKind
    bucket: s3.IBucket | None = None
    prefix: str = ""
    dcgm_exporter_repository: ecr.IRepository | None = None
    dcgm_exporter_tag: str | None = None
    pull_through_cache: bool = False

    IMAGE: ClassVar[ExporterSource]
    INTERNET: ClassVar[ExporterSource]

    def __post_init__(self) -> None:
        check_enum("kind", self.kind, ExporterSourceKind)
        if self.kind is ExporterSourceKind.S3_MIRROR:
            check_construct("bucket", self.bucket, attribute="bucket_name", expected="an s3.IBucket")
        a_bucket_only_for_an_s3_mirror(is_s3_mirror=self.kind is ExporterSourceKind.S3_MIRROR, bucket=self.bucket)
        check_str("prefix", self.prefix, pattern=_PREFIX, allowed=_PREFIX_TEXT, max_length=900)
        if is_token(self.prefix):
            raise FmValidationError("prefix", self.prefix, f"{_PREFIX_TEXT}, known at synth time")
        if self.dcgm_exporter_repository is not None:
            check_construct(
                "dcgm_exporter_repository",
                self.dcgm_exporter_repository,
                attribute="repository_uri_for_tag",
                expected="an ecr.IRepository",
            )
        if self.dcgm_exporter_tag is not None:
            check_str("dcgm_exporter_tag", self.dcgm_exporter_tag, pattern=_TAG, allowed=_TAG_TEXT)
        check_bool("pull_through_cache", self.pull_through_cache)
        pull_through_cache_needs_a_repository(
            pull_through_cache=self.pull_through_cache, repository_given=self.dcgm_exporter_repository is not None
        )

    @classmethod
    def s3_mirror(cls, bucket: s3.IBucket, *, prefix: str = DEFAULT_MIRROR_PREFIX) -> ExporterSource:
        """Release tarballs and ``sha256sums.txt`` from ``s3://<bucket>/<prefix><name>/v<version>/``.

        Fill the mirror from a machine with internet access (the GitHub release files, unchanged)::

            for f in node_exporter-1.9.1.linux-amd64.tar.gz sha256sums.txt; do
              curl -fsSLO https://github.com/prometheus/node_exporter/releases/download/v1.9.1/$f
              aws s3 cp $f s3://BUCKET/fmconstructs/exporters/node_exporter/v1.9.1/$f
            done

        (and the same for ``prometheus`` at its pinned version, for each architecture the nodes use). The login node
        also reads the Slurm exporter (:mod:`fmconstructs.observability.slurm_exporter`) from
        ``<prefix>slurm_exporter/v<version>/``, its GitHub release files unchanged::

            for f in slurm_exporter-1.8.4-linux-amd64.tar.gz slurm_exporter_checksums.txt; do
              curl -fsSLO https://github.com/SckyzO/slurm_exporter/releases/download/v1.8.4/$f
              aws s3 cp $f s3://BUCKET/fmconstructs/exporters/slurm_exporter/v1.8.4/$f
            done

        The bucket must be in the nodes' Region (the S3 gateway endpoint serves that Region only).

        :param prefix: '' or '/'-terminated key segments. Default ``fmconstructs/exporters/``.
        """
        return cls(ExporterSourceKind.S3_MIRROR, bucket=bucket, prefix=prefix)

    def with_dcgm_exporter_from_ecr(
        self, repository: ecr.IRepository, *, tag: str | None = None, pull_through_cache: bool = False
    ) -> ExporterSource:
        """This source, with the dcgm-exporter image pulled from a private ECR repository in the nodes' Region.

        :param repository: a repository holding a copy of the image (``docker pull`` / ``docker tag`` /
            ``docker push``, or ``aws ecr`` replication), or the repository an ECR pull through cache rule creates
            for it (e.g. ``ecr.Repository.from_repository_name(self, "Dcgm", "ngc/nvidia/k8s/dcgm-exporter")``).
        :param tag: default: the tag of the pinned image
            (:data:`~fmconstructs.observability.collection.DCGM_EXPORTER_IMAGE`).
        :param pull_through_cache: True when ``repository`` is served by a pull through cache rule: the node role
            also gets ``ecr:BatchImportUpstreamImage`` and ``ecr:CreateRepository`` on it (ECR User Guide
            pull-through-cache-iam: needed to import the upstream image and to create the cache repository on the
            first pull). Default False.
        """
        return ExporterSource(
            self.kind,
            bucket=self.bucket,
            prefix=self.prefix,
            dcgm_exporter_repository=repository,
            dcgm_exporter_tag=tag,
            pull_through_cache=pull_through_cache,
        )

    def grant_read(self, grantee: iam.IGrantable) -> None:
        """What the node role needs for this source: ``s3:GetObject`` on ``<prefix>*`` of the mirror bucket (and
        decrypt with its KMS key), ``ecr`` pull on the dcgm-exporter repository only (plus
        ``ecr:GetAuthorizationToken``, which has no resource). Nothing for IMAGE and INTERNET."""
        check_construct("grantee", grantee, attribute="grant_principal", expected="an iam.IGrantable")
        if self.bucket is not None:
            iam.Grant.add_to_principal(
                grantee=grantee,
                actions=["s3:GetObject"],
                resource_arns=[self.bucket.arn_for_objects(f"{self.prefix}*")],
            )
            if self.bucket.encryption_key is not None:
                self.bucket.encryption_key.grant_decrypt(grantee)
        if self.dcgm_exporter_repository is not None:
            self.dcgm_exporter_repository.grant_pull(grantee)
            if self.pull_through_cache:
                self.dcgm_exporter_repository.grant(grantee, "ecr:BatchImportUpstreamImage", "ecr:CreateRepository")
        _nag.acknowledge_source_read(self, grantee)

    def dcgm_exporter_image(self, pinned_image: str) -> str:
        """The image reference nodes run: the ECR repository's (tag default: ``pinned_image``'s tag) or
        ``pinned_image``."""
        if self.dcgm_exporter_repository is None:
            return pinned_image
        tag = self.dcgm_exporter_tag or pinned_image.rsplit(":", 1)[-1]
        uri: str = self.dcgm_exporter_repository.repository_uri_for_tag(tag)
        return uri

    @property
    def description(self) -> str:
        """Where the binaries come from, as the boot log names it."""
        if self.kind is ExporterSourceKind.IMAGE:
            return "the node image (ExporterSource.IMAGE downloads nothing)"
        if self.kind is ExporterSourceKind.S3_MIRROR:
            assert self.bucket is not None
            return f"s3://{self.bucket.bucket_name}/{self.prefix}"
        return "github.com/prometheus"


ExporterSource.IMAGE = ExporterSource(ExporterSourceKind.IMAGE)
ExporterSource.INTERNET = ExporterSource(ExporterSourceKind.INTERNET)


def check_exporter_source(parameter: str, value: object) -> ExporterSource:
    if not isinstance(value, ExporterSource):
        raise FmValidationError(
            parameter, value, "an ExporterSource (ExporterSource.IMAGE, ExporterSource.INTERNET or s3_mirror(...))"
        )
    return value


def install_commands(source: ExporterSource, *, textfile_dir: str, region: str) -> list[str]:
    """Shell functions for ``fm_obs``: ``fm_report COMPONENT 0|1 WHY`` (the metric, and on failure the loud line)
    and ``fm_release NAME VERSION`` (installs once from ``source``, checked against the release's
    ``sha256sums.txt``, then reports). Errors are handled explicitly (``fm_obs`` runs where ``set -e`` is ignored).
    Terse: it travels in the 16 KB user data."""
    if source.kind is ExporterSourceKind.INTERNET:
        get = (
            'local f u="https://github.com/prometheus/$1/releases/download/v$2"; '
            'for f in "$t" sha256sums.txt; do curl -fsSLo "$tmp/$f" --retry 5 "$u/$f" || return 1; done'
        )
    elif source.kind is ExporterSourceKind.S3_MIRROR:
        assert source.bucket is not None
        get = (
            f'local f u="s3://{source.bucket.bucket_name}/{source.prefix}$1/v$2"; for f in "$t" sha256sums.txt; '
            f'do aws s3 cp --only-show-errors --region {region} "$u/$f" "$tmp/$f" || return 1; done'
        )
    else:
        get = "false"  # IMAGE: never download
    return [
        f"fm_p={textfile_dir}/{BOOTSTRAP_TEXTFILE}",
        ': >"$fm_p.tmp"',
        "fm_report() {",
        f'  [ "$2" = 0 ] || echo "{DOWNLOAD_FAILED_MARKER} component=$1: $3" >&2',
        '  echo "fm_bootstrap_download_failed{component=\\"$1\\"} $2" >>"$fm_p.tmp"',
        "}",
        f"fm_get() {{ {get}; }}",
        "fm_release() {",
        '  local d="/opt/fmconstructs/$1-$2.linux-$goarch" t="$1-$2.linux-$goarch.tar.gz" tmp',
        '  [ -x "$d/$1" ] || { tmp=$(mktemp -d); fm_get "$@" && (cd "$tmp" && grep " $t\\$" sha256sums.txt |',
        '    sha256sum -c -) && tar -xzf "$tmp/$t" -C /opt/fmconstructs; rm -rf "$tmp"; }',
        f'  [ -x "$d/$1" ]; fm_report "$1" $? "$2 not in $d nor from {source.description}"',
        "}",
    ]


def dcgm_exporter_commands(source: ExporterSource, *, image: str, run_options: str, run_arguments: str) -> list[str]:
    """Start the dcgm-exporter container once (``fm-dcgm-exporter``), report it, and publish the bootstrap textfile.

    IMAGE and S3_MIRROR never pull from a public registry (``docker run --pull never``; Docker CLI ``--pull``
    missing|always|never, docker/cli#1498); an ECR repository is logged in to with ``aws ecr get-login-password``
    (its Region read from the registry host ``<account>.dkr.ecr.<region>.<domain>``); INTERNET lets Docker pull
    from the image's registry."""
    pull = "" if source.kind is ExporterSourceKind.INTERNET else "--pull never "
    login: list[str] = []
    if source.dcgm_exporter_repository is not None:
        pull = ""
        login = [
            f"  r={image} g={image}",
            '  r="${r%%/*}" g="${g#*.dkr.ecr.}"',
            '  aws ecr get-login-password --region "${g%%.*}" | docker login -u AWS --password-stdin "$r" >/dev/null',
        ]
    where = "ECR" if source.dcgm_exporter_repository is not None else source.kind.value
    return [
        "if command -v docker >/dev/null 2>&1 && command -v nvidia-smi >/dev/null 2>&1; then",
        *login,
        "  docker inspect fm-dcgm-exporter >/dev/null 2>&1 ||",
        f"    docker run -d {pull}{run_options} \\",
        f"      {image} {run_arguments}",
        f'  docker inspect fm-dcgm-exporter >/dev/null 2>&1; fm_report dcgm-exporter $? "not started ({where})"',
        "else",
        '  echo "fmconstructs: docker or nvidia-smi missing, dcgm-exporter not started" >&2',
        "fi",
        'mv "$fm_p.tmp" "$fm_p"',
    ]
