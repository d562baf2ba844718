"""The Slurm Prometheus exporter of the login node: SckyzO/slurm_exporter, pinned, installed like the other
collectors (:class:`~fmconstructs.observability.sources.ExporterSource`: the node image, an S3 mirror or GitHub).

Choice (issue 22 section 2), from the two repositories' sources:

- ``SckyzO/slurm_exporter`` (chosen): maintained (tags v1.5.0 ... v1.8.4, v1.8.4 tagged 2026-06-19, commits on master
  through 2026-08; SECURITY.md keeps 1.8.x on security fixes until six months after 2.0.0), reads Slurm through its
  CLI (``sinfo``, ``squeue``, ``sdiag``, ``sshare``, ``scontrol``; internal/collector/*.go ``Execute(...)``), so it
  needs no slurmrestd and works with every Slurm the library deploys (PCS 24.11/25.05/25.11, ParallelCluster's
  24.11); GoReleaser archives with a checksums file (``.goreleaser.yaml`` at v1.8.4: archives
  ``{{ .ProjectName }}-{{ .Version }}-{{ .Os }}-{{ .Arch }}`` for linux amd64/arm64, checksum
  ``{{ .ProjectName }}_checksums.txt``, cosign-signed); queue depth, pending reasons, node states and per-account/user
  GPU allocation (metric names in :data:`SLURM_EXPORTER_METRICS`).
- ``rivosinc/prometheus-slurm-exporter``: last commit and last tag v1.7.0 on 2025-08-13 (no activity since); reads
  Slurm through ``squeue``/``sinfo --json`` or a C extension; not chosen.

The archive holds ``slurm_exporter``, ``README.md`` and ``LICENSE`` at its top level (no directory: GoReleaser's
default, and the v1.8.4 README's "Pre-compiled binary" steps ``tar -xzf slurm_exporter-*-linux-amd64.tar.gz; sudo
mv slurm_exporter /usr/local/bin/``), so it does not fit ``fm_release`` (``prometheus/<name>`` releases unpack into
``<name>-<version>.linux-<goarch>/``): :func:`slurm_exporter_install_commands` unpacks it into the same directory
name, ``/opt/fmconstructs/slurm_exporter-<version>.linux-<goarch>/``, where the image component puts it too.
The tarball is checked at boot against the release's ``slurm_exporter_checksums.txt`` (integrity of the download;
no checksum is pinned here, as for node_exporter and Prometheus). UNCONFIRMED: the published v1.8.4 release page and
its checksums file were not opened (no network); file names come from ``.goreleaser.yaml`` at the tag.
"""

from __future__ import annotations

from .sources import ExporterSource, ExporterSourceKind

# Tag v1.8.4 (commit b535433eb2f290f3e7a6c4ce953892a172619861, 2026-06-19) in github.com/SckyzO/slurm_exporter, the
# newest tag; master's CHANGELOG "[Unreleased] Targeting 2.0.0" has breaking changes.
SLURM_EXPORTER_VERSION = "1.8.4"
# cmd/slurm_exporter/main.go at v1.8.4: webflag.AddFlags(kingpin.CommandLine, ":9341").
SLURM_EXPORTER_PORT = 9341
SLURM_EXPORTER_REPOSITORY = "SckyzO/slurm_exporter"
SLURM_EXPORTER_CHECKSUMS = "slurm_exporter_checksums.txt"
SLURM_EXPORTER_UNIT = "fm-slurm-exporter.service"
#: Written at boot on the login node: PATH with the cluster's Slurm commands, read by the Slurm units
#: (PCS: ``/opt/aws/pcs/scheduler/slurm-<version>/bin``, PCS User Guide spank_install; ParallelCluster:
#: ``/opt/slurm/bin``, User Guide "support-nvidia-imex-p6e-gb200-instance" SCONTROL_CMD).
SLURM_PATH_ENV_FILE = "/etc/fmconstructs/slurm-path.env"

#: Metric names read in the exporter's source at v1.8.4 (internal/collector/*.go ``prometheus.NewDesc``), the ones
#: the "Queue" dashboard uses. Labels: queue.go ``slurm_queue_pending{user,partition,reason}`` (reason: squeue
#: ``%r``, unbounded), ``slurm_queue_running{user,partition}``; partitions.go ``slurm_partition_jobs_pending
#: {partition}``, ``slurm_partition_jobs_running{partition}``, ``slurm_partition_gpus_idle|allocated{partition}``;
#: nodes.go ``slurm_nodes_<state>{partition}``; accounts.go / users.go ``slurm_account_*{account}``,
#: ``slurm_user_*{user}``; status.go ``slurm_exporter_collector_success{collector}``.
SLURM_EXPORTER_METRICS = frozenset(
    {
        "slurm_jobs_pending",
        "slurm_jobs_running",
        "slurm_jobs_cores_pending",
        "slurm_jobs_cores_running",
        "slurm_queue_pending",
        "slurm_queue_running",
        "slurm_partition_jobs_pending",
        "slurm_partition_jobs_running",
        "slurm_partition_gpus_idle",
        "slurm_partition_gpus_allocated",
        "slurm_gpus_alloc",
        "slurm_gpus_idle",
        "slurm_gpus_total",
        "slurm_gpus_utilization",
        "slurm_nodes_alloc",
        "slurm_nodes_idle",
        "slurm_nodes_mix",
        "slurm_nodes_down",
        "slurm_nodes_drain",
        "slurm_nodes_total",
        "slurm_account_jobs_pending",
        "slurm_account_jobs_running",
        "slurm_account_gpus_running",
        "slurm_user_jobs_pending",
        "slurm_user_jobs_running",
        "slurm_user_gpus_running",
        "slurm_scheduler_queue_size",
        "slurm_scheduler_backfill_last_cycle",
        "slurm_exporter_collector_success",
    }
)


def slurm_exporter_install_commands(source: ExporterSource, *, region: str) -> list[str]:
    """Shell for ``fm_obs`` on the login node: ``fm_slurm_exporter VERSION`` installs the exporter once from
    ``source`` (GitHub release, ``s3://<bucket>/<prefix>slurm_exporter/v<version>/`` or nothing for IMAGE), checked
    against ``slurm_exporter_checksums.txt``, then reports it with ``fm_report`` (from ``install_commands``)."""
    release = f"https://github.com/{SLURM_EXPORTER_REPOSITORY}/releases/download/v$1"
    if source.kind is ExporterSourceKind.INTERNET:
        get = f'curl -fsSLo "$tmp/$f" --retry 5 "{release}/$f"'
    elif source.kind is ExporterSourceKind.S3_MIRROR:
        assert source.bucket is not None
        mirror = f"s3://{source.bucket.bucket_name}/{source.prefix}slurm_exporter/v$1"
        get = f'aws s3 cp --only-show-errors --region {region} "{mirror}/$f" "$tmp/$f"'
    else:
        get = ""  # IMAGE: never download
    internet = source.kind is ExporterSourceKind.INTERNET
    where = f"github.com/{SLURM_EXPORTER_REPOSITORY}" if internet else source.description
    return [
        f'fm_se_get() {{ local f; for f in "$t" {SLURM_EXPORTER_CHECKSUMS}; do {get} || return 1; done; }}'
        if get
        else "fm_se_get() { false; }",
        "fm_slurm_exporter() {",
        '  local d="/opt/fmconstructs/slurm_exporter-$1.linux-$goarch" t="slurm_exporter-$1-linux-$goarch.tar.gz" tmp',
        '  [ -x "$d/slurm_exporter" ] || { tmp=$(mktemp -d); fm_se_get "$1" && (cd "$tmp" &&',
        f'    grep " $t\\$" {SLURM_EXPORTER_CHECKSUMS} | sha256sum -c -) && mkdir -p "$d" &&',
        '    tar -xzf "$tmp/$t" -C "$d" slurm_exporter; rm -rf "$tmp"; }',
        f'  [ -x "$d/slurm_exporter" ]; fm_report slurm_exporter $? "$1 not in $d nor from {where}"',
        "}",
    ]


def slurm_path_commands() -> list[str]:
    """Write :data:`SLURM_PATH_ENV_FILE`: PATH with the Slurm ``bin`` directories found on this node first."""
    return [
        'fm_sp=; for fm_d in /opt/aws/pcs/scheduler/slurm-*/bin /opt/slurm/bin; do if [ -d "$fm_d" ]; then '
        'fm_sp="$fm_sp$fm_d:"; fi; done',
        f'echo "PATH=${{fm_sp}}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" >{SLURM_PATH_ENV_FILE}',
    ]


def slurm_exporter_unit() -> str:
    """systemd unit: the exporter on 127.0.0.1 only, as ``nobody`` (Slurm's client commands authenticate through
    munge with the caller's uid and need no privilege to read jobs and nodes unless ``PrivateData`` is set), with the
    Slurm commands on PATH (:data:`SLURM_PATH_ENV_FILE`)."""
    return (
        "[Unit]\nDescription=fmconstructs Slurm exporter (SckyzO/slurm_exporter)\nAfter=network-online.target\n\n"
        f"[Service]\nEnvironmentFile=-{SLURM_PATH_ENV_FILE}\n"
        "ExecStart=/usr/local/bin/fm-slurm-exporter "
        f"--web.listen-address=127.0.0.1:{SLURM_EXPORTER_PORT}\n"
        "User=nobody\nNoNewPrivileges=yes\nProtectSystem=strict\nProtectHome=yes\nPrivateTmp=yes\n"
        "Restart=always\nRestartSec=10s\n\n"
        "[Install]\nWantedBy=multi-user.target\n"
    )
