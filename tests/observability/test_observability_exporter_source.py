"""ExporterSource: nodes get exporters from the image, an S3 mirror or (explicitly) the internet; a failed install is
loud in the boot log and raises fm_bootstrap_download_failed (issue 11 section 3)."""

from __future__ import annotations

import hashlib
import io
import math
import re
import subprocess
import tarfile
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template

from fmconstructs import FmValidationError
from fmconstructs.errors import FmTypeError
from fmconstructs.observability.collection import (
    DCGM_EXPORTER_IMAGE,
    NODE_EXPORTER_VERSION,
    NodeLabels,
    node_collection_commands,
)
from fmconstructs.observability.sources import (
    DOWNLOAD_FAILED_MARKER,
    ExporterSource,
    ExporterSourceKind,
    dcgm_exporter_commands,
    install_commands,
)

from tests.conftest import ENV, new_app, require_tool
from tests.support.observability_exporter_source import fake_tool, run_node_shell

URL = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/api/v1/remote_write"
LABELS = NodeLabels(cluster="training", queue="gpu", node_group="p5", instance_type="p5.48xlarge")


def new_stack(name: str = "Exporters") -> cdk.Stack:
    return cdk.Stack(new_app(), name, env=ENV)


def mirror(stack: cdk.Stack, prefix: str = "mirror/exporters/") -> ExporterSource:
    return ExporterSource.s3_mirror(s3.Bucket.from_bucket_name(stack, "Mirror", "fm-mirror-bucket"), prefix=prefix)


def commands(source: ExporterSource, **kwargs) -> str:
    return "\n".join(
        node_collection_commands(
            remote_write_url=URL, region="us-east-1", labels=LABELS, exporter_source=source, **kwargs
        )
    )


# --- what the user data does ----------------------------------------------------------------------------------------
def test_image_source_downloads_nothing():
    """IMAGE: no GitHub or nvcr.io download; the only curl is IMDSv2; Docker never pulls."""
    text = commands(ExporterSource.IMAGE)
    assert "github.com" not in text and "https://" not in text.replace(URL, "")
    assert [line for line in text.splitlines() if "curl" in line and "169.254.169.254" not in line] == []
    assert "docker pull" not in text and "aws s3" not in text and "docker login" not in text
    runs = [line for line in text.splitlines() if "docker run" in line]
    assert runs and all("--pull never" in line for line in runs)
    # nvcr.io appears only as the name of the image already in the local store (GpuNodeImage pulled it at build)
    for line in text.splitlines():
        if "nvcr.io" in line:
            assert line.strip().startswith(DCGM_EXPORTER_IMAGE), line


def test_s3_mirror_source_reads_the_mirror_only():
    stack = new_stack()
    text = commands(mirror(stack))
    assert "github.com" not in text and "docker pull" not in text
    assert 'u="s3://fm-mirror-bucket/mirror/exporters/$1/v$2"' in text
    assert "aws s3 cp --only-show-errors --region us-east-1" in text
    assert all("--pull never" in line for line in text.splitlines() if "docker run" in line)


def test_internet_source_is_todays_behaviour_named():
    text = commands(ExporterSource.INTERNET)
    assert "https://github.com/prometheus/$1/releases/download/v$2" in text
    assert "sha256sum -c -" in text
    assert "--pull never" not in text
    assert commands(ExporterSource.INTERNET) == "\n".join(
        node_collection_commands(remote_write_url=URL, region="us-east-1", labels=LABELS)
    )  # the default


def test_ecr_repository_for_dcgm_exporter():
    stack = new_stack()
    repository = ecr.Repository.from_repository_name(stack, "Dcgm", "ngc/nvidia/k8s/dcgm-exporter")
    source = ExporterSource.IMAGE.with_dcgm_exporter_from_ecr(repository)
    text = commands(source)
    assert "docker login -u AWS --password-stdin" in text and "aws ecr get-login-password" in text
    image = stack.resolve(source.dcgm_exporter_image(DCGM_EXPORTER_IMAGE))
    assert image["Fn::Join"][1][-1].endswith("/ngc/nvidia/k8s/dcgm-exporter:4.2.3-4.1.1-ubuntu22.04")
    assert "nvcr.io" not in text
    assert source.kind is ExporterSourceKind.IMAGE and ExporterSource.IMAGE.dcgm_exporter_repository is None


@pytest.mark.parametrize("kind", ["image", "internet", "s3", "s3+ecr"])
def test_user_data_is_valid_bash_and_passes_shellcheck(kind, tmp_path):
    shellcheck = require_tool("shellcheck", "shellcheck")
    stack = new_stack()
    source = {"image": ExporterSource.IMAGE, "internet": ExporterSource.INTERNET}.get(kind) or mirror(stack)
    if kind == "s3+ecr":
        source = source.with_dcgm_exporter_from_ecr(
            ecr.Repository.from_repository_name(stack, "Dcgm", "dcgm-exporter"), tag="4.2.3"
        )
    text = resolve_tokens(stack, commands(source, login_node=True))
    script = tmp_path / "ud.sh"
    script.write_text("#!/bin/bash\n" + text + "\n")
    subprocess.run(["bash", "-n", str(script)], check=True)
    proc = subprocess.run([shellcheck, "--severity=warning", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


# --- running the node-side shell (fake tools, no network) -----------------------------------------------------------
def resolve_tokens(stack: cdk.Stack, text: str) -> str:
    """Replace the tokens a stack with a fixed environment leaves in user data (URL suffix) with their values."""
    resolved = stack.resolve(text)
    if isinstance(resolved, str):
        return resolved
    refs = {"AWS::URLSuffix": "amazonaws.com", "AWS::Region": "us-east-1", "AWS::Partition": "aws"}
    return "".join(p if isinstance(p, str) else refs[p["Ref"]] for p in resolved["Fn::Join"][1])


@pytest.fixture
def node(tmp_path):
    tools = tmp_path / "bin"
    tools.mkdir()
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    fake_tool(tools, "nvidia-smi", "exit 0\n")
    fake_tool(tools, "docker", f'echo "docker $*" >>{tmp_path}/docker.log\n[ "$1" = run ] && exit 1\nexit 1\n')
    return tmp_path, tools, textfile


def release_tarball(directory: Path, name: str, version: str, *, corrupt_checksum: bool = False) -> None:
    """The files of a GitHub release of prometheus/<name>, as a mirror holds them."""
    directory.mkdir(parents=True)
    tarball = f"{name}-{version}.linux-amd64.tar.gz"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = b"#!/bin/sh\necho fake\n"
        info = tarfile.TarInfo(f"{name}-{version}.linux-amd64/{name}")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
    (directory / tarball).write_bytes(buffer.getvalue())
    digest = hashlib.sha256(buffer.getvalue() + (b"x" if corrupt_checksum else b"")).hexdigest()
    (directory / "sha256sums.txt").write_text(f"{digest}  {tarball}\n")


def dcgm_lines(source: ExporterSource, image: str = DCGM_EXPORTER_IMAGE) -> list[str]:
    return dcgm_exporter_commands(source, image=image, run_options="--name fm-dcgm-exporter", run_arguments="-f x")


def test_image_without_the_binaries_is_loud_and_raises_the_metric(node):
    root, tools, textfile = node
    lines = install_commands(ExporterSource.IMAGE, textfile_dir=str(textfile), region="us-east-1")
    proc = run_node_shell(
        [*lines, *dcgm_lines(ExporterSource.IMAGE)], root, tools, f"fm_release node_exporter {NODE_EXPORTER_VERSION}"
    )
    # the dcgm block ran inline (it is part of the lines): both components failed
    assert f"{DOWNLOAD_FAILED_MARKER} component=node_exporter: {NODE_EXPORTER_VERSION} not in" in proc.stderr
    assert f"{DOWNLOAD_FAILED_MARKER} component=dcgm-exporter: not started (image)" in proc.stderr
    prom = (textfile / "fm_bootstrap.prom").read_text()
    assert 'fm_bootstrap_download_failed{component="dcgm-exporter"} 1' in prom
    assert "--pull never" in (root / "docker.log").read_text()


def test_image_with_the_binaries_reports_them_installed(node):
    root, tools, textfile = node
    binary = root / "opt" / f"node_exporter-{NODE_EXPORTER_VERSION}.linux-amd64" / "node_exporter"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    lines = install_commands(ExporterSource.IMAGE, textfile_dir=str(textfile), region="us-east-1")
    proc = run_node_shell(
        lines, root, tools, f'fm_release node_exporter {NODE_EXPORTER_VERSION}; mv "$fm_p.tmp" "$fm_p"'
    )
    assert DOWNLOAD_FAILED_MARKER not in proc.stderr, proc.stderr
    assert (textfile / "fm_bootstrap.prom").read_text() == 'fm_bootstrap_download_failed{component="node_exporter"} 0\n'


@pytest.mark.parametrize("corrupt", [False, True], ids=["verified", "checksum-mismatch"])
def test_s3_mirror_installs_verified_releases(node, corrupt):
    root, tools, textfile = node
    bucket = root / "s3" / "fm-mirror-bucket"
    release_tarball(bucket / "mirror/exporters/node_exporter" / f"v{NODE_EXPORTER_VERSION}", "node_exporter",
                    NODE_EXPORTER_VERSION, corrupt_checksum=corrupt)  # fmt: skip
    # aws s3 cp [options] s3://bucket/key destination -> a copy from the local "bucket"
    fake_tool(
        tools,
        "aws",
        f'echo "aws $*" >>{root}/aws.log\nsrc="${{@: -2:1}}" dst="${{@: -1}}"\ncp "{root}/s3/${{src#s3://}}" "$dst"\n',
    )
    stack = new_stack()
    lines = install_commands(mirror(stack), textfile_dir=str(textfile), region="us-east-1")
    proc = run_node_shell(
        lines, root, tools, f'fm_release node_exporter {NODE_EXPORTER_VERSION}; mv "$fm_p.tmp" "$fm_p"'
    )
    installed = root / "opt" / f"node_exporter-{NODE_EXPORTER_VERSION}.linux-amd64" / "node_exporter"
    prom = (textfile / "fm_bootstrap.prom").read_text()
    assert "--region us-east-1" in (root / "aws.log").read_text()
    if corrupt:
        assert not installed.exists()
        assert 'component="node_exporter"} 1' in prom
        assert "nor from s3://fm-mirror-bucket/mirror/exporters/" in proc.stderr
    else:
        assert installed.exists() and DOWNLOAD_FAILED_MARKER not in proc.stderr, proc.stderr
        assert 'component="node_exporter"} 0' in prom


def test_ecr_login_uses_the_registrys_region(node):
    root, tools, textfile = node
    fake_tool(tools, "aws", f'echo "aws $*" >>{root}/aws.log\necho secret\n')
    fake_tool(
        tools,
        "docker",
        f'echo "docker $*" >>{root}/docker.log\n[ "$1" = login ] && cat >/dev/null\n'
        f'[ "$1" = run ] && touch {root}/running\n[ "$1" = inspect ] && [ ! -e {root}/running ] && exit 1\nexit 0\n',
    )
    stack = new_stack()
    source = ExporterSource.IMAGE.with_dcgm_exporter_from_ecr(
        ecr.Repository.from_repository_name(stack, "Dcgm", "mirror/dcgm-exporter"), tag="4.2.3"
    )
    image = resolve_tokens(stack, source.dcgm_exporter_image(DCGM_EXPORTER_IMAGE))
    assert image == "123456789012.dkr.ecr.us-east-1.amazonaws.com/mirror/dcgm-exporter:4.2.3"
    lines = [*install_commands(source, textfile_dir=str(textfile), region="eu-west-1"), *dcgm_lines(source, image)]
    proc = run_node_shell(lines, root, tools, "")
    assert "aws ecr get-login-password --region us-east-1" in (root / "aws.log").read_text()
    docker = (root / "docker.log").read_text()
    assert "docker login -u AWS --password-stdin 123456789012.dkr.ecr.us-east-1.amazonaws.com" in docker
    assert f"run -d --name fm-dcgm-exporter {image}" in docker
    assert 'component="dcgm-exporter"} 0' in (textfile / "fm_bootstrap.prom").read_text(), proc.stderr


# --- what the node role gets ------------------------------------------------------------------------------------------
def role_policy(stack: cdk.Stack) -> list[dict]:
    policies = Template.from_stack(stack).find_resources("AWS::IAM::Policy")
    return [s for p in policies.values() for s in p["Properties"]["PolicyDocument"]["Statement"]]


def test_s3_mirror_grants_get_object_on_the_prefix_only():
    stack = new_stack()
    bucket = s3.Bucket(stack, "Mirror", encryption_key=kms.Key(stack, "Key"))
    role = iam.Role(stack, "Node", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    ExporterSource.s3_mirror(bucket, prefix="x/").grant_read(role)
    bucket_arn = stack.resolve(bucket.bucket_arn)
    assert role_policy(stack) == [
        {"Action": "s3:GetObject", "Effect": "Allow", "Resource": {"Fn::Join": ["", [bucket_arn, "/x/*"]]}},
        {"Action": "kms:Decrypt", "Effect": "Allow", "Resource": stack.resolve(bucket.encryption_key.key_arn)},
    ]


def _list(value):
    return value if isinstance(value, list) else [value]


def test_ecr_grants_pull_on_the_repository_and_pull_through_cache_imports():
    stack = new_stack()
    role = iam.Role(stack, "Node", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    repository = ecr.Repository.from_repository_name(stack, "Dcgm", "ngc/nvidia/k8s/dcgm-exporter")
    ExporterSource.IMAGE.with_dcgm_exporter_from_ecr(repository, pull_through_cache=True).grant_read(role)
    statements = role_policy(stack)
    actions = {a: s["Resource"] for s in statements for a in _list(s["Action"])}
    assert actions["ecr:GetAuthorizationToken"] == "*"
    repo_arn = stack.resolve(repository.repository_arn)
    for action in ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchImportUpstreamImage",
                   "ecr:CreateRepository"):  # fmt: skip
        assert actions[action] == repo_arn, action


@pytest.mark.parametrize("source", [ExporterSource.IMAGE, ExporterSource.INTERNET], ids=["image", "internet"])
def test_image_and_internet_need_no_permissions(source):
    stack = new_stack()
    role = iam.Role(stack, "Node", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    source.grant_read(role)
    Template.from_stack(stack).resource_count_is("AWS::IAM::Policy", 0)


# --- deploy-time values -----------------------------------------------------------------------------------------------
def test_everything_is_a_token():
    stack = cdk.Stack(new_app(), "Tokens")
    bucket = s3.Bucket.from_bucket_name(stack, "Mirror", cdk.CfnParameter(stack, "MirrorBucket").value_as_string)
    repository = ecr.Repository.from_repository_name(stack, "Dcgm", cdk.CfnParameter(stack, "Repo").value_as_string)
    tag = cdk.CfnParameter(stack, "Tag").value_as_string
    source = ExporterSource.s3_mirror(bucket).with_dcgm_exporter_from_ecr(repository, tag=tag)
    lines = node_collection_commands(
        remote_write_url=cdk.Fn.ref("Url"), region=cdk.Aws.REGION, labels=LABELS, exporter_source=source
    )
    role = iam.Role(stack, "Node", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    source.grant_read(role)
    resolved = stack.resolve(cdk.Fn.join("\n", lines))
    text = str(resolved)
    assert "{'Ref': 'MirrorBucket'}" in text and "{'Ref': 'Tag'}" in text and "{'Ref': 'AWS::Region'}" in text
    Template.from_stack(stack)  # synthesizes


# --- bad input --------------------------------------------------------------------------------------------------------
STRING_TOKEN = cdk.Fn.ref("P")


def _bucket():
    return s3.Bucket.from_bucket_name(new_stack(), "B", "fm-bucket")


BAD_SOURCES = [
    ("kind", lambda: ExporterSource("image"), FmTypeError),  # type: ignore[arg-type]
    ("bucket", lambda: ExporterSource(ExporterSourceKind.S3_MIRROR), FmTypeError),
    ("bucket", lambda: ExporterSource.s3_mirror("my-bucket"), FmTypeError),  # type: ignore[arg-type]
    ("bucket", lambda: ExporterSource(ExporterSourceKind.IMAGE, bucket=_bucket()), FmValidationError),
    ("prefix", lambda: ExporterSource.s3_mirror(_bucket(), prefix="no-slash"), FmValidationError),
    ("prefix", lambda: ExporterSource.s3_mirror(_bucket(), prefix="a/\n"), FmValidationError),
    ("prefix", lambda: ExporterSource.s3_mirror(_bucket(), prefix="a b/"), FmValidationError),
    ("prefix", lambda: ExporterSource.s3_mirror(_bucket(), prefix="$(reboot)/"), FmValidationError),
    ("prefix", lambda: ExporterSource.s3_mirror(_bucket(), prefix=STRING_TOKEN), FmValidationError),
    ("prefix", lambda: ExporterSource.s3_mirror(_bucket(), prefix=None), FmTypeError),  # type: ignore[arg-type]
    ("prefix", lambda: ExporterSource.s3_mirror(_bucket(), prefix=math.nan), FmTypeError),  # type: ignore[arg-type]
    ("dcgm_exporter_repository", lambda: ExporterSource.IMAGE.with_dcgm_exporter_from_ecr("repo"), FmTypeError),  # type: ignore[arg-type]
    ("dcgm_exporter_tag", lambda: _ecr_source(tag="4.2.3\n"), FmValidationError),
    ("dcgm_exporter_tag", lambda: _ecr_source(tag="a tag"), FmValidationError),
    ("dcgm_exporter_tag", lambda: _ecr_source(tag=3), FmTypeError),
    ("dcgm_exporter_tag", lambda: _ecr_source(tag=".x"), FmValidationError),
    ("pull_through_cache", lambda: _ecr_source(pull_through_cache=1), FmTypeError),
    (
        "pull_through_cache",
        lambda: ExporterSource(ExporterSourceKind.IMAGE, pull_through_cache=True),
        FmValidationError,
    ),
    ("grantee", lambda: ExporterSource.IMAGE.grant_read("role"), FmTypeError),  # type: ignore[arg-type]
    ("exporter_source", lambda: commands("image"), FmValidationError),  # type: ignore[arg-type]
    ("exporter_source", lambda: commands(ExporterSourceKind.IMAGE), FmValidationError),  # type: ignore[arg-type]
]


def _ecr_source(**kwargs):
    stack = new_stack()
    return ExporterSource.IMAGE.with_dcgm_exporter_from_ecr(
        ecr.Repository.from_repository_name(stack, "R", "r"), **kwargs
    )


@pytest.mark.parametrize(
    ("parameter", "make", "error"), BAD_SOURCES, ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(BAD_SOURCES)]
)
def test_bad_input_names_the_parameter(parameter, make, error):
    with pytest.raises(error) as raised:
        make()
    assert raised.value.parameter == parameter  # type: ignore[attr-defined]
    assert re.match(rf"^{parameter} must be", str(raised.value))
