"""Image Builder component documents: valid AWSTOE documents (JSON Schema), bash that passes shellcheck, checks that
fail when a piece is missing and pass when it is there, versions that follow the content, and the exporter pins and
paths that the boot-time collection expects."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.images import (
    COMPONENT_DOCUMENT_SCHEMA,
    EFA_KEY_FINGERPRINT,
    PCS_KEY_FINGERPRINT,
    ImageComponent,
    dcgm_component,
    document_problems,
    efa_component,
    fabric_manager_component,
    gpu_smoke_test_component,
    imex_component,
    lustre_client_component,
    metrics_agents_component,
    nccl_tests_component,
    nvidia_driver_component,
    pcs_agent_component,
    slurm_component,
)
from fmconstructs.images.components import MAX_DOCUMENT_CHARS
from fmconstructs.observability import collection
from fmconstructs.pcs.slurm import SlurmVersion

from tests.conftest import require_tool

BUILTIN = {
    "pcs-agent-latest": lambda: pcs_agent_component(),
    "pcs-agent-pinned": lambda: pcs_agent_component("1.3.1-1"),
    **{f"slurm-{v.value}": (lambda v=v: slurm_component(v)) for v in SlurmVersion},
    "slurm-pinned": lambda: slurm_component(SlurmVersion.V25_11, "25.11.2-1"),
    "efa": lambda: efa_component(),
    "nvidia-driver": lambda: nvidia_driver_component(),
    "fabric-manager": lambda: fabric_manager_component(),
    "imex": lambda: imex_component(),
    "dcgm": lambda: dcgm_component(),
    "gpu-smoke-test": lambda: gpu_smoke_test_component(),
    "lustre-client": lambda: lustre_client_component(),
    "metrics-agents": lambda: metrics_agents_component(),
    "nccl-tests": lambda: nccl_tests_component(),
}


@pytest.fixture(scope="module", params=sorted(BUILTIN))
def component(request: pytest.FixtureRequest) -> ImageComponent:
    return BUILTIN[request.param]()


# --- documents ---------------------------------------------------------------------------------------------------------


def test_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(COMPONENT_DOCUMENT_SCHEMA)


def test_every_document_is_valid_component_yaml(component):
    document = yaml.safe_load(component.document_yaml())
    jsonschema.Draft202012Validator(COMPONENT_DOCUMENT_SCHEMA).validate(document)
    assert document_problems(document) == []
    assert document == component.document()


def test_every_document_fits_the_inline_limit(component):
    assert len(component.document_yaml()) <= MAX_DOCUMENT_CHARS


def test_every_check_runs_in_validate_and_again_in_test(component):
    phases = {p["name"]: p for p in component.document()["phases"]}
    if component.check_script is not None:
        assert phases["validate"]["steps"] == [s for s in phases["test"]["steps"] if s["name"] == "Check"]
    assert all(step["onFailure"] == "Abort" for phase in phases.values() for step in phase["steps"])


def test_every_script_is_strict_bash_without_awstoe_expressions(component):
    for name, script in component.scripts().items():
        assert script.startswith("set -euo pipefail\n"), name
        assert "{{" not in script, f"{name}: AWSTOE would expand '{{{{ ... }}}}'"
        assert not [line for line in script.splitlines() if line != line.rstrip()], f"{name}: trailing whitespace"


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"schemaVersion": 1.0}, "'phases' is a required property"),
        ({"schemaVersion": "2.0", "phases": [{"name": "build", "steps": []}]}, "is not one of"),
        (
            {
                "schemaVersion": 1.0,
                "phases": [{"name": "deploy", "steps": [{"name": "a", "action": "A", "inputs": {}}]}],
            },
            "is not one of",
        ),
        (
            {
                "schemaVersion": 1.0,
                "phases": [{"name": "build", "steps": [{"name": "a", "action": "ExecuteBash", "inputs": {}}]}],
            },
            "'commands' is a required property",
        ),
        (
            {
                "schemaVersion": 1.0,
                "phases": [
                    {
                        "name": "build",
                        "steps": [
                            {
                                "name": "a",
                                "action": "ExecuteBash",
                                "timeoutSeconds": 0,
                                "inputs": {"commands": ["true"]},
                            }
                        ],
                    }
                ],
            },
            "timeoutSeconds",
        ),
        (
            {
                "schemaVersion": 1.0,
                "phases": [
                    {
                        "name": "build",
                        "steps": [
                            {
                                "name": "a",
                                "action": "ExecuteBash",
                                "onFailure": "Retry",
                                "inputs": {"commands": ["true"]},
                            }
                        ],
                    }
                ],
            },
            "is not one of",
        ),
    ],
)
def test_schema_rejects_invalid_documents(document, problem):
    with pytest.raises(jsonschema.ValidationError) as error:
        jsonschema.Draft202012Validator(COMPONENT_DOCUMENT_SCHEMA).validate(document)
    assert problem in str(error.value) or problem in "/".join(map(str, error.value.path))


def test_document_problems_finds_repeated_names_and_missing_phases():
    step = {"name": "a", "action": "ExecuteBash", "inputs": {"commands": ["true"]}}
    assert document_problems({"phases": [{"name": "build", "steps": [step, step]}]}) == [
        "step names repeat in phase build: ['a', 'a']"
    ]
    assert (
        "phase names repeat"
        in document_problems({"phases": [{"name": "build", "steps": [step]}, {"name": "build", "steps": [step]}]})[0]
    )
    assert document_problems({"phases": []}) == ["the document has none of the phases build, validate, test"]


def test_the_awstoe_schema_example_validates():
    # The Linux example of the Image Builder guide (toe-use-documents, "Document examples"), abridged.
    example = yaml.safe_load(
        """
name: LinuxBin
description: Download and run a custom Linux binary file.
schemaVersion: 1.0
phases:
  - name: build
    steps:
      - name: Download
        action: S3Download
        inputs:
          - source: s3://amzn-s3-demo-source-bucket/myapplication
            destination: /tmp/myapplication
      - name: Enable
        action: ExecuteBash
        onFailure: Continue
        inputs:
          commands:
            - 'chmod u+x {{ build.Download.inputs[0].destination }}'
"""
    )
    jsonschema.Draft202012Validator(COMPONENT_DOCUMENT_SCHEMA).validate(example)


# --- shellcheck ---------------------------------------------------------------------------------------------------------


def test_every_script_passes_shellcheck(component, tmp_path):
    shellcheck = require_tool("shellcheck", "shellcheck")
    for name, script in component.scripts().items():
        path = tmp_path / f"{component.name}.{name}.sh"
        path.write_text("#!/bin/bash\n" + script)
        proc = subprocess.run([shellcheck, "-s", "bash", str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, f"{component.name} {name}:\n{proc.stdout}"


# --- checks fail when a piece is missing, pass when it is there ---------------------------------------------------------

_BASIC_TOOLS = ("bash", "cat", "grep", "sed", "awk", "head", "sort", "uname", "printf", "mktemp", "rm", "tr")


def _sandbox(tmp_path: Path, stubs: dict[str, str] | None = None) -> dict[str, str]:
    """An environment whose PATH has only basic tools and the given stub commands (name -> bash body)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for tool in _BASIC_TOOLS:
        found = shutil.which(tool)
        if found and not (bin_dir / tool).exists():
            (bin_dir / tool).symlink_to(found)
    for name, body in (stubs or {}).items():
        path = bin_dir / name
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)
    root = tmp_path / "root"
    root.mkdir(parents=True, exist_ok=True)
    return {"PATH": str(bin_dir), "FMCONSTRUCTS_ROOT": str(root), "HOME": str(tmp_path)}


def _run_check(component: ImageComponent, env: dict[str, str], phase: str = "validate.Check"):
    return subprocess.run(["bash", "-c", component.scripts()[phase]], capture_output=True, text=True, env=env)


def _checks() -> list[tuple[str, ImageComponent]]:
    out = []
    for name, factory in sorted(BUILTIN.items()):
        comp = factory()
        for phase in comp.scripts():
            if not phase.startswith("build."):
                out.append((f"{name}:{phase}", comp))
    return out


@pytest.mark.parametrize(("name", "comp"), _checks(), ids=[n for n, _ in _checks()])
def test_every_check_fails_when_its_piece_is_missing(name, comp, tmp_path):
    phase = name.split(":", 1)[1]
    proc = _run_check(comp, _sandbox(tmp_path), phase)
    assert proc.returncode != 0, proc.stdout
    assert "fmconstructs image check failed" in proc.stderr


def _write(root: Path, relative: str, text: str, mode: int = 0o644) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def test_pcs_agent_check_passes_on_an_installed_agent_and_checks_a_pinned_version(tmp_path):
    env = _sandbox(tmp_path)
    root = Path(env["FMCONSTRUCTS_ROOT"])
    # /opt/aws/pcs/version as PCS User Guide Step 2 shows it.
    _write(
        root,
        "opt/aws/pcs/version",
        "AGENT_INSTALL_DATE='Fri Dec 13 12:28:43 UTC 2024'\nAGENT_VERSION='1.3.1'\nAGENT_RELEASE='1'\n",
    )
    assert _run_check(pcs_agent_component(), env).returncode == 0
    assert _run_check(pcs_agent_component("1.3.1-1"), env).returncode == 0
    wrong = _run_check(pcs_agent_component("1.4.0-1"), env)
    assert wrong.returncode != 0
    assert "not version 1.4.0" in wrong.stderr


def test_slurm_check_passes_on_installed_slurm_of_that_version_only(tmp_path):
    env = _sandbox(tmp_path)
    root = Path(env["FMCONSTRUCTS_ROOT"])
    # The version file as PCS User Guide Step 3 shows it, and the unit the installer copies.
    _write(
        root,
        "opt/aws/pcs/scheduler/slurm-25.11/version",
        "SLURM_INSTALL_DATE='Fri Nov 14 15:15:37 UTC 2025'\nSLURM_VERSION='25.11.2'\nPCS_SLURM_RELEASE='1'\n",
    )
    _write(root, "etc/systemd/system/slurmd-25.11.service", "[Unit]\n")
    assert _run_check(slurm_component(SlurmVersion.V25_11), env).returncode == 0
    assert _run_check(slurm_component(SlurmVersion.V25_11, "25.11.2-1"), env).returncode == 0
    assert _run_check(slurm_component(SlurmVersion.V25_11, "25.11.3-1"), env).returncode != 0
    missing = _run_check(slurm_component(SlurmVersion.V25_05), env)
    assert missing.returncode != 0
    assert "Slurm 25.05 is not installed" in missing.stderr


def test_metrics_check_passes_on_binaries_of_the_pinned_versions(tmp_path):
    env = _sandbox(tmp_path)
    root = Path(env["FMCONSTRUCTS_ROOT"])
    goarch = {"x86_64": "amd64", "aarch64": "arm64"}[os.uname().machine]
    for name, version in (
        ("node_exporter", collection.NODE_EXPORTER_VERSION),
        ("prometheus", collection.PROMETHEUS_VERSION),
    ):
        _write(
            root,
            f"opt/fmconstructs/{name}-{version}.linux-{goarch}/{name}",
            f"#!/bin/bash\necho '{name}, version {version} (branch: HEAD, revision: 0)'\n",
            0o755,
        )
    assert _run_check(metrics_agents_component(), env).returncode == 0
    newer = _run_check(metrics_agents_component(node_exporter_version="9.9.9"), env)
    assert newer.returncode != 0
    assert "node_exporter 9.9.9 is not installed" in newer.stderr


def test_lustre_check_passes_with_mount_helper_and_module(tmp_path):
    env = _sandbox(tmp_path, {"mount.lustre": "exit 0", "modinfo": '[ "$1" = lustre ]'})
    assert _run_check(lustre_client_component(), env).returncode == 0
    no_module = _sandbox(tmp_path / "x", {"mount.lustre": "exit 0", "modinfo": "exit 1"})
    assert "lustre kernel module" in _run_check(lustre_client_component(), no_module).stderr


def test_fabric_manager_check_requires_the_driver_version(tmp_path):
    stubs = {
        "modinfo": 'if [ "$1" = -F ]; then echo 570.172.08; else exit 0; fi',
        "nvidia-smi": "exit 0",
        "nv-fabricmanager": "echo 'Fabric Manager version is : 570.172.08'",
        "systemctl": "exit 0",
    }
    assert _run_check(fabric_manager_component(), _sandbox(tmp_path, stubs)).returncode == 0
    stale = {**stubs, "nv-fabricmanager": "echo 'Fabric Manager version is : 570.86.15'"}
    proc = _run_check(fabric_manager_component(), _sandbox(tmp_path / "stale", stale))
    assert proc.returncode != 0
    assert "does not match the driver 570.172.08" in proc.stderr


# --- versions, pins, sources ---------------------------------------------------------------------------------------------


def test_version_follows_the_document():
    a, b = slurm_component(SlurmVersion.V25_05), slurm_component(SlurmVersion.V25_11)
    assert a.version != b.version
    assert slurm_component(SlurmVersion.V25_11).version == b.version
    assert re.fullmatch(r"1\.0\.\d+", b.version)
    assert int(b.version.rsplit(".", 1)[1]) <= 2**30 - 1


def test_exporters_are_pinned_to_the_collection_versions():
    agents = metrics_agents_component().build_script or ""
    assert f"node_exporter_version={collection.NODE_EXPORTER_VERSION}" in agents
    assert f"prometheus_version={collection.PROMETHEUS_VERSION}" in agents
    assert f"image={collection.DCGM_EXPORTER_IMAGE}" in (dcgm_component().build_script or "")


def test_exporters_land_where_the_boot_time_collection_looks():
    lines = "\n".join(
        collection.node_collection_commands(
            remote_write_url="https://aps.example/api/v1/remote_write",
            region="us-east-1",
            labels=collection.NodeLabels(cluster="c"),
        )
    )
    assert 'd="/opt/fmconstructs/$1-$2.linux-$goarch"' in lines
    assert '[ -x "$d/$1" ] ||' in lines  # the boot step skips the download when the binary is there
    build = metrics_agents_component().build_script or ""
    assert 'dir="/opt/fmconstructs/$name-$version.linux-$goarch"' in build


def test_signing_keys_are_the_documented_fingerprints():
    # PCS User Guide custom AMI Steps 2-3 and EC2 User Guide efa-start, spaces removed.
    assert "1C24 32C1 862F 64D1 F90A  239A 7EEF 030E DDF5 C21C".replace(" ", "") == PCS_KEY_FINGERPRINT
    assert "4E90 91BC BB97 A96B 26B1  5E59 A054 80B1 DD2D 3CCC".replace(" ", "") == EFA_KEY_FINGERPRINT
    assert f"fingerprint={PCS_KEY_FINGERPRINT}" in (pcs_agent_component().build_script or "")
    assert f"fingerprint={EFA_KEY_FINGERPRINT}" in (efa_component().build_script or "")


def test_installer_urls_follow_the_pcs_and_efa_guides():
    agent = pcs_agent_component().build_script or ""
    assert "tarball=aws-pcs-agent-v1-latest.tar.gz" in agent
    assert "https://aws-pcs-repo-$region.s3.$region.$domain/aws-pcs-agent/$tarball" in agent
    assert "https://aws-pcs-repo-public-keys-$region.s3.$region.$domain/aws-pcs-public-key.pub" in agent
    assert "tarball=aws-pcs-agent-v1.3.1-1.tar.gz" in (pcs_agent_component("1.3.1-1").build_script or "")
    slurm = slurm_component(SlurmVersion.V25_11, "25.11.2-1").build_script or ""
    assert "tarball=aws-pcs-slurm-25.11-installer-25.11.2-1.tar.gz" in slurm
    assert 'cd "$work/aws-pcs-slurm-$major-installer" && ./installer.sh -y' in slurm
    efa = efa_component("1.47.0").build_script or ""
    assert "https://efa-installer.amazonaws.com/aws-efa-installer-$want.tar.gz" in efa
    assert "want=1.47.0" in efa


# --- bad input -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("factory", "value", "parameter"),
    [
        (pcs_agent_component, "1.3.1", "pcs_agent_version"),
        (pcs_agent_component, "latest\n", "pcs_agent_version"),
        (pcs_agent_component, 1.3, "pcs_agent_version"),
        (efa_component, "1.50", "efa_installer_version"),
        (efa_component, None, "efa_installer_version"),
        (dcgm_component, "dcgm-exporter", "dcgm_exporter_image"),
        (dcgm_component, "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3; rm -rf /", "dcgm_exporter_image"),
    ],
)
def test_component_factories_reject_bad_versions(factory, value, parameter):
    with pytest.raises(FmValidationError, match=parameter):
        factory(value)


@pytest.mark.parametrize("installer", ["25.05.5-1", "25.11", "latest ", 25.11])
def test_slurm_installer_must_match_the_major_version(installer):
    with pytest.raises(FmValidationError, match="slurm_installer_version"):
        slurm_component(SlurmVersion.V25_11, installer)


@pytest.mark.parametrize("version", ["25.11", 25.11, None])
def test_slurm_version_must_be_the_enum(version):
    with pytest.raises(FmTypeError, match="slurm_version"):
        slurm_component(version)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"name": "PCS"}, "name"),
        ({"name": "a"}, "name"),
        ({"name": "pcs-agent\n"}, "name"),
        ({"name": 3}, "name"),
        ({"description": ""}, "description"),
        ({"build_script": ""}, "build_script"),
        ({"check_script": ["true"]}, "check_script"),
        ({"revision": "1"}, "revision"),
        ({"build_script": None, "check_script": None}, "build_script/check_script/test_script"),
        ({"build_script": "x" * (MAX_DOCUMENT_CHARS + 1)}, "document"),
    ],
)
def test_image_component_rejects_bad_input(kwargs, parameter):
    base = {"name": "mine", "description": "my component", "build_script": "true", "check_script": "true"}
    with pytest.raises(FmValidationError, match=re.escape(parameter)):
        ImageComponent(**{**base, **kwargs})
