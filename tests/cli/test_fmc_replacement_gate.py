"""`fmc changes`: a CI gate that lists what a deploy would replace, remove or shrink among stateful resources.

GIVEN a small app synthesized before and after an edit, WHEN `fmc changes NEW --against OLD` runs, THEN replacing
edits (EFA flipped, a PCS controller size change cascading to node groups and queues, a data repository path change,
a renamed construct, a smaller file system) are listed with the property that causes them and exit 1 unless
acknowledged with --allow; safe edits (capacity increase, throughput tier, a new data repository, node counts) pass.
The deployed path (GetTemplate, change sets) runs against botocore Stubber: no AWS call.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms
from botocore.exceptions import NoCredentialsError
from botocore.stub import ANY, Stubber
from click.testing import CliRunner, Result

from fmconstructs.cli import changes_cmd
from fmconstructs.cli.changes import MAY_REPLACE, MISSING, REPLACE, STATEFUL_TYPES, compare, compare_templates
from fmconstructs.cli.changes_aws import TEMPLATE_BODY_MAX_BYTES, change_set_changes
from fmconstructs.cli.create_only_data import CFN_LINT_VERSION, CREATE_ONLY
from fmconstructs.cli.main import cli
from fmconstructs.networking import EfaSecurityGroup
from fmconstructs.pcs import PcsAmi, PcsCluster
from fmconstructs.storage import LustreFileSystem, LustreMetadataConfiguration

from tests.conftest import ENV

ROOT = Path(__file__).resolve().parents[2]
AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
BASE: dict[str, Any] = {
    "fs_id": "FileSystem",
    "capacity": 4800,
    "tier": 1000,
    "efa": False,
    "dra": None,
    "nodes": 2,
    "kms": False,
    "backups": True,
    "own_sg": False,
    "pcs_subnet": 0,
}


# --- the apps -------------------------------------------------------------------------------------------------------
def _synth(
    out: Path,
    *,
    fs_id: str,
    capacity: int,
    tier: int,
    efa: bool,
    dra: str | None,
    nodes: int,
    kms: bool,
    backups: bool,
    own_sg: bool,
    pcs_subnet: int,
) -> Path:
    app = cdk.App(
        outdir=str(out), builtin_cloud_formation_validation=False, context={"aws:cdk:enable-path-metadata": True}
    )
    stack = cdk.Stack(app, "Gate", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
        private_subnet_route_table_ids=["rtb-0aaaaaaaaaaaaaaa1", "rtb-0bbbbbbbbbbbbbbb2"],
    )
    fs = LustreFileSystem(
        stack,
        fs_id,
        vpc=vpc,
        subnet=vpc.private_subnets[0],
        storage_capacity_gib=capacity,
        throughput_mbps_per_tib=tier,
        metadata_configuration=LustreMetadataConfiguration.automatic(),
        efa_enabled=efa,
        efa_security_group=EfaSecurityGroup(stack, "EfaGroup", vpc=vpc) if efa else None,
        kms_key=aws_kms.Key(stack, "Key", enable_key_rotation=True) if kms else None,
        automatic_backup_retention=None if backups else cdk.Duration.days(0),
        security_group=ec2.SecurityGroup(stack, "OwnGroup", vpc=vpc, allow_all_outbound=False) if own_sg else None,
    )
    if dra is not None:
        fs.add_data_repository("Data", bucket="fmc-gate-training-data", file_system_path=dra)
    cluster = PcsCluster(stack, "Cluster", vpc=vpc, subnet=vpc.private_subnets[pcs_subnet])
    cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", ami=AMI, max_nodes=nodes).add_queue("Q")
    app.synth()
    return out


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``assembly(**edit)``: the cdk.out of the base app with ``edit`` applied, synthesized once per edit."""
    root = tmp_path_factory.mktemp("gate")
    built: dict[str, Path] = {}

    def get(**edit: Any) -> Path:
        props = {**BASE, **edit}
        key = json.dumps(props, sort_keys=True)
        if key not in built:
            built[key] = _synth(root / f"a{len(built)}", **props)
        return built[key]

    return get


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, ["changes", *[str(a) for a in args]])


def _gate(assembly: Callable[..., Path], *extra: str, **edit: Any) -> tuple[int, dict[str, Any]]:
    result = _run(assembly(**edit), "--against", assembly(), "--json", *extra)
    assert "Traceback" not in result.output
    return result.exit_code, json.loads(result.output)


def _stateful(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["stateful"]]


# --- the create-only data --------------------------------------------------------------------------------------------
def test_create_only_data_equals_the_installed_cfn_lint_schemas():
    pytest.importorskip("cfnlint")
    spec = importlib.util.spec_from_file_location("gen_create_only", ROOT / "tools" / "gen_create_only.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tuple(CREATE_ONLY) == tool.TYPES
    stale = {t: p for t, p in CREATE_ONLY.items() if tool.create_only(t) != p}
    assert not stale, f"regenerate with `python tools/gen_create_only.py` (data from cfn-lint {CFN_LINT_VERSION})"


def test_every_stateful_type_has_create_only_data():
    missing = {t for t in STATEFUL_TYPES if t not in CREATE_ONLY and not t.startswith("Custom::")}
    assert not missing


# --- replacing edits -------------------------------------------------------------------------------------------------
def test_flipping_efa_replaces_the_file_system(assembly):
    code, report = _gate(assembly, efa=True)
    assert code == 1
    (efa,) = [f for f in _stateful(report) if f["property"] == "LustreConfiguration/EfaEnabled"]
    assert (efa["type"], efa["kind"], efa["path"]) == ("AWS::FSx::FileSystem", REPLACE, "Gate/FileSystem")
    assert (efa["old"], efa["new"]) == ("(not set)", "true")
    assert efa["blocking"]


def test_a_pcs_size_change_replaces_the_cluster_and_everything_on_it(assembly):
    code, report = _gate(assembly, nodes=40)  # 40 nodes do not fit SMALL (32): the default size becomes MEDIUM
    assert code == 1
    by_type = {(f["type"], f["property"]): f for f in _stateful(report) if f["kind"] == REPLACE}
    size = by_type[("AWS::PCS::Cluster", "Size")]
    assert (size["old"], size["new"]) == ("SMALL", "MEDIUM")
    assert ("AWS::PCS::ComputeNodeGroup", "ClusterId") in by_type
    assert ("AWS::PCS::Queue", "ClusterId") in by_type
    assert "new or replaced" in by_type[("AWS::PCS::Queue", "ClusterId")]["detail"]


def test_a_smaller_file_system_is_a_storage_decrease(assembly):
    code, report = _gate(assembly, capacity=2400)
    assert code == 1
    (shrink,) = [f for f in _stateful(report) if f["kind"] == "shrink"]
    assert (shrink["property"], shrink["old"], shrink["new"]) == ("StorageCapacity", "4800", "2400")


def test_renaming_the_file_system_construct_is_reported_as_a_rename(assembly):
    code, report = _gate(assembly, fs_id="Scratch")
    assert code == 1
    (rename,) = [f for f in _stateful(report) if f["type"] == "AWS::FSx::FileSystem"]
    assert rename["kind"] == "rename"
    assert (rename["path"], rename["new_path"]) == ("Gate/FileSystem", "Gate/Scratch")
    assert "Retain" in rename["detail"]  # the old file system stays, orphaned


@pytest.mark.parametrize(
    ("edit", "resource_type", "prop"),
    [
        ({"kms": True}, "AWS::FSx::FileSystem", "KmsKeyId"),
        ({"own_sg": True}, "AWS::FSx::FileSystem", "SecurityGroupIds"),
        ({"pcs_subnet": 1}, "AWS::PCS::Cluster", "Networking/SubnetIds"),
    ],
    ids=["fsx-kms-key", "fsx-own-security-group", "pcs-subnet-move"],
)
def test_create_time_choices_from_the_issue_replace(assembly, edit, resource_type, prop):
    code, report = _gate(assembly, **edit)
    assert code == 1
    found = {(f["type"], f["property"]) for f in _stateful(report) if f["kind"] == REPLACE}
    assert any(t == resource_type and (p == prop or p.startswith(prop + "/")) for t, p in found), found


def test_a_data_repository_path_change_replaces_the_association(assembly):
    result = _run(assembly(dra="/datasets"), "--against", assembly(dra="/data"), "--json")
    assert result.exit_code == 1
    (dra,) = _stateful(json.loads(result.output))
    assert (dra["type"], dra["property"], dra["old"], dra["new"]) == (
        "AWS::FSx::DataRepositoryAssociation",
        "FileSystemPath",
        "/data",
        "/datasets",
    )


# --- safe edits ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "edit",
    # backups off: the library always emits CopyTagsToBackups (create-only), so only the retention days change
    [{"capacity": 9600}, {"tier": 500}, {"dra": "/data"}, {"nodes": 4}, {"backups": False}],
    ids=["capacity-increase", "throughput-tier", "add-data-repository", "node-count", "backups-off"],
)
def test_safe_edits_pass(assembly, edit):
    code, report = _gate(assembly, **edit)
    assert (code, _stateful(report), report["blocking"]) == (0, [], 0)


def test_the_same_assembly_passes_and_names_its_source(assembly):
    code, report = _gate(assembly)
    assert (code, report["findings"]) == (0, [])
    assert report["create_only_source"] == f"cfn-lint {CFN_LINT_VERSION}"


# --- acknowledging -------------------------------------------------------------------------------------------------
def test_allow_by_construct_path_acknowledges_the_finding(assembly):
    code, report = _gate(assembly, "--allow", "Gate/FileSystem", efa=True)
    assert code == 0
    assert all(f["acknowledged"] for f in _stateful(report))


@pytest.mark.parametrize("allow", ["Gate/Cluster", "Gate/FileSystemOther", "Other/FileSystem"])
def test_allow_of_another_path_does_not_acknowledge(assembly, allow):
    code, report = _gate(assembly, "--allow", allow, efa=True)
    assert code == 1
    assert f"--allow {allow} matched no finding" in report["notes"]


def test_text_output_lists_the_property_and_how_to_acknowledge(assembly):
    result = _run(assembly(efa=True), "--against", assembly())
    assert result.exit_code == 1
    assert "EfaEnabled" in result.output
    assert "--allow PATH" in result.output


# --- value comparison decisions --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("old", "new", "renewed", "expected"),
    [
        (4800, "4800", set(), None),
        (True, "true", set(), None),
        ({"Ref": "Sg"}, {"Ref": "Sg"}, set(), None),
        ({"Fn::GetAtt": "Sg.GroupId"}, {"Fn::GetAtt": ["Sg", "GroupId"]}, set(), None),
        ({"Ref": "Sg"}, {"Ref": "Sg"}, {"Sg"}, REPLACE),
        ({"Fn::Sub": "${Sg.GroupId}-x"}, {"Fn::Sub": "${Sg.GroupId}-x"}, {"Sg"}, REPLACE),
        ({"Ref": "SgA"}, {"Ref": "SgB"}, {"SgB"}, REPLACE),
        ("a", "b", set(), REPLACE),
        (MISSING, "key", set(), REPLACE),
        (MISSING, {"Ref": "Key"}, set(), REPLACE),
        ({"Ref": "P1"}, {"Ref": "P2"}, set(), MAY_REPLACE),
        ("subnet-1", {"Ref": "Subnet"}, set(), MAY_REPLACE),
        ({"Fn::Join": ["", ["a", {"Ref": "X"}]]}, {"Fn::Join": ["-", ["a", {"Ref": "X"}]]}, set(), MAY_REPLACE),
    ],
)
def test_value_comparison(old, new, renewed, expected):
    verdict = compare(old, new, renewed)
    assert (verdict[0] if verdict else None) == expected


def test_a_changed_literal_next_to_an_unchanged_intrinsic_is_named_with_its_path():
    old = {"SecurityGroupIds": [{"Fn::GetAtt": ["Sg", "GroupId"]}], "SubnetIds": ["subnet-a"]}
    new = {"SecurityGroupIds": [{"Fn::GetAtt": ["Sg", "GroupId"]}], "SubnetIds": ["subnet-b"]}
    verdict = compare(old, new, set())
    assert verdict is not None
    assert (verdict.kind, verdict.path, verdict.old, verdict.new) == (REPLACE, "SubnetIds/0", "subnet-a", "subnet-b")


def test_a_replaced_security_group_cascades_to_the_file_system():
    def template(description: str) -> dict[str, Any]:
        return {
            "Resources": {
                "Sg": {"Type": "AWS::EC2::SecurityGroup", "Properties": {"GroupDescription": description}},
                "Fs": {
                    "Type": "AWS::FSx::FileSystem",
                    "Properties": {"SecurityGroupIds": [{"Fn::GetAtt": ["Sg", "GroupId"]}]},
                },
            }
        }

    report = compare_templates("S", template("Lustre"), template("Lustre clients"))
    kinds = {(f.logical_id, f.prop, f.stateful) for f in report.findings}
    assert kinds == {("Sg", "GroupDescription", False), ("Fs", "SecurityGroupIds/0", True)}


# --- bad input: one line, a distinct exit status, never a traceback ---------------------------------------------------
def _write(root: Path, templates: dict[str, Any], *, manifest: str | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    artifacts = {}
    for name, template in templates.items():
        (root / f"{name}.template.json").write_text(json.dumps(template))
        artifacts[name] = {
            "type": "aws:cloudformation:stack",
            "environment": "aws://123456789012/us-east-1",
            "properties": {"templateFile": f"{name}.template.json"},
        }
    (root / "manifest.json").write_text(manifest if manifest is not None else json.dumps({"artifacts": artifacts}))
    return root


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("{missing}", "--against", "{good}"), 3, "manifest.json"),
        (("{good}", "--against", "{missing}"), 3, "manifest.json"),
        (("{broken}", "--against", "{good}"), 3, "cloud assembly manifest in valid JSON"),
        (("{odd}", "--against", "{good}"), 3, "must be a CloudFormation template (a JSON object)"),
        (("{good}", "--against", "{good}", "--stack", "Nope"), 3, "--stack Nope is not in"),
        (("{good}",), 2, "exactly one of --against"),
        (("{good}", "--against", "{good}", "--deployed"), 2, "exactly one of --against"),
        (("{good}", "--against", "{good}", "--change-set"), 2, "--change-set goes with --deployed"),
    ],
)
def test_bad_input_is_one_error_line_and_a_distinct_status(tmp_path, args, code, message):
    paths = {
        "good": _write(tmp_path / "good", {"S": {"Resources": {}}}),
        "broken": _write(tmp_path / "broken", {}, manifest="{not json"),
        "missing": tmp_path / "missing",
        "odd": _write(tmp_path / "odd", {"S": ["a template that is a list"]}),
    }
    result = _run(*[a.format(**paths) for a in args])
    assert result.exit_code == code
    assert message in result.output
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)


# --- the deployed stacks (botocore Stubber) ---------------------------------------------------------------------------
FS_OLD = {"Type": "AWS::FSx::FileSystem", "Properties": {"StorageCapacity": 4800, "FileSystemType": "LUSTRE"}}
FS_NEW = {"Type": "AWS::FSx::FileSystem", "Properties": {"StorageCapacity": 2400, "FileSystemType": "LUSTRE"}}
FS_TYPE = {"Type": "AWS::FSx::FileSystem", "Properties": {"StorageCapacity": 4800, "FileSystemType": "OPENZFS"}}


@pytest.fixture
def cloudformation(monkeypatch: pytest.MonkeyPatch) -> Stubber:
    client = boto3.client("cloudformation", region_name="us-east-1")
    stubber = Stubber(client)
    monkeypatch.setattr(changes_cmd, "client_factory", lambda region: client)
    with stubber:
        yield stubber
    stubber.assert_no_pending_responses()


def _deployed(tmp_path: Path, new: dict[str, Any], *extra: str) -> Result:
    out = _write(tmp_path / "cdk.out", {"S": {"Resources": {"Fs": new}}})
    return _run(out, "--deployed", "--json", *extra)


def test_deployed_template_comparison(tmp_path, cloudformation):
    body = json.dumps({"Resources": {"Fs": FS_OLD}})
    cloudformation.add_response("get_template", {"TemplateBody": body}, {"StackName": "S", "TemplateStage": "Original"})
    result = _deployed(tmp_path, FS_NEW)
    assert result.exit_code == 1
    (shrink,) = json.loads(result.output)["findings"]
    assert (shrink["kind"], shrink["old"], shrink["new"]) == ("shrink", "4800", "2400")


def test_a_stack_not_deployed_yet_has_nothing_to_replace(tmp_path, cloudformation):
    cloudformation.add_client_error(
        "get_template",
        "ValidationError",
        "Stack with id S does not exist",
        expected_params={"StackName": "S", "TemplateStage": "Original"},
    )
    result = _deployed(tmp_path, FS_NEW)
    assert result.exit_code == 0
    assert "S: not in the previous version (a new stack): nothing to replace" in json.loads(result.output)["notes"]


def test_access_denied_is_a_clear_line_and_status_4(tmp_path, cloudformation):
    cloudformation.add_client_error("get_template", "AccessDenied", "not authorized to perform GetTemplate")
    result = _deployed(tmp_path, FS_NEW)
    assert result.exit_code == 4
    assert "GetTemplate for stack S failed" in result.output
    assert "Traceback" not in result.output


def test_missing_credentials_are_a_clear_line_and_status_4(tmp_path, monkeypatch):
    class NoCredentials:
        def get_template(self, **_: Any) -> None:
            raise NoCredentialsError()

    monkeypatch.setattr(changes_cmd, "client_factory", lambda region: NoCredentials())
    result = _deployed(tmp_path, FS_NEW)
    assert result.exit_code == 4
    assert "Unable to locate credentials" in result.output


def _change_set(stubber: Stubber, old: dict[str, Any], describe: list[dict[str, Any]]) -> None:
    stubber.add_response("get_template", {"TemplateBody": json.dumps({"Resources": {"Fs": old}})})
    arn = "arn:aws:cloudformation:us-east-1:123456789012:changeSet/fmc-changes-1/abc"
    stubber.add_response(
        "create_change_set",
        {"Id": arn, "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/S/abc"},
        {
            "StackName": "S",
            "ChangeSetName": ANY,
            "ChangeSetType": "UPDATE",
            "TemplateBody": ANY,
            "Parameters": [],
            "Capabilities": ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
            "Description": ANY,
        },
    )
    for page in describe:
        stubber.add_response("describe_change_set", page, {"ChangeSetName": arn})
    stubber.add_response("delete_change_set", {}, {"ChangeSetName": arn})


def test_change_set_replacement_is_cloudformations_answer(tmp_path, cloudformation):
    change = {
        "Type": "Resource",
        "ResourceChange": {
            "Action": "Modify",
            "LogicalResourceId": "Fs",
            "ResourceType": "AWS::FSx::FileSystem",
            "Replacement": "True",
            "Details": [
                {
                    "Target": {"Attribute": "Properties", "Name": "FileSystemType", "RequiresRecreation": "Always"},
                    "Evaluation": "Static",
                    "ChangeSource": "DirectModification",
                }
            ],
        },
    }
    _change_set(cloudformation, FS_OLD, [{"Status": "CREATE_COMPLETE", "Changes": [change]}])
    result = _deployed(tmp_path, FS_TYPE, "--change-set")
    assert result.exit_code == 1
    (finding,) = json.loads(result.output)["findings"]
    assert (finding["source"], finding["kind"], finding["property"]) == ("change-set", REPLACE, "FileSystemType")


def test_change_set_without_changes_passes_and_is_deleted(tmp_path, cloudformation):
    failed = {"Status": "FAILED", "StatusReason": "The submitted information didn't contain changes."}
    _change_set(cloudformation, FS_OLD, [failed])
    result = _deployed(tmp_path, FS_OLD, "--change-set")
    assert (result.exit_code, json.loads(result.output)["findings"]) == (0, [])


def test_a_failed_change_set_is_status_4_and_still_deleted(tmp_path, cloudformation):
    _change_set(cloudformation, FS_OLD, [{"Status": "FAILED", "StatusReason": "Template format error"}])
    result = _deployed(tmp_path, FS_TYPE, "--change-set")
    assert result.exit_code == 4
    assert "Template format error" in result.output


def test_change_set_is_polled_and_paged():
    client = boto3.client("cloudformation", region_name="us-east-1")
    stubber = Stubber(client)
    modify = {"Type": "Resource", "ResourceChange": {"Action": "Modify", "LogicalResourceId": "A"}}
    stubber.add_response("create_change_set", {"Id": "cs"})
    stubber.add_response("describe_change_set", {"Status": "CREATE_IN_PROGRESS"})
    stubber.add_response("describe_change_set", {"Status": "CREATE_COMPLETE", "Changes": [modify], "NextToken": "t"})
    stubber.add_response("describe_change_set", {"Changes": [modify]}, {"ChangeSetName": "cs", "NextToken": "t"})
    stubber.add_response("delete_change_set", {})
    slept: list[float] = []
    with stubber:
        changes = change_set_changes(client, "S", {"Resources": {}}, sleep=slept.append)
    assert len(changes or []) == 2
    assert slept == [2.0]
    stubber.assert_no_pending_responses()


def test_a_template_too_large_for_a_change_set_makes_no_call():
    client = boto3.client("cloudformation", region_name="us-east-1")
    big = {"Resources": {}, "Description": "x" * TEMPLATE_BODY_MAX_BYTES}
    with Stubber(client):
        assert change_set_changes(client, "S", big) is None


def test_fmc_changes_needs_neither_cfn_lint_nor_aws_cdk(tmp_path):
    """A plain install (no dev extras) in a CI job that only downloaded the two cdk.out directories."""
    old = _write(tmp_path / "old", {"S": {"Resources": {"Fs": FS_OLD}}})
    new = _write(tmp_path / "new", {"S": {"Resources": {"Fs": FS_NEW}}})
    code = (
        "import sys\n"
        "for name in ('cfnlint', 'aws_cdk', 'jsii'): sys.modules[name] = None  # importing them now fails\n"
        "from fmconstructs.cli.main import main\n"
        f"main(['changes', {str(new)!r}, '--against', {str(old)!r}, '--json'])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, check=False
    )
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["findings"][0]["kind"] == "shrink"


def test_no_region_anywhere_is_a_clear_line_and_status_4(tmp_path, monkeypatch):
    for var in ("AWS_DEFAULT_REGION", "AWS_REGION"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    out = tmp_path / "cdk.out"
    out.mkdir()
    (out / "S.template.json").write_text(json.dumps({"Resources": {"Fs": FS_NEW}}))
    artifact = {"type": "aws:cloudformation:stack", "properties": {"templateFile": "S.template.json"}}
    (out / "manifest.json").write_text(json.dumps({"artifacts": {"S": artifact}}))  # no environment: no region
    result = _run(out, "--deployed")
    assert result.exit_code == 4
    assert "give --region" in result.output
