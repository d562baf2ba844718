"""The PCS example stacks (FmPcsP5, FmPcsGb200) and the node-side IMEX prolog script."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from examples.pcs_stacks import PcsGb200Stack, PcsP5Stack
from fmconstructs.bootstrap import estimated_size_bytes, read_tar_gz
from fmconstructs.bootstrap.size import STACK_ID_SUFFIX
from fmconstructs.pcs import IMEX_PROLOG_SCRIPT, pcs_mime_user_data

from tests.conftest import new_app


@pytest.fixture(scope="module")
def stacks() -> dict[str, cdk.Stack]:
    app = new_app()
    return {"FmPcsP5": PcsP5Stack(app, "FmPcsP5"), "FmPcsGb200": PcsGb200Stack(app, "FmPcsGb200")}


@pytest.fixture(scope="module")
def p5(stacks: dict[str, cdk.Stack]) -> Template:
    return Template.from_stack(stacks["FmPcsP5"])


@pytest.fixture(scope="module")
def gb200(stacks: dict[str, cdk.Stack]) -> Template:
    return Template.from_stack(stacks["FmPcsGb200"])


@pytest.mark.parametrize("name", ["p5", "gb200"])
def test_pcs_resources_exist(name, request):
    template: Template = request.getfixturevalue(name)
    template.resource_count_is("AWS::PCS::Cluster", 1)
    template.resource_count_is("AWS::PCS::ComputeNodeGroup", 2)  # login + GPU
    template.resource_count_is("AWS::PCS::Queue", 1)
    template.has_resource_properties("AWS::IAM::InstanceProfile", {"Path": "/aws-pcs/"})


def test_p5_gpu_queue_of_two_nodes_on_a_capacity_block(p5):
    p5.has_resource_properties("AWS::PCS::Queue", {"Name": "gpu"})
    p5.has_resource_properties(
        "AWS::PCS::ComputeNodeGroup",
        {
            "InstanceConfigs": [{"InstanceType": "p5.48xlarge"}],
            "PurchaseOption": "CAPACITY_BLOCK",
            "ScalingConfiguration": {"MinInstanceCount": 2, "MaxInstanceCount": 2},
        },
    )
    (lt,) = [
        r
        for r in p5.find_resources("AWS::EC2::LaunchTemplate").values()
        if r["Properties"]["LaunchTemplateData"].get("InstanceType") == "p5.48xlarge"
    ]
    interfaces = lt["Properties"]["LaunchTemplateData"]["NetworkInterfaces"]
    assert sum(1 for i in interfaces if i["InterfaceType"] in ("efa", "efa-only")) == 32


def test_p5_mounts_persistent2_lustre_at_fsx_with_s3_links(p5, stacks):
    p5.has_resource_properties(
        "AWS::FSx::FileSystem", {"LustreConfiguration": Match.object_like({"DeploymentType": "PERSISTENT_2"})}
    )
    p5.resource_count_is("AWS::FSx::DataRepositoryAssociation", 2)
    for lt in p5.find_resources("AWS::EC2::LaunchTemplate").values():
        parts = lt["Properties"]["LaunchTemplateData"]["UserData"]["Fn::Base64"]["Fn::Join"][1]
        text = "".join(p if isinstance(p, str) else json.dumps(p) for p in parts)
        # the steps are an S3 asset; the loader carries the file system's deploy-time values
        assert "fmconstructs.bootstrap loader" in text
        assert "DNSName" in text and "LustreMountName" in text
    stack = stacks["FmPcsP5"]
    assert isinstance(stack, PcsP5Stack)
    for group in (stack.login, stack.gpu):
        script = group.bootstrap.render()
        assert "fmconstructs-lustre-mount '" in script and "'/fsx'" in script


def test_p5_lustre_ports_open_to_the_cluster_group(p5):
    p5.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {
            "FromPort": 988,
            "ToPort": 988,
            "SourceSecurityGroupId": {"Fn::GetAtt": [Match.string_like_regexp("^ClusterSecurityGroup"), "GroupId"]},
        },
    )


def test_gb200_ultraserver_node_group(gb200):
    gb200.has_resource_properties(
        "AWS::PCS::ComputeNodeGroup",
        {
            "InstanceConfigs": [{"InstanceType": "p6e-gb200.36xlarge"}],
            "PurchaseOption": "CAPACITY_BLOCK",
            "ScalingConfiguration": {"MinInstanceCount": 18, "MaxInstanceCount": 18},
            "AmiId": {"Ref": Match.string_like_regexp("^SsmParameterValue")},
        },
    )
    gb200.has_resource_properties(
        "AWS::PCS::Cluster",
        {
            "Scheduler": {"Type": "SLURM", "Version": "25.11"},
            "SlurmConfiguration": Match.object_like(
                {
                    "SlurmCustomSettings": [
                        {"ParameterName": "Prolog", "ParameterValue": Match.any_value()},
                        # PCS User Guide capacity-blocks-nvidia-imex: the IMEX prolog runs with these flags.
                        {"ParameterName": "PrologFlags", "ParameterValue": "Alloc,NoHold"},
                        # Slurm "Prolog and Epilog Guide": a failed prolog requeues the job without holding it.
                        {"ParameterName": "SchedulerParameters", "ParameterValue": "nohold_on_prolog_fail"},
                    ]
                }
            ),
        },
    )
    gb200.has_resource_properties("AWS::PCS::Queue", {"Name": "gb200"})


def _gpu_launch_template(template: Template, instance_type: str) -> dict[str, object]:
    (lt,) = [
        r["Properties"]["LaunchTemplateData"]
        for r in template.find_resources("AWS::EC2::LaunchTemplate").values()
        if r["Properties"]["LaunchTemplateData"].get("InstanceType") == instance_type
    ]
    return lt


@pytest.mark.parametrize(("name", "instance_type"), [("p5", "p5.48xlarge"), ("gb200", "p6e-gb200.36xlarge")])
def test_gpu_launch_templates_name_the_node_groups_subnet_on_every_interface(name, instance_type, request):
    # PCS User Guide working-with_networking_efa_create-lt: SubnetId on each interface, the node group's subnet.
    template: Template = request.getfixturevalue(name)
    interfaces = _gpu_launch_template(template, instance_type)["NetworkInterfaces"]
    (group,) = [
        g["Properties"]
        for g in template.find_resources("AWS::PCS::ComputeNodeGroup").values()
        if g["Properties"]["InstanceConfigs"] == [{"InstanceType": instance_type}]
    ]
    (subnet,) = group["SubnetIds"]
    assert interfaces and all(i["SubnetId"] == subnet for i in interfaces)


def test_gb200_targets_the_block_by_reservation_id(gb200):
    # PCS User Guide capacity-blocks-configure-cng: "A CapacityReservationSpecification with a valid
    # CapacityReservationId".
    data = _gpu_launch_template(gb200, "p6e-gb200.36xlarge")
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": "cr-0a1b2c3d4e5f60718"}
    }


def test_gb200_queue_is_exclusive(gb200):
    gb200.has_resource_properties(
        "AWS::PCS::Queue",
        {
            "Name": "gb200",
            "SlurmConfiguration": {
                "SlurmCustomSettings": [{"ParameterName": "OverSubscribe", "ParameterValue": "EXCLUSIVE"}]
            },
        },
    )


def test_mime_archive_format():
    text = pcs_mime_user_data("#!/bin/bash\necho hi\n", extra_parts=[("text/cloud-config", "#cloud-config\n")])
    assert text.splitlines()[:3] == [
        'Content-Type: multipart/mixed; boundary="==FMCONSTRUCTS-BOUNDARY=="',
        "MIME-Version: 1.0",
        "",
    ]
    # A blank line before every boundary and after every part header (PCS User Guide, EC2 user data).
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("--==FMCONSTRUCTS-BOUNDARY=="):
            assert lines[index - 1] == ""
        if line.startswith("Content-Type: text/"):
            assert lines[index + 1] == ""
    assert text.index("#cloud-config") < text.index("echo hi")


def test_imex_prolog_passes_shellcheck(tmp_path):
    assert shutil.which("shellcheck"), "shellcheck is missing: `make test` installs it"
    path = tmp_path / "imex-prolog.sh"
    path.write_text(IMEX_PROLOG_SCRIPT)
    subprocess.run(["shellcheck", "--severity=warning", str(path)], check=True)


def test_imex_prolog_is_a_no_op_for_shared_jobs(tmp_path):
    path = tmp_path / "imex-prolog.sh"
    path.write_text(IMEX_PROLOG_SCRIPT)
    logger = tmp_path / "logger"
    logger.write_text("#!/bin/bash\nexit 0\n")
    logger.chmod(0o755)
    env = {
        "PATH": str(tmp_path),
        "SLURM_JOB_NODELIST": "gb200-[1-2]",
        "FMCONSTRUCTS_IMEX_LOG": str(tmp_path / "prolog.log"),
    }  # no SLURM_JOB_OVERSUBSCRIBE=NO: not an exclusive job (behaviour tests: test_pcs_imex.py)
    result = subprocess.run(["/bin/bash", str(path)], env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "the job is not exclusive" in (tmp_path / "prolog.log").read_text()


def test_p5_file_system_keeps_the_capacity_0_2_0_deployed(p5):
    # The 4.6875 GB/s target alone needs 4,800 GiB (4.6875 TiB x 1,000 MB/s/TiB; EFA-enabled PERSISTENT_2 at 1,000
    # MB/s/TiB comes in multiples of 4,800 GiB), but 0.2.0 deployed 9,600 GiB and FSx cannot shrink: the example pins
    # min_capacity_gib=9,600 (tests/house/test_example_storage_never_shrinks.py).
    p5.has_resource_properties(
        "AWS::FSx::FileSystem",
        {
            "StorageCapacity": 9600,
            "LustreConfiguration": Match.object_like({"PerUnitStorageThroughput": 1000, "EfaEnabled": True}),
        },
    )


def test_gb200_nodes_take_the_ami_fmimages_writes():
    """FmImages' arm64 pipeline writes the AMI id under /imagebuilder/ (Image Builder's service-linked role may only
    write there); FmPcsGb200 reads that parameter by default."""
    from examples.images_stack import GB200_AMI_PARAMETER
    from examples.pcs_stacks import DEFAULT_GB200_AMI_PARAMETER

    assert DEFAULT_GB200_AMI_PARAMETER == GB200_AMI_PARAMETER
    assert GB200_AMI_PARAMETER.startswith("/imagebuilder/")


def test_p5_nodes_can_take_the_fmimages_parameter_by_context():
    import aws_cdk as cdk
    from aws_cdk.assertions import Template

    from examples.images_stack import X86_AMI_PARAMETER
    from examples.pcs_stacks import PcsP5Stack

    from tests.conftest import new_app

    app = new_app(**{"fmconstructs:pcs-ami-x86-parameter": X86_AMI_PARAMETER})
    stack = PcsP5Stack(app, "P5FromImages", env=cdk.Environment(account="123456789012", region="us-east-1"))
    template = Template.from_stack(stack).to_json()
    parameters = template.get("Parameters", {})
    assert any(p.get("Default") == X86_AMI_PARAMETER for p in parameters.values()), parameters


# --- node set-up as an S3 asset (issue 11 §2) ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def app_out(example_stacks, example_assembly) -> tuple[dict[str, cdk.Stack], Path]:
    """The example app's stacks and its cdk.out (as `cdk synth` writes it); both built once per run (tests/conftest.py).
    Asset hashes are of the assets' content, so the stacks' asset keys name the files in that cdk.out."""
    return example_stacks, example_assembly


def _p5_resources(outdir: Path) -> tuple[dict, dict[str, dict]]:
    template = json.loads((outdir / "FmPcsP5.template.json").read_text())
    return template, {k: v for k, v in template["Resources"].items() if k.startswith("ClusterP5")}


def test_p5_gpu_user_data_is_a_loader_under_2_kib(app_out):
    _, outdir = app_out
    _, resources = _p5_resources(outdir)
    (lt,) = [r for r in resources.values() if r["Type"] == "AWS::EC2::LaunchTemplate"]
    user_data = lt["Properties"]["LaunchTemplateData"]["UserData"]["Fn::Base64"]
    text = "".join(p if isinstance(p, str) else "" for p in user_data["Fn::Join"][1])
    assert "# fmconstructs.bootstrap loader" in text
    assert "fmconstructs-lustre-mount" not in text and "fm_obs" not in text  # the steps are in the asset
    # bytes once CloudFormation resolves it (references at their bound: FSx mount name 8, pseudo parameters, else 160)
    assert estimated_size_bytes(user_data) <= 2048, estimated_size_bytes(user_data)


def test_p5_gpu_steps_are_an_asset_in_the_manifest(app_out):
    stacks, outdir = app_out
    gpu = stacks["FmPcsP5"].gpu  # type: ignore[attr-defined]
    loader = gpu.bootstrap.user_data_script()
    manifest = json.loads((outdir / "FmPcsP5.assets.json").read_text())
    key = gpu.bootstrap.asset.s3_object_key
    (entry,) = [f for f in manifest["files"].values() if any(d["objectKey"] == key for d in f["destinations"].values())]
    assert entry["source"]["packaging"] == "file"
    data = (outdir / entry["source"]["path"]).read_bytes()
    assert f"h={hashlib.sha256(data).hexdigest()} " in loader
    steps = sorted({name.split("/")[1] for name in read_tar_gz(data) if name.startswith("steps/")})
    # the collectors get their own step (monitor_pcs_cluster); the user's hook is the commands step;
    # node-join checks (node_health) install the boot gate and prolog files before your commands; the job mapping's
    # prolog/epilog pieces (monitor_pcs_cluster, issue 22) are installed by the cluster's slurm-scripts step
    assert steps == [
        "001-nvme-raid",
        "002-lustre-fsx",
        "003-node-health",
        "004-commands",
        "005-slurm-scripts",
        "006-observability",
    ]


def test_p5_gpu_node_group_template_bytes(app_out):
    """Issue 11 §2 asks for <= 4 KiB of template per GPU node group with asset delivery. Measured on FmPcsP5's p5
    group (compact JSON): its launch template, its compute node group and the node-role statements it adds (read on
    its asset, write to the bootstrap log group). The p5's 32 EFA interfaces (PCS: subnet and security groups on
    each, PCS User Guide working-with_networking_efa_create-lt) take about 7 KB on their own; the rest fits 4 KiB."""
    stacks, outdir = app_out
    key = stacks["FmPcsP5"].gpu.bootstrap.asset.s3_object_key  # type: ignore[attr-defined]
    template, resources = _p5_resources(outdir)

    def size(value: object) -> int:
        return len(json.dumps(value, separators=(",", ":")))

    statements = [
        s
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy"
        for s in r["Properties"]["PolicyDocument"]["Statement"]
        if key in json.dumps(s["Resource"])
        or (
            s["Action"] == ["logs:CreateLogStream", "logs:PutLogEvents"]
            and "NodeBootstrap" in json.dumps(s["Resource"])
        )
    ]
    assert len(statements) == 2
    (lt,) = [r for r in resources.values() if r["Type"] == "AWS::EC2::LaunchTemplate"]
    interfaces = size(lt["Properties"]["LaunchTemplateData"]["NetworkInterfaces"])
    total = sum(size(r) for r in resources.values()) + sum(size(s) for s in statements)
    assert total - interfaces <= 4096, (total, interfaces)
    assert total <= 12 * 1024, total  # about 24 KB with the steps inline (0.2)


def test_pcs_examples_output_the_bootstrap_log_group(app_out):
    stacks, _ = app_out
    for name in ("FmPcsP5", "FmPcsGb200"):
        outputs = Template.from_stack(stacks[name]).to_json()["Outputs"]
        # the stack id's last UUID group makes the name unique per stack creation (a retained group never blocks)
        assert outputs["NodeBootstrapLogGroup"]["Value"] == {
            "Fn::Join": ["", [f"/fmconstructs/node-bootstrap/{name}/", dict(STACK_ID_SUFFIX)]]
        }
        assert "boot runs" in outputs["NodeBootstrapLogGroup"]["Description"]


def test_every_script_of_the_pcs_example_assets_passes_shellcheck(app_out, tmp_path):
    """The runner, each step's run.sh and every script a step installs (files with a shebang)."""
    shellcheck = shutil.which("shellcheck")
    assert shellcheck, "shellcheck is missing: `make test` installs it"
    stacks, _ = app_out
    groups = [stacks["FmPcsP5"].gpu, stacks["FmPcsP5"].login, stacks["FmPcsGb200"].gpu]  # type: ignore[attr-defined]
    checked = 0
    for number, group in enumerate(groups):
        data, _ = group.bootstrap.archive()
        for name, (content, _) in read_tar_gz(data).items():
            first = content.split(b"\n", 1)[0]
            if first.startswith(b"#!") and (b"bash" in first or b"/sh" in first) and b"python" not in first:
                path = tmp_path / f"{number}-{name.replace('/', '_')}"
                path.write_bytes(content)
                proc = subprocess.run([shellcheck, str(path)], capture_output=True, text=True)
                assert proc.returncode == 0, (name, proc.stdout)
                checked += 1
    assert checked >= 12
