"""NodeBootstrap: steps, inline and asset delivery, the loader and runner (shellcheck, and run in a sandbox with a fake
AWS CLI), IAM scoped to the asset object, the bootstrap log group, user-data size from the Python side."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import math
import os
import subprocess
import tarfile
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk.assertions import Match, Template

from fmconstructs import FmTypeError, FmValidationError, GpuLaunchTemplate
from fmconstructs.bootstrap import (
    FINALIZE_PRIORITY,
    MAX_USER_DATA_BYTES,
    BootstrapDelivery,
    NodeBootstrap,
    NodeBootstrapLogs,
    deterministic_tar_gz,
    embedded_files_commands,
    estimated_size_bytes,
    lift_embedded_files,
    read_tar_gz,
    render_loader,
    step_name,
    synthesizer_publishes_file_assets,
    text_size_bytes,
)
from fmconstructs.bootstrap.loader import RUNNER_SCRIPT

from tests.conftest import ENV, embedded_files, new_app, new_scene, require_tool

# --- helpers ------------------------------------------------------------------------------------------------------


def _stack(stack_id: str = "Boot", **kwargs: object) -> cdk.Stack:
    return cdk.Stack(new_app(), stack_id, env=ENV, **kwargs)  # type: ignore[arg-type]


def _role(stack: cdk.Stack, id: str = "Role") -> iam.Role:
    return iam.Role(stack, id, assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))


def _statements(template: Template) -> list[dict]:
    return [
        s
        for p in template.find_resources("AWS::IAM::Policy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]


def _old_embedded_files_commands(files: dict[str, tuple[str, int]], *, name: str) -> list[str]:
    """fmconstructs 0.2's implementation (compute/user_data.py), to prove the moved one writes the same bytes."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path, (content, mode) in sorted(files.items()):
            data = content.encode()
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode, info.mtime, info.uname, info.gname = len(data), mode, 0, "root", "root"
            tar.addfile(info, io.BytesIO(data))
    payload = base64.b64encode(gzip.compress(buffer.getvalue(), mtime=0)).decode()
    lines = [payload[i : i + 76] for i in range(0, len(payload), 76)]
    marker = "FMCONSTRUCTS_B64"
    return [
        f"base64 -d > /tmp/{name}.tar.gz <<'{marker}'",
        *lines,
        marker,
        f"tar -xzf /tmp/{name}.tar.gz -C / --no-same-owner",
        f"rm -f /tmp/{name}.tar.gz",
    ]


FILES = {"/usr/local/sbin/a": ("#!/bin/sh\necho a\n", 0o755), "/etc/b.conf": ("b=1\n", 0o644)}


# --- archives -----------------------------------------------------------------------------------------------------


def test_embedded_files_are_byte_identical_to_0_2():
    assert embedded_files_commands(FILES, name="x") == _old_embedded_files_commands(FILES, name="x")


def test_archive_is_deterministic():
    one = deterministic_tar_gz({"b": ("2", 0o644), "a": ("1", 0o755)})
    two = deterministic_tar_gz({"a": ("1", 0o755), "b": ("2", 0o644)})
    assert one == two
    assert read_tar_gz(one) == {"a": (b"1", 0o755), "b": (b"2", 0o644)}
    assert deterministic_tar_gz({"a": ("1", 0o755)}) != deterministic_tar_gz({"a": ("1", 0o644)})


@pytest.mark.parametrize("path", ["/abs", "a/../b", ""])
def test_archive_refuses_paths_outside(path):
    with pytest.raises(FmValidationError, match="path"):
        deterministic_tar_gz({path: ("x", 0o644)})


def test_lift_takes_embedded_files_out_of_shell_lines():
    lines = ["echo before", *embedded_files_commands(FILES, name="x"), "/usr/local/sbin/a", "echo after"]
    kept, files = lift_embedded_files(lines)
    assert kept == ["echo before", "/usr/local/sbin/a", "echo after"]
    assert files == {path: (text.encode(), mode) for path, (text, mode) in FILES.items()}


def test_lift_keeps_lines_that_only_look_like_a_block():
    lines = ["base64 -d > /tmp/x.tar.gz <<'FMCONSTRUCTS_B64'", "AAAA", "FMCONSTRUCTS_B64", "echo not the tail"]
    assert lift_embedded_files(lines) == (lines, {})


# --- the bootstrap: steps and renderings ----------------------------------------------------------------------------


def test_inline_render_is_the_steps_in_order():
    stack = _stack()
    boot = NodeBootstrap(stack, "Boot", delivery=BootstrapDelivery.INLINE)
    boot.add_commands("echo first")
    boot.add_step("files", ["/usr/local/sbin/a"], files=FILES)
    boot.add_commands("echo third", "echo fourth")
    text = boot.render()
    assert text.startswith("#!/bin/bash\necho first\n")
    assert embedded_files(text) == {path: content for path, (content, _) in FILES.items()}
    assert text.endswith("/usr/local/sbin/a\necho third\necho fourth")
    assert [s.name for s in boot.steps] == ["commands", "files", "commands"]
    assert boot.user_data_script() == text


def test_empty_bootstrap_renders_nothing():
    stack = _stack()
    boot = NodeBootstrap(stack, "Boot", role=_role(stack))
    assert boot.delivery is BootstrapDelivery.ASSET
    assert boot.user_data_script() is None
    assert boot.user_data_size_bytes() == 0
    Template.from_stack(stack)
    assert boot.asset is None
    assert stack.node.try_find_child(NodeBootstrapLogs.ID) is None


def test_step_names():
    assert step_name("lustre", "/fsx/Data_1") == "lustre-fsx-data-1"
    assert step_name("lustre", "/") == "lustre"
    assert len(step_name("lustre", "/" + "a" * 80)) <= 40


def test_default_delivery_follows_the_role_and_the_synthesizer():
    stack = _stack()
    assert NodeBootstrap(stack, "NoRole").delivery is BootstrapDelivery.INLINE
    assert NodeBootstrap(stack, "WithRole", role=_role(stack)).delivery is BootstrapDelivery.ASSET
    bare = cdk.Stack(new_app(), "Bare", env=ENV, synthesizer=cdk.BootstraplessSynthesizer())
    assert not synthesizer_publishes_file_assets(bare)
    assert NodeBootstrap(bare, "Boot", role=_role(bare)).delivery is BootstrapDelivery.INLINE
    with pytest.raises(FmValidationError, match=r"delivery .*BootstrapDelivery.INLINE"):
        NodeBootstrap(bare, "Forced", role=_role(bare, "R2"), delivery=BootstrapDelivery.ASSET)
    with pytest.raises(FmValidationError, match="role"):
        NodeBootstrap(stack, "NoRoleAsset", delivery=BootstrapDelivery.ASSET)


def test_a_stackset_synthesizer_keeps_node_set_up_inline():
    """cdk-stacksets' StackSetStackSynthesizer cannot publish file assets without asset buckets."""
    from cdk_stacksets import StackSetStack

    app = new_app()
    parent = cdk.Stack(app, "Admin", env=ENV)
    replicated = StackSetStack(parent, "Replicated")
    boot = NodeBootstrap(replicated, "Boot", role=_role(replicated))
    assert boot.delivery is BootstrapDelivery.INLINE


# --- asset delivery: the synthesized stack ---------------------------------------------------------------------------

#: A deploy-time value with characters that sed or bash pattern replacement would mangle (& \ / |) and that the shell
#: would expand outside single quotes ($, "): substitution on the node is textual, like CloudFormation's.
SPECIAL = 'v&a|l\\ue/q"$HOME@@'


@pytest.fixture(scope="module")
def asset_stack(tmp_path_factory):
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "Boot", env=ENV)
    role = _role(stack)
    value = cdk.CfnParameter(stack, "Value", default="x").value_as_string
    boot = NodeBootstrap(stack, "Boot", role=role, name="test-nodes")
    boot.add_step(
        "first",
        [
            'echo "first" >> "$FMCONSTRUCTS_ROOT/ran"',
            f"printf '%s' '{value}' > \"$FMCONSTRUCTS_ROOT/value\"",
            '"$FMCONSTRUCTS_ROOT/opt/test/hello.sh" > "$FMCONSTRUCTS_ROOT/hello"',
        ],
        files={"/opt/test/hello.sh": ("#!/bin/sh\necho hello\n", 0o755)},
    )
    boot.add_step(
        "lifted", ["true", *embedded_files_commands({"/etc/test/lifted.conf": ("lifted\n", 0o600)}, name="t")]
    )
    boot.add_commands('echo "commands ran" >> "$FMCONSTRUCTS_ROOT/ran"')
    assembly = app.synth()
    return {"app": app, "stack": stack, "boot": boot, "role": role, "outdir": Path(outdir), "assembly": assembly}


def test_asset_is_in_the_manifest_and_its_sha256_is_in_the_loader(asset_stack):
    boot, outdir = asset_stack["boot"], asset_stack["outdir"]
    manifest = json.loads((outdir / "Boot.assets.json").read_text())
    (entry,) = [f for f in manifest["files"].values() if f["source"]["path"].endswith(".tgz")]
    assert entry["source"]["packaging"] == "file"
    data = (outdir / entry["source"]["path"]).read_bytes()
    sha256 = hashlib.sha256(data).hexdigest()
    assert f"h={sha256} " in boot.user_data_script()
    names = set(read_tar_gz(data))
    assert {"run.sh", "steps/001-first/run.sh", "steps/001-first/files/opt/test/hello.sh"} <= names
    assert "steps/002-lifted/files/etc/test/lifted.conf" in names  # lifted out of the base64 block
    assert "FMCONSTRUCTS_B64" not in read_tar_gz(data)["steps/002-lifted/run.sh"][0].decode()


def test_same_content_same_asset_hash():
    def asset_hash(stack_id: str) -> str:
        stack = _stack(stack_id)
        boot = NodeBootstrap(stack, "Boot", role=_role(stack))
        boot.add_commands("echo same")
        Template.from_stack(stack)
        assert boot.asset is not None
        return str(boot.asset.asset_hash)

    assert asset_hash("One") == asset_hash("Two")


def test_node_role_reads_only_the_asset_object(asset_stack):
    template = Template.from_stack(asset_stack["stack"])
    boot = asset_stack["boot"]
    stack = asset_stack["stack"]
    statements = _statements(template)
    s3 = [
        s
        for s in statements
        if any(str(a).startswith("s3:") for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]]))
    ]
    assert s3 == [
        {
            "Action": "s3:GetObject",
            "Effect": "Allow",
            "Resource": stack.resolve(boot.asset.bucket.arn_for_objects(boot.asset.s3_object_key)),
        }
    ]
    assert s3[0]["Resource"]["Fn::Join"][1][-1].endswith(f"/{boot.asset.s3_object_key}")
    logs_statement = next(s for s in statements if s["Action"] == ["logs:CreateLogStream", "logs:PutLogEvents"])
    group = NodeBootstrapLogs.of(stack).log_group
    assert logs_statement["Resource"] == stack.resolve(group.log_group_arn)


def test_bootstrap_log_group_is_encrypted_with_retention(asset_stack):
    template = Template.from_stack(asset_stack["stack"])
    template.has_resource_properties(
        "AWS::Logs::LogGroup",
        {
            "LogGroupName": {
                "Fn::Join": [
                    "",
                    [
                        "/fmconstructs/node-bootstrap/Boot/",
                        {
                            "Fn::Select": [
                                4,
                                {
                                    "Fn::Split": [
                                        "-",
                                        {"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "AWS::StackId"}]}]},
                                    ]
                                },
                            ]
                        },
                    ],
                ]
            },
            "RetentionInDays": 365,
            "KmsKeyId": {"Fn::GetAtt": [Match.string_like_regexp("^FmNodeBootstrapLogsKey"), "Arn"]},
        },
    )
    template.has_resource("AWS::Logs::LogGroup", {"DeletionPolicy": "Retain"})
    template.has_resource_properties(
        "AWS::KMS::Key",
        {
            "EnableKeyRotation": True,
            "KeyPolicy": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Sid": "CloudWatchLogsForTheBootstrapLogGroup",
                                "Condition": {"ArnEquals": {"kms:EncryptionContext:aws:logs:arn": Match.any_value()}},
                            }
                        )
                    ]
                )
            },
        },
    )


def test_loader_is_small_and_has_no_step_content(asset_stack):
    boot = asset_stack["boot"]
    loader = boot.user_data_script()
    assert "first" not in loader and "hello" not in loader
    assert boot.user_data_size_bytes() <= 2048
    # the deploy-time value travels in the loader, not in the archive
    data, values = boot.archive()
    assert len(values) == 1 and values[0] in loader
    assert "@@FMCONSTRUCTS_VALUE_1@@" in read_tar_gz(data)["steps/001-first/run.sh"][0].decode()


def test_steps_added_after_packaging_fail_synthesis():
    stack = _stack()
    boot = NodeBootstrap(stack, "Boot", role=_role(stack))
    boot.add_commands("echo one")
    boot.finalize()
    boot.add_commands("echo too late")
    with pytest.raises(RuntimeError, match="a step was added after the node bootstrap was packaged"):
        cdk.Stage.of(stack).synth()  # type: ignore[union-attr]


def test_an_aspect_at_default_priority_still_adds_steps():
    import jsii

    @jsii.implements(cdk.IAspect)
    class AddStep:
        def visit(self, node):
            if isinstance(node, NodeBootstrap) and not any(s.name == "late" for s in node.steps):
                node.add_step("late", ["echo late"])

    stack = _stack()
    cdk.Aspects.of(stack).add(AddStep())
    boot = NodeBootstrap(stack, "Boot", role=_role(stack))
    boot.add_commands("echo one")
    Template.from_stack(stack)
    data, _ = boot.archive()
    assert "steps/002-late/run.sh" in read_tar_gz(data)
    assert FINALIZE_PRIORITY > cdk.AspectPriority.DEFAULT


# --- shellcheck ----------------------------------------------------------------------------------------------------


def _shellcheck(path: Path) -> subprocess.CompletedProcess[str]:
    shellcheck = require_tool("shellcheck", "shellcheck")
    return subprocess.run([shellcheck, "-s", "bash", str(path)], capture_output=True, text=True)


def test_loader_passes_shellcheck(tmp_path):
    path = tmp_path / "loader.sh"
    path.write_text(
        render_loader(
            name="n", sha256="0" * 64, bucket="b", key="k.tgz", region="us-east-1", log_group="/g", values=["a", "b=c"]
        )
    )
    proc = _shellcheck(path)
    assert proc.returncode == 0, proc.stdout


def test_runner_passes_shellcheck(tmp_path):
    path = tmp_path / "run.sh"
    path.write_text(RUNNER_SCRIPT)
    proc = _shellcheck(path)
    assert proc.returncode == 0, proc.stdout


def test_every_step_script_of_the_asset_passes_shellcheck(asset_stack, tmp_path):
    data, _ = asset_stack["boot"].archive()
    for name, (content, _) in read_tar_gz(data).items():
        if name.endswith(".sh"):
            path = tmp_path / name.replace("/", "_")
            path.write_bytes(content)
            proc = _shellcheck(path)
            assert proc.returncode == 0, (name, proc.stdout)


# --- the loader and runner in a sandbox ------------------------------------------------------------------------------

FAKE_AWS = r"""#!/bin/bash
# A fake AWS CLI: s3 cp copies $FAKE_S3_OBJECT; logs calls are recorded; every call is logged.
echo "aws $*" >> "$FAKE_AWS_CALLS"
case "$1 $2" in
  "s3 cp") cp "$FAKE_S3_OBJECT" "${@: -1}" ;;
  "logs put-log-events")
    for arg in "$@"; do
      case "$arg" in file://*) cat "${arg#file://}" >> "$FAKE_EVENTS" ;; \[*) echo "$arg" >> "$FAKE_EVENTS" ;; esac
    done
    ;;
esac
"""


class Sandbox:
    def __init__(self, root: Path, loader: str, s3_object: Path) -> None:
        self.root = root
        self.bin = root / "fakebin"
        self.bin.mkdir(parents=True)
        (self.bin / "aws").write_text(FAKE_AWS)
        (self.bin / "aws").chmod(0o755)
        (root / "var/lib/cloud/data").mkdir(parents=True)
        (root / "var/lib/cloud/data/instance-id").write_text("i-0123456789abcdef0\n")
        self.loader = root / "loader.sh"
        self.loader.write_text(loader)
        self.s3_object = s3_object

    def run(self) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": f"{self.bin}:{os.environ['PATH']}",
            "FMCONSTRUCTS_ROOT": str(self.root),
            "FAKE_S3_OBJECT": str(self.s3_object),
            "FAKE_AWS_CALLS": str(self.root / "aws-calls"),
            "FAKE_EVENTS": str(self.root / "events"),
            "HOME": str(self.root),
        }
        return subprocess.run(["bash", str(self.loader)], env=env, capture_output=True, text=True, timeout=120)

    def read(self, name: str) -> str:
        path = self.root / name
        return path.read_text() if path.exists() else ""

    def logs(self) -> str:
        return "".join(p.read_text() for p in sorted((self.root / "var/log/fmconstructs").glob("*.log")))


#: A test value for the stack-id suffix of the bootstrap log group's name (``Fn::Select`` on ``AWS::StackId``).
STACK_SUFFIX = "0123456789ab"


def _as_deployed(resolved: Any, value: str = SPECIAL) -> str:
    """A resolved string as CloudFormation would deliver it, with test values for references."""
    if isinstance(resolved, str):
        return resolved
    out = []
    for part in resolved["Fn::Join"][1]:
        if isinstance(part, str):
            out.append(part)
        elif part == {"Ref": "Value"}:
            out.append(value)
        elif isinstance(part, dict) and "AWS::StackId" in json.dumps(part):
            out.append(STACK_SUFFIX)
        else:
            raise AssertionError(part)
    return "".join(out)


def _deployed_loader(asset_stack, value: str = SPECIAL) -> str:
    """The loader as CloudFormation would deliver it: the resolved user data with test values for references."""
    stack, boot = asset_stack["stack"], asset_stack["boot"]
    return _as_deployed(stack.resolve(boot.user_data_script()), value)


def _s3_object(asset_stack) -> Path:
    outdir = asset_stack["outdir"]
    manifest = json.loads((outdir / "Boot.assets.json").read_text())
    (entry,) = [f for f in manifest["files"].values() if f["source"]["path"].endswith(".tgz")]
    return outdir / entry["source"]["path"]


@pytest.fixture
def sandbox(asset_stack, tmp_path):
    return Sandbox(tmp_path / "root", _deployed_loader(asset_stack), _s3_object(asset_stack))


def test_loader_fetches_verifies_and_runs_every_step(sandbox):
    proc = sandbox.run()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sandbox.read("ran") == "first\ncommands ran\n"
    assert sandbox.read("value") == SPECIAL  # a deploy-time value with shell and sed metacharacters, intact
    assert sandbox.read("hello") == "hello\n"
    assert sandbox.read("etc/test/lifted.conf") == "lifted\n"
    assert oct((sandbox.root / "etc/test/lifted.conf").stat().st_mode & 0o777) == "0o600"
    calls = sandbox.read("aws-calls")
    assert "aws s3 cp --region us-east-1 --only-show-errors s3://cdk-hnb659fds-assets-123456789012-us-east-1/" in calls
    # this run's log, locally and to CloudWatch Logs (stream <name>/<instance id>)
    assert "step 001-first: done" in sandbox.logs() and "every step done" in sandbox.logs()
    assert (
        f"--log-group-name /fmconstructs/node-bootstrap/Boot/{STACK_SUFFIX} --log-stream-name "
        "test-nodes/i-0123456789abcdef0" in calls
    )
    events = json.loads(sandbox.read("events"))
    assert any("every step done" in e["message"] for e in events)
    assert all(isinstance(e["timestamp"], int) and e["message"] for e in events)


def test_second_run_is_a_no_op(sandbox):
    assert sandbox.run().returncode == 0
    second = sandbox.run()
    assert second.returncode == 0
    assert "already ran" in second.stdout
    assert sandbox.read("ran") == "first\ncommands ran\n"  # nothing ran twice
    assert sandbox.read("aws-calls").count("s3 cp") == 1


def test_sha256_mismatch_fails_with_a_log_line(sandbox, tmp_path):
    tampered = tmp_path / "tampered.tgz"
    tampered.write_bytes(sandbox.s3_object.read_bytes() + b"\0")
    sandbox.s3_object = tampered
    proc = sandbox.run()
    assert proc.returncode != 0
    assert "sha256 mismatch" in sandbox.logs()
    assert "sha256 mismatch" in sandbox.read("events")  # also sent to CloudWatch Logs
    assert sandbox.read("ran") == ""  # nothing ran


def test_a_failing_step_fails_the_boot_and_a_rerun_resumes(asset_stack, tmp_path):
    stack = _stack("Fails")
    boot = NodeBootstrap(stack, "Boot", role=_role(stack), name="failing")
    boot.add_step("ok", ['echo ok >> "$FMCONSTRUCTS_ROOT/ran"'])
    boot.add_step("broken", ['test -e "$FMCONSTRUCTS_ROOT/fixed"', 'echo broken-fixed >> "$FMCONSTRUCTS_ROOT/ran"'])
    boot.add_step("after", ['echo after >> "$FMCONSTRUCTS_ROOT/ran"'])
    Template.from_stack(stack)
    data, _ = boot.archive()
    archive = tmp_path / "a.tgz"
    archive.write_bytes(data)
    loader = _as_deployed(stack.resolve(boot.user_data_script()))
    box = Sandbox(tmp_path / "root", loader, archive)
    proc = box.run()
    assert proc.returncode == 1
    assert box.read("ran") == "ok\n"  # the step after the failed one did not run
    assert "step 002-broken: FAILED with exit status 1" in box.logs()
    (box.root / "fixed").write_text("")
    assert box.run().returncode == 0
    assert box.read("ran") == "ok\nbroken-fixed\nafter\n"  # ok was not run again


# --- user-data size from the Python side -----------------------------------------------------------------------------


def test_text_size_counts_tokens_at_their_bounds():
    assert text_size_bytes("abc") == 3
    assert text_size_bytes(f"x{cdk.Aws.REGION}y") == 2 + 20
    assert text_size_bytes(f"x{cdk.Aws.ACCOUNT_ID}") == 1 + 12
    stack = _stack()
    token = cdk.CfnParameter(stack, "P").value_as_string
    assert text_size_bytes(token) == 160
    assert text_size_bytes(token, {token: 8}) == 8
    assert estimated_size_bytes({"Ref": "AWS::Region"}) == 20
    assert estimated_size_bytes({"Fn::Sub": "cdk-${AWS::AccountId}-${AWS::Region}"}) == 5 + 12 + 20
    assert estimated_size_bytes({"Fn::GetAtt": ["Fs", "LustreMountName"]}) == 8


def test_python_side_size_matches_the_synthesized_template():
    scene = new_scene()
    lt = GpuLaunchTemplate(scene.stack, "Lt", instance_type="p5.48xlarge", vpc=scene.vpc, subnet=scene.subnet_a)
    lt.add_user_data(f"echo {cdk.Aws.REGION} {cdk.Aws.ACCOUNT_ID}")
    resolved = scene.template().find_resources("AWS::EC2::LaunchTemplate")
    (data,) = [r["Properties"]["LaunchTemplateData"] for r in resolved.values()]
    assert lt.user_data_size_bytes() == estimated_size_bytes(data["UserData"])


def test_size_check_does_not_read_the_launch_template_back(monkeypatch):
    """Issue 11 §4: the 16 KB check uses the Python-side text; it never resolves the L1 through jsii."""
    scene = new_scene()
    lt = GpuLaunchTemplate(scene.stack, "Lt", instance_type="p5.48xlarge", vpc=scene.vpc, subnet=scene.subnet_a)
    lt.add_user_data(*[f"echo {'x' * 100} {i}" for i in range(160)])

    def no_resolve(self, obj):
        raise AssertionError("the size check resolved a value through jsii")

    monkeypatch.setattr(cdk.Stack, "resolve", no_resolve)
    messages = lt.node.validate()
    assert any("user data is about" in m and f"at most {MAX_USER_DATA_BYTES} bytes" in m for m in messages)


def test_inline_over_16_kib_fails_but_the_same_steps_as_an_asset_do_not():
    stack = _stack()
    role = _role(stack)
    big = [f"echo {'x' * 100} {i}" for i in range(160)]
    inline = GpuLaunchTemplate(
        stack, "Inline", instance_type="p5.48xlarge", vpc=_vpc(stack), bootstrap_delivery=BootstrapDelivery.INLINE
    )
    inline.add_user_data(*big)
    assert any("user data is about" in m for m in inline.node.validate())
    asset = GpuLaunchTemplate(
        stack,
        "Asset",
        instance_type="p5.48xlarge",
        vpc=_vpc(stack),
        bootstrap_delivery=BootstrapDelivery.ASSET,
        bootstrap_role=role,
    )
    asset.add_user_data(*big)
    asset.bootstrap.finalize()
    assert asset.node.validate() == []
    assert asset.user_data_size_bytes() < 2048


def _vpc(stack: cdk.Stack):
    from aws_cdk import aws_ec2 as ec2

    existing = stack.node.try_find_child("Vpc")
    if existing is not None:
        return existing
    return ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
    )


# --- inputs ---------------------------------------------------------------------------------------------------------

BAD_BOOTSTRAP = [
    ({"name": 5}, "name", FmTypeError),
    ({"name": "bad/name"}, "name", FmValidationError),
    ({"name": "ok\n"}, "name", FmValidationError),
    ({"name": "x" * 65}, "name", FmValidationError),
    ({"delivery": "asset"}, "delivery", FmTypeError),
    ({"delivery": True}, "delivery", FmTypeError),
    ({"role": "arn:aws:iam::123456789012:role/x"}, "role", FmTypeError),
    ({"role": math.nan}, "role", FmTypeError),
    ({"log_group": "/my/group"}, "log_group", FmTypeError),
]


@pytest.mark.parametrize(("kwargs", "parameter", "error"), BAD_BOOTSTRAP)
def test_bootstrap_refuses_bad_input(kwargs, parameter, error):
    stack = _stack()
    with pytest.raises(error, match=parameter):
        NodeBootstrap(stack, "Boot", **kwargs)


def test_bootstrap_refuses_a_token_name():
    stack = _stack()
    with pytest.raises(FmValidationError, match="name"):
        NodeBootstrap(stack, "Boot", name=cdk.CfnParameter(stack, "N").value_as_string)


BAD_STEPS = [
    ((5,), {}, "name", FmTypeError),
    (("Bad_Name",), {}, "name", FmValidationError),
    (("ok\n",), {}, "name", FmValidationError),
    (("ok", "echo"), {}, "commands", FmTypeError),  # a str where a sequence is expected
    (("ok", [1]), {}, "commands", FmTypeError),
    (("ok", [math.inf]), {}, "commands", FmTypeError),
    (("ok",), {"files": {"relative": ("x", 0o644)}}, "path", FmValidationError),
    (("ok",), {"files": {"/a/../b": ("x", 0o644)}}, "path", FmValidationError),
    (("ok",), {"files": {"/a": "x"}}, "files", FmTypeError),
    (("ok",), {"files": {"/a": ("x", True)}}, "mode", FmTypeError),
    (("ok",), {"files": {"/a": ("x", math.nan)}}, "mode", FmTypeError),
    (("ok",), {"files": {"/a": (b"x", 0o644)}}, "text", FmTypeError),
]


@pytest.mark.parametrize(("args", "kwargs", "parameter", "error"), BAD_STEPS)
def test_add_step_refuses_bad_input(args, kwargs, parameter, error):
    boot = NodeBootstrap(_stack(), "Boot")
    with pytest.raises(error, match=parameter):
        boot.add_step(*args, **kwargs)


def test_add_step_refuses_deploy_time_file_content():
    stack = _stack()
    boot = NodeBootstrap(stack, "Boot")
    with pytest.raises(FmValidationError, match="known at synthesis"):
        boot.add_step("x", files={"/a": (cdk.CfnParameter(stack, "P").value_as_string, 0o644)})


@pytest.mark.parametrize("commands", [(5,), (None,), (b"echo",), (math.nan,)])
def test_add_commands_refuses_non_strings(commands):
    with pytest.raises(FmTypeError, match="commands"):
        NodeBootstrap(_stack(), "Boot").add_commands(*commands)


@pytest.mark.parametrize(("value", "max_bytes"), [(5, 1), ("x", -1), ("x", True), ("x", 1.5), ("x", math.nan)])
def test_bound_value_refuses_bad_input(value, max_bytes):
    with pytest.raises(FmTypeError):
        NodeBootstrap(_stack(), "Boot").bound_value(value, max_bytes)


def test_everything_is_a_token_bootstrap_synthesizes():
    stack = _stack("Tokens")
    role = iam.Role.from_role_arn(stack, "Role", cdk.CfnParameter(stack, "RoleArn").value_as_string)
    group = logs.LogGroup.from_log_group_name(stack, "Group", cdk.CfnParameter(stack, "GroupName").value_as_string)
    boot = NodeBootstrap(stack, "Boot", role=role, log_group=group, delivery=BootstrapDelivery.ASSET)
    boot.add_commands(f"echo {cdk.CfnParameter(stack, 'Text').value_as_string}")
    Template.from_stack(stack)
    assert boot.asset is not None
    assert stack.node.try_find_child(NodeBootstrapLogs.ID) is None  # the given group is used


# --- a sweep of unusual values: only the library's errors escape ----------------------------------------------------


def _weird(stack: cdk.Stack) -> list[object]:
    return [
        None,
        True,
        0,
        -1,
        1.5,
        math.nan,
        math.inf,
        "",
        " ",
        "x\n",
        "\x00",
        "é",
        "a" * 5000,
        [],
        [None],
        {},
        {"a": "b"},
        (),
        object(),
        b"x",
        cdk.CfnParameter(stack, "WeirdS").value_as_string,
        cdk.CfnParameter(stack, "WeirdN", type="Number").value_as_number,
        10**30,
        stack,
    ]


SWEEP_IDS = iter(range(1_000_000))


def _sweep(make) -> None:
    stack = _stack(f"Sweep{next(SWEEP_IDS)}")
    raw = []
    for value in _weird(stack):
        try:
            make(stack, value, f"X{next(SWEEP_IDS)}")
        except FmValidationError:
            pass
        except Exception as error:  # the point: nothing else may escape
            raw.append(f"{value!r:.40}: {type(error).__name__}: {error}"[:300])
    assert raw == []


@pytest.mark.parametrize("parameter", ["name", "delivery", "role", "log_group"])
def test_sweep_node_bootstrap(parameter):
    _sweep(lambda stack, value, id: NodeBootstrap(stack, id, **{parameter: value}))


@pytest.mark.parametrize("parameter", ["retention", "removal_policy"])
def test_sweep_bootstrap_logs(parameter):
    _sweep(lambda stack, value, id: NodeBootstrapLogs(stack, id, **{parameter: value}))


def test_bootstrap_logs_settings_are_kept_when_created_first():
    stack = _stack()
    NodeBootstrapLogs(stack, NodeBootstrapLogs.ID, retention=logs.RetentionDays.THREE_MONTHS)
    boot = NodeBootstrap(stack, "Boot", role=_role(stack))
    boot.add_commands("echo x")
    Template.from_stack(stack).has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 90})


@pytest.mark.parametrize("parameter", ["bootstrap_delivery", "bootstrap_role", "bootstrap_name"])
def test_sweep_launch_template_bootstrap_parameters(parameter):
    _sweep(
        lambda stack, value, id: GpuLaunchTemplate(
            stack, id, instance_type="p5.48xlarge", vpc=_vpc(stack), **{parameter: value}
        )
    )


def test_sweep_steps_and_hooks():
    def boot(stack):
        found = stack.node.try_find_child("Target")
        return found if found is not None else NodeBootstrap(stack, "Target")

    _sweep(lambda stack, value, _: boot(stack).add_step(value))
    _sweep(lambda stack, value, _: boot(stack).add_step("ok", value))
    _sweep(lambda stack, value, _: boot(stack).add_step("ok", files=value))
    _sweep(lambda stack, value, _: boot(stack).add_step("ok", files={"/a": value}))
    # (a dict cannot have an unhashable key: those values are not passed)
    _sweep(
        lambda stack, value, _: (
            boot(stack).add_step("ok", files={value: ("x", 0o644)}) if isinstance(value, Hashable) else None
        )
    )
    _sweep(lambda stack, value, _: boot(stack).add_commands(value))
    _sweep(lambda stack, value, _: boot(stack).bound_value(value, 8))
    _sweep(lambda stack, value, _: boot(stack).bound_value("x", value))
