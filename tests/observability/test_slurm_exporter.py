"""The login node's Slurm exporter (SckyzO/slurm_exporter): pinned, installed from the image, an S3 mirror or its
GitHub release checked against the release's checksums file, run by a systemd unit and scraped by the login node's
agent only; baked into FmImages as the ``slurm-exporter`` component."""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
from pathlib import Path

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk import aws_s3 as s3

from fmconstructs import FmValidationError
from fmconstructs.images import document_problems, slurm_exporter_component
from fmconstructs.observability.collection import (
    NodeLabels,
    agent_config,
    node_collection_commands,
    node_files,
)
from fmconstructs.observability.slurm_exporter import (
    SLURM_EXPORTER_CHECKSUMS,
    SLURM_EXPORTER_PORT,
    SLURM_EXPORTER_UNIT,
    SLURM_EXPORTER_VERSION,
    SLURM_PATH_ENV_FILE,
    slurm_exporter_install_commands,
)
from fmconstructs.observability.sources import DOWNLOAD_FAILED_MARKER, ExporterSource, install_commands

from tests.conftest import ENV, new_app, require_tool
from tests.support.observability_exporter_source import fake_tool, run_node_shell

URL = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/api/v1/remote_write"
LABELS = NodeLabels(cluster="training", queue="login", node_group="login", instance_type="m7i.xlarge")
UNIT_PATH = f"/etc/systemd/system/{SLURM_EXPORTER_UNIT}"


def commands(*, login_node: bool, source: ExporterSource = ExporterSource.INTERNET, **kwargs: str) -> str:
    return "\n".join(
        node_collection_commands(
            remote_write_url=URL,
            region="us-east-1",
            labels=LABELS,
            login_node=login_node,
            exporter_source=source,
            **kwargs,  # type: ignore[arg-type]
        )
    )


def mirror() -> ExporterSource:
    stack = cdk.Stack(new_app(), "SlurmExporterMirror", env=ENV)
    return ExporterSource.s3_mirror(s3.Bucket.from_bucket_name(stack, "Mirror", "fm-mirror"), prefix="mirror/")


# --- the pin and where it is installed from -----------------------------------------------------------------------


def test_pinned_version_and_port():
    # Tag v1.8.4 of github.com/SckyzO/slurm_exporter; cmd/slurm_exporter/main.go: default listen address ":9341".
    assert SLURM_EXPORTER_VERSION == "1.8.4"
    assert SLURM_EXPORTER_PORT == 9341


def test_internet_install_downloads_the_release_and_verifies_its_checksums():
    text = commands(login_node=True)
    assert "https://github.com/SckyzO/slurm_exporter/releases/download/v$1" in text
    assert f"fm_slurm_exporter {SLURM_EXPORTER_VERSION}" in text
    assert 't="slurm_exporter-$1-linux-$goarch.tar.gz"' in text
    assert f'grep " $t\\$" {SLURM_EXPORTER_CHECKSUMS} | sha256sum -c -' in text
    assert (
        f"ln -sfn /opt/fmconstructs/slurm_exporter-{SLURM_EXPORTER_VERSION}.linux-$goarch/slurm_exporter "
        "/usr/local/bin/fm-slurm-exporter"
    ) in text
    assert f"systemctl enable --now fm-slurm-textfile.timer {SLURM_EXPORTER_UNIT}" in text


def test_gpu_nodes_do_not_get_the_exporter():
    text = commands(login_node=False)
    assert "slurm_exporter" not in text and SLURM_EXPORTER_UNIT not in text
    assert UNIT_PATH not in node_files(login_node=False)


def test_image_source_downloads_nothing_on_the_login_node():
    text = commands(login_node=True, source=ExporterSource.IMAGE)
    assert "github.com" not in text and "aws s3" not in text
    assert "fm_se_get() { false; }" in text


def test_s3_mirror_reads_the_slurm_exporter_prefix():
    lines = slurm_exporter_install_commands(mirror(), region="eu-west-1")
    text = "\n".join(lines)
    assert "s3://fm-mirror/mirror/slurm_exporter/v$1/$f" in text
    assert "--region eu-west-1" in text and "github.com" not in text


@pytest.mark.parametrize("version", ["1.8.4 ; reboot", "", "v 1", "$(id)"])
def test_rejects_unsafe_versions(version):
    with pytest.raises(FmValidationError, match="slurm_exporter_version"):
        commands(login_node=True, slurm_exporter_version=version)


# --- the install step, run with fake tools --------------------------------------------------------------------------


def release(directory: Path, version: str, *, corrupt: bool = False) -> None:
    """A SckyzO/slurm_exporter GitHub release as a mirror holds it: a flat tarball and the checksums file."""
    directory.mkdir(parents=True)
    tarball = f"slurm_exporter-{version}-linux-amd64.tar.gz"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data, mode in (("slurm_exporter", b"#!/bin/sh\necho fake\n", 0o755), ("LICENSE", b"GPL\n", 0o644)):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    (directory / tarball).write_bytes(buffer.getvalue())
    digest = hashlib.sha256(buffer.getvalue() + (b"x" if corrupt else b"")).hexdigest()
    (directory / SLURM_EXPORTER_CHECKSUMS).write_text(f"{'0' * 64}  other.tar.gz\n{digest}  {tarball}\n")


@pytest.fixture
def node(tmp_path):
    tools = tmp_path / "bin"
    tools.mkdir()
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    fake_tool(tools, "aws", f'src="${{@: -2:1}}" dst="${{@: -1}}"\ncp "{tmp_path}/s3/${{src#s3://}}" "$dst"\n')
    return tmp_path, tools, textfile


def _install(node, source: ExporterSource) -> tuple[subprocess.CompletedProcess[str], str, Path]:
    root, tools, textfile = node
    lines = [
        *install_commands(source, textfile_dir=str(textfile), region="us-east-1"),
        *slurm_exporter_install_commands(source, region="us-east-1"),
    ]
    proc = run_node_shell(lines, root, tools, f'fm_slurm_exporter {SLURM_EXPORTER_VERSION}; mv "$fm_p.tmp" "$fm_p"')
    binary = root / "opt" / f"slurm_exporter-{SLURM_EXPORTER_VERSION}.linux-amd64" / "slurm_exporter"
    return proc, (textfile / "fm_bootstrap.prom").read_text(), binary


@pytest.mark.parametrize("corrupt", [False, True], ids=["verified", "checksum-mismatch"])
def test_mirror_install_is_verified_and_reported(node, corrupt):
    release(node[0] / "s3/fm-mirror/mirror/slurm_exporter" / f"v{SLURM_EXPORTER_VERSION}", SLURM_EXPORTER_VERSION,
            corrupt=corrupt)  # fmt: skip
    proc, prom, binary = _install(node, mirror())
    if corrupt:
        assert not binary.exists()
        assert 'fm_bootstrap_download_failed{component="slurm_exporter"} 1' in prom
        assert f"{DOWNLOAD_FAILED_MARKER} component=slurm_exporter:" in proc.stderr
    else:
        assert binary.exists() and DOWNLOAD_FAILED_MARKER not in proc.stderr, proc.stderr
        assert 'fm_bootstrap_download_failed{component="slurm_exporter"} 0' in prom
        assert not (binary.parent / "LICENSE").exists()  # only the binary is unpacked


def test_image_without_the_binary_is_loud(node):
    proc, prom, _ = _install(node, ExporterSource.IMAGE)
    assert f"{DOWNLOAD_FAILED_MARKER} component=slurm_exporter: {SLURM_EXPORTER_VERSION} not in" in proc.stderr
    assert 'component="slurm_exporter"} 1' in prom


def test_image_with_the_binary_installs_nothing(node):
    binary = node[0] / "opt" / f"slurm_exporter-{SLURM_EXPORTER_VERSION}.linux-amd64" / "slurm_exporter"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    proc, prom, _ = _install(node, ExporterSource.IMAGE)
    assert DOWNLOAD_FAILED_MARKER not in proc.stderr, proc.stderr
    assert prom == 'fm_bootstrap_download_failed{component="slurm_exporter"} 0\n'


# --- unit and scrape configuration ---------------------------------------------------------------------------------


def test_unit_runs_the_exporter_on_localhost_with_slurm_on_path():
    unit = node_files(login_node=True)[UNIT_PATH][0]
    assert f"ExecStart=/usr/local/bin/fm-slurm-exporter --web.listen-address=127.0.0.1:{SLURM_EXPORTER_PORT}\n" in unit
    assert f"EnvironmentFile=-{SLURM_PATH_ENV_FILE}" in unit
    assert "User=nobody" in unit and "Restart=always" in unit and "WantedBy=multi-user.target" in unit
    textfile_unit = node_files(login_node=True)["/etc/systemd/system/fm-slurm-textfile.service"][0]
    assert f"EnvironmentFile=-{SLURM_PATH_ENV_FILE}" in textfile_unit
    assert f">{SLURM_PATH_ENV_FILE}" in commands(login_node=True)


def test_unit_passes_systemd_analyze(tmp_path):
    analyze = require_tool("systemd-analyze", "systemd")
    path = tmp_path / SLURM_EXPORTER_UNIT
    path.write_text(node_files(login_node=True)[UNIT_PATH][0].replace("/usr/local/bin/fm-slurm-exporter", "/bin/true"))
    proc = subprocess.run([analyze, "verify", str(path)], capture_output=True, text=True)
    assert "Unknown key" not in proc.stderr and "Unknown section" not in proc.stderr, proc.stderr


def _jobs(config: dict[str, object]) -> dict[str, list[str]]:
    scrape = config["scrape_configs"]
    assert isinstance(scrape, list)
    # Static jobs only (the GPU nodes' fm-app job discovers its targets from files).
    return {job["job_name"]: job["static_configs"][0]["targets"] for job in scrape if "static_configs" in job}


def test_agent_scrapes_the_exporter_on_the_login_node_only():
    login = _jobs(agent_config(remote_write_url=URL, region="us-east-1", labels=LABELS, login_node=True))
    gpu = _jobs(agent_config(remote_write_url=URL, region="us-east-1", labels=LABELS, login_node=False))
    assert login["slurm"] == [f"localhost:{SLURM_EXPORTER_PORT}"]
    assert "slurm" not in gpu


def test_login_agent_config_passes_promtool(tmp_path):
    promtool = require_tool("promtool", "prometheus")
    path = tmp_path / "agent.yml"
    path.write_text(
        yaml.safe_dump(agent_config(remote_write_url=URL, region="us-east-1", labels=LABELS, login_node=True))
    )
    proc = subprocess.run([promtool, "check", "config", "--agent", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_login_user_data_passes_shellcheck(tmp_path):
    shellcheck = require_tool("shellcheck", "shellcheck")
    for name, source in (("internet", ExporterSource.INTERNET), ("image", ExporterSource.IMAGE)):
        script = tmp_path / f"{name}.sh"
        script.write_text("#!/bin/bash\n" + commands(login_node=True, source=source) + "\n")
        proc = subprocess.run([shellcheck, "--severity=warning", str(script)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout


# --- FmImages ------------------------------------------------------------------------------------------------------


def test_image_component_installs_the_pinned_release():
    component = slurm_exporter_component()
    build = component.build_script or ""
    assert f"version={SLURM_EXPORTER_VERSION}" in build
    assert 'base="https://github.com/$repository/releases/download/v$version"' in build
    assert "repository=SckyzO/slurm_exporter" in build
    assert 'grep " $tarball\\$" "$checksums" | sha256sum -c -' in build
    assert 'dir="/opt/fmconstructs/slurm_exporter-$version.linux-$goarch"' in build  # where the boot step looks
    assert document_problems(component.document()) == []


def _check(component, tmp_path: Path, version_output: str | None) -> subprocess.CompletedProcess[str]:
    root = tmp_path / "root"
    if version_output is not None:
        binary = root / f"opt/fmconstructs/slurm_exporter-{SLURM_EXPORTER_VERSION}.linux-amd64/slurm_exporter"
        binary.parent.mkdir(parents=True)
        binary.write_text(f"#!/bin/bash\necho '{version_output}'\n")
        binary.chmod(0o755)
    script = (component.check_script or "").replace('"$(uname -m)"', "x86_64")
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env={"FMCONSTRUCTS_ROOT": str(root)})


def test_image_component_check_fails_without_the_pinned_binary(tmp_path):
    component = slurm_exporter_component()
    ok = _check(component, tmp_path / "ok", f"slurm_exporter, version {SLURM_EXPORTER_VERSION} (branch: HEAD)")
    assert ok.returncode == 0, ok.stderr
    assert "is not installed" in _check(component, tmp_path / "missing", None).stderr
    assert "is not version" in _check(component, tmp_path / "old", "slurm_exporter, version 1.7.1 (branch: x)").stderr


@pytest.mark.parametrize("version", ["latest", "v1.8.4", "1.8", "1.8.4; rm -rf /"])
def test_image_component_rejects_bad_versions(version):
    with pytest.raises(FmValidationError, match="slurm_exporter_version"):
        slurm_exporter_component(version)
